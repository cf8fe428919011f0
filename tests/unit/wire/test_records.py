"""Record encoding/decoding (mafka.wire.records), checked against kafka-python's implementation."""

from __future__ import annotations

import struct
import tracemalloc
from collections.abc import Sequence

import cramjam
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka import codec as kp_codec
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.util import encode_varint as kp_encode_varint

from mafka.wire.batch import (
    CRC_OFFSET,
    HEADER_STRUCT,
    RECORDS_COUNT_OFFSET,
    crc_of,
    iter_batches,
    set_log_append_time,
    validate_batch,
)
from mafka.wire.compression import XERIAL_MAGIC, CompressionType, compress
from mafka.wire.errors import CorruptRecordBatch, ProtocolError
from mafka.wire.records import (
    MIN_RECORD_SIZE,
    ControlRecord,
    ControlRecordType,
    Record,
    build_batch,
    build_control_batch,
    decode_batch,
    decode_varint,
    decode_varlong,
    encode_varint,
    encode_varlong,
    iter_decoded_batches,
    iter_records,
    size_of_varint,
    size_of_varlong,
)
from tests.hypothesis_budget import examples

CODECS = list(CompressionType)
MIB = 1024 * 1024
TS = 1_700_000_000_000
VECTOR = bytes.fromhex(
    "00000000000000000000003e 00000000 02 675a95fd 0000 00000000"
    " 0000018bcfe56800 0000018bcfe56800 ffffffffffffffff ffff ffffffff 00000001"
    " 18 00 00 00 02 6b 02 76 02 02 68 02 31".replace(" ", "")
)


def test_kafka_python_has_snappy() -> None:
    """python-snappy (a test extra) gives kafka-python its snappy codec."""
    assert kp_codec.has_snappy()


# -- helpers ------------------------------------------------------------------------------


def rows(records: Sequence[Record]) -> list[tuple]:
    return [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in records]


def kp_build(
    records: Sequence[Record],
    *,
    compression: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=compression,
        is_transactional=transactional,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        batch_size=1 << 24,
    )
    for r in records:
        assert builder.append(r.offset, r.timestamp, r.key, r.value, list(r.headers)) is not None
    return bytes(builder.build())


def kp_rows(raw: bytes) -> list[tuple]:
    batch = DefaultRecordBatch(raw)
    assert batch.validate_crc()
    return [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in batch]


def make_batch(
    body: bytes,
    count: int,
    *,
    attributes: int = 0,
    base_offset: int = 0,
    base_timestamp: int = TS,
    max_timestamp: int = TS,
    producer_id: int = -1,
    producer_epoch: int = -1,
) -> bytes:
    """Assemble a batch around raw record bytes, with a correct CRC (a 'valid' liar)."""
    buf = bytearray(61) + body
    HEADER_STRUCT.pack_into(
        buf,
        0,
        base_offset,
        len(buf) - 12,
        0,
        2,
        0,
        attributes,
        max(count - 1, 0),
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        -1,
        count,
    )
    struct.pack_into(">I", buf, CRC_OFFSET, crc_of(buf, 0, len(buf)))
    return bytes(buf)


def raw_record(fields: bytes) -> bytes:
    return encode_varint(len(fields)) + fields


def fields(
    *,
    ts_delta: int = 0,
    offset_delta: int = 0,
    key: bytes | None = b"k",
    value: bytes | None = b"v",
    headers: bytes = b"\x00",
) -> bytes:
    out = b"\x00" + encode_varlong(ts_delta) + encode_varint(offset_delta)
    for item in (key, value):
        out += b"\x01" if item is None else encode_varint(len(item)) + item
    return out + headers


SAMPLE = [
    Record(0, TS, b"key-0", b"hello " * 40, ()),
    Record(1, TS + 5, None, b"tombstone? no, a null key", (("trace-id", b"abc"),)),
    Record(2, TS - 3, b"key-2", None, (("a", None), ("ключ", b"\x00\xff"), ("a", b""))),
    Record(3, TS + 1000, b"", b"", ()),
    Record(4, TS + 2, b"k" * 300, b"hello " * 100, (("h", b"1"),)),
]


