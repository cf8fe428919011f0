"""Delivery and replica checkers for the chaos tests (pure Python, no I/O).

A port of the parts of Jepsen's ``jepsen.tests.kafka`` checker and Kafka's
``validate_delivery`` (``tests/kafkatest``) that apply to a single-producer,
assign-mode workload with unique values:

* :func:`check_delivery` takes every produce *attempt* (a unique value, the
  partition it was sent to, and what its delivery report said: acknowledged
  at an offset, definitely failed, or never answered) and everything a final
  drain read from offset 0 (``(partition, offset, value)``), and reports

  - **lost**: acknowledged values that nobody read (Kafka's
    ``acked − consumed``; Jepsen's ``unseen`` after the final drain), and the
    subset Jepsen calls ``lost-write``: acknowledged at or below the highest
    offset read on its partition, so it cannot be lag;
  - **duplicates**: a value read at more than one (partition, offset);
  - **inconsistent offsets**: one (partition, offset) holding two values,
    in the reads or in the acknowledgements;
  - **offset mismatches**: a value read somewhere else than the
    (partition, offset) its acknowledgement named;
  - **order violations**: per partition, the acknowledged values in the
    order of their acknowledged offsets versus the order they were read in
    (each value read after one acknowledged at a higher offset is reported
    once, paired with the highest such value);
  - **unexpected**: values read that were never sent (or read on another
    partition than they were sent to);

  plus, for information only (not violations): values whose delivery
  failed or was never reported but that are visible (a timed-out write may
  still be written), and values read more than once at the *same* offset
  (two overlapping reads; harmless).

* :func:`replica_divergence` compares the concatenated segment bytes of each
  replica of one partition (optionally cut at a high watermark, at a batch
  boundary) and reports where they differ.  After the replicas have caught
  up, Kafka-format follower logs are byte-identical to the leader's: batches
  are appended as the leader wrote them.

The batch-header helpers (:func:`iter_batch_headers`,
:func:`log_end_offset`, :func:`cut_at_offset`) read only the fixed v2 record
batch header: ``baseOffset int64, batchLength int32,
partitionLeaderEpoch int32, magic int8, crc uint32, attributes int16,
lastOffsetDelta int32`` — enough to walk a log file without decoding records.
"""

from __future__ import annotations

import struct
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

__all__ = [
    "ACKED",
    "FAILED",
    "UNKNOWN",
    "Attempt",
    "BatchHeader",
    "Consumed",
    "DeliveryReport",
    "ReplicaReport",
    "check_delivery",
    "cut_at_offset",
    "iter_batch_headers",
    "log_end_offset",
    "replica_divergence",
]

#: Delivery outcomes of an attempt.
ACKED, FAILED, UNKNOWN = "acked", "failed", "unknown"


@dataclass
class Attempt:
    """One produce attempt: a unique ``value`` sent to ``partition``.

    ``status`` is :data:`ACKED` (``offset`` is the acknowledged offset),
    :data:`FAILED` (the delivery report carried ``error``) or :data:`UNKNOWN`
    (no report yet / the producer was closed first).  ``acked_at`` is a
    monotonic timestamp of the acknowledgement, for availability figures.
    """

    value: bytes
    partition: int
    status: str = UNKNOWN
    offset: int = -1
    error: str | None = None
    sent_at: float = 0.0
    acked_at: float | None = None


class Consumed(NamedTuple):
    """A record read back: where and what."""

    partition: int
    offset: int
    value: bytes


