"""Suite-wide fixtures.

``reactor_thread``: Twisted's global reactor running in a daemon thread for
the whole session, so tests can drive real sockets from the test thread
while servers run on the reactor.  ``in_reactor(fn, *args)`` runs ``fn`` on
the reactor thread and waits for its result (following Deferreds), with a
timeout so a hung test fails instead of hanging the suite.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from twisted.internet import defer, reactor
from twisted.internet.threads import blockingCallFromThread

from tests.hypothesis_budget import examples

# Property tests that name no example count draw Hypothesis's default 100, scaled as
# tests/hypothesis_budget.py says (``make test`` draws a share).  Hypothesis's timing checks
# (slow input generation, the per-example deadline) measure the machine's load, not the code:
# on a loaded 2-core CI machine they failed a property test that was right, so they are off
# for every test.
settings.register_profile(
    "mafka", max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("mafka")

_started = threading.Event()
_thread: threading.Thread | None = None


def _ensure_reactor() -> None:
    global _thread
    if _thread is not None:
        return
    reactor.callWhenRunning(_started.set)
    _thread = threading.Thread(target=reactor.run, kwargs={"installSignalHandlers": False}, name="reactor", daemon=True)
    _thread.start()
    if not _started.wait(10):
        raise RuntimeError("the Twisted reactor did not start")


def in_reactor(fn: Callable[..., Any], *args: Any, timeout: float = 30.0, **kwargs: Any) -> Any:
    """Runs *fn* on the reactor thread; returns its result (a Deferred's result, once it fires)."""
    _ensure_reactor()

    def call() -> defer.Deferred:
        d = defer.maybeDeferred(fn, *args, **kwargs)
        return d.addTimeout(timeout, reactor)

    return blockingCallFromThread(reactor, call)


@pytest.fixture(scope="session")
def reactor_thread() -> Any:
    """The running reactor (in its own thread); use :func:`in_reactor` to call into it."""
    _ensure_reactor()
    yield reactor
