"""The message browser: N records of one partition, from an offset or a timestamp.

:func:`parse_request` checks the page's query (topic, partition, ``offset`` or
``timestamp`` — epoch ms or ISO-8601 —, ``count`` 1–500, default 20, and the format);
:meth:`Browser.browse` finds the partition's log start and end (ListOffsets through the
admin client), the start offset (ListOffsets by timestamp for a timestamp; with neither,
the newest ``count`` records), then reads with a :class:`~mafka.client.Consumer` of its
own (no group, nothing committed, ``read_uncommitted``: what the log holds up to the high
watermark), bounded by the timeout, and renders each record through
:func:`mafka.console.records.show` (so at most 10 KB of any key, value or header value
reaches the page).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from mafka.cli.consumer_groups import CommandFailed, parse_datetime
from mafka.client.admin import AdminClient, OffsetSpec
from mafka.client.message import TopicPartition

from .errors import ConsoleError, console_error, error_name
from .records import FORMATS, Shown, delay_info, show, utc

__all__ = ["BrowseRequest", "RecordView", "Browse", "Browser", "parse_request", "DEFAULT_COUNT", "MAX_COUNT"]

DEFAULT_COUNT = 20
MAX_COUNT = 500

_TIMESTAMP_TYPES = {0: "", 1: "CreateTime", 2: "LogAppendTime"}


class ConsumerLike(Protocol):
    """What the browser uses of :class:`mafka.client.Consumer`."""

    def assign(self, partitions: list[TopicPartition]) -> None: ...

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Any]: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class BrowseRequest:
    topic: str
    partition: int
    offset: int | None = None
    timestamp_ms: int | None = None
    count: int = DEFAULT_COUNT
    fmt: str = "utf8"


@dataclass
class RecordView:
    partition: int
    offset: int
    timestamp: str
    timestamp_type: str
    key: Shown
    value: Shown
    headers: list[tuple[str, Shown]]
    delay: str | None = None


@dataclass
class Browse:
    """What was read: the records, the partition's log start and end, where reading began."""

    records: list[RecordView] = field(default_factory=list)
    log_start: int | None = None
    log_end: int | None = None
    start: int | None = None
    note: str | None = None


def _int(value: str, what: str, lo: int, hi: int | None = None) -> int:
    try:
        n = int(value.strip(), 10)
    except ValueError:
        raise ValueError(f"{what} must be an integer, not {value!r}") from None
    if n < lo or (hi is not None and n > hi):
        raise ValueError(f"{what} must be between {lo} and {hi}" if hi is not None else f"{what} must be >= {lo}")
    return n


def parse_timestamp(text: str) -> int:
    """Epoch milliseconds, or an ISO-8601 date-time as ``kafka-consumer-groups --to-datetime``
    takes it (``2026-01-02T03:04:05.000``, UTC unless a zone is given).

    Raises:
        ValueError: neither.
    """
    text = text.strip()
    if text.isdigit():
        return int(text)
    if "." not in text.partition("T")[2]:
        # Kafka's format wants milliseconds; a browser's datetime-local input has none.
        date, sep, rest = text.partition("T")
        zone_at = max(rest.find("+"), rest.find("-"), rest.find("Z"))
        clock, zone = (rest[:zone_at], rest[zone_at:]) if zone_at >= 0 else (rest, "")
        if clock.count(":") == 1:
            clock += ":00"
        text = f"{date}{sep}{clock}.000{zone}"
    try:
        return parse_datetime(text)
    except CommandFailed as exc:
        raise ValueError(f"timestamp: {exc}") from None


def parse_request(args: Mapping[str, str]) -> BrowseRequest | None:
    """The browser's query, None when no topic is given yet.

    Raises:
        ValueError: a field that does not parse (the message names it).
    """
    topic = (args.get("topic") or "").strip()
    if not topic:
        return None
    partition = _int(args.get("partition") or "0", "partition", 0)
    offset_text = (args.get("offset") or "").strip()
    ts_text = (args.get("timestamp") or "").strip()
    if offset_text and ts_text:
        raise ValueError("give an offset or a timestamp, not both")
    offset = _int(offset_text, "offset", 0) if offset_text else None
    timestamp = parse_timestamp(ts_text) if ts_text else None
    count = _int(args.get("count") or str(DEFAULT_COUNT), "count", 1, MAX_COUNT)
    fmt = args.get("format") or "utf8"
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}")
    return BrowseRequest(topic, partition, offset, timestamp, count, fmt)


