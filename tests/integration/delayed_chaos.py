"""Delayed messages under faults: the workload and its checker (``test_delayed_chaos.py``, ``make chaos``).

An idempotent acks=all producer writes unique values, each asking for a delay
``delay_of(n)`` (1–8 s) with ``mafka.delay.ms``, while leaders and the
controller are killed and frozen.  A tailing consumer notes when each value
first becomes visible; after the run every partition is read from the start.
:func:`check_delayed` then reports, for the acknowledged values:

* **lost** — acknowledged and never delivered;
* **duplicated** — delivered more than once in the log;
* **early** — visible to the tailing consumer before its due time;
* **wrong due** — the delivered record's timestamp (its due time) outside
  [sent + delay, acknowledged + delay] (the broker computes due = accept + delay);
* **offset mismatch** — ``mafka.delayed.offset`` not the acknowledged offset;
* **unexpected** — a delivered value nobody sent;

and the lateness (first visible − due) of every delivered value.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from tests.harness.checker import ACKED, Attempt

__all__ = ["Delivered", "DelayedReport", "check_delayed", "delay_of"]

#: slack for clock reads on either side (ms): the producer's and the broker's clocks are the same host's
SLACK_MS = 50


def delay_of(n: int) -> int:
    """The delay (ms) message ``n`` asks for: 1–8 s, spread."""
    return 1000 + (n * 7919) % 7000


class Delivered(NamedTuple):
    """A record read back from the topic after the run."""

    value: bytes
    partition: int
    offset: int
    timestamp: int
    delayed_offset: int | None


@dataclass
class DelayedReport:
    attempted: int = 0
    acked: int = 0
    delivered: int = 0
    lost: list[bytes] = field(default_factory=list)
    duplicated: list[bytes] = field(default_factory=list)
    early: list[tuple[bytes, float]] = field(default_factory=list)
    wrong_due: list[tuple[bytes, int, int, int]] = field(default_factory=list)
    offset_mismatch: list[tuple[bytes, int, int | None]] = field(default_factory=list)
    unexpected: list[bytes] = field(default_factory=list)
    lateness_ms: list[float] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.lost or self.duplicated or self.early or self.wrong_due or self.offset_mismatch
                    or self.unexpected)

    def percentile(self, q: float) -> float:
        data = sorted(self.lateness_ms)
        return data[min(len(data) - 1, int(q * len(data)))] if data else float("nan")

    def summary(self) -> str:
        return (f"attempted {self.attempted}, acked {self.acked}, delivered {self.delivered}; violations: "
                f"lost {len(self.lost)}, duplicated {len(self.duplicated)}, early {len(self.early)}, "
                f"wrong due {len(self.wrong_due)}, offset mismatch {len(self.offset_mismatch)}, "
                f"unexpected {len(self.unexpected)}; lateness p50 {self.percentile(0.5):.0f} ms, "
                f"p99 {self.percentile(0.99):.0f} ms, max {max(self.lateness_ms, default=float('nan')):.0f} ms"
                + (f"; e.g. lost {self.lost[:3]}, duplicated {self.duplicated[:3]}, early {self.early[:3]}, "
                   f"wrong due {self.wrong_due[:3]}" if not self.ok else ""))


def check_delayed(attempts: Iterable[Attempt], delays: Mapping[bytes, int], read_back: Iterable[Delivered],
                  first_seen_ms: Mapping[bytes, float], wall_minus_monotonic: float) -> DelayedReport:
    """Checks the run; ``first_seen_ms`` is the tailing consumer's first sight of each value (wall ms)."""
    attempts = list(attempts)
    r = DelayedReport(attempted=len(attempts))
    by_value = {a.value: a for a in attempts}
    acked = {a.value: a for a in attempts if a.status == ACKED}
    r.acked = len(acked)
    got = list(read_back)
    counts = Counter(d.value for d in got)
    r.delivered = len(counts)
    r.duplicated = sorted(v for v, n in counts.items() if n > 1)
    r.unexpected = sorted(v for v in counts if v not in by_value)
    r.lost = sorted(v for v in acked if v not in counts)
    for d in got:
        a = by_value.get(d.value)
        if a is None:
            continue
        delay = delays[d.value]
        sent_ms = (a.sent_at + wall_minus_monotonic) * 1000
        acked_ms = ((a.acked_at if a.acked_at is not None else a.sent_at + 120) + wall_minus_monotonic) * 1000
        if not sent_ms + delay - SLACK_MS <= d.timestamp <= acked_ms + delay + SLACK_MS:
            r.wrong_due.append((d.value, d.timestamp, int(sent_ms + delay), int(acked_ms + delay)))
        if a.status == ACKED and a.offset >= 0 and d.delayed_offset != a.offset:
            r.offset_mismatch.append((d.value, a.offset, d.delayed_offset))
        seen = first_seen_ms.get(d.value)
        if seen is not None:
            if seen < d.timestamp - SLACK_MS:
                r.early.append((d.value, d.timestamp - seen))
            r.lateness_ms.append(seen - d.timestamp)
    return r
