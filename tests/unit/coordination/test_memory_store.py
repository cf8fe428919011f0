"""MemoryStore (mafka.coordination.memory_store): ZooKeeper's semantics, in memory.

The tests named ``test_store_*`` take a harness ``h`` and only use the
ClusterStore protocol, so they are a behaviour suite for any store:
``tests/integration/test_kazoo_store.py`` runs the same functions against
KazooStore on a real ZooKeeper.  Their rules, so they hold on a real server:

* every store call goes through ``h.call`` (runs on the reactor thread, waits for
  the Deferred, raises its failure);
* paths go through ``h.p`` (a per-test base path on a shared server);
* watch assertions wait with ``h.wait_for`` and tolerate spurious callbacks
  (persistent watches may fire more than once per change); exact counts are in
  the memory-only tests below the suite.

Here ``h`` runs MemoryStore twice: synchronous Deferreds, and Deferreds/callbacks
delivered through ``twisted.internet.task.Clock``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from twisted.internet import defer
from twisted.internet.task import Clock
from twisted.python.failure import Failure

from mafka.coordination.memory_store import MemoryStore, MemoryZooKeeper
from mafka.coordination.store import (
    BadVersionError,
    CheckOp,
    ConnectionLossError,
    CreateOp,
    DeleteOp,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    SessionExpiredError,
    SetOp,
    Stat,
    StoreError,
)

# --------------------------------------------------------------------------- harness


class Recorder:
    """A watch callback / SessionListener that records what happened."""

    def __init__(self) -> None:
        self.calls = 0
        self.events: list[str] = []

    def __call__(self) -> None:
        self.calls += 1

    def session_lost(self) -> None:
        self.events.append("lost")

    def session_expired(self) -> None:
        self.events.append("expired")

    def session_established(self) -> None:
        self.events.append("established")


class MemoryHarness:
    base = ""

    def __init__(self, clock: Clock | None) -> None:
        self.tree = MemoryZooKeeper()
        self.clock = clock
        self.stores: list[MemoryStore] = []
        self.store = self.new_store()

    def p(self, path: str) -> str:
        return self.base + path

    def new_store(self, listener: Any = None) -> MemoryStore:
        store = MemoryStore(self.tree, clock=self.clock)
        if listener is not None:
            store.add_session_listener(listener)
        self.call(store.start)
        self.stores.append(store)
        return store

    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        d = defer.maybeDeferred(fn, *args, **kwargs)
        self.settle()
        out: list[Any] = []
        d.addBoth(out.append)
        assert out, f"{fn} did not fire"
        if isinstance(out[0], Failure):
            out[0].raiseException()
        return out[0]

    def settle(self) -> None:
        if self.clock is not None:
            self.clock.advance(0)

    def wait_for(self, predicate: Callable[[], bool], what: str = "condition") -> None:
        self.settle()
        assert predicate(), f"{what} did not happen"

    def expire(self, store: MemoryStore) -> None:
        store.expire_session()
        self.settle()

    def close(self) -> None:
        for store in self.stores:
            self.call(store.stop)


@pytest.fixture(params=["sync", "clock"])
def h(request: pytest.FixtureRequest) -> Any:
    harness = MemoryHarness(Clock() if request.param == "clock" else None)
    yield harness
    harness.close()


# =========================================================================== the behaviour suite


def test_store_create_get_exists(h: Any) -> None:
    path = h.p("/a")
    assert h.call(h.store.exists, path) is None
    assert h.call(h.store.create, path, b"hello") == path
    data, stat = h.call(h.store.get, path)
    assert data == b"hello"
    assert isinstance(stat, Stat)
    assert stat.version == 0
    assert stat.czxid > 0
    assert stat.mzxid == stat.czxid
    assert stat.ephemeral_owner == 0
    assert stat.num_children == 0
    assert stat.ctime > 0
    assert h.call(h.store.exists, path) == stat
    h.call(h.store.create, h.p("/a/b"))
    assert h.call(h.store.get, path)[1].num_children == 1
    assert h.call(h.store.get, h.p("/a/b"))[0] == b""


def test_store_create_errors(h: Any) -> None:
    h.call(h.store.create, h.p("/a"), b"1")
    with pytest.raises(NodeExistsError):
        h.call(h.store.create, h.p("/a"), b"2")
    assert h.call(h.store.get, h.p("/a"))[0] == b"1"
    with pytest.raises(NoNodeError):
        h.call(h.store.create, h.p("/missing/child"))
    with pytest.raises(NoNodeError):
        h.call(h.store.get, h.p("/missing"))
    with pytest.raises(NoNodeError):
        h.call(h.store.get_children, h.p("/missing"))
    with pytest.raises(ValueError):
        h.call(h.store.get, "relative/path")
    with pytest.raises(TypeError):
        h.call(h.store.create, h.p("/s"), "not bytes")
    assert h.call(h.store.exists, h.p("/s")) is None


def test_store_makepath_and_ensure_path(h: Any) -> None:
    assert h.call(h.store.create, h.p("/x/y/z"), b"d", makepath=True) == h.p("/x/y/z")
    assert h.call(h.store.get, h.p("/x/y/z"))[0] == b"d"
    assert h.call(h.store.get, h.p("/x/y"))[0] == b""
    h.call(h.store.ensure_path, h.p("/x/y/z"))  # exists: no error, data untouched
    assert h.call(h.store.get, h.p("/x/y/z"))[0] == b"d"
    h.call(h.store.ensure_path, h.p("/e/f/g"))
    assert h.call(h.store.get_children, h.p("/e/f")) == ["g"]
    with pytest.raises(NodeExistsError):
        h.call(h.store.create, h.p("/x/y/z"), makepath=True)


def test_store_set_versions_and_zxids(h: Any) -> None:
    path = h.p("/v")
    h.call(h.store.create, path, b"0")
    created = h.call(h.store.get, path)[1]
    s1 = h.call(h.store.set, path, b"1")
    assert s1.version == 1
    assert s1.czxid == created.czxid
    assert s1.mzxid > created.mzxid
    s2 = h.call(h.store.set, path, b"2", 1)
    assert s2.version == 2 and s2.mzxid > s1.mzxid
    with pytest.raises(BadVersionError):
        h.call(h.store.set, path, b"stale", 1)
    data, stat = h.call(h.store.get, path)
    assert (data, stat.version) == (b"2", 2)
    with pytest.raises(NoNodeError):
        h.call(h.store.set, h.p("/nope"), b"x")


def test_store_czxid_grows_with_each_creation(h: Any) -> None:
    czxids = []
    for i in range(4):
        h.call(h.store.create, h.p(f"/n{i}"))
        czxids.append(h.call(h.store.get, h.p(f"/n{i}"))[1].czxid)
    assert czxids == sorted(czxids) and len(set(czxids)) == 4
    # Re-creating a deleted node gives it a new, larger czxid (Kafka's broker epoch).
    h.call(h.store.delete, h.p("/n0"))
    h.call(h.store.create, h.p("/n0"))
    assert h.call(h.store.get, h.p("/n0"))[1].czxid > czxids[-1]


def test_store_delete(h: Any) -> None:
    h.call(h.store.create, h.p("/d"))
    h.call(h.store.create, h.p("/d/c"))
    with pytest.raises(NotEmptyError):
        h.call(h.store.delete, h.p("/d"))
    h.call(h.store.set, h.p("/d/c"), b"x")
    with pytest.raises(BadVersionError):
        h.call(h.store.delete, h.p("/d/c"), 0)
    h.call(h.store.delete, h.p("/d/c"), 1)
    assert h.call(h.store.exists, h.p("/d/c")) is None
    h.call(h.store.delete, h.p("/d"))
    assert h.call(h.store.exists, h.p("/d")) is None
    with pytest.raises(NoNodeError):
        h.call(h.store.delete, h.p("/d"))


def test_store_delete_recursive(h: Any) -> None:
    for path in ("/r/a/1", "/r/a/2", "/r/b"):
        h.call(h.store.create, h.p(path), b"x", makepath=True)
    h.call(h.store.create, h.p("/keep"))
    h.call(h.store.delete, h.p("/r"), recursive=True)
    assert h.call(h.store.exists, h.p("/r")) is None
    assert h.call(h.store.exists, h.p("/keep")) is not None
    with pytest.raises(NoNodeError):
        h.call(h.store.delete, h.p("/r"), recursive=True)


def test_store_get_children(h: Any) -> None:
    h.call(h.store.create, h.p("/p"))
    assert h.call(h.store.get_children, h.p("/p")) == []
    for name in ("c", "a", "b"):
        h.call(h.store.create, h.p(f"/p/{name}"))
    h.call(h.store.create, h.p("/p/a/deep"))
    assert sorted(h.call(h.store.get_children, h.p("/p"))) == ["a", "b", "c"]


def test_store_sequential_names(h: Any) -> None:
    h.call(h.store.create, h.p("/q"))
    first = h.call(h.store.create, h.p("/q/item-"), b"1", sequential=True)
    second = h.call(h.store.create, h.p("/q/item-"), b"2", sequential=True)
    h.call(h.store.create, h.p("/q/plain"))  # also bumps the parent's cversion
    third = h.call(h.store.create, h.p("/q/other-"), sequential=True)
    assert first == h.p("/q/item-0000000000")
    assert second == h.p("/q/item-0000000001")
    assert third == h.p("/q/other-0000000003")
    assert all(re.fullmatch(r".*-\d{10}", p) for p in (first, second, third))
    assert h.call(h.store.get, second)[0] == b"2"
    bare = h.call(h.store.create, h.p("/q/"), sequential=True)
    assert bare == h.p("/q/0000000004")


def test_store_ephemeral_nodes_are_owned_by_the_session(h: Any) -> None:
    listener = Recorder()
    owner = h.new_store(listener)
    other = h.store
    first_session = owner.session_id
    assert first_session != 0 and first_session != other.session_id
    h.call(other.create, h.p("/brokers/ids"), makepath=True)
    path = h.call(owner.create, h.p("/brokers/ids/1"), b"{}", ephemeral=True)
    h.call(owner.create, h.p("/persistent"), b"p")
    stat = h.call(other.get, path)[1]
    assert stat.ephemeral_owner == first_session
    with pytest.raises(StoreError):  # ephemerals cannot have children
        h.call(owner.create, h.p("/brokers/ids/1/child"))
    watch = Recorder()
    handle = h.call(other.watch_children, h.p("/brokers/ids"), watch)

    h.expire(owner)

    # (A real client may also see the connection drop first: "lost".)
    h.wait_for(
        lambda: [e for e in listener.events if e != "lost"] == ["established", "expired", "established"],
        "expiry events",
    )
    h.wait_for(lambda: watch.calls >= 1, "children watch after ephemeral deletion")
    assert h.call(other.exists, path) is None
    assert h.call(other.get, h.p("/persistent"))[0] == b"p"
    assert owner.session_id not in (0, first_session)
    # The new session works and owns new ephemerals.
    again = h.call(owner.create, path, b"{}", ephemeral=True)
    assert h.call(other.get, again)[1].ephemeral_owner == owner.session_id
    handle.cancel()


def test_store_stop_deletes_ephemerals(h: Any) -> None:
    owner = h.new_store()
    path = h.call(owner.create, h.p("/eph"), ephemeral=True)
    seq = h.call(owner.create, h.p("/eph-seq-"), ephemeral=True, sequential=True)
    assert h.call(h.store.exists, seq) is not None
    h.call(owner.stop)
    assert h.call(h.store.exists, path) is None
    assert h.call(h.store.exists, seq) is None


def test_store_transaction_commits_all(h: Any) -> None:
    h.call(h.store.create, h.p("/t"), b"0")
    h.call(h.store.create, h.p("/t/gone"))
    results = h.call(
        h.store.transaction,
        [
            CheckOp(h.p("/t"), 0),
            CreateOp(h.p("/t/new"), b"n"),
            CreateOp(h.p("/t/new/child"), b"c"),  # sees the create before it
            CreateOp(h.p("/t/seq-"), sequential=True),
            SetOp(h.p("/t"), b"1", 0),
            DeleteOp(h.p("/t/gone")),
        ],
    )
    assert results[0] is True
    assert results[1] == h.p("/t/new")
    assert results[2] == h.p("/t/new/child")
    assert re.fullmatch(re.escape(h.p("/t/seq-")) + r"\d{10}", results[3])
    assert isinstance(results[4], Stat) and results[4].version == 1
    assert results[5] is True
    assert h.call(h.store.get, h.p("/t"))[0] == b"1"
    assert h.call(h.store.get, h.p("/t/new/child"))[0] == b"c"
    assert h.call(h.store.exists, h.p("/t/gone")) is None
    # All ops of one transaction share one zxid.
    assert h.call(h.store.get, h.p("/t/new"))[1].czxid == results[4].mzxid


@pytest.mark.parametrize(
    "bad_op, error",
    [
        (CheckOp("/t", 5), BadVersionError),
        (CheckOp("/absent", -1), NoNodeError),
        (CreateOp("/t"), NodeExistsError),
        (CreateOp("/absent/child"), NoNodeError),
        (SetOp("/t", b"x", 9), BadVersionError),
        (SetOp("/absent", b"x"), NoNodeError),
        (DeleteOp("/t"), NotEmptyError),
        (DeleteOp("/t/c", 3), BadVersionError),
        (DeleteOp("/absent"), NoNodeError),
    ],
)
def test_store_transaction_is_all_or_nothing(h: Any, bad_op: Any, error: type[Exception]) -> None:
    h.call(h.store.create, h.p("/t"), b"orig")
    h.call(h.store.create, h.p("/t/c"))
    before = {p: h.call(h.store.get, h.p(p)) for p in ("/t", "/t/c")}
    bad = type(bad_op)(**{**_fields(bad_op), "path": h.p(bad_op.path)})
    with pytest.raises(error):
        h.call(
            h.store.transaction,
            [
                CreateOp(h.p("/t/created")),
                SetOp(h.p("/t"), b"changed"),
                DeleteOp(h.p("/t/c")),
                CreateOp(h.p("/t/c")),
                bad,
                CreateOp(h.p("/t/after")),
            ],
        )
    assert {p: h.call(h.store.get, h.p(p)) for p in ("/t", "/t/c")} == before
    assert h.call(h.store.exists, h.p("/t/created")) is None
    assert h.call(h.store.exists, h.p("/t/after")) is None
    assert sorted(h.call(h.store.get_children, h.p("/t"))) == ["c"]


def _fields(op: Any) -> dict[str, Any]:
    return {name: getattr(op, name) for name in op.__dataclass_fields__}


def test_store_watch_children_is_persistent_and_cancellable(h: Any) -> None:
    h.call(h.store.create, h.p("/w"))
    watch, control = Recorder(), Recorder()
    handle = h.call(h.store.watch_children, h.p("/w"), watch)
    for i in range(3):
        before = watch.calls
        h.call(h.store.create, h.p(f"/w/c{i}"))
        h.wait_for(lambda b=before: watch.calls > b, f"children watch after create #{i}")
    before = watch.calls
    h.call(h.store.delete, h.p("/w/c0"))
    h.wait_for(lambda: watch.calls > before, "children watch after delete")
    # Another session's change is seen too.
    other = h.new_store()
    before = watch.calls
    h.call(other.create, h.p("/w/from-other"), ephemeral=True)
    h.wait_for(lambda: watch.calls > before, "children watch after another session's create")

    h.call(handle.cancel)
    h.call(h.store.watch_children, h.p("/w"), control)
    stopped_at = watch.calls
    h.call(h.store.create, h.p("/w/after-cancel"))
    h.wait_for(lambda: control.calls >= 1, "control watch")
    h.settle()
    assert watch.calls == stopped_at


def test_store_watch_children_of_missing_node(h: Any) -> None:
    watch = Recorder()
    h.call(h.store.watch_children, h.p("/later"), watch)
    h.call(h.store.create, h.p("/later"))
    h.wait_for(lambda: watch.calls >= 1, "children watch when the node appears")
    before = watch.calls
    h.call(h.store.create, h.p("/later/kid"))
    h.wait_for(lambda: watch.calls > before, "children watch after the node appeared")


def test_store_watch_data_is_persistent_and_cancellable(h: Any) -> None:
    watch, control = Recorder(), Recorder()
    path = h.p("/wd")
    handle = h.call(h.store.watch_data, path, watch)
    h.call(h.store.create, path, b"1")
    h.wait_for(lambda: watch.calls >= 1, "data watch on create")
    for i in range(3):
        before = watch.calls
        h.call(h.store.set, path, b"v%d" % i)
        h.wait_for(lambda b=before: watch.calls > b, f"data watch on set #{i}")
    before = watch.calls
    h.call(h.store.delete, path)
    h.wait_for(lambda: watch.calls > before, "data watch on delete")
    before = watch.calls
    h.call(h.store.create, path, b"again")
    h.wait_for(lambda: watch.calls > before, "data watch on re-create")

    h.call(handle.cancel)
    h.call(h.store.watch_data, path, control)
    stopped_at = watch.calls
    h.call(h.store.set, path, b"after-cancel")
    h.wait_for(lambda: control.calls >= 1, "control watch")
    h.settle()
    assert watch.calls == stopped_at


def test_store_watch_callback_can_read_the_new_state(h: Any) -> None:
    h.call(h.store.create, h.p("/seen"))
    seen: list[list[str]] = []

    def on_change() -> None:
        h.store.get_children(h.p("/seen")).addCallback(lambda kids: seen.append(sorted(kids)))

    h.call(h.store.watch_children, h.p("/seen"), on_change)
    h.call(h.store.create, h.p("/seen/one"))
    h.wait_for(lambda: ["one"] in seen, "callback read the new children")


def test_store_get_many_reads_every_path_in_order(h: Any) -> None:
    h.call(h.store.create, h.p("/gm"), b"parent")
    h.call(h.store.create, h.p("/gm/a"), b"1")
    h.call(h.store.create, h.p("/gm/b"))
    h.call(h.store.set, h.p("/gm/a"), b"2")
    paths = [h.p("/gm/a"), h.p("/gm/absent"), h.p("/gm/b"), h.p("/gm/a"), h.p("/gm")]
    got = h.call(h.store.get_many, paths)
    assert got == [h.call(h.store.get, p) if p != h.p("/gm/absent") else None for p in paths]
    assert got[0][0] == b"2" and got[0][1].version == 1
    assert got[2][0] == b""
    assert got[4][1].num_children == 2
    assert h.call(h.store.get_many, []) == []
    with pytest.raises(ValueError):
        h.call(h.store.get_many, [h.p("/gm/a"), "relative"])


def test_store_get_many_pipelines_a_big_batch(h: Any) -> None:
    h.call(h.store.create, h.p("/big"))
    created = h.call(h.store.transactions, [[CreateOp(h.p(f"/big/n{i}"), b"%d" % i)] for i in range(500)])
    assert created == [[h.p(f"/big/n{i}")] for i in range(500)]
    paths = [h.p(f"/big/n{i}") for i in reversed(range(500))] + [h.p("/big/none")]
    got = h.call(h.store.get_many, paths)
    assert [g[0] if g is not None else None for g in got] == [b"%d" % i for i in reversed(range(500))] + [None]


def test_store_transactions_apply_in_order_and_independently(h: Any) -> None:
    tx = h.p("/tx")
    h.call(h.store.create, tx, b"0")
    outcomes = h.call(
        h.store.transactions,
        [
            [SetOp(tx, b"1", 0)],
            [SetOp(tx, b"stale", 0)],  # the set before it moved the version on
            [CreateOp(tx + "/a")],
            [CreateOp(tx + "/a")],
            [CreateOp(tx + "/a/b", b"b"), SetOp(tx, b"2", 1)],  # sees the create two transactions back
            [CheckOp(tx, 2), CreateOp(tx + "/c")],
            [CheckOp(h.p("/absent"), -1), CreateOp(tx + "/never")],
            [CheckOp(tx, 7), SetOp(tx, b"never")],
            [DeleteOp(tx + "/a/b", 0)],
            [DeleteOp(tx + "/a/b")],
        ],
    )
    assert isinstance(outcomes[0], list) and isinstance(outcomes[0][0], Stat) and outcomes[0][0].version == 1
    assert isinstance(outcomes[1], BadVersionError)
    assert outcomes[2] == [tx + "/a"]
    assert isinstance(outcomes[3], NodeExistsError)
    assert outcomes[4][0] == tx + "/a/b" and outcomes[4][1].version == 2
    assert outcomes[5] == [True, tx + "/c"]
    assert isinstance(outcomes[6], NoNodeError)
    assert isinstance(outcomes[7], BadVersionError)
    assert outcomes[8] == [True]
    assert isinstance(outcomes[9], NoNodeError)
    data, stat = h.call(h.store.get, tx)
    assert (data, stat.version) == (b"2", 2)
    assert h.call(h.store.get_children, tx) == ["a", "c"]
    assert h.call(h.store.exists, tx + "/never") is None
    assert h.call(h.store.transactions, []) == []


def test_store_transactions_refuse_an_invalid_op_before_applying_any(h: Any) -> None:
    h.call(h.store.create, h.p("/inv"))
    with pytest.raises(TypeError):
        h.call(
            h.store.transactions,
            [[CreateOp(h.p("/inv/first"))], [CreateOp(h.p("/inv/x"), "text")]],  # type: ignore[arg-type]
        )
    with pytest.raises(TypeError):
        h.call(h.store.transactions, [[CreateOp(h.p("/inv/first"))], ["not an op"]])
    with pytest.raises(ValueError):
        h.call(h.store.transactions, [[CreateOp(h.p("/inv/first"))], [SetOp("relative", b"")]])
    assert h.call(h.store.exists, h.p("/inv/first")) is None


# =========================================================================== memory-only


@pytest.fixture
def tree() -> MemoryZooKeeper:
    return MemoryZooKeeper(time_ms=lambda: 1_000)


def _started(tree: MemoryZooKeeper, **kwargs: Any) -> MemoryStore:
    store = MemoryStore(tree, **kwargs)
    store.start()
    return store


def _result(d: defer.Deferred) -> Any:
    out: list[Any] = []
    d.addBoth(out.append)
    assert out, "not fired"
    if isinstance(out[0], Failure):
        out[0].raiseException()
    return out[0]


def test_root_and_zookeeper_nodes_exist(tree: MemoryZooKeeper) -> None:
    store = _started(tree)
    assert _result(store.get_children("/")) == ["zookeeper"]
    assert _result(store.get("/"))[1].czxid == 0
    with pytest.raises(NodeExistsError):
        _result(store.create("/"))
    with pytest.raises(StoreError):
        _result(store.delete("/"))


def test_zxid_is_shared_and_monotonic_across_sessions(tree: MemoryZooKeeper) -> None:
    a, b = _started(tree), _started(tree)
    _result(a.create("/a"))
    _result(b.create("/b"))
    za = _result(a.get("/a"))[1].czxid
    zb = _result(a.get("/b"))[1].czxid
    assert zb == za + 1 == tree.last_zxid
    assert _result(a.get("/a"))[1].ctime == 1_000
    # A failed operation leaves the tree as it was.
    with pytest.raises(NodeExistsError):
        _result(a.create("/a"))
    assert tree.dump("/a") == {"/a": b""}


def test_failed_makepath_creates_no_parents(tree: MemoryZooKeeper) -> None:
    store = _started(tree)
    _result(store.create("/e", ephemeral=True))
    with pytest.raises(StoreError):
        _result(store.create("/e/x/y", makepath=True))
    assert tree.dump("/e") == {"/e": b""}


def test_watches_fire_exactly_once_per_relevant_change(tree: MemoryZooKeeper) -> None:
    store = _started(tree)
    _result(store.create("/w"))
    children, data, child_data = Recorder(), Recorder(), Recorder()
    store.watch_children("/w", children)
    store.watch_data("/w", data)
    _result(store.create("/w/c"))
    store.watch_data("/w/c", child_data)
    assert (children.calls, data.calls) == (1, 0)
    _result(store.set("/w/c", b"x"))  # a child's data is not a children change
    assert (children.calls, data.calls, child_data.calls) == (1, 0, 1)
    _result(store.set("/w", b"x"))
    assert (children.calls, data.calls) == (1, 1)
    # One transaction touching the node twice notifies once.
    _result(store.transaction([CreateOp("/w/d"), DeleteOp("/w/d"), SetOp("/w", b"y"), SetOp("/w", b"z")]))
    assert (children.calls, data.calls) == (2, 2)
    # A failed transaction notifies nobody.
    with pytest.raises(NoNodeError):
        _result(store.transaction([CreateOp("/w/e"), SetOp("/nope", b"")]))
    assert (children.calls, data.calls) == (2, 2)
    # Deleting the node fires both its children and data watches.
    _result(store.delete("/w", recursive=True))
    assert (children.calls, data.calls, child_data.calls) == (3, 3, 2)


def test_watch_callbacks_run_after_the_change_is_complete(tree: MemoryZooKeeper) -> None:
    store = _started(tree)
    _result(store.create("/w"))
    seen: list[Any] = []
    store.watch_data("/w/a", lambda: seen.append(_result(store.exists("/w/b"))))
    _result(store.transaction([CreateOp("/w/a"), CreateOp("/w/b")]))
    assert len(seen) == 1 and seen[0] is not None


def test_failing_watch_callback_does_not_break_the_write(tree: MemoryZooKeeper) -> None:
    store = _started(tree)
    good = Recorder()

    def bad() -> None:
        raise RuntimeError("boom")

    store.watch_data("/x", bad)
    store.watch_data("/x", good)
    assert _result(store.create("/x")) == "/x"
    assert good.calls == 1


def test_clock_mode_delivers_later(tree: MemoryZooKeeper) -> None:
    clock = Clock()
    store = MemoryStore(tree, clock=clock)
    listener = Recorder()
    store.add_session_listener(listener)
    started = store.start()
    assert not started.called and listener.events == []
    clock.advance(0)
    assert started.called and listener.events == ["established"]
    watch = Recorder()
    handle = store.watch_data("/c", watch)
    d = store.create("/c", b"1")
    assert not d.called and watch.calls == 0
    assert tree.dump("/c") == {"/c": b"1"}  # applied at once, delivered later
    clock.advance(0)
    assert d.result == "/c" and watch.calls == 1
    # Cancelling after the event but before delivery suppresses the callback.
    store.set("/c", b"2")
    handle.cancel()
    clock.advance(0)
    assert watch.calls == 1
    failed = store.get("/nope")
    assert not failed.called
    clock.advance(0)
    with pytest.raises(NoNodeError):
        _result(failed)


def test_operations_need_a_session(tree: MemoryZooKeeper) -> None:
    store = MemoryStore(tree)
    assert store.session_id == 0
    with pytest.raises(ConnectionLossError):
        _result(store.get("/"))
    store.start()
    assert store.session_id != 0
    _result(store.stop())
    assert store.session_id == 0
    with pytest.raises(ConnectionLossError):
        _result(store.get("/"))


def test_disconnect_holds_back_watch_events_and_keeps_the_session(tree: MemoryZooKeeper) -> None:
    store, other = _started(tree), _started(tree)
    listener, watch = Recorder(), Recorder()
    store.add_session_listener(listener)
    _result(store.create("/eph", ephemeral=True))
    store.watch_children("/", watch)
    session = store.session_id
    store.disconnect()
    assert listener.events == ["lost"]
    with pytest.raises(ConnectionLossError):
        _result(store.get("/eph"))
    _result(other.create("/one"))
    _result(other.create("/two"))
    assert watch.calls == 0
    store.reconnect()
    assert watch.calls == 1  # held-back events coalesce
    assert listener.events == ["lost"]  # same session: nothing to re-register
    assert store.session_id == session
    assert _result(store.exists("/eph")) is not None


def test_expire_without_reestablish(tree: MemoryZooKeeper) -> None:
    store = _started(tree)
    listener = Recorder()
    store.add_session_listener(listener)
    _result(store.create("/eph", ephemeral=True))
    store.expire_session(reestablish=False)
    assert listener.events == ["expired"] and store.session_id == 0
    with pytest.raises(SessionExpiredError):
        _result(store.get("/"))
    assert tree.dump("/eph") == {}
    store.reconnect()
    assert listener.events == ["expired", "established"]
    assert store.session_id in tree.sessions()


def test_expiry_via_the_tree_and_transaction_ephemerals(tree: MemoryZooKeeper) -> None:
    store = _started(tree)
    _result(store.transaction([CreateOp("/a", ephemeral=True), CreateOp("/b", ephemeral=True, sequential=True)]))
    created = [p for p in tree.dump("/") if p.startswith("/b")]
    assert "/a" in tree.dump("/") and created == ["/b0000000001"]
    zxid = tree.last_zxid
    tree.expire_session(store.session_id)
    assert "/a" not in tree.dump("/") and created[0] not in tree.dump("/")
    assert tree.last_zxid == zxid + 1  # one closeSession transaction


def test_stop_cancels_watches(tree: MemoryZooKeeper) -> None:
    store, other = _started(tree), _started(tree)
    watch = Recorder()
    store.watch_data("/s", watch)
    _result(store.stop())
    _result(other.create("/s"))
    assert watch.calls == 0
