"""Supervised periodic background passes (the broker's, the controller's, the coordinators').

A Twisted ``LoopingCall`` stops for good at the first exception its function
raises (or the first failed Deferred it returns): one bad partition in an ISR
shrink check and the broker would run on with ISR shrinking switched off.
Every periodic pass therefore runs through :class:`BackgroundPasses`
instead, whose contract is:

* **named**: each pass has a name, unique among the running passes of one
  :class:`BackgroundPasses` (one per broker); it is the ``pass`` label of the
  failure counter.
* **periodic, never concurrent**: the first run is ``first_delay_s`` after
  :meth:`BackgroundPasses.every` (the interval by default), then one run per
  interval on a fixed cadence (LoopingCall's: a run that overran is not made
  up for, the next one starts at the next interval boundary).  A pass may
  return a Deferred or a coroutine: its next run is not started before that
  has finished, so two runs of one pass never overlap.
* **failures are survived**: an exception raised by the pass, a failed
  Deferred or coroutine it returned, or an exception in a pass run in a
  worker thread (:meth:`BackgroundPasses.every_in_thread`) is logged with its
  full traceback, counted in the ``mafka_background_pass_failures_total``
  counter (label ``pass``) and in :attr:`PeriodicPass.failures`, and the pass
  runs again at the next interval.  ``BaseException`` that is not an
  ``Exception`` (``SystemExit``, ``KeyboardInterrupt``) is not caught.
  Background work that schedules itself (the log-dir mover's copy passes)
  reports its failures the same way with :meth:`BackgroundPasses.report_failure`.
* **thread passes**: :meth:`BackgroundPasses.every_in_thread` runs its work
  with the injected ``run_in_thread`` (a worker thread in a broker); its
  ``snapshot``, when given, runs first on the reactor and its result is what
  the work gets, so the thread never reads state the reactor mutates.
* **stopping is clean**: :meth:`PeriodicPass.stop` cancels the next run; a
  run in progress finishes (it is not cancelled) and the pass is not started
  again; the Deferred returned fires once it has.  :meth:`BackgroundPasses.stop_all`
  stops them all.

Time comes from the injected ``clock`` (an ``IReactorTime``: ``seconds`` and
``callLater``), so tests drive it with ``twisted.internet.task.Clock``.

The counter is a ``prometheus_client.Counter`` created unregistered, one per
:class:`BackgroundPasses`: several brokers in one process (tests) never
register the same name twice; the broker's ``/metrics`` site registers its
own in its own registry (:func:`mafka.broker.metrics.metrics_site`).
"""

from __future__ import annotations

import inspect
import logging
import math
from collections.abc import Callable
from typing import Any

from prometheus_client import Counter
from twisted.internet import defer, threads
from twisted.python.failure import Failure

__all__ = ["FAILURES_METRIC", "BackgroundPasses", "PeriodicPass"]

log = logging.getLogger("mafka.background")

#: the failure counter's name as exposed (prometheus_client appends ``_total`` to a Counter's name)
FAILURES_METRIC = "mafka_background_pass_failures_total"


class PeriodicPass:
    """One named periodic pass (see the module docstring); made by :meth:`BackgroundPasses.every`."""

    def __init__(self, owner: BackgroundPasses, name: str, interval_s: float, fn: Callable[..., Any],
                 args: tuple[Any, ...]) -> None:
        if not interval_s > 0:
            raise ValueError(f"background pass {name}: the interval must be positive, not {interval_s!r}")
        self.owner = owner
        self.name = name
        self.interval_s = float(interval_s)
        self.fn = fn
        self.args = args
        #: runs started, and runs that failed
        self.runs = 0
        self.failures = 0
        self._anchor = 0.0
        self._call: Any = None
        self._running: defer.Deferred | None = None
        self._started = False
        self._stopped = False
        self._waiters: list[defer.Deferred] = []

    # ------------------------------------------------------------------ state

    @property
    def running(self) -> bool:
        """Started and not stopped (LoopingCall's ``running``)."""
        return self._started and not self._stopped

    def active(self) -> bool:
        """Same as :attr:`running` (for callers written against ``IDelayedCall.active``)."""
        return self.running

    @property
    def in_progress(self) -> bool:
        """A run (or the Deferred it returned) has not finished yet."""
        return self._running is not None

    # ------------------------------------------------------------------ lifecycle

    def start(self, first_delay_s: float | None = None) -> PeriodicPass:
        """Schedules the first run ``first_delay_s`` from now (the interval if None)."""
        if self._started:
            return self
        self._started = True
        delay = self.interval_s if first_delay_s is None else max(0.0, first_delay_s)
        self._anchor = self.owner.clock.seconds() + delay
        self._call = self.owner.clock.callLater(delay, self._run)
        return self

    def stop(self) -> defer.Deferred:
        """No more runs; fires once a run in progress has finished (at once if none is)."""
        if not self._stopped:
            self._stopped = True
            if self._call is not None and self._call.active():
                self._call.cancel()
            self._call = None
            self.owner._forget(self)
        if self._running is None:
            return defer.succeed(None)
        waiter: defer.Deferred = defer.Deferred()
        self._waiters.append(waiter)
        return waiter

    def cancel(self) -> None:
        """:meth:`stop` without waiting (for callers written against a timer handle's ``cancel``)."""
        self.stop()

    # ------------------------------------------------------------------ running

    def _run(self) -> None:
        self._call = None
        if self._stopped or self._running is not None:
            return
        self.runs += 1
        try:
            result = self.fn(*self.args)
            if inspect.iscoroutine(result):
                result = defer.Deferred.fromCoroutine(result)
        except Exception:
            self._failed(Failure())
            self._finished(None)
            return
        if not isinstance(result, defer.Deferred):
            self._finished(None)
            return
        self._running = result
        result.addErrback(self._failed)
        result.addBoth(self._finished)

    def _failed(self, failure: Failure) -> None:
        self.failures += 1
        self.owner.report_failure(
            self.name, failure,
            f"({self.failures} of {self.runs} runs so far); it runs again in at most {self.interval_s:.3g} s",
        )
        return None

    def _finished(self, _: Any) -> None:
        self._running = None
        if self._stopped:
            waiters, self._waiters = self._waiters, []
            for waiter in waiters:
                waiter.callback(None)
            return
        clock = self.owner.clock
        now = clock.seconds()
        # LoopingCall's cadence: the next boundary after now (runs that overran are skipped).
        elapsed = max(0.0, now - self._anchor)
        boundary = self._anchor + self.interval_s * (math.floor(elapsed / self.interval_s) + 1)
        if boundary <= now:
            # Float rounding (seconds since 1970 carry ~1e-7 s of precision) made this run's own
            # boundary look like the next one: that would run the pass again at once, and on a
            # clock that does not move (a test's task.Clock) for ever.
            boundary += self.interval_s
        self._call = clock.callLater(max(0.0, boundary - now), self._run)
        return None

    def __repr__(self) -> str:
        return f"PeriodicPass({self.name!r}, every {self.interval_s:g} s, runs={self.runs}, failures={self.failures})"


