"""Kafka's small on-disk state files: offset checkpoints, leader-epoch checkpoints, meta.properties.

Formats and semantics follow Apache Kafka 2.8 (``kafka/server/checkpoints/*``,
``kafka/server/BrokerMetadataCheckpoint.scala``), so a log directory written by
Mafka can be read by Kafka and the other way round.

Contract:

* Every file is replaced atomically by :func:`atomic_write`: the new bytes go to
  ``<name>.tmp`` (Kafka's temporary name), are flushed and fsynced, renamed over
  ``<name>`` with :func:`os.replace`, and the directory is fsynced so the rename
  itself survives a crash.  A reader therefore sees the old or the new file,
  never a torn one; a ``.tmp`` left behind by a crash is ignored by readers and
  overwritten by the next write.
* Checkpoint files (:class:`OffsetCheckpointFile`, :class:`LeaderEpochCheckpointFile`)
  are UTF-8 text, one ``\\n``-terminated line each (``BufferedWriter.newLine``
  on Linux)::

      0               <- version
      2               <- number of entries
      topic 0 5       <- offset checkpoint: topic partition offset
      topic 1 7

  and ``epoch startOffset`` lines for the leader-epoch checkpoint.
* Reading is as strict as Kafka's ``CheckpointReadBuffer``, and as lenient where
  Kafka is lenient: a missing file, an empty file and a file holding only the
  version line read as "no entries" (Kafka creates the file empty before its
  first write); fields may be separated by any run of ASCII whitespace and
  trailing whitespace is ignored; ``\\r\\n`` and ``\\r`` line ends are accepted.
  Anything else malformed (unknown version, a count that does not match the
  number of entry lines, a line with the wrong number of fields, a number that
  is not a decimal integer of the right width, bytes that are not UTF-8)
  raises :class:`CorruptCheckpointError` naming the file and the line.
* ``meta.properties`` is a Java properties file (ISO-8859-1, ``\\uXXXX`` escapes;
  read and written by :mod:`mafka.properties`, as ``Properties.load`` / ``store``)
  holding ``version=0``, ``broker.id`` and ``cluster.id`` for ZooKeeper-mode
  brokers.  :func:`check_broker_metadata` refuses a directory whose file
  disagrees with the broker's configuration, as ``KafkaServer.startup`` does.

Nothing here locks but :class:`LeaderEpochCheckpointFile`: callers serialise
writers of the same file (two writers would share the ``.tmp`` name).

Example:
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> cp = OffsetCheckpointFile(d / REPLICATION_OFFSET_CHECKPOINT)
    >>> cp.write({("topic", 1): 7, ("topic", 0): 5})
    >>> (d / REPLICATION_OFFSET_CHECKPOINT).read_bytes()
    b'0\\n2\\ntopic 0 5\\ntopic 1 7\\n'
    >>> cp.read()
    {('topic', 0): 5, ('topic', 1): 7}
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, NamedTuple, TypeVar

from mafka import properties

_log = logging.getLogger(__name__)

__all__ = [
    "CHECKPOINT_VERSION",
    "CLEANER_OFFSET_CHECKPOINT",
    "LEADER_EPOCH_CHECKPOINT",
    "LOG_START_OFFSET_CHECKPOINT",
    "META_PROPERTIES",
    "META_PROPERTIES_VERSION",
    "RECOVERY_POINT_OFFSET_CHECKPOINT",
    "REPLICATION_OFFSET_CHECKPOINT",
    "TMP_SUFFIX",
    "WRITE_BEHIND",
    "BrokerMetadata",
    "CorruptCheckpointError",
    "EpochEntry",
    "InconsistentBrokerMetadataError",
    "LeaderEpochCheckpointFile",
    "OffsetCheckpointFile",
    "atomic_write",
    "check_broker_metadata",
    "fsync_and_close",
    "fsync_dir",
    "read_broker_metadata",
    "read_meta_properties",
    "write_meta_properties",
]

# File names, verbatim from Kafka 2.8 (LogManager, ReplicaManager, LogCleanerManager,
# LeaderEpochCheckpointFile, BrokerMetadataCheckpoint).
RECOVERY_POINT_OFFSET_CHECKPOINT: Final = "recovery-point-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT: Final = "replication-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT: Final = "log-start-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT: Final = "cleaner-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT: Final = "leader-epoch-checkpoint"
META_PROPERTIES: Final = "meta.properties"

TMP_SUFFIX: Final = ".tmp"
CHECKPOINT_VERSION: Final = 0  # OffsetCheckpointFile.CurrentVersion == LeaderEpochCheckpointFile's
META_PROPERTIES_VERSION: Final = 0  # ZooKeeper-mode brokers only accept version 0 (KRaft writes 1)

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1

# Java's Integer.parseInt / Long.parseLong syntax, restricted to ASCII digits: Python's int()
# would also take "1_000", " 5" and non-ASCII digits, none of which Kafka writes.
_DECIMAL = re.compile(r"[+-]?[0-9]+\Z")
# Kafka splits entry lines on the Java regex "\s+", which is ASCII whitespace only.
_JAVA_WHITESPACE = " \t\n\x0b\f\r"
_FIELD_SEPARATOR = re.compile(f"[{re.escape(_JAVA_WHITESPACE)}]+")
# BufferedReader.readLine's line terminators (not str.splitlines', which knows many more).
_LINE_END = re.compile(r"\r\n|\r|\n")


class CorruptCheckpointError(ValueError):
    """A checkpoint or properties file exists but cannot be parsed.

    Kafka treats this as a storage error and takes the log directory offline; the
    caller decides.  ``path`` is the file, ``line_number`` the 1-based line at fault
    (``None`` when the fault is not tied to one line, e.g. undecodable bytes).
    """

    def __init__(self, path: Path, reason: str, *, line_number: int | None = None) -> None:
        where = f"{path}" if line_number is None else f"{path}, line {line_number}"
        super().__init__(f"corrupt checkpoint file ({where}): {reason}")
        self.path = path
        self.line_number = line_number
        self.reason = reason


class InconsistentBrokerMetadataError(RuntimeError):
    """``meta.properties`` names another broker or cluster: Kafka refuses to start.

    Mirrors Kafka's ``InconsistentBrokerIdException``, ``InconsistentClusterIdException``
    and the "unexpected version" check in ``KafkaServer.startup``.
    """


class EpochEntry(NamedTuple):
    """One leader-epoch checkpoint line: ``epoch`` starts at offset ``start_offset``."""

    epoch: int
    start_offset: int


# --------------------------------------------------------------------------- atomic files


def fsync_and_close(fd: int) -> None:
    """Fsyncs the file open at descriptor *fd*, then closes it (even if the fsync failed).

    Raises:
        OSError: the fsync failed.
    """
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: Path) -> None:
    """Fsync directory ``path`` so that renames and creations inside it are durable.

    Raises:
        OSError: ``path`` cannot be opened as a directory.  A file system that
            does not support fsync on directories (``EINVAL``) is tolerated,
            since there is nothing more the caller could do.
    """
    if os.name == "nt":  # pragma: no cover - Windows cannot open a directory for fsync
        return
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno != errno.EINVAL:
            raise
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes, *, fsync: bool = True) -> None:
    """Replace the file at ``path`` by ``data`` so that readers see old or new, never a mix.

    Writes ``<path>.tmp``, flushes it, fsyncs it (if ``fsync``), renames it onto
    ``path`` with :func:`os.replace` and fsyncs the parent directory (if ``fsync``),
    because without the directory fsync the rename may be lost in a crash and
    the old contents come back.  If anything before the rename fails, the
    temporary file is removed and ``path`` is left untouched.

    Args:
        path: the final file; its directory must exist.
        data: the complete new contents.
        fsync: ``False`` skips both fsyncs (tests, or files that may be lost).

    Raises:
        OSError: the write, fsync or rename failed.
    """
    path = Path(path)
    tmp = path.with_name(path.name + TMP_SUFFIX)
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            if fsync:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        # A half-written .tmp is harmless to readers, but do not leave litter behind.
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    if fsync:
        fsync_dir(path.parent)


# --------------------------------------------------------------------------- checkpoints

_T = TypeVar("_T")


def _parse_int(text: str, lo: int, hi: int) -> int:
    """Parse a Java-style decimal integer in [lo, hi]; ValueError otherwise."""
    if not _DECIMAL.match(text):
        raise ValueError(f"not a decimal integer: {text!r}")
    value = int(text)
    if not lo <= value <= hi:
        raise ValueError(f"out of range [{lo}, {hi}]: {text}")
    return value


def _fields(line: str) -> list[str]:
    """Split like Java's ``Pattern.compile("\\\\s+").split(line)``.

    Java drops trailing empty strings but keeps a leading one, so leading
    whitespace makes the line malformed while trailing whitespace does not.
    """
    fields = _FIELD_SEPARATOR.split(line)
    while fields and fields[-1] == "":
        fields.pop()
    return fields


def _render_checkpoint(lines: Sequence[str]) -> bytes:
    parts = [f"{CHECKPOINT_VERSION}\n{len(lines)}\n"]
    parts.extend(f"{line}\n" for line in lines)
    return "".join(parts).encode("utf-8")


def _read_checkpoint(path: Path, parse_line: Callable[[list[str]], _T]) -> list[_T]:
    """Read a versioned checkpoint file; [] if missing, empty or version-only (as Kafka)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return []
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorruptCheckpointError(path, f"not UTF-8: {exc}") from None
    lines = _LINE_END.split(text)
    if lines[-1] == "":
        lines.pop()  # the terminator of the last line, not an empty line
    if not lines:
        return []

    try:
        version = _parse_int(lines[0], _INT32_MIN, _INT32_MAX)
    except ValueError as exc:
        raise CorruptCheckpointError(
            path, f"bad version line {lines[0]!r}: {exc}", line_number=1
        ) from None
    if version != CHECKPOINT_VERSION:
        raise CorruptCheckpointError(
            path, f"unrecognized version {version} (expected {CHECKPOINT_VERSION})", line_number=1
        )
    if len(lines) == 1:
        return []  # Kafka's reader stops at a missing count line too

    try:
        expected = _parse_int(lines[1], 0, _INT32_MAX)
    except ValueError as exc:
        raise CorruptCheckpointError(
            path, f"bad entry count {lines[1]!r}: {exc}", line_number=2
        ) from None

    entries: list[_T] = []
    for number, line in enumerate(lines[2:], start=3):
        try:
            entries.append(parse_line(_fields(line)))
        except ValueError as exc:
            raise CorruptCheckpointError(
                path, f"malformed line {line!r}: {exc}", line_number=number
            ) from None
    if len(entries) != expected:
        raise CorruptCheckpointError(path, f"expected {expected} entries, found {len(entries)}")
    return entries


