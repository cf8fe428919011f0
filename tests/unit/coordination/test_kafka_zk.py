"""mafka.coordination.kafka_zk: Kafka's ZooKeeper operations, on MemoryStore.

Several :class:`MemoryStore` sessions on one :class:`MemoryZooKeeper` tree play
several brokers.  Synchronous stores make each call complete at once; stores
with a ``Clock`` deliver results through ``callLater(0)``, so operations
started together interleave round-robin — that is how the races (two
elections, two producer-id claims) are staged, deterministically.
"""

from __future__ import annotations

import inspect
import random
from typing import Any

import pytest
from twisted.internet.defer import Deferred
from twisted.internet.task import Clock
from twisted.python.failure import Failure

from mafka.coordination.kafka_zk import (
    BrokerIdAlreadyRegisteredError,
    ControllerElection,
    ControllerMovedError,
    KafkaZkClient,
    validate_topic_name,
)
from mafka.coordination.kafka_zk.core import ZkCore, ZkFamily
from mafka.coordination.memory_store import MemoryStore, MemoryZooKeeper
from mafka.coordination.store import BadVersionError, NodeExistsError, NoNodeError, SetOp
from mafka.coordination.znodes import (
    PERSISTENT_ZK_PATHS,
    BrokerRegistration,
    ConfigEntityZNode,
    ControllerZNode,
    DeleteTopicsZNode,
    FeatureZNode,
    IsrChangeNotificationZNode,
    LeaderIsrAndControllerEpoch,
    PreferredReplicaElectionZNode,
    ProducerIdBlock,
    ReassignPartitionsZNode,
    TopicAssignment,
    partition_state_path,
    topic_path,
)
from mafka.errors import InvalidTopicError, TopicAlreadyExistsError, UnknownTopicOrPartitionError

NOW = 1650000000000


def result(d: Deferred[Any]) -> Any:
    """The result of an already-fired Deferred (raises its failure)."""
    box: list[Any] = []
    d.addBoth(box.append)
    assert box, "the Deferred has not fired"
    if isinstance(box[0], Failure):
        box[0].raiseException()
    return box[0]


def failure(d: Deferred[Any]) -> BaseException:
    """The exception of an already-failed Deferred."""
    box: list[Any] = []
    d.addBoth(box.append)
    assert box and isinstance(box[0], Failure), f"expected a failure, got {box}"
    return box[0].value


def settle(clock: Clock, *ds: Deferred[Any]) -> list[Any]:
    """Advances *clock* until every Deferred fired; their results (Failures for errors)."""
    boxes: list[list[Any]] = [[] for _ in ds]
    for d, box in zip(ds, boxes, strict=True):
        d.addBoth(box.append)
    for _ in range(10_000):
        if all(boxes):
            break
        clock.advance(0)
    assert all(boxes), "some Deferreds never fired"
    return [box[0] for box in boxes]


@pytest.fixture
def tree() -> MemoryZooKeeper:
    return MemoryZooKeeper(time_ms=lambda: NOW)


def session(tree: MemoryZooKeeper, clock: Clock | None = None) -> MemoryStore:
    store = MemoryStore(tree, clock=clock)
    d = store.start()
    if clock is not None:
        settle(clock, d)
    return store


@pytest.fixture
def zk(tree: MemoryZooKeeper) -> KafkaZkClient:
    client = KafkaZkClient(session(tree))
    result(client.create_persistent_roots())
    return client


def registration(broker_id: int, port: int = 9092) -> BrokerRegistration:
    return BrokerRegistration(
        broker_id, {"PLAINTEXT": ("PLAINTEXT", f"b{broker_id}", port)}, timestamp=NOW
    )


# --------------------------------------------------------------------------- startup


def test_persistent_roots_are_created_empty_and_idempotently(
    tree: MemoryZooKeeper, zk: KafkaZkClient
) -> None:
    dump = tree.dump()
    for path in PERSISTENT_ZK_PATHS:
        assert dump[path] == b""
    result(zk.create_persistent_roots())
    assert tree.dump() == dump


def test_cluster_id_is_created_once(tree: MemoryZooKeeper, zk: KafkaZkClient) -> None:
    assert result(zk.get_cluster_id()) is None
    assert (
        result(zk.get_or_create_cluster_id(lambda: "4pPaM0PaTYCcMYkMi2sHHQ"))
        == "4pPaM0PaTYCcMYkMi2sHHQ"
    )
    assert tree.dump()["/cluster/id"] == b'{"version":"1","id":"4pPaM0PaTYCcMYkMi2sHHQ"}'

    other = KafkaZkClient(session(tree))

    def must_not_be_called() -> str:
        raise AssertionError("an id was proposed although one exists")

    assert result(other.get_or_create_cluster_id(must_not_be_called)) == "4pPaM0PaTYCcMYkMi2sHHQ"
    assert result(other.get_cluster_id()) == "4pPaM0PaTYCcMYkMi2sHHQ"


