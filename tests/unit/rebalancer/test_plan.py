"""The free-disk-first plan: under the threshold with few bytes, never overfilling, never breaking replica rules."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mafka.rebalancer.plan import BrokerDisk, disks_from_reports, plan_moves, replica_sizes
from tests.hypothesis_budget import examples

MB = 1 << 20


def disks(**used_mb: int) -> dict[int, BrokerDisk]:
    return {int(b[1:]): BrokerDisk(int(b[1:]), 100 * MB, u * MB) for b, u in used_mb.items()}


def test_the_smallest_partition_that_suffices_moves_to_the_freest_broker():
    assignment = {("a", 0): [1, 2], ("b", 0): [1, 3], ("c", 0): [2, 1], ("d", 0): [1]}
    sizes = {(("a", 0), 1): 30 * MB, (("b", 0), 1): 12 * MB, (("c", 0), 1): 8 * MB, (("d", 0), 1): 40 * MB}
    plan = plan_moves(assignment, disks(b1=90, b2=40, b3=20, b4=10), sizes, 0.8)
    # 10 MB over: b-0 (12 MB) is the smallest that suffices; broker 4 has the most room
    assert [(m.topic, m.source, m.target, m.replicas) for m in plan.moves] == [("b", 1, 4, (4, 3))]
    assert plan.usage_after[1] <= 0.8 and plan.bytes_moved == 12 * MB
    assert any("broker 1 is at 90.0%" in d for d in plan.decisions)


def test_no_target_is_overfilled_and_the_reason_is_given():
    assignment = {("a", 0): [1], ("b", 0): [1]}
    sizes = {(("a", 0), 1): 30 * MB, (("b", 0), 1): 30 * MB}
    plan = plan_moves(assignment, disks(b1=95, b2=70), sizes, 0.8)
    assert plan.moves == []
    assert any("cannot leave broker 1" in d for d in plan.decisions)
    assert any("stays at 95.0%" in d for d in plan.decisions)


def test_replicas_never_share_a_broker_or_a_rack_and_busy_partitions_wait():
    assignment = {("a", 0): [1, 2], ("b", 0): [1, 3]}
    sizes = {(("a", 0), 1): 20 * MB, (("b", 0), 1): 20 * MB}
    racks = {1: "r1", 2: "r2", 3: "r2", 4: "r3"}
    plan = plan_moves(assignment, disks(b1=90, b2=10, b3=10, b4=50), sizes, 0.8, racks=racks)
    # brokers 2 and 3 have more room, but each shares rack r2 with the other replica: only 4 is allowed
    assert [(m.topic, m.target) for m in plan.moves] == [("a", 4)]
    plan = plan_moves(assignment, disks(b1=90, b2=10, b3=10, b4=50), sizes, 0.8, busy={("a", 0), ("b", 0)})
    assert plan.moves == []


def test_preferred_leaders_are_left_alone_among_equals():
    assignment = {("a", 0): [1, 2], ("b", 0): [2, 1]}
    sizes = {(("a", 0), 1): 20 * MB, (("b", 0), 1): 20 * MB}
    plan = plan_moves(assignment, disks(b1=90, b2=10, b3=10), sizes, 0.8)
    assert [(m.topic, m.replicas) for m in plan.moves] == [("b", (2, 3))]


def test_disks_and_sizes_come_from_the_reports_and_the_cold_tier_is_not_counted():
    reports = {1: {"logDirs": [{"path": "/a", "tier": "hot", "offline": False, "capacityBytes": 100, "usedBytes": 90},
                               {"path": "/b", "tier": "hot", "offline": True},
                               {"path": "/c", "tier": "cold", "offline": False, "capacityBytes": 1000, "usedBytes": 1}],
                   "partitions": [{"topic": "t", "partition": 0, "sizeBytes": 7}]},
               2: {"logDirs": [], "partitions": []}}
    assert disks_from_reports(reports) == {1: BrokerDisk(1, 100, 90)}
    assert replica_sizes(reports) == {(("t", 0), 1): 7}


@settings(max_examples=examples(200), deadline=None)
@given(st.data())
def test_property_plans_never_overfill_never_duplicate_and_only_help(data):
    brokers = data.draw(st.integers(2, 6))
    parts = data.draw(st.integers(1, 15))
    assignment = {}
    sizes = {}
    used = dict.fromkeys(range(1, brokers + 1), 0)
    for p in range(parts):
        rf = data.draw(st.integers(1, min(3, brokers)))
        replicas = data.draw(st.permutations(list(range(1, brokers + 1))))[:rf]
        assignment[("t", p)] = list(replicas)
        size = data.draw(st.integers(0, 30)) * MB
        for r in replicas:
            sizes[(("t", p), r)] = size
            used[r] += size
    cap = {b: data.draw(st.integers(1, 200)) * MB for b in used}
    threshold = data.draw(st.sampled_from([0.5, 0.7, 0.85]))
    disk = {b: BrokerDisk(b, max(cap[b], used[b]), used[b]) for b in used}
    plan = plan_moves(assignment, disk, sizes, threshold)
    final = {tp: list(r) for tp, r in assignment.items()}
    for m in plan.moves:
        assert m.target not in final[(m.topic, m.partition)]
        final[(m.topic, m.partition)] = list(m.replicas)
        assert len(set(m.replicas)) == len(m.replicas)
    after = dict(used)
    for m in plan.moves:
        after[m.source] -= m.size
        after[m.target] += m.size
    for b in used:
        if any(m.target == b for m in plan.moves):
            assert after[b] <= threshold * disk[b].capacity  # a target is never pushed over
        if any(m.source == b for m in plan.moves):
            assert after[b] < used[b]
    assert len({(m.topic, m.partition) for m in plan.moves}) == len(plan.moves)


def test_a_full_log_dir_sheds_to_the_brokers_other_dir():
    from mafka.rebalancer.plan import plan_dir_moves

    report = {"logDirs": [{"path": "/d1", "tier": "hot", "offline": False, "capacityBytes": 100, "usedBytes": 90},
                          {"path": "/d2", "tier": "hot", "offline": False, "capacityBytes": 100, "usedBytes": 10},
                          {"path": "/d3", "tier": "hot", "offline": False, "capacityBytes": 100, "usedBytes": 60}],
              "partitions": [{"topic": "a", "partition": 0, "logDir": "/d1", "sizeBytes": 50},
                             {"topic": "b", "partition": 0, "logDir": "/d1", "sizeBytes": 25},
                             {"topic": "c", "partition": 0, "logDir": "/d1", "sizeBytes": 15}]}
    plan = plan_dir_moves({7: report}, 0.8, busy=set())
    # 10 over: c-0 (15) is the smallest that suffices; /d2 has the most room
    assert [(m.topic, m.source, m.target, m.from_dir, m.to_dir, m.between_dirs) for m in plan.moves] == [
        ("c", 7, 7, "/d1", "/d2", True)]
    assert plan_dir_moves({7: report}, 0.8, busy={("c", 0)}).moves[0].topic == "b"
    single = {**report, "logDirs": report["logDirs"][:1]}
    assert plan_dir_moves({7: single}, 0.8).moves == []
