"""``mafka dump-log``: Kafka's DumpLogSegments text for segments written by Mafka's own log.

Every segment here is written by :class:`mafka.log.log.Log` in a tmp dir; the expected lines
are Kafka's format spelled out, with sizes and CRCs taken from the batches the test built.
"""

from __future__ import annotations

import os
import random
import shutil
import struct
from pathlib import Path

import pytest

from mafka.broker.producer_state import BatchMetadata, ProducerStateEntry, encode_snapshot
from mafka.cli.main import main
from mafka.delayed.envelope import envelope_batch
from mafka.group import consumer_protocol as cp
from mafka.group import offsets_records as orec
from mafka.log.config import LogConfig
from mafka.log.log import Log
from mafka.log.txn_index import AbortedTxn
from mafka.transaction import log_records as tlog
from mafka.transaction.metadata import TransactionState
from mafka.wire.records import ControlRecordType, Record, build_batch, build_control_batch

LOG = "00000000000000000000.log"
INDEX = "00000000000000000000.index"
TIMEINDEX = "00000000000000000000.timeindex"


def crc(batch: bytes) -> int:
    return struct.unpack_from(">I", batch, 17)[0]


def write_log(tmp_path: Path, batches: list[bytes], *, epoch: int = 0, follower: bool = False, **config) -> Path:
    """The partition dir of a log holding *batches* (as a leader appends them, unless *follower*)."""
    config.setdefault("index_interval_bytes", 0)  # an index entry for every batch after the first
    log = Log.open(tmp_path / "t-0", LogConfig(**config), lambda: 1_000_000)
    for batch in batches:
        if follower:
            log.append_as_follower(batch)
        else:
            log.append_as_leader(batch, epoch)
    log.flush()
    log.close()
    return tmp_path / "t-0"


def dump(capsys, *argv: str) -> tuple[int, list[str], list[str]]:
    rc = main(["dump-log", *argv])
    captured = capsys.readouterr()
    return rc, captured.out.splitlines(), captured.err.splitlines()


def batch_line(base: int, last: int, count: int, position: int, max_ts: int, batch: bytes, *, codec: str = "none",
               seq: tuple[int, int] = (-1, -1), pid: int = -1, pepoch: int = -1, epoch: int = 0,
               txn: bool = False, control: bool = False, valid: bool = True) -> str:
    return (f"baseOffset: {base} lastOffset: {last} count: {count} baseSequence: {seq[0]} lastSequence: {seq[1]}"
            f" producerId: {pid} producerEpoch: {pepoch} partitionLeaderEpoch: {epoch}"
            f" isTransactional: {str(txn).lower()} isControl: {str(control).lower()}"
            f" deleteHorizonMs: OptionalLong.empty position: {position} CreateTime: {max_ts} size: {len(batch)}"
            f" magic: 2 compresscodec: {codec} crc: {crc(batch)} isvalid: {str(valid).lower()}")


# --------------------------------------------------------------------------- .log


def test_plain_batches_with_headers_and_null_keys(tmp_path, capsys):
    b1 = build_batch([Record(0, 1000, b"k0", b"v0", (("h1", b"x"), ("h2", None))),
                      Record(1, 1005, None, b"v1")])
    b2 = build_batch([Record(0, 1003, b"k2", None)])
    d = write_log(tmp_path, [b1, b2], epoch=4)
    rc, out, err = dump(capsys, "--files", str(d / LOG), "--print-data-log")
    assert rc == 0 and err == []
    assert out == [
        f"Dumping {d / LOG}",
        "Log starting offset: 0",
        batch_line(0, 1, 2, 0, 1005, b1, epoch=4),
        "| offset: 0 CreateTime: 1000 keySize: 2 valueSize: 2 sequence: -1 headerKeys: [h1,h2] key: k0 payload: v0",
        "| offset: 1 CreateTime: 1005 keySize: -1 valueSize: 2 sequence: -1 headerKeys: [] payload: v1",
        batch_line(2, 2, 1, len(b1), 1003, b2, epoch=4),
        "| offset: 2 CreateTime: 1003 keySize: 2 valueSize: -1 sequence: -1 headerKeys: [] key: k2",
    ]


