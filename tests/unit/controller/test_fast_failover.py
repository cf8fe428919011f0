"""The fast failover path's decision rule (mafka.controller.fast_failover) on the controller test cluster.

Every broker's controller watches listeners through a fake network whose
ports are *up* (connections accepted and kept), *dead* (refused: no process
holds the port) or *frozen* (no answer: a SIGSTOPped process or a cut
network).  Sessions live in the in-memory ZooKeeper tree, so a crashed
broker's registration stays until the test expires its session.
"""

from __future__ import annotations

from typing import Any

from twisted.internet import defer, error

from mafka.controller.liveness import BrokerLivenessWatch
from tests.unit.controller.cluster import COMEBACK_AFTER_S, Cluster, fire


class Conn:
    def __init__(self) -> None:
        self.closed: defer.Deferred[None] = defer.Deferred()

    def close(self) -> None:
        if not self.closed.called:
            self.closed.callback(None)


class Network:
    """The brokers' listeners as the watches see them, by host (``broker<id>``)."""

    def __init__(self) -> None:
        self.cluster: Cluster | None = None
        self.state: dict[str, str] = {}
        self.open: dict[str, list[Conn]] = {}
        self.attempts: dict[str, int] = {}
        self.refusals_left: dict[str, int] = {}

    def set(self, broker_id: int, state: str, refusals: int | None = None) -> None:
        """*refusals*: a dead port refuses that many connections, then answers nothing (its address vanished)."""
        host = f"broker{broker_id}"
        self.state[host] = state
        if refusals is not None:
            self.refusals_left[host] = refusals
        if state == "dead":  # the kernel closes the dead process's sockets
            for conn in self.open.pop(host, []):
                conn.close()

    def connect(self, host: str, port: int, timeout_s: float) -> defer.Deferred[Any]:
        self.attempts[host] = self.attempts.get(host, 0) + 1
        state = self.state.get(host, "up")
        if state == "up":
            conn = Conn()
            self.open.setdefault(host, []).append(conn)
            return defer.succeed(conn)
        if state == "dead" and self.refusals_left.get(host, 1) > 0:
            if host in self.refusals_left:
                self.refusals_left[host] -= 1
            return defer.fail(error.ConnectionRefusedError(host))
        d: defer.Deferred[Any] = defer.Deferred()
        assert self.cluster is not None
        self.cluster.clock.callLater(timeout_s, d.errback, error.TimeoutError(host))
        return d

    def factory(self, clock: Any, broker_id: int) -> Any:
        def make(on_refused: Any, on_reachable: Any, comeback_after_s: float) -> BrokerLivenessWatch:
            return BrokerLivenessWatch(clock, on_refused, on_reachable, connect=self.connect,
                                       comeback_after_s=comeback_after_s)

        return make


def make_cluster(ids: tuple[int, ...] = (1, 2, 3, 4)) -> tuple[Cluster, Network]:
    net = Network()
    cluster = Cluster(ids, liveness=net.factory)
    net.cluster = cluster
    cluster.settle()
    return cluster, net


def crash(cluster: Cluster, net: Network, b: int, refusals: int | None = None) -> None:
    """SIGKILL: the process stops and its port refuses (*refusals* times, then nothing answers); its
    ZooKeeper session lives on until it expires."""
    cluster.brokers[b].up = False
    controller = cluster.controllers[b]
    controller.core.stopped = True
    controller.core.channel.shutdown()
    if controller._controller_refusal is not None:
        controller._controller_refusal.stop()
    controller.cluster_changes.unwatch_all()
    net.set(b, "dead", refusals)
    cluster.settle()


def registered(cluster: Cluster, b: int) -> bool:
    return fire(cluster, cluster.admin.get_broker(b)) is not None