class OffsetCheckpointFile:
    """A per-log-dir ``topic partition offset`` checkpoint (Kafka's ``OffsetCheckpointFile``).

    Used for :data:`RECOVERY_POINT_OFFSET_CHECKPOINT`, :data:`REPLICATION_OFFSET_CHECKPOINT`
    (high watermarks), :data:`LOG_START_OFFSET_CHECKPOINT` and
    :data:`CLEANER_OFFSET_CHECKPOINT`.  The object holds no state beyond the path:
    every :meth:`read` goes to disk.
    """

    def __init__(self, path: Path, *, fsync: bool = True) -> None:
        """Args: path: the checkpoint file; fsync: passed to :func:`atomic_write`."""
        self.path = Path(path)
        self.fsync = fsync

    def __repr__(self) -> str:
        return f"OffsetCheckpointFile({str(self.path)!r})"

    def write(self, entries: Mapping[tuple[str, int], int]) -> None:
        """Atomically replace the file with ``entries`` ((topic, partition) -> offset).

        Lines are sorted by (topic, partition) so that equal contents give equal
        bytes (Kafka writes in hash order; readers do not care).

        Raises:
            ValueError: a topic is empty or contains whitespace (it could not be
                read back), or a partition / offset does not fit Kafka's int32 /
                int64.  Nothing is written then.
            OSError: writing failed.
        """
        lines = []
        for (topic, partition), offset in sorted(entries.items()):
            if not topic or any(ch in _JAVA_WHITESPACE for ch in topic):
                raise ValueError(f"topic name {topic!r} cannot be stored in a checkpoint")
            if not _INT32_MIN <= partition <= _INT32_MAX:
                raise ValueError(f"partition {partition} of {topic!r} is not an int32")
            if not _INT64_MIN <= offset <= _INT64_MAX:
                raise ValueError(f"offset {offset} of {topic}-{partition} is not an int64")
            lines.append(f"{topic} {int(partition)} {int(offset)}")
        atomic_write(self.path, _render_checkpoint(lines), fsync=self.fsync)

    def read(self) -> dict[tuple[str, int], int]:
        """Return the stored offsets; ``{}`` if the file is missing or empty.

        A (topic, partition) listed twice keeps its last offset, as Kafka's ``toMap``.

        Raises:
            CorruptCheckpointError: the file is malformed.
        """
        return dict(_read_checkpoint(self.path, _parse_offset_line))


