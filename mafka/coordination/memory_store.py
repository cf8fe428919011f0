"""An in-memory ZooKeeper behind the ClusterStore seam, for unit tests.

:class:`MemoryZooKeeper` is the shared tree (the "ensemble"); each
:class:`MemoryStore` is one client session on it, so several brokers in a test
can share one tree::

    zk = MemoryZooKeeper()
    a, b = MemoryStore(zk), MemoryStore(zk)
    a.start(); b.start()
    a.create("/brokers/ids/1", b"{}", ephemeral=True, makepath=True)
    a.expire_session()          # /brokers/ids/1 is gone; a's listeners hear
                                # session_expired then session_established

It follows ZooKeeper's semantics where Mafka can observe them: data versions,
a monotonic zxid (czxid/mzxid; all ops of one transaction share one zxid),
ephemeral nodes owned by a session, sequential names from the parent's cversion
(10-digit zero-padded), all-or-nothing transactions applied in order, and the
same translated errors as :class:`~mafka.coordination.kazoo_store.KazooStore`.

Deferreds fire synchronously (the change is applied before the call returns).
Given ``clock`` (e.g. ``twisted.internet.task.Clock`` or the reactor), results,
watch callbacks and session notifications are delivered with
``clock.callLater(0, …)`` instead — still deterministic with ``Clock.advance(0)``
— which mimics the real store's asynchrony.  The change itself is always
applied at once.

Test helpers on :class:`MemoryStore`: :meth:`~MemoryStore.expire_session`,
:meth:`~MemoryStore.disconnect` / :meth:`~MemoryStore.reconnect`; on the tree,
:meth:`MemoryZooKeeper.expire_session` expires a session server-side only: its
store is not told (a "zombie" that still believes in its session; its writes
still go through, except ephemeral creates — useful to test fencing).

Differences from KazooStore worth knowing: while disconnected, operations fail
at once with ConnectionLossError (KazooStore lets them wait for the
reconnection, up to its operation timeout, then raises ConnectionLossError);
watch callbacks fire exactly once per change (KazooStore may add spurious
calls, e.g. once after every reconnection); a stopped MemoryStore can be
started again with a new session; ``get_many`` reads every path at one
instant and ``transactions`` applies each op list on its own (KazooStore's
batches may see other sessions' writes in between, and group op lists into
one multi when that cannot change their outcomes).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from twisted.internet import defer
from twisted.internet.defer import Deferred
from twisted.logger import Logger

from mafka.coordination.store import (
    BadVersionError,
    CheckOp,
    ConnectionLossError,
    CreateOp,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    Op,
    SessionExpiredError,
    SessionListener,
    SetOp,
    Stat,
    StoreError,
    WatchCallback,
    validate_ops,
    validate_path,
)

__all__ = ["MemoryZooKeeper", "MemoryStore", "validate_path", "parent_of"]

_log = Logger()

_CHILDREN = "children"
_DATA = "data"


def parent_of(path: str) -> str:
    """The parent of an absolute, non-root path."""
    head, _, _ = path.rpartition("/")
    return head or "/"


def _join(parent: str, name: str) -> str:
    return "/" + name if parent == "/" else f"{parent}/{name}"


@dataclass
class _Node:
    data: bytes
    czxid: int
    mzxid: int
    ctime: int
    mtime: int
    ephemeral_owner: int = 0
    version: int = 0
    cversion: int = 0
    children: set[str] = field(default_factory=set)

    def stat(self) -> Stat:
        return Stat(
            version=self.version,
            czxid=self.czxid,
            mzxid=self.mzxid,
            ctime=self.ctime,
            mtime=self.mtime,
            ephemeral_owner=self.ephemeral_owner,
            num_children=len(self.children),
        )


class _Watch:
    __slots__ = ("store", "kind", "path", "callback", "cancelled")

    def __init__(self, store: MemoryStore, kind: str, path: str, callback: WatchCallback) -> None:
        self.store = store
        self.kind = kind
        self.path = path
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True
        self.store._tree._remove_watch(self)


class _Txn:
    """One ZooKeeper transaction on the tree: undo log, one zxid, pending watch events."""

    def __init__(self, tree: MemoryZooKeeper) -> None:
        self.tree = tree
        self.zxid = tree._next_zxid()
        self.now = tree._now_ms()
        self.undo: list[Callable[[], None]] = []
        self.events: list[tuple[str, str]] = []

    def rollback(self) -> None:
        for undo in reversed(self.undo):
            undo()
        self.undo.clear()
        self.events.clear()


class MemoryZooKeeper:
    """The shared in-memory tree: znodes, zxid counter, sessions and watches."""

    def __init__(self, *, time_ms: Callable[[], int] | None = None) -> None:
        self._time_ms = time_ms
        self._zxid = 0
        self._session_ids = itertools.count(0x1_0000_0001)
        self._nodes: dict[str, _Node] = {}
        self._ephemerals: dict[int, set[str]] = {}
        self._watches: dict[tuple[str, str], list[_Watch]] = {}
        now = self._now_ms()
        self._nodes["/"] = _Node(b"", 0, 0, now, now)
        for path in ("/zookeeper", "/zookeeper/config", "/zookeeper/quota"):
            self._nodes[path] = _Node(b"", 0, 0, now, now)
            self._nodes[parent_of(path)].children.add(path.rsplit("/", 1)[1])

    # ------------------------------------------------------------------ inspection

    @property
    def last_zxid(self) -> int:
        """The zxid of the last committed transaction."""
        return self._zxid

    def dump(self, path: str = "/") -> dict[str, bytes]:
        """``{path: data}`` for *path* and everything under it (test convenience)."""
        out: dict[str, bytes] = {}
        prefix = path.rstrip("/") + "/"
        for p, node in self._nodes.items():
            if p == path or p.startswith(prefix):
                out[p] = node.data
        return dict(sorted(out.items()))

    def sessions(self) -> list[int]:
        """Ids of the live sessions."""
        return sorted(self._ephemerals)

    # ------------------------------------------------------------------ sessions

    def open_session(self) -> int:
        sid = next(self._session_ids)
        self._ephemerals[sid] = set()
        return sid

    def close_session(self, session_id: int) -> None:
        """Ends a session (close or expiry): its ephemeral nodes are deleted in one txn."""
        paths = self._ephemerals.pop(session_id, None)
        if not paths:
            return
        txn = _Txn(self)
        # Deepest first; ephemerals have no children, but stay safe.
        for path in sorted(paths, key=lambda p: p.count("/"), reverse=True):
            if path in self._nodes:
                self._delete(txn, path, -1)
        self._commit(txn)

    def expire_session(self, session_id: int) -> None:
        """Expires *session_id* server-side: its ephemerals go, but the owning store is
        not told (it keeps its session id; use :meth:`MemoryStore.expire_session` for
        the whole client-side sequence)."""
        self.close_session(session_id)

    # ------------------------------------------------------------------ operations

    def create(self, session_id: int, path: str, data: bytes, ephemeral: bool, sequential: bool, makepath: bool) -> str:
        validate_path(path + "0" if sequential else path)
        _check_bytes(data)
        txn = _Txn(self)
        try:
            if makepath:
                self._make_parents(txn, path)
            actual = self._create(txn, session_id, path, data, ephemeral, sequential)
        except BaseException:
            txn.rollback()
            raise
        self._commit(txn)
        return actual

    def ensure_path(self, path: str) -> None:
        validate_path(path)
        if path in self._nodes:
            return
        txn = _Txn(self)
        try:
            self._make_parents(txn, path)
            self._create(txn, 0, path, b"", False, False)
        except BaseException:
            txn.rollback()
            raise
        self._commit(txn)

    def get(self, path: str) -> tuple[bytes, Stat]:
        validate_path(path)
        node = self._node(path)
        return node.data, node.stat()

    def exists(self, path: str) -> Stat | None:
        validate_path(path)
        node = self._nodes.get(path)
        return None if node is None else node.stat()

    def set(self, path: str, data: bytes, version: int) -> Stat:
        validate_path(path)
        _check_bytes(data)
        txn = _Txn(self)
        try:
            stat = self._set(txn, path, data, version)
        except BaseException:
            txn.rollback()
            raise
        self._commit(txn)
        return stat

    def delete(self, path: str, version: int, recursive: bool) -> None:
        validate_path(path)
        if path == "/":
            raise StoreError("cannot delete the root")
        txn = _Txn(self)
        try:
            if recursive:
                self._node(path)
                for child in self._descendants_deepest_first(path):
                    self._delete(txn, child, -1)
            self._delete(txn, path, version)
        except BaseException:
            txn.rollback()
            raise
        self._commit(txn)

    def get_children(self, path: str) -> list[str]:
        validate_path(path)
        return sorted(self._node(path).children)

    def get_many(self, paths: Sequence[str]) -> list[tuple[bytes, Stat] | None]:
        """``(data, stat)`` of every path, None for an absent one (one consistent read)."""
        for path in paths:
            validate_path(path)
        out: list[tuple[bytes, Stat] | None] = []
        for path in paths:
            node = self._nodes.get(path)
            out.append(None if node is None else (node.data, node.stat()))
        return out

    def transactions(self, session_id: int, op_lists: Sequence[Sequence[Op]]) -> list[list[object] | StoreError]:
        """Each op list as a transaction of its own, in order; a failed one's StoreError in its place."""
        for ops in op_lists:
            _validate_txn(ops)
        out: list[list[object] | StoreError] = []
        for ops in op_lists:
            try:
                out.append(self.transaction(session_id, ops))
            except StoreError as exc:
                out.append(exc)
        return out

    def transaction(self, session_id: int, ops: Sequence[Op]) -> list[object]:
        _validate_txn(ops)
        txn = _Txn(self)
        results: list[object] = []
        try:
            for op in ops:
                if isinstance(op, CheckOp):
                    node = self._node(op.path)
                    if op.version != -1 and node.version != op.version:
                        raise BadVersionError(op.path)
                    results.append(True)
                elif isinstance(op, CreateOp):
                    results.append(self._create(txn, session_id, op.path, op.data, op.ephemeral, op.sequential))
                elif isinstance(op, SetOp):
                    results.append(self._set(txn, op.path, op.data, op.version))
                else:
                    if op.path == "/":
                        raise StoreError("cannot delete the root")
                    self._delete(txn, op.path, op.version)
                    results.append(True)
        except BaseException:
            txn.rollback()
            raise
        self._commit(txn)
        return results

    # ------------------------------------------------------------------ watches

    def add_watch(self, store: MemoryStore, kind: str, path: str, callback: WatchCallback) -> _Watch:
        validate_path(path)
        if not callable(callback):
            raise TypeError("callback must be callable")
        watch = _Watch(store, kind, path, callback)
        self._watches.setdefault((kind, path), []).append(watch)
        return watch

    def _remove_watch(self, watch: _Watch) -> None:
        watches = self._watches.get((watch.kind, watch.path))
        if watches and watch in watches:
            watches.remove(watch)
            if not watches:
                del self._watches[(watch.kind, watch.path)]

    def remove_store_watches(self, store: MemoryStore) -> None:
        for watches in list(self._watches.values()):
            for watch in list(watches):
                if watch.store is store:
                    watch.cancel()

    # ------------------------------------------------------------------ internals

    def _next_zxid(self) -> int:
        self._zxid += 1
        return self._zxid

    def _now_ms(self) -> int:
        return self._time_ms() if self._time_ms is not None else int(time.time() * 1000)

    def _node(self, path: str) -> _Node:
        node = self._nodes.get(path)
        if node is None:
            raise NoNodeError(path)
        return node

    def _make_parents(self, txn: _Txn, path: str) -> None:
        parts = path.split("/")[1:-1]
        current = ""
        for part in parts:
            current += "/" + part
            if current not in self._nodes:
                self._create(txn, 0, current, b"", False, False)

    def _create(self, txn: _Txn, session_id: int, path: str, data: bytes, ephemeral: bool, sequential: bool) -> str:
        parent_path = parent_of(path) if path != "/" else None
        if parent_path is None:
            raise NodeExistsError(path)
        parent = self._nodes.get(parent_path)
        if parent is None:
            raise NoNodeError(parent_path)
        if parent.ephemeral_owner:
            raise StoreError(f"ephemeral nodes cannot have children: {parent_path}")
        if sequential:
            path = f"{path}{parent.cversion:010d}"
        if path in self._nodes:
            raise NodeExistsError(path)
        if ephemeral and session_id not in self._ephemerals:
            raise SessionExpiredError("no session")
        name = path.rsplit("/", 1)[1]
        node = _Node(bytes(data), txn.zxid, txn.zxid, txn.now, txn.now, session_id if ephemeral else 0)
        self._nodes[path] = node
        parent.children.add(name)
        parent.cversion += 1
        if ephemeral:
            self._ephemerals[session_id].add(path)

        def undo() -> None:
            del self._nodes[path]
            parent.children.discard(name)
            parent.cversion -= 1
            if ephemeral:
                self._ephemerals.get(session_id, set()).discard(path)

        txn.undo.append(undo)
        txn.events += [(_DATA, path), (_CHILDREN, path), (_CHILDREN, parent_path)]
        return path

    def _set(self, txn: _Txn, path: str, data: bytes, version: int) -> Stat:
        node = self._node(path)
        if version != -1 and node.version != version:
            raise BadVersionError(path)
        old = (node.data, node.version, node.mzxid, node.mtime)
        node.data, node.version, node.mzxid, node.mtime = bytes(data), node.version + 1, txn.zxid, txn.now

        def undo() -> None:
            node.data, node.version, node.mzxid, node.mtime = old

        txn.undo.append(undo)
        txn.events.append((_DATA, path))
        return node.stat()

    def _delete(self, txn: _Txn, path: str, version: int) -> None:
        node = self._node(path)
        if version != -1 and node.version != version:
            raise BadVersionError(path)
        if node.children:
            raise NotEmptyError(path)
        parent_path = parent_of(path)
        parent = self._nodes[parent_path]
        name = path.rsplit("/", 1)[1]
        del self._nodes[path]
        parent.children.discard(name)
        parent.cversion += 1
        owner = node.ephemeral_owner
        if owner:
            self._ephemerals.get(owner, set()).discard(path)

        def undo() -> None:
            self._nodes[path] = node
            parent.children.add(name)
            parent.cversion -= 1
            if owner and owner in self._ephemerals:
                self._ephemerals[owner].add(path)

        txn.undo.append(undo)
        txn.events += [(_DATA, path), (_CHILDREN, path), (_CHILDREN, parent_path)]

    def _descendants_deepest_first(self, path: str) -> Iterator[str]:
        for name in sorted(self._nodes[path].children):
            child = _join(path, name)
            yield from self._descendants_deepest_first(child)
            yield child

    def _commit(self, txn: _Txn) -> None:
        fired: list[_Watch] = []
        seen: set[int] = set()
        for key in dict.fromkeys(txn.events):
            for watch in self._watches.get(key, ()):
                if id(watch) not in seen:
                    seen.add(id(watch))
                    fired.append(watch)
        txn.events.clear()
        for watch in fired:
            watch.store._notify_watch(watch)


