"""Legacy message sets (magic 0/1): round trips, wrappers, interop with kafka-python, corruption, bounds."""

from __future__ import annotations

import gzip
import struct
import tracemalloc
import zlib

import cramjam
import lz4.frame
import pytest
import xxhash
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from mafka.wire.compression import XERIAL_MAGIC, CompressionType
from mafka.wire.errors import CorruptRecordBatch
from mafka.wire.legacy_records import (
    TIMESTAMP_TYPE_MASK,
    LegacyRecord,
    build_message_set,
    encode_message,
    is_legacy_message_set,
    iter_entries,
    iter_legacy_records,
    wrapper_payload,
)
from tests.hypothesis_budget import examples

CODECS = [CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4]
MIB = 1024 * 1024


def records(n, *, base=0, ts=1_600_000_000_000):
    return [LegacyRecord(base + i, ts + i, None if i % 5 == 4 else b"k%d" % i, b"value-%d" % i * (i % 3 + 1)) for i in range(n)]


def seen(got):
    return [(r.offset, r.timestamp, r.key, r.value) for r in got]


def expected(recs, magic):
    return [(r.offset, r.timestamp if magic else -1, r.key, r.value) for r in recs]


def entry(offset, key, value, *, magic, timestamp=-1, attributes=0) -> bytes:
    out = bytearray()
    encode_message(out, offset, key, value, magic=magic, timestamp=timestamp, attributes=attributes)
    return bytes(out)


def wrapper(inner: bytes, *, offset, magic, codec=CompressionType.GZIP, timestamp=-1, attributes=0, compressed=None) -> bytes:
    payload = compressed if compressed is not None else gzip.compress(inner)
    return entry(offset, None, payload, magic=magic, timestamp=timestamp, attributes=attributes | codec)


# -- layout and round trips ----------------------------------------------------------------


def test_magic_0_and_1_layout_matches_kafka_legacy_record():
    m0 = entry(7, b"k", b"vv", magic=0)
    offset, size, crc, magic, attrs, klen = struct.unpack_from(">qiIbbi", m0)
    assert (offset, size, magic, attrs, klen) == (7, 14 + 3, 0, 0, 1)
    assert crc == zlib.crc32(m0[16:])
    m1 = entry(7, None, b"vv", magic=1, timestamp=123)
    offset, size, crc, magic, attrs, ts, klen = struct.unpack_from(">qiIbbqi", m1)
    assert (offset, size, magic, attrs, ts, klen) == (7, 22 + 2, 1, 0, 123, -1)
    assert crc == zlib.crc32(m1[16:])
    assert is_legacy_message_set(m0) and is_legacy_message_set(m1)
    assert not is_legacy_message_set(m1[:16]) and not is_legacy_message_set(b"\x00" * 16 + b"\x02")


@pytest.mark.parametrize("magic", [0, 1])
def test_uncompressed_round_trip(magic):
    recs = records(20, base=100)
    data = build_message_set(recs, magic=magic)
    assert seen(iter_legacy_records(data)) == expected(recs, magic)
    assert len(list(iter_entries(data))) == 20


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", CODECS)
def test_compressed_wrapper_round_trip(magic, codec):
    recs = records(50, base=1000)
    data = build_message_set(recs, magic=magic, compression=codec)
    (outer,) = iter_entries(data)
    assert outer.compression == codec and outer.key is None and outer.offset == 1049
    inner_offsets = [e.offset for e in iter_entries(wrapper_payload(outer))]
    # Magic 1 inner offsets are relative to the wrapper; magic 0 ones absolute.
    assert inner_offsets == (list(range(50)) if magic else [r.offset for r in recs])
    if magic:
        assert outer.timestamp == max(r.timestamp for r in recs)
    assert seen(iter_legacy_records(data)) == expected(recs, magic)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    magic=st.sampled_from([0, 1]),
    codec=st.sampled_from([CompressionType.NONE, *CODECS]),
    items=st.lists(
        st.tuples(st.none() | st.binary(max_size=40), st.none() | st.binary(max_size=200), st.integers(-1, 2**62)),
        min_size=1, max_size=30,
    ),
    base=st.integers(0, 2**40),
)
def test_any_records_round_trip(magic, codec, items, base):
    recs = [LegacyRecord(base + i, ts, k, v) for i, (k, v, ts) in enumerate(items)]
    data = build_message_set(recs, magic=magic, compression=codec)
    assert seen(iter_legacy_records(data)) == expected(recs, magic)


