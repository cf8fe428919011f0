"""What a share fetch read, as the share-partition takes it: batches, aborted ranges, the bytes to send."""

from __future__ import annotations

import pytest

from mafka.group.share.fetched_records import (
    AbortedTransaction,
    ScannedBatch,
    aborted_ranges,
    fetched_batches,
    records_span,
)
from mafka.group.share.partition_state import AcquiredRecords, FetchedBatch

# offsets 0-4 | 5-9 (producer 7, transactional) | 10 (its ABORT marker) | 11-14 (producer 7 again) | 15-19
BATCHES = [
    ScannedBatch(0, 4, position=0, size=100),
    ScannedBatch(5, 9, position=100, size=120, transactional=True, producer_id=7),
    ScannedBatch(10, 10, position=220, size=70, control=True, transactional=True, producer_id=7),
    ScannedBatch(11, 14, position=290, size=90, transactional=True, producer_id=7),
    ScannedBatch(15, 19, position=380, size=110),
]


def test_control_batches_are_gaps() -> None:
    assert fetched_batches(BATCHES)[2] == FetchedBatch(10, 10, control=True)
    assert [b.control for b in fetched_batches(BATCHES)] == [False, False, True, False, False]


def test_only_the_aborted_transactions_batches_are_aborted() -> None:
    # Producer 7's transaction from 5 was aborted by the marker at 10; its next one (11-14) was not.
    assert aborted_ranges(BATCHES, [AbortedTransaction(7, 5, 10)]) == [(5, 9)]
    assert aborted_ranges(BATCHES, [AbortedTransaction(8, 5, 10)]) == []  # another producer's
    assert aborted_ranges(BATCHES, []) == []
    both = [AbortedTransaction(7, 5, 10), AbortedTransaction(7, 11, 30)]
    assert aborted_ranges(BATCHES, both) == [(5, 9), (11, 14)]


def test_the_span_runs_from_the_batch_of_the_first_acquired_offset_to_that_of_the_last() -> None:
    assert records_span(BATCHES, ()) == (0, 0)
    assert records_span(BATCHES, (AcquiredRecords(3, 4, 1),)) == (0, 100)
    assert records_span(BATCHES, (AcquiredRecords(6, 9, 1), AcquiredRecords(16, 17, 2))) == (100, 390)
    assert records_span(BATCHES, (AcquiredRecords(11, 19, 1),)) == (290, 200)


def test_acquired_offsets_outside_the_batches_are_a_caller_bug() -> None:
    with pytest.raises(ValueError):
        records_span(BATCHES, (AcquiredRecords(20, 21, 1),))
    with pytest.raises(ValueError):
        records_span(BATCHES[1:], (AcquiredRecords(2, 6, 1),))
