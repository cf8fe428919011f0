"""mafka.controller.controller: the controller runtime on MemoryStore sessions and a fake network.

Each broker of a test cluster is one :class:`MemoryStore` session on a shared
:class:`MemoryZooKeeper` tree (so ephemeral registrations, ``/controller``
and session expiry behave as in ZooKeeper), one :class:`Controller`, and one
:class:`FakeBroker` that answers LeaderAndIsr / UpdateMetadata / StopReplica
the way Mafka's broker does (controller-epoch, broker-epoch and leader-epoch
fencing; the real :class:`~mafka.broker.metadata_cache.MetadataCache` for
UpdateMetadata).  Every request goes through the wire codec (encode, then
decode), so bodies that would not serialize fail the test.  Time is a
``Clock``; the stores deliver through ``callLater(0)``, so concurrent
ZooKeeper work interleaves (that is how the election race is staged).
"""

from __future__ import annotations

from types import SimpleNamespace

from mafka.broker.config import BrokerConfig
from mafka.controller.channel import ControllerChannelManager
from mafka.controller.controller import (
    Controller,
    ControllerConfig,
    NewTopic,
    controller_for_server,
    create_topic_in_zookeeper,
)
from mafka.coordination.kafka_zk import KafkaZkClient
from mafka.coordination.memory_store import MemoryStore
from mafka.coordination.znodes import (
    BrokerRegistration,
    ControllerZNode,
    DeleteTopicsZNode,
    LeaderIsrAndControllerEpoch,
    partition_state_path,
    topic_path,
)
from mafka.errors import ErrorCode

from .cluster import LAI, STOP, UMR, Cluster, DeafStore, FakeConnection, fire, result

# --------------------------------------------------------------------------- election and failover


def test_two_controllers_race_and_exactly_one_wins() -> None:
    cluster = Cluster((1, 2, 3))
    winner = cluster.active
    assert winner.epoch == 1
    assert result(cluster.admin.get_controller_id()) == winner.broker_id
    assert result(cluster.admin.get_controller_epoch())[0] == 1
    for c in cluster.controllers.values():
        assert c.active_controller_id == winner.broker_id
        assert c.is_active == (c is winner)
    # The winner told every broker who is alive, with their own broker epoch.
    for fb in cluster.brokers.values():
        first = fb.requests()[0]
        assert fb.received[0][0] == UMR
        assert first.controller_id == winner.broker_id and first.controller_epoch == 1
        assert first.broker_epoch == fb.epoch
        assert sorted(b.id for b in first.live_brokers) == [1, 2, 3]
        # Every listener of every broker, with its security protocol id and rack.
        broker2 = next(b for b in first.live_brokers if b.id == 2)
        assert {(e.listener, e.host, e.port, e.security_protocol) for e in broker2.endpoints} == {
            ("INTERNAL", "broker2", 19092, 0),
            ("EXTERNAL", "localhost", 9092, 3),
        }


def test_failover_when_the_controller_session_expires() -> None:
    cluster = Cluster((1, 2, 3))
    old = cluster.active
    a = old.broker_id
    x, y = cluster.others()
    cluster.create("t", {0: [x, y], 1: [y, x], 2: [a, x]})
    assert cluster.state("t", 2).leader == a
    marks = cluster.marks()

    cluster.stores[a].expire_session(reestablish=False)
    cluster.settle()

    assert not old.is_active
    new = cluster.active
    assert new.broker_id in (x, y) and new.epoch == 2
    assert result(cluster.admin.get_controller_epoch())[0] == 2
    for b in (x, y):
        fb = cluster.brokers[b]
        got = [(key, body) for key, body in fb.received[marks[b] :] if body.controller_epoch == 2]
        assert got and got[0][0] == UMR, "UpdateMetadata must precede LeaderAndIsr"
        assert any(key == LAI for key, _ in got)
        assert all(
            body.broker_epoch == fb.epoch and body.controller_id == new.broker_id for _, body in got
        )
        first_lai = next(i for i, (key, _) in enumerate(got) if key == LAI)
        assert all(key == UMR for key, _ in got[:first_lai])
    # The partition the old controller led moved to its live ISR member, epoch bumped, new controller epoch.
    state = cluster.state("t", 2)
    assert state.leader == x and state.isr == (x,) and state.leader_epoch == 2
    assert state.controller_epoch == 2
    assert cluster.brokers[x].partitions[("t", 2)].leader == x

    # The old controller's broker comes back: it re-registers, stays a follower, gets told everything.
    mark = len(cluster.brokers[a].received)
    cluster.stores[a].reconnect()
    cluster.settle()
    assert not old.is_active and old.active_controller_id == new.broker_id
    back = cluster.brokers[a].requests(since=mark)
    assert [body.controller_epoch for body in back] and all(
        body.controller_epoch == 2 for body in back
    )
    assert any(
        ("t", 2)
        in {
            (ts.topic_name, ps.partition_index)
            for ts in body.topic_states
            for ps in ts.partition_states
        }
        for body in cluster.brokers[a].requests(LAI, since=mark)
    )
    assert all(body.broker_epoch == cluster.brokers[a].epoch for body in back)