def _parse_offset_line(fields: list[str]) -> tuple[tuple[str, int], int]:
    if len(fields) != 3 or not fields[0]:
        raise ValueError(f"expected 'topic partition offset', got {len(fields)} field(s)")
    topic, partition, offset = fields
    return (topic, _parse_int(partition, _INT32_MIN, _INT32_MAX)), _parse_int(
        offset, _INT64_MIN, _INT64_MAX
    )


class LeaderEpochCheckpointFile:
    """A partition's ``leader-epoch-checkpoint``: ``epoch startOffset`` lines.

    The file stores whatever it is given, in order; keeping the entries
    monotonic is :class:`mafka.log.epoch_cache.LeaderEpochCache`'s job.

    Thread-safe.  A :meth:`write` with ``sync=False`` only records the new
    contents and hands the file to :data:`WRITE_BEHIND`, a thread that
    writes it moments later (the newest contents once, however many writes
    came meanwhile): the cache is changed on the reactor, for every
    partition a LeaderAndIsr makes this broker lead, and a rewrite there
    costs a few hundred microseconds each.  :meth:`sync` writes what is
    pending before it fsyncs, :meth:`relocating` writes it before the
    partition's directory is renamed, :meth:`close` drops it before the
    directory is deleted.  A process crash may lose a write that was still
    pending, as an OS crash may lose one that was not fsynced
    (:class:`~mafka.log.epoch_cache.LeaderEpochCache` says why either is safe).
    """

    def __init__(self, path: Path, *, fsync: bool = True) -> None:
        """Args: path: the checkpoint file; fsync: whether it is ever fsynced (at :meth:`write` or :meth:`sync`)."""
        self.path = Path(path)
        self.fsync = fsync
        #: written (or pending) since it was last fsynced (a :meth:`write` with ``sync=False``)
        self.dirty = False
        self.closed = False
        self._pending: bytes | None = None
        self._pending_lock = threading.Lock()  # guards the swap of _pending only: never held for I/O
        self._file_lock = threading.RLock()  # held while the file is written, its directory moved, or closed

    @classmethod
    def in_dir(cls, partition_dir: Path, *, fsync: bool = True) -> LeaderEpochCheckpointFile:
        """The checkpoint of the partition stored in ``partition_dir`` (Kafka's ``newFile``)."""
        return cls(Path(partition_dir) / LEADER_EPOCH_CHECKPOINT, fsync=fsync)

    def __repr__(self) -> str:
        return f"LeaderEpochCheckpointFile({str(self.path)!r})"

    @property
    def pending(self) -> bool:
        """Whether a write is recorded but not yet on disk."""
        return self._pending is not None

    def sync(self) -> None:
        """Writes what is pending, then fsyncs the file and its directory if a write since the last fsync skipped it.

        Raises:
            OSError: the write or the fsync failed (the file stays dirty, the write pending).
        """
        with self._file_lock:
            self.write_pending()
            if not self.dirty or not self.fsync or self.closed:
                return
            self.dirty = False  # first: a write racing this fsync marks it dirty again
            try:
                fsync_and_close(os.open(self.path, os.O_RDONLY))
                fsync_dir(self.path.parent)
            except FileNotFoundError:
                pass  # the partition was deleted meanwhile
            except BaseException:
                self.dirty = True
                raise

    def write(self, entries: Iterable[EpochEntry], *, sync: bool = True) -> None:
        """Replace the file with ``entries``, in the order given: atomically, now or moments later.

        With ``sync=True`` the file is written and fsynced before this
        returns (when the file fsyncs at all).  With ``sync=False`` it is
        written by :data:`WRITE_BEHIND` and left :attr:`dirty` for
        :meth:`sync` (the leader epoch cache writes so; see
        :class:`mafka.log.epoch_cache.LeaderEpochCache`).

        Raises:
            ValueError: an epoch is not an int32 or a start offset not an int64;
                nothing is written then.
            OSError: writing failed (``sync=True`` only; a write behind that
                fails stays pending and is raised by :meth:`sync`).
        """
        lines = []
        for epoch, start_offset in entries:
            if not _INT32_MIN <= epoch <= _INT32_MAX:
                raise ValueError(f"leader epoch {epoch} is not an int32")
            if not _INT64_MIN <= start_offset <= _INT64_MAX:
                raise ValueError(f"start offset {start_offset} is not an int64")
            lines.append(f"{int(epoch)} {int(start_offset)}")
        data = _render_checkpoint(lines)
        if sync:
            with self._file_lock:
                with self._pending_lock:
                    self._pending = None
                if not self.closed:
                    atomic_write(self.path, data, fsync=self.fsync)
            return
        with self._pending_lock:
            self._pending = data
        if self.fsync:
            self.dirty = True
        WRITE_BEHIND.submit(self)

    def write_pending(self) -> bool:
        """Writes the pending contents now (any thread); whether there were any.

        Raises:
            OSError: the write failed; the contents stay pending unless a newer write replaced them.
        """
        with self._file_lock:
            with self._pending_lock:
                data, self._pending = self._pending, None
            if data is None or self.closed:
                return False
            try:
                atomic_write(self.path, data, fsync=False)
            except BaseException:
                with self._pending_lock:
                    if self._pending is None:
                        self._pending = data
                raise
            return True

    @contextlib.contextmanager
    def relocating(self) -> Iterator[None]:
        """Hold writes while the caller renames the partition's directory and sets :attr:`path`.

        What is pending is written to the old place first; writes recorded
        meanwhile wait and go to the new :attr:`path`.
        """
        with self._file_lock:
            self.write_pending()
            yield

    def close(self) -> None:
        """Drop what is pending and write nothing more (the directory is about to be deleted)."""
        with self._file_lock:
            with self._pending_lock:
                self._pending = None
            self.closed = True

    def read(self) -> list[EpochEntry]:
        """Return the stored entries in file order; ``[]`` if missing or empty.

        Raises:
            CorruptCheckpointError: the file is malformed.
        """
        return _read_checkpoint(self.path, _parse_epoch_line)