# -- varints -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, "00"),
        (-1, "01"),
        (1, "02"),
        (63, "7e"),
        (-64, "7f"),
        (64, "8001"),
        (2**31 - 1, "feffffff0f"),
        (-(2**31), "ffffffff0f"),
    ],
)
def test_varint_known_encodings(value: int, encoded: str) -> None:
    raw = bytes.fromhex(encoded)
    assert encode_varint(value) == raw
    assert decode_varint(raw) == (value, len(raw))
    assert decode_varint(b"\xaa" + raw + b"\xbb", 1) == (value, len(raw) + 1)
    assert size_of_varint(value) == len(raw)


def test_varlong_extremes() -> None:
    assert encode_varlong(2**63 - 1) == b"\xfe" + b"\xff" * 8 + b"\x01"
    assert encode_varlong(-(2**63)) == b"\xff" * 9 + b"\x01"
    for value in (2**63 - 1, -(2**63), 0, -1, 2**40):
        raw = encode_varlong(value)
        assert decode_varlong(raw) == (value, len(raw))
        assert size_of_varlong(value) == len(raw)


@settings(max_examples=examples(200), deadline=None)
@given(st.integers(-(2**31), 2**31 - 1), st.integers(-(2**63), 2**63 - 1))
def test_varint_round_trip_matches_kafka_python(v32: int, v64: int) -> None:
    theirs = bytearray()
    kp_encode_varint(v32, theirs.append)
    assert encode_varint(v32) == bytes(theirs)
    assert decode_varint(encode_varint(v32)) == (v32, len(theirs))
    assert decode_varlong(encode_varlong(v64)) == (v64, len(encode_varlong(v64)))


def test_varint_out_of_range_encoding() -> None:
    for bad in (2**31, -(2**31) - 1):
        with pytest.raises(ValueError):
            encode_varint(bad)
    for bad in (2**63, -(2**63) - 1):
        with pytest.raises(ValueError):
            encode_varlong(bad)


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"\x80",
        b"\xff\xff",
        b"\x80\x80\x80\x80\x80\x00",  # 6 bytes: over-long even though it ends
        b"\xff\xff\xff\xff\x1f",  # 5 bytes but 36 bits: overflows int32
    ],
)
def test_bad_varints(raw: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode_varint(raw)


def test_bad_varlongs() -> None:
    with pytest.raises(ProtocolError):
        decode_varlong(b"\x80" * 10 + b"\x00")  # 11 bytes
    with pytest.raises(ProtocolError):
        decode_varlong(b"\xff" * 9 + b"\x03")  # 65 bits
    with pytest.raises(ProtocolError):
        decode_varlong(b"\x80" * 9)
    assert decode_varlong(b"\x80" * 9 + b"\x00") == (0, 10)  # 10 bytes is allowed


# -- the test vector -----------------------------------------------------------------------


def test_decode_vector() -> None:
    batch = decode_batch(VECTOR)
    assert batch.records == (Record(0, TS, b"k", b"v", (("h", b"1"),)),)
    assert batch.header.record_count == 1 and not batch.is_control


def test_build_reproduces_vector_byte_for_byte() -> None:
    record = Record(0, TS, b"k", b"v", (("h", b"1"),))
    assert build_batch([record], partition_leader_epoch=0) == VECTOR


# -- kafka-python builds, mafka decodes ------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.config_name)
@pytest.mark.parametrize("idempotent", [False, True])
def test_decodes_kafka_python_batches(codec: CompressionType, idempotent: bool) -> None:
    producer = dict(producer_id=4242, producer_epoch=7, base_sequence=100, transactional=True)
    raw = kp_build(SAMPLE, compression=codec, **(producer if idempotent else {}))
    batch = decode_batch(raw)
    # kafka-python falls back to no compression when it does not pay off;
    # SAMPLE compresses, so this really exercises the codec.
    assert batch.header.compression == codec
    assert rows(batch.records) == rows(SAMPLE) == kp_rows(raw)
    h = batch.header
    if idempotent:
        assert (h.producer_id, h.producer_epoch, h.base_sequence) == (4242, 7, 100)
        assert h.is_transactional
    else:
        assert (h.producer_id, h.producer_epoch, h.base_sequence) == (-1, -1, -1)
    assert (h.base_timestamp, h.max_timestamp) == (TS, TS + 1000)
    assert h.last_offset_delta == 4


def test_decodes_kafka_python_xerial_snappy() -> None:
    raw = kp_build(SAMPLE, compression=CompressionType.SNAPPY)
    assert raw[61:].startswith(XERIAL_MAGIC)  # kafka-python writes Java's framing
    assert rows(decode_batch(raw).records) == rows(SAMPLE)


def test_decodes_hand_framed_xerial_snappy_with_several_blocks() -> None:
    records = [Record(i, TS + i, b"%d" % i, b"x" * (i % 50), ()) for i in range(2000)]
    body = build_batch(records)[61:]
    framed = bytearray(XERIAL_MAGIC + struct.pack(">ii", 1, 1))
    for i in range(0, len(body), 4096):
        block = bytes(cramjam.snappy.compress_raw(body[i : i + 4096]))
        framed += struct.pack(">i", len(block)) + block
    raw = make_batch(bytes(framed), len(records), attributes=2, max_timestamp=TS + 1999)
    assert rows(decode_batch(raw).records) == rows(records)


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    codec=st.sampled_from(CODECS),
    timestamps=st.lists(st.integers(0, 2**41), min_size=1, max_size=8),
    data=st.data(),
)
def test_kafka_python_to_mafka_hypothesis(codec: int, timestamps: list[int], data) -> None:
    payload = st.none() | st.binary(max_size=40)
    records = [
        Record(
            i,
            ts,
            data.draw(payload),
            data.draw(payload),
            tuple(data.draw(st.lists(st.tuples(st.text(max_size=8), payload), max_size=3))),
        )
        for i, ts in enumerate(timestamps)
    ]
    raw = kp_build(records, compression=codec)
    assert rows(decode_batch(raw).records) == rows(records)


