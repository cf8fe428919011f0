"""A partition's files as Kafka's ``DumpLogSegments`` prints them: the engine of ``mafka dump-log``.

Kafka's text, line for line (``kafka.tools.DumpLogSegments``, Kafka 3.x/4.0):

* ``.log``: ``Log starting offset: N``, then per batch ``baseOffset: … lastOffset: … count: …
  baseSequence: … lastSequence: … producerId: … producerEpoch: … partitionLeaderEpoch: …
  isTransactional: … isControl: … deleteHorizonMs: OptionalLong.empty position: P CreateTime: T
  size: S magic: 2 compresscodec: none crc: C isvalid: true``, and with deep iteration one
  ``| offset: … CreateTime: … keySize: … valueSize: … sequence: … headerKeys: [a,b]`` line per
  record, control records adding ``endTxnMarker: COMMIT coordinatorEpoch: E`` (or
  ``controlType: NAME(id)``), data records adding `` key: … payload: …`` when printing data.
  A partial batch at the end ends the walk: ``Found N invalid bytes at the end of NAME``.
* ``.index``: ``offset: N position: P`` (each entry checked against the batch it points at);
  ``.timeindex``: ``timestamp: T offset: N`` (checked against the batch's records); both stop
  at the first zero entry after the first (a preallocated file's unused tail).
* ``.txnindex``: ``version: 0 producerId: … firstOffset: … lastOffset: … lastStableOffset: …``.

What Kafka reports after all files (index mismatches, time-index errors, non-consecutive
offsets) is collected in :class:`Findings` and printed by the caller, in Kafka's words.

Where Kafka would die with a stack trace the dump prints one line naming the file, the byte
position and what is wrong, and :attr:`Findings.failed` makes the exit status 1: a batch
size below the smallest message, a magic other than 2 (Mafka stores no magic 0/1 message
sets: :mod:`mafka.log.validation` up-converts them), records that do not decode (the walk
goes on with the next batch: its framing is intact), an index entry pointing at no batch, a
failed sanity check.  A CRC mismatch is only ``isvalid: false`` (exit 0), as in Kafka.

Mafka additions: trailing partial entries of index files are named like a log's trailing
bytes; ``leader-epoch-checkpoint`` is printed (``epoch: E startOffset: O``); a
:data:`BatchAnnotator` may append text to the record lines of a batch (Mafka's delayed
envelopes, see ``mafka.cli.dump_log``) and declare that its records stand for all its
offsets (no false "non-consecutive offsets").

Streaming: a ``.log`` is read batch by batch with ``os.pread``; a batch is held in memory
only to decode its records (with :func:`mafka.wire.records.decode_batch`), and only up to
:data:`MAX_DECODED_BATCH` bytes (a larger one — most likely a damaged length — is named as
damage); shallow dumps compute CRCs in 1 MiB chunks.  Sanity checks
are the ones a Mafka broker runs at start-up (:meth:`mafka.log.index.OffsetIndex.load`,
:meth:`~mafka.log.index.TimeIndex.load`).  Nothing here writes a file.
"""

from __future__ import annotations

import bisect
import os
import re
import struct
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from crc32c import crc32c

from mafka.wire.batch import (
    ATTRIBUTES_OFFSET,
    BATCH_HEADER_SIZE,
    CONTROL_FLAG_MASK,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAGIC_V2,
    MIN_BATCH_LENGTH,
    BatchHeader,
    crc_of,
)
from mafka.wire.compression import DEFAULT_MAX_DECOMPRESSED, CompressionType
from mafka.wire.errors import CorruptRecordBatch
from mafka.wire.records import ControlRecord, ControlRecordType, Record, decode_batch

from .checkpoint import CorruptCheckpointError, LeaderEpochCheckpointFile
from .index import CorruptIndexError, OffsetIndex, TimeIndex