def _parse_epoch_line(fields: list[str]) -> EpochEntry:
    if len(fields) != 2 or not fields[0]:
        raise ValueError(f"expected 'epoch startOffset', got {len(fields)} field(s)")
    return EpochEntry(
        _parse_int(fields[0], _INT32_MIN, _INT32_MAX), _parse_int(fields[1], _INT64_MIN, _INT64_MAX)
    )


# --------------------------------------------------------------------------- meta.properties

_VERSION_KEY: Final = "version"
_BROKER_ID_KEY: Final = "broker.id"
_CLUSTER_ID_KEY: Final = "cluster.id"


def read_meta_properties(log_dir: Path) -> dict[str, str] | None:
    """Return the key/value pairs of ``log_dir/meta.properties``, or ``None`` if it is missing.

    Like Kafka, a leftover ``meta.properties.tmp`` from an interrupted write is deleted first.

    Raises:
        CorruptCheckpointError: the file cannot be parsed as Java properties.
        OSError: the file exists but cannot be read.
    """
    path = Path(log_dir) / META_PROPERTIES
    with contextlib.suppress(FileNotFoundError):
        path.with_name(path.name + TMP_SUFFIX).unlink()
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        return properties.loads(raw.decode("iso-8859-1"))
    except properties.MalformedEscapeError as exc:
        raise CorruptCheckpointError(path, str(exc), line_number=exc.line) from None


