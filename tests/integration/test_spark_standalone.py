"""mafka.spark on a Spark standalone cluster: a master and two workers started here, executors in their own JVMs.

Proves the data source and the RDD path reach executors that are separate
processes (not the driver's local[N] threads): a driver script, run as its
own process against ``spark://``, reads a topic with ``format("mafka")`` and
with ``offset_range_rdd`` and prints counts and per-partition checksums,
which must equal what was produced; the workers' executor logs show the
tasks ran there.  And the streaming source and the exactly-once sink: a
driver runs ``readStream.format("mafka")`` → ``writeStream.format("mafka")``
with ``exactlyOnce`` (``Trigger.AvailableNow``, several micro-batches), twice
with the same checkpoint and more records produced between; the second run
reads only the new records, the output topic read ``read_committed`` holds
every record once, and both workers' executors ran the query's tasks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
import uuid
import zlib
from collections import Counter
from pathlib import Path

import pytest

from tests.harness.cluster import ClusterSpec, free_ports
from tests.harness.spark import TEST_JVM_OPTIONS

pytestmark = pytest.mark.integration

DRIVER = r'''
import json, sys, zlib
from pyspark.sql import SparkSession
from mafka.spark import offset_range_rdd, plan

master, bootstrap, topic, jvm_options = sys.argv[1:5]
spark = (SparkSession.builder.master(master).appName("mafka-standalone")
         .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
         .config("spark.driver.extraJavaOptions", jvm_options).config("spark.executor.extraJavaOptions", jvm_options)
         .config("spark.executor.memory", "1g").getOrCreate())
options = {"kafka.bootstrap.servers": bootstrap, "subscribe": topic, "maxRecordsPerPartition": "250"}
df = spark.read.format("mafka").options(**options).load()
sums = {}
for row in df.select("partition", "offset", "value").collect():
    sums.setdefault(row.partition, []).append((row.offset, bytes(row.value)))
rdd = offset_range_rdd(spark.sparkContext, bootstrap, plan(options), pairs=True)
out = {
    "df_partitions": df.rdd.getNumPartitions(),
    "df": {p: [len(v), zlib.crc32(b"".join(val for _, val in sorted(v)))] for p, v in sums.items()},
    "rdd_count": rdd.count(),
}
print("RESULT " + json.dumps(out), flush=True)
spark.stop()
'''

STREAM_DRIVER = r'''
import json, sys
from pyspark.sql import SparkSession

master, bootstrap, topic, out_topic, checkpoint, jvm_options = sys.argv[1:7]
spark = (SparkSession.builder.master(master).appName("mafka-standalone-stream")
         .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
         .config("spark.driver.extraJavaOptions", jvm_options).config("spark.executor.extraJavaOptions", jvm_options)
         .config("spark.executor.memory", "1g").getOrCreate())
query = (spark.readStream.format("mafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
         .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "600").load()
         .selectExpr("CAST(key AS STRING) AS key", "value")
         .writeStream.format("mafka").option("kafka.bootstrap.servers", bootstrap).option("topic", out_topic)
         .option("exactlyOnce", "true").option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
query.awaitTermination()
progress = [p for p in query.recentProgress if p["numInputRows"] > 0]
print("RESULT " + json.dumps({"batches": len(progress), "rows": sum(p["numInputRows"] for p in progress)}), flush=True)
spark.stop()
'''


def _spark_class() -> str:
    import pyspark

    return str(Path(pyspark.__file__).parent / "bin" / "spark-class")


def _wait_json(url: str, ok, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                last = json.load(r)
                if ok(last):
                    return last
        except OSError:
            pass
        time.sleep(0.5)
    raise TimeoutError(f"{url}: not ready in {timeout} s (last answer {last})")


CLUSTER = ClusterSpec()  # shared: a uuid topic name, every broker stays up


@pytest.fixture(scope="module")
def standalone(tmp_path_factory):
    work = tmp_path_factory.mktemp("spark-standalone-work")
    port, ui, *worker_uis = free_ports(4)
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
               SPARK_WORKER_DIR=str(work / "work"), SPARK_LOG_DIR=str(work / "logs"),
               SPARK_DAEMON_JAVA_OPTS=TEST_JVM_OPTIONS)
    logs = [open(work / "master.log", "wb"), open(work / "worker-1.log", "wb"), open(work / "worker-2.log", "wb")]
    master = subprocess.Popen(
        [_spark_class(), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
         "--webui-port", str(ui)], env=env, stdout=logs[0], stderr=subprocess.STDOUT, start_new_session=True)
    workers: list[subprocess.Popen] = []
    try:
        _wait_json(f"http://127.0.0.1:{ui}/json/", lambda j: j.get("status") == "ALIVE", 90)
        for i, worker_ui in enumerate(worker_uis, start=1):
            # One core each: an application's tasks spread over both workers' executors.
            workers.append(subprocess.Popen(
                [_spark_class(), "org.apache.spark.deploy.worker.Worker", f"spark://127.0.0.1:{port}",
                 "--host", "127.0.0.1", "--cores", "1", "--memory", "1g", "--webui-port", str(worker_ui),
                 "--work-dir", str(work / "work" / f"worker-{i}")],
                env=env, stdout=logs[i], stderr=subprocess.STDOUT, start_new_session=True))
        _wait_json(f"http://127.0.0.1:{ui}/json/", lambda j: j.get("aliveworkers", 0) >= 2, 90)
        yield f"spark://127.0.0.1:{port}", env, work
    finally:
        for proc in (*workers, master):
            if proc is not None:
                proc.terminate()
                try:
                    proc.wait(20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(10)
        for f in logs:
            f.close()


def test_reads_run_on_a_standalone_clusters_executors(cluster, standalone, tmp_path):
    from mafka.client import AdminClient, NewTopic, Producer

    master, env, work = standalone
    topic = f"standalone-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(30)
    admin.close()
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 5})
    values = {p: [f"{p}:{i}".encode() for i in range(1000)] for p in range(3)}
    for i in range(1000):
        for p in range(3):
            producer.produce(topic, values[p][i], partition=p)
    assert producer.flush(60) == 0
    producer.close()

    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    run = subprocess.run([sys.executable, str(script), master, cluster.bootstrap, topic, TEST_JVM_OPTIONS], env=env,
                         capture_output=True, text=True, timeout=300)
    result_line = [line for line in run.stdout.splitlines() if line.startswith("RESULT ")]
    assert run.returncode == 0 and result_line, f"driver failed:\n{run.stdout[-3000:]}\n{run.stderr[-5000:]}"
    result = json.loads(result_line[0][len("RESULT "):])
    assert result["df_partitions"] == 12
    assert result["df"] == {str(p): [1000, zlib.crc32(b"".join(values[p]))] for p in range(3)}
    assert result["rdd_count"] == 3000
    # The tasks ran in the worker's executor (its own JVM and Python workers), whose stderr is kept per app.
    executor_logs = list((work / "work").glob("worker-*/app-*/*/stderr"))
    assert executor_logs, "no executor ran on the standalone worker"
    assert any("Finished task" in p.read_text(errors="replace") for p in executor_logs)


def produce_keys(bootstrap: str, topic: str, first: int, count: int) -> None:
    from mafka.client import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for n in range(first, first + count):
        producer.produce(topic, key=f"k{n}".encode(), value=f"v{n}".encode(), partition=n % 3)
    assert producer.flush(60) == 0
    producer.close()


def test_a_streaming_query_runs_on_both_workers_and_resumes_from_its_checkpoint(cluster, standalone, tmp_path):
    from mafka.client import AdminClient, Consumer, NewTopic, TopicPartition

    master, env, work = standalone
    topic, out_topic = f"standalone-stream-{uuid.uuid4().hex[:8]}", f"standalone-out-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    for name in (topic, out_topic):
        admin.create_topics([NewTopic(name, 3, 1)])[name].result(30)
    admin.close()
    script, checkpoint = tmp_path / "stream_driver.py", tmp_path / "checkpoint"
    script.write_text(STREAM_DRIVER)
    before = set((work / "work").glob("worker-*/app-*"))

    def run() -> dict:
        r = subprocess.run([sys.executable, str(script), master, cluster.bootstrap, topic, out_topic, str(checkpoint),
                            TEST_JVM_OPTIONS], env=env, capture_output=True, text=True, timeout=300)
        line = [x for x in r.stdout.splitlines() if x.startswith("RESULT ")]
        assert r.returncode == 0 and line, f"driver failed:\n{r.stdout[-3000:]}\n{r.stderr[-5000:]}"
        return json.loads(line[0][len("RESULT "):])

    produce_keys(cluster.bootstrap, topic, 0, 1500)
    first = run()
    assert first["rows"] == 1500 and first["batches"] >= 3, first  # maxOffsetsPerTrigger 600
    produce_keys(cluster.bootstrap, topic, 1500, 900)
    second = run()
    assert second["rows"] == 900, second  # only what came after the checkpoint's offsets

    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"check-{uuid.uuid4().hex[:6]}",
                         "isolation.level": "read_committed", "enable.auto.commit": False})
    consumer.assign([TopicPartition(out_topic, p, 0) for p in range(3)])
    keys: Counter = Counter()
    deadline = time.monotonic() + 60
    while sum(keys.values()) < 2400 and time.monotonic() < deadline:
        keys.update(m.key().decode() for m in consumer.consume(1000, timeout=0.5) if m.error() is None)
    keys.update(m.key().decode() for m in consumer.consume(1000, timeout=1.0) if m.error() is None)
    consumer.close()
    assert keys == Counter({f"k{n}": 1 for n in range(2400)})

    # The query's tasks ran in executors on both workers (each keeps its executors' stderr per application).
    apps = set((work / "work").glob("worker-*/app-*")) - before
    ran = {app.parent.name for app in apps
           if any("Finished task" in f.read_text(errors="replace") for f in app.glob("*/stderr"))}
    assert ran == {"worker-1", "worker-2"}, apps
