"""``mafka leader-election``: argument checks, the JSON file and Kafka's output lines."""

from __future__ import annotations

import pytest

from mafka.cli import leader_election as le
from mafka.cli.main import main
from mafka.errors import ErrorCode


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--all-topic-partitions",), "Missing required option(s) [election-type]"),
        (("--election-type", "bogus", "--all-topic-partitions"), "Unknown election type: bogus"),
        (("--election-type", "preferred"), "One and only one of the following options is required"),
        (
            ("--election-type", "preferred", "--all-topic-partitions", "--topic", "t"),
            "One and only one of the following options is required",
        ),
        (
            ("--election-type", "preferred", "--topic", "t"),
            "Missing required option(s) [partition]",
        ),
    ],
)
def test_argument_errors(
    argv: tuple[str, ...], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["leader-election", "--bootstrap-server", "localhost:1", *argv]) == 1
    assert message in capsys.readouterr().err


def test_election_json() -> None:
    text = '{"partitions": [{"topic": "foo", "partition": 1}, {"topic": "bar", "partition": 0}]}'
    assert le.parse_election_json(text) == [("foo", 1), ("bar", 0)]
    with pytest.raises(le.CommandError, match="duplicate partitions: foo-1"):
        le.parse_election_json(
            '{"partitions": [{"topic": "foo", "partition": 1}, {"topic": "foo", "partition": 1}]}'
        )
    with pytest.raises(le.CommandError, match='missing "partitions"'):
        le.parse_election_json("{}")


def test_report_lines(capsys: pytest.CaptureFixture[str]) -> None:
    results = {
        ("t", 1): (ErrorCode.NONE, None),
        ("t", 0): (ErrorCode.NONE, None),
        ("u", 0): (
            ErrorCode.ELECTION_NOT_NEEDED,
            "Leader election not needed for topic partition.",
        ),
        ("v", 2): (
            ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
            "Failed to elect leader for partition v-2 under strategy preferred",
        ),
    }
    assert le.report(0, results) == 1
    assert capsys.readouterr().out.splitlines() == [
        "Successfully completed leader election (PREFERRED) for partitions t-0, t-1",
        "Valid replica already elected for partitions u-0",
        "Error completing leader election (PREFERRED) for partition: v-2: "
        "org.apache.kafka.common.errors.PreferredLeaderNotAvailableException: "
        "Failed to elect leader for partition v-2 under strategy preferred",
    ]
    assert le.report(1, {("t", 0): (ErrorCode.NONE, None)}) == 0
    assert "(UNCLEAN)" in capsys.readouterr().out
