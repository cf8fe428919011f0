"""The shared core of Kafka's ZooKeeper operations: one store session, controller fencing, small reads.

Owns :class:`ZkCore` (the :class:`~mafka.coordination.store.ClusterStore`
session every operation family works through: reads that tolerate a missing
node, the epoch-checked multi that fences controller writes — Kafka's
``wrapRequestWithControllerEpochCheck`` — and epoch-checked deletes),
:class:`ControllerMovedError`, :class:`ZkFamily` (the base of the per-family
helpers :class:`~mafka.coordination.kafka_zk.client.KafkaZkClient` composes)
and ``_deferred`` (``async def`` → Deferred-returning method).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, ParamSpec, TypeVar

from twisted.internet.defer import Deferred

from mafka.coordination.store import (
    BadVersionError,
    CheckOp,
    ClusterStore,
    CreateOp,
    DeleteOp,
    NodeExistsError,
    NoNodeError,
    Op,
    Stat,
    StoreError,
)
from mafka.coordination.znodes.brokers import ControllerEpochZNode

__all__ = ["ControllerMovedError", "ZkCore", "ZkFamily"]

_P = ParamSpec("_P")
_T = TypeVar("_T")


class ControllerMovedError(Exception):
    """The ``/controller_epoch`` zkVersion check of a controller write failed: another controller won.

    Kafka's ``ControllerMovedException``; the controller must resign.
    """


def _deferred(fn: Callable[_P, Coroutine[Any, Any, _T]]) -> Callable[_P, Deferred[_T]]:
    """Turns an ``async def`` method into one returning a Deferred."""

    @functools.wraps(fn)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> Deferred[_T]:
        return Deferred.fromCoroutine(fn(*args, **kwargs))

    return wrapper


def _check_epoch_zk_version(epoch_zk_version: int) -> None:
    if epoch_zk_version < -1:
        raise ValueError(
            f"expected controller epoch zkVersion {epoch_zk_version} should be non-negative or equal to -1"
        )


class ZkCore:
    """One :class:`ClusterStore` session and the helpers every operation family shares.

    Args:
        store: A started store (one ZooKeeper session).
    """

    def __init__(self, store: ClusterStore) -> None:
        self._store = store

    @property
    def store(self) -> ClusterStore:
        """The underlying store."""
        return self._store

    async def get_or_none(self, path: str) -> tuple[bytes, Stat] | None:
        """``(data, stat)`` of *path*, or None if it does not exist."""
        try:
            return await self._store.get(path)
        except NoNodeError:
            return None

    async def children_or_empty(self, path: str) -> list[str]:
        """The children of *path*, sorted; ``[]`` if it does not exist."""
        try:
            return sorted(await self._store.get_children(path))
        except NoNodeError:
            return []

    async def epoch_checked(self, ops: Sequence[Op], epoch_zk_version: int) -> list[object]:
        """The coroutine behind :meth:`controller_epoch_checked` (same contract, for the families' own writes)."""
        _check_epoch_zk_version(epoch_zk_version)
        if epoch_zk_version == -1:
            return list(await self._store.transaction(list(ops)))
        try:
            results = await self._store.transaction(
                [CheckOp(ControllerEpochZNode.PATH, epoch_zk_version), *ops]
            )
        except BadVersionError as exc:
            # The store names no op: tell the check's failure from the ops' by the version now.
            # Versions only grow, so a check that failed still fails.
            stat = await self._store.exists(ControllerEpochZNode.PATH)
            if stat is None or stat.version != epoch_zk_version:
                found = None if stat is None else stat.version
                raise ControllerMovedError(
                    f"Controller epoch zkVersion check fails. Expected zkVersion = {epoch_zk_version}, found {found}"
                ) from exc
            raise
        return list(results[1:])

    async def get_many(self, paths: Sequence[str]) -> list[tuple[bytes, Stat] | None]:
        """``(data, stat)`` of every path, None for an absent one: one pipelined batch (the store's ``get_many``)."""
        if not paths:
            return []
        return list(await self._store.get_many(list(paths)))

    async def epoch_checked_many(
        self, op_lists: Sequence[Sequence[Op]], epoch_zk_version: int
    ) -> list[list[object] | StoreError]:
        """Each op list as a transaction of its own behind the controller-epoch check, all pipelined.

        Kafka's ``retryRequestsUntilConnected`` over requests each wrapped by
        ``wrapRequestWithControllerEpochCheck``: one multi
        ``[check(/controller_epoch, epoch_zk_version), *ops]`` per list, sent
        together, applied in order and independently.

        Returns:
            Per list, in order: its ops' results (the check's dropped) or the
            StoreError its transaction failed with (BadVersionError of one of
            *its* ops, NoNodeError, NodeExistsError, ConnectionLossError…).

        Raises:
            ControllerMovedError: The epoch check failed for any of them (the
                ones before it may have been applied — as when they are sent
                one by one).
        """
        _check_epoch_zk_version(epoch_zk_version)
        if not op_lists:
            return []
        if epoch_zk_version == -1:
            return list(await self._store.transactions([list(ops) for ops in op_lists]))
        check = CheckOp(ControllerEpochZNode.PATH, epoch_zk_version)
        outcomes = await self._store.transactions([[check, *ops] for ops in op_lists])
        if any(isinstance(outcome, BadVersionError) for outcome in outcomes):
            # The store names no op: a BadVersion is the check's when /controller_epoch has moved
            # on (versions only grow, so a check that failed still fails now).
            stat = await self._store.exists(ControllerEpochZNode.PATH)
            if stat is None or stat.version != epoch_zk_version:
                found = None if stat is None else stat.version
                raise ControllerMovedError(
                    f"Controller epoch zkVersion check fails. Expected zkVersion = {epoch_zk_version}, found {found}"
                )
        return [outcome if isinstance(outcome, StoreError) else list(outcome[1:]) for outcome in outcomes]

    def controller_epoch_checked(
        self, ops: Sequence[Op], epoch_zk_version: int
    ) -> Deferred[list[object]]:
        """Runs *ops* atomically behind ``check(/controller_epoch, epoch_zk_version)``.

        Args:
            ops: The controller's writes.
            epoch_zk_version: The zkVersion of ``/controller_epoch`` this
                controller got when elected; -1 runs *ops* unchecked.

        Returns:
            A Deferred firing with the results of *ops* (the check's own result dropped).
            It fails with :class:`ControllerMovedError` if the check failed, or
            with the first failing op's error otherwise.
        """
        return Deferred.fromCoroutine(self.epoch_checked(ops, epoch_zk_version))

    async def delete_checked(self, path: str, epoch_zk_version: int) -> bool:
        """Deletes *path* epoch-checked; False if it was absent."""
        try:
            await self.epoch_checked([DeleteOp(path)], epoch_zk_version)
        except NoNodeError:
            return False
        return True

    async def delete_checked_many(self, paths: Sequence[str], epoch_zk_version: int) -> None:
        """Deletes every path epoch-checked, in one pipelined batch; absent ones are fine.

        Raises:
            ControllerMovedError: The epoch check failed.
            StoreError: The first other failure (NotEmpty, ConnectionLoss…), after the whole batch ran.
        """
        outcomes = await self.epoch_checked_many([[DeleteOp(path)] for path in paths], epoch_zk_version)
        for outcome in outcomes:
            if isinstance(outcome, StoreError) and not isinstance(outcome, NoNodeError):
                raise outcome

    async def delete_recursive(self, path: str, epoch_zk_version: int) -> bool:
        """Kafka's ``deleteRecursive``: children first, each delete epoch-checked; False if absent."""
        try:
            children = await self._store.get_children(path)
        except NoNodeError:
            return False
        for child in children:
            await self.delete_recursive(f"{path}/{child}", epoch_zk_version)
        await self.delete_checked(path, epoch_zk_version)
        return True

    async def create_checked_if_absent(self, path: str, epoch_zk_version: int) -> None:
        """Creates the empty node *path* epoch-checked; an existing node or a missing parent is ignored."""
        try:
            await self.epoch_checked([CreateOp(path)], epoch_zk_version)
        except (NodeExistsError, NoNodeError):
            pass


class ZkFamily:
    """Base of the per-family operation helpers: the shared :class:`ZkCore` and its store.

    Args:
        core: The client's core (one store session).
    """

    def __init__(self, core: ZkCore) -> None:
        self._core = core
        self._store = core.store
