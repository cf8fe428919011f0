"""How the message browser shows one record's bytes: UTF-8, JSON (pretty) or hex, at most 10 KB.

A key, value or header value is attacker-chosen bytes of any size.  :func:`show` renders
at most :data:`SHOW_LIMIT` bytes of it in the chosen format and says how large the whole
is, so a 10 MB value is never sent to the browser whole; the text it returns is plain text
(the template escapes it).  JSON that does not parse, or is cut at the limit, is shown as
UTF-8 with a note saying so.

:func:`delay_info` reads Mafka's delayed-message headers (:mod:`mafka.delayed.headers`):
the due time a record asks for (``mafka.delay.ms`` after its timestamp, or
``mafka.deliver.at``), and for a delivered record the offset its producer was
acknowledged with and its original timestamp.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from mafka.delayed.headers import (
    DELAY_HEADER,
    DELAYED_OFFSET_HEADER,
    DELIVER_AT_HEADER,
    ORIGINAL_TIMESTAMP_HEADER,
)

__all__ = ["FORMATS", "SHOW_LIMIT", "Shown", "show", "hexdump", "delay_info", "utc"]

FORMATS = ("utf8", "json", "hex")
#: the most of one key, value or header value put in a page
SHOW_LIMIT = 10 * 1024


@dataclass(frozen=True)
class Shown:
    """A rendering: ``text`` (None for a null key or value), the whole ``size`` in bytes,
    whether ``text`` covers only the first :data:`SHOW_LIMIT` bytes, and a note."""

    text: str | None
    size: int
    truncated: bool = False
    note: str | None = None


def hexdump(data: bytes) -> str:
    """Offset, 16 bytes in hex, and their printable ASCII, one line per 16 bytes."""
    lines = []
    for at in range(0, len(data), 16):
        chunk = data[at:at + 16]
        ascii_ = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{at:08x}  {chunk.hex(' '):<47}  {ascii_}")
    return "\n".join(lines)


def show(data: bytes | None, fmt: str) -> Shown:
    """``data`` in format ``fmt`` (one of :data:`FORMATS`; anything else is UTF-8), at most
    :data:`SHOW_LIMIT` bytes of it."""
    if data is None:
        return Shown(None, 0)
    size = len(data)
    truncated = size > SHOW_LIMIT
    head = data[:SHOW_LIMIT]
    note = f"showing the first {SHOW_LIMIT:,} of {size:,} bytes" if truncated else None
    if fmt == "hex":
        return Shown(hexdump(head), size, truncated, note)
    if fmt == "json":
        if truncated:
            return Shown(head.decode("utf-8", "replace"), size, True, f"{note}; too large to format as JSON")
        try:
            pretty = json.dumps(json.loads(head), indent=2, ensure_ascii=False)
        except (ValueError, RecursionError):
            return Shown(head.decode("utf-8", "replace"), size, False, "not JSON; shown as UTF-8")
        return Shown(pretty, size)
    return Shown(head.decode("utf-8", "replace"), size, truncated, note)


def utc(ms: int) -> str:
    """Epoch milliseconds as ``2026-01-02T03:04:05.678Z``."""
    seconds, millis = divmod(ms, 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}Z"


def _integer(raw: bytes | None) -> int | None:
    try:
        return int((raw or b"").decode("ascii").strip(), 10)
    except (UnicodeDecodeError, ValueError):
        return None


def delay_info(headers: list[tuple[str, bytes | None]], timestamp_ms: int) -> str | None:
    """One line about Mafka's delayed-message headers of a record, None if it has none."""
    parts = []
    for name, raw in headers:
        value = _integer(raw)
        if name == DELAY_HEADER:
            if value is None or value < 0 or timestamp_ms < 0:
                parts.append(f"{DELAY_HEADER} not usable")
            else:
                parts.append(f"due {utc(timestamp_ms + value)} ({DELAY_HEADER}={value})")
        elif name == DELIVER_AT_HEADER:
            parts.append(f"due {utc(value)} ({DELIVER_AT_HEADER})" if value is not None and value >= 0
                         else f"{DELIVER_AT_HEADER} not usable")
        elif name == DELAYED_OFFSET_HEADER and value is not None:
            parts.append(f"delivered delayed message, acknowledged at offset {value}")
        elif name == ORIGINAL_TIMESTAMP_HEADER and value is not None:
            parts.append(f"produced {utc(value)}")
    return "; ".join(parts) or None
