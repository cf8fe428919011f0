"""The CLI tools against a real 3-broker cluster: ``mafka topics``, ``console-producer``, ``console-consumer``,
``consumer-groups``, ``producer-perf-test``, ``consumer-perf-test``.

One :class:`LocalCluster` for the module.  Each tool runs as its own process
(``python -m mafka.cli.main …``), as a user would run it; every wait is bounded.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from mafka.cli.console_producer import partition_for_key
from tests.harness.cluster import ClusterSpec, LocalCluster
from tests.harness.waits import wait_until

pytestmark = pytest.mark.integration


#: shared: every broker stays up, and its topic and group names (admin, keyed, cg, …) are used by no other module
CLUSTER = ClusterSpec()


def mafka(cluster: LocalCluster, *argv: str, stdin: str | None = None, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mafka.cli.main", argv[0], "--bootstrap-server", cluster.bootstrap, *argv[1:]],
        input=stdin, capture_output=True, text=True, timeout=timeout,
    )


def poll(check, what: str, timeout: float = 15.0):  # type: ignore[no-untyped-def]
    return wait_until(check, timeout, what, interval=0.2)


def create(cluster: LocalCluster, topic: str, partitions: int, rf: int = 1) -> None:
    r = mafka(cluster, "topics", "--create", "--topic", topic, "--partitions", str(partitions), "--replication-factor", str(rf))
    assert r.returncode == 0, r
    assert r.stdout == f"Created topic {topic}.\n"


def test_topic_lifecycle(cluster: LocalCluster) -> None:
    create(cluster, "admin", 2, rf=3)
    assert "admin" in mafka(cluster, "topics", "--list").stdout.splitlines()

    again = mafka(cluster, "topics", "--create", "--topic", "admin", "--partitions", "2")
    assert again.returncode == 1
    assert again.stdout == "Error while executing topic command : Topic 'admin' already exists.\n"
    assert "TopicExistsException" in again.stderr
    assert mafka(cluster, "topics", "--create", "--topic", "admin", "--if-not-exists").returncode == 0

    def described(count: int):  # type: ignore[no-untyped-def]
        r = mafka(cluster, "topics", "--describe", "--topic", "admin")
        lines = r.stdout.splitlines()
        return lines if r.returncode == 0 and len(lines) == count + 1 and f"PartitionCount: {count}" in lines[0] else None

    lines = poll(lambda: described(2), "the topic with 2 partitions")
    # The topic id is the one the controller wrote to /brokers/topics/admin (Metadata v10+).
    assert re.fullmatch(r"Topic: admin\tTopicId: [A-Za-z0-9_-]{22}\tPartitionCount: 2\tReplicationFactor: 3\tConfigs: ",
                        lines[0]), lines[0]
    for i, line in enumerate(lines[1:]):
        fields = line.split("\t")
        assert fields[:3] == ["", "Topic: admin", f"Partition: {i}"]
        assert fields[3].startswith("Leader: ") and fields[3] != "Leader: none"
        assert fields[4].startswith("Replicas: ") and len(fields[4].split(": ")[1].split(",")) == 3
        assert fields[5].startswith("Isr: ")

    r = mafka(cluster, "topics", "--alter", "--topic", "admin", "--partitions", "3")
    assert (r.returncode, r.stdout) == (0, ""), r
    lines = poll(lambda: described(3), "the topic with 3 partitions")
    assert lines[3].startswith("\tTopic: admin\tPartition: 2\tLeader: ")

    shrink = mafka(cluster, "topics", "--alter", "--topic", "admin", "--partitions", "1")
    assert shrink.returncode == 1 and shrink.stdout.startswith("Error while executing topic command : ")

    r = mafka(cluster, "topics", "--delete", "--topic", "admin")
    assert r.returncode == 0, r
    poll(lambda: "admin" not in mafka(cluster, "topics", "--list").stdout.splitlines(), "the topic to go")

    missing = mafka(cluster, "topics", "--describe", "--topic", "admin")
    assert missing.returncode == 1
    assert missing.stdout == "Error while executing topic command : Topic 'admin' does not exist as expected\n"


def test_keyed_lines_round_trip(cluster: LocalCluster) -> None:
    create(cluster, "keyed", 3)
    keys = [f"user-{i}" for i in range(6)]
    lines = [f"{keys[i % len(keys)]}:value-{i}" for i in range(30)]
    r = mafka(cluster, "console-producer", "--topic", "keyed", "--property", "parse.key=true",
              "--property", "key.separator=:", stdin="\n".join(lines) + "\n")
    assert (r.returncode, r.stderr) == (0, ""), r

    r = mafka(cluster, "console-consumer", "--topic", "keyed", "--from-beginning", "--max-messages", "30",
              "--property", "print.key=true", "--property", "key.separator=:", "--timeout-ms", "15000")
    assert r.returncode == 0, r
    assert sorted(r.stdout.splitlines()) == sorted(lines)
    assert r.stderr.strip().endswith("Processed a total of 30 messages")

    # Same key → same partition, and that partition is the one Java's murmur2 picks.
    expected = Counter(partition_for_key(line.split(":")[0].encode(), 3) for line in lines)
    for partition in range(3):
        r = mafka(cluster, "console-consumer", "--topic", "keyed", "--partition", str(partition), "--offset", "earliest",
                  "--max-messages", str(expected[partition]), "--timeout-ms", "3000", "--property", "print.key=true")
        assert r.returncode == 0, r
        got = r.stdout.splitlines()
        assert len(got) == expected[partition]
        assert {line.split("\t")[0] for line in got} == {
            k for k in keys if partition_for_key(k.encode(), 3) == partition
        }
        # in order within the partition
        values = [int(line.split("value-")[1]) for line in got]
        assert values == sorted(values)


def test_timeout_and_latest(cluster: LocalCluster) -> None:
    create(cluster, "quiet", 1)
    started = time.monotonic()
    r = mafka(cluster, "console-consumer", "--topic", "quiet", "--timeout-ms", "500")
    assert r.returncode == 0
    assert r.stdout == ""
    assert "TimeoutException" in r.stderr and r.stderr.strip().endswith("Processed a total of 0 messages")
    assert time.monotonic() - started < 15


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed")
@pytest.mark.parametrize("codec", ["none", "gzip", "lz4"])
def test_kcat_reads_console_producer_output(cluster: LocalCluster, codec: str) -> None:
    topic = f"kcat-{codec}"
    create(cluster, topic, 2)
    lines = [f"line {i} {codec}" for i in range(20)]
    r = mafka(cluster, "console-producer", "--topic", topic, "--compression-codec", codec, stdin="\n".join(lines) + "\n")
    assert r.returncode == 0, r
    out = subprocess.run(
        ["kcat", "-b", cluster.bootstrap, "-C", "-t", topic, "-e", "-o", "beginning", "-q"],
        capture_output=True, text=True, timeout=30,
    )
    assert out.returncode == 0, out
    assert sorted(out.stdout.splitlines()) == sorted(lines)


def test_kcat_output_readable_by_console_consumer(cluster: LocalCluster, tmp_path: Path) -> None:
    if shutil.which("kcat") is None:
        pytest.skip("kcat is not installed")
    create(cluster, "from-kcat", 1)
    subprocess.run(["kcat", "-b", cluster.bootstrap, "-P", "-t", "from-kcat", "-K", ":", "-z", "snappy"],
                   input="a:1\nb:2\n", text=True, timeout=30, check=True)
    r = mafka(cluster, "console-consumer", "--topic", "from-kcat", "--from-beginning", "--max-messages", "2",
              "--property", "print.key=true", "--timeout-ms", "10000")
    assert r.stdout.splitlines() == ["a\t1", "b\t2"], r


KAFKA_OFFSETS_HEADER = [
    "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID",
]


def _table(stdout: str) -> tuple[list[str], list[list[str]]]:
    """Kafka's consumer-groups tables: a blank line, a header line, one row per line."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    header = lines[0].split()
    return header, [line.split() for line in lines[1:]]