__all__ = [
    "INT32_MAX",
    "DEFAULT_MAX_MESSAGE_SIZE",
    "MAX_DECODED_BATCH",
    "BatchAnnotator",
    "BatchNote",
    "DumpOptions",
    "Dumper",
    "Findings",
    "ParsedRecord",
    "RecordParser",
    "string_parser",
]

INT32_MAX = 2**31 - 1
#: ``--max-message-size``'s default (5 MiB).
DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024
#: offset + size + the fields up to magic: fewer bytes left than this end a walk (``FileLogInputStream``).
HEADER_SIZE_UP_TO_MAGIC = MAGIC_OFFSET + 1
#: The smallest message of any magic (``LegacyRecord.RECORD_OVERHEAD_V0``): a smaller size is corruption.
RECORD_OVERHEAD_V0 = 14

_I32 = struct.Struct(">i")
_OFFSET_ENTRY = struct.Struct(">ii")  # relative offset, position
_TIME_ENTRY = struct.Struct(">qi")  # timestamp, relative offset
_TXN_ENTRY = struct.Struct(">hqqqq")  # version, producer id, first, last, last stable offset
_ENTRIES_PER_READ = 4096
_CRC_CHUNK = 1 << 20
#: The largest batch a dump holds in memory to decode (decode_batch's decompression bound too).
MAX_DECODED_BATCH = DEFAULT_MAX_DECOMPRESSED
_DECODER_PREFIX = re.compile(r"^record batch at position \d+: ")
_CODEC_NAMES = {c.value: c.config_name for c in CompressionType}
_CONTROL_NAMES = {t.value: t.name for t in ControlRecordType}


@dataclass(frozen=True, slots=True)
class ParsedRecord:
    """What a record parser makes of a record: Kafka's ``(Option[key], Option[payload])``.

    ``error`` marks a record the parser could not decode where Kafka's tool would have
    died (the text says so; the exit status becomes 1).
    """

    key: str | None
    payload: str | None
    error: bool = False


#: Kafka's ``MessageParser``: a data record → its key and payload text.
RecordParser = Callable[[Record], ParsedRecord]


@dataclass(frozen=True, slots=True)
class BatchNote:
    """A Mafka annotation of a batch: ``text`` is appended to each of its record lines.

    ``covers_batch``: the batch's records stand for every offset up to its last offset
    (a delayed envelope holds one record for many), so no gap is reported after it.
    """

    text: str
    covers_batch: bool = False


#: Called with a control batch's bytes and header; a note for Mafka's own control batches.
BatchAnnotator = Callable[[bytes, BatchHeader], "BatchNote | None"]


def string_parser(record: Record) -> ParsedRecord:
    """Kafka's default ``StringDecoder`` for keys and values (UTF-8, bad bytes replaced)."""
    key = None if record.key is None else record.key.decode("utf-8", "replace")
    payload = None if record.value is None else record.value.decode("utf-8", "replace")
    return ParsedRecord(key, payload)


@dataclass(slots=True)
class DumpOptions:
    """The tool's switches (Kafka's option names in the comments)."""

    print_data_log: bool = False  # --print-data-log (or any decoder option)
    deep_iteration: bool = False  # --deep-iteration (implied by print_data_log)
    skip_record_metadata: bool = False  # --skip-record-metadata
    max_bytes: int = INT32_MAX  # --max-bytes
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE  # --max-message-size
    index_sanity_only: bool = False  # --index-sanity-check
    verify_only: bool = False  # --verify-index-only
    parser: RecordParser = string_parser
    annotator: BatchAnnotator | None = None


