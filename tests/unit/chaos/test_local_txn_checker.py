"""The local-transaction checker: a clean run passes; a lost, a phantom and a duplicated message are reported."""

from __future__ import annotations

from tests.integration.local_txn_chaos import check_local_txn


def test_a_clean_run_passes():
    r = check_local_txn({"o-1", "o-2"}, ["o-2", "o-1"])
    assert r.ok and (r.committed, r.delivered) == (2, 2)


def test_each_violation_is_reported():
    r = check_local_txn({"o-1", "o-2", "o-3"}, ["o-1", "o-1", "o-3", "o-9"])
    assert not r.ok
    assert (r.lost, r.phantom, r.duplicated) == (["o-2"], ["o-9"], ["o-1"])
