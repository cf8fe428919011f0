"""``mafka broker-health`` against a fake Metadata answer (the real broker is the docker smoke test's)."""

from __future__ import annotations

import pytest

from mafka.cli import cluster
from mafka.cli.main import main


@pytest.mark.parametrize(("snapshot", "argv", "rc", "says"), [
    (([1, 2, 3], 2), ["--broker-id", "1"], 0, "healthy: brokers [1, 2, 3], controller 2"),
    (([2, 3], 2), ["--broker-id", "1"], 1, "broker 1 is not among the live brokers [2, 3] yet"),
    (([1], -1), ["--broker-id", "1"], 1, "no controller known yet"),
    (None, [], 1, "no Metadata answer from localhost:9092"),
])
def test_health_follows_the_metadata_answer(monkeypatch, capsys, snapshot, argv, rc, says):
    asked = []
    monkeypatch.setattr(cluster, "metadata_snapshot", lambda h, p, timeout: asked.append((h, p)) or snapshot)
    monkeypatch.delenv("KAFKA_BROKER_ID", raising=False)
    assert main(["broker-health", *argv]) == rc
    out = capsys.readouterr()
    assert says in out.out + out.err
    assert asked == [("localhost", 9092)]


def test_the_broker_id_comes_from_kafka_broker_id(monkeypatch, capsys):
    monkeypatch.setattr(cluster, "metadata_snapshot", lambda h, p, timeout: ([1, 3], 1))
    monkeypatch.setenv("KAFKA_BROKER_ID", "2")
    assert main(["broker-health", "--bootstrap-server", "kafka2:19092"]) == 1
    assert "broker 2 is not among" in capsys.readouterr().err
    assert main(["broker-health", "--bootstrap-server", "nonsense"]) == 2
