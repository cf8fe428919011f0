"""The JSON event lines of Kafka's verifiable producer and consumer, as Jackson writes them.

Each event is one line, ``{"timestamp":<ms>,"name":"<event>",…}``: the two base fields first
(their ``@JsonPropertyOrder``), then the event's own in the order Kafka's classes give them,
compact (no blanks), strings with JSON's escapes and non-ASCII characters as they are,
``null`` for a missing key.  A ``float`` prints as Java's ``Double.toString`` does
(``12.5``, ``1.0E7``, ``1.0E-4``); NaN and infinities as Jackson quotes them (``"NaN"``,
``"Infinity"``).

:func:`stop_signals` is the tools' shutdown hook: SIGTERM and SIGINT ask for a clean stop.
"""

from __future__ import annotations

import json
import math
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from typing import IO, Any

__all__ = ["event_line", "java_double", "EventPrinter", "stop_signals"]


def java_double(value: float) -> str:
    """``Double.toString(value)`` with the shortest digits that round-trip (JDK 19+'s choice).

    Plain notation for 1e-3 <= |value| < 1e7 (at least one digit after the point),
    computerized scientific notation otherwise (``1.2345E7``, ``5.0E-4``).
    """
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    digits_tuple = Decimal(repr(abs(value))).normalize().as_tuple()
    digits = "".join(str(d) for d in digits_tuple.digits)
    assert isinstance(digits_tuple.exponent, int)
    exponent = len(digits) - 1 + digits_tuple.exponent  # of the first digit: value = d.ddd × 10^exponent
    if 1e-3 <= abs(value) < 1e7:
        if exponent >= 0:
            whole = digits[:exponent + 1].ljust(exponent + 1, "0")
            fraction = digits[exponent + 1:] or "0"
        else:
            whole = "0"
            fraction = "0" * (-exponent - 1) + digits
        return f"{sign}{whole}.{fraction}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"


def _json_value(value: Any) -> str:
    if isinstance(value, float):
        text = java_double(value)
        return f'"{text}"' if text in ("NaN", "Infinity", "-Infinity") else text
    if isinstance(value, list):
        return "[" + ",".join(_json_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(k, ensure_ascii=False)}:{_json_value(v)}" for k, v in value.items()) + "}"
    return json.dumps(value, ensure_ascii=False)


def event_line(name: str, fields: dict[str, Any] | None = None, timestamp: int | None = None) -> str:
    """One event: ``{"timestamp":…,"name":…}`` followed by ``fields`` in their order (nested
    dicts and lists keep theirs too)."""
    stamp = int(time.time() * 1000) if timestamp is None else timestamp
    return _json_value({"timestamp": stamp, "name": name, **(fields or {})})


class EventPrinter:
    """Prints event lines whole and flushed, from any thread (Kafka's ``synchronized (System.out)``)."""

    def __init__(self, out: IO[str] | None = None) -> None:
        self._out = out
        self._lock = threading.Lock()

    def __call__(self, name: str, fields: dict[str, Any] | None = None) -> None:
        line = event_line(name, fields)
        with self._lock:
            out = self._out if self._out is not None else sys.stdout
            try:
                out.write(line + "\n")
                out.flush()
            except BrokenPipeError:
                pass


@contextmanager
def stop_signals(stop: threading.Event) -> Iterator[None]:
    """While inside: SIGTERM and SIGINT set ``stop`` instead of ending the process (Kafka's
    shutdown hook then does the clean shutdown)."""
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    for sig in previous:
        signal.signal(sig, lambda _signum, _frame: stop.set())
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