@dataclass(slots=True)
class Findings:
    """What Kafka prints to stderr after every file was dumped, and whether the dump failed.

    Each map is keyed by the file's absolute path, in the order files were dumped.
    """

    index_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    time_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    out_of_order: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    not_found: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    non_consecutive: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    #: something Kafka's tool would have died on was found: exit status 1
    failed: bool = False

    def report(self) -> list[str]:
        """Kafka's closing stderr lines: index mismatches, time-index errors, offset gaps.

        Kafka prepends index mismatches and offset gaps to a list and so prints them newest
        first; time-index errors come in file order.
        """
        lines: list[str] = []
        for name, pairs in self.index_mismatches.items():
            lines.append(f"Mismatches in :{name}")
            lines += [f"  Index offset: {i}, log offset: {o}" for i, o in reversed(pairs)]
        for name, pairs in self.time_mismatches.items():
            lines.append(f"Found timestamp mismatch in :{name}")
            lines += [f"  Index timestamp: {i}, log timestamp: {t}" for i, t in pairs]
        for name, pairs in self.out_of_order.items():
            lines.append(f"Found out of order timestamp in :{name}")
            lines += [f"  Index timestamp: {i}, Previously indexed timestamp: {p}" for i, p in pairs]
        for pairs in self.not_found.values():
            lines.append("The following indexed offsets are not found in the log.")
            lines += [f"Indexed offset: {i}, found log offset: {o}" for i, o in pairs]
        for name, pairs in self.non_consecutive.items():
            lines.append(f"Non-consecutive offsets in {name}")
            lines += [f"  {a} is followed by {b}" for a, b in reversed(pairs)]
        return lines


class _Damage(Exception):
    """Bytes of a ``.log`` that cannot be walked past; ``position`` is where they start."""

    def __init__(self, position: int, reason: str) -> None:
        super().__init__(reason)
        self.position = position
        self.reason = reason


class _LogFile:
    """A ``.log`` file read through ``os.pread``: never more than one batch in memory."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = os.open(path, os.O_RDONLY)
        self.size = os.fstat(self.fd).st_size

    def close(self) -> None:
        os.close(self.fd)

    def read(self, position: int, length: int) -> bytes:
        data = b""
        while len(data) < length:
            part = os.pread(self.fd, length - len(data), position + len(data))
            if not part:
                break
            data += part
        return data

    def batches(self, start: int, end: int) -> Iterator[tuple[int, int]]:
        """``(position, size)`` of each whole batch in ``[start, end)``, as ``FileLogInputStream`` walks.

        Fewer than 17 bytes left, or a batch running past *end*, ends the walk (the caller
        reports the rest as invalid bytes).

        Raises:
            _Damage: a size below the smallest message, a magic other than 2, or a magic-2
                batch shorter than its header.
        """
        position = start
        while position < end - HEADER_SIZE_UP_TO_MAGIC:
            head = self.read(position, HEADER_SIZE_UP_TO_MAGIC)
            if len(head) < HEADER_SIZE_UP_TO_MAGIC:
                return  # the file shrank under us: what is left is a tail
            (length,) = _I32.unpack_from(head, 8)
            if length < RECORD_OVERHEAD_V0:
                raise _Damage(position, f"record size {length} is smaller than the minimum "
                                        f"record overhead ({RECORD_OVERHEAD_V0})")
            if position > end - LOG_OVERHEAD - length:
                return
            magic = head[MAGIC_OFFSET]
            if magic != MAGIC_V2:
                raise _Damage(position, f"magic {magic} is not supported: only record batches "
                                        f"of magic {MAGIC_V2} are read")
            if length < MIN_BATCH_LENGTH:
                raise _Damage(position, f"record batch size {length + LOG_OVERHEAD} is smaller "
                                        f"than the record batch overhead ({BATCH_HEADER_SIZE})")
            yield position, length + LOG_OVERHEAD
            position += length + LOG_OVERHEAD

    def crc(self, position: int, size: int) -> int:
        """The CRC-32C of the batch at *position* (attributes to the end), read in chunks."""
        value = 0
        at, end = position + ATTRIBUTES_OFFSET, position + size
        while at < end:
            chunk = os.pread(self.fd, min(_CRC_CHUNK, end - at), at)
            if not chunk:
                break
            value = crc32c(chunk, value)
            at += len(chunk)
        return value

    def next_offset(self, base_offset: int, start: int) -> int:
        """One past the last offset of the batches from *start* (a batch start) to the first bad one."""
        next_offset = base_offset
        try:
            for position, _ in self.batches(start, self.size):
                next_offset = BatchHeader(self.read(position, BATCH_HEADER_SIZE)).last_offset + 1
        except _Damage:
            pass
        return next_offset

    def first_batch(self, position: int, limit: int) -> BatchHeader | str:
        """The header of the batch at *position* if it lies within *limit* bytes, else why not.

        Kafka's ``fileRecords.slice(position, limit).batches.iterator.next()``.
        """
        if position > self.size:
            return f"position {position} is past the end of the log ({self.size} bytes)"
        end = min(position + limit, self.size)
        try:
            for _, _ in self.batches(position, end):
                return BatchHeader(self.read(position, BATCH_HEADER_SIZE))
        except _Damage as exc:
            return exc.reason
        return f"no whole record batch of at most {limit} bytes starts at position {position}"


class _IndexEntries:
    """The whole entries of an index file, read in chunks; ``trailing`` bytes follow the last."""

    def __init__(self, path: Path, entry: struct.Struct) -> None:
        self.fd = os.open(path, os.O_RDONLY)
        self.entry = entry
        size = os.fstat(self.fd).st_size
        self.trailing = size % entry.size
        self.count = size // entry.size

    def close(self) -> None:
        os.close(self.fd)

    def __iter__(self) -> Iterator[tuple[int, int]]:
        entry_size = self.entry.size
        end = self.count * entry_size
        position = 0
        while position < end:
            chunk = os.pread(self.fd, min(entry_size * _ENTRIES_PER_READ, end - position), position)
            chunk = chunk[: len(chunk) - len(chunk) % entry_size]
            if not chunk:
                return  # the file shrank under us
            yield from self.entry.iter_unpack(chunk)
            position += len(chunk)


def _base_offset(path: Path) -> int | None:
    """The offset a segment file's name starts with (Kafka: ``getName.split("\\\\.")(0).toLong``)."""
    head = path.name.split(".")[0]
    return int(head) if head.isdigit() else None


