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
* ``cluster_factory`` (session): the :class:`~tests.harness.cluster.ClusterFactory`
  that starts every ``mafka cluster up`` cluster of this pytest process, and
  stops what is still running at the end of the session.
* ``cluster`` (module): the module's cluster, as its module-level ``CLUSTER =
  ClusterSpec(...)`` says: with ``shared=True`` the shared cluster for that spec
  (modules with equal specs run one after another, see
  ``pytest_collection_modifyitems``; it is health-checked on every loan and
  replaced if broken, and stopped after the last of them), with ``shared=False``
  one of its own, stopped after the module.  A module that needs more on its
  cluster overrides ``cluster`` with a module fixture requesting this one, or
  starts its own with ``cluster_factory.own(...)``.

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
from tests.harness.cluster import ClusterFactory, ClusterSpec, LocalCluster

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


@pytest.fixture(scope="session")
def cluster_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterFactory]:
    """Starts the session's clusters; stops every one still running when the session ends."""
    factory = ClusterFactory(tmp_path_factory)
    try:
        yield factory
    finally:
        factory.close()


def cluster_spec(module: object) -> ClusterSpec | None:
    spec = getattr(module, "CLUSTER", None)
    return spec if isinstance(spec, ClusterSpec) else None


def _short(module_name: str) -> str:
    return module_name.rsplit(".", 1)[-1]


@pytest.fixture(scope="module")
def cluster(request: pytest.FixtureRequest, cluster_factory: ClusterFactory) -> Iterator[LocalCluster]:
    """The module's cluster, as its ``CLUSTER = ClusterSpec(...)`` says (shared, or its own)."""
    module = request.module
    spec = cluster_spec(module)
    if spec is None:
        raise pytest.UsageError(f"{module.__name__} uses the `cluster` fixture but declares no "
                                "`CLUSTER = ClusterSpec(...)` (see tests/integration/README.md)")
    if not spec.shared:
        with cluster_factory.own(spec, _short(module.__name__)) as c:
            yield c
        return
    c = cluster_factory.lend(spec, _short(module.__name__))
    try:
        yield c
    finally:
        later = request.session.items[_last_index(request.session.items, module) + 1:]
        cluster_factory.give_back(spec, last_user=not any(_shares(item, spec) for item in later))


def _last_index(items: list[pytest.Item], module: object) -> int:
    return max((i for i, item in enumerate(items) if getattr(item, "module", None) is module), default=len(items))


def _shares(item: pytest.Item, spec: ClusterSpec) -> bool:
    other = cluster_spec(getattr(item, "module", None))
    return other is not None and other.shared and other.key == spec.key and "cluster" in getattr(item, "fixturenames", ())


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Modules that share a cluster run one after another, from where the first of them was, so
    each shared cluster starts once and stops before the modules after them run.  The
    docker-compose tests run last: ``make test`` starts the image build in the background, and on a
    fresh machine it then overlaps every other test."""
    groups: dict[object, int] = {}

    def group(item: pytest.Item) -> tuple[bool, int]:
        module = getattr(item, "module", None)
        spec = cluster_spec(module)
        key = ("shared", spec.key) if spec is not None and spec.shared else ("module", module or item.nodeid)
        return "/integration/docker/" in str(item.path), groups.setdefault(key, len(groups))

    items.sort(key=group)
