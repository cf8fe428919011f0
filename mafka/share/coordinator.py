"""The share coordinator: Kafka 4.4's ``ShareCoordinatorService`` and ``ShareCoordinatorShard``.

Owns the durable state of share-partitions (KIP-932) for the
``__share_group_state`` partitions this broker leads, one
:class:`~mafka.group.share.state_records.ShareStateShard` per partition, and
the five operations on it.  Plain Python: time is the injected ``clock``, the
log is the injected :class:`StateLog`; the broker's edge is
:mod:`mafka.broker.share_coordinator_service`.

Which partition
---------------
A share-partition (group, topic id, partition) lives in partition
:func:`share_partition_for` of ``__share_group_state``: Kafka's
``Utils.abs(key.asCoordinatorKey().hashCode()) % numPartitions``, where the
coordinator key is ``"<group>:<topic id>:<partition>"`` (``SharePartitionKey.
asCoordinatorKey``: ``String.format("%s:%s:%d")`` with the topic id as Kafka's
``Uuid.toString``, URL-safe base64 without padding) and ``hashCode`` is Java's
``String.hashCode`` over UTF-16 code units.  The number of partitions is
``share.coordinator.state.topic.num.partitions``.

Ownership
---------
As :class:`~mafka.group.metadata_manager.GroupMetadataManager` owns
``__consumer_offsets`` partitions: :meth:`ShareCoordinator.on_elected`
(leader at an epoch; True if a load must run), :meth:`~ShareCoordinator.complete_load`
(the partition's records, in log order, with their offsets), :meth:`~ShareCoordinator.fail_load`
and :meth:`~ShareCoordinator.on_resigned`; an older epoch changes nothing.
An operation on a partition this broker does not own answers NOT_COORDINATOR,
on one still loading COORDINATOR_LOAD_IN_PROGRESS, and after
:meth:`~ShareCoordinator.shutdown` COORDINATOR_NOT_AVAILABLE.

Operations
----------
Each answers through ``done(result)`` with the values of
:mod:`mafka.share.state_types`, and checks what Kafka's shard checks, in its
order:

* :meth:`~ShareCoordinator.initialize` (InitializeShareGroupState): negative
  partition or state epoch → INVALID_REQUEST; a state epoch below the highest
  seen → FENCED_STATE_EPOCH; an unknown topic or partition →
  UNKNOWN_TOPIC_OR_PARTITION; else a fresh snapshot (snapshot epoch + 1, or 0;
  leader epoch 0; no state batches; delivery complete count -1 for start offset
  -1, else 0).  The same state epoch and start offset as the current state is
  a no-op (Kafka trunk's idempotent initialize, apache/kafka#23190, newer than
  4.4, which writes an identical snapshot again).
* :meth:`~ShareCoordinator.read` (ReadShareGroupState): negative partition or
  leader epoch → INVALID_REQUEST; uninitialized → INVALID_REQUEST; a leader
  epoch below the highest seen → FENCED_LEADER_EPOCH; unknown topic →
  UNKNOWN_TOPIC_OR_PARTITION; else the state epoch, start offset and state
  batches — and a leader epoch newer than the highest seen is first written
  (an update, or a snapshot when it is due), which fences older leaders' writes.
* :meth:`~ShareCoordinator.write` (WriteShareGroupState): negative partition,
  leader or state epoch → INVALID_REQUEST; uninitialized → INVALID_REQUEST;
  leader epoch below the highest seen → FENCED_LEADER_EPOCH; state epoch below
  the highest seen → FENCED_STATE_EPOCH; unknown topic →
  UNKNOWN_TOPIC_OR_PARTITION; else an update carrying the write's batches (or,
  every ``share.coordinator.snapshot.update.records.per.snapshot`` updates, a
  snapshot of the merged state; the counting is ShareStateShard's).  As in Kafka the start offset never goes back
  (``max`` of the write's and the current), a write keeps the recorded leader
  epoch (only a read moves it), and KIP-1226's delivery complete count follows
  Kafka's rule.  Beyond Kafka, a reversed batch (first > last), a negative
  offset or delivery count, or an unknown delivery state is INVALID_REQUEST:
  it would make the durable state unreadable.
* :meth:`~ShareCoordinator.delete` (DeleteShareGroupState): negative
  partition → INVALID_REQUEST; unknown topic → UNKNOWN_TOPIC_OR_PARTITION; a
  tombstone if there is state, else nothing.
* :meth:`~ShareCoordinator.read_summary` (ReadShareGroupStateSummary):
  negative partition → INVALID_REQUEST; unknown topic →
  UNKNOWN_TOPIC_OR_PARTITION; the start offset, epochs and delivery complete
  count (start offset -1 and epochs 0 for no state).

**Write before answer**: a record is appended through the :class:`StateLog`
(acks=all) and replayed into the shard only once the append succeeded; only
then is the caller answered.  A failed append changes nothing and is answered
with Kafka's mapping (``CoordinatorOperationExceptionHelper``): NOT_ENOUGH_REPLICAS(_AFTER_APPEND),
REQUEST_TIMED_OUT, UNKNOWN_TOPIC_OR_PARTITION → COORDINATOR_NOT_AVAILABLE;
NOT_LEADER_OR_FOLLOWER, KAFKA_STORAGE_ERROR → NOT_COORDINATOR; too large →
UNKNOWN_SERVER_ERROR.  Operations on the same share-partition run one at a
time, in arrival order (Kafka's runtime runs them on one thread against the
uncommitted state; here the next one waits for the append of the one before,
so a snapshot never misses an update still in flight); share-partitions are
independent.

Log size
--------
``__share_group_state`` keeps everything (``cleanup.policy=delete``,
``retention.ms=-1``) and is pruned as Kafka prunes it: below
:meth:`~ShareCoordinator.last_redundant_offset` (the oldest latest snapshot of
any share-partition; Kafka's ``ShareCoordinatorOffsetsManager``) every record
is superseded; :meth:`~ShareCoordinator.snapshot_cold_partitions` snapshots
share-partitions whose last snapshot is older than
``share.coordinator.cold.partition.snapshot.interval.ms`` so that the oldest
snapshot keeps moving (Kafka's ``snapshotColdPartitions``).
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import logging
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final, Protocol, TypeVar

from mafka.errors import ErrorCode, KafkaError
from mafka.group.offsets_records import java_string_hash
from mafka.group.share.partition_state import RecordState, StateBatch, StateWrite
from mafka.group.share.state_records import (
    RECORD_TYPE_SNAPSHOT,
    SNAPSHOT_UPDATE_RECORDS_PER_SNAPSHOT_DEFAULT,
    ShareGroupOffset,
    SharePartitionKey,
    ShareSnapshotValue,
    ShareStateRecord,
    ShareStateShard,
    ShareUpdateValue,
    decode_record,
)

from .state_types import (
    UNINITIALIZED_DELIVERY_COMPLETE_COUNT,
    UNINITIALIZED_START_OFFSET,
    InitializeData,
    PartitionResult,
    ReadResult,
    SummaryResult,
    WriteData,
)

__all__ = [
    "LoadedRecord",
    "ShareCoordinator",
    "ShareCoordinatorConfig",
    "StateLog",
    "coordinator_key",
    "kafka_uuid_string",
    "share_partition_for",
]

log = logging.getLogger("mafka.share.coordinator")

#: a ``__share_group_state`` record read by a load: (offset, key, value; None is a tombstone)
LoadedRecord = tuple[int, bytes, "bytes | None"]

_INT32_MIN: Final = -(2**31)
#: Kafka's ``ShareGroupOffset.UNINITIALIZED_EPOCH``: an initialized share-partition's leader epoch
_UNINITIALIZED_EPOCH: Final = 0
_DELIVERY_STATES: Final = frozenset(int(s) for s in RecordState)

# Kafka's messages (ShareCoordinatorShard's exceptions).
_NEGATIVE_PARTITION_ID: Final = "The partition id cannot be a negative number."
_NEGATIVE_LEADER_EPOCH: Final = "The leader epoch cannot be a negative number."
_NEGATIVE_STATE_EPOCH: Final = "The state epoch cannot be a negative number."
_WRITE_UNINITIALIZED: Final = "Write operation on uninitialized share partition not allowed."
_READ_UNINITIALIZED: Final = "Read operation on uninitialized share partition not allowed."
_NOT_AVAILABLE: Final = "Share coordinator is not available."

_R = TypeVar("_R")


# --------------------------------------------------------------------------- which partition


def kafka_uuid_string(topic_id: bytes) -> str:
    """Kafka's ``Uuid.toString``: the 16 bytes in URL-safe base64 without padding (22 characters)."""
    if len(topic_id) != 16:
        raise ValueError(f"a topic id is 16 bytes, got {len(topic_id)}")
    return base64.urlsafe_b64encode(bytes(topic_id)).rstrip(b"=").decode("ascii")