@dataclass
class DeliveryReport:
    """What :func:`check_delivery` found.  ``ok`` is True when there is no violation."""

    attempted: int = 0
    acked: int = 0
    failed: int = 0
    unknown: int = 0
    consumed: int = 0
    #: acknowledged values never read, sorted by (partition, offset)
    lost: list[bytes] = field(default_factory=list)
    #: the subset of ``lost`` at or below the highest offset read on its partition
    lost_writes: list[bytes] = field(default_factory=list)
    #: value → the distinct (partition, offset) pairs it was read at (two or more)
    duplicates: dict[bytes, list[tuple[int, int]]] = field(default_factory=dict)
    #: (partition, offset) → the distinct values read or acknowledged there (two or more)
    inconsistent_offsets: dict[tuple[int, int], list[bytes]] = field(default_factory=dict)
    #: value → ((acked partition, acked offset), [(read partition, read offset), …])
    offset_mismatches: dict[bytes, tuple[tuple[int, int], list[tuple[int, int]]]] = field(default_factory=dict)
    #: partition → [(value acked earlier, value acked later but read before it), …]
    order_violations: dict[int, list[tuple[bytes, bytes]]] = field(default_factory=dict)
    #: values read that were never attempted, or read on another partition than attempted
    unexpected: list[Consumed] = field(default_factory=list)
    #: information only: failed / unreported attempts that are visible anyway
    failed_visible: list[bytes] = field(default_factory=list)
    unknown_visible: list[bytes] = field(default_factory=list)
    #: information only: the same (partition, offset, value) read more than once
    reread: int = 0
    #: information only: acknowledgements that came without an offset (checked for loss only)
    acked_without_offset: int = 0

    @property
    def ok(self) -> bool:
        return not (
            self.lost
            or self.duplicates
            or self.inconsistent_offsets
            or self.offset_mismatches
            or self.order_violations
            or self.unexpected
        )

    def violations(self) -> dict[str, int]:
        """Counts of each kind of violation (all zero when ``ok``)."""
        return {
            "lost": len(self.lost),
            "lost_writes": len(self.lost_writes),
            "duplicates": len(self.duplicates),
            "inconsistent_offsets": len(self.inconsistent_offsets),
            "offset_mismatches": len(self.offset_mismatches),
            "order_violations": sum(len(v) for v in self.order_violations.values()),
            "unexpected": len(self.unexpected),
        }

    def summary(self, examples: int = 5) -> str:
        """A few lines for a test failure or the chaos run's output."""
        lines = [
            f"attempted {self.attempted}: acked {self.acked}, failed {self.failed}, unknown {self.unknown}; "
            f"consumed {self.consumed} (re-read {self.reread}); "
            f"failed-but-visible {len(self.failed_visible)}, unknown-but-visible {len(self.unknown_visible)}"
            + (f", acked without an offset {self.acked_without_offset}" if self.acked_without_offset else ""),
            "violations: " + ", ".join(f"{k} {v}" for k, v in self.violations().items()),
        ]
        if self.lost:
            lines.append(f"  lost e.g. {_short(self.lost[:examples])}")
        if self.duplicates:
            lines.append(f"  duplicates e.g. {_short(list(self.duplicates.items())[:examples])}")
        if self.inconsistent_offsets:
            lines.append(f"  inconsistent offsets e.g. {_short(list(self.inconsistent_offsets.items())[:examples])}")
        if self.offset_mismatches:
            lines.append(f"  offset mismatches e.g. {_short(list(self.offset_mismatches.items())[:examples])}")
        for p, pairs in sorted(self.order_violations.items()):
            lines.append(f"  order violations on partition {p}: {len(pairs)}, e.g. {_short(pairs[:examples])}")
        if self.unexpected:
            lines.append(f"  unexpected e.g. {_short(self.unexpected[:examples])}")
        return "\n".join(lines)


def _short(x: object) -> str:
    text = repr(x)
    return text if len(text) < 400 else text[:400] + "…"


def check_delivery(attempts: Iterable[Attempt], consumed: Iterable[Consumed | tuple[int, int, bytes]]) -> DeliveryReport:
    """Checks a final drain against the produce attempts.  See the module docstring."""
    report = DeliveryReport()
    by_value: dict[bytes, Attempt] = {}
    for a in attempts:
        if a.value in by_value:
            raise ValueError(f"attempt values must be unique: {a.value!r} twice")
        by_value[a.value] = a
        report.attempted += 1
        if a.status == ACKED:
            report.acked += 1
        elif a.status == FAILED:
            report.failed += 1
        else:
            report.unknown += 1

    # Reads: distinct positions per value, values per position, read order per partition.
    positions: dict[bytes, list[tuple[int, int]]] = defaultdict(list)
    at_offset: dict[tuple[int, int], list[bytes]] = defaultdict(list)
    read_order: dict[int, list[bytes]] = defaultdict(list)
    seen_records: set[tuple[int, int, bytes]] = set()
    highest_read: dict[int, int] = {}
    for c in consumed:
        partition, offset, value = c
        report.consumed += 1
        if (partition, offset, value) in seen_records:
            report.reread += 1
            continue
        seen_records.add((partition, offset, value))
        positions[value].append((partition, offset))
        at_offset[(partition, offset)].append(value)
        read_order[partition].append(value)
        highest_read[partition] = max(highest_read.get(partition, -1), offset)
        a = by_value.get(value)
        if a is None or a.partition != partition:
            report.unexpected.append(Consumed(partition, offset, value))

    # Acknowledged positions take part in the one-offset-one-value rule too (an acknowledgement
    # without an offset, -1, only in the lost check).
    report.acked_without_offset = sum(1 for a in by_value.values() if a.status == ACKED and a.offset < 0)
    for a in by_value.values():
        if a.status == ACKED and a.offset >= 0 and a.value not in at_offset.get((a.partition, a.offset), ()):
            at_offset[(a.partition, a.offset)].append(a.value)
    report.inconsistent_offsets = {pos: vals for pos, vals in sorted(at_offset.items()) if len(vals) > 1}
    report.duplicates = {v: sorted(pos) for v, pos in positions.items() if len(pos) > 1}

    acked = sorted((a for a in by_value.values() if a.status == ACKED), key=lambda a: (a.partition, a.offset))
    for a in acked:
        got = positions.get(a.value)
        if not got:
            report.lost.append(a.value)
            if a.offset <= highest_read.get(a.partition, -1):
                report.lost_writes.append(a.value)
        elif a.offset >= 0 and (a.partition, a.offset) not in got:
            report.offset_mismatches[a.value] = ((a.partition, a.offset), sorted(got))

    # Order: the acknowledged values of a partition, ranked by acknowledged offset,
    # must appear in the read order with increasing rank (first read of each value).
    rank = {a.value: (a.partition, a.offset) for a in acked if a.offset >= 0}
    for partition, values in sorted(read_order.items()):
        last: tuple[bytes, tuple[int, int]] | None = None
        seen: set[bytes] = set()
        pairs: list[tuple[bytes, bytes]] = []
        for v in values:
            r = rank.get(v)
            if r is None or r[0] != partition or v in seen:
                continue
            seen.add(v)
            if last is not None and r < last[1]:
                pairs.append((v, last[0]))
            if last is None or r > last[1]:
                last = (v, r)
        if pairs:
            report.order_violations[partition] = pairs

    for v, a in by_value.items():
        if v in positions:
            if a.status == FAILED:
                report.failed_visible.append(v)
            elif a.status == UNKNOWN:
                report.unknown_visible.append(v)
    return report


