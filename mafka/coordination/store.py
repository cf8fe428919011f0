"""The ClusterStore seam: the small ZooKeeper interface the broker and controller use.

Two implementations: :class:`~mafka.coordination.kazoo_store.KazooStore`
(real ZooKeeper through kazoo) and
:class:`~mafka.coordination.memory_store.MemoryStore` (unit tests).  Nothing
else in Mafka imports kazoo (but KazooStore's plumbing,
:mod:`~mafka.coordination.kazoo_batch`).

Contract:

* every operation returns a Twisted ``Deferred`` that fires **on the reactor
  thread**; no call blocks the reactor (kazoo's own threads do the I/O);
* the batch operations (:meth:`ClusterStore.get_many`,
  :meth:`ClusterStore.transactions`) read or write thousands of znodes in a
  few round trips instead of one per znode (their requests are pipelined;
  ZooKeeper applies one session's requests in the order sent), as Kafka's
  ``KafkaZkClient.retryRequestsUntilConnected`` does since KAFKA-5642;
* watch callbacks also run on the reactor thread; watches are persistent
  (re-armed after every event) until cancelled with the returned handle;
* failures are the exceptions below (ZooKeeper's own errors translated);
* data is ``bytes``; Kafka's JSON codecs live in :mod:`mafka.coordination.znodes`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from twisted.internet.defer import Deferred

__all__ = [
    "ClusterStore",
    "Stat",
    "Op",
    "CheckOp",
    "CreateOp",
    "SetOp",
    "DeleteOp",
    "StoreError",
    "NoNodeError",
    "NodeExistsError",
    "BadVersionError",
    "NotEmptyError",
    "ConnectionLossError",
    "SessionExpiredError",
    "WatchHandle",
    "SessionListener",
    "validate_ops",
    "validate_path",
]


def validate_path(path: str) -> None:
    """Raises ValueError unless *path* is an absolute ZooKeeper path."""
    if not isinstance(path, str) or not path.startswith("/"):
        raise ValueError(f"path must be absolute: {path!r}")
    if path == "/":
        return
    if path.endswith("/"):
        raise ValueError(f"path must not end with '/': {path!r}")
    for part in path[1:].split("/"):
        if part in ("", ".", "..") or "\0" in part:
            raise ValueError(f"invalid path: {path!r}")


class StoreError(Exception):
    """A ZooKeeper operation failed."""


class NoNodeError(StoreError):
    """The znode (or its parent) does not exist."""


class NodeExistsError(StoreError):
    """The znode already exists."""


class BadVersionError(StoreError):
    """A conditional write found another version (someone else wrote first)."""


class NotEmptyError(StoreError):
    """A delete of a znode that has children."""


class ConnectionLossError(StoreError):
    """The connection dropped mid-operation; the outcome is unknown."""


class SessionExpiredError(StoreError):
    """The session is gone: its ephemeral znodes are deleted."""


@dataclass(frozen=True, slots=True)
class Stat:
    """A znode's metadata (ZooKeeper's Stat, the fields Kafka uses).

    Attributes:
        version: data version (Kafka's "zkVersion"), for conditional writes.
        czxid: the transaction id that created the node (Kafka's broker epoch).
        mzxid: the transaction id of the last change.
        ctime, mtime: creation and modification times (ms).
        ephemeral_owner: session id owning an ephemeral node, else 0.
        num_children: number of children.
    """

    version: int
    czxid: int
    mzxid: int = 0
    ctime: int = 0
    mtime: int = 0
    ephemeral_owner: int = 0
    num_children: int = 0


@dataclass(frozen=True, slots=True)
class CheckOp:
    """In a transaction: fail unless *path* has *version*."""

    path: str
    version: int


@dataclass(frozen=True, slots=True)
class CreateOp:
    path: str
    data: bytes = b""
    ephemeral: bool = False
    sequential: bool = False


@dataclass(frozen=True, slots=True)
class SetOp:
    path: str
    data: bytes
    version: int = -1


@dataclass(frozen=True, slots=True)
class DeleteOp:
    path: str
    version: int = -1


Op = CheckOp | CreateOp | SetOp | DeleteOp


def validate_ops(ops: Sequence[object]) -> None:
    """Raises TypeError/ValueError unless every op is a transaction op on a valid path."""
    for op in ops:
        if not isinstance(op, CheckOp | CreateOp | SetOp | DeleteOp):
            raise TypeError(f"not a transaction op: {op!r}")
        validate_path(op.path + "0" if isinstance(op, CreateOp) and op.sequential else op.path)


#: Called with no arguments when a watched thing changes; see ``watch_*``.
WatchCallback = Callable[[], None]


class WatchHandle(Protocol):
    def cancel(self) -> None:
        """Stops the watch; no callback runs after this returns."""


class SessionListener(Protocol):
    """Session lifecycle, reported on the reactor thread."""

    def session_lost(self) -> None:
        """Disconnected: ephemeral nodes may still exist (the session may come back)."""

    def session_expired(self) -> None:
        """The session is gone; ephemeral nodes were deleted; a new session follows."""

    def session_established(self) -> None:
        """Connected with a new session (after start or after expiry): re-register."""


class ClusterStore(Protocol):
    """A ZooKeeper client as Mafka uses it; every method returns a Deferred."""

    def start(self) -> Deferred[None]:
        """Connects (fires once a session is established)."""

    def stop(self) -> Deferred[None]:
        """Closes the session (its ephemeral nodes go at once)."""

    def add_session_listener(self, listener: SessionListener) -> None: ...

    @property
    def session_id(self) -> int:
        """The current session's id (0 when none)."""

    def create(
        self, path: str, data: bytes = b"", *, ephemeral: bool = False, sequential: bool = False, makepath: bool = False
    ) -> Deferred[str]:
        """Creates a znode; fires with its actual path (sequential suffix included)."""

    def ensure_path(self, path: str) -> Deferred[None]:
        """Creates *path* and missing parents as empty persistent nodes; no error if it exists."""

    def get(self, path: str) -> Deferred[tuple[bytes, Stat]]:
        """Data and Stat; NoNodeError if absent."""

    def exists(self, path: str) -> Deferred[Stat | None]: ...

    def set(self, path: str, data: bytes, version: int = -1) -> Deferred[Stat]:
        """Writes data if *version* matches (-1 = any); BadVersionError otherwise."""

    def delete(self, path: str, version: int = -1, *, recursive: bool = False) -> Deferred[None]: ...

    def get_children(self, path: str) -> Deferred[list[str]]: ...

    def transaction(self, ops: Sequence[Op]) -> Deferred[list[object]]:
        """Applies *ops* atomically (ZooKeeper multi); raises the first failing op's error.

        Results per op: created path (CreateOp), Stat (SetOp), True (CheckOp, DeleteOp).
        """

    def get_many(self, paths: Sequence[str]) -> Deferred[list[tuple[bytes, Stat] | None]]:
        """Reads every path in one pipelined batch: ``(data, Stat)`` per path, in order, None for an absent node.

        Not a snapshot: other sessions' writes may land between two of the
        reads.  An invalid path fails the call (ValueError) before anything is
        sent; any error other than a missing node (connection loss, no answer
        in time…) fails the whole call.
        """

    def transactions(self, op_lists: Sequence[Sequence[Op]]) -> Deferred[list[list[object] | StoreError]]:
        """Applies each op list as a transaction of its own (as :meth:`transaction`), all in one pipelined batch.

        The transactions are applied in the order given (a later one sees the
        earlier ones' writes) and independently: one failing does not undo or
        stop the others.  Fires with one outcome per op list, in order: its
        results (as :meth:`transaction` returns them) or the StoreError
        :meth:`transaction` would raise — ConnectionLossError when it got no
        answer (its outcome is then unknown).  An invalid op fails the call
        (TypeError/ValueError) before anything is sent.
        """

    def watch_children(self, path: str, callback: WatchCallback) -> WatchHandle:
        """Calls *callback* whenever *path*'s children change (and once the node appears)."""

    def watch_data(self, path: str, callback: WatchCallback) -> WatchHandle:
        """Calls *callback* whenever *path* is created, changed or deleted."""
