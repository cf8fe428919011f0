"""The controller's requests to brokers (Kafka's ``ControllerChannelManager`` and request batch).

:class:`ControllerChannelManager` keeps one connection and one request queue
per live broker.  Requests to a broker go out **one at a time, in order**
(Kafka's ``RequestSendThread``): so an UpdateMetadata queued before a
LeaderAndIsr reaches the broker first.  A request whose connection drops is
sent again after a short backoff, until it is answered or the broker is
removed; removing a broker (it died) closes its connection and drops what was
queued for it.  Connections come from an injected factory, so tests can
record what each broker would receive and answer for it.

:class:`ControllerBrokerRequestBatch` is Kafka's
``AbstractControllerBrokerRequestBatch``: state changes add LeaderAndIsr
partition states (per broker), StopReplica partitions (per broker, with or
without delete) and UpdateMetadata partition states (one set for every
recipient); :meth:`~ControllerBrokerRequestBatch.send_requests` turns them
into LeaderAndIsr v2 / UpdateMetadata v5 / StopReplica v1 bodies stamped with
the controller id, the controller epoch and the **recipient's** broker epoch,
and hands them to the channel.  Within one batch the order is Kafka's:
LeaderAndIsr, then UpdateMetadata, then StopReplica.

The body builders (:func:`leader_and_isr_body`, :func:`update_metadata_body`,
:func:`stop_replica_body`) are pure functions; their field names are those
of :mod:`mafka.wire.apis.leader_and_isr`, ``update_metadata`` and ``stop_replica``.
"""

from __future__ import annotations

import contextlib
import logging
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from twisted.internet import defer
from twisted.python.failure import Failure

from mafka.controller.context import ControllerContext
from mafka.controller.election import LEADER_DURING_DELETE
from mafka.coordination.znodes import BrokerRegistration, LeaderIsrAndControllerEpoch, uuid_bytes
from mafka.endpoint import SECURITY_PROTOCOL_IDS, Endpoint
from mafka.errors import ErrorCode
from mafka.topics import TopicPartitionTuple

__all__ = [
    "LEADER_AND_ISR",
    "LEADER_AND_ISR_VERSION",
    "STOP_REPLICA",
    "STOP_REPLICA_VERSION",
    "UPDATE_METADATA",
    "UPDATE_METADATA_VERSION",
    "BrokerClient",
    "ConnectionFactory",
    "ControllerBrokerRequestBatch",
    "ControllerChannelManager",
    "LeaderAndIsrEntry",
    "broker_endpoint",
    "leader_and_isr_body",
    "stop_replica_body",
    "update_metadata_body",
    "update_metadata_live_brokers",
    "update_metadata_partition_state",
    "update_metadata_topic_states",
]

log = logging.getLogger("mafka.controller.channel")

LEADER_AND_ISR, STOP_REPLICA, UPDATE_METADATA = 4, 5, 6
LEADER_AND_ISR_VERSION, STOP_REPLICA_VERSION, UPDATE_METADATA_VERSION = 5, 1, 7

#: Partitions named in a log line about many (the count is given too).
_LOGGED_PARTITIONS = 20

_API_NAMES = {
    LEADER_AND_ISR: "LeaderAndIsr",
    STOP_REPLICA: "StopReplica",
    UPDATE_METADATA: "UpdateMetadata",
}


class BrokerClient(Protocol):
    """What the channel needs of a connection (``mafka.interbroker.connection.InterBrokerConnection``)."""

    def request(self, api_key: int, version: int, body: Any) -> defer.Deferred[Any]:
        """Sends a request; fires with the decoded response body."""

    def close(self) -> None:
        """Closes the connection; outstanding requests fail."""


#: ``factory(broker_id, host, port)`` → a :class:`BrokerClient`.
ConnectionFactory = Callable[[int, str, int], BrokerClient]

#: ``callback(broker_id, response_body)``.
ResponseCallback = Callable[[int, Any], None]


