"""Records as Spark rows: the Kafka source's schema, as tuples or as Arrow record batches.

The schema is Spark's Kafka source's, column for column (so jobs move over
unchanged): ``key binary, value binary, topic string, partition int, offset
long, timestamp timestamp, timestampType int`` and, with
``includeHeaders=true``, ``headers array<struct<key:string,value:binary>>``.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable
from typing import Any

from mafka.client.message import Message

__all__ = ["schema_ddl", "to_tuple", "to_arrow", "COLUMNS"]

COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "timestampType")
_DDL = "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, timestampType int"
_HEADERS_DDL = "headers array<struct<key:string,value:binary>>"
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)


def schema_ddl(include_headers: bool = False) -> str:
    """The Kafka source's schema as a Spark DDL string."""
    return f"{_DDL}, {_HEADERS_DDL}" if include_headers else _DDL


def _timestamp_type(m: Message) -> int:
    # Spark's timestampType column: 0 CreateTime, 1 LogAppendTime (confluent's 1 and 2).
    return max(0, m.timestamp()[0] - 1)


def to_tuple(m: Message, include_headers: bool = False) -> tuple[Any, ...]:
    """One row (Python objects: bytes, str, int, an aware UTC datetime)."""
    ts = _EPOCH + _dt.timedelta(milliseconds=m.timestamp()[1])
    row: tuple[Any, ...] = (m.key(), m.value(), m.topic(), m.partition(), m.offset(), ts, _timestamp_type(m))
    if include_headers:
        row += ([(k, v) for k, v in (m.headers() or [])],)
    return row


def to_arrow(messages: Iterable[Message], include_headers: bool = False) -> Any:
    """A ``pyarrow.RecordBatch`` of the messages, ``timestamp`` as ``timestamp[us, tz=UTC]``."""
    import pyarrow as pa

    keys, values, topics, partitions, offsets, stamps, types, headers = [], [], [], [], [], [], [], []
    for m in messages:
        keys.append(m._key)
        values.append(m._value)
        topics.append(m._topic)
        partitions.append(m._partition)
        offsets.append(m._offset)
        stamps.append(m._timestamp * 1000)
        types.append(max(0, m._ts_type - 1))
        if include_headers:
            headers.append([{"key": k, "value": v} for k, v in (m._headers or [])])
    arrays = [
        pa.array(keys, pa.binary()),
        pa.array(values, pa.binary()),
        pa.array(topics, pa.string()),
        pa.array(partitions, pa.int32()),
        pa.array(offsets, pa.int64()),
        pa.array(stamps, pa.timestamp("us", tz="UTC")),
        pa.array(types, pa.int32()),
    ]
    names = list(COLUMNS)
    if include_headers:
        arrays.append(pa.array(headers, pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))))
        names.append("headers")
    return pa.RecordBatch.from_arrays(arrays, names=names)