def test_a_broker_whose_listener_refuses_is_failed_over_while_its_registration_remains() -> None:
    cluster, net = make_cluster()
    x, y, z = cluster.others()
    cluster.create("t", {0: [x, y, z], 1: [y, x, z]})
    crash(cluster, net, x)
    s0, s1 = cluster.state("t", 0), cluster.state("t", 1)
    assert (s0.leader, s0.isr, s0.leader_epoch) == (y, (y, z), 1)
    assert (s1.leader, s1.isr) == (y, (y, z))
    assert registered(cluster, x)  # no session expiry was needed
    active = cluster.active
    assert x not in active.context.live_brokers
    assert active.cluster_changes.refused is not None and x in active.cluster_changes.refused.fenced
    # Everyone learned that y leads t-0 at the new epoch; x, still registered, stays listed to
    # clients (leading nothing) until its session expires, as Kafka lists every registered broker.
    assert cluster.brokers[y].partitions[("t", 0)].leader == y
    z_view = cluster.brokers[z].metadata
    assert x in {b for b, *_ in z_view.alive_brokers("INTERNAL")}
    assert x in active.context.fenced_registrations
    assert all(p.leader != x for parts in z_view.partitions.values() for p in parts.values())
    cluster.tree.expire_session(cluster.stores[x].session_id)
    cluster.settle()
    assert x not in {b for b, *_ in z_view.alive_brokers("INTERNAL")}  # its znode went: not listed
    assert active.context.fenced_registrations == {}


def test_a_frozen_broker_keeps_its_partitions_until_its_session_expires() -> None:
    cluster, net = make_cluster()
    x, y, z = cluster.others()
    cluster.create("t", {0: [x, y, z]})
    cluster.brokers[x].up = False
    net.set(x, "frozen")  # connections already open stay open; new ones get no answer
    for _ in range(60):
        cluster.clock.advance(1.0)
    assert cluster.state("t", 0).leader == x and x in cluster.active.context.live_brokers
    # A connection closing (say the broker's idle timeout) while frozen: the reconnect times out.
    for conn in net.open.pop(f"broker{x}", []):
        conn.close()
    for _ in range(30):
        cluster.clock.advance(1.0)
    assert cluster.state("t", 0).leader == x
    cluster.tree.expire_session(cluster.stores[x].session_id)  # the authority
    cluster.settle()
    assert cluster.state("t", 0).leader == y


def test_the_restarted_broker_registers_anew_through_the_ordinary_path() -> None:
    cluster, net = make_cluster()
    x, y, z = cluster.others()
    cluster.create("t", {0: [x, y, z]})
    crash(cluster, net, x)
    refused = cluster.active.cluster_changes.refused
    assert refused is not None and x in refused.fenced
    # The old session expires; the restarted broker (same port, accepting) registers a new epoch.
    cluster.tree.expire_session(cluster.stores[x].session_id)
    cluster.settle()
    assert refused.fenced == {}
    net.set(x, "up")
    cluster.start_broker(x)
    active = cluster.active
    assert x in active.context.live_brokers
    assert active.context.broker_epoch(x) == cluster.brokers[x].epoch
    assert cluster.brokers[x].partitions[("t", 0)].leader == y  # told to follow
    # ... and it is watched again: a second crash is caught as fast.
    crash(cluster, net, x)
    assert x not in cluster.active.context.live_brokers and registered(cluster, x)


def test_a_fenced_broker_that_accepts_again_under_its_old_registration_is_taken_back() -> None:
    cluster, net = make_cluster()
    x, y, z = cluster.others()
    cluster.create("t", {0: [x, y, z]})
    # A firewall answering with resets: the process and its session live, the port refuses.
    net.set(x, "dead")
    cluster.settle()
    assert cluster.state("t", 0).leader == y and x not in cluster.active.context.live_brokers
    net.set(x, "up")
    for _ in range(int(COMEBACK_AFTER_S) - 2):
        cluster.clock.advance(1.0)
    assert x not in cluster.active.context.live_brokers  # not yet: a restart's old session must be gone first
    for _ in range(5):
        cluster.clock.advance(1.0)
    active = cluster.active
    assert x in active.context.live_brokers
    assert active.cluster_changes.refused is not None and active.cluster_changes.refused.fenced == {}
    assert cluster.brokers[x].partitions[("t", 0)].leader == y