def test_log_append_time_wrapper_gives_its_timestamp_to_inner_messages():
    recs = records(3, ts=5)
    data = build_message_set(recs, magic=1, compression=CompressionType.GZIP, log_append_time=999)
    got = list(iter_legacy_records(data))
    assert [r.timestamp for r in got] == [999] * 3 and all(r.timestamp_type == 1 for r in got)
    # A CreateTime wrapper whose inner messages claim LogAppendTime: the wrapper's type rules (Kafka).
    inner = b"".join(entry(i, None, b"v", magic=1, timestamp=40 + i, attributes=TIMESTAMP_TYPE_MASK) for i in range(2))
    wrapped = wrapper(inner, offset=11, magic=1, timestamp=77)
    assert [(r.offset, r.timestamp) for r in iter_legacy_records(wrapped)] == [(10, 40), (11, 41)]
    lat = wrapper(inner, offset=11, magic=1, timestamp=77, attributes=TIMESTAMP_TYPE_MASK)
    assert [(r.offset, r.timestamp) for r in iter_legacy_records(lat)] == [(10, 77), (11, 77)]


def test_magic_1_wrapper_offset_zero_keeps_relative_offsets_and_a_smaller_one_is_corrupt():
    inner = b"".join(entry(i, None, b"v%d" % i, magic=1, timestamp=1) for i in range(3))
    assert [r.offset for r in iter_legacy_records(wrapper(inner, offset=0, magic=1))] == [0, 1, 2]
    assert [r.offset for r in iter_legacy_records(wrapper(inner, offset=42, magic=1))] == [40, 41, 42]
    with pytest.raises(CorruptRecordBatch, match="below its last inner offset"):
        list(iter_legacy_records(wrapper(inner, offset=1, magic=1)))


# -- interop -----------------------------------------------------------------------------------


def kafka_python_set(magic, codec, n):
    builder = LegacyRecordBatchBuilder(magic, codec, 1 << 20)
    for i in range(n):
        builder.append(i, 1000 + i if magic else None, b"k%d" % i, b"v%d" % i)
    return bytes(builder.build())


def kafka_python_read(data):
    mr = MemoryRecords(data)
    out = []
    while mr.has_next():
        batch = mr.next_batch()
        if batch is None:
            break
        for r in batch:
            out.append((r.offset, r.timestamp if r.timestamp is not None else -1, r.key, r.value))
    return out


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [0, 1, 3])
def test_interop_with_kafka_python_in_both_directions(magic, codec):
    theirs = kafka_python_set(magic, codec, 7)
    assert seen(iter_legacy_records(theirs)) == [(i, 1000 + i if magic else -1, b"k%d" % i, b"v%d" % i) for i in range(7)]
    recs = records(9, base=500)
    ours = build_message_set(recs, magic=magic, compression=codec)
    assert kafka_python_read(ours) == expected(recs, magic)


def test_snappy_xerial_framing_and_raw_snappy_are_read():
    inner = build_message_set(records(3000), magic=1)  # > 32 KiB: several xerial blocks
    data = build_message_set(records(3000), magic=1, compression=CompressionType.SNAPPY)
    payload = next(iter_entries(data)).value
    assert payload.startswith(XERIAL_MAGIC) and struct.unpack_from(">ii", payload, 8) == (1, 1)
    assert len(list(iter_legacy_records(data))) == 3000
    raw = wrapper(inner, offset=2999, magic=1, codec=CompressionType.SNAPPY, compressed=bytes(cramjam.snappy.compress_raw(inner)))
    assert seen(iter_legacy_records(raw)) == seen(iter_legacy_records(data))


