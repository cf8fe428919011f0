"""``mafka dump-log``: Kafka's ``kafka-dump-log.sh`` (``kafka.tools.DumpLogSegments``) for Mafka.

``--files A.log,B.index,C.timeindex,…`` (comma-separated) prints each file as Kafka's tool
does, line for line (the engine and the formats are in :mod:`mafka.log.dump`):
``.log`` batches (and records with ``--deep-iteration`` / ``--print-data-log``), ``.index``,
``.timeindex``, ``.txnindex``, producer-state ``.snapshot`` files; then, on stderr, Kafka's
closing reports (index mismatches, time-index errors, non-consecutive offsets).  Reads only:
no file is created or changed, and a ``.log`` is read one batch at a time.

Record decoders: Kafka's ``StringDecoder`` (the default), ``IntegerDecoder`` and
``LongDecoder`` (``--key-decoder-class`` / ``--value-decoder-class``, by Kafka's class
names); ``--offsets-decoder`` prints ``__consumer_offsets`` keys and values as Kafka 3's JSON
(``{"type":"1","data":{…}}`` / ``{"version":"3","data":{…}}``, consumer subscriptions and
assignments opened up), decoded with :mod:`mafka.group.offsets_records` and
:mod:`mafka.group.consumer_protocol`; ``--transaction-log-decoder`` prints
``__transaction_state`` records as Kafka's ``TransactionLog.formatRecordKeyAndValue``,
decoded with :mod:`mafka.transaction.log_records`.

Mafka's additions: a record of Mafka's own control batches says what it is at the end of
its line — a delayed envelope ``delayedUntil: <due ms>[,<due ms>…] delayedOffsets: <first>..<last>``
(the offsets its producer was acknowledged with), a local-transaction half message
``halfMessage: true delayedOffsets: …``, a rollback ``halfMessageRollback: offset <o> records <n>``
— and a ``leader-epoch-checkpoint`` is printed as ``epoch: E startOffset: O`` lines.

Exit status 1 where Kafka's tool would fail (a missing ``--files``, an unsupported option, an
unreadable file, damage the walk cannot pass, a failed sanity check — each named on one
line, never a traceback); 0 otherwise, trailing invalid bytes and CRC mismatches included.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import struct
import sys
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any, TextIO

from mafka.broker.producer_state import CorruptSnapshotError, decode_snapshot
from mafka.delayed.envelope import CANCEL_TYPE, mafka_control_type, read_cancel, read_envelope
from mafka.group import consumer_protocol, offsets_records
from mafka.log.dump import (
    DEFAULT_MAX_MESSAGE_SIZE,
    INT32_MAX,
    BatchNote,
    Dumper,
    DumpOptions,
    Findings,
    ParsedRecord,
    RecordParser,
    string_parser,
)
from mafka.transaction import log_records
from mafka.transaction.metadata import TransactionState
from mafka.wire.batch import BatchHeader
from mafka.wire.errors import ProtocolError
from mafka.wire.records import Record

from .progress import progress

__all__ = [
    "add_parser",
    "run",
    "decoder_parser",
    "delayed_note",
    "dump_producer_snapshot",
    "offsets_parser",
    "transaction_log_parser",
]

_DESCRIPTION = (
    "This tool helps to parse a log file and dump its contents to the console, useful for "
    "debugging a seemingly corrupt log segment."
)
_EPILOG = (
    "Mafka extensions: the records of Mafka's delayed-message envelopes end their line with "
    "'delayedUntil: <due ms> delayedOffsets: <first>..<last>' (half messages: 'halfMessage: true', "
    "rollbacks: 'halfMessageRollback: offset <o> records <n>'); leader-epoch-checkpoint files are "
    "printed as 'epoch: E startOffset: O' lines."
)

_STRING_DECODER = "org.apache.kafka.tools.api.StringDecoder"
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_SNAPSHOT_NAME = re.compile(r"(\d{20})-(\d{10})\.checkpoint")
_UNSUPPORTED_DECODERS = {
    "cluster_metadata_decoder": "--cluster-metadata-decoder (Mafka keeps cluster metadata in ZooKeeper, not in a KRaft log)",
    "remote_log_metadata_decoder": "--remote-log-metadata-decoder (Mafka has no remote log storage)",
    "share_group_state_decoder": "--share-group-state-decoder (Mafka has no share groups)",
}


class CommandError(Exception):
    """A usage error: printed on stderr, exit status 1."""


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "dump-log",
        help="print the contents of log segments and indexes (kafka-dump-log)",
        description=_DESCRIPTION,
        epilog=_EPILOG,
    )
    p.add_argument("--files", metavar="file1, file2, ...",
                   help="REQUIRED: The comma separated list of data and index log files to be dumped.")
    p.add_argument("--print-data-log", action="store_true",
                   help="If set, printing the messages content when dumping data logs. "
                        "Automatically set if any decoder option is specified.")
    p.add_argument("--deep-iteration", action="store_true",
                   help="If set, uses deep instead of shallow iteration. Automatically set if "
                        "print-data-log is enabled.")
    p.add_argument("--verify-index-only", action="store_true",
                   help="If set, just verify the index log without printing its content.")
    p.add_argument("--index-sanity-check", action="store_true",
                   help="If set, just checks the index sanity without printing its content. This is "
                        "the same check that is executed on broker startup to determine if an index "
                        "needs rebuilding or not.")
    p.add_argument("--max-message-size", type=int, default=DEFAULT_MAX_MESSAGE_SIZE, metavar="size",
                   help="Size of largest message.")
    p.add_argument("--max-bytes", type=int, default=INT32_MAX, metavar="size",
                   help="Limit the amount of total batches read in bytes avoiding reading the whole "
                        ".log file(s).")
    p.add_argument("--skip-record-metadata", action="store_true",
                   help="Whether to skip printing metadata for each record.")
    p.add_argument("--value-decoder-class", nargs="?", const=_STRING_DECODER, default=None, metavar="CLASS",
                   help="If set, used to deserialize the messages: org.apache.kafka.tools.api."
                        "StringDecoder (the default), IntegerDecoder or LongDecoder.")
    p.add_argument("--key-decoder-class", nargs="?", const=_STRING_DECODER, default=None, metavar="CLASS",
                   help="If set, used to deserialize the keys (the decoders of --value-decoder-class).")
    p.add_argument("--offsets-decoder", action="store_true",
                   help="If set, log data will be parsed as offset data from the __consumer_offsets topic.")
    p.add_argument("--transaction-log-decoder", action="store_true",
                   help="If set, log data will be parsed as transaction metadata from the "
                        "__transaction_state topic.")
    for flag in _UNSUPPORTED_DECODERS:
        p.add_argument("--" + flag.replace("_", "-"), action="store_true", help="not supported by Mafka")
    p.set_defaults(func=run)


# --------------------------------------------------------------------------- decoders


def _java_int(size: int, st: struct.Struct, name: str) -> Callable[[bytes], str]:
    def decode(data: bytes) -> str:
        if len(data) < size:
            raise ValueError(f"java.nio.BufferUnderflowException: {name} needs {size} bytes, the record has {len(data)}")
        return str(st.unpack_from(data)[0])

    return decode


def _java_string(data: bytes) -> str:
    return data.decode("utf-8", "replace")


#: Kafka's decoder classes (both packages that have held them) → bytes → text.
_DECODERS: dict[str, Callable[[bytes], str]] = {}
for _package in ("org.apache.kafka.tools.api", "kafka.serializer"):
    _DECODERS[f"{_package}.StringDecoder"] = _java_string
    _DECODERS[f"{_package}.IntegerDecoder"] = _java_int(4, _I32, "IntegerDecoder")
    _DECODERS[f"{_package}.LongDecoder"] = _java_int(8, _I64, "LongDecoder")


def decoder_parser(key_class: str, value_class: str) -> RecordParser:
    """Kafka's ``DecoderMessageParser`` for the named decoder classes.

    Raises:
        CommandError: a class Mafka does not provide (it runs no Java code).
    """
    decoders = []
    for option, name in (("--key-decoder-class", key_class), ("--value-decoder-class", value_class)):
        if name not in _DECODERS:
            known = ", ".join(sorted(n for n in _DECODERS if n.startswith("org.")))
            raise CommandError(f"{option} {name} is not supported: Mafka runs no Java classes; it has {known}")
        decoders.append(_DECODERS[name])
    key_decoder, value_decoder = decoders
    if key_class == value_class == _STRING_DECODER:
        return string_parser

    def parse(record: Record) -> ParsedRecord:
        try:
            key = None if record.key is None else key_decoder(record.key)
            payload = None if record.value is None else value_decoder(record.value)
        except ValueError as exc:
            return ParsedRecord(f"Error at offset {record.offset}, skipping. {exc}", None, error=True)
        return ParsedRecord(key, payload)

    return parse


def _json(value: Any) -> str:
    """Jackson's ``ObjectNode.toString``: compact, non-ASCII as is."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _version(data: bytes) -> int:
    if len(data) < 2:
        raise ValueError(f"a record of {len(data)} bytes has no version")
    version: int = _I16.unpack_from(data)[0]
    return version


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def _topic_partitions(value: dict[str, list[int]]) -> list[dict[str, Any]]:
    return [{"topic": topic, "partitions": partitions} for topic, partitions in value.items()]


