"""kazoo plumbing for KazooStore's batches: a cheaper ``select``, multiRead, grouped multis, gathered answers.

KazooStore (:mod:`mafka.coordination.kazoo_store`) and this module are the
only Mafka modules that import kazoo.  This one owns how a batch of
thousands of znode reads or writes reaches ZooKeeper quickly:

* **Fewer requests.**  Each ZooKeeper request costs kazoo's Python
  connection thread one trip round its loop, and the ZooKeeper server one
  request; with thousands of requests that, not the network, was the cost
  (4,000 pipelined ``get_async`` took 1–2 s on a loaded 2-core machine, one
  multiRead of them 15–60 ms).  So reads go as ZooKeeper's **multiRead**
  (:class:`MultiRead`, ZooKeeper 3.6+; each read succeeds or fails on its
  own) in chunks of :data:`MULTI_READ_PATHS`, and independent transactions as
  **grouped multis** (:func:`transaction_groups`): consecutive op lists
  concatenated into one multi, so that when they all succeed it is one
  request; when one fails nothing of the group was applied and the group's
  lists are sent again one multi each.
* **A cheaper select.**  kazoo's own ``select`` builds and closes an epoll
  selector on every call (once per request sent and per answer read);
  :class:`PollHandler` does one ``poll(2)``.
* **One hop to the reactor.**  :class:`Batch` gathers the answers of many
  requests on kazoo's completion thread and hands them to the reactor once.

multiRead and the request plumbing it needs (``KazooClient._call``) are not
kazoo's public API (kazoo 2.x has no multiRead): they are kept here, small,
behind functions with a contract.
"""

from __future__ import annotations

import math
import select
import threading
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from kazoo import exceptions as kz
from kazoo.client import KazooClient
from kazoo.handlers.threading import SequentialThreadingHandler
from kazoo.handlers.utils import fileobj_to_fd
from kazoo.protocol.serialization import (
    Create,
    GetData,
    MultiHeader,
    int_struct,
    multiheader_struct,
    read_buffer,
    stat_struct,
    write_string,
)
from kazoo.protocol.states import ZnodeStat
from kazoo.security import OPEN_ACL_UNSAFE

from mafka.coordination.store import CheckOp, CreateOp, Op, SetOp, StoreError

__all__ = [
    "MULTI_OPS",
    "MULTI_BYTES",
    "MULTI_READ_PATHS",
    "Batch",
    "MultiRead",
    "Outcome",
    "PollHandler",
    "commit_async",
    "failed",
    "get_async",
    "independent",
    "multi_read_async",
    "outcome_of",
    "transaction_groups",
]

#: Paths per multiRead request (its answer holds all their data).
MULTI_READ_PATHS = 500
#: At most this many ops in one grouped multi…
MULTI_OPS = 1000
#: …and about this many bytes of paths and data (ZooKeeper refuses requests over
#: ``jute.maxbuffer``, 1 MiB by default; an op list bigger on its own goes alone).
MULTI_BYTES = 512 * 1024

#: One request's raw outcome: ``(kazoo's value, None)`` or ``(None, the error)``.
Outcome = tuple[Any, BaseException | None]


# --------------------------------------------------------------------------- select


_POLL_READ = select.POLLIN | select.POLLPRI


class PollHandler(SequentialThreadingHandler):
    """kazoo's threading handler, with ``select`` done by one ``poll(2)`` call.

    Same contract as kazoo's ``selector_select``: ``(readable, writable, [])``
    of the objects given, no limit on descriptor numbers (a broker holds
    thousands of log files open, so its ZooKeeper socket's number is high).
    """

    def select(self, rlist: Any, wlist: Any, xlist: Any, timeout: float | None = None) -> Any:
        if timeout is not None and timeout < 0:
            raise ValueError("timeout must be non-negative")
        masks: dict[int, int] = {}
        readers: dict[int, list[Any]] = {}
        writers: dict[int, list[Any]] = {}
        for objects, flag, owners in ((rlist, _POLL_READ, readers), (wlist, select.POLLOUT, writers)):
            for obj in objects:
                fd = fileobj_to_fd(obj)
                masks[fd] = masks.get(fd, 0) | flag
                owners.setdefault(fd, []).append(obj)
        poller = select.poll()
        for fd, mask in masks.items():
            poller.register(fd, mask)
        ready = poller.poll(None if timeout is None else math.ceil(timeout * 1000))
        readable: list[Any] = []
        writable: list[Any] = []
        for fd, events in ready:
            # As the selectors module: an error or hang-up makes a descriptor both readable and
            # writable, so whoever waits on it finds out by reading or writing.
            if events & ~select.POLLOUT:
                readable.extend(readers.get(fd, ()))
            if events & ~_POLL_READ:
                writable.extend(writers.get(fd, ()))
        return readable, writable, []