def test_cluster_id_race_keeps_the_first(tree: MemoryZooKeeper) -> None:
    clock = Clock()
    a, b = KafkaZkClient(session(tree, clock)), KafkaZkClient(session(tree, clock))
    ids = settle(
        clock,
        a.get_or_create_cluster_id(lambda: "A" * 22),
        b.get_or_create_cluster_id(lambda: "B" * 22),
    )
    assert ids == ["A" * 22, "A" * 22]


def test_broker_sequence_ids(zk: KafkaZkClient) -> None:
    assert [result(zk.generate_broker_sequence_id()) for _ in range(3)] == [1, 2, 3]


# --------------------------------------------------------------------------- brokers


def test_registration_gives_increasing_epochs(tree: MemoryZooKeeper, zk: KafkaZkClient) -> None:
    stores = [session(tree) for _ in range(3)]
    epochs = [
        result(KafkaZkClient(s).register_broker(registration(i))) for i, s in enumerate(stores)
    ]
    assert epochs == sorted(epochs) and len(set(epochs)) == 3
    assert tree.dump()["/brokers/ids/0"] == registration(0).encode()
    brokers = result(zk.get_all_brokers())
    assert brokers == {i: (registration(i), epochs[i]) for i in range(3)}
    assert result(zk.get_broker_ids()) == [0, 1, 2]
    assert result(zk.get_broker(1)) == registration(1)
    assert result(zk.get_broker_and_epoch(2)) == (registration(2), epochs[2])
    assert result(zk.get_broker(9)) is None

    # a bounced broker (same id, new session) gets a larger epoch
    stores[1].expire_session()
    assert result(zk.get_broker(1)) is None
    again = result(KafkaZkClient(stores[1]).register_broker(registration(1)))
    assert again > max(epochs)


def test_duplicate_registration_fails(tree: MemoryZooKeeper) -> None:
    first, second = KafkaZkClient(session(tree)), KafkaZkClient(session(tree))
    result(first.create_persistent_roots())
    epoch = result(first.register_broker(registration(1)))
    err = failure(second.register_broker(registration(1, port=9999)))
    assert isinstance(err, BrokerIdAlreadyRegisteredError) and isinstance(err, NodeExistsError)
    assert "broker id 1 already registered" in str(err)
    assert result(first.get_broker(1)) == registration(1)
    # the owning session re-registering (a retried request) gets its epoch back
    assert result(first.register_broker(registration(1))) == epoch


def test_registration_needs_the_roots(tree: MemoryZooKeeper) -> None:
    assert isinstance(
        failure(KafkaZkClient(session(tree)).register_broker(registration(1))), NoNodeError
    )


def test_update_broker(zk: KafkaZkClient) -> None:
    result(zk.register_broker(registration(1)))
    result(zk.update_broker(registration(1, port=1234)))
    assert result(zk.get_broker(1)).port == 1234


# --------------------------------------------------------------------------- controller election


def test_first_election(tree: MemoryZooKeeper, zk: KafkaZkClient) -> None:
    assert result(zk.get_controller_id()) is None
    assert result(zk.elect_controller(1, NOW)) == ControllerElection(True, 1, 1)
    dump = tree.dump()
    assert dump["/controller"] == b'{"version":1,"brokerid":1,"timestamp":"1650000000000"}'
    assert dump["/controller_epoch"] == b"1"
    assert result(zk.get_controller_id()) == 1
    assert result(zk.get_controller_epoch()) == (1, 1)
    # /controller exists (even naming us): no new election, nothing written
    assert result(zk.elect_controller(1, NOW)) == ControllerElection(False, 1, 1)
    assert tree.dump()["/controller_epoch"] == b"1"


def test_race_exactly_one_wins_and_epochs_grow_across_failovers(tree: MemoryZooKeeper) -> None:
    clock = Clock()
    stores = {1: session(tree, clock), 2: session(tree, clock)}
    clients = {i: KafkaZkClient(s) for i, s in stores.items()}
    outcomes = settle(
        clock, clients[1].elect_controller(1, NOW), clients[2].elect_controller(2, NOW)
    )
    assert sorted(o.won for o in outcomes) == [False, True]
    winner = 1 if outcomes[0].won else 2
    assert outcomes[winner - 1] == ControllerElection(True, 1, 1)
    assert outcomes[2 - winner] == ControllerElection(False, 1, 1)  # the loser saw the new epoch
    assert settle(clock, clients[1].get_controller_id()) == [winner]

    epochs = [1]
    for _ in range(2):
        # the controller's session expires: /controller goes; everyone re-elects
        stores[winner].expire_session()
        clock.advance(0)
        loser = 3 - winner
        first, second = settle(
            clock,
            clients[loser].elect_controller(loser, NOW),
            clients[winner].elect_controller(winner, NOW),
        )
        assert first.won and not second.won
        epochs.append(first.controller_epoch)
        assert first.epoch_zk_version == first.controller_epoch  # one setData per election
        winner = loser
    assert epochs == [1, 2, 3]
    assert tree.dump()["/controller_epoch"] == b"3"
    assert ControllerZNode.decode(tree.dump()["/controller"]).broker_id == winner


