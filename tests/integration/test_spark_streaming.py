"""``spark.readStream.format("mafka")`` on real Spark (``local[2]``) against a real 3-broker cluster.

One SparkSession for the module.  Checks: ``Trigger.AvailableNow`` with
``maxOffsetsPerTrigger`` reads every record once in batches of at most that
many, the progress showing Spark's offsets JSON; a query writing Parquet
while a producer runs is stopped and restarted from its checkpoint
(``startingOffsets`` then ignored) and the output holds every key exactly
once; partitions added to the topic are picked up within two triggers, from
offset 0; ``kafka.isolation.level=read_committed`` reads only committed
records and does not wait for an open transaction; a malformed
``startingOffsets`` fails the query at its start, naming the option.
"""

from __future__ import annotations

import json
import threading
import time
import uuid

import pytest

from tests.harness.cluster import ClusterSpec
from tests.harness.spark import local_session

pytestmark = pytest.mark.integration

CLUSTER = ClusterSpec()  # shared: uuid topic names, every broker stays up


@pytest.fixture(scope="module")
def spark():
    yield from local_session("mafka-streaming-tests")


def create(cluster, partitions: int = 3) -> str:
    from mafka.client import AdminClient, NewTopic

    name = f"stream-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 3)])[name].result(30)
    admin.close()
    return name


def produce(cluster, topic: str, keys, partitions: int, pause: float = 0.0, every: int = 0, **conf) -> None:
    """Records keyed ``k<n>`` for each n of ``keys``, round-robin over the partitions."""
    from mafka.client import Producer

    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 5, **conf})
    for i, n in enumerate(keys):
        producer.produce(topic, key=f"k{n}".encode(), value=f"v{n}".encode(), partition=n % partitions)
        if every and i % every == every - 1:
            producer.flush(30)
            time.sleep(pause)
    assert producer.flush(60) == 0
    producer.close()


def source(spark, cluster, topic: str, **options):
    reader = (spark.readStream.format("mafka").option("kafka.bootstrap.servers", cluster.bootstrap)
              .option("subscribe", topic))
    return reader.options(**options).load()


def batches(query) -> list[dict]:
    """The query's progress entries of batches that read something."""
    return [p for p in query.recentProgress if p["numInputRows"] > 0]


def logged_offsets(checkpoint) -> str:
    """The source's offsets in the last entry of a query's offset log (its last line)."""
    logged = [f for f in (checkpoint / "offsets").iterdir() if f.name.isdigit()]
    return max(logged, key=lambda f: int(f.name)).read_text().splitlines()[-1]


