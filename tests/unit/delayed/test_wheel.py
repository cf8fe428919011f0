"""The timing wheel hands out every entry at its due millisecond, never early, in (due, key) order."""

from __future__ import annotations

import random

import pytest

from mafka.delayed.wheel import TimingWheel


def test_entries_come_out_at_their_millisecond_in_key_order():
    w: TimingWheel[int] = TimingWheel(1000, size=8, levels=3)
    for key, due in [(5, 1003), (1, 1003), (9, 1100), (2, 5000), (7, 999)]:
        w.add(due, key)
    assert w.advance(1002) == [(999, 7)]  # already due when added
    assert w.advance(1003) == [(1003, 1), (1003, 5)]
    assert w.advance(1099) == []
    assert w.advance(1100) == [(1100, 9)]
    assert len(w) == 1 and 2 in w
    assert w.advance(4999) == []
    assert w.advance(100_000) == [(5000, 2)]
    assert len(w) == 0 and w.next_due_ms() is None


def test_remove_and_duplicates():
    w: TimingWheel[str] = TimingWheel(0, size=4, levels=2)
    w.add(50, "a")
    w.add(51, "b")
    with pytest.raises(KeyError):
        w.add(60, "a")
    assert w.remove("a") and not w.remove("a")
    w.add(50, "a")  # back into the emptied bucket
    assert w.advance(100) == [(50, "a"), (51, "b")]


@pytest.mark.parametrize("seed", range(5))
def test_against_a_sorted_list(seed):
    rng = random.Random(seed)
    now = 1_800_000_000_000
    w: TimingWheel[int] = TimingWheel(now, size=16, levels=4)
    pending: dict[int, int] = {}
    key = 0
    for _ in range(300):
        for _ in range(rng.randrange(20)):
            due = now + rng.choice([0, 1, rng.randrange(50), rng.randrange(5000), rng.randrange(10_000_000)])
            w.add(due, key)
            pending[key] = due
            key += 1
        if pending and rng.random() < 0.2:
            victim = rng.choice(list(pending))
            assert w.remove(victim)
            del pending[victim]
        nxt = w.next_due_ms()
        assert nxt is None or nxt <= min(pending.values(), default=nxt) or nxt == now
        now += rng.choice([0, 1, 7, rng.randrange(3000), rng.randrange(2_000_000)])
        got = w.advance(now)
        expected = sorted((due, k) for k, due in pending.items() if due <= now)
        assert got == expected
        for _, k in got:
            del pending[k]
        assert len(w) == len(pending)
    assert w.advance(now + 10**9) == sorted((due, k) for k, due in pending.items())
