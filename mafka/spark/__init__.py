"""PySpark integration: batch reads over topic-partition offset ranges (issue 12, in progress).

So far the Spark-free halves: :mod:`mafka.spark.offset_ranges` plans a read
(Spark's Kafka source options → :class:`~mafka.spark.offset_ranges.OffsetRange`
list) on the driver, :mod:`mafka.spark.cluster_offsets` answers its offset
questions from a live cluster, and :mod:`mafka.spark.range_reader` reads
exactly one range (what each Spark task will do).
"""