#: ZooKeeper's ``jute.maxbuffer`` (1 MiB by default): a server refuses a packet larger than this by
#: closing the connection, which the client sees as ConnectionLoss (a znode's data must fit in less).
JUTE_MAX_BUFFER = 1024 * 1024


def _check_bytes(data: Any) -> None:
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"znode data must be bytes, not {type(data).__name__}")
    if len(data) >= JUTE_MAX_BUFFER:
        # As ZooKeeper answers it: the connection is closed (the in-memory store keeps its session).
        raise ConnectionLossError(f"znode data of {len(data)} bytes: over jute.maxbuffer ({JUTE_MAX_BUFFER})")


def _validate_txn(ops: Sequence[Op]) -> None:
    """Raises TypeError/ValueError for an op list no transaction could apply (checked before any op runs)."""
    validate_ops(ops)
    for op in ops:
        if isinstance(op, CreateOp | SetOp):
            _check_bytes(op.data)


class MemoryStore:
    """One ZooKeeper session on a :class:`MemoryZooKeeper` (a ClusterStore).

    Args:
        tree: the shared tree; a private one when omitted.
        clock: when given (``Clock``/reactor), results and callbacks are delivered
            with ``clock.callLater(0, …)``; otherwise synchronously.
    """

    def __init__(self, tree: MemoryZooKeeper | None = None, *, clock: Any = None) -> None:
        self._tree = tree if tree is not None else MemoryZooKeeper()
        self._clock = clock
        self._session_id = 0
        self._state = "new"  # new | connected | disconnected | expired | closed
        self._listeners: list[SessionListener] = []
        self._missed: list[_Watch] = []

    @property
    def tree(self) -> MemoryZooKeeper:
        return self._tree

    # ------------------------------------------------------------------ lifecycle

    @property
    def session_id(self) -> int:
        return self._session_id

    @property
    def connected(self) -> bool:
        return self._state == "connected"

    def start(self) -> Deferred[None]:
        if self._state == "connected":
            return self._deliver(lambda: None)
        if self._state in ("new", "closed", "expired"):
            self._session_id = self._tree.open_session()
            self._state = "connected"
            d = self._deliver(lambda: None)
            self._notify_listeners("session_established")
            return d
        self._state = "connected"  # disconnected → same session back
        self._flush_missed()
        return self._deliver(lambda: None)

    def stop(self) -> Deferred[None]:
        if self._session_id:
            self._tree.close_session(self._session_id)
        self._tree.remove_store_watches(self)
        self._missed.clear()
        self._session_id = 0
        self._state = "closed"
        return self._deliver(lambda: None)

    def add_session_listener(self, listener: SessionListener) -> None:
        self._listeners.append(listener)

    # ------------------------------------------------------------------ test helpers

    def expire_session(self, *, reestablish: bool = True) -> None:
        """Expires this store's session: its ephemeral nodes are deleted at once, then
        listeners hear ``session_expired`` and (with *reestablish*) ``session_established``
        with a new session id.  Without *reestablish* operations fail with
        SessionExpiredError until :meth:`reconnect`."""
        if self._state not in ("connected", "disconnected"):
            raise RuntimeError(f"no session to expire (state {self._state})")
        self._tree.close_session(self._session_id)
        self._session_id = 0
        self._state = "expired"
        self._missed.clear()
        self._notify_listeners("session_expired")
        if reestablish:
            self.reconnect()

    def disconnect(self) -> None:
        """Loses the connection but keeps the session: listeners hear ``session_lost``;
        operations fail with ConnectionLossError and watch events are held back
        until :meth:`reconnect`."""
        if self._state != "connected":
            raise RuntimeError(f"not connected (state {self._state})")
        self._state = "disconnected"
        self._notify_listeners("session_lost")

    def reconnect(self) -> None:
        """Comes back after :meth:`disconnect` (same session: held-back watch events are
        delivered, no listener call) or after an expiry (new session:
        ``session_established``)."""
        if self._state == "disconnected":
            self._state = "connected"
            self._flush_missed()
        elif self._state == "expired":
            self._session_id = self._tree.open_session()
            self._state = "connected"
            self._notify_listeners("session_established")
        else:
            raise RuntimeError(f"cannot reconnect (state {self._state})")

    # ------------------------------------------------------------------ operations

    def create(
        self, path: str, data: bytes = b"", *, ephemeral: bool = False, sequential: bool = False, makepath: bool = False
    ) -> Deferred[str]:
        return self._op(lambda: self._tree.create(self._session_id, path, data, ephemeral, sequential, makepath))

    def ensure_path(self, path: str) -> Deferred[None]:
        return self._op(lambda: self._tree.ensure_path(path))

    def get(self, path: str) -> Deferred[tuple[bytes, Stat]]:
        return self._op(lambda: self._tree.get(path))

    def exists(self, path: str) -> Deferred[Stat | None]:
        return self._op(lambda: self._tree.exists(path))

    def set(self, path: str, data: bytes, version: int = -1) -> Deferred[Stat]:
        return self._op(lambda: self._tree.set(path, data, version))

    def delete(self, path: str, version: int = -1, *, recursive: bool = False) -> Deferred[None]:
        return self._op(lambda: self._tree.delete(path, version, recursive))

    def get_children(self, path: str) -> Deferred[list[str]]:
        return self._op(lambda: self._tree.get_children(path))

    def transaction(self, ops: Sequence[Op]) -> Deferred[list[object]]:
        ops = list(ops)
        return self._op(lambda: self._tree.transaction(self._session_id, ops))

    def get_many(self, paths: Sequence[str]) -> Deferred[list[tuple[bytes, Stat] | None]]:
        paths = list(paths)
        return self._op(lambda: self._tree.get_many(paths))

    def transactions(self, op_lists: Sequence[Sequence[Op]]) -> Deferred[list[list[object] | StoreError]]:
        lists = [list(ops) for ops in op_lists]
        return self._op(lambda: self._tree.transactions(self._session_id, lists))

    def watch_children(self, path: str, callback: WatchCallback) -> _Watch:
        return self._tree.add_watch(self, _CHILDREN, path, callback)

    def watch_data(self, path: str, callback: WatchCallback) -> _Watch:
        return self._tree.add_watch(self, _DATA, path, callback)

    # ------------------------------------------------------------------ internals

    def _op(self, fn: Callable[[], Any]) -> Deferred[Any]:
        if self._state == "expired":
            return self._deliver_failure(SessionExpiredError("session expired"))
        if self._state != "connected":
            return self._deliver_failure(ConnectionLossError(f"not connected ({self._state})"))
        try:
            result = fn()
        except Exception as exc:  # noqa: BLE001 - handed to the Deferred
            return self._deliver_failure(exc)
        return self._deliver(lambda: result)

    def _deliver(self, value: Callable[[], Any]) -> Deferred[Any]:
        if self._clock is None:
            return defer.succeed(value())
        d: Deferred[Any] = Deferred()
        self._clock.callLater(0, lambda: d.callback(value()))
        return d

    def _deliver_failure(self, exc: BaseException) -> Deferred[Any]:
        if self._clock is None:
            return defer.fail(exc)
        d: Deferred[Any] = Deferred()
        self._clock.callLater(0, d.errback, exc)
        return d

    def _notify_watch(self, watch: _Watch) -> None:
        if watch.cancelled:
            return
        if self._state == "disconnected":
            if watch not in self._missed:
                self._missed.append(watch)
            return
        if self._state != "connected":
            return
        self._later(self._run_watch, watch)

    def _flush_missed(self) -> None:
        missed, self._missed = self._missed, []
        for watch in missed:
            self._notify_watch(watch)

    def _run_watch(self, watch: _Watch) -> None:
        if watch.cancelled:
            return
        try:
            watch.callback()
        except Exception:
            _log.failure("watch callback for {path} failed", path=watch.path)

    def _notify_listeners(self, event: str) -> None:
        for listener in list(self._listeners):
            self._later(self._run_listener, listener, event)

    def _run_listener(self, listener: SessionListener, event: str) -> None:
        try:
            getattr(listener, event)()
        except Exception:
            _log.failure("session listener {event} failed", event=event)

    def _later(self, fn: Callable[..., None], *args: Any) -> None:
        if self._clock is None:
            fn(*args)
        else:
            self._clock.callLater(0, fn, *args)
