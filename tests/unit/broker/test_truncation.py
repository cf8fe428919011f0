"""Follower truncation by leader epoch (mafka.broker.truncation.truncation_for).

Every branch of Kafka 2.8's ``AbstractFetcherThread.getOffsetTruncationState``
and the three worked examples of ``shared/reference/zk-controller-replication.md``
§4.6, with in-memory :class:`LeaderEpochCache` objects standing for the
leader's and the follower's ``leader-epoch-checkpoint``.
"""

from __future__ import annotations

import pytest

from mafka.broker.truncation import TruncationState, truncation_for
from mafka.log.epoch_cache import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET, LeaderEpochCache


def cache(*entries: tuple[int, int]) -> LeaderEpochCache:
    c = LeaderEpochCache()  # in memory, no checkpoint
    for epoch, start in entries:
        c.assign(epoch, start)
    return c


# ---------------------------------------------------------------------------- branches


@pytest.mark.parametrize(
    ("leo", "hw", "expected"),
    [(10, 7, 7), (7, 7, 7), (5, 7, 5)],  # the last: a HW above the LEO is still capped by the LEO
)
def test_leader_knows_no_such_epoch_truncates_to_the_high_watermark(leo, hw, expected):
    follower = cache((0, 0), (2, 4))
    got = truncation_for(follower, leo, hw, UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
    assert got == TruncationState(expected, True)
    # The leader epoch is irrelevant once the end offset is undefined.
    assert truncation_for(follower, leo, hw, 2, UNDEFINED_EPOCH_OFFSET) == TruncationState(expected, True)


@pytest.mark.parametrize(("leader_end", "expected"), [(6, 6), (10, 10), (12, 10)])
def test_an_answer_without_an_epoch_truncates_to_the_leaders_end(leader_end, expected):
    # OffsetForLeaderEpoch v0 (before KIP-279) answers only an offset: min(its end, own LEO).
    follower = cache((0, 0), (2, 4))
    got = truncation_for(follower, 10, 3, UNDEFINED_EPOCH, leader_end)
    assert got == TruncationState(expected, True)


@pytest.mark.parametrize(("leader_end", "expected"), [(4, 4), (9, 9), (15, 9)])
def test_a_follower_without_epochs_truncates_to_the_leaders_end(leader_end, expected):
    got = truncation_for(cache(), 9, 2, 3, leader_end)
    assert got == TruncationState(expected, True)


def test_a_leader_epoch_above_every_follower_epoch_truncates_to_the_leaders_end():
    # The follower's cache has no entry with an epoch above 1, so it "knows no epoch" for 2.
    follower = cache((0, 0), (1, 5))
    assert follower.end_offset_for(2, 9) == (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
    assert truncation_for(follower, 9, 3, 2, 7) == TruncationState(7, True)
    assert truncation_for(follower, 9, 3, 2, 12) == TruncationState(9, True)


def test_a_follower_with_only_a_smaller_epoch_truncates_to_its_end_and_asks_again():
    # The leader answers epoch 3; the follower's largest epoch <= 3 is 2, ending where 4 starts (8).
    follower = cache((0, 0), (2, 5), (4, 8))
    assert truncation_for(follower, 12, 1, 3, 7) == TruncationState(8, False)
    # The intermediate offset ignores the leader's end offset but never exceeds the LEO.
    assert truncation_for(follower, 12, 1, 3, 100) == TruncationState(8, False)
    follower_short = cache((0, 0), (2, 5), (4, 8))
    assert truncation_for(follower_short, 6, 1, 3, 7) == TruncationState(6, False)


@pytest.mark.parametrize(
    ("leader_end", "leo", "expected"),
    [
        (5, 12, 5),  # the leader's end offset is the smallest
        (9, 12, 8),  # the follower's own end of that epoch is the smallest
        (9, 7, 7),  # the follower's LEO is the smallest
    ],
)
def test_same_epoch_truncates_to_the_smallest_of_the_three(leader_end, leo, expected):
    follower = cache((0, 0), (2, 5), (4, 8))  # epoch 2 ends at 8 here
    assert truncation_for(follower, leo, 0, 2, leader_end) == TruncationState(expected, True)


def test_same_epoch_as_the_followers_latest_ends_at_its_leo():
    follower = cache((0, 0), (2, 5))
    assert truncation_for(follower, 9, 0, 2, 20) == TruncationState(9, True)
    assert truncation_for(follower, 9, 0, 2, 6) == TruncationState(6, True)


def test_an_epoch_older_than_every_follower_epoch_uses_its_first_start_offset():
    # Retention removed the early epochs: the follower's cache echoes the asked epoch with
    # its first start offset, so "same epoch" applies with the first start offset as its end.
    follower = cache((3, 10), (5, 14))
    assert follower.end_offset_for(1, 20) == (1, 10)
    assert truncation_for(follower, 20, 0, 1, 15) == TruncationState(10, True)
    assert truncation_for(follower, 20, 0, 1, 8) == TruncationState(8, True)


def test_truncation_for_does_not_change_the_cache():
    follower = cache((0, 0), (2, 5), (4, 8))
    before = follower.entries
    truncation_for(follower, 10, 1, 1, 6)
    truncation_for(follower, 10, 1, 4, 9)
    assert follower.entries == before


# ---------------------------------------------------------------------------- §4.6 worked examples


def test_worked_example_loss_fixed():
    # B leads, A follows; both hold m1, m2 (offsets 0, 1). B's HW = 2, A's HW = 1 (not yet
    # piggy-backed).  A restarts: the old scheme truncated to its HW (1) and dropped m2.
    leader_b = cache((0, 0))
    follower_a = cache((0, 0))
    asked = follower_a.latest_epoch
    assert asked == 0
    answer = leader_b.end_offset_for(asked, log_end_offset=2)
    assert answer == (0, 2)
    got = truncation_for(follower_a, 2, 1, *answer)
    assert got == TruncationState(2, True)  # m2 kept
    assert got.offset > 1  # the HW-only rule would have cut at 1


def test_worked_example_divergence_fixed():
    # A led with m1, m2 (HW 2).  After a power loss B holds only m1, is elected (epoch 1) and
    # writes m3 at offset 1: B's cache is (0,0), (1,1).  A returns with HW 2 and LEO 2.
    leader_b = cache((0, 0), (1, 1))
    follower_a = cache((0, 0))
    answer = leader_b.end_offset_for(follower_a.latest_epoch, log_end_offset=2)
    assert answer == (0, 1)
    got = truncation_for(follower_a, 2, 2, *answer)
    assert got == TruncationState(1, True)  # m2 goes; A then fetches m3 from offset 1
    assert got.offset < 2  # the HW-only rule would have kept m2 (truncate to 2 = nothing)


def test_worked_example_multi_round():
    follower = cache((0, 0), (2, 5), (4, 8))
    leader = cache((0, 0), (1, 4), (5, 6))
    follower_leo, leader_leo = 10, 12

    # Round 1: ask for the follower's latest epoch (4).
    asked = follower.latest_epoch
    assert asked == 4
    answer = leader.end_offset_for(asked, leader_leo)
    assert answer == (1, 6)
    first = truncation_for(follower, follower_leo, 0, *answer)
    assert first == TruncationState(5, False)  # the follower's largest epoch <= 1 is 0, ending at 5
    follower.truncate_from_end(first.offset)  # what the log truncation does to the cache
    follower_leo = first.offset
    assert follower.entries == [(0, 0)]

    # Round 2: ask again with the (new) latest epoch, 0.
    asked = follower.latest_epoch
    assert asked == 0
    answer = leader.end_offset_for(asked, leader_leo)
    assert answer == (0, 4)
    second = truncation_for(follower, follower_leo, 0, *answer)
    assert second == TruncationState(4, True)
