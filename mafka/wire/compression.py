"""Record-batch compression codecs, by Kafka's attribute ids.

=====  ======  ==========================================================
id     name    format
=====  ======  ==========================================================
0      none    the records themselves
1      gzip    a gzip stream (concatenated members accepted)
2      snappy  raw snappy on write; raw or Java "xerial" framing on read
3      lz4     LZ4 frame(s), independent 64 KiB blocks on write
4      zstd    zstd frame(s)
=====  ======  ==========================================================

:func:`decompress` is a decoder of untrusted bytes: every failure is a
:class:`~mafka.wire.errors.ProtocolError`, and it never produces (or lets a
library allocate) more than ``max_size`` bytes of output, so a small
"zip bomb" cannot exhaust memory.  Declared sizes (snappy's length
preamble, zstd and lz4 frame content sizes) are checked before anything is
allocated; streams without declared sizes are decompressed in bounded
steps.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from enum import IntEnum

import cramjam
import lz4.frame
import zstandard

from mafka.wire.errors import ProtocolError

__all__ = [
    "CompressionType",
    "DEFAULT_MAX_DECOMPRESSED",
    "XERIAL_MAGIC",
    "compress",
    "decompress",
]

#: Default bound on a decompressed payload: 64 MiB.
DEFAULT_MAX_DECOMPRESSED = 64 * 1024 * 1024

#: Start of a Java xerial-snappy stream: 0x82 'SNAPPY' 0x00.
XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER_SIZE = 16  # magic + int32 version + int32 compatible version

#: Output produced per library call for codecs that decompress in steps.
#: lz4's decompress_chunk allocates its whole ``max_length`` up front, so
#: this also caps each transient allocation.
_STEP = 256 * 1024

_GZIP_MAGIC = b"\x1f\x8b"
_ZSTD_MAGIC = 0xFD2FB528
_ZSTD_SKIPPABLE_MASK = 0xFFFFFFF0
_ZSTD_SKIPPABLE_MAGIC = 0x184D2A50
_ZSTD_MIN_WINDOW = 1 << 23  # what high zstd levels use; a lower cap could reject real data
_ZSTD_MAX_WINDOW = 1 << 27  # zstd's own default decoder limit

_I32 = struct.Struct(">i")
_U32_LE = struct.Struct("<I")
_U64_LE = struct.Struct("<Q")


class CompressionType(IntEnum):
    """Kafka's compression codecs; the value is the batch attribute id."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @property
    def config_name(self) -> str:
        """The name used by ``compression.type`` ("none", "gzip", ...)."""
        return self.name.lower()

    @classmethod
    def for_name(cls, name: str) -> CompressionType:
        """Look a codec up by its config name (case-insensitive).

        Raises:
            ValueError: unknown name (a configuration error, not wire input).
        """
        try:
            return cls[name.upper()]
        except KeyError:
            raise ValueError(f"unknown compression type {name!r}") from None

    @classmethod
    def for_id(cls, codec: int) -> CompressionType:
        """Look a codec up by its attribute id.

        Raises:
            ProtocolError: not one of 0..4 (ids come from batch attributes).
        """
        try:
            return cls(codec)
        except ValueError:
            raise ProtocolError(f"unknown compression codec id {codec}") from None


# -- compress -------------------------------------------------------------------


def compress(codec: int, data: bytes | bytearray | memoryview) -> bytes:
    """Compress ``data`` with the codec whose attribute id is ``codec``.

    gzip uses level 6 and mtime 0 (deterministic); snappy writes raw snappy;
    lz4 writes one frame of independent 64 KiB blocks without a content size,
    as Kafka's own ``KafkaLZ4BlockOutputStream`` does; zstd uses level 3.

    Raises:
        ValueError: ``codec`` is not 0..4.
    """
    if codec == CompressionType.NONE:
        return bytes(data)
    if codec == CompressionType.GZIP:
        c = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        return c.compress(data) + c.flush()
    if codec == CompressionType.SNAPPY:
        return bytes(cramjam.snappy.compress_raw(data))
    if codec == CompressionType.LZ4:
        frame: bytes = lz4.frame.compress(  # lz4 ships no type information
            data,
            block_size=lz4.frame.BLOCKSIZE_MAX64KB,
            block_linked=False,
            store_size=False,
        )
        return frame
    if codec == CompressionType.ZSTD:
        return zstandard.ZstdCompressor(level=3).compress(data)
    raise ValueError(f"unknown compression codec id {codec}")


# -- decompress -----------------------------------------------------------------


