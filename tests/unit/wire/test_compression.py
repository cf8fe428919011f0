"""Codecs of mafka.wire.compression: round trips, interop, bounds, garbage."""

from __future__ import annotations

import gzip
import struct
import tracemalloc

import cramjam
import lz4.frame
import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka import codec as kp_codec

from mafka.wire.compression import (
    DEFAULT_MAX_DECOMPRESSED,
    XERIAL_MAGIC,
    CompressionType,
    compress,
    decompress,
)
from mafka.wire.errors import ProtocolError
from tests.hypothesis_budget import examples

CODECS = list(CompressionType)
COMPRESSED = [c for c in CompressionType if c != CompressionType.NONE]
MIB = 1024 * 1024

SAMPLE = b"".join(b"record %d says hello to kafka; " % i for i in range(2000))


def xerial(data: bytes, block_size: int = 32 * 1024) -> bytes:
    """Frame ``data`` as Java's xerial SnappyOutputStream does."""
    out = bytearray(XERIAL_MAGIC + struct.pack(">ii", 1, 1))
    for i in range(0, len(data), block_size):
        block = bytes(cramjam.snappy.compress_raw(data[i : i + block_size]))
        out += struct.pack(">i", len(block)) + block
    return bytes(out)


# -- names -----------------------------------------------------------------------------


def test_compression_type_ids_and_config_names_match_kafka() -> None:
    expected = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
    assert {int(c): c.config_name for c in CompressionType} == expected
    for codec_id, name in expected.items():
        assert CompressionType.for_name(name) is CompressionType(codec_id)
        assert CompressionType.for_name(name.upper()) is CompressionType(codec_id)
        assert CompressionType.for_id(codec_id) is CompressionType(codec_id)
    with pytest.raises(ValueError):
        CompressionType.for_name("brotli")
    with pytest.raises(ProtocolError):
        CompressionType.for_id(5)


# -- round trips -------------------------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.config_name)
@pytest.mark.parametrize("payload", [b"", b"x", SAMPLE, bytes(range(256)) * 700])
def test_round_trip(codec: CompressionType, payload: bytes) -> None:
    packed = compress(codec, payload)
    if codec != CompressionType.NONE and len(payload) > 1000:
        assert len(packed) < len(payload)  # it really compressed
    assert decompress(codec, packed) == payload
    assert decompress(codec, memoryview(bytearray(packed))) == payload


@settings(max_examples=examples(150), deadline=None)
@given(codec=st.sampled_from(CODECS), payload=st.binary(max_size=5000))
def test_round_trip_hypothesis(codec: CompressionType, payload: bytes) -> None:
    assert decompress(codec, compress(codec, payload), max_size=len(payload)) == payload


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.config_name)
def test_limit_is_inclusive(codec: CompressionType) -> None:
    packed = compress(codec, SAMPLE)
    assert decompress(codec, packed, max_size=len(SAMPLE)) == SAMPLE
    with pytest.raises(ProtocolError, match="limit"):
        decompress(codec, packed, max_size=len(SAMPLE) - 1)


def test_unknown_codec() -> None:
    for codec in (5, 6, 7, -1):
        with pytest.raises(ProtocolError, match="codec"):
            decompress(codec, b"abc")
        with pytest.raises(ValueError):
            compress(codec, b"abc")


def test_lz4_writes_kafka_frame_parameters() -> None:
    info = lz4.frame.get_frame_info(compress(CompressionType.LZ4, SAMPLE))
    assert info["block_linked"] is False
    assert info["block_size"] == 64 * 1024
    assert info["content_size"] == 0  # not stored, like KafkaLZ4BlockOutputStream


# -- interop with kafka-python's codecs and other framings ----------------------------------


def test_reads_kafka_python_codecs() -> None:
    assert decompress(CompressionType.GZIP, kp_codec.gzip_encode(SAMPLE)) == SAMPLE
    assert decompress(CompressionType.LZ4, kp_codec.lz4_encode(SAMPLE)) == SAMPLE
    assert decompress(CompressionType.ZSTD, kp_codec.zstd_encode(SAMPLE)) == SAMPLE


