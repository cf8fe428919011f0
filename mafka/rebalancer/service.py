"""The rebalancer on the controller broker: the Twisted edge of :mod:`.plan` and :mod:`.execution`.

Every broker runs :class:`RebalancerService`; it acts only while its broker
is the active controller.  Each :meth:`tick` (every second):

1. reads ``/mafka/rebalancer/state``; a plan there that is running (written
   by a previous controller, or by ``mafka rebalance --execute``) is carried
   on: :meth:`Execution.step` with the controller's own view of which
   partitions are being reassigned and their replicas; the moves it answers
   are submitted as Kafka reassignments (``AlterPartitionReassignments``'
   controller path, the same as ``/admin/reassign_partitions``), each with
   the replication throttle ``mafka.rebalancer.throttle.bytes.per.sec`` if
   set (topic ``leader/follower.replication.throttled.replicas`` and broker
   ``leader/follower.replication.throttled.rate``, removed when the plan ends);
2. with ``mafka.rebalancer.enable`` and no plan running, every
   ``mafka.rebalancer.interval.ms`` it plans from the monitor reports (stale
   or malformed ones ignored, logged) and starts the plan if it has moves.

Writes are conditional on the znode's version, so a plan is never run twice
at once: a controller that lost the race re-reads on the next tick.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from typing import Any

from mafka.coordination.store import BadVersionError, NodeExistsError
from mafka.monitoring.report import parse_report

from .execution import Execution
from .plan import Plan, disks_from_reports, plan_dir_moves, plan_moves, replica_sizes

__all__ = ["RebalancerService", "plan_from_reports"]

log = logging.getLogger(__name__)



def plan_from_reports(raw_reports: dict[int, bytes], assignment: dict[tuple[str, int], tuple[int, ...]],
                      racks: dict[int, str | None], busy: set[tuple[str, int]], threshold: float, now_ms: int,
                      max_age_ms: int) -> tuple[Plan, list[str]]:
    """The plan, and a line for every report left out (missing brokers are simply absent)."""
    reports, ignored = {}, []
    for broker, data in sorted(raw_reports.items()):
        report = parse_report(data, now_ms, max_age_ms)
        if report is None or report.get("broker") != broker:
            ignored.append(f"the report of broker {broker} is stale or malformed: ignored")
        else:
            reports[broker] = report
    plan = plan_moves(assignment, disks_from_reports(reports), replica_sizes(reports), threshold, racks=racks,
                      busy=busy)
    # then within brokers: a log dir above the threshold sheds to the broker's other dirs
    within = plan_dir_moves(reports, threshold, busy | {(m.topic, m.partition) for m in plan.moves})
    plan.moves += within.moves
    plan.decisions += within.decisions
    return plan, ignored


class RebalancerService:
    """See the module docstring; ``broker`` gives ``config``, ``zk``, ``controller`` and ``reactor``."""

    def __init__(self, broker: Any) -> None:
        self.broker = broker
        self._last_plan_ms = 0
        self._busy = False
        self._submitted_dir_moves: set[tuple[str, str, int, str | None]] = set()  # (plan, topic, partition, dir)
        #: (plan, topic, partition) -> when a move was first held back because its target was not live
        self._waiting_since: dict[tuple[str, str, int], int] = {}

    def _now_ms(self) -> int:
        return int(self.broker.reactor.seconds() * 1000)

    async def tick(self) -> None:
        if self._busy:
            return
        self._busy = True
        try:
            got = await self.broker.zk.rebalancer_state()
            controller = self.broker.controller
            if controller is not None and getattr(controller, "is_active", False):
                await self._tick(controller, got)
            await self._own_dir_moves(got)
        except (BadVersionError, NodeExistsError):
            log.info("the rebalancer state changed meanwhile; re-reading it on the next tick")
        finally:
            self._busy = False

    async def _own_dir_moves(self, got: tuple[bytes, int] | None) -> None:
        """Every broker: start the moves between its own log dirs that the plan (as read this tick) marks running."""
        mover = getattr(self.broker, "log_dir_mover", None)
        if got is None or mover is None:
            return
        try:
            execution = Execution.from_json(json.loads(got[0]))
        except (ValueError, KeyError, TypeError):
            return
        # only this plan's keys are needed to avoid submitting a move twice
        self._submitted_dir_moves = {k for k in self._submitted_dir_moves if k[0] == execution.id}
        wanted = {}
        for m in execution.running_dir_moves(self.broker.broker_id):
            key = (execution.id, m.topic, m.partition, m.to_dir)
            if key not in self._submitted_dir_moves:
                self._submitted_dir_moves.add(key)
                wanted[(m.topic, m.partition)] = m.to_dir
        if not wanted:
            return
        errors = await mover.alter_replica_log_dirs(wanted, lambda tp: True)
        for tp, code in errors.items():
            if getattr(code, "value", code):
                log.warning("rebalancer: moving %s-%d to %s failed: %s", tp[0], tp[1], wanted[tp],
                            getattr(code, "name", code))
            else:
                log.info("rebalancer: moving %s-%d to log dir %s", tp[0], tp[1], wanted[tp])

    async def _tick(self, controller: Any, got: tuple[bytes, int] | None) -> None:
        zk, config = self.broker.zk, self.broker.config
        now = self._now_ms()
        execution = version = None
        if got is not None:
            data, version = got
            try:
                execution = Execution.from_json(json.loads(data))
            except (ValueError, KeyError, TypeError) as exc:
                log.error("/mafka/rebalancer/state is malformed (%s); not acting on it", exc)
                return
        if execution is not None and not execution.finished:
            await self._carry_on(controller, execution, version, now)
            return
        if not config.mafka_rebalancer_enable or now - self._last_plan_ms < config.mafka_rebalancer_interval_ms:
            return
        self._last_plan_ms = now
        ctx = controller.context
        assignment = {tp: tuple(ctx.partition_replicas(tp)) for tp in ctx.all_partitions()}
        racks = {b: getattr(reg, "rack", None) for b, reg in ctx.live_brokers.items()}
        raw = await zk.monitor_reports()
        plan, ignored = plan_from_reports(raw, assignment, racks, set(ctx.partitions_being_reassigned),
                                          config.mafka_rebalancer_disk_usage_threshold, int(time.time() * 1000),
                                          3 * config.mafka_monitor_interval_ms)
        for line in ignored:
            log.warning("rebalancer: %s", line)
        if not plan.moves:
            log.debug("rebalancer: nothing to move (%s)", "; ".join(plan.decisions))
            return
        new = Execution.start(f"auto-{uuid.uuid4().hex[:8]}", plan.moves, now,
                              max_concurrent=config.mafka_rebalancer_max_concurrent_moves,
                              pipelined=config.mafka_rebalancer_pipelined, origin="auto",
                              decisions=[*ignored, *plan.decisions])
        log.info("rebalancer: starting plan %s: %s", new.id, "; ".join(plan.decisions))
        await zk.write_rebalancer_state(json.dumps(new.to_json()).encode(), version)

    async def _carry_on(self, controller: Any, execution: Execution, version: int | None, now: int) -> None:
        ctx = controller.context
        tps = {m.tp for m in execution.moves}
        replicas_now = {tp: tuple(ctx.partition_replicas(tp)) for tp in tps}
        reassigning = {tp for tp in tps if tp in ctx.partitions_being_reassigned}
        dirs_now: dict[tuple[tuple[str, int], int], str] = {}
        if any(m.move.between_dirs for m in execution.moves):
            max_age = 3 * self.broker.config.mafka_monitor_interval_ms
            for broker, data in (await self.broker.zk.monitor_reports()).items():
                report = parse_report(data, int(time.time() * 1000), max_age)
                for p in (report or {}).get("partitions", ()):
                    dirs_now[((p["topic"], int(p["partition"])), broker)] = p.get("logDir")
        before = json.dumps(execution.to_json())
        starting = [m for m in execution.step(reassigning, replicas_now, now, dirs_now) if not m.between_dirs]
        starting = self._hold_back_moves_to_brokers_away(execution, starting, set(ctx.live_brokers), now)
        if starting:
            await self._throttle(starting)
            code, message, results = await controller.alter_partition_reassignments(
                {(m.topic, m.partition): list(m.replicas) for m in starting})
            for m in starting:
                tp = (m.topic, m.partition)
                error = code if code.value else results.get(tp, (code, None))[0]
                if error.value:
                    execution.fail(tp, now, error.name)
                    log.warning("rebalancer: %s-%d not moved: %s", m.topic, m.partition, error.name)
                else:
                    log.info("rebalancer: moving %s-%d from broker %d to broker %d (%s)", m.topic, m.partition,
                             m.source, m.target, m.reason)
        if execution.finished:
            await self._unthrottle(execution)
            log.info("rebalancer: %s", execution.log[-1][1] if execution.log else f"plan {execution.id} ended")
        after = json.dumps(execution.to_json())
        if after != before:
            await self.broker.zk.write_rebalancer_state(after.encode(), version)

    def _hold_back_moves_to_brokers_away(self, execution: Execution, starting: list[Any], live: set[int],
                                         now: int) -> list[Any]:
        """The moves of *starting* whose target broker is live; the others go back to pending.

        A target can be away for a moment: a broker restarting, or one whose new registration the
        controller has not seen yet (the next controller resumes a plan right after a failover,
        often while the old controller's broker is still coming back).  Kafka would refuse such a
        reassignment (INVALID_REPLICA_ASSIGNMENT), which would fail the move for good; it waits
        instead, up to three ZooKeeper session timeouts (at least 30 s), and then fails.
        """
        bound_ms = max(30_000, 3 * self.broker.config.zookeeper_session_timeout_ms)
        ready = []
        for m in starting:
            key = (execution.id, m.topic, m.partition)
            if m.target in live:
                self._waiting_since.pop(key, None)
                ready.append(m)
                continue
            since = self._waiting_since.setdefault(key, now)
            why = f"broker {m.target} is not live"
            if now - since >= bound_ms:
                self._waiting_since.pop(key, None)
                execution.fail((m.topic, m.partition), now, f"{why} ({(now - since) / 1000:.0f} s)")
                log.warning("rebalancer: %s-%d not moved: %s for %.0f s", m.topic, m.partition, why,
                            (now - since) / 1000)
            else:
                execution.defer((m.topic, m.partition), now, why, say=since == now)
                if since == now:
                    log.info("rebalancer: %s-%d waits: %s", m.topic, m.partition, why)
        return ready

    # ------------------------------------------------------------------ throttles

    async def _throttle(self, moves: list[Any]) -> None:
        rate = self.broker.config.mafka_rebalancer_throttle_bytes_per_sec
        if rate <= 0:
            return
        zk = self.broker.zk
        brokers: set[int] = set()
        for m in moves:
            config = dict(await zk.get_topic_config(m.topic))
            leaders = _entries(config.get("leader.replication.throttled.replicas"))
            followers = _entries(config.get("follower.replication.throttled.replicas"))
            leaders |= {f"{m.partition}:{r}" for r in m.replicas if r != m.target}
            followers.add(f"{m.partition}:{m.target}")
            config["leader.replication.throttled.replicas"] = ",".join(sorted(leaders))
            config["follower.replication.throttled.replicas"] = ",".join(sorted(followers))
            await zk.set_topic_config(m.topic, config)
            brokers |= set(m.replicas) | {m.source}
        for b in sorted(brokers):
            config = dict(await zk.get_broker_config(b))
            config["leader.replication.throttled.rate"] = str(rate)
            config["follower.replication.throttled.rate"] = str(rate)
            await zk.set_broker_config(b, config)

    async def _unthrottle(self, execution: Execution) -> None:
        if self.broker.config.mafka_rebalancer_throttle_bytes_per_sec <= 0:
            return
        zk = self.broker.zk
        brokers: set[int] = set()
        for topic in sorted({m.move.topic for m in execution.moves}):
            try:
                config = dict(await zk.get_topic_config(topic))
                for key in ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas"):
                    config.pop(key, None)
                await zk.set_topic_config(topic, config)
            except Exception as exc:  # noqa: BLE001 - a deleted topic keeps no throttle
                log.info("rebalancer: throttle of %s not removed: %s", topic, exc)
        for m in execution.moves:
            brokers |= set(m.move.replicas) | {m.move.source}
        for b in sorted(brokers):
            config = dict(await zk.get_broker_config(b))
            config.pop("leader.replication.throttled.rate", None)
            config.pop("follower.replication.throttled.rate", None)
            await zk.set_broker_config(b, config)


def _entries(setting: str | None) -> set[str]:
    return {e.strip() for e in (setting or "").split(",") if e.strip() and e.strip() != "*"}