def test_shallow_by_default_deep_without_payloads_and_skip_metadata(tmp_path, capsys):
    b1 = build_batch([Record(0, 7, b"k", b"v")])
    d = write_log(tmp_path, [b1])
    rc, out, _ = dump(capsys, "--files", str(d / LOG))
    assert rc == 0 and out[2:] == [batch_line(0, 0, 1, 0, 7, b1)]
    _, out, _ = dump(capsys, "--files", str(d / LOG), "--deep-iteration")
    assert out[3:] == ["| offset: 0 CreateTime: 7 keySize: 1 valueSize: 1 sequence: -1 headerKeys: []"]
    _, out, _ = dump(capsys, "--files", str(d / LOG), "--print-data-log", "--skip-record-metadata")
    assert out[3:] == ["| key: k payload: v"]


@pytest.mark.parametrize("codec, name", [(1, "gzip"), (2, "snappy"), (3, "lz4"), (4, "zstd")])
def test_compressed_batches(tmp_path, capsys, codec, name):
    b = build_batch([Record(i, 50 + i, f"key{i}".encode(), f"value{i}".encode() * 20) for i in range(3)],
                    compression=codec, producer_id=9, producer_epoch=2, base_sequence=5)
    d = write_log(tmp_path, [b])
    rc, out, _ = dump(capsys, "--files", str(d / LOG), "--print-data-log")
    assert rc == 0
    assert out[2] == batch_line(0, 2, 3, 0, 52, b, codec=name, seq=(5, 7), pid=9, pepoch=2)
    assert out[3:] == [
        f"| offset: {i} CreateTime: {50 + i} keySize: 4 valueSize: 120 sequence: {5 + i} headerKeys: []"
        f" key: key{i} payload: {'value' + str(i)}" + f"value{i}" * 19
        for i in range(3)
    ]


def test_transactional_batches_and_markers(tmp_path, capsys):
    data = build_batch([Record(0, 10, b"a", b"1"), Record(1, 11, b"b", b"2")], producer_id=42, producer_epoch=3,
                       base_sequence=0, is_transactional=True)
    commit = build_control_batch(ControlRecordType.COMMIT, producer_id=42, producer_epoch=3, coordinator_epoch=7,
                                 timestamp=12)
    abort = build_control_batch(ControlRecordType.ABORT, producer_id=42, producer_epoch=3, coordinator_epoch=8,
                                timestamp=13)
    d = write_log(tmp_path, [data, commit, abort])
    rc, out, err = dump(capsys, "--files", str(d / LOG), "--print-data-log")
    assert rc == 0 and err == []
    p1, p2 = len(data), len(data) + len(commit)
    assert out[2:] == [
        batch_line(0, 1, 2, 0, 11, data, seq=(0, 1), pid=42, pepoch=3, txn=True),
        "| offset: 0 CreateTime: 10 keySize: 1 valueSize: 1 sequence: 0 headerKeys: [] key: a payload: 1",
        "| offset: 1 CreateTime: 11 keySize: 1 valueSize: 1 sequence: 1 headerKeys: [] key: b payload: 2",
        batch_line(2, 2, 1, p1, 12, commit, pid=42, pepoch=3, txn=True, control=True),
        "| offset: 2 CreateTime: 12 keySize: 4 valueSize: 6 sequence: -1 headerKeys: []"
        " endTxnMarker: COMMIT coordinatorEpoch: 7",
        batch_line(3, 3, 1, p2, 13, abort, pid=42, pepoch=3, txn=True, control=True),
        "| offset: 3 CreateTime: 13 keySize: 4 valueSize: 6 sequence: -1 headerKeys: []"
        " endTxnMarker: ABORT coordinatorEpoch: 8",
    ]