def _lz4_with_checksum(inner: bytes, *, broken: bool) -> bytes:
    frame = bytearray(lz4.frame.compress(inner, block_linked=False, store_size=False))
    start = 0 if broken else 4
    frame[6] = (xxhash.xxh32_intdigest(bytes(frame[start:6])) >> 8) & 0xFF
    return bytes(frame)


def test_lz4_magic_0_accepts_the_kafka_3160_checksum_and_the_right_one_magic_1_only_the_right_one():
    inner0 = b"".join(entry(i, None, b"x" * 100, magic=0) for i in range(5))
    inner1 = b"".join(entry(i, None, b"x" * 100, magic=1, timestamp=3) for i in range(5))
    for broken in (True, False):
        data = wrapper(inner0, offset=4, magic=0, codec=CompressionType.LZ4, compressed=_lz4_with_checksum(inner0, broken=broken))
        assert len(list(iter_legacy_records(data))) == 5
    good = wrapper(inner1, offset=4, magic=1, codec=CompressionType.LZ4, compressed=_lz4_with_checksum(inner1, broken=False))
    assert len(list(iter_legacy_records(good))) == 5
    bad = wrapper(inner1, offset=4, magic=1, codec=CompressionType.LZ4, compressed=_lz4_with_checksum(inner1, broken=True))
    with pytest.raises(CorruptRecordBatch):
        list(iter_legacy_records(bad))
    # What Mafka writes for magic 0 carries the broken checksum, as 0.8/0.9 clients expect.
    written = next(iter_entries(build_message_set(records(2), magic=0, compression=CompressionType.LZ4))).value
    assert written[6] == (xxhash.xxh32_intdigest(written[:6]) >> 8) & 0xFF


# -- corruption -------------------------------------------------------------------------------


@pytest.mark.parametrize("magic", [0, 1])
def test_crc_mismatch_is_corrupt_unless_unchecked(magic):
    data = bytearray(build_message_set(records(3), magic=magic))
    data[-1] ^= 0x01
    with pytest.raises(CorruptRecordBatch, match="CRC"):
        list(iter_legacy_records(bytes(data)))
    assert len(list(iter_legacy_records(bytes(data), verify_crc=False))) == 3


def test_crc_of_inner_messages_is_checked():
    inner = bytearray(b"".join(entry(i, None, b"v", magic=1, timestamp=1) for i in range(2)))
    inner[-1] ^= 0xFF
    with pytest.raises(CorruptRecordBatch, match="CRC"):
        list(iter_legacy_records(wrapper(bytes(inner), offset=1, magic=1)))


def test_truncated_sets_drop_the_partial_tail_or_raise_when_strict():
    data = build_message_set(records(5), magic=1)
    sizes = [len(entry(r.offset, r.key, r.value, magic=1, timestamp=r.timestamp)) for r in records(5)]
    for cut in range(len(data) + 1):
        whole = sum(1 for i in range(5) if sum(sizes[: i + 1]) <= cut)
        assert len(list(iter_legacy_records(data[:cut]))) == whole
        if cut == sum(sizes[:whole]):
            assert len(list(iter_legacy_records(data[:cut], strict=True))) == whole
        else:
            with pytest.raises(CorruptRecordBatch, match="partial"):
                list(iter_legacy_records(data[:cut], strict=True))