def _absolute(path: Path) -> str:
    return str(path.absolute())


def _sequence(header: BatchHeader, offset: int) -> int:
    """``DefaultRecord.sequence``: the batch's base sequence advanced by the offset delta, wrapping."""
    if header.base_sequence < 0:
        return -1
    return (header.base_sequence + offset - header.base_offset) & INT32_MAX


def _timestamp_type(header: BatchHeader) -> str:
    return "LogAppendTime" if header.timestamp_type else "CreateTime"


def batch_line(header: BatchHeader, position: int, valid: bool) -> str:
    """Kafka's ``printBatchLevel`` line of a magic-2 batch."""
    horizon = f"OptionalLong[{header.base_timestamp}]" if header.has_delete_horizon else "OptionalLong.empty"
    codec = _CODEC_NAMES.get(header.compression, f"unknown({header.compression})")
    return (
        f"baseOffset: {header.base_offset} lastOffset: {header.last_offset} count: {header.record_count}"
        f" baseSequence: {header.base_sequence} lastSequence: {header.last_sequence}"
        f" producerId: {header.producer_id} producerEpoch: {header.producer_epoch}"
        f" partitionLeaderEpoch: {header.partition_leader_epoch}"
        f" isTransactional: {_bool(header.is_transactional)} isControl: {_bool(header.is_control)}"
        f" deleteHorizonMs: {horizon} position: {position} {_timestamp_type(header)}: {header.max_timestamp}"
        f" size: {header.size} magic: {header.magic} compresscodec: {codec} crc: {header.crc}"
        f" isvalid: {_bool(valid)}"
    )


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _size(data: bytes | None) -> int:
    return -1 if data is None else len(data)


