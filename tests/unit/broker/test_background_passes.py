"""Every periodic pass a broker registers is supervised (:mod:`mafka.background`).

A :class:`~mafka.broker.server.KafkaServer` on a ``task.Clock`` whose parts
are fakes that raise from every method: each pass it registers (its own, the
group and transaction coordinators') fails, is counted in
``mafka_background_pass_failures_total{pass=...}`` and runs again; a Twisted
``LoopingCall`` would have stopped at the first failure for good.  Worker
thread passes run synchronously (``run_blocking`` is patched).
"""

from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from twisted.internet import defer, task

from mafka.background import BackgroundPasses
from mafka.broker.config import BrokerConfig
from mafka.broker.delayed_delivery import DelayedDelivery
from mafka.broker.log_dir_mover import LogDirMover
from mafka.broker.metrics import metrics_site, render_metrics
from mafka.broker.metrics_snapshot import Snapshot
from mafka.broker.request_latency import RequestLatencies
from mafka.broker.server import KafkaServer
from mafka.broker.transaction_service import TransactionService


class Boom(Exception):
    pass


class Exploding:
    """Every method call is recorded (name, args) and raises :class:`Boom` while ``armed``;
    disarmed, it returns ``results[name]()`` (None for a method not there)."""

    def __init__(self, name: str, calls: list, results: dict | None = None, **attrs: Any) -> None:
        self._name = name
        self._calls = calls
        self._results = results or {}
        self.armed = True
        for key, value in attrs.items():
            setattr(self, key, value)

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)

        def method(*args: Any, **kwargs: Any) -> Any:
            self._calls.append((f"{self._name}.{attr}", args))
            if self.armed:
                raise Boom(f"{self._name}.{attr}")
            result = self._results.get(attr)
            return result() if result is not None else None

        return method


#: every pass of a broker with a cold tier (the cold-tier mover is only registered then)
BROKER_PASSES = {
    # in a worker thread
    "log-retention", "log-flush", "high-watermark-checkpoint", "recovery-point-checkpoint",
    "log-start-offset-checkpoint", "log-cleaner", "delete-pending-logs", "cold-tier-mover",
    # on the reactor
    "isr-shrink", "log-dir-mover", "isr-change-propagation", "offsets-expiration", "group-coordinator-tick",
    "transaction-coordinator-tick", "delayed-delivery", "monitor", "rebalancer", "reactor-idle", "consumer-lag",
    # the transaction coordinator's own, through the broker's supervisor
    "transaction-abort", "transactionalId-expiration",
}


class ExplodingRebalancer:
    def __init__(self, calls: list) -> None:
        self.calls = calls
        self.armed = True

    async def tick(self) -> None:
        self.calls.append(("rebalancer.tick", ()))
        await defer.succeed(None)
        if self.armed:
            raise Boom("rebalancer.tick")


def exploding_broker(delayed_messages: bool = True) -> tuple[KafkaServer, task.Clock, list, list]:
    clock = task.Clock()
    clock.advance(1_700_000_000)
    server = KafkaServer(BrokerConfig(broker_id=1), clock)
    server.run_blocking = lambda fn, *args: defer.maybeDeferred(fn, *args)  # "worker threads", synchronously
    calls: list = []
    partition = SimpleNamespace(high_watermark=42, delays=None)
    server.log_manager = Exploding("lm", calls, cold_dirs=[Path("/cold")])
    server.replica_manager = Exploding("rm", calls, partitions={("t", 0): partition})
    server.log_dir_mover = Exploding("mover", calls)
    server.group_service = Exploding("groups", calls)
    delayed = Exploding("delayed", calls)
    server.delayed_delivery = DelayedDelivery(server.replica_manager)
    server.delayed_delivery.tick = delayed.tick  # type: ignore[method-assign]  # bound before registration
    if delayed_messages:
        server.delayed_delivery.wake()  # a partition here holds delayed messages: it ticks
    txn = server.transaction_service = TransactionService(server)
    fakes = [server.log_manager, server.replica_manager, server.log_dir_mover, server.group_service, delayed]
    txn_calls = Exploding("txn", calls)
    fakes.append(txn_calls)
    # bound before registration: the passes hold these
    txn.tick = txn_calls.tick
    txn.coordinator.abort_timed_out_transactions = txn_calls.abort_timed_out_transactions
    txn.coordinator.remove_expired_transactional_ids = txn_calls.remove_expired_transactional_ids
    server._start_background_tasks()
    server.monitor = Exploding("monitor", calls, {"write": lambda: defer.succeed(None)})  # used at each run
    fakes.append(server.monitor)
    server.rebalancer = ExplodingRebalancer(calls)
    fakes.append(server.rebalancer)
    return server, clock, calls, fakes


