"""ElectLeaders (43) and Alter/ListPartitionReassignments (45/46) handlers over a fake controller cluster.

Requests go through the wire codec and the dispatcher to the handlers of
``mafka.broker.handlers.elect_leaders`` / ``partition_reassignments``; the
controller is the real one, on the MemoryStore cluster of
``tests/unit/controller/cluster.py`` (its fake brokers' metadata caches stand
in for the broker's own).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from twisted.internet.defer import Deferred

from mafka.broker.dispatcher import Dispatcher, collect_handlers
from mafka.errors import ErrorCode
from mafka.wire.codec import decode_request, decode_response, encode_request
from tests.unit.controller.cluster import Cluster, result, set_isr

NO_AUTO = {"auto.leader.rebalance.enable": "false"}


def call(
    cluster: Cluster, broker_id: int, api_key: int, version: int, body: dict, advance: float = 0
) -> Any:
    broker = SimpleNamespace(
        broker_id=broker_id,
        controller=cluster.controllers[broker_id],
        metadata_cache=cluster.brokers[broker_id].metadata,
        reactor=cluster.clock,
    )
    dispatcher = Dispatcher(collect_handlers(broker))
    request = decode_request(encode_request(api_key, version, 1, "test", body)[4:])
    out = dispatcher.dispatch(request, SimpleNamespace(listener="PLAINTEXT"))
    for _ in range(20):
        cluster.settle()
        cluster.clock.advance(0.01)
    if advance:
        cluster.clock.advance(advance)
    chunks = result(out) if isinstance(out, Deferred) else out
    _, response = decode_response(api_key, version, b"".join(chunks)[4:])
    return response


def flat(response: Any) -> dict[tuple[str, int], tuple[int, str | None]]:
    return {
        (r.topic, p.partition_id): (p.error_code, p.error_message)
        for r in response.replica_election_results
        for p in r.partition_result
    }


def test_elect_leaders_on_the_controller_and_elsewhere() -> None:
    cluster = Cluster((1, 2, 3), config=NO_AUTO)
    c = cluster.active
    x, y = cluster.others()
    cluster.create("t", {0: [x, y], 1: [y, x]})
    cluster.kill(x)
    cluster.start_broker(x)
    set_isr(cluster, "t", 0, (y, x))
    body = {
        "election_type": 0,
        "topic_partitions": [{"topic": "t", "partitions": [0, 1, 5]}],
        "timeout_ms": 1000,
    }

    for version in (0, 1, 2):
        response = call(cluster, x, 43, version, body)
        assert {code for code, _ in flat(response).values()} == {ErrorCode.NOT_CONTROLLER}

    response = call(cluster, c.broker_id, 43, 2, body)
    assert response.error_code == 0
    assert flat(response) == {
        ("t", 0): (ErrorCode.NONE, None),
        ("t", 1): (
            ErrorCode.ELECTION_NOT_NEEDED,
            "Leader election not needed for topic partition.",
        ),
        ("t", 5): (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."),
    }
    assert cluster.brokers[c.broker_id].metadata.partition("t", 0).leader == x

    # Null partitions: every partition, ELECTION_NOT_NEEDED left out.
    response = call(cluster, c.broker_id, 43, 1, {**body, "topic_partitions": None})
    assert flat(response) == {}


def test_elect_leaders_times_out_when_the_broker_does_not_see_the_leader() -> None:
    cluster = Cluster((1, 2, 3), config=NO_AUTO)
    c = cluster.active
    x, y = cluster.others()
    cluster.create("t", {0: [x, y]})
    cluster.kill(x)
    cluster.start_broker(x)
    set_isr(cluster, "t", 0, (y, x))
    cluster.brokers[c.broker_id].up = False  # its own UpdateMetadata never arrives
    body = {
        "election_type": 0,
        "topic_partitions": [{"topic": "t", "partitions": [0]}],
        "timeout_ms": 500,
    }
    response = call(cluster, c.broker_id, 43, 1, body, advance=1)
    assert flat(response) == {("t", 0): (ErrorCode.REQUEST_TIMED_OUT, None)}
    assert cluster.state("t", 0).leader == x


def test_partition_reassignments_handlers() -> None:
    cluster = Cluster((1, 2, 3), config=NO_AUTO)
    c = cluster.active
    x, y = cluster.others()
    cluster.create("t", {0: [x], 1: [x]})
    alter = {
        "timeout_ms": 1000,
        "topics": [
            {
                "name": "t",
                "partitions": [
                    {"partition_index": 0, "replicas": [y]},
                    {"partition_index": 1, "replicas": None},
                ],
            }
        ],
    }
    response = call(cluster, x, 45, 0, alter)
    assert (response.error_code, list(response.responses)) == (ErrorCode.NOT_CONTROLLER, [])
    response = call(cluster, c.broker_id, 45, 0, alter)
    assert response.error_code == 0 and response.error_message is None
    got = {
        (t.name, p.partition_index): p.error_code for t in response.responses for p in t.partitions
    }
    assert got == {("t", 0): ErrorCode.NONE, ("t", 1): ErrorCode.NO_REASSIGNMENT_IN_PROGRESS}

    listed = call(cluster, c.broker_id, 46, 0, {"timeout_ms": 1000, "topics": None})
    assert listed.error_code == 0
    (topic,) = listed.topics
    (part,) = topic.partitions
    assert (topic.name, part.partition_index) == ("t", 0)
    assert (list(part.replicas), list(part.adding_replicas), list(part.removing_replicas)) == (
        [y, x],
        [y],
        [x],
    )
    some = call(
        cluster,
        c.broker_id,
        46,
        0,
        {"timeout_ms": 1000, "topics": [{"name": "t", "partition_indexes": [1]}]},
    )
    assert list(some.topics) == []
    assert (
        call(cluster, y, 46, 0, {"timeout_ms": 1, "topics": None}).error_code
        == ErrorCode.NOT_CONTROLLER
    )