# -- mafka builds, kafka-python decodes --------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.config_name)
def test_kafka_python_decodes_our_batches(codec: CompressionType) -> None:
    raw = build_batch(
        SAMPLE,
        compression=codec,
        producer_id=99,
        producer_epoch=1,
        base_sequence=5,
        is_transactional=True,
    )
    validate_batch(raw)
    theirs = DefaultRecordBatch(raw)
    assert theirs.validate_crc()
    assert theirs.compression_type == codec
    assert (theirs.producer_id, theirs.producer_epoch, theirs.base_sequence) == (99, 1, 5)
    assert theirs.is_transactional and not theirs.is_control_batch
    assert (theirs.first_timestamp, theirs.max_timestamp) == (TS, TS + 1000)
    assert theirs.last_offset_delta == 4 and theirs.records_count == 5
    assert kp_rows(raw) == rows(SAMPLE)


def test_offsets_with_gaps_and_base_offset() -> None:
    records = [
        Record(1000, TS, b"a", b"1"),
        Record(1003, TS, b"b", b"2"),
        Record(1010, TS, None, None),
    ]
    raw = build_batch(records, base_offset=1000, compression=CompressionType.GZIP)
    h = decode_batch(raw).header
    assert (h.base_offset, h.last_offset_delta, h.record_count) == (1000, 10, 3)
    assert rows(decode_batch(raw).records) == rows(records) == kp_rows(raw)


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.config_name)
def test_log_append_time(codec: CompressionType) -> None:
    raw = build_batch(SAMPLE, compression=codec, timestamp_type=1)
    batch = decode_batch(raw)
    assert batch.header.timestamp_type == 1
    assert {r.timestamp for r in batch.records} == {TS + 1000}
    # and after the broker stamps its own time
    buf = bytearray(raw)
    set_log_append_time(buf, 0, TS + 77)
    assert {r.timestamp for r in decode_batch(buf).records} == {TS + 77}
    assert [r.timestamp for r in DefaultRecordBatch(bytes(buf))] == [TS + 77] * 5


