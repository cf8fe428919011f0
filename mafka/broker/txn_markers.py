"""Delivering transaction markers: the coordinator's WriteTxnMarkers to partition leaders.

Kafka 2.8's ``TransactionMarkerChannelManager`` and
``TransactionMarkerRequestCompletionHandler``, reduced to what they decide:

* a transaction's result (COMMIT or ABORT) is delivered to the **leader** of
  every partition of the transaction, as the metadata cache names it now;
  partitions are grouped per leader into one WriteTxnMarkers request;
* a partition whose topic is gone from the metadata is dropped ("likely
  deleted already and hence can be skipped"); one without a live leader is
  retried after ``retry_backoff_s``;
* per partition answer: NONE → delivered; UNKNOWN_TOPIC_OR_PARTITION,
  NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS(_AFTER_APPEND), REQUEST_TIMED_OUT,
  KAFKA_STORAGE_ERROR and any other error → retried (leaders re-resolved);
  UNSUPPORTED_FOR_MESSAGE_FORMAT → skipped, as Kafka;
  INVALID_PRODUCER_EPOCH / TRANSACTION_COORDINATOR_FENCED → the whole
  delivery is abandoned (a newer coordinator or producer epoch owns the
  transaction now), and ``on_complete`` is never called;
* a failed request (connection lost, timeout) retries its partitions;
* once every partition is delivered ``on_complete()`` runs; the coordinator
  then writes CompleteCommit / CompleteAbort.

Appending the same marker twice is harmless (a marker for a producer with no
open transaction only closes nothing), which is why blind retries are safe.
``is_current()`` is asked before every retry: a coordinator that lost its
``__transaction_state`` partition stops delivering, the next one re-sends
the markers of every PrepareCommit / PrepareAbort it loads.

Connections (one per destination broker, over the inter-broker listener)
come from an injected factory; a connection whose request failed is closed
and made again on the next send, so a restarted broker is found at its new
endpoint.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from twisted.internet import defer

from mafka.errors import ErrorCode
from mafka.topics import TopicPartitionTuple

__all__ = ["WRITE_TXN_MARKERS", "TxnMarkerChannel"]

log = logging.getLogger("mafka.broker.txn_markers")

WRITE_TXN_MARKERS = 27
#: Kafka 2.8 sends v1 (flexible) to brokers that support it; all Mafka brokers do.
WRITE_TXN_MARKERS_VERSION = 1

_SKIP = frozenset({ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT})
_ABANDON = frozenset({ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.TRANSACTION_COORDINATOR_FENCED})


class MarkerConnection(Protocol):
    """A connection to one broker, as the ``connection_factory`` makes it
    (:class:`mafka.interbroker.connection.InterBrokerConnection`)."""

    def request(self, api_key: int, version: int, body: Any) -> defer.Deferred[Any]: ...

    def close(self) -> None: ...


@dataclass(eq=False)
class _Delivery:
    """One transaction's markers still to be delivered."""

    transactional_id: str
    coordinator_epoch: int
    producer_id: int
    producer_epoch: int
    commit: bool
    remaining: set[TopicPartitionTuple]
    on_complete: Callable[[], None]
    is_current: Callable[[], bool]
    in_flight: set[TopicPartitionTuple] = field(default_factory=set)
    retry_call: Any = None
    done: bool = False


