"""decode_records: fetched record sets -> Messages (offset skipping, control batches, read_committed)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mafka.client.message import TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME
from mafka.client.record_decoder import decode_records
from mafka.wire.batch import BATCH_HEADER_SIZE
from mafka.wire.compression import CompressionType
from mafka.wire.errors import CorruptRecordBatch
from mafka.wire.records import ControlRecordType, Record, build_batch, build_control_batch
from tests.hypothesis_budget import examples

TS = 1_700_000_000_000


def recs(start: int, n: int, *, prefix: bytes = b"v", ts: int = TS) -> list[Record]:
    return [Record(start + i, ts + i, b"k%d" % (start + i), prefix + b"%d" % (start + i)) for i in range(n)]


def batch(start: int, n: int, **kw) -> bytes:
    prefix = kw.pop("prefix", b"v")
    return build_batch(recs(start, n, prefix=prefix), base_offset=start, **kw)


def offsets(result) -> list[int]:
    return [m.offset() for m in result.messages]


def vals(result) -> list[bytes | None]:
    return [m.value() for m in result.messages]


def aborted(*pairs: tuple[int, int]) -> list[SimpleNamespace]:
    return [SimpleNamespace(producer_id=pid, first_offset=first) for pid, first in pairs]


def marker(kind: ControlRecordType, pid: int, offset: int) -> bytes:
    return build_control_batch(kind, producer_id=pid, producer_epoch=0, base_offset=offset, timestamp=TS)


def txn(pid: int, start: int, n: int, prefix: bytes = b"v") -> bytes:
    return batch(start, n, producer_id=pid, producer_epoch=0, base_sequence=start,
                 is_transactional=True, prefix=prefix)


# -- basics -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", list(CompressionType), ids=lambda c: c.name)
def test_several_batches_decoded_in_order(codec: CompressionType) -> None:
    data = batch(0, 3, compression=int(codec)) + batch(3, 2, compression=int(codec)) + batch(5, 4)
    result = decode_records("t", 2, data, 0)
    assert offsets(result) == list(range(9))
    assert result.next_offset == 9
    m = result.messages[4]
    assert (m.topic(), m.partition(), m.key(), m.value()) == ("t", 2, b"k4", b"v4")
    assert m.timestamp() == (TIMESTAMP_CREATE_TIME, TS + 1)  # second record of the batch at 3
    assert m.headers() is None
    assert m.error() is None


def test_memoryview_and_bytearray_input() -> None:
    data = batch(0, 2) + batch(2, 2, compression=int(CompressionType.SNAPPY))
    for view in (memoryview(data), bytearray(data)):
        result = decode_records("t", 0, view, 0)
        assert vals(result) == [b"v0", b"v1", b"v2", b"v3"]
        assert all(type(m.value()) is bytes and type(m.key()) is bytes for m in result.messages)


def test_empty_record_set() -> None:
    result = decode_records("t", 0, b"", 42)
    assert result.messages == [] and result.next_offset == 42


def test_offset_gaps_within_a_batch() -> None:
    records = [Record(100, TS, None, b"a"), Record(104, TS + 1, None, b"b"), Record(110, TS + 2, None, b"c")]
    data = build_batch(records, base_offset=100)
    result = decode_records("t", 0, data, 101)
    assert offsets(result) == [104, 110]
    assert result.next_offset == 111


def test_min_offset_skips_whole_batches_and_records_inside() -> None:
    data = batch(0, 5) + batch(5, 5) + batch(10, 5)
    result = decode_records("t", 0, data, 7)
    assert offsets(result) == list(range(7, 15))
    assert result.next_offset == 15


@pytest.mark.parametrize("codec", [c for c in CompressionType if c], ids=lambda c: c.name)
def test_min_offset_inside_compressed_batch(codec: CompressionType) -> None:
    data = batch(10, 5, compression=int(codec)) + batch(15, 2, compression=int(codec))
    result = decode_records("t", 0, data, 12)
    assert offsets(result) == [12, 13, 14, 15, 16]
    assert vals(result)[0] == b"v12"


def test_all_below_min_offset() -> None:
    result = decode_records("t", 0, batch(0, 3) + batch(3, 3), 6)
    assert result.messages == [] and result.next_offset == 6


def test_headers_and_null_key_value() -> None:
    records = [
        Record(0, TS, None, None),
        Record(1, TS, b"", b"", (("a", b"1"), ("n", None), ("é", b""))),
        Record(2, TS, b"k", None, (("only", b"x" * 200),)),
    ]
    for codec in (0, int(CompressionType.ZSTD)):
        result = decode_records("t", 0, build_batch(records, compression=codec), 0)
        m0, m1, m2 = result.messages
        assert (m0.key(), m0.value(), m0.headers()) == (None, None, None)
        assert (m1.key(), m1.value()) == (b"", b"")
        assert m1.headers() == [("a", b"1"), ("n", None), ("é", b"")]
        assert (m2.key(), m2.value(), m2.headers()) == (b"k", None, [("only", b"x" * 200)])


def test_large_varints() -> None:
    """Multi-byte varints for lengths and deltas (the decoder's fast path is single-byte)."""
    records = [
        Record(0, 5, b"k" * 70, b"v" * 20000),
        Record(300, 5 + (1 << 40), None, b"x" * 130),
        Record(70000, 2, None, b""),  # negative timestamp delta
    ]
    result = decode_records("t", 0, build_batch(records), 0)
    assert offsets(result) == [0, 300, 70000]
    assert [m.timestamp()[1] for m in result.messages] == [5, 5 + (1 << 40), 2]
    assert [len(m.value()) for m in result.messages] == [20000, 130, 0]
    assert result.messages[0].key() == b"k" * 70


def test_log_append_time_reports_max_timestamp() -> None:
    records = [Record(0, TS + 5, None, b"a"), Record(1, TS + 50, None, b"b"), Record(2, TS, None, b"c")]
    data = build_batch(records, timestamp_type=1, compression=int(CompressionType.LZ4)) + batch(3, 1)
    result = decode_records("t", 0, data, 0)
    assert [m.timestamp() for m in result.messages] == [
        (TIMESTAMP_LOG_APPEND_TIME, TS + 50)] * 3 + [(TIMESTAMP_CREATE_TIME, TS)]


def test_leader_epoch_from_batch_header() -> None:
    data = batch(0, 1, partition_leader_epoch=17) + batch(1, 1)
    result = decode_records("t", 0, data, 0)
    assert [m.leader_epoch() for m in result.messages] == [17, -1]


# -- control batches and partial batches ---------------------------------------------------------------


def test_control_batches_skipped() -> None:
    data = txn(7, 0, 2) + marker(ControlRecordType.COMMIT, 7, 2) + txn(7, 3, 1) + marker(ControlRecordType.ABORT, 7, 4)
    result = decode_records("t", 0, data, 0)
    assert offsets(result) == [0, 1, 3]  # read_uncommitted: aborted data too
    assert result.next_offset == 5  # past the trailing marker


def test_only_control_batches_advance_next_offset() -> None:
    result = decode_records("t", 0, marker(ControlRecordType.COMMIT, 1, 9), 9)
    assert result.messages == [] and result.next_offset == 10


@pytest.mark.parametrize("cut", [1, 10, BATCH_HEADER_SIZE - 1, BATCH_HEADER_SIZE, BATCH_HEADER_SIZE + 3])
def test_trailing_partial_batch_ignored(cut: int) -> None:
    whole = batch(0, 2) + batch(2, 3, compression=int(CompressionType.GZIP))
    last = batch(5, 4)
    result = decode_records("t", 0, whole + last[:cut], 0)
    assert offsets(result) == [0, 1, 2, 3, 4]
    assert result.next_offset == 5


def test_partial_only_batch() -> None:
    data = batch(20, 3)
    result = decode_records("t", 0, data[:-1], 20)
    assert result.messages == [] and result.next_offset == 20


# -- read_committed ------------------------------------------------------------------------------------


def test_read_committed_skips_aborted_transaction_only() -> None:
    data = (
        txn(1, 0, 2, b"p1-aborted")
        + txn(2, 2, 2, b"p2-committed")
        + marker(ControlRecordType.ABORT, 1, 4)
        + marker(ControlRecordType.COMMIT, 2, 5)
        + txn(1, 6, 2, b"p1-committed")  # a later transaction of the same producer
        + marker(ControlRecordType.COMMIT, 1, 8)
        + batch(9, 1, prefix=b"plain")
    )
    result = decode_records("t", 0, data, 0, aborted=aborted((1, 0)))
    assert vals(result) == [b"p2-committed2", b"p2-committed3", b"p1-committed6",
                            b"p1-committed7", b"plain9"]
    assert result.next_offset == 10
    # without the aborted list (read_uncommitted) everything but the markers is returned
    assert offsets(decode_records("t", 0, data, 0)) == [0, 1, 2, 3, 6, 7, 9]


@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.GZIP], ids=lambda c: c.name)
def test_read_committed_abort_spans_batches_and_other_producers_interleave(codec: CompressionType) -> None:
    def tx(pid: int, start: int, n: int) -> bytes:
        return batch(start, n, producer_id=pid, producer_epoch=0, base_sequence=0,
                     is_transactional=True, compression=int(codec))

    data = (
        tx(5, 0, 2)
        + tx(6, 2, 1)
        + tx(5, 3, 2)  # still inside 5's aborted transaction
        + marker(ControlRecordType.ABORT, 5, 5)
        + tx(6, 6, 1)
        + marker(ControlRecordType.COMMIT, 6, 7)
    )
    result = decode_records("t", 0, data, 0, aborted=aborted((5, 0)))
    assert offsets(result) == [2, 6]
    assert result.next_offset == 8


