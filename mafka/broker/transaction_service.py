"""The transaction coordinator's edge on a broker: ``__transaction_state`` I/O, markers, leadership.

:class:`~mafka.transaction.coordinator.TransactionCoordinator` is plain
Python; this module gives it what a broker has, as
:mod:`mafka.broker.group_service` does for the group coordinator:

* a state log (:class:`TransactionStateLog`) that wraps ``(key, value)``
  records in one uncompressed RecordBatch v2 and appends it to
  ``__transaction_state`` through the replica manager with acks=all within
  ``request.timeout.ms`` (Kafka's ``TransactionStateManager.appendTransactionToLog``);
* producer ids from the broker's :class:`~mafka.broker.producer_ids.ProducerIdManager`;
* markers delivered to partition leaders by a :class:`~mafka.broker.txn_markers.TxnMarkerChannel`
  over the inter-broker listener;
* leadership: when this broker becomes leader of a ``__transaction_state``
  partition, the partition is read in a worker thread (never on the
  reactor) and replayed on the reactor, with the partition's leader epoch as
  the coordinator epoch; when it becomes follower its transactions are unloaded;
* the topic itself, created on first use (FindCoordinator with key type 1):
  ``transaction.state.log.num.partitions`` partitions,
  ``transaction.state.log.replication.factor`` capped at the live brokers,
  and Kafka's ``transactionTopicConfigs``: compacted, uncompressed,
  ``min.insync.replicas`` = ``transaction.state.log.min.isr`` (capped at the
  replication factor, so a one-broker cluster works),
  ``transaction.state.log.segment.bytes``, unclean election disabled;
* timers: timed-out transactions are aborted every
  ``transaction.abort.timed.out.transaction.cleanup.interval.ms``, expired
  transactional ids removed every
  ``transaction.remove.expired.transaction.cleanup.interval.ms`` — supervised
  passes of the broker's :class:`~mafka.background.BackgroundPasses`
  (``transaction-abort``, ``transactionalId-expiration``);
* the stall guard the group service has (:class:`~mafka.broker.internal_topics.StallGuard`):
  after a freeze longer than the ZooKeeper session (seen by the broker's
  100 ms :meth:`TransactionService.tick`, by :meth:`TransactionService.checked_coordinator`
  — what the request handlers use — and before each background pass) every
  ``__transaction_state`` partition is resigned until the controller confirms
  this broker still leads it, so no request is answered, and no timed-out
  transaction aborted, from transaction state that another coordinator may
  have moved on since.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from mafka.errors import ErrorCode
from mafka.topics import TRANSACTION_STATE_TOPIC
from mafka.wire.records import Record, build_batch

from .internal_topics import (
    InternalTopic,
    ReactorTimers,
    StallGuard,
    append_coordinator_batch,
    load_on_leadership,
    scan_log,
)
from .txn_markers import TxnMarkerChannel

__all__ = ["TransactionService", "TransactionStateLog", "read_state_records"]

log = logging.getLogger("mafka.broker.transactions")

class TransactionStateLog:
    """Appends coordinator records to ``__transaction_state`` through the replica manager."""

    def __init__(self, broker: Any) -> None:
        self.broker = broker

    def append(self, partition: int, records: list[tuple[bytes, bytes | None]], done: Any) -> None:
        """Writes ``records`` to ``partition`` with acks=all; ``done(error_code)`` once replicated or failed."""
        now = int(time.time() * 1000)
        batch = build_batch([Record(offset=i, timestamp=now, key=k, value=v) for i, (k, v) in enumerate(records)])
        append_coordinator_batch(
            self.broker, TRANSACTION_STATE_TOPIC, partition, batch, lambda error, _offset: done(error),
            acks=-1, timeout_ms=self.broker.config.request_timeout_ms, logger=log,
        )


def read_state_records(log_: Any, buffer_bytes: int) -> list[tuple[bytes, bytes | None]]:
    """Every ``(key, value)`` of a ``__transaction_state`` log from its start to its end, in log order.

    Blocking (it reads segment files): run it in a worker thread.  Control
    batches and keyless records are skipped.
    """
    return [
        (bytes(record.key), None if record.value is None else bytes(record.value))
        for header, batch, from_offset in scan_log(log_, buffer_bytes) if not header.is_control
        for record in batch.data_records() if record.offset >= from_offset and record.key is not None
    ]


class _ProducerIds:
    """:class:`~mafka.transaction.coordinator.ProducerIdGenerator` over the broker's ZooKeeper-backed manager."""

    def __init__(self, broker: Any) -> None:
        self.broker = broker

    def generate(self, done: Any) -> None:
        def failed(failure: Any) -> None:
            log.warning("claiming a producer id block failed: %s", failure.getErrorMessage())
            done(ErrorCode.COORDINATOR_NOT_AVAILABLE, -1)

        def crashed(failure: Any) -> None:
            # ``done`` itself raised (the coordinator's continuation): not an unhandled Deferred error
            log.error("handling a new producer id failed", exc_info=(failure.type, failure.value,
                                                                     failure.getTracebackObject()))

        d = self.broker.producer_ids.generate()
        d.addCallbacks(lambda pid: done(ErrorCode.NONE, pid), failed)
        d.addErrback(crashed)