def test_expired_controller_reelects_itself_when_alone() -> None:
    cluster = Cluster((1,))
    c = cluster.controllers[1]
    assert c.is_active and c.epoch == 1
    old_epoch = cluster.brokers[1].epoch
    cluster.stores[1].expire_session()
    cluster.settle()
    assert c.is_active and c.epoch == 2
    assert cluster.brokers[1].epoch > old_epoch
    assert result(cluster.admin.get_controller_id()) == 1


def test_stale_controller_is_fenced_and_resigns() -> None:
    cluster = Cluster((1, 2, 3), store_class=DeafStore)
    stale = cluster.active
    a = stale.broker_id
    x, y = cluster.others()
    cluster.create("t", {0: [x, y], 1: [y, x]})
    store = cluster.stores[a]
    assert isinstance(store, DeafStore)

    # The controller hears nothing; its session expires on the server; another broker wins.
    store.deaf = True
    cluster.tree.expire_session(store.session_id)
    cluster.settle()
    assert stale.is_active, "it has not noticed anything"
    winner = next(c for c in cluster.controllers.values() if c.is_active and c is not stale)
    assert winner.epoch == stale.epoch + 1
    before = cluster.tree.dump("/brokers/topics")
    marks = cluster.marks()

    # Then it hears a broker die and acts on it: its writes are fenced and it resigns.
    store.deaf = False
    f = x if winner.broker_id == y else y
    cluster.kill(f)
    assert not stale.is_active
    assert stale.active_controller_id == winner.broker_id
    survivor = winner.broker_id
    for p in (0, 1):
        state = cluster.state("t", p)
        assert state.leader == survivor and state.controller_epoch == winner.epoch
    for path, data in cluster.tree.dump("/brokers/topics").items():
        if path.endswith("/state") and data != before.get(path):
            assert LeaderIsrAndControllerEpoch.decode(data).controller_epoch == winner.epoch
    for b, fb in cluster.brokers.items():
        assert all(body.controller_epoch == winner.epoch for body in fb.requests(since=marks[b])), b


# --------------------------------------------------------------------------- topic creation


def test_topic_created_by_znodes_gets_states_and_requests() -> None:
    cluster = Cluster((1, 2, 3, 4))
    c = cluster.active
    x, y, z = cluster.others()
    cluster.kill(z)
    marks = cluster.marks()
    cluster.create("t", {0: [z, x, y], 1: [y, c.broker_id]})

    s0, s1 = cluster.state("t", 0), cluster.state("t", 1)
    assert (s0.leader, s0.leader_epoch, s0.isr, s0.controller_epoch) == (x, 0, (x, y), c.epoch)
    assert (s1.leader, s1.leader_epoch, s1.isr) == (y, 0, (y, c.broker_id))
    for b in (x, y, c.broker_id):
        fb = cluster.brokers[b]
        lais = fb.requests(LAI, since=marks[b])
        got = {
            (ts.topic_name, ps.partition_index): ps
            for body in lais
            for ts in body.topic_states
            for ps in ts.partition_states
        }
        expected = {
            tp for tp, reps in {("t", 0): (x, y), ("t", 1): (y, c.broker_id)}.items() if b in reps
        }
        assert set(got) == expected
        assert all(ps.is_new for ps in got.values())
        assert all(
            body.broker_epoch == fb.epoch and body.controller_epoch == c.epoch for body in lais
        )
        # UpdateMetadata reached everyone, and the broker's metadata cache now knows the topic.
        assert fb.metadata.partition("t", 0).leader == x
        assert fb.metadata.partition("t", 0).offline_replicas == (z,)
    assert cluster.brokers[x].partitions[("t", 0)].leader == x
    assert cluster.brokers[x].requests(LAI, since=marks[x])[0].live_leaders[0].broker_id == x


