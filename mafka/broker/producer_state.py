"""Idempotent-producer state of one partition: sequence checks, duplicate detection, snapshots.

Follows Apache Kafka 2.8.2 ``core/src/main/scala/kafka/log/ProducerStateManager.scala``
(``ProducerStateEntry``, ``ProducerAppendInfo``, the snapshot schema) and
``Log.analyzeAndValidateProducerState``; the rules are those of
``kafka-protocol.md`` §4.1 and ``zk-controller-replication.md`` §6.

Per producer id the manager keeps a :class:`ProducerStateEntry`: the epoch,
the metadata of the last :data:`NUM_BATCHES_TO_RETAIN` (5) batches of that
epoch (first/last sequence, first/last offset, max timestamp), the last
timestamp, and the coordinator epoch / first offset of the open transaction
(kept for the transaction layer).

Use on the leader, per client batch with a producer id:

1. :meth:`ProducerStateManager.check_and_prepare` → :class:`Verdict`, in
   Kafka's order: a batch of the current epoch whose sequence range equals one
   of the cached batches is a duplicate (answer ``NONE`` with the original
   offsets, write nothing); an older epoch → ``INVALID_PRODUCER_EPOCH``; a
   newer epoch must start at sequence 0, the same epoch must continue at last
   sequence + 1 (``INT32_MAX`` wraps to 0), else
   ``OUT_OF_ORDER_SEQUENCE_NUMBER``; an unknown producer may start at any
   sequence (Kafka ≥ 2.5, KIP-360: never ``UNKNOWN_PRODUCER_ID``); a
   non-transactional batch while the producer has an open transaction →
   ``INVALID_TXN_STATE``.
2. append the batch to the log, then
3. :meth:`ProducerStateManager.record_append` with the offsets it was given.

Followers call only :meth:`~ProducerStateManager.record_append` for every
replicated batch (replication is not re-validated), so a new leader already
de-duplicates.

Transactions (KIP-98; Kafka's ``ongoingTxns`` / ``unreplicatedTxns``):

* a producer's first transactional batch opens its transaction: a
  :class:`TxnMetadata` kept in first-offset order (``ongoing_txns``);
* an end-transaction marker (a COMMIT/ABORT control batch) closes it.  The
  leader checks the marker first with
  :meth:`~ProducerStateManager.check_end_txn_marker` (Kafka's
  ``checkProducerEpoch`` then ``checkCoordinatorEpoch``: an older producer
  epoch → ``INVALID_PRODUCER_EPOCH``, an older coordinator epoch →
  ``TRANSACTION_COORDINATOR_FENCED``); leader, follower and replay then call
  :meth:`~ProducerStateManager.record_end_txn_marker`, which updates the
  producer's epoch, coordinator epoch and timestamp and returns the
  :class:`CompletedTxn` (None for a marker with no open transaction: an ABORT
  of an empty transaction is still written, it just completes nothing);
* the caller computes :meth:`~ProducerStateManager.last_stable_offset` for
  the completed transaction (an aborted one goes into the segment's
  ``.txnindex`` with it), then calls
  :meth:`~ProducerStateManager.complete_txn`, which moves it to the
  unreplicated transactions until the high watermark passes its marker
  (:meth:`~ProducerStateManager.on_high_watermark_updated`);
* the first unstable offset is the first offset of the oldest open or
  unreplicated transaction; the partition's last stable offset is the
  smaller of it (at least the log start offset) and the high watermark.

Truncation:

* :meth:`~ProducerStateManager.truncate_to` (a follower cutting its log's
  tail) drops cached batches at or above the offset; a producer left with no
  cached batch and no open transaction is forgotten (its epoch may come from
  the truncated part), so its next batch is accepted at any sequence.
  Transactions that began at or after the offset are dropped; a completed
  transaction whose marker was cut off (it is still unreplicated: Kafka
  truncates only above the high watermark, unclean elections aside) is open
  again, so the last stable offset cannot pass it.  What its marker changed
  on the producer entry (epoch, coordinator epoch) is not undone.  Kafka
  instead rebuilds the exact state from the newest snapshot at or below the
  offset plus a replay of the log; do that with
  :meth:`~ProducerStateManager.load_latest_snapshot` and
  :meth:`~ProducerStateManager.record_append` /
  :meth:`~ProducerStateManager.record_end_txn_marker` per batch when
  exactness matters.
* :meth:`~ProducerStateManager.truncate_head` (the log start moved) drops
  cached batches wholly below the log start but always keeps a producer's
  newest batch and never forgets a producer, so sequencing continues (Kafka
  2.5+ keeps producer state when the log start moves).  Kafka 2.8 would keep
  all five batches: a retry of a batch whose data was already deleted gets
  ``OUT_OF_ORDER_SEQUENCE_NUMBER`` here instead of a duplicate answer pointing
  below the log start.

Snapshots (``<20-digit offset>.snapshot`` in the partition directory) use
Kafka 2.8's exact layout, big-endian::

    version  int16   = 1
    crc      uint32  CRC-32C of every byte after this field
    count    int32   number of entries
    entries  count × { producer_id int64, epoch int16, last_sequence int32,
                       last_offset int64, offset_delta int32, timestamp int64,
                       coordinator_epoch int32, current_txn_first_offset int64 (-1: none) }

Like Kafka's, a snapshot keeps only each producer's **last** batch
(``offset_delta`` = last offset - first offset, from which the first sequence
and offset are recomputed).  After a restart only that batch is known, so only
a retry of the producer's newest batch is recognised as a duplicate; a retry of
an older one (up to four batches back) gets ``OUT_OF_ORDER_SEQUENCE_NUMBER``.
Entries are written in producer-id order (Kafka writes hash-map order; readers
do not care).  The snapshot at offset N describes the log up to N (exclusive).

Nothing here is thread-safe: the partition's log lock serialises callers, as
Kafka's ``@nonthreadsafe`` manager expects.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import struct
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Final

from crc32c import crc32c

from mafka.errors import ErrorCode
from mafka.log.checkpoint import atomic_write
from mafka.wire.batch import NO_PRODUCER_EPOCH, NO_SEQUENCE, NO_TIMESTAMP

__all__ = [
    "INT32_MAX",
    "NUM_BATCHES_TO_RETAIN",
    "SNAPSHOT_SUFFIX",
    "SNAPSHOT_VERSION",
    "BatchMetadata",
    "CompletedTxn",
    "CorruptSnapshotError",
    "ProducerStateEntry",
    "ProducerStateManager",
    "TxnMetadata",
    "Verdict",
    "decode_snapshot",
    "decrement_sequence",
    "encode_snapshot",
    "increment_sequence",
    "list_snapshot_offsets",
    "read_snapshot",
    "snapshot_path",
]

log = logging.getLogger("mafka.broker.producer_state")

#: ``ProducerStateEntry.NumBatchesToRetain``: batches remembered per producer for de-duplication.
NUM_BATCHES_TO_RETAIN: Final = 5
INT32_MAX: Final = 2**31 - 1

SNAPSHOT_VERSION: Final = 1
SNAPSHOT_SUFFIX: Final = ".snapshot"
_SNAPSHOT_FILE: Final = re.compile(r"(\d{20})\.snapshot")
_HEADER = struct.Struct(">hI")  # version, crc
_COUNT = struct.Struct(">i")
_ENTRY = struct.Struct(">qhiqiqiq")  # the 46-byte ProducerSnapshotEntrySchema
_CRC_START: Final = _HEADER.size  # the CRC covers bytes 6..end


def increment_sequence(sequence: int, increment: int) -> int:
    """``sequence + increment`` in Kafka's sequence space, wrapping past ``INT32_MAX`` to 0."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