def test_read_committed_abort_starting_later_in_the_set() -> None:
    data = txn(3, 0, 2) + marker(ControlRecordType.COMMIT, 3, 2) + txn(3, 3, 2) + marker(ControlRecordType.ABORT, 3, 5)
    result = decode_records("t", 0, data, 0, aborted=aborted((3, 3)))
    assert offsets(result) == [0, 1]
    assert result.next_offset == 6


def test_read_committed_two_aborted_transactions_of_one_producer() -> None:
    data = (
        txn(4, 0, 1) + marker(ControlRecordType.ABORT, 4, 1)
        + txn(4, 2, 1) + marker(ControlRecordType.COMMIT, 4, 3)
        + txn(4, 4, 1) + marker(ControlRecordType.ABORT, 4, 5)
        + txn(4, 6, 1)
    )
    result = decode_records("t", 0, data, 0, aborted=aborted((4, 4), (4, 0)))  # any order
    assert offsets(result) == [2, 6]


def test_read_committed_non_transactional_batch_kept() -> None:
    data = txn(1, 0, 1) + batch(1, 1, producer_id=1, producer_epoch=0, base_sequence=1) + marker(ControlRecordType.ABORT, 1, 2)
    result = decode_records("t", 0, data, 0, aborted=aborted((1, 0)))
    assert offsets(result) == [1]