class _MarkerSink:
    """:class:`~mafka.transaction.markers.TxnMarkerSink` over a :class:`TxnMarkerChannel`."""

    def __init__(self, channel: TxnMarkerChannel, is_current: Any) -> None:
        self.channel = channel
        self.is_current = is_current

    def send_markers(
        self, coordinator_epoch: int, transactional_id: str, producer_id: int, producer_epoch: int,
        result: Any, partitions: set[tuple[str, int]], on_complete: Any,
    ) -> None:
        self.channel.send(
            transactional_id=transactional_id,
            coordinator_epoch=coordinator_epoch,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            commit=bool(result),
            partitions=partitions,
            on_complete=on_complete,
            is_current=lambda: self.is_current(transactional_id, coordinator_epoch),
        )


class TransactionService:
    """Owns the broker's :class:`TransactionCoordinator` and connects it to the broker."""

    def __init__(self, broker: Any) -> None:
        from mafka.transaction.coordinator import TransactionCoordinator
        from mafka.transaction.state_manager import TransactionConfig

        self.broker = broker
        config = broker.config
        cache = broker.metadata_cache
        listener = config.inter_broker_listener

        def leader_of(topic: str, index: int) -> int | None:
            info = cache.partition(topic, index)
            return None if info is None else info.leader

        def connect(broker_id: int, host: str, port: int) -> Any:
            from mafka.interbroker.connection import InterBrokerConnection

            return InterBrokerConnection(
                broker.reactor, host, port, f"broker-{broker.broker_id}-txn-markers",
                security=getattr(broker, "interbroker_security", None),
            )

        self.channel = TxnMarkerChannel(
            broker.reactor, leader_of, lambda b: cache.endpoint(b, listener), connect,
            request_timeout_s=config.request_timeout_ms / 1000,
        )
        self.coordinator: TransactionCoordinator = TransactionCoordinator(
            TransactionConfig(
                transactional_id_expiration_ms=config.transactional_id_expiration_ms,
                transaction_max_timeout_ms=config.transaction_max_timeout_ms,
                transaction_log_num_partitions=config.transaction_state_log_num_partitions,
                abort_timed_out_transactions_interval_ms=config.transaction_abort_timed_out_transaction_cleanup_interval_ms,
                remove_expired_transactional_ids_interval_ms=config.transaction_remove_expired_transaction_cleanup_interval_ms,
            ),
            lambda: int(broker.reactor.seconds() * 1000),
            ReactorTimers(broker.reactor),
            TransactionStateLog(broker),
            _ProducerIds(broker),
            _MarkerSink(self.channel, lambda tid, epoch: self.coordinator.should_send_markers(tid, epoch)),
            periodic=self._periodic if getattr(broker, "background", None) is not None else None,
        )
        self._topic = InternalTopic(broker, TRANSACTION_STATE_TOPIC, log)
        # Stall guard (see :meth:`checked_coordinator`).
        self._stall = StallGuard(broker, self.coordinator, TRANSACTION_STATE_TOPIC, self.on_leadership, log,
                                 "transaction coordinator")

    def startup(self) -> None:
        """Starts the timed-out abort and the transactional-id expiration passes."""
        self.coordinator.startup()

    def _periodic(self, name: str, period_ms: int, fn: Any) -> Any:
        """The coordinator's periodic work as supervised broker passes, each after a stall check."""

        def run() -> None:
            self._stall.check()
            fn()

        return self.broker.background.every(name, period_ms / 1000, run)

    # ------------------------------------------------------------------ stalls

    def tick(self) -> None:
        """Called every 100 ms by the broker: the reactor is running (see :meth:`checked_coordinator`).

        The overdue tick after SIGCONT may run before the requests that queued
        during the freeze are read: it checks for a stall too, so it does not hide the gap.
        """
        self._stall.check()

    def checked_coordinator(self) -> Any:
        """The coordinator, once this broker is known not to be a zombie.

        As :meth:`GroupService.checked_coordinator <mafka.broker.group_service.GroupService.checked_coordinator>`:
        a broker frozen for longer than its ZooKeeper session lost its
        ``__transaction_state`` leaderships, but its memory still holds those
        partitions' transactions; every one is resigned (NOT_COORDINATOR) until
        the broker registered again and the controller's metadata still names it
        leader (or, with its session intact, until twice the session timeout).
        """
        self._stall.check()
        return self.coordinator

    def on_metadata_update(self) -> None:
        """The controller's metadata arrived: partitions resigned after a stall may be taken back."""
        self._stall.on_metadata_update()

    # ------------------------------------------------------------------ leadership

    def on_leadership(self, topic: str, index: int, is_leader: bool, leader_epoch: int | None) -> None:
        """The replica manager applied a role change for ``topic``-``index``."""
        if topic == TRANSACTION_STATE_TOPIC:
            load_on_leadership(self.broker, self.coordinator, topic, index, is_leader, leader_epoch,
                               read_state_records, self.broker.config.transaction_state_log_load_buffer_size, log)

    # ------------------------------------------------------------------ the topic

    def ensure_transaction_topic(self) -> None:
        """Create ``__transaction_state`` unless it exists or is being created (fire and forget)."""
        config = self.broker.config
        self._topic.ensure(
            config.transaction_state_log_num_partitions, config.transaction_state_log_replication_factor,
            lambda rf: {
                "unclean.leader.election.enable": "false",
                "compression.type": "uncompressed",
                "cleanup.policy": "compact",
                # Capped like the replication factor: a one-broker development cluster still works.
                "min.insync.replicas": str(min(config.transaction_state_log_min_isr, rf)),
                "segment.bytes": str(config.transaction_state_log_segment_bytes),
            },
        )

    def shutdown(self) -> None:
        self._stall.shutdown()
        self.coordinator.shutdown()
        self.channel.shutdown()
