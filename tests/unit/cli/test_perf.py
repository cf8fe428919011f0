"""``producer-perf-test`` / ``consumer-perf-test``: Kafka's arithmetic and exact lines, no cluster."""

from __future__ import annotations

import argparse
import io
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from mafka.cli import consumer_perf_test as cpt
from mafka.cli import producer_perf_test as ppt
from mafka.cli.main import main
from mafka.client.message import Message

# -- producer-perf-test ------------------------------------------------------------------------


class Clock:
    def __init__(self, now: int = 1_000_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def test_stats_window_every_five_seconds_and_kafkas_total_line() -> None:
    clock, out = Clock(), io.StringIO()
    stats = ppt.Stats(10, clock=clock, out=out)
    assert stats.sampling == 1 and len(stats.latencies) == 11
    for latency in [5, 7, 9]:
        clock.now += 1000
        stats.record(stats.next_iteration(), latency, 100, clock.now)
    assert out.getvalue() == "", "no line before 5 s"
    clock.now += 2000  # 5 s since the window began
    stats.record(stats.next_iteration(), 11, 100, clock.now)
    assert out.getvalue() == "4 records sent, 0.8 records/sec (0.00 MB/sec), 8.0 ms avg latency, 11.0 ms max latency.\n"
    assert (stats.window_count, stats.window_start) == (0, clock.now)
    clock.now += 1000
    stats.record(stats.next_iteration(), 3, 1024 * 1024, clock.now)
    stats.print_total()
    assert out.getvalue().splitlines()[-1] == (
        "5 records sent, 0.833333 records/sec (0.17 MB/sec), 7.00 ms avg latency, 11.00 ms max latency, "
        "7 ms 50th, 11 ms 95th, 11 ms 99th, 11 ms 99.9th."
    )


def test_stats_sample_one_record_in_n_beyond_half_a_million() -> None:
    stats = ppt.Stats(1_500_000, clock=Clock(), out=io.StringIO())
    assert stats.sampling == 3 and len(stats.latencies) == 500_001
    for i in range(9):
        stats.record(i, i, 1, 0)
    assert stats.latencies[:4] == [0, 3, 6, 0] and stats.index == 3


def test_percentiles_as_kafka_indexes_them() -> None:
    assert ppt.percentiles([5, 1, 4, 2, 3, 0], 5, 0.5, 0.95, 0.99, 0.999) == [3, 5, 5, 5]
    assert ppt.percentiles([0, 0], 0, 0.5, 0.999) == [0, 0]


def test_totals_with_nothing_sent_print_javas_nan() -> None:
    clock = Clock()
    stats = ppt.Stats(5, clock=clock, out=io.StringIO())
    assert stats.total_line() == ("0 records sent, NaN records/sec (NaN MB/sec), NaN ms avg latency, 0.00 ms max "
                                  "latency, 0 ms 50th, 0 ms 95th, 0 ms 99th, 0 ms 99.9th.")


def test_throttler_sleeps_its_deficit_once_ahead_of_the_target() -> None:
    slept: list[float] = []
    t = ppt.ThroughputThrottler(1000, start_ms=0, sleep=slept.append)
    assert not t.should_throttle(5, 0), "no time has passed: never"
    assert not t.should_throttle(1000, 1000) and t.should_throttle(1001, 1000)
    t.throttle()  # 1 ms of deficit: below the 2 ms minimum
    assert slept == []
    t.throttle()
    assert len(slept) >= 1 and abs(slept[0] - 0.002) < 1e-9
    assert t.sleep_deficit_ns == 0
    assert not ppt.ThroughputThrottler(-1, 0).should_throttle(10**9, 1)


def test_payload_file_split_like_javas_scanner(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "p.txt"
    f.write_text("a|bb||c|")
    assert ppt.read_payloads(str(f), r"\|") == [b"a", b"bb", b"", b"c"]
    assert capsys.readouterr().out == f"Reading payloads from: {f}\nNumber of messages read: 4\n"
    (tmp_path / "empty").write_text("")
    with pytest.raises(ValueError, match="File does not exist or empty file provided."):
        ppt.read_payloads(str(tmp_path / "empty"), "\n")


def test_producer_props(tmp_path: Path) -> None:
    cfg = tmp_path / "producer.properties"
    cfg.write_text("# comment\nbootstrap.servers=h:1\nacks = 1\nlinger.ms: 7\n")
    assert ppt.read_props(["acks=all", "batch.size=10"], str(cfg)) == {
        "bootstrap.servers": "h:1", "acks": "all", "linger.ms": "7", "batch.size": "10",
        "client.id": "perf-producer-client",
    }
    with pytest.raises(ValueError, match="Invalid property: a=b=c"):
        ppt.read_props(["a=b=c"], None)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "Either --producer-props or --producer.config must be specified."),
        (["--producer-props", "bootstrap.servers=h:1", "--transaction-duration-ms", "10"], "not supported"),
    ],
)
def test_producer_usage_errors(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["producer-perf-test", "--topic", "t", "--num-records", "5", "--record-size", "1",
                 "--throughput", "-1", *argv]) == 1
    assert message in capsys.readouterr().err