def broker_endpoint(
    registration: BrokerRegistration, listener_name: str | None = None
) -> tuple[str, int]:
    """The (host, port) the controller uses to reach a broker.

    Args:
        registration: The broker's registration.
        listener_name: The inter-broker listener; None picks the listener named
            ``PLAINTEXT``, else the first PLAINTEXT one, else the first one.

    Raises:
        KeyError: The broker has no such listener, or no listener at all.
    """
    endpoints = registration.endpoints
    endpoint: Endpoint | None
    if listener_name is not None:
        endpoint = endpoints[listener_name]
    else:
        endpoint = endpoints.get("PLAINTEXT") or registration.plaintext_endpoint
        if endpoint is None:
            if not endpoints:
                raise KeyError(f"broker {registration.id} has no endpoints")
            endpoint = next(iter(endpoints.values()))
    return endpoint.host or "localhost", endpoint.port


# --------------------------------------------------------------------------- bodies


@dataclass(frozen=True, slots=True)
class LeaderAndIsrEntry:
    """One partition of a LeaderAndIsr request."""

    state: LeaderIsrAndControllerEpoch
    replicas: tuple[int, ...]
    is_new: bool
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()


def update_metadata_partition_state(
    tp: TopicPartitionTuple, context: ControllerContext
) -> dict[str, Any] | None:
    """The UpdateMetadata partition state of *tp* from the context (Kafka's ``updateMetadataRequestPartitionInfo``).

    Leader −2 (and leader epoch 0) while the topic is queued for deletion;
    offline replicas = assigned replicas that are not online.  None when the
    partition has no leader yet (it is then left out of the request).
    """
    state = context.leadership.get(tp)
    if state is None:
        return None
    replicas = context.partition_replicas(tp)
    leader, leader_epoch = state.leader, state.leader_epoch
    if context.is_topic_queued_for_deletion(tp[0]):
        leader, leader_epoch = LEADER_DURING_DELETE, 0
    return {
        "partition_index": tp[1],
        "controller_epoch": state.controller_epoch,
        "leader": leader,
        "leader_epoch": leader_epoch,
        "isr": list(state.isr),
        "zk_version": state.zk_version,
        "replicas": list(replicas),
        "offline_replicas": [r for r in replicas if not context.is_replica_online(r, tp)],
    }


def leader_and_isr_partition_errors(response: Any, topic_ids: Mapping[str, str | None]) -> dict[TopicPartitionTuple, int]:
    """(topic, partition) → error code of a LeaderAndIsr response (v0-v4 by name, v5 by topic id);
    empty when the whole request failed (Kafka then ignores the partitions)."""
    if _error_code(response) != ErrorCode.NONE:
        return {}
    out: dict[TopicPartitionTuple, int] = {}
    for e in _get(response, "partition_errors", []) or []:
        out[(_get(e, "topic_name", "?"), _get(e, "partition_index", -1))] = _get(e, "error_code", 0)
    names = {uuid_bytes(i): t for t, i in topic_ids.items() if i}
    for topic in _get(response, "topics", []) or []:  # v5: by topic id
        name = names.get(_get(topic, "topic_id", b""), "?")
        for e in _get(topic, "partition_errors", []) or []:
            out[(name, _get(e, "partition_index", -1))] = _get(e, "error_code", 0)
    return out


def _by_topic(partitions: Iterable[tuple[TopicPartitionTuple, Any]]) -> dict[str, list[tuple[int, Any]]]:
    grouped: dict[str, list[tuple[int, Any]]] = {}
    for (topic, partition), value in sorted(partitions, key=lambda item: item[0]):
        grouped.setdefault(topic, []).append((partition, value))
    return grouped


