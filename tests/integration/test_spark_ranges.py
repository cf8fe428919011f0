"""mafka.spark's driver and task halves without Spark, on a real 3-broker cluster.

The planner resolves Spark-Kafka-source options against the cluster's real
offsets (ListOffsets, offsets for timestamps), and each planned range is read
back with :func:`mafka.spark.range_reader.read_range` exactly: the records
read equal what was produced, range by range, and split ranges join up
without a gap or an overlap.  Records deleted between planning and reading
fail the read (``failOnDataLoss``) or are skipped.
"""

from __future__ import annotations

import uuid

import pytest

from tests.harness.cluster import ClusterSpec

pytestmark = pytest.mark.integration

PARTITIONS = 3
PER_PARTITION = 400
T0 = 1_700_000_000_000


CLUSTER = ClusterSpec()  # shared: uuid topic names, every broker stays up


@pytest.fixture(scope="module")
def topic(cluster):
    """A topic whose partition p holds values ``p-i`` at offsets i, timestamp T0 + i."""
    from mafka.client import AdminClient, NewTopic, Producer

    name = f"ranges-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(name, PARTITIONS, 3)])[name].result(30)
    admin.close()
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 5})
    for i in range(PER_PARTITION):
        for p in range(PARTITIONS):
            producer.produce(name, value=f"{p}-{i}".encode(), key=b"k", partition=p, timestamp=T0 + i,
                             headers=[("h", str(i).encode())])
    assert producer.flush(60) == 0
    producer.close()
    return name


def plan(cluster, **options):
    from mafka.spark.cluster_offsets import ClusterOffsets
    from mafka.spark.offset_ranges import parse_read_options, plan_ranges

    opts = parse_read_options({"kafka.bootstrap.servers": cluster.bootstrap, **options})
    with ClusterOffsets(opts.bootstrap_servers) as source:
        return plan_ranges(opts, source)


def read(cluster, r, **kw):
    from mafka.spark.range_reader import read_range

    return [(m.partition(), m.offset(), m.value(), m.timestamp()[1], m.headers())
            for m in read_range(cluster.bootstrap, r, **kw)]


def test_planned_ranges_read_back_exactly_what_was_produced(cluster, topic):
    from mafka.spark.offset_ranges import OffsetRange

    ranges = plan(cluster, subscribe=topic, maxRecordsPerPartition="150")
    assert [r.count() for r in ranges] == [133, 133, 134] * PARTITIONS
    rows = [row for r in ranges for row in read(cluster, r)]
    assert len(rows) == PARTITIONS * PER_PARTITION
    expected = [(p, i, f"{p}-{i}".encode(), T0 + i, [("h", str(i).encode())])
                for p in range(PARTITIONS) for i in range(PER_PARTITION)]
    assert rows == expected
    # A range in the middle of a partition, read twice (a retried task): the same records.
    middle = OffsetRange(topic, 1, 100, 110)
    assert read(cluster, middle) == read(cluster, middle) == expected[PER_PARTITION + 100:PER_PARTITION + 110]


def test_timestamps_and_per_partition_offsets_are_resolved_on_the_cluster(cluster, topic):
    ranges = plan(cluster, assign=f'{{"{topic}": [0, 2]}}', startingTimestamp=str(T0 + 50),
                  endingOffsets=f'{{"{topic}": {{"0": 60, "2": -1}}}}')
    assert [(r.partition, r.from_offset, r.until_offset) for r in ranges] == [(0, 50, 60), (2, 50, PER_PARTITION)]
    ranges = plan(cluster, subscribe=topic, startingOffsetsByTimestamp=f'{{"{topic}": {{"0": {T0 + 390}, '
                  f'"1": {T0}, "2": {T0 + 10_000}}}}}', startingOffsetsByTimestampStrategy="latest")
    assert [(r.partition, r.from_offset, r.until_offset) for r in ranges] == [(0, 390, 400), (1, 0, 400)]


def test_records_deleted_after_planning_fail_the_read_or_are_skipped(cluster):
    from mafka.client import AdminClient, NewTopic, Producer, TopicPartition
    from mafka.spark.range_reader import DataLossError

    name = f"loss-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(name, 1, 3)])[name].result(30)
    producer = Producer({"bootstrap.servers": cluster.bootstrap})
    for i in range(100):
        producer.produce(name, value=b"%d" % i, partition=0)
    assert producer.flush(30) == 0
    producer.close()
    [r] = plan(cluster, subscribe=name)
    assert (r.from_offset, r.until_offset) == (0, 100)
    admin.delete_records([TopicPartition(name, 0, 40)])[TopicPartition(name, 0, 40)].result(30)
    admin.close()
    with pytest.raises(DataLossError, match=rf"{name}-0: offsets from 0 of the range 0-100 are no longer in the log"):
        read(cluster, r)
    rows = read(cluster, r, fail_on_data_loss=False)
    assert [o for _, o, *_ in rows] == list(range(40, 100))
    # The Arrow reader (what the data source's tasks run) behaves the same.
    from mafka.spark.range_reader import read_range_arrow

    with pytest.raises(DataLossError, match=rf"{name}-0: offsets from 0 of the range 0-100"):
        list(read_range_arrow(cluster.bootstrap, r))
    batches = list(read_range_arrow(cluster.bootstrap, r, fail_on_data_loss=False))
    assert [o for b in batches for o in b.column("offset").to_pylist()] == list(range(40, 100))
    # Planning now fails for a start below the log start, or skips it.
    with pytest.raises(Exception, match="no longer in the log"):
        plan(cluster, subscribe=name, startingOffsets=f'{{"{name}": {{"0": 10}}}}')
    [r] = plan(cluster, subscribe=name, startingOffsets=f'{{"{name}": {{"0": 10}}}}', failOnDataLoss="false")
    assert (r.from_offset, r.until_offset) == (40, 100)


def test_a_missing_topic_is_a_clear_error_on_the_driver(cluster):
    from mafka.spark.offset_ranges import ReadOptionsError

    with pytest.raises(ReadOptionsError, match="option 'subscribe': topic 'no-such-topic' does not exist"):
        plan(cluster, subscribe="no-such-topic")
