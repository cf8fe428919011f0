"""PySpark integration: batch reads and writes over topic-partition offset ranges.

* ``spark.read.format("mafka")`` / ``df.write.format("mafka")`` — Spark's Kafka
  source and sink, same options and schema (:mod:`mafka.spark.datasource`);
  registered automatically when Mafka is pip-installed (the top-level
  ``pyspark_mafka`` module), or with :func:`register`.
* :func:`offset_range_rdd` — an RDD with one Spark partition per
  :class:`OffsetRange` (:mod:`mafka.spark.rdd`).
* :func:`plan` — the ranges a read covers, resolved on the cluster once
  (:mod:`mafka.spark.offset_ranges`).

Nothing here imports pyspark until it is used.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mafka.spark.offset_ranges import OffsetRange, ReadOptionsError

__all__ = ["OffsetRange", "ReadOptionsError", "plan", "offset_range_rdd", "register", "MafkaDataSource"]


def plan(options: Mapping[str, str]) -> list[OffsetRange]:
    """The offset ranges a read with these Kafka-source options covers, from the cluster's offsets now."""
    from mafka.spark.cluster_offsets import ClusterOffsets
    from mafka.spark.offset_ranges import parse_read_options, plan_ranges

    opts = parse_read_options(options)
    with ClusterOffsets(opts.bootstrap_servers, opts.client_config) as source:
        return plan_ranges(opts, source)


def register(spark: Any, by_value: bool = False) -> None:
    """Registers ``format("mafka")`` with a SparkSession.

    Not needed when Mafka is pip-installed where the driver runs (Spark finds
    ``pyspark_mafka``).  ``by_value=True`` pickles Mafka's modules by value,
    so executors that cannot import Mafka still run reads and writes (they
    need pyspark, pyarrow and Mafka's dependencies).
    """
    from mafka.spark.datasource import MafkaDataSource

    if by_value:
        import importlib
        import pkgutil

        from pyspark import cloudpickle

        import mafka

        for info in pkgutil.walk_packages(mafka.__path__, "mafka."):
            if info.name.startswith(("mafka.broker", "mafka.controller", "mafka.cli", "mafka.coordination")):
                continue
            cloudpickle.register_pickle_by_value(importlib.import_module(info.name))
    spark.dataSource.register(MafkaDataSource)


def __getattr__(name: str) -> Any:
    if name == "offset_range_rdd":
        from mafka.spark.rdd import offset_range_rdd

        return offset_range_rdd
    if name == "MafkaDataSource":
        from mafka.spark.datasource import MafkaDataSource

        return MafkaDataSource
    raise AttributeError(name)
