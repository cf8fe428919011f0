"""The leader-epoch cache (mafka.log.epoch_cache) against Kafka 2.8's LeaderEpochFileCacheTest
and against a brute-force model."""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mafka.log.checkpoint import (
    LEADER_EPOCH_CHECKPOINT,
    CorruptCheckpointError,
    LeaderEpochCheckpointFile,
)
from mafka.log.epoch_cache import (
    UNDEFINED_EPOCH,
    UNDEFINED_EPOCH_OFFSET,
    EpochEntry,
    LeaderEpochCache,
)
from tests.hypothesis_budget import examples

UNDEFINED = (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
E = EpochEntry


class RecordingCheckpoint:
    """An in-memory checkpoint that counts writes (Kafka's test uses the same trick)."""

    def __init__(self, initial: Sequence[EpochEntry] = ()) -> None:
        self.stored = list(initial)
        self.writes = 0

    def read(self) -> list[EpochEntry]:
        return list(self.stored)

    def write(self, entries: Iterable[EpochEntry], *, sync: bool = True) -> None:
        self.stored = list(entries)
        self.writes += 1
        self.unsynced = not sync

    def sync(self) -> None:
        self.unsynced = False


def cache_with(*entries: tuple[int, int]) -> LeaderEpochCache:
    cache = LeaderEpochCache()
    for epoch, start in entries:
        cache.assign(epoch, start)
    return cache


def test_constants() -> None:
    assert UNDEFINED == (-1, -1)


# --------------------------------------------------------------------------- assign


def test_assign_first_entry() -> None:
    cache = cache_with((2, 10))
    assert cache.latest_epoch == 2
    assert cache.entries == [E(2, 10)]
    assert cache.end_offset_for(2, log_end_offset=11) == (2, 11)


def test_assign_same_epoch_later_offset_is_ignored() -> None:
    ckpt = RecordingCheckpoint()
    cache = LeaderEpochCache(ckpt)
    assert cache.assign(2, 9) is True
    assert cache.assign(2, 10) is False
    assert cache.assign(2, 9) is False
    assert cache.entries == [E(2, 9)]
    assert ckpt.writes == 1  # the no-ops did not rewrite the file


def test_assign_new_epoch_same_offset_replaces() -> None:
    # shouldEnforceMonotonicallyIncreasingStartOffsets
    assert cache_with((2, 9), (3, 9)).entries == [E(3, 9)]


def test_assign_new_epoch_smaller_offset_replaces() -> None:
    # shouldEnforceOffsetsIncreaseMonotonically
    assert cache_with((2, 6), (3, 5)).entries == [E(3, 5)]


def test_assign_older_epoch_truncates_newer_ones() -> None:
    # shouldEnforceMonotonicallyIncreasingEpochs
    cache = cache_with((1, 5), (2, 6), (1, 7))
    assert cache.entries == [E(1, 7)]
    assert cache.latest_epoch == 1
    assert cache.end_offset_for(1, log_end_offset=8) == (1, 8)
    assert cache.end_offset_for(2, log_end_offset=8) == UNDEFINED


def test_assign_latest_epoch_at_earlier_offset_moves_it() -> None:
    # shouldTruncateIfMatchingEpochButEarlierStartingOffset
    cache = cache_with((5, 11), (6, 12), (7, 13), (7, 12))
    assert cache.entries == [E(5, 11), E(7, 12)]
    assert cache.end_offset_for(5, log_end_offset=20) == (5, 12)
    assert cache.end_offset_for(6, log_end_offset=20) == (5, 12)


def test_assign_rejects_negative_values() -> None:
    cache = cache_with((1, 1))
    for epoch, start in [(-1, 0), (0, -1), (2**31, 0)]:
        with pytest.raises(ValueError):
            cache.assign(epoch, start)
    assert cache.entries == [E(1, 1)]


def test_follower_receiving_many_messages() -> None:
    # shouldIncreaseAndTrackEpochsAsFollowerReceivesManyMessages
    cache = LeaderEpochCache()
    for epoch in range(3):
        for offset in range(3 * epoch, 3 * epoch + 3):
            cache.assign(epoch, offset)
        assert cache.latest_epoch == epoch
        assert cache.end_offset_for(epoch, log_end_offset=3 * epoch + 3) == (epoch, 3 * epoch + 3)
    assert cache.entries == [E(0, 0), E(1, 3), E(2, 6)]
    assert cache.end_offset_for(0, log_end_offset=9) == (0, 3)
    assert cache.end_offset_for(1, log_end_offset=9) == (1, 6)


def test_leader_changing_many_times() -> None:
    # shouldIncreaseAndTrackEpochsAsLeadersChangeManyTimes
    cache = cache_with((0, 0), (1, 0))
    assert cache.entries == [E(1, 0)]
    assert cache.end_offset_for(1, log_end_offset=0) == (1, 0)
    # Epoch 0 is older than everything cached: Kafka echoes it with the first start offset.
    assert cache.end_offset_for(0, log_end_offset=0) == (0, 0)
    assert cache.end_offset_for(1, log_end_offset=5) == (1, 5)
    cache.assign(2, 5)
    assert cache.end_offset_for(2, log_end_offset=10) == (2, 10)
    assert cache.end_offset_for(1, log_end_offset=10) == (1, 5)
    assert cache.end_offset_for(0, log_end_offset=10) == (0, 0)


def test_previous_epoch() -> None:
    # testPreviousEpoch
    cache = LeaderEpochCache()
    assert cache.previous_epoch is None
    cache.assign(2, 10)
    assert cache.previous_epoch is None
    cache.assign(4, 15)
    assert cache.previous_epoch == 2
    cache.assign(10, 20)
    assert cache.previous_epoch == 4
    cache.truncate_from_end(18)
    assert cache.previous_epoch == 2


# --------------------------------------------------------------------------- end_offset_for


def test_end_offset_for_empty_cache() -> None:
    cache = LeaderEpochCache()
    assert cache.end_offset_for(0, log_end_offset=73) == UNDEFINED
    assert cache.end_offset_for(7, log_end_offset=73) == UNDEFINED
    assert cache.end_offset_for(UNDEFINED_EPOCH, log_end_offset=73) == UNDEFINED


def test_end_offset_for_undefined_epoch() -> None:
    cache = cache_with((2, 11), (3, 12))
    assert cache.end_offset_for(UNDEFINED_EPOCH, log_end_offset=20) == UNDEFINED


def test_end_offset_for_latest_epoch_is_log_end() -> None:
    cache = cache_with((2, 11), (2, 12))
    assert cache.end_offset_for(2, log_end_offset=14) == (2, 14)


def test_end_offset_for_epoch_above_latest() -> None:
    cache = cache_with((2, 100))
    assert cache.end_offset_for(3, log_end_offset=100) == UNDEFINED


def test_end_offset_for_epoch_below_earliest_echoes_requested_epoch() -> None:
    # shouldReturnFirstEpochIfRequestedEpochLessThanFirstEpoch
    cache = cache_with((5, 11), (6, 12), (7, 13))
    assert cache.end_offset_for(4, log_end_offset=20) == (4, 11)
    assert cache.end_offset_for(0, log_end_offset=20) == (0, 11)


def test_end_offset_for_previous_epoch_is_next_start() -> None:
    # shouldGetFirstOffsetOfSubsequentEpochWhenOffsetRequestedForPreviousEpoch
    cache = cache_with((1, 11), (1, 12), (2, 13), (2, 14), (3, 15), (3, 16))
    assert cache.end_offset_for(2, log_end_offset=17) == (2, 15)


def test_end_offset_for_gaps_between_epochs() -> None:
    # shouldReturnNextAvailableEpochIfThereIsNoExactEpochForTheOneRequested
    cache = cache_with((0, 10), (2, 13), (4, 17))
    assert cache.end_offset_for(1, log_end_offset=20) == (0, 13)
    assert cache.end_offset_for(2, log_end_offset=20) == (2, 17)
    assert cache.end_offset_for(3, log_end_offset=20) == (2, 17)
    assert cache.end_offset_for(4, log_end_offset=20) == (4, 20)
    assert cache.end_offset_for(5, log_end_offset=20) == UNDEFINED


def test_kip_101_worked_examples() -> None:
    # Divergence, fixed: B's cache is (0,0), (1,1); A asks for epoch 0 and truncates to 1.
    assert cache_with((0, 0), (1, 1)).end_offset_for(0, log_end_offset=2) == (0, 1)
    # Multi-round: the leader's cache is (0,0), (1,4), (5,6).
    leader = cache_with((0, 0), (1, 4), (5, 6))
    assert leader.end_offset_for(4, log_end_offset=10) == (1, 6)
    assert leader.end_offset_for(0, log_end_offset=10) == (0, 4)


# --------------------------------------------------------------------------- epoch_for_offset


def test_epoch_for_offset() -> None:
    cache = cache_with((2, 6), (3, 8), (4, 11))
    assert [cache.epoch_for_offset(o) for o in range(4, 14)] == [
        None, None, 2, 2, 3, 3, 3, 4, 4, 4,
    ]  # fmt: skip
    assert LeaderEpochCache().epoch_for_offset(0) is None


# --------------------------------------------------------------------------- truncation


@pytest.mark.parametrize(
    ("end_offset", "expected"),
    [
        (8, [E(2, 6)]),  # on an epoch boundary: removal is inclusive
        (9, [E(2, 6), E(3, 8)]),  # between boundaries
        (12, [E(2, 6), E(3, 8), E(4, 11)]),  # past the last start: nothing to drop
        (6, []),
        (0, []),
        (UNDEFINED_EPOCH_OFFSET, [E(2, 6), E(3, 8), E(4, 11)]),  # ignored
    ],
)
def test_truncate_from_end(end_offset: int, expected: list[EpochEntry]) -> None:
    ckpt = RecordingCheckpoint()
    cache = LeaderEpochCache(ckpt)
    for epoch, start in [(2, 6), (3, 8), (4, 11)]:
        cache.assign(epoch, start)
    writes = ckpt.writes
    changed = cache.truncate_from_end(end_offset)
    assert cache.entries == expected
    assert changed is (expected != [E(2, 6), E(3, 8), E(4, 11)])
    assert ckpt.writes == writes + changed
    assert ckpt.stored == expected


@pytest.mark.parametrize(
    ("start_offset", "expected"),
    [
        (8, [E(3, 8), E(4, 11)]),  # on a boundary: (3, 8) is kept
        (9, [E(3, 9), E(4, 11)]),  # between: epoch 3 now starts at 9
        (1, [E(2, 6), E(3, 8), E(4, 11)]),  # before the first entry: nothing
        (6, [E(2, 6), E(3, 8), E(4, 11)]),  # on the first entry: nothing
        (11, [E(4, 11)]),
        (15, [E(4, 15)]),  # beyond the last: the latest epoch moves up
        (UNDEFINED_EPOCH_OFFSET, [E(2, 6), E(3, 8), E(4, 11)]),
    ],
)
def test_truncate_from_start(start_offset: int, expected: list[EpochEntry]) -> None:
    ckpt = RecordingCheckpoint()
    cache = LeaderEpochCache(ckpt)
    for epoch, start in [(2, 6), (3, 8), (4, 11)]:
        cache.assign(epoch, start)
    writes = ckpt.writes
    changed = cache.truncate_from_start(start_offset)
    assert cache.entries == expected
    assert changed is (expected != [E(2, 6), E(3, 8), E(4, 11)])
    assert ckpt.writes == writes + changed
    assert ckpt.stored == expected


def test_truncate_from_start_inside_first_epoch() -> None:
    # shouldUpdateOffsetBetweenEpochBoundariesOnClearEarliest2
    cache = cache_with((0, 0), (1, 7), (2, 10))
    cache.truncate_from_start(5)
    assert cache.entries == [E(0, 5), E(1, 7), E(2, 10)]


def test_truncation_on_empty_cache() -> None:
    cache = LeaderEpochCache()
    assert cache.truncate_from_start(7) is False
    assert cache.truncate_from_end(7) is False
    assert cache.entries == []


def test_clear() -> None:
    ckpt = RecordingCheckpoint()
    cache = LeaderEpochCache(ckpt)
    cache.assign(2, 6)
    cache.assign(3, 8)
    cache.clear()
    assert cache.entries == [] and len(cache) == 0
    assert (
        cache.latest_entry is None and cache.earliest_entry is None and cache.latest_epoch is None
    )
    assert ckpt.stored == []


def test_latest_and_earliest_entry() -> None:
    cache = cache_with((2, 6), (3, 8), (4, 11))
    assert cache.latest_entry == E(4, 11)
    assert cache.earliest_entry == E(2, 6)
    assert len(cache) == 3


# --------------------------------------------------------------------------- persistence


def test_persists_between_instances(tmp_path: Path) -> None:
    cache = LeaderEpochCache.in_dir(tmp_path)
    cache.assign(2, 6)
    cache.assign(5, 9)
    path = tmp_path / LEADER_EPOCH_CHECKPOINT
    cache.sync()  # the writer thread writes moments later; sync writes it now
    assert path.read_bytes() == b"0\n2\n2 6\n5 9\n"
    assert LeaderEpochCache(LeaderEpochCheckpointFile(path)).entries == [E(2, 6), E(5, 9)]

    cache.truncate_from_end(9)
    cache.sync()
    assert path.read_bytes() == b"0\n1\n2 6\n"
    cache.truncate_from_start(7)
    cache.sync()
    assert path.read_bytes() == b"0\n1\n2 7\n"
    cache.clear()
    cache.sync()
    assert path.read_bytes() == b"0\n0\n"
    assert LeaderEpochCache(LeaderEpochCheckpointFile(path)).entries == []


def test_missing_file_loads_empty_and_is_not_created(tmp_path: Path) -> None:
    cache = LeaderEpochCache.in_dir(tmp_path)
    assert cache.entries == []
    assert not (tmp_path / LEADER_EPOCH_CHECKPOINT).exists()
    cache.flush()
    assert (tmp_path / LEADER_EPOCH_CHECKPOINT).read_bytes() == b"0\n0\n"


def test_loading_sanitises_non_monotonic_file_without_writing() -> None:
    # Kafka loads through assign(), so conflicting lines are dropped the same way.
    ckpt = RecordingCheckpoint([E(1, 5), E(2, 6), E(1, 7), E(3, 7), E(3, 9)])
    cache = LeaderEpochCache(ckpt)
    assert cache.entries == [E(3, 7)]
    assert ckpt.writes == 0


def test_loading_rejects_negative_entries(tmp_path: Path) -> None:
    path = tmp_path / LEADER_EPOCH_CHECKPOINT
    path.write_bytes(b"0\n2\n0 0\n-1 5\n")
    with pytest.raises(CorruptCheckpointError, match=LEADER_EPOCH_CHECKPOINT):
        LeaderEpochCache(LeaderEpochCheckpointFile(path))


def test_loading_propagates_file_corruption(tmp_path: Path) -> None:
    path = tmp_path / LEADER_EPOCH_CHECKPOINT
    path.write_bytes(b"0\n3\n0 0\n")
    with pytest.raises(CorruptCheckpointError):
        LeaderEpochCache(LeaderEpochCheckpointFile(path))


# --------------------------------------------------------------------------- model-based


class Model:
    """The cache as a plain list, written as directly from Kafka's rules as possible."""

    def __init__(self) -> None:
        self.entries: list[tuple[int, int]] = []

    def assign(self, epoch: int, start: int) -> None:
        if self.entries and self.entries[-1][0] == epoch and start >= self.entries[-1][1]:
            return
        self.entries = [(e, s) for e, s in self.entries if e < epoch and s < start]
        self.entries.append((epoch, start))

    def truncate_from_end(self, end_offset: int) -> None:
        if end_offset >= 0:
            self.entries = [(e, s) for e, s in self.entries if s < end_offset]

    def truncate_from_start(self, start_offset: int) -> None:
        before = [(e, s) for e, s in self.entries if s <= start_offset]
        if before:
            rest = [(e, s) for e, s in self.entries if s > start_offset]
            self.entries = [(before[-1][0], start_offset), *rest]

    def end_offset_for(self, requested: int, leo: int) -> tuple[int, int]:
        if requested == UNDEFINED_EPOCH or not self.entries:
            return UNDEFINED
        if requested == self.entries[-1][0]:
            return requested, leo
        floor = [(e, s) for e, s in self.entries if e <= requested]
        higher = [(e, s) for e, s in self.entries if e > requested]
        if not higher:
            return UNDEFINED
        if not floor:
            return requested, higher[0][1]
        return floor[-1][0], higher[0][1]

    def epoch_for_offset(self, offset: int) -> int | None:
        covering = [e for e, s in self.entries if s <= offset]
        return covering[-1] if covering else None


_small = st.integers(0, 30)
_ops = st.lists(
    st.one_of(
        st.tuples(st.just("assign"), _small, _small),
        st.tuples(st.just("truncate_from_end"), st.integers(-1, 32)),
        st.tuples(st.just("truncate_from_start"), st.integers(-1, 32)),
    ),
    max_size=25,
)


@settings(max_examples=examples(300), deadline=None)
@given(_ops)
def test_against_model(ops: list[tuple]) -> None:
    with tempfile.TemporaryDirectory() as d:
        ckpt = LeaderEpochCheckpointFile(Path(d) / LEADER_EPOCH_CHECKPOINT, fsync=False)
        cache = LeaderEpochCache(ckpt)
        model = Model()
        for name, *args in ops:
            getattr(cache, name)(*args)
            getattr(model, name)(*args)
            entries = cache.entries
            assert [tuple(e) for e in entries] == model.entries
            # Strictly increasing in both columns, always.
            assert all(
                a.epoch < b.epoch and a.start_offset < b.start_offset
                for a, b in zip(entries, entries[1:], strict=False)
            )
            leo = (entries[-1].start_offset if entries else 0) + 3
            for requested in range(-1, 33):
                assert cache.end_offset_for(requested, leo) == model.end_offset_for(requested, leo)
            for offset in range(0, 34):
                assert cache.epoch_for_offset(offset) == model.epoch_for_offset(offset)
        # Every mutation was checkpointed: a fresh cache sees the same entries.
        cache.sync()
        assert LeaderEpochCache(LeaderEpochCheckpointFile(ckpt.path)).entries == cache.entries
