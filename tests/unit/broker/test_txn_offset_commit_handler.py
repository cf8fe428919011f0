"""TxnOffsetCommit (28) end to end: encoded requests → handler → a real GroupCoordinator
over a fake ``__consumer_offsets`` log → decoded responses (Kafka 2.8's
``handleTxnOffsetCommitRequest``), every version 0–3, and OffsetFetch v7+'s
``require_stable`` against the pending transactional offsets (KIP-447).
"""

from __future__ import annotations

import pytest

from mafka.errors import ErrorCode as E
from mafka.group.offsets_records import OffsetKey, OffsetValue
from mafka.wire.registry import API_SPECS
from tests.unit.broker.test_group_apis import fetch, fetch_groups
from tests.unit.broker.test_group_handlers import (
    FOREIGN,
    OTHER,
    T0,
    Broker,
    commit_errors,
    stable_one,
)

TXN_OFFSET_COMMIT = 28
VERSIONS = range(0, 4)
PID, EPOCH = 4000, 2


@pytest.fixture
def broker() -> Broker:
    return Broker()


def txn_commit(broker: Broker, version: int, group: str, partitions, *, pid: int = PID, epoch: int = EPOCH,
               member: str = "", generation: int = -1, instance: str | None = None, metadata: str | None = "m"):
    """TxnOffsetCommit of (topic, partition, offset, leader epoch) tuples; the Reply."""
    topics: dict[str, list] = {}
    for topic, index, offset, leader_epoch in partitions:
        topics.setdefault(topic, []).append({
            "partition_index": index,
            "committed_offset": offset,
            "committed_leader_epoch": leader_epoch,
            "committed_metadata": metadata,
        })
    body = {
        "transactional_id": "txn-1",
        "group_id": group,
        "producer_id": pid,
        "producer_epoch": epoch,
        "generation_id": generation,
        "member_id": member,
        "group_instance_id": instance,
        "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
    }
    return broker.send(TXN_OFFSET_COMMIT, version, body)


def end_txn(broker: Broker, group: str, commit: bool, *, pid: int = PID) -> None:
    """The WriteTxnMarkers path: the marker is written, then the coordinator is told."""
    partition = broker.coordinator.partition_for(group)
    broker.log.marker(partition, pid, commit)
    broker.coordinator.complete_transaction(partition, pid, commit)


def test_the_api_is_advertised_and_decoded_at_v0_to_v3():
    spec = API_SPECS[TXN_OFFSET_COMMIT]
    assert (spec.advertised, spec.decode) == ((0, 3), (0, 3))
    assert spec.request.is_flexible(3) and not spec.request.is_flexible(2)


@pytest.mark.parametrize("version", VERSIONS)
def test_txn_offsets_become_visible_when_the_transaction_commits(broker, version):
    reply = txn_commit(broker, version, OTHER, [("foo", 0, 10, 4), ("foo", 1, 11, 4)])
    assert commit_errors(reply.body) == {("foo", 0): E.NONE, ("foo", 1): E.NONE}
    # A transactional batch of the producer, offsets stamped as Kafka's convertTxnOffsets does.
    assert broker.log.producers[-1] == (PID, EPOCH)
    epoch = 4 if version >= 2 else -1
    assert broker.log.decoded()[-2:] == [
        (OffsetKey(OTHER, "foo", 0), OffsetValue(10, epoch, "m", T0, None)),
        (OffsetKey(OTHER, "foo", 1), OffsetValue(11, epoch, "m", T0, None)),
    ]
    got, _ = fetch(broker, 7, OTHER, [("foo", 0), ("foo", 1)])
    assert got == {("foo", 0): (-1, -1, E.NONE), ("foo", 1): (-1, -1, E.NONE)}
    end_txn(broker, OTHER, True)
    got, _ = fetch(broker, 7, OTHER, [("foo", 0), ("foo", 1)], require_stable=True)
    assert got == {("foo", 0): (10, epoch, E.NONE), ("foo", 1): (11, epoch, E.NONE)}


def test_aborted_txn_offsets_never_show(broker):
    assert commit_errors(txn_commit(broker, 3, OTHER, [("foo", 0, 10, 1)]).body) == {("foo", 0): E.NONE}
    end_txn(broker, OTHER, False)
    got, _ = fetch(broker, 7, OTHER, [("foo", 0)], require_stable=True)
    assert got == {("foo", 0): (-1, -1, E.NONE)}