def test_create_topics_writes_znodes_and_waits_for_leaders() -> None:
    cluster = Cluster((1, 2, 3), racks={1: "a", 2: "a", 3: "b"})
    c = cluster.active
    d = c.create_topics([("orders", 3, 2, None, {"retention.ms": "1000"})], False, 5000)
    out = fire(cluster, d)
    assert out == {"orders": (ErrorCode.NONE, None)}
    assignment, _ = result(cluster.admin.get_assignment("orders"))
    assert assignment.topic_id is not None
    assert result(cluster.admin.get_topic_config("orders")) == {"retention.ms": "1000"}
    for p, replicas in assignment.partitions.items():
        assert len(replicas) == 2 and {cluster.racks[r] for r in replicas} == {"a", "b"}
        state = cluster.state("orders", p)
        assert state.leader == replicas[0] and state.isr == replicas and state.leader_epoch == 0
        for r in replicas:
            ps = cluster.brokers[r].partitions[("orders", p)]
            assert ps.is_new and ps.leader == replicas[0]
    # Already online when the answer came: every broker's metadata knows all three partitions.
    for fb in cluster.brokers.values():
        assert fb.metadata.partition_count("orders") == 3


def test_create_topics_defaults_validate_only_and_manual_assignment() -> None:
    cluster = Cluster((1, 2, 3), config={"num.partitions": "2", "default.replication.factor": "3"})
    c = cluster.active
    out = fire(
        cluster,
        c.create_topics(
            [NewTopic("dflt"), NewTopic("dry", 4, 1)], validate_only=False, timeout_ms=1000
        ),
    )
    assert out["dflt"][0] == ErrorCode.NONE
    assignment, _ = result(cluster.admin.get_assignment("dflt"))
    assert len(assignment.partitions) == 2 and all(
        len(r) == 3 for r in assignment.partitions.values()
    )

    out = fire(cluster, c.create_topics([NewTopic("check", 4, 1)], validate_only=True))
    assert out == {"check": (ErrorCode.NONE, None)}
    assert not result(cluster.admin.topic_exists("check"))

    out = fire(
        cluster,
        c.create_topics([NewTopic("manual", assignment={0: [3, 1], 1: [1, 2]})], timeout_ms=1000),
    )
    assert out["manual"][0] == ErrorCode.NONE
    assert cluster.state("manual", 0).leader == 3 and cluster.state("manual", 1).leader == 1


def test_create_topics_errors() -> None:
    cluster = Cluster((1, 2, 3))
    c = cluster.active
    fire(cluster, c.create_topics([("exists", 1, 1, None, {})], False, 1000))
    out = fire(
        cluster,
        c.create_topics(
            [
                ("exists", 1, 1, None, {}),
                ("too-many-replicas", 1, 4, None, {}),
                ("bad name!", 1, 1, None, {}),
                ("no-partitions", 0, 1, None, {}),
                ("bad-config", 1, 1, None, {"retention.ms": "soon"}),
                ("unknown-config", 1, 1, None, {"no.such.config": "1"}),
                ("both", 2, 1, {0: [1]}, {}),
                ("dup", 1, 1, None, {}),
                ("dup", 1, 1, None, {}),
                ("a.b", 1, 1, None, {}),
            ],
            False,
            1000,
        ),
    )
    codes = {name: code for name, (code, _) in out.items()}
    assert codes == {
        "exists": ErrorCode.TOPIC_ALREADY_EXISTS,
        "too-many-replicas": ErrorCode.INVALID_REPLICATION_FACTOR,
        "bad name!": ErrorCode.INVALID_TOPIC_EXCEPTION,
        "no-partitions": ErrorCode.INVALID_PARTITIONS,
        "bad-config": ErrorCode.INVALID_CONFIG,
        "unknown-config": ErrorCode.INVALID_CONFIG,
        "both": ErrorCode.INVALID_REQUEST,
        "dup": ErrorCode.INVALID_REQUEST,
        "a.b": ErrorCode.NONE,
    }
    # A name colliding once '.' and '_' are treated alike.
    out = fire(cluster, c.create_topics([("a_b", 1, 1, None, {})], False, 1000))
    assert out["a_b"][0] == ErrorCode.INVALID_TOPIC_EXCEPTION
    for name in ("too-many-replicas", "bad name!", "no-partitions", "bad-config", "both", "dup"):
        if name != "bad name!":
            assert not result(cluster.admin.topic_exists(name))

    # Not the controller.
    follower = next(ctl for ctl in cluster.controllers.values() if not ctl.is_active)
    out = fire(cluster, follower.create_topics([("elsewhere", 1, 1, None, {})]))
    assert out["elsewhere"][0] == ErrorCode.NOT_CONTROLLER

    # The znodes are written but no replica is live: REQUEST_TIMED_OUT at the timeout.
    d = c.create_topics([NewTopic("orphan", assignment={0: [9]})], timeout_ms=3000)
    cluster.settle()
    assert not d.called
    out = fire(cluster, d, advance=3.0)
    assert out["orphan"][0] == ErrorCode.REQUEST_TIMED_OUT
    assert result(cluster.admin.topic_exists("orphan"))