def _quiet(shown: Shown) -> Shown:
    """A key or header value that is not JSON is simply text: no note saying so."""
    if shown.note is not None and shown.note.startswith("not JSON"):
        return Shown(shown.text, shown.size, shown.truncated)
    return shown


def record_view(message: Any, fmt: str) -> RecordView:
    ts_type, ts = message.timestamp()
    headers = list(message.headers() or [])
    return RecordView(
        partition=message.partition(),
        offset=message.offset(),
        timestamp=utc(ts) if ts >= 0 else "",
        timestamp_type=_TIMESTAMP_TYPES.get(ts_type, ""),
        key=_quiet(show(message.key(), fmt)),
        value=show(message.value(), fmt),
        headers=[(name, _quiet(show(value, fmt))) for name, value in headers],
        delay=delay_info(headers, ts),
    )


class Browser:
    """Reads records for the browser page (see the module docstring).

    ``consumer_factory(settings)`` builds a consumer for extra settings on top of the
    console's client settings (a :class:`mafka.client.Consumer` in production).
    """

    def __init__(self, admin: AdminClient, consumer_factory: Callable[[dict[str, Any]], ConsumerLike],
                 timeout: float = 10.0) -> None:
        self.admin = admin
        self.consumer_factory = consumer_factory
        self.timeout = timeout

    def _offset(self, tp: TopicPartition, spec: OffsetSpec, what: str) -> int:
        futures = self.admin.list_offsets({tp: spec}, request_timeout=self.timeout)
        try:
            offset: int = next(iter(futures.values())).result(self.timeout + 1.0).offset
            return offset
        except Exception as exc:  # noqa: BLE001
            raise console_error(exc, f"ListOffsets ({what}) of {tp.topic}-{tp.partition}") from None

    def browse(self, req: BrowseRequest) -> Browse:
        """Up to ``req.count`` records (see the module docstring).

        Raises:
            ConsoleError: the partition's offsets could not be listed (UNKNOWN_TOPIC_OR_PARTITION…).
        """
        tp = TopicPartition(req.topic, req.partition)
        out = Browse()
        out.log_start = self._offset(tp, OffsetSpec.earliest(), "log start")
        out.log_end = self._offset(tp, OffsetSpec.latest(), "log end")
        if req.timestamp_ms is not None:
            found = self._offset(tp, OffsetSpec.for_timestamp(req.timestamp_ms), "by timestamp")
            start = found if found >= 0 else out.log_end
        elif req.offset is not None:
            start = req.offset
        else:
            start = out.log_end - req.count
        start = min(max(start, out.log_start), out.log_end)
        out.start = start
        if start >= out.log_end:
            return out
        deadline = time.monotonic() + self.timeout
        consumer = self.consumer_factory({"enable.auto.commit": False, "enable.auto.offset.store": False,
                                          "auto.offset.reset": "earliest", "isolation.level": "read_uncommitted"})
        try:
            consumer.assign([TopicPartition(req.topic, req.partition, start)])
            last = start - 1
            while len(out.records) < req.count and last < out.log_end - 1:
                left = deadline - time.monotonic()
                if left <= 0:
                    out.note = f"stopped after {self.timeout:g} s with {len(out.records)} records"
                    break
                for m in consumer.consume(req.count - len(out.records), timeout=min(left, 1.0)):
                    err = m.error()
                    if err is not None:
                        name = err.name() if hasattr(err, "name") else error_name(err)
                        raise ConsoleError(str(name), f"Fetch of {req.topic}-{req.partition}")
                    if len(out.records) < req.count:
                        out.records.append(record_view(m, req.fmt))
                    last = max(last, m.offset())
        finally:
            consumer.close()
        return out