class _Sink:
    """Collects output parts and enforces the size bound."""

    __slots__ = ("parts", "total", "limit", "codec")

    def __init__(self, limit: int, codec: str) -> None:
        self.parts: list[bytes] = []
        self.total = 0
        self.limit = limit
        self.codec = codec

    @property
    def room(self) -> int:
        return self.limit - self.total

    def reserve(self, size: int) -> None:
        """Fail before allocating if ``size`` more bytes would pass the limit."""
        if size > self.limit - self.total:
            self.too_large(self.total + size)

    def add(self, part: bytes) -> None:
        self.total += len(part)
        if self.total > self.limit:
            self.too_large(self.total)
        if part:
            self.parts.append(part)

    def too_large(self, size: int) -> None:
        raise ProtocolError(
            f"{self.codec} payload decompresses to {size}+ bytes, above the limit {self.limit}"
        )

    def result(self) -> bytes:
        if len(self.parts) == 1:
            return self.parts[0]
        return b"".join(self.parts)


def decompress(
    codec: int,
    data: bytes | bytearray | memoryview,
    max_size: int = DEFAULT_MAX_DECOMPRESSED,
) -> bytes:
    """Decompress ``data`` written with codec ``codec``, producing at most ``max_size`` bytes.

    Args:
        codec: attribute id 0..4.
        data: the compressed payload (e.g. a memoryview of a batch's records).
        max_size: largest acceptable output; exceeding it is an error, detected
            before the excess is produced.

    Returns:
        The decompressed bytes.

    Raises:
        ProtocolError: unknown codec, corrupt, truncated or trailing garbage
            input, or output above ``max_size``.  Nothing else escapes.
        ValueError: ``max_size`` is negative (a caller bug).
    """
    if max_size < 0:
        raise ValueError(f"max_size must be >= 0, not {max_size}")
    try:
        if codec == CompressionType.NONE:
            if len(data) > max_size:
                raise ProtocolError(f"payload of {len(data)} bytes is above the limit {max_size}")
            return bytes(data)
        decoder = _DECODERS.get(codec)
        if decoder is None:
            raise ProtocolError(f"unknown compression codec id {codec}")
        return decoder(
            memoryview(data).cast("B"), _Sink(max_size, CompressionType(codec).config_name)
        )
    except ProtocolError:
        raise
    except Exception as exc:
        # The libraries signal bad input with zlib.error, ZstdError,
        # RuntimeError (lz4), cramjam.DecompressionError, ValueError,
        # MemoryError...: all of them mean "corrupt payload" here.
        name = CompressionType(codec).config_name if 0 <= codec <= 4 else str(codec)
        raise ProtocolError(f"corrupt {name} payload: {exc}") from exc


def _gunzip(data: memoryview, sink: _Sink) -> bytes:
    rest: bytes | memoryview = data
    if not len(rest):
        raise ProtocolError("empty gzip payload")
    while True:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        # max_length = room + 1: producing one byte too many proves the bound
        # is exceeded without producing more.  (0 would mean "unlimited".)
        sink.add(d.decompress(rest, sink.room + 1))
        if not d.eof:
            raise ProtocolError("truncated gzip payload")
        rest = d.unused_data
        # Like Java's GZIPInputStream, read further members; tolerate the
        # zero padding some writers append, but nothing else.
        if not rest or not rest.strip(b"\x00"):
            return sink.result()
        if rest[:2] != _GZIP_MAGIC:
            raise ProtocolError(f"{len(rest)} bytes of trailing garbage after gzip payload")


def _snappy_raw(chunk: bytes | memoryview, sink: _Sink) -> None:
    # The raw format starts with the uncompressed length; check it before the
    # library allocates a buffer of that size.
    sink.reserve(cramjam.snappy.decompress_raw_len(chunk))
    sink.add(bytes(cramjam.snappy.decompress_raw(chunk)))


def _unsnappy(data: memoryview, sink: _Sink) -> bytes:
    if len(data) >= _XERIAL_HEADER_SIZE and data[: len(XERIAL_MAGIC)] == XERIAL_MAGIC:
        # Java xerial framing: 16-byte header (the two int32 versions are
        # ignored, as kafka-python does: some writers get their byte order
        # wrong), then int32-length-prefixed raw snappy blocks.
        pos = _XERIAL_HEADER_SIZE
        end = len(data)
        while pos < end:
            if end - pos < 4:
                raise ProtocolError(f"truncated xerial snappy block length at {pos}")
            (length,) = _I32.unpack_from(data, pos)
            pos += 4
            if length < 0 or length > end - pos:
                raise ProtocolError(
                    f"xerial snappy block of {length} bytes at {pos - 4} exceeds the "
                    f"{end - pos} remaining"
                )
            _snappy_raw(data[pos : pos + length], sink)
            pos += length
        return sink.result()
    _snappy_raw(data, sink)
    return sink.result()