def test_kafka_python_reads_ours() -> None:
    assert kp_codec.gzip_decode(compress(CompressionType.GZIP, SAMPLE)) == SAMPLE
    assert kp_codec.lz4_decode(compress(CompressionType.LZ4, SAMPLE)) == SAMPLE
    assert kp_codec.zstd_decode(compress(CompressionType.ZSTD, SAMPLE)) == SAMPLE


def test_snappy_raw_on_write() -> None:
    packed = compress(CompressionType.SNAPPY, SAMPLE)
    assert not packed.startswith(XERIAL_MAGIC)
    assert bytes(cramjam.snappy.decompress_raw(packed)) == SAMPLE


@pytest.mark.parametrize("block_size", [1, 100, 32 * 1024])
def test_snappy_reads_xerial_framing(block_size: int) -> None:
    payload = SAMPLE[:5000] if block_size == 1 else SAMPLE
    framed = xerial(payload, block_size)
    assert framed.startswith(XERIAL_MAGIC)
    assert decompress(CompressionType.SNAPPY, framed) == payload


def test_snappy_xerial_versions_are_ignored() -> None:
    # Some writers put little-endian versions in the header (kafka-python #2414).
    framed = bytearray(xerial(SAMPLE))
    framed[8:16] = struct.pack("<ii", 1, 1)
    assert decompress(CompressionType.SNAPPY, bytes(framed)) == SAMPLE


@pytest.mark.parametrize(
    "framed",
    [
        XERIAL_MAGIC + struct.pack(">ii", 1, 1) + b"\x00\x00",  # partial length
        XERIAL_MAGIC + struct.pack(">iii", 1, 1, -5) + b"abc",  # negative length
        XERIAL_MAGIC + struct.pack(">iii", 1, 1, 1000) + b"abc",  # length beyond end
        XERIAL_MAGIC + struct.pack(">iii", 1, 1, 3) + b"\xff\xff\xff",  # bad block
    ],
)
def test_snappy_xerial_malformed(framed: bytes) -> None:
    with pytest.raises(ProtocolError):
        decompress(CompressionType.SNAPPY, framed)


def test_gzip_concatenated_members_and_zero_padding() -> None:
    two = gzip.compress(b"abc") + gzip.compress(b"def")
    assert decompress(CompressionType.GZIP, two) == b"abcdef"
    assert decompress(CompressionType.GZIP, gzip.compress(b"abc") + b"\x00" * 8) == b"abc"


def test_zstd_frames_with_and_without_content_size() -> None:
    no_size = zstandard.ZstdCompressor(write_content_size=False).compress(SAMPLE)
    assert zstandard.frame_content_size(no_size) == -1
    assert decompress(CompressionType.ZSTD, no_size) == SAMPLE
    streamed = zstandard.ZstdCompressor().compressobj()
    frame = streamed.compress(SAMPLE) + streamed.flush()
    assert decompress(CompressionType.ZSTD, frame) == SAMPLE
    two = compress(CompressionType.ZSTD, b"abc") + no_size
    assert decompress(CompressionType.ZSTD, two) == b"abc" + SAMPLE
    skippable = struct.pack("<II", 0x184D2A50, 3) + b"xyz"
    assert decompress(CompressionType.ZSTD, skippable + two) == b"abc" + SAMPLE
    with_checksum = zstandard.ZstdCompressor(write_checksum=True).compress(SAMPLE)
    assert decompress(CompressionType.ZSTD, with_checksum) == SAMPLE


def test_lz4_frames_with_content_size_and_concatenated() -> None:
    sized = lz4.frame.compress(SAMPLE, store_size=True, content_checksum=True)
    assert decompress(CompressionType.LZ4, sized) == SAMPLE
    assert decompress(CompressionType.LZ4, sized + sized) == SAMPLE + SAMPLE


# -- malformed input -------------------------------------------------------------------------


@pytest.mark.parametrize("codec", COMPRESSED, ids=lambda c: c.config_name)
def test_every_truncation_is_rejected(codec: CompressionType) -> None:
    packed = compress(codec, SAMPLE[:3000])
    for cut in range(len(packed)):
        with pytest.raises(ProtocolError):
            decompress(codec, packed[:cut])