def decrement_sequence(sequence: int, decrement: int) -> int:
    """``sequence - decrement`` in Kafka's sequence space, wrapping below 0 to ``INT32_MAX``."""
    if sequence < decrement:
        return INT32_MAX - (decrement - sequence) + 1
    return sequence - decrement


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    """One appended batch of a producer: its sequence range, offsets and max timestamp."""

    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    max_timestamp: int

    @property
    def offset_delta(self) -> int:
        """``last_offset - first_offset`` (what a snapshot stores)."""
        return self.last_offset - self.first_offset


@dataclass(slots=True)
class ProducerStateEntry:
    """What the partition knows about one producer id (Kafka's ``ProducerStateEntry``)."""

    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    #: The newest batches of the current epoch, oldest first (at most :data:`NUM_BATCHES_TO_RETAIN`).
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN))
    #: Epoch of the transaction coordinator that wrote the producer's last marker (-1: none yet).
    coordinator_epoch: int = -1
    #: Max timestamp of the producer's last batch (or marker).
    last_timestamp: int = NO_TIMESTAMP
    #: First offset of the producer's open transaction, ``None`` if none is open.
    current_txn_first_offset: int | None = None

    @property
    def is_empty(self) -> bool:
        return not self.batches

    @property
    def first_seq(self) -> int:
        return self.batches[0].first_seq if self.batches else NO_SEQUENCE

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def first_data_offset(self) -> int:
        return self.batches[0].first_offset if self.batches else -1

    @property
    def last_data_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    @property
    def last_offset_delta(self) -> int:
        return self.batches[-1].offset_delta if self.batches else 0

    def find_duplicate(self, first_seq: int, last_seq: int) -> BatchMetadata | None:
        """The cached batch with exactly this sequence range, oldest first (``batchWithSequenceRange``)."""
        for batch in self.batches:
            if batch.first_seq == first_seq and batch.last_seq == last_seq:
                return batch
        return None

    def copy(self) -> ProducerStateEntry:
        return ProducerStateEntry(
            self.producer_id,
            self.producer_epoch,
            deque(self.batches, maxlen=NUM_BATCHES_TO_RETAIN),
            self.coordinator_epoch,
            self.last_timestamp,
            self.current_txn_first_offset,
        )


