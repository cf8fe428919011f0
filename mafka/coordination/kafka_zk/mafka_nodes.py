"""Mafka's own znodes in ZooKeeper: the slow-node reports, the rebalancer's state and a SCRAM secret, under ``/mafka``.

Owns :class:`MafkaZk` — writing and listing the per-broker
``/mafka/monitor/<id>`` reports, the version-checked
``/mafka/rebalancer/state`` reads and writes (bytes are their owners'), and
``/mafka/scram-fake-salt-key``: the cluster-wide secret from which every
broker derives the same fake salt for a SCRAM user that does not exist (so
an unknown user looks alike on every broker and across restarts).
"""

from __future__ import annotations

import secrets

from mafka.coordination.kafka_zk.core import ZkFamily, _deferred
from mafka.coordination.store import NodeExistsError, NoNodeError
from mafka.coordination.znodes.mafka_nodes import (
    MONITOR_PATH,
    REBALANCER_PATH,
    REBALANCER_STATE_PATH,
    monitor_path,
)

__all__ = ["MafkaZk", "SCRAM_FAKE_SALT_KEY_PATH"]

#: The cluster's secret for fake SCRAM salts (32 random bytes, created by the first broker).
SCRAM_FAKE_SALT_KEY_PATH = "/mafka/scram-fake-salt-key"


class MafkaZk(ZkFamily):
    """The slow-node reports and the rebalancer's state (``KafkaZkClient``'s operations on Mafka's own znodes)."""

    @_deferred
    async def write_monitor_report(self, broker_id: int, data: bytes) -> None:
        """Writes this broker's slow-node report to the ephemeral ``/mafka/monitor/<broker_id>`` (Mafka's own
        znode): created by this session the first time, overwritten after."""
        path = monitor_path(broker_id)
        try:
            await self._store.set(path, data)
            return
        except NoNodeError:
            pass
        await self._store.ensure_path(MONITOR_PATH)
        try:
            await self._store.create(path, data, ephemeral=True)
        except NodeExistsError:  # a previous session's node, not yet expired
            await self._store.set(path, data)

    @_deferred
    async def rebalancer_state(self) -> tuple[bytes, int] | None:
        """``/mafka/rebalancer/state`` (Mafka's own znode) and its version, or None."""
        got = await self._core.get_or_none(REBALANCER_STATE_PATH)
        return None if got is None else (got[0], got[1].version)

    @_deferred
    async def write_rebalancer_state(self, data: bytes, version: int | None) -> int:
        """Writes the rebalancer state if it is still at *version* (None: it must not exist yet); the new version.

        Raises:
            BadVersionError / NodeExistsError: someone else wrote it meanwhile.
        """
        if version is None:
            await self._store.ensure_path(REBALANCER_PATH)
            await self._store.create(REBALANCER_STATE_PATH, data)
            return 0
        stat = await self._store.set(REBALANCER_STATE_PATH, data, version)
        return stat.version

    @_deferred
    async def monitor_reports(self) -> dict[int, bytes]:
        """Every ``/mafka/monitor/<id>`` report, raw (broker id → JSON bytes)."""
        try:
            children = await self._store.get_children(MONITOR_PATH)
        except NoNodeError:
            return {}
        out: dict[int, bytes] = {}
        for child in children:
            got = await self._core.get_or_none(monitor_path(child))
            if got is not None and child.isdigit():
                out[int(child)] = got[0]
        return out

    @_deferred
    async def get_or_create_scram_fake_salt_key(self) -> bytes:
        """The cluster's fake-salt secret, creating it (32 random bytes) if no broker has yet."""
        got = await self._core.get_or_none(SCRAM_FAKE_SALT_KEY_PATH)
        if got is not None:
            return got[0]
        try:
            await self._store.create(SCRAM_FAKE_SALT_KEY_PATH, secrets.token_bytes(32), makepath=True)
        except NodeExistsError:
            pass
        data, _ = await self._store.get(SCRAM_FAKE_SALT_KEY_PATH)
        return data