@pytest.mark.parametrize("codec", COMPRESSED, ids=lambda c: c.config_name)
@pytest.mark.parametrize("tail", [b"x", b"garbage!", b"\x00\x01\x02\x03" * 10])
def test_trailing_garbage_is_rejected(codec: CompressionType, tail: bytes) -> None:
    with pytest.raises(ProtocolError):
        decompress(codec, compress(codec, SAMPLE) + tail)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(codec=st.integers(min_value=-2, max_value=8), data=st.binary(max_size=300))
def test_garbage_raises_only_protocol_error(codec: int, data: bytes) -> None:
    try:
        out = decompress(codec, data, max_size=1 * MIB)
    except ProtocolError:
        return
    assert isinstance(out, bytes) and len(out) <= MIB


@settings(max_examples=examples(200), deadline=None)
@given(
    codec=st.sampled_from(COMPRESSED),
    flips=st.lists(st.tuples(st.integers(0, 10_000), st.integers(1, 255)), min_size=1, max_size=4),
)
def test_flipped_bytes_raise_only_protocol_error(
    codec: CompressionType, flips: list[tuple[int, int]]
) -> None:
    packed = bytearray(compress(codec, SAMPLE[:2000]))
    for index, xor in flips:
        packed[index % len(packed)] ^= xor
    try:
        out = decompress(codec, bytes(packed), max_size=MIB)
    except ProtocolError:
        return
    assert len(out) <= MIB


# -- bounded decompression ------------------------------------------------------------------

BOMB_SIZE = 100 * MIB


@pytest.fixture(scope="module")
def bombs() -> dict[str, tuple[CompressionType, bytes]]:
    """Highly compressible 100 MiB payloads in every codec and framing variant."""
    zeros = bytes(BOMB_SIZE)
    zstd_streamed = zstandard.ZstdCompressor().compressobj()
    result = {
        "gzip": (CompressionType.GZIP, compress(CompressionType.GZIP, zeros)),
        "snappy-raw": (CompressionType.SNAPPY, compress(CompressionType.SNAPPY, zeros)),
        "snappy-xerial": (CompressionType.SNAPPY, xerial(zeros)),
        "lz4": (CompressionType.LZ4, compress(CompressionType.LZ4, zeros)),
        "lz4-sized": (CompressionType.LZ4, lz4.frame.compress(zeros, store_size=True)),
        "zstd": (CompressionType.ZSTD, compress(CompressionType.ZSTD, zeros)),
        "zstd-unsized": (
            CompressionType.ZSTD,
            zstd_streamed.compress(zeros) + zstd_streamed.flush(),
        ),
    }
    del zeros
    return result


@pytest.mark.parametrize(
    "variant",
    ["gzip", "snappy-raw", "snappy-xerial", "lz4", "lz4-sized", "zstd", "zstd-unsized"],
)
def test_bomb_is_rejected_without_allocating_it(
    bombs: dict[str, tuple[CompressionType, bytes]], variant: str
) -> None:
    codec, packed = bombs[variant]
    assert len(packed) < BOMB_SIZE // 10
    tracemalloc.start()
    try:
        with pytest.raises(ProtocolError, match="limit"):
            decompress(codec, packed, max_size=MIB)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * MIB, f"{variant}: peak {peak} bytes"


def test_default_limit_is_64_mib() -> None:
    assert DEFAULT_MAX_DECOMPRESSED == 64 * MIB
    packed = compress(CompressionType.ZSTD, bytes(DEFAULT_MAX_DECOMPRESSED + 1))
    with pytest.raises(ProtocolError, match="limit"):
        decompress(CompressionType.ZSTD, packed)


def test_negative_limit_is_a_caller_bug() -> None:
    with pytest.raises(ValueError):
        decompress(CompressionType.GZIP, compress(CompressionType.GZIP, b"abc"), max_size=-1)


def test_none_codec_respects_limit() -> None:
    assert decompress(CompressionType.NONE, b"abc", max_size=3) == b"abc"
    with pytest.raises(ProtocolError):
        decompress(CompressionType.NONE, b"abcd", max_size=3)