def wait_for(what: str, check, timeout: float = 90.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_available_now_reads_everything_in_batches_bounded_by_max_offsets_per_trigger(cluster, spark):
    topic = create(cluster)
    produce(cluster, topic, range(3000), 3)
    name = f"q_{uuid.uuid4().hex[:8]}"
    query = (source(spark, cluster, topic, startingOffsets="earliest", maxOffsetsPerTrigger="1000")
             .writeStream.format("memory").queryName(name).trigger(availableNow=True).start())
    assert query.awaitTermination(120)
    assert query.exception() is None
    rows = spark.sql(f"select key, value, partition, offset from {name}").collect()
    assert sorted(r.key.decode() for r in rows) == sorted(f"k{n}" for n in range(3000))
    assert all(r.value == b"v" + r.key[1:] for r in rows)
    assert sorted((r.partition, r.offset) for r in rows) == [(p, o) for p in range(3) for o in range(1000)]
    sizes = [p["numInputRows"] for p in batches(query)]
    # 1000 shared in proportion: 333 per partition per batch, then what is left
    assert sizes == [999, 999, 999, 3], sizes
    last = query.recentProgress[-1]["sources"][0]
    assert json.loads(last["endOffset"]) == {topic: {"0": 1000, "1": 1000, "2": 1000}}
    assert json.loads(last["latestOffset"]) == {topic: {"0": 1000, "1": 1000, "2": 1000}}


def test_a_restarted_query_resumes_exactly_where_it_committed(cluster, spark, tmp_path):
    topic = create(cluster)
    total = 3000
    produce(cluster, topic, range(600), 3)
    producer = threading.Thread(target=produce, args=(cluster, topic, range(600, total), 3),
                                kwargs={"pause": 0.3, "every": 100})
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"

    def start(starting: str):
        return (source(spark, cluster, topic, startingOffsets=starting, maxOffsetsPerTrigger="400")
                .selectExpr("CAST(key AS STRING) AS key", "partition", "offset")
                .writeStream.format("parquet").option("path", str(out))
                .option("checkpointLocation", str(checkpoint)).trigger(processingTime="1 second").start())

    try:
        first = start("earliest")
        wait_for("a batch with records", lambda: batches(first))
        producer.start()
        wait_for("another batch with records", lambda: len(batches(first)) >= 2)
        first.stop()
        assert producer.is_alive(), "the producer finished before the first run stopped"
        sizes = [p["numInputRows"] for p in batches(first)]
        # the checkpoint's offset log holds the Kafka source's offsets JSON
        offsets = json.loads(logged_offsets(checkpoint))
        assert set(offsets) == {topic} and set(offsets[topic]) == {"0", "1", "2"}
        assert 0 < sum(offsets[topic].values()) < total
        # startingOffsets is for a new query only: latest here must not skip anything
        second = start("latest")
        producer.join(120)
        assert not producer.is_alive()
        second.processAllAvailable()
        second.stop()
        again = [p["numInputRows"] for p in batches(second)]
        assert again and sum(again) < total
        sizes += again
    finally:
        if producer.ident is not None:
            producer.join(120)
        for query in spark.streams.active:
            query.stop()
    keys = [r.key for r in spark.read.parquet(str(out)).select("key").collect()]
    assert len(keys) == total and sorted(keys) == sorted(f"k{n}" for n in range(total))
    assert sum(sizes) == total and max(sizes) <= 400, sizes


def test_partitions_added_to_the_topic_are_picked_up_within_two_triggers(cluster, spark):
    from mafka.client import AdminClient, NewPartitions

    topic = create(cluster, partitions=2)
    name = f"q_{uuid.uuid4().hex[:8]}"
    stop = threading.Event()

    def keep_producing() -> None:
        n = 0
        while not stop.is_set():
            produce(cluster, topic, range(n, n + 20), 2)
            n += 20
            time.sleep(0.2)

    writer = threading.Thread(target=keep_producing)
    query = (source(spark, cluster, topic, startingOffsets="earliest").writeStream.format("memory")
             .queryName(name).trigger(processingTime="1 second").start())
    writer.start()
    try:
        wait_for("two batches with records", lambda: len(batches(query)) >= 2)
        before = query.lastProgress["batchId"]
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_partitions([NewPartitions(topic, 3)])[topic].result(30)
        admin.close()

        def picked_up():
            for p in query.recentProgress:
                end = p["sources"][0]["endOffset"]
                if end and "2" in json.loads(end).get(topic, {}):
                    return p
            return None

        first = wait_for("the new partition in the offsets", picked_up, timeout=60)
        assert first["batchId"] <= before + 2, (before, first["batchId"])
        from mafka.client import Producer

        producer = Producer({"bootstrap.servers": cluster.bootstrap})
        for i in range(20):
            producer.produce(topic, key=f"new{i}".encode(), value=b"x", partition=2)
        assert producer.flush(30) == 0
        producer.close()
        wait_for("the new partition's records", lambda: spark.sql(
            f"select * from {name} where partition = 2").count() == 20)
        got = sorted(r.offset for r in spark.sql(f"select offset from {name} where partition = 2").collect())
        assert got == list(range(20))  # from the new partition's earliest offset
    finally:
        stop.set()
        writer.join(60)
        query.stop()


def test_read_committed_reads_committed_records_and_does_not_wait_for_open_transactions(cluster, spark):
    from mafka.client import Producer

    topic = create(cluster, partitions=1)
    tid = f"stream-txn-{uuid.uuid4().hex[:8]}"
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": tid})
    producer.init_transactions(30)
    for action, keys in (("commit", range(0, 10)), ("abort", range(10, 15)), ("commit", range(15, 20))):
        producer.begin_transaction()
        for n in keys:
            producer.produce(topic, key=f"k{n}".encode(), value=b"v", partition=0)
        producer.commit_transaction(30) if action == "commit" else producer.abort_transaction(30)
    producer.begin_transaction()  # left open while the query runs
    for n in range(20, 23):
        producer.produce(topic, key=f"k{n}".encode(), value=b"v", partition=0)
    producer.flush(30)
    name = f"q_{uuid.uuid4().hex[:8]}"
    try:
        query = (source(spark, cluster, topic, startingOffsets="earliest", **{"kafka.isolation.level": "read_committed"})
                 .writeStream.format("memory").queryName(name).trigger(availableNow=True).start())
        assert query.awaitTermination(120)
        assert query.exception() is None
        keys = sorted(r.key.decode() for r in spark.sql(f"select key from {name}").collect())
        assert keys == sorted(f"k{n}" for n in [*range(0, 10), *range(15, 20)])
    finally:
        producer.abort_transaction(30)
        producer.close()


def test_a_malformed_starting_offsets_fails_the_query_at_its_start_naming_the_option(cluster, spark):
    topic = create(cluster, partitions=1)
    with pytest.raises(Exception, match="option 'startingOffsets' is not valid JSON"):
        query = (source(spark, cluster, topic, startingOffsets='{"broken": ')
                 .writeStream.format("memory").queryName(f"q_{uuid.uuid4().hex[:8]}").start())
        query.awaitTermination(60)


def test_a_topic_deleted_while_subscribed_fails_the_query_with_sparks_data_loss_message(cluster, spark):
    from mafka.client import AdminClient

    topic = create(cluster, partitions=2)
    produce(cluster, topic, range(100), 2)
    query = (source(spark, cluster, topic, startingOffsets="earliest").writeStream.format("memory")
             .queryName(f"q_{uuid.uuid4().hex[:8]}").trigger(processingTime="1 second").start())
    try:
        wait_for("a batch with records", lambda: batches(query))
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.delete_topics([topic])[topic].result(30)
        admin.close()
        with pytest.raises(Exception, match=rf"Set\({topic}-0, {topic}-1\) are gone\. Some data may have been missed"):
            query.awaitTermination(60)
    finally:
        query.stop()
