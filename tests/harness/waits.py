"""Bounded polling: the one copy of the waits the integration tests and ``scripts/`` share.

* :func:`wait_until` polls a predicate until it returns something truthy (returned) or the
  timeout passes (``TimeoutError`` naming what was awaited); exceptions of the types given
  in ``retry`` count as "not yet" (the last one is named in the error);
* :func:`process_state` is the ``/proc/<pid>/stat`` state letter of a process;
* :func:`wait_dead` waits until a process has exited: a zombie that its parent (``mafka
  cluster up`` for a broker) has not reaped yet counts as exited.

Every wait has a timeout; none sleeps longer than its interval between two looks.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["process_state", "wait_dead", "wait_until"]

T = TypeVar("T")


def wait_until(predicate: Callable[[], T], timeout: float, what: str | Callable[[], str],
               interval: float = 0.1, retry: tuple[type[BaseException], ...] = ()) -> T:
    """Polls ``predicate`` until it returns something truthy (returned) or ``timeout`` passes
    (TimeoutError naming ``what``, which may be a callable building the text then).

    An exception of a type in ``retry`` raised by ``predicate`` counts as a falsy answer; the
    last one is named in the TimeoutError.  Any other exception propagates at once.
    """
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    while True:
        try:
            value = predicate()
        except retry as exc:
            last, value = exc, None
        if value:
            return value
        if time.monotonic() >= deadline:
            text = what() if callable(what) else what
            suffix = f"; last error: {last!r}" if last is not None else ""
            raise TimeoutError(f"{text} (waited {timeout:.1f} s{suffix})")
        time.sleep(interval)


def process_state(pid: int) -> str | None:
    """The ``/proc/<pid>/stat`` state letter (R, S, T, Z, …), or None if there is no such process."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None


def wait_dead(pid: int, timeout: float = 30.0, interval: float = 0.05) -> float:
    """Waits until process ``pid`` has exited; returns the monotonic time it was seen gone.

    A broker is ``mafka cluster up``'s child, not the test's: until that reaps it, it lingers
    as a zombie, which counts as exited here.
    """
    wait_until(lambda: process_state(pid) in (None, "Z", "X"), timeout, f"process {pid} to exit", interval=interval)
    return time.monotonic()
