"""What the group and transaction coordinators share at the broker's edge.

Both coordinators keep their state in an internal compacted topic
(``__consumer_offsets``, ``__transaction_state``) and need the same four
things from the broker, which this module gives them once:

* :class:`ReactorTimers`: ``reactor.callLater`` in milliseconds;
* :func:`append_coordinator_batch`: one RecordBatch appended through the
  replica manager, with the outcome reported as ``done(error_code, base_offset)``
  on the reactor — an exception or a failed Deferred becomes
  UNKNOWN_SERVER_ERROR, never an exception in the coordinator;
* :func:`scan_log`: every batch of a log from its start to its end, for loads
  (blocking: worker threads only);
* :class:`InternalTopic`: the topic created in ZooKeeper on first use, one
  creation at a time, and :func:`load_on_leadership`: the partition read in a
  worker thread when this broker becomes its leader and replayed on the
  reactor (Kafka's ``scheduleLoadGroupAndOffsets`` /
  ``loadTransactionsForTxnTopicPartition``);
* :class:`StallGuard`: no answers from state a freeze made stale (a broker
  that did not run for longer than its ZooKeeper session resigns until the
  controller confirms it still leads).

The coordinators' side is the small protocol each one already has:
``on_elected(index, epoch) -> bool``, ``complete_load(index, epoch, records)
-> bool``, ``fail_load(index, epoch)`` and ``on_resigned(index, epoch)``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

from twisted.internet import defer

from mafka.errors import ErrorCode
from mafka.wire.batch import BatchHeader, iter_batches
from mafka.wire.records import DecodedBatch, decode_batch

__all__ = ["InternalTopic", "ReactorTimers", "StallGuard", "append_coordinator_batch", "load_on_leadership",
           "scan_log"]

#: Produce version whose validation rules the coordinators' own batches pass.
PRODUCE_VERSION = 7


class ReactorTimers:
    """:class:`~mafka.timers.Timers` over a Twisted reactor."""

    def __init__(self, reactor: Any) -> None:
        self.reactor = reactor

    def call_later(self, delay_ms: int, fn: Any) -> Any:
        call = self.reactor.callLater(delay_ms / 1000.0, fn)

        class _Handle:
            @staticmethod
            def cancel() -> None:
                if call.active():
                    call.cancel()

        return _Handle()


def append_coordinator_batch(
    broker: Any,
    topic: str,
    partition: int,
    batch: bytes,
    done: Callable[[ErrorCode, int | None], None],
    *,
    acks: int,
    timeout_ms: int,
    logger: logging.Logger,
    origin: str | None = None,
) -> None:
    """Appends ``batch`` to ``topic``-``partition`` through the replica manager.

    ``done(error_code, base_offset)`` is called exactly once, on the reactor:
    base_offset is the batch's offset when error_code is NONE, else None.
    ``origin`` is passed on to the replica manager (``"coordinator"``: the
    producer sequence of a transactional batch is not checked).  An
    exception raised by ``done`` is logged with its traceback, never left
    in a Deferred (where it would be an unhandled error and the coordinator's
    continuation would silently stop).
    """
    extra = {} if origin is None else {"origin": origin}

    def report(error: ErrorCode, base_offset: int | None) -> None:
        try:
            done(error, base_offset)
        except Exception:
            logger.exception("%s-%d: handling the outcome (%s) of a coordinator append failed",
                             topic, partition, getattr(error, "name", error))
    try:
        d = broker.replica_manager.append_records(
            [(topic, partition, batch)],
            acks=acks,
            timeout_ms=timeout_ms,
            produce_version=PRODUCE_VERSION,
            max_message_bytes=broker.max_message_bytes,
            **extra,
        )
    except Exception as exc:  # noqa: BLE001 - reported to the coordinator as an error code
        logger.warning("append to %s-%d failed: %s", topic, partition, exc)
        report(ErrorCode.UNKNOWN_SERVER_ERROR, None)
        return

    def appended(results: dict) -> None:
        try:
            r = results[(topic, partition)]
            error, base_offset = r.error, (r.base_offset if r.error == ErrorCode.NONE else None)
        except Exception:
            logger.exception("append to %s-%d: unreadable result %r", topic, partition, results)
            error, base_offset = ErrorCode.UNKNOWN_SERVER_ERROR, None
        report(error, base_offset)

    def failed(failure: Any) -> None:
        logger.warning("append to %s-%d failed: %s", topic, partition, failure.getErrorMessage())
        report(ErrorCode.UNKNOWN_SERVER_ERROR, None)

    d.addCallbacks(appended, failed)


def scan_log(log_: Any, buffer_bytes: int) -> Iterator[tuple[BatchHeader, DecodedBatch, int]]:
    """Every batch of ``log_`` from its log start offset to its end, in log order.

    Yields ``(header, decoded batch, from_offset)``: records below
    ``from_offset`` were already yielded (or lie before the log start) and must
    be skipped.  Reads ``buffer_bytes`` at a time; blocking (it reads segment
    files): run it in a worker thread.
    """
    offset = log_.log_start_offset
    while offset < log_.next_offset:
        data = log_.read(offset, buffer_bytes).read()
        next_offset = offset
        for pos, header in iter_batches(data):
            yield header, decode_batch(data, pos), offset
            next_offset = header.next_offset
        if next_offset <= offset:
            break  # nothing whole could be read (KIP-74 returns at least one batch, so: the end)
        offset = next_offset


class InternalTopic:
    """An internal topic created in ZooKeeper on first use, one creation at a time."""

    def __init__(self, broker: Any, name: str, logger: logging.Logger) -> None:
        self.broker = broker
        self.name = name
        self.log = logger
        self._creating: defer.Deferred | None = None

    def ensure(self, partitions: int, replication_factor: int, configs_for: Callable[[int], dict[str, str]]) -> None:
        """Create the topic unless it exists or is being created (fire and forget).

        ``replication_factor`` is the configured one, capped at the live brokers
        (Kafka's rule for internal topics); ``configs_for(rf)`` gives the topic
        configs for the replication factor actually used.
        """
        if self.broker.metadata_cache.has_topic(self.name) or self._creating is not None:
            return
        from mafka.controller.admin import create_topic_in_zookeeper
        from mafka.controller.assignment import internal_topic_replication_factor

        racks = {b: info.rack for b, info in self.broker.metadata_cache.brokers.items()}
        rf = internal_topic_replication_factor(replication_factor, len(racks))
        self.log.info("creating %s: %d partitions, replication factor %d", self.name, partitions, rf)
        d = create_topic_in_zookeeper(self.broker.zk, self.name, partitions, rf, racks, configs_for(rf))
        self._creating = d

        def finished(_: Any) -> None:
            self._creating = None

        d.addErrback(lambda f: self.log.info("creating %s: %s", self.name, f.getErrorMessage()))
        d.addBoth(finished)


def load_on_leadership(
    broker: Any,
    coordinator: Any,
    topic: str,
    index: int,
    is_leader: bool,
    leader_epoch: int | None,
    read: Callable[[Any, int], list],
    buffer_bytes: int,
    logger: logging.Logger,
) -> None:
    """Applies a role change of ``topic``-``index`` to ``coordinator``.

    Follower: the coordinator unloads the partition.  Leader: unless the
    coordinator declines (an older epoch), ``read(log, buffer_bytes)`` runs in
    a worker thread and its records are handed to ``complete_load`` on the
    reactor with the leader epoch as the coordinator epoch; a failed read (or a
    replica that vanished) is ``fail_load``.
    """
    if not is_leader:
        coordinator.on_resigned(index, leader_epoch)
        return
    assert leader_epoch is not None
    if not coordinator.on_elected(index, leader_epoch):
        return
    partition = broker.replica_manager.partitions.get((topic, index))
    if partition is None:
        coordinator.fail_load(index, leader_epoch)
        return
    started = time.monotonic()
    d = broker.run_blocking(read, partition.log, buffer_bytes)

    def loaded(records: list) -> None:
        if coordinator.complete_load(index, leader_epoch, records):
            logger.info("loaded %d records of %s-%d in %.0f ms (leader epoch %d)", len(records), topic, index,
                        (time.monotonic() - started) * 1000, leader_epoch)

    def failed(failure: Any) -> None:
        logger.error("loading %s-%d failed: %s", topic, index, failure.getErrorMessage(),
                     exc_info=(failure.type, failure.value, failure.getTracebackObject()))
        try:
            # The read, or the replay (complete_load raised): the partition must not stay loading.
            coordinator.fail_load(index, leader_epoch)
        except Exception:
            logger.exception("giving up the load of %s-%d failed", topic, index)

    d.addCallback(loaded)
    d.addErrback(failed)


class StallGuard:
    """Resigns a coordinator's partitions after a freeze, until the controller confirms them.

    A process frozen (SIGSTOP, a VM pause) for longer than its ZooKeeper
    session has lost its leaderships to other brokers, but its memory still
    says it coordinates: without this check the first requests read after it
    wakes — before the controller's LeaderAndIsr arrives — would be answered
    from stale state (offsets; transaction states and epochs).  :meth:`check`
    is called by the broker's 100 ms tick and before the coordinator is used:
    a gap since the previous call longer than ``zookeeper.session.timeout.ms``
    is such a freeze, and every partition the coordinator owns or loads is
    resigned (``on_resigned(partition)``: NOT_COORDINATOR) until the broker
    has registered again and the controller's metadata still names it leader
    (:meth:`on_metadata_update`), or, if its session survived, until twice the
    session timeout has passed; a partition confirmed then is loaded again
    through ``reload(topic, index, True, leader_epoch)``.  Kafka 2.8 has no
    such check.

    Args:
        broker: ``reactor``, ``config.zookeeper_session_timeout_ms``,
            ``broker_epoch``, ``broker_id``, ``metadata_cache`` and ``replica_manager``.
        coordinator: ``owned_partitions()``, ``loading_partitions()``, ``on_resigned(partition)``.
        topic: the coordinator's internal topic.
        reload: the service's ``on_leadership``.
        role: what the log says this broker resigns as ("group coordinator").
    """

    def __init__(self, broker: Any, coordinator: Any, topic: str, reload: Callable[[str, int, bool, int | None], None],
                 logger: logging.Logger, role: str) -> None:
        self.broker = broker
        self.coordinator = coordinator
        self.topic = topic
        self.reload = reload
        self.log = logger
        self.role = role
        self._last_tick: float | None = None
        self._suspect: set[int] = set()
        self._stall_broker_epoch: int | None = None
        self._recheck_call: Any = None

    def check(self) -> None:
        """Resigns every partition if the reactor did not run for longer than the
        ZooKeeper session since the last check."""
        reactor = self.broker.reactor
        now = reactor.seconds()
        session_s = self.broker.config.zookeeper_session_timeout_ms / 1000
        if self._last_tick is not None and now - self._last_tick > session_s:
            owned = set(self.coordinator.owned_partitions()) | set(self.coordinator.loading_partitions())
            self.log.warning(
                "the broker did not run for %.1f s (longer than zookeeper.session.timeout.ms): "
                "resigning as %s of %d %s partitions until the controller confirms",
                now - self._last_tick, self.role, len(owned), self.topic,
            )
            for partition in owned:
                self.coordinator.on_resigned(partition)
            self._suspect |= owned
            self._stall_broker_epoch = self.broker.broker_epoch
            if self._recheck_call is not None and self._recheck_call.active():
                self._recheck_call.cancel()
            self._recheck_call = reactor.callLater(2 * session_s, self._recheck, False)
        self._last_tick = now

    def on_metadata_update(self) -> None:
        """The controller's metadata arrived: partitions resigned after a stall may be taken back."""
        if self._suspect:
            self._recheck(True)

    def _recheck(self, require_new_registration: bool) -> None:
        if require_new_registration and self.broker.broker_epoch == self._stall_broker_epoch:
            return  # metadata from before this broker registered again: not evidence
        cache = self.broker.metadata_cache
        for index in sorted(self._suspect):
            info = cache.partition(self.topic, index)
            partition = self.broker.replica_manager.partitions.get((self.topic, index))
            if info is not None and info.leader == self.broker.broker_id and partition is not None and partition.is_leader:
                self.log.info("still leader of %s-%d after the stall: loading it again", self.topic, index)
                self.reload(self.topic, index, True, partition.leader_epoch)
        self._suspect.clear()

    def shutdown(self) -> None:
        if self._recheck_call is not None and self._recheck_call.active():
            self._recheck_call.cancel()
        self._recheck_call = None
