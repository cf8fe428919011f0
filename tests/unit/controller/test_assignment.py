"""Replica assignment (mafka.controller.assignment) against Kafka 2.8's AdminUtils and its tests."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mafka.controller.assignment import (
    AdminOperationError,
    add_partitions,
    assign_replicas,
    new_partitions_assignment,
    rack_alternated_broker_list,
    validate_topic_assignment,
)
from mafka.errors import (
    ErrorCode,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    UnknownTopicOrPartitionError,
)
from tests.hypothesis_budget import examples

# The example in AdminUtils.assignReplicasToBrokers' scaladoc (Kafka 2.8.2), verbatim:
# 5 brokers, 10 partitions, replication factor 3, fixed start index 0.
SCALADOC_TABLE = """
broker-0  broker-1  broker-2  broker-3  broker-4
p0        p1        p2        p3        p4       (1st replica)
p5        p6        p7        p8        p9       (1st replica)
p4        p0        p1        p2        p3       (2nd replica)
p8        p9        p5        p6        p7       (2nd replica)
p3        p4        p0        p1        p2       (3nd replica)
p7        p8        p9        p5        p6       (3nd replica)
"""


def _parse_scaladoc_table(table: str) -> dict[int, list[int]]:
    header, *rows = [line.split() for line in table.strip().splitlines()]
    brokers = [int(cell.removeprefix("broker-")) for cell in header]
    positions: dict[int, dict[int, int]] = {}
    for row in rows:
        replica_position = int(row[-2].removeprefix("(")[0]) - 1  # "(1st" -> 0
        for broker, cell in zip(brokers, row[: len(brokers)], strict=True):
            positions.setdefault(int(cell.removeprefix("p")), {})[replica_position] = broker
    return {p: [slots[i] for i in sorted(slots)] for p, slots in sorted(positions.items())}


class _FixedRandom(random.Random):
    """An rng whose randrange returns preset values in order."""

    def __init__(self, *values: int) -> None:
        super().__init__(0)
        self.values = list(values)
        self.calls: list[int] = []

    def randrange(self, *args: object, **kwargs: object) -> int:  # type: ignore[override]
        self.calls.append(args[0])  # type: ignore[arg-type]
        return self.values.pop(0)


def _racks_of(assignment: dict[int, list[int]], racks: dict[int, str]) -> dict[int, list[str]]:
    return {p: [racks[b] for b in replicas] for p, replicas in assignment.items()}


def check_replica_distribution(
    assignment: dict[int, list[int]],
    racks: dict[int, str],
    num_brokers: int,
    num_partitions: int,
    replication_factor: int,
    *,
    verify_rack_aware: bool = True,
    verify_leader_distribution: bool = True,
    verify_replicas_distribution: bool = True,
) -> None:
    """Kafka's RackAwareTest.checkReplicaDistribution."""
    for replicas in assignment.values():
        assert len(set(replicas)) == len(replicas)
    if verify_rack_aware:
        assert [len(set(r)) for r in _racks_of(assignment, racks).values()] == [
            replication_factor
        ] * num_partitions
    if verify_leader_distribution:
        leaders = Counter(replicas[0] for replicas in assignment.values())
        assert sorted(leaders.values()) == [num_partitions // num_brokers] * num_brokers
    if verify_replicas_distribution:
        counts = Counter(b for replicas in assignment.values() for b in replicas)
        assert (
            sorted(counts.values())
            == [num_partitions * replication_factor // num_brokers] * num_brokers
        )


# --- rack-unaware --------------------------------------------------------------------


def test_scaladoc_example_exact_layout() -> None:
    expected = _parse_scaladoc_table(SCALADOC_TABLE)
    assert expected[0] == [0, 1, 2] and expected[5] == [0, 2, 3]  # the parser itself
    assert assign_replicas([0, 1, 2, 3, 4], 10, 3, start_index=0) == expected


def test_admin_rack_aware_test_replica_assignment() -> None:
    # AdminRackAwareTest.testReplicaAssignment
    expected = {
        0: [0, 1, 2],
        1: [1, 2, 3],
        2: [2, 3, 4],
        3: [3, 4, 0],
        4: [4, 0, 1],
        5: [0, 2, 3],
        6: [1, 3, 4],
        7: [2, 4, 0],
        8: [3, 0, 1],
        9: [4, 1, 2],
    }
    assert assign_replicas(range(5), 10, 3, start_index=0) == expected
    # A mapping with no racks is the same rack-unaware assignment.
    assert assign_replicas(dict.fromkeys(range(5)), 10, 3, start_index=0) == expected


def test_brokers_are_ordered_by_id() -> None:
    assert assign_replicas([4, 2, 0, 3, 1], 10, 3, start_index=0) == assign_replicas(
        [0, 1, 2, 3, 4], 10, 3, start_index=0
    )
    # Non-contiguous ids: indexes into the sorted id list.
    assert assign_replicas([30, 10, 20], 3, 2, start_index=0) == {
        0: [10, 20],
        1: [20, 30],
        2: [30, 10],
    }


def test_start_partition_keeps_the_initial_shift() -> None:
    # Kafka bumps the follower shift only when the loop reaches a multiple of the broker
    # count, so an assignment starting at partition 6 is *not* the tail of one starting
    # at 0: it keeps shift = start index until partition 10.
    full = assign_replicas(range(5), 10, 3, start_index=0)
    tail = assign_replicas(range(5), 6, 3, start_index=0, start_partition=6)
    assert tail == {
        6: [1, 2, 3],
        7: [2, 3, 4],
        8: [3, 4, 0],
        9: [4, 0, 1],
        10: [0, 2, 3],
        11: [1, 3, 4],
    }
    assert tail[6] != full[6]
    # Leaders still continue the round robin.
    assert [tail[p][0] for p in range(6, 10)] == [full[p][0] for p in range(6, 10)]


def test_rng_draws_start_then_shift() -> None:
    rng = _FixedRandom(2, 3)
    result = assign_replicas(range(5), 6, 3, rng=rng)
    assert rng.calls == [5, 5]
    # start 2, shift 3: p0 leader 2, follower j at (2 + 1 + (3 + j) % 4) % 5.
    assert result[0] == [2, (2 + 1 + 3 % 4) % 5, (2 + 1 + 4 % 4) % 5]
    assert result[0] == [2, 1, 3]
    # p5 wraps around (5 % 5 == 0) so the shift becomes 4.
    assert result[5] == [2, (2 + 1 + 4 % 4) % 5, (2 + 1 + 5 % 4) % 5]
    # Equal draws give the same layout as the fixed start index.
    assert assign_replicas(range(5), 10, 3, rng=_FixedRandom(0, 0)) == assign_replicas(
        range(5), 10, 3, start_index=0
    )


def test_fixed_start_index_consumes_no_randomness() -> None:
    rng = _FixedRandom()
    assign_replicas(range(4), 8, 2, start_index=1, rng=rng)
    assert rng.calls == []


def test_same_seed_same_assignment() -> None:
    a = assign_replicas(range(7), 20, 3, rng=random.Random(42))
    b = assign_replicas(range(7), 20, 3, rng=random.Random(42))
    assert a == b


def test_single_broker() -> None:
    assert assign_replicas([7], 3, 1) == {0: [7], 1: [7], 2: [7]}


@settings(max_examples=examples(150), deadline=None)
@given(
    broker_ids=st.sets(st.integers(0, 1000), min_size=1, max_size=9),
    num_partitions=st.integers(1, 60),
    data=st.data(),
)
def test_rack_unaware_properties(
    broker_ids: set[int], num_partitions: int, data: st.DataObject
) -> None:
    brokers = sorted(broker_ids)
    n = len(brokers)
    rf = data.draw(st.integers(1, n))
    start_index = data.draw(st.integers(-1, n - 1))
    seed = data.draw(st.integers(0, 2**32))
    shuffled = data.draw(st.permutations(brokers))
    assignment = assign_replicas(
        shuffled, num_partitions, rf, start_index=start_index, rng=random.Random(seed)
    )
    assert list(assignment) == list(range(num_partitions))
    for replicas in assignment.values():
        assert len(replicas) == rf
        assert len(set(replicas)) == rf
        assert set(replicas) <= broker_ids
    # Every replica position (leaders, 2nd replicas, ...) is spread evenly.
    for position in range(rf):
        counts = Counter(replicas[position] for replicas in assignment.values())
        per_broker = [counts.get(b, 0) for b in brokers]
        assert max(per_broker) - min(per_broker) <= 1
    if num_partitions % n == 0:
        totals = Counter(b for replicas in assignment.values() for b in replicas)
        assert {totals[b] for b in brokers} == {num_partitions * rf // n}


# --- rack-aware ----------------------------------------------------------------------


def test_rack_alternated_broker_list() -> None:
    # AdminRackAwareTest.testGetRackAlternatedBrokerListAndAssignReplicasToBrokers
    rack_map = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    assert rack_alternated_broker_list(rack_map) == [0, 3, 1, 5, 4, 2]
    without_5 = {b: r for b, r in rack_map.items() if b != 5}
    assert rack_alternated_broker_list(without_5) == [0, 3, 1, 4, 2]
    # The scaladoc example of getRackAlternatedBrokerList.
    nine = {b: f"rack{b // 3 + 1}" for b in range(9)}
    assert rack_alternated_broker_list(nine) == [0, 3, 6, 1, 4, 7, 2, 5, 8]


def test_rack_aware_exact_layout() -> None:
    rack_map = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    assert assign_replicas(rack_map, 7, 3, start_index=0, start_partition=0) == {
        0: [0, 3, 1],
        1: [3, 1, 5],
        2: [1, 5, 4],
        3: [5, 4, 2],
        4: [4, 2, 0],
        5: [2, 0, 3],
        6: [0, 4, 2],
    }


MAPPING_1 = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1"}


def test_assignment_with_rack_aware() -> None:
    assignment = assign_replicas(MAPPING_1, 6, 3, start_index=2, start_partition=0)
    check_replica_distribution(assignment, MAPPING_1, 6, 6, 3)


@pytest.mark.parametrize("seed", range(20))
def test_assignment_with_rack_aware_random_start(seed: int) -> None:
    rng = random.Random(seed)
    check_replica_distribution(assign_replicas(MAPPING_1, 6, 3, rng=rng), MAPPING_1, 6, 6, 3)
    check_replica_distribution(assign_replicas(MAPPING_1, 12, 2, rng=rng), MAPPING_1, 6, 12, 2)
    check_replica_distribution(assign_replicas(MAPPING_1, 6, 2, rng=rng), MAPPING_1, 6, 6, 2)
    uneven_racks = {0: "rack1", 1: "rack1", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1"}
    check_replica_distribution(
        assign_replicas(uneven_racks, 12, 3, rng=rng),
        uneven_racks,
        6,
        12,
        3,
        verify_replicas_distribution=False,
    )
    three = {0: "rack1", 1: "rack2", 4: "rack3"}
    check_replica_distribution(assign_replicas(three, 3, 2, rng=rng), three, 3, 3, 2)
    expansion = {6: "rack1", 7: "rack2", 8: "rack2", 9: "rack3", 10: "rack3", 11: "rack1"}
    check_replica_distribution(
        assign_replicas(expansion, 12, 2, start_partition=12, rng=rng), expansion, 6, 12, 2
    )
    large = {
        0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack1",
        6: "rack1", 7: "rack2", 8: "rack2", 9: "rack3", 10: "rack1", 11: "rack3",
    }  # fmt: skip
    check_replica_distribution(assign_replicas(large, 96, 3, rng=rng), large, 12, 96, 3)


def test_assignment_with_rack_aware_uneven_replicas() -> None:
    assignment = assign_replicas(MAPPING_1, 13, 3, start_index=0, start_partition=0)
    check_replica_distribution(
        assignment,
        MAPPING_1,
        6,
        13,
        3,
        verify_leader_distribution=False,
        verify_replicas_distribution=False,
    )


def test_more_replicas_than_racks() -> None:
    racks = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack2"}
    assignment = assign_replicas(racks, 6, 5, rng=random.Random(3))
    assert [len(r) for r in assignment.values()] == [5] * 6
    assert all(len(set(r)) == 3 for r in _racks_of(assignment, racks).values())


def test_less_replicas_than_racks() -> None:
    racks = {0: "rack1", 1: "rack2", 2: "rack2", 3: "rack3", 4: "rack3", 5: "rack2"}
    assignment = assign_replicas(racks, 6, 2, rng=random.Random(4))
    assert [len(r) for r in assignment.values()] == [2] * 6
    assert all(len(set(r)) == 2 for r in _racks_of(assignment, racks).values())


def test_single_rack() -> None:
    racks = dict.fromkeys(range(6), "rack1")
    assignment = assign_replicas(racks, 6, 3, rng=random.Random(5))
    assert all(len(set(r)) == 1 for r in _racks_of(assignment, racks).values())
    assert Counter(r[0] for r in assignment.values()) == dict.fromkeys(range(6), 1)


def test_skip_broker_with_replica_already_assigned() -> None:
    racks = {0: "a", 1: "b", 2: "c", 3: "a", 4: "a"}
    assignment = assign_replicas(racks, 6, 4, start_index=2)
    check_replica_distribution(
        assignment,
        racks,
        5,
        6,
        4,
        verify_rack_aware=False,
        verify_leader_distribution=False,
        verify_replicas_distribution=False,
    )
    assert all(len(r) == 4 for r in assignment.values())
    # Worked by hand on the alternated list [0, 1, 2, 3, 4], shift 2 * 3 racks: for p2,
    # brokers 3 and 0 are skipped (rack a taken while rack b is empty), then 2 (taken).
    assert [assignment[p] for p in range(3)] == [[2, 0, 1, 3], [3, 1, 2, 4], [4, 2, 1, 3]]
    # Four replicas over three racks: every rack is used.
    assert all(set(r) == {"a", "b", "c"} for r in _racks_of(assignment, racks).values())


@settings(max_examples=examples(150), deadline=None)
@given(
    racks=st.dictionaries(
        st.integers(0, 200),
        st.sampled_from(["r0", "r1", "r2", "r3", "r4"]),
        min_size=1,
        max_size=10,
    ),
    num_partitions=st.integers(1, 50),
    data=st.data(),
)
def test_rack_aware_properties(
    racks: dict[int, str], num_partitions: int, data: st.DataObject
) -> None:
    rf = data.draw(st.integers(1, len(racks)))
    seed = data.draw(st.integers(0, 2**32))
    assignment = assign_replicas(racks, num_partitions, rf, rng=random.Random(seed))
    num_racks = len(set(racks.values()))
    assert list(assignment) == list(range(num_partitions))
    for replicas in assignment.values():
        assert len(replicas) == rf and len(set(replicas)) == rf
        assert len({racks[b] for b in replicas}) == min(rf, num_racks)
    leaders = Counter(replicas[0] for replicas in assignment.values())
    per_broker = [leaders.get(b, 0) for b in racks]
    assert max(per_broker) - min(per_broker) <= 1


# --- errors --------------------------------------------------------------------------


def test_invalid_partitions() -> None:
    for count in (0, -1):
        with pytest.raises(InvalidPartitionsError) as info:
            assign_replicas(range(3), count, 1)
        assert info.value.code is ErrorCode.INVALID_PARTITIONS
    # Checked before the replication factor, as in Kafka.
    with pytest.raises(InvalidPartitionsError):
        assign_replicas(range(3), 0, 9)


def test_invalid_replication_factor() -> None:
    with pytest.raises(InvalidReplicationFactorError) as info:
        assign_replicas(range(5), 10, 0)
    assert info.value.code is ErrorCode.INVALID_REPLICATION_FACTOR
    with pytest.raises(InvalidReplicationFactorError, match="larger than available brokers: 5"):
        assign_replicas(range(5), 10, 6)
    with pytest.raises(InvalidReplicationFactorError):
        assign_replicas([], 1, 1)
    # Checked before the rack information.
    with pytest.raises(InvalidReplicationFactorError):
        assign_replicas({0: "a", 1: None}, 1, 3)


def test_partial_rack_information() -> None:
    with pytest.raises(AdminOperationError, match="Not all brokers have rack information") as info:
        assign_replicas({0: "rack1", 1: None, 2: "rack2"}, 3, 2, start_index=0)
    assert info.value.code is ErrorCode.UNKNOWN_SERVER_ERROR


def test_duplicate_broker_ids_are_rejected() -> None:
    with pytest.raises(ValueError):
        assign_replicas([1, 1, 2], 2, 2)


# --- CreatePartitions ----------------------------------------------------------------


def test_add_partitions_all_servers() -> None:
    # AddPartitionsTest.testReplicaPlacementAllServers: leaders and replica sets.
    result = add_partitions({0: [2, 3, 0, 1]}, [0, 1, 2, 3], 7)
    expected = {
        0: (2, {2, 3, 0, 1}),
        1: (3, {3, 2, 0, 1}),
        2: (0, {0, 3, 1, 2}),
        3: (1, {1, 0, 2, 3}),
        4: (2, {2, 3, 0, 1}),
        5: (3, {3, 0, 1, 2}),
        6: (0, {0, 1, 2, 3}),
    }
    assert {p: (r[0], set(r)) for p, r in result.items()} == expected
    assert result[0] == [2, 3, 0, 1]


def test_add_partitions_partial_servers() -> None:
    # AddPartitionsTest.testReplicaPlacementPartialServers
    assert add_partitions({0: [1, 2]}, [0, 1, 2, 3], 3) == {0: [1, 2], 1: [2, 0], 2: [3, 1]}
    assert new_partitions_assignment({0: [1, 2]}, [0, 1, 2, 3], 3) == {1: [2, 0], 2: [3, 1]}


def test_add_partitions_start_index_from_partition_zero() -> None:
    # First broker with id >= partition 0's first replica (5) is 6, at index 2.
    result = new_partitions_assignment({0: [5, 2]}, [2, 4, 6, 8], 2)
    assert result == assign_replicas([2, 4, 6, 8], 1, 2, start_index=2, start_partition=1)
    # Partition 1 leads at index (1 + 2) % 4 = 3 (broker 8); follower at 3 + 1 + 2 % 3 -> 6.
    assert result == {1: [8, 6]}
    # No broker id >= 9 -> start index 0.
    assert new_partitions_assignment({0: [9]}, [2, 4], 3) == assign_replicas(
        [2, 4], 2, 1, start_index=0, start_partition=1
    )


def test_add_partitions_manual_assignment() -> None:
    # AddPartitionsTest.testManualAssignmentOfReplicas (the request's lists for the new partitions)
    result = add_partitions({0: [1, 2]}, [0, 1, 2, 3], 3, replica_assignment=[[0, 1], [2, 3]])
    assert result == {0: [1, 2], 1: [0, 1], 2: [2, 3]}


def test_add_partitions_errors() -> None:
    brokers = [0, 1, 2, 3]
    with pytest.raises(UnknownTopicOrPartitionError):
        add_partitions({}, brokers, 3)
    with pytest.raises(InvalidPartitionsError, match="higher than the requested 1"):
        add_partitions({0: [0], 1: [1]}, brokers, 1)
    with pytest.raises(InvalidPartitionsError, match="already has 2 partitions"):
        add_partitions({0: [0], 1: [1]}, brokers, 2)
    # AddPartitionsTest.testWrongReplicaCount
    with pytest.raises(InvalidReplicaAssignmentError, match="Inconsistent replication factor"):
        add_partitions({0: [0, 1]}, brokers, 2, replica_assignment=[[0, 1, 2]])
    # AddPartitionsTest.testMissingPartition0
    with pytest.raises(AdminOperationError, match="partition id 0 is missing"):
        add_partitions({1: [0, 1]}, brokers, 3, replica_assignment=[[0, 1], [0, 1]])
    with pytest.raises(InvalidReplicaAssignmentError, match="Unknown broker"):
        add_partitions({0: [0, 1]}, brokers, 2, replica_assignment=[[0, 9]])
    with pytest.raises(InvalidReplicaAssignmentError, match="2 but 1 assignments"):
        add_partitions({0: [0, 1]}, brokers, 3, replica_assignment=[[0, 1]])
    with pytest.raises(InvalidReplicaAssignmentError, match="Duplicate brokers"):
        add_partitions({0: [0, 1]}, brokers, 2, replica_assignment=[[1, 1]])
    with pytest.raises(InvalidReplicaAssignmentError, match="replication factor of 0"):
        add_partitions({0: [0, 1]}, brokers, 2, replica_assignment=[[]])
    with pytest.raises(InvalidReplicationFactorError):
        add_partitions({0: [0, 1, 2]}, [0, 1], 2)
    with pytest.raises(AdminOperationError, match="Not all brokers have rack"):
        add_partitions({0: [0, 1]}, {0: "a", 1: None}, 2)


def test_validate_topic_assignment() -> None:
    validate_topic_assignment({0: [1, 2], 1: [2, 3], 2: [3, 1]})
    with pytest.raises(InvalidReplicaAssignmentError, match="same number of replicas"):
        validate_topic_assignment({0: [1, 2], 1: [2]})
    with pytest.raises(InvalidReplicaAssignmentError, match="same number of replicas"):
        validate_topic_assignment({})
    with pytest.raises(InvalidReplicaAssignmentError, match="Duplicate"):
        validate_topic_assignment({0: [1, 1]})
    with pytest.raises(InvalidReplicaAssignmentError, match="consecutive"):
        validate_topic_assignment({0: [1], 2: [2]})
    with pytest.raises(InvalidReplicaAssignmentError, match="consecutive"):
        validate_topic_assignment({1: [1]})


def test_internal_topic_replication_factor_caps_at_live_brokers() -> None:
    from mafka.controller.assignment import internal_topic_replication_factor as rf

    assert [rf(3, n) for n in (0, 1, 2, 3, 4)] == [1, 1, 2, 3, 3]
    assert rf(1, 5) == 1
    with pytest.raises(ValueError):
        rf(0, 3)
