"""``mafka get-offsets``: Kafka 3.8's ``GetOffsetShell`` (flags, filters, order, errors; fake wire)."""

from __future__ import annotations

from typing import Any

import pytest

from mafka.cli import get_offsets as go
from mafka.cli.main import main
from mafka.client.admin import OffsetSpec
from mafka.errors import ErrorCode
from tests.unit.cli.fake_wire import WireFake

BOOT = ("--bootstrap-server", "b1:9092")


def allowed(flt: go.TopicPartitionFilter, *pairs: tuple[str, int]) -> list[bool]:
    return [flt.allowed(t, p) for t, p in pairs]


def test_topic_partitions_patterns() -> None:
    flt = go.parse_topic_partitions("topic1:1,topic2:0-3,topic3,topic4:5-,topic5:-3")
    assert allowed(flt, ("topic1", 1), ("topic1", 0), ("topic1", 2)) == [True, False, False]
    assert allowed(flt, ("topic2", 0), ("topic2", 2), ("topic2", 3)) == [True, True, False]  # upper bound exclusive
    assert allowed(flt, ("topic3", 0), ("topic3", 99)) == [True, True]
    assert allowed(flt, ("topic4", 4), ("topic4", 5), ("topic4", 1000)) == [False, True, True]
    assert allowed(flt, ("topic5", 0), ("topic5", 2), ("topic5", 3)) == [True, True, False]
    assert not flt.topic_allowed("topic6") and not flt.allowed("topic6", 0)
    assert flt.topic_allowed("topic1")


def test_topic_partitions_regexes_and_empty_parts() -> None:
    flt = go.parse_topic_partitions("t.*:0,:7")
    # the topic is a regex matched against the whole name; an empty topic part matches every topic
    assert allowed(flt, ("top", 0), ("top", 1), ("xt", 0), ("xt", 7), ("anything", 7)) == [True, False, False, True,
                                                                                           True]
    every = go.parse_topic_partitions("t:")
    assert allowed(every, ("t", 0), ("t", 12345), ("u", 0)) == [True, True, False]
    # a trailing comma is dropped, as Java's String.split drops it
    assert go.parse_topic_partitions("t:1,").rules == go.parse_topic_partitions("t:1").rules


@pytest.mark.parametrize(("spec", "lines"), [
    ("t:1:2", ["Error occurred: org.apache.kafka.tools.TerseException: Invalid rule specification: t:1:2",
               "java.lang.RuntimeException: org.apache.kafka.tools.TerseException: Invalid rule specification: "
               "t:1:2"]),
    ("t:x", ["Error occurred: org.apache.kafka.tools.TerseException: Invalid rule specification: t:x",
             "java.lang.RuntimeException: org.apache.kafka.tools.TerseException: Invalid rule specification: t:x"]),
    ("[:0", ["Error occurred: [ is an invalid regex.", "java.lang.RuntimeException: [ is an invalid regex."]),
])
def test_bad_topic_partitions(spec: str, lines: list[str]) -> None:
    with pytest.raises(go.ToolError) as caught:
        go.parse_topic_partitions(spec)
    assert caught.value.lines() == lines


def test_topic_and_partitions() -> None:
    flt = go.topic_and_partitions_filter("a,b", "0,2")  # Kafka's IncludeList: a comma is an alternative
    assert allowed(flt, ("a", 0), ("b", 2), ("a", 1), ("c", 0)) == [True, True, False, False]
    assert allowed(go.topic_and_partitions_filter(None, None), ("x", 5), ("__consumer_offsets", 0)) == [True, True]
    assert allowed(go.topic_and_partitions_filter("'q'", ""), ("q", 3), ("'q'", 3)) == [True, False]
    with pytest.raises(go.ToolError) as caught:
        go.topic_and_partitions_filter("t", "0,one")
    assert caught.value.lines() == [
        "Error occurred: --partitions expects a comma separated list of numeric partition ids, but received: 0,one"]