def test_consumer_groups_describe_reset_delete(cluster: LocalCluster) -> None:
    """``mafka consumer-groups`` over a group consumed by confluent-kafka: Kafka's columns, lag, reset, delete."""
    from confluent_kafka import Consumer, Producer

    create(cluster, "cg-topic", 3, rf=3)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(30):
        producer.produce("cg-topic", str(i).encode(), partition=i % 3)
    assert producer.flush(30) == 0
    consumer = Consumer({
        "bootstrap.servers": cluster.bootstrap, "group.id": "cg", "client.id": "cg-client",
        "auto.offset.reset": "earliest", "enable.auto.commit": False,
    })
    try:
        consumer.subscribe(["cg-topic"])
        seen: Counter[int] = Counter()
        deadline = time.monotonic() + 30
        # Take everything of partitions 0 and 1 only, so partition 2 stays uncommitted.
        while (seen[0] < 10 or seen[1] < 10) and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is not None and not m.error():
                seen[m.partition()] += 1
        assert seen[0] == 10 and seen[1] == 10
        from confluent_kafka import TopicPartition

        consumer.commit(offsets=[TopicPartition("cg-topic", 0, 10), TopicPartition("cg-topic", 1, 7)], asynchronous=False)

        r = mafka(cluster, "consumer-groups", "--list")
        assert r.returncode == 0 and "cg" in r.stdout.split(), r
        r = mafka(cluster, "consumer-groups", "--describe", "--group", "cg")
        assert r.returncode == 0, r
        header, rows = _table(r.stdout)
        assert header == KAFKA_OFFSETS_HEADER
        by_partition = {int(row[2]): row for row in rows}
        assert sorted(by_partition) == [0, 1, 2]
        member = by_partition[0][6]
        assert member.startswith("cg-client-")
        assert by_partition[0][:6] == ["cg", "cg-topic", "0", "10", "10", "0"]
        assert by_partition[1][:6] == ["cg", "cg-topic", "1", "7", "10", "3"]
        assert by_partition[2][:6] == ["cg", "cg-topic", "2", "-", "10", "-"]
        assert all(row[6:] == [member, "/127.0.0.1", "cg-client"] for row in rows)

        r = mafka(cluster, "consumer-groups", "--describe", "--group", "cg", "--state")
        header, rows = _table(r.stdout)
        assert header == ["GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"]
        assert rows[0][0] == "cg" and rows[0][-3:] == ["range", "Stable", "1"], rows

        r = mafka(cluster, "consumer-groups", "--describe", "--group", "cg", "--members")
        header, rows = _table(r.stdout)
        assert header == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"]
        assert rows == [["cg", member, "/127.0.0.1", "cg-client", "3"]]

        # A live group refuses resets, as Kafka does.
        r = mafka(cluster, "consumer-groups", "--reset-offsets", "--group", "cg", "--all-topics", "--to-earliest", "--execute")
        assert "inactive, but the current state is Stable" in r.stdout + r.stderr
    finally:
        consumer.close()

    r = mafka(cluster, "consumer-groups", "--describe", "--group", "cg")
    header, rows = _table(r.stdout)
    assert header == KAFKA_OFFSETS_HEADER
    assert [row[2:] for row in rows] == [["0", "10", "10", "0", "-", "-", "-"], ["1", "7", "10", "3", "-", "-", "-"]]
    assert "Consumer group 'cg' has no active members." in r.stderr

    r = mafka(cluster, "consumer-groups", "--reset-offsets", "--group", "cg", "--topic", "cg-topic:0,1", "--shift-by", "-5", "--execute")
    assert r.returncode == 0, r
    header, rows = _table(r.stdout)
    assert header == ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]
    assert sorted(rows) == [["cg", "cg-topic", "0", "5"], ["cg", "cg-topic", "1", "2"]]
    r = mafka(cluster, "consumer-groups", "--describe", "--group", "cg")
    assert [row[3:6] for row in _table(r.stdout)[1]] == [["5", "10", "5"], ["2", "10", "8"]]

    r = mafka(cluster, "consumer-groups", "--delete", "--group", "cg")
    assert r.returncode == 0 and "Deletion of requested consumer groups ('cg') was successful." in r.stdout, r
    r = mafka(cluster, "consumer-groups", "--describe", "--group", "cg")
    assert "Consumer group 'cg' does not exist." in r.stdout + r.stderr