def test_stale_controller_is_fenced(tree: MemoryZooKeeper) -> None:
    old_store, new_store = session(tree), session(tree)
    old, new = KafkaZkClient(old_store), KafkaZkClient(new_store)
    result(old.create_persistent_roots())
    result(old.create_topic("t", {0: [1, 2]}))
    mine = result(old.elect_controller(1, NOW))
    assert mine.won
    created = result(
        old.create_partition_states(
            {("t", 0): LeaderIsrAndControllerEpoch(1, 0, (1, 2), 0)},
            mine.controller_epoch,
            mine.epoch_zk_version,
        )
    )
    state = created.successes[("t", 0)]
    assert state.controller_epoch == 1 and state.zk_version == 0

    # The old controller's session dies server-side but it has not noticed (a zombie).
    tree.expire_session(old_store.session_id)
    theirs = result(new.elect_controller(2, NOW))
    assert theirs == ControllerElection(True, 2, 2)

    path = partition_state_path("t", 0)
    before = tree.dump()[path]
    write = SetOp(path, LeaderIsrAndControllerEpoch(2, 1, (2,), 1).encode(), 0)
    assert isinstance(
        failure(old.controller_epoch_checked([write], mine.epoch_zk_version)), ControllerMovedError
    )
    err = failure(
        old.update_partition_states_conditionally(
            {("t", 0): LeaderIsrAndControllerEpoch(2, 1, (2,), 1, zk_version=0)},
            mine.controller_epoch,
            mine.epoch_zk_version,
        )
    )
    assert isinstance(err, ControllerMovedError)
    assert isinstance(failure(old.delete_controller(mine.epoch_zk_version)), ControllerMovedError)
    assert isinstance(
        failure(old.delete_topic_znodes("t", mine.epoch_zk_version)), ControllerMovedError
    )
    assert tree.dump()[path] == before

    # the new controller's writes go through; a stale *node* version is BadVersion, not ControllerMoved
    assert result(new.controller_epoch_checked([write], theirs.epoch_zk_version))[0].version == 1
    assert isinstance(
        failure(new.controller_epoch_checked([write], theirs.epoch_zk_version)), BadVersionError
    )
    with pytest.raises(ValueError):
        result(new.controller_epoch_checked([write], -5))


def test_controller_resigns_by_deleting_its_node(tree: MemoryZooKeeper, zk: KafkaZkClient) -> None:
    won = result(zk.elect_controller(1, NOW))
    result(zk.delete_controller(won.epoch_zk_version))
    assert result(zk.get_controller_id()) is None
    result(zk.delete_controller(won.epoch_zk_version))  # absent is fine
    other = KafkaZkClient(session(tree))
    assert result(other.elect_controller(2, NOW)) == ControllerElection(True, 2, 2)


def test_garbage_controller_node_reads_as_no_controller(
    tree: MemoryZooKeeper, zk: KafkaZkClient
) -> None:
    result(zk.store.create("/controller", b"junk"))
    assert result(zk.get_controller_id()) is None


# --------------------------------------------------------------------------- topics


def test_create_topic_writes_config_then_assignment(
    tree: MemoryZooKeeper, zk: KafkaZkClient
) -> None:
    tid = "WV18z8nWQ8yekl_6282UEQ"
    written = result(
        zk.create_topic("orders", {0: [1, 2], 1: [2, 1]}, {"cleanup.policy": "compact"}, tid)
    )
    assert written == TopicAssignment({0: [1, 2], 1: [2, 1]}, topic_id=tid)
    config_stat = result(zk.store.exists("/config/topics/orders"))
    topic_stat = result(zk.store.exists("/brokers/topics/orders"))
    assert config_stat.czxid < topic_stat.czxid  # AdminZkClient: the config node first
    dump = tree.dump()
    assert dump["/brokers/topics/orders"] == (
        b'{"partitions":{"0":[1,2],"1":[2,1]},"topic_id":"WV18z8nWQ8yekl_6282UEQ","adding_replicas":{},'
        b'"removing_replicas":{},"version":3}'
    )
    assert dump["/config/topics/orders"] == b'{"version":1,"config":{"cleanup.policy":"compact"}}'
    assert result(zk.get_topics()) == ["orders"]
    assert result(zk.topic_exists("orders")) and not result(zk.topic_exists("nope"))
    assert result(zk.get_assignment("orders")) == (written, 0)
    assert result(zk.get_topic_config("orders")) == {"cleanup.policy": "compact"}

    # exists: refused before the config is touched
    err = failure(zk.create_topic("orders", {0: [3]}, {"retention.ms": "1"}))
    assert isinstance(err, TopicAlreadyExistsError) and "orders" in str(err)
    assert result(zk.get_topic_config("orders")) == {"cleanup.policy": "compact"}


