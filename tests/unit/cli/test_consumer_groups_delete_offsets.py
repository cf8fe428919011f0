"""``mafka consumer-groups --delete-offsets``: Kafka 2.8's ``deleteOffsets`` against a fake cluster.

The fake is :mod:`tests.unit.cli.test_consumer_groups`' (requests and answers
through Mafka's wire schema), answering OffsetDelete as a coordinator does:
a live consumer group keeps the offsets of the topics it subscribes to.
"""

from __future__ import annotations

from typing import Any

import pytest

from mafka.errors import ErrorCode
from tests.unit.cli.test_consumer_groups import OK, FakeCluster, run

OFFSET_DELETE, METADATA = 47, 3
ROW = "%-30s %-15s %-15s"
SUBSCRIBED = (
    "Error: org.apache.kafka.common.errors.GroupSubscribedToTopicException: Deleting offsets of a topic is "
    "forbidden while the consumer group is actively subscribed to it."
)
UNKNOWN = (
    "Error: org.apache.kafka.common.errors.UnknownTopicOrPartitionException: "
    "This server does not host this topic-partition."
)


class DeletingCluster(FakeCluster):
    def __init__(self) -> None:
        super().__init__()
        self.subscribed: dict[str, set[str]] = {}
        self.group_errors: dict[str, int] = {}

    def _OffsetDelete(self, req: Any, broker: int | None) -> dict[str, Any]:
        assert broker == self.coordinator
        group = req.group_id
        code = self.group_errors.get(
            group, OK if group in self.groups else ErrorCode.GROUP_ID_NOT_FOUND
        )
        if code != OK:
            return {"error_code": code, "throttle_time_ms": 0, "topics": []}
        topics = []
        for t in req.topics:
            parts = []
            for p in t.partitions:
                if p.partition_index not in self.topics.get(t.name, {}):
                    error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                elif t.name in self.subscribed.get(group, set()):
                    error = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
                else:
                    error = OK
                    self.offsets.get(group, {}).pop((t.name, p.partition_index), None)
                parts.append({"partition_index": p.partition_index, "error_code": error})
            topics.append({"name": t.name, "partitions": parts})
        return {"error_code": OK, "throttle_time_ms": 0, "topics": topics}


@pytest.fixture
def cluster() -> DeletingCluster:
    c = DeletingCluster()
    c.topics["t10"] = {0: 1}
    c.group("idle", "Empty")
    c.offsets["idle"] = {("t", 0): 40, ("t", 1): 20, ("t", 2): 1, ("u", 0): 3, ("t10", 0): 4}
    c.group("live", "Stable")
    c.subscribed["live"] = {"t"}
    c.offsets["live"] = {("t", 0): 1, ("u", 0): 2}
    return c


def test_delete_named_partitions_and_whole_topics(cluster, capsys):
    assert (
        run(cluster, "--delete-offsets", "--group", "idle", "--topic", "t:0,2", "--topic", "t10")
        == 0
    )
    out = capsys.readouterr().out
    assert out.split("\n") == [
        "Request succeed for deleting offsets with topic t:0,2, t10 group idle",
        "",
        ROW % ("TOPIC", "PARTITION", "STATUS"),
        # sorted as Kafka sorts them: by the string topic + partition ("t0" < "t100" < "t2")
        ROW % ("t", 0, "Successful"),
        ROW % ("t10", 0, "Successful"),
        ROW % ("t", 2, "Successful"),
        "",
    ]
    assert cluster.offsets["idle"] == {("t", 1): 20, ("u", 0): 3}
    ((request, broker),) = cluster.api_calls(OFFSET_DELETE)
    assert broker == 1 and request.group_id == "idle"
    sent = sorted((t.name, p.partition_index) for t in request.topics for p in t.partitions)
    assert sent == [("t", 0), ("t", 2), ("t10", 0)]


def test_partition_level_errors(cluster, capsys):
    assert (
        run(
            cluster,
            "--delete-offsets",
            "--group",
            "live",
            "--topic",
            "t:1",
            "--topic",
            "u",
            "--topic",
            "nope",
        )
        == 1
    )
    assert capsys.readouterr().out.split("\n") == [
        "",
        "Error: Encounter some partition level error, see the follow-up details:",
        "",
        ROW % ("TOPIC", "PARTITION", "STATUS"),
        ROW % ("nope", "Not Provided", UNKNOWN),  # a topic that could not be described
        ROW % ("t", 1, SUBSCRIBED),
        ROW % ("u", 0, "Successful"),
        "",
    ]
    assert cluster.offsets["live"] == {("t", 0): 1}


@pytest.mark.parametrize(
    ("code", "line", "status"),
    [
        (
            ErrorCode.GROUP_ID_NOT_FOUND,
            "Error: 'missing' does not exist.",
            "org.apache.kafka.common.errors.GroupIdNotFoundException: The group id does not exist.",
        ),
        (
            ErrorCode.NON_EMPTY_GROUP,
            "Error: Deleting offsets of a consumer group 'missing' is forbidden if the group is not empty.",
            "org.apache.kafka.common.errors.GroupNotEmptyException: The group is not empty.",
        ),
        (
            ErrorCode.INVALID_GROUP_ID,
            "Error: 'missing' is not valid.",
            "org.apache.kafka.common.errors.InvalidGroupIdException: The group id is invalid.",
        ),
        (ErrorCode.INVALID_REQUEST, "Error: Encounter some unknown error: INVALID_REQUEST", None),
    ],
)
def test_group_level_errors(cluster, capsys, code, line, status):
    cluster.group_errors["missing"] = code
    assert run(cluster, "--delete-offsets", "--group", "missing", "--topic", "t:0") == 1
    lines = capsys.readouterr().out.split("\n")
    assert lines[:4] == ["", line, "", ROW % ("TOPIC", "PARTITION", "STATUS")]
    assert lines[4].startswith("t                              0               Error: ")
    if status is not None:
        assert lines[4].endswith(status)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ("--delete-offsets", "--group", "g"),
            "Option [delete-offsets] takes the following options: [group], [topic]",
        ),
        (
            ("--delete-offsets", "--topic", "t"),
            "Option [delete-offsets] takes the following options: [group], [topic]",
        ),
        (
            ("--delete-offsets", "--all-groups", "--topic", "t"),
            "takes the following options: [group], [topic]",
        ),
        (
            ("--delete-offsets", "--delete", "--group", "g", "--topic", "t"),
            "does not support topic-specific",
        ),
        (
            ("--delete-offsets", "--group", "a", "--group", "b", "--topic", "t"),
            "Found multiple arguments for option group",
        ),
    ],
)
def test_argument_errors(argv, message, capsys):
    cluster = DeletingCluster()
    assert run(cluster, *argv) == 1
    assert message in capsys.readouterr().err
    assert cluster.api_calls(OFFSET_DELETE) == []


def test_a_bad_partition_number_fails_before_any_request(cluster, capsys):
    assert run(cluster, "--delete-offsets", "--group", "idle", "--topic", "t:x") == 1
    assert capsys.readouterr().out == (
        '\nError: Executing consumer group command failed due to For input string: "x"\n'
    )
    assert cluster.api_calls(OFFSET_DELETE) == [] and cluster.api_calls(METADATA) == []
