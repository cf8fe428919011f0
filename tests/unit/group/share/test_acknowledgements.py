"""Acknowledgement batches of ShareFetch / ShareAcknowledge: Kafka's validation per partition,
RENEW only in version 2 with IsRenewAck, and applying valid batches to a share-partition."""

from __future__ import annotations

import pytest

from mafka.errors import ErrorCode
from mafka.group.share.acknowledgements import (
    acknowledge_partition,
    acknowledge_partitions,
    count_by_type,
    renew_fetch_error,
    typed_ranges,
    validate_batches,
)
from mafka.group.share.partition_state import (
    AcknowledgementBatch,
    AcknowledgeType,
    RecordState,
    SharePartitionConfig,
    SharePartitionState,
)

GAP, ACCEPT, RELEASE, REJECT, RENEW = 0, 1, 2, 3, 4
OK, BAD_REQUEST, BAD_STATE = ErrorCode.NONE, ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_RECORD_STATE
T = b"\x07" * 16


def b(first: int, last: int, *types: int) -> AcknowledgementBatch:
    return AcknowledgementBatch(first, last, tuple(types))


def acquired(member: str = "m", n: int = 10, now_ms: int = 0) -> SharePartitionState:
    """A share-partition whose offsets 0..n-1 are acquired by *member* (lock 1000 ms)."""
    state = SharePartitionState.new(
        SharePartitionConfig(record_lock_duration_ms=1000, delivery_count_limit=3, max_record_locks=100),
        auto_offset_reset="earliest",
        log_start_offset=0,
        log_end_offset=100,
    )
    state.acquire(member, (0, n - 1), n, now_ms)
    return state


def states(state: SharePartitionState, first: int, last: int) -> list[RecordState]:
    out = []
    for o in range(first, last + 1):
        record = state.record(o)
        assert record is not None
        out.append(record.state)
    return out


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    "batches, version, renew, expected",
    [
        ([], 1, False, OK),
        ([b(0, 4, ACCEPT)], 1, False, OK),
        ([b(0, 2, ACCEPT, GAP, REJECT), b(3, 3, RELEASE), b(7, 9, ACCEPT)], 1, False, OK),
        ([b(5, 4, ACCEPT)], 1, False, BAD_REQUEST),  # reversed
        ([b(0, 4, ACCEPT), b(4, 6, ACCEPT)], 1, False, BAD_REQUEST),  # overlaps at offset 4
        ([b(0, 4, ACCEPT), b(2, 3, ACCEPT)], 1, False, BAD_REQUEST),  # overlapping
        ([b(5, 6, ACCEPT), b(0, 1, ACCEPT)], 1, False, BAD_REQUEST),  # unsorted
        ([b(0, 4)], 1, False, BAD_REQUEST),  # no types
        ([b(0, 4, ACCEPT, ACCEPT)], 1, False, BAD_REQUEST),  # several types, not one per offset
        ([b(0, 0, 5)], 2, True, BAD_REQUEST),  # unknown type
        ([b(0, 0, -1)], 1, False, BAD_REQUEST),
        ([b(0, 1, RENEW)], 1, True, BAD_REQUEST),  # no RENEW before version 2
        ([b(0, 1, RENEW)], 2, False, BAD_REQUEST),  # RENEW needs IsRenewAck
        ([b(0, 1, ACCEPT, RENEW)], 2, True, OK),
    ],
)
def test_validate_batches(batches: list[AcknowledgementBatch], version: int, renew: bool, expected: ErrorCode) -> None:
    assert validate_batches(batches, api_version=version, is_renew_ack=renew) == expected


def test_renew_fetch_error_is_kafkas_message() -> None:
    assert renew_fetch_error(max_wait_ms=0, min_bytes=0, max_bytes=0, max_records=0) is None
    assert renew_fetch_error(max_wait_ms=500, min_bytes=0, max_bytes=1024, max_records=0) == (
        "maxBytes must be set to 0, maxWaitMs must be set to 0, if isRenewAck is true."
    )