# --------------------------------------------------------------------------- console-consumer in a group


def test_console_consumer_in_a_group_commits_what_it_printed(cluster: LocalCluster) -> None:
    create(cluster, "grouped", 2)
    lines = [f"line-{i}" for i in range(10)]
    r = mafka(cluster, "console-producer", "--topic", "grouped", stdin="\n".join(lines) + "\n")
    assert (r.returncode, r.stderr) == (0, ""), r
    r = mafka(cluster, "console-consumer", "--topic", "grouped", "--group", "cc", "--from-beginning",
              "--max-messages", "10", "--timeout-ms", "15000")
    assert r.returncode == 0, r
    assert sorted(r.stdout.splitlines()) == sorted(lines)
    assert r.stderr.strip().endswith("Processed a total of 10 messages")
    # The group committed every printed record (auto-commit at close), so it starts after them.
    r = mafka(cluster, "consumer-groups", "--describe", "--group", "cc")
    header, rows = _table(r.stdout)
    assert header == KAFKA_OFFSETS_HEADER
    assert sum(int(row[3]) for row in rows) == 10 and all(row[3] == row[4] for row in rows), r.stdout
    r = mafka(cluster, "console-consumer", "--topic", "grouped", "--group", "cc", "--timeout-ms", "3000")
    assert (r.returncode, r.stdout) == (0, ""), r

    usage = mafka(cluster, "console-consumer", "--topic", "grouped", "--group", "cc", "--partition", "0")
    assert (usage.returncode, usage.stderr) == (1, "Options group and partition cannot be specified together.\n")