def test_delayed_envelope_says_so_and_leaves_no_offset_gap(tmp_path, capsys):
    original = build_batch([Record(i, 100 + i, b"k", b"later") for i in range(3)])
    env = envelope_batch(original, [5000, 5000, 7000])
    after = build_batch([Record(0, 200, b"k", b"now")])
    d = write_log(tmp_path, [env, after])
    rc, out, err = dump(capsys, "--files", str(d / LOG), "--print-data-log")
    assert rc == 0
    assert out[2] == batch_line(0, 2, 1, 0, 102, env, control=True)
    assert out[3] == (f"| offset: 0 CreateTime: 100 keySize: 4 valueSize: {len(original) + 6 + 2 * 12}"
                      " sequence: -1 headerKeys: [] controlType: UNKNOWN(19780)"
                      " delayedUntil: 5000,7000 delayedOffsets: 0..2")
    assert out[5] == "| offset: 3 CreateTime: 200 keySize: 1 valueSize: 3 sequence: -1 headerKeys: [] key: k payload: now"
    assert err == []  # offsets 1 and 2 are the envelope's: no "Non-consecutive offsets"


def test_offsets_decoder_prints_kafkas_json(tmp_path, capsys):
    sub = cp.encode_subscription(cp.Subscription(topics=["foo"], owned_partitions={"foo": [0]}), 1)
    assignment = cp.encode_assignment(cp.Assignment(assigned_partitions={"foo": [0, 1]}, user_data=b"ud"), 1)
    group = orec.GroupMetadataValue("consumer", 10, "range", "m1", 99, [
        orec.MemberMetadata("m1", "inst", "client", "/127.0.0.1", 1000, 100, sub, assignment)])
    records = [
        Record(0, 1, orec.encode_key(orec.OffsetKey("g", "foo", 3)),
               orec.encode_value(orec.OffsetValue(17, 4, "meta", 1234))),
        Record(1, 1, orec.encode_key(orec.OffsetKey("g", "foo", 4)),
               orec.encode_offset_value(orec.OffsetValue(5, -1, "", 1234, 9999))),
        Record(2, 1, orec.encode_key(orec.GroupMetadataKey("g")), orec.encode_value(group)),
        Record(3, 1, orec.encode_key(orec.GroupMetadataKey("g")), None),
        Record(4, 1, struct.pack(">h", 7) + b"xx", b"?"),
        Record(5, 1, orec.encode_key(orec.OffsetKey("g", "foo", 5)), b"\x00\x03\x00"),
    ]
    d = write_log(tmp_path, [build_batch(records)])
    rc, out, _ = dump(capsys, "--files", str(d / LOG), "--offsets-decoder", "--skip-record-metadata")
    assert rc == 0
    assert out[3:] == [
        '| key: {"type":"1","data":{"group":"g","topic":"foo","partition":3}} payload: '
        '{"version":"3","data":{"offset":17,"leaderEpoch":4,"metadata":"meta","commitTimestamp":1234}}',
        '| key: {"type":"1","data":{"group":"g","topic":"foo","partition":4}} payload: '
        '{"version":"1","data":{"offset":5,"metadata":"","commitTimestamp":1234,"expireTimestamp":9999}}',
        '| key: {"type":"2","data":{"group":"g"}} payload: {"version":"3","data":{"protocolType":"consumer",'
        '"generation":10,"protocol":"range","leader":"m1","currentStateTimestamp":99,"members":[{"memberId":"m1",'
        '"groupInstanceId":"inst","clientId":"client","clientHost":"/127.0.0.1","rebalanceTimeout":1000,'
        '"sessionTimeout":100,"subscription":{"topics":["foo"],"userData":null,"ownedPartitions":'
        '[{"topic":"foo","partitions":[0]}]},"assignment":{"assignedPartitions":[{"topic":"foo","partitions":[0,1]}],'
        '"userData":"dWQ="}}]}}',
        '| key: {"type":"2","data":{"group":"g"}} payload: <DELETE>',
        "| key: Unknown record type 7 at offset 4, skipping.",
        "| key: Error at offset 5, skipping. truncated offset: need 8 bytes at offset 2, 1 left",
    ]