def test_create_topic_without_config_writes_an_empty_one(
    tree: MemoryZooKeeper, zk: KafkaZkClient
) -> None:
    result(zk.create_topic("t", TopicAssignment({0: [1]})))
    assert tree.dump()["/config/topics/t"] == b'{"version":1,"config":{}}'
    assert result(zk.get_topic_config("other")) == {}


def test_topic_names_are_validated(zk: KafkaZkClient) -> None:
    for bad in ("", ".", "..", "a/b", "x" * 250, "spaß"):
        assert isinstance(failure(zk.create_topic(bad, {0: [1]})), InvalidTopicError)
    validate_topic_name("ok.name_with-chars")
    result(zk.create_topic("a.b", {0: [1]}))
    err = failure(zk.create_topic("a_b", {0: [1]}))
    assert isinstance(err, InvalidTopicError) and "collides" in str(err)


def test_set_assignment_is_conditional(zk: KafkaZkClient) -> None:
    result(zk.create_topic("t", {0: [1]}))
    assignment, version = result(zk.get_assignment("t"))
    grown = TopicAssignment({0: [1], 1: [2]}, topic_id=assignment.topic_id)
    assert result(zk.set_assignment("t", grown, version)) == version + 1
    assert isinstance(failure(zk.set_assignment("t", grown, version)), BadVersionError)
    assert result(zk.get_assignment("t")) == (grown, version + 1)
    assert result(zk.get_assignment("nope")) is None
    assert isinstance(failure(zk.set_assignment("nope", grown)), NoNodeError)


def test_topic_config_change_is_announced(tree: MemoryZooKeeper, zk: KafkaZkClient) -> None:
    result(zk.create_topic("t", {0: [1]}))
    path = result(zk.set_topic_config("t", {"retention.ms": "1000"}))
    assert path == "/config/changes/config_change_0000000000"
    dump = tree.dump()
    assert dump["/config/topics/t"] == b'{"version":1,"config":{"retention.ms":"1000"}}'
    assert dump[path] == b'{"version":2,"entity_path":"topics/t"}'
    assert isinstance(failure(zk.set_topic_config("missing", {})), UnknownTopicOrPartitionError)

    second = result(zk.set_broker_config(None, {"log.cleaner.threads": "2"}))
    assert second == "/config/changes/config_change_0000000001"
    assert tree.dump()[second] == b'{"version":2,"entity_path":"brokers/<default>"}'
    assert result(zk.get_broker_config(None)) == {"log.cleaner.threads": "2"}
    result(zk.set_broker_config(3, {"a": "b"}))
    assert result(zk.get_broker_config(3)) == {"a": "b"}
    assert result(zk.get_config_change_notifications()) == [
        "config_change_0000000000",
        "config_change_0000000001",
        "config_change_0000000002",
    ]


# --------------------------------------------------------------------------- partition states


@pytest.fixture
def controller(zk: KafkaZkClient) -> ControllerElection:
    result(zk.create_topic("t", {0: [1, 2], 1: [2, 1], 2: [1, 2]}))
    return result(zk.elect_controller(1, NOW))


def test_create_and_update_partition_states(
    tree: MemoryZooKeeper, zk: KafkaZkClient, controller: ControllerElection
) -> None:
    epoch, token = controller.controller_epoch, controller.epoch_zk_version
    states = {("t", p): LeaderIsrAndControllerEpoch(1 + p % 2, 0, (1, 2), 99) for p in range(3)}
    states[("gone", 0)] = LeaderIsrAndControllerEpoch(1, 0, (1,), 99)
    created = result(zk.create_partition_states(states, epoch, token))
    assert set(created.successes) == {("t", 0), ("t", 1), ("t", 2)}
    assert isinstance(created.failures[("gone", 0)], NoNodeError)  # no topic node is made up
    assert "/brokers/topics/gone" not in tree.dump()
    dump = tree.dump()
    assert (
        dump["/brokers/topics/t/partitions"] == b""
        and dump["/brokers/topics/t/partitions/1"] == b""
    )
    assert (
        dump[partition_state_path("t", 0)]
        == b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1,2]}'
    )
    assert result(zk.get_partition_state("t", 0)) == (created.successes[("t", 0)], 0)

    again = result(zk.create_partition_states({("t", 0): states[("t", 0)]}, epoch, token))
    assert isinstance(again.failures[("t", 0)], NodeExistsError)

    read = result(zk.get_partition_states([("t", 0), ("t", 1), ("t", 7)]))
    assert set(read) == {("t", 0), ("t", 1)}
    update = {
        ("t", 0): LeaderIsrAndControllerEpoch(2, 1, (2,), 0, zk_version=0),  # current version
        ("t", 1): LeaderIsrAndControllerEpoch(1, 1, (1,), 0, zk_version=5),  # stale version
        ("t", 7): LeaderIsrAndControllerEpoch(1, 1, (1,), 0, zk_version=0),  # no such node
    }
    out = result(zk.update_partition_states_conditionally(update, epoch, token))
    assert out.successes == {("t", 0): LeaderIsrAndControllerEpoch(2, 1, (2,), epoch)}
    assert out.successes[("t", 0)].zk_version == 1
    assert out.bad_version == [("t", 1)]
    assert isinstance(out.failures[("t", 7)], NoNodeError)
    assert result(zk.get_partition_state("t", 0)) == (
        LeaderIsrAndControllerEpoch(2, 1, (2,), epoch),
        1,
    )
    assert result(zk.get_partition_state("t", 1))[1] == 0