def test_auto_create_from_a_non_controller_broker() -> None:
    cluster = Cluster((1, 2, 3))
    x = cluster.others()[0]
    d = create_topic_in_zookeeper(cluster.zks[x], "auto", 2, 2, None, {}, rack_aware_mode="safe")
    written = fire(cluster, d)
    assert sorted(written.partitions) == [0, 1]
    for p, replicas in written.partitions.items():
        assert cluster.state("auto", p).leader == replicas[0]
    assert cluster.active.context.is_partition_online(("auto", 1))


# --------------------------------------------------------------------------- broker failure


def test_single_replica_partition_goes_leaderless_and_comes_back() -> None:
    cluster = Cluster((1, 2, 3))
    x, y = cluster.others()
    cluster.create("solo", {0: [x]})
    assert cluster.state("solo", 0).leader == x
    marks = cluster.marks()

    cluster.kill(x)
    state = cluster.state("solo", 0)
    assert (state.leader, state.isr, state.leader_epoch) == (-1, (x,), 1)
    for b in (cluster.active.broker_id, y):
        info = cluster.brokers[b].metadata.partition("solo", 0)
        assert info.leader == -1 and info.offline_replicas == (x,)
        assert cluster.brokers[b].requests(UMR, since=marks[b])

    cluster.start_broker(x)
    state = cluster.state("solo", 0)
    assert (state.leader, state.isr, state.leader_epoch) == (x, (x,), 2)
    ps = cluster.brokers[x].partitions[("solo", 0)]
    assert ps.leader == x and ps.leader_epoch == 2
    # The returning broker heard UpdateMetadata before any LeaderAndIsr.
    assert cluster.brokers[x].received[0][0] == UMR
    assert cluster.brokers[y].metadata.partition("solo", 0).leader == x


def test_rf3_leader_failure_elects_next_isr_member() -> None:
    cluster = Cluster((1, 2, 3, 4))
    x, y, z = cluster.others()
    cluster.create("t", {0: [x, y, z], 1: [z, x, y]})
    marks = cluster.marks()

    cluster.kill(x)
    s0, s1 = cluster.state("t", 0), cluster.state("t", 1)
    assert (s0.leader, s0.isr, s0.leader_epoch) == (y, (y, z), 1)
    assert (s1.leader, s1.isr, s1.leader_epoch) == (z, (z, y), 1)
    for b in (y, z):
        got = {
            (ts.topic_name, ps.partition_index): ps
            for body in cluster.brokers[b].requests(LAI, since=marks[b])
            for ts in body.topic_states
            for ps in ts.partition_states
        }
        assert (
            got[("t", 0)].leader == y
            and got[("t", 0)].leader_epoch == 1
            and list(got[("t", 0)].isr) == [y, z]
        )
        assert cluster.brokers[b].partitions[("t", 0)].leader == y


