"""``mafka broker-health [--bootstrap-server HOST:PORT] [--broker-id N]``: is this broker ready?

The health check of the ``docker/`` broker containers.  Exit status 0 when
the broker answers a Metadata request that lists itself among the live
brokers and names a controller — i.e. it is registered in ZooKeeper and has
received the controller's metadata — else 1, with the reason on stderr.  The
broker id defaults to ``$KAFKA_BROKER_ID`` (the container's), the address to
``localhost:9092``.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    p = sub.add_parser("broker-health", help="exit 0 once a broker is registered and serves Metadata")
    p.add_argument("--bootstrap-server", default="localhost:9092", help="the broker to ask (default localhost:9092)")
    p.add_argument("--broker-id", type=int, default=None, help="its id (default $KAFKA_BROKER_ID)")
    p.add_argument("--timeout", type=float, default=3.0, help="seconds to wait for the answer (default 3)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from mafka.cli.cluster import metadata_snapshot
    from mafka.client.kernel import parse_bootstrap

    broker_id = args.broker_id
    if broker_id is None and os.environ.get("KAFKA_BROKER_ID", "").strip().isdigit():
        broker_id = int(os.environ["KAFKA_BROKER_ID"])
    try:
        host, port = parse_bootstrap(args.bootstrap_server)[0]
    except (ValueError, IndexError) as exc:
        print(f"mafka broker-health: bad --bootstrap-server {args.bootstrap_server!r}: {exc}", file=sys.stderr)
        return 2
    snapshot = metadata_snapshot(host, port, timeout=args.timeout)
    if snapshot is None:
        print(f"unhealthy: no Metadata answer from {host}:{port}", file=sys.stderr)
        return 1
    brokers, controller = snapshot
    if broker_id is not None and broker_id not in brokers:
        print(f"unhealthy: broker {broker_id} is not among the live brokers {brokers} yet", file=sys.stderr)
        return 1
    if controller < 0:
        print("unhealthy: no controller known yet", file=sys.stderr)
        return 1
    print(f"healthy: brokers {brokers}, controller {controller}")
    return 0
