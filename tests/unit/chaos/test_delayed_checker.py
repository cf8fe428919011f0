"""The delayed-message checker (tests/integration/delayed_chaos.py): a clean run passes, and each kind of
violation — lost, duplicated, early, wrong due time, wrong acknowledged offset, unexpected — is reported
(the negative controls that prove it can fail)."""

from __future__ import annotations

from tests.harness.checker import ACKED, Attempt
from tests.integration.delayed_chaos import Delivered, check_delayed, delay_of

WALL = 1_800_000_000.0  # wall − monotonic


def run(n: int = 5):
    attempts, delays, read, seen = [], {}, [], {}
    for i in range(n):
        v = f"d-{i}".encode()
        a = Attempt(v, 0, status=ACKED, offset=i, sent_at=10.0 + i, acked_at=10.05 + i)
        attempts.append(a)
        delays[v] = delay_of(i)
        due = int((WALL + 10.02 + i) * 1000) + delay_of(i)
        read.append(Delivered(v, 0, 100 + i, due, i))
        seen[v] = due + 7.0
    return attempts, delays, read, seen


def test_a_clean_run_passes_with_its_lateness():
    r = check_delayed(*run(), WALL)
    assert r.ok, r.summary()
    assert (r.acked, r.delivered) == (5, 5) and r.lateness_ms == [7.0] * 5


def test_every_kind_of_violation_is_reported():
    attempts, delays, read, seen = run(6)
    lost = read.pop(0)  # d-0 never delivered
    read.append(read[0])  # d-1 delivered twice
    seen[read[1].value] = read[1].timestamp - 500  # d-2 visible half a second early
    read[2] = read[2]._replace(timestamp=read[2].timestamp + 5000)  # d-3 due 5 s later than asked
    seen[read[2].value] = read[2].timestamp + 7.0
    read[3] = read[3]._replace(delayed_offset=99)  # d-4 carries the wrong acknowledged offset
    read.append(Delivered(b"stranger", 0, 200, 0, None))
    r = check_delayed(attempts, delays, read, seen, WALL)
    assert not r.ok
    assert r.lost == [lost.value]
    assert r.duplicated == [b"d-1"]
    assert [v for v, _ in r.early] == [b"d-2"]
    assert [v for v, *_ in r.wrong_due] == [b"d-3"]
    assert r.offset_mismatch == [(b"d-4", 4, 99)]
    assert r.unexpected == [b"stranger"]


def test_delays_are_spread_between_one_and_eight_seconds():
    delays = [delay_of(n) for n in range(1000)]
    assert min(delays) >= 1000 and max(delays) < 8000 and len(set(delays)) > 500