def write_meta_properties(
    log_dir: Path, broker_id: int, cluster_id: str, *, fsync: bool = True
) -> None:
    """Atomically write ``log_dir/meta.properties`` for a ZooKeeper-mode broker.

    The file looks like Kafka's ``Properties.store(out, "")`` output: an empty
    ``#`` comment, a ``#``-date comment, then ``version=0``, ``broker.id`` and
    ``cluster.id``.

    Raises:
        ValueError: ``broker_id`` is not an int32.
        OSError: writing failed.
    """
    if not _INT32_MIN <= broker_id <= _INT32_MAX:
        raise ValueError(f"broker.id {broker_id} is not an int32")
    props = {
        _VERSION_KEY: str(META_PROPERTIES_VERSION),
        _BROKER_ID_KEY: str(int(broker_id)),
        _CLUSTER_ID_KEY: cluster_id,
    }
    atomic_write(Path(log_dir) / META_PROPERTIES, properties.store(props, ""), fsync=fsync)


@dataclass(frozen=True)
class BrokerMetadata:
    """The parsed contents of a ZooKeeper-mode ``meta.properties``.

    ``broker_id`` / ``cluster_id`` are ``None`` when the file lacks them (files
    written before 0.10.1 have no cluster.id); ``version`` defaults to 0 when
    absent, as in Kafka's ``RawMetaProperties``.
    """

    broker_id: int | None
    cluster_id: str | None
    version: int = META_PROPERTIES_VERSION

    @classmethod
    def from_properties(cls, props: Mapping[str, str], *, path: Path) -> BrokerMetadata:
        """Build from raw properties; ``path`` is only used in error messages.

        Raises:
            CorruptCheckpointError: ``version`` or ``broker.id`` is not an int32.
        """

        def int_value(key: str) -> int | None:
            text = props.get(key)
            if text is None:
                return None
            try:
                return _parse_int(text, _INT32_MIN, _INT32_MAX)
            except ValueError as exc:
                raise CorruptCheckpointError(path, f"cannot parse {key}: {exc}") from None

        version = int_value(_VERSION_KEY)
        return cls(
            broker_id=int_value(_BROKER_ID_KEY),
            cluster_id=props.get(_CLUSTER_ID_KEY),
            version=META_PROPERTIES_VERSION if version is None else version,
        )