def run_every_pass_twice(clock: task.Clock, server: KafkaServer) -> None:
    longest = max(p.interval_s for p in server.background.passes.values())
    for _ in range(2):
        clock.advance(longest)  # each pass runs once per advance (the next run is rescheduled after now)


def test_the_broker_registers_every_periodic_pass_with_the_supervisor() -> None:
    server, _, _, _ = exploding_broker()
    assert set(server.background.passes) == BROKER_PASSES


def test_every_pass_survives_an_exception_counts_it_and_runs_again() -> None:
    server, clock, calls, fakes = exploding_broker()
    bg = server.background
    # the metrics samplers read nothing the fakes explode in (the reactor's CPU clock; the group
    # manager, which the exploding group service has not)
    passes = {name: p for name, p in bg.passes.items() if name not in ("reactor-idle", "consumer-lag")}
    run_every_pass_twice(clock, server)
    for name, p in passes.items():
        assert p.runs >= 2, f"{name} did not run again after its failure"
        assert p.failures == p.runs, name
        assert bg.failure_count(name) == p.runs, name
        assert p.running
    called = {what for what, _ in calls}
    assert {"rm.maybe_shrink_isr", "rm.isr_changes_to_propagate", "mover.kick", "groups.tick", "groups.expire_offsets",
            "delayed.tick", "lm.retention_pass", "lm.flush_pass", "lm.write_high_watermarks", "lm.tier_pass",
            "lm.cleaner_pass", "lm.delete_pending_logs", "lm.checkpoint_recovery_points",
            "lm.checkpoint_log_start_offsets", "txn.tick", "txn.abort_timed_out_transactions",
            "txn.remove_expired_transactional_ids", "monitor.snapshot", "rebalancer.tick"} <= called

    # Healthy again: the passes go on, no new failures.
    for fake in fakes:
        fake.armed = False
    counts = {name: bg.failure_count(name) for name in passes}
    before = {name: p.runs for name, p in passes.items()}
    run_every_pass_twice(clock, server)
    for name, p in passes.items():
        assert p.runs > before[name], name
        assert bg.failure_count(name) == counts[name], name

    assert bg.stop_all().called
    assert bg.passes == {}


def test_thread_passes_get_the_partition_state_copied_on_the_reactor() -> None:
    server, clock, calls, _ = exploding_broker()
    clock.advance(max(server.config.log_retention_check_interval_ms,
                      server.config.replica_high_watermark_checkpoint_interval_ms) / 1000)
    args = {what: a for what, a in calls}
    assert args["lm.write_high_watermarks"] == ({("t", 0): 42},)
    assert args["lm.retention_pass"] == ({("t", 0): 42},)


