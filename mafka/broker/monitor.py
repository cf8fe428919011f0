"""The slow-node monitor: every broker's ``/mafka/monitor/<broker-id>`` report (Mafka's own znode).

Every ``mafka.monitor.interval.ms`` (default 10 s) each broker writes, to an
ephemeral znode (gone with its ZooKeeper session), JSON with:

* ``logDirs``: per log dir its capacity, used and free bytes (``statvfs``; or,
  with ``mafka.disk.capacity.bytes``, that capacity and the bytes of the logs
  in the dir), or ``offline``; cold dirs (``mafka.cold.log.dirs``) too, marked
  ``"tier": "cold"``;
* ``partitions``: per replica hosted here its log dir, size, and byte-in /
  byte-out rates since the last report (bytes appended; bytes read by fetches)
  — at most :data:`MAX_REPORTED_PARTITIONS` of them, the busiest and then the
  largest, empty idle ones never (``partitionsOmitted`` counts the rest): a
  znode holds at most ZooKeeper's ``jute.maxbuffer`` (1 MiB), and a larger
  write makes ZooKeeper drop the broker's whole session connection (every
  10 s at ~9,000 replicas per broker);
* ``latencyMs``: TP50 / TP99 per request over the last minute (Produce,
  FetchConsumer, FetchFollower — Kafka's TotalTimeMs), and per log dir the
  append latency (``write:<dir>``) and per cold dir the read latency
  (``read:<dir>``);
* ``slow``: Produce TP99 above ``mafka.slow.node.threshold.ms`` over at least
  100 requests in the last minute (fewer is one unlucky request, e.g. the first
  acks=all produce to a partition whose followers are still starting).

:func:`build_report` is plain Python (inputs in, dict out); :class:`Monitor`
copies the inputs on the reactor, computes the report off it (disk space,
percentiles) and writes the znode.  The rebalancer and
``mafka cluster-status`` read these reports; a missing, stale or malformed
one is ignored by them, never acted on.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .request_latency import SLOW_MIN_SAMPLES, is_slow, percentiles_of

__all__ = ["MAX_REPORTED_PARTITIONS", "MONITOR_PATH", "Monitor", "MonitorInputs", "PartitionSample", "build_report", "for_zookeeper"]

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
                 storage: Mapping[str, Any] | None = None, empty_idle_replicas: int = 0) -> dict[str, Any]:
    """The report; ``log_dirs`` are (path, (total, used, free) or None when offline), ``previous`` the last
    report (for the rates), ``latencies`` request name → (p50, p99), ``produce_samples`` how many Produce
    requests the latencies cover (the slow flag needs enough of them: :func:`is_slow`); ``cold_dirs`` as
    ``log_dirs`` for ``mafka.cold.log.dirs`` (rows with ``"tier": "cold"``), ``storage`` the tiering and
    page-cache figures, reported as given; ``empty_idle_replicas`` the replicas not sampled (empty and
    idle since start-up), counted in the written report's ``partitionsOmitted``."""
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
        "emptyIdleReplicas": empty_idle_replicas,
    }


def _usage(d: Path) -> tuple[int, int, int] | None:
    """(total, used, free) bytes of the volume holding *d*; None if it cannot be read."""
    try:
        usage = shutil.disk_usage(d)
    except OSError:
        return None
    return usage.total, usage.used, usage.free


@dataclass(frozen=True, slots=True)
class MonitorInputs:
    """What a report needs of the broker's live state, copied on the reactor (:meth:`Monitor.snapshot`)."""

    now_ms: int
    #: (log dir, whether it is offline)
    log_dirs: tuple[tuple[Path, bool], ...]
    #: ``mafka.disk.capacity.bytes`` (-1: the volumes' own figures)
    capacity: int
    cold_dirs: tuple[Path, ...]
    partitions: tuple[PartitionSample, ...]
    #: the replicas left out of ``partitions``: empty, and no byte written or read here since start-up
    empty_idle_replicas: int
    #: request (or ``write:<dir>`` / ``read:<dir>``) name → its latencies in the window
    latency_samples: Mapping[str, list[float]]
    #: names whose p50 / p99 are reported even when they have no samples (the requests)
    always_reported: tuple[str, ...]
    produce_samples: int
    storage: Mapping[str, Any]


