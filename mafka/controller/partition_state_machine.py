"""The partition state machine (Kafka 2.8's ``ZkPartitionStateMachine``).

Owns every partition state change the controller makes and the leader
elections they carry (``zk-controller-replication.md`` §3.1–3.3): legal moves
come from :mod:`mafka.controller.states`; a New partition going Online gets
its state znode created (:func:`~mafka.controller.election.initial_leader_and_isr`);
an Offline or Online one going Online gets a leader elected with the
strategy asked for (Offline, Reassign, Preferred, ControlledShutdown, or the
admin-only Unclean; decisions in :mod:`mafka.controller.election`), written
with a conditional, epoch-fenced update of the state znode (re-read and
retried on BadVersion), and announced with LeaderAndIsr / UpdateMetadata
through the core's request batch.  Whether an offline partition may elect
outside its ISR is read from the topic's ``unclean.leader.election.enable``
override, else the broker setting; unclean elections are counted in the
core's stats.  :meth:`PartitionStateMachine.startup` seeds the state table
at failover.

It holds no state of its own: the partition states and the leadership it
updates are in the :class:`~mafka.controller.context.ControllerContext` of
the :class:`~mafka.controller.core.ControllerCore` it is given.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import Any

from mafka.controller.config import as_bool
from mafka.controller.context import from_election_state, to_election_state
from mafka.controller.core import STATE_WRITE_ATTEMPTS, ControllerCore
from mafka.controller.election import (
    LeaderElectionStrategy,
    initial_leader_and_isr,
    leader_for_controlled_shutdown,
    leader_for_offline,
    leader_for_preferred_replica,
    leader_for_reassign,
)
from mafka.controller.states import PartitionState, StateChangeFailed
from mafka.coordination.kafka_zk import ControllerMovedError
from mafka.coordination.znodes import LeaderIsrAndControllerEpoch
from mafka.topics import TopicPartitionTuple

__all__ = ["ONLINE_RETRY_S", "PartitionStateMachine"]

#: The wait before trying again to bring online partitions that failed for a ZooKeeper error.
ONLINE_RETRY_S = 5.0

log = logging.getLogger("mafka.controller")

_P = PartitionState
_Strategy = LeaderElectionStrategy


class PartitionStateMachine:
    """Partition state changes and leader elections (PSM); see the module doc.

    Args:
        core: The controller's shared core.
    """

    def __init__(self, core: ControllerCore) -> None:
        self._core = core
        self._retry: Any = None

    async def startup(self) -> None:
        """PSM ``startup`` (at failover): seed every partition's state, then bring New and Offline ones online."""
        ctx = self._core.context
        for tp in ctx.all_partitions():
            state = ctx.leadership.get(tp)
            if state is None:
                ctx.partition_states.put(tp, _P.NewPartition)
            elif ctx.is_replica_online(state.leader, tp):
                ctx.partition_states.put(tp, _P.OnlinePartition)
            else:
                ctx.partition_states.put(tp, _P.OfflinePartition)
        await self.trigger_online_partition_state_change()

    async def handle_state_changes(
        self,
        tps: Iterable[TopicPartitionTuple],
        target: PartitionState,
        strategy: _Strategy | None = None,
    ) -> dict[TopicPartitionTuple, LeaderIsrAndControllerEpoch | Exception]:
        """PSM ``handleStateChanges``: one batch; returns election results (Online only)."""
        tps = list(tps)
        if not tps:
            return {}
        self._core.batch.new_batch()
        try:
            results = await self._do_partition_state_changes(tps, target, strategy)
            self._core.batch.send_requests(self._core.context.epoch)
        except ControllerMovedError:
            self._core.batch.clear()
            raise
        except Exception as exc:
            log.exception(
                "controller %d: error moving partitions to %s", self._core.broker_id, target.name
            )
            self._core.batch.abandon()
            results = {tp: exc for tp in tps}
        if target is _P.OnlinePartition:
            self._retry_if_stuck(tps, results)
        return results

    async def trigger_online_partition_state_change(
        self, partitions: Iterable[TopicPartitionTuple] | None = None
    ) -> dict[TopicPartitionTuple, LeaderIsrAndControllerEpoch | Exception]:
        """New and Offline partitions (topics being deleted excluded) → Online, Offline strategy."""
        ctx = self._core.context
        if partitions is None:
            partitions = ctx.partitions_in_states(_P.OfflinePartition, _P.NewPartition)
        tps = [tp for tp in partitions if not ctx.is_topic_queued_for_deletion(tp[0])]
        return await self.handle_state_changes(tps, _P.OnlinePartition, _Strategy.OFFLINE)

    def _retry_if_stuck(
        self, tps: list[TopicPartitionTuple], results: dict[TopicPartitionTuple, LeaderIsrAndControllerEpoch | Exception]
    ) -> None:
        """Tries again later if a partition that could be online is not, for a ZooKeeper failure.

        Kafka tries again only at the next broker or topic change; a new
        topic whose state znodes failed to be written (a dropped ZooKeeper
        connection) would stay leaderless until then.  A partition left New
        with a live replica, or one whose election failed otherwise than by
        having no eligible leader, is tried again after
        :data:`ONLINE_RETRY_S` (all New and Offline partitions, once per wait).
        """
        ctx = self._core.context
        stuck = any(
            ctx.partition_states.state(tp) is _P.NewPartition
            and any(b in ctx.live_broker_ids for b in ctx.partition_replicas(tp))
            for tp in tps
        ) or any(isinstance(r, Exception) and not isinstance(r, StateChangeFailed) for r in results.values())
        if not stuck or (self._retry is not None and self._retry.active()):
            return
        log.warning("controller %d: some partitions could not be brought online; trying again in %.0f s",
                    self._core.broker_id, ONLINE_RETRY_S)

        def fire() -> None:
            self._retry = None
            self._core.fire("RetryOnlinePartitions", self._retry_online, coalesce=True)

        self._retry = self._core.reactor.callLater(ONLINE_RETRY_S, fire)

    async def _retry_online(self) -> None:
        if self._core.is_active:
            await self.trigger_online_partition_state_change()

    async def _do_partition_state_changes(
        self, tps: list[TopicPartitionTuple], target: PartitionState, strategy: _Strategy | None
    ) -> dict[TopicPartitionTuple, LeaderIsrAndControllerEpoch | Exception]:
        ctx = self._core.context
        check = ctx.check_partition_transition(tps, target)
        for invalid in check.invalid:
            log.warning("controller %d: %s", self._core.broker_id, invalid.error)
        valid = list(check.valid)
        if target is _P.OnlinePartition:
            uninitialized = [
                tp for tp in valid if ctx.partition_states.state(tp) is _P.NewPartition
            ]
            to_elect = [
                tp
                for tp in valid
                if ctx.partition_states.state(tp) in (_P.OfflinePartition, _P.OnlinePartition)
            ]
            if uninitialized:
                for tp in await self._initialize_leader_and_isr(uninitialized):
                    ctx.partition_states.put(tp, _P.OnlinePartition)
            if not to_elect:
                return {}
            results = await self._elect_leaders(to_elect, strategy or _Strategy.OFFLINE)
            for tp, result in results.items():
                if not isinstance(result, Exception):
                    ctx.partition_states.put(tp, _P.OnlinePartition)
            return results
        for tp in valid:
            ctx.partition_states.put(tp, target)
        return {}

    async def _initialize_leader_and_isr(self, tps: list[TopicPartitionTuple]) -> list[TopicPartitionTuple]:
        """PSM ``initializeLeaderAndIsrForPartitions``: create the state znodes of new partitions."""
        ctx = self._core.context
        states: dict[TopicPartitionTuple, LeaderIsrAndControllerEpoch] = {}
        for tp in tps:
            replicas = ctx.partition_replicas(tp)
            initial = initial_leader_and_isr(
                replicas, ctx.live_broker_ids, controller_epoch=ctx.epoch
            )
            if initial is None:
                log.error(
                    "cannot bring %s online: none of its replicas %s is live", tp, list(replicas)
                )
                continue
            states[tp] = from_election_state(initial, ctx.epoch)
        if not states:
            return []
        try:
            created = await self._core.zk.create_partition_states(states, ctx.epoch, ctx.epoch_zk_version)
        except ControllerMovedError:
            raise
        except Exception:
            log.exception("creating the state znodes of %s failed", sorted(states))
            return []
        done: list[TopicPartitionTuple] = []
        for tp, state in created.successes.items():
            ctx.put_leadership(tp, state)
            self._core.batch.add_leader_and_isr(
                state.isr, tp, state, ctx.partition_replicas(tp), is_new=True
            )
            done.append(tp)
        for tp, exc in created.failures.items():
            log.error("creating the state znode of %s failed: %r", tp, exc)
        return done

    async def _unclean_allowed(self, topics: Iterable[str]) -> dict[str, bool]:
        """Each topic's ``unclean.leader.election.enable`` (its override, else the broker's); one batch of reads."""
        names = sorted(set(topics))
        if not names:
            return {}
        try:
            configs = await self._core.zk.get_topic_configs(names)
        except ControllerMovedError:
            raise
        except Exception:
            log.exception("reading the configs of %s failed", names)
            configs = {}
        out: dict[str, bool] = {}
        for topic in names:
            value = configs.get(topic, {}).get("unclean.leader.election.enable")
            out[topic] = (
                self._core.config.unclean_leader_election_enable if value is None else as_bool(value)
            )
        return out

    async def _elect_leaders(
        self, tps: list[TopicPartitionTuple], strategy: _Strategy
    ) -> dict[TopicPartitionTuple, LeaderIsrAndControllerEpoch | Exception]:
        """PSM ``electLeaderForPartitions``, timed as ``LeaderElectionRateAndTimeMs``."""
        started = time.monotonic()
        try:
            return await self._elect_leaders_timed(tps, strategy)
        finally:
            now = time.monotonic()
            self._core.stats.leader_elections.record(int(now * 1000), (now - started) * 1000.0)

    async def _elect_leaders_timed(
        self, tps: list[TopicPartitionTuple], strategy: _Strategy
    ) -> dict[TopicPartitionTuple, LeaderIsrAndControllerEpoch | Exception]:
        """Read the states, elect, write conditionally, retry BadVersion."""
        ctx = self._core.context
        results: dict[TopicPartitionTuple, LeaderIsrAndControllerEpoch | Exception] = {}
        remaining = list(tps)
        for _ in range(STATE_WRITE_ATTEMPTS):
            if not remaining:
                break
            current = await self._core.zk.get_partition_states(remaining)
            valid: dict[TopicPartitionTuple, LeaderIsrAndControllerEpoch] = {}
            for tp in remaining:
                state = current.get(tp)
                if state is None:
                    results[tp] = StateChangeFailed(
                        f"LeaderAndIsr information doesn't exist for partition {tp}"
                    )
                elif state.controller_epoch > ctx.epoch:
                    # Kafka only aborts this partition; a newer controller exists, so resign.
                    raise ControllerMovedError(
                        f"leader election for {tp}: state written by controller epoch "
                        f"{state.controller_epoch} > ours ({ctx.epoch})"
                    )
                else:
                    valid[tp] = state
            if not valid:
                remaining = []
                break
            unclean: dict[str, bool] = {}
            if strategy is _Strategy.UNCLEAN:
                unclean = {tp[0]: True for tp in valid}
            elif strategy is _Strategy.OFFLINE:
                no_live_isr = {
                    tp[0]
                    for tp, state in valid.items()
                    if not any(ctx.is_replica_online(r, tp) for r in state.isr)
                }
                unclean = await self._unclean_allowed(no_live_isr)
            to_write: dict[TopicPartitionTuple, LeaderIsrAndControllerEpoch] = {}
            recipients: dict[TopicPartitionTuple, tuple[int, ...]] = {}
            unclean_elected: set[TopicPartitionTuple] = set()
            for tp, state in valid.items():
                replicas = ctx.partition_replicas(tp)
                if strategy is _Strategy.CONTROLLED_SHUTDOWN:
                    live = [
                        r for r in replicas if ctx.is_replica_online(r, tp, include_shutting_down=True)
                    ]
                    election = leader_for_controlled_shutdown(
                        to_election_state(state), replicas, live, ctx.shutting_down
                    )
                elif strategy is _Strategy.PREFERRED:
                    live = [r for r in replicas if ctx.is_replica_online(r, tp)]
                    election = leader_for_preferred_replica(
                        to_election_state(state), replicas, live
                    )
                elif strategy is _Strategy.REASSIGN:
                    target = ctx.full_assignment(tp).target_replicas
                    live = [r for r in target if ctx.is_replica_online(r, tp)]
                    election = leader_for_reassign(to_election_state(state), target, live)
                else:
                    live = [r for r in replicas if ctx.is_replica_online(r, tp)]
                    election = leader_for_offline(
                        to_election_state(state), replicas, live, unclean.get(tp[0], False)
                    )
                if election.leader_and_isr is None:
                    results[tp] = StateChangeFailed(
                        f"Failed to elect leader for partition {tp[0]}-{tp[1]} under strategy "
                        f"{strategy.value}"
                    )
                    continue
                to_write[tp] = from_election_state(election.leader_and_isr, ctx.epoch)
                recipients[tp] = election.recipients
                if election.unclean:
                    unclean_elected.add(tp)
            if not to_write:
                remaining = []
                break
            written = await self._core.zk.update_partition_states_conditionally(
                to_write, ctx.epoch, ctx.epoch_zk_version
            )
            for tp, state in written.successes.items():
                if tp in unclean_elected:
                    # Kafka's UncleanLeaderElectionsPerSec: data the old ISR had may be lost.
                    self._core.stats.unclean_leader_elections += 1
                    log.warning(
                        "controller %d: unclean leader election for %s-%d: leader %d was not in "
                        "the ISR %s (leader epoch %d)",
                        self._core.broker_id,
                        tp[0],
                        tp[1],
                        state.leader,
                        list(valid[tp].isr),
                        state.leader_epoch,
                    )
                ctx.put_leadership(tp, state)
                self._core.batch.add_leader_and_isr(
                    recipients[tp], tp, state, ctx.partition_replicas(tp), is_new=False
                )
                results[tp] = state
            for tp, exc in written.failures.items():
                results[tp] = exc
            remaining = list(written.bad_version)
        for tp in remaining:
            results[tp] = StateChangeFailed(f"{tp}: the state znode kept changing")
        return results