@pytest.mark.parametrize(("text", "value"), [
    ("-1", -1), ("latest", -1), ("-2", -2), ("earliest", -2), ("-3", -3), ("max-timestamp", -3),
    ("1700000000000", 1700000000000), ("0", 0),
])
def test_time_specs(text: str, value: int) -> None:
    spec = go.parse_offset_spec(text)
    assert isinstance(spec, OffsetSpec) and spec._value == value


@pytest.mark.parametrize("text", ["1.5", "soon", " 1", "", "99999999999999999999", "LATEST"])
def test_malformed_time(text: str) -> None:
    with pytest.raises(go.ToolError) as caught:
        go.parse_offset_spec(text)
    assert caught.value.lines() == [
        f"Error occurred: Malformed time argument {text}. Please use -1 or latest / -2 or earliest / -3 or "
        "max-timestamp, or a specified long format timestamp"]


def test_bootstrap_validation() -> None:
    assert go.valid_bootstrap("h:1,127.0.0.1:9092,[::1]:9093")
    assert not go.valid_bootstrap("h")
    assert not go.valid_bootstrap("h:1,h2")
    assert not go.valid_bootstrap("  ")


def test_lines_in_kafkas_order() -> None:
    # Kafka 3.8 sorts by TopicPartition.toString(): "t-10" before "t-2", "t-1-0" (topic "t-1") before "t-10"
    offsets = {("t", 2): 20, ("t", 10): 100, ("s", 0): 1, ("t-1", 0): 7, ("t", 1): 10}
    assert go.offset_lines(offsets) == ["s:0:1", "t:1:10", "t-1:0:7", "t:10:100", "t:2:20"]


class OffsetsCluster(WireFake):
    """Broker 1 leads everything: topics t (3 partitions), u (1) and __consumer_offsets (2)."""

    def __init__(self) -> None:
        super().__init__({1: ("b1", 9092)})
        self.topics = {"t": 3, "u": 1, "__consumer_offsets": 2}
        self.ends = {("t", 0): 5, ("t", 1): 0, ("t", 2): 12, ("u", 0): 3, ("__consumer_offsets", 0): 9,
                     ("__consumer_offsets", 1): 4}
        self.failing: dict[tuple[str, int], int] = {}

    def _Metadata(self, req: Any, broker: int) -> dict[str, Any]:
        names = list(self.topics) if req.topics is None else [t.name for t in req.topics]
        return {
            "brokers": [{"node_id": 1, "host": "b1", "port": 9092, "rack": None}],
            "cluster_id": "c", "controller_id": 1,
            "topics": [{"error_code": 0 if n in self.topics else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "name": n,
                        "is_internal": n.startswith("__"),
                        "partitions": [{"error_code": 0, "partition_index": p, "leader_id": 1, "replica_nodes": [1],
                                        "isr_nodes": [1], "offline_replicas": []}
                                       for p in range(self.topics.get(n, 0))]} for n in names],
        }

    def _ListOffsets(self, req: Any, broker: int) -> dict[str, Any]:
        topics = []
        for t in req.topics:
            parts = []
            for p in t.partitions:
                tp = (t.name, p.partition_index)
                if tp in self.failing:
                    parts.append({"partition_index": tp[1], "error_code": self.failing[tp]})
                    continue
                offset = {-1: self.ends[tp], -2: 0}.get(p.timestamp, -1)  # a time: past the last record
                parts.append({"partition_index": tp[1], "error_code": 0, "timestamp": -1, "offset": offset})
            topics.append({"name": t.name, "partitions": parts})
        return {"throttle_time_ms": 0, "topics": topics}


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> OffsetsCluster:
    fake = OffsetsCluster()
    fake.install(monkeypatch)
    return fake