def test_read_committed_with_min_offset_inside_aborted_transaction() -> None:
    data = txn(1, 0, 4) + txn(2, 4, 2) + marker(ControlRecordType.ABORT, 1, 6) + marker(ControlRecordType.COMMIT, 2, 7)
    result = decode_records("t", 0, data, 2, aborted=aborted((1, 0)))
    assert offsets(result) == [4, 5]
    assert result.next_offset == 8


# -- corruption -----------------------------------------------------------------------------------------


def test_bad_crc_raises_when_checked() -> None:
    data = bytearray(batch(0, 2) + batch(2, 2))
    second = len(batch(0, 2))
    data[second + BATCH_HEADER_SIZE + 5] ^= 0xFF  # inside the second batch's first record
    with pytest.raises(CorruptRecordBatch):
        decode_records("t", 0, bytes(data), 0, check_crcs=True)


def test_bad_record_length_raises_without_crc_check() -> None:
    data = bytearray(batch(0, 2))
    data[BATCH_HEADER_SIZE] = 0x7E  # first record claims 63 bytes: overruns the batch
    with pytest.raises(CorruptRecordBatch):
        decode_records("t", 0, bytes(data), 0)


def test_fields_not_filling_record_raise() -> None:
    data = bytearray(batch(0, 1))
    # the key length varint (after length, attributes, ts delta, offset delta): claim 1 byte not 2
    data[BATCH_HEADER_SIZE + 4] = 2
    with pytest.raises(CorruptRecordBatch):
        decode_records("t", 0, bytes(data), 0)


