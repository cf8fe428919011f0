"""Broker registration in ZooKeeper: ``/brokers/ids/<id>`` and ``/brokers/seqid``.

Owns :class:`BrokerZk` — registering a broker (the ephemeral node whose czxid
is the broker epoch), reading live brokers, broker sequence ids and the
broker watches — and :class:`BrokerIdAlreadyRegisteredError`.
"""

from __future__ import annotations

from mafka.coordination.kafka_zk.core import ZkFamily, _deferred
from mafka.coordination.store import (
    CreateOp,
    NodeExistsError,
    NoNodeError,
    Op,
    SetOp,
    Stat,
    WatchCallback,
    WatchHandle,
)
from mafka.coordination.znodes.brokers import (
    BROKER_IDS_PATH,
    BROKER_SEQUENCE_ID_PATH,
    BrokerRegistration,
    broker_path,
)

__all__ = ["BrokerIdAlreadyRegisteredError", "BrokerZk"]


class BrokerIdAlreadyRegisteredError(NodeExistsError):
    """``/brokers/ids/N`` exists and belongs to another ZooKeeper session."""


class BrokerZk(ZkFamily):
    """Broker registration and the live-broker reads (``KafkaZkClient``'s broker operations)."""

    @_deferred
    async def generate_broker_sequence_id(self) -> int:
        """Kafka's ``generateBrokerSequenceId``: bumps ``/brokers/seqid``, returns its new version (1, 2, …)."""
        while True:
            try:
                stat = await self._store.set(BROKER_SEQUENCE_ID_PATH, b"", -1)
                return stat.version
            except NoNodeError:
                await self._store.ensure_path(BROKER_SEQUENCE_ID_PATH)

    @_deferred
    async def register_broker(self, registration: BrokerRegistration) -> int:
        """Creates the ephemeral ``/brokers/ids/N``; returns the broker epoch (the node's czxid).

        As Kafka (KIP-380): one multi ``create(path, empty, EPHEMERAL)`` +
        ``setData(path, json, version 0)``.  If the node exists and this session
        owns it (a retried registration), its czxid is returned.

        Raises:
            BrokerIdAlreadyRegisteredError: Another session holds the id.
            NoNodeError: ``/brokers/ids`` does not exist (call :meth:`create_persistent_roots`).
        """
        path = registration.path
        ops: list[Op] = [CreateOp(path, b"", ephemeral=True), SetOp(path, registration.encode(), 0)]
        for _ in range(10):
            try:
                results = await self._store.transaction(ops)
            except NodeExistsError:
                got = await self._core.get_or_none(path)
                if got is None:
                    continue  # it went away while we looked: try again
                stat = got[1]
                if stat.ephemeral_owner and stat.ephemeral_owner == self._store.session_id:
                    return stat.czxid
                raise BrokerIdAlreadyRegisteredError(
                    f"broker id {registration.id} already registered (at {path}, by session {stat.ephemeral_owner:#x})"
                ) from None
            set_stat = results[1]
            assert isinstance(set_stat, Stat)
            return set_stat.czxid
        raise BrokerIdAlreadyRegisteredError(
            f"broker id {registration.id}: registration kept racing"
        )

    @_deferred
    async def update_broker(self, registration: BrokerRegistration) -> None:
        """Kafka's ``updateBrokerInfo``: rewrites ``/brokers/ids/N`` (any version)."""
        await self._store.set(registration.path, registration.encode(), -1)

    @_deferred
    async def get_broker(self, broker_id: int) -> BrokerRegistration | None:
        """The registration of *broker_id*, or None if it is not live."""
        got = await self._core.get_or_none(broker_path(broker_id))
        return None if got is None else BrokerRegistration.decode(broker_id, got[0])

    @_deferred
    async def get_broker_and_epoch(self, broker_id: int) -> tuple[BrokerRegistration, int] | None:
        """``(registration, broker epoch)`` of *broker_id*, or None if it is not live."""
        got = await self._core.get_or_none(broker_path(broker_id))
        return None if got is None else (BrokerRegistration.decode(broker_id, got[0]), got[1].czxid)

    @_deferred
    async def get_broker_session(self, broker_id: int) -> tuple[int, int] | None:
        """``(broker epoch, ZooKeeper session owning the registration)`` of *broker_id*, or None."""
        got = await self._core.get_or_none(broker_path(broker_id))
        return None if got is None else (got[1].czxid, got[1].ephemeral_owner)

    @_deferred
    async def get_broker_ids(self) -> list[int]:
        """Live broker ids, sorted (Kafka's ``getSortedBrokerList``)."""
        return sorted(int(child) for child in await self._core.children_or_empty(BROKER_IDS_PATH))

    @_deferred
    async def get_all_brokers(self) -> dict[int, tuple[BrokerRegistration, int]]:
        """Broker id → ``(registration, broker epoch = czxid)`` of every live broker, by id.

        Brokers that vanish between the listing and the read are left out.
        """
        out: dict[int, tuple[BrokerRegistration, int]] = {}
        for broker_id in sorted(
            int(child) for child in await self._core.children_or_empty(BROKER_IDS_PATH)
        ):
            got = await self._core.get_or_none(broker_path(broker_id))
            if got is not None:
                out[broker_id] = (BrokerRegistration.decode(broker_id, got[0]), got[1].czxid)
        return out

    def watch_broker_ids(self, callback: WatchCallback) -> WatchHandle:
        """Children of ``/brokers/ids`` (brokers come and go)."""
        return self._store.watch_children(BROKER_IDS_PATH, callback)

    def watch_broker(self, broker_id: int, callback: WatchCallback) -> WatchHandle:
        """Data of ``/brokers/ids/<id>`` (re-registration with new endpoints)."""
        return self._store.watch_data(broker_path(broker_id), callback)
