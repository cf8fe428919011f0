"""Leader election strategies (mafka.controller.election) against Kafka 2.8's Election.scala."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mafka.controller.election import (
    NO_LEADER,
    Election,
    LeaderAndIsr,
    controlled_shutdown_leader,
    initial_leader_and_isr,
    leader_for_controlled_shutdown,
    leader_for_offline,
    leader_for_preferred_replica,
    leader_for_reassign,
    offline_partition_leader,
    preferred_replica_leader,
    reassign_partition_leader,
)
from tests.hypothesis_budget import examples

# --- LeaderAndIsr --------------------------------------------------------------------


def test_leader_and_isr_is_frozen_and_isr_is_a_tuple() -> None:
    state = LeaderAndIsr(1, 5, [1, 2, 3], 7, 2)
    assert state.isr == (1, 2, 3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        state.leader = 2  # type: ignore[misc]
    assert state == LeaderAndIsr(1, 5, (1, 2, 3), 7, 2)


def test_new_leader_and_isr_bumps_the_epoch_only() -> None:
    state = LeaderAndIsr(leader=1, leader_epoch=5, isr=(1, 2, 3), zk_version=7, controller_epoch=2)
    new = state.new_leader_and_isr(2, [2, 3])
    assert new == LeaderAndIsr(2, 6, (2, 3), 7, 2)
    assert state.new_leader(3) == LeaderAndIsr(3, 6, (1, 2, 3), 7, 2)
    assert state.new_epoch() == LeaderAndIsr(1, 6, (1, 2, 3), 7, 2)
    assert state.with_zk_version(8).zk_version == 8
    assert state.with_controller_epoch(4).controller_epoch == 4
    assert state.equals_ignore_zk(state.with_zk_version(99).with_controller_epoch(9))
    assert not state.equals_ignore_zk(state.new_epoch())


def test_leader_opt() -> None:
    assert LeaderAndIsr(NO_LEADER, 3, (2,)).leader_opt is None
    assert LeaderAndIsr(0, 3, (0,)).leader_opt == 0


# --- the four strategies: Kafka's PartitionLeaderElectionAlgorithmsTest, plus ISR rules --


def test_offline_election() -> None:
    assert offline_partition_leader([2, 4], [2, 4], {4}, False) == Election(4, (4,), False)


def test_offline_last_isr_offline_unclean_disabled() -> None:
    assert offline_partition_leader([2, 4], [2], {4}, False) == Election(None, (2,), False)


def test_offline_last_isr_offline_unclean_enabled() -> None:
    assert offline_partition_leader([2, 4], [2], {4}, True) == Election(4, (4,), True)


def test_offline_prefers_assignment_order_over_isr_order() -> None:
    # ISR order is (3, 1) but replica 1 comes first in the assignment.
    election = offline_partition_leader([1, 2, 3], [3, 1], {1, 2, 3}, False)
    assert election.leader == 1
    assert election.isr == (3, 1)  # ISR order kept, filtered by liveness
    assert not election.unclean


def test_offline_new_isr_is_isr_intersect_live() -> None:
    election = offline_partition_leader([1, 2, 3, 4], [1, 2, 3], {2, 3, 4}, False)
    assert election == Election(2, (2, 3), False)


def test_offline_empty_isr() -> None:
    assert offline_partition_leader([1, 2], [], {1, 2}, False) == Election(None, (), False)
    assert offline_partition_leader([1, 2], [], {2}, True) == Election(2, (2,), True)


def test_offline_no_live_replica_even_unclean() -> None:
    assert offline_partition_leader([1, 2], [1], set(), True) == Election(None, (1,), False)


def test_offline_live_isr_member_beats_earlier_live_non_isr_replica() -> None:
    # Replica 1 is live but out of sync; 3 is live and in sync: clean election of 3.
    assert offline_partition_leader([1, 2, 3], [2, 3], {1, 3}, True) == Election(3, (3,), False)


def test_reassign_election() -> None:
    assert reassign_partition_leader([2, 4], [2, 4], {4}) == Election(4, (2, 4), False)
    assert reassign_partition_leader([2, 4], [2], set()) == Election(None, (2,), False)
    assert reassign_partition_leader([2, 4], [], {2}) == Election(None, (), False)
    # Target order decides, not the original assignment.
    assert reassign_partition_leader([6, 5, 4], [4, 5, 6], {4, 5, 6}).leader == 6


def test_preferred_election() -> None:
    assert preferred_replica_leader([2, 4], [2, 4], {2, 4}) == Election(2, (2, 4), False)
    # Preferred replica in ISR but dead: nobody else is tried.
    assert preferred_replica_leader([2, 4], [2], set()) == Election(None, (2,), False)
    assert preferred_replica_leader([2, 4], [2, 4], {4}) == Election(None, (2, 4), False)
    # Live but not in ISR.
    assert preferred_replica_leader([2, 4], [4], {2, 4}) == Election(None, (4,), False)
    assert preferred_replica_leader([2, 4], [], set()) == Election(None, (), False)
    assert preferred_replica_leader([], [1], {1}) == Election(None, (1,), False)


def test_controlled_shutdown_election() -> None:
    assert controlled_shutdown_leader([2, 4], [2, 4], {2, 4}, {2}) == Election(4, (4,), False)
    # Last ISR member shutting down: no leader, nothing changes.
    assert controlled_shutdown_leader([2, 4], [2], {2, 4}, {2}) == Election(None, (2,), False)
    # All ISR shutting down at once.
    assert controlled_shutdown_leader([2, 4], [2, 4], {2, 4}, {2, 4}) == Election(
        None, (2, 4), False
    )
    # ISR loses every shutting-down broker, not only the old leader.
    assert controlled_shutdown_leader([1, 2, 3, 4], [1, 2, 3, 4], {1, 2, 3, 4}, {1, 3}) == Election(
        2, (2, 4), False
    )
    # Shutting-down brokers need not be in ``live`` either.
    assert controlled_shutdown_leader([1, 2], [1, 2], {2}, {1}) == Election(2, (2,), False)


# --- new partitions ------------------------------------------------------------------


def test_initial_leader_and_isr() -> None:
    state = initial_leader_and_isr([3, 1, 2], {1, 2}, controller_epoch=4)
    assert state == LeaderAndIsr(
        leader=1, leader_epoch=0, isr=(1, 2), zk_version=0, controller_epoch=4
    )
    assert initial_leader_and_isr([3, 1, 2], {1, 2, 3}) == LeaderAndIsr(3, 0, (3, 1, 2), 0, 0)
    assert initial_leader_and_isr([3, 1], set()) is None
    assert initial_leader_and_isr([], {1}) is None


# --- Election-object wrappers: new state and recipients ------------------------------


def test_leader_for_offline() -> None:
    current = LeaderAndIsr(1, 7, (1, 2, 3), zk_version=11, controller_epoch=3)
    result = leader_for_offline(current, [1, 2, 3], {2, 3}, False)
    assert result.leader_and_isr == LeaderAndIsr(2, 8, (2, 3), 11, 3)
    assert result.recipients == (2, 3)
    assert result.unclean is False

    dead_isr = LeaderAndIsr(1, 7, (1,), 11, 3)
    clean = leader_for_offline(dead_isr, [1, 2, 3], {3, 2}, False)
    assert clean.leader_and_isr is None and clean.recipients == (2, 3)
    unclean = leader_for_offline(dead_isr, [1, 2, 3], {3, 2}, True)
    assert unclean.leader_and_isr == LeaderAndIsr(2, 8, (2,), 11, 3)
    assert unclean.unclean is True

    no_state = leader_for_offline(None, [1, 2], {1, 2}, True)
    assert no_state.leader_and_isr is None and no_state.recipients == (1, 2)


def test_leader_for_reassign_sends_to_all_targets() -> None:
    current = LeaderAndIsr(1, 2, (1, 2, 3, 4, 5, 6), 5, 1)
    result = leader_for_reassign(current, [4, 5, 6], {1, 2, 3, 5, 6})
    assert result.leader_and_isr == LeaderAndIsr(5, 3, (1, 2, 3, 4, 5, 6), 5, 1)
    assert result.recipients == (4, 5, 6)
    none = leader_for_reassign(current, [7, 8], {1, 2})
    assert none.leader_and_isr is None and none.recipients == (7, 8)


def test_leader_for_preferred_replica_sends_to_all_assigned() -> None:
    current = LeaderAndIsr(2, 4, (2, 1), 9, 1)
    result = leader_for_preferred_replica(current, [1, 2, 3], {1, 2})
    assert result.leader_and_isr == LeaderAndIsr(1, 5, (2, 1), 9, 1)
    assert result.recipients == (1, 2, 3)
    dead_preferred = leader_for_preferred_replica(current, [1, 2, 3], {2, 3})
    assert dead_preferred.leader_and_isr is None
    assert dead_preferred.recipients == (1, 2, 3)


def test_leader_for_controlled_shutdown() -> None:
    current = LeaderAndIsr(1, 4, (1, 2, 3), 9, 1)
    result = leader_for_controlled_shutdown(current, [1, 2, 3, 4], {2, 3}, {1})
    assert result.leader_and_isr == LeaderAndIsr(2, 5, (2, 3), 9, 1)
    assert result.recipients == (1, 2, 3)  # live or shutting down; 4 is dead
    stuck = leader_for_controlled_shutdown(LeaderAndIsr(1, 4, (1,), 9, 1), [1, 2], {1, 2}, {1})
    assert stuck.leader_and_isr is None


# --- properties ----------------------------------------------------------------------

replicas = st.lists(st.integers(0, 9), unique=True, min_size=1, max_size=6)


@settings(max_examples=examples(300), deadline=None)
@given(assignment=replicas, data=st.data())
def test_offline_properties(assignment: list[int], data: st.DataObject) -> None:
    isr = data.draw(st.lists(st.sampled_from(assignment), unique=True))
    live = data.draw(st.sets(st.integers(0, 9)))
    unclean_allowed = data.draw(st.booleans())
    leader, new_isr, unclean = offline_partition_leader(assignment, isr, live, unclean_allowed)
    clean_candidates = [r for r in assignment if r in live and r in isr]
    if clean_candidates:
        assert leader == clean_candidates[0] and not unclean
        assert new_isr == tuple(r for r in isr if r in live)
    elif unclean_allowed and any(r in live for r in assignment):
        assert unclean and leader == next(r for r in assignment if r in live)
        assert new_isr == (leader,)
    else:
        assert leader is None and not unclean and new_isr == tuple(isr)
    if leader is not None:
        assert leader in live and leader in assignment and leader in new_isr
        assert set(new_isr) <= live


@settings(max_examples=examples(300), deadline=None)
@given(assignment=replicas, data=st.data())
def test_controlled_shutdown_properties(assignment: list[int], data: st.DataObject) -> None:
    isr = data.draw(st.lists(st.sampled_from(assignment), unique=True))
    live = data.draw(st.sets(st.integers(0, 9)))
    down = data.draw(st.sets(st.integers(0, 9)))
    leader, new_isr, unclean = controlled_shutdown_leader(assignment, isr, live, down)
    assert not unclean
    if leader is None:
        assert new_isr == tuple(isr)
        assert not [r for r in assignment if r in live and r in isr and r not in down]
    else:
        assert leader in live and leader in isr and leader not in down
        assert new_isr == tuple(r for r in isr if r not in down)
        earlier = assignment[: assignment.index(leader)]
        assert not [r for r in earlier if r in live and r in isr and r not in down]
