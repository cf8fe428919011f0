"""The slow-node monitor's report: rates from the previous report, the slow flag, and what readers refuse."""

from __future__ import annotations

import io
import json

from mafka.broker.monitor import PartitionSample, build_report
from mafka.cli.cluster_status import format_status
from mafka.monitoring.report import parse_report

T = 1_800_000_000_000


def report(now, bytes_in, p99, previous=None):
    return build_report(
        2, now, [("/data/a", (1000, 900, 100)), ("/data/b", None)],
        [PartitionSample("t", 0, "/data/a", 5000, bytes_in, 10)], previous,
        {"Produce": (1.0, p99), "FetchConsumer": (500.0, 501.0)}, threshold_ms=300)


def test_rates_come_from_the_previous_report_and_the_slow_flag_from_produce_p99():
    first = report(T, 1000, 12.0)
    assert first["partitions"][0]["bytesInPerSec"] == 0.0 and first["slow"] is False
    second = report(T + 10_000, 6000, 412.0, previous=first)
    assert second["partitions"][0]["bytesInPerSec"] == 500.0 and second["partitions"][0]["bytesOutPerSec"] == 0.0
    assert second["slow"] is True  # a fetch's long poll (501 ms) never makes a broker slow
    few = build_report(2, T, [], [], None, {"Produce": (1.0, 900.0)}, threshold_ms=300, produce_samples=99)
    assert few["slow"] is False  # 99 requests: not enough to call a broker slow
    assert second["logDirs"] == [
        {"path": "/data/a", "tier": "hot", "offline": False, "capacityBytes": 1000, "usedBytes": 900,
         "freeBytes": 100},
        {"path": "/data/b", "tier": "hot", "offline": True}]
    tiered = build_report(2, T, [("/ssd", (10, 5, 5))], [], None, {}, threshold_ms=300,
                          cold_dirs=[("/hdd", (100, 1, 99)), ("/hdd2", None)],
                          storage={"segmentsMovedCold": 3})
    assert [(d["path"], d["tier"], d["offline"]) for d in tiered["logDirs"]] == [
        ("/ssd", "hot", False), ("/hdd", "cold", False), ("/hdd2", "cold", True)]
    assert tiered["storage"] == {"segmentsMovedCold": 3}


def test_readers_ignore_stale_and_malformed_reports():
    good = json.dumps(report(T, 0, 1.0)).encode()
    assert parse_report(good, T + 5_000, 60_000)["broker"] == 2
    assert parse_report(good, T + 61_000, 60_000) is None
    assert parse_report(b"{not json", T, 60_000) is None
    assert parse_report(json.dumps({"version": 1, "broker": "x"}).encode(), T, 60_000) is None


def test_cluster_status_shows_slow_brokers_disks_and_missing_reports():
    out = io.StringIO()
    format_status(2, {1: "h:9092", 2: "h:9093"}, {2: report(T, 0, 412.0), 1: None},
                  [("orders", 3, 2, [2, 1, 3], [2, 1])], out)
    lines = out.getvalue().splitlines()
    assert lines[0] == "Controller: 2"
    assert lines[2].split()[:3] == ["1", "h:9092", "?"] and lines[2].endswith("no report")
    assert lines[3].split()[:5] == ["2", "h:9093", "YES", "412.0", "501.0"] and "90% used" in lines[3]
    assert lines[4] == "Under-replicated partitions: 1" and "orders-3" in lines[5]


def test_the_report_written_to_zookeeper_stays_far_below_its_znode_limit_with_many_partitions():
    import json

    from mafka.broker.monitor import (
        MAX_REPORTED_PARTITIONS,
        PartitionSample,
        build_report,
        for_zookeeper,
    )

    samples = [PartitionSample(f"topic-{i // 10:05d}", i % 10, "/data/kafka-logs-1", 0 if i % 3 else 4096 + i, i, 0)
               for i in range(30_000)]
    previous = build_report(1, 0, [], samples, None, {}, 100)
    busy = [PartitionSample(s.topic, s.partition, s.log_dir, s.size, s.bytes_in + (10_000 if s.partition == 7 else 0), 0)
            for s in samples]
    report = build_report(1, 10_000, [], busy, previous, {}, 100)
    assert len(report["partitions"]) == 30_000  # the monitor keeps every row for its next rates
    written = for_zookeeper(report)
    assert len(json.dumps(written, separators=(",", ":"))) < 512 * 1024  # jute.maxbuffer is 1 MiB
    rows = written["partitions"]
    assert len(rows) == MAX_REPORTED_PARTITIONS and written["partitionsOmitted"] == 30_000 - MAX_REPORTED_PARTITIONS
    # the busiest first: the 3,000 partitions numbered 7 took 1,000 B/s, more than fit
    assert all(r["partition"] == 7 and r["bytesInPerSec"] == 1000.0 for r in rows)
    assert all(r["sizeBytes"] or r["bytesInPerSec"] for r in rows)
    assert rows == sorted(rows, key=lambda r: (r["topic"], r["partition"]))
    small = build_report(1, 0, [], samples[:30], None, {}, 100)
    assert for_zookeeper(small)["partitions"] == [r for r in small["partitions"] if r["sizeBytes"]]