def test_batched_state_writes_keep_each_partitions_compare_and_set(
    tree: MemoryZooKeeper, zk: KafkaZkClient, controller: ControllerElection
) -> None:
    # Thousands of partitions go in one batch; each still succeeds or fails on its own version.
    epoch, token = controller.controller_epoch, controller.epoch_zk_version
    result(zk.create_topic("big", {p: [1, 2] for p in range(300)}))
    states = {("big", p): LeaderIsrAndControllerEpoch(1, 0, (1, 2), 0) for p in range(300)}
    created = result(zk.create_partition_states(states, epoch, token))
    assert len(created.successes) == 300 and not created.failures
    read = result(zk.get_partition_states([("big", p) for p in range(300)] + [("big", 300)]))
    assert len(read) == 300 and all(state.zk_version == 0 for state in read.values())
    # a partition leader moved three versions on meanwhile (its own ISR writes)
    for p in (7, 150, 299):
        state = read[("big", p)]
        assert result(zk.conditional_update_partition_state_as_leader(("big", p), state, 0)) == (True, 1)
    update = {tp: LeaderIsrAndControllerEpoch(2, 1, (2,), 0, zk_version=0) for tp in read}
    out = result(zk.update_partition_states_conditionally(update, epoch, token))
    assert sorted(out.bad_version) == [("big", 7), ("big", 150), ("big", 299)]
    assert len(out.successes) == 297 and not out.failures
    assert all(state.zk_version == 1 and state.leader == 2 for state in out.successes.values())
    assert result(zk.get_partition_state("big", 150))[0].leader == 1  # not overwritten
    # retrying only the stale ones with the versions read again
    again = result(zk.get_partition_states(out.bad_version))
    retry = {tp: LeaderIsrAndControllerEpoch(2, 1, (2,), 0, zk_version=s.zk_version) for tp, s in again.items()}
    out = result(zk.update_partition_states_conditionally(retry, epoch, token))
    assert set(out.successes) == set(retry) and not out.bad_version


def test_batched_writes_of_a_fenced_controller_raise_controller_moved(tree: MemoryZooKeeper) -> None:
    old_store, new_store = session(tree), session(tree)
    old, new = KafkaZkClient(old_store), KafkaZkClient(new_store)
    result(old.create_persistent_roots())
    result(old.create_topic("t", {p: [1, 2] for p in range(5)}))
    mine = result(old.elect_controller(1, NOW))
    states = {("t", p): LeaderIsrAndControllerEpoch(1, 0, (1, 2), 0) for p in range(5)}
    result(old.create_partition_states(states, mine.controller_epoch, mine.epoch_zk_version))
    tree.expire_session(old_store.session_id)
    assert result(new.elect_controller(2, NOW)).won
    before = tree.dump("/brokers/topics/t")
    stale = {tp: LeaderIsrAndControllerEpoch(2, 1, (2,), 1, zk_version=0) for tp in states}
    for d in (
        old.update_partition_states_conditionally(stale, mine.controller_epoch, mine.epoch_zk_version),
        old.create_partition_states({("t", 9): states[("t", 0)]}, mine.controller_epoch, mine.epoch_zk_version),
        old.delete_isr_change_notifications(["0000000001"], mine.epoch_zk_version),
        old.delete_topic_deletions(["t"], mine.epoch_zk_version),
    ):
        assert isinstance(failure(d), ControllerMovedError)
    assert tree.dump("/brokers/topics/t") == before


def test_batched_reads_of_assignments_and_configs(zk: KafkaZkClient) -> None:
    result(zk.create_topic("a", {0: [1], 1: [2]}, {"retention.ms": "5"}))
    result(zk.create_topic("b", {0: [3]}))
    got = result(zk.get_assignments(["b", "missing", "a", "b"]))
    assert list(got) == ["b", "a"]
    assert got["a"][0].partitions == {0: (1,), 1: (2,)} and got["a"][1] == 0
    assert result(zk.get_topic_configs(["a", "b", "missing"])) == {
        "a": {"retention.ms": "5"},
        "b": {},
        "missing": {},
    }
    assert result(zk.get_assignments([])) == {}


