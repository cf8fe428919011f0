"""Controller election in ZooKeeper: ``/controller`` and ``/controller_epoch``.

Owns :class:`ControllerZk` — electing a controller (the multi that creates
``/controller`` and bumps the epoch), reading who and which epoch, resigning,
the controller watch — and :class:`ControllerElection`, the election outcome
whose ``epoch_zk_version`` fences every later controller write.
"""

from __future__ import annotations

from typing import NamedTuple

from mafka.coordination.kafka_zk.core import ZkFamily, _deferred
from mafka.coordination.store import (
    BadVersionError,
    CreateOp,
    NodeExistsError,
    SetOp,
    Stat,
    StoreError,
    WatchCallback,
    WatchHandle,
)
from mafka.coordination.znodes.brokers import ControllerEpochZNode, ControllerZNode

__all__ = ["ControllerElection", "ControllerZk"]


class ControllerElection(NamedTuple):
    """The outcome of :meth:`KafkaZkClient.elect_controller`.

    Attributes:
        won: True if this broker is now the controller.
        controller_epoch: The new epoch if won; otherwise the epoch stored in
            ``/controller_epoch`` when we looked (-1 if unknown).
        epoch_zk_version: ``/controller_epoch``'s zkVersion matching
            ``controller_epoch`` (the fencing token if won; -1 if unknown).
    """

    won: bool
    controller_epoch: int
    epoch_zk_version: int


class ControllerZk(ZkFamily):
    """Controller election and its reads (``KafkaZkClient``'s controller operations)."""

    async def _read_controller_epoch(self) -> tuple[int, int] | None:
        got = await self._core.get_or_none(ControllerEpochZNode.PATH)
        return None if got is None else (ControllerEpochZNode.decode(got[0]), got[1].version)

    @_deferred
    async def get_controller_id(self) -> int | None:
        """The controller's broker id from ``/controller``, or None (absent or unreadable, as Kafka)."""
        got = await self._core.get_or_none(ControllerZNode.PATH)
        if got is None:
            return None
        try:
            return ControllerZNode.decode(got[0]).broker_id
        except ValueError:
            return None

    @_deferred
    async def get_controller_registration(self) -> tuple[int, int, int] | None:
        """``(broker id, czxid, session)`` of ``/controller``, or None (absent or unreadable).

        The czxid tells one registration from another of the same broker (a
        controller elected again creates a new node); the session is the
        ZooKeeper session owning the ephemeral node.
        """
        got = await self._core.get_or_none(ControllerZNode.PATH)
        if got is None:
            return None
        try:
            return ControllerZNode.decode(got[0]).broker_id, got[1].czxid, got[1].ephemeral_owner
        except ValueError:
            return None

    @_deferred
    async def get_controller_epoch(self) -> tuple[int, int] | None:
        """``(controller epoch, its zkVersion)`` from ``/controller_epoch``, or None."""
        return await self._read_controller_epoch()

    @_deferred
    async def elect_controller(self, broker_id: int, now_ms: int) -> ControllerElection:
        """Tries to become the controller (KC ``elect`` + ZC ``registerControllerAndIncrementControllerEpoch``).

        1. If ``/controller`` exists, someone (possibly a stale registration of
           ours) is the controller: lose.
        2. Read ``/controller_epoch`` → (E, V), creating it as ``0`` if missing.
        3. One multi: create ephemeral ``/controller`` (``{"version":1,"brokerid":…,"timestamp":"now_ms"}``)
           and ``setData(/controller_epoch, E+1, version V)``.  Success → won,
           epoch E+1, the new zkVersion.
        4. NodeExists/BadVersion → re-read: won only if ``/controller`` names us
           and the epoch is E+1 (our write went through), else lose.

        Returns:
            A :class:`ControllerElection`; keep ``epoch_zk_version`` to fence writes.
        """
        if await self._core.get_or_none(ControllerZNode.PATH) is not None:
            current = await self._read_controller_epoch()
            return ControllerElection(False, *(current or (-1, -1)))
        current = await self._read_controller_epoch()
        if current is None:
            try:
                await self._store.create(
                    ControllerEpochZNode.PATH,
                    ControllerEpochZNode.encode(ControllerEpochZNode.INITIAL_EPOCH),
                )
                current = (
                    ControllerEpochZNode.INITIAL_EPOCH,
                    ControllerEpochZNode.INITIAL_ZK_VERSION,
                )
            except NodeExistsError:
                current = await self._read_controller_epoch()
                if current is None:
                    raise StoreError(
                        "/controller_epoch existed before but went away while reading it"
                    ) from None
        epoch, epoch_zk_version = current
        new_epoch = epoch + 1
        try:
            results = await self._store.transaction(
                [
                    CreateOp(
                        ControllerZNode.PATH,
                        ControllerZNode(broker_id, now_ms).encode(),
                        ephemeral=True,
                    ),
                    SetOp(
                        ControllerEpochZNode.PATH,
                        ControllerEpochZNode.encode(new_epoch),
                        epoch_zk_version,
                    ),
                ]
            )
        except (NodeExistsError, BadVersionError):
            controller = await self.get_controller_id()
            after = await self._read_controller_epoch()
            if controller == broker_id and after is not None and after[0] == new_epoch:
                return ControllerElection(True, new_epoch, after[1])
            return ControllerElection(False, *(after or (-1, -1)))
        set_stat = results[1]
        assert isinstance(set_stat, Stat)
        return ControllerElection(True, new_epoch, set_stat.version)

    @_deferred
    async def delete_controller(self, epoch_zk_version: int) -> None:
        """Resigns: deletes ``/controller`` epoch-checked (KC ``triggerControllerMove``); absent is fine."""
        await self._core.delete_checked(ControllerZNode.PATH, epoch_zk_version)

    def watch_controller(self, callback: WatchCallback) -> WatchHandle:
        """``/controller`` created, changed or deleted."""
        return self._store.watch_data(ControllerZNode.PATH, callback)
