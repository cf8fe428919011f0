"""A controller test cluster: MemoryStore sessions on one MemoryZooKeeper tree, fake brokers, a Clock.

Each broker is one :class:`MemoryStore` session on a shared
:class:`MemoryZooKeeper` tree (so ephemeral registrations, ``/controller``
and session expiry behave as in ZooKeeper), one :class:`Controller`, and one
:class:`FakeBroker` that answers LeaderAndIsr / UpdateMetadata / StopReplica
the way Mafka's broker does (controller-epoch, broker-epoch and leader-epoch
fencing; the real :class:`~mafka.broker.metadata_cache.MetadataCache` for
UpdateMetadata).  Every request goes through the wire codec (encode, then
decode), so bodies that would not serialize fail the test.  Time is a
``Clock``; the stores deliver through ``callLater(0)``.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from twisted.internet import defer
from twisted.internet.defer import Deferred
from twisted.internet.task import Clock
from twisted.python.failure import Failure

from mafka.broker.metadata_cache import MetadataCache
from mafka.controller.channel import ControllerChannelManager
from mafka.controller.controller import (
    Controller,
)
from mafka.controller.fast_failover import WatchFactory
from mafka.coordination.kafka_zk import KafkaZkClient
from mafka.coordination.memory_store import MemoryStore, MemoryZooKeeper
from mafka.coordination.znodes import (
    BrokerRegistration,
    LeaderIsrAndControllerEpoch,
)
from mafka.errors import ErrorCode
from mafka.interbroker.connection import ConnectionLostError
from mafka.wire.codec import decode_body, encode_body
from mafka.wire.registry import spec_for

LAI, STOP, UMR = 4, 5, 6
NOW_S = 1_650_000_000
#: How long a fenced broker must accept connections to be taken back (the fast failover path)
COMEBACK_AFTER_S = 36.0


def result(d: Deferred[Any]) -> Any:
    box: list[Any] = []
    d.addBoth(box.append)
    assert box, "the Deferred has not fired"
    if isinstance(box[0], Failure):
        box[0].raiseException()
    return box[0]


# --------------------------------------------------------------------------- fakes


class FakeBroker:
    """Answers controller requests as mafka.broker (handlers/controller_requests + replica_manager)."""

    def __init__(self, broker_id: int, epoch: int) -> None:
        self.id = broker_id
        self.epoch = epoch
        self.controller_epoch = 0
        self.metadata = MetadataCache(broker_id)
        self.partitions: dict[tuple[str, int], Any] = {}
        self.deleted: list[tuple[str, int]] = []
        self.received: list[tuple[int, Any]] = []
        self.up = True
        #: partitions whose log dir failed here: LeaderAndIsr answers KAFKA_STORAGE_ERROR for them
        self.offline: set[tuple[str, int]] = set()

    def requests(self, api_key: int | None = None, since: int = 0) -> list[Any]:
        return [body for key, body in self.received[since:] if api_key is None or key == api_key]

    def handle(self, api_key: int, body: Any) -> dict[str, Any]:
        self.received.append((api_key, body))
        stale = body.broker_epoch != -1 and body.broker_epoch < self.epoch
        if api_key == UMR:
            if stale:
                return {"error_code": ErrorCode.STALE_BROKER_EPOCH}
            error, _ = self.metadata.update(body)
            return {"error_code": error}
        if stale:
            return {"error_code": ErrorCode.STALE_BROKER_EPOCH, "partition_errors": []}
        if body.controller_epoch < self.controller_epoch:
            return {"error_code": ErrorCode.STALE_CONTROLLER_EPOCH, "partition_errors": []}
        self.controller_epoch = body.controller_epoch
        errors = []
        if api_key == LAI:
            for ts in body.topic_states:
                for ps in ts.partition_states:
                    tp = (ts.topic_name, ps.partition_index)
                    if self.id not in ps.replicas:
                        code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    elif tp in self.offline:
                        code = ErrorCode.KAFKA_STORAGE_ERROR
                    elif (
                        tp in self.partitions
                        and ps.leader_epoch <= self.partitions[tp].leader_epoch
                    ):
                        code = ErrorCode.STALE_CONTROLLER_EPOCH
                    else:
                        self.partitions[tp] = ps
                        code = ErrorCode.NONE
                    errors.append(
                        {"topic_name": tp[0], "partition_index": tp[1], "error_code": code}
                    )
            # v5 answers by topic id, as handlers/controller_requests shapes it
            ids = {ts.topic_name: ts.topic_id for ts in body.topic_states}
            by_topic: dict[str, list[dict[str, Any]]] = {}
            for e in errors:
                by_topic.setdefault(e["topic_name"], []).append(
                    {"partition_index": e["partition_index"], "error_code": e["error_code"]}
                )
            return {
                "error_code": ErrorCode.NONE,
                "partition_errors": errors,
                "topics": [{"topic_id": ids[name], "partition_errors": es} for name, es in by_topic.items()],
            }
        else:
            for topic in body.topics:
                for index in topic.partition_indexes:
                    tp = (topic.name, index)
                    self.partitions.pop(tp, None)
                    if body.delete_partitions:
                        self.deleted.append(tp)
                    errors.append({"topic_name": tp[0], "partition_index": index, "error_code": 0})
        return {"error_code": ErrorCode.NONE, "partition_errors": errors}


class FakeConnection:
    """An InterBrokerConnection to a FakeBroker, through the wire codec."""

    def __init__(self, cluster: Cluster, broker_id: int, host: str, port: int) -> None:
        self.cluster = cluster
        self.broker_id = broker_id
        self.address = (host, port)
        self.closed = False

    def request(self, api_key: int, version: int, body: Any) -> Deferred[Any]:
        spec = spec_for(api_key, version)
        decoded = decode_body(spec.request, version, encode_body(spec.request, version, body))
        broker = self.cluster.brokers.get(self.broker_id)
        if self.closed or broker is None or not broker.up:
            return defer.fail(ConnectionLostError("broker down"))
        response = broker.handle(api_key, decoded)
        return defer.succeed(
            decode_body(spec.response, version, encode_body(spec.response, version, response))
        )

    def close(self) -> None:
        self.closed = True


class DeafStore(MemoryStore):
    """A session whose watch callbacks can be muted (a controller that hears nothing)."""

    deaf = False

    def watch_children(self, path: str, callback: Any) -> Any:
        return super().watch_children(path, lambda: None if self.deaf else callback())

    def watch_data(self, path: str, callback: Any) -> Any:
        return super().watch_data(path, lambda: None if self.deaf else callback())


class Cluster:
    """Brokers on one ZooKeeper tree; every controller starts at once (they race)."""

    def __init__(
        self,
        ids: tuple[int, ...] = (1, 2, 3),
        *,
        config: Any = None,
        racks: dict[int, str] | None = None,
        store_class: type[MemoryStore] = MemoryStore,
        liveness: Callable[[Clock, int], WatchFactory] | None = None,
    ) -> None:
        #: (clock, broker id) → its controller's listener-watch factory (the fast failover path), or None
        self.liveness = liveness
        self.clock = Clock()
        self.clock.advance(NOW_S)
        self.tree = MemoryZooKeeper(time_ms=lambda: int(self.clock.seconds() * 1000))
        admin_store = MemoryStore(self.tree)
        admin_store.start()
        self.admin = KafkaZkClient(admin_store)
        result(self.admin.create_persistent_roots())
        self.config = config
        self.racks = racks or {}
        self.stores: dict[int, MemoryStore] = {}
        self.zks: dict[int, KafkaZkClient] = {}
        self.brokers: dict[int, FakeBroker] = {}
        self.controllers: dict[int, Controller] = {}
        for b in ids:
            self._register(b, store_class)
        for b in ids:
            self.controllers[b].start()
        self.settle()

    def registration(self, b: int) -> BrokerRegistration:
        return BrokerRegistration(
            b,
            {
                "INTERNAL": ("PLAINTEXT", f"broker{b}", 19092),
                "EXTERNAL": ("SASL_SSL", "localhost", 9090 + b),
            },
            rack=self.racks.get(b),
        )

    def _register(self, b: int, store_class: type[MemoryStore] = MemoryStore) -> None:
        store = store_class(self.tree, clock=self.clock)
        store.start()
        zk = KafkaZkClient(store)
        self.stores[b], self.zks[b] = store, zk
        self.brokers[b] = FakeBroker(b, -1)
        epoch_d = zk.register_broker(self.registration(b))
        epoch_d.addCallback(lambda epoch: setattr(self.brokers[b], "epoch", epoch))
        self.settle()
        result(epoch_d)

        def reregister() -> Deferred[Any]:
            d = zk.register_broker(self.registration(b))
            return d.addCallback(lambda epoch: setattr(self.brokers[b], "epoch", epoch))

        channel = ControllerChannelManager(
            self.clock,
            b,
            connection_factory=lambda bid, host, port: FakeConnection(self, bid, host, port),
        )
        self.controllers[b] = Controller(
            b,
            zk,
            self.clock,
            channel=channel,
            config=self.config,
            reregister=reregister,
            rng=random.Random(b),
            liveness=None if self.liveness is None else self.liveness(self.clock, b),
            comeback_after_s=COMEBACK_AFTER_S,
        )

    def settle(self) -> None:
        self.clock.advance(0)

    def start_broker(self, b: int, store_class: type[MemoryStore] = MemoryStore) -> None:
        self._register(b, store_class)
        self.controllers[b].start()
        self.settle()

    def kill(self, b: int) -> None:
        """A crash: the session closes (ephemerals go), the process stops answering."""
        self.brokers[b].up = False
        self.stores[b].stop()
        self.controllers[b].stop()
        self.settle()

    @property
    def active(self) -> Controller:
        active = [c for c in self.controllers.values() if c.is_active and not c.core.stopped]
        assert len(active) == 1, (
            f"expected one active controller, got {[c.broker_id for c in active]}"
        )
        return active[0]

    def others(self, *exclude: int) -> list[int]:
        skip = {self.active.broker_id, *exclude}
        return sorted(b for b, fb in self.brokers.items() if fb.up and b not in skip)

    def state(self, topic: str, p: int) -> LeaderIsrAndControllerEpoch | None:
        got = result(self.admin.get_partition_state(topic, p))
        return None if got is None else got[0]

    def create(
        self, topic: str, assignment: dict[int, list[int]], config: dict[str, str] | None = None
    ) -> None:
        result(self.admin.create_topic(topic, assignment, config))
        self.settle()

    def marks(self) -> dict[int, int]:
        return {b: len(fb.received) for b, fb in self.brokers.items()}


def fire(cluster: Cluster, d: Deferred[Any], advance: float = 0) -> Any:
    cluster.settle()
    if advance:
        cluster.clock.advance(advance)
    return result(d)


def set_isr(
    cluster: Cluster, topic: str, p: int, isr: tuple[int, ...], notify: bool = True
) -> None:
    """The partition leader changes the ISR, as Mafka's broker does (Kafka 2.6 style).

    It writes the state znode itself (same leader and leader epoch,
    conditional on the zkVersion) and, with *notify*, posts an
    ``/isr_change_notification`` so the controller hears of it.
    """
    state, version = result(cluster.admin.get_partition_state(topic, p))
    leader_zk = cluster.zks[state.leader]
    changed = LeaderIsrAndControllerEpoch(
        state.leader, state.leader_epoch, tuple(isr), state.controller_epoch
    )
    ok, _ = fire(
        cluster,
        leader_zk.conditional_update_partition_state_as_leader((topic, p), changed, version),
    )
    assert ok
    if notify:
        fire(cluster, leader_zk.post_isr_change_notification([(topic, p)]))
    cluster.settle()


def lai_states(fb: FakeBroker, since: int = 0) -> list[Any]:
    """Every LeaderAndIsr partition state *fb* received since *since*, in order (with topic)."""
    return [
        (ts.topic_name, ps)
        for body in fb.requests(LAI, since=since)
        for ts in body.topic_states
        for ps in ts.partition_states
    ]


def stopped(fb: FakeBroker, since: int = 0) -> list[tuple[str, int, bool]]:
    """Every StopReplica partition *fb* received since *since*: (topic, partition, delete)."""
    return [
        (topic.name, index, bool(body.delete_partitions))
        for body in fb.requests(STOP, since=since)
        for topic in body.topics
        for index in topic.partition_indexes
    ]
