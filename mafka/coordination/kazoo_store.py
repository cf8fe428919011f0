"""KazooStore: the ClusterStore seam on a real ZooKeeper, through kazoo.

This module and its plumbing, :mod:`mafka.coordination.kazoo_batch`, are the
only Mafka modules that import kazoo.  Threading model:

* kazoo runs its own threads (``SequentialThreadingHandler``, as
  ``kazoo_batch.PollHandler``: a connection thread, a callback thread and a
  completion thread);
* every operation uses kazoo's ``*_async`` API; the result is hopped onto the
  reactor with ``reactor.callFromThread`` and fires the Deferred there, so the
  reactor never waits for ZooKeeper;
* kazoo's one-shot watches and connection-state changes are hopped onto the
  reactor too: **all of this module's state lives on the reactor thread**, and
  persistent watches are re-armed there (the re-arm request is queued before
  the user's callback runs, so whatever the callback reads is read after the
  watch is armed again — no change is lost);
* blocking kazoo calls (``stop``/``close``) run in a short-lived daemon thread;
* a batch (``get_many``, ``transactions``) becomes few requests — multiRead
  chunks, grouped multis — sent at once (kazoo pipelines them on its one
  connection; ZooKeeper answers one session's requests in order); their
  answers are gathered on kazoo's completion thread and hopped onto the
  reactor **once**.  The plumbing is :mod:`mafka.coordination.kazoo_batch`'s.

Sessions: kazoo state CONNECTED with a new session id → ``session_established``
(also for the first session); SUSPENDED → ``session_lost``; LOST (expiry) →
``session_expired``, after which kazoo reconnects with a new session (→
``session_established``).  kazoo drops its registered watches whenever the
connection drops, so on every (re)connection all persistent watches are armed
again and their callbacks are called once (something may have changed unseen).
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from kazoo import exceptions as kz
from kazoo.client import KazooClient, KazooState
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import EventType
from kazoo.retry import KazooRetry
from twisted.internet import defer
from twisted.internet.defer import Deferred
from twisted.logger import Logger

from mafka.coordination.kazoo_batch import (
    MULTI_READ_PATHS,
    Batch,
    Outcome,
    PollHandler,
    commit_async,
    failed,
    get_async,
    independent,
    multi_read_async,
    outcome_of,
    transaction_groups,
)
from mafka.coordination.store import (
    BadVersionError,
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
from mafka.latency import LatencyWindow

__all__ = ["KazooStore", "translate_error"]

_log = Logger()

# Order matters: ConnectionClosedError is a kazoo SessionExpiredError.
_TRANSLATIONS: list[tuple[type[BaseException], type[Exception]]] = [
    (kz.NoNodeError, NoNodeError),
    (kz.NodeExistsError, NodeExistsError),
    (kz.BadVersionError, BadVersionError),
    (kz.NotEmptyError, NotEmptyError),
    (kz.ConnectionClosedError, ConnectionLossError),
    (kz.SessionExpiredError, SessionExpiredError),
    (kz.SessionMovedError, SessionExpiredError),
    (kz.ConnectionLoss, ConnectionLossError),
    (kz.OperationTimeoutError, ConnectionLossError),
    (kz.ConnectionDropped, ConnectionLossError),
    (KazooTimeoutError, ConnectionLossError),
    (kz.BadArgumentsError, ValueError),
]


def translate_error(exc: BaseException, path: str | None = None) -> BaseException:
    """kazoo's exception → Mafka's (other ZooKeeper errors become StoreError).

    The message names *path* when given (kazoo's exceptions carry none)."""
    if isinstance(exc, StoreError | ValueError | TypeError):
        return exc
    ours = next((mine for theirs, mine in _TRANSLATIONS if isinstance(exc, theirs)), None)
    if ours is None:
        if not isinstance(exc, kz.KazooException):
            return exc
        ours = StoreError
    message = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    translated = ours(f"{path}: {message}" if path else message)
    translated.__cause__ = exc
    return translated


def _stat(zstat: Any) -> Stat:
    return Stat(
        version=zstat.version,
        czxid=zstat.czxid,
        mzxid=zstat.mzxid,
        ctime=zstat.ctime,
        mtime=zstat.mtime,
        ephemeral_owner=zstat.ephemeralOwner,
        num_children=zstat.numChildren,
    )


def _in_thread(reactor: Any, fn: Callable[[], Any], name: str) -> Deferred[Any]:
    """Runs blocking *fn* in a daemon thread; the Deferred fires on the reactor."""
    d: Deferred[Any] = Deferred()

    def run() -> None:
        try:
            result = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the Deferred
            reactor.callFromThread(d.errback, exc)
        else:
            reactor.callFromThread(d.callback, result)

    threading.Thread(target=run, name=name, daemon=True).start()
    return d


_CHILDREN = "children"
_DATA = "data"


class _Watch:
    """One persistent watch, re-armed on the reactor thread after every event."""

    __slots__ = ("store", "kind", "path", "callback", "cancelled", "kazoo_watcher")

    def __init__(self, store: KazooStore, kind: str, path: str, callback: WatchCallback) -> None:
        self.store = store
        self.kind = kind
        self.path = path
        self.callback = callback
        self.cancelled = False
        # One stable callable: kazoo keeps watchers in sets, so re-arming twice
        # registers it once.  Runs on a kazoo thread: only hops.
        self.kazoo_watcher: Callable[[Any], None] = lambda event: store._reactor.callFromThread(
            self._on_event, event
        )

    def cancel(self) -> None:
        """Stops the watch; no callback runs after this returns (call on the reactor thread)."""
        self.cancelled = True
        self.store._watches.discard(self)

    # --- reactor thread

    def arm(self) -> None:
        if self.cancelled or not self.store._connected:
            return
        if self.kind == _DATA:
            self._request(lambda c: c.exists_async(self.path, watch=self.kazoo_watcher), self._armed)
        else:
            self._request(
                lambda c: c.get_children_async(self.path, watch=self.kazoo_watcher), self._children_armed
            )

    def _request(self, start: Callable[[KazooClient], Any], done: Callable[[Any, BaseException | None], None]) -> None:
        try:
            result = start(self.store._client)
        except Exception as exc:  # noqa: BLE001 - kazoo refused (closed client…)
            done(None, exc)
            return
        result.rawlink(lambda r: self.store._reactor.callFromThread(_deliver_raw, r, done))

    def _armed(self, _value: Any, error: BaseException | None) -> None:
        # Connection/session errors: _on_connected arms every watch again.
        if error is not None and not isinstance(error, _CONNECTION_ERRORS):
            _log.warn("watch on {path} could not be armed: {error!r}", path=self.path, error=error)

    def _children_armed(self, _value: Any, error: BaseException | None) -> None:
        if isinstance(error, kz.NoNodeError):
            # No child watch on a missing node: wait for it to appear instead.
            self._request(lambda c: c.exists_async(self.path, watch=self.kazoo_watcher), self._exists_armed)
        else:
            self._armed(_value, error)

    def _exists_armed(self, stat: Any, error: BaseException | None) -> None:
        if error is None and stat is not None:
            # It appeared between get_children and exists: arm the child watch, notify.
            self.arm()
            self.fire()
        else:
            self._armed(stat, error)

    def _on_event(self, event: Any) -> None:
        if self.cancelled or self.store._closing:
            return
        if event.type == EventType.NONE:
            # kazoo dropped its watches (connection state change); if we are
            # connected already, _on_connected may have run before this event.
            if self.store._connected:
                self.arm()
                self.fire()
            return
        self.arm()
        self.fire()

    def fire(self) -> None:
        if self.cancelled:
            return
        try:
            self.callback()
        except Exception:
            _log.failure("watch callback for {path} failed", path=self.path)


_CONNECTION_ERRORS = (kz.ConnectionLoss, kz.SessionExpiredError, kz.ConnectionDropped, KazooTimeoutError)


def _deliver_raw(result: Any, done: Callable[[Any, BaseException | None], None]) -> None:
    done(*outcome_of(result))  # not get_nowait(): raising the error makes a reference cycle


class KazooStore:
    """A ClusterStore on ZooKeeper through kazoo (see the module docstring).

    Args:
        hosts: kazoo's connect string, e.g. ``"127.0.0.1:2181,127.0.0.1:2182/chroot"``.
        session_timeout_ms: requested session timeout (the server clamps it to
            [2, 20] × its tickTime unless configured otherwise).
        reactor: the Twisted reactor (the global one when omitted).
        connect_timeout_s: :meth:`start` fails with ConnectionLossError if no
            session is established within this time.
        operation_timeout_s: an operation issued while the connection is down
            waits for the reconnection (kazoo queues it); after this long without
            an answer it fails with ConnectionLossError (outcome unknown: it may
            still be applied).  Default: the session timeout.
    """

    def __init__(
        self,
        hosts: str,
        *,
        session_timeout_ms: int = 18000,
        reactor: Any = None,
        connect_timeout_s: float = 15.0,
        operation_timeout_s: float | None = None,
    ) -> None:
        if reactor is None:
            from twisted.internet import reactor as global_reactor

            reactor = global_reactor
        self._reactor = reactor
        self._hosts = hosts
        self._connect_timeout_s = connect_timeout_s
        self._session_timeout_ms = session_timeout_ms
        self._operation_timeout_s = (
            operation_timeout_s if operation_timeout_s is not None else session_timeout_ms / 1000.0
        )
        handler = PollHandler()
        self._client = KazooClient(
            hosts=hosts,
            timeout=session_timeout_ms / 1000.0,
            handler=handler,
            connection_retry=KazooRetry(max_tries=-1, delay=0.1, backoff=2, max_delay=2.0, max_jitter=0.2),
            command_retry=None,
        )
        self._client.add_listener(self._on_kazoo_state)
        self._listeners: list[SessionListener] = []
        #: Kafka's SessionExpireListener meters: sessions expired, disconnects, (re)connections
        self.expires = 0
        self.disconnects = 0
        self.sync_connects = 0
        #: ZooKeeperRequestLatencyMs: each request's time to its answer (a batch counts once, whole)
        self.request_latency = LatencyWindow(60_000, 1028)
        self._watches: set[_Watch] = set()
        self._session_id = 0
        self._connected = False
        self._closing = False
        #: False once the server answered a multiRead with Unimplemented (ZooKeeper < 3.6)
        self._multi_read = True
        self._started = False
        self._start_d: Deferred[None] | None = None
        self._start_timeout: Any = None

    # ------------------------------------------------------------------ lifecycle

    @property
    def hosts(self) -> str:
        return self._hosts

    @property
    def session_id(self) -> int:
        return self._session_id

    @property
    def connected(self) -> bool:
        return self._connected

    def add_session_listener(self, listener: SessionListener) -> None:
        self._listeners.append(listener)

    def start(self) -> Deferred[None]:
        """Connects; fires once a session is established (listeners have heard
        ``session_established``), or fails with ConnectionLossError after
        ``connect_timeout_s``.  A stopped (or timed-out) KazooStore cannot be
        started again: make a new one."""
        if self._closing:
            return defer.fail(ConnectionLossError("store is stopped"))
        if self._connected:
            return defer.succeed(None)
        if self._start_d is not None:
            return _chain(self._start_d)
        d: Deferred[None] = Deferred()
        self._start_d = d
        self._started = True
        try:
            self._client.start_async()
        except Exception as exc:  # noqa: BLE001
            self._start_d = None
            return defer.fail(translate_error(exc))
        self._start_timeout = self._reactor.callLater(self._connect_timeout_s, self._start_timed_out)
        return _chain(d)

    def _start_timed_out(self) -> None:
        self._start_timeout = None
        d, self._start_d = self._start_d, None
        if d is None:
            return
        self._closing = True
        self._connected = False
        client = self._client
        _in_thread(self._reactor, lambda: (client.stop(), client.close()), "kazoo-stop").addErrback(lambda _f: None)
        d.errback(
            ConnectionLossError(f"no ZooKeeper session with {self._hosts} within {self._connect_timeout_s:g} s")
        )

    def stop(self) -> Deferred[None]:
        for watch in list(self._watches):
            watch.cancel()
        if self._closing:
            return defer.succeed(None)
        self._closing = True
        self._connected = False
        self._session_id = 0
        if self._start_timeout is not None and self._start_timeout.active():
            self._start_timeout.cancel()
        self._start_timeout = None
        if self._start_d is not None:
            d, self._start_d = self._start_d, None
            d.errback(ConnectionLossError("stopped before connecting"))
        client = self._client
        if not self._started:
            return defer.succeed(None)

        def close() -> None:
            try:
                client.stop()
            finally:
                client.close()

        return _in_thread(self._reactor, close, "kazoo-stop").addCallback(lambda _: None)

    # ------------------------------------------------------------------ kazoo → reactor

    def _on_kazoo_state(self, state: str) -> None:
        # A kazoo thread: read the session id now (it belongs to this transition), then hop.
        if state == KazooState.CONNECTED:
            client_id = self._client.client_id
            session_id = client_id[0] if client_id else 0
            self._reactor.callFromThread(self._on_connected, session_id)
        elif state == KazooState.SUSPENDED:
            self._reactor.callFromThread(self._on_suspended)
        elif state == KazooState.LOST:
            self._reactor.callFromThread(self._on_lost)
        return None  # True would unregister the listener

    def _on_connected(self, session_id: int) -> None:
        if self._closing:
            return
        self._connected = True
        self.sync_connects += 1
        new_session = session_id != self._session_id
        if new_session and self._session_id:
            # An expiry we did not see as LOST: report it first.
            self._notify("session_expired")
        self._session_id = session_id
        for watch in list(self._watches):
            watch.arm()
        if new_session:
            self._notify("session_established")
        if self._start_d is not None:
            d, self._start_d = self._start_d, None
            if self._start_timeout is not None and self._start_timeout.active():
                self._start_timeout.cancel()
            self._start_timeout = None
            d.callback(None)
        for watch in list(self._watches):
            watch.fire()

    def _on_suspended(self) -> None:
        if self._closing or not self._connected:
            return
        self._connected = False
        self.disconnects += 1
        self._notify("session_lost")

    def _on_lost(self) -> None:
        if self._closing:
            return
        self._connected = False
        if self._session_id:
            self._session_id = 0
            self._notify("session_expired")

    def _notify(self, event: str) -> None:
        if event == "session_expired":
            self.expires += 1
        for listener in list(self._listeners):
            try:
                getattr(listener, event)()
            except Exception:
                _log.failure("session listener {event} failed", event=event)

    # ------------------------------------------------------------------ operations

    def _record_latency(self, started: float) -> None:
        now = time.monotonic()
        self.request_latency.record(int(now * 1000), (now - started) * 1000.0)

    def _call(
        self,
        start: Callable[[KazooClient], Any],
        convert: Callable[[Any], Any] = lambda v: v,
        path: str | None = None,
    ) -> Deferred[Any]:
        if self._closing:
            return defer.fail(ConnectionLossError("store is stopped"))
        try:
            result = start(self._client)
        except Exception as exc:  # noqa: BLE001 - bad arguments or a closed client
            return defer.fail(translate_error(exc, path))
        d: Deferred[Any] = Deferred()

        def timed_out() -> None:
            if not d.called:
                what = f"{path}: " if path else ""
                d.errback(ConnectionLossError(f"{what}no answer within {self._operation_timeout_s:g} s"))

        timer = self._reactor.callLater(self._operation_timeout_s, timed_out)
        started = time.monotonic()

        def settle(value: Any, error: BaseException | None) -> None:
            self._record_latency(started)
            if timer.active():
                timer.cancel()
            if d.called:
                return  # timed out already
            if error is not None:
                d.errback(translate_error(error, path))
                return
            try:
                converted = convert(value)
            except Exception as exc:  # noqa: BLE001
                d.errback(translate_error(exc))
            else:
                d.callback(converted)

        result.rawlink(lambda r: self._reactor.callFromThread(_deliver_raw, r, settle))
        return d

    def create(
        self, path: str, data: bytes = b"", *, ephemeral: bool = False, sequential: bool = False, makepath: bool = False
    ) -> Deferred[str]:
        try:
            validate_path(path + "0" if sequential else path)
        except ValueError as exc:
            return defer.fail(exc)
        return self._call(
            lambda c: c.create_async(path, data, ephemeral=ephemeral, sequence=sequential, makepath=makepath),
            path=path,
        )

    def ensure_path(self, path: str) -> Deferred[None]:
        try:
            validate_path(path)
        except ValueError as exc:
            return defer.fail(exc)
        return self._call(lambda c: c.ensure_path_async(path), lambda _v: None, path)

    def get(self, path: str) -> Deferred[tuple[bytes, Stat]]:
        try:
            validate_path(path)
        except ValueError as exc:
            return defer.fail(exc)
        return self._call(
            lambda c: c.get_async(path), lambda v: (v[0] if v[0] is not None else b"", _stat(v[1])), path
        )

    def exists(self, path: str) -> Deferred[Stat | None]:
        try:
            validate_path(path)
        except ValueError as exc:
            return defer.fail(exc)
        return self._call(lambda c: c.exists_async(path), lambda v: None if v is None else _stat(v), path)

    def set(self, path: str, data: bytes, version: int = -1) -> Deferred[Stat]:
        try:
            validate_path(path)
        except ValueError as exc:
            return defer.fail(exc)
        return self._call(lambda c: c.set_async(path, data, version), _stat, path)

    def delete(self, path: str, version: int = -1, *, recursive: bool = False) -> Deferred[None]:
        try:
            validate_path(path)
        except ValueError as exc:
            return defer.fail(exc)
        if path == "/":
            return defer.fail(StoreError("cannot delete the root"))
        if recursive:
            return defer.ensureDeferred(self._delete_recursive(path, version))
        return self._call(lambda c: c.delete_async(path, version), lambda _v: None, path)

    async def _delete_recursive(self, path: str, version: int) -> None:
        # Not atomic (like kazoo's and Kafka's deleteRecursive); children that
        # vanish meanwhile are fine, children that appear meanwhile are retried.
        for attempt in range(10):
            children = await self.get_children(path)  # NoNodeError for a missing top node
            for child in children:
                try:
                    await self.delete(f"{path.rstrip('/')}/{child}", recursive=True)
                except NoNodeError:
                    pass
            try:
                await self.delete(path, version)
                return
            except NotEmptyError:
                if attempt == 9:
                    raise
            except NoNodeError:
                if attempt == 0:
                    raise
                return

    def get_children(self, path: str) -> Deferred[list[str]]:
        try:
            validate_path(path)
        except ValueError as exc:
            return defer.fail(exc)
        return self._call(lambda c: c.get_children_async(path), sorted, path)

    def transaction(self, ops: Sequence[Op]) -> Deferred[list[object]]:
        ops = list(ops)
        try:
            validate_ops(ops)
        except (TypeError, ValueError) as exc:
            return defer.fail(exc)
        return self._call(lambda c: commit_async(c, ops), lambda raw: _transaction_results(ops, raw))

    # ------------------------------------------------------------------ batches

    def get_many(self, paths: Sequence[str]) -> Deferred[list[tuple[bytes, Stat] | None]]:
        """See :meth:`ClusterStore.get_many`: multiRead requests of up to ``MULTI_READ_PATHS`` paths,
        all sent at once (pipelined ``getData`` when the server has no multiRead)."""
        paths = list(paths)
        try:
            for path in paths:
                validate_path(path)
        except ValueError as exc:
            return defer.fail(exc)
        if self._closing:
            return defer.fail(ConnectionLossError("store is stopped"))
        return Deferred.fromCoroutine(self._get_many(paths))

    async def _get_many(self, paths: list[str]) -> list[tuple[bytes, Stat] | None]:
        if not paths:
            return []
        if self._multi_read:
            chunks = [paths[i : i + MULTI_READ_PATHS] for i in range(0, len(paths), MULTI_READ_PATHS)]
            answers = await self._batch([functools.partial(multi_read_async, paths=chunk) for chunk in chunks])
            if not any(isinstance(error, kz.UnimplementedError) for _, error in answers):
                out: list[tuple[bytes, Stat] | None] = []
                for chunk, (items, error) in zip(chunks, answers, strict=True):
                    if error is not None:
                        raise translate_error(error, chunk[0])
                    for path, item in zip(chunk, items, strict=True):
                        failure = item if isinstance(item, Exception) else None
                        out.append(_read_result(path, None if failure else item, failure))
                return out
            _log.info("ZooKeeper at {hosts} has no multiRead (3.6+): batches of reads are pipelined", hosts=self._hosts)
            self._multi_read = False
        answers = await self._batch([functools.partial(get_async, path=path) for path in paths])
        return [_read_result(path, value, error) for path, (value, error) in zip(paths, answers, strict=True)]

    def transactions(self, op_lists: Sequence[Sequence[Op]]) -> Deferred[list[list[object] | StoreError]]:
        """See :meth:`ClusterStore.transactions`.

        Consecutive op lists go as one grouped multi (``transaction_groups``):
        a group that fails had nothing applied, so its lists are then sent
        again one multi each (pipelined) — each one succeeds or fails on its
        own, as if sent alone.  Groups go one after the other, each once the
        one before it is settled, so every list is applied in order; when the
        lists cannot depend on each other (``independent``: compare-and-sets
        of distinct znodes, the controller's partition-state writes) all
        groups go at once.  A group that got no answer (connection loss,
        timeout) is not resent: each of its lists gets ConnectionLossError
        (outcome unknown).
        """
        lists = [list(ops) for ops in op_lists]
        try:
            for ops in lists:
                validate_ops(ops)
                for op in ops:
                    if isinstance(op, CreateOp | SetOp) and not isinstance(op.data, bytes):
                        raise TypeError("Invalid type for 'value' (must be a byte string)")
        except (TypeError, ValueError) as exc:
            return defer.fail(exc)
        if self._closing:
            return defer.fail(ConnectionLossError("store is stopped"))
        return Deferred.fromCoroutine(self._transactions(lists))

    async def _transactions(self, lists: list[list[Op]]) -> list[list[object] | StoreError]:
        groups = transaction_groups(lists)
        if len(groups) > 1 and independent(lists):
            settled = await defer.gatherResults(
                [Deferred.fromCoroutine(self._group(lists, group)) for group in groups], consumeErrors=True
            )
            return [outcome for outcomes in settled for outcome in outcomes]
        out: list[list[object] | StoreError] = []
        for group in groups:
            out.extend(await self._group(lists, group))
        return out

    async def _group(self, lists: list[list[Op]], group: range) -> list[list[object] | StoreError]:
        """One group of op lists as one multi, resent one multi each if it failed."""
        if len(group) > 1:
            ops = [op for index in group for op in lists[index]]
            [(raw, error)] = await self._batch([functools.partial(commit_async, ops=ops)])
            if error is not None:
                return [_transaction_outcome(lists[index], None, error) for index in group]
            if not failed(raw):
                out: list[list[object] | StoreError] = []
                offset = 0
                for index in group:
                    size = len(lists[index])
                    out.append(_transaction_results(lists[index], raw[offset : offset + size]))
                    offset += size
                return out
        answers = await self._batch([functools.partial(commit_async, ops=lists[index]) for index in group])
        return [
            _transaction_outcome(lists[index], raw, error)
            for index, (raw, error) in zip(group, answers, strict=True)
        ]

    def _batch(self, starts: list[Callable[[KazooClient], Any]]) -> Deferred[list[Outcome]]:
        """Sends every request at once; fires (on the reactor) with their raw outcomes, in order.

        The batch is given up only when **no** answer came for
        ``operation_timeout_s`` (a big batch may take longer than that as a
        whole): the requests unanswered then get kazoo's OperationTimeoutError.
        """
        if self._closing:
            return defer.fail(ConnectionLossError("store is stopped"))
        d: Deferred[list[Outcome]] = Deferred()
        timer: list[Any] = [None]

        started = time.monotonic()

        def done(outcomes: list[Outcome]) -> None:
            self._record_latency(started)
            if timer[0] is not None and timer[0].active():
                timer[0].cancel()
            if not d.called:
                d.callback(outcomes)

        batch = Batch(self._reactor, len(starts), done)
        for index, start in enumerate(starts):
            try:
                result = start(self._client)
            except Exception as exc:  # noqa: BLE001 - kazoo refused (closed client…): its outcome
                batch.answer(index, None, exc)
                continue
            result.rawlink(functools.partial(batch.collect, index))

        def check_progress(seen: int) -> None:
            timer[0] = None
            if d.called:
                return
            if batch.answered == seen:
                batch.give_up(kz.OperationTimeoutError(f"no answer within {self._operation_timeout_s:g} s"))
            else:
                timer[0] = self._reactor.callLater(self._operation_timeout_s, check_progress, batch.answered)

        timer[0] = self._reactor.callLater(self._operation_timeout_s, check_progress, 0)
        batch.start()
        return d

    # ------------------------------------------------------------------ watches

    def watch_children(self, path: str, callback: WatchCallback) -> _Watch:
        return self._watch(_CHILDREN, path, callback)

    def watch_data(self, path: str, callback: WatchCallback) -> _Watch:
        return self._watch(_DATA, path, callback)

    def _watch(self, kind: str, path: str, callback: WatchCallback) -> _Watch:
        validate_path(path)
        if not callable(callback):
            raise TypeError("callback must be callable")
        watch = _Watch(self, kind, path, callback)
        if self._closing:
            watch.cancelled = True
            return watch
        self._watches.add(watch)
        watch.arm()  # not connected yet: _on_connected arms it
        return watch

    def __repr__(self) -> str:
        return f"KazooStore({self._hosts!r}, session=0x{self._session_id:x}, connected={self._connected})"


def _transaction_results(ops: list[Op], raw: list[Any]) -> list[object]:
    """A multi's per-op answers → our results; raises the first failing op's error (translated)."""
    failures = [(i, r) for i, r in enumerate(raw) if isinstance(r, Exception)]
    if failures:
        real = [(i, f) for i, f in failures if not isinstance(f, kz.RolledBackError | kz.RuntimeInconsistency)]
        index, error = real[0] if real else failures[0]
        raise translate_error(error, ops[index].path if index < len(ops) else None)
    out: list[object] = []
    for op, r in zip(ops, raw, strict=True):
        out.append(_stat(r) if isinstance(op, SetOp) else r)
    return out


def _read_result(path: str, value: Any, error: BaseException | None) -> tuple[bytes, Stat] | None:
    """One read of a batch: ``(data, Stat)``, None for a missing node; other errors raised (translated)."""
    if error is None:
        return (value[0] if value[0] is not None else b"", _stat(value[1]))
    if isinstance(error, kz.NoNodeError):
        return None
    raise translate_error(error, path)


def _transaction_outcome(ops: list[Op], raw: Any, error: BaseException | None) -> list[object] | StoreError:
    """One transaction of a batch: its results, or the StoreError it failed with."""
    try:
        if error is not None:
            raise translate_error(error, ops[0].path if ops else None)
        return _transaction_results(ops, raw)
    except StoreError as exc:
        return exc


def _chain(d: Deferred[Any]) -> Deferred[Any]:
    """A new Deferred firing with *d*'s result (so several callers can wait on one)."""
    out: Deferred[Any] = Deferred()

    def ok(v: Any) -> Any:
        out.callback(v)
        return v

    def err(f: Any) -> Any:
        out.errback(f)
        return None

    d.addCallbacks(ok, err)
    return out