def test_offsets_decoder_keeps_the_bytes_of_other_protocols_and_fails_on_a_missing_key(tmp_path, capsys):
    group = orec.GroupMetadataValue("connect", 1, "default", None, 5, [
        orec.MemberMetadata("m", None, "c", "h", 10, 10, b"Subscription", b"Assignment")])
    records = [Record(0, 1, orec.encode_key(orec.GroupMetadataKey("w")), orec.encode_group_metadata_value(group, 2)),
               Record(1, 1, None, b"x")]
    d = write_log(tmp_path, [build_batch(records)])
    rc, out, _ = dump(capsys, "--files", str(d / LOG), "--offsets-decoder", "--skip-record-metadata")
    assert out[3] == ('| key: {"type":"2","data":{"group":"w"}} payload: {"version":"2","data":{"protocolType":'
                      '"connect","generation":1,"protocol":"default","leader":null,"currentStateTimestamp":5,'
                      '"members":[{"memberId":"m","clientId":"c","clientHost":"h","rebalanceTimeout":10,'
                      '"sessionTimeout":10,"subscription":"U3Vic2NyaXB0aW9u","assignment":"QXNzaWdubWVudA=="}]}}')
    assert out[4] == ("| key: Failed to decode message at offset 1 using offset topic decoder "
                      "(message had a missing key)")
    assert rc == 1  # Kafka's tool dies there


def test_transaction_log_decoder(tmp_path, capsys):
    ongoing = tlog.TransactionLogValue(1000, 2, 60000, TransactionState.ONGOING, (("a", (0, 1)), ("b", (3,))),
                                       555, 500)
    empty = tlog.TransactionLogValue(1001, 0, 60000, TransactionState.EMPTY, None, 556, -1)
    records = [Record(0, 1, tlog.encode_key("tx-1"), tlog.encode_value(ongoing)),
               Record(1, 1, tlog.encode_key("tx-2"), tlog.encode_value(empty)),
               Record(2, 1, tlog.encode_key("tx-3"), None),
               Record(3, 1, struct.pack(">h", 1) + b"zz", b"")]
    d = write_log(tmp_path, [build_batch(records)])
    rc, out, _ = dump(capsys, "--files", str(d / LOG), "--transaction-log-decoder")
    assert rc == 0
    assert [line.split(" headerKeys: [] ")[1] for line in out[3:]] == [
        "key: transaction_metadata::transactionalId=tx-1 payload: producerId:1000,producerEpoch:2,state=Ongoing,"
        "partitions=[a-0,a-1,b-3],txnLastUpdateTimestamp=555,txnTimeoutMs=60000",
        "key: transaction_metadata::transactionalId=tx-2 payload: producerId:1001,producerEpoch:0,state=Empty,"
        "partitions=[],txnLastUpdateTimestamp=556,txnTimeoutMs=60000",
        "key: transaction_metadata::transactionalId=tx-3 payload: <DELETE>",
        "key: unknown::version=1",
    ]


def test_decoder_classes(tmp_path, capsys):
    d = write_log(tmp_path, [build_batch([Record(0, 1, struct.pack(">i", -5), struct.pack(">q", 2**40)),
                                          Record(1, 1, b"ab", b"")])])
    rc, out, _ = dump(capsys, "--files", str(d / LOG), "--skip-record-metadata",
                      "--key-decoder-class", "org.apache.kafka.tools.api.IntegerDecoder",
                      "--value-decoder-class", "kafka.serializer.LongDecoder")
    assert out[3] == f"| key: -5 payload: {2**40}"
    assert out[4].startswith("| key: Error at offset 1, skipping. java.nio.BufferUnderflowException")
    assert rc == 1
    rc, _, err = dump(capsys, "--files", str(d / LOG), "--value-decoder-class", "com.example.AvroDecoder")
    assert rc == 1
    assert err[0].startswith("--value-decoder-class com.example.AvroDecoder is not supported")


