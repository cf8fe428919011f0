"""The chaos checkers (tests/harness/checker.py): every property passes a clean history and
reports a constructed violation (the negative controls that prove the checker can fail)."""

from __future__ import annotations

import pytest

from mafka.wire.records import Record, build_batch
from tests.harness.checker import (
    ACKED,
    FAILED,
    UNKNOWN,
    Attempt,
    Consumed,
    check_delivery,
    cut_at_offset,
    iter_batch_headers,
    log_end_offset,
    replica_divergence,
)


def v(p: int, i: int) -> bytes:
    return f"p{p}-{i}".encode()


def clean_history(partitions: int = 3, per_partition: int = 5):
    """Every attempt acked at consecutive offsets, and a drain that reads exactly that."""
    attempts, consumed = [], []
    for p in range(partitions):
        for i in range(per_partition):
            attempts.append(Attempt(v(p, i), p, ACKED, i))
            consumed.append(Consumed(p, i, v(p, i)))
    return attempts, consumed


def test_a_clean_history_has_no_violation():
    attempts, consumed = clean_history()
    report = check_delivery(attempts, consumed)
    assert report.ok, report.summary()
    assert (report.attempted, report.acked, report.consumed) == (15, 15, 15)
    assert all(n == 0 for n in report.violations().values())


def test_interleaved_partitions_in_the_drain_are_fine():
    attempts, consumed = clean_history()
    consumed.sort(key=lambda c: (c.offset, c.partition))  # round-robin over partitions
    assert check_delivery(attempts, consumed).ok


# -- loss ---------------------------------------------------------------------------------------


def test_an_acked_value_missing_from_the_drain_is_lost():
    attempts, consumed = clean_history()
    del consumed[2]  # p0-2, below the highest offset read on partition 0
    report = check_delivery(attempts, consumed)
    assert not report.ok
    assert report.lost == [v(0, 2)]
    assert report.lost_writes == [v(0, 2)]  # at or below what was read: not lag


def test_an_acknowledgement_without_an_offset_is_checked_for_loss_only():
    """librdkafka may acknowledge without an offset (None, kept as -1): present anywhere is fine,
    absent is lost, and it takes part in no position or order rule."""
    attempts, consumed = clean_history()
    attempts[1].offset = -1  # p0-1, read at offset 1
    report = check_delivery(attempts, consumed)
    assert report.ok, report.summary()
    assert report.acked_without_offset == 1
    assert "acked without an offset 1" in report.summary()
    del consumed[1]
    report = check_delivery(attempts, consumed)
    assert report.lost == [v(0, 1)] and not report.offset_mismatches


def test_a_missing_tail_is_lost_but_not_a_lost_write():
    attempts, consumed = clean_history()
    consumed = [c for c in consumed if not (c.partition == 1 and c.offset >= 3)]
    report = check_delivery(attempts, consumed)
    assert report.lost == [v(1, 3), v(1, 4)]
    assert report.lost_writes == []
    assert not report.ok


def test_unacknowledged_values_may_be_missing_or_visible():
    attempts, consumed = clean_history()
    attempts.append(Attempt(b"never-acked", 0, UNKNOWN))
    attempts.append(Attempt(b"timed-out", 0, FAILED, error="_MSG_TIMED_OUT"))
    attempts.append(Attempt(b"failed-but-written", 1, FAILED, error="_MSG_TIMED_OUT"))
    attempts.append(Attempt(b"unknown-but-written", 2, UNKNOWN))
    consumed += [Consumed(1, 5, b"failed-but-written"), Consumed(2, 5, b"unknown-but-written")]
    report = check_delivery(attempts, consumed)
    assert report.ok, report.summary()
    assert (report.acked, report.failed, report.unknown) == (15, 2, 2)
    assert report.failed_visible == [b"failed-but-written"]
    assert report.unknown_visible == [b"unknown-but-written"]