def coordinator_key(group_id: str, topic_id: bytes, partition: int) -> str:
    """Kafka's ``SharePartitionKey.asCoordinatorKey``: ``"<group>:<topic id>:<partition>"``."""
    return f"{group_id}:{kafka_uuid_string(topic_id)}:{partition}"


def share_partition_for(group_id: str, topic_id: bytes, partition: int, num_partitions: int) -> int:
    """The ``__share_group_state`` partition of a share-partition (Kafka's ``ShareCoordinatorService.partitionFor``):
    ``Utils.abs(coordinatorKey.hashCode()) % num_partitions``."""
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be positive, got {num_partitions}")
    h = java_string_hash(coordinator_key(group_id, topic_id, partition))
    return (0 if h == _INT32_MIN else abs(h)) % num_partitions


# --------------------------------------------------------------------------- seams


class StateLog(Protocol):
    def append(
        self, partition: int, records: Sequence[tuple[bytes, bytes | None]], done: Callable[[int, int | None], None]
    ) -> None:
        """Append ``(key, value)`` records to ``__share_group_state``-``partition`` with acks=all;
        later call ``done(error_code, base_offset)`` exactly once (base_offset None on error)."""


@dataclass(frozen=True)
class ShareCoordinatorConfig:
    """The share coordinator's settings (Kafka's ``ShareCoordinatorConfig``)."""

    #: ``share.coordinator.state.topic.num.partitions``
    state_topic_num_partitions: int = 50
    #: ``share.coordinator.snapshot.update.records.per.snapshot`` (0-500)
    snapshot_update_records_per_snapshot: int = SNAPSHOT_UPDATE_RECORDS_PER_SNAPSHOT_DEFAULT
    #: ``share.coordinator.cold.partition.snapshot.interval.ms``
    cold_partition_snapshot_interval_ms: int = 300_000

    def __post_init__(self) -> None:
        if self.state_topic_num_partitions < 1:
            raise ValueError(f"state_topic_num_partitions must be positive, got {self.state_topic_num_partitions}")
        if not 0 <= self.snapshot_update_records_per_snapshot <= 500:
            raise ValueError("share.coordinator.snapshot.update.records.per.snapshot must be between 0 and 500, "
                             f"got {self.snapshot_update_records_per_snapshot}")