def test_end_offsets_of_every_topic(cluster: OffsetsCluster, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["get-offsets", *BOOT]) == 0
    assert capsys.readouterr() == ("__consumer_offsets:0:9\n__consumer_offsets:1:4\nt:0:5\nt:1:0\nt:2:12\nu:0:3\n", "")
    assert main(["get-offsets", *BOOT, "--exclude-internal-topics", "--time", "-2"]) == 0
    assert capsys.readouterr().out == "t:0:0\nt:1:0\nt:2:0\nu:0:0\n"
    requests = [body for body, _ in cluster.api_calls(2)]
    assert {p.timestamp for body in requests[-1:] for t in body.topics for p in t.partitions} == {-2}


def test_filters_and_the_deprecated_broker_list(cluster: OffsetsCluster, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["get-offsets", "--broker-list", "b1:9092", "--topic", "t", "--partitions", "0,2"]) == 0
    assert capsys.readouterr().out == "t:0:5\nt:2:12\n"
    assert main(["get-offsets", *BOOT, "--topic-partitions", "t:1-,u"]) == 0
    assert capsys.readouterr().out == "t:1:0\nt:2:12\nu:0:3\n"


def test_failed_and_missing_offsets(cluster: OffsetsCluster, capsys: pytest.CaptureFixture[str]) -> None:
    cluster.failing[("t", 1)] = ErrorCode.UNKNOWN_SERVER_ERROR
    assert main(["get-offsets", *BOOT, "--topic", "t"]) == 0
    out, err = capsys.readouterr()
    assert out == "t:0:5\nt:2:12\n"
    assert err == ("Skip getting offsets for topic-partition t-1 due to error: "
                   "org.apache.kafka.common.errors.UnknownServerException: The server experienced an unexpected error "
                   "when processing the request.\n")
    # a time after every record: no offset, and no line (Kafka skips UNKNOWN_OFFSET silently)
    assert main(["get-offsets", *BOOT, "--topic", "u", "--time", "1700000000000"]) == 0
    assert capsys.readouterr() == ("", "")


@pytest.mark.parametrize(("argv", "err"), [
    (("--topic", "nope"), "Error occurred: Could not match any topic-partitions with the specified filters\n"),
    (("--topic", "t", "--partitions", "7"),
     "Error occurred: Could not match any topic-partitions with the specified filters\n"),
    (("--topic-partitions", "t:0", "--topic", "t"),
     "Error occurred: --topic-partitions cannot be used with --topic or --partitions\n"),
    (("--time", "yesterday"), "Error occurred: Malformed time argument yesterday. Please use -1 or latest / -2 or "
                              "earliest / -3 or max-timestamp, or a specified long format timestamp\n"),
])
def test_errors(cluster: OffsetsCluster, argv: tuple[str, ...], err: str,
                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["get-offsets", *BOOT, *argv]) == 1
    assert capsys.readouterr() == ("", err)


def test_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["get-offsets"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(go.USAGE_TEXT + "\nusage: mafka get-offsets")
    assert main(["get-offsets", "--topic", "t"]) == 1
    assert capsys.readouterr() == ("", "Error occurred: Missing required option(s) [bootstrap-server]\n")
    assert main(["get-offsets", "--bootstrap-server", "localhost"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Please provide valid host:port like host1:9091,host2:9092\n\nusage: mafka get-offsets")


def test_unreachable_cluster(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    WireFake({1: ("b1", 9092)}).install(monkeypatch)  # nothing listens on b9:1
    assert main(["get-offsets", "--bootstrap-server", "b9:1", "--timeout", "0.5"]) == 1
    assert capsys.readouterr() == ("", "\n".join([
        "Error occurred: org.apache.kafka.common.errors.TimeoutException: Timed out waiting for a node assignment. "
        "Call: listTopics",
        "java.util.concurrent.ExecutionException: org.apache.kafka.common.errors.TimeoutException: Timed out "
        "waiting for a node assignment. Call: listTopics",
    ]) + "\n")


def test_command_config_that_cannot_be_read(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["get-offsets", *BOOT, "--command-config", "/nonexistent/admin.properties"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("Error occurred: Failed to load /nonexistent/admin.properties")
