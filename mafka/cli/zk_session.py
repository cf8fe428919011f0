"""A ZooKeeper session for the tools' ``--zookeeper`` forms, driven from plain blocking code.

Kafka 2.8's tools still accepted ``--zookeeper host:port[/chroot]`` (deprecated)
and then worked on the znodes directly, as the brokers' own admin path does.
Mafka's ZooKeeper code (:class:`~mafka.coordination.kazoo_store.KazooStore`,
:class:`~mafka.coordination.kafka_zk.KafkaZkClient`) answers with Deferreds on
a reactor; a command-line tool is a short synchronous program.  This module
runs the reactor in a daemon thread for the life of one command and offers
:meth:`ZkSession.call`, which runs a Deferred-returning function there and
waits for its result.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from twisted.internet import threads

from mafka.coordination.kafka_zk import KafkaZkClient
from mafka.coordination.kazoo_store import KazooStore

__all__ = ["ZkSession"]


class ZkSession:
    """``with ZkSession("127.0.0.1:2181", timeout=30) as zk: zk.call(zk.client.get_topics)``.

    Args:
        connect: ZooKeeper's connect string (``host:port[,host:port][/chroot]``).
        timeout: Seconds to wait for the session, and for each operation.

    Raises (from ``__enter__``):
        mafka.coordination.store.ConnectionLossError: No session within *timeout*.
    """

    def __init__(self, connect: str, timeout: float = 30.0) -> None:
        from twisted.internet import reactor

        self._reactor: Any = reactor
        self._timeout = timeout
        self._thread = threading.Thread(
            target=self._reactor.run, kwargs={"installSignalHandlers": False},
            name="zk-reactor", daemon=True,
        )
        self.store = KazooStore(
            connect, session_timeout_ms=10_000, reactor=self._reactor,
            connect_timeout_s=timeout, operation_timeout_s=timeout,
        )
        self.client = KafkaZkClient(self.store)

    def __enter__(self) -> ZkSession:
        self._thread.start()
        try:
            self.call(self.store.start)
        except BaseException:
            self._stop_reactor()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.call(self.store.stop)
        finally:
            self._stop_reactor()

    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Runs *fn* on the reactor thread; returns its (Deferred's) result or raises its failure."""
        return threads.blockingCallFromThread(self._reactor, fn, *args, **kwargs)

    def _stop_reactor(self) -> None:
        if self._reactor.running:
            self._reactor.callFromThread(self._reactor.stop)
        self._thread.join(5.0)