def _control_text(record: ControlRecord) -> str:
    if record.type in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        return f" endTxnMarker: {_CONTROL_NAMES[record.type]} coordinatorEpoch: {record.coordinator_epoch}"
    return f" controlType: {_CONTROL_NAMES.get(record.type, 'UNKNOWN')}({record.type})"


def _as_data_batch(data: bytes) -> bytes:
    """The batch with its control bit cleared: decoding it yields the raw keys and values."""
    copy = bytearray(data)
    copy[ATTRIBUTES_OFFSET + 1] &= ~CONTROL_FLAG_MASK & 0xFF  # attributes is an int16: the flag is in its low byte
    return bytes(copy)


class Dumper:
    """Dumps files to *out* as Kafka does, collecting what Kafka reports at the end in *findings*.

    *err* receives Kafka's stderr lines that belong to one file (``Ignoring unknown file``,
    a failed sanity check, an unreadable file).
    """

    def __init__(self, options: DumpOptions, out: TextIO, err: TextIO, findings: Findings | None = None,
                 on_bytes: Callable[[int], None] | None = None) -> None:
        #: told the bytes of each batch read (a caller's progress display), or None
        self.on_bytes = on_bytes
        self.options = options
        self.out = out
        self.err = err
        self.findings = findings if findings is not None else Findings()

    def _print(self, line: str) -> None:
        self.out.write(line + "\n")

    def _error(self, line: str) -> None:
        self.findings.failed = True
        self.err.write(line + "\n")

    def _open_log(self, path: Path) -> _LogFile | None:
        try:
            return _LogFile(path)
        except OSError as exc:
            self._error(f"Cannot read {path}: {exc.strerror or exc}")
            return None

    # ------------------------------------------------------------------ .log

    def dump_log(self, path: Path, header: str | None = None) -> None:
        """A ``.log`` (or KRaft snapshot) file: its batches and, with deep iteration, records.

        *header* replaces the ``Log starting offset: N`` line (a snapshot's ``Snapshot end
        offset: …``).
        """
        if header is None:
            base = _base_offset(path)
            if base is None:
                self._error(f"Cannot dump {path}: its name does not start with the segment's base offset")
                return
            header = f"Log starting offset: {base}"
        self._print(header)
        log = self._open_log(path)
        if log is None:
            return
        try:
            self._dump_batches(path, log)
        finally:
            log.close()

    def _dump_batches(self, path: Path, log: _LogFile) -> None:
        opts = self.options
        deep = opts.deep_iteration or opts.print_data_log
        end = min(log.size, opts.max_bytes)
        valid_bytes = 0
        gaps: list[tuple[int, int]] = []
        last_offset = -1
        try:
            for position, size in log.batches(0, end):
                # A batch is held whole only if it is to be decoded and not implausibly large
                # (a damaged length may claim most of the file): else its CRC is computed in chunks.
                data = log.read(position, size) if deep and size <= MAX_DECODED_BATCH else None
                header = BatchHeader(data if data is not None else log.read(position, BATCH_HEADER_SIZE))
                crc = crc_of(data, 0, size) if data is not None else log.crc(position, size)
                self._print(batch_line(header, valid_bytes, crc == header.crc))
                valid_bytes += size
                if self.on_bytes is not None:
                    self.on_bytes(size)
                if header.compression not in _CODEC_NAMES:
                    self._damage(path, position, f"unknown compression codec id {header.compression}")
                    continue
                if not deep:
                    continue
                if data is None:
                    self._damage(path, position, f"a record batch of {size} bytes is larger than the "
                                                 f"{MAX_DECODED_BATCH} bytes a dump decodes")
                    continue
                note = opts.annotator(data, header) if opts.annotator and header.is_control else None
                try:
                    lines, offsets = self._record_lines(data, header, note)
                except CorruptRecordBatch as exc:
                    self._damage(path, position, _DECODER_PREFIX.sub("", str(exc)))
                    continue
                for line in lines:
                    self._print(line)
                for offset in offsets:
                    if last_offset != -1 and offset != last_offset + 1:
                        gaps.append((last_offset, offset))
                    last_offset = offset
                if note is not None and note.covers_batch:
                    last_offset = header.last_offset
        except _Damage as exc:
            self._damage(path, exc.position, exc.reason)
        else:
            trailing = end - valid_bytes
            if trailing > 0 and opts.max_bytes == INT32_MAX:
                self._print(f"Found {trailing} invalid bytes at the end of {path.name}")
        if gaps:
            self.findings.non_consecutive.setdefault(_absolute(path), []).extend(gaps)

    def _damage(self, path: Path, position: int, reason: str) -> None:
        """The line naming damage Kafka's tool would have died on (stdout, in place), and exit 1."""
        self.findings.failed = True
        self._print(f"Found invalid data at position {position} of {path.name}: {reason}")

    def _record_lines(self, data: bytes, header: BatchHeader, note: BatchNote | None) -> tuple[list[str], list[int]]:
        """The record lines of one batch and its records' offsets.

        Raises:
            CorruptRecordBatch: the records do not decode.
        """
        opts = self.options
        decoded = decode_batch(data, 0, verify_crc=False)
        if header.is_control:
            # ControlRecord keeps the marker, not the sizes: the same records read as data give those.
            raw = decode_batch(_as_data_batch(data), 0, verify_crc=False).data_records()
            controls = decoded.control_records()
            pairs: list[tuple[Record, ControlRecord | None]] = list(zip(raw, controls, strict=True))
        else:
            pairs = [(r, None) for r in decoded.data_records()]
        lines = []
        timestamp_type = _timestamp_type(header)
        for record, control in pairs:
            # Kafka's print sequence exactly: "| " leads the first field printed, whichever it is.
            line = ""
            prefix = "| "
            if not opts.skip_record_metadata:
                line = (
                    f"{prefix}offset: {record.offset} {timestamp_type}: {record.timestamp}"
                    f" keySize: {_size(record.key)} valueSize: {_size(record.value)}"
                    f" sequence: {_sequence(header, record.offset)}"
                    f" headerKeys: [{','.join(k for k, _ in record.headers)}]"
                )
                prefix = " "
                if control is not None:
                    line += _control_text(control)
                if note is not None:
                    line += note.text
            if opts.print_data_log and control is None:
                parsed = opts.parser(record)
                if parsed.error:
                    self.findings.failed = True
                if parsed.key is not None:
                    line += f"{prefix}key: {parsed.key}"
                if parsed.payload is not None:
                    line += f" payload: {parsed.payload}"
            lines.append(line)
        return lines, [r.offset for r, _ in pairs]

    # ------------------------------------------------------------------ .index

    def dump_index(self, path: Path, display: str) -> None:
        """An offset index: its entries, each checked against the first batch at its position."""
        opts = self.options
        base = _base_offset(path)
        if base is None:
            self._error(f"Cannot dump {path}: its name does not start with the segment's base offset")
            return
        log = self._open_log(path.with_name(f"{path.name.split('.')[0]}.log"))
        if log is None:
            return
        entries = self._entries(path, _OFFSET_ENTRY)
        if entries is None:
            log.close()
            return
        try:
            if entries.count == 0:
                self._print(f"{display} is empty.")
                return
            if opts.index_sanity_only:
                try:
                    OffsetIndex(path, base, 1).load(log.size)
                except CorruptIndexError as exc:
                    self._error(f"{display} failed sanity check: {_reason(exc, path)}")
                    return
                self._print(f"{display} passed sanity check.")
                return
            mismatches = self.findings.index_mismatches
            for i, (relative, position) in enumerate(entries):
                if relative == 0 and i > 0:
                    return  # the zeroes of a preallocated index: no more entries
                offset = base + relative
                found = log.first_batch(position, opts.max_message_size)
                if isinstance(found, str):
                    self.findings.failed = True
                    self._print(f"Found invalid index entry offset: {offset} position: {position} "
                                f"in {path.name}: {found}")
                elif found.last_offset != offset:
                    mismatches.setdefault(_absolute(path), []).append((offset, found.last_offset))
                if not opts.verify_only:
                    self._print(f"offset: {offset} position: {position}")
            self._trailing(path, entries.trailing)
        finally:
            entries.close()
            log.close()

    def _entries(self, path: Path, entry: struct.Struct) -> _IndexEntries | None:
        try:
            return _IndexEntries(path, entry)
        except OSError as exc:
            self._error(f"Cannot read {path}: {exc.strerror or exc}")
            return None

    def _trailing(self, path: Path, trailing: int) -> None:
        if trailing:
            self._print(f"Found {trailing} invalid bytes at the end of {path.name}")

    # ------------------------------------------------------------------ .timeindex

    def dump_time_index(self, path: Path, display: str) -> None:
        """A time index: its entries, each checked against the largest timestamp of its batch."""
        opts = self.options
        base = _base_offset(path)
        if base is None:
            self._error(f"Cannot dump {path}: its name does not start with the segment's base offset")
            return
        stem = path.name.split(".")[0]
        log = self._open_log(path.with_name(f"{stem}.log"))
        if log is None:
            return
        try:
            index_path = path.with_name(f"{stem}.index")
            offsets, positions = _offset_lookup_table(index_path, base)
            if opts.index_sanity_only:
                reason = _time_index_sanity(path, index_path, base, log, positions)
                if reason is not None:
                    self._error(f"{display} failed sanity check: {reason}")
                    return
                self._print(f"{display} passed sanity check.")
                return
            entries = self._entries(path, _TIME_ENTRY)
            if entries is None:
                return
            try:
                self._check_time_entries(path, log, base, entries, offsets, positions)
                self._trailing(path, entries.trailing)
            finally:
                entries.close()
        finally:
            log.close()

    def _check_time_entries(self, path: Path, log: _LogFile, base: int, entries: _IndexEntries,
                            offsets: array[int], positions: array[int]) -> None:
        findings = self.findings
        name = _absolute(path)
        previous = -1
        for i, (timestamp, relative) in enumerate(entries):
            if relative == 0 and i > 0:
                return
            offset = base + relative
            i_pos = bisect.bisect_right(offsets, offset)
            start = positions[i_pos - 1] if i_pos else 0
            found = self._find_batch(log, start, offset)
            if found is None:
                findings.not_found.setdefault(name, []).append((offset, -1))
            elif found[1].last_offset != offset:
                findings.not_found.setdefault(name, []).append((offset, found[1].last_offset))
            else:
                max_timestamp = self._max_record_timestamp(log, *found)
                if max_timestamp is not None and max_timestamp != timestamp:
                    findings.time_mismatches.setdefault(name, []).append((timestamp, max_timestamp))
                if previous >= timestamp:
                    findings.out_of_order.setdefault(name, []).append((timestamp, previous))
            if not self.options.verify_only:
                self._print(f"timestamp: {timestamp} offset: {offset}")
            previous = timestamp

    def _find_batch(self, log: _LogFile, start: int, offset: int) -> tuple[int, BatchHeader] | None:
        """The first batch from *start* whose last offset is at least *offset*."""
        try:
            for position, _ in log.batches(start, log.size):
                header = BatchHeader(log.read(position, BATCH_HEADER_SIZE))
                if header.last_offset >= offset:
                    return position, header
        except _Damage as exc:
            self._damage(log.path, exc.position, exc.reason)
        return None

    def _max_record_timestamp(self, log: _LogFile, position: int, header: BatchHeader) -> int | None:
        """The largest record timestamp of the batch (Kafka reads every record for it)."""
        if header.size > MAX_DECODED_BATCH:
            self._damage(log.path, position, f"a record batch of {header.size} bytes is larger than the "
                                             f"{MAX_DECODED_BATCH} bytes a dump decodes")
            return None
        data = log.read(position, header.size)
        note = self.options.annotator(data, header) if self.options.annotator and header.is_control else None
        if note is not None and note.covers_batch:
            return header.max_timestamp  # an envelope's one record stands for the original's records
        try:
            records = decode_batch(data, 0, verify_crc=False).records
        except CorruptRecordBatch as exc:
            self._damage(log.path, position, _DECODER_PREFIX.sub("", str(exc)))
            return None
        return max((r.timestamp for r in records), default=-1)

    # ------------------------------------------------------------------ .txnindex and checkpoints

    def dump_txn_index(self, path: Path) -> None:
        """A transaction index: Kafka's ``AbortedTxn`` line per entry."""
        entries: list[tuple[int, int, int, int, int]] = []
        try:
            data = path.read_bytes()  # 34 bytes per aborted transaction: small
        except OSError as exc:
            self._error(f"Cannot read {path}: {exc.strerror or exc}")
            return
        whole = len(data) - len(data) % _TXN_ENTRY.size
        entries = list(_TXN_ENTRY.iter_unpack(data[:whole]))
        for version, producer_id, first, last, lso in entries:
            self._print(f"version: {version} producerId: {producer_id} firstOffset: {first} "
                        f"lastOffset: {last} lastStableOffset: {lso}")
        self._trailing(path, len(data) - whole)

    def dump_epoch_checkpoint(self, path: Path) -> None:
        """A ``leader-epoch-checkpoint`` (Mafka's addition: Kafka's tool has no format for it)."""
        try:
            entries = LeaderEpochCheckpointFile(path).read()
        except CorruptCheckpointError as exc:
            self._error(str(exc))
            return
        except OSError as exc:
            self._error(f"Cannot read {path}: {exc.strerror or exc}")
            return
        for entry in entries:
            self._print(f"epoch: {entry.epoch} startOffset: {entry.start_offset}")