def _subscription_json(data: bytes) -> Any:
    """A consumer subscription as Kafka's ``ConsumerProtocolSubscriptionJsonConverter`` writes it.

    Mafka's decoder knows versions 0-1 (Kafka 2.8's): a later version is shown with the
    fields of version 1 (the decoder ignores what later versions append).
    """
    sub = consumer_protocol.decode_subscription(data)
    out: dict[str, Any] = {"topics": sub.topics, "userData": _b64(sub.user_data)}
    if sub.version >= 1:
        out["ownedPartitions"] = _topic_partitions(sub.owned_partitions)
    return out


def _assignment_json(data: bytes) -> Any:
    assignment = consumer_protocol.decode_assignment(data)
    return {"assignedPartitions": _topic_partitions(assignment.assigned_partitions),
            "userData": _b64(assignment.user_data)}


def _embedded(data: bytes, consumer: bool, decode: Callable[[bytes], Any]) -> Any:
    """A member's subscription or assignment opened up for the consumer protocol, else base64 (as Kafka)."""
    if consumer:
        try:
            return decode(data)
        except ValueError:
            pass  # Kafka keeps the bytes of what it cannot parse
    return _b64(data)


def _offset_value_json(value: offsets_records.OffsetValue, version: int) -> dict[str, Any]:
    data: dict[str, Any] = {"offset": value.offset}
    if version >= 3:
        data["leaderEpoch"] = value.leader_epoch
    data["metadata"] = value.metadata
    data["commitTimestamp"] = value.commit_timestamp
    if version == 1:
        data["expireTimestamp"] = -1 if value.expire_timestamp is None else value.expire_timestamp
    return data


