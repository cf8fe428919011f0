"""Makes ``spark.read.format("mafka")`` work wherever Mafka is installed.

PySpark looks up Python data sources in top-level modules named
``pyspark_*`` and takes their ``DefaultSource``.
"""

from mafka.spark.datasource import MafkaDataSource as DefaultSource

__all__ = ["DefaultSource"]
