"""The slow-node monitor: every broker's ``/mafka/monitor/<broker-id>`` report (Mafka's own znode).

Every ``mafka.monitor.interval.ms`` (default 10 s) each broker writes, to an
ephemeral znode (gone with its ZooKeeper session), JSON with:

* ``logDirs``: per log dir its capacity, used and free bytes (``statvfs``; or,
  with ``mafka.disk.capacity.bytes``, that capacity and the bytes of the logs
  in the dir), or ``offline``; cold dirs (``mafka.cold.log.dirs``) too, marked
  ``"tier": "cold"``;
* ``partitions``: per replica hosted here its log dir, size, and byte-in /
  byte-out rates since the last report (bytes appended; bytes read by fetches);
* ``latencyMs``: TP50 / TP99 per request over the last minute (Produce,
  FetchConsumer, FetchFollower — Kafka's TotalTimeMs), and per log dir the
  append latency (``write:<dir>``) and per cold dir the read latency
  (``read:<dir>``);
* ``slow``: Produce TP99 above ``mafka.slow.node.threshold.ms`` over at least
  100 requests in the last minute (fewer is one unlucky request, e.g. the first
  acks=all produce to a partition whose followers are still starting).

:func:`build_report` is plain Python (inputs in, dict out); :class:`Monitor`
gathers the inputs (off the reactor) and writes the znode.  The rebalancer and
``mafka cluster-status`` read these reports; a missing, stale or malformed
one is ignored by them, never acted on.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .request_latency import SLOW_MIN_SAMPLES, is_slow

__all__ = ["MONITOR_PATH", "Monitor", "PartitionSample", "build_report", "parse_report"]

log = logging.getLogger(__name__)

MONITOR_PATH = "/mafka/monitor"
REQUESTS = ("Produce", "FetchConsumer", "FetchFollower")


@dataclass(frozen=True, slots=True)
class PartitionSample:
    topic: str
    partition: int
    log_dir: str
    size: int
    bytes_in: int
    bytes_out: int


def build_report(broker_id: int, now_ms: int, log_dirs: Iterable[tuple[str, tuple[int, int, int] | None]],
                 partitions: Iterable[PartitionSample], previous: Mapping[str, Any] | None,
                 latencies: Mapping[str, tuple[float | None, float | None]], threshold_ms: int,
                 produce_samples: int = SLOW_MIN_SAMPLES,
                 cold_dirs: Iterable[tuple[str, tuple[int, int, int] | None]] = (),
                 storage: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The report; ``log_dirs`` are (path, (total, used, free) or None when offline), ``previous`` the last
    report (for the rates), ``latencies`` request name → (p50, p99), ``produce_samples`` how many Produce
    requests the latencies cover (the slow flag needs enough of them: :func:`is_slow`); ``cold_dirs`` as
    ``log_dirs`` for ``mafka.cold.log.dirs`` (rows with ``"tier": "cold"``), ``storage`` the tiering and
    page-cache figures, reported as given."""
    before: dict[tuple[str, int], tuple[int, int]] = {}
    elapsed_s = 0.0
    if previous:
        elapsed_s = max(0.0, (now_ms - int(previous.get("timestamp", now_ms))) / 1000.0)
        for p in previous.get("partitions", ()):
            before[(p["topic"], p["partition"])] = (p.get("bytesIn", 0), p.get("bytesOut", 0))
    rows = []
    for s in sorted(partitions, key=lambda s: (s.topic, s.partition)):
        was_in, was_out = before.get((s.topic, s.partition), (s.bytes_in, s.bytes_out))
        rate_in = (s.bytes_in - was_in) / elapsed_s if elapsed_s > 0 and s.bytes_in >= was_in else 0.0
        rate_out = (s.bytes_out - was_out) / elapsed_s if elapsed_s > 0 and s.bytes_out >= was_out else 0.0
        rows.append({"topic": s.topic, "partition": s.partition, "logDir": s.log_dir, "sizeBytes": s.size,
                     "bytesIn": s.bytes_in, "bytesOut": s.bytes_out,
                     "bytesInPerSec": round(rate_in, 1), "bytesOutPerSec": round(rate_out, 1)})
    dirs = []
    for tier, rows_of_tier in (("hot", log_dirs), ("cold", cold_dirs)):
        for path, usage in rows_of_tier:
            if usage is None:
                dirs.append({"path": path, "tier": tier, "offline": True})
            else:
                total, used, free = usage
                dirs.append({"path": path, "tier": tier, "offline": False, "capacityBytes": total,
                             "usedBytes": used, "freeBytes": free})
    lat = {name: {"p50": p50, "p99": p99} for name, (p50, p99) in latencies.items()}
    produce_p99 = lat.get("Produce", {}).get("p99")
    return {
        "version": 1, "broker": broker_id, "timestamp": now_ms,
        "slow": is_slow(produce_p99, produce_samples, threshold_ms), "slowThresholdMs": threshold_ms,
        "latencyMs": lat, "logDirs": dirs, "partitions": rows, "storage": dict(storage or {}),
    }


