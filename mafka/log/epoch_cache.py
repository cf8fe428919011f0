"""The leader-epoch cache: which leader epoch wrote which range of a partition's log.

Kafka 2.8's ``LeaderEpochFileCache`` (KIP-101, KIP-279): a map epoch -> first
offset written in that epoch, persisted in the partition's
``leader-epoch-checkpoint``.  Leaders answer OffsetsForLeaderEpoch with
:meth:`LeaderEpochCache.end_offset_for`; followers use the same answer on their
own cache to find where their log diverges from the leader's.

Contract:

* :attr:`LeaderEpochCache.entries` is strictly increasing in both ``epoch``
  and ``start_offset`` after every operation, including loading a checkpoint
  that is not (loading goes through :meth:`~LeaderEpochCache.assign`, exactly
  as Kafka does, so conflicting lines are dropped).
* Every call that changes the entries has the checkpoint rewritten atomically,
  by a writer thread, moments after it returns (no write when nothing
  changed; nothing is written at load); :meth:`LeaderEpochCache.sync` and
  :meth:`LeaderEpochCache.flush` write it before they return.  If the write
  fails, the in-memory state has already changed, as in Kafka, and the next
  ``sync`` raises: the log manager then takes the whole log directory offline.
* Not thread-safe: the owning log serialises calls.

Example:
    >>> cache = LeaderEpochCache()
    >>> for epoch, start in [(0, 0), (1, 4), (5, 6)]:
    ...     _ = cache.assign(epoch, start)
    >>> cache.end_offset_for(4, log_end_offset=10)  # largest epoch <= 4 is 1; epoch 5 starts at 6
    (1, 6)
    >>> cache.end_offset_for(5, log_end_offset=10)  # the latest epoch ends at the log end
    (5, 10)
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from operator import attrgetter
from pathlib import Path
from typing import Final, Protocol

from mafka.log.checkpoint import (
    LEADER_EPOCH_CHECKPOINT,
    CorruptCheckpointError,
    EpochEntry,
    LeaderEpochCheckpointFile,
)

__all__ = [
    "UNDEFINED_EPOCH",
    "UNDEFINED_EPOCH_OFFSET",
    "EpochCheckpoint",
    "EpochEntry",
    "LeaderEpochCache",
]

# OffsetsForLeaderEpochResponse.UNDEFINED_EPOCH / UNDEFINED_EPOCH_OFFSET (= NO_PARTITION_LEADER_EPOCH).
UNDEFINED_EPOCH: Final = -1
UNDEFINED_EPOCH_OFFSET: Final = -1

_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1
_epoch_of = attrgetter("epoch")
_start_of = attrgetter("start_offset")


class EpochCheckpoint(Protocol):
    """What the cache needs from its checkpoint (:class:`LeaderEpochCheckpointFile` fits)."""

    def read(self) -> Sequence[EpochEntry]: ...

    def write(self, entries: Iterable[EpochEntry], *, sync: bool = True) -> None: ...

    def sync(self) -> None: ...


class LeaderEpochCache:
    """Epoch -> start offset entries of one partition, optionally backed by a checkpoint file.

    Every change has the checkpoint file rewritten moments later by a
    writer thread and does not fsync it (Kafka 3.7, KAFKA-15046, goes as far
    as not fsyncing): a new leader epoch is assigned on the reactor, for
    every partition a LeaderAndIsr makes this broker lead — thousands of
    file rewrites, or fsyncs, in a row otherwise
    (:class:`~mafka.log.checkpoint.LeaderEpochCheckpointFile`).  :meth:`sync`
    writes what is pending and fsyncs it; the log manager calls
    it for every log of a dir before it writes that dir's recovery points
    (:mod:`mafka.log.manager.dir_checkpoints`), so the epochs of everything
    below a recorded recovery point are durable.  What a crash may lose is
    an entry for data above the recovery point, which recovery reassigns from
    the batches' epochs (:func:`mafka.log.recovery.recover_segments`), or an
    epoch without data, which no truncation needs.
    """

    def __init__(self, checkpoint: EpochCheckpoint | None = None) -> None:
        """Load the entries from ``checkpoint`` (``None``: in memory only).

        Raises:
            CorruptCheckpointError: the file is malformed or holds a negative
                epoch or start offset.
        """
        self._checkpoint = checkpoint
        self._entries: list[EpochEntry] = []
        if checkpoint is None:
            return
        for entry in checkpoint.read():
            try:
                self._assign(EpochEntry(*entry))
            except ValueError as exc:
                path = Path(getattr(checkpoint, "path", LEADER_EPOCH_CHECKPOINT))
                raise CorruptCheckpointError(path, str(exc)) from None

    @classmethod
    def in_dir(cls, partition_dir: Path, *, fsync: bool = True) -> LeaderEpochCache:
        """The cache backed by ``partition_dir/leader-epoch-checkpoint`` (loaded now)."""
        return cls(LeaderEpochCheckpointFile.in_dir(partition_dir, fsync=fsync))

    def __repr__(self) -> str:
        return f"LeaderEpochCache({self._entries!r})"

    def __len__(self) -> int:
        return len(self._entries)

    # ------------------------------------------------------------------ queries

    @property
    def checkpoint(self) -> EpochCheckpoint | None:
        """The backing checkpoint, or ``None`` for an in-memory cache."""
        return self._checkpoint

    @property
    def entries(self) -> list[EpochEntry]:
        """A copy of the entries, in increasing epoch (and start offset) order."""
        return list(self._entries)

    @property
    def latest_entry(self) -> EpochEntry | None:
        """The entry with the highest epoch, or ``None`` if empty."""
        return self._entries[-1] if self._entries else None

    @property
    def latest_epoch(self) -> int | None:
        """The highest epoch with an entry (the current leader epoch on a leader), or ``None``."""
        return self._entries[-1].epoch if self._entries else None

    @property
    def previous_epoch(self) -> int | None:
        """The epoch just below :attr:`latest_epoch`, or ``None`` (Kafka's ``previousEpoch``)."""
        return self._entries[-2].epoch if len(self._entries) >= 2 else None

    @property
    def earliest_entry(self) -> EpochEntry | None:
        """The entry with the lowest epoch, or ``None`` if empty."""
        return self._entries[0] if self._entries else None

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch that wrote ``offset``: the last entry starting at or before it.

        Offsets past the latest entry belong to the latest epoch (the cache does
        not know the log end); offsets before the first entry, or an empty
        cache, give ``None``.  (Kafka 3.x ``epochForOffset``; 2.8 has no such method.)
        """
        index = bisect_right(self._entries, offset, key=_start_of)
        return self._entries[index - 1].epoch if index else None

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """Answer OffsetsForLeaderEpoch: (epoch, end offset) for ``requested_epoch``.

        Exactly Kafka 2.8's ``endOffsetFor``:

        * ``requested_epoch`` is :data:`UNDEFINED_EPOCH` -> ``(-1, -1)``;
        * it is the latest epoch -> ``(requested_epoch, log_end_offset)``;
        * no entry has a higher epoch (above the latest, or the cache is empty)
          -> ``(-1, -1)``;
        * no entry has an epoch <= it (older than everything cached, e.g. after
          retention removed the early epochs) -> ``(requested_epoch, start offset
          of the first entry)``: the requested epoch is echoed, not an epoch the
          cache knows;
        * otherwise -> ``(largest cached epoch <= requested, start offset of the
          next higher cached epoch)``.

        Args:
            requested_epoch: the epoch the follower (or consumer) asks about.
            log_end_offset: the log's current end offset, the end of the latest epoch.
        """
        entries = self._entries
        if requested_epoch == UNDEFINED_EPOCH:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if entries and entries[-1].epoch == requested_epoch:
            return requested_epoch, log_end_offset
        higher = bisect_right(entries, requested_epoch, key=_epoch_of)
        if higher == len(entries):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if higher == 0:
            return requested_epoch, entries[0].start_offset
        return entries[higher - 1].epoch, entries[higher].start_offset

    # ------------------------------------------------------------------ mutations

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset``; checkpoint if anything changed.

        Kafka's ``assign``: a no-op when ``epoch`` is the latest epoch and
        ``start_offset`` is not below its start (the usual call for every batch
        appended in the current epoch).  Otherwise every entry conflicting with
        the new one, i.e. with ``epoch >=`` the new epoch or ``start_offset >=``
        the new start, is removed from the end first, then the new entry is
        appended.  So assigning an *older* epoch truncates the newer ones, and
        re-assigning the latest epoch at a smaller offset moves it back.

        Returns:
            Whether the entries changed.

        Raises:
            ValueError: ``epoch`` is not in [0, 2**31) or ``start_offset`` not in
                [0, 2**63).
        """
        changed = self._assign(EpochEntry(epoch, start_offset))
        if changed:
            self._flush()
        return changed

    def truncate_from_end(self, end_offset: int) -> bool:
        """The log was truncated to ``end_offset``: drop entries starting at or after it.

        Negative ``end_offset`` (:data:`UNDEFINED_EPOCH_OFFSET`) is ignored, as in Kafka.

        Returns:
            Whether the entries changed (and the checkpoint was rewritten).
        """
        if end_offset < 0 or not self._entries or self._entries[-1].start_offset < end_offset:
            return False
        del self._entries[bisect_left(self._entries, end_offset, key=_start_of) :]
        self._flush()
        return True

    def truncate_from_start(self, start_offset: int) -> bool:
        """The log start moved up to ``start_offset``: forget what lies before it.

        Kafka's ``truncateFromStart``: entries starting at or before
        ``start_offset`` are removed and the last of them is put back starting
        at ``start_offset``, so the epoch that was current at the new log
        start keeps covering it.  An entry starting exactly at ``start_offset``
        is therefore kept unchanged ("exclusive"), and if every entry starts
        before ``start_offset`` the latest one is moved up to it.  Offsets before
        the first entry change nothing.

        Returns:
            Whether the entries changed (and the checkpoint was rewritten).
        """
        removed = bisect_right(self._entries, start_offset, key=_start_of)
        if removed == 0:
            return False
        replacement = EpochEntry(self._entries[removed - 1].epoch, start_offset)
        if removed == 1 and self._entries[0] == replacement:
            return False
        self._entries[:removed] = [replacement]
        self._flush()
        return True

    def clear(self) -> None:
        """Remove every entry and rewrite the checkpoint (Kafka's ``clearAndFlush``)."""
        self._entries.clear()
        self._flush()

    def flush(self) -> None:
        """Rewrite the checkpoint from memory now (no-op for an in-memory cache).

        Raises:
            OSError: the write failed.
        """
        if self._checkpoint is not None:
            self._checkpoint.write(list(self._entries), sync=True)

    # ------------------------------------------------------------------ internals

    def _assign(self, entry: EpochEntry) -> bool:
        """Apply Kafka's assign rule to memory only; True if the entries changed."""
        epoch, start_offset = entry
        if not 0 <= epoch <= _INT32_MAX or not 0 <= start_offset <= _INT64_MAX:
            raise ValueError(f"invalid partition leader epoch entry {entry}")
        entries = self._entries
        if entries and entries[-1].epoch == epoch and start_offset >= entries[-1].start_offset:
            return False
        # Entries are increasing in both fields, so the conflicting ones form a suffix.
        while entries and (entries[-1].epoch >= epoch or entries[-1].start_offset >= start_offset):
            entries.pop()
        entries.append(EpochEntry(epoch, start_offset))
        return True

    def close(self) -> None:
        """The checkpoint takes no more writes and drops a pending one (its directory is about to be removed)."""
        close = getattr(self._checkpoint, "close", None)
        if close is not None:
            close()

    def sync(self) -> None:
        """Writes a pending change and makes the checkpoint file durable if a change since the last sync was not.

        See the class docstring.

        Raises:
            OSError: the write or the fsync failed.
        """
        if self._checkpoint is not None:
            self._checkpoint.sync()

    def _flush(self) -> None:
        if self._checkpoint is not None:
            self._checkpoint.write(list(self._entries), sync=False)
