"""Local-transaction messages under faults: the checker (``test_local_txn_chaos.py``, ``make chaos``).

The workload is an orders service: each order is a row in SQLite and an
``OrderCreated`` message keyed by the order id, sent with
``TransactionalMessageProducer``.  Some local tasks fail (no row), some
producers "crash" between the half message and its resolution (with or
without the local commit), while brokers are killed and frozen.  At the end
the database is the truth: :func:`check_local_txn` compares the order ids in
the database with the keys delivered on the topic.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["LocalTxnReport", "check_local_txn"]


@dataclass
class LocalTxnReport:
    committed: int = 0
    delivered: int = 0
    #: a row whose message never appeared
    lost: list[str] = field(default_factory=list)
    #: a message with no row (a rolled-back or failed task published anyway)
    phantom: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.lost or self.phantom or self.duplicated)

    def summary(self) -> str:
        return (f"orders committed {self.committed}, messages delivered {self.delivered}; violations: "
                f"lost {len(self.lost)}, phantom {len(self.phantom)}, duplicated {len(self.duplicated)}"
                + (f"; e.g. lost {self.lost[:3]}, phantom {self.phantom[:3]}, duplicated {self.duplicated[:3]}"
                   if not self.ok else ""))


def check_local_txn(committed_ids: Iterable[str], delivered_keys: Iterable[str]) -> LocalTxnReport:
    """Every committed order delivered exactly once, nothing else delivered."""
    committed = set(committed_ids)
    counts = Counter(delivered_keys)
    return LocalTxnReport(
        committed=len(committed),
        delivered=len(counts),
        lost=sorted(committed - set(counts)),
        phantom=sorted(set(counts) - committed),
        duplicated=sorted(k for k, n in counts.items() if n > 1),
    )