def test_non_consecutive_offsets_are_reported_newest_first(tmp_path, capsys):
    batches = [build_batch([Record(o, 1, b"k", b"v")], base_offset=o) for o in (0, 1, 5, 9)]
    d = write_log(tmp_path, batches, follower=True)  # a compacted leader's batches: gaps
    rc, _, err = dump(capsys, "--files", str(d / LOG), "--deep-iteration")
    assert rc == 0
    assert err == [f"Non-consecutive offsets in {(d / LOG).absolute()}", "  5 is followed by 9", "  1 is followed by 5"]


def test_max_bytes_reads_only_the_batches_within(tmp_path, capsys):
    batches = [build_batch([Record(0, i, b"k", b"v")]) for i in range(3)]
    d = write_log(tmp_path, batches)
    _, out, _ = dump(capsys, "--files", str(d / LOG), "--max-bytes", str(2 * len(batches[0]) + 5))
    assert [line.split()[1] for line in out[2:]] == ["0", "1"]  # no "Found … invalid bytes": --max-bytes cut it


# --------------------------------------------------------------------------- damage


def test_truncated_tail_prints_every_whole_batch_then_the_invalid_bytes(tmp_path, capsys):
    batches = [build_batch([Record(0, i, b"k", f"v{i}".encode())]) for i in range(3)]
    d = write_log(tmp_path, batches)
    size = (d / LOG).stat().st_size
    os.truncate(d / LOG, size - 9)
    rc, out, err = dump(capsys, "--files", str(d / LOG), "--print-data-log")
    assert rc == 0 and err == []
    assert [line.split(" payload: ")[1] for line in out if line.startswith("| ")] == ["v0", "v1"]
    assert out[-1] == f"Found {len(batches[2]) - 9} invalid bytes at the end of {LOG}"


def test_flipped_byte_in_a_value_is_a_crc_mismatch_only(tmp_path, capsys):
    batches = [build_batch([Record(0, i, b"k", b"value-%d" % i)]) for i in range(3)]
    d = write_log(tmp_path, batches)
    data = bytearray((d / LOG).read_bytes())
    at = len(batches[0]) + len(batches[1]) - 2  # the last byte of batch 1's value
    data[at] ^= 0x01
    (d / LOG).write_bytes(bytes(data))
    rc, out, err = dump(capsys, "--files", str(d / LOG), "--print-data-log")
    assert rc == 0 and err == []
    assert out[4].endswith(" isvalid: false") and out[2].endswith(" isvalid: true") and out[6].endswith(" isvalid: true")
    assert out[5].endswith("payload: value-0")  # '1' ^ 1 == '0': the flipped byte, shown as read


def test_flipped_byte_in_a_length_names_the_position(tmp_path, capsys):
    batches = [build_batch([Record(0, i, b"k", b"v")]) for i in range(3)]
    d = write_log(tmp_path, batches)
    data = bytearray((d / LOG).read_bytes())
    at = len(batches[0])
    data[at + 8 : at + 12] = struct.pack(">i", 3)  # batch 1's batchLength
    (d / LOG).write_bytes(bytes(data))
    rc, out, err = dump(capsys, "--files", str(d / LOG), "--print-data-log")
    assert rc == 1 and "Traceback" not in "\n".join(err)
    assert out[2].startswith("baseOffset: 0 ")
    assert out[-1] == (f"Found invalid data at position {at} of {LOG}: record size 3 is smaller than the minimum "
                       "record overhead (14)")