header_values = st.none() | st.binary(max_size=30)
record_rows = st.lists(
    st.tuples(
        st.integers(1, 5),  # offset gap
        st.integers(-1, 2**45),  # timestamp (-1 = none)
        header_values,
        header_values,
        st.lists(st.tuples(st.text(max_size=10), header_values), max_size=4),
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=examples(150), deadline=None)
@given(
    rows_=record_rows,
    codec=st.sampled_from(CODECS),
    base_offset=st.integers(0, 2**50),
    producer=st.tuples(
        st.integers(-1, 2**40), st.integers(-1, 2**15 - 1), st.integers(-1, 2**31 - 1)
    ),
)
def test_round_trip_hypothesis(rows_, codec: int, base_offset: int, producer) -> None:
    offset = base_offset - 1
    records = []
    for gap, ts, key, value, headers in rows_:
        offset += gap
        records.append(Record(offset, ts, key, value, tuple(headers)))
    records[0] = Record(base_offset, *rows(records[:1])[0][1:])
    producer_id, epoch, sequence = producer
    raw = build_batch(
        records,
        base_offset=base_offset,
        compression=codec,
        producer_id=producer_id,
        producer_epoch=epoch,
        base_sequence=sequence,
    )
    batch = decode_batch(raw)
    assert rows(batch.records) == rows(records)
    h = batch.header
    assert (h.producer_id, h.producer_epoch, h.base_sequence) == producer
    assert h.record_count == len(records)
    assert h.last_offset == records[-1].offset
    assert h.max_timestamp == max(r.timestamp for r in records)
    assert h.base_timestamp == records[0].timestamp
    # kafka-python agrees with every byte we wrote
    assert kp_rows(raw) == rows(records)


def test_build_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        build_batch([])
    with pytest.raises(ValueError):
        build_batch([Record(0, TS), Record(0, TS)])  # offsets must increase
    with pytest.raises(ValueError):
        build_batch([Record(5, TS)], base_offset=6)
    with pytest.raises(ValueError):
        build_batch([Record(2**31, TS)])  # delta beyond int32
    with pytest.raises(ValueError):
        build_batch([Record(0, -2)])
    with pytest.raises(ValueError):
        build_batch([Record(0, TS)], compression=5)
    with pytest.raises(ValueError):
        build_batch([Record(0, TS)], timestamp_type=2)
    with pytest.raises(TypeError):
        build_batch([Record(0, TS, "text key")])  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        build_batch([Record(0, TS, None, 5)])  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        build_batch([Record(0, TS, headers=((b"bytes-key", b"v"),))])  # type: ignore[arg-type]


# -- control batches -----------------------------------------------------------------------------


@pytest.mark.parametrize("kind", [ControlRecordType.ABORT, ControlRecordType.COMMIT])
def test_control_batch(kind: ControlRecordType) -> None:
    raw = build_control_batch(
        kind, producer_id=31, producer_epoch=2, coordinator_epoch=9, base_offset=77, timestamp=TS
    )
    batch = decode_batch(raw)
    h = batch.header
    assert h.attributes == 0x30 and h.is_control and h.is_transactional
    assert (h.producer_id, h.producer_epoch, h.base_sequence, h.base_offset) == (31, 2, -1, 77)
    assert batch.records == (ControlRecord(77, TS, 0, kind, 9),)
    assert batch.records[0].is_commit == (kind == ControlRecordType.COMMIT)
    assert batch.records[0].is_abort == (kind == ControlRecordType.ABORT)
    # key = version 0 + type, value = version 0 + coordinator epoch, as Kafka writes them
    assert raw[61:].endswith(
        struct.pack(">hh", 0, kind) + b"\x0c" + struct.pack(">hi", 0, 9) + b"\x00"
    )
    theirs = DefaultRecordBatch(raw)
    assert theirs.validate_crc() and theirs.is_control_batch
    (marker,) = list(theirs)
    assert (marker.offset, marker.version, marker.type) == (77, 0, int(kind))


def test_typed_record_accessors_follow_the_batch_kind() -> None:
    control = decode_batch(build_control_batch(ControlRecordType.COMMIT, producer_id=1, producer_epoch=0))
    data = decode_batch(build_batch([Record(offset=0, timestamp=TS, key=b"k", value=b"v")]))
    assert control.control_records() == control.records
    assert data.data_records() == data.records
    with pytest.raises(ValueError):
        control.data_records()
    with pytest.raises(ValueError):
        data.control_records()


def test_build_control_batch_rejects_non_markers() -> None:
    with pytest.raises(ValueError):
        build_control_batch(2, producer_id=1, producer_epoch=0)


def control_body(key: bytes | None, value: bytes | None) -> bytes:
    return raw_record(fields(key=key, value=value))


def test_unknown_control_types_keep_their_code() -> None:
    raw = make_batch(control_body(struct.pack(">hh", 0, 2), b"whatever"), 1, attributes=0x20)
    assert decode_batch(raw).records == (
        ControlRecord(0, TS, 0, ControlRecordType.LEADER_CHANGE, -1),
    )
    raw = make_batch(control_body(struct.pack(">hh", 3, 99), None), 1, attributes=0x20)
    (record,) = decode_batch(raw).records
    assert (record.version, record.type, record.coordinator_epoch) == (3, 99, -1)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (None, struct.pack(">hi", 0, 1)),
        (b"\x00\x00\x01", struct.pack(">hi", 0, 1)),
        (struct.pack(">hh", -1, 1), struct.pack(">hi", 0, 1)),
        (struct.pack(">hh", 0, 1), None),
        (struct.pack(">hh", 0, 0), b"\x00\x00\x00"),
        (struct.pack(">hh", 0, 1), struct.pack(">hi", -3, 1)),
    ],
)
def test_malformed_control_records(key: bytes | None, value: bytes | None) -> None:
    with pytest.raises(CorruptRecordBatch):
        decode_batch(make_batch(control_body(key, value), 1, attributes=0x30))


