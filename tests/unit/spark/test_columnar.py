"""The Arrow column decoder against the consumer's record decoder, record for record."""

from __future__ import annotations

import datetime as dt

import pytest

from mafka.client.record_decoder import decode_records
from mafka.spark.columnar import record_set_to_arrow
from mafka.spark.rows import to_arrow
from mafka.wire.compression import CompressionType
from mafka.wire.errors import CorruptRecordBatch
from mafka.wire.records import ControlRecordType, Record, build_batch, build_control_batch

TS = 1_700_000_000_000


def records(start: int, n: int, **kw) -> list[Record]:
    out = []
    for i in range(start, start + n):
        key = None if i % 3 == 0 else b"k%d" % i
        value = None if i % 7 == 6 else (b"v" * (i % 300))  # lengths across the 1/2-byte varint boundary
        headers = [("h", b"%d" % i), ("n", None)] if i % 4 == 0 else []
        out.append(Record(i, TS + i * 1000, key, value, headers))
    return out


def record_set() -> bytes:
    return b"".join([
        build_batch(records(0, 50), base_offset=0),
        build_batch(records(50, 40), base_offset=50, compression=CompressionType.LZ4),
        build_control_batch(ControlRecordType.COMMIT, producer_id=1, producer_epoch=0, base_offset=90),
        build_batch(records(91, 30), base_offset=91, compression=CompressionType.ZSTD, timestamp_type=1),
        build_batch(records(121, 200), base_offset=121, compression=CompressionType.GZIP),
    ])


@pytest.mark.parametrize(("lo", "hi"), [(0, 10**9), (0, 1), (7, 63), (55, 60), (90, 92), (100, 321), (320, 321)])
@pytest.mark.parametrize("include_headers", [False, True])
def test_columns_equal_the_consumers_messages(lo, hi, include_headers):
    data = record_set()
    expected = [m for m in decode_records("t", 3, data, lo).messages if m.offset() < hi]
    got = record_set_to_arrow("t", 3, data, lo, hi, include_headers=include_headers)
    if not expected:
        assert got is None
        return
    assert got.to_pylist() == to_arrow(expected, include_headers).to_pylist()
    assert got.schema == to_arrow(expected, include_headers).schema
    rows = got.to_pylist()
    assert rows[0]["timestamp"].tzinfo is not None and rows[0]["timestamp"].astimezone(dt.UTC).year == 2023


def test_a_record_set_with_nothing_in_range_gives_none():
    assert record_set_to_arrow("t", 0, record_set(), 400, 500) is None
    assert record_set_to_arrow("t", 0, b"", 0, 10) is None


def test_a_corrupt_record_length_is_refused():
    data = bytearray(build_batch(records(0, 3), base_offset=0))
    data[61] = 0x7F  # first record's length varint: -64
    with pytest.raises(CorruptRecordBatch):
        record_set_to_arrow("t", 0, bytes(data), 0, 10)


def test_a_truncated_record_is_refused():
    data = bytearray(build_batch([Record(0, TS, b"k", b"value")], base_offset=0))
    data[61] = 2 * 9  # the record claims 9 bytes where its fields need more
    with pytest.raises(CorruptRecordBatch):
        record_set_to_arrow("t", 0, bytes(data), 0, 10)


def test_read_committed_skips_aborted_transactions_as_the_consumer_does():
    from types import SimpleNamespace

    def tx(pid, start, n):
        return build_batch(records(start, n), base_offset=start, producer_id=pid, producer_epoch=0,
                           base_sequence=0, is_transactional=True)

    def marker(kind, pid, offset):
        return build_control_batch(kind, producer_id=pid, producer_epoch=0, base_offset=offset, timestamp=TS)

    data = (tx(5, 0, 2) + tx(6, 2, 1) + tx(5, 3, 2) + marker(ControlRecordType.ABORT, 5, 5)
            + tx(6, 6, 1) + marker(ControlRecordType.COMMIT, 6, 7))
    aborted = [SimpleNamespace(producer_id=5, first_offset=0)]
    got = record_set_to_arrow("t", 0, data, 0, 100, aborted=aborted)
    assert got.column("offset").to_pylist() == [2, 6]
    expected = decode_records("t", 0, data, 0, aborted=aborted).messages
    assert got.to_pylist() == to_arrow(expected).to_pylist()
