"""The console's sampling and metrics: lag from the brokers' scrapes or from offsets, rates, the slow flag."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from mafka.cli import console as console_cli
from mafka.console import metrics as prom
from mafka.console.sampler import Sampler

from .fake_cluster import FakeCluster, Group, build

SCRAPE_1 = """\
# TYPE mafka_broker_slow gauge
mafka_broker_slow 1.0
# TYPE kafka_consumergroup_lag gauge
kafka_consumergroup_lag{consumergroup="billing",topic="orders",partition="0"} 40.0
kafka_consumergroup_lag{consumergroup="billing",topic="orders",partition="1"} 2.0
# TYPE kafka_server_brokertopicmetrics_messagesin_total counter
kafka_server_brokertopicmetrics_messagesin_total{topic="orders"} 100.0
# TYPE mafka_cold_dir_unusable gauge
mafka_cold_dir_unusable{dir="/cold/a",reason="full"} 1.0
"""
SCRAPE_2 = """\
# TYPE mafka_broker_slow gauge
mafka_broker_slow 0.0
# TYPE kafka_server_brokertopicmetrics_messagesin_total counter
kafka_server_brokertopicmetrics_messagesin_total{topic="orders"} 50.0
"""


@pytest.fixture
def cluster() -> FakeCluster:
    c = FakeCluster()
    c.topic("orders", partitions=2)
    c.records[("orders", 0)] = [(None, b"v", [], 1)] * 3
    c.groups["billing"] = Group("Stable", committed={("orders", 0): 1})
    c.groups["audit"] = Group("Empty", committed={("orders", 0): 0})
    return c


def sampler_for(cluster: FakeCluster, pages: dict[str, str]) -> tuple[Sampler, object]:
    built = build(cluster)
    sampler = built.sampler
    assert sampler is not None
    sampler.targets = [prom.Target("http://b1/metrics", 1), prom.Target("http://b2/metrics", 2)]

    def fetch(url: str, timeout: float) -> str:
        if url not in pages:
            raise OSError("connection refused")
        return pages[url]

    sampler._fetch = fetch
    return sampler, built.app


def test_lag_comes_from_the_scrapes_for_the_groups_they_report_and_from_offsets_for_the_rest(
        cluster: FakeCluster) -> None:
    sampler, _ = sampler_for(cluster, {"http://b1/metrics": SCRAPE_1, "http://b2/metrics": SCRAPE_2})
    sampler.sample()
    billing = sampler.lag_json("billing")["points"]
    audit = sampler.lag_json("audit")["points"]
    assert billing[-1]["source"] == "metrics" and billing[-1]["total"] == 42
    assert billing[-1]["partitions"] == {"orders-0": 40, "orders-1": 2}
    assert audit[-1]["source"] == "offsets" and audit[-1]["total"] == 3


def test_rates_from_the_messages_in_counters_between_two_scrapes(cluster: FakeCluster) -> None:
    pages = {"http://b1/metrics": SCRAPE_1, "http://b2/metrics": SCRAPE_2}
    sampler, _ = sampler_for(cluster, pages)
    sampler.sample()
    assert sampler.rates() == {}
    pages["http://b1/metrics"] = SCRAPE_1.replace("} 100.0", "} 300.0")
    sampler._totals[-1] = (sampler._totals[-1][0] - 2.0, *sampler._totals[-1][1:])  # two seconds ago
    sampler.sample()
    rate = sampler.rates()["orders"]
    assert 95 < rate < 101, rate  # 200 more messages in ~2 s


def test_rates_from_end_offsets_without_metrics(cluster: FakeCluster) -> None:
    sampler, _ = sampler_for(cluster, {})
    sampler.targets = []
    sampler.sample()
    cluster.records[("orders", 1)] = [(None, b"v", [], 1)] * 10
    sampler._totals[-1] = (sampler._totals[-1][0] - 5.0, *sampler._totals[-1][1:])
    sampler.sample()
    assert 1.9 < sampler.rates()["orders"] <= 2.0


def test_brokers_page_shows_the_slow_flag_cold_dirs_and_unreachable_endpoints(cluster: FakeCluster) -> None:
    sampler, app = sampler_for(cluster, {"http://b1/metrics": SCRAPE_1})
    sampler.sample()
    body = app.test_client().get("/brokers").get_data(as_text=True)  # type: ignore[attr-defined]
    b1 = body.split('data-broker="1">')[1].split("</tr>\n")[0]
    assert '<span class="flag-slow">slow</span>' in b1
    assert "/cold/a" in body and "full" in body
    assert "http://b2/metrics" in body and "unreachable" in body


def test_parse_target_and_cluster_json(tmp_path: Path) -> None:
    assert prom.parse_target("http://h:1/metrics") == prom.Target("http://h:1/metrics", None)
    assert prom.parse_target("2=http://h:1/metrics") == prom.Target("http://h:1/metrics", 2)
    for bad in ("file:///etc/passwd", "x=http://h/m", "h:1/metrics"):
        with pytest.raises(ValueError):
            prom.parse_target(bad)
    state = tmp_path / "cluster.json"
    state.write_text(json.dumps({"brokers": [{"id": 1, "metrics": "http://127.0.0.1:19901/metrics"}, {"id": 2}]}))
    assert prom.targets_from_cluster_json(str(state)) == [prom.Target("http://127.0.0.1:19901/metrics", 1)]
    state.write_text("[]")
    with pytest.raises(ValueError):
        prom.targets_from_cluster_json(str(state))


def test_a_scrape_that_is_not_prometheus_text_is_reported_not_raised() -> None:
    scrape = prom.scrape(prom.Target("http://x/metrics"), 1.0, lambda url, t: "this is { not metrics")
    assert scrape.error is not None and scrape.error.startswith("not Prometheus text")


def test_console_command_refuses_bad_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def args(**over: object) -> argparse.Namespace:
        base: dict[str, object] = dict(bootstrap_server="127.0.0.1:1", command_config=None, host="127.0.0.1", port=0, metrics=[],
                    cluster_json=None, timeout=10.0, sample_interval=5.0, hanging_threshold_ms=None)
        base.update(over)
        return argparse.Namespace(**base)

    assert console_cli.run(args(metrics=["ftp://x"])) == 1
    assert "bad --metrics URL" in capsys.readouterr().err
    assert console_cli.run(args(cluster_json=str(tmp_path / "missing.json"))) == 1
    assert "cannot read --cluster-json" in capsys.readouterr().err
    assert console_cli.run(args(port=70000)) == 1
    assert "is not a port number" in capsys.readouterr().err
    assert console_cli.run(args(command_config=str(tmp_path / "none.properties"))) == 1
    assert "ConfigException" in capsys.readouterr().err