class TxnMarkerChannel:
    """Sends transaction markers to partition leaders and retries until they are written.

    Args:
        reactor: ``IReactorTime`` (retry backoff, request timeouts).
        leader_of: ``(topic, partition) -> broker id``, −1 when there is no
            leader now, ``None`` when the metadata does not know the partition.
        endpoint_of: ``broker id -> (host, port)`` on the inter-broker
            listener, ``None`` if unknown.
        connection_factory: ``(broker_id, host, port) -> connection`` with
            ``request(api_key, version, body) -> Deferred`` and ``close()``.
        request_timeout_s: a request not answered within this is retried.
        retry_backoff_s: delay before a retry.
    """

    def __init__(
        self,
        reactor: Any,
        leader_of: Callable[[str, int], int | None],
        endpoint_of: Callable[[int], tuple[str, int] | None],
        connection_factory: Callable[[int, str, int], MarkerConnection],
        *,
        request_timeout_s: float = 30.0,
        retry_backoff_s: float = 0.1,
    ) -> None:
        self.reactor = reactor
        self.leader_of = leader_of
        self.endpoint_of = endpoint_of
        self.connection_factory = connection_factory
        self.request_timeout_s = request_timeout_s
        self.retry_backoff_s = retry_backoff_s
        self._connections: dict[int, MarkerConnection] = {}
        self._deliveries: set[_Delivery] = set()
        self._closed = False
        #: markers partition leaders wrote (COMMIT and ABORT), for the metrics endpoint
        self.markers_written = {True: 0, False: 0}

    @property
    def pending(self) -> int:
        """Transactions whose markers are still being delivered."""
        return len(self._deliveries)

    def send(
        self,
        *,
        transactional_id: str,
        coordinator_epoch: int,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        partitions: Iterable[TopicPartitionTuple],
        on_complete: Callable[[], None],
        is_current: Callable[[], bool] = lambda: True,
    ) -> None:
        """Delivers the markers of one transaction; ``on_complete()`` once all are written."""
        delivery = _Delivery(
            transactional_id, coordinator_epoch, producer_id, producer_epoch, commit,
            set(partitions), on_complete, is_current,
        )
        self._deliveries.add(delivery)
        self._dispatch(delivery)

    def shutdown(self) -> None:
        """Abandons every delivery (the next coordinator re-sends them) and closes the connections."""
        self._closed = True
        for delivery in list(self._deliveries):
            self._abandon(delivery, "shutting down")
        for conn in self._connections.values():
            conn.close()
        self._connections.clear()

    # ------------------------------------------------------------------ sending

    def _dispatch(self, delivery: _Delivery) -> None:
        if delivery.done:
            return
        if self._closed or not delivery.is_current():
            self._abandon(delivery, "the coordinator no longer owns the transaction")
            return
        by_leader: dict[int, list[TopicPartitionTuple]] = {}
        waiting = False
        for tp in sorted(delivery.remaining - delivery.in_flight):
            leader = self.leader_of(*tp)
            if leader is None:
                log.info(
                    "dropping the %s marker of %s for %s-%d: the partition is gone from the metadata",
                    _result(delivery), delivery.transactional_id, *tp,
                )
                delivery.remaining.discard(tp)
            elif leader < 0 or self.endpoint_of(leader) is None:
                waiting = True
            else:
                by_leader.setdefault(leader, []).append(tp)
        for leader, tps in by_leader.items():
            self._send_to(leader, delivery, tps)
        if not delivery.remaining:
            self._complete(delivery)
        elif waiting:
            self._retry_later(delivery)

    def _send_to(self, broker_id: int, delivery: _Delivery, tps: list[TopicPartitionTuple]) -> None:
        conn = self._connection(broker_id)
        if conn is None:
            self._retry_later(delivery)
            return
        topics: dict[str, list[int]] = {}
        for topic, index in tps:
            topics.setdefault(topic, []).append(index)
        body = {
            "markers": [
                {
                    "producer_id": delivery.producer_id,
                    "producer_epoch": delivery.producer_epoch,
                    "transaction_result": delivery.commit,
                    "topics": [{"name": t, "partition_indexes": ps} for t, ps in sorted(topics.items())],
                    "coordinator_epoch": delivery.coordinator_epoch,
                }
            ]
        }
        delivery.in_flight.update(tps)
        d = defer.maybeDeferred(conn.request, WRITE_TXN_MARKERS, WRITE_TXN_MARKERS_VERSION, body)
        d.addTimeout(self.request_timeout_s, self.reactor)
        d.addCallbacks(
            self._answered, self._failed,
            callbackArgs=(broker_id, delivery, tps), errbackArgs=(broker_id, conn, delivery, tps),
        )
        d.addErrback(self._crashed, delivery, tps)

    def _connection(self, broker_id: int) -> MarkerConnection | None:
        conn = self._connections.get(broker_id)
        if conn is None:
            endpoint = self.endpoint_of(broker_id)
            if endpoint is None:
                return None
            conn = self._connections[broker_id] = self.connection_factory(broker_id, *endpoint)
        return conn

    # ------------------------------------------------------------------ answers

    def _answered(self, response: Any, broker_id: int, delivery: _Delivery, tps: list[TopicPartitionTuple]) -> None:
        delivery.in_flight.difference_update(tps)
        if delivery.done:
            return
        errors: dict[TopicPartitionTuple, ErrorCode] = {}
        for marker in response.markers:
            if marker.producer_id != delivery.producer_id:
                continue
            for topic in marker.topics:
                for p in topic.partitions:
                    errors[(topic.name, p.partition_index)] = ErrorCode(p.error_code)
        retry = False
        for tp in tps:
            error = errors.get(tp, ErrorCode.UNKNOWN_SERVER_ERROR)
            if error == ErrorCode.NONE:
                delivery.remaining.discard(tp)
                self.markers_written[delivery.commit] += 1
            elif error in _SKIP:
                log.warning("skipping the marker for %s-%d: %s", *tp, error.name)
                delivery.remaining.discard(tp)
            elif error in _ABANDON:
                self._abandon(delivery, f"broker {broker_id} answered {error.name} for {tp[0]}-{tp[1]}")
                return
            else:
                log.debug("marker for %s-%d at broker %d: %s; retrying", tp[0], tp[1], broker_id, error.name)
                retry = True
        if not delivery.remaining:
            self._complete(delivery)
        elif retry or delivery.remaining - delivery.in_flight:
            self._retry_later(delivery)

    def _failed(self, failure: Any, broker_id: int, conn: MarkerConnection, delivery: _Delivery, tps: list[TopicPartitionTuple]) -> None:
        delivery.in_flight.difference_update(tps)
        log.info(
            "WriteTxnMarkers to broker %d failed (%s); retrying", broker_id, failure.getErrorMessage()
        )
        if self._connections.get(broker_id) is conn:
            del self._connections[broker_id]
            conn.close()
        if not delivery.done:
            self._retry_later(delivery)

    def _crashed(self, failure: Any, delivery: _Delivery, tps: list[TopicPartitionTuple]) -> None:
        """Handling an answer raised (e.g. an error code this broker does not know): log it and
        retry, never leave the delivery waiting for an answer that was already consumed."""
        log.error("handling the WriteTxnMarkers answer for %s failed; retrying",
                  delivery.transactional_id, exc_info=(failure.type, failure.value, failure.getTracebackObject()))
        delivery.in_flight.difference_update(tps)
        if not delivery.done:
            self._retry_later(delivery)

    def _retry_later(self, delivery: _Delivery) -> None:
        if delivery.retry_call is not None or delivery.done or self._closed:
            return

        def fire() -> None:
            delivery.retry_call = None
            self._dispatch(delivery)

        delivery.retry_call = self.reactor.callLater(self.retry_backoff_s, fire)

    # ------------------------------------------------------------------ endings

    def _complete(self, delivery: _Delivery) -> None:
        if delivery.done or delivery.in_flight:
            return
        self._finish(delivery)
        try:
            delivery.on_complete()
        except Exception:
            log.exception("completing transaction %s failed", delivery.transactional_id)

    def _abandon(self, delivery: _Delivery, why: str) -> None:
        if delivery.done:
            return
        log.info("stopped delivering the %s markers of %s: %s", _result(delivery), delivery.transactional_id, why)
        self._finish(delivery)

    def _finish(self, delivery: _Delivery) -> None:
        delivery.done = True
        if delivery.retry_call is not None and delivery.retry_call.active():
            delivery.retry_call.cancel()
        delivery.retry_call = None
        self._deliveries.discard(delivery)


def _result(delivery: _Delivery) -> str:
    return "COMMIT" if delivery.commit else "ABORT"