# -- record sets ------------------------------------------------------------------------------------


def test_iter_records_over_a_record_set() -> None:
    first = build_batch(SAMPLE[:2], compression=CompressionType.LZ4)
    marker = build_control_batch(
        ControlRecordType.COMMIT, producer_id=1, producer_epoch=0, base_offset=2, timestamp=TS
    )
    last = build_batch([Record(3, TS, b"x", b"y")], base_offset=3)
    record_set = first + marker + last + last[:30]  # trailing partial batch
    assert [r.offset for r in iter_records(record_set)] == [0, 1, 3]
    with_control = list(iter_records(record_set, include_control=True))
    assert [type(r).__name__ for r in with_control] == [
        "Record",
        "Record",
        "ControlRecord",
        "Record",
    ]
    assert [b.header.record_count for b in iter_decoded_batches(record_set)] == [2, 1, 1]
    with pytest.raises(CorruptRecordBatch, match="partial"):
        list(iter_records(record_set, strict=True))
    corrupt = bytearray(first + marker)
    corrupt[len(first) + 70] ^= 1
    walker = iter_records(bytes(corrupt), include_control=True)
    assert [next(walker).offset, next(walker).offset] == [0, 1]
    with pytest.raises(CorruptRecordBatch, match="CRC"):
        next(walker)


def test_empty_batch_decodes_to_nothing() -> None:
    raw = make_batch(b"", 0)
    assert decode_batch(raw).records == ()


def test_verify_crc_flag() -> None:
    broken = bytearray(VECTOR)
    broken[CRC_OFFSET] ^= 0xFF
    with pytest.raises(CorruptRecordBatch, match="CRC"):
        decode_batch(bytes(broken))
    assert decode_batch(bytes(broken), verify_crc=False).records[0].key == b"k"
    with pytest.raises(CorruptRecordBatch):
        decode_batch(bytes(broken[:-1]), verify_crc=False)


# -- rejections ----------------------------------------------------------------------------------