def _group_value_json(value: offsets_records.GroupMetadataValue, version: int) -> dict[str, Any]:
    consumer = value.protocol_type == consumer_protocol.PROTOCOL_TYPE
    data: dict[str, Any] = {
        "protocolType": value.protocol_type,
        "generation": value.generation,
        "protocol": value.protocol,
        "leader": value.leader,
    }
    if version >= 2:
        data["currentStateTimestamp"] = value.current_state_timestamp
    members = []
    for m in value.members:
        member: dict[str, Any] = {"memberId": m.member_id}
        if version >= 3:
            member["groupInstanceId"] = m.group_instance_id
        member["clientId"] = m.client_id
        member["clientHost"] = m.client_host
        if version >= 1:
            member["rebalanceTimeout"] = m.rebalance_timeout
        member["sessionTimeout"] = m.session_timeout
        member["subscription"] = _embedded(m.subscription, consumer, _subscription_json)
        member["assignment"] = _embedded(m.assignment, consumer, _assignment_json)
        members.append(member)
    data["members"] = members
    return data


def offsets_parser(record: Record) -> ParsedRecord:
    """Kafka 3's ``OffsetsMessageParser``: ``__consumer_offsets`` keys and values as JSON."""
    if record.key is None:
        return ParsedRecord(f"Failed to decode message at offset {record.offset} using offset topic decoder "
                            "(message had a missing key)", None, error=True)
    try:
        key_version = _version(record.key)
        if key_version not in (0, 1, 2):
            return ParsedRecord(f"Unknown record type {key_version} at offset {record.offset}, skipping.", None)
        key, value = offsets_records.decode_record(record.key, record.value)
        if isinstance(key, offsets_records.OffsetKey):
            key_data: dict[str, Any] = {"group": key.group, "topic": key.topic, "partition": key.partition}
        else:
            key_data = {"group": key.group}
        key_text = _json({"type": str(key_version), "data": key_data})
        if value is None or record.value is None:
            return ParsedRecord(key_text, "<DELETE>")
        value_version = _version(record.value)
        if isinstance(value, offsets_records.OffsetValue):
            value_data = _offset_value_json(value, value_version)
        else:
            value_data = _group_value_json(value, value_version)
    except ValueError as exc:
        return ParsedRecord(f"Error at offset {record.offset}, skipping. {exc}", None)
    return ParsedRecord(key_text, _json({"version": str(value_version), "data": value_data}))