def test_an_unclean_election_shape_is_reported_as_loss():
    """Leader acked 3..5 alone, the new leader had 0..2 and took new writes at 3..: values lost,
    offsets reused by other values."""
    attempts = [Attempt(v(0, i), 0, ACKED, i) for i in range(6)]
    attempts += [Attempt(b"after-0", 0, ACKED, 3), Attempt(b"after-1", 0, ACKED, 4)]
    consumed = [Consumed(0, i, v(0, i)) for i in range(3)] + [Consumed(0, 3, b"after-0"), Consumed(0, 4, b"after-1")]
    report = check_delivery(attempts, consumed)
    assert report.lost == [v(0, 3), v(0, 4), v(0, 5)]
    assert report.lost_writes == [v(0, 3), v(0, 4)]
    assert set(report.inconsistent_offsets) == {(0, 3), (0, 4)}
    assert not report.ok


# -- duplicates ---------------------------------------------------------------------------------


def test_a_value_at_two_offsets_is_a_duplicate():
    attempts, consumed = clean_history()
    consumed.append(Consumed(0, 5, v(0, 4)))  # written twice: at 4 (acked) and again at 5
    report = check_delivery(attempts, consumed)
    assert not report.ok
    assert report.duplicates == {v(0, 4): [(0, 4), (0, 5)]}
    assert report.offset_mismatches == {}


def test_reading_the_same_record_twice_is_not_a_duplicate():
    attempts, consumed = clean_history()
    consumed += consumed[:4]  # a second, overlapping drain
    report = check_delivery(attempts, consumed)
    assert report.ok, report.summary()
    assert report.reread == 4


def test_an_unacked_value_written_twice_is_still_a_duplicate():
    attempts = [Attempt(b"x", 0, UNKNOWN)]
    report = check_delivery(attempts, [Consumed(0, 0, b"x"), Consumed(0, 1, b"x")])
    assert report.duplicates == {b"x": [(0, 0), (0, 1)]}
    assert not report.ok


# -- order --------------------------------------------------------------------------------------


def test_values_read_out_of_acknowledged_order_are_reported():
    attempts, consumed = clean_history()
    # The acks put p2-2 before p2-3, but the log holds them the other way round.
    attempts = [a for a in attempts if a.partition != 2]
    consumed = [c for c in consumed if c.partition != 2]
    attempts += [Attempt(v(2, i), 2, ACKED, i) for i in range(5)]
    consumed += [Consumed(2, 0, v(2, 0)), Consumed(2, 1, v(2, 1)), Consumed(2, 2, v(2, 3)),
                 Consumed(2, 3, v(2, 2)), Consumed(2, 4, v(2, 4))]
    report = check_delivery(attempts, consumed)
    assert report.order_violations == {2: [(v(2, 2), v(2, 3))]}
    assert set(report.offset_mismatches) == {v(2, 2), v(2, 3)}
    assert not report.ok


def test_order_is_judged_per_partition_not_across_partitions():
    attempts = [Attempt(b"a", 0, ACKED, 10), Attempt(b"b", 1, ACKED, 0)]
    consumed = [Consumed(1, 0, b"b"), Consumed(0, 10, b"a")]
    assert check_delivery(attempts, consumed).ok


def test_one_late_value_is_reported_once():
    attempts = [Attempt(v(0, i), 0, ACKED, i) for i in range(5)]
    consumed = [Consumed(0, i, v(0, j)) for i, j in enumerate([1, 2, 3, 4, 0])]
    report = check_delivery(attempts, consumed)
    assert report.order_violations == {0: [(v(0, 0), v(0, 4))]}


# -- offsets ------------------------------------------------------------------------------------


def test_a_value_read_at_another_offset_than_acked_is_reported():
    attempts, consumed = clean_history()
    attempts[1] = Attempt(v(0, 1), 0, ACKED, 7)  # the ack named offset 7; the value sits at 1
    report = check_delivery(attempts, consumed)
    assert report.offset_mismatches == {v(0, 1): ((0, 7), [(0, 1)])}
    assert not report.ok


def test_two_values_acked_at_one_offset_are_inconsistent():
    attempts = [Attempt(b"a", 0, ACKED, 0), Attempt(b"b", 0, ACKED, 0)]
    report = check_delivery(attempts, [Consumed(0, 0, b"a")])
    assert report.inconsistent_offsets == {(0, 0): [b"a", b"b"]}
    assert report.lost == [b"b"]
    assert not report.ok


