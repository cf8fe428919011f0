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
  ``transaction.remove.expired.transaction.cleanup.interval.ms``.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from twisted.internet import defer

from mafka.errors import ErrorCode
from mafka.topics import TRANSACTION_STATE_TOPIC
from mafka.wire.batch import iter_batches
from mafka.wire.records import Record, build_batch, decode_batch

from .group_service import ReactorTimers
from .txn_markers import TxnMarkerChannel

__all__ = ["TransactionService", "TransactionStateLog", "read_state_records"]

log = logging.getLogger("mafka.broker.transactions")

#: Produce version whose validation rules the coordinator's own batches pass.
_PRODUCE_VERSION = 7


class TransactionStateLog:
    """Appends coordinator records to ``__transaction_state`` through the replica manager."""

    def __init__(self, broker: Any) -> None:
        self.broker = broker

    def append(self, partition: int, records: list[tuple[bytes, bytes | None]], done: Any) -> None:
        """Writes ``records`` to ``partition`` with acks=all; ``done(error_code)`` once replicated or failed."""
        now = int(time.time() * 1000)
        batch = build_batch([Record(offset=i, timestamp=now, key=k, value=v) for i, (k, v) in enumerate(records)])
        rm = self.broker.replica_manager
        try:
            d = rm.append_records(
                [(TRANSACTION_STATE_TOPIC, partition, batch)],
                acks=-1,
                timeout_ms=self.broker.config.request_timeout_ms,
                produce_version=_PRODUCE_VERSION,
                max_message_bytes=self.broker.max_message_bytes,
            )
        except Exception as exc:  # noqa: BLE001 - reported to the coordinator as an error code
            log.warning("append to %s-%d failed: %s", TRANSACTION_STATE_TOPIC, partition, exc)
            done(ErrorCode.UNKNOWN_SERVER_ERROR)
            return

        def appended(results: dict) -> None:
            done(results[(TRANSACTION_STATE_TOPIC, partition)].error)

        def failed(failure: Any) -> None:
            log.warning("append to %s-%d failed: %s", TRANSACTION_STATE_TOPIC, partition, failure.getErrorMessage())
            done(ErrorCode.UNKNOWN_SERVER_ERROR)

        d.addCallbacks(appended, failed)


def read_state_records(log_: Any, buffer_bytes: int) -> list[tuple[bytes, bytes | None]]:
    """Every ``(key, value)`` of a ``__transaction_state`` log from its start to its end, in log order.

    Blocking (it reads segment files): run it in a worker thread.  Control
    batches and keyless records are skipped.
    """
    out: list[tuple[bytes, bytes | None]] = []
    offset = log_.log_start_offset
    while offset < log_.next_offset:
        data = log_.read(offset, buffer_bytes).read()
        next_offset = offset
        for pos, header in iter_batches(data):
            if not header.is_control:
                for record in decode_batch(data, pos).records:
                    if record.offset >= offset and record.key is not None:
                        out.append((bytes(record.key), None if record.value is None else bytes(record.value)))
            next_offset = header.next_offset
        if next_offset <= offset:
            break  # nothing whole could be read (a read returns at least one batch, so: the end)
        offset = next_offset
    return out


class _ProducerIds:
    """:class:`~mafka.transaction.coordinator.ProducerIdGenerator` over the broker's ZooKeeper-backed manager."""

    def __init__(self, broker: Any) -> None:
        self.broker = broker

    def generate(self, done: Any) -> None:
        def failed(failure: Any) -> None:
            log.warning("claiming a producer id block failed: %s", failure.getErrorMessage())
            done(ErrorCode.COORDINATOR_NOT_AVAILABLE, -1)

        self.broker.producer_ids.generate().addCallbacks(lambda pid: done(ErrorCode.NONE, pid), failed)


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
            from mafka.client.connection import BrokerConnection

            return BrokerConnection(broker.reactor, host, port, f"broker-{broker.broker_id}-txn-markers")

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
        )
        self._creating: defer.Deferred | None = None

    def startup(self) -> None:
        """Starts the timed-out abort and the transactional-id expiration timers."""
        self.coordinator.startup()

    # ------------------------------------------------------------------ leadership

    def on_leadership(self, topic: str, index: int, is_leader: bool, leader_epoch: int | None) -> None:
        """The replica manager applied a role change for ``topic``-``index``."""
        if topic != TRANSACTION_STATE_TOPIC:
            return
        if not is_leader:
            self.coordinator.on_resigned(index, leader_epoch)
            return
        assert leader_epoch is not None
        if not self.coordinator.on_elected(index, leader_epoch):
            return
        partition = self.broker.replica_manager.partitions.get((topic, index))
        if partition is None:
            self.coordinator.fail_load(index, leader_epoch)
            return
        started = time.monotonic()
        d = self.broker.run_blocking(
            read_state_records, partition.log, self.broker.config.transaction_state_log_load_buffer_size
        )

        def loaded(records: list) -> None:
            if self.coordinator.complete_load(index, leader_epoch, records):
                log.info("loaded %d records of %s-%d in %.0f ms (coordinator epoch %d)", len(records), topic, index,
                         (time.monotonic() - started) * 1000, leader_epoch)

        def failed(failure: Any) -> None:
            log.error("loading %s-%d failed: %s", topic, index, failure.getErrorMessage())
            self.coordinator.fail_load(index, leader_epoch)

        d.addCallbacks(loaded, failed)

    # ------------------------------------------------------------------ the topic

    def ensure_transaction_topic(self) -> None:
        """Create ``__transaction_state`` unless it exists or is being created (fire and forget)."""
        if self.broker.metadata_cache.has_topic(TRANSACTION_STATE_TOPIC) or self._creating is not None:
            return
        from mafka.controller.admin import create_topic_in_zookeeper
        from mafka.controller.assignment import internal_topic_replication_factor

        config = self.broker.config
        racks = {b: info.rack for b, info in self.broker.metadata_cache.brokers.items()}
        rf = internal_topic_replication_factor(config.transaction_state_log_replication_factor, len(racks))
        configs = {
            "unclean.leader.election.enable": "false",
            "compression.type": "uncompressed",
            "cleanup.policy": "compact",
            # Capped like the replication factor: a one-broker development cluster still works.
            "min.insync.replicas": str(min(config.transaction_state_log_min_isr, rf)),
            "segment.bytes": str(config.transaction_state_log_segment_bytes),
        }
        log.info("creating %s: %d partitions, replication factor %d", TRANSACTION_STATE_TOPIC,
                 config.transaction_state_log_num_partitions, rf)
        d = create_topic_in_zookeeper(
            self.broker.zk, TRANSACTION_STATE_TOPIC, config.transaction_state_log_num_partitions, rf, racks, configs
        )
        self._creating = d

        def finished(_: Any) -> None:
            self._creating = None

        d.addErrback(lambda f: log.info("creating %s: %s", TRANSACTION_STATE_TOPIC, f.getErrorMessage()))
        d.addBoth(finished)

    def shutdown(self) -> None:
        self.coordinator.shutdown()
        self.channel.shutdown()
