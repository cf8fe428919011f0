"""Partition states in ZooKeeper: ``/brokers/topics/<t>/partitions/<p>/state`` and its conditional writes.

Owns :class:`PartitionStateZk` — the controller's epoch-checked creates and
zkVersion-conditional updates of leader/ISR state, the partition leader's own
ISR write, reads and the state watch — and :class:`PartitionStateResults`,
the per-partition outcome of a batch of writes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import NamedTuple

from mafka.coordination.kafka_zk.core import ZkFamily, _deferred
from mafka.coordination.store import (
    BadVersionError,
    CreateOp,
    NoNodeError,
    SetOp,
    Stat,
    StoreError,
    WatchCallback,
    WatchHandle,
)
from mafka.coordination.znodes.topics import (
    LeaderIsrAndControllerEpoch,
    partition_state_path,
    topic_partition_path,
    topic_partitions_path,
)
from mafka.topics import TopicPartitionTuple

__all__ = ["PartitionStateResults", "PartitionStateZk"]


class PartitionStateResults(NamedTuple):
    """Per-partition outcome of a batch of partition-state writes.

    Attributes:
        successes: Partition → the state written, carrying its new zk_version.
        failures: Partition → the store error (NoNode, NodeExists, …).
        bad_version: Partitions whose expected zkVersion was stale (re-read and retry).
    """

    successes: dict[TopicPartitionTuple, LeaderIsrAndControllerEpoch]
    failures: dict[TopicPartitionTuple, Exception]
    bad_version: list[TopicPartitionTuple]


class PartitionStateZk(ZkFamily):
    """Leader/ISR state reads and writes (``KafkaZkClient``'s partition-state operations)."""

    @_deferred
    async def create_partition_states(
        self,
        states: Mapping[TopicPartitionTuple, LeaderIsrAndControllerEpoch],
        controller_epoch: int,
        epoch_zk_version: int,
    ) -> PartitionStateResults:
        """Creates the state nodes of new partitions (PSM ``initializeLeaderAndIsrForPartitions``).

        Each state is written with *controller_epoch* (replacing the state's
        own).  As Kafka, the empty parents ``…/partitions`` and
        ``…/partitions/<p>`` are created first (existing ones are fine) but
        never the topic node itself, so a deleted topic is not resurrected:
        its partitions fail with NoNodeError.  Every create is epoch-checked
        and they all go in one pipelined batch (ZooKeeper applies them in the
        order sent, so the parents come before the states), as Kafka's
        ``createTopicPartitionStatesRaw``.

        Returns:
            Per-partition results; successes carry zk_version 0.

        Raises:
            ControllerMovedError: The epoch check failed.
        """
        stamped = {
            tp: replace(state, controller_epoch=controller_epoch) for tp, state in states.items()
        }
        parents = [topic_partitions_path(topic) for topic in dict.fromkeys(topic for topic, _ in stamped)]
        parents += [topic_partition_path(topic, partition) for topic, partition in stamped]
        creates = [
            [CreateOp(partition_state_path(topic, partition), state.encode())]
            for (topic, partition), state in stamped.items()
        ]
        outcomes = await self._core.epoch_checked_many(
            [[CreateOp(path)] for path in parents] + creates, epoch_zk_version
        )
        # A parent that exists already is fine; a missing topic shows in its partitions' creates.
        results = PartitionStateResults({}, {}, [])
        for (tp, state), outcome in zip(stamped.items(), outcomes[len(parents) :], strict=True):
            if isinstance(outcome, StoreError):
                results.failures[tp] = outcome
            else:
                results.successes[tp] = state.with_zk_version(0)
        return results

    @_deferred
    async def get_partition_state(
        self, topic: str, partition: int
    ) -> tuple[LeaderIsrAndControllerEpoch, int] | None:
        """``(state, zkVersion)`` of one partition (the state also carries zk_version), or None."""
        got = await self._core.get_or_none(partition_state_path(topic, partition))
        if got is None:
            return None
        data, stat = got
        return LeaderIsrAndControllerEpoch.decode(data, stat.version), stat.version

    @_deferred
    async def get_partition_states(
        self, partitions: Iterable[TopicPartitionTuple]
    ) -> dict[TopicPartitionTuple, LeaderIsrAndControllerEpoch]:
        """States (with zk_version) of the partitions that have one; others are left out.

        One pipelined batch of reads (Kafka's ``getTopicPartitionStatesRaw``).
        """
        tps = list(dict.fromkeys(partitions))
        got = await self._core.get_many([partition_state_path(topic, partition) for topic, partition in tps])
        return {
            tp: LeaderIsrAndControllerEpoch.decode(item[0], item[1].version)
            for tp, item in zip(tps, got, strict=True)
            if item is not None
        }

    @_deferred
    async def update_partition_states_conditionally(
        self,
        states: Mapping[TopicPartitionTuple, LeaderIsrAndControllerEpoch],
        controller_epoch: int,
        epoch_zk_version: int,
    ) -> PartitionStateResults:
        """The controller's state writes (ZC ``updateLeaderAndIsr``): one conditional setData per partition.

        Each state is written with *controller_epoch*, expecting its own
        ``zk_version`` (-1: any), behind the controller-epoch check — one
        multi ``[check epoch, setData(state, zk_version)]`` per partition, so
        each partition's compare-and-set succeeds or fails on its own; all
        of them go in one pipelined batch.

        Returns:
            Successes (with their new zk_version), BadVersion partitions in
            ``bad_version`` (re-read and retry them), other errors in ``failures``.

        Raises:
            ControllerMovedError: The epoch check failed.
        """
        new_states = {tp: replace(state, controller_epoch=controller_epoch) for tp, state in states.items()}
        sets = [
            [SetOp(partition_state_path(*tp), new_state.encode(), states[tp].zk_version)]
            for tp, new_state in new_states.items()
        ]
        outcomes = await self._core.epoch_checked_many(sets, epoch_zk_version)
        results = PartitionStateResults({}, {}, [])
        for (tp, new_state), outcome in zip(new_states.items(), outcomes, strict=True):
            if isinstance(outcome, BadVersionError):
                results.bad_version.append(tp)
            elif isinstance(outcome, StoreError):
                results.failures[tp] = outcome
            else:
                stat = outcome[0]
                assert isinstance(stat, Stat)
                results.successes[tp] = new_state.with_zk_version(stat.version)
        return results

    @_deferred
    async def conditional_update_partition_state_as_leader(
        self,
        partition: TopicPartitionTuple,
        state: LeaderIsrAndControllerEpoch,
        expected_version: int,
    ) -> tuple[bool, int]:
        """The partition leader's ISR write (Kafka 2.6 ``ReplicationUtils.updateLeaderAndIsr``).

        ``setData(state, expected_version)`` without a controller check.  On
        BadVersion the node is read back: if it already holds exactly *state*
        (leader, leader epoch, ISR, controller epoch) the write counts as done
        (a retried write that had succeeded).

        Returns:
            ``(True, new zkVersion)`` or ``(False, -1)`` (stale version, no node, or unreadable).
        """
        topic, p = partition
        path = partition_state_path(topic, p)
        try:
            stat = await self._store.set(path, state.encode(), expected_version)
            return True, stat.version
        except NoNodeError:
            return False, -1
        except BadVersionError:
            return await self._written_already(path, state)

    @_deferred
    async def conditional_update_partition_states_as_leader(
        self,
        writes: Mapping[TopicPartitionTuple, tuple[LeaderIsrAndControllerEpoch, int]],
    ) -> dict[TopicPartitionTuple, tuple[bool, int]]:
        """Many leader ISR writes at once: per partition, the outcome of
        :meth:`conditional_update_partition_state_as_leader` for its (state, expected version).

        Each partition's ``setData`` is a transaction of its own (independent compare-and-sets, which
        the store sends as few multis); a BadVersion is read back as the single write does.  A
        connection loss fails the whole call (as it fails each single write).
        """
        items = list(writes.items())
        outcomes = await self._store.transactions(
            [[SetOp(partition_state_path(*tp), state.encode(), version)] for tp, (state, version) in items]
        )
        results: dict[TopicPartitionTuple, tuple[bool, int]] = {}
        for (tp, (state, _version)), outcome in zip(items, outcomes, strict=True):
            if isinstance(outcome, NoNodeError):
                results[tp] = (False, -1)
            elif isinstance(outcome, BadVersionError):
                results[tp] = await self._written_already(partition_state_path(*tp), state)
            elif isinstance(outcome, StoreError):
                raise outcome
            else:
                stat = outcome[0]
                assert isinstance(stat, Stat)
                results[tp] = (True, stat.version)
        return results

    async def _written_already(self, path: str, state: LeaderIsrAndControllerEpoch) -> tuple[bool, int]:
        got = await self._core.get_or_none(path)
        if got is None:
            return False, -1
        try:
            written = LeaderIsrAndControllerEpoch.decode(got[0], got[1].version)
        except ValueError:
            return False, -1
        return (True, got[1].version) if written == state else (False, -1)

    def watch_partition_state(
        self, topic: str, partition: int, callback: WatchCallback
    ) -> WatchHandle:
        """Data of a partition's state node."""
        return self._store.watch_data(partition_state_path(topic, partition), callback)