# --------------------------------------------------------------------------- perf tests

PERF_TOTAL = re.compile(
    r"(\d+) records sent, (\d+\.\d{6}) records/sec \((\d+\.\d{2}) MB/sec\), (\d+\.\d{2}) ms avg latency, "
    r"(\d+\.\d{2}) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99\.9th\."
)
PERF_WINDOW = re.compile(
    r"(\d+) records sent, (\d+\.\d) records/sec \((\d+\.\d{2}) MB/sec\), (\d+\.\d) ms avg latency, "
    r"(\d+\.\d) ms max latency\."
)
CONSUMER_PERF_HEADER = (
    "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, "
    "fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
)
PERF_DATE = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}:\d{3}")
#: producer-perf-test's progress on stderr (plain: piped), beside Kafka's lines on stdout
PERF_PROGRESS = re.compile(r"producer-perf-test: (\d+)/(\d+) records sent \((\d+)%\)")


def perf_progress(stderr: str, total: int) -> list[int]:
    """The records counted in the progress lines (at most one a second), checked to end with the summary."""
    lines = stderr.splitlines()
    assert lines, "no progress summary on stderr"
    end = re.fullmatch(rf"producer-perf-test: {total}/{total} records sent \(100%\) in \d+\.\d s", lines[-1])
    assert end, lines
    counts = []
    for line in lines[:-1]:
        m = PERF_PROGRESS.fullmatch(line)
        assert m and int(m.group(2)) == total, lines
        counts.append(int(m.group(1)))
    assert counts == sorted(counts) and all(c <= total for c in counts), counts
    return counts


def perf(*argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """A perf tool as a user runs it (producer-perf-test takes no --bootstrap-server)."""
    return subprocess.run([sys.executable, "-m", "mafka.cli.main", *argv], capture_output=True, text=True,
                          timeout=timeout)


def read_back(cluster: LocalCluster, topic: str, timeout: float = 30.0) -> list[tuple[bytes | None, bytes | None]]:
    """Every record of ``topic`` (key, value), read with mafka.client from the beginning to the end offsets."""
    from mafka.client import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "enable.partition.eof": False})
    try:
        parts = sorted(consumer.list_topics(topic, timeout=10).topics[topic].partitions)
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10) for p in parts}
        expected = sum(high - low for low, high in ends.values())
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in parts])
        got: list[tuple[bytes | None, bytes | None]] = []
        deadline = time.monotonic() + timeout
        while len(got) < expected and time.monotonic() < deadline:
            for m in consumer.consume(1000, 0.5):
                assert m.error() is None, m.error()
                got.append((m.key(), m.value()))
        assert len(got) == expected, f"read {len(got)} of {expected} records of {topic}"
        return got
    finally:
        consumer.close()


