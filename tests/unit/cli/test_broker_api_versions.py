"""``mafka broker-api-versions``: Kafka 2.8's ``NodeApiVersions.toString(true)`` per broker (fake wire)."""

from __future__ import annotations

from typing import Any

import pytest

from mafka.cli import broker_api_versions as bav
from mafka.cli.main import main
from mafka.client.metadata import BrokerInfo
from mafka.errors import ErrorCode
from mafka.wire.errors import ProtocolError
from mafka.wire.registry import api_versions_entries
from tests.unit.cli.fake_wire import WireFake


def test_the_kafka_28_table() -> None:
    zk_broker = [key for key, (_, _, _, zk) in bav.KAFKA_28_APIS.items() if zk]
    assert len(bav.KAFKA_28_APIS) == 65 and len(zk_broker) == 56
    assert bav.KAFKA_28_APIS[0] == ("Produce", 0, 9, True)
    assert bav.KAFKA_28_APIS[1] == ("Fetch", 0, 12, True)
    assert bav.KAFKA_28_APIS[18] == ("ApiVersions", 0, 3, True)
    assert bav.KAFKA_28_APIS[52][3] is False, "Vote is a KRaft controller api"


def test_node_string() -> None:
    assert bav.format_node(BrokerInfo(1, "h", 9092)) == "h:9092 (id: 1 rack: null)"
    assert bav.format_node(BrokerInfo(3, "h", 9094, "r1")) == "h:9094 (id: 3 rack: r1)"


def test_version_lines_as_kafka_prints_them() -> None:
    text = bav.format_api_versions([(0, 0, 9), (3, 0, 12), (23, 2, 3), (27, 0, 0), (1, 13, 14), (5, 0, 0),
                                    (2, -2, -1), (99, 0, 2)])
    lines = text.split("\n")
    assert lines[0] == "(" and lines[-1] == ")"
    body = [line.removeprefix("\t").removesuffix(",") for line in lines[1:-1]]
    assert all(line.startswith("\t") for line in lines[1:-1])
    assert all(line.endswith(",") for line in lines[1:-2]) and not lines[-2].endswith(",")
    assert body[:8] == [
        "Produce(0): 0 to 9 [usable: 9]",
        "Fetch(1): 13 to 14 [unusable: node too new]",
        "ListOffsets(2): -2 to -1 [unusable: node too old]",
        "Metadata(3): 0 to 12 [usable: 11]",
        "LeaderAndIsr(4): UNSUPPORTED",
        "StopReplica(5): 0 [usable: 0]",
        "UpdateMetadata(6): UNSUPPORTED",
        "ControlledShutdown(7): UNSUPPORTED",
    ]
    assert "OffsetForLeaderEpoch(23): 2 to 3 [usable: 3]" in body
    assert "WriteTxnMarkers(27): 0 [usable: 0]" in body
    assert "Vote(52): UNSUPPORTED" not in body and "DescribeQuorum(55): UNSUPPORTED" not in body
    assert "DescribeProducers(61): UNSUPPORTED" in body
    assert body[-1] == "UNKNOWN(99): 0 to 2"
    assert len(body) == 56 + 1


class VersionsCluster(WireFake):
    def __init__(self) -> None:
        super().__init__({2: ("b2", 9093), 1: ("b1", 9092), 3: ("b3", 9094)})
        self.broken: set[int] = set()

    def _Metadata(self, req: Any, broker: int) -> dict[str, Any]:
        return {"brokers": [{"node_id": n, "host": h, "port": p, "rack": "r" if n == 3 else None}
                            for n, (h, p) in self.brokers.items()],
                "cluster_id": "c", "controller_id": 1, "topics": []}

    def _ApiVersions(self, req: Any, broker: int) -> dict[str, Any]:
        if broker in self.broken:
            raise ProtocolError("garbled")
        if broker == 2:
            return {"error_code": ErrorCode.UNSUPPORTED_VERSION, "api_keys": [], "throttle_time_ms": 0}
        return {"error_code": 0, "api_keys": api_versions_entries(), "throttle_time_ms": 0}


def test_every_broker_by_id(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = VersionsCluster()
    cluster.install(monkeypatch)
    assert main(["broker-api-versions", "--bootstrap-server", "b2:9093"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    blocks = out.split("\n)\n")
    assert blocks[-1] == ""
    assert blocks[0].startswith("b1:9092 (id: 1 rack: null) -> (\n\tProduce(0): 0 to 9 [usable: 9],\n\tFetch(1): ")
    assert "\n\tLeaderAndIsr(4): UNSUPPORTED,\n" in blocks[0]
    assert "\n\tListOffsets(2): 0 to 7 [usable: 6],\n" in blocks[0], "Mafka's v7 is past 2.8's client"
    assert blocks[1].startswith(
        "b2:9093 (id: 2 rack: null) -> ERROR: org.apache.kafka.common.errors.UnsupportedVersionException: "
        "The version of API is not supported.\n"
        "b3:9094 (id: 3 rack: r) -> (\n\tProduce(0)")
    assert len(blocks) == 3
    assert sorted(b for _, b in cluster.api_calls(18)) == [1, 2, 3]


def test_a_broker_that_cannot_answer(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = VersionsCluster()
    cluster.install(monkeypatch)
    cluster.broken = {3}
    assert main(["broker-api-versions", "--bootstrap-server", "b1:9092"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "b3:9094 (id: 3 rack: r) -> ERROR: org.apache.kafka.common.errors.DisconnectException")


def test_required_bootstrap_and_no_cluster(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["broker-api-versions"]) == 1
    assert capsys.readouterr() == ("", 'Missing required argument "[bootstrap-server]"\n')
    cluster = VersionsCluster()
    cluster.install(monkeypatch)
    cluster.down = {1, 2, 3}
    assert main(["broker-api-versions", "--bootstrap-server", "b1:9092", "--timeout", "0.5"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("org.apache.kafka.common.errors.TimeoutException: ")