# ---------------------------------------------------------------------------------------------
# Replica byte identity

_HEADER = struct.Struct(">qiibIhi")  # baseOffset, batchLength, epoch, magic, crc, attributes, lastOffsetDelta
LOG_OVERHEAD = 12  # baseOffset + batchLength


class BatchHeader(NamedTuple):
    position: int
    base_offset: int
    last_offset: int
    size: int  # bytes including the 12-byte log overhead
    leader_epoch: int


def iter_batch_headers(data: bytes) -> Iterator[BatchHeader]:
    """The batches of a log's bytes, in order; stops at a truncated tail.

    Raises:
        ValueError: a batch with a length too small to be one (a corrupt log).
    """
    pos, n = 0, len(data)
    while pos + _HEADER.size <= n:
        base, length, epoch, _magic, _crc, _attrs, delta = _HEADER.unpack_from(data, pos)
        if length < _HEADER.size - LOG_OVERHEAD:
            raise ValueError(f"batch at byte {pos} has length {length}")
        size = LOG_OVERHEAD + length
        if pos + size > n:
            return
        yield BatchHeader(pos, base, base + delta, size, epoch)
        pos += size


def log_end_offset(data: bytes) -> int:
    """The offset after the last complete batch (0 for an empty log)."""
    end = 0
    for h in iter_batch_headers(data):
        end = h.last_offset + 1
    return end


def cut_at_offset(data: bytes, offset: int) -> bytes:
    """The bytes of the batches that lie wholly below ``offset`` (a high watermark)."""
    end = 0
    for h in iter_batch_headers(data):
        if h.last_offset >= offset:
            break
        end = h.position + h.size
    return data[:end]


@dataclass
class ReplicaReport:
    """What :func:`replica_divergence` found for one partition."""

    sizes: dict[int, int] = field(default_factory=dict)
    end_offsets: dict[int, int] = field(default_factory=dict)
    #: replica → (first differing byte, base offset of the batch holding it, or -1) vs the reference
    differences: dict[int, tuple[int, int]] = field(default_factory=dict)
    reference: int | None = None
    #: replicas that hold less than ``upto`` (when a cut was asked for)
    short: list[int] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return not self.differences and not self.short

    def summary(self) -> str:
        if self.identical:
            return f"identical ({len(self.sizes)} replicas, {next(iter(self.sizes.values()), 0)} bytes)"
        parts = [f"sizes {self.sizes}", f"end offsets {self.end_offsets}", f"reference {self.reference}"]
        for r, (byte, offset) in sorted(self.differences.items()):
            parts.append(f"replica {r} differs from byte {byte} (batch at offset {offset})")
        if self.short:
            parts.append(f"short of the cut: {self.short}")
        return "; ".join(parts)


def replica_divergence(replicas: Mapping[int, bytes], upto: int | None = None) -> ReplicaReport:
    """Compares the replicas' concatenated segment bytes of one partition.

    With ``upto`` (a high watermark), each replica is first cut to the batches
    wholly below it, and a replica ending before the cut is reported as short.
    The reference is the longest replica (the lowest id among equals).
    """
    report = ReplicaReport()
    cut: dict[int, bytes] = {}
    for r, data in sorted(replicas.items()):
        leo = log_end_offset(data)
        report.end_offsets[r] = leo
        if upto is not None:
            if leo < upto:
                report.short.append(r)
            data = cut_at_offset(data, upto)
        cut[r] = data
        report.sizes[r] = len(data)
    if not cut:
        return report
    ref = max(sorted(cut), key=lambda r: len(cut[r]))
    report.reference = ref
    for r, data in cut.items():
        if r == ref or data == cut[ref]:
            continue
        byte = _first_difference(data, cut[ref])
        report.differences[r] = (byte, _batch_at(cut[ref], byte))
    return report


def _first_difference(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    lo = 0
    step = 1 << 16
    while lo < n and a[lo:lo + step] == b[lo:lo + step]:
        lo += step
    for i in range(lo, min(n, lo + step)):
        if a[i] != b[i]:
            return i
    return n


def _batch_at(data: bytes, byte: int) -> int:
    try:
        for h in iter_batch_headers(data):
            if h.position <= byte < h.position + h.size:
                return h.base_offset
    except ValueError:
        pass
    return -1