def _unlz4(data: memoryview, sink: _Sink) -> bytes:
    end = len(data)
    if not end:
        raise ProtocolError("empty lz4 payload")
    pos = 0
    while pos < end:
        ctx = lz4.frame.create_decompression_context()
        while True:
            step = min(sink.room + 1, _STEP)
            out, consumed, eof = lz4.frame.decompress_chunk(ctx, data[pos:], max_length=step)
            pos += consumed
            sink.add(out)
            if eof:
                break
            # Output short of the step means the decoder wants more input.
            if len(out) < step and (pos >= end or consumed == 0):
                raise ProtocolError("truncated lz4 payload")
    return sink.result()


def _zstd_frames(data: memoryview) -> int:
    """Walk zstd frame and block headers; return the summed declared content sizes.

    python-zstandard's stream reader silently stops at a truncated frame, so
    the structure is checked here first: whole frames back to back, nothing
    after them.  Returns -1 if some frame does not declare its size.
    """
    end = len(data)
    if not end:
        raise ProtocolError("empty zstd payload")
    pos = 0
    declared = 0
    while pos < end:
        if end - pos < 8:
            raise ProtocolError(f"truncated zstd frame header at {pos}")
        (magic,) = _U32_LE.unpack_from(data, pos)
        if magic & _ZSTD_SKIPPABLE_MASK == _ZSTD_SKIPPABLE_MAGIC:
            (skip,) = _U32_LE.unpack_from(data, pos + 4)
            pos += 8 + skip
            if pos > end:
                raise ProtocolError("truncated zstd skippable frame")
            continue
        if magic != _ZSTD_MAGIC:
            raise ProtocolError(f"bad zstd frame magic 0x{magic:08x} at {pos}")
        descriptor = data[pos + 4]
        fcs_flag = descriptor >> 6
        single_segment = descriptor & 0x20
        checksum = descriptor & 0x04
        dict_id_size = (0, 1, 2, 4)[descriptor & 0x03]
        fcs_size = (1 if single_segment else 0, 2, 4, 8)[fcs_flag]
        header = 5 + (0 if single_segment else 1) + dict_id_size
        if end - pos < header + fcs_size:
            raise ProtocolError(f"truncated zstd frame header at {pos}")
        fcs_pos = pos + header
        if fcs_size == 0:
            declared = -1
        elif declared >= 0:
            raw = bytes(data[fcs_pos : fcs_pos + fcs_size]) + b"\x00" * (8 - fcs_size)
            (size,) = _U64_LE.unpack(raw)
            declared += size + (256 if fcs_size == 2 else 0)
        pos = fcs_pos + fcs_size
        while True:
            if end - pos < 3:
                raise ProtocolError(f"truncated zstd block header at {pos}")
            block = data[pos] | data[pos + 1] << 8 | data[pos + 2] << 16
            block_type = (block >> 1) & 3
            if block_type == 3:
                raise ProtocolError(f"reserved zstd block type at {pos}")
            pos += 3 + (1 if block_type == 1 else block >> 3)
            if pos > end:
                raise ProtocolError("truncated zstd block")
            if block & 1:
                break
        if checksum:
            pos += 4
            if pos > end:
                raise ProtocolError("truncated zstd frame checksum")
    return declared


def _unzstd(data: memoryview, sink: _Sink) -> bytes:
    declared = _zstd_frames(data)
    if declared >= 0:
        sink.reserve(declared)
    # The decoder allocates the window a frame declares; allow what the
    # output bound needs, but at least what real high-level writers use.
    window = 1 << max(sink.limit, 1).bit_length()
    window = min(max(window, _ZSTD_MIN_WINDOW), _ZSTD_MAX_WINDOW)
    decompressor = zstandard.ZstdDecompressor(max_window_size=window)
    with decompressor.stream_reader(data, read_across_frames=True) as reader:
        while True:
            step = min(sink.room + 1, _STEP)
            out = reader.read(step)
            if not out:
                return sink.result()
            sink.add(out)


_DECODERS: dict[int, Callable[[memoryview, _Sink], bytes]] = {
    CompressionType.GZIP: _gunzip,
    CompressionType.SNAPPY: _unsnappy,
    CompressionType.LZ4: _unlz4,
    CompressionType.ZSTD: _unzstd,
}
