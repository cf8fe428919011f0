"""Opening a :class:`~mafka.log.log.Log`'s files after a crash: Kafka's log recovery.

Owns what :meth:`Log.open <mafka.log.log.Log.open>` does before the log
exists for anyone else: finding its segments (:func:`open_segments`) —
completing what a crash left of the cleaner's crash-safe swaps
(:func:`clean_leftovers`, :func:`drop_segments_replaced_by_swaps`) and of
moves to the cold tier (:func:`mafka.log.tiering.resolve_tiers`) — and,
after an unclean shutdown, re-reading the segments from the recovery point
on, cutting at the first invalid batch and adding the leader epochs it
meets to the epoch cache (:func:`recover_segments`).

Locking: none.  These functions run on the thread that opens the log (the
log manager, loading its dirs at startup, creating a log, or creating the
future log of a replica move), on segments and an epoch cache that no other
thread can reach yet: ``Log.open`` hands the log out only once they are done.
"""

from __future__ import annotations

import bisect
import logging
import os
from pathlib import Path

from mafka.wire.batch import BatchHeader

from .config import LogConfig
from .epoch_cache import LeaderEpochCache
from .segment import LogSegment
from .tiering import resolve_tiers

__all__ = ["clean_leftovers", "drop_segments_replaced_by_swaps", "open_segments", "recover_segments"]

log = logging.getLogger("mafka.log")


def open_segments(directory: Path, cold_directory: Path | None, config: LogConfig, now: int) -> list[LogSegment]:
    """The segments of the log in *directory* and *cold_directory*, in offset order, after completing
    or undoing what a crash left: cleaner leftovers (:func:`clean_leftovers`,
    :func:`drop_segments_replaced_by_swaps`) and tier moves (:func:`~mafka.log.tiering.resolve_tiers`)."""
    segments: list[LogSegment] = []
    swapped = clean_leftovers(directory)
    hot, cold_list = resolve_tiers(directory, cold_directory)
    cold = set(cold_list)
    for base in sorted([*hot, *cold]):
        if base in cold:
            assert cold_directory is not None
            seg = LogSegment.open(cold_directory, base, config, now)
            seg.cold = True
        else:
            seg = LogSegment.open(directory, base, config, now)
        segments.append(seg)
    drop_segments_replaced_by_swaps(directory.name, segments, swapped)
    return segments


def clean_leftovers(directory: Path) -> list[int]:
    """Removes ``.cleaned``/``.deleted`` files and completes ``.swap`` files (Kafka's rules)."""
    swapped = []
    for path in sorted(directory.iterdir()):
        name = path.name
        if name.endswith(".cleaned") or name.endswith(".deleted"):
            path.unlink()
        elif name.endswith(".swap"):
            final = path.with_name(name[: -len(".swap")])
            os.replace(path, final)
            if final.suffix == ".log":
                swapped.append(int(final.stem))
    return swapped


def drop_segments_replaced_by_swaps(name: str, segments: list[LogSegment], swapped: list[int]) -> None:
    """Drops the segments a completed ``.swap`` replaced (their offsets are inside the swapped one)."""
    for base in swapped:
        swap = next(s for s in segments if s.base_offset == base)
        swap.recover()  # its indexes may be the replaced segment's (Kafka's recoverSegment)
        for seg in list(segments):
            if seg is not swap and base < seg.base_offset < swap.next_offset:
                log.warning("%s: dropping %s, replaced by a completed swap", name, seg.log_path.name)
                segments.remove(seg)
                seg.delete_files()


def recover_segments(name: str, segments: list[LogSegment], epoch_cache: LeaderEpochCache, recovery_point: int) -> None:
    """Re-reads segments from the recovery point on; cuts at the first invalid batch."""
    i = max(0, bisect.bisect_right([s.base_offset for s in segments], recovery_point) - 1)
    latest = epoch_cache.latest_epoch

    def on_batch(h: BatchHeader) -> None:
        nonlocal latest
        epoch = h.partition_leader_epoch
        if epoch >= 0 and (latest is None or epoch > latest):
            epoch_cache.assign(epoch, h.base_offset)
            latest = epoch

    for j in range(i, len(segments)):
        seg = segments[j]
        cut = seg.recover(on_batch, max_batch_size=None)
        if cut:
            later = segments[j + 1 :]
            log.warning(
                "%s: unclean shutdown; cut %d bytes from %s at offset %d%s",
                name,
                cut,
                seg.log_path.name,
                seg.next_offset,
                f" and deleted {len(later)} later segment(s)" if later else "",
            )
            for dead in later:
                dead.delete_files()
            del segments[j + 1 :]
            break
    if segments:
        epoch_cache.truncate_from_end(segments[-1].next_offset)