def test_leader_isr_write_treats_an_identical_value_as_success(
    zk: KafkaZkClient, controller: ControllerElection
) -> None:
    result(
        zk.create_partition_states(
            {("t", 0): LeaderIsrAndControllerEpoch(1, 0, (1, 2), 0)}, 1, controller.epoch_zk_version
        )
    )
    shrunk = LeaderIsrAndControllerEpoch(1, 0, (1,), 1)
    assert result(zk.conditional_update_partition_state_as_leader(("t", 0), shrunk, 0)) == (True, 1)
    # the same write again with the old version (a retry after a lost reply): success, current version
    assert result(zk.conditional_update_partition_state_as_leader(("t", 0), shrunk, 0)) == (True, 1)
    # a different value with a stale version fails
    expanded = LeaderIsrAndControllerEpoch(1, 0, (1, 2), 1)
    assert result(zk.conditional_update_partition_state_as_leader(("t", 0), expanded, 0)) == (
        False,
        -1,
    )
    assert result(zk.conditional_update_partition_state_as_leader(("t", 0), expanded, 1)) == (
        True,
        2,
    )
    assert result(zk.conditional_update_partition_state_as_leader(("t", 9), expanded, 0)) == (
        False,
        -1,
    )
    # no controller-epoch check on the leader's path
    assert result(zk.get_partition_state("t", 0)) == (expanded, 2)


def test_leader_isr_writes_in_one_batch_have_each_partitions_single_write_outcome(
    zk: KafkaZkClient, controller: ControllerElection
) -> None:
    result(
        zk.create_partition_states(
            {("t", p): LeaderIsrAndControllerEpoch(1, 0, (1, 2), 0) for p in range(4)}, 1, controller.epoch_zk_version
        )
    )
    shrunk = LeaderIsrAndControllerEpoch(1, 0, (1,), 1)
    assert result(zk.conditional_update_partition_state_as_leader(("t", 1), shrunk, 0)) == (True, 1)
    other = LeaderIsrAndControllerEpoch(1, 0, (2,), 1)
    assert result(zk.conditional_update_partition_state_as_leader(("t", 2), other, 0)) == (True, 1)
    got = result(zk.conditional_update_partition_states_as_leader({
        ("t", 0): (shrunk, 0),  # written
        ("t", 1): (shrunk, 0),  # stale version, same value (a retried write): success
        ("t", 2): (shrunk, 0),  # stale version, another value: refused
        ("t", 3): (shrunk, 0),  # written: the refusal beside it undoes nothing
        ("t", 9): (shrunk, 0),  # no such partition
    }))
    assert got == {("t", 0): (True, 1), ("t", 1): (True, 1), ("t", 2): (False, -1), ("t", 3): (True, 1),
                   ("t", 9): (False, -1)}
    assert result(zk.get_partition_state("t", 3)) == (shrunk, 1)
    assert result(zk.get_partition_state("t", 2)) == (other, 1)
    assert result(zk.conditional_update_partition_states_as_leader({})) == {}


# --------------------------------------------------------------------------- deletion


def test_topic_deletion_cleans_all_three_znodes(
    tree: MemoryZooKeeper, zk: KafkaZkClient, controller: ControllerElection
) -> None:
    result(zk.create_topic("u", {0: [1]}, {"retention.ms": "5"}))
    result(
        zk.create_partition_states(
            {("t", 0): LeaderIsrAndControllerEpoch(1, 0, (1,), 0)}, 1, controller.epoch_zk_version
        )
    )
    assert result(zk.mark_topic_for_deletion("t")) is True
    assert result(zk.mark_topic_for_deletion("t")) is False
    assert result(zk.is_topic_marked_for_deletion("t"))
    assert tree.dump()[DeleteTopicsZNode.path("t")] == b""
    assert isinstance(failure(zk.mark_topic_for_deletion("missing")), UnknownTopicOrPartitionError)
    assert result(zk.get_topic_deletions()) == ["t"]

    result(zk.delete_topic_znodes("t", controller.epoch_zk_version))
    remaining = tree.dump()
    assert not [
        p
        for p in remaining
        if p.startswith(("/brokers/topics/t", "/config/topics/t", "/admin/delete_topics/t"))
    ]
    assert "/brokers/topics/u" in remaining and "/config/topics/u" in remaining
    assert result(zk.get_topic_deletions()) == []
    result(zk.delete_topic_znodes("t"))  # absent nodes are fine

    result(zk.mark_topic_for_deletion("u"))
    result(zk.delete_topic_deletions(["u", "zzz"]))
    assert result(zk.get_topic_deletions()) == [] and result(zk.topic_exists("u"))


# --------------------------------------------------------------------------- notifications