def test_records_that_do_not_decode_name_their_batch_and_the_walk_goes_on(tmp_path, capsys):
    batches = [build_batch([Record(0, i, b"k", b"v")]) for i in range(3)]
    d = write_log(tmp_path, batches)
    data = bytearray((d / LOG).read_bytes())
    at = len(batches[0])
    data[at + 61] = 0x7E  # batch 1's first record length: 63, more than the batch holds
    (d / LOG).write_bytes(bytes(data))
    rc, out, _ = dump(capsys, "--files", str(d / LOG), "--print-data-log")
    assert rc == 1
    assert out[4].endswith("isvalid: false")
    assert out[5].startswith(f"Found invalid data at position {at} of {LOG}: record length 63")
    assert out[6].startswith("baseOffset: 2 ") and out[7].endswith("payload: v")


# --------------------------------------------------------------------------- indexes


def indexed_log(tmp_path: Path) -> tuple[Path, list[bytes]]:
    batches = [build_batch([Record(0, 100 * (i + 1), b"k", b"v"), Record(1, 100 * (i + 1) + 5, b"k", b"w")])
               for i in range(4)]
    return write_log(tmp_path, batches), batches


def test_index_and_timeindex_dumps(tmp_path, capsys):
    d, batches = indexed_log(tmp_path)
    size = len(batches[0])
    rc, out, err = dump(capsys, "--files", f"{d / INDEX},{d / TIMEINDEX}")
    assert rc == 0 and err == []
    assert out == [
        f"Dumping {d / INDEX}",
        f"offset: 3 position: {size}", f"offset: 5 position: {2 * size}", f"offset: 7 position: {3 * size}",
        f"Dumping {d / TIMEINDEX}",
        "timestamp: 205 offset: 3", "timestamp: 305 offset: 5", "timestamp: 405 offset: 7",
    ]
    rc, out, _ = dump(capsys, "--files", f"{d / INDEX},{d / TIMEINDEX}", "--verify-index-only")
    assert rc == 0 and out == [f"Dumping {d / INDEX}", f"Dumping {d / TIMEINDEX}"]
    rc, out, _ = dump(capsys, "--files", f"{d / INDEX},{d / TIMEINDEX}", "--index-sanity-check")
    assert rc == 0
    assert out[1] == f"{d / INDEX} passed sanity check." and out[3] == f"{d / TIMEINDEX} passed sanity check."


def test_verify_index_only_reports_mismatches(tmp_path, capsys):
    d, batches = indexed_log(tmp_path)
    data = bytearray((d / INDEX).read_bytes())
    data[8:16] = struct.pack(">ii", 5, len(batches[0]))  # offset 5 → the batch of 2..3
    (d / INDEX).write_bytes(bytes(data))
    rc, out, err = dump(capsys, "--files", str(d / INDEX), "--verify-index-only")
    assert rc == 0 and out == [f"Dumping {d / INDEX}"]
    assert err == [f"Mismatches in :{(d / INDEX).absolute()}", "  Index offset: 5, log offset: 3"]
    rc, _, err = dump(capsys, "--files", str(d / INDEX), "--index-sanity-check")
    assert rc == 1
    assert err == [f"{d / INDEX} failed sanity check: entry (5, {len(batches[0])}) out of order or past the log"]


def test_index_entry_past_the_log_is_named(tmp_path, capsys):
    d, _ = indexed_log(tmp_path)
    with open(d / INDEX, "ab") as f:
        f.write(struct.pack(">ii", 9, 10_000))
    rc, out, _ = dump(capsys, "--files", str(d / INDEX))
    assert rc == 1
    assert out[-2] == (f"Found invalid index entry offset: 9 position: 10000 in {INDEX}: position 10000 is past "
                       f"the end of the log ({(d / LOG).stat().st_size} bytes)")
    assert out[-1] == "offset: 9 position: 10000"


