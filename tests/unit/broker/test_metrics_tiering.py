"""The cold tier's Prometheus metrics: moves, unusable cold dirs, cold reads."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from prometheus_client.parser import text_string_to_metric_families

from mafka.broker.metrics import render_metrics
from mafka.broker.metrics_snapshot import Snapshot, _rest
from mafka.broker.request_latency import RequestLatencies


def _families(broker: SimpleNamespace) -> dict:
    """The families of the broker's /metrics text, parsed back by prometheus_client, by name."""
    snap = Snapshot(now_ms=1_000_000)
    _rest(broker, snap)
    return {m.name: m for m in text_string_to_metric_families(render_metrics(broker, snap).decode())}


def test_cold_tier_metrics_name_each_dir_and_why_it_is_unusable():
    lm = SimpleNamespace(cold_dirs=(Path("/hdd1"), Path("/hdd2"), Path("/hdd3")), segments_moved_cold=7,
                         cold_dir_problems={Path("/hdd1"): "full", Path("/hdd3"): "I/O error: EIO"})
    broker = SimpleNamespace(request_latencies=RequestLatencies(), reactor=SimpleNamespace(seconds=lambda: 1000.0),
                             config=SimpleNamespace(mafka_slow_node_threshold_ms=300), log_manager=lm,
                             cold_reads=SimpleNamespace(reads=5), replica_manager=None)
    metrics = _families(broker)
    assert metrics["mafka_cold_segments_moved"].samples[0].value == 7
    unusable = {(s.labels["dir"], s.labels["reason"]): s.value for s in metrics["mafka_cold_dir_unusable"].samples}
    assert unusable == {("/hdd1", "full"): 1, ("/hdd2", ""): 0, ("/hdd3", "io_error"): 1}
    assert metrics["mafka_cold_reads"].samples[0].value == 5
    without = SimpleNamespace(**{**broker.__dict__, "log_manager": SimpleNamespace(cold_dirs=()), "cold_reads": None})
    assert "mafka_cold_dir_unusable" not in _families(without)
