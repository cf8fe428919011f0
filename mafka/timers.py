"""What the group and transaction coordinators schedule their delays with.

The coordinators (:mod:`mafka.group.coordinator`,
:mod:`mafka.transaction.coordinator`, :mod:`mafka.transaction.markers`) are
plain, reactor-free state machines: every delay goes through a
:class:`Timers` they are given.  The broker passes
:class:`mafka.broker.internal_topics.ReactorTimers` (``reactor.callLater`` in
milliseconds); tests pass a fake clock that fires due timers on demand.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

__all__ = ["TimerHandle", "Timers"]


class TimerHandle(Protocol):
    """A scheduled call; ``cancel()`` stops it (no effect once it has run or was cancelled)."""

    def cancel(self) -> None: ...


class Timers(Protocol):
    """Schedules ``fn`` to run once, ``delay_ms`` milliseconds from now."""

    def call_later(self, delay_ms: int, fn: Callable[[], None]) -> TimerHandle: ...