def leader_and_isr_body(
    controller_id: int,
    controller_epoch: int,
    broker_epoch: int,
    partitions: Mapping[TopicPartitionTuple, LeaderAndIsrEntry],
    live_leaders: Iterable[tuple[int, str, int]],
    topic_ids: Mapping[str, str | None] | None = None,
) -> dict[str, Any]:
    """A LeaderAndIsr v5 request body (v2–v4 take the fields they know).

    Args:
        partitions: Partition → state, replicas (all of them during a
            reassignment), is_new and the replicas being added and removed.
        live_leaders: (broker id, host, port) of the live leaders among *partitions*.
        topic_ids: topic → its id (Kafka's base64 form); a topic without one
            is sent with the zero UUID.
    """
    topic_states = []
    for topic, entries in _by_topic(partitions.items()).items():
        topic_states.append(
            {
                "topic_name": topic,
                "topic_id": uuid_bytes((topic_ids or {}).get(topic)),
                "partition_states": [
                    {
                        "partition_index": partition,
                        "controller_epoch": entry.state.controller_epoch,
                        "leader": entry.state.leader,
                        "leader_epoch": entry.state.leader_epoch,
                        "isr": list(entry.state.isr),
                        "zk_version": entry.state.zk_version,
                        "replicas": list(entry.replicas),
                        "adding_replicas": list(entry.adding),
                        "removing_replicas": list(entry.removing),
                        "is_new": entry.is_new,
                    }
                    for partition, entry in entries
                ],
            }
        )
    return {
        "controller_id": controller_id,
        "controller_epoch": controller_epoch,
        "broker_epoch": broker_epoch,
        # INCREMENTAL (0): the request names only the partitions that changed (Kafka's
        # ZooKeeper-mode controller never sends FULL).
        "type": 0,
        "topic_states": topic_states,
        "live_leaders": [
            {"broker_id": b, "host_name": host, "port": port}
            for b, host, port in sorted(live_leaders)
        ],
    }


def update_metadata_body(
    controller_id: int,
    controller_epoch: int,
    broker_epoch: int,
    partition_states: Mapping[TopicPartitionTuple, Mapping[str, Any]],
    live_brokers: Mapping[int, BrokerRegistration],
    topic_ids: Mapping[str, str | None] | None = None,
) -> dict[str, Any]:
    """An UpdateMetadata v7 request body.

    Each topic carries its id from *topic_ids* (Kafka's base64 form, sent as
    16 raw bytes; a topic without one — created before ids — sends the zero
    UUID, as Kafka does).

    Every live broker is listed with **all** its listeners
    (``{port, host, listener, security_protocol}``, protocol as Kafka's id:
    0 PLAINTEXT, 1 SSL, 2 SASL_PLAINTEXT, 3 SASL_SSL) and its rack.
    """
    return _update_metadata_request(
        controller_id,
        controller_epoch,
        broker_epoch,
        update_metadata_topic_states(partition_states, topic_ids),
        update_metadata_live_brokers(live_brokers),
    )


def update_metadata_topic_states(
    partition_states: Mapping[TopicPartitionTuple, Mapping[str, Any]],
    topic_ids: Mapping[str, str | None] | None = None,
) -> list[dict[str, Any]]:
    """The ``topic_states`` of an UpdateMetadata body (the same for every recipient)."""
    return [
        {
            "topic_name": topic,
            "topic_id": uuid_bytes((topic_ids or {}).get(topic)),
            "partition_states": [dict(state) for _, state in entries],
        }
        for topic, entries in _by_topic(partition_states.items()).items()
    ]


def update_metadata_live_brokers(live_brokers: Mapping[int, BrokerRegistration]) -> list[dict[str, Any]]:
    """The ``live_brokers`` of an UpdateMetadata body (the same for every recipient)."""
    brokers = []
    for broker_id, registration in sorted(live_brokers.items()):
        brokers.append(
            {
                "id": broker_id,
                "endpoints": [
                    {
                        "port": endpoint.port,
                        "host": endpoint.host or "",
                        "listener": listener,
                        "security_protocol": SECURITY_PROTOCOL_IDS[endpoint.security_protocol],
                    }
                    for listener, endpoint in registration.endpoints.items()
                ],
                "rack": registration.rack,
            }
        )
    return brokers


def _update_metadata_request(
    controller_id: int,
    controller_epoch: int,
    broker_epoch: int,
    topic_states: list[dict[str, Any]],
    live_brokers: list[dict[str, Any]],
) -> dict[str, Any]:
    # The topic states and brokers may be shared by the bodies of every recipient: nobody mutates them.
    return {
        "controller_id": controller_id,
        "controller_epoch": controller_epoch,
        "broker_epoch": broker_epoch,
        "topic_states": topic_states,
        "live_brokers": live_brokers,
    }


