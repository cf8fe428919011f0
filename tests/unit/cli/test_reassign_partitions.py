"""``mafka reassign-partitions``: JSON in and out, throttle arithmetic, argument errors (Kafka 2.8's)."""

from __future__ import annotations

import json

import pytest

from mafka.cli import reassign_partitions as rp
from mafka.cli.main import main


def test_reassignment_json_is_kafkas_byte_for_byte() -> None:
    text = rp.format_reassignment_json({("b", 0): [2, 1], ("a", 10): [3], ("a", 2): [1, 2]})
    assert text == (
        '{"version":1,"partitions":['
        '{"topic":"a","partition":2,"replicas":[1,2],"log_dirs":["any","any"]},'
        '{"topic":"a","partition":10,"replicas":[3],"log_dirs":["any"]},'
        '{"topic":"b","partition":0,"replicas":[2,1],"log_dirs":["any","any"]}]}'
    )
    assert rp.parse_reassignment_json(text) == {("b", 0): [2, 1], ("a", 10): [3], ("a", 2): [1, 2]}


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"version": 1, "partitions": []}, "Partition reassignment list cannot be empty"),
        (
            {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": []}]},
            "Partition replica list cannot be empty",
        ),
        (
            {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1]}] * 2},
            "Partition reassignment contains duplicate topic partitions: t-0",
        ),
        (
            {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 1, 2]}]},
            "Partition replica lists may not contain duplicate entries: t-0 contains multiple entries for 1",
        ),
    ],
)
def test_reassignment_json_errors(doc: dict, message: str) -> None:
    with pytest.raises(rp.CommandError, match=message):
        rp.parse_reassignment_json(json.dumps(doc))


def test_topics_to_move_json() -> None:
    assert rp.parse_topics_to_move_json(
        '{"topics":[{"topic":"foo"},{"topic":"bar"}],"version":1}'
    ) == ["foo", "bar"]
    with pytest.raises(rp.CommandError, match="duplicate entries: foo"):
        rp.parse_topics_to_move_json('{"topics":[{"topic":"foo"},{"topic":"foo"}],"version":1}')


def test_throttles_as_kafka_computes_them() -> None:
    current = {("t", 0): [1, 2], ("t", 1): [2, 3], ("u", 0): [1]}
    proposed = {("t", 0): [1, 3], ("t", 1): [2, 3], ("u", 0): [2]}
    in_flight = {("t", 1): ([4, 2, 3], [4])}  # an earlier move of t-1 towards 4
    moves = rp.proposed_move_map(in_flight, proposed, current)
    assert moves["t"][0] == ({1, 2}, {1, 3})
    assert moves["t"][1] == ({2, 3}, {2, 3}), "sources of the running move are kept"
    assert rp.leader_throttles(moves) == {"t": "0:1,0:2,1:2,1:3", "u": "0:1"}
    assert rp.follower_throttles(moves) == {"t": "0:3", "u": "0:2"}
    assert rp.reassigning_brokers(moves) == {1, 2, 3}


def test_exactly_one_action(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reassign-partitions", "--bootstrap-server", "localhost:1"]) == 1
    assert "exactly one action" in capsys.readouterr().err


def test_generate_needs_its_files(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "reassign-partitions",
                "--bootstrap-server",
                "localhost:1",
                "--generate",
                "--timeout",
                "100",
            ]
        )
        == 1
    )
    out = capsys.readouterr().out
    assert out.startswith("Error: If --generate option is used, command must include both")