def test_typed_ranges_and_counts() -> None:
    batch = b(10, 15, ACCEPT, ACCEPT, GAP, RELEASE, RELEASE, ACCEPT)
    assert list(typed_ranges(batch)) == [
        (10, 11, AcknowledgeType.ACCEPT),
        (12, 12, AcknowledgeType.GAP),
        (13, 14, AcknowledgeType.RELEASE),
        (15, 15, AcknowledgeType.ACCEPT),
    ]
    assert list(typed_ranges(b(0, 99, REJECT))) == [(0, 99, AcknowledgeType.REJECT)]
    assert count_by_type([batch, b(20, 29, REJECT)]) == {
        AcknowledgeType.ACCEPT: 3,
        AcknowledgeType.GAP: 1,
        AcknowledgeType.RELEASE: 2,
        AcknowledgeType.REJECT: 10,
    }


# --------------------------------------------------------------------------- applying


def test_valid_batches_are_applied_offset_by_offset() -> None:
    state = acquired()
    result = acknowledge_partition(
        state, "m", [b(0, 3, ACCEPT, REJECT, RELEASE, GAP), b(4, 9, ACCEPT)], 10, api_version=1
    )
    assert result.ok and result.error_message is None
    # 0..9 done except 2, released (AVAILABLE again, for someone else)
    assert states(state, 2, 2) == [RecordState.AVAILABLE]
    assert state.start_offset == 2
    assert state.acquire("other", (0, 9), 10, 20)[0].first_offset == 2


def test_an_invalid_partition_changes_nothing() -> None:
    state = acquired()
    result = acknowledge_partition(state, "m", [b(0, 4, ACCEPT), b(3, 6, ACCEPT)], 10, api_version=1)
    assert (result.error_code, result.error_message) == (BAD_REQUEST, ErrorCode.INVALID_REQUEST.description)
    assert states(state, 0, 9) == [RecordState.ACQUIRED] * 10


def test_records_the_member_does_not_hold_are_invalid_record_state() -> None:
    state = acquired("other")
    result = acknowledge_partition(state, "m", [b(0, 4, ACCEPT)], 10, api_version=1)
    assert result.error_code == BAD_STATE
    assert states(state, 0, 4) == [RecordState.ACQUIRED] * 5
    # a lock that expired by now_ms cannot be acknowledged either
    late = acquired("m", now_ms=0)
    assert acknowledge_partition(late, "m", [b(0, 0, ACCEPT)], 1000, api_version=1).error_code == BAD_STATE
    assert states(late, 0, 0) == [RecordState.AVAILABLE]


def test_renew_keeps_the_record_and_restarts_its_lock() -> None:
    state = acquired()
    result = acknowledge_partition(state, "m", [b(0, 0, RENEW)], 900, api_version=2, is_renew_ack=True)
    assert result.ok
    record = state.record(0)
    assert record is not None and (record.state, record.lock_expiry_ms) == (RecordState.ACQUIRED, 1900)
    assert acknowledge_partition(state, "m", [b(0, 0, ACCEPT)], 1500, api_version=2).ok  # still held at 1500


def test_empty_and_unknown_partitions() -> None:
    assert acknowledge_partition(None, "m", [], 0, api_version=1).ok
    unknown = acknowledge_partition(None, "m", [b(0, 0, ACCEPT)], 0, api_version=1)
    assert unknown.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    # validation comes first, as in Kafka
    assert acknowledge_partition(None, "m", [b(1, 0, ACCEPT)], 0, api_version=1).error_code == BAD_REQUEST


def test_one_bad_partition_does_not_disturb_the_others() -> None:
    good, bad = acquired(), acquired()
    results = acknowledge_partitions(
        {(T, 0): good, (T, 1): bad},
        "m",
        {(T, 0): [b(0, 9, ACCEPT)], (T, 1): [b(0, 9, RENEW)], (T, 2): [b(0, 0, ACCEPT)]},
        10,
        api_version=1,
    )
    assert {tp: r.error_code for tp, r in results.items()} == {
        (T, 0): OK,
        (T, 1): BAD_REQUEST,
        (T, 2): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert good.start_offset == 10
    assert states(bad, 0, 9) == [RecordState.ACQUIRED] * 10
