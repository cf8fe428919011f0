"""Controller state machines (mafka.controller.states) against Kafka 2.8's validPreviousStates."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mafka.controller.states import (
    PARTITION_VALID_PREVIOUS_STATES,
    REPLICA_VALID_PREVIOUS_STATES,
    IllegalStateTransition,
    InvalidTransition,
    PartitionState,
    PartitionStateTable,
    ReplicaState,
    ReplicaStateTable,
    check_transition,
    is_valid_transition,
    valid_previous_states,
)
from tests.hypothesis_budget import examples

P = PartitionState
R = ReplicaState

# (previous, target) pairs, transcribed from the case objects in Kafka 2.8.2's
# PartitionStateMachine.scala and ReplicaStateMachine.scala, independently of the module.
LEGAL_PARTITION_MOVES = {
    (P.NonExistentPartition, P.NewPartition),
    (P.NewPartition, P.OnlinePartition),
    (P.OnlinePartition, P.OnlinePartition),
    (P.OfflinePartition, P.OnlinePartition),
    (P.NewPartition, P.OfflinePartition),
    (P.OnlinePartition, P.OfflinePartition),
    (P.OfflinePartition, P.OfflinePartition),
    (P.OfflinePartition, P.NonExistentPartition),
}

LEGAL_REPLICA_MOVES = {
    (R.NonExistentReplica, R.NewReplica),
    (R.NewReplica, R.OnlineReplica),
    (R.OnlineReplica, R.OnlineReplica),
    (R.OfflineReplica, R.OnlineReplica),
    (R.ReplicaDeletionIneligible, R.OnlineReplica),
    (R.NewReplica, R.OfflineReplica),
    (R.OnlineReplica, R.OfflineReplica),
    (R.OfflineReplica, R.OfflineReplica),
    (R.ReplicaDeletionIneligible, R.OfflineReplica),
    (R.OfflineReplica, R.ReplicaDeletionStarted),
    (R.ReplicaDeletionStarted, R.ReplicaDeletionSuccessful),
    (R.OfflineReplica, R.ReplicaDeletionIneligible),
    (R.ReplicaDeletionStarted, R.ReplicaDeletionIneligible),
    (R.ReplicaDeletionSuccessful, R.NonExistentReplica),
}


def test_kafka_names_and_state_bytes() -> None:
    assert {s.name: s.value for s in P} == {
        "NewPartition": 0,
        "OnlinePartition": 1,
        "OfflinePartition": 2,
        "NonExistentPartition": 3,
    }
    assert {s.name: s.value for s in R} == {
        "NewReplica": 1,
        "OnlineReplica": 2,
        "OfflineReplica": 3,
        "ReplicaDeletionStarted": 4,
        "ReplicaDeletionSuccessful": 5,
        "ReplicaDeletionIneligible": 6,
        "NonExistentReplica": 7,
    }
    # Plain enums: a partition state never equals a replica state with the same byte.
    assert P.OnlinePartition != R.NewReplica


def test_tables_match_kafka() -> None:
    assert {
        (prev, target)
        for target, prevs in PARTITION_VALID_PREVIOUS_STATES.items()
        for prev in prevs
    } == LEGAL_PARTITION_MOVES
    assert {
        (prev, target) for target, prevs in REPLICA_VALID_PREVIOUS_STATES.items() for prev in prevs
    } == LEGAL_REPLICA_MOVES
    assert set(PARTITION_VALID_PREVIOUS_STATES) == set(P)
    assert set(REPLICA_VALID_PREVIOUS_STATES) == set(R)


@pytest.mark.parametrize(
    ("current", "target"),
    [*itertools.product(P, P), *itertools.product(R, R)],
    ids=lambda s: s.name,
)
def test_every_pair(
    current: PartitionState | ReplicaState, target: PartitionState | ReplicaState
) -> None:
    legal = (current, target) in LEGAL_PARTITION_MOVES | LEGAL_REPLICA_MOVES
    assert is_valid_transition(current, target) is legal
    assert (current in valid_previous_states(target)) is legal
    if legal:
        check_transition(current, target)
    else:
        with pytest.raises(IllegalStateTransition) as info:
            check_transition(current, target)
        assert info.value.current is current and info.value.target is target
        assert f"Instead it is in {current.name} state" in str(info.value)


@pytest.mark.parametrize(
    ("current", "target"),
    [*itertools.product(P, R), *itertools.product(R, P)],
    ids=lambda s: s.name,
)
def test_mixed_kinds_are_refused(
    current: PartitionState | ReplicaState, target: PartitionState | ReplicaState
) -> None:
    assert not is_valid_transition(current, target)
    with pytest.raises(IllegalStateTransition):
        check_transition(current, target)


def test_error_message_is_kafkas() -> None:
    error = IllegalStateTransition(P.NewPartition, P.NonExistentPartition, key="t-0")
    assert str(error) == (
        "Partition t-0 should be in one of OfflinePartition states before moving to "
        "NonExistentPartition state. Instead it is in NewPartition state"
    )


# --- state tables --------------------------------------------------------------------


def test_partition_table_topic_lifecycle() -> None:
    table: PartitionStateTable[str] = PartitionStateTable()
    assert table.state("t-0") is P.NonExistentPartition and "t-0" not in table
    result = table.transition(["t-0", "t-1"], P.NewPartition)
    assert result.valid == ("t-0", "t-1") and result.invalid == ()
    assert table.transition(["t-0", "t-1"], P.OnlinePartition).valid == ("t-0", "t-1")
    assert table.transition(["t-0"], P.OfflinePartition).valid == ("t-0",)
    assert table.in_state(P.OfflinePartition) == ["t-0"]
    assert table.count(P.OnlinePartition) == 1
    # Deletion: Online -> NonExistent is illegal, Offline -> NonExistent is fine.
    result = table.transition(["t-0", "t-1"], P.NonExistentPartition)
    assert result.valid == ("t-0",)
    assert result.invalid == (InvalidTransition("t-1", P.OnlinePartition, P.NonExistentPartition),)
    assert table.state("t-0") is P.NonExistentPartition
    assert table.state("t-1") is P.OnlinePartition  # skipped, unchanged
    table.remove("t-0")
    assert "t-0" not in table and len(table) == 1


def test_unknown_keys_are_registered_as_non_existent() -> None:
    table: PartitionStateTable[str] = PartitionStateTable()
    result = table.transition(["x"], P.OnlinePartition)
    assert result.valid == ()
    assert result.invalid[0].current is P.NonExistentPartition
    assert "x" in table and table.state("x") is P.NonExistentPartition
    error = result.invalid[0].error
    assert isinstance(error, IllegalStateTransition) and error.key == "x"


def test_check_does_not_mutate() -> None:
    table: PartitionStateTable[str] = PartitionStateTable({"a": P.NewPartition})
    result = table.check(["a", "b"], P.OnlinePartition)
    assert result.valid == ("a",)
    assert [i.key for i in result.invalid] == ["b"]
    assert table.state("a") is P.NewPartition and "b" not in table


def test_batch_is_checked_against_states_before_the_batch() -> None:
    table: PartitionStateTable[str] = PartitionStateTable()
    result = table.transition(["a", "a"], P.NewPartition)
    assert result.valid == ("a", "a")  # both saw NonExistent
    assert table.state("a") is P.NewPartition


def test_put_is_unchecked_but_typed() -> None:
    table: PartitionStateTable[str] = PartitionStateTable()
    table.put("a", P.OnlinePartition)
    assert table.state("a") is P.OnlinePartition
    with pytest.raises(TypeError):
        table.put("a", R.OnlineReplica)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        table.transition(["a"], R.OnlineReplica)  # type: ignore[arg-type]


def test_replica_table_deletion_flow() -> None:
    table: ReplicaStateTable[tuple[str, int]] = ReplicaStateTable()
    replicas = [("t-0", 1), ("t-0", 2)]
    assert table.transition(replicas, R.NewReplica).valid == tuple(replicas)
    assert table.transition(replicas, R.OnlineReplica).valid == tuple(replicas)
    assert table.transition(replicas, R.OfflineReplica).valid == tuple(replicas)
    assert table.transition(replicas, R.ReplicaDeletionStarted).valid == tuple(replicas)
    # Broker 2 answered with an error.
    assert table.transition([("t-0", 1)], R.ReplicaDeletionSuccessful).valid == (("t-0", 1),)
    assert table.transition([("t-0", 2)], R.ReplicaDeletionIneligible).valid == (("t-0", 2),)
    result = table.transition(replicas, R.NonExistentReplica)
    assert result.valid == (("t-0", 1),)
    assert result.invalid[0].current is R.ReplicaDeletionIneligible
    # Ineligible replicas are retried via Offline.
    assert table.transition([("t-0", 2)], R.OfflineReplica).valid == (("t-0", 2),)
    assert table.items() == [(("t-0", 1), R.NonExistentReplica), (("t-0", 2), R.OfflineReplica)]


@settings(max_examples=examples(200), deadline=None)
@given(
    moves=st.lists(
        st.tuples(st.lists(st.integers(0, 4), max_size=5), st.sampled_from(list(R))), max_size=30
    )
)
def test_replica_table_matches_a_model(moves: list[tuple[list[int], ReplicaState]]) -> None:
    table: ReplicaStateTable[int] = ReplicaStateTable()
    model: dict[int, ReplicaState] = {}
    for keys, target in moves:
        before = {k: model.get(k, R.NonExistentReplica) for k in keys}
        result = table.transition(keys, target)
        expected_valid = tuple(k for k in keys if (before[k], target) in LEGAL_REPLICA_MOVES)
        assert result.valid == expected_valid
        assert [(i.key, i.current) for i in result.invalid] == [
            (k, before[k]) for k in keys if (before[k], target) not in LEGAL_REPLICA_MOVES
        ]
        for k in keys:
            model[k] = target if k in expected_valid else before[k]
        assert dict(table.items()) == model
