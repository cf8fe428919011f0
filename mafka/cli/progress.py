"""Progress of a tool's long work, on stderr: a rich bar on a terminal, plain lines when piped.

One API for every command::

    from mafka.cli.progress import progress

    with progress("reassign-partitions", total=len(targets), unit="partitions moved") as bar:
        while waiting:
            bar.update(done)             # absolute: `done` of the total finished
            ...
            bar.advance()                # or relative: one more finished
            bar.update(done, total=n)    # the total may change (or become known) on the way

On leaving the block one summary line is written, e.g.
``reassign-partitions: 40/40 partitions moved (100%) in 12.3 s`` (``…, stopped after
12.3 s`` when the block raised).

Where it goes (stdout is never written: the tools' stdout is parsed by scripts and tests):

* ``MAFKA_PROGRESS=rich|plain|off`` decides when set (tests, CI); otherwise ``rich``
  when the stream (stderr) is a terminal and ``plain`` when it is not;
* ``plain``: ``<description>: <done>/<total> <unit> (<pct>%)`` lines, at most one per
  ``interval`` (1 s) and only when the figure changed, then the summary.  Lines are
  written from :meth:`Progress.update` / :meth:`Progress.advance` themselves (no
  thread), so a test drives them with an injected clock;
* ``rich``: a transient bar (description, bar, done/total, rate, ETA) redrawn by
  rich's thread, then the summary line.  Lines the tool writes to stderr meanwhile
  (errors, warnings) print above the bar.  When stdout is a terminal too, a line the
  tool prints on stdout meanwhile (``producer-perf-test``'s Kafka lines) is written to
  stdout unchanged, the bar taken off the screen around it so the two never overlap;
* ``off``: nothing at all.

Updates are cheap in every mode (``producer-perf-test`` calls one per record): the
rich bar is fed at most ten times a second.
"""

from __future__ import annotations

import io
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Literal, TextIO

__all__ = ["ENV", "Mode", "Progress", "choose_mode", "progress"]

#: The environment variable that overrides the choice: ``rich``, ``plain`` or ``off``.
ENV = "MAFKA_PROGRESS"

Mode = Literal["rich", "plain", "off"]
_MODES: tuple[Mode, ...] = ("rich", "plain", "off")

#: Seconds between two plain lines at most once (the rate bound).
PLAIN_INTERVAL_S = 1.0
#: Seconds between two updates handed to rich at most once.
_RICH_FEED_S = 0.1


def choose_mode(stream: TextIO, environ: Any = None) -> Mode:
    """``MAFKA_PROGRESS`` when it names a mode (any case), else rich on a terminal and plain otherwise."""
    env = os.environ if environ is None else environ
    wanted = str(env.get(ENV, "")).strip().lower()
    if wanted in _MODES:
        return wanted
    return "rich" if _isatty(stream) else "plain"


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # closed, or no isatty at all
        return False


class Progress:
    """What ``progress()`` yields: the count so far, and the lines it leads to in ``plain`` mode.

    Attributes:
        description: The tool's name (or what it does), the head of every line.
        unit: Says what is counted, after the figures (``partitions moved``).
        completed: How many are finished.
        total: How many in all; None while unknown (lines then show the count alone).
        mode: How it shows: ``rich``, ``plain`` or ``off``.
    """

    mode: Mode = "off"

    def __init__(self, description: str, total: int | None, unit: str, clock: Callable[[], float]) -> None:
        self.description = description
        self.unit = unit
        self.total = total
        self.completed = 0
        self.clock = clock
        self.started = clock()

    def advance(self, n: int = 1) -> None:
        """``n`` more are finished."""
        self.update(self.completed + n)

    def update(self, completed: int, total: int | None = None) -> None:
        """``completed`` are finished now (of ``total`` in all, when given: it replaces the total)."""
        self.completed = completed
        if total is not None:
            self.total = total
        self._changed()

    def line(self) -> str:
        """The state as one line: ``reassign-partitions: 12/40 partitions moved (30%)``."""
        if self.total is None:
            return f"{self.description}: {self.completed} {self.unit}"
        pct = 100 if self.total <= 0 else min(100, 100 * self.completed // self.total)
        return f"{self.description}: {self.completed}/{self.total} {self.unit} ({pct}%)"

    def summary(self, failed: bool = False) -> str:
        """The last line: the state and how long it took (or that the work stopped half-way)."""
        elapsed = max(0.0, self.clock() - self.started)
        if failed:
            return f"{self.line()}, stopped after {elapsed:.1f} s"
        return f"{self.line()} in {elapsed:.1f} s"

    # the modes' hooks
    def _changed(self) -> None:
        """Called after every change of the figures."""

    def _open(self) -> None:
        """Called once when the block is entered."""

    def _close(self, failed: bool) -> None:
        """Called once when the block is left (``failed``: it raised)."""


class _Off(Progress):
    """Counts, and says nothing."""

    mode: Mode = "off"


class _Plain(Progress):
    """Lines on ``stream``: at most one per ``interval`` seconds, only when the figures changed, and the summary."""

    mode: Mode = "plain"

    def __init__(self, description: str, total: int | None, unit: str, clock: Callable[[], float],
                 stream: TextIO, interval: float) -> None:
        super().__init__(description, total, unit, clock)
        self.stream = stream
        self.interval = interval
        # The first line waits an interval too: work that ends sooner shows only its summary.
        self._last_at = self.started
        self._last_line: str | None = None

    def _changed(self) -> None:
        now = self.clock()
        if now - self._last_at < self.interval:
            return
        text = self.line()
        if text == self._last_line:
            return
        self._write(text)
        self._last_at, self._last_line = now, text

    def _close(self, failed: bool) -> None:
        self._write(self.summary(failed))

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text + "\n")
            self.stream.flush()
        except (OSError, ValueError):  # stderr closed or gone: progress is never worth failing for
            pass