def test_truncated_compressed_wrapper_is_corrupt():
    data = build_message_set(records(50), magic=1, compression=CompressionType.GZIP)
    value = next(iter_entries(data)).value
    with pytest.raises(CorruptRecordBatch):
        list(iter_legacy_records(wrapper(b"", offset=49, magic=1, compressed=value[: len(value) // 2])))


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (struct.pack(">qi", 0, 13) + b"\x00" * 13, "below the minimum"),
        (entry(0, b"k", b"v", magic=1)[:16] + b"\x02" + entry(0, b"k", b"v", magic=1)[17:], "magic 2"),
        (b"".join([struct.pack(">qiIbbi", 0, 14 + 4, 0, 0, 0, 99), b"\xff\xff\xff\xff", b"abcd"]), "key length"),
        (wrapper(b"", offset=0, magic=1), "holds no messages"),
        (entry(0, None, None, magic=1, attributes=CompressionType.GZIP), "null value"),
        (entry(0, None, b"zz", magic=0, attributes=CompressionType.ZSTD), "invalid codec"),
        (entry(0, None, b"zz", magic=0, attributes=6), "invalid codec"),
        (wrapper(entry(0, None, b"v", magic=0), offset=0, magic=1), "does not match"),
        (wrapper(wrapper(entry(0, None, b"v", magic=1), offset=0, magic=1), offset=0, magic=1), "nested"),
    ],
)
def test_malformed_sets_are_corrupt(data, match):
    with pytest.raises(CorruptRecordBatch, match=match):
        list(iter_legacy_records(data, verify_crc="CRC" in match))


def test_extra_bytes_inside_a_message_are_corrupt():
    good = entry(0, b"k", b"v", magic=0)
    longer = bytearray(good + b"\x00")
    struct.pack_into(">i", longer, 8, struct.unpack_from(">i", good, 8)[0] + 1)
    struct.pack_into(">I", longer, 12, zlib.crc32(longer[16:]))
    with pytest.raises(CorruptRecordBatch, match="leaves 1 bytes"):
        list(iter_legacy_records(bytes(longer)))


@settings(max_examples=examples(300), deadline=None)
@given(st.binary(max_size=300))
def test_garbage_raises_only_corrupt_record_batch(data):
    try:
        list(iter_legacy_records(data, max_decompressed=MIB))
    except CorruptRecordBatch:
        pass


@settings(max_examples=examples(150), deadline=None)
@given(data=st.data())
def test_bit_flips_in_valid_sets_raise_only_corrupt_record_batch(data):
    magic = data.draw(st.sampled_from([0, 1]))
    codec = data.draw(st.sampled_from([CompressionType.NONE, *CODECS]))
    buf = bytearray(build_message_set(records(6), magic=magic, compression=codec))
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(buf) - 1))
        buf[i] = data.draw(st.integers(0, 255))
    for verify in (True, False):
        try:
            list(iter_legacy_records(bytes(buf), verify_crc=verify, max_decompressed=MIB))
        except CorruptRecordBatch:
            pass


# -- bounds -------------------------------------------------------------------------------------


def test_decompression_is_bounded_per_set_not_per_wrapper():
    inner = b"".join(entry(i, None, b"\x00" * 10_000, magic=1, timestamp=1) for i in range(60))  # ~600 KB
    one = wrapper(inner, offset=59, magic=1)
    assert len(list(iter_legacy_records(one, max_decompressed=MIB))) == 60
    # Two such wrappers in one set pass 1 MiB together.
    with pytest.raises(CorruptRecordBatch, match="limit"):
        list(iter_legacy_records(one + one, max_decompressed=MIB))


def test_a_decompression_bomb_fails_without_taking_its_size_in_memory():
    inner = entry(0, None, b"\x00" * (50 * MIB), magic=1, timestamp=1)
    bomb = wrapper(inner, offset=0, magic=1)
    assert len(bomb) < 200_000
    tracemalloc.start()
    try:
        with pytest.raises(CorruptRecordBatch, match="limit"):
            list(iter_legacy_records(bomb, max_decompressed=2 * MIB))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * MIB


def test_build_refuses_zstd_and_bad_magic():
    with pytest.raises(ValueError):
        build_message_set(records(1), magic=1, compression=CompressionType.ZSTD)
    with pytest.raises(ValueError):
        build_message_set(records(1), magic=2)
