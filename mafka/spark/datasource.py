"""The ``mafka`` data source (PySpark 4 Python Data Source API): Spark's Kafka source and sink, over mafka.client.

Reading: ``spark.read.format("mafka").option("kafka.bootstrap.servers", ...)
.option("subscribe", ...).load()`` — the Kafka source's options and schema
(:mod:`mafka.spark.offset_ranges`, :mod:`mafka.spark.rows`).  Planning runs
once, in Spark's planner process on the driver; each Spark partition is one
:class:`~mafka.spark.offset_ranges.OffsetRange`, read by a task with
:func:`~mafka.spark.range_reader.read_range_arrow` and returned as Arrow record
batches decoded by :mod:`mafka.spark.columnar` (no Python object per record).

Writing: ``df.write.format("mafka").mode("append").option(
"kafka.bootstrap.servers", ...).option("topic", ...).save()`` takes the Kafka
sink's columns — ``value`` (required, string or binary), ``key``, ``topic``
(unless the ``topic`` option is set; the option wins), ``partition`` (null:
the producer's partitioner), ``headers`` — one idempotent producer per task,
acks=all; a task fails unless every record was acknowledged (at least once,
as Spark's Kafka sink).  PySpark's Python data sources refuse the default
save mode (ErrorIfExists), so writes say ``.mode("append")``; ``overwrite``
is refused as Spark's Kafka sink refuses it.

Streaming: ``spark.readStream.format("mafka")`` — Spark's Kafka streaming
source, its offsets in the query's checkpoint
(:mod:`mafka.spark.stream_reader`, :mod:`mafka.spark.stream_offsets`);
``df.writeStream.format("mafka")`` — the sink above per micro-batch, at least
once, or exactly once with ``option("exactlyOnce", "true")``
(:mod:`mafka.spark.stream_writer`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
    WriterCommitMessage,
)

from mafka.spark.offset_ranges import OffsetRange, ReadOptionsError, parse_read_options

__all__ = ["MafkaDataSource", "RangePartition"]

class RangePartition(InputPartition):
    """One Spark partition: one offset range (``value``), or None for a read that covers nothing."""


class MafkaDataSource(DataSource):
    """``format("mafka")``: batch reads and writes, streaming reads (see the module docstring)."""

    @classmethod
    def name(cls) -> str:
        return "mafka"

    def schema(self) -> str:
        from mafka.spark.rows import schema_ddl

        include = str(dict(self.options).get("includeheaders", "false")).lower() == "true"
        return schema_ddl(include)

    def reader(self, schema: Any) -> DataSourceReader:
        return MafkaBatchReader(dict(self.options))

    def streamReader(self, schema: Any) -> DataSourceStreamReader:
        from mafka.spark.stream_reader import MafkaStreamReader

        return MafkaStreamReader(dict(self.options))

    def writer(self, schema: Any, overwrite: bool) -> DataSourceWriter:
        if overwrite:
            raise ReadOptionsError("save mode overwrite is not allowed for Kafka topics; use mode('append')")
        return MafkaBatchWriter(dict(self.options), [f.name for f in schema.fields])

    def streamWriter(self, schema: Any, overwrite: bool) -> DataSourceStreamWriter:
        from mafka.spark.stream_writer import MafkaStreamWriter

        return MafkaStreamWriter(dict(self.options), [f.name for f in schema.fields])


class MafkaBatchReader(DataSourceReader):
    def __init__(self, options: dict[str, str]) -> None:
        self.options = parse_read_options(options)  # fails on the driver, naming the option
        poll = options.get("kafkaconsumer.polltimeoutms")
        self.poll_timeout = int(poll) / 1000.0 if poll else 120.0

    def partitions(self) -> list[InputPartition]:
        from mafka.spark.cluster_offsets import ClusterOffsets
        from mafka.spark.offset_ranges import plan_ranges

        with ClusterOffsets(self.options.bootstrap_servers, self.options.client_config) as source:
            ranges = plan_ranges(self.options, source)
        return [RangePartition(r) for r in ranges] or [RangePartition(None)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        from mafka.spark.range_reader import read_range_arrow

        r: OffsetRange | None = partition.value
        if r is None:
            return
        yield from read_range_arrow(self.options.bootstrap_servers, r, self.options.client_config,
                                    include_headers=self.options.include_headers,
                                    fail_on_data_loss=self.options.fail_on_data_loss, poll_timeout=self.poll_timeout)


class WriteResult(WriterCommitMessage):
    def __init__(self, records: int) -> None:
        self.records = records


class MafkaBatchWriter(DataSourceWriter):
    def __init__(self, options: dict[str, str], columns: list[str]) -> None:
        from mafka.spark.writer import check_sink

        self.options, self.columns = check_sink(options, columns)

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        from mafka.spark.writer import write_rows

        return WriteResult(write_rows(self.options, iterator))