def test_record_count_beyond_data_raises() -> None:
    data = bytearray(batch(0, 2))
    data[57:61] = (5).to_bytes(4, "big")  # record_count 5, only 2 encoded
    with pytest.raises(CorruptRecordBatch):
        decode_records("t", 0, bytes(data), 0)


def test_bad_magic_raises() -> None:
    data = bytearray(batch(0, 1) + batch(1, 1))
    data[len(batch(0, 1)) + 16] = 1  # magic of the second batch
    with pytest.raises(CorruptRecordBatch):
        decode_records("t", 0, bytes(data), 0)


@pytest.mark.parametrize("codec", [c for c in CompressionType if c], ids=lambda c: c.name)
def test_garbled_compressed_payload_raises_corrupt(codec: CompressionType) -> None:
    data = bytearray(batch(0, 3, compression=int(codec)))
    for i in range(BATCH_HEADER_SIZE, len(data)):
        data[i] = 0xA5
    with pytest.raises(CorruptRecordBatch):
        decode_records("t", 0, bytes(data), 0)


# -- property --------------------------------------------------------------------------------------------

_maybe_bytes = st.one_of(st.none(), st.binary(max_size=200))
_headers = st.lists(st.tuples(st.text(max_size=8), _maybe_bytes), max_size=3).map(tuple)


@st.composite
def record_sets(draw):
    """(record set bytes, all records, codec per batch)."""
    n_batches = draw(st.integers(min_value=1, max_value=5))
    offset = draw(st.integers(min_value=0, max_value=1 << 40))
    data = b""
    everything: list[Record] = []
    for _ in range(n_batches):
        count = draw(st.integers(min_value=1, max_value=8))
        base = offset
        records = []
        for _ in range(count):
            records.append(Record(
                offset,
                draw(st.integers(min_value=0, max_value=1 << 42)),
                draw(_maybe_bytes),
                draw(_maybe_bytes),
                draw(_headers),
            ))
            offset += draw(st.integers(min_value=1, max_value=3))  # gaps, as after compaction
        data += build_batch(records, base_offset=base, compression=draw(st.sampled_from(list(CompressionType))))
        everything.extend(records)
        offset += draw(st.integers(min_value=0, max_value=2))
    return data, everything


@settings(max_examples=examples(120), deadline=None)
@given(record_sets(), st.integers(min_value=0, max_value=60), st.booleans())
def test_round_trip_property(rs, skip: int, check_crcs: bool) -> None:
    data, records = rs
    min_offset = records[min(skip, len(records) - 1)].offset if skip < len(records) else records[-1].offset + 1
    result = decode_records("p", 1, data, min_offset, check_crcs=check_crcs)
    expected = [r for r in records if r.offset >= min_offset]
    assert [(m.offset(), m.timestamp(), m.key(), m.value(), m.headers()) for m in result.messages] == [
        (r.offset, (TIMESTAMP_CREATE_TIME, r.timestamp), r.key, r.value, list(r.headers) or None)
        for r in expected
    ]
    assert result.next_offset >= records[-1].offset + 1
    assert all((m.topic(), m.partition()) == ("p", 1) for m in result.messages)