def test_isr_changes_of_100000_partitions_go_in_notifications_zookeeper_accepts(
    tree: MemoryZooKeeper, zk: KafkaZkClient
) -> None:
    from mafka.coordination.kafka_zk.notifications import MAX_NOTIFICATION_BYTES
    from mafka.coordination.memory_store import JUTE_MAX_BUFFER
    from mafka.coordination.store import ConnectionLossError

    changed = [(f"bench-{t:05d}", p) for t in range(10_000) for p in range(10)]
    result(zk.post_isr_change_notification(changed))
    seqs = result(zk.get_isr_change_notifications())
    assert len(seqs) > 1
    assert all(len(tree.dump()[f"/isr_change_notification/isr_change_{s}"]) <= MAX_NOTIFICATION_BYTES for s in seqs)
    assert result(zk.get_partitions_from_isr_change_notifications(seqs)) == changed
    # what one notification of them all would have met (as ZooKeeper: the connection closes)
    with pytest.raises(ConnectionLossError, match="jute.maxbuffer"):
        result(zk.store.create("/too-big", b"x" * JUTE_MAX_BUFFER))


def test_isr_change_notifications(tree: MemoryZooKeeper, zk: KafkaZkClient) -> None:
    first = result(zk.post_isr_change_notification([("topic-a", 0), ("topic-b", 0)]))
    second = result(zk.post_isr_change_notification([("topic-b", 0)]))
    assert (first, second) == (
        "/isr_change_notification/isr_change_0000000000",
        "/isr_change_notification/isr_change_0000000001",
    )
    assert (
        tree.dump()[first]
        == b'{"version":1,"partitions":[{"topic":"topic-a","partition":0},{"topic":"topic-b","partition":0}]}'
    )
    seqs = result(zk.get_isr_change_notifications())
    assert seqs == ["0000000000", "0000000001"]
    assert result(zk.get_partitions_from_isr_change_notifications([*seqs, "0000000009"])) == [
        ("topic-a", 0),
        ("topic-b", 0),
        ("topic-b", 0),
    ]
    result(zk.delete_isr_change_notifications(["0000000000"]))
    assert result(zk.get_isr_change_notifications()) == ["0000000001"]
    result(zk.delete_isr_change_notifications())
    assert result(zk.get_isr_change_notifications()) == []
    assert IsrChangeNotificationZNode.PATH in tree.dump()


def test_log_dir_events(tree: MemoryZooKeeper, zk: KafkaZkClient) -> None:
    path = result(zk.post_log_dir_event(3))
    assert tree.dump()[path] == b'{"version":1,"broker":3,"event":1}'
    result(zk.post_log_dir_event(4))
    seqs = result(zk.get_log_dir_event_notifications())
    assert result(zk.get_broker_ids_from_log_dir_events(seqs)) == [3, 4]
    result(zk.delete_log_dir_event_notifications())
    assert result(zk.get_log_dir_event_notifications()) == []


def test_admin_request_nodes(zk: KafkaZkClient) -> None:
    assert result(zk.get_preferred_replica_election()) == ()
    assert result(zk.get_partition_reassignment()) == {}
    result(
        zk.store.create(
            PreferredReplicaElectionZNode.PATH, PreferredReplicaElectionZNode.encode([("t", 1)])
        )
    )
    result(
        zk.store.create(
            ReassignPartitionsZNode.PATH, ReassignPartitionsZNode.encode({("t", 0): [4, 5]})
        )
    )
    assert result(zk.get_preferred_replica_election()) == (("t", 1),)
    assert result(zk.get_partition_reassignment()) == {("t", 0): (4, 5)}
    result(zk.delete_preferred_replica_election())
    result(zk.delete_partition_reassignment())
    assert (
        result(zk.get_preferred_replica_election()) == ()
        and result(zk.get_partition_reassignment()) == {}
    )


def test_feature_node(zk: KafkaZkClient) -> None:
    assert result(zk.get_feature()) is None
    assert result(zk.set_feature(FeatureZNode(FeatureZNode.ENABLED))) == 0
    assert result(zk.set_feature(FeatureZNode(FeatureZNode.ENABLED, {"f": (1, 2)}))) == 1
    assert result(zk.get_feature()) == (FeatureZNode(FeatureZNode.ENABLED, {"f": (1, 2)}), 1)


# --------------------------------------------------------------------------- producer id blocks


def test_first_block_starts_at_zero_and_blocks_follow(
    tree: MemoryZooKeeper, zk: KafkaZkClient
) -> None:
    assert tree.dump()[ProducerIdBlock.PATH] == b""  # created empty by the roots
    assert result(zk.claim_producer_id_block(2)) == ProducerIdBlock(2, 0, 999)
    assert (
        tree.dump()[ProducerIdBlock.PATH]
        == b'{"version":1,"broker":2,"block_start":"0","block_end":"999"}'
    )
    assert result(zk.claim_producer_id_block(2, block_size=10)) == ProducerIdBlock(2, 1000, 1009)


def test_claim_creates_a_missing_node(tree: MemoryZooKeeper) -> None:
    zk = KafkaZkClient(session(tree))
    assert result(zk.claim_producer_id_block(1)) == ProducerIdBlock(1, 0, 999)