ONE = raw_record(fields())


@pytest.mark.parametrize(
    ("body", "count", "match"),
    [
        (ONE, -1, "negative record count"),
        (ONE, 2**31 - 1, "cannot fit"),
        (ONE * 3, 4, "cannot fit|truncated"),
        (ONE * 3, 2, "left after"),
        (ONE + b"\x00", 1, "left after"),
        (encode_varint(10_000) + fields(), 1, "record length"),
        (encode_varint(-3) + fields(), 1, "record length"),
        (encode_varint(0) + fields(), 1, "record length"),
        (raw_record(fields() + b"\x00"), 1, "claims"),
        (raw_record(fields(key=b"")[:-1]), 1, "truncated varint"),
        (raw_record(b"\x00\x00\x80\x80\x80\x80\x80\x00" + fields()[3:]), 1, "longer than 5"),
        (raw_record(b"\x00" + b"\x80" * 10 + b"\x00" + fields()[2:]), 1, "longer than 10"),
        (raw_record(fields()[:3] + encode_varint(-2) + b"\x02v\x00"), 1, "negative key length"),
        (raw_record(fields()[:3] + encode_varint(10**6) + b"\x02v\x00"), 1, "key length"),
        (
            raw_record(fields(key=None)[:4] + encode_varint(-7) + b"\x00"),
            1,
            "negative value length",
        ),
        (raw_record(fields(headers=encode_varint(2**31 - 1))), 1, "header count"),
        (raw_record(fields(headers=encode_varint(-1))), 1, "header count"),
        (raw_record(fields(headers=b"\x02\x04\xff\xfe\x01")), 1, "UTF-8"),
        (raw_record(fields(headers=b"\x02\x01\x01")), 1, "header key length"),
        (raw_record(fields(headers=b"\x02\x02h\x05x")), 1, "header value length"),
        (raw_record(fields(headers=b"\x02\x02h\x03x")), 1, "negative header value length"),
    ],
)
def test_malformed_records_raise_corrupt(body: bytes, count: int, match: str) -> None:
    with pytest.raises(CorruptRecordBatch, match=match):
        decode_batch(make_batch(body, count))


def test_huge_count_in_compressed_batch_rejected_before_decompressing() -> None:
    compressed = compress(CompressionType.ZSTD, ONE)
    with pytest.raises(CorruptRecordBatch, match="decompression limit"):
        decode_batch(make_batch(compressed, 2**31 - 1, attributes=4))
    with pytest.raises(CorruptRecordBatch, match="decompressed bytes"):
        decode_batch(make_batch(compressed, 50, attributes=4))
    assert len(decode_batch(make_batch(compressed, 1, attributes=4)).records) == 1


def test_decompression_limit_applies_to_batches() -> None:
    records = [Record(i, TS, None, bytes(10_000)) for i in range(100)]
    raw = build_batch(records, compression=CompressionType.GZIP)
    assert len(raw) < 20_000
    assert len(decode_batch(raw, max_decompressed=2 * MIB).records) == 100
    with pytest.raises(CorruptRecordBatch, match="limit"):
        decode_batch(raw, max_decompressed=500_000)


@pytest.mark.parametrize("payload", [b"", b"garbage", b"\x1f\x8b\x08\x00"])
@pytest.mark.parametrize("attributes", [1, 2, 3, 4, 5, 6, 7])
def test_bad_compressed_payloads(attributes: int, payload: bytes) -> None:
    with pytest.raises(CorruptRecordBatch):
        decode_batch(make_batch(payload, 0 if not payload else 1, attributes=attributes))


def test_min_record_size_is_tight() -> None:
    smallest = raw_record(fields(key=None, value=None))
    assert len(smallest) == MIN_RECORD_SIZE
    assert decode_batch(make_batch(smallest * 9, 9)).records[8] == Record(0, TS, None, None, ())


# -- robustness: mutated batches ----------------------------------------------------------------