def _answer(done: Callable[[_R], None], result: _R) -> None:
    """Hands a result to the caller; an exception there is logged, never raised into the coordinator."""
    try:
        done(result)
    except Exception:
        log.exception("answering a share-state operation with %r failed", result)


def _append_error(error: int) -> ErrorCode:
    """Kafka's ``CoordinatorOperationExceptionHelper`` mapping of a failed append."""
    if error in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_ENOUGH_REPLICAS,
                 ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, ErrorCode.REQUEST_TIMED_OUT):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if error in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
        return ErrorCode.NOT_COORDINATOR
    if error in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.INVALID_FETCH_SIZE):
        return ErrorCode.UNKNOWN_SERVER_ERROR
    try:
        return ErrorCode(error)
    except ValueError:
        return ErrorCode.UNKNOWN_SERVER_ERROR


# --------------------------------------------------------------------------- one partition


@dataclass(eq=False)
class _Op:
    """A queued operation: ``run(finish)`` must call ``finish()`` exactly once; ``fail(code)``
    answers it without running (the partition was unloaded)."""

    run: Callable[[Callable[[], None]], None]
    fail: Callable[[ErrorCode, str | None], None]


@dataclass(eq=False)
class _Partition:
    """One owned ``__share_group_state`` partition: its shard, the maps Kafka's shard keeps
    beside the state, and the per-share-partition operation queues."""

    shard: ShareStateShard
    #: Kafka's ``leaderEpochMap`` / ``stateEpochMap``: the highest epochs seen per share-partition
    leader_epochs: dict[SharePartitionKey, int] = field(default_factory=dict)
    state_epochs: dict[SharePartitionKey, int] = field(default_factory=dict)
    #: KIP-1226's delivery complete count of the current state (the shard does not keep it)
    complete_counts: dict[SharePartitionKey, int] = field(default_factory=dict)
    #: (offset, issue sequence) of each live share-partition's latest snapshot
    snapshots: dict[SharePartitionKey, tuple[int, int]] = field(default_factory=dict)
    #: one past the last offset replayed, and that record's issue sequence
    next_offset: int = 0
    last_seq: int = -1
    #: appends issued and not yet answered, by issue sequence (a load's records count as -1)
    in_flight: set[int] = field(default_factory=set)
    next_seq: int = 0
    queues: dict[SharePartitionKey, deque[_Op]] = field(default_factory=dict)
    busy: set[SharePartitionKey] = field(default_factory=set)
    draining: set[SharePartitionKey] = field(default_factory=set)
    closed: bool = False

    # ------------------------------------------------------------------ replay

    def replay(self, record: ShareStateRecord, offset: int, seq: int) -> None:
        """Apply one record at ``offset`` (what the shard does, plus Kafka's epoch maps)."""
        self.shard.replay(record)
        key, value = record.key, record.value
        if offset >= self.next_offset:
            self.next_offset, self.last_seq = offset + 1, seq
        if value is None:
            for held in (self.leader_epochs, self.state_epochs, self.complete_counts, self.snapshots):
                held.pop(key, None)
            return
        _raise_to(self.leader_epochs, key, value.leader_epoch)
        self.complete_counts[key] = value.delivery_complete_count
        if isinstance(value, ShareSnapshotValue):
            _raise_to(self.state_epochs, key, value.state_epoch)
            previous = self.snapshots.get(key)
            if previous is None or offset > previous[0]:
                self.snapshots[key] = (offset, seq)

    # ------------------------------------------------------------------ operation queues

    def submit(self, key: SharePartitionKey, op: _Op) -> None:
        self.queues.setdefault(key, deque()).append(op)
        self._drain(key)

    def _drain(self, key: SharePartitionKey) -> None:
        # A loop, not recursion: operations that finish at once run one after another here.
        if key in self.draining:
            return
        self.draining.add(key)
        try:
            while not self.closed and key not in self.busy:
                queue = self.queues.get(key)
                if not queue:
                    self.queues.pop(key, None)
                    break
                op = queue.popleft()
                self.busy.add(key)
                try:
                    op.run(functools.partial(self._finished, key))
                except KafkaError as exc:  # the shard's own checks (the coordinator's come first)
                    self.busy.discard(key)
                    op.fail(exc.code, str(exc))
                except Exception:
                    log.exception("a share-state operation on %s failed", key)
                    self.busy.discard(key)
                    op.fail(ErrorCode.UNKNOWN_SERVER_ERROR, None)
        finally:
            self.draining.discard(key)

    def _finished(self, key: SharePartitionKey) -> None:
        self.busy.discard(key)
        self._drain(key)

    def close(self) -> None:
        """Unloaded: every queued operation is answered NOT_COORDINATOR (running ones finish by themselves)."""
        self.closed = True
        queues, self.queues = self.queues, {}
        for queue in queues.values():
            for op in queue:
                op.fail(ErrorCode.NOT_COORDINATOR, None)