def transaction_log_parser(record: Record) -> ParsedRecord:
    """Kafka's ``TransactionLog.formatRecordKeyAndValue`` for ``__transaction_state`` records."""
    try:
        if record.key is None:
            raise ValueError("Transaction state log's key should not be null")
        version = _version(record.key)
        if version != log_records.KEY_VERSION:
            return ParsedRecord(f"unknown::version={version}", None)
        transactional_id = log_records.decode_key(record.key)
        value = log_records.decode_value(record.value)
    except ValueError as exc:
        return ParsedRecord(f"Error at offset {record.offset}, skipping. {exc}", None, error=True)
    key_text = f"transaction_metadata::transactionalId={transactional_id}"
    if value is None:
        return ParsedRecord(key_text, "<DELETE>")
    state = value.transaction_status
    # Kafka's loaded metadata ignores an Empty value's partitions.
    partitions = [] if state == TransactionState.EMPTY else [
        f"{topic}-{p}" for topic, ids in value.partitions or () for p in ids
    ]
    payload = (
        f"producerId:{value.producer_id},producerEpoch:{value.producer_epoch},state={state.kafka_name},"
        f"partitions=[{','.join(partitions)}],txnLastUpdateTimestamp={value.transaction_last_update_timestamp_ms},"
        f"txnTimeoutMs={value.transaction_timeout_ms}"
    )
    return ParsedRecord(key_text, payload)


# --------------------------------------------------------------------------- Mafka's control batches


def delayed_note(data: bytes, header: BatchHeader) -> BatchNote | None:
    """What a record line of Mafka's own control batches says about them (None for others).

    Never raises: a batch too damaged to tell is left to the record decoder, which names it.
    """
    try:
        kind = mafka_control_type(data, 0, header)
    except (ProtocolError, IndexError, ValueError):
        return None
    if kind is None:
        return None
    offsets = f"delayedOffsets: {header.base_offset}..{header.last_offset}"
    try:
        if kind == CANCEL_TYPE:
            cancel = read_cancel(data, 0, header)
            if cancel is None:
                return None
            return BatchNote(f" halfMessageRollback: offset {cancel.original_offset} records {cancel.count}")
        envelope = read_envelope(data, 0)
    except (ProtocolError, IndexError, ValueError, struct.error) as exc:
        return BatchNote(f" delayedEnvelope: unreadable ({exc}) {offsets}", covers_batch=True)
    if envelope.half:
        return BatchNote(f" halfMessage: true {offsets}", covers_batch=True)
    due = ",".join(str(t) for t in sorted(set(envelope.due_ms)))
    return BatchNote(f" delayedUntil: {due} {offsets}", covers_batch=True)


# --------------------------------------------------------------------------- other files


def dump_producer_snapshot(path: Path, out: TextIO, err: TextIO) -> bool:
    """Kafka's ``dumpProducerIdSnapshot``; False if the file could not be read at all.

    A corrupt snapshot is reported on stderr as Kafka does (its exit status stays 0).
    """
    try:
        data = path.read_bytes()  # 46 bytes per producer id: small
    except OSError as exc:
        err.write(f"Cannot read {path}: {exc.strerror or exc}\n")
        return False
    try:
        entries = decode_snapshot(data)
    except CorruptSnapshotError as exc:
        err.write(f"{exc}\n")
        return True
    for e in entries:
        txn = "OptionalLong.empty" if e.current_txn_first_offset is None else f"OptionalLong[{e.current_txn_first_offset}]"
        line = (f"producerId: {e.producer_id} producerEpoch: {e.producer_epoch} "
                f"coordinatorEpoch: {e.coordinator_epoch} currentTxnFirstOffset: {txn} "
                f"lastTimestamp: {e.last_timestamp} ")
        if e.batches:
            b = e.batches[0]
            line += (f"firstSequence: {b.first_seq} lastSequence: {b.last_seq} lastOffset: {b.last_offset} "
                     f"offsetDelta: {b.offset_delta} timestamp: {b.max_timestamp}")
        out.write(line + "\n")
    return True


# --------------------------------------------------------------------------- the command


