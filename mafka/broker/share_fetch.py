"""Share fetches on a broker (KIP-932): the share-partition leader's half of ShareFetch and ShareAcknowledge.

:class:`ShareFetchService` connects the plain-Python share-partitions
(:class:`~mafka.group.share.partition_manager.SharePartitionManager`) and share
sessions (:class:`~mafka.group.share.sessions.ShareSessionCache`) to the
broker, as Kafka 4.2's ``SharePartitionManager`` and ``DelayedShareFetch`` do:

* **State** goes through the broker's :class:`~mafka.broker.share_persister.SharePersister`
  (:class:`PersisterAdapter`); the group coordinator's share-partition
  initialization is the persister's InitializeShareGroupState
  (:func:`share_initializer`), and a member that leaves or is fenced by the
  coordinator on this broker has its share session removed and its records released.
* **Reads.**  A fetch reads each share-partition's log from its first AVAILABLE
  offset as a Fetch does (up to the high watermark, or the last stable offset
  for ``share.isolation.level`` read_committed), then, in a worker thread, reads
  the batch headers of what it got (never the reactor: that is disk I/O; a read
  in a cold segment is resolved there too and its bytes held in memory), stopping
  past the share-partition's window.  Back on the reactor it acquires records for
  the member (``max_records`` over the whole request) and answers, per partition,
  the acquired ranges and the batches that hold them — one slice of the segment,
  sent with ``sendfile`` as Fetch sends records.  Each share-partition reads at
  most ``min(max_bytes, fetch.max.bytes) / partitions`` bytes (Kafka's uniform
  partition max bytes), whole first batch at least.
* **Long polls.**  A fetch that acquired nothing waits up to ``max_wait_ms``; it is
  tried again when one of its partitions changes (an append, a high-watermark or
  LSO move, a role change: the replica manager's change listeners), when records
  become available (released, lock expired, a member left) or the share-partition
  finished loading, and when a fetch lock it found taken is freed.  A fetch that
  acquired anything answers at once (``min_bytes`` is not waited for: the records
  are locked from that moment, and waiting would only eat into the lock).
* **Leadership.**  A share-partition is dropped when its topic-partition stops being
  led here or its leader epoch moves; the next fetch there loads it again.
* **Disconnects.**  Kafka removes a share session when its connection closes; the
  network edge has no close hook for handlers, so the connections that opened
  sessions are looked at once a second (:meth:`ShareFetchService.sweep_connections`)
  and a closed one's session goes, its member's records released.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from twisted.internet import defer

from mafka.errors import ErrorCode, KafkaError, NotLeaderOrFollowerError
from mafka.group.share.acknowledgements import PartitionAcknowledgement, validate_batches
from mafka.group.share.fetched_records import (
    AbortedTransaction,
    ScannedBatch,
    aborted_ranges,
    fetched_batches,
    records_span,
)
from mafka.group.share.group_types import InitializeRequest
from mafka.group.share.partition_manager import (
    READ_COMMITTED,
    PartitionStatus,
    ShareGroupSettings,
    SharePartitionManager,
)
from mafka.group.share.partition_state import AcknowledgementBatch, AcquiredRecords
from mafka.group.share.sessions import ShareSessionCache, TopicIdPartition
from mafka.group.share.state_records import SharePartitionKey
from mafka.log.reads import ColdRead
from mafka.log.segment import FileRegion
from mafka.share.state_types import InitializeData, PartitionResult, ReadResult, WriteData
from mafka.wire.batch import BATCH_HEADER_SIZE, BatchHeader
from mafka.wire.errors import CorruptRecordBatch

from .group_configs import share_settings_overrides
from .internal_topics import ReactorTimers

__all__ = ["PartitionFetch", "PersisterAdapter", "ShareFetchService", "scan_batches", "share_initializer"]

log = logging.getLogger("mafka.broker.share_fetch")

#: Kafka's default ``fetch.max.bytes``, for brokers without a config (unit tests)
_DEFAULT_FETCH_MAX_BYTES = 57671680
#: how much of a segment one header read takes in
_SCAN_CHUNK = 64 * 1024
#: how often closed connections' share sessions are looked for
_SWEEP_S = 1.0


@dataclass(frozen=True)
class PartitionFetch:
    """One share-partition's part of a ShareFetch answer: an error, or the acquired ranges and
    the records holding them (a file region, bytes, or ``b""``)."""

    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    records: FileRegion | bytes = b""
    acquired: tuple[AcquiredRecords, ...] = ()


# --------------------------------------------------------------------------- the persister seam


class PersisterAdapter:
    """:class:`~mafka.group.share.partition_manager.StatePersister` over the broker's
    Deferred-returning :class:`~mafka.broker.share_persister.SharePersister` (one share-partition a call)."""

    def __init__(self, persister: Any) -> None:
        self.persister = persister

    def read(self, key: SharePartitionKey, leader_epoch: int, done: Callable[[ReadResult], None]) -> None:
        d = self.persister.read(key.group_id, {key.topic_id: {key.partition: leader_epoch}})
        _deliver(d, key, done, ReadResult)

    def write(self, key: SharePartitionKey, data: WriteData, done: Callable[[PartitionResult], None]) -> None:
        d = self.persister.write(key.group_id, {key.topic_id: {key.partition: data}})
        _deliver(d, key, done, PartitionResult)


def _deliver(d: defer.Deferred, key: SharePartitionKey, done: Callable[[Any], None], failed: Any) -> None:
    def got(results: Mapping[bytes, Mapping[int, Any]]) -> None:
        result = results.get(key.topic_id, {}).get(key.partition)
        done(result if result is not None else failed(ErrorCode.UNKNOWN_SERVER_ERROR, "no result"))

    def crashed(failure: Any) -> None:
        log.error("share group state call for %s failed: %s", key, failure.getErrorMessage())
        done(failed(ErrorCode.UNKNOWN_SERVER_ERROR, failure.getErrorMessage()))

    d.addCallbacks(got, crashed)


def share_initializer(persister: Any) -> Callable[[InitializeRequest, Callable[[bool], None]], None]:
    """The group coordinator's :data:`~mafka.group.share.manager.Initializer`: InitializeShareGroupState
    through the persister; ``done(True)`` when every share-partition was initialized."""

    def initialize(request: InitializeRequest, done: Callable[[bool], None]) -> None:
        topics = {
            topic_id: {p: InitializeData(request.state_epoch, start) for p, start in parts.items()}
            for topic_id, parts in request.partitions.items()
        }
        d = persister.initialize(request.group_id, topics)

        def answered(results: Mapping[bytes, Mapping[int, PartitionResult]]) -> None:
            failed = [(t.hex(), p, r.error.name) for t, ps in results.items() for p, r in ps.items()
                      if r.error != ErrorCode.NONE]
            if failed:
                log.info("Initializing share partitions of %s failed: %s", request.group_id, failed)
            done(not failed)

        def crashed(failure: Any) -> None:
            log.error("Initializing share partitions of %s failed: %s", request.group_id, failure.getErrorMessage())
            done(False)

        d.addCallbacks(answered, crashed)

    return initialize


# --------------------------------------------------------------------------- reading batch headers


@dataclass(frozen=True)
class _Scan:
    """What the worker found in one read: whole batches, where their bytes are, aborted transactions."""

    batches: list[ScannedBatch]
    source: FileRegion | bytes | None
    aborted: list[AbortedTransaction]


def scan_batches(region: FileRegion | bytes, limit_offset: int) -> list[ScannedBatch]:
    """The whole batches at the start of *region* (a file region, read by its headers only, or
    bytes), stopping after the first batch that reaches *limit_offset*.  A batch the read cut
    short, or a corrupt header, ends the scan.  Blocking for a file region."""
    out: list[ScannedBatch] = []
    total = len(region)
    pos = 0
    buf: bytes | memoryview = b""
    buf_at = 0
    while pos + BATCH_HEADER_SIZE <= total:
        if isinstance(region, FileRegion):
            if pos < buf_at or pos + BATCH_HEADER_SIZE > buf_at + len(buf):
                buf = os.pread(region.fd, min(_SCAN_CHUNK, total - pos), region.position + pos)
                buf_at = pos
            view, at = buf, pos - buf_at
        else:
            view, at = region, pos
        try:
            header = BatchHeader(view, at)
        except CorruptRecordBatch:
            break
        if header.magic != 2 or header.batch_length <= 0 or pos + header.size > total:
            break
        out.append(ScannedBatch(header.base_offset, header.last_offset, pos, header.size, header.is_control,
                                header.is_transactional, header.producer_id))
        pos += header.size
        if header.last_offset >= limit_offset:
            break
    return out


def _scan_read(data: Any, limit_offset: int) -> _Scan:
    """One share-partition's read, in a worker thread: resolve a cold read, hold cold bytes in
    memory (they are sent from there, not from the slow device on the reactor), scan headers."""
    region = data.region
    aborted_txns = data.aborted_transactions
    if isinstance(region, ColdRead):
        info = region.resolve()
        region, aborted_txns = info.region, info.aborted_transactions
    if region is None or len(region) == 0:
        return _Scan([], None, [])
    source: FileRegion | bytes = region
    if getattr(region, "cold", False):
        source = region.read()
    aborted = [AbortedTransaction(t.producer_id, t.first_offset, t.last_offset) for t in aborted_txns or ()]
    return _Scan(scan_batches(source, limit_offset), source, aborted)


def _scan_all(reads: list[tuple[Any, int]]) -> list[_Scan | None]:
    out: list[_Scan | None] = []
    for data, limit in reads:
        try:
            out.append(_scan_read(data, limit))
        except OSError as exc:  # the segment went away under the read (a deleted log)
            log.info("reading batch headers for a share fetch failed: %s", exc)
            out.append(None)
    return out


def _slice(source: FileRegion | bytes, position: int, length: int) -> FileRegion | bytes:
    if isinstance(source, FileRegion):
        return dataclasses.replace(source, position=source.position + position, length=length)
    return bytes(source[position:position + length])


# --------------------------------------------------------------------------- one waiting fetch


@dataclass(eq=False)
class _Fetch:
    group_id: str
    member_id: str
    partitions: list[TopicIdPartition]
    max_wait_ms: int
    max_bytes: int
    max_records: int
    deferred: defer.Deferred
    timer: Any = None
    attempting: bool = False
    scheduled: bool = False
    again: bool = False
    expired: bool = False
    done: bool = False
    parked: bool = False
    #: share-partitions found busy (another fetch held the lock) by the last attempt
    locked_out: set[SharePartitionKey] = field(default_factory=set)
    #: share-partitions whose load failed: answered with the error
    load_errors: dict[TopicIdPartition, tuple[ErrorCode, str | None]] = field(default_factory=dict)


@dataclass(frozen=True)
class _Read:
    """One share-partition read by an attempt, its fetch lock held until :meth:`SharePartitionManager.end_fetch`."""

    tp: TopicIdPartition
    key: SharePartitionKey
    fetch_offset: int
    #: the log read (a FetchDataInfo: a file region or a cold read, aborted transactions)
    data: Any
    #: headers are read up to the batch reaching this offset (the share-partition's window end)
    limit_offset: int
    isolation_level: int
    last_stable_offset: int


# --------------------------------------------------------------------------- the service


class ShareFetchService:
    """Share sessions, share-partitions and waiting share fetches of one broker (see the module docstring).

    Args:
        broker: ``reactor``, ``config``, ``metadata_cache``, ``replica_manager``,
            ``run_blocking``, ``share_persister``; optionally ``group_service``
            (its coordinator's share groups are wired here) and ``background``.
        settings: group id → its :class:`ShareGroupSettings` (default: the broker's
            ``group.share.*`` with ``share.auto.offset.reset`` latest and read_uncommitted).
    """

    def __init__(self, broker: Any, settings: Callable[[str], ShareGroupSettings] | None = None) -> None:
        self.broker = broker
        self.reactor = broker.reactor
        config = broker.config
        self.sessions = ShareSessionCache(config.group_share_max_share_sessions)
        self.settings = settings or self._broker_settings
        #: group id → (the overrides, the settings made of them): ``_broker_settings`` runs at every fetch
        self._settings_made: dict[str, tuple[dict[str, str], ShareGroupSettings]] = {}
        self.manager = SharePartitionManager(
            PersisterAdapter(broker.share_persister), ReactorTimers(self.reactor),
            lambda: int(self.reactor.seconds() * 1000), lambda group_id: self.settings(group_id),
        )
        self.manager.on_available = self._available
        self.manager.on_unlocked = self._unlocked
        self._waiting: dict[TopicIdPartition, set[_Fetch]] = {}
        self._connections: dict[str, Any] = {}
        self._closed = False
        broker.replica_manager.change_listeners.append(self._partition_changed)
        coordinator = getattr(getattr(broker, "group_service", None), "coordinator", None)
        share_groups = getattr(coordinator, "share_groups", None)
        if share_groups is not None:
            share_groups.initializer = share_initializer(broker.share_persister)
            share_groups.on_member_gone = self.member_gone

    def _broker_settings(self, group_id: str) -> ShareGroupSettings:
        """The broker's ``group.share.*``, overridden by the group's configs (``/config/groups/<g>``) if any.

        Read when a share-partition loads and at each fetch, so an override applies
        to the group's share-partitions already loaded too (Kafka reads a group's
        configs at each use: ``share.isolation.level`` at each fetch,
        ``share.record.lock.duration.ms`` at each acquisition).
        """
        config = self.broker.config
        group_configs = getattr(self.broker, "group_configs", None)
        overrides = group_configs.get(group_id) if group_configs is not None else {}
        made = self._settings_made.get(group_id)
        if made is not None and made[0] == overrides:
            return made[1]
        settings = ShareGroupSettings(
            record_lock_duration_ms=config.group_share_record_lock_duration_ms,
            delivery_count_limit=config.group_share_delivery_count_limit,
            max_record_locks=config.group_share_partition_max_record_locks,
        )
        if overrides:
            settings = dataclasses.replace(settings, **share_settings_overrides(overrides, config))
        if overrides or made is not None:
            self._settings_made[group_id] = (overrides, settings)
        return settings

    def record_lock_duration_ms(self, group_id: str) -> int:
        """The response's ``AcquisitionLockTimeoutMs``."""
        return self.settings(group_id).record_lock_duration_ms

    def startup(self) -> None:
        """The disconnect sweep, as a broker background pass."""
        self.broker.background.every("share-session-disconnects", _SWEEP_S, self.sweep_connections)

    def shutdown(self) -> None:
        self._closed = True
        for op in {op for ops in self._waiting.values() for op in ops}:
            self._complete(op, {})
        self.manager.close()

    # ------------------------------------------------------------------ members and connections

    def member_gone(self, group_id: str, member_id: str) -> None:
        """The group coordinator here removed the member: its session goes, its records are released."""
        self.sessions.remove_member(group_id, member_id)
        self.manager.release_member(group_id, member_id)
        self._maybe_group_empty(group_id)

    def _maybe_group_empty(self, group_id: str) -> None:
        """Kafka's ``onGroupEmpty``: no session of *group_id* is left here, so its share-partitions
        are dropped (a share group deleted and created again must not find the old state here)."""
        if self.sessions.members(group_id) != 0:
            return
        # Fetches still waiting belonged to the sessions that went: they end empty rather than
        # load the share-partitions again once they are dropped.
        for op in {op for ops in self._waiting.values() for op in ops if op.group_id == group_id}:
            self._complete(op, {})
        self.manager.drop_group(group_id)

    def release_session(self, group_id: str, member_id: str) -> None:
        """A final-epoch request was answered: the session goes and the member's records in its
        partitions are released (Kafka's ``releaseSession``)."""
        try:
            partitions = self.sessions.release_session(group_id, member_id)
        except KafkaError:
            return
        self.manager.release_member(group_id, member_id, partitions)
        self._maybe_group_empty(group_id)

    def track_connection(self, connection_id: str, connection: Any) -> None:
        """A session was opened on *connection*: watch it for closing."""
        self._connections[connection_id] = connection

    def sweep_connections(self) -> None:
        """Sessions of closed connections go (Kafka's ``ClientConnectionDisconnectListener``)."""
        for connection_id, connection in list(self._connections.items()):
            if not _connection_closed(connection):
                continue
            del self._connections[connection_id]
            session = self.sessions.on_disconnect(connection_id)
            if session is not None:
                log.debug("Share session %s closed with its connection", session.key)
                self.manager.release_member(session.key.group_id, session.key.member_id, session.partitions)
                self._maybe_group_empty(session.key.group_id)

    # ------------------------------------------------------------------ acknowledging

    def acknowledge(
        self,
        group_id: str,
        member_id: str,
        acknowledgements: Mapping[TopicIdPartition, Sequence[AcknowledgementBatch]],
        *,
        api_version: int,
        is_renew_ack: bool = False,
    ) -> defer.Deferred:
        """Apply each partition's acknowledgement batches (the caller checked topics and ACLs);
        fires with {(topic id, partition): :class:`PartitionAcknowledgement`} once every
        partition's are durable (or refused)."""
        results: dict[TopicIdPartition, PartitionAcknowledgement] = {}
        d: defer.Deferred = defer.Deferred()
        outstanding = [len(acknowledgements) + 1]

        def settle() -> None:
            outstanding[0] -= 1
            if outstanding[0] == 0:
                d.callback(results)

        for tp, batches in acknowledgements.items():
            def answer(result: PartitionAcknowledgement, tp: TopicIdPartition = tp) -> None:
                results[tp] = result
                settle()

            error = self._led_here(tp) if batches else None
            if error is not None and validate_batches(batches, api_version=api_version,
                                                      is_renew_ack=is_renew_ack) != ErrorCode.NONE:
                error = ErrorCode.INVALID_REQUEST  # Kafka checks the batches first
            if error is not None:
                answer(PartitionAcknowledgement(error, error.description))
                continue
            key = SharePartitionKey(group_id, tp[0], tp[1])
            self.manager.acknowledge(key, member_id, batches, answer, api_version=api_version,
                                     is_renew_ack=is_renew_ack)
        settle()
        return d

    def _led_here(self, tp: TopicIdPartition) -> ErrorCode | None:
        topic = self.broker.metadata_cache.topic_name(tp[0])
        if topic is None:
            return ErrorCode.UNKNOWN_TOPIC_ID
        try:
            self._leader_partition(topic, tp[1])
        except KafkaError as exc:
            return exc.code
        return None

    def _leader_partition(self, topic: str, index: int) -> Any:
        """The partition if led here.  One the metadata knows but this broker does not host is
        NOT_LEADER_OR_FOLLOWER, as Kafka's ``getPartitionOrError`` answers (the client then finds
        the leader), not UNKNOWN_TOPIC_OR_PARTITION.

        Raises:
            NotLeaderOrFollowerError, UnknownTopicOrPartitionError, KafkaStorageError.
        """
        try:
            return self.broker.replica_manager.leader_partition(topic, index)
        except KafkaError as exc:
            if exc.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and \
                    self.broker.metadata_cache.partition(topic, index) is not None:
                raise NotLeaderOrFollowerError(f"this broker does not host {topic}-{index}") from exc
            raise

    # ------------------------------------------------------------------ fetching

    def fetch(
        self,
        group_id: str,
        member_id: str,
        partitions: Iterable[TopicIdPartition],
        *,
        max_wait_ms: int,
        max_bytes: int,
        max_records: int,
        rotation: int = 0,
    ) -> defer.Deferred:
        """Acquire records for the member from *partitions* (checked by the caller), waiting up to
        *max_wait_ms* while none can be; fires with {(topic id, partition): :class:`PartitionFetch`}
        for the partitions that have something to say (records or an error).

        ``max_records`` is shared by the partitions in order, starting at the one *rotation* places
        first (Kafka's round-robin ``PartitionRotateStrategy``: the caller passes the session
        epoch), so a busy partition does not starve those after it."""
        fetch_max = getattr(self.broker.config, "fetch_max_bytes", _DEFAULT_FETCH_MAX_BYTES)
        ordered = list(dict.fromkeys(partitions))
        if ordered:
            shift = rotation % len(ordered)
            ordered = ordered[shift:] + ordered[:shift]
        op = _Fetch(group_id, member_id, ordered, max(0, max_wait_ms),
                    max(1, min(max_bytes, fetch_max)), max(0, max_records), defer.Deferred())
        if not op.partitions or op.max_records == 0 or self._closed:
            op.done = True
            op.deferred.callback({})
            return op.deferred
        if op.max_wait_ms > 0:
            op.timer = self.reactor.callLater(op.max_wait_ms / 1000.0, self._expire, op)
        self._attempt(op)
        return op.deferred

    def _expire(self, op: _Fetch) -> None:
        op.timer = None
        op.expired = True
        if not op.attempting:
            self._complete(op, {})

    def _wake(self, op: _Fetch) -> None:
        if op.done:
            return
        if op.attempting:
            op.again = True
            return
        if not op.scheduled:
            # Never from inside another fetch's attempt or the manager's bookkeeping: a turn later.
            op.scheduled = True
            self.reactor.callLater(0, self._scheduled, op)

    def _scheduled(self, op: _Fetch) -> None:
        op.scheduled = False
        if not op.done and not op.attempting:
            self._attempt(op)

    def _attempt(self, op: _Fetch) -> None:
        """Read every partition that can be read now; acquire from what was read in `_acquire`."""
        op.attempting, op.again = True, False
        op.locked_out.clear()
        answers: dict[TopicIdPartition, PartitionFetch] = {}
        reads: list[_Read] = []
        cache = self.broker.metadata_cache
        per_partition = max(1, op.max_bytes // len(op.partitions))
        settings = self.settings(op.group_id)  # the group's configs as they are now
        for tp in op.partitions:
            if tp in op.load_errors:
                code, message = op.load_errors.pop(tp)
                answers[tp] = PartitionFetch(code, message)
                continue
            topic = cache.topic_name(tp[0])
            if topic is None:
                answers[tp] = PartitionFetch(ErrorCode.UNKNOWN_TOPIC_ID, ErrorCode.UNKNOWN_TOPIC_ID.description)
                continue
            try:
                partition = self._leader_partition(topic, tp[1])
            except KafkaError as exc:
                answers[tp] = PartitionFetch(exc.code, str(exc))
                continue
            key = SharePartitionKey(op.group_id, tp[0], tp[1])
            sp = self.manager.get(key)
            if sp is None or sp.leader_epoch != partition.leader_epoch:
                self.manager.load(key, partition.leader_epoch, functools.partial(_log_offsets, partition),
                                  functools.partial(self._loaded, op, tp))
                if tp in op.load_errors:  # answered at once
                    code, message = op.load_errors.pop(tp)
                    answers[tp] = PartitionFetch(code, message)
                continue
            if sp.status is PartitionStatus.LOADING:
                continue
            if sp.settings != settings:
                self.manager.update_settings(key, settings)
            offset = self.manager.begin_fetch(key, partition.log.log_start_offset)
            if offset is None:
                if sp.fetch_locked:
                    op.locked_out.add(key)
                continue
            isolation = sp.settings.isolation_level
            try:
                result = partition.read(offset, per_partition, isolation_level=isolation)
            except KafkaError as exc:
                self.manager.abort_fetch(key)
                answers[tp] = PartitionFetch(exc.code, str(exc))
                continue
            if result.data.region is None:
                self.manager.abort_fetch(key)
                continue
            assert sp.state is not None  # an active share-partition has its state
            limit = sp.state.start_offset + sp.state.config.max_record_locks
            reads.append(_Read(tp, key, offset, result.data, limit, isolation, result.last_stable_offset))
        if not reads:
            self._attempted(op, answers)
            return
        d = self.broker.run_blocking(_scan_all, [(r.data, r.limit_offset) for r in reads])
        d.addCallback(self._acquire, op, answers, reads)
        d.addErrback(self._scan_failed, op, answers, reads)

    def _loaded(self, op: _Fetch, tp: TopicIdPartition, error: ErrorCode, message: str | None) -> None:
        if error != ErrorCode.NONE:
            op.load_errors[tp] = (error, message)
        self._wake(op)

    def _scan_failed(self, failure: Any, op: _Fetch, answers: dict[TopicIdPartition, PartitionFetch],
                     reads: list[_Read]) -> None:
        log.error("a share fetch of %s failed: %s", op.group_id, failure.getErrorMessage(),
                  exc_info=(failure.type, failure.value, failure.getTracebackObject()))
        for r in reads:
            self.manager.abort_fetch(r.key)
            answers[r.tp] = PartitionFetch(ErrorCode.UNKNOWN_SERVER_ERROR, failure.getErrorMessage())
        self._attempted(op, answers)

    def _acquire(self, scans: list[_Scan | None], op: _Fetch, answers: dict[TopicIdPartition, PartitionFetch],
                 reads: list[_Read]) -> defer.Deferred:
        """On the reactor: acquire from each read, in order, within the request's ``max_records``."""
        remaining = op.max_records
        durable: list[defer.Deferred] = []
        for r, scan in zip(reads, scans, strict=True):
            if scan is None:
                self.manager.abort_fetch(r.key)
                answers[r.tp] = PartitionFetch(ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.KAFKA_STORAGE_ERROR.description)
                continue
            committed = r.isolation_level == READ_COMMITTED
            aborted = aborted_ranges(scan.batches, scan.aborted) if committed else []
            written: defer.Deferred = defer.Deferred()
            acquired = self.manager.end_fetch(
                r.key, op.member_id, fetched_batches(scan.batches), remaining,
                functools.partial(_settle, written),
                fetch_offset=r.fetch_offset, last_stable_offset=r.last_stable_offset if committed else None,
                aborted=aborted,
            )
            remaining -= sum(a.last_offset - a.first_offset + 1 for a in acquired)
            records: FileRegion | bytes = b""
            if acquired and scan.source is not None:
                position, length = records_span(scan.batches, acquired)
                records = _slice(scan.source, position, length)
            written.addCallback(self._durable, r.tp, acquired, records, answers)
            durable.append(written)

        def answered(_outcome: object) -> None:
            self._attempted(op, answers)

        return defer.gatherResults(durable, consumeErrors=True).addBoth(answered)

    @staticmethod
    def _durable(outcome: tuple[ErrorCode, str | None], tp: TopicIdPartition, acquired: tuple[AcquiredRecords, ...],
                 records: FileRegion | bytes, answers: dict[TopicIdPartition, PartitionFetch]) -> None:
        error, message = outcome
        if error != ErrorCode.NONE:
            answers[tp] = PartitionFetch(error, message)
        elif acquired:
            answers[tp] = PartitionFetch(records=records, acquired=acquired)

    def _attempted(self, op: _Fetch, answers: dict[TopicIdPartition, PartitionFetch]) -> None:
        op.attempting = False
        if op.done:
            return
        if answers or op.expired or op.max_wait_ms == 0 or self._closed:
            self._complete(op, answers)
            return
        if not op.parked:
            op.parked = True
            for tp in op.partitions:
                self._waiting.setdefault(tp, set()).add(op)
        if op.again or op.load_errors:
            self._wake(op)

    def _complete(self, op: _Fetch, answers: dict[TopicIdPartition, PartitionFetch]) -> None:
        if op.done:
            return
        op.done = True
        if op.timer is not None and op.timer.active():
            op.timer.cancel()
        op.timer = None
        if op.parked:
            for tp in op.partitions:
                waiting = self._waiting.get(tp)
                if waiting is not None:
                    waiting.discard(op)
                    if not waiting:
                        del self._waiting[tp]
        op.deferred.callback(answers)

    # ------------------------------------------------------------------ wake-ups

    def _partition_changed(self, tp: tuple[str, int]) -> None:
        """The replica manager's change listener: an append, a HW/LSO move, a role change."""
        topic_id = self.broker.metadata_cache.topic_id(tp[0])
        key = (topic_id, tp[1])
        if self.manager.holds(topic_id, tp[1]):
            partition = self.broker.replica_manager.partitions.get(tp)
            led = partition.leader_epoch if partition is not None and partition.is_leader else None
            self.manager.leadership_changed(topic_id, tp[1], led)
        for op in list(self._waiting.get(key, ())):
            self._wake(op)

    def _available(self, key: SharePartitionKey) -> None:
        for op in list(self._waiting.get((key.topic_id, key.partition), ())):
            if op.group_id == key.group_id:
                self._wake(op)

    def _unlocked(self, key: SharePartitionKey) -> None:
        for op in list(self._waiting.get((key.topic_id, key.partition), ())):
            if key in op.locked_out:
                self._wake(op)


def _settle(d: defer.Deferred, error: ErrorCode, message: str | None) -> None:
    d.callback((error, message))


def _log_offsets(partition: Any) -> tuple[int, int]:
    """(log start offset, high watermark) of a partition this broker still leads."""
    if not partition.is_leader:
        raise NotLeaderOrFollowerError(f"{partition.topic}-{partition.index} is no longer led here")
    return partition.log.log_start_offset, partition.high_watermark


def _connection_closed(connection: Any) -> bool:
    """Whether the network edge closed *connection* (its protocol's ``closed`` flag, reached
    through the connection's ``close``; a connection without one never closes here)."""
    owner = getattr(getattr(connection, "close", None), "__self__", None)
    return bool(getattr(owner, "closed", False))
