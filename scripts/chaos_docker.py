#!/usr/bin/env python3
"""Real-network chaos on the docker-compose cluster (``make chaos-docker``).

Builds the images if needed (``docker/build.sh``), starts its own compose
project of ``docker/docker-compose.yml`` on free ports with
``replica.lag.time.max.ms=10000``, and runs the fault rows of
``tests/harness/docker/chaos_docker.py`` one by one under an idempotent
acks=all producer (RF 3, ``min.insync.replicas=2``, unclean election off):
container kill, pause, graceful restart, a broker isolated from everything,
a leader cut from ZooKeeper only, a follower cut from its leader, a ZooKeeper
member isolated, a rolling restart — then the negative control (unclean
election after the ISR shrank to a leader that is then lost), which must
show loss.  Prints each row's figures and the results as a Markdown table;
exits 1 if a row failed (or the control caught nothing), 2 if Docker is missing.
Container logs are saved under ``--log-dir`` and the project is removed with
its volumes at the end.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.harness.docker.chaos_docker import ROWS, DockerChaos, render_table  # noqa: E402
from tests.harness.docker.compose import ComposeCluster, build_images, docker_available  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", default=",".join([*ROWS, "negative-control"]),
                    help="comma-separated rows to run, in order (default: all)")
    ap.add_argument("--hold", type=float, default=15.0, help="seconds each fault is held (default 15)")
    ap.add_argument("--rate", type=float, default=100.0, help="records per second produced (default 100)")
    ap.add_argument("--log-dir", type=Path, default=None, help="where container logs go (default: a temp dir)")
    ap.add_argument("--no-group", action="store_true", help="run without the consumer group")
    args = ap.parse_args(argv)
    rows = [r.strip() for r in args.rows.split(",") if r.strip()]
    unknown = [r for r in rows if r not in ROWS and r != "negative-control"]
    if unknown:
        ap.error(f"unknown rows {unknown}; known: {', '.join([*ROWS, 'negative-control'])}")
    if args.no_group and {"kill-group-coordinator", "kill-group-member"} & set(rows):
        ap.error("the kill-group-* rows need the group (drop --no-group or those rows)")
    why = docker_available()
    if why is not None:
        print(f"chaos-docker: {why}", file=sys.stderr)
        return 2
    log_dir = args.log_dir or Path(tempfile.mkdtemp(prefix="mafka-chaos-docker-"))
    print("chaos-docker: building images (quick when current)", flush=True)
    build_images()
    cluster = ComposeCluster(log_dir=log_dir, variables={"MAFKA_REPLICA_LAG_TIME_MAX_MS": "10000"})
    started = time.monotonic()
    try:
        cluster.up()
        print(f"chaos-docker: project {cluster.project} healthy in {time.monotonic() - started:.0f} s; "
              f"brokers {cluster.bootstrap}", flush=True)
        chaos = DockerChaos(cluster, hold=args.hold, rate=args.rate,
                            group_log_dir=None if args.no_group else log_dir / "group",
                            say=lambda s: print(f"[{time.monotonic() - started:6.1f}] {s}", flush=True))
        results = chaos.run(rows)
    finally:
        cluster.down()
    print()
    print(render_table(results))
    print(f"\nchaos-docker: {len(results)} rows in {time.monotonic() - started:.0f} s; container logs in {log_dir}")
    failed = [r.name for r in results if not r.ok]
    if chaos.group_report is not None:
        print(f"\nconsumer group: {'PASS' if chaos.group_report.ok else 'FAIL'}\n"
              + chaos.group_report.summary(chaos.t0))
        if not chaos.group_report.ok:
            failed.append("consumer group")
    if failed:
        print(f"chaos-docker: FAILED rows: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