def _options(args: argparse.Namespace) -> DumpOptions:
    """The dump's options from the flags (Kafka's ``DumpLogSegmentsOptions``).

    Raises:
        CommandError: an option Mafka cannot honour.
    """
    for flag, what in _UNSUPPORTED_DECODERS.items():
        if getattr(args, flag):
            raise CommandError(f"{what} is not supported")
    if args.offsets_decoder:
        parser: RecordParser = offsets_parser
    elif args.transaction_log_decoder:
        parser = transaction_log_parser
    else:
        parser = decoder_parser(args.key_decoder_class or _STRING_DECODER,
                                args.value_decoder_class or _STRING_DECODER)
    print_data = bool(args.print_data_log or args.offsets_decoder or args.transaction_log_decoder
                      or args.value_decoder_class or args.key_decoder_class)
    return DumpOptions(
        print_data_log=print_data,
        deep_iteration=args.deep_iteration or print_data,
        skip_record_metadata=args.skip_record_metadata,
        max_bytes=args.max_bytes,
        max_message_size=args.max_message_size,
        index_sanity_only=args.index_sanity_check,
        verify_only=args.verify_index_only,
        parser=parser,
        annotator=delayed_note,
    )


def dump_file(dumper: Dumper, name: str) -> None:
    """``Dumping <file>`` and the file, by its suffix as Kafka dispatches (unknown ones ignored)."""
    dumper.out.write(f"Dumping {name}\n")
    try:
        _dump_by_suffix(dumper, name)
    except BrokenPipeError:
        raise  # stdout is gone: the command ends (run)
    except OSError as exc:  # a read failing midway (EIO, a file removed under us)
        dumper.findings.failed = True
        dumper.err.write(f"Cannot read {exc.filename or name}: {exc.strerror or exc}\n")


def _dump_by_suffix(dumper: Dumper, name: str) -> None:
    out, err = dumper.out, dumper.err
    path = Path(name)
    filename = path.name
    suffix = filename[filename.rfind("."):] if "." in filename else ""
    if suffix == ".log":
        dumper.dump_log(path)
    elif suffix == ".checkpoint":
        if filename == "bootstrap.checkpoint":
            dumper.dump_log(path, "KRaft bootstrap snapshot")
        elif (m := _SNAPSHOT_NAME.fullmatch(filename)) is not None:
            dumper.dump_log(path, f"Snapshot end offset: {int(m.group(1))}, epoch: {int(m.group(2))}")
        else:
            dumper.findings.failed = True
            err.write(f"Cannot dump {name}: not a snapshot file name (<offset>-<epoch>.checkpoint)\n")
    elif suffix == ".index":
        dumper.dump_index(path, name)
    elif suffix == ".timeindex":
        dumper.dump_time_index(path, name)
    elif suffix == ".snapshot":
        if not dump_producer_snapshot(path, out, err):
            dumper.findings.failed = True
    elif suffix == ".txnindex":
        dumper.dump_txn_index(path)
    elif filename == "leader-epoch-checkpoint":
        dumper.dump_epoch_checkpoint(path)
    else:
        err.write(f"Ignoring unknown file {name}\n")


#: the total size of the ``.log`` files from which a progress display is shown on stderr
PROGRESS_FROM_BYTES = 64 << 20


def _size(name: str) -> int:
    try:
        return os.path.getsize(name)
    except OSError:
        return 0


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    if not args.files:
        err.write('Missing required argument "[files]"\n')
        return 1
    try:
        options = _options(args)
    except CommandError as exc:
        err.write(f"{exc}\n")
        return 1
    findings = Findings()
    names = [name for name in args.files.split(",") if name]
    logs = sum(_size(name) for name in names if name.endswith(".log"))
    with ExitStack() as stack:
        on_bytes = None
        if logs >= PROGRESS_FROM_BYTES:
            # Big segments only: a quick dump's stderr stays exactly Kafka's.
            bar = stack.enter_context(progress("dump-log", total=logs, unit="bytes of log read", stream=err))
            on_bytes = bar.advance
        dumper = Dumper(options, out, err, findings, on_bytes=on_bytes)
        try:
            for name in names:
                dump_file(dumper, name)
                out.flush()
        except BrokenPipeError:
            # `| head`: the reader is gone; point stdout at nothing so the exit's flush stays quiet.
            if out is sys.stdout:
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 1
    for line in findings.report():
        err.write(line + "\n")
    return 1 if findings.failed else 0