def _seeds() -> list[tuple[bytes, int, bytes]]:
    """(batch, codec, uncompressed records body) for a variety of valid batches."""
    many = [
        Record(i, TS + i * 3, b"k%d" % i, b"value-%d" % i, (("n", b"%d" % i),)) for i in range(40)
    ]
    seeds = []
    for codec in CODECS:
        for records in (SAMPLE, many):
            raw = build_batch(
                records, compression=codec, producer_id=3, producer_epoch=1, base_sequence=0
            )
            seeds.append((raw, int(codec), build_batch(records)[61:]))
    marker = build_control_batch(
        1, producer_id=3, producer_epoch=1, coordinator_epoch=4, timestamp=TS
    )
    seeds.append((marker, 0, marker[61:]))
    seeds.append((VECTOR, 0, VECTOR[61:]))
    seeds.append(
        (
            kp_build(
                many,
                compression=1,
                producer_id=3,
                producer_epoch=1,
                base_sequence=0,
                transactional=True,
            ),
            1,
            build_batch(many)[61:],
        )
    )
    return seeds


SEEDS = _seeds()
INT32 = st.integers(-(2**31), 2**31 - 1)
HUGE = st.sampled_from([2**31 - 1, -(2**31), 10**6, 70_000, 255, -1, -2, 0])


@st.composite
def mutated_batches(draw) -> bytes:
    raw, codec, body = draw(st.sampled_from(SEEDS))
    data = bytearray(raw)
    kind = draw(st.sampled_from(["truncate", "extend", "flip", "count", "length", "body"]))
    if kind == "truncate":
        del data[draw(st.integers(0, len(data) - 1)) :]
    elif kind == "extend":
        data += draw(st.binary(min_size=1, max_size=64))
        if draw(st.booleans()):  # make the extra bytes part of the batch
            struct.pack_into(">i", data, 8, len(data) - 12)
    elif kind == "flip":
        for index, xor in draw(
            st.lists(st.tuples(st.integers(0, 10**6), st.integers(1, 255)), min_size=1, max_size=6)
        ):
            data[index % len(data)] ^= xor
    elif kind == "count":
        struct.pack_into(">i", data, RECORDS_COUNT_OFFSET, draw(HUGE | INT32))
    elif kind == "length":
        struct.pack_into(">i", data, 8, draw(HUGE | INT32 | st.integers(49, len(data))))
    else:
        # Lie inside the (uncompressed) records, then recompress and re-CRC:
        # what a malicious producer would send.
        new_body = bytearray(body)
        for _ in range(draw(st.integers(1, 3))):
            at = draw(st.sampled_from([0, 1, 2, 3]) | st.integers(0, max(len(new_body) - 1, 0)))
            varint = encode_varint(draw(HUGE | INT32))
            if draw(st.booleans()):
                new_body[at : at + len(varint)] = varint  # overwrite
            else:
                new_body[at:at] = varint  # insert
        if draw(st.booleans()):
            del new_body[draw(st.integers(0, len(new_body))) :]
        count = struct.unpack_from(">i", raw, RECORDS_COUNT_OFFSET)[0]
        if draw(st.booleans()):
            count = draw(HUGE | INT32)
        attributes = struct.unpack_from(">h", raw, 21)[0]
        data = bytearray(make_batch(compress(codec, bytes(new_body)), count, attributes=attributes))
    if draw(st.booleans()) and len(data) >= 61:
        size = struct.unpack_from(">i", data, 8)[0] + 12
        if 61 <= size <= len(data):
            struct.pack_into(">I", data, CRC_OFFSET, crc_of(data, 0, size))
    return bytes(data)


@settings(max_examples=examples(1500), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=mutated_batches())
def test_mutated_batches_raise_only_protocol_error_within_memory_bound(data: bytes) -> None:
    tracemalloc.start()
    try:
        try:
            batch = decode_batch(data)
        except ProtocolError:
            batch = None
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak <= 4 * len(data) + MIB, f"peak {peak} for {len(data)} input bytes"
    if batch is not None:
        assert len(batch.records) == batch.header.record_count
        # the header walker agrees on where this batch is
        assert next(iter_batches(data)) == (0, batch.header)
