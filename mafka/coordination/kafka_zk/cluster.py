"""The cluster-wide znodes in ZooKeeper: persistent roots, ``/cluster/id``, ``/feature``, producer-id blocks.

Owns :class:`ClusterZk` — creating ``PersistentZkPaths`` at startup, the
cluster id (created once by the first broker), the finalized features node
and claiming blocks of producer ids from ``/latest_producer_id_block``.
"""

from __future__ import annotations

from collections.abc import Callable

from twisted.internet.defer import DeferredLock

from mafka.coordination.kafka_zk.core import ZkCore, ZkFamily, _deferred
from mafka.coordination.store import (
    BadVersionError,
    NodeExistsError,
    NoNodeError,
    WatchCallback,
    WatchHandle,
)
from mafka.coordination.znodes.cluster import ClusterIdZNode, FeatureZNode, ProducerIdBlock
from mafka.coordination.znodes.ids import new_cluster_id
from mafka.coordination.znodes.roots import PERSISTENT_ZK_PATHS

__all__ = ["ClusterZk"]


class ClusterZk(ZkFamily):
    """Startup roots, the cluster id, features and producer-id blocks (``KafkaZkClient``'s cluster operations).

    Args:
        core: The client's core.  Producer-id claims through one helper are
            serialized (one lock per client).
    """

    def __init__(self, core: ZkCore) -> None:
        super().__init__(core)
        self._pid_lock = DeferredLock()

    @_deferred
    async def create_persistent_roots(self) -> None:
        """Makes sure every path of ``ZkData.PersistentZkPaths`` exists (empty, persistent)."""
        for path in PERSISTENT_ZK_PATHS:
            await self._store.ensure_path(path)

    @_deferred
    async def get_cluster_id(self) -> str | None:
        """The cluster id in ``/cluster/id``, or None."""
        got = await self._core.get_or_none(ClusterIdZNode.PATH)
        return None if got is None else ClusterIdZNode.decode(got[0])

    @_deferred
    async def get_or_create_cluster_id(
        self, new_id_factory: Callable[[], str] = new_cluster_id
    ) -> str:
        """The cluster id, creating ``/cluster/id`` with ``new_id_factory()`` if there is none.

        If another broker creates it first, that broker's id is returned.
        """
        got = await self._core.get_or_none(ClusterIdZNode.PATH)
        if got is not None:
            return ClusterIdZNode.decode(got[0])
        proposed = new_id_factory()
        try:
            await self._store.create(
                ClusterIdZNode.PATH, ClusterIdZNode.encode(proposed), makepath=True
            )
            return proposed
        except NodeExistsError:
            data, _ = await self._store.get(ClusterIdZNode.PATH)
            return ClusterIdZNode.decode(data)

    @_deferred
    async def get_feature(self) -> tuple[FeatureZNode, int] | None:
        """``(/feature, zkVersion)``, or None."""
        got = await self._core.get_or_none(FeatureZNode.PATH)
        return None if got is None else (FeatureZNode.decode(got[0]), got[1].version)

    @_deferred
    async def set_feature(self, feature: FeatureZNode) -> int:
        """Creates or overwrites ``/feature`` (the controller at failover); returns its zkVersion."""
        data = feature.encode()
        try:
            stat = await self._store.set(FeatureZNode.PATH, data, -1)
            return stat.version
        except NoNodeError:
            try:
                await self._store.create(FeatureZNode.PATH, data)
                return 0
            except NodeExistsError:
                stat = await self._store.set(FeatureZNode.PATH, data, -1)
                return stat.version

    @_deferred
    async def claim_producer_id_block(
        self, broker_id: int, block_size: int = ProducerIdBlock.DEFAULT_SIZE
    ) -> ProducerIdBlock:
        """Claims the next block of producer ids (2.x ``ProducerIdManager.getNewProducerIdBlock``).

        Reads ``/latest_producer_id_block`` and its zkVersion; the next block is
        ``[end + 1, end + block_size]`` (``[0, block_size − 1]`` while the node
        is empty); it is written with that zkVersion.  On BadVersion the node is
        read back — if it holds our block the claim succeeded — else the loop
        starts over.  Claims through one client are serialized, so blocks from
        all brokers never overlap.

        Raises:
            OverflowError: Producer ids are exhausted.
            ValueError: The node holds garbage.
        """
        if block_size <= 0:
            raise ValueError(f"block_size must be positive, not {block_size}")
        await self._pid_lock.acquire()
        try:
            while True:
                got = await self._core.get_or_none(ProducerIdBlock.PATH)
                if got is None:
                    await self._store.ensure_path(ProducerIdBlock.PATH)
                    continue
                data, stat = got
                if data:
                    block = ProducerIdBlock.decode(data).next_block(broker_id, block_size)
                else:
                    block = ProducerIdBlock.first(broker_id, block_size)
                try:
                    await self._store.set(ProducerIdBlock.PATH, block.encode(), stat.version)
                    return block
                except BadVersionError:
                    back = await self._core.get_or_none(ProducerIdBlock.PATH)
                    if back is not None and back[0]:
                        try:
                            if ProducerIdBlock.decode(back[0]) == block:
                                return block
                        except ValueError:
                            pass
        finally:
            self._pid_lock.release()

    def watch_feature(self, callback: WatchCallback) -> WatchHandle:
        """``/feature`` created, changed or deleted."""
        return self._store.watch_data(FeatureZNode.PATH, callback)
