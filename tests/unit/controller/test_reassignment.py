"""mafka.controller.reassignment: KIP-455 partition reassignment, phase by phase.

Runs on the fake cluster of :mod:`tests.unit.controller.cluster`.  Followers
"catch up" when the test says so: :func:`~tests.unit.controller.cluster.set_isr`
writes the leader's ISR expansion and posts the ISR-change notification, as
the broker does.
"""

from __future__ import annotations

import json

from mafka.controller.context import ReplicaAssignment
from mafka.coordination.znodes import ReassignPartitionsZNode, topic_path
from mafka.errors import ErrorCode

from .cluster import UMR, Cluster, fire, lai_states, result, set_isr, stopped

NO_AUTO = {"auto.leader.rebalance.enable": "false"}


def topic_json(cluster: Cluster, topic: str) -> dict:
    data, _ = result(cluster.admin.store.get(topic_path(topic)))
    return json.loads(data)


def reassignment_znode(cluster: Cluster) -> dict | None:
    got = result(cluster.admin.store.exists(ReassignPartitionsZNode.PATH))
    if got is None:
        return None
    return result(cluster.admin.get_partition_reassignment())


# --------------------------------------------------------------------------- pure


def test_replica_assignment_names() -> None:
    moving = ReplicaAssignment((1, 2, 3)).reassign_to((4, 5, 6))
    assert moving == ReplicaAssignment((4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3))
    assert moving.origin_replicas == (1, 2, 3) and moving.target_replicas == (4, 5, 6)
    # A new target restarts from the original replicas.
    assert moving.reassign_to((1, 4)) == ReplicaAssignment((1, 4, 2, 3), (4,), (2, 3))
    assert ReplicaAssignment((1, 2)).reassign_to((1, 2)) == ReplicaAssignment((1, 2))
    assert not ReplicaAssignment((1, 2)).is_being_reassigned


# --------------------------------------------------------------------------- RF 1 → another broker


def test_move_a_single_replica_through_every_phase() -> None:
    cluster = Cluster((1, 2, 3), config=NO_AUTO)
    c = cluster.active
    x, y = cluster.others()
    cluster.create("t", {0: [x], 1: [y]})
    epoch0 = cluster.state("t", 0).leader_epoch
    marks = cluster.marks()

    top, message, out = fire(cluster, c.alter_partition_reassignments({("t", 0): [y]}))

    assert (top, message, out) == (ErrorCode.NONE, None, {("t", 0): (ErrorCode.NONE, None)})
    # U1: RS = TRS + ORS, adding/removing in the topic znode, as Kafka 2.8 writes it.
    znode = topic_json(cluster, "t")
    assert znode["partitions"] == {"0": [y, x], "1": [y]}
    assert znode["adding_replicas"] == {"0": [y]} and znode["removing_replicas"] == {"0": [x]}
    # A1: leader epoch + 1; LeaderAndIsr with RS to ORS, and (isNew) to AR.
    state = cluster.state("t", 0)
    assert (state.leader, state.isr, state.leader_epoch) == (x, (x,), epoch0 + 1)
    to_x = [ps for t, ps in lai_states(cluster.brokers[x], marks[x]) if t == "t"]
    to_y = [ps for t, ps in lai_states(cluster.brokers[y], marks[y]) if t == "t"]
    assert to_x and list(to_x[-1].replicas) == [y, x] and not to_x[-1].is_new
    assert to_y and all(ps.is_new for ps in to_y) and list(to_y[0].replicas) == [y, x]
    assert to_y[0].leader == x
    listed = fire(cluster, c.list_partition_reassignments(None))
    assert listed == (ErrorCode.NONE, None, {("t", 0): ReplicaAssignment((y, x), (y,), (x,))})
    assert stopped(cluster.brokers[x], marks[x]) == []

    # y catches up: the leader adds it to the ISR and notifies.
    marks = cluster.marks()
    set_isr(cluster, "t", 0, (x, y))

    # B3: leader x is not in TRS → Reassign election picks y.  B4: x out of the ISR.
    state = cluster.state("t", 0)
    assert state.leader == y and state.isr == (y,)
    # B5: x stops and deletes its replica.
    assert ("t", 0, True) in stopped(cluster.brokers[x], marks[x])
    # B6: the final assignment, no adding/removing.
    znode = topic_json(cluster, "t")
    assert znode["partitions"] == {"0": [y], "1": [y]}
    assert znode["adding_replicas"] == {} and znode["removing_replicas"] == {}
    # B8: everyone knows.
    for b, fb in cluster.brokers.items():
        assert fb.requests(UMR, since=marks[b])
        info = fb.metadata.partition("t", 0)
        assert info.leader == y and tuple(info.replicas) == (y,)
    assert fire(cluster, c.list_partition_reassignments(None))[2] == {}
    assert c.context.partitions_being_reassigned == set()
    assert c.stats.partition_reassignments_completed == 1


