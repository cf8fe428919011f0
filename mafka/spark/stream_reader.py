"""``spark.readStream.format("mafka")``: Spark's Kafka streaming source as a Python ``DataSourceStreamReader``.

Spark keeps one Python process per streaming query on the driver and calls
this reader there: ``initialOffset`` (only for a query with an empty
checkpoint), ``getDefaultReadLimit``, ``latestOffset(start, limit)`` and
``reportLatestOffset`` at each trigger, ``partitions(start, end)`` for the
batch, ``commit(end)`` once the sink has it.  The offsets it returns are the
Kafka source's (``{"topic": {"0": 23}}``) and land in the checkpoint's offset
log; the planning itself is :class:`~mafka.spark.stream_offsets.StreamPlanner`
over :class:`~mafka.spark.cluster_offsets.ClusterOffsets` (one AdminClient for
the query's life).  Each batch's ranges are read by tasks exactly as a batch
read's are (:func:`~mafka.spark.range_reader.read_range_arrow`: Arrow batches,
``kafka.isolation.level`` honoured).

Read limits: a Python source can only hand Spark one of PySpark's built-in
``ReadLimit`` types, so the default limit is ``ReadMaxRows(maxOffsetsPerTrigger)``
(or ``ReadMinRows(minOffsetsPerTrigger)``) and stands for all the rate options
together; ``ReadAllAvailable`` from the engine lifts them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)

from mafka.spark.datasource import RangePartition
from mafka.spark.offset_ranges import OffsetRange
from mafka.spark.stream_offsets import (
    StreamPlanner,
    offsets_from_json,
    offsets_to_json,
    parse_stream_options,
)

__all__ = ["MafkaStreamReader"]


class MafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The ``mafka`` streaming source (see the module docstring).

    Options are validated when Spark creates the reader, so a bad option
    fails the query at its start, naming the option.
    """

    def __init__(self, options: Mapping[str, str]) -> None:
        self.stream_options = parse_stream_options(options)
        self.options = self.stream_options.read
        self._planner: StreamPlanner | None = None
        self._source: Any = None

    def __getstate__(self) -> dict[str, Any]:
        # Spark pickles the reader to run read() in tasks: no client goes with it.
        return {**self.__dict__, "_planner": None, "_source": None}

    def _plan(self) -> StreamPlanner:
        if self._planner is None:
            from mafka.spark.cluster_offsets import ClusterOffsets

            self._source = ClusterOffsets(self.options.bootstrap_servers, self.options.client_config)
            self._planner = StreamPlanner(self.stream_options, self._source)
        return self._planner

    # -- driver side (the query's Python runner) ------------------------------------------------

    def initialOffset(self) -> dict:
        return offsets_to_json(self._plan().initial_offsets())

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.stream_options.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.stream_options.max_offsets_per_trigger)
        if self.stream_options.min_offsets_per_trigger is not None:
            return ReadMinRows(self.stream_options.min_offsets_per_trigger)
        return ReadAllAvailable()

    def latestOffset(self, start: dict | None = None, limit: ReadLimit | None = None) -> dict:
        # A 4.0/4.1 engine calls latestOffset() with neither: read everything from where the last batch ended.
        planner = self._plan()
        begin = offsets_from_json(start) if start is not None else dict(planner.latest or {})
        read_all = limit is None or isinstance(limit, ReadAllAvailable)
        return offsets_to_json(planner.latest_offsets(begin, read_all=read_all))

    def reportLatestOffset(self) -> dict | None:
        latest = self._plan().latest
        return offsets_to_json(latest) if latest else None

    def prepareForTriggerAvailableNow(self) -> None:
        self._plan().available_now = True

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        ranges = self._plan().plan_ranges(offsets_from_json(start), offsets_from_json(end))
        return [RangePartition(r) for r in ranges]

    def commit(self, end: dict) -> None:
        """Nothing to do: the offsets live in Spark's checkpoint (Spark's Kafka source commits nothing either)."""

    def stop(self) -> None:
        if self._source is not None:
            self._source.close()
            self._source = self._planner = None

    # -- tasks --------------------------------------------------------------------------------

    def read(self, partition: InputPartition) -> Iterator[Any]:
        from mafka.spark.range_reader import read_range_arrow

        r: OffsetRange | None = partition.value
        if r is None:
            return
        yield from read_range_arrow(self.options.bootstrap_servers, r, self.options.client_config,
                                    include_headers=self.options.include_headers,
                                    fail_on_data_loss=self.options.fail_on_data_loss,
                                    poll_timeout=self.stream_options.poll_timeout)