def test_timeindex_errors(tmp_path, capsys):
    d, _ = indexed_log(tmp_path)
    data = bytearray((d / TIMEINDEX).read_bytes())
    data[12:24] = struct.pack(">qi", 150, 5)  # a wrong timestamp, and lower than the one before
    with open(d / TIMEINDEX, "wb") as f:
        f.write(bytes(data) + struct.pack(">qi", 999, 4))  # offset 4 is not a batch's last offset
    rc, out, err = dump(capsys, "--files", str(d / TIMEINDEX), "--verify-index-only")
    name = (d / TIMEINDEX).absolute()
    assert rc == 0 and out == [f"Dumping {d / TIMEINDEX}"]
    assert err == [
        f"Found timestamp mismatch in :{name}", "  Index timestamp: 150, log timestamp: 305",
        f"Found out of order timestamp in :{name}", "  Index timestamp: 150, Previously indexed timestamp: 205",
        "The following indexed offsets are not found in the log.", "Indexed offset: 4, found log offset: 5",
    ]
    rc, _, err = dump(capsys, "--files", str(d / TIMEINDEX), "--index-sanity-check")
    assert rc == 1 and err[0].startswith(f"{d / TIMEINDEX} failed sanity check: entry (150, 5) out of order")


def test_empty_index_and_torn_index_tail(tmp_path, capsys):
    d = write_log(tmp_path, [build_batch([Record(0, 1, b"k", b"v")])])
    rc, out, _ = dump(capsys, "--files", str(d / INDEX))
    assert rc == 0 and out == [f"Dumping {d / INDEX}", f"{d / INDEX} is empty."]
    d2, batches = indexed_log(tmp_path / "b")
    with open(d2 / INDEX, "ab") as f:
        f.write(b"\x00\x00\x00")
    rc, out, _ = dump(capsys, "--files", str(d2 / INDEX))
    assert rc == 0 and out[-1] == f"Found 3 invalid bytes at the end of {INDEX}"


def test_txnindex_snapshot_and_epoch_checkpoint(tmp_path, capsys):
    data = build_batch([Record(0, 1, b"k", b"v")], producer_id=8, producer_epoch=0, base_sequence=0,
                       is_transactional=True)
    abort = build_control_batch(ControlRecordType.ABORT, producer_id=8, producer_epoch=0, timestamp=2)
    log = Log.open(tmp_path / "t-0", LogConfig(), lambda: 1_000_000)
    log.append_as_leader(data, 0)
    log.append_as_leader(abort, 0)
    log.append_aborted_txn(AbortedTxn(8, 0, 1, 2))
    log.flush()
    log.close()
    d = tmp_path / "t-0"
    entry = ProducerStateEntry(8, 0, coordinator_epoch=3, last_timestamp=2, current_txn_first_offset=None)
    entry.batches.append(BatchMetadata(5, 9, 10, 14, 2))
    open_txn = ProducerStateEntry(11, 1, coordinator_epoch=-1, last_timestamp=4, current_txn_first_offset=20)
    (d / "00000000000000000002.snapshot").write_bytes(encode_snapshot([entry, open_txn]))
    (d / "leader-epoch-checkpoint").write_text("0\n2\n0 0\n3 17\n")
    files = [d / "00000000000000000000.txnindex", d / "00000000000000000002.snapshot", d / "leader-epoch-checkpoint"]
    rc, out, err = dump(capsys, "--files", ",".join(map(str, files)))
    assert rc == 0 and err == []
    assert out == [
        f"Dumping {files[0]}",
        "version: 0 producerId: 8 firstOffset: 0 lastOffset: 1 lastStableOffset: 2",
        f"Dumping {files[1]}",
        "producerId: 8 producerEpoch: 0 coordinatorEpoch: 3 currentTxnFirstOffset: OptionalLong.empty "
        "lastTimestamp: 2 firstSequence: 5 lastSequence: 9 lastOffset: 14 offsetDelta: 4 timestamp: 2",
        "producerId: 11 producerEpoch: 1 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong[20] "
        "lastTimestamp: 4 ",
        f"Dumping {files[2]}",
        "epoch: 0 startOffset: 0",
        "epoch: 3 startOffset: 17",
    ]


