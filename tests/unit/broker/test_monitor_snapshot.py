"""The monitor copies the broker's state on the reactor and computes the report off it.

A broker logged ``monitor report not written: deque mutated during iteration``:
the report was gathered in a worker thread that sorted the request-latency
samples the reactor appends to on every request.  :meth:`Monitor.snapshot`
(reactor) copies what the report needs; :meth:`Monitor.compute` (worker
thread) reads nothing the reactor changes.
"""

from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace

from twisted.internet import task

from mafka.broker.monitor import Monitor, PartitionSample, for_zookeeper
from mafka.broker.request_latency import LatencyWindow, RequestLatencies, percentiles_of


class Untouchable:
    """Stands for state the worker thread must not read."""

    def __getattr__(self, name: str):
        raise AssertionError(f"the report's computation read {name} of the reactor's state")


def monitor_broker(tmp_path: Path) -> SimpleNamespace:
    clock = task.Clock()
    clock.advance(1_800_000_000)
    hot, cold = tmp_path / "hot", tmp_path / "cold"
    hot.mkdir()
    cold.mkdir()
    log_ = SimpleNamespace(directory=hot / "t-0", size=5000, log_start_offset=0, next_offset=40)
    partition = SimpleNamespace(log=log_, bytes_in=100, bytes_out=7)
    latencies, dirs = RequestLatencies(), RequestLatencies()
    now = int(clock.seconds() * 1000)
    for i in range(200):
        latencies.record("Produce", now, float(i))
    dirs.record(f"write:{hot}", now, 3.0)
    return SimpleNamespace(
        broker_id=2, reactor=clock,
        config=SimpleNamespace(mafka_disk_capacity_bytes=-1, mafka_slow_node_threshold_ms=100),
        log_manager=SimpleNamespace(log_dirs=[hot], offline_dirs=[], cold_dirs=[cold], segments_moved_cold=4,
                                    cold_dir_problems={cold: "full"}),
        replica_manager=SimpleNamespace(partitions={("t", 0): partition}),
        request_latencies=latencies, dir_latencies=dirs,
        page_cache=SimpleNamespace(probes=10, misses=3),
    )


def test_the_report_is_computed_from_the_snapshot_alone(tmp_path: Path) -> None:
    b = monitor_broker(tmp_path)
    monitor = Monitor(b)
    inputs = monitor.snapshot()
    # After the snapshot the reactor goes on: new samples, new partitions — none of it is read.
    b.request_latencies, b.replica_manager, b.dir_latencies, b.page_cache = (Untouchable(),) * 4
    b.log_manager.cold_dir_problems = Untouchable()
    report = monitor.compute(inputs)
    assert report["latencyMs"]["Produce"] == {"p50": 100.0, "p99": 198.0}
    assert report["latencyMs"]["FetchConsumer"] == {"p50": None, "p99": None}
    assert report["latencyMs"][f"write:{tmp_path / 'hot'}"] == {"p50": 3.0, "p99": 3.0}
    assert f"read:{tmp_path / 'cold'}" not in report["latencyMs"]  # no samples: left out
    assert report["slow"] is True  # 200 Produce requests, TP99 198 ms > 100 ms
    assert [(r["topic"], r["sizeBytes"], r["bytesIn"]) for r in report["partitions"]] == [("t", 5000, 100)]
    assert [(d["path"], d["tier"], d["offline"]) for d in report["logDirs"]] == [
        (str(tmp_path / "hot"), "hot", False), (str(tmp_path / "cold"), "cold", False)]
    assert report["storage"]["pageCache"] == {"probes": 10, "misses": 3, "missRatio": 0.3}
    assert report["storage"]["coldDirProblems"] == {str(tmp_path / "cold"): "full"}
    assert monitor.last is report


def test_the_snapshot_holds_copies(tmp_path: Path) -> None:
    b = monitor_broker(tmp_path)
    monitor = Monitor(b)
    inputs = monitor.snapshot()
    now = int(b.reactor.seconds() * 1000)
    for _ in range(1000):
        b.request_latencies.record("Produce", now, 5000.0)
    b.replica_manager.partitions[("t", 1)] = b.replica_manager.partitions[("t", 0)]
    assert len(inputs.latency_samples["Produce"]) == inputs.produce_samples == 200
    assert inputs.partitions == (PartitionSample("t", 0, str(tmp_path / "hot"), 5000, 100, 7),)
    assert monitor.gather()["latencyMs"]["Produce"]["p99"] == 5000.0  # gather: both halves at once


def test_empty_idle_replicas_are_counted_not_sampled(tmp_path: Path) -> None:
    b = monitor_broker(tmp_path)
    empty = SimpleNamespace(directory=tmp_path / "hot" / "e-0", size=0, log_start_offset=7, next_offset=7)
    parts = b.replica_manager.partitions
    parts[("e", 0)] = SimpleNamespace(log=empty, bytes_in=0, bytes_out=0)
    parts[("e", 1)] = SimpleNamespace(log=empty, bytes_in=0, bytes_out=3)  # read here: sampled
    inputs = Monitor(b).snapshot()
    assert [(s.topic, s.partition) for s in inputs.partitions] == [("t", 0), ("e", 1)]
    assert inputs.empty_idle_replicas == 1
    report = Monitor(b).compute(inputs)
    written = for_zookeeper(report)
    # e-1 is sampled but, empty with no rate yet, not written: both count as omitted
    assert [(r["topic"], r["partition"]) for r in written["partitions"]] == [("t", 0)]
    assert written["partitionsOmitted"] == 2


def test_latencies_recorded_by_several_threads_while_percentiles_are_computed() -> None:
    # The cold-read pool threads record read:<dir> latencies while the reactor (metrics) and the
    # monitor read them: never "deque mutated during iteration".
    window = LatencyWindow(window_ms=60_000, max_samples=5_000)
    stop = threading.Event()
    errors: list[BaseException] = []

    def record() -> None:
        i = 0
        while not stop.is_set():
            window.record(i, float(i % 97))
            i += 1

    writers = [threading.Thread(target=record) for _ in range(2)]
    for t in writers:
        t.start()
    try:
        for _ in range(200):
            try:
                window.percentiles(0, 0.5, 0.99)
                percentiles_of(window.snapshot(0), 0.5)
            except RuntimeError as exc:  # pragma: no cover - the bug
                errors.append(exc)
    finally:
        stop.set()
        for t in writers:
            t.join()
    assert errors == []
    assert percentiles_of([3.0, 1.0, 2.0], 0.5, 0.99) == [2.0, 3.0]
    assert percentiles_of([], 0.5) == [None]
