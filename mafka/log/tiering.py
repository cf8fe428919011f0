"""Hot/cold (SSD/HDD) placement of a partition's segments: Mafka's hybrid storage.

A log lives in a *hot* partition directory (``<log dir>/<topic>-<partition>``,
which also holds its checkpoints and the active segment).  Old segments may
live in a *cold* partition directory of the same name under one of
``mafka.cold.log.dirs``.  A segment is in exactly one of the two.

Moving one segment hot → cold (:func:`move_segment`) is crash safe:

1. copy ``.index``, ``.timeindex``, ``.txnindex`` and ``.log`` into the cold
   dir as ``<name>.moving``, fsync each file and the dir;
2. rename the index files to their final names, then the ``.log`` file (the
   switch: from here on the cold copy is the segment), fsync the dir;
3. rename the hot files to ``.deleted`` (removed after ``file.delete.delay.ms``,
   so reads in flight on the old file descriptors finish).

Opening a log (:func:`resolve_tiers`) undoes or completes a crashed move:
``.moving`` files are removed; a cold index without its cold ``.log`` (a crash
inside step 2) is removed; a base offset with a ``.log`` in both dirs (a crash
between steps 2 and 3) keeps the cold copy and removes the hot one.  At every
step exactly one valid copy is left.

Only segments below the recovery point move (they are flushed, so recovery
never re-reads the cold tier), never the active one, never a compacted log's
(the cleaner rewrites segments in the hot dir).  Which ones move is
:func:`segments_to_move`: older than ``mafka.hot.retention.ms`` (by their
largest timestamp, as ``retention.ms``) or further than
``mafka.hot.retention.bytes`` from the log end.
"""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

from .checkpoint import fsync_dir
from .segment import LogSegment, log_file_name

__all__ = ["MOVING_SUFFIX", "MoveAborted", "TieredLog", "move_segment", "resolve_tiers", "segments_to_move"]

log = logging.getLogger(__name__)

MOVING_SUFFIX = ".moving"
_INDEX_SUFFIXES = (".index", ".timeindex", ".txnindex")
_COPY_CHUNK = 8 << 20


class TieredLog(Protocol):
    """What :func:`move_segment` needs of the log it moves a segment of (:class:`mafka.log.log.Log` is one).

    Typed here rather than imported, so that this module does not depend on
    the log (which opens its segments through :func:`resolve_tiers`).
    """

    @property
    def _lock(self) -> AbstractContextManager[Any]:
        """The log's lock, which guards its segment list."""
        ...

    @property
    def segments(self) -> list[LogSegment]: ...

    @property
    def active_segment(self) -> LogSegment: ...

    @property
    def clock(self) -> Callable[[], int]: ...

    def _schedule_delete(self, segments: list[LogSegment]) -> None:
        """Renames *segments* ``.deleted`` for removal after ``file.delete.delay.ms`` (under ``_lock``)."""
        ...


class MoveAborted(Exception):
    """The segment changed or went away while it was being copied (it stays hot; try again later)."""


def _drop_from_page_cache(fd: int) -> None:
    # Both copies are clean once fsynced: dropping their pages keeps a move
    # from evicting the hot data that tailing reads are served from.
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    except OSError:
        pass


def _copy_file(source: Path, target: Path) -> None:
    """Copies *source* to *target* (created or emptied), fsyncs it, and drops both from the page cache."""
    src = os.open(source, os.O_RDONLY)
    try:
        dst = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            size = os.fstat(src).st_size
            copied = 0
            while copied < size:
                n = os.copy_file_range(src, dst, min(_COPY_CHUNK, size - copied), copied, copied)
                if n == 0:
                    break
                copied += n
            os.fsync(dst)
            _drop_from_page_cache(dst)
        finally:
            os.close(dst)
        _drop_from_page_cache(src)
    finally:
        os.close(src)


def _segment_files(base_offset: int) -> list[str]:
    """The file names of a segment, indexes first and ``.log`` last (the order of the switch)."""
    return [log_file_name(base_offset, suffix) for suffix in _INDEX_SUFFIXES] + [log_file_name(base_offset)]


def _fingerprint(seg: LogSegment) -> tuple[int, int, int]:
    # What a change to a non-active segment touches: its size (truncation) and
    # its transaction index (an aborted transaction recorded late).
    txn = seg.txn_index.path
    txn_mtime = txn.stat().st_mtime_ns if txn.exists() else 0
    return seg.size, seg.last_modified_ns, txn_mtime


