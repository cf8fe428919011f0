"""``mafka server-start server.properties [--override key=value …]`` (Kafka's kafka-server-start.sh).

Configuration: the properties file, then ``KAFKA_*`` environment variables
(the cp-kafka rule), then ``--override`` values.  SIGTERM and SIGINT stop
the broker gracefully (flush, checkpoints, clean-shutdown marker); a
second signal exits at once.
"""

from __future__ import annotations

import argparse
import logging
import os
import resource
import signal
import sys
from typing import Any, cast

from mafka.heap_freezer import HeapFreezer
from mafka.reactor_watchdog import ReactorWatchdog

__all__ = ["run", "add_parser"]

log = logging.getLogger("mafka.cli.server_start")


def add_parser(sub: Any) -> None:
    p = sub.add_parser("server-start", help="start a broker (kafka-server-start.sh)")
    p.add_argument("config", help="server.properties")
    p.add_argument("--override", action="append", default=[], metavar="KEY=VALUE", help="a config override")
    p.set_defaults(func=run)


def _controller_factory(server: Any) -> Any:
    from mafka.controller.controller import controller_for_server

    return controller_for_server(server)


def _raise_open_files_limit() -> None:
    """RLIMIT_NOFILE's soft limit up to the hard one: a broker may hold many segment files and sockets."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        if soft != hard:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
    except (ValueError, OSError) as exc:  # e.g. an unlimited hard limit above the kernel's nr_open
        log.warning("could not raise the open files limit from %d to %d: %s", soft, hard, exc)
    log.info("open files limit (RLIMIT_NOFILE): %d (hard limit %d)", soft, hard)


def run(args: argparse.Namespace) -> int:
    from twisted.internet import reactor as installed_reactor
    from twisted.internet.base import ReactorBase

    from mafka.broker.config import BrokerConfig
    from mafka.broker.server import KafkaServer
    from mafka.errors import ConfigError

    # Twisted types its global reactor by the interfaces every platform's reactor has; the one
    # installed (epoll on Linux) is a ReactorBase: callFromThread, run(installSignalHandlers=...).
    reactor = cast(ReactorBase, installed_reactor)
    logging.basicConfig(
        level=os.environ.get("MAFKA_LOG_LEVEL", "INFO"),
        format="[%(asctime)s] %(levelname)s %(name)s: %(message)s",
        stream=sys.stdout,
    )
    _raise_open_files_limit()
    try:
        config = BrokerConfig.from_file(args.config, env=os.environ, overrides=args.override)
    except (ConfigError, OSError) as exc:
        print(f"mafka server-start: {exc}", file=sys.stderr)
        return 2
    server = KafkaServer(config, reactor, controller_factory=_controller_factory)
    state = {"rc": 0, "stopping": False}

    def stop(signum: int, frame: Any) -> None:
        if state["stopping"]:
            os._exit(1)  # a second signal: give up at once
        state["stopping"] = True
        reactor.callFromThread(_shutdown)

    def _shutdown() -> None:
        d = server.shutdown()
        d.addErrback(lambda f: log.error("shutdown failed: %s", f.getTraceback()))
        d.addBoth(lambda _: reactor.stop())

    def _started(_: Any) -> None:
        log.info("[KafkaServer id=%d] started", config.broker_id)
        interval_ms = config.mafka_gc_full_collection_interval_ms
        if interval_ms > 0:
            server.heap_freezer = HeapFreezer(reactor, interval_ms / 1000)
            server.heap_freezer.start()

    def _failed(failure: Any) -> None:
        log.error("startup failed: %s", failure.getTraceback())
        state["rc"] = 1
        reactor.stop()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    reactor.callWhenRunning(ReactorWatchdog(reactor).start)  # logs what holds the reactor for seconds
    reactor.callWhenRunning(lambda: server.startup().addCallbacks(_started, _failed))
    reactor.run(installSignalHandlers=False)
    return state["rc"]
