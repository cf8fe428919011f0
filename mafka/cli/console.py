"""``mafka console --bootstrap-server H:P``: the web console (brokers, topics, groups, messages, actions).

An operator's console in the manner of kafka-ui, AKHQ or Redpanda Console, shipped with
Mafka (:mod:`mafka.console`): server-rendered pages, served by Twisted Web, over one
:class:`~mafka.client.AdminClient` (so it works against Apache Kafka too).  On start it
prints one line, ``console: http://HOST:PORT/``, and serves until SIGINT or SIGTERM.

Flags:

* ``--bootstrap-server HOST:PORT[,…]`` (required);
* ``--command-config FILE``: the client properties, as the Kafka tools take them (TLS,
  SASL; Java's keys are translated).  With SASL, every user logs in with their own
  username and password; the file's own credentials, if any, are used only for the
  background lag sampling;
* ``--host`` (default 127.0.0.1) and ``--port`` (default 9021, Confluent Control
  Center's; 0 = any free port);
* ``--metrics [BROKER_ID=]URL`` (repeatable): brokers' Prometheus endpoints;
  ``--cluster-json PATH``: a ``mafka cluster up`` ``cluster.json`` whose
  ``brokers[i].metrics`` name them;
* ``--timeout SECONDS`` (default 10): the bound of every cluster call a page makes;
* ``--sample-interval SECONDS`` (default 5): how often lag and rates are sampled;
* ``--hanging-threshold-ms MS``: a transaction open longer than this is hanging
  (default: the brokers' ``transaction.max.timeout.ms``).

Exit status 1 (with a line on stderr) for bad flags, an unreadable ``--command-config``
or ``--cluster-json``, or an address it cannot listen on; 0 after a signal.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Any

__all__ = ["add_parser", "run", "DEFAULT_PORT"]

#: Confluent Control Center's port
DEFAULT_PORT = 9021
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def add_parser(sub: Any) -> None:
    p = sub.add_parser("console", help="serve the web console (brokers, topics, groups, messages, actions)")
    p.add_argument("--bootstrap-server", metavar="HOST:PORT", required=True,
                   help="REQUIRED: The server(s) to connect to.")
    p.add_argument("--command-config", metavar="FILE",
                   help="A property file containing configs to be passed to Admin Client (TLS, SASL).")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT,
                   help=f"port to listen on (default {DEFAULT_PORT}; 0: any free port)")
    p.add_argument("--metrics", action="append", default=[], metavar="[BROKER_ID=]URL",
                   help="a broker's Prometheus endpoint, e.g. 1=http://127.0.0.1:19901/metrics (repeatable)")
    p.add_argument("--cluster-json", metavar="PATH",
                   help="a `mafka cluster up` cluster.json: its brokers' metrics endpoints")
    p.add_argument("--zookeeper", metavar="HOST:PORT[/chroot]",
                   help="Mafka: read the rebalancer's plan and progress from this ZooKeeper (the Rebalancer page)")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds any one cluster call may take (default 10)")
    p.add_argument("--sample-interval", type=float, default=5.0,
                   help="seconds between lag and rate samples (default 5)")
    p.add_argument("--hanging-threshold-ms", type=int, default=None,
                   help="a transaction open longer is hanging (default: transaction.max.timeout.ms)")
    p.set_defaults(func=run)


def _fail(message: str) -> int:
    print(f"mafka console: {message}", file=sys.stderr)
    return 1


def run(args: argparse.Namespace) -> int:
    from mafka.cli.clients import admin_config
    from mafka.console.metrics import Target, parse_target, targets_from_cluster_json
    from mafka.console.rebalancer_plan import PlanReader
    from mafka.console.sampler import Sampler
    from mafka.console.server import serve
    from mafka.console.service import Console, needs_login, open_backend
    from mafka.console.web import create_app

    logging.basicConfig(level=os.environ.get("MAFKA_LOG_LEVEL", "WARNING"),
                        format="[%(asctime)s] %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    if args.timeout <= 0 or args.sample_interval <= 0:
        return _fail("--timeout and --sample-interval must be positive")
    if not 0 <= args.port <= 65535:
        return _fail(f"--port {args.port} is not a port number")
    try:
        targets: list[Target] = [parse_target(m) for m in args.metrics]
        if args.cluster_json:
            known = {t.url for t in targets}
            targets += [t for t in targets_from_cluster_json(args.cluster_json) if t.url not in known]
    except OSError as exc:
        return _fail(f"cannot read --cluster-json {args.cluster_json}: {exc.strerror or exc}")
    except ValueError as exc:
        return _fail(str(exc))
    probe = min(3.0, args.timeout)
    try:
        settings = admin_config(args.bootstrap_server, "mafka-console", args.timeout, args.command_config)
        plans = PlanReader(args.zookeeper, args.timeout) if args.zookeeper else None
        if needs_login(settings):
            service = None
            if settings.get("sasl.username") and settings.get("sasl.password"):
                service = open_backend(settings, args.timeout, probe)
            sampler = Sampler(service.reader if service is not None else None, targets, args.sample_interval)

            def login_with(username: str, password: str) -> Any:
                return open_backend({**settings, "sasl.username": username, "sasl.password": password},
                                    args.timeout, probe, sampler, username)

            console = Console(sampler=sampler, login_with=login_with, hanging_after_ms=args.hanging_threshold_ms,
                              plans=plans)
            extra_close = service.close if service is not None else (lambda: None)
        else:
            sampler = Sampler(None, targets, args.sample_interval)
            shared = open_backend(settings, args.timeout, probe, sampler)
            sampler.reader = shared.reader
            console = Console(shared, sampler, hanging_after_ms=args.hanging_threshold_ms, plans=plans)
            extra_close = lambda: None  # noqa: E731
    except ValueError as exc:  # ConfigError: a bad --command-config or bootstrap list
        return _fail(f"org.apache.kafka.common.config.ConfigException: {exc}")

    trusted = ["127.0.0.1", "localhost", "::1", "[::1]"] if args.host in _LOOPBACK else None
    app = create_app(console, trusted_hosts=trusted)
    shown_host = f"[{args.host}]" if ":" in args.host else args.host

    def listening(host: str, port: int) -> None:
        print(f"console: http://{shown_host}:{port}/", flush=True)
        sampler.start()

    def stopped() -> None:
        console.close()
        extra_close()

    from twisted.internet.error import CannotListenError

    try:
        serve(app, args.host, args.port, listening, stopped)
    except CannotListenError as exc:
        stopped()
        return _fail(f"cannot listen on {shown_host}:{args.port}: {exc.socketError}")
    return 0