def test_require_stable_answers_unstable_offset_commit_while_the_transaction_is_open(broker):
    assert commit_errors(txn_commit(broker, 3, OTHER, [("foo", 0, 10, 1)]).body) == {("foo", 0): E.NONE}
    got, _ = fetch(broker, 7, OTHER, [("foo", 0), ("foo", 1)], require_stable=True)
    assert got == {("foo", 0): (-1, -1, E.UNSTABLE_OFFSET_COMMIT), ("foo", 1): (-1, -1, E.NONE)}
    got, _ = fetch(broker, 6, OTHER, [("foo", 0)])  # below v7 there is no require_stable
    assert got == {("foo", 0): (-1, -1, E.NONE)}
    groups = fetch_groups(broker, {OTHER: [("foo", 0)]}, require_stable=True)
    assert groups[OTHER][0] == E.NONE
    assert groups[OTHER][1][("foo", 0)][-1] == E.UNSTABLE_OFFSET_COMMIT


def test_unknown_partitions_are_answered_without_reaching_the_coordinator(broker):
    reply = txn_commit(broker, 3, OTHER, [("foo", 0, 10, 1), ("foo", 9, 1, 1), ("nope", 0, 1, 1)])
    assert commit_errors(reply.body) == {
        ("foo", 0): E.NONE, ("foo", 9): E.UNKNOWN_TOPIC_OR_PARTITION, ("nope", 0): E.UNKNOWN_TOPIC_OR_PARTITION}
    only_unknown = txn_commit(broker, 3, OTHER, [("nope", 0, 1, 1)])
    assert commit_errors(only_unknown.body) == {("nope", 0): E.UNKNOWN_TOPIC_OR_PARTITION}


@pytest.mark.parametrize("version", VERSIONS)
def test_coordinator_errors(broker, version):
    assert commit_errors(txn_commit(broker, version, FOREIGN, [("foo", 0, 1, 1)]).body) == {
        ("foo", 0): E.NOT_COORDINATOR}
    assert commit_errors(txn_commit(broker, version, "", [("foo", 0, 1, 1)]).body) == {
        ("foo", 0): E.INVALID_GROUP_ID}


@pytest.mark.parametrize("version, expected", [(0, E.COORDINATOR_NOT_AVAILABLE), (1, E.COORDINATOR_NOT_AVAILABLE),
                                               (2, E.COORDINATOR_LOAD_IN_PROGRESS), (3, E.COORDINATOR_LOAD_IN_PROGRESS)])
def test_loading_is_coordinator_not_available_below_v2(version, expected):
    broker = Broker(load=False)
    assert commit_errors(txn_commit(broker, version, OTHER, [("foo", 0, 1, 1)]).body) == {("foo", 0): expected}


def test_the_answer_waits_for_the_append_and_maps_its_error(broker):
    broker.log.auto = False
    reply = txn_commit(broker, 3, OTHER, [("foo", 0, 1, 1)])
    assert not reply.done
    broker.log.release(E.NOT_ENOUGH_REPLICAS)
    assert commit_errors(reply.body) == {("foo", 0): E.COORDINATOR_NOT_AVAILABLE}


def test_v3_fences_by_member_and_generation(broker):
    joined = stable_one(broker, group=OTHER)
    member, generation = joined.member_id, joined.generation_id
    assert commit_errors(txn_commit(broker, 3, OTHER, [("foo", 0, 1, 1)], member="ghost",
                                    generation=generation).body) == {("foo", 0): E.UNKNOWN_MEMBER_ID}
    assert commit_errors(txn_commit(broker, 3, OTHER, [("foo", 0, 1, 1)], member=member,
                                    generation=generation + 1).body) == {("foo", 0): E.ILLEGAL_GENERATION}
    assert commit_errors(txn_commit(broker, 3, OTHER, [("foo", 0, 1, 1)], member=member,
                                    generation=generation).body) == {("foo", 0): E.NONE}


def test_below_v3_the_group_metadata_is_not_checked(broker):
    stable_one(broker, group=OTHER)
    # The body's v3 fields are not on the wire below v3: nothing to fence with.
    reply = txn_commit(broker, 2, OTHER, [("foo", 0, 1, 1)], member="ghost", generation=99)
    assert commit_errors(reply.body) == {("foo", 0): E.NONE}