def stop_replica_body(
    controller_id: int,
    controller_epoch: int,
    broker_epoch: int,
    delete_partitions: bool,
    partitions: Iterable[TopicPartitionTuple],
) -> dict[str, Any]:
    """A StopReplica v1 request body (one delete flag for the whole request)."""
    grouped: dict[str, list[int]] = {}
    for topic, partition in sorted(set(partitions)):
        grouped.setdefault(topic, []).append(partition)
    return {
        "controller_id": controller_id,
        "controller_epoch": controller_epoch,
        "broker_epoch": broker_epoch,
        "delete_partitions": delete_partitions,
        "topics": [
            {"name": topic, "partition_indexes": indexes} for topic, indexes in grouped.items()
        ],
    }


# --------------------------------------------------------------------------- channel


class _BrokerQueue:
    """One broker's connection and its ordered queue, one request in flight."""

    def __init__(
        self, channel: ControllerChannelManager, broker_id: int, connection: BrokerClient
    ) -> None:
        self.channel = channel
        self.broker_id = broker_id
        self.connection = connection
        self.queue: deque[tuple[int, int, Any, ResponseCallback | None]] = deque()
        self.in_flight = False
        self.retry_call: Any = None
        self.closed = False
        self.enqueued = 0  # requests ever queued to this broker
        self.answered = 0  # of which answered
        self.failures = 0  # sends failed in a row

    def enqueue(
        self, api_key: int, version: int, body: Any, callback: ResponseCallback | None
    ) -> None:
        self.queue.append((api_key, version, body, callback))
        self.enqueued += 1
        self.pump()

    def pump(self) -> None:
        if self.closed or self.in_flight or self.retry_call is not None or not self.queue:
            return
        api_key, version, body, _ = self.queue[0]
        self.in_flight = True
        d = defer.maybeDeferred(self.connection.request, api_key, version, body)
        d.addCallbacks(self._answered, self._failed)

    def _answered(self, response: Any) -> None:
        self.in_flight = False
        self.failures = 0
        if self.closed or not self.queue:
            return
        api_key, _, _, callback = self.queue.popleft()
        self.answered += 1
        if callback is not None:
            try:
                callback(self.broker_id, response)
            except Exception:
                log.exception(
                    "callback for %s response from broker %d failed",
                    _API_NAMES.get(api_key),
                    self.broker_id,
                )
        self.pump()

    def _failed(self, failure: Failure) -> None:
        self.in_flight = False
        if self.closed or not self.queue:
            return
        api_key = self.queue[0][0]
        self.failures += 1
        # A broker that died is retried until its registration goes (its session
        # expires): say so on the first failure and then now and again, not every time.
        log.log(
            logging.WARNING if self.failures == 1 or self.failures % 50 == 0 else logging.DEBUG,
            "%s to broker %d failed (%s, %d in a row); retrying in %.1fs",
            _API_NAMES.get(api_key, api_key),
            self.broker_id,
            failure.getErrorMessage(),
            self.failures,
            self.channel.retry_backoff_s,
        )
        self.retry_call = self.channel.reactor.callLater(self.channel.retry_backoff_s, self._retry)

    def _retry(self) -> None:
        self.retry_call = None
        self.pump()

    def close(self) -> None:
        self.closed = True
        self.queue.clear()
        if self.retry_call is not None and self.retry_call.active():
            self.retry_call.cancel()
        self.retry_call = None
        try:
            self.connection.close()
        except Exception:
            log.exception("closing the connection to broker %d failed", self.broker_id)