# --------------------------------------------------------------------------- requests


class MultiRead:
    """ZooKeeper's multiRead request (opcode 22, ZooKeeper 3.6+) of getData ops, in kazoo's request shape.

    The answer is one entry per path, in order: ``(data, ZnodeStat)`` or the
    kazoo exception of that read (NoNodeError…); the reads do not depend on
    each other.  A server without multiRead answers UnimplementedError.
    """

    type: ClassVar[int] = 22

    __slots__ = ("paths",)

    def __init__(self, paths: tuple[str, ...]) -> None:
        self.paths = paths

    def __repr__(self) -> str:
        return f"MultiRead({len(self.paths)} paths)"

    def serialize(self) -> bytearray:
        b = bytearray()
        for path in self.paths:
            b.extend(MultiHeader(GetData.type, False, -1).serialize())
            b.extend(write_string(path))
            b.append(0)  # no watch
        b.extend(multiheader_struct.pack(-1, True, -1))
        return b

    @classmethod
    def deserialize(cls, buffer: bytes, offset: int) -> list[Any]:
        out: list[Any] = []
        while True:
            kind, done, _err = multiheader_struct.unpack_from(buffer, offset)
            offset += multiheader_struct.size
            if done:
                return out
            if kind == GetData.type:
                data, offset = read_buffer(buffer, offset)
                stat = ZnodeStat._make(stat_struct.unpack_from(buffer, offset))
                offset += stat_struct.size
                out.append((data, stat))
            elif kind == -1:
                code = int_struct.unpack_from(buffer, offset)[0]
                offset += int_struct.size
                out.append(kz.EXCEPTIONS[code]())
            else:
                raise ValueError(f"unexpected multiRead answer of type {kind}")


def _chrooted(client: KazooClient, path: str) -> str:
    root = client.chroot
    if not root:
        return path
    return root if path == "/" else root + path


def multi_read_async(client: KazooClient, paths: Sequence[str]) -> Any:
    """Sends one :class:`MultiRead` of *paths* (absolute, unchrooted); kazoo's async result."""
    result = client.handler.async_result()
    client._call(MultiRead(tuple(_chrooted(client, path) for path in paths)), result)
    return result


def get_async(client: KazooClient, path: str) -> Any:
    """kazoo's ``get_async`` (the pipelined fallback for servers without multiRead)."""
    return client.get_async(path)


def commit_async(client: KazooClient, ops: Sequence[Op]) -> Any:
    """Sends *ops* as one ZooKeeper multi; kazoo's async result (a list with one entry per op)."""
    txn = client.transaction()
    for op in ops:
        if isinstance(op, CheckOp):
            txn.check(op.path, op.version)
        elif isinstance(op, CreateOp):
            if op.sequential and op.path.endswith("/"):
                # kazoo's transaction strips a trailing "/" (→ "/q0000000001");
                # ZooKeeper itself accepts "/q/" + sequential → "/q/0000000001".
                if not isinstance(op.data, bytes):
                    raise TypeError("Invalid type for 'value' (must be a byte string)")
                flags = (1 if op.ephemeral else 0) | 2
                txn._add(Create(op.path, op.data, OPEN_ACL_UNSAFE, flags))
            else:
                txn.create(op.path, op.data, ephemeral=op.ephemeral, sequence=op.sequential)
        elif isinstance(op, SetOp):
            txn.set_data(op.path, op.data, op.version)
        else:
            if op.path == "/":
                raise StoreError("cannot delete the root")
            txn.delete(op.path, op.version)
    return txn.commit_async()


def failed(raw: list[Any]) -> bool:
    """Whether a multi's answer reports a failed op (then none of its ops was applied)."""
    return any(isinstance(r, Exception) for r in raw)