def test_unclean_election_follows_the_topic_config() -> None:
    cluster = Cluster((1, 2, 3))
    x, y = cluster.others()
    cluster.create("clean", {0: [x, y]})
    cluster.create("dirty", {0: [x, y]}, {"unclean.leader.election.enable": "true"})
    # The leader shrank both ISRs to itself (as a partition leader does), then it dies.
    for topic in ("clean", "dirty"):
        state, version = result(cluster.admin.get_partition_state(topic, 0))
        shrunk = LeaderIsrAndControllerEpoch(x, state.leader_epoch, (x,), state.controller_epoch)
        assert fire(
            cluster,
            cluster.zks[x].conditional_update_partition_state_as_leader(
                (topic, 0), shrunk, version
            ),
        )[0]
    cluster.kill(x)
    assert cluster.state("clean", 0).leader == -1
    dirty = cluster.state("dirty", 0)
    assert dirty.leader == y and dirty.isr == (y,)


# --------------------------------------------------------------------------- topic deletion


def test_topic_deletion_stops_replicas_and_removes_znodes() -> None:
    cluster = Cluster((1, 2, 3))
    c = cluster.active
    x, y = cluster.others()
    cluster.create("gone", {0: [x, y], 1: [y, x]})
    marks = cluster.marks()

    out = fire(cluster, c.delete_topics(["gone"], 5000))
    assert out == {"gone": ErrorCode.NONE}
    assert not result(cluster.admin.topic_exists("gone"))
    assert result(cluster.admin.get_topic_deletions()) == []
    assert "/config/topics/gone" not in cluster.tree.dump("/config")
    for b in (x, y):
        fb = cluster.brokers[b]
        deletes = [body for body in fb.requests(STOP, since=marks[b]) if body.delete_partitions]
        assert {
            (t.name, p) for body in deletes for t in body.topics for p in t.partition_indexes
        } == {("gone", 0), ("gone", 1)}
        assert sorted(fb.deleted) == [("gone", 0), ("gone", 1)]
    # Everyone was told leader -2 first, and forgot the topic.
    for b, fb in cluster.brokers.items():
        assert any(
            ps.leader == -2
            for body in fb.requests(UMR, since=marks[b])
            for ts in body.topic_states
            for ps in ts.partition_states
        )
        assert not fb.metadata.has_topic("gone")
    assert "gone" not in c.context.all_topics


def test_topic_deletion_waits_for_a_dead_replica() -> None:
    cluster = Cluster((1, 2, 3))
    c = cluster.active
    x, y = cluster.others()
    cluster.create("gone", {0: [x, y]})
    cluster.kill(y)

    d = c.delete_topics(["gone"], 2000)
    cluster.settle()
    assert cluster.brokers[x].deleted == [("gone", 0)]
    assert result(cluster.admin.topic_exists("gone")), "a replica is on a dead broker"
    assert result(cluster.admin.is_topic_marked_for_deletion("gone"))
    out = fire(cluster, d, advance=2.0)
    assert out["gone"] == ErrorCode.REQUEST_TIMED_OUT

    cluster.start_broker(y)
    assert cluster.brokers[y].deleted == [("gone", 0)]
    assert not result(cluster.admin.topic_exists("gone"))
    assert not result(cluster.admin.is_topic_marked_for_deletion("gone"))
    assert "gone" not in c.context.all_topics