def _ignore(_code: ErrorCode, _message: str | None) -> None:
    """A queued cold snapshot of an unloaded partition: nobody waits for it."""


def _raise_to(epochs: dict[SharePartitionKey, int], key: SharePartitionKey, epoch: int) -> None:
    """Kafka's ``maybeUpdate…EpochMap``: the first epoch seen, then only higher ones."""
    if key not in epochs or epochs[key] < epoch:
        epochs[key] = epoch


# --------------------------------------------------------------------------- the coordinator


class ShareCoordinator:
    """The share-partitions' durable state in the ``__share_group_state`` partitions led here
    (see the module docstring for the contract).

    Args:
        config: the settings.
        clock: now in milliseconds (record timestamps, cold snapshots).
        state_log: where records are appended (acks=all).
        partition_count: topic id → its partition count, or None for an unknown
            topic (Kafka's metadata image check); None: no check.
    """

    def __init__(
        self,
        config: ShareCoordinatorConfig,
        clock: Callable[[], int],
        state_log: StateLog,
        partition_count: Callable[[bytes], int | None] | None = None,
    ) -> None:
        self.config = config
        self._clock = clock
        self._log = state_log
        self._partition_count = partition_count
        self._partitions: dict[int, _Partition] = {}
        self._loading: dict[int, int] = {}
        self._epochs: dict[int, int] = {}
        self.active = True
        #: records a load could not decode and skipped (for the logs and the tests)
        self.skipped_records = 0

    # ------------------------------------------------------------------ which partition

    def partition_for(self, group_id: str, topic_id: bytes, partition: int) -> int:
        return share_partition_for(group_id, topic_id, partition, self.config.state_topic_num_partitions)

    # ------------------------------------------------------------------ ownership

    def owned_partitions(self) -> set[int]:
        return set(self._partitions)

    def loading_partitions(self) -> set[int]:
        return set(self._loading)

    def is_partition_owned(self, index: int) -> bool:
        return index in self._partitions

    def is_partition_loading(self, index: int) -> bool:
        return index in self._loading

    def on_elected(self, index: int, epoch: int) -> bool:
        """This broker leads ``index`` at ``epoch``.  True if a load must now run
        (the caller reads the partition and calls :meth:`complete_load`)."""
        current = self._epochs.get(index)
        if current is not None and current > epoch:
            return False
        self._epochs[index] = epoch
        if index in self._partitions or index in self._loading:
            return False  # still the leader, at a new epoch: the state in memory is the log's
        self._loading[index] = epoch
        return True

    def complete_load(self, index: int, epoch: int, records: Iterable[LoadedRecord]) -> bool:
        """Replay ``__share_group_state``-``index`` (log order) and start serving it.

        A record that does not decode is skipped with a warning.  False (and
        nothing changes) if leadership moved on since :meth:`on_elected`.
        """
        if self._loading.get(index) != epoch:
            return False
        part = _Partition(ShareStateShard(self.config.snapshot_update_records_per_snapshot))
        count = 0
        for offset, key, value in records:
            try:
                record = decode_record(key, value)
            except ValueError as exc:
                self.skipped_records += 1
                log.warning("__share_group_state-%d: skipping the undecodable record at offset %d: %s",
                            index, offset, exc)
                continue
            part.replay(record, offset, -1)
            count += 1
        del self._loading[index]
        self._partitions[index] = part
        log.info("Finished loading share-group state from __share_group_state-%d (epoch %d): %d records, "
                 "%d share-partitions", index, epoch, count, len(part.shard.keys()))
        return True

    def fail_load(self, index: int, epoch: int) -> None:
        """A load could not read the partition: stop claiming it (callers see NOT_COORDINATOR)."""
        if self._loading.get(index) == epoch:
            del self._loading[index]

    def on_resigned(self, index: int, epoch: int | None = None) -> None:
        """Leadership of ``index`` moved away (or the partition is gone)."""
        current = self._epochs.get(index)
        if epoch is not None and current is not None and current > epoch:
            return
        if epoch is not None:
            self._epochs[index] = epoch
        self._loading.pop(index, None)
        part = self._partitions.pop(index, None)
        if part is not None:
            part.close()
            log.info("Unloaded share-group state of __share_group_state-%d", index)

    def shutdown(self) -> None:
        """Unload everything; later operations answer COORDINATOR_NOT_AVAILABLE."""
        self.active = False
        for index in list(self._partitions):
            self._partitions.pop(index).close()
        self._loading.clear()

    # ------------------------------------------------------------------ inspection

    def state(self, group_id: str, topic_id: bytes, partition: int) -> ShareGroupOffset | None:
        """The share-partition's durable state as replayed here (None: none, or not owned here)."""
        part = self._partitions.get(self.partition_for(group_id, topic_id, partition))
        return None if part is None else part.shard.state(SharePartitionKey(group_id, bytes(topic_id), partition))

    # ------------------------------------------------------------------ operations

    def initialize(self, group_id: str, topic_id: bytes, partition: int, data: InitializeData,
                   done: Callable[[PartitionResult], None]) -> None:
        """InitializeShareGroupState of one share-partition (see the module docstring)."""

        def fail(code: ErrorCode, message: str | None) -> None:
            _answer(done, PartitionResult(code, message))

        def run(part: _Partition, key: SharePartitionKey, finish: Callable[[], None]) -> None:
            error = (
                (ErrorCode.INVALID_REQUEST, _NEGATIVE_PARTITION_ID) if partition < 0
                else (ErrorCode.INVALID_REQUEST, _NEGATIVE_STATE_EPOCH) if data.state_epoch < 0
                else _fenced(ErrorCode.FENCED_STATE_EPOCH, part.state_epochs.get(key), data.state_epoch)
                or self._unknown_topic(topic_id, partition)
            )
            if error is not None:
                fail(*error)
                return finish()
            current = part.shard.state(key)
            if (current is not None and part.state_epochs.get(key) == data.state_epoch
                    and current.start_offset == data.start_offset):
                log.debug("Duplicate initialize of %s (state epoch %d, start offset %d): a no-op",
                          key, data.state_epoch, data.start_offset)
                _answer(done, PartitionResult())
                return finish()
            write = StateWrite(data.state_epoch, _UNINITIALIZED_EPOCH, data.start_offset, (), initialize=True)
            complete = UNINITIALIZED_DELIVERY_COMPLETE_COUNT if data.start_offset == UNINITIALIZED_START_OFFSET else 0
            record = _with_complete_count(part.shard.write_state(key, write, self._clock()), complete)
            self._append(part, key, record, "initialize share group state", fail,
                         lambda: _answer(done, PartitionResult()), finish)

        self._submit(group_id, topic_id, partition, fail, run)

    def read(self, group_id: str, topic_id: bytes, partition: int, leader_epoch: int,
             done: Callable[[ReadResult], None]) -> None:
        """ReadShareGroupState of one share-partition (see the module docstring)."""

        def fail(code: ErrorCode, message: str | None) -> None:
            _answer(done, ReadResult(code, message))

        def run(part: _Partition, key: SharePartitionKey, finish: Callable[[], None]) -> None:
            current = part.shard.state(key)
            error = (
                (ErrorCode.INVALID_REQUEST, _NEGATIVE_PARTITION_ID) if partition < 0
                else (ErrorCode.INVALID_REQUEST, _NEGATIVE_LEADER_EPOCH) if leader_epoch < 0
                else (ErrorCode.INVALID_REQUEST, _READ_UNINITIALIZED) if current is None
                else _fenced(ErrorCode.FENCED_LEADER_EPOCH, part.leader_epochs.get(key), leader_epoch)
                or self._unknown_topic(topic_id, partition)
            )
            if error is not None or current is None:
                fail(*(error or (ErrorCode.INVALID_REQUEST, _READ_UNINITIALIZED)))
                return finish()
            result = ReadResult(ErrorCode.NONE, None, current.state_epoch, current.start_offset,
                                tuple(current.state_batches))
            if part.leader_epochs.get(key) == leader_epoch:
                _answer(done, result)
                return finish()
            # A newer leader: its epoch is written first, so that older leaders' writes are fenced.
            log.info("Read of %s with a new leader epoch %d", key, leader_epoch)
            write = StateWrite(current.state_epoch, leader_epoch, current.start_offset, ())
            record = _with_complete_count(part.shard.write_state(key, write, self._clock()),
                                          part.complete_counts.get(key, UNINITIALIZED_DELIVERY_COMPLETE_COUNT))
            self._append(part, key, record, "read share group state", fail, lambda: _answer(done, result), finish)

        self._submit(group_id, topic_id, partition, fail, run)

    def write(self, group_id: str, topic_id: bytes, partition: int, data: WriteData,
              done: Callable[[PartitionResult], None]) -> None:
        """WriteShareGroupState of one share-partition (see the module docstring)."""

        def fail(code: ErrorCode, message: str | None) -> None:
            _answer(done, PartitionResult(code, message))

        def run(part: _Partition, key: SharePartitionKey, finish: Callable[[], None]) -> None:
            current = part.shard.state(key)
            error = (
                (ErrorCode.INVALID_REQUEST, _NEGATIVE_PARTITION_ID) if partition < 0
                else (ErrorCode.INVALID_REQUEST, _NEGATIVE_LEADER_EPOCH) if data.leader_epoch < 0
                else (ErrorCode.INVALID_REQUEST, _NEGATIVE_STATE_EPOCH) if data.state_epoch < 0
                else _bad_batches(data.state_batches)
                or ((ErrorCode.INVALID_REQUEST, _WRITE_UNINITIALIZED) if current is None else None)
                or _fenced(ErrorCode.FENCED_LEADER_EPOCH, part.leader_epochs.get(key), data.leader_epoch)
                or _fenced(ErrorCode.FENCED_STATE_EPOCH, part.state_epochs.get(key), data.state_epoch)
                or self._unknown_topic(topic_id, partition)
            )
            if error is not None or current is None:
                fail(*(error or (ErrorCode.INVALID_REQUEST, _WRITE_UNINITIALIZED)))
                return finish()
            start = max(data.start_offset, current.start_offset)
            # Leader epoch -1: the record keeps the recorded one (Kafka moves it only on a read).
            write = StateWrite(data.state_epoch, -1, start, tuple(data.state_batches))
            known = part.complete_counts.get(key, UNINITIALIZED_DELIVERY_COMPLETE_COUNT)
            complete = data.delivery_complete_count
            if data.start_offset == current.start_offset:
                complete = max(complete, known)
            elif data.start_offset < current.start_offset:
                complete = known
            record = _with_complete_count(part.shard.write_state(key, write, self._clock()), complete)
            self._append(part, key, record, "write share group state", fail,
                         lambda: _answer(done, PartitionResult()), finish)

        self._submit(group_id, topic_id, partition, fail, run)

    def delete(self, group_id: str, topic_id: bytes, partition: int, done: Callable[[PartitionResult], None]) -> None:
        """DeleteShareGroupState of one share-partition (see the module docstring)."""

        def fail(code: ErrorCode, message: str | None) -> None:
            _answer(done, PartitionResult(code, message))

        def run(part: _Partition, key: SharePartitionKey, finish: Callable[[], None]) -> None:
            error = ((ErrorCode.INVALID_REQUEST, _NEGATIVE_PARTITION_ID) if partition < 0
                     else self._unknown_topic(topic_id, partition))
            if error is not None:
                fail(*error)
                return finish()
            if part.shard.state(key) is None:
                log.warning("Attempted to delete non-existent share partition %s.", key)
                _answer(done, PartitionResult())
                return finish()
            self._append(part, key, part.shard.delete_state(key), "delete share group state", fail,
                         lambda: _answer(done, PartitionResult()), finish)

        self._submit(group_id, topic_id, partition, fail, run)

    def read_summary(self, group_id: str, topic_id: bytes, partition: int, leader_epoch: int,
                     done: Callable[[SummaryResult], None]) -> None:
        """ReadShareGroupStateSummary of one share-partition (see the module docstring).
        ``leader_epoch`` is on the wire but, as in Kafka, neither checked nor recorded."""

        def fail(code: ErrorCode, message: str | None) -> None:
            _answer(done, SummaryResult(code, message))

        def run(part: _Partition, key: SharePartitionKey, finish: Callable[[], None]) -> None:
            error = ((ErrorCode.INVALID_REQUEST, _NEGATIVE_PARTITION_ID) if partition < 0
                     else self._unknown_topic(topic_id, partition))
            if error is not None:
                fail(*error)
                return finish()
            current = part.shard.state(key)
            if current is None:
                _answer(done, SummaryResult())
            else:
                _answer(done, SummaryResult(
                    ErrorCode.NONE, None, current.state_epoch, current.leader_epoch, current.start_offset,
                    part.complete_counts.get(key, UNINITIALIZED_DELIVERY_COMPLETE_COUNT),
                ))
            finish()

        self._submit(group_id, topic_id, partition, fail, run)

    # ------------------------------------------------------------------ log size

    def last_redundant_offset(self, index: int) -> int | None:
        """The offset below which every record of ``__share_group_state``-``index`` is superseded
        (Kafka's ``lastRedundantOffset``), or None: nothing to prune now.

        It is the oldest of the live share-partitions' latest snapshots (every
        record below it belongs to a share-partition that has a later snapshot, or
        that was deleted), or, with no live share-partition, one past the last record.
        None while an append issued before that record is unanswered (it may lie
        below it and not be replayed yet), and for offset 0.
        """
        part = self._partitions.get(index)
        if part is None:
            return None
        if len(part.snapshots) != len(part.shard.keys()):
            return None  # state replayed from updates alone (never written here): keep every record
        if part.snapshots:
            offset, seq = min(part.snapshots.values())
        else:
            offset, seq = part.next_offset, part.last_seq
        if offset <= 0 or (part.in_flight and min(part.in_flight) < seq):
            return None
        return offset

    def snapshot_cold_partitions(self) -> int:
        """Kafka's ``snapshotColdPartitions``: a fresh snapshot (snapshot epoch + 1, same creation
        time, write time now) of every share-partition whose last snapshot is older than
        ``share.coordinator.cold.partition.snapshot.interval.ms`` — unless every one was already
        snapshotted that way (a quiet partition).  Returns how many were started; failures are logged."""
        now = self._clock()
        interval = self.config.cold_partition_snapshot_interval_ms
        started = 0
        for index, part in list(self._partitions.items()):
            states = [(k, part.shard.state(k)) for k in part.shard.keys()]
            if all(s is not None and s.create_timestamp != s.write_timestamp for _, s in states):
                continue
            for key, state in states:
                if state is None or now - state.write_timestamp < interval:
                    continue
                started += 1
                part.submit(key, _Op(functools.partial(self._cold_snapshot, index, part, key), _ignore))
        return started

    def _cold_snapshot(self, index: int, part: _Partition, key: SharePartitionKey, finish: Callable[[], None]) -> None:
        state = part.shard.state(key)  # as of now: an operation may have run since the pass looked
        now = self._clock()
        if state is None or now - state.write_timestamp < self.config.cold_partition_snapshot_interval_ms:
            return finish()
        record = ShareStateRecord(RECORD_TYPE_SNAPSHOT, key, ShareSnapshotValue(
            snapshot_epoch=state.snapshot_epoch + 1,
            state_epoch=state.state_epoch,
            leader_epoch=state.leader_epoch,
            start_offset=state.start_offset,
            create_timestamp=state.create_timestamp,
            write_timestamp=now,
            state_batches=tuple(state.state_batches),
            delivery_complete_count=part.complete_counts.get(key, UNINITIALIZED_DELIVERY_COMPLETE_COUNT),
        ))

        def failed(code: ErrorCode, _message: str | None) -> None:
            log.info("snapshot of cold share partition %s in __share_group_state-%d failed: %s", key, index, code.name)

        self._append(part, key, record, "snapshot cold share partition", failed, lambda: None, finish)

    # ------------------------------------------------------------------ internals

    def _submit(
        self,
        group_id: str,
        topic_id: bytes,
        partition: int,
        fail: Callable[[ErrorCode, str | None], None],
        run: Callable[[_Partition, SharePartitionKey, Callable[[], None]], None],
    ) -> None:
        if not self.active:
            fail(ErrorCode.COORDINATOR_NOT_AVAILABLE, _NOT_AVAILABLE)
            return
        try:
            index = self.partition_for(group_id, topic_id, partition)
        except ValueError as exc:  # a topic id that is not 16 bytes
            fail(ErrorCode.INVALID_REQUEST, str(exc))
            return
        part = self._partitions.get(index)
        if part is None:
            fail(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if index in self._loading else ErrorCode.NOT_COORDINATOR, None)
            return
        key = SharePartitionKey(group_id, bytes(topic_id), partition)
        part.submit(key, _Op(lambda finish: run(part, key, finish), fail))

    def _unknown_topic(self, topic_id: bytes, partition: int) -> tuple[ErrorCode, str | None] | None:
        if self._partition_count is None:
            return None
        count = self._partition_count(bytes(topic_id))
        if count is None or count <= partition:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
        return None

    def _append(
        self,
        part: _Partition,
        key: SharePartitionKey,
        record: ShareStateRecord,
        what: str,
        fail: Callable[[ErrorCode, str | None], None],
        succeeded: Callable[[], None],
        finish: Callable[[], None],
    ) -> None:
        """Appends ``record``; on success replays it (if the partition is still this one) and
        calls ``succeeded``, else ``fail`` with the mapped error; then ``finish``."""
        try:
            entry = (record.key_bytes(), record.value_bytes())
        except ValueError as exc:  # a group id or a value that does not fit the record's schema
            fail(ErrorCode.INVALID_REQUEST, str(exc))
            return finish()
        seq = part.next_seq
        part.next_seq += 1
        part.in_flight.add(seq)
        index = self.partition_for(key.group_id, key.topic_id, key.partition)
        answered = False

        def appended(error: int, offset: int | None) -> None:
            nonlocal answered
            if answered:
                return
            answered = True
            part.in_flight.discard(seq)
            try:
                if error == ErrorCode.NONE and offset is not None:
                    if not part.closed and self._partitions.get(index) is part:
                        part.replay(record, offset, seq)
                    succeeded()
                else:
                    mapped = _append_error(error)
                    log.warning("%s of %s to __share_group_state-%d failed: %s", what, key, index, _name(error))
                    fail(mapped, f"Unable to {what}: {mapped.description or mapped.name}")
            finally:
                finish()

        try:
            self._log.append(index, [entry], appended)
        except Exception:
            log.exception("appending to __share_group_state-%d failed", index)
            appended(ErrorCode.UNKNOWN_SERVER_ERROR, None)


def _name(error: int) -> str:
    try:
        return ErrorCode(error).name
    except ValueError:
        return str(error)


def _fenced(code: ErrorCode, highest: int | None, epoch: int) -> tuple[ErrorCode, str | None] | None:
    """``code`` when ``epoch`` is below the highest seen (Kafka's fencing checks)."""
    if highest is not None and highest > epoch:
        return code, code.description
    return None


def _bad_batches(batches: Iterable[StateBatch]) -> tuple[ErrorCode, str | None] | None:
    for b in batches:
        if b.first_offset < 0 or b.first_offset > b.last_offset or b.delivery_count < 0 \
                or b.delivery_state not in _DELIVERY_STATES:
            return ErrorCode.INVALID_REQUEST, f"Invalid state batch {b}."
    return None


def _with_complete_count(record: ShareStateRecord, complete: int) -> ShareStateRecord:
    """``record`` with KIP-1226's delivery complete count set (the shard leaves it at -1)."""
    value = record.value
    if not isinstance(value, (ShareSnapshotValue, ShareUpdateValue)) or value.delivery_complete_count == complete:
        return record
    return dataclasses.replace(record, value=dataclasses.replace(value, delivery_complete_count=complete))