# --------------------------------------------------------------------------- usage and unreadable files


def test_usage_errors_and_unknown_files(tmp_path, capsys):
    rc, _, err = dump(capsys)
    assert rc == 1 and err == ['Missing required argument "[files]"']
    rc, _, err = dump(capsys, "--files", "x.log", "--cluster-metadata-decoder")
    assert rc == 1 and "not supported" in err[0]
    (tmp_path / "partition.metadata").write_text("version: 0\n")
    rc, out, err = dump(capsys, "--files", str(tmp_path / "partition.metadata"))
    assert rc == 0 and out == [f"Dumping {tmp_path / 'partition.metadata'}"]
    assert err == [f"Ignoring unknown file {tmp_path / 'partition.metadata'}"]


def test_missing_file_is_one_clear_line(tmp_path, capsys):
    missing = tmp_path / "00000000000000000042.log"
    d = write_log(tmp_path, [build_batch([Record(0, 1, b"k", b"v")])])
    shutil.copy(d / LOG, tmp_path / "00000000000000000000.log")
    rc, out, err = dump(capsys, "--files", f"{missing},{tmp_path / LOG}")
    assert rc == 1
    assert out[:2] == [f"Dumping {missing}", "Log starting offset: 42"]
    assert err == [f"Cannot read {missing}: No such file or directory"]
    assert out[2] == f"Dumping {tmp_path / LOG}" and out[4].startswith("baseOffset: 0 ")


def test_no_flipped_byte_anywhere_makes_a_traceback(tmp_path, capsys):
    original = build_batch([Record(i, 1, b"k", b"x" * 30) for i in range(2)])
    batches = [
        build_batch([Record(0, 1, b"k", b"plain", (("h", b"1"),))]),
        build_batch([Record(i, 2, b"k", b"gz" * 20) for i in range(3)], compression=1),
        build_batch([Record(i, 3, b"k", b"zs" * 20) for i in range(3)], compression=4),
        build_control_batch(ControlRecordType.COMMIT, producer_id=1, producer_epoch=0, timestamp=4),
        envelope_batch(original, [9, 9]),
    ]
    d = write_log(tmp_path, batches)
    good = (d / LOG).read_bytes()
    rng = random.Random(20240601)
    for _ in range(300):
        data = bytearray(good)
        at = rng.randrange(len(data))
        data[at] ^= 1 << rng.randrange(8)
        (d / LOG).write_bytes(bytes(data))
        rc, out, err = dump(capsys, "--files", f"{d / LOG},{d / INDEX},{d / TIMEINDEX}", "--print-data-log")
        assert rc in (0, 1), at
        assert out[0] == f"Dumping {d / LOG}" and not any("Traceback" in line for line in err)


def test_a_big_dump_shows_its_progress_on_stderr_and_a_small_one_stays_kafkas(tmp_path, capsys, monkeypatch):
    from mafka.cli import dump_log

    b1 = build_batch([Record(0, 1000, b"k0", b"v0")])
    b2 = build_batch([Record(0, 1001, b"k1", b"v1")])
    d = write_log(tmp_path, [b1, b2])
    monkeypatch.setenv("MAFKA_PROGRESS", "plain")
    rc, out, err = dump(capsys, "--files", str(d / LOG))
    assert rc == 0 and err == []  # below the threshold: Kafka's stderr, nothing more
    monkeypatch.setattr(dump_log, "PROGRESS_FROM_BYTES", 1)
    rc, big_out, err = dump(capsys, "--files", str(d / LOG))
    assert rc == 0 and big_out == out  # stdout untouched
    size = len(b1) + len(b2)
    assert len(err) == 1 and err[0].startswith(f"dump-log: {size}/{size} bytes of log read (100%)"), err
