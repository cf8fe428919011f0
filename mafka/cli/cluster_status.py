"""``mafka cluster-status --zookeeper HOST:PORT``: brokers, controller, disks, slow flags, under-replicated partitions.

Read from ZooKeeper: ``/brokers/ids``, ``/controller``, every partition's
state, and the brokers' slow-node reports (``/mafka/monitor/<id>``, written
every ``mafka.monitor.interval.ms`` by :mod:`mafka.broker.monitor`).  A report
older than three intervals (``--max-report-age-ms``, default 60 s) or
malformed is shown as ``no report``, never trusted::

    Controller: 2
    Broker  Address           Slow  ProduceP99(ms)  FetchConsumerP99(ms)  LogDirs
    1       127.0.0.1:9092    no    3.1             501.0                 /data/1: 41% used (58.1 GB free)
    2       127.0.0.1:9093    YES   412.7           500.9                 /data/2: 90% used (10.2 GB free)
    Under-replicated partitions: 1
        orders-3  leader 2  replicas [2, 1, 3]  isr [2, 1]

Exit status 1 if ZooKeeper does not answer.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any, TextIO

from mafka.cli.zk_session import ZkSession
from mafka.monitoring.report import parse_report

__all__ = ["add_parser", "run", "format_status"]


def add_parser(sub: Any) -> None:
    p = sub.add_parser("cluster-status", help="brokers, controller, disks, slow flags, under-replicated partitions")
    p.add_argument("--zookeeper", required=True, metavar="HOST:PORT[/chroot]")
    p.add_argument("--max-report-age-ms", type=int, default=60_000,
                   help="older monitor reports are ignored (default 60000)")
    p.add_argument("--timeout", type=float, default=30.0)
    p.set_defaults(func=run)


def _gb(n: int) -> str:
    return f"{n / 1e9:.1f} GB"


def format_status(controller: int | None, brokers: dict[int, str], reports: dict[int, dict | None],
                  under_replicated: list[tuple[str, int, int, list[int], list[int]]], out: TextIO) -> None:
    out.write(f"Controller: {controller if controller is not None else 'none'}\n")
    rows = [("Broker", "Address", "Slow", "ProduceP99(ms)", "FetchConsumerP99(ms)", "LogDirs")]
    for b in sorted(set(brokers) | set(reports)):
        r = reports.get(b)
        if r is None:
            rows.append((str(b), brokers.get(b, "(not registered)"), "?", "-", "-", "no report"))
            continue
        lat = r.get("latencyMs", {})

        def p99(name: str, lat: dict = lat) -> str:
            v = lat.get(name, {}).get("p99")
            return "-" if v is None else f"{v:.1f}"

        dirs = "; ".join(
            f"{d['path']}{' (cold)' if d.get('tier') == 'cold' else ''}: offline" if d.get("offline") else
            f"{d['path']}{' (cold)' if d.get('tier') == 'cold' else ''}: "
            f"{100 * d['usedBytes'] / max(1, d['capacityBytes']):.0f}% used ({_gb(d['freeBytes'])} free)"
            for d in r.get("logDirs", []))
        rows.append((str(b), brokers.get(b, "(not registered)"), "YES" if r.get("slow") else "no",
                     p99("Produce"), p99("FetchConsumer"), dirs))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        out.write("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() + "\n")
    out.write(f"Under-replicated partitions: {len(under_replicated)}\n")
    for topic, partition, leader, replicas, isr in under_replicated:
        out.write(f"    {topic}-{partition}  leader {leader}  replicas {replicas}  isr {isr}\n")


def run(args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    try:
        with ZkSession(args.zookeeper, timeout=args.timeout) as zk:
            c = zk.client
            controller = zk.call(c.get_controller_id)
            brokers = {}
            for b, (registration, _) in zk.call(c.get_all_brokers).items():
                endpoints = list(registration.endpoints.values())
                brokers[b] = f"{endpoints[0].host}:{endpoints[0].port}" if endpoints else "?"
            now = int(time.time() * 1000)
            reports = {b: parse_report(raw, now, args.max_report_age_ms)
                       for b, raw in zk.call(c.monitor_reports).items()}
            under: list[tuple[str, int, int, list[int], list[int]]] = []
            for topic in sorted(zk.call(c.get_topics)):
                got = zk.call(c.get_assignment, topic)
                if got is None:
                    continue
                parts = sorted(got[0].partitions.items())
                states = zk.call(c.get_partition_states, [(topic, p) for p, _ in parts])
                for p, replicas in parts:
                    state = states.get((topic, p))
                    isr = list(state.isr) if state is not None else []
                    if len(isr) < len(replicas):
                        under.append((topic, p, state.leader if state is not None else -1, list(replicas), isr))
    except Exception as exc:  # noqa: BLE001 - the tool's answer: ZooKeeper did not answer
        print(f"Error: ZooKeeper at {args.zookeeper} did not answer: {exc}", file=sys.stderr)
        return 1
    format_status(controller, brokers, reports, under, out)
    return 0
