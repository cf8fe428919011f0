"""Kafka's verifiable producer and consumer, ``kafka-get-offsets.sh`` and ``zookeeper-shell.sh``, as the
installed scripts, against a real cluster.

One topic of 3 partitions (RF 3) gets N records from ``kafka-verifiable-producer.sh``; every later
check reads what that run reported: the end offsets ``kafka-get-offsets.sh`` prints, the records a
``kafka-verifiable-consumer.sh`` group reads and commits, the earliest offsets after a
DeleteRecords.  ``zookeeper-shell.sh`` reads the cluster's own znodes.
"""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mafka.client.admin import AdminClient, ConsumerGroupTopicPartitions, NewTopic
from mafka.client.message import TopicPartition
from tests.harness.cluster import ClusterSpec, LocalCluster, free_ports

pytestmark = pytest.mark.integration

BIN = Path(sys.executable).parent
N = 300
PARTITIONS = 3

#: shared: every broker stays up; the topic and group carry a uuid
CLUSTER = ClusterSpec()


def script(name: str, *argv: str, stdin: str | None = None, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / name), *argv], capture_output=True, text=True, timeout=timeout, input=stdin)


def events(stdout: str) -> list[dict[str, Any]]:
    """The tool's JSON lines (Kafka's tools may log other lines; these print none)."""
    return [json.loads(line) for line in stdout.splitlines()]


def new_topic(cluster: LocalCluster, partitions: int) -> str:
    name = f"vtools-{uuid.uuid4().hex[:8]}"
    with AdminClient({"bootstrap.servers": cluster.bootstrap}) as admin:
        admin.create_topics([NewTopic(name, partitions, 3)])[name].result(30)
    return name


class Running:
    """A tool run as a process, its stdout's JSON lines gathered by a thread."""

    def __init__(self, name: str, *argv: str) -> None:
        self.stderr = tempfile.TemporaryFile("w+")  # (stdout is this object's thread's alone)
        self.proc = subprocess.Popen([str(BIN / name), *argv], stdout=subprocess.PIPE, stderr=self.stderr,
                                     text=True)
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(json.loads(line))

    def wait_for(self, done: Callable[[list[dict[str, Any]]], bool], timeout: float, what: str) -> None:
        """Gathers events until ``done(events so far)`` (TimeoutError after ``timeout`` s)."""
        deadline = time.monotonic() + timeout
        while not done(self.seen):
            left = deadline - time.monotonic()
            if left <= 0:
                self.proc.kill()
                raise TimeoutError(f"{what}; got {[e['name'] for e in self.seen][-5:]}")
            try:
                self.seen.append(self.lines.get(timeout=min(left, 0.5)))
            except queue.Empty:
                pass

    def stop(self, timeout: float = 30) -> tuple[int, str]:
        """SIGTERM, then every event up to the exit: (status, stderr)."""
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout)
        self._reader.join(5)
        while not self.lines.empty():
            self.seen.append(self.lines.get())
        self.stderr.seek(0)
        err = self.stderr.read()
        self.stderr.close()
        return self.proc.returncode, err


@pytest.fixture(scope="module")
def topic(cluster: LocalCluster) -> str:
    return new_topic(cluster, PARTITIONS)


@pytest.fixture(scope="module")
def produced(cluster: LocalCluster, topic: str) -> list[dict[str, Any]]:
    """The verifiable producer's events for N records (acks=all)."""
    r = script("kafka-verifiable-producer.sh", "--bootstrap-server", cluster.bootstrap, "--topic", topic,
               "--max-messages", str(N), "--acks", "-1", timeout=60)
    assert r.returncode == 0, r.stderr
    return events(r.stdout)


def acked_per_partition(produced: list[dict[str, Any]]) -> dict[int, int]:
    return dict(Counter(e["partition"] for e in produced if e["name"] == "producer_send_success"))


