"""Check-backs of unresolved half messages, per producer group (plain Python; the leader's memory).

A half message whose producer neither committed nor rolled it back within
``mafka.txn.check.interval.ms`` is *due for a check*: the leader queues a
:class:`Check` for the message's producer group.  Producers of the group pull
checks with MafkaTxnChecks (the pull model: nothing is pushed to a client);
each check handed out counts.  The producer answers by resolving the message
(MafkaEndHalf), or not at all (UNKNOWN): the leader queues it again an
interval later.  After ``mafka.txn.check.max.times`` handed-out checks the
topic's ``mafka.txn.check.default.action`` decides.  A group no producer polls
keeps its checks queued, uncounted: the message waits.

Counts live in the leader's memory: a new leader starts them again (a message
may be checked more often than the maximum across failovers, never less).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from mafka.wire.records import Header

__all__ = ["Check", "HalfChecks"]


@dataclass(frozen=True, slots=True)
class Check:
    """One half message to ask its producer group about."""

    topic: str
    partition: int
    offset: int
    transactional_id: str
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]
    times_checked: int


class HalfChecks:
    """The queued checks per producer group and the checks handed out per message."""

    def __init__(self) -> None:
        self._queues: dict[str, OrderedDict[tuple[str, int, int], Check]] = {}
        self._counts: dict[tuple[str, int, int], int] = {}

    def times_checked(self, topic: str, partition: int, offset: int) -> int:
        return self._counts.get((topic, partition, offset), 0)

    def queue(self, group: str, check: Check) -> None:
        """Queues ``check`` for ``group`` (once: a message already queued stays where it is)."""
        key = (check.topic, check.partition, check.offset)
        self._queues.setdefault(group, OrderedDict()).setdefault(key, check)

    def take(self, group: str, most: int) -> list[Check]:
        """Hands out up to ``most`` queued checks of ``group``, oldest first, counting each."""
        q = self._queues.get(group)
        out: list[Check] = []
        while q and len(out) < most:
            key, check = q.popitem(last=False)
            count = self._counts.get(key, 0) + 1
            self._counts[key] = count
            out.append(Check(check.topic, check.partition, check.offset, check.transactional_id, check.key,
                             check.value, check.headers, count))
        return out

    def resolved(self, topic: str, partition: int, offset: int) -> None:
        """The message was committed or rolled back: forget it."""
        key = (topic, partition, offset)
        self._counts.pop(key, None)
        for q in self._queues.values():
            q.pop(key, None)

    def queued(self) -> list[tuple[str, Check]]:
        """Every queued check, with its producer group (MafkaListHalf), without taking any."""
        return [(g, c) for g, q in sorted(self._queues.items()) for c in q.values()]

    def waiting(self) -> dict[str, int]:
        """Producer group → checks queued and not yet handed out."""
        return {g: len(q) for g, q in self._queues.items() if q}