class _Rich(Progress):
    """A transient rich bar on ``stream`` (stderr), then the summary line."""

    mode: Mode = "rich"

    def __init__(self, description: str, total: int | None, unit: str, clock: Callable[[], float],
                 stream: TextIO, force_terminal: bool) -> None:
        super().__init__(description, total, unit, clock)
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            TextColumn,
            TimeRemainingColumn,
        )
        from rich.progress import Progress as RichProgress

        self.console = Console(file=stream, force_terminal=True if force_terminal else None)
        self.bar = RichProgress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[unit]}"),
            _rate_column(),
            TimeRemainingColumn(),
            console=self.console,
            transient=True,
            redirect_stdout=False,  # rich would move stdout's lines onto stderr: see _StdoutAroundBar
            # the tool's own stderr lines (errors, warnings) print above the bar, still on stderr
            redirect_stderr=stream is sys.stderr,
            get_time=clock,
        )
        self.task = self.bar.add_task(description, total=total, unit=unit)
        self._fed_at: float | None = None
        self._stdout: _StdoutAroundBar | None = None

    def _changed(self) -> None:
        now = self.clock()
        done = self.total is not None and self.completed >= self.total
        if self._fed_at is not None and now - self._fed_at < _RICH_FEED_S and not done:
            return
        self._fed_at = now
        self.bar.update(self.task, completed=self.completed, total=self.total)

    def _open(self) -> None:
        self.bar.start()
        if _isatty(sys.stdout):
            self._stdout = _StdoutAroundBar(sys.stdout, self.bar)
            sys.stdout = self._stdout

    def _close(self, failed: bool) -> None:
        if self._stdout is not None:
            self._stdout.flush()
            if sys.stdout is self._stdout:
                sys.stdout = self._stdout.real
        self.bar.update(self.task, completed=self.completed, total=self.total)
        self.bar.stop()
        self.console.print(self.summary(failed), markup=False, highlight=False, soft_wrap=True)


def _rate_column() -> Any:
    """A column of finished pieces per second (rich's own speed column counts bytes); rich imported here."""
    from rich.progress import ProgressColumn
    from rich.text import Text

    class RateColumn(ProgressColumn):
        def render(self, task: Any) -> Text:
            speed = task.finished_speed or task.speed
            return Text("" if speed is None else f"{speed:,.1f}/s", style="progress.data.speed")

    return RateColumn()


class _StdoutAroundBar(io.TextIOBase):
    """sys.stdout while a bar shows on the same terminal: whole lines go to the real stdout, bar off around them.

    Rich's own redirection would print them through its console, i.e. on stderr;
    here the bytes stay on stdout and the bar is stopped (erased) before and started
    (redrawn) after each write of whole lines.  A partial line waits for its newline
    (or a flush).
    """

    def __init__(self, real: TextIO, bar: Any) -> None:
        super().__init__()
        self.real = real
        self.bar = bar
        self._pending = ""

    def write(self, text: str) -> int:
        self._pending += text
        head, newline, rest = self._pending.rpartition("\n")
        if newline:
            self._pending = rest
            self._emit(head + newline)
        return len(text)

    def flush(self) -> None:
        if self._pending:
            text, self._pending = self._pending, ""
            self._emit(text)
        self.real.flush()

    def _emit(self, text: str) -> None:
        self.bar.stop()
        try:
            self.real.write(text)
            self.real.flush()
        finally:
            self.bar.start()

    def isatty(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.real.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]  # TextIOBase declares it read-only
        return getattr(self.real, "encoding", "utf-8")


@contextmanager
def progress(description: str, total: int | None = None, unit: str = "done", *,
             stream: TextIO | None = None, mode: Mode | None = None,
             clock: Callable[[], float] = time.monotonic,
             interval: float = PLAIN_INTERVAL_S) -> Iterator[Progress]:
    """The progress of one piece of work, shown while the block runs and summed up when it ends.

    Args:
        description: The head of every line: the tool's name, e.g. ``"delete-records"``.
        total: How many pieces in all, if known (``update(…, total=…)`` may set it later).
        unit: What is counted, as it reads after ``12/40``: ``"partitions moved"``.
        stream: Where it goes; default ``sys.stderr`` (as it is when called).  Never stdout.
        mode: ``rich``, ``plain`` or ``off``; default :func:`choose_mode` (``MAFKA_PROGRESS``,
            else whether ``stream`` is a terminal).
        clock: Seconds, monotonic (tests inject one).
        interval: Plain mode's least seconds between two lines.

    Yields:
        The :class:`Progress` to ``update()`` / ``advance()``.
    """
    out = sys.stderr if stream is None else stream
    env_mode = str(os.environ.get(ENV, "")).strip().lower()
    chosen: Mode = mode if mode is not None else choose_mode(out)
    tracker: Progress
    if chosen == "off":
        tracker = _Off(description, total, unit, clock)
    elif chosen == "plain":
        tracker = _Plain(description, total, unit, clock, out, interval)
    else:
        tracker = _Rich(description, total, unit, clock, out,
                        force_terminal=(mode == "rich" or env_mode == "rich"))
    tracker._open()
    failed = True
    try:
        yield tracker
        failed = False
    finally:
        tracker._close(failed)