def test_verifiable_producer_acknowledges_every_record_once(produced: list[dict[str, Any]], topic: str) -> None:
    names = [e["name"] for e in produced]
    assert names[0] == "startup_complete" and names[-2:] == ["shutdown_complete", "tool_data"]
    assert set(names[1:-2]) == {"producer_send_success"}, [e for e in produced if e["name"] == "producer_send_error"]
    sends = produced[1:-2]
    assert list(sends[0]) == ["timestamp", "name", "key", "value", "topic", "partition", "offset"]
    assert sorted(int(e["value"]) for e in sends) == list(range(N))  # each value acknowledged once
    assert {e["topic"] for e in sends} == {topic} and all(e["key"] is None for e in sends)
    for partition in range(PARTITIONS):  # each partition's offsets 0, 1, … without a gap or a repeat
        offsets = sorted(e["offset"] for e in sends if e["partition"] == partition)
        assert offsets == list(range(len(offsets))), partition
    tool_data = produced[-1]
    assert list(tool_data) == ["timestamp", "name", "sent", "acked", "target_throughput", "avg_throughput"]
    assert (tool_data["sent"], tool_data["acked"], tool_data["target_throughput"]) == (N, N, -1)
    assert tool_data["avg_throughput"] > 0


def test_get_offsets_prints_the_end_offsets(cluster: LocalCluster, topic: str,
                                            produced: list[dict[str, Any]]) -> None:
    ends = acked_per_partition(produced)
    r = script("kafka-get-offsets.sh", "--bootstrap-server", cluster.bootstrap, "--topic", topic)
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout.splitlines() == [f"{topic}:{p}:{ends.get(p, 0)}" for p in range(PARTITIONS)]
    r = script("kafka-get-offsets.sh", "--broker-list", cluster.bootstrap, "--topic-partitions", f"{topic}:1-",
               "--time", "earliest")
    assert r.stdout.splitlines() == [f"{topic}:1:0", f"{topic}:2:0"], r.stderr


def test_get_offsets_errors(cluster: LocalCluster) -> None:
    r = script("kafka-get-offsets.sh", "--bootstrap-server", cluster.bootstrap, "--topic", "no-such-topic-\\d+")
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr == "Error occurred: Could not match any topic-partitions with the specified filters\n"
    r = script("kafka-get-offsets.sh", "--bootstrap-server", cluster.bootstrap, "--topic-partitions", "a:1:2")
    assert r.returncode == 1
    assert r.stderr.splitlines()[0] == ("Error occurred: org.apache.kafka.tools.TerseException: Invalid rule "
                                        "specification: a:1:2")
    nobody = f"127.0.0.1:{free_ports(1)[0]}"
    r = script("kafka-get-offsets.sh", "--bootstrap-server", nobody, "--timeout", "1.5")
    assert r.returncode == 1
    assert r.stderr.splitlines()[0] == ("Error occurred: org.apache.kafka.common.errors.TimeoutException: Timed out "
                                        "waiting for a node assignment. Call: listTopics")


def test_verifiable_consumer_reads_and_commits_everything(cluster: LocalCluster, topic: str,
                                                          produced: list[dict[str, Any]]) -> None:
    group = f"vtools-{uuid.uuid4().hex[:8]}"
    r = script("kafka-verifiable-consumer.sh", "--bootstrap-server", cluster.bootstrap, "--topic", topic,
               "--group-id", group, "--max-messages", str(N), "--session-timeout", "10000", timeout=60)
    assert r.returncode == 0, r.stderr
    got = events(r.stdout)
    names = [e["name"] for e in got]
    assert names[0] == "startup_complete" and names[-1] == "shutdown_complete"
    assigned = [p for e in got if e["name"] == "partitions_assigned" for p in e["partitions"]]
    assert sorted(p["partition"] for p in assigned) == list(range(PARTITIONS))
    summaries = [s for e in got if e["name"] == "records_consumed" for s in e["partitions"]]
    assert sum(s["count"] for s in summaries) == N
    ends = acked_per_partition(produced)
    for partition in range(PARTITIONS):  # each partition read from 0 to its end, in order, once
        ranges = [(s["minOffset"], s["maxOffset"]) for s in summaries if s["partition"] == partition]
        covered = [o for low, high in ranges for o in range(low, high + 1)]
        assert covered == list(range(ends.get(partition, 0))), partition
    commits = [e for e in got if e["name"] == "offsets_committed"]
    assert commits and all(e["success"] and "error" not in e for e in commits)
    last = {c["partition"]: c["offset"] for e in commits for c in e["offsets"]}
    assert last == {p: n for p, n in ends.items() if n}
    with AdminClient({"bootstrap.servers": cluster.bootstrap}) as admin:
        listed = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(30)
    assert {tp.partition: tp.offset for tp in listed.topic_partitions or [] if tp.topic == topic} == last