# --------------------------------------------------------------------------- RF 2 → RF 3


def test_grow_the_replication_factor_keeps_the_leader() -> None:
    cluster = Cluster((1, 2, 3), config=NO_AUTO)
    c = cluster.active
    a = c.broker_id
    x, y = cluster.others()
    cluster.create("t", {0: [x, y]})
    _, _, out = fire(cluster, c.alter_partition_reassignments({("t", 0): [x, y, a]}))
    assert out == {("t", 0): (ErrorCode.NONE, None)}
    assert topic_json(cluster, "t")["adding_replicas"] == {"0": [a]}
    assert topic_json(cluster, "t")["removing_replicas"] == {}
    before = cluster.state("t", 0)

    set_isr(cluster, "t", 0, (x, y))  # a notification that does not finish it
    assert c.context.partitions_being_reassigned == {("t", 0)}
    marks = cluster.marks()
    set_isr(cluster, "t", 0, (x, y, a))

    after = cluster.state("t", 0)
    assert after.leader == x and after.isr == (x, y, a)
    assert after.leader_epoch > before.leader_epoch
    assert topic_json(cluster, "t")["partitions"] == {"0": [x, y, a]}
    assert all(not stopped(fb, marks[b]) for b, fb in cluster.brokers.items())
    for b in (x, y, a):
        (ps,) = [ps for t, ps in lai_states(cluster.brokers[b], marks[b]) if t == "t"][-1:]
        assert list(ps.replicas) == [x, y, a]


def test_state_znode_watch_alone_completes_it() -> None:
    cluster = Cluster((1, 2, 3), config=NO_AUTO)
    c = cluster.active
    x, y = cluster.others()
    cluster.create("t", {0: [x]})
    fire(cluster, c.alter_partition_reassignments({("t", 0): [x, y]}))
    set_isr(cluster, "t", 0, (x, y), notify=False)
    assert topic_json(cluster, "t")["partitions"] == {"0": [x, y]}
    assert c.context.partitions_being_reassigned == set()


# --------------------------------------------------------------------------- errors, cancel, supersede


def test_alter_errors() -> None:
    cluster = Cluster((1, 2, 3, 4), config=NO_AUTO)
    c = cluster.active
    x, y, z = cluster.others()
    cluster.create("t", {0: [x], 1: [x], 2: [x], 3: [x], 4: [x]})
    cluster.kill(z)
    bad = ErrorCode.INVALID_REPLICA_ASSIGNMENT
    _, _, out = fire(
        cluster,
        c.alter_partition_reassignments(
            {
                ("t", 0): [],
                ("t", 1): [y, y],
                ("t", 2): [-1],
                ("t", 3): [z],
                ("t", 4): None,
                ("t", 9): [y],
            }
        ),
    )
    assert out[("t", 0)] == (bad, "Empty replica list specified in partition reassignment.")
    assert out[("t", 1)] == (
        bad,
        f"Duplicate replica ids in partition reassignment replica list: [{y}, {y}]",
    )
    assert out[("t", 2)] == (bad, "Invalid broker id in replica list: [-1]")
    assert out[("t", 3)][0] == bad and "not alive" in out[("t", 3)][1]
    assert out[("t", 4)] == (
        ErrorCode.NO_REASSIGNMENT_IN_PROGRESS,
        "No partition reassignment is in progress.",
    )
    assert out[("t", 9)] == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist.")
    assert topic_json(cluster, "t")["adding_replicas"] == {}

    other = cluster.controllers[x]
    top, message, out = fire(cluster, other.alter_partition_reassignments({("t", 0): [y]}))
    assert (top, out) == (ErrorCode.NOT_CONTROLLER, {})
    assert fire(cluster, other.list_partition_reassignments(None))[0] == ErrorCode.NOT_CONTROLLER