def read_broker_metadata(log_dir: Path) -> BrokerMetadata | None:
    """Parse ``log_dir/meta.properties``; ``None`` if it does not exist.

    Raises:
        CorruptCheckpointError: the file is malformed.
    """
    props = read_meta_properties(log_dir)
    if props is None:
        return None
    return BrokerMetadata.from_properties(props, path=Path(log_dir) / META_PROPERTIES)


def check_broker_metadata(
    log_dir: Path, *, broker_id: int | None, cluster_id: str | None
) -> BrokerMetadata | None:
    """Refuse a log dir that belongs to another broker or cluster (``KafkaServer.startup``).

    Checks, in Kafka's order: the version must be 0 (a KRaft-formatted dir has
    1); a stored cluster.id must equal ``cluster_id``; a stored broker.id must
    equal ``broker_id``.  A field missing from the file is not a conflict, and
    ``broker_id`` ``None`` or negative (not configured: Kafka would adopt the
    stored id) and ``cluster_id`` ``None`` skip their checks.

    Returns:
        The stored metadata, or ``None`` if the dir has no meta.properties yet.

    Raises:
        InconsistentBrokerMetadataError: the file disagrees.
        CorruptCheckpointError: the file is malformed.
    """
    meta = read_broker_metadata(log_dir)
    if meta is None:
        return None
    path = Path(log_dir) / META_PROPERTIES
    if meta.version != META_PROPERTIES_VERSION:
        raise InconsistentBrokerMetadataError(
            f"{path}: unexpected meta.properties version {meta.version}; ZooKeeper-mode brokers "
            f"only support version {META_PROPERTIES_VERSION}"
        )
    if cluster_id is not None and meta.cluster_id is not None and meta.cluster_id != cluster_id:
        raise InconsistentBrokerMetadataError(
            f"{path}: the cluster ID {cluster_id} doesn't match stored cluster.id {meta.cluster_id}; "
            "the broker is trying to join the wrong cluster"
        )
    if (
        broker_id is not None
        and broker_id >= 0
        and meta.broker_id is not None
        and meta.broker_id != broker_id
    ):
        raise InconsistentBrokerMetadataError(
            f"{path}: configured broker.id {broker_id} doesn't match stored broker.id {meta.broker_id}"
        )
    return meta


