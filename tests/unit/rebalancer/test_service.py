"""The rebalancer service with a fake controller and ZooKeeper: plans, pipelines, resumes, throttles."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

from twisted.internet import defer

from mafka.errors import ErrorCode
from mafka.rebalancer.service import RebalancerService

MB = 1 << 20


class FakeZk:
    def __init__(self, reports: dict[int, dict]) -> None:
        self.state: tuple[bytes, int] | None = None
        self.reports = {b: json.dumps(r).encode() for b, r in reports.items()}
        self.topic_configs: dict[str, dict] = {}
        self.broker_configs: dict[int, dict] = {}

    async def rebalancer_state(self):
        return self.state

    async def write_rebalancer_state(self, data, version):
        assert (self.state is None and version is None) or (self.state is not None and self.state[1] == version)
        self.state = (data, 0 if self.state is None else self.state[1] + 1)
        return self.state[1]

    async def monitor_reports(self):
        return self.reports

    async def get_topic_config(self, topic):
        return dict(self.topic_configs.get(topic, {}))

    async def set_topic_config(self, topic, config):
        self.topic_configs[topic] = dict(config)

    async def get_broker_config(self, b):
        return dict(self.broker_configs.get(b, {}))

    async def set_broker_config(self, b, config):
        self.broker_configs[b] = dict(config)


class FakeController:
    def __init__(self, assignment):
        self.is_active = True
        self.submitted: list[dict] = []
        self.context = SimpleNamespace(
            assignment=dict(assignment), partitions_being_reassigned=set(),
            live_brokers={b: SimpleNamespace(rack=None) for b in (1, 2, 3)},
        )
        self.context.partition_replicas = lambda tp: self.context.assignment[tp]
        self.context.all_partitions = lambda: list(self.context.assignment)

    async def alter_partition_reassignments(self, wanted):
        self.submitted.append(wanted)
        self.context.partitions_being_reassigned |= set(wanted)
        self.targets = getattr(self, "targets", {})
        self.targets.update(wanted)
        return ErrorCode.NONE, None, {tp: (ErrorCode.NONE, None) for tp in wanted}

    def finish(self, tp):
        self.context.partitions_being_reassigned.discard(tp)
        self.context.assignment[tp] = tuple(self.targets[tp])


def report(broker: int, used_mb: int, parts: dict, age_ms: int = 0) -> dict:
    return {"version": 1, "broker": broker, "timestamp": int(time.time() * 1000) - age_ms,
            "logDirs": [{"path": "/d", "tier": "hot", "offline": False, "capacityBytes": 100 * MB,
                         "usedBytes": used_mb * MB, "freeBytes": (100 - used_mb) * MB}],
            "partitions": [{"topic": t, "partition": p, "sizeBytes": s * MB} for (t, p), s in parts.items()]}


def service(zk, controller, **config):
    clock = SimpleNamespace(now=1000.0)
    config.setdefault("zookeeper_session_timeout_ms", 18000)
    cfg = SimpleNamespace(mafka_rebalancer_enable=True, mafka_rebalancer_interval_ms=1000,
                          mafka_rebalancer_disk_usage_threshold=0.8, mafka_rebalancer_max_concurrent_moves=1,
                          mafka_rebalancer_pipelined=True, mafka_rebalancer_throttle_bytes_per_sec=-1,
                          mafka_monitor_interval_ms=10_000, **config)
    broker = SimpleNamespace(config=cfg, zk=zk, controller=controller,
                             reactor=SimpleNamespace(seconds=lambda: clock.now))
    return RebalancerService(broker), clock


def tick(svc):
    d = defer.ensureDeferred(svc.tick())
    assert d.called, "the fake never waits"
    failures = []
    d.addErrback(failures.append)
    assert not failures, failures[0].getTraceback()


def state(zk):
    return json.loads(zk.state[0])


ASSIGNMENT = {("a", 0): (1, 2), ("b", 0): (1, 3), ("c", 0): (1,)}
SIZES = {("a", 0): 15, ("b", 0): 15, ("c", 0): 15}


def test_an_overfull_broker_is_planned_moved_one_at_a_time_and_the_plan_ends():
    zk = FakeZk({1: report(1, 95, SIZES), 2: report(2, 20, {("a", 0): 15}), 3: report(3, 20, {("b", 0): 15})})
    controller = FakeController(ASSIGNMENT)
    svc, clock = service(zk, controller)
    tick(svc)  # plans
    planned = state(zk)
    assert planned["status"] == "running" and planned["origin"] == "auto"
    assert [m["state"] for m in planned["moves"]] == ["pending"]  # 15 MB takes broker 1 from 95% to 80%
    tick(svc)  # starts the move
    assert len(controller.submitted) == 1 and state(zk)["moves"][0]["state"] == "running"
    tp = next(iter(controller.submitted[0]))
    tick(svc)  # still reassigning: nothing new
    assert len(controller.submitted) == 1
    controller.finish(tp)
    clock.now += 2
    tick(svc)
    final = state(zk)
    assert final["status"] == "done" and final["moves"][0]["state"] == "done"
    assert any("moved from broker 1" in text for _, text in final["log"])


def test_a_stale_report_is_never_acted_on():
    zk = FakeZk({1: report(1, 95, SIZES, age_ms=10 * 60_000), 2: report(2, 20, {}), 3: report(3, 20, {})})
    svc, _ = service(zk, FakeController(ASSIGNMENT))
    tick(svc)
    assert zk.state is None


def test_not_the_controller_does_nothing_and_a_new_controller_resumes_the_plan():
    zk = FakeZk({1: report(1, 99, SIZES), 2: report(2, 10, {("a", 0): 15}), 3: report(3, 10, {("b", 0): 15})})
    first = FakeController(ASSIGNMENT)
    svc, _ = service(zk, first, )
    svc.broker.config.mafka_rebalancer_max_concurrent_moves = 2
    tick(svc)
    tick(svc)
    assert sum(len(s) for s in first.submitted) == 2
    first.is_active = False
    tick(svc)  # an ex-controller leaves the plan alone
    # the next controller sees the same partitions (one finished, one still moving) and carries on
    second = FakeController(ASSIGNMENT)
    second.targets = dict(first.targets)
    moving = list(first.targets)
    second.context.partitions_being_reassigned = {moving[1]}
    second.context.assignment[moving[0]] = tuple(first.targets[moving[0]])
    svc2, _ = service(zk, second)
    svc2.broker.config.mafka_rebalancer_max_concurrent_moves = 2
    tick(svc2)
    moves = {(m["topic"], m["partition"]): m["state"] for m in state(zk)["moves"]}
    assert moves[moving[0]] == "done" and moves[moving[1]] == "running"
    assert second.submitted == [] or all(tp not in moving for s in second.submitted for tp in s)


def test_throttles_are_set_for_moves_in_flight_and_removed_at_the_end():
    zk = FakeZk({1: report(1, 95, SIZES), 2: report(2, 20, {("a", 0): 15}), 3: report(3, 20, {("b", 0): 15})})
    zk.topic_configs["a"] = {"retention.ms": "1000"}
    controller = FakeController(ASSIGNMENT)
    svc, _ = service(zk, controller, )
    svc.broker.config.mafka_rebalancer_throttle_bytes_per_sec = 1000
    tick(svc)
    tick(svc)
    (tp, target), = controller.submitted[0].items()
    cfg = zk.topic_configs[tp[0]]
    assert cfg["follower.replication.throttled.replicas"] == f"0:{[b for b in target if b not in ASSIGNMENT[tp]][0]}"
    assert all(zk.broker_configs[b]["follower.replication.throttled.rate"] == "1000" for b in set(target) | {1})
    controller.finish(tp)
    tick(svc)
    assert "follower.replication.throttled.replicas" not in zk.topic_configs[tp[0]]
    assert all("follower.replication.throttled.rate" not in c for c in zk.broker_configs.values())
    if tp[0] == "a":
        assert zk.topic_configs["a"]["retention.ms"] == "1000"  # other overrides are kept


def test_a_move_to_a_broker_that_is_away_waits_for_it_and_fails_only_after_the_bound():
    """The next controller resumes a plan while the old controller's broker, a move's target, restarts:
    the move waits for the broker to be live again instead of failing (Kafka would answer the
    reassignment INVALID_REPLICA_ASSIGNMENT); a broker away longer than the bound fails the move."""
    for comes_back in (True, False):
        zk = FakeZk({1: report(1, 95, SIZES), 2: report(2, 20, {("a", 0): 15}), 3: report(3, 20, {("b", 0): 15})})
        controller = FakeController(ASSIGNMENT)
        svc, clock = service(zk, controller, zookeeper_session_timeout_ms=6000)
        tick(svc)  # plans
        target = state(zk)["moves"][0]["target"]
        away = controller.context.live_brokers.pop(target)
        for _ in range(5):
            clock.now += 5
            tick(svc)
            assert controller.submitted == [] and state(zk)["moves"][0]["state"] == "pending"
        assert sum("waiting: broker" in text for _, text in state(zk)["log"]) == 1
        if comes_back:
            controller.context.live_brokers[target] = away
            clock.now += 1
            tick(svc)
            assert len(controller.submitted) == 1 and state(zk)["moves"][0]["state"] == "running"
        else:
            clock.now += 10  # held back since the first of the five ticks: 30 s = max(30 s, 3 x 6 s)
            tick(svc)
            assert controller.submitted == [] and state(zk)["moves"][0]["state"] == "failed"
            tick(svc)  # nothing left to run: the plan ends
            final = state(zk)
            assert final["status"] == "done" and "is not live" in final["moves"][0]["note"]
