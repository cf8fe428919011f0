"""Integration fixtures: a real ZooKeeper (Java) for the whole session.

* ``zookeeper`` (session): one standalone server started with
  :class:`~mafka.coordination.zookeeper.ZooKeeperServer` on a free loopback
  port, tickTime 500 ms, data under pytest's tmp dir; stopped at the end.
  It needs Debian's ``zookeeper`` package and Java (``make test`` installs them
  through ``scripts/install-system-deps.sh``); without them these tests error,
  they do not skip.
* ``zk_base`` (function): a fresh, empty base path (``/it/<test>-<n>``) on that
  server, deleted afterwards, so tests share the server without seeing each
  other's znodes.

How the reactor is used: Twisted's global reactor runs in a background thread
for the whole session (``reactor_thread`` from ``tests/conftest.py``); tests
run in the main thread and call into it with ``in_reactor(fn, …)``, which runs
``fn`` on the reactor thread and waits (with a timeout) for its Deferred.  So
store code runs exactly as in the broker — on the reactor thread, fed by kazoo's
threads — and tests can block and poll without freezing it.  Every wait has a
timeout.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

import pytest

from mafka.coordination.zookeeper import ZooKeeperServer, free_loopback_ports
from tests.conftest import in_reactor

TICK_TIME_MS = 500
_counter = itertools.count(1)


@pytest.fixture(scope="session")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    """A running standalone ZooKeeper (``.connect_string``), for the whole session."""
    server = ZooKeeperServer(
        tmp_path_factory.mktemp("zookeeper"), client_port=free_loopback_ports(1)[0], tick_time_ms=TICK_TIME_MS
    )
    server.start(timeout=30)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def zk_base(zookeeper: ZooKeeperServer, reactor_thread: object, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh empty znode path for this test; removed (recursively) afterwards."""
    from mafka.coordination.kazoo_store import KazooStore

    name = re.sub(r"[^A-Za-z0-9_-]", "_", request.node.name)[:60]
    base = f"/it/{name}-{next(_counter)}"
    store = KazooStore(zookeeper.connect_string, session_timeout_ms=6000)
    in_reactor(store.start, timeout=15)
    try:
        in_reactor(store.ensure_path, base, timeout=10)
        yield base
        in_reactor(store.delete, base, recursive=True, timeout=15)
    finally:
        in_reactor(store.stop, timeout=15)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The docker-compose tests run last: ``make test`` starts the image build in the
    background, and on a fresh machine it then overlaps every other test."""
    items.sort(key=lambda item: "/integration/docker/" in str(item.path))
