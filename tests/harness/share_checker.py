"""The share-group safety checker: every produced record ACCEPTed exactly once or archived, none lost.

Input is what the consumers saw: every delivery, and every acknowledgement result the brokers
answered (``ACCEPT``/``RELEASE``/``REJECT`` with success or an error).  Rules:

* **accepted twice** — a record whose ACCEPT succeeded more than once (the share-partition let two
  members, or one member twice, own an already acknowledged record);
* **lost** — a produced record that was never successfully ACCEPTed and is not accounted for:
  neither REJECTed successfully, nor archived by the delivery limit (delivered ``limit`` times), nor
  covered by the share-partition's start offset at the end with an ACCEPT whose answer was lost
  (the broker applied it, the answer did not arrive: the start offset proves the record was
  acknowledged);
* **phantom** — an acknowledgement for a record that was never produced.

:func:`check` returns the violations (empty: safe); :class:`ShareHistory` collects the events.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

__all__ = ["ShareHistory", "check"]

Record = tuple[int, int]  # (partition, offset)
ACCEPT, RELEASE, REJECT = 1, 2, 3


@dataclass
class ShareHistory:
    """Everything the members saw (append from any thread holding no other lock)."""

    produced: set[Record] = field(default_factory=set)
    delivered: Counter[Record] = field(default_factory=Counter)
    #: (record, type, ok): one per acknowledgement result
    acks: list[tuple[Record, int, bool]] = field(default_factory=list)

    def deliver(self, record: Record) -> None:
        self.delivered[record] += 1

    def ack(self, records: Iterable[Record], ack_type: int, ok: bool) -> None:
        self.acks.extend((r, ack_type, ok) for r in records)


def check(history: ShareHistory, start_offsets: Mapping[int, int], delivery_limit: int | None = None) -> list[str]:
    """The violations of *history*; ``start_offsets``: each partition's share-partition start
    offset at the end (every offset below it is acknowledged or archived)."""
    out: list[str] = []
    accepted = Counter(r for r, t, ok in history.acks if ok and t == ACCEPT)
    rejected = {r for r, t, ok in history.acks if ok and t == REJECT}
    unanswered = {r for r, t, ok in history.acks if not ok and t == ACCEPT}
    for record, n in sorted(accepted.items()):
        if n > 1:
            out.append(f"accepted twice: partition {record[0]} offset {record[1]} ({n} successful ACCEPTs)")
    for record in sorted({r for r, _, _ in history.acks} - history.produced):
        out.append(f"phantom: partition {record[0]} offset {record[1]} was acknowledged but never produced")
    for record in sorted(history.produced):
        if accepted[record] or record in rejected:
            continue
        if delivery_limit is not None and history.delivered[record] >= delivery_limit:
            continue
        if record in unanswered and record[1] < start_offsets.get(record[0], -1):
            continue
        out.append(f"lost: partition {record[0]} offset {record[1]} (delivered {history.delivered[record]} times, "
                   f"never acknowledged)")
    return out