def move_segment(log_: TieredLog, seg: LogSegment, cold_directory: Path,
                 on_step: Callable[[str], None] | None = None) -> LogSegment:
    """Moves *seg* of *log_* into *cold_directory* (see the module docstring); returns the cold segment.

    The copy runs without the log's lock (appends and reads go on); the switch
    takes it and first checks the segment is still in the log and unchanged.
    *on_step* (tests) is called with ``"copied"``, ``"indexes"``, ``"switched"``
    and ``"retired"`` after each step.

    Raises:
        MoveAborted: the segment was deleted, truncated or rewritten meanwhile.
        OSError: the copy failed (e.g. ENOSPC); the partial copy is removed.
    """
    step = on_step or (lambda _name: None)
    base = seg.base_offset
    names = _segment_files(base)
    hot_dir = seg.directory
    before = _fingerprint(seg)
    cold_directory.mkdir(parents=True, exist_ok=True)
    fsync_dir(cold_directory.parent)
    moving = [cold_directory / (name + MOVING_SUFFIX) for name in names]
    try:
        for name, target in zip(names, moving, strict=True):
            source = hot_dir / name
            if source.exists():
                _copy_file(source, target)
            elif name == names[-1]:
                raise FileNotFoundError(source)
        fsync_dir(cold_directory)
    except FileNotFoundError as exc:
        # the log was deleted or moved to another log dir meanwhile
        _remove_quietly(moving)
        raise MoveAborted(f"{exc} went away while it was copied") from None
    except OSError:
        _remove_quietly(moving)
        raise
    step("copied")
    with log_._lock:
        if seg not in log_.segments or seg is log_.active_segment or _fingerprint(seg) != before:
            _remove_quietly(moving)
            raise MoveAborted(f"{seg.log_path} changed while it was copied")
        for target in moving[:-1]:
            if target.exists():
                os.replace(target, target.with_name(target.name[: -len(MOVING_SUFFIX)]))
        step("indexes")
        os.replace(moving[-1], cold_directory / names[-1])
        fsync_dir(cold_directory)
        step("switched")
        cold = type(seg).open(cold_directory, base, seg.config, log_.clock())
        cold.cold = True
        i = log_.segments.index(seg)
        log_.segments[i] = cold
        log_._schedule_delete([seg])
        step("retired")
        return cold


def _remove_quietly(paths: Sequence[Path]) -> None:
    for path in paths:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def resolve_tiers(hot_directory: Path, cold_directory: Path | None) -> tuple[list[int], list[int]]:
    """Finishes or undoes a crashed move; returns the base offsets whose segment is (hot, cold).

    See the module docstring for the rules.  Leaves ``.deleted``/``.cleaned``/
    ``.swap`` files of the hot dir to the log's own recovery.
    """
    hot = sorted(int(p.name[:20]) for p in hot_directory.iterdir() if _is_segment_log(p.name))
    if cold_directory is None or not cold_directory.is_dir():
        return hot, []
    changed = False
    cold_logs = {int(p.name[:20]) for p in cold_directory.iterdir() if _is_segment_log(p.name)}
    for path in sorted(cold_directory.iterdir()):
        name = path.name
        if name.endswith(MOVING_SUFFIX) or name.endswith(".deleted"):
            path.unlink()
            changed = True
        elif any(name.endswith(s) for s in _INDEX_SUFFIXES) and name[:20].isdigit() and int(name[:20]) not in cold_logs:
            log.warning("%s: removing %s, left by a move that did not switch", cold_directory, name)
            path.unlink()
            changed = True
    if changed:
        fsync_dir(cold_directory)
    both = cold_logs.intersection(hot)
    for base in sorted(both):
        log.warning("%s: segment %d was moved to %s before a crash; removing the hot copy",
                    hot_directory.name, base, cold_directory.parent)
        _remove_quietly([hot_directory / name for name in _segment_files(base)])
    if both:
        fsync_dir(hot_directory)
    return [b for b in hot if b not in both], sorted(cold_logs)


def _is_segment_log(name: str) -> bool:
    return len(name) == 24 and name.endswith(".log") and name[:20].isdigit()


def segments_to_move(segments: Sequence[LogSegment], recovery_point: int, now_ms: int,
                     hot_retention_ms: int, hot_retention_bytes: int) -> list[LogSegment]:
    """The hot segments that should be cold now, oldest first (see the module docstring).

    Never the active (last) segment nor one reaching the recovery point; -1
    disables either limit.
    """
    if len(segments) < 2:
        return []
    chosen = []
    from_end = segments[-1].size
    beyond_bytes: set[int] = set()
    for seg in reversed(segments[:-1]):
        from_end += seg.size
        if hot_retention_bytes >= 0 and from_end > hot_retention_bytes:
            beyond_bytes.add(id(seg))
    for seg in segments[:-1]:
        if getattr(seg, "cold", False) or seg.next_offset > recovery_point:
            continue
        too_old = hot_retention_ms >= 0 and seg.max_timestamp >= 0 and now_ms - seg.max_timestamp > hot_retention_ms
        if too_old or id(seg) in beyond_bytes:
            chosen.append(seg)
    return chosen


def is_disk_full(exc: OSError) -> bool:
    """Whether *exc* is "no space left" (the mover stops for that cold dir, the segment stays hot)."""
    return exc.errno in (errno.ENOSPC, errno.EDQUOT)
