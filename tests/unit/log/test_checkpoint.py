"""Checkpoint files and meta.properties (mafka.log.checkpoint): Kafka 2.8's exact formats."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mafka.log import checkpoint as cp
from mafka.log.checkpoint import (
    CLEANER_OFFSET_CHECKPOINT,
    LEADER_EPOCH_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    META_PROPERTIES,
    RECOVERY_POINT_OFFSET_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    BrokerMetadata,
    CorruptCheckpointError,
    EpochEntry,
    InconsistentBrokerMetadataError,
    LeaderEpochCheckpointFile,
    OffsetCheckpointFile,
    atomic_write,
    check_broker_metadata,
    fsync_dir,
    read_broker_metadata,
    read_meta_properties,
    write_meta_properties,
)
from tests.hypothesis_budget import examples

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


def test_file_names_are_kafkas() -> None:
    assert RECOVERY_POINT_OFFSET_CHECKPOINT == "recovery-point-offset-checkpoint"
    assert REPLICATION_OFFSET_CHECKPOINT == "replication-offset-checkpoint"
    assert LOG_START_OFFSET_CHECKPOINT == "log-start-offset-checkpoint"
    assert CLEANER_OFFSET_CHECKPOINT == "cleaner-offset-checkpoint"
    assert LEADER_EPOCH_CHECKPOINT == "leader-epoch-checkpoint"
    assert META_PROPERTIES == "meta.properties"


# --------------------------------------------------------------------------- atomic_write


def test_atomic_write_replaces_and_leaves_no_tmp(tmp_path: Path) -> None:
    target = tmp_path / "f"
    atomic_write(target, b"old")
    atomic_write(target, b"new contents")
    assert target.read_bytes() == b"new contents"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]


def test_atomic_write_fsyncs_file_and_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[str] = []
    real_fsync = os.fsync

    def spy(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(cp.os, "fsync", spy)
    atomic_write(tmp_path / "f", b"x")
    # The data is synced under its temporary name, before the rename; then the directory.
    base = os.path.realpath(tmp_path)
    assert synced == [os.path.join(base, "f.tmp"), base]

    synced.clear()
    atomic_write(tmp_path / "g", b"x", fsync=False)
    assert synced == []
    assert (tmp_path / "g").read_bytes() == b"x"


def test_atomic_write_failure_keeps_old_file_and_removes_tmp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "f"
    target.write_bytes(b"old")

    def broken_replace(src: object, dst: object) -> None:
        raise OSError("disk on fire")

    monkeypatch.setattr(cp.os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk on fire"):
        atomic_write(target, b"new")
    assert target.read_bytes() == b"old"
    assert not (tmp_path / "f.tmp").exists()


def test_atomic_write_overwrites_a_stale_tmp(tmp_path: Path) -> None:
    (tmp_path / "f.tmp").write_bytes(b"a much longer stale leftover from a crash")
    atomic_write(tmp_path / "f", b"short")
    assert (tmp_path / "f").read_bytes() == b"short"
    assert not (tmp_path / "f.tmp").exists()


def test_fsync_dir(tmp_path: Path) -> None:
    fsync_dir(tmp_path)  # must not raise on a real directory
    with pytest.raises(FileNotFoundError):
        fsync_dir(tmp_path / "missing")


# --------------------------------------------------------------------------- offset checkpoints


def test_offset_checkpoint_exact_bytes(tmp_path: Path) -> None:
    path = tmp_path / REPLICATION_OFFSET_CHECKPOINT
    ckpt = OffsetCheckpointFile(path)
    ckpt.write({("topic", 1): 7, ("topic", 0): 5})
    # Version, count, entries; every line \n-terminated, including the last (BufferedWriter.newLine).
    assert path.read_bytes() == b"0\n2\ntopic 0 5\ntopic 1 7\n"
    assert ckpt.read() == {("topic", 0): 5, ("topic", 1): 7}


def test_offset_checkpoint_empty_mapping(tmp_path: Path) -> None:
    ckpt = OffsetCheckpointFile(tmp_path / "c")
    ckpt.write({})
    assert (tmp_path / "c").read_bytes() == b"0\n0\n"
    assert ckpt.read() == {}


def test_offset_checkpoint_overwrite(tmp_path: Path) -> None:
    ckpt = OffsetCheckpointFile(tmp_path / "c")
    ckpt.write({("a", 0): 1, ("b", 0): 2})
    ckpt.write({("a", 0): 3})
    assert ckpt.read() == {("a", 0): 3}


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, {}),  # missing file
        (b"", {}),  # Kafka's constructor creates the file empty
        (b"0\n", {}),  # Kafka's reader stops at a missing count line
        # Kafka's own doc-comment example separates fields by two spaces.
        (b"0\n2\ntp1  0  1\ntp1  1  2\n", {("tp1", 0): 1, ("tp1", 1): 2}),
        (b"0\n1\nt\t3\t9  \n", {("t", 3): 9}),  # tabs; trailing blanks are dropped by split
        (b"0\r\n1\r\nt 0 5\r\n", {("t", 0): 5}),  # readLine accepts \r\n
        (b"0\n1\nt 0 5", {("t", 0): 5}),  # no final newline
        (b"0\n2\nt 0 5\nt 0 6\n", {("t", 0): 6}),  # duplicate key: last wins (toMap)
        (b"0\n1\nt -1 -1\n", {("t", -1): -1}),
        (f"0\n1\nt {INT32_MAX} {INT64_MAX}\n".encode(), {("t", INT32_MAX): INT64_MAX}),
        ("0\n1\ntöpic 0 +5\n".encode(), {("töpic", 0): 5}),  # UTF-8; Java's parseLong takes '+'
    ],
)
def test_offset_checkpoint_reads_what_kafka_reads(
    tmp_path: Path, content: bytes | None, expected: dict[tuple[str, int], int]
) -> None:
    path = tmp_path / "c"
    if content is not None:
        path.write_bytes(content)
    assert OffsetCheckpointFile(path).read() == expected


@pytest.mark.parametrize(
    ("content", "line_number"),
    [
        (b"1\n0\n", 1),  # unknown version
        (b"-0x\n0\n", 1),
        (b"version\n", 1),
        (b"0\nabc\n", 2),  # bad count
        (b"0\n-1\n", 2),
        (b"0\n2\nt 0 5\n", None),  # fewer entries than counted
        (b"0\n0\nt 0 5\n", None),  # more entries than counted
        (b"0\n1\nt 0\n", 3),  # too few fields
        (b"0\n1\nt 0 5 6\n", 3),  # too many fields
        (b"0\n1\n t 0 5\n", 3),  # leading blank: Java's split yields an empty first field
        (b"0\n1\nt x 5\n", 3),
        (b"0\n1\nt 0 5.5\n", 3),
        (b"0\n1\nt 0 5_0\n", 3),  # Python's int() would take this; Java's does not
        ("0\n1\nt 0 \u0665\n".encode(), 3),  # a non-ASCII digit
        (b"0\n2\nt 0 5\n\nt 1 6\n", 4),  # blank line
        (f"0\n1\nt {INT32_MAX + 1} 5\n".encode(), 3),  # partition is an int32
        (f"0\n1\nt 0 {INT64_MAX + 1}\n".encode(), 3),  # offset is an int64
        (b"0\n1\n\xff\xfe 0 5\n", None),  # not UTF-8
    ],
)
def test_offset_checkpoint_rejects_corruption(
    tmp_path: Path, content: bytes, line_number: int | None
) -> None:
    path = tmp_path / REPLICATION_OFFSET_CHECKPOINT
    path.write_bytes(content)
    with pytest.raises(CorruptCheckpointError) as info:
        OffsetCheckpointFile(path).read()
    assert isinstance(info.value, ValueError)
    assert info.value.path == path
    assert info.value.line_number == line_number
    assert str(path) in str(info.value)
    if line_number is not None:
        assert f"line {line_number}" in str(info.value)


@pytest.mark.parametrize(
    "entries",
    [
        {("has space", 0): 1},
        {("tab\there", 0): 1},
        {("", 0): 1},
        {("t", INT32_MAX + 1): 1},
        {("t", 0): INT64_MAX + 1},
    ],
)
def test_offset_checkpoint_write_rejects_unstorable_entries(
    tmp_path: Path, entries: dict[tuple[str, int], int]
) -> None:
    path = tmp_path / "c"
    ckpt = OffsetCheckpointFile(path)
    ckpt.write({("ok", 0): 1})
    with pytest.raises(ValueError):
        ckpt.write(entries)
    assert ckpt.read() == {("ok", 0): 1}  # untouched
    assert not (tmp_path / "c.tmp").exists()


def test_offset_checkpoint_ignores_tmp_leftover(tmp_path: Path) -> None:
    path = tmp_path / RECOVERY_POINT_OFFSET_CHECKPOINT
    ckpt = OffsetCheckpointFile(path)
    # A crash between creating the .tmp and the rename: only the .tmp exists, half written.
    (tmp_path / f"{RECOVERY_POINT_OFFSET_CHECKPOINT}.tmp").write_bytes(b"0\n3\nt 0 ")
    assert ckpt.read() == {}
    ckpt.write({("t", 0): 9})
    (tmp_path / f"{RECOVERY_POINT_OFFSET_CHECKPOINT}.tmp").write_bytes(b"garbage\xff")
    assert ckpt.read() == {("t", 0): 9}
    ckpt.write({("t", 0): 10})
    assert ckpt.read() == {("t", 0): 10}
    assert not (tmp_path / f"{RECOVERY_POINT_OFFSET_CHECKPOINT}.tmp").exists()


_topics = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-",
    min_size=1,
    max_size=20,
)
_offset_maps = st.dictionaries(
    st.tuples(_topics, st.integers(-(2**31), INT32_MAX)),
    st.integers(-(2**63), INT64_MAX),
    max_size=30,
)


@settings(max_examples=examples(150), deadline=None)
@given(_offset_maps)
def test_offset_checkpoint_round_trip(entries: dict[tuple[str, int], int]) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "c"
        OffsetCheckpointFile(path, fsync=False).write(entries)
        assert OffsetCheckpointFile(path).read() == entries
        lines = path.read_text().split("\n")
        assert lines[:2] == ["0", str(len(entries))]
        assert lines[-1] == ""  # trailing newline
        assert len(lines) == len(entries) + 3


# --------------------------------------------------------------------------- leader-epoch checkpoints


def test_leader_epoch_checkpoint_exact_bytes(tmp_path: Path) -> None:
    ckpt = LeaderEpochCheckpointFile.in_dir(tmp_path)
    assert ckpt.path == tmp_path / "leader-epoch-checkpoint"
    ckpt.write([EpochEntry(0, 0), EpochEntry(1, 4), EpochEntry(5, 6)])
    assert ckpt.path.read_bytes() == b"0\n3\n0 0\n1 4\n5 6\n"
    assert ckpt.read() == [EpochEntry(0, 0), EpochEntry(1, 4), EpochEntry(5, 6)]


def test_leader_epoch_checkpoint_reads_kafka_doc_example(tmp_path: Path) -> None:
    ckpt = LeaderEpochCheckpointFile(tmp_path / LEADER_EPOCH_CHECKPOINT)
    assert ckpt.read() == []  # missing
    ckpt.path.write_bytes(b"0\n2\n0  1\n1  2\n")
    entries = ckpt.read()
    assert entries == [(0, 1), (1, 2)]
    assert entries[1].epoch == 1 and entries[1].start_offset == 2


def test_leader_epoch_checkpoint_empty(tmp_path: Path) -> None:
    ckpt = LeaderEpochCheckpointFile(tmp_path / LEADER_EPOCH_CHECKPOINT)
    ckpt.write([])
    assert ckpt.path.read_bytes() == b"0\n0\n"
    assert ckpt.read() == []


@pytest.mark.parametrize(
    ("content", "line_number"),
    [
        (b"1\n1\n0 0\n", 1),
        (b"0\n1\n0 0 0\n", 3),  # an offset-checkpoint line is not an epoch line
        (b"0\n1\n0\n", 3),
        (f"0\n1\n{INT32_MAX + 1} 0\n".encode(), 3),  # epoch is an int32
        (b"0\n1\nzero 0\n", 3),
        (b"0\n2\n0 0\n", None),
    ],
)
def test_leader_epoch_checkpoint_rejects_corruption(
    tmp_path: Path, content: bytes, line_number: int | None
) -> None:
    ckpt = LeaderEpochCheckpointFile(tmp_path / LEADER_EPOCH_CHECKPOINT)
    ckpt.path.write_bytes(content)
    with pytest.raises(CorruptCheckpointError) as info:
        ckpt.read()
    assert info.value.line_number == line_number
    assert LEADER_EPOCH_CHECKPOINT in str(info.value)


def test_leader_epoch_checkpoint_write_validates(tmp_path: Path) -> None:
    ckpt = LeaderEpochCheckpointFile(tmp_path / LEADER_EPOCH_CHECKPOINT)
    with pytest.raises(ValueError):
        ckpt.write([EpochEntry(INT32_MAX + 1, 0)])
    assert not ckpt.path.exists()


@settings(max_examples=examples(100), deadline=None)
@given(
    st.lists(
        st.builds(EpochEntry, st.integers(-(2**31), INT32_MAX), st.integers(-(2**63), INT64_MAX)),
        max_size=20,
    )
)
def test_leader_epoch_checkpoint_round_trip(entries: list[EpochEntry]) -> None:
    with tempfile.TemporaryDirectory() as d:
        ckpt = LeaderEpochCheckpointFile(Path(d) / LEADER_EPOCH_CHECKPOINT, fsync=False)
        ckpt.write(entries)
        assert ckpt.read() == entries  # order preserved, no sorting or dedup


# --------------------------------------------------------------------------- meta.properties


def test_meta_properties_round_trip(tmp_path: Path) -> None:
    assert read_meta_properties(tmp_path) is None
    assert read_broker_metadata(tmp_path) is None
    write_meta_properties(tmp_path, 3, "Xy3b_8lDQ0-9hZ1uS3q1bw")
    assert read_meta_properties(tmp_path) == {
        "version": "0",
        "broker.id": "3",
        "cluster.id": "Xy3b_8lDQ0-9hZ1uS3q1bw",
    }
    assert read_broker_metadata(tmp_path) == BrokerMetadata(3, "Xy3b_8lDQ0-9hZ1uS3q1bw", 0)
    assert not (tmp_path / "meta.properties.tmp").exists()


def test_meta_properties_layout_matches_java_properties_store(tmp_path: Path) -> None:
    write_meta_properties(tmp_path, 1, "abc")
    lines = (tmp_path / META_PROPERTIES).read_text("latin-1").split("\n")
    # Properties.store(out, ""): "#", then "#" + Date.toString(), then key=value lines.
    assert lines[0] == "#"
    assert re.fullmatch(
        r"#(Mon|Tue|Wed|Thu|Fri|Sat|Sun) [A-Z][a-z]{2} \d\d \d\d:\d\d:\d\d UTC \d{4}", lines[1]
    )
    assert sorted(lines[2:-1]) == ["broker.id=1", "cluster.id=abc", "version=0"]
    assert lines[-1] == ""


def test_meta_properties_reads_a_kafka_written_file(tmp_path: Path) -> None:
    (tmp_path / META_PROPERTIES).write_bytes(
        b"#\n#Wed Jan 10 12:00:00 UTC 2024\ncluster.id=Xy3b_8lDQ0-9hZ1uS3q1bw\nversion=0\nbroker.id=1\n"
    )
    assert read_broker_metadata(tmp_path) == BrokerMetadata(1, "Xy3b_8lDQ0-9hZ1uS3q1bw", 0)


def test_meta_properties_java_syntax(tmp_path: Path) -> None:
    (tmp_path / META_PROPERTIES).write_bytes(
        b"! a bang comment\n"
        b"   # an indented comment\n"
        b"\n"
        b"broker.id : 7\n"  # ':' separator with blanks
        b"cluster.id   abc\\\n"  # whitespace separator, then a continuation line
        b"     def\n"
        b"k\\=ey=v\\u00e9\\tx\n"  # escaped '=' in the key, \uXXXX and \t in the value
        b"empty=\n"
    )
    assert read_meta_properties(tmp_path) == {
        "broker.id": "7",
        "cluster.id": "abcdef",
        "k=ey": "v\u00e9\tx",
        "empty": "",
    }


@pytest.mark.parametrize("cluster_id", [" lead space", "a=b:c #d !e \\f", "t\tn\nr\rf\f", "é€😀"])
def test_meta_properties_escapes_round_trip(tmp_path: Path, cluster_id: str) -> None:
    write_meta_properties(tmp_path, 0, cluster_id)
    raw = (tmp_path / META_PROPERTIES).read_bytes()
    assert all(b < 0x80 for b in raw)  # everything outside ASCII is \u-escaped
    assert read_meta_properties(tmp_path)["cluster.id"] == cluster_id  # type: ignore[index]


def test_meta_properties_read_removes_tmp_leftover(tmp_path: Path) -> None:
    write_meta_properties(tmp_path, 1, "abc")
    (tmp_path / "meta.properties.tmp").write_bytes(b"broker.id=999\n")
    assert read_broker_metadata(tmp_path) == BrokerMetadata(1, "abc")
    assert not (tmp_path / "meta.properties.tmp").exists()


def test_check_broker_metadata_accepts_matching_or_missing(tmp_path: Path) -> None:
    assert check_broker_metadata(tmp_path, broker_id=1, cluster_id="abc") is None
    write_meta_properties(tmp_path, 1, "abc")
    assert check_broker_metadata(tmp_path, broker_id=1, cluster_id="abc") == BrokerMetadata(
        1, "abc"
    )
    # Unconfigured broker.id (None or negative): Kafka adopts the stored one.
    assert check_broker_metadata(tmp_path, broker_id=-1, cluster_id="abc") == BrokerMetadata(
        1, "abc"
    )
    assert check_broker_metadata(tmp_path, broker_id=None, cluster_id=None) == BrokerMetadata(
        1, "abc"
    )


@pytest.mark.parametrize(
    ("content", "broker_id", "cluster_id", "message"),
    [
        (b"version=0\nbroker.id=1\ncluster.id=abc\n", 2, "abc", "broker.id"),
        (b"version=0\nbroker.id=1\ncluster.id=abc\n", 1, "xyz", "cluster"),
        (b"version=1\nnode.id=1\ncluster.id=abc\n", 1, "abc", "version"),
        (b"broker.id=1\ncluster.id=abc\n", 2, "abc", "broker.id"),  # version defaults to 0
    ],
)
def test_check_broker_metadata_refuses_mismatch(
    tmp_path: Path, content: bytes, broker_id: int, cluster_id: str, message: str
) -> None:
    (tmp_path / META_PROPERTIES).write_bytes(content)
    with pytest.raises(InconsistentBrokerMetadataError, match=message):
        check_broker_metadata(tmp_path, broker_id=broker_id, cluster_id=cluster_id)


def test_check_broker_metadata_tolerates_missing_fields(tmp_path: Path) -> None:
    # Files written before 0.10.1 have no cluster.id; that is not a conflict.
    (tmp_path / META_PROPERTIES).write_bytes(b"version=0\nbroker.id=4\n")
    assert check_broker_metadata(tmp_path, broker_id=4, cluster_id="abc") == BrokerMetadata(4, None)


@pytest.mark.parametrize("content", [b"broker.id=one\n", b"version=zero\n", b"cluster.id=\\u12\n"])
def test_meta_properties_corrupt(tmp_path: Path, content: bytes) -> None:
    (tmp_path / META_PROPERTIES).write_bytes(content)
    with pytest.raises(CorruptCheckpointError, match="meta.properties"):
        check_broker_metadata(tmp_path, broker_id=1, cluster_id="abc")