def _reason(exc: Exception, path: Path) -> str:
    """An index error's message without the path it starts with."""
    text = str(exc)
    return text.removeprefix(f"{path}: ")


def _offset_lookup_table(index_path: Path, base: int) -> tuple[array[int], array[int]]:
    """The offset index's (offsets, positions), up to its first zero entry, for lookups.

    A missing index looks up position 0, as an empty one does.
    """
    offsets, positions = array("q"), array("q")
    try:
        entries = _IndexEntries(index_path, _OFFSET_ENTRY)
    except OSError:
        return offsets, positions
    try:
        for i, (relative, position) in enumerate(entries):
            if relative == 0 and i > 0:
                break
            offsets.append(base + relative)
            positions.append(position)
    finally:
        entries.close()
    return offsets, positions


def _time_index_sanity(path: Path, index_path: Path, base: int, log: _LogFile, positions: array[int]) -> str | None:
    """Why a Mafka broker would rebuild this time index at start-up, or None.

    :meth:`TimeIndex.load` (torn or unordered), then the segment's check that the last
    entry lies within the log's offsets (``LogSegment._load``).
    """
    index = TimeIndex(path, base, 1)
    try:
        index.load()
    except CorruptIndexError as exc:
        return _reason(exc, path)
    last = index.last_entry
    if last is None:
        return None
    start = 0
    try:
        OffsetIndex(index_path, base, 1).load(log.size)
        start = positions[-1] if positions else 0
    except CorruptIndexError:
        pass  # walk the whole log instead
    next_offset = log.next_offset(base, start)
    if not (last[0] >= 0 and base <= last[1] < next_offset):
        return f"last entry (timestamp {last[0]}, offset {last[1]}) lies outside the log's offsets [{base}, {next_offset})"
    return None