def test_cancel_reverts_to_the_original_replicas_and_drops_the_adding_ones() -> None:
    cluster = Cluster((1, 2, 3), config=NO_AUTO)
    c = cluster.active
    x, y = cluster.others()
    cluster.create("t", {0: [x]})
    fire(cluster, c.alter_partition_reassignments({("t", 0): [y]}))
    marks = cluster.marks()
    _, _, out = fire(cluster, c.alter_partition_reassignments({("t", 0): None}))
    assert out == {("t", 0): (ErrorCode.NONE, None)}
    assert ("t", 0, True) in stopped(cluster.brokers[y], marks[y]), "U3 stops the unneeded replica"
    znode = topic_json(cluster, "t")
    assert znode["partitions"] == {"0": [x]} and znode["adding_replicas"] == {}
    assert cluster.state("t", 0).leader == x
    assert c.context.partitions_being_reassigned == set()


def test_a_new_target_supersedes_the_running_reassignment() -> None:
    cluster = Cluster((1, 2, 3, 4), config=NO_AUTO)
    c = cluster.active
    x, y, z = cluster.others()
    cluster.create("t", {0: [x]})
    fire(cluster, c.alter_partition_reassignments({("t", 0): [y]}))
    marks = cluster.marks()
    fire(cluster, c.alter_partition_reassignments({("t", 0): [z]}))
    assert ("t", 0, True) in stopped(cluster.brokers[y], marks[y])
    znode = topic_json(cluster, "t")
    assert znode["partitions"] == {"0": [z, x]}
    assert znode["adding_replicas"] == {"0": [z]} and znode["removing_replicas"] == {"0": [x]}
    set_isr(cluster, "t", 0, (x, z))
    assert topic_json(cluster, "t")["partitions"] == {"0": [z]}
    assert cluster.state("t", 0).leader == z


# --------------------------------------------------------------------------- /admin/reassign_partitions


def test_zookeeper_reassignment_is_started_shrunk_and_deleted() -> None:
    cluster = Cluster((1, 2, 3), config=NO_AUTO)
    c = cluster.active
    x, y = cluster.others()
    cluster.create("t", {0: [x], 1: [x]})
    fire(cluster, cluster.admin.create_partition_reassignment({("t", 0): [y], ("t", 1): [x, y]}))
    cluster.settle()
    assert c.context.partitions_being_reassigned == {("t", 0), ("t", 1)}
    assert reassignment_znode(cluster) == {("t", 0): (y,), ("t", 1): (x, y)}

    set_isr(cluster, "t", 1, (x, y))
    assert reassignment_znode(cluster) == {("t", 0): (y,)}, "finished partitions leave the znode"
    set_isr(cluster, "t", 0, (x, y))
    assert reassignment_znode(cluster) is None, "deleted once empty"
    assert topic_json(cluster, "t")["partitions"] == {"0": [y], "1": [x, y]}


def test_api_reassignment_takes_the_partition_out_of_the_znode() -> None:
    cluster = Cluster((1, 2, 3), config=NO_AUTO)
    c = cluster.active
    x, y = cluster.others()
    cluster.create("t", {0: [x], 1: [x]})
    fire(cluster, cluster.admin.create_partition_reassignment({("t", 0): [y], ("t", 1): [y]}))
    cluster.settle()
    fire(cluster, c.alter_partition_reassignments({("t", 0): [x, y]}))
    assert reassignment_znode(cluster) == {("t", 1): (y,)}
    zk_bad = {("t", 1): [y], ("nope", 0): [y]}
    fire(cluster, cluster.admin.set_partition_reassignment(zk_bad))
    cluster.settle()
    assert reassignment_znode(cluster) == {("t", 1): (y,)}, "failed entries are dropped"