class BackgroundPasses:
    """The supervised periodic passes of one process part (a broker); see the module docstring.

    Args:
        clock: an ``IReactorTime`` (``seconds``, ``callLater``).
        run_in_thread: ``(fn, *args) -> Deferred`` running *fn* in a worker
            thread (``deferToThread`` by default); used by :meth:`every_in_thread`.
        logger: where failures are logged (``mafka.background`` by default).
    """

    def __init__(self, clock: Any, *, run_in_thread: Callable[..., defer.Deferred] | None = None,
                 logger: logging.Logger | None = None) -> None:
        self.clock = clock
        self.run_in_thread = run_in_thread or threads.deferToThread
        self.log = logger or log
        #: ``mafka_background_pass_failures_total{pass=...}`` (unregistered: see the module docstring)
        self.failures = Counter(FAILURES_METRIC, "Failed runs of a periodic background pass (it runs again)",
                                ["pass"], registry=None)
        #: the running passes by name
        self.passes: dict[str, PeriodicPass] = {}

    def every(self, name: str, interval_s: float, fn: Callable[..., Any], *args: Any,
              first_delay_s: float | None = None) -> PeriodicPass:
        """Starts pass *name*: ``fn(*args)`` every *interval_s* seconds (first run after *first_delay_s*).

        *fn* runs on the reactor and may return a Deferred or a coroutine (the
        next run waits for it).  Raises ValueError if a pass of that name runs.
        """
        if name in self.passes:
            raise ValueError(f"a background pass named {name!r} is already running")
        p = PeriodicPass(self, name, interval_s, fn, args)
        self.passes[name] = p
        self.failures.labels(name)  # exposed (at 0) from the start
        return p.start(first_delay_s)

    def every_in_thread(self, name: str, interval_s: float, work: Callable[..., Any], *,
                        snapshot: Callable[[], tuple[Any, ...]] | None = None,
                        first_delay_s: float | None = None) -> PeriodicPass:
        """Starts pass *name*: ``work(*snapshot())`` in a worker thread every *interval_s* seconds.

        ``snapshot`` runs on the reactor right before each run; the tuple it
        returns is the work's arguments (none without a snapshot).
        """

        def run() -> defer.Deferred:
            args = snapshot() if snapshot is not None else ()
            return self.run_in_thread(work, *args)

        return self.every(name, interval_s, run, first_delay_s=first_delay_s)

    def failure_count(self, name: str) -> float:
        """The failure counter's value for pass *name* (0 for a pass that never failed)."""
        for metric in self.failures.collect():
            for sample in metric.samples:
                if sample.name == FAILURES_METRIC and sample.labels.get("pass") == name:
                    return sample.value
        return 0.0

    def stop_all(self) -> defer.Deferred:
        """Stops every pass; fires once the runs in progress have finished."""
        return defer.DeferredList([p.stop() for p in list(self.passes.values())])

    def report_failure(self, name: str, failure: Failure, what_next: str = "") -> None:
        """Logs *failure* of background work *name* with its traceback and counts it."""
        self.failures.labels(name).inc()
        self.log.error(
            "background pass %s failed %s", name, what_next,
            exc_info=(failure.type, failure.value, failure.getTracebackObject()),
        )

    # ------------------------------------------------------------------ for PeriodicPass

    def _forget(self, p: PeriodicPass) -> None:
        if self.passes.get(p.name) is p:
            del self.passes[p.name]