def test_sigterm_stops_both_tools_cleanly(cluster: LocalCluster, topic: str,
                                          produced: list[dict[str, Any]]) -> None:
    # the producer, unbounded and throttled, stopped mid-run: its last acks, then the shutdown events
    other = new_topic(cluster, 1)
    producer = Running("kafka-verifiable-producer.sh", "--bootstrap-server", cluster.bootstrap, "--topic", other,
                       "--throughput", "200", "--value-prefix", "9")
    producer.wait_for(lambda seen: sum(e["name"] == "producer_send_success" for e in seen) >= 20, 30,
                      "20 acknowledged records")
    status, err = producer.stop()
    assert status == 0, err
    names = [e["name"] for e in producer.seen]
    assert names[0] == "startup_complete" and names[-2:] == ["shutdown_complete", "tool_data"]
    values = [e["value"] for e in producer.seen if e["name"] == "producer_send_success"]
    assert values == [f"9.{i}" for i in range(len(values))]  # a partition's acks come in order
    assert producer.seen[-1]["sent"] == producer.seen[-1]["acked"] == len(values)

    # the consumer, unbounded: everything read, then SIGTERM: partitions revoked, then shutdown_complete
    consumer = Running("kafka-verifiable-consumer.sh", "--bootstrap-server", cluster.bootstrap, "--topic", topic,
                       "--group-id", f"vtools-{uuid.uuid4().hex[:8]}", "--enable-autocommit", "--verbose")
    consumer.wait_for(lambda seen: sum(e["name"] == "record_data" for e in seen) >= N, 30, f"{N} records")
    status, err = consumer.stop()
    assert status == 0, err
    names = [e["name"] for e in consumer.seen]
    assert names[-2:] == ["partitions_revoked", "shutdown_complete"]
    assert "offsets_committed" not in names  # auto-commit: no commit events, as Kafka's tool
    records = [e for e in consumer.seen if e["name"] == "record_data"]
    assert list(records[0]) == ["timestamp", "name", "key", "value", "topic", "partition", "offset"]
    assert sorted(int(e["value"]) for e in records) == list(range(N))


def test_get_offsets_earliest_after_delete_records(cluster: LocalCluster, topic: str,
                                                   produced: list[dict[str, Any]]) -> None:
    ends = acked_per_partition(produced)
    partition = max(ends, key=lambda p: ends[p])
    cut = ends[partition] // 2
    with AdminClient({"bootstrap.servers": cluster.bootstrap}) as admin:
        done = admin.delete_records([TopicPartition(topic, partition, cut)])
        assert next(iter(done.values())).result(30).low_watermark == cut
    r = script("kafka-get-offsets.sh", "--bootstrap-server", cluster.bootstrap, "--topic", topic, "--time", "-2")
    assert (r.returncode, r.stderr) == (0, "")
    assert r.stdout.splitlines() == [f"{topic}:{p}:{cut if p == partition else 0}" for p in range(PARTITIONS)]


def test_zookeeper_shell_reads_the_clusters_znodes(cluster: LocalCluster) -> None:
    zk = f"127.0.0.1:{cluster.zookeeper_port}"
    r = script("zookeeper-shell.sh", zk, "ls", "/brokers/ids")
    assert (r.returncode, r.stderr) == (0, "")
    ids = sorted(str(b["id"]) for b in cluster.info["brokers"])
    assert r.stdout.splitlines() == [f"Connecting to {zk}", "", "WATCHER::", "",
                                     "WatchedEvent state:SyncConnected type:None path:null",
                                     "[" + ", ".join(ids) + "]"]
    r = script("zookeeper-shell.sh", zk, "get", "/controller")
    assert r.returncode == 0, r.stderr
    controller = json.loads(r.stdout.splitlines()[-1])
    assert controller["version"] == 1 and controller["brokerid"] == cluster.controller_id()
    # interactive, from a pipe, as people run it
    r = script("zookeeper-shell.sh", zk, stdin="ls /brokers/ids\nstat /controller\n")
    assert (r.returncode, r.stderr) == (0, "")
    lines = r.stdout.splitlines()
    assert lines[:3] == [f"Connecting to {zk}", "Welcome to ZooKeeper!", "JLine support is disabled"]
    assert lines[7] == "[" + ", ".join(ids) + "]"
    assert lines[8].startswith("cZxid = 0x") and lines[-1] == "numChildren = 0"
    assert lines[16].startswith("ephemeralOwner = 0x") and lines[16] != "ephemeralOwner = 0x0"  # ephemeral
    r = script("zookeeper-shell.sh", zk, "get", "/brokers/ids/none")
    assert (r.returncode, r.stderr) == (1, "Node does not exist: /brokers/ids/none\n")
