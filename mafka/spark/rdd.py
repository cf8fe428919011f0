"""``offset_range_rdd``: an RDD with one Spark partition per offset range (the low-level API).

``sc.parallelize(ranges, len(ranges))`` puts exactly one range in each slice
(PySpark slices at ``i * n / numSlices``), and each task reads its range with
:func:`mafka.spark.range_reader.read_range` — no consumer group, no commits;
a retried task reads the same range again.  Rows are the Kafka source's
columns as tuples (see :mod:`mafka.spark.rows`), or ``(key, value)`` pairs.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from mafka.spark.offset_ranges import OffsetRange

__all__ = ["offset_range_rdd"]


def offset_range_rdd(sc: Any, bootstrap_servers: str, ranges: Sequence[OffsetRange], *,
                     client_config: Mapping[str, Any] | None = None, pairs: bool = False,
                     include_headers: bool = False, fail_on_data_loss: bool = True,
                     poll_timeout: float = 120.0) -> Any:
    """An RDD of the records of ``ranges``, partition ``i`` holding exactly ``ranges[i]``.

    Args:
        sc: the SparkContext.
        bootstrap_servers: ``host:port,...``.
        ranges: the offset ranges (from :func:`mafka.spark.plan` or built by hand).
        client_config: further ``mafka.client`` settings for the readers.
        pairs: yield ``(key, value)`` instead of full rows.
        include_headers: add the headers column to full rows.
        fail_on_data_loss: Spark's ``failOnDataLoss`` (see :mod:`mafka.spark.range_reader`).
        poll_timeout: seconds without progress before a task fails.
    """
    ranges = list(ranges)
    if not all(isinstance(r, OffsetRange) for r in ranges):
        raise TypeError("ranges must be OffsetRange objects")
    config = dict(client_config or {})
    if not ranges:
        return sc.emptyRDD()

    def read_partition(index: int, _: Iterator[Any]) -> Iterator[Any]:
        from mafka.spark.range_reader import read_range
        from mafka.spark.rows import to_tuple

        records = read_range(bootstrap_servers, ranges[index], config,
                             fail_on_data_loss=fail_on_data_loss, poll_timeout=poll_timeout)
        if pairs:
            return ((m.key(), m.value()) for m in records)
        return (to_tuple(m, include_headers) for m in records)

    # Slices carry only their index: the ranges travel once, in the closure.
    return sc.parallelize(range(len(ranges)), len(ranges)).mapPartitionsWithIndex(read_partition)