def test_racing_claims_retry_on_bad_version_and_never_overlap(tree: MemoryZooKeeper) -> None:
    clock = Clock()
    a, b = KafkaZkClient(session(tree, clock)), KafkaZkClient(session(tree, clock))
    settle(clock, a.create_persistent_roots())
    # both read the empty node at version 0 and both try [0, 999]: one gets BadVersion and retries
    first, second = settle(clock, a.claim_producer_id_block(1), b.claim_producer_id_block(2))
    assert {first, second} == {ProducerIdBlock(1, 0, 999), ProducerIdBlock(2, 1000, 1999)}


def test_many_interleaved_claims_from_three_brokers(tree: MemoryZooKeeper) -> None:
    clock = Clock()
    clients = {i: KafkaZkClient(session(tree, clock)) for i in (1, 2, 3)}
    rng = random.Random(5)
    pending: list[tuple[int, Deferred[Any]]] = []
    for _ in range(30):
        broker = rng.choice([1, 2, 3])
        pending.append((broker, clients[broker].claim_producer_id_block(broker, block_size=100)))
        if rng.random() < 0.3:
            clock.advance(0)
    blocks = settle(clock, *(d for _, d in pending))
    assert not [b for b in blocks if isinstance(b, Failure)]
    assert [b.broker for b in blocks] == [broker for broker, _ in pending]
    spans = sorted((b.block_start, b.block_end) for b in blocks)
    assert spans == [(100 * i, 100 * i + 99) for i in range(30)]  # disjoint and gap-free


# --------------------------------------------------------------------------- watches


def test_watch_helpers_delegate_to_the_store(tree: MemoryZooKeeper, zk: KafkaZkClient) -> None:
    seen: list[str] = []

    handles = [
        zk.watch_broker_ids(lambda: seen.append("ids")),
        zk.watch_controller(lambda: seen.append("controller")),
        zk.watch_topics(lambda: seen.append("topics")),
        zk.watch_topic_deletions(lambda: seen.append("deletions")),
        zk.watch_isr_change_notifications(lambda: seen.append("isr")),
        zk.watch_config_changes(lambda: seen.append("config")),
        zk.watch_topic("t", lambda: seen.append("topic t")),
        zk.watch_broker(1, lambda: seen.append("broker 1")),
        zk.watch_feature(lambda: seen.append("feature")),
        zk.watch_partition_state("t", 0, lambda: seen.append("state")),
        zk.watch_preferred_replica_election(lambda: seen.append("preferred")),
        zk.watch_partition_reassignment(lambda: seen.append("reassign")),
        zk.watch_log_dir_event_notifications(lambda: seen.append("logdir")),
    ]
    result(zk.register_broker(registration(1)))
    result(zk.elect_controller(1, NOW))
    result(zk.create_topic("t", {0: [1]}))
    result(zk.set_topic_config("t", {"a": "b"}))
    result(zk.post_isr_change_notification([("t", 0)]))
    result(zk.mark_topic_for_deletion("t"))
    result(zk.set_feature(FeatureZNode(FeatureZNode.ENABLED)))
    result(zk.create_partition_states({("t", 0): LeaderIsrAndControllerEpoch(1, 0, (1,), 1)}, 1, 1))
    result(zk.post_log_dir_event(1))
    result(zk.store.create(PreferredReplicaElectionZNode.PATH, b"{}"))
    result(zk.store.create(ReassignPartitionsZNode.PATH, b"{}"))
    for name in (
        "ids",
        "controller",
        "topics",
        "deletions",
        "isr",
        "config",
        "topic t",
        "broker 1",
        "feature",
        "state",
        "preferred",
        "reassign",
        "logdir",
    ):
        assert name in seen, name
    for handle in handles:
        handle.cancel()
    seen.clear()
    result(zk.post_isr_change_notification([("t", 0)]))
    assert seen == []
    assert topic_path("t") in tree.dump() and ConfigEntityZNode.topic_path("t") in tree.dump()


# --------------------------------------------------------------------------- the facade


def test_the_client_exposes_every_family_operation_with_the_same_signature(
    zk: KafkaZkClient,
) -> None:
    # KafkaZkClient delegates to one helper per znode family; a signature (or default) that
    # drifted between the two, or an operation a family grew without the client, fails here.
    helpers = [v for v in vars(zk).values() if isinstance(v, ZkFamily | ZkCore)]
    internal = {"set_or_create_entity_config"}  # ConfigZk's, shared with TopicZk
    exposed = {
        name
        for name, _ in inspect.getmembers(KafkaZkClient, inspect.isfunction)
        if not name.startswith("_")
    }
    for helper in helpers:
        if isinstance(helper, ZkFamily):
            offered = {
                name
                for name, _ in inspect.getmembers(type(helper), inspect.isfunction)
                if not name.startswith("_")
            }
            assert offered - internal <= exposed, type(helper).__name__
    for name in sorted(exposed):
        owners = [h for h in helpers if hasattr(type(h), name)]
        assert len(owners) == 1, name

        def shape(fn: Any) -> list[tuple[str, Any, Any]]:
            return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]

        assert shape(getattr(zk, name)) == shape(getattr(owners[0], name)), name