def test_a_failed_isr_change_notification_is_announced_on_the_next_pass() -> None:
    clock = task.Clock()
    server = KafkaServer(BrokerConfig(broker_id=1), clock)
    changes = {("t", 0), ("t", 1)}
    rm = server.replica_manager = SimpleNamespace(isr_change_set=set())

    def isr_changes_to_propagate() -> list:
        changed = sorted(rm.isr_change_set | changes)
        changes.clear()
        rm.isr_change_set.clear()
        return changed

    rm.isr_changes_to_propagate = isr_changes_to_propagate
    posted: list = []

    def post(changed: list) -> defer.Deferred:
        posted.append(changed)
        return defer.fail(Boom("connection loss")) if len(posted) == 1 else defer.succeed("/isr_change_0")

    server.zk = SimpleNamespace(post_isr_change_notification=post)
    p = server.background.every("isr-change-propagation", 2.5, server._propagate_isr_changes)
    clock.advance(2.5)
    clock.advance(2.5)
    assert posted == [[("t", 0), ("t", 1)], [("t", 0), ("t", 1)]]
    assert p.failures == 1 and not rm.isr_change_set


def test_metrics_expose_the_failures_of_each_pass() -> None:
    clock = task.Clock()
    server = KafkaServer(BrokerConfig(broker_id=1), clock)
    server.replica_manager = None
    server.delayed_delivery = SimpleNamespace(
        delivered_records=0, lateness_percentiles=lambda *qs: [None for _ in qs],
        checks=SimpleNamespace(waiting=lambda: {}))
    server.request_latencies = RequestLatencies()
    server.background.every("isr-shrink", 1.0, lambda: 1 / 0)
    clock.advance(1)
    assert _failures(server) == 1.0
    # a second broker in the same process: its own counter, no duplicate registration
    other = KafkaServer(BrokerConfig(broker_id=2), clock)
    other.replica_manager, other.delayed_delivery = None, server.delayed_delivery
    other.background.every("isr-shrink", 1.0, lambda: None)
    clock.advance(1)
    assert _failures(other) == 0.0


def _failures(server: KafkaServer) -> float | None:
    """The isr-shrink pass's failure count as the broker's /metrics text says it."""
    resource = metrics_site(server).resource.children[b"metrics"]
    text = render_metrics(server, Snapshot(), resource.extra).decode()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "mafka_background_pass_failures_total" and sample.labels == {"pass": "isr-shrink"}:
                return sample.value
    return None


def test_a_failed_replica_move_pass_is_reported_and_the_next_one_starts_a_second_later(caplog) -> None:
    clock = task.Clock()
    bg = BackgroundPasses(clock)
    attempts: list[float] = []

    def run_blocking(fn, *args) -> defer.Deferred:
        attempts.append(clock.seconds())
        return defer.maybeDeferred(lambda: 1 / 0)  # the copy pass raised in its worker thread

    mover = LogDirMover(SimpleNamespace(future_logs={("t", 0): object()}), SimpleNamespace(partitions={}), clock,
                        run_blocking, on_failure=lambda failure: bg.report_failure("log-dir-mover", failure))
    with caplog.at_level(logging.ERROR, logger="mafka.background"):
        mover.kick()
        clock.advance(1)
    assert attempts == [0.0, 1.0]
    assert bg.failure_count("log-dir-mover") == 2
    assert caplog.records[0].exc_info[0] is ZeroDivisionError


@pytest.fixture(autouse=True)
def _no_crash_hook(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MAFKA_TEST_CRASH_AFTER_MOVE_STEP", raising=False)


def test_delayed_delivery_ticks_only_once_a_partition_holds_delayed_messages() -> None:
    server, clock, calls, fakes = exploding_broker(delayed_messages=False)
    assert "delayed-delivery" not in server.background.passes  # no 50 wake-ups a second for nothing
    assert set(server.background.passes) == BROKER_PASSES - {"delayed-delivery"}
    server.replica_manager.on_delays()  # what a partition's first envelope (or an index opened with its log) calls
    server.replica_manager.on_delays()  # idempotent
    assert server.delayed_delivery.ticking
    p = server.background.passes["delayed-delivery"]
    for fake in fakes:
        fake.armed = False
    clock.advance(0)
    clock.advance(0.02)
    assert p.runs == 2 and p.failures == 0
    assert [what for what, _ in calls].count("delayed.tick") == 2