@dataclass(slots=True)
class TxnMetadata:
    """An open (or completed but unreplicated) transaction (Kafka's ``TxnMetadata``)."""

    producer_id: int
    first_offset: int
    #: The offset of its marker once completed, else None.
    last_offset: int | None = None


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction closed by a marker (Kafka's ``CompletedTxn``): its first offset, the marker's offset."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


@dataclass(frozen=True, slots=True)
class Verdict:
    """The outcome of :meth:`ProducerStateManager.check_and_prepare`.

    * append: ``error`` is ``NONE`` and ``duplicate`` is ``None`` — write the batch;
    * duplicate: ``error`` is ``NONE`` and ``duplicate`` is the original batch —
      write nothing and answer ``NONE`` with ``duplicate.first_offset`` as the
      base offset (and ``duplicate.max_timestamp`` as the log append time if
      the topic uses LogAppendTime);
    * rejected: ``error`` is the Kafka error to answer with, ``message`` says why.
    """

    error: ErrorCode = ErrorCode.NONE
    duplicate: BatchMetadata | None = None
    message: str = ""

    @property
    def should_append(self) -> bool:
        return self.error is ErrorCode.NONE and self.duplicate is None

    @property
    def is_duplicate(self) -> bool:
        return self.duplicate is not None

    @property
    def base_offset(self) -> int | None:
        """The original base offset of a duplicate, else ``None``."""
        return self.duplicate.first_offset if self.duplicate is not None else None


_APPEND: Final = Verdict()


class CorruptSnapshotError(ValueError):
    """A producer-state snapshot that cannot be used (Kafka's ``CorruptSnapshotException``)."""


# =================================================================== snapshot files


def snapshot_path(directory: str | os.PathLike[str], offset: int) -> Path:
    """``directory/<offset as 20 digits>.snapshot`` (Kafka's ``Log.producerSnapshotFile``)."""
    return Path(directory) / f"{offset:020d}{SNAPSHOT_SUFFIX}"


def list_snapshot_offsets(directory: str | os.PathLike[str]) -> list[int]:
    """Offsets of the snapshot files in ``directory``, ascending (``[]`` if it does not exist)."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    return sorted(int(m.group(1)) for n in names if (m := _SNAPSHOT_FILE.fullmatch(n)))


def encode_snapshot(entries: Iterable[ProducerStateEntry]) -> bytes:
    """The snapshot bytes for ``entries`` (Kafka 2.8's ``PidSnapshotMapSchema``, version 1).

    Raises:
        struct.error: a field does not fit its Kafka type.
    """
    ordered = sorted(entries, key=lambda e: e.producer_id)
    body = bytearray(_COUNT.pack(len(ordered)))
    for e in ordered:
        txn = -1 if e.current_txn_first_offset is None else e.current_txn_first_offset
        body += _ENTRY.pack(
            e.producer_id,
            e.producer_epoch,
            e.last_seq,
            e.last_data_offset,
            e.last_offset_delta,
            e.last_timestamp,
            e.coordinator_epoch,
            txn,
        )
    return _HEADER.pack(SNAPSHOT_VERSION, crc32c(bytes(body))) + bytes(body)


def decode_snapshot(data: bytes) -> list[ProducerStateEntry]:
    """Parse snapshot bytes back into entries (``ProducerStateManager.readSnapshot``).

    An entry whose ``last_offset`` is negative (the producer had only written
    transaction markers) comes back without a cached batch.

    Raises:
        CorruptSnapshotError: truncated data, an unknown version, or a CRC mismatch.
    """
    if len(data) < _HEADER.size + _COUNT.size:
        raise CorruptSnapshotError(f"Snapshot failed schema validation: only {len(data)} bytes")
    version, crc = _HEADER.unpack_from(data, 0)
    (count,) = _COUNT.unpack_from(data, _HEADER.size)
    start = _HEADER.size + _COUNT.size
    if count < 0 or len(data) - start < count * _ENTRY.size:
        raise CorruptSnapshotError(
            f"Snapshot failed schema validation: array of size {count}, only {len(data) - start} bytes available"
        )
    if version != SNAPSHOT_VERSION:
        raise CorruptSnapshotError(f"Snapshot contained an unknown file version {version}")
    computed = crc32c(data[_CRC_START:])
    if crc != computed:
        raise CorruptSnapshotError(
            f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {crc}. Computed crc: {computed}"
        )
    entries = []
    for (pid, epoch, last_seq, last_offset, delta, timestamp, coord_epoch, txn) in _ENTRY.iter_unpack(
        data[start : start + count * _ENTRY.size]
    ):
        entry = ProducerStateEntry(
            pid,
            epoch,
            coordinator_epoch=coord_epoch,
            last_timestamp=timestamp,
            current_txn_first_offset=txn if txn >= 0 else None,
        )
        if last_offset >= 0:
            entry.batches.append(
                BatchMetadata(
                    decrement_sequence(last_seq, delta), last_seq, last_offset - delta, last_offset, timestamp
                )
            )
        entries.append(entry)
    return entries


def read_snapshot(path: str | os.PathLike[str]) -> list[ProducerStateEntry]:
    """Read and parse one snapshot file.

    Raises:
        OSError: the file cannot be read.
        CorruptSnapshotError: see :func:`decode_snapshot` (the message names the file).
    """
    data = Path(path).read_bytes()
    try:
        return decode_snapshot(data)
    except CorruptSnapshotError as exc:
        raise CorruptSnapshotError(f"{path}: {exc}") from None


# =================================================================== the manager


class ProducerStateManager:
    """Producer-id state of one partition (Kafka's ``ProducerStateManager``); see the module docstring."""

    def __init__(self, topic_partition: str = "") -> None:
        """An empty state; ``topic_partition`` only labels log messages."""
        self.topic_partition = topic_partition
        self._producers: dict[int, ProducerStateEntry] = {}
        #: One past the last offset recorded (Kafka's ``mapEndOffset``).
        self.map_end_offset = 0
        # Kafka's ongoingTxns / unreplicatedTxns (TreeMaps by first offset): dicts
        # kept in ascending first-offset order (transactions open in log order;
        # loads and truncations re-sort).
        self._ongoing: dict[int, TxnMetadata] = {}
        self._unreplicated: dict[int, TxnMetadata] = {}

    def __repr__(self) -> str:
        return f"ProducerStateManager({self.topic_partition!r}, {len(self._producers)} producers)"

    # ------------------------------------------------------------ queries

    @property
    def producers(self) -> Mapping[int, ProducerStateEntry]:
        """A read-only view of the producers by id (do not mutate the entries)."""
        return MappingProxyType(self._producers)

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self._producers.get(producer_id)

    def __len__(self) -> int:
        return len(self._producers)

    @property
    def ongoing_txns(self) -> list[TxnMetadata]:
        """The open transactions, oldest first (do not mutate them)."""
        return list(self._ongoing.values())

    @property
    def unreplicated_txns(self) -> list[TxnMetadata]:
        """Completed transactions whose marker the high watermark has not passed, by first offset."""
        return sorted(self._unreplicated.values(), key=lambda t: t.first_offset)

    @property
    def first_undecided_offset(self) -> int | None:
        """The first offset of the oldest open transaction (Kafka's ``firstUndecidedOffset``)."""
        return next(iter(self._ongoing), None)

    @property
    def first_unstable_offset(self) -> int | None:
        """The first offset of the oldest open or unreplicated transaction, or None (Kafka's ``firstUnstableOffset``)."""
        undecided = next(iter(self._ongoing), None)
        if not self._unreplicated:
            return undecided
        unreplicated = min(self._unreplicated)
        return unreplicated if undecided is None or unreplicated < undecided else undecided

    def on_high_watermark_updated(self, high_watermark: int) -> None:
        """Forget completed transactions whose marker is below *high_watermark* (Kafka's ``onHighWatermarkUpdated``)."""
        if self._unreplicated:
            self._remove_unreplicated_below(high_watermark)

    def _remove_unreplicated_below(self, offset: int) -> None:
        for first, txn in list(self._unreplicated.items()):
            if txn.last_offset is not None and txn.last_offset < offset:
                del self._unreplicated[first]

    def _add_ongoing(self, txn: TxnMetadata) -> None:
        ongoing = self._ongoing
        last = next(reversed(ongoing), None) if ongoing else None
        ongoing[txn.first_offset] = txn
        if last is not None and txn.first_offset < last:
            self._ongoing = dict(sorted(ongoing.items()))

    # ------------------------------------------------------------ leader appends

    def check_and_prepare(
        self,
        producer_id: int,
        producer_epoch: int,
        base_sequence: int,
        last_sequence: int,
        is_transactional: bool = False,
        *,
        check_sequence: bool = True,
    ) -> Verdict:
        """Validate a batch against the producer's state; nothing is changed.

        Args:
            producer_id: the batch's producer id; negative means not idempotent (always appended).
            producer_epoch: the batch's producer epoch.
            base_sequence: the batch's first sequence number.
            last_sequence: ``increment_sequence(base_sequence, last_offset_delta)``.
            is_transactional: the batch's transactional attribute bit.
            check_sequence: False for a coordinator's own batch (a group
                coordinator's transactional offset commit, Kafka's
                ``AppendOrigin.Coordinator``): no duplicate lookup and no
                sequence checks, only epoch fencing and the transaction state.

        Returns:
            A :class:`Verdict`: append, duplicate (with the original offsets) or an error.
        """
        if producer_id < 0:
            return _APPEND
        if not check_sequence:
            return self._check_epoch_and_txn(producer_id, producer_epoch, is_transactional)
        if base_sequence < 0:
            return Verdict(
                ErrorCode.INVALID_RECORD,
                message=f"producer {producer_id} sent a batch without a sequence number ({base_sequence})",
            )
        entry = self._producers.get(producer_id)
        current_epoch = entry.producer_epoch if entry is not None else NO_PRODUCER_EPOCH

        # 1. Same epoch and an identical sequence range among the cached batches: a retry.
        if entry is not None and producer_epoch == current_epoch:
            duplicate = entry.find_duplicate(base_sequence, last_sequence)
            if duplicate is not None:
                return Verdict(duplicate=duplicate)

        # 2. Fencing: an older epoch.
        if producer_epoch < current_epoch:
            return Verdict(
                ErrorCode.INVALID_PRODUCER_EPOCH,
                message=f"Epoch of producer {producer_id} in {self.topic_partition} is {producer_epoch}, "
                f"which is smaller than the last seen epoch {current_epoch}",
            )

        # 3./4. Sequence continuity (ProducerAppendInfo.checkSequence).
        if producer_epoch != current_epoch:
            if base_sequence != 0 and current_epoch != NO_PRODUCER_EPOCH:
                return Verdict(
                    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                    message=f"Invalid sequence number for new epoch of producer {producer_id} in "
                    f"{self.topic_partition}: {producer_epoch} (request epoch), {base_sequence} (seq. number), "
                    f"{current_epoch} (current producer epoch)",
                )
        else:
            # 5. No epoch known (no state): any sequence is accepted (Kafka >= 2.5).
            last_seq = entry.last_seq if entry is not None else NO_SEQUENCE
            if current_epoch != NO_PRODUCER_EPOCH and not _in_sequence(last_seq, base_sequence):
                return Verdict(
                    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                    message=f"Out of order sequence number for producer {producer_id} in "
                    f"{self.topic_partition}: {base_sequence} (incoming seq. number), "
                    f"{last_seq} (current end sequence number)",
                )

        return self._check_epoch_and_txn(producer_id, producer_epoch, is_transactional)

    def _check_epoch_and_txn(self, producer_id: int, producer_epoch: int, is_transactional: bool) -> Verdict:
        """Epoch fencing and a plain batch inside an open transaction (ProducerAppendInfo.appendDataBatch)."""
        entry = self._producers.get(producer_id)
        if entry is None:
            return _APPEND
        if producer_epoch < entry.producer_epoch:
            return Verdict(
                ErrorCode.INVALID_PRODUCER_EPOCH,
                message=f"Epoch of producer {producer_id} in {self.topic_partition} is {producer_epoch}, "
                f"which is smaller than the last seen epoch {entry.producer_epoch}",
            )
        if entry.current_txn_first_offset is not None and not is_transactional:
            return Verdict(
                ErrorCode.INVALID_TXN_STATE,
                message=f"Expected transactional write from producer {producer_id} in {self.topic_partition}",
            )
        return _APPEND

    def record_append(
        self,
        producer_id: int,
        epoch: int,
        first_seq: int,
        last_seq: int,
        first_offset: int,
        last_offset: int,
        max_timestamp: int,
        *,
        is_transactional: bool = False,
    ) -> None:
        """Record a batch the log has just written (leader after :meth:`check_and_prepare`, or follower).

        Not validated (Kafka does not re-validate replication).  A different
        epoch replaces the producer's epoch and forgets its cached batches; the
        sixth cached batch pushes out the oldest.  A transactional batch opens
        the producer's transaction if none is open.  Non-idempotent batches
        (negative ``producer_id``) only advance :attr:`map_end_offset`.
        """
        self.map_end_offset = max(self.map_end_offset, last_offset + 1)
        if producer_id < 0:
            return
        entry = self._producers.get(producer_id)
        if entry is None:
            entry = self._producers[producer_id] = ProducerStateEntry(producer_id)
        if entry.producer_epoch != epoch:
            entry.batches.clear()
            entry.producer_epoch = epoch
        entry.batches.append(BatchMetadata(first_seq, last_seq, first_offset, last_offset, max_timestamp))
        entry.last_timestamp = max_timestamp
        if is_transactional and entry.current_txn_first_offset is None:
            entry.current_txn_first_offset = first_offset
            self._add_ongoing(TxnMetadata(producer_id, first_offset))

    # ------------------------------------------------------------ transaction markers

    def check_end_txn_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int) -> Verdict:
        """Validate a marker the transaction coordinator asks the leader to write; nothing is changed.

        Kafka's ``appendEndTxnMarker`` with origin Coordinator: an epoch older
        than the producer's → ``INVALID_PRODUCER_EPOCH`` (2.8's
        ``checkProducerEpoch``); a coordinator epoch older than the one of the
        producer's last marker → ``TRANSACTION_COORDINATOR_FENCED``.  An
        unknown producer passes both.
        """
        entry = self._producers.get(producer_id)
        if entry is None:
            return _APPEND
        if producer_epoch < entry.producer_epoch:
            return Verdict(
                ErrorCode.INVALID_PRODUCER_EPOCH,
                message=f"Epoch of producer {producer_id} in {self.topic_partition} is {producer_epoch}, "
                f"which is smaller than the last seen epoch {entry.producer_epoch}",
            )
        if entry.coordinator_epoch > coordinator_epoch:
            return Verdict(
                ErrorCode.TRANSACTION_COORDINATOR_FENCED,
                message=f"Invalid coordinator epoch for producerId {producer_id} in {self.topic_partition}: "
                f"{coordinator_epoch} (zombie), {entry.coordinator_epoch} (current)",
            )
        return _APPEND

    def record_end_txn_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        offset: int,
        timestamp: int,
        *,
        is_abort: bool,
    ) -> CompletedTxn | None:
        """Record a COMMIT/ABORT marker the log has just written at *offset*.

        Not validated (a leader calls :meth:`check_end_txn_marker` first;
        replication and replay are trusted, as Kafka's origin Replication).
        The producer takes the marker's epoch (a different one forgets its
        cached batches), coordinator epoch and timestamp; its transaction, if
        one is open, is returned — still open until :meth:`complete_txn`.

        Returns:
            The :class:`CompletedTxn`, or None when the producer had no open
            transaction (an empty transaction's marker).
        """
        self.map_end_offset = max(self.map_end_offset, offset + 1)
        entry = self._producers.get(producer_id)
        if entry is None:
            entry = self._producers[producer_id] = ProducerStateEntry(producer_id)
        first = entry.current_txn_first_offset
        completed = None if first is None else CompletedTxn(producer_id, first, offset, is_abort)
        if entry.producer_epoch != producer_epoch:
            entry.batches.clear()
            entry.producer_epoch = producer_epoch
        entry.current_txn_first_offset = None
        entry.coordinator_epoch = coordinator_epoch
        entry.last_timestamp = timestamp
        return completed

    def last_stable_offset(self, completed: CompletedTxn) -> int:
        """The LSO once *completed* is done: the oldest other producer's open transaction, else past its marker.

        Kafka's ``lastStableOffset(completedTxn)``: what the ``.txnindex``
        entry of an aborted transaction records.  Call it before :meth:`complete_txn`.
        """
        for txn in self._ongoing.values():
            if txn.producer_id != completed.producer_id:
                return txn.first_offset
        return completed.last_offset + 1

    def complete_txn(self, completed: CompletedTxn) -> None:
        """Close *completed*: it stays unstable until the high watermark passes its marker (Kafka's ``completeTxn``)."""
        txn = self._ongoing.pop(completed.first_offset, None)
        if txn is None:
            # Kafka throws here; the entry and the transaction map disagree only
            # after an approximate truncation, so keep going with what is known.
            log.warning("%s: completing transaction %s, which was not started", self.topic_partition, completed)
            txn = TxnMetadata(completed.producer_id, completed.first_offset)
        txn.last_offset = completed.last_offset
        self._unreplicated[completed.first_offset] = txn

    def remove_expired_producers(self, now_ms: int, expiration_ms: int) -> list[int]:
        """Forget producers idle for ``expiration_ms`` with no open transaction; their ids.

        Kafka runs this every ``producer.id.expiration.check.interval.ms`` (10
        min) with ``transactional.id.expiration.ms`` (7 days).
        """
        expired = [
            pid
            for pid, e in self._producers.items()
            if e.current_txn_first_offset is None and now_ms - e.last_timestamp >= expiration_ms
        ]
        for pid in expired:
            del self._producers[pid]
        return expired

    # ------------------------------------------------------------ truncation

    def truncate_to(self, offset: int) -> None:
        """The log was truncated to end at ``offset``: drop what it no longer holds.

        Cached batches with ``last_offset >= offset`` are dropped; an open
        transaction that began at or after ``offset`` is closed; a completed,
        unreplicated transaction whose marker is at or after ``offset`` but
        which began before it is open again; a producer that loses its last
        cached batch and has no open transaction is forgotten.  See the module
        docstring for the exact (snapshot + replay) alternative.
        """
        producers = self._producers
        emptied = set()
        for pid, entry in producers.items():
            had_batches = bool(entry.batches)
            while entry.batches and entry.batches[-1].last_offset >= offset:
                entry.batches.pop()
            if had_batches and not entry.batches:
                emptied.add(pid)
            if entry.current_txn_first_offset is not None and entry.current_txn_first_offset >= offset:
                entry.current_txn_first_offset = None
        ongoing = {first: txn for first, txn in self._ongoing.items() if first < offset}
        for first, txn in list(self._unreplicated.items()):
            if first >= offset:
                del self._unreplicated[first]
            elif txn.last_offset is not None and txn.last_offset >= offset:
                # Its marker is gone: the transaction is undecided again.
                del self._unreplicated[first]
                ongoing[first] = TxnMetadata(txn.producer_id, first)
                txn_entry = producers.get(txn.producer_id)
                if txn_entry is None:
                    txn_entry = producers[txn.producer_id] = ProducerStateEntry(txn.producer_id)
                txn_entry.current_txn_first_offset = first
        self._ongoing = dict(sorted(ongoing.items()))
        for pid in emptied:
            if producers[pid].current_txn_first_offset is None:
                del producers[pid]
        self.map_end_offset = min(self.map_end_offset, offset)

    def truncate_head(self, log_start_offset: int) -> None:
        """The log start moved to ``log_start_offset``: drop cached batches wholly below it.

        Each producer keeps its newest batch (so its sequence continues) and no
        producer is forgotten, as in Kafka 2.5+.
        """
        for entry in self._producers.values():
            while len(entry.batches) > 1 and entry.batches[0].last_offset < log_start_offset:
                entry.batches.popleft()
        self._remove_unreplicated_below(log_start_offset)  # Kafka's onLogStartOffsetIncremented
        self.map_end_offset = max(self.map_end_offset, log_start_offset)

    def clear(self, offset: int = 0) -> None:
        """Forget every producer and transaction (the log was emptied and restarts at ``offset``)."""
        self._producers.clear()
        self._ongoing.clear()
        self._unreplicated.clear()
        self.map_end_offset = offset

    # ------------------------------------------------------------ snapshots

    def write_snapshot(self, directory: str | os.PathLike[str], offset: int, *, fsync: bool = True) -> Path:
        """Atomically write the current state as ``directory/<offset>.snapshot``; its path.

        ``offset`` is the log end offset the state describes (normally
        :attr:`map_end_offset`; Kafka writes one at every segment roll and at
        shutdown).  Only each producer's last batch is stored.

        Raises:
            OSError: writing failed.
        """
        path = snapshot_path(directory, offset)
        atomic_write(path, encode_snapshot(self._producers.values()), fsync=fsync)
        log.debug("wrote producer snapshot %s with %d producer ids", path, len(self._producers))
        return path

    def load_latest_snapshot(
        self, directory: str | os.PathLike[str], log_end_offset: int, *, at_most: int | None = None
    ) -> int | None:
        """Replace the state by the newest usable snapshot at or below ``log_end_offset`` (and ``at_most``).

        Snapshots above ``log_end_offset`` describe log that no longer exists
        and are deleted (as Kafka's ``truncateAndReload`` does: left behind, a
        later load would pick them up once the log grew past them).  Those
        between ``at_most`` and ``log_end_offset`` are kept but not used (a
        recovery replays from below a recovered segment).  A corrupt snapshot
        is logged, deleted, and the next older one tried.  The open
        transactions are the entries' ``current_txn_first_offset`` s; no
        completed transaction is unreplicated.  Afterwards replay the batches
        from the returned offset up to the log end with :meth:`record_append`
        and :meth:`record_end_txn_marker`.

        Returns:
            The loaded snapshot's offset (also the new :attr:`map_end_offset`),
            or ``None`` if none was usable (the state is then empty and
            :attr:`map_end_offset` is 0).
        """
        offsets = list_snapshot_offsets(directory)
        for offset in offsets:
            if offset > log_end_offset:
                self._delete(snapshot_path(directory, offset))
        limit = log_end_offset if at_most is None else min(at_most, log_end_offset)
        self._ongoing = {}
        self._unreplicated = {}
        for offset in reversed([o for o in offsets if o <= limit]):
            path = snapshot_path(directory, offset)
            try:
                entries = read_snapshot(path)
            except CorruptSnapshotError as exc:
                log.warning("Failed to load producer snapshot from '%s': %s", path, exc)
                self._delete(path)
                continue
            self._producers = {e.producer_id: e for e in entries}
            self._ongoing = {
                e.current_txn_first_offset: TxnMetadata(e.producer_id, e.current_txn_first_offset)
                for e in sorted(entries, key=lambda e: e.current_txn_first_offset or 0)
                if e.current_txn_first_offset is not None
            }
            self.map_end_offset = offset
            log.info("loaded producer state of %s from snapshot %s", self.topic_partition, path)
            return offset
        self._producers = {}
        self.map_end_offset = 0
        return None

    def delete_snapshots_after(self, directory: str | os.PathLike[str], offset: int) -> list[int]:
        """Delete the snapshots with an offset above ``offset`` (they describe truncated log); the offsets deleted."""
        gone = [o for o in list_snapshot_offsets(directory) if o > offset]
        for o in gone:
            self._delete(snapshot_path(directory, o))
        return gone

    def delete_snapshots_before(self, directory: str | os.PathLike[str], offset: int) -> list[int]:
        """Delete the snapshots with an offset below ``offset``; the offsets deleted."""
        gone = [o for o in list_snapshot_offsets(directory) if o < offset]
        for o in gone:
            self._delete(snapshot_path(directory, o))
        return gone

    @staticmethod
    def _delete(path: Path) -> None:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