class ControllerChannelManager:
    """Connections from the controller to every live broker.

    Args:
        reactor: ``IReactorTime`` (retry backoff) and, for the default factory, ``IReactorTCP``.
        controller_id: This broker's id (used in the client id).
        connection_factory: ``factory(broker_id, host, port)`` → connection;
            by default a :class:`mafka.interbroker.connection.InterBrokerConnection`.
        listener_name: The inter-broker listener to connect to (see :func:`broker_endpoint`).
        retry_backoff_s: Delay before re-sending a request whose connection failed.
    """

    def __init__(
        self,
        reactor: Any,
        controller_id: int,
        *,
        connection_factory: ConnectionFactory | None = None,
        listener_name: str | None = None,
        retry_backoff_s: float = 0.1,
    ) -> None:
        self.reactor = reactor
        self.controller_id = controller_id
        self.listener_name = listener_name
        self.retry_backoff_s = retry_backoff_s
        self._factory = connection_factory or self._default_factory
        self._brokers: dict[int, _BrokerQueue] = {}

    def _default_factory(self, broker_id: int, host: str, port: int) -> BrokerClient:
        from mafka.interbroker.connection import InterBrokerConnection

        return InterBrokerConnection(self.reactor, host, port, f"controller-{self.controller_id}")

    @property
    def broker_ids(self) -> set[int]:
        """The brokers the channel has a connection for."""
        return set(self._brokers)

    def startup(self, brokers: Mapping[int, BrokerRegistration]) -> None:
        """Opens a connection to each of *brokers* (id → registration)."""
        for broker_id, registration in sorted(brokers.items()):
            self.add_broker(broker_id, registration)

    @property
    def idle(self) -> bool:
        """No request queued or in flight to any broker."""
        return all(not q.queue and not q.in_flight for q in self._brokers.values())

    def drained(self, timeout_s: float) -> defer.Deferred[bool]:
        """Fires True once :attr:`idle`, or False after *timeout_s* (polled every 10 ms).

        A controller broker that is shutting down waits for this, so the
        LeaderAndIsr and UpdateMetadata of its own controlled shutdown reach
        the other brokers before the connections close.
        """
        deadline = self.reactor.seconds() + timeout_s
        d: defer.Deferred[bool] = defer.Deferred()

        def check() -> None:
            if self.idle:
                d.callback(True)
            elif self.reactor.seconds() >= deadline:
                d.callback(False)
            else:
                self.reactor.callLater(0.01, check)

        check()
        return d

    def barrier(self) -> dict[int, tuple[Any, int]]:
        """A mark of what is queued now, for :meth:`delivered`."""
        return {b: (q, q.enqueued) for b, q in self._brokers.items()}

    def delivered(self, mark: dict[int, tuple[Any, int]]) -> bool:
        """Whether every broker has answered all that was queued to it at *mark*.

        A broker dropped from the channel since (it died) no longer counts.
        """
        return all(
            q.answered >= n or self._brokers.get(b) is not q for b, (q, n) in mark.items()
        )

    def shutdown(self) -> None:
        """Closes every connection; queued requests are dropped."""
        for broker_id in list(self._brokers):
            self.remove_broker(broker_id)

    def add_broker(self, broker_id: int, registration: BrokerRegistration) -> None:
        """Opens a connection to a new broker (no-op if it has one)."""
        if broker_id in self._brokers:
            return
        try:
            host, port = broker_endpoint(registration, self.listener_name)
        except KeyError:
            log.error(
                "broker %d has no listener %s; cannot reach it", broker_id, self.listener_name
            )
            return
        self._brokers[broker_id] = _BrokerQueue(
            self, broker_id, self._factory(broker_id, host, port)
        )

    def remove_broker(self, broker_id: int) -> None:
        """Closes the connection to a broker and drops its queued requests."""
        queue = self._brokers.pop(broker_id, None)
        if queue is not None:
            queue.close()

    def send(
        self,
        broker_id: int,
        api_key: int,
        version: int,
        body: Any,
        callback: ResponseCallback | None = None,
    ) -> bool:
        """Queues a request to *broker_id*; False (dropped) if the channel does not know it."""
        queue = self._brokers.get(broker_id)
        if queue is None:
            log.debug(
                "dropping %s to broker %d: not connected",
                _API_NAMES.get(api_key, api_key),
                broker_id,
            )
            return False
        queue.enqueue(api_key, version, body, callback)
        return True


# --------------------------------------------------------------------------- batch


