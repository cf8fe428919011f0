"""An in-memory ZooKeeper under the tools' ``--zookeeper`` forms, for the CLI tools' unit tests.

:class:`FakeZk` holds a :class:`~mafka.coordination.memory_store.MemoryZooKeeper`
tree with live brokers (registered from their own session, as brokers do) and
topics; :meth:`FakeZk.install` replaces ``ZkSession`` in a tool's module with
one that opens a new :class:`~mafka.coordination.memory_store.MemoryStore`
session on that tree.  The real :class:`~mafka.coordination.kafka_zk.KafkaZkClient`
runs above it; MemoryStore's Deferreds fire at once, so ``call`` is synchronous.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest
from twisted.internet import defer
from twisted.python.failure import Failure

from mafka.coordination.kafka_zk import KafkaZkClient
from mafka.coordination.memory_store import MemoryStore, MemoryZooKeeper
from mafka.coordination.znodes import BrokerRegistration


def fired(d: Any) -> Any:
    """The result of a Deferred that has already fired (raises its failure)."""
    out: list[Any] = []
    defer.maybeDeferred(lambda: d).addBoth(out.append)
    assert out, "the Deferred has not fired"
    if isinstance(out[0], Failure):
        out[0].raiseException()
    return out[0]


class FakeSession:
    """What :class:`mafka.cli.zk_session.ZkSession` offers a tool: ``store``, ``client``, ``call``."""

    def __init__(self, fake: FakeZk, connect: str) -> None:
        self.fake = fake
        self.connect = connect
        self.store = MemoryStore(fake.tree)
        self.client = KafkaZkClient(self.store)

    def __enter__(self) -> FakeSession:
        if self.fake.unreachable:
            from mafka.coordination.store import ConnectionLossError

            raise ConnectionLossError("fake: no ZooKeeper")
        fired(self.store.start())
        return self

    def __exit__(self, *exc: object) -> None:
        fired(self.store.stop())

    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return fired(defer.maybeDeferred(fn, *args, **kwargs))


class FakeZk:
    """A ZooKeeper tree with Kafka's roots; ``brokers`` live in their own session."""

    def __init__(self) -> None:
        self.tree = MemoryZooKeeper()
        self._brokers_store = MemoryStore(self.tree)
        fired(self._brokers_store.start())
        self.zk = KafkaZkClient(self._brokers_store)
        fired(self.zk.create_persistent_roots())
        self.connects: list[str] = []
        self.unreachable = False

    def install(self, monkeypatch: pytest.MonkeyPatch, module: Any) -> None:
        def session(connect: str, timeout: float = 30.0) -> FakeSession:
            self.connects.append(connect)
            return FakeSession(self, connect)

        monkeypatch.setattr(module, "ZkSession", session)

    def add_broker(self, broker_id: int, rack: str | None = None) -> None:
        reg = BrokerRegistration(broker_id, {"PLAINTEXT": ("PLAINTEXT", f"b{broker_id}", 9091 + broker_id)},
                                 rack=rack)
        fired(self.zk.register_broker(reg))

    def add_topic(self, name: str, assignment: Mapping[int, Sequence[int]],
                  config: Mapping[str, str] | None = None) -> None:
        fired(self.zk.create_topic(name, assignment, config or {}))

    def get(self, path: str) -> bytes | None:
        return self.tree.dump("/").get(path)

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        return fired(defer.maybeDeferred(fn, *args))