def test_a_dead_controller_is_replaced_before_its_session_expires() -> None:
    cluster, net = make_cluster()
    a = cluster.active.broker_id
    x, y, z = cluster.others()
    cluster.create("t", {0: [a, x, y], 1: [x, a, y]})
    epoch_before = fire(cluster, cluster.admin.get_controller_epoch())[0]
    crash(cluster, net, a)
    active = cluster.active
    assert active.broker_id != a
    assert fire(cluster, cluster.admin.get_controller_epoch())[0] == epoch_before + 1
    assert registered(cluster, a)  # the old controller's session still lives
    s0 = cluster.state("t", 0)
    assert s0.leader == x and a not in s0.isr
    assert a not in cluster.state("t", 1).isr
    assert a not in active.context.live_brokers


def test_the_controller_delete_never_removes_a_newer_controller() -> None:
    cluster, net = make_cluster()
    a = cluster.active.broker_id
    x = cluster.others()[0]
    refusal = cluster.controllers[x]._controller_refusal
    assert refusal is not None and refusal.watching is not None and refusal.watching[0] == a
    old = refusal.watching
    # The controller resigns and is elected again: /controller is a new node (new czxid).
    fire(cluster, cluster.controllers[a].zk.delete_controller(cluster.controllers[a].context.epoch_zk_version))
    cluster.settle()
    now = fire(cluster, cluster.admin.get_controller_registration())
    assert now is not None and now != old
    # A refusal reported for the old node (it raced with the election) deletes nothing.
    refusal._watching = old
    fire(cluster, defer.ensureDeferred(refusal._process_refused(*old[:2])))
    assert fire(cluster, cluster.admin.get_controller_registration()) == now
    # Negative control: for the node that is there, it does delete (and an election follows).
    refusal._watching = now
    fire(cluster, defer.ensureDeferred(refusal._process_refused(*now[:2])))
    assert fire(cluster, cluster.admin.get_controller_registration()) != now


def test_a_refusal_for_a_replaced_registration_changes_nothing() -> None:
    cluster, net = make_cluster()
    x, y, z = cluster.others()
    cluster.create("t", {0: [x, y, z]})
    refused = cluster.active.cluster_changes.refused
    assert refused is not None
    old_epoch = cluster.active.context.broker_epoch(x)
    fire(cluster, defer.ensureDeferred(refused._process_refused(x, old_epoch + 12345)))
    assert x in cluster.active.context.live_brokers and cluster.state("t", 0).leader == x
    # Negative control: the same refusal for the registration in force fences the broker.
    fire(cluster, defer.ensureDeferred(refused._process_refused(x, old_epoch)))
    assert cluster.state("t", 0).leader == y


def test_a_dead_controller_seen_refusing_is_fenced_by_its_successor_without_a_probe() -> None:
    # In a container the dead process's address may vanish right after its sockets closed: the
    # brokers watching the controller see it refuse, the new controller's own probe finds no one.
    cluster, net = make_cluster()
    a = cluster.active.broker_id
    x, y, z = cluster.others()
    cluster.create("t", {0: [a, x, y]})
    crash(cluster, net, a, refusals=3)  # one refusal for each broker watching the controller
    active = cluster.active
    assert active.broker_id != a and registered(cluster, a)
    s0 = cluster.state("t", 0)
    assert s0.leader in (x, y) and a not in s0.isr
    assert a not in active.context.live_brokers


def test_negative_control_without_the_refusal_carried_over_the_successor_waits_for_the_session() -> None:
    cluster, net = make_cluster()
    a = cluster.active.broker_id
    x, y, z = cluster.others()
    cluster.create("t", {0: [a, x, y]})
    for controller in cluster.controllers.values():
        refused = controller.cluster_changes.refused
        assert refused is not None
        refused._known_dead = dict  # forget what the refusal showed
    crash(cluster, net, a, refusals=3)
    for _ in range(20):
        cluster.clock.advance(1.0)
    assert cluster.active.broker_id != a
    assert cluster.state("t", 0).leader == a  # the probe timed out: nothing proved it dead
    cluster.tree.expire_session(cluster.stores[a].session_id)
    cluster.settle()
    assert cluster.state("t", 0).leader in (x, y)