class Monitor:
    """Gathers and writes this broker's report (every ``mafka.monitor.interval.ms``).

    :meth:`snapshot` copies the broker's state it needs on the reactor (the
    request latencies are appended to by the reactor on every request, the
    partitions change with every LeaderAndIsr); :meth:`compute` turns such a
    snapshot into the report in a worker thread (``statvfs`` on every dir,
    the percentiles) and touches nothing the reactor changes.
    """

    def __init__(self, broker: Any) -> None:
        self.broker = broker
        self.last: dict[str, Any] | None = None
        self._probed = (0, 0)

    def gather(self) -> dict[str, Any]:
        """:meth:`compute` of a :meth:`snapshot`, in one go (tests; both halves on one thread)."""
        return self.compute(self.snapshot())

    def snapshot(self) -> MonitorInputs:
        """The report's inputs, copied (on the reactor)."""
        b = self.broker
        lm, rm = b.log_manager, b.replica_manager
        now = int(b.reactor.seconds() * 1000)
        offline = set(lm.offline_dirs)
        samples = []
        empty_idle = 0
        for (topic, index), p in rm.partitions.items():  # no copy: nothing changes it during the loop
            log_ = p.log
            if not (p.bytes_in or p.bytes_out) and log_.next_offset <= log_.log_start_offset:
                # Empty and never written or read here: never reported, so not sampled either (with
                # 100,000 replicas, sampling each every 10 s was a third of an idle broker's work).
                empty_idle += 1
                continue
            samples.append(PartitionSample(topic, index, str(log_.directory.parent), log_.size, p.bytes_in, p.bytes_out))
        latencies = {name: b.request_latencies.snapshot(name, now) for name in REQUESTS}
        dir_lat = getattr(b, "dir_latencies", None)
        if dir_lat is not None:
            # the window's clock: the reactor's (appends) and the wall clock (cold reads) agree in a broker
            for name in [f"write:{d}" for d in lm.log_dirs] + [f"read:{d}" for d in lm.cold_dirs]:
                latencies[name] = dir_lat.snapshot(name, now)
        return MonitorInputs(
            now_ms=now,
            log_dirs=tuple((d, d in offline) for d in lm.log_dirs),
            capacity=getattr(b.config, "mafka_disk_capacity_bytes", -1),
            cold_dirs=tuple(lm.cold_dirs),
            partitions=tuple(samples),
            empty_idle_replicas=empty_idle,
            latency_samples=latencies,
            always_reported=REQUESTS,
            produce_samples=len(latencies["Produce"]),
            storage=self._storage(),
        )

    def compute(self, inputs: MonitorInputs) -> dict[str, Any]:
        """The report of *inputs* (in a worker thread: ``statvfs`` on every dir)."""
        b = self.broker
        lm = b.log_manager
        dirs: list[tuple[str, tuple[int, int, int] | None]] = []
        for d, is_offline in inputs.log_dirs:
            if is_offline:
                dirs.append((str(d), None))
                continue
            if inputs.capacity >= 0:
                # a configured capacity (brokers sharing a disk, tests): used = this dir's logs
                used = sum(log.hot_size for log in lm.logs_in_dir(d).values())
                dirs.append((str(d), (inputs.capacity, used, max(0, inputs.capacity - used))))
                continue
            dirs.append((str(d), _usage(d)))
        cold_dirs = [(str(d), _usage(d)) for d in inputs.cold_dirs]
        latencies: dict[str, tuple[float | None, float | None]] = {}
        for name, values in inputs.latency_samples.items():
            p50, p99 = percentiles_of(values, 0.5, 0.99)
            if p50 is not None or name in inputs.always_reported:
                latencies[name] = (p50, p99)
        report = build_report(b.broker_id, inputs.now_ms, dirs, inputs.partitions, self.last, latencies,
                              b.config.mafka_slow_node_threshold_ms, inputs.produce_samples,
                              cold_dirs, inputs.storage, inputs.empty_idle_replicas)
        self.last = report
        return report

    def _storage(self) -> dict[str, Any]:
        """Tiering and page-cache figures; the page-cache ones since the previous report (on the reactor)."""
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
            # a copy first: the cold tier's threads change this dict
            storage["coldDirProblems"] = {str(d): why for d, why in dict(lm.cold_dir_problems).items()}
        reader = getattr(b, "cold_reads", None)
        if reader is not None:
            p50, p99 = reader.latency_ms()  # its last 1024 reads, copied under its lock
            storage["coldReads"] = {"count": reader.reads, "bytes": reader.bytes, "isolated": reader.isolate,
                                    "latencyMs": {"p50": p50, "p99": p99}}
        return storage

    def write(self, report: dict[str, Any]) -> Any:
        """Writes the report, trimmed by :func:`for_zookeeper`, to ``/mafka/monitor/<id>`` (a Deferred)."""
        return self.broker.zk.write_monitor_report(self.broker.broker_id,
                                                   json.dumps(for_zookeeper(report), separators=(",", ":")).encode())


#: The most partition rows a report written to ZooKeeper carries (~120 bytes each; see the module docstring).
MAX_REPORTED_PARTITIONS = 2000


def for_zookeeper(report: dict[str, Any], limit: int = MAX_REPORTED_PARTITIONS) -> dict[str, Any]:
    """*report* with at most *limit* partition rows: empty idle replicas dropped, then the busiest and largest kept.

    The full report stays the monitor's own (:attr:`Monitor.last`, the
    base of the next rates); readers of the znode see ``partitionsOmitted``.
    """
    rows = report.get("partitions", ())
    kept = [r for r in rows if r.get("sizeBytes") or r.get("bytesInPerSec") or r.get("bytesOutPerSec")]
    if len(kept) > limit:
        kept.sort(key=lambda r: (r.get("bytesInPerSec", 0) + r.get("bytesOutPerSec", 0), r.get("sizeBytes", 0)),
                  reverse=True)
        kept = sorted(kept[:limit], key=lambda r: (r["topic"], r["partition"]))
    omitted = len(rows) - len(kept) + report.get("emptyIdleReplicas", 0)
    if not omitted:
        return report
    return {**report, "partitions": kept, "partitionsOmitted": omitted}