# --------------------------------------------------------------------------- failover


def test_new_controller_resumes_a_reassignment_in_flight() -> None:
    cluster = Cluster((1, 2, 3, 4), config=NO_AUTO)
    old = cluster.active
    x, y, z = cluster.others()
    cluster.create("t", {0: [x, y]})
    fire(cluster, old.alter_partition_reassignments({("t", 0): [y, z]}))
    assert topic_json(cluster, "t")["partitions"] == {"0": [y, z, x]}

    cluster.stores[old.broker_id].expire_session(reestablish=False)
    cluster.settle()
    new = cluster.active
    assert new is not old
    assert new.context.partitions_being_reassigned == {("t", 0)}
    assert new.context.full_assignment(("t", 0)) == ReplicaAssignment((y, z, x), (z,), (x,))
    listed = fire(cluster, new.list_partition_reassignments([("t", 0), ("t", 5)]))[2]
    assert listed == {("t", 0): ReplicaAssignment((y, z, x), (z,), (x,))}

    marks = cluster.marks()
    set_isr(cluster, "t", 0, (x, y, z))
    state = cluster.state("t", 0)
    assert state.leader == y and state.isr == (y, z)
    assert state.controller_epoch == new.epoch
    assert topic_json(cluster, "t")["partitions"] == {"0": [y, z]}
    assert ("t", 0, True) in stopped(cluster.brokers[x], marks[x])
    assert new.context.partitions_being_reassigned == set()


def test_failover_completes_a_reassignment_whose_isr_caught_up_meanwhile() -> None:
    cluster = Cluster((1, 2, 3), config=NO_AUTO)
    old = cluster.active
    x, y = cluster.others()
    cluster.create("t", {0: [x]})
    fire(cluster, old.alter_partition_reassignments({("t", 0): [y]}))
    old.reassignments.unwatch_all_reassignments()
    for w in list(old.failover._watches):
        w.cancel()
    old.failover._watches = []
    set_isr(cluster, "t", 0, (x, y))  # nobody listening
    assert topic_json(cluster, "t")["partitions"] == {"0": [y, x]}
    cluster.stores[old.broker_id].expire_session(reestablish=False)
    cluster.settle()
    assert topic_json(cluster, "t")["partitions"] == {"0": [y]}
    assert cluster.state("t", 0).leader == y


def test_reassignment_waits_for_a_dead_adding_replica_and_resumes_when_it_returns() -> None:
    cluster = Cluster((1, 2, 3), config=NO_AUTO)
    c = cluster.active
    x, y = cluster.others()
    cluster.create("t", {0: [x]})
    fire(cluster, c.alter_partition_reassignments({("t", 0): [x, y]}))
    cluster.kill(y)
    cluster.start_broker(y)  # a fresh FakeBroker: everything it received is since its return
    # Its return resumes the reassignment: LeaderAndIsr (isNew, RS) reaches it again.
    got = [ps for t, ps in lai_states(cluster.brokers[y]) if t == "t"]
    assert any(ps.is_new and list(ps.replicas) == [x, y] for ps in got)
    set_isr(cluster, "t", 0, (x, y))
    assert topic_json(cluster, "t")["partitions"] == {"0": [x, y]}


def test_topic_deletion_waits_for_the_reassignment() -> None:
    cluster = Cluster((1, 2, 3), config=NO_AUTO)
    c = cluster.active
    x, y = cluster.others()
    cluster.create("t", {0: [x]})
    fire(cluster, c.alter_partition_reassignments({("t", 0): [y]}))
    fire(cluster, cluster.admin.mark_topic_for_deletion("t"))
    cluster.settle()
    assert "t" in c.context.all_topics, "halted while reassigning"
    _, _, out = fire(cluster, c.alter_partition_reassignments({("t", 0): [x]}))
    assert out[("t", 0)][0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    set_isr(cluster, "t", 0, (x, y))
    cluster.settle()
    assert "t" not in c.context.all_topics, "deleted once the reassignment ended"