def test_producer_bad_config_is_kafkas_config_exception(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["producer-perf-test", "--topic", "t", "--num-records", "5", "--record-size", "1",
                 "--throughput", "-1", "--producer-props", "acks=2", "bootstrap.servers=h:1"]) == 1
    err = capsys.readouterr().err
    assert err.startswith('Exception in thread "main" org.apache.kafka.common.config.ConfigException: ')
    assert "acks" in err


def test_print_metrics_is_kafkas_table(capsys: pytest.CaptureFixture[str]) -> None:
    ppt.print_metrics({"g:b:{client-id=c}": 2.0, "g:a:{client-id=c}": 1234.56789})
    assert capsys.readouterr().out == (
        "\nMetric Name         Value\ng:a:{client-id=c} : 1234.568\ng:b:{client-id=c} : 2.000\n"
    )


# -- consumer-perf-test ------------------------------------------------------------------------


def test_consumer_header_is_kafkas() -> None:
    assert cpt.header(False) == ("start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, "
                                 "nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec")
    assert cpt.header(True).startswith("time, threadId, data.consumed.in.MB, MB.sec, ")


def test_java_date_format() -> None:
    ms = int(datetime(2024, 3, 4, 5, 6, 7, 89000).timestamp() * 1000)
    assert cpt.java_date_format(cpt.DEFAULT_DATE_FORMAT, ms) == "2024-03-04 05:06:07:089"
    assert cpt.java_date_format("yy/MM/dd'T'HH", ms) == "24/03/04T05"


def test_summary_line_arithmetic() -> None:
    ms = int(datetime(2024, 1, 1).timestamp() * 1000)
    line = cpt.summary_line(cpt.DEFAULT_DATE_FORMAT, ms, ms + 2000, 3 * 1024 * 1024, 3000, 500)
    assert line == ("2024-01-01 00:00:00:000, 2024-01-01 00:00:02:000, 3.0000, 1.5000, 3000, 1500.0000, 500, "
                    "1500, 2.0000, 2000.0000")
    assert cpt.summary_line(cpt.DEFAULT_DATE_FORMAT, ms, ms, 0, 0, 0).endswith(", 0.0000, NaN, 0, NaN, 0, 0, NaN, NaN")


def test_progress_line_arithmetic() -> None:
    ms = int(datetime(2024, 1, 1).timestamp() * 1000)
    line = cpt.progress_line(cpt.DEFAULT_DATE_FORMAT, 2 * 1024 * 1024, 1024 * 1024, 300, 100, ms, ms + 1000, 500)
    assert line == "2024-01-01 00:00:01:000, 0, 2.0000, 1.0000, 300, 200.0000, 500, 500, 2.0000, 400.0000"
    assert cpt.progress_line(cpt.DEFAULT_DATE_FORMAT, 0, 0, 0, 0, ms, ms + 10, 10).endswith(", 10, 0, 0.0000, 0.0000")


class FakeConsumer:
    """consume(n, timeout) from a script; subscribe() hands the partitions over on the first consume."""

    def __init__(self, batches: list[list[Message]]) -> None:
        self.batches = batches
        self.on_assign: Any = None
        self.subscribed: list[str] = []

    def subscribe(self, topics: list[str], on_assign: Any = None, on_revoke: Any = None) -> None:
        self.subscribed = topics
        self.on_assign = on_assign

    def consume(self, n: int, timeout: float) -> list[Message]:
        if self.on_assign is not None:
            self.on_assign(self, [])
            self.on_assign = None
        return self.batches.pop(0) if self.batches else []


def _args(**kw: Any) -> argparse.Namespace:
    base = {"reporting_interval": 5000, "show_detailed_stats": False, "date_format": cpt.DEFAULT_DATE_FORMAT}
    base.update(kw)
    return argparse.Namespace(**base)


def test_consume_counts_keys_and_values_of_every_polled_record(capsys: pytest.CaptureFixture[str]) -> None:
    msgs = [Message("t", 0, i, b"k" if i % 2 else None, b"v" * i) for i in range(5)]
    consumer = FakeConsumer([msgs[:3], [], msgs[3:]])
    stats = cpt.PerfStats()
    cpt.consume(consumer, "t", 4, 10_000, _args(), stats)
    assert consumer.subscribed == ["t"]
    assert (stats.messages, stats.bytes) == (5, 0 + 1 + 2 + 3 + 4 + 2), "the whole last poll counts"
    assert stats.join_ms >= 0
    assert capsys.readouterr().out == ""


def test_consume_gives_up_after_the_timeout(capsys: pytest.CaptureFixture[str]) -> None:
    stats = cpt.PerfStats()
    cpt.consume(FakeConsumer([]), "t", 1, 0, _args(), stats)
    assert capsys.readouterr().out == (
        "WARNING: Exiting before consuming the expected number of messages: timeout (0 ms) exceeded. "
        "You can use the --timeout option to increase the timeout.\n"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--messages", "1"], 'Missing required argument "[topic]"'),
        (["--topic", "t"], 'Missing required argument "[messages]"'),
        (["--topic", "t", "--messages", "1", "--reporting-interval", "0"], "Reporting interval must be greater than 0."),
    ],
)
def test_consumer_usage_errors(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["consumer-perf-test", "--bootstrap-server", "h:1", *argv]) == 1
    assert message in capsys.readouterr().err