class ControllerBrokerRequestBatch:
    """Accumulates the requests one state change produces, then sends them (see the module doc).

    Args:
        controller_id: This controller's broker id.
        context: The controller context (live brokers, epochs, assignments, leadership).
        channel: Where requests go.
        on_stop_replica_response: ``callback(broker_id, error, partition_errors)``
            for answers to StopReplica **with delete** (topic deletion):
            ``partition_errors`` maps each partition of the request to its error
            (the request-level error for every partition when the request failed as a whole).
        on_leader_and_isr_response: ``callback(broker_id, partition_errors)`` for every
            LeaderAndIsr answer (after its errors are logged): partition → error code,
            as :func:`leader_and_isr_partition_errors` reads them.

    Merging: inside :meth:`merged` the state changes of one controller
    action (a failover, a broker failure, a controlled shutdown, new
    partitions) fill **one** batch, sent when the block ends, so each broker
    gets one LeaderAndIsr and one UpdateMetadata carrying every partition's
    final state instead of one per state change.  With thousands of
    partitions the requests, not ZooKeeper, are then the controller's cost
    (building and encoding them runs on the reactor the broker shares).
    Requests about one partition to one broker are never reordered: adding
    a LeaderAndIsr for a partition that has a StopReplica waiting for the
    same broker (or the reverse) first sends what was merged so far.
    """

    def __init__(
        self,
        controller_id: int,
        context: ControllerContext,
        channel: ControllerChannelManager,
        *,
        on_stop_replica_response: Callable[[int, ErrorCode, dict[TopicPartitionTuple, ErrorCode]], None]
        | None = None,
        on_leader_and_isr_response: Callable[[int, dict[TopicPartitionTuple, int]], None] | None = None,
    ) -> None:
        self.controller_id = controller_id
        self.context = context
        self.channel = channel
        self.on_stop_replica_response = on_stop_replica_response
        self.on_leader_and_isr_response = on_leader_and_isr_response
        self.leader_and_isr: dict[int, dict[TopicPartitionTuple, LeaderAndIsrEntry]] = {}
        self.stop_replica: dict[int, dict[TopicPartitionTuple, bool]] = {}
        self.update_metadata_brokers: set[int] = set()
        self.update_metadata_partitions: dict[TopicPartitionTuple, dict[str, Any]] = {}
        #: nesting depth of :meth:`merged` blocks
        self._merging = 0

    @property
    def is_empty(self) -> bool:
        return not (
            self.leader_and_isr
            or self.stop_replica
            or self.update_metadata_brokers
            or self.update_metadata_partitions
        )

    @property
    def is_merging(self) -> bool:
        """True inside :meth:`merged`."""
        return self._merging > 0

    @contextlib.contextmanager
    def merged(self) -> Iterator[None]:
        """Merges every batch started inside the block into one, sent when the block ends.

        Inside, :meth:`new_batch` and :meth:`send_requests` only mark where a
        state change starts and ends, and :meth:`abandon` keeps what earlier
        changes added.  The merged requests are sent (with the context's
        controller epoch) when the outermost block ends normally, dropped when
        it raises (e.g. ControllerMovedError: this controller was fenced).
        """
        self._merging += 1
        try:
            yield
        except BaseException:
            self._merging -= 1
            if not self._merging:
                self.clear()
            raise
        self._merging -= 1
        if not self._merging:
            try:
                self._send(self.context.epoch)
            except Exception:  # as a state machine treats a failed send: logged, the batch dropped
                log.exception("sending the merged controller requests failed")

    def new_batch(self) -> None:
        """Starts a batch; a non-empty leftover (an earlier failure) is logged and discarded.

        Inside :meth:`merged` the batch goes on (what earlier state changes added stays)."""
        if self._merging:
            return
        if not self.is_empty:
            log.error("controller request batch not empty when starting a new one; discarding it")
            self.clear()

    def abandon(self) -> None:
        """A state change failed part-way: drops the batch (Kafka leaves it to the next ``newBatch``).

        Inside :meth:`merged` nothing is dropped: every entry describes a state
        already written to ZooKeeper (entries are added after their write), so
        the brokers are told with the rest."""
        if not self._merging:
            self.clear()

    def clear(self) -> None:
        """Drops everything queued (resignation, a fenced controller)."""
        self.leader_and_isr = {}
        self.stop_replica = {}
        self.update_metadata_brokers = set()
        self.update_metadata_partitions = {}

    def flush(self) -> None:
        """Inside :meth:`merged`: sends what was merged so far now (the block goes on)."""
        if self._merging and not self.is_empty:
            self._send(self.context.epoch)

    def add_leader_and_isr(
        self,
        broker_ids: Iterable[int],
        tp: TopicPartitionTuple,
        state: LeaderIsrAndControllerEpoch,
        replicas: Iterable[int],
        is_new: bool,
    ) -> None:
        """LeaderAndIsr for *tp* to *broker_ids*; the partition also goes to every broker's UpdateMetadata."""
        replicas = tuple(replicas)
        broker_ids = [b for b in broker_ids if b >= 0]
        if self._merging and any(tp in self.stop_replica.get(b, ()) for b in broker_ids):
            self.flush()  # the StopReplica goes first, as it would unmerged
        for broker_id in broker_ids:
            per_broker = self.leader_and_isr.setdefault(broker_id, {})
            already_new = tp in per_broker and per_broker[tp].is_new
            per_broker[tp] = LeaderAndIsrEntry(
                state,
                replicas,
                is_new or already_new,
                self.context.adding_replicas.get(tp, ()),
                self.context.removing_replicas.get(tp, ()),
            )
        self.add_update_metadata(self.context.live_or_shutting_down_broker_ids, [tp])

    def add_stop_replica(self, broker_ids: Iterable[int], tp: TopicPartitionTuple, delete: bool) -> None:
        """StopReplica for *tp* to *broker_ids* (a delete wins over a plain stop)."""
        broker_ids = [b for b in broker_ids if b >= 0]
        if self._merging and any(tp in self.leader_and_isr.get(b, ()) for b in broker_ids):
            self.flush()  # the LeaderAndIsr goes first, as it would unmerged
        for broker_id in broker_ids:
            per_broker = self.stop_replica.setdefault(broker_id, {})
            per_broker[tp] = delete or per_broker.get(tp, False)

    def add_update_metadata(
        self, broker_ids: Iterable[int], partitions: Iterable[TopicPartitionTuple] = ()
    ) -> None:
        """UpdateMetadata to *broker_ids*, carrying *partitions* (those with a leader) as of now."""
        self.update_metadata_brokers.update(b for b in broker_ids if b >= 0)
        for tp in partitions:
            state = update_metadata_partition_state(tp, self.context)
            if state is not None:
                self.update_metadata_partitions[tp] = state

    def send_requests(self, controller_epoch: int) -> None:
        """Builds and sends the batch's requests, then empties it (inside :meth:`merged`: at its end)."""
        if self._merging:
            return
        self._send(controller_epoch)

    def _send(self, controller_epoch: int) -> None:
        try:
            self._send_leader_and_isr(controller_epoch)
            self._send_update_metadata(controller_epoch)
            self._send_stop_replica(controller_epoch)
        finally:
            self.clear()

    # ------------------------------------------------------------------ internals

    def _send_leader_and_isr(self, controller_epoch: int) -> None:
        ctx = self.context
        live = ctx.live_or_shutting_down_broker_ids
        for broker_id, partitions in sorted(self.leader_and_isr.items()):
            if broker_id not in live or not partitions:
                continue
            leader_ids = {entry.state.leader for entry in partitions.values()}
            live_leaders = []
            for leader in sorted(leader_ids & live):
                try:
                    host, port = broker_endpoint(
                        ctx.live_brokers[leader], self.channel.listener_name
                    )
                except KeyError:
                    continue
                live_leaders.append((leader, host, port))
            body = leader_and_isr_body(
                self.controller_id,
                controller_epoch,
                ctx.broker_epoch(broker_id),
                partitions,
                live_leaders,
                ctx.topic_ids,
            )
            # v5 answers by topic id: a topic without one (created by a pre-2.8 tool) needs v4's names,
            # or the answer's per-partition errors (KAFKA_STORAGE_ERROR) could not be told apart.
            by_id = all(ctx.topic_ids.get(tp[0]) for tp in partitions)
            self.channel.send(
                broker_id,
                LEADER_AND_ISR,
                LEADER_AND_ISR_VERSION if by_id else LEADER_AND_ISR_VERSION - 1,
                body,
                self._leader_and_isr_response,
            )

    def _send_update_metadata(self, controller_epoch: int) -> None:
        ctx = self.context
        if not self.update_metadata_brokers:
            return
        recipients = self.update_metadata_brokers & ctx.live_or_shutting_down_broker_ids
        # Built once for all recipients (10,000 partitions make a big body); only the broker epoch differs.
        topic_states = update_metadata_topic_states(self.update_metadata_partitions, ctx.topic_ids)
        live_brokers = update_metadata_live_brokers(ctx.listed_brokers())
        for broker_id in sorted(recipients):
            body = _update_metadata_request(
                self.controller_id, controller_epoch, ctx.broker_epoch(broker_id), topic_states, live_brokers
            )
            self.channel.send(
                broker_id,
                UPDATE_METADATA,
                UPDATE_METADATA_VERSION,
                body,
                self._update_metadata_response,
            )

    def _send_stop_replica(self, controller_epoch: int) -> None:
        ctx = self.context
        live = ctx.live_or_shutting_down_broker_ids
        for broker_id, partitions in sorted(self.stop_replica.items()):
            if broker_id not in live:
                continue
            for delete in (False, True):
                tps = sorted(tp for tp, flag in partitions.items() if flag == delete)
                if not tps:
                    continue
                body = stop_replica_body(
                    self.controller_id, controller_epoch, ctx.broker_epoch(broker_id), delete, tps
                )
                callback = (
                    self._make_stop_replica_callback(tps) if delete else self._stop_replica_response
                )
                self.channel.send(broker_id, STOP_REPLICA, STOP_REPLICA_VERSION, body, callback)

    def _leader_and_isr_response(self, broker_id: int, response: Any) -> None:
        error = _error_code(response)
        if error != ErrorCode.NONE:
            log.warning("LeaderAndIsr to broker %d failed: %s", broker_id, _error_name(error))
        partition_errors = leader_and_isr_partition_errors(response, self.context.topic_ids)
        by_code: dict[int, list[TopicPartitionTuple]] = {}
        for tp, code in partition_errors.items():
            if code != ErrorCode.NONE:
                by_code.setdefault(code, []).append(tp)
        for code, tps in sorted(by_code.items()):
            # A resent state the broker already holds (same leader epoch) is refused with
            # STALE_CONTROLLER_EPOCH; that is routine (Kafka logs it in its state-change log).
            # One line per error, not per partition: a failover resends thousands.
            (log.info if code == ErrorCode.STALE_CONTROLLER_EPOCH else log.warning)(
                "LeaderAndIsr to broker %d: %s for %d partitions: %s%s",
                broker_id,
                _error_name(code),
                len(tps),
                ", ".join(f"{topic}-{index}" for topic, index in tps[:_LOGGED_PARTITIONS]),
                ", …" if len(tps) > _LOGGED_PARTITIONS else "",
            )
        if self.on_leader_and_isr_response is not None:
            self.on_leader_and_isr_response(broker_id, partition_errors)

    def _update_metadata_response(self, broker_id: int, response: Any) -> None:
        error = _error_code(response)
        if error != ErrorCode.NONE:
            log.warning("UpdateMetadata to broker %d failed: %s", broker_id, _error_name(error))

    def _stop_replica_response(self, broker_id: int, response: Any) -> None:
        error = _error_code(response)
        if error != ErrorCode.NONE:
            log.warning("StopReplica to broker %d failed: %s", broker_id, _error_name(error))

    def _make_stop_replica_callback(self, requested: list[TopicPartitionTuple]) -> ResponseCallback:
        def callback(broker_id: int, response: Any) -> None:
            error = _as_error(_error_code(response))
            partition_errors: dict[TopicPartitionTuple, ErrorCode] = {}
            for item in _get(response, "partition_errors", []) or []:
                tp = (_get(item, "topic_name", ""), _get(item, "partition_index", -1))
                partition_errors[tp] = _as_error(_get(item, "error_code", 0))
            if error != ErrorCode.NONE:
                for tp in requested:
                    partition_errors.setdefault(tp, error)
                log.warning("StopReplica (delete) to broker %d failed: %s", broker_id, error.name)
            if self.on_stop_replica_response is not None:
                self.on_stop_replica_response(broker_id, error, partition_errors)

        return callback


def _get(obj: Any, name: str, default: Any) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _error_code(response: Any) -> int:
    return int(_get(response, "error_code", 0) or 0)


def _as_error(code: int) -> ErrorCode:
    try:
        return ErrorCode(code)
    except ValueError:
        return ErrorCode.UNKNOWN_SERVER_ERROR


def _error_name(code: int) -> str:
    return f"{_as_error(code).name} ({code})"