def independent(op_lists: Sequence[Sequence[Op]]) -> bool:
    """Whether no op list's outcome can depend on another's: they may be applied in any order.

    True when every op is a SetOp or a CheckOp, no path is set twice and no
    checked path is set (a batch of compare-and-sets of distinct znodes, each
    behind the same controller-epoch check).  Creates and deletes change
    parents' children and may depend on each other: never independent here.
    """
    written: set[str] = set()
    checked: set[str] = set()
    for op_list in op_lists:
        for op in op_list:
            if isinstance(op, SetOp):
                if op.path in written:
                    return False
                written.add(op.path)
            elif isinstance(op, CheckOp):
                checked.add(op.path)
            else:
                return False
    return written.isdisjoint(checked)


def transaction_groups(op_lists: Sequence[Sequence[Op]]) -> list[range]:
    """Consecutive op lists to send as one multi each: index ranges, in order, covering all.

    A group holds at most :data:`MULTI_OPS` ops and about :data:`MULTI_BYTES`
    bytes of paths and data; a list too big for that alone is a group of one.
    """
    groups: list[range] = []
    start = ops = size = 0
    for index, op_list in enumerate(op_lists):
        list_size = sum(len(op.path) + len(getattr(op, "data", b"")) + 16 for op in op_list)
        if index > start and (ops + len(op_list) > MULTI_OPS or size + list_size > MULTI_BYTES):
            groups.append(range(start, index))
            start, ops, size = index, 0, 0
        ops += len(op_list)
        size += list_size
    if start < len(op_lists):
        groups.append(range(start, len(op_lists)))
    return groups


# --------------------------------------------------------------------------- answers


def outcome_of(result: Any) -> tuple[Any, BaseException | None]:
    """A completed kazoo async result's (value, None) or (None, error), without raising the error.

    Why not ``get_nowait()``: it raises the stored exception, which gives it a traceback holding
    the frames that raised it -- ``get_nowait``'s own, whose ``self`` is the async result holding
    the exception: a reference cycle, with whatever those frames hold (a batch's outcomes: tens
    of thousands of znodes' data for a controller's multiRead).  Only Python's full collections
    free such cycles; a broker's heap freezer (:mod:`mafka.heap_freezer`) keeps them until a whole
    collection.
    """
    error = result.exception
    if error is not None:
        return None, error
    return result.value, None


class Batch:
    """The answers of one batch of kazoo requests, gathered off the reactor.

    :meth:`collect` is kazoo's ``rawlink`` callback (kazoo's completion
    thread; inline on the caller's thread when kazoo refused a request at
    once).  Once :meth:`start` was called and the last answer is in,
    ``on_done`` runs once, on the reactor, with one :data:`Outcome` per
    request in order.  :meth:`give_up` ends it early (a timeout): the
    requests unanswered then get the error given, later answers are dropped.

    Args:
        reactor: Where ``on_done`` runs (``callFromThread``).
        size: The number of requests.
        on_done: Called with the outcomes.
    """

    def __init__(self, reactor: Any, size: int, on_done: Callable[[list[Outcome]], None]) -> None:
        self._reactor = reactor
        self._on_done = on_done
        self._lock = threading.Lock()
        self._outcomes: list[Outcome | None] = [None] * size
        self._left = size
        self._started = False
        self._finished = False
        #: answers so far (the reactor reads it for its no-progress timeout; a stale read is harmless)
        self.answered = 0

    def collect(self, index: int, result: Any) -> None:
        self.answer(index, *outcome_of(result))

    def answer(self, index: int, value: Any, error: BaseException | None) -> None:
        with self._lock:
            if self._outcomes[index] is not None:
                return
            self._outcomes[index] = (value, error)
            self._left -= 1
            self.answered += 1
            done = self._left == 0 and self._started
        if done:
            self._reactor.callFromThread(self._deliver)

    def start(self) -> None:
        """Every request is queued (reactor thread): from now on the last answer delivers."""
        with self._lock:
            self._started = True
            done = self._left == 0
        if done:
            self._deliver()

    def give_up(self, error: BaseException) -> None:
        """Delivers now (reactor thread), *error* for the requests still unanswered."""
        with self._lock:
            if self._finished:
                return
            self._finished = True
            outcomes = [outcome if outcome is not None else (None, error) for outcome in self._outcomes]
        self._on_done(outcomes)

    def _deliver(self) -> None:
        with self._lock:
            if self._finished:
                return
            self._finished = True
            outcomes = [outcome for outcome in self._outcomes if outcome is not None]
        self._on_done(outcomes)