def test_producer_perf_test_prints_kafkas_total_line_and_the_records_land(cluster: LocalCluster) -> None:
    create(cluster, "perf-out", 3, rf=3)
    r = perf("producer-perf-test", "--topic", "perf-out", "--num-records", "5000", "--record-size", "100",
             "--throughput", "-1", "--producer-props", f"bootstrap.servers={cluster.bootstrap}", "acks=all",
             "linger.ms=5")
    assert r.returncode == 0, r
    perf_progress(r.stderr, 5000)  # stderr holds the progress alone; Kafka's lines stay on stdout
    lines = r.stdout.splitlines()
    assert len(lines) >= 1 and all(PERF_WINDOW.fullmatch(line) for line in lines[:-1]), lines
    m = PERF_TOTAL.fullmatch(lines[-1])
    assert m, lines[-1]
    assert int(m.group(1)) == 5000
    assert abs(float(m.group(3)) - float(m.group(2)) * 100 / (1024 * 1024)) <= 0.006, "MB/sec = records/sec × 100 B"
    p50, p95, p99, p999 = (int(m.group(i)) for i in range(6, 10))
    assert p50 <= p95 <= p99 <= p999 <= float(m.group(5))
    records = read_back(cluster, "perf-out")
    assert len(records) == 5000
    assert {len(v or b"") for _, v in records} == {100} and {k for k, _ in records} == {None}
    assert set(records[0][1] or b"") <= set(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def test_producer_perf_test_throttles_and_reports_every_five_seconds(cluster: LocalCluster, tmp_path: Path) -> None:
    create(cluster, "perf-slow", 1)
    payloads = tmp_path / "payloads.txt"
    payloads.write_text("alpha\nbeta\ngamma\n")
    started = time.monotonic()
    r = perf("producer-perf-test", "--topic", "perf-slow", "--num-records", "1300", "--payload-file", str(payloads),
             "--throughput", "200", "--producer-props", f"bootstrap.servers={cluster.bootstrap}")
    elapsed = time.monotonic() - started
    assert r.returncode == 0, r
    # about 6.5 s: a progress line a second at most (the first after a second), then the summary
    assert 3 <= len(perf_progress(r.stderr, 1300)) <= elapsed, (r.stderr, elapsed)
    lines = r.stdout.splitlines()
    assert lines[0] == f"Reading payloads from: {payloads}"
    assert lines[1] == "Number of messages read: 3"
    windows = [PERF_WINDOW.fullmatch(line) for line in lines[2:-1]]
    assert len(windows) == 1 and windows[0], lines  # 6.5 s at 200/s: one 5-second window
    assert 150 <= float(windows[0].group(2)) <= 250, lines
    total = PERF_TOTAL.fullmatch(lines[-1])
    assert total and int(total.group(1)) == 1300, lines
    assert 170 <= float(total.group(2)) <= 210 and elapsed >= 6.0, (lines, elapsed)
    assert sorted({v for _, v in read_back(cluster, "perf-slow")}) == [b"alpha", b"beta", b"gamma"]


def test_producer_perf_test_usage_errors(cluster: LocalCluster) -> None:
    r = perf("producer-perf-test", "--topic", "t", "--num-records", "10", "--record-size", "10", "--throughput", "-1")
    assert r.returncode == 1 and "Either --producer-props or --producer.config must be specified." in r.stderr
    r = perf("producer-perf-test", "--topic", "t", "--num-records", "10", "--throughput", "-1",
             "--producer-props", f"bootstrap.servers={cluster.bootstrap}")
    assert r.returncode == 2 and "one of the arguments --record-size --payload-file is required" in r.stderr


def test_consumer_perf_test_reads_the_records_and_prints_kafkas_csv(cluster: LocalCluster) -> None:
    from mafka.client import Producer

    create(cluster, "perf-in", 3)
    n = 3000
    producer = Producer({"bootstrap.servers": cluster.bootstrap})
    for i in range(n):
        producer.produce("perf-in", key=f"k{i % 7}", value=b"v" * (i % 50 + 1))
    assert producer.flush(30) == 0
    producer.close()
    total_bytes = sum(2 + i % 50 + 1 for i in range(n))

    r = mafka(cluster, "consumer-perf-test", "--topic", "perf-in", "--messages", str(n), "--group", "perf-g",
              "--timeout", "15000", timeout=60)
    assert (r.returncode, r.stderr) == (0, ""), r
    lines = r.stdout.splitlines()
    assert lines[0] == CONSUMER_PERF_HEADER
    assert len(lines) == 2, lines
    fields = lines[1].split(", ")
    assert len(fields) == 10, fields
    assert PERF_DATE.fullmatch(fields[0]) and PERF_DATE.fullmatch(fields[1])
    assert fields[2] == f"{total_bytes / (1024 * 1024):.4f}"
    assert fields[4] == str(n)
    rebalance_ms, fetch_ms = int(fields[6]), int(fields[7])
    assert rebalance_ms >= 0 and fetch_ms >= 0
    for f in (fields[3], fields[5], fields[8], fields[9]):
        assert re.fullmatch(r"\d+\.\d{4}|Infinity|NaN", f), fields

    # The group committed: the same group finds nothing more and says so; a new one reads all again.
    r = mafka(cluster, "consumer-perf-test", "--topic", "perf-in", "--messages", str(n), "--group", "perf-g",
              "--timeout", "2000", "--hide-header", timeout=60)
    assert r.returncode == 0, r
    lines = r.stdout.splitlines()
    assert lines[0] == ("WARNING: Exiting before consuming the expected number of messages: timeout (2000 ms) "
                        "exceeded. You can use the --timeout option to increase the timeout.")
    assert lines[1].split(", ")[4] == "0"
    r = mafka(cluster, "consumer-perf-test", "--topic", "perf-in", "--messages", str(n), "--hide-header",
              "--show-detailed-stats", "--reporting-interval", "1", timeout=60)
    assert r.returncode == 0, r
    rows = [line.split(", ") for line in r.stdout.splitlines()]
    assert rows and all(len(row) == 10 and row[1] == "0" for row in rows), rows
    counts = [int(row[4]) for row in rows]
    assert counts == sorted(counts) and counts[-1] <= n
