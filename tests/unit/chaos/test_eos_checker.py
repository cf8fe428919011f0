"""The exactly-once checker (tests/harness/txn_chaos.py): a clean copy passes, and each kind of
violation — a lost record, a duplicated one, a reordering, a record in the wrong partition, a changed
value, a record that is no copy — is reported (the negative controls that prove the checker can fail)."""

from __future__ import annotations

from tests.harness.txn_chaos import check_exactly_once, encode_output, parse_output


def source(partitions: int = 3, per_partition: int = 6) -> dict[int, list[tuple[int, bytes]]]:
    """A: partition p holds values p-0 … at offsets 0, 1, …"""
    return {p: [(o, f"{p}-{o}".encode()) for o in range(per_partition)] for p in range(partitions)}


def copy(a: dict[int, list[tuple[int, bytes]]], markers: bool = True) -> dict[int, list[tuple[int, bytes]]]:
    """B as the app writes it: same partition, values wrapped; with ``markers`` every third B offset is
    skipped (a transaction marker takes it), so B offsets differ from A offsets."""
    out: dict[int, list[tuple[int, bytes]]] = {}
    for p, records in a.items():
        bo, rows = 0, []
        for o, v in records:
            if markers and o % 3 == 2:
                bo += 1
            rows.append((bo, encode_output(p, o, v)))
            bo += 1
        out[p] = rows
    return out


def test_encode_and_parse_round_trip():
    assert parse_output(encode_output(2, 17, b"abc:def")) == (2, 17, b"abc:def")
    assert parse_output(b"garbage") is None
    assert parse_output(b"x:1:v") is None
    assert parse_output(None) is None


def test_a_faithful_copy_passes():
    a = source()
    r = check_exactly_once(a, copy(a))
    assert r.ok, r.summary()
    assert (r.source_records, r.output_records) == (18, 18)
    assert r.summary().endswith("0 lost, 0 duplicated, 0 reordered")


def test_nothing_read_is_not_a_pass():
    assert not check_exactly_once({0: []}, {0: []}).ok


def test_a_lost_record_is_reported():
    a = source()
    b = copy(a)
    del b[1][3]
    r = check_exactly_once(a, b)
    assert not r.ok
    assert r.lost == [(1, 3)]
    assert not r.duplicated and not r.reordered
    assert "1 lost, 0 duplicated, 0 reordered" in r.summary()


def test_a_whole_missing_partition_is_lost():
    a = source()
    b = copy(a)
    b[2] = []
    r = check_exactly_once(a, b)
    assert r.lost == [(2, o) for o in range(6)]


def test_a_duplicated_record_is_reported():
    a = source()
    b = copy(a)
    b[0].append((100, encode_output(0, 4, b"0-4")))  # a second copy later in the partition
    r = check_exactly_once(a, b)
    assert not r.ok
    assert r.duplicated == {(0, 4): 2}
    assert r.extra_copies == 1
    assert not r.lost and not r.reordered  # the second copy is a duplicate, not a reordering
    assert "0 lost, 1 duplicated, 0 reordered" in r.summary()


def test_a_reprocessed_batch_is_reported_as_duplicates():
    """What an aborted transaction looks like to read_uncommitted: a batch, then the same batch again."""
    a = source(partitions=1, per_partition=6)
    b = {0: [(i, encode_output(0, o, f"0-{o}".encode())) for i, o in enumerate([0, 1, 2, 3, 2, 3, 4, 5])]}
    r = check_exactly_once(a, b)
    assert r.duplicated == {(0, 2): 2, (0, 3): 2}
    assert not r.lost and not r.reordered


def test_a_reordering_is_reported():
    a = source()
    b = copy(a, markers=False)
    b[2][1], b[2][2] = (1, b[2][2][1]), (2, b[2][1][1])  # A offsets 2 then 1
    r = check_exactly_once(a, b)
    assert not r.ok
    assert r.reordered == [(2, 2, 1, 2)]  # B offset 2 holds A offset 1, after A offset 2
    assert not r.lost and not r.duplicated
    assert "0 lost, 0 duplicated, 1 reordered" in r.summary()


def test_a_record_moved_far_back_counts_once():
    a = source(partitions=1, per_partition=6)
    order = [1, 2, 3, 4, 5, 0]
    b = {0: [(i, encode_output(0, o, f"0-{o}".encode())) for i, o in enumerate(order)]}
    r = check_exactly_once(a, b)
    assert r.reordered == [(0, 5, 0, 5)]


def test_a_record_in_another_partition_is_misplaced():
    a = source()
    b = copy(a)
    moved = b[0].pop(2)
    b[1].append((50, moved[1]))
    r = check_exactly_once(a, b)
    assert not r.ok
    assert r.misplaced == [(1, 50, 0, 2)]
    assert not r.lost  # it is in B, in the wrong place


def test_a_changed_value_is_corrupt():
    a = source()
    b = copy(a)
    o, _ = b[1][0]
    b[1][0] = (o, encode_output(1, 0, b"something else"))
    r = check_exactly_once(a, b)
    assert r.corrupt == [(1, o, 1, 0)]
    assert not r.ok


def test_records_that_are_no_copy_are_unexpected():
    a = source()
    b = copy(a)
    b[0].append((90, b"not a copy"))
    b[0].append((91, encode_output(0, 999, b"0-999")))  # no such A offset
    r = check_exactly_once(a, b)
    assert r.unexpected == [(0, 90), (0, 91)]
    assert not r.ok


def test_the_run_fails_when_the_negative_control_flags_nothing():
    """A run whose read_uncommitted view shows no duplicates although records were aborted on purpose
    proves nothing (the aborted records never reached B, or the reads cannot tell): it is a failure."""
    from types import SimpleNamespace

    from tests.harness.txn_chaos import EosResult, EosSettings

    a = source()
    b = copy(a)
    aborted = {p: rows + [(100, encode_output(p, 0, f"{p}-0".encode()))] for p, rows in b.items()}
    result = EosResult(EosSettings(), report=check_exactly_once(a, b), caught_up=True,
                       ends={0: 6, 1: 6, 2: 6}, final_committed={0: 6, 1: 6, 2: 6},
                       source_delivery=SimpleNamespace(ok=True, summary=lambda: "ok"),
                       figures={"records in injected aborts": 3})
    result.uncommitted = check_exactly_once(a, aborted)
    assert result.uncommitted.extra_copies == 3
    assert result.control_ok and result.ok
    assert result.summary().splitlines()[-1] == "EOS: PASS — 0 lost, 0 duplicated, 0 reordered of 18 records"

    result.uncommitted = check_exactly_once(a, b)  # the aborted copies are not there
    assert not result.control_ok and not result.ok
    assert "NOT FLAGGED" in result.summary()

    result.uncommitted = check_exactly_once(a, aborted)
    result.report = check_exactly_once(a, aborted)  # read_committed showing them: a violation
    assert not result.ok
    assert result.summary().splitlines()[-1].startswith("EOS: FAIL — 0 lost, 3 duplicated")
