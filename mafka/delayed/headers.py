"""When each record of a produced batch is due: the delay headers and the topic's default delay.

A record asks for delay with one of two headers, their values ASCII decimal
integers (what any Kafka client can set):

* ``mafka.delay.ms`` — milliseconds after the broker accepted the record;
* ``mafka.deliver.at`` — an absolute time, epoch milliseconds (a time in the
  past means "now").

A record with neither takes the topic's ``mafka.delay.ms`` (0: none).  A bad
value — not an integer, negative, or due more than ``mafka.delay.max.ms`` after
now — refuses the batch with INVALID_RECORD, naming the record and the header
(KIP-467's per-record errors), as Kafka refuses a record its validator rejects.

Finding out whether a batch asks for delay at all is per-batch work: one
substring search over the (decompressed) records for the headers' common
prefix; only batches that contain it are decoded record by record.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from mafka.wire.records import Header, Record

__all__ = [
    "HALF_HEADER",
    "TXN_ID_HEADER",
    "DELAY_HEADER",
    "DELIVER_AT_HEADER",
    "DELAYED_OFFSET_HEADER",
    "DelayHeaderError",
    "ORIGINAL_TIMESTAMP_HEADER",
    "due_times",
    "may_ask_for_delay",
    "strip_delay_headers",
]

DELAY_HEADER = "mafka.delay.ms"
DELIVER_AT_HEADER = "mafka.deliver.at"
#: added to each delivered record: the offset its producer was acknowledged with
DELAYED_OFFSET_HEADER = "mafka.delayed.offset"
#: added to each delivered record: its timestamp as produced (the delivered record carries the delivery time)
ORIGINAL_TIMESTAMP_HEADER = "mafka.original.timestamp"

#: a local-transaction half message (``mafka.client.TransactionalMessageProducer``): its producer group
HALF_HEADER = "mafka.txn.half"
#: a half message's transaction id (the producer's own, shown to its check-back)
TXN_ID_HEADER = "mafka.txn.id"

#: what a batch's records are searched for: the delay headers' common prefix, the half-message header
_PREFIXES = (b"mafka.de", HALF_HEADER.encode())
_REQUEST_HEADERS = (DELAY_HEADER, DELIVER_AT_HEADER)


class DelayHeaderError(ValueError):
    """A record's delay header is not usable; ``errors`` lists (record index, message) as KIP-467 wants."""

    def __init__(self, errors: list[tuple[int, str]]) -> None:
        super().__init__("; ".join(f"record {i}: {m}" for i, m in errors))
        self.errors = errors


def may_ask_for_delay(records_payload: bytes | memoryview) -> bool:
    """False when no record of the (decompressed) records payload can carry a delay header.

    True does not mean one does: the prefix may sit in a key or value;
    :func:`due_times` decides.
    """
    data = records_payload if isinstance(records_payload, bytes) else bytes(records_payload)
    return any(data.find(prefix) >= 0 for prefix in _PREFIXES)


def _parse(name: str, raw: bytes | None) -> int:
    if raw is None:
        raise ValueError(f"header {name} has no value")
    try:
        text = raw.decode("ascii").strip()
        value = int(text, 10)
    except (UnicodeDecodeError, ValueError):
        raise ValueError(f"header {name} is not an integer: {raw[:40]!r}") from None
    if value < 0:
        raise ValueError(f"header {name} is negative: {value}")
    return value


def due_times(records: Sequence[Record], *, now_ms: int, default_delay_ms: int, max_delay_ms: int) -> list[int]:
    """Each record's due time (epoch ms), in order.

    A record's due time is ``now_ms`` when it asks for no delay and the topic
    has none.  The first request header of a record wins; a record naming both
    is refused (which one was meant is not knowable).

    Raises:
        DelayHeaderError: for every record whose header is malformed, negative,
            doubled, or further than ``max_delay_ms`` ahead.
    """
    out: list[int] = []
    errors: list[tuple[int, str]] = []
    for i, record in enumerate(records):
        asked = [(k, v) for k, v in record.headers if k in _REQUEST_HEADERS]
        try:
            if len(asked) > 1:
                raise ValueError(f"a record may carry one of {DELAY_HEADER} and {DELIVER_AT_HEADER}, "
                                 f"not {len(asked)} of them")
            if not asked:
                due = now_ms + default_delay_ms
            elif asked[0][0] == DELAY_HEADER:
                due = now_ms + _parse(DELAY_HEADER, asked[0][1])
            else:
                due = max(now_ms, _parse(DELIVER_AT_HEADER, asked[0][1]))
            if due - now_ms > max_delay_ms:
                name = asked[0][0] if asked else "the topic's mafka.delay.ms"
                raise ValueError(f"{name} asks for {due - now_ms} ms, beyond mafka.delay.max.ms={max_delay_ms}")
        except ValueError as exc:
            errors.append((i, str(exc)))
            continue
        out.append(due)
    if errors:
        raise DelayHeaderError(errors)
    return out


def strip_delay_headers(headers: Iterable[Header]) -> tuple[Header, ...]:
    """``headers`` without the request headers (what a delivered record keeps)."""
    return tuple((k, v) for k, v in headers if k not in _REQUEST_HEADERS and k != HALF_HEADER)


def half_group(records: Sequence[Record]) -> str | None:
    """The producer group of a half message (its first record's ``mafka.txn.half``), None if not one."""
    for record in records[:1]:
        for k, v in record.headers:
            if k == HALF_HEADER:
                return (v or b"").decode("utf-8", "replace")
    return None
