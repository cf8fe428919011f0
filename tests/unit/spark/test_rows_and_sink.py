"""Schema mapping (records → Spark rows, tuples and Arrow) and the sink's option/column checks."""

from __future__ import annotations

import datetime as dt

import pytest

from mafka.client.message import TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME, Message
from mafka.spark.offset_ranges import ReadOptionsError
from mafka.spark.rows import schema_ddl, to_arrow, to_tuple
from mafka.spark.writer import check_sink


def message(offset=5, ts_type=TIMESTAMP_CREATE_TIME, headers=None):
    return Message("t", 2, offset, b"k", b"v", headers, ts_type, 1_700_000_000_123)


def test_the_schema_is_spark_kafka_sources():
    assert schema_ddl() == ("key binary, value binary, topic string, partition int, offset long, "
                            "timestamp timestamp, timestampType int")
    assert schema_ddl(True).endswith(", headers array<struct<key:string,value:binary>>")


def test_a_record_becomes_a_row_with_spark_timestamp_types():
    ts = dt.datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=dt.UTC)
    assert to_tuple(message()) == (b"k", b"v", "t", 2, 5, ts, 0)
    assert to_tuple(message(ts_type=TIMESTAMP_LOG_APPEND_TIME))[6] == 1
    assert to_tuple(message(headers=[("a", b"1"), ("b", None)]), include_headers=True)[7] == [("a", b"1"), ("b", None)]
    assert to_tuple(message(), include_headers=True)[7] == []


def test_arrow_batches_carry_the_same_columns():
    import pyarrow as pa
    batch = to_arrow([message(1, headers=[("h", b"x")]), message(2, TIMESTAMP_LOG_APPEND_TIME)], include_headers=True)
    assert batch.schema.names == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType",
                                  "headers"]
    assert batch.schema.field("timestamp").type == pa.timestamp("us", tz="UTC")
    rows = batch.to_pylist()
    assert [r["offset"] for r in rows] == [1, 2] and [r["timestampType"] for r in rows] == [0, 1]
    assert rows[0]["timestamp"] == dt.datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=dt.UTC)
    assert rows[0]["headers"] == [{"key": "h", "value": b"x"}] and rows[1]["headers"] == []


@pytest.mark.parametrize(("options", "columns", "message"), [
    ({"topic": "t"}, ["value"], "'kafka.bootstrap.servers' is required"),
    ({"kafka.bootstrap.servers": "h:1", "topic": "t"}, ["key"], "a 'value' column is required"),
    ({"kafka.bootstrap.servers": "h:1"}, ["value"], "a 'topic' column or the 'topic' option is required"),
    ({"kafka.bootstrap.servers": "h:1", "topic": "t", "speed": "9"}, ["value"], "unknown option 'speed'"),
])
def test_the_sink_refuses_what_it_cannot_write_before_any_task(options, columns, message):
    with pytest.raises(ReadOptionsError, match=message):
        check_sink(options, columns)


def test_the_sink_ignores_other_columns_as_sparks_kafka_sink_does():
    # a DataFrame read from a topic, written back as it is
    read_columns = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
    sink, columns = check_sink({"kafka.bootstrap.servers": "h:1", "topic": "t"}, read_columns)
    assert columns == ["key", "value", "topic", "partition"]


def test_the_sink_takes_kafka_prefixed_client_settings():
    sink, columns = check_sink({"KAFKA.BOOTSTRAP.SERVERS": "h:1", "kafka.linger.ms": "5", "topic": "t"},
                               ["Key", "value"])
    assert (sink.bootstrap_servers, sink.topic, sink.client_config, columns) == ("h:1", "t", {"linger.ms": "5"},
                                                                                  ["key", "value"])