def parse_report(data: bytes, now_ms: int, max_age_ms: int) -> dict[str, Any] | None:
    """A report read back, or None if malformed or older than ``max_age_ms`` (never acted on)."""
    try:
        report = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(report, dict) or report.get("version") != 1 or not isinstance(report.get("broker"), int):
        return None
    if not isinstance(report.get("timestamp"), int) or now_ms - report["timestamp"] > max_age_ms:
        return None
    if not isinstance(report.get("logDirs"), list) or not isinstance(report.get("partitions"), list):
        return None
    return report


class Monitor:
    """Gathers and writes this broker's report (call :meth:`report` every ``mafka.monitor.interval.ms``)."""

    def __init__(self, broker: Any) -> None:
        self.broker = broker
        self.last: dict[str, Any] | None = None
        self._probed = (0, 0)

    def gather(self) -> dict[str, Any]:
        """The report now (in a worker thread: ``statvfs`` on every dir)."""
        b = self.broker
        lm, rm = b.log_manager, b.replica_manager
        now = int(b.reactor.seconds() * 1000)
        dirs = []
        offline = set(lm.offline_dirs)
        capacity = getattr(b.config, "mafka_disk_capacity_bytes", -1)
        for d in lm.log_dirs:
            if d in offline:
                dirs.append((str(d), None))
                continue
            if capacity >= 0:
                # a configured capacity (brokers sharing a disk, tests): used = this dir's logs
                used = sum(log.hot_size for log in lm.logs_in_dir(d).values())
                dirs.append((str(d), (capacity, used, max(0, capacity - used))))
                continue
            try:
                usage = shutil.disk_usage(d)
                dirs.append((str(d), (usage.total, usage.used, usage.free)))
            except OSError:
                dirs.append((str(d), None))
        samples = []
        for (topic, index), p in list(rm.partitions.items()):
            samples.append(PartitionSample(topic, index, str(p.log.directory.parent), p.log.size, p.bytes_in,
                                           p.bytes_out))
        latencies = {name: tuple(b.request_latencies.percentiles(name, now, 0.5, 0.99)) for name in REQUESTS}
        cold_dirs = []
        for d in lm.cold_dirs:
            try:
                usage = shutil.disk_usage(d)
                cold_dirs.append((str(d), (usage.total, usage.used, usage.free)))
            except OSError:
                cold_dirs.append((str(d), None))
        dir_lat = getattr(b, "dir_latencies", None)
        if dir_lat is not None:
            # the window's clock: the reactor's (appends) and the wall clock (cold reads) agree in a broker
            for name in [f"write:{d}" for d in lm.log_dirs] + [f"read:{d}" for d in lm.cold_dirs]:
                p50, p99 = dir_lat.percentiles(name, now, 0.5, 0.99)
                if p50 is not None:
                    latencies[name] = (p50, p99)
        report = build_report(b.broker_id, now, dirs, samples, self.last, latencies,
                              b.config.mafka_slow_node_threshold_ms, b.request_latencies.samples("Produce", now),
                              cold_dirs, self._storage())
        self.last = report
        return report

    def _storage(self) -> dict[str, Any]:
        """Tiering and page-cache figures; the page-cache ones since the previous report."""
        b = self.broker
        lm = b.log_manager
        probe = getattr(b, "page_cache", None)
        storage: dict[str, Any] = {}
        if probe is not None:
            probes, misses = probe.probes - self._probed[0], probe.misses - self._probed[1]
            self._probed = (probe.probes, probe.misses)
            storage["pageCache"] = {"probes": probes, "misses": misses,
                                    "missRatio": round(misses / probes, 4) if probes else None}
        if lm.cold_dirs:
            storage["segmentsMovedCold"] = lm.segments_moved_cold
            storage["coldDirProblems"] = {str(d): why for d, why in lm.cold_dir_problems.items()}
        reader = getattr(b, "cold_reads", None)
        if reader is not None:
            p50, p99 = reader.latency_ms()
            storage["coldReads"] = {"count": reader.reads, "bytes": reader.bytes, "isolated": reader.isolate,
                                    "latencyMs": {"p50": p50, "p99": p99}}
        return storage

    def write(self, report: dict[str, Any]) -> Any:
        """Writes the report to ``/mafka/monitor/<id>`` (a Deferred)."""
        return self.broker.zk.write_monitor_report(self.broker.broker_id,
                                                   json.dumps(report, separators=(",", ":")).encode())