def test_delete_topics_errors_and_disabled_deletion() -> None:
    cluster = Cluster((1, 2))
    c = cluster.active
    out = fire(cluster, c.delete_topics(["nope"], 1000))
    assert out == {"nope": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    follower = next(ctl for ctl in cluster.controllers.values() if not ctl.is_active)
    assert fire(cluster, follower.delete_topics(["nope"])) == {"nope": ErrorCode.NOT_CONTROLLER}

    disabled = Cluster((1, 2), config=ControllerConfig(delete_topic_enable=False))
    disabled.create("kept", {0: [1]})
    out = fire(disabled, disabled.active.delete_topics(["kept"], 1000))
    assert out == {"kept": ErrorCode.TOPIC_DELETION_DISABLED}
    # A marker written behind its back is removed, the topic stays.
    result(disabled.admin.store.create(DeleteTopicsZNode.path("kept"), b""))
    disabled.settle()
    assert result(disabled.admin.get_topic_deletions()) == []
    assert result(disabled.admin.topic_exists("kept"))


# --------------------------------------------------------------------------- other events


def test_isr_change_notification_updates_metadata_everywhere() -> None:
    cluster = Cluster((1, 2, 3))
    x, y = cluster.others()
    cluster.create("t", {0: [x, y]})
    state, version = result(cluster.admin.get_partition_state("t", 0))
    shrunk = LeaderIsrAndControllerEpoch(x, state.leader_epoch, (x,), state.controller_epoch)
    assert fire(
        cluster,
        cluster.zks[x].conditional_update_partition_state_as_leader(("t", 0), shrunk, version),
    )[0]
    assert cluster.active.context.leadership[("t", 0)].isr == (x, y), "not told yet"
    fire(cluster, cluster.zks[x].post_isr_change_notification([("t", 0)]))
    for fb in cluster.brokers.values():
        assert fb.metadata.partition("t", 0).isr == (x,)
    assert cluster.active.context.leadership[("t", 0)].isr == (x,)
    assert result(cluster.admin.get_isr_change_notifications()) == []


def test_a_log_dir_failure_takes_the_replicas_answered_storage_error_offline() -> None:
    cluster = Cluster((1, 2, 3, 4))
    x, y, z = cluster.others()
    cluster.create("t", {0: [x, y, z], 1: [y, x, z]})
    marks = cluster.marks()
    cluster.brokers[x].offline = {("t", 0)}  # x's dir holding t-0 failed; t-1 is elsewhere
    fire(cluster, cluster.zks[x].post_log_dir_event(x))
    for _ in range(5):
        cluster.settle()
    # LeaderAndIsr for every replica on x; its KAFKA_STORAGE_ERROR answer takes x's t-0 replica offline
    asked = {(ts.topic_name, ps.partition_index) for body in cluster.brokers[x].requests(LAI, since=marks[x])
             for ts in body.topic_states for ps in ts.partition_states}
    assert {("t", 0), ("t", 1)} <= asked
    s0, s1 = cluster.state("t", 0), cluster.state("t", 1)
    assert s0.leader == y and x not in s0.isr and s0.leader_epoch >= 1
    assert s1.leader == y and x in s1.isr  # untouched
    assert cluster.active.context.replicas_on_offline_dirs == {x: {("t", 0)}}
    assert result(cluster.admin.get_log_dir_event_notifications()) == []
    for fb in cluster.brokers.values():
        assert x in fb.metadata.partition("t", 0).offline_replicas
        assert fb.metadata.partition("t", 0).leader == y
    # a preferred election cannot give t-0 back to x while its replica is offline
    assert not cluster.active.leader_elections._can_preferred_replica_be_leader(("t", 0))

    # the broker restarts with the dir repaired: its replicas are online again
    cluster.brokers[x].offline = set()
    cluster.kill(x)
    cluster.start_broker(x)
    assert x not in cluster.active.context.replicas_on_offline_dirs
    assert cluster.active.context.is_replica_online(x, ("t", 0))


def test_create_partitions_adds_online_partitions() -> None:
    cluster = Cluster((1, 2, 3))
    c = cluster.active
    fire(cluster, c.create_topics([("grow", 1, 2, None, {})], False, 1000))
    out = fire(cluster, c.create_partitions([("grow", 3, None)], False, 2000))
    assert out == {"grow": (ErrorCode.NONE, None)}
    assignment, _ = result(cluster.admin.get_assignment("grow"))
    assert sorted(assignment.partitions) == [0, 1, 2]
    for p in (1, 2):
        replicas = assignment.partitions[p]
        assert cluster.state("grow", p).leader == replicas[0]
        assert cluster.brokers[replicas[0]].partitions[("grow", p)].is_new
    out = fire(cluster, c.create_partitions([("grow", 2, None), ("missing", 2, None)]))
    assert out["grow"][0] == ErrorCode.INVALID_PARTITIONS
    assert out["missing"][0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    out = fire(cluster, c.create_partitions([("grow", 4, [[9, 1]])]))
    assert out["grow"][0] == ErrorCode.INVALID_REPLICA_ASSIGNMENT


def test_controlled_shutdown_moves_leadership() -> None:
    cluster = Cluster((1, 2, 3))
    c = cluster.active
    x, y = cluster.others()
    cluster.create("t", {0: [x, y], 1: [y, x], 2: [x]})
    stale = fire(cluster, c.controlled_shutdown(x, cluster.brokers[x].epoch - 1))
    assert stale == (ErrorCode.STALE_BROKER_EPOCH, [])
    follower = cluster.controllers[x]
    assert (
        fire(cluster, follower.controlled_shutdown(x, cluster.brokers[x].epoch))[0]
        == ErrorCode.STALE_CONTROLLER_EPOCH
    )

    error, remaining = fire(cluster, c.controlled_shutdown(x, cluster.brokers[x].epoch))
    assert (error, remaining) == (ErrorCode.NONE, [])
    s0, s1 = cluster.state("t", 0), cluster.state("t", 1)
    assert (s0.leader, s0.isr, s0.leader_epoch) == (y, (y,), 1)
    assert (s1.leader, s1.isr) == (y, (y,))
    assert cluster.state("t", 2).leader == x, "single-replica partitions stay"


def test_stop_resigns_and_hands_over() -> None:
    cluster = Cluster((1, 2))
    first = cluster.active
    fire(cluster, first.stop())
    assert not first.is_active
    second = cluster.active
    assert second is not first and second.epoch == 2
    assert result(cluster.admin.get_controller_id()) == second.broker_id
    assert cluster.tree.dump(partition_state_path("x", 0)) == {}
    assert topic_path("x") not in cluster.tree.dump("/brokers")


def test_controller_for_server_wires_a_broker_process() -> None:
    cluster = Cluster((1,))
    store = MemoryStore(cluster.tree, clock=cluster.clock)
    store.start()
    zk = KafkaZkClient(store)
    registration = BrokerRegistration(7, {"PLAINTEXT": ("PLAINTEXT", "b7", 9092)})
    server = SimpleNamespace(
        broker_id=7,
        zk=zk,
        reactor=cluster.clock,
        config=BrokerConfig(broker_id=7, zookeeper_connect="zk:2181", delete_topic_enable=False),
        broker_epoch=fire(cluster, zk.register_broker(registration)),
    )
    controller = controller_for_server(server)
    assert controller.config.delete_topic_enable is False
    assert controller.channel.listener_name == "PLAINTEXT"
    fire(cluster, controller.start())
    assert controller.active_controller_id == 1 and not controller.is_active
    old_epoch = server.broker_epoch
    store.expire_session()
    cluster.settle()
    assert server.broker_epoch > old_epoch, "re-registered with a new broker epoch"
    assert result(cluster.admin.get_broker(7)) == registration
    assert 7 in cluster.active.context.live_brokers


def test_leftover_registration_naming_us_is_replaced_by_a_real_election() -> None:
    cluster = Cluster((1,))
    fire(cluster, cluster.controllers[1].stop())
    assert result(cluster.admin.get_controller_id()) is None
    # An older session of broker 1 still holds /controller.
    result(
        cluster.admin.store.create("/controller", ControllerZNode(1, 0).encode(), ephemeral=True)
    )
    channel = ControllerChannelManager(
        cluster.clock, 1, connection_factory=lambda b, h, p: FakeConnection(cluster, b, h, p)
    )
    fresh = Controller(1, cluster.zks[1], cluster.clock, channel=channel)
    fire(cluster, fresh.start())
    cluster.settle()
    assert fresh.is_active and fresh.epoch == 2
    assert 1 in fresh.context.live_brokers, "it ran the failover"
    assert result(cluster.admin.get_controller_epoch())[0] == 2


def test_create_topics_answers_once_every_broker_has_taken_the_new_metadata(monkeypatch) -> None:
    """Kafka answers once the answering broker's metadata has leaders; Mafka waits for every live broker."""
    from twisted.internet.defer import Deferred

    cluster = Cluster((1, 2, 3))
    held: list[tuple[Deferred, Deferred]] = []
    plain = FakeConnection.request

    def slow_broker_3(self, api_key, version, body):
        d = plain(self, api_key, version, body)
        if self.broker_id == 3 and api_key == UMR:
            later: Deferred = Deferred()
            held.append((d, later))
            return later
        return d

    monkeypatch.setattr(FakeConnection, "request", slow_broker_3)
    c = cluster.active
    d = c.create_topics([("orders", 3, 1, None, {})], False, 5000)
    cluster.clock.advance(1.0)
    assert held and not d.called, "broker 3 has not answered its UpdateMetadata yet"
    while held:
        done, later = held.pop(0)
        done.chainDeferred(later)
        cluster.clock.advance(0.02)
    assert result(d) == {"orders": (ErrorCode.NONE, None)}


# --------------------------------------------------------------------------- many partitions


def test_failover_with_many_partitions_sends_one_leader_and_isr_per_broker() -> None:
    # 200 topics x 5 partitions over three brokers; the controller dies: every partition it
    # led gets a live leader, every ISR loses it, each compare-and-set on its own version.
    cluster = Cluster((1, 2, 3))
    old = cluster.active
    dead = old.broker_id
    x, y = cluster.others()
    topics = [f"t{i:03d}" for i in range(200)]
    out = fire(cluster, old.create_topics([NewTopic(t, 5, 3) for t in topics], timeout_ms=5000))
    assert all(code == ErrorCode.NONE for code, _ in out.values())
    # a leader moved one partition's version on meanwhile: the new controller's write must not lose it
    state, version = result(cluster.admin.get_partition_state("t007", 3))
    isr = (state.leader, dead) if state.leader != dead else (dead, x)
    shrunk = LeaderIsrAndControllerEpoch(state.leader, state.leader_epoch, isr, state.controller_epoch)
    leader_zk = cluster.zks[state.leader]
    assert fire(cluster, leader_zk.conditional_update_partition_state_as_leader(("t007", 3), shrunk, version))[0]
    marks = cluster.marks()
    cluster.kill(dead)
    new = cluster.active
    for t in topics:
        for p in range(5):
            s = cluster.state(t, p)
            assert s.leader in (x, y) and dead not in s.isr and s.controller_epoch == new.epoch, (t, p, s)
    s = cluster.state("t007", 3)
    assert set(s.isr) == set(shrunk.isr) - {dead}  # the leader's own ISR write was the base
    for b in (x, y):
        keys = [key for key, _ in cluster.brokers[b].received[marks[b]:]]
        # the failover's UpdateMetadata of live brokers, then one LeaderAndIsr and one UpdateMetadata
        assert keys == [UMR, LAI, UMR], (b, keys)
        lai = cluster.brokers[b].requests(LAI, since=marks[b])[0]
        states = {(ts.topic_name, ps.partition_index): ps for ts in lai.topic_states for ps in ts.partition_states}
        assert len(states) == 1000
        assert all(ps.leader in (x, y) and dead not in ps.isr for ps in states.values())
        assert cluster.brokers[b].metadata.partition("t199", 4).leader in (x, y)


def test_controlled_shutdown_of_many_partitions_sends_one_request_of_each_kind() -> None:
    cluster = Cluster((1, 2, 3))
    c = cluster.active
    x, y = cluster.others()
    for i in range(50):
        cluster.create(f"t{i}", {0: [x, y], 1: [y, x], 2: [x, c.broker_id]})
    marks = cluster.marks()
    error, remaining = fire(cluster, c.controlled_shutdown(x, cluster.brokers[x].epoch))
    assert (error, remaining) == (ErrorCode.NONE, [])
    for i in range(50):
        assert cluster.state(f"t{i}", 0).leader == y and cluster.state(f"t{i}", 2).leader == c.broker_id
        assert x not in cluster.state(f"t{i}", 1).isr
    assert [key for key, _ in cluster.brokers[x].received[marks[x]:]] == [LAI, UMR, STOP]
    assert [key for key, _ in cluster.brokers[y].received[marks[y]:]] == [LAI, UMR]


def test_create_topics_of_one_request_overlap_but_colliding_names_keep_the_request_order() -> None:
    cluster = Cluster((1, 2, 3))
    c = cluster.active
    names = [f"bulk-{i}" for i in range(120)] + ["a.b", "a_b", "x_y", "x.y"]
    out = fire(cluster, c.create_topics([NewTopic(n, 2, 2) for n in names], timeout_ms=5000))
    assert list(out) == names
    codes = {name: code for name, (code, _) in out.items()}
    assert codes.pop("a_b") == codes.pop("x.y") == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert set(codes.values()) == {ErrorCode.NONE}
    assert all(cluster.state(n, p).leader >= 0 for n in codes for p in (0, 1))