class WriteBehind:
    """A daemon thread that writes :class:`LeaderEpochCheckpointFile` s handed to it.

    :meth:`submit` is cheap and never blocks on I/O; a file submitted many
    times before the thread gets to it is written once, with its newest
    contents.  A failed write is logged and left pending for the file's
    next :meth:`~LeaderEpochCheckpointFile.sync`, which raises it (the log
    manager then takes the dir offline); a file whose directory is gone
    (the partition was deleted or moved) is dropped.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._queue: dict[LeaderEpochCheckpointFile, None] = {}  # insertion-ordered set
        self._thread: threading.Thread | None = None
        self._busy = False  # the thread is writing a batch taken off the queue

    def submit(self, checkpoint: LeaderEpochCheckpointFile) -> None:
        """Have ``checkpoint``'s pending contents written soon."""
        with self._cond:
            self._queue[checkpoint] = None
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="leader-epoch-checkpoint-writer", daemon=True)
                self._thread.start()
            self._cond.notify()

    def drain(self, timeout: float = 10.0) -> bool:
        """Wait until everything submitted so far is written (tests, shutdown); whether it was in time."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._queue or self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue:
                    self._busy = False
                    self._cond.notify_all()
                    self._cond.wait()
                batch = list(self._queue)
                self._queue.clear()
                self._busy = True
            for checkpoint in batch:
                try:
                    checkpoint.write_pending()
                except FileNotFoundError:
                    with checkpoint._pending_lock:  # the partition's directory is gone
                        checkpoint._pending = None
                except OSError as exc:
                    _log.error("writing %s failed (retried at its next sync): %s", checkpoint.path, exc)


#: The process's writer of leader epoch checkpoints (see :class:`WriteBehind`).
WRITE_BEHIND: Final = WriteBehind()
