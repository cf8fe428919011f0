"""The dump engine: a segment is read a batch at a time, and the closing reports are Kafka's."""

from __future__ import annotations

import io
import os

from mafka.log import dump
from mafka.log.config import LogConfig
from mafka.log.dump import Dumper, DumpOptions, Findings
from mafka.log.log import Log
from mafka.wire.batch import BatchHeader
from mafka.wire.records import Record, build_batch


def test_a_segment_is_read_one_batch_at_a_time(tmp_path, monkeypatch):
    batch = build_batch([Record(i, i, b"k", b"v" * 200) for i in range(5)])
    log = Log.open(tmp_path / "t-0", LogConfig(), lambda: 0)
    for _ in range(300):
        log.append_as_leader(batch, 0)
    log.close()
    segment = tmp_path / "t-0" / "00000000000000000000.log"
    assert segment.stat().st_size == 300 * len(batch)
    reads: list[int] = []
    real_pread = os.pread

    def pread(fd: int, length: int, offset: int) -> bytes:
        reads.append(length)
        return real_pread(fd, length, offset)

    monkeypatch.setattr(dump.os, "pread", pread)
    out = io.StringIO()
    findings = Findings()
    Dumper(DumpOptions(print_data_log=True), out, io.StringIO(), findings).dump_log(segment)
    lines = out.getvalue().splitlines()
    assert len(lines) == 1 + 300 * 6 and not findings.failed
    assert max(reads) == len(batch)  # never more than one batch in memory


def test_findings_report_in_kafkas_order():
    findings = Findings()
    findings.index_mismatches["/a.index"] = [(1, 2), (3, 4)]
    findings.time_mismatches["/a.timeindex"] = [(10, 11), (12, 13)]
    findings.out_of_order["/a.timeindex"] = [(5, 6)]
    findings.not_found["/a.timeindex"] = [(7, -1)]
    findings.non_consecutive["/a.log"] = [(0, 2), (2, 5)]
    assert findings.report() == [
        "Mismatches in :/a.index", "  Index offset: 3, log offset: 4", "  Index offset: 1, log offset: 2",
        "Found timestamp mismatch in :/a.timeindex", "  Index timestamp: 10, log timestamp: 11",
        "  Index timestamp: 12, log timestamp: 13",
        "Found out of order timestamp in :/a.timeindex", "  Index timestamp: 5, Previously indexed timestamp: 6",
        "The following indexed offsets are not found in the log.", "Indexed offset: 7, found log offset: -1",
        "Non-consecutive offsets in /a.log", "  2 is followed by 5", "  0 is followed by 2",
    ]


def test_log_append_time_and_delete_horizon_in_the_batch_line(tmp_path):
    log = Log.open(tmp_path / "t-0", LogConfig(message_timestamp_type="LogAppendTime"), lambda: 777)
    log.append_as_leader(build_batch([Record(0, 5, b"k", b"v")]), 0)
    log.close()
    data = bytearray((tmp_path / "t-0" / "00000000000000000000.log").read_bytes())
    out = io.StringIO()
    Dumper(DumpOptions(deep_iteration=True), out, io.StringIO()).dump_log(tmp_path / "t-0" / "00000000000000000000.log")
    lines = out.getvalue().splitlines()
    assert " LogAppendTime: 777 " in lines[1] and "deleteHorizonMs: OptionalLong.empty" in lines[1]
    assert lines[2] == "| offset: 0 LogAppendTime: 777 keySize: 1 valueSize: 1 sequence: -1 headerKeys: []"
    data[22] |= 0x40  # the delete-horizon bit: baseTimestamp is the horizon
    header = BatchHeader(bytes(data))
    assert dump.batch_line(header, 0, False).count(f"deleteHorizonMs: OptionalLong[{header.base_timestamp}]") == 1


def test_a_length_claiming_most_of_the_file_is_never_read_whole(tmp_path, monkeypatch):
    log = Log.open(tmp_path / "t-0", LogConfig(), lambda: 0)
    log.append_as_leader(build_batch([Record(0, 1, b"k", b"v")]), 0)
    log.close()
    segment = tmp_path / "t-0" / "00000000000000000000.log"
    claimed = 100 * 1024 * 1024
    with open(segment, "r+b") as f:
        f.seek(8)
        f.write(claimed.to_bytes(4, "big"))  # a damaged batchLength: 100 MiB
    os.truncate(segment, claimed + 12)  # sparse: the "batch" fits the file
    with open(segment, "rb") as f:
        stored_crc = BatchHeader(f.read(61)).crc
    reads: list[int] = []
    real_pread = os.pread

    def pread(fd: int, length: int, offset: int) -> bytes:
        reads.append(length)
        return real_pread(fd, length, offset)

    monkeypatch.setattr(dump.os, "pread", pread)
    for deep in (False, True):
        out = io.StringIO()
        findings = Findings()
        Dumper(DumpOptions(deep_iteration=deep), out, io.StringIO(), findings).dump_log(segment)
        lines = out.getvalue().splitlines()
        assert lines[1].endswith(f"size: {claimed + 12} magic: 2 compresscodec: none crc: {stored_crc} isvalid: false")
        if deep:
            assert lines[2] == (f"Found invalid data at position 0 of {segment.name}: a record batch of "
                                f"{claimed + 12} bytes is larger than the {dump.MAX_DECODED_BATCH} bytes a dump decodes")
            assert findings.failed
        else:
            assert lines[2:] == [] and not findings.failed
    assert max(reads) <= 1 << 20