def test_two_values_read_at_one_offset_are_inconsistent():
    attempts = [Attempt(b"a", 0, UNKNOWN), Attempt(b"b", 0, UNKNOWN)]
    report = check_delivery(attempts, [Consumed(0, 0, b"a"), Consumed(0, 0, b"b")])
    assert report.inconsistent_offsets == {(0, 0): [b"a", b"b"]}
    assert not report.ok


# -- unexpected ---------------------------------------------------------------------------------


def test_a_value_never_sent_is_unexpected():
    attempts, consumed = clean_history()
    consumed.append(Consumed(1, 5, b"from-nowhere"))
    report = check_delivery(attempts, consumed)
    assert report.unexpected == [Consumed(1, 5, b"from-nowhere")]
    assert not report.ok


def test_a_value_read_on_another_partition_is_unexpected():
    attempts = [Attempt(b"a", 0, UNKNOWN)]
    report = check_delivery(attempts, [Consumed(1, 0, b"a")])
    assert report.unexpected == [Consumed(1, 0, b"a")]
    assert not report.ok


def test_attempt_values_must_be_unique():
    with pytest.raises(ValueError):
        check_delivery([Attempt(b"a", 0), Attempt(b"a", 1)], [])


def test_the_summary_names_each_violation():
    attempts, consumed = clean_history()
    consumed = consumed[1:] + [Consumed(2, 9, b"zzz")]
    text = check_delivery(attempts, consumed).summary()
    assert "lost 1" in text and "unexpected 1" in text and "p0-0" in text


# -- replica byte identity ----------------------------------------------------------------------


def log_of(batches: list[tuple[int, int, list[bytes]]]) -> bytes:
    """(base offset, leader epoch, values) → the concatenated batches, as a segment holds them."""
    out = b""
    for base, epoch, values in batches:
        records = [Record(base + i, 1000 + i, None, value) for i, value in enumerate(values)]
        out += build_batch(records, base_offset=base, partition_leader_epoch=epoch)
    return out


LEADER = [(0, 0, [b"a", b"b"]), (2, 0, [b"c"]), (3, 1, [b"d", b"e", b"f"])]


def test_batch_headers_walk_a_log():
    data = log_of(LEADER)
    headers = list(iter_batch_headers(data))
    assert [(h.base_offset, h.last_offset, h.leader_epoch) for h in headers] == [(0, 1, 0), (2, 2, 0), (3, 5, 1)]
    assert sum(h.size for h in headers) == len(data)
    assert log_end_offset(data) == 6
    assert log_end_offset(b"") == 0
    assert log_end_offset(data[:-3]) == 3  # a torn tail is not counted
    assert cut_at_offset(data, 3) == log_of(LEADER[:2])
    assert cut_at_offset(data, 5) == log_of(LEADER[:2])  # batch 3..5 is not wholly below 5
    assert cut_at_offset(data, 6) == data


def test_identical_replicas_pass():
    data = log_of(LEADER)
    report = replica_divergence({1: data, 2: data, 3: data})
    assert report.identical, report.summary()
    assert report.end_offsets == {1: 6, 2: 6, 3: 6}


def test_a_divergent_replica_is_reported_with_its_batch():
    leader = log_of(LEADER)
    # broker 3 kept a tail of epoch 0 that the leader of epoch 1 replaced (a missed truncation)
    stale = log_of(LEADER[:2] + [(3, 0, [b"x", b"y", b"z"])])
    report = replica_divergence({1: leader, 2: leader, 3: stale})
    assert not report.identical
    assert set(report.differences) == {3}
    byte, offset = report.differences[3]
    assert byte >= len(log_of(LEADER[:2])) and offset == 3
    assert "replica 3 differs" in report.summary()


def test_a_lagging_replica_differs_unless_cut_at_the_high_watermark():
    leader = log_of(LEADER)
    behind = log_of(LEADER[:2])
    assert not replica_divergence({1: leader, 2: behind}).identical
    assert replica_divergence({1: leader, 2: behind}, upto=3).identical
    short = replica_divergence({1: leader, 2: behind}, upto=6)
    assert short.short == [2] and not short.identical


def test_a_single_flipped_byte_is_found():
    data = log_of(LEADER)
    flipped = bytearray(data)
    flipped[40] ^= 1
    report = replica_divergence({1: data, 2: bytes(flipped)})
    assert report.differences == {2: (40, 0)}
