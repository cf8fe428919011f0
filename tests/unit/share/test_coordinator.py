"""The share coordinator: which partition, ownership, the five operations, fencing, snapshots, pruning.

A fake state log (:class:`FakeLog`) keeps each ``__share_group_state``
partition as a list of (key, value) bytes and answers appends at once or when
a test says so; the clock is a plain counter.  Reloading a partition is
replaying that list into a fresh coordinator, exactly what a failover does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from mafka.errors import ErrorCode
from mafka.group.share.partition_state import SharePartitionConfig, SharePartitionState, StateBatch
from mafka.group.share.state_records import (
    RECORD_TYPE_SNAPSHOT,
    RECORD_TYPE_UPDATE,
    ShareSnapshotValue,
    ShareUpdateValue,
    decode_record,
    restore_partition_state,
)
from mafka.share.coordinator import (
    ShareCoordinator,
    ShareCoordinatorConfig,
    coordinator_key,
    kafka_uuid_string,
    share_partition_for,
)
from mafka.share.state_types import (
    InitializeData,
    PartitionResult,
    ReadResult,
    SummaryResult,
    WriteData,
)

TOPIC = bytes(range(1, 17))
OTHER_TOPIC = bytes(range(0xA1, 0xB1))
GROUP = "share-group"
N = 50
AVAILABLE, ACKED, ARCHIVED = 0, 2, 4


# ---------------------------------------------------------------------------------- which partition


def java_hash_by_definition(text: str) -> int:
    """``s[0]*31^(n-1) + … + s[n-1]`` over UTF-16 code units, as a Java int (the String.hashCode javadoc)."""
    units = list(text.encode("utf-16-be", "surrogatepass"))
    codes = [(units[i] << 8) | units[i + 1] for i in range(0, len(units), 2)]
    h = sum(c * 31 ** (len(codes) - 1 - i) for i, c in enumerate(codes)) % 2**32
    return h - 2**32 if h >= 2**31 else h


def test_topic_ids_print_as_kafkas_uuid_to_string() -> None:
    # Uuid.ZERO_UUID and Uuid.METADATA_TOPIC_ID (new Uuid(0L, 1L)) as Kafka prints them.
    assert kafka_uuid_string(bytes(16)) == "AAAAAAAAAAAAAAAAAAAAAA"
    assert kafka_uuid_string(bytes(15) + b"\x01") == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert kafka_uuid_string(TOPIC) == "AQIDBAUGBwgJCgsMDQ4PEA"
    assert kafka_uuid_string(bytes([0xFB, 0xFF] + [0] * 14)) == "-_8AAAAAAAAAAAAAAAAAAA"  # URL-safe alphabet
    with pytest.raises(ValueError):
        kafka_uuid_string(b"short")


def test_the_coordinator_key_is_kafkas_format() -> None:
    assert coordinator_key("g1", TOPIC, 7) == "g1:AQIDBAUGBwgJCgsMDQ4PEA:7"
    assert coordinator_key("a:b", bytes(16), 0) == "a:b:AAAAAAAAAAAAAAAAAAAAAA:0"  # colons kept in the group


# (coordinator key, Java's String.hashCode of it worked out from the definition, abs % 50)
KNOWN = [
    ("g1", bytes(16), 0, -1506055834, 34),
    ("g1", TOPIC, 7, -851287132, 32),
    (GROUP, TOPIC, 0, 358574870, 20),
    ("grüppe", bytes(15) + b"\x01", 12, 352943045, 45),  # ü is one UTF-16 unit (0xFC)
]


@pytest.mark.parametrize(("group", "topic", "partition", "java_hash", "index"), KNOWN)
def test_share_partition_for_matches_javas_hash(group: str, topic: bytes, partition: int, java_hash: int,
                                               index: int) -> None:
    key = coordinator_key(group, topic, partition)
    assert java_hash_by_definition(key) == java_hash
    assert share_partition_for(group, topic, partition, N) == index == abs(java_hash) % N


def test_javas_hash_reference_values() -> None:
    # Values every Java prints: "hello".hashCode(), the famous Integer.MIN_VALUE string, and a
    # character outside the BMP (two UTF-16 units: 0xD83D 0xDE00).
    from mafka.group.offsets_records import java_string_hash

    assert java_string_hash("hello") == java_hash_by_definition("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -(2**31)
    assert java_string_hash("\U0001F600") == 0xD83D * 31 + 0xDE00 == 1772899


def test_a_key_hashing_to_integer_min_value_goes_to_partition_0() -> None:
    # Utils.abs(Integer.MIN_VALUE) is 0 (Math.abs would stay negative).  Build a group id whose
    # coordinator key hashes to it: h(g + s) = h(g) * 31^len(s) + h(s) (mod 2^32), and 31 is odd.
    suffix = f":{kafka_uuid_string(TOPIC)}:3"
    target = (2**31 - java_hash_by_definition(suffix)) * pow(31, -len(suffix), 2**32) % 2**32
    digits = []  # target in base 31, as characters 'A' + digit after removing their 65s
    offset = sum(65 * 31**i for i in range(7)) % 2**32
    rest = (target - offset) % 2**32
    for _ in range(7):
        digits.append(rest % 31)
        rest //= 31
    assert rest == 0
    group = "".join(chr(65 + d) for d in reversed(digits))
    assert java_hash_by_definition(coordinator_key(group, TOPIC, 3)) == -(2**31)
    assert share_partition_for(group, TOPIC, 3, N) == 0
    assert share_partition_for(group, TOPIC, 3, 7) == 0


# ---------------------------------------------------------------------------------- harness


class FakeLog:
    """``__share_group_state`` in memory.  As on a broker, an append is written to the log at
    once (its offset is taken then); its answer comes at once, or, with ``hold`` set, when the
    test releases it — with success, or with an error (the record stays written, as after a
    replication timeout)."""

    def __init__(self) -> None:
        self.partitions: dict[int, list[tuple[bytes, bytes | None]]] = {}
        self.hold = False
        self.held: list[tuple[int, Callable[[int, int | None], None]]] = []

    def append(self, partition: int, records: Any, done: Callable[[int, int | None], None]) -> None:
        log = self.partitions.setdefault(partition, [])
        base = len(log)
        log.extend(records)
        if self.hold:
            self.held.append((base, done))
        else:
            done(ErrorCode.NONE, base)

    def release(self, error: ErrorCode | None = None) -> None:
        """Answers the oldest held append."""
        base, done = self.held.pop(0)
        done(ErrorCode.NONE, base) if error is None else done(error, None)

    def loaded(self, partition: int) -> list[tuple[int, bytes, bytes | None]]:
        return [(i, k, v) for i, (k, v) in enumerate(self.partitions.get(partition, []))]

    def record_types(self, partition: int) -> list[str]:
        out = []
        for k, v in self.partitions.get(partition, []):
            r = decode_record(k, v)
            out.append("T" if r.value is None else "S" if r.record_type == RECORD_TYPE_SNAPSHOT else "U")
        return out


class Clock:
    def __init__(self, now: int = 1_000_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def make(log: FakeLog | None = None, *, per_snapshot: int = 500, topics: dict[bytes, int] | None = None,
         clock: Clock | None = None, own: bool = True, cold_ms: int = 300_000) -> tuple[ShareCoordinator, FakeLog]:
    log = log or FakeLog()
    known = {TOPIC: 8, OTHER_TOPIC: 4} if topics is None else topics
    c = ShareCoordinator(ShareCoordinatorConfig(N, per_snapshot, cold_ms), clock or Clock(), log, known.get)
    if own:
        for index in range(N):
            assert c.on_elected(index, 1)
            assert c.complete_load(index, 1, log.loaded(index))
    return c, log


def call(op: Callable[..., None], *args: Any) -> Any:
    """Runs an operation and returns its answer (which must come at once)."""
    got: list[Any] = []
    op(*args, got.append)
    assert len(got) == 1, f"answered {len(got)} times"
    return got[0]


def index_of(partition: int = 0, topic: bytes = TOPIC, group: str = GROUP) -> int:
    return share_partition_for(group, topic, partition, N)


def batch(first: int, last: int, state: int, count: int) -> StateBatch:
    return StateBatch(first, last, state, count)


def init(c: ShareCoordinator, partition: int = 0, state_epoch: int = 0, start: int = -1) -> PartitionResult:
    return call(c.initialize, GROUP, TOPIC, partition, InitializeData(state_epoch, start))


def write(c: ShareCoordinator, *batches: StateBatch, partition: int = 0, state_epoch: int = 0, leader_epoch: int = 1,
          start: int = 0, complete: int = -1) -> PartitionResult:
    return call(c.write, GROUP, TOPIC, partition, WriteData(state_epoch, leader_epoch, start, batches, complete))


def read(c: ShareCoordinator, partition: int = 0, leader_epoch: int = 1) -> ReadResult:
    return call(c.read, GROUP, TOPIC, partition, leader_epoch)


def summary(c: ShareCoordinator, partition: int = 0) -> SummaryResult:
    return call(c.read_summary, GROUP, TOPIC, partition, 0)


def reloaded(log: FakeLog, **kwargs: Any) -> ShareCoordinator:
    """A new coordinator that loaded every partition from the log (a failover)."""
    return make(log, **kwargs)[0]


OK = PartitionResult()


# ---------------------------------------------------------------------------------- ownership


def test_not_owned_loading_and_stopped_answers() -> None:
    c, log = make(own=False)
    idx = index_of()
    assert init(c).error == ErrorCode.NOT_COORDINATOR
    assert c.on_elected(idx, 3)
    assert init(c).error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert read(c).error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert not c.complete_load(idx, 2, [])  # a load for another epoch changes nothing
    assert c.complete_load(idx, 3, [])
    assert init(c) == OK
    assert not c.on_elected(idx, 2)  # older epoch
    c.on_resigned(idx, 2)  # older epoch: ignored
    assert read(c).error == ErrorCode.NONE
    c.on_resigned(idx, 4)
    assert read(c).error == ErrorCode.NOT_COORDINATOR
    assert log.partitions[idx]  # the state stays in the log for the next leader
    c.shutdown()
    assert init(c) == PartitionResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, "Share coordinator is not available.")


def test_failed_load_is_not_coordinator_and_a_new_election_loads_again() -> None:
    c, _ = make(own=False)
    idx = index_of()
    assert c.on_elected(idx, 1)
    c.fail_load(idx, 1)
    assert init(c).error == ErrorCode.NOT_COORDINATOR
    assert c.on_elected(idx, 2)
    assert c.complete_load(idx, 2, [])
    assert c.owned_partitions() == {idx} and c.loading_partitions() == set()


# ---------------------------------------------------------------------------------- the operations


def test_initialize_then_read_then_write_then_read() -> None:
    c, log = make()
    assert init(c, state_epoch=3, start=-1) == OK
    got = read(c, leader_epoch=1)
    assert got == ReadResult(ErrorCode.NONE, None, 3, -1, ())
    assert write(c, batch(10, 14, ACKED, 1), batch(15, 19, AVAILABLE, 1), state_epoch=3, start=10) == OK
    got = read(c)
    assert (got.state_epoch, got.start_offset) == (3, 10)
    assert got.state_batches == (batch(10, 14, ACKED, 1), batch(15, 19, AVAILABLE, 1))
    # an initialize snapshot, the read's leader epoch update, the write's update
    assert log.record_types(index_of()) == ["S", "U", "U"]


def test_an_answer_waits_for_its_append_and_a_failed_append_changes_nothing() -> None:
    c, log = make()
    init(c)
    read(c)
    log.hold = True
    answers: list[PartitionResult] = []
    c.write(GROUP, TOPIC, 0, WriteData(0, 1, 5, (batch(5, 9, ACKED, 1),)), answers.append)
    assert answers == []  # not before the record is replicated
    log.release()
    assert answers == [OK]
    c.write(GROUP, TOPIC, 0, WriteData(0, 1, 5, (batch(10, 12, ARCHIVED, 5),)), answers.append)
    log.release(ErrorCode.NOT_ENOUGH_REPLICAS)
    assert answers[1].error == ErrorCode.COORDINATOR_NOT_AVAILABLE
    c.write(GROUP, TOPIC, 0, WriteData(0, 1, 5, (batch(10, 12, ARCHIVED, 5),)), answers.append)
    log.release(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    assert answers[2].error == ErrorCode.NOT_COORDINATOR
    c.write(GROUP, TOPIC, 0, WriteData(0, 1, 5, (batch(10, 12, ARCHIVED, 5),)), answers.append)
    log.release(ErrorCode.MESSAGE_TOO_LARGE)
    assert answers[3].error == ErrorCode.UNKNOWN_SERVER_ERROR
    log.hold = False
    assert read(c).state_batches == (batch(5, 9, ACKED, 1),)


def test_operations_on_one_share_partition_run_in_order_others_do_not_wait() -> None:
    c, log = make()
    init(c)
    init(c, partition=1)
    read(c)
    log.hold = True
    order: list[str] = []
    c.write(GROUP, TOPIC, 0, WriteData(0, 1, 0, (batch(0, 4, ACKED, 1),)), lambda r: order.append("write-1"))
    c.read(GROUP, TOPIC, 0, 1, lambda r: order.append(f"read {r.state_batches}"))
    c.write(GROUP, TOPIC, 0, WriteData(0, 1, 0, (batch(5, 5, ARCHIVED, 1),)), lambda r: order.append("write-2"))
    c.read_summary(GROUP, TOPIC, 1, 0, lambda r: order.append("other partition"))
    assert order == ["other partition"]  # nothing of partition 0 ran past its pending append
    assert len(log.held) == 1
    log.release()
    assert order == ["other partition", "write-1", f"read {(batch(0, 4, ACKED, 1),)}"]
    log.release()
    assert order[-1] == "write-2"
    assert read(c).state_batches == (batch(0, 4, ACKED, 1), batch(5, 5, ARCHIVED, 1))


def test_write_validation_in_kafkas_order() -> None:
    c, _ = make()
    assert write(c, partition=-1).error == ErrorCode.INVALID_REQUEST
    assert write(c, leader_epoch=-1) == PartitionResult(ErrorCode.INVALID_REQUEST,
                                                         "The leader epoch cannot be a negative number.")
    assert write(c, state_epoch=-1).error == ErrorCode.INVALID_REQUEST
    assert write(c) == PartitionResult(ErrorCode.INVALID_REQUEST,
                                       "Write operation on uninitialized share partition not allowed.")
    init(c, state_epoch=2)
    read(c, leader_epoch=5)
    # both epochs stale: the leader epoch is checked first
    assert write(c, state_epoch=1, leader_epoch=4).error == ErrorCode.FENCED_LEADER_EPOCH
    assert write(c, state_epoch=1, leader_epoch=5).error == ErrorCode.FENCED_STATE_EPOCH
    assert write(c, batch(3, 2, ACKED, 1), state_epoch=2, leader_epoch=5).error == ErrorCode.INVALID_REQUEST
    assert write(c, batch(2, 3, 3, 1), state_epoch=2, leader_epoch=5).error == ErrorCode.INVALID_REQUEST
    assert write(c, batch(2, 3, ACKED, -1), state_epoch=2, leader_epoch=5).error == ErrorCode.INVALID_REQUEST
    assert write(c, state_epoch=2, leader_epoch=5) == OK


def test_unknown_topic_or_partition() -> None:
    c, _ = make()
    assert init(c, partition=8).error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION  # TOPIC has 8 partitions
    assert call(c.initialize, GROUP, bytes(16), 0, InitializeData(0)).error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    init(c, partition=7)
    c2, log2 = make(topics={})  # the topic is gone from the metadata
    assert call(c2.read_summary, GROUP, TOPIC, 0, 0).error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert call(c2.delete, GROUP, TOPIC, 0).error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_read_records_a_newer_leader_epoch_and_fences_older_leaders() -> None:
    c, log = make()
    init(c)
    idx = index_of()
    assert read(c, leader_epoch=4).error == ErrorCode.NONE
    assert log.record_types(idx) == ["S", "U"]
    update = decode_record(*log.partitions[idx][1]).value
    assert isinstance(update, ShareUpdateValue) and update.leader_epoch == 4 and update.state_batches == ()
    assert read(c, leader_epoch=4).error == ErrorCode.NONE
    assert log.record_types(idx) == ["S", "U"]  # the same epoch writes nothing
    assert read(c, leader_epoch=3).error == ErrorCode.FENCED_LEADER_EPOCH
    assert write(c, leader_epoch=3).error == ErrorCode.FENCED_LEADER_EPOCH
    assert read(c, leader_epoch=-1).error == ErrorCode.INVALID_REQUEST
    assert read(c, partition=1) == ReadResult(ErrorCode.INVALID_REQUEST,
                                              "Read operation on uninitialized share partition not allowed.")
    # the fence survives a failover: it is in the log
    again = reloaded(log)
    assert read(again, leader_epoch=3).error == ErrorCode.FENCED_LEADER_EPOCH
    assert write(again, leader_epoch=3).error == ErrorCode.FENCED_LEADER_EPOCH


def test_a_write_keeps_the_recorded_leader_epoch() -> None:
    # Kafka moves the recorded leader epoch only on a read (readStateAndMaybeUpdateLeaderEpoch).
    c, log = make()
    init(c)
    read(c, leader_epoch=2)
    assert write(c, batch(0, 0, ACKED, 1), leader_epoch=7) == OK
    update = decode_record(*log.partitions[index_of()][-1]).value
    assert isinstance(update, ShareUpdateValue) and update.leader_epoch == 2
    assert write(c, batch(1, 1, ACKED, 1), leader_epoch=3) == OK  # not fenced: 3 >= 2


def test_initialize_fencing_reset_and_idempotence() -> None:
    c, log = make()
    idx = index_of()
    assert init(c, state_epoch=5, start=-1) == OK
    assert init(c, state_epoch=4).error == ErrorCode.FENCED_STATE_EPOCH
    assert init(c, state_epoch=-1).error == ErrorCode.INVALID_REQUEST
    assert init(c, state_epoch=5, start=-1) == OK
    assert log.record_types(idx) == ["S"]  # the same epoch and start offset: no second snapshot
    read(c)
    write(c, batch(100, 109, ACKED, 1), state_epoch=5, start=100)
    # AlterShareGroupOffsets: a fresh start with a higher state epoch forgets the batches
    assert init(c, state_epoch=6, start=50) == OK
    snapshot = decode_record(*log.partitions[idx][-1]).value
    assert isinstance(snapshot, ShareSnapshotValue)
    assert (snapshot.snapshot_epoch, snapshot.state_epoch, snapshot.leader_epoch, snapshot.start_offset) == (1, 6, 0, 50)
    assert snapshot.state_batches == () and snapshot.delivery_complete_count == 0
    got = read(c)
    assert (got.state_epoch, got.start_offset, got.state_batches) == (6, 50, ())
    # the old share-partition leader's next write is fenced
    assert write(c, batch(110, 110, ACKED, 1), state_epoch=5).error == ErrorCode.FENCED_STATE_EPOCH


def test_the_start_offset_never_goes_back() -> None:
    c, _ = make()
    init(c)
    read(c)
    write(c, batch(20, 29, ACKED, 1), start=20)
    assert write(c, batch(10, 12, ACKED, 1), start=10) == OK
    got = read(c)
    assert got.start_offset == 20 and got.state_batches == (batch(20, 29, ACKED, 1),)
    write(c, batch(30, 34, AVAILABLE, 1), start=-1)  # -1: not written
    assert read(c).start_offset == 20


def test_delete_and_summary() -> None:
    c, log = make()
    assert summary(c) == SummaryResult(ErrorCode.NONE, None, 0, 0, -1, -1)  # nothing there: Kafka's defaults
    assert call(c.delete, GROUP, TOPIC, 0) == OK
    assert log.partitions.get(index_of(), []) == []  # nothing to delete: no tombstone
    init(c, state_epoch=2, start=7)
    read(c, leader_epoch=3)
    assert summary(c) == SummaryResult(ErrorCode.NONE, None, 2, 3, 7, 0)
    assert call(c.delete, GROUP, TOPIC, 0) == OK
    assert log.record_types(index_of())[-1] == "T"
    assert read(c).error == ErrorCode.INVALID_REQUEST
    assert summary(c).start_offset == -1
    assert summary(reloaded(log)).start_offset == -1
    assert call(c.delete, GROUP, TOPIC, -1).error == ErrorCode.INVALID_REQUEST


def test_delivery_complete_count_follows_kafkas_rule() -> None:
    c, _ = make()
    init(c, start=-1)
    assert summary(c).delivery_complete_count == -1  # an unknown start: lag unknown
    read(c)
    write(c, batch(0, 3, ACKED, 1), start=0, complete=4)
    assert summary(c).delivery_complete_count == 4
    write(c, batch(4, 4, ACKED, 1), start=0, complete=2)  # same start offset: the larger count wins
    assert summary(c).delivery_complete_count == 4
    write(c, batch(10, 11, ACKED, 1), start=10, complete=1)  # the start moved on: the write's count
    assert summary(c).delivery_complete_count == 1
    write(c, batch(12, 12, ACKED, 1), start=5, complete=9)  # a start behind: the current count stays
    assert summary(c).delivery_complete_count == 1


# ---------------------------------------------------------------------------------- snapshots and reloads


def test_snapshot_cadence_and_a_reload_rebuilds_identical_state() -> None:
    c, log = make(per_snapshot=2)
    idx = index_of()
    init(c)
    read(c)
    expected = []
    for i in range(7):
        b = batch(i * 10, i * 10 + 4, ACKED if i % 2 else AVAILABLE, i + 1)
        expected.append(b)
        assert write(c, b, start=0) == OK
    # ShareStateShard's cadence with 2 records per snapshot: after the initialize snapshot the
    # update counter starts at 0 (Kafka 4.3+ starts it at 1), then a snapshot every third record.
    assert log.record_types(idx) == ["S", "U", "U", "U", "S", "U", "U", "S", "U"]
    last_snapshot = decode_record(*log.partitions[idx][7]).value
    assert isinstance(last_snapshot, ShareSnapshotValue) and last_snapshot.snapshot_epoch == 2
    got = read(c)
    assert got.state_batches == tuple(expected)
    again = read(reloaded(log, per_snapshot=2))
    assert again == got


def test_zero_records_per_snapshot_writes_only_snapshots() -> None:
    c, log = make(per_snapshot=0)
    init(c)
    read(c)
    write(c, batch(0, 1, ACKED, 1))
    write(c, batch(2, 3, ACKED, 1))
    assert log.record_types(index_of()) == ["S", "S", "S", "S"]
    assert read(reloaded(log, per_snapshot=0)).state_batches == (batch(0, 3, ACKED, 1),)


def test_a_share_partition_restored_from_a_reloaded_coordinator_redelivers_what_was_not_acknowledged() -> None:
    # The share-partition leader's side: acquire 0-9, accept 0-4, persist; after a coordinator
    # failover the state read back restores 5-9 AVAILABLE (with their delivery count) and 0-4 gone.
    c, log = make()
    init(c, start=0)
    read(c)
    config = SharePartitionConfig(record_lock_duration_ms=1000)
    state = SharePartitionState.restore(config, start_offset=0, batches=(), leader_epoch=1)
    state.acquire("m1", (0, 9), max_records=10, now_ms=0)
    from mafka.group.share.partition_state import AcknowledgementBatch, AcknowledgeType

    state.acknowledge("m1", [AcknowledgementBatch.of(0, 4, AcknowledgeType.ACCEPT)], now_ms=1)
    w = state.take_state_write()
    assert w is not None
    assert call(c.write, GROUP, TOPIC, 0, WriteData.of(w)) == OK
    got = read(reloaded(log))
    from mafka.group.share.state_records import ShareGroupOffset

    restored = restore_partition_state(config, ShareGroupOffset(0, got.state_epoch, 1, got.start_offset,
                                                                got.state_batches))
    assert restored.start_offset == 5
    assert [(r.first_offset, r.last_offset, r.state, r.delivery_count) for r in restored.records()] == \
        [(5, 9, 0, 1)]


def test_undecodable_records_are_skipped_on_load() -> None:
    c, log = make()
    init(c, start=3)
    idx = index_of()
    log.partitions[idx].insert(0, (b"\x00\x07garbage", b"x"))
    again = reloaded(log)
    assert again.skipped_records == 1
    assert read(again).start_offset == 3


def test_an_append_answered_after_the_partition_moved_is_answered_and_queued_ones_are_refused() -> None:
    c, log = make()
    init(c)
    read(c)
    idx = index_of()
    log.hold = True
    answers: list[PartitionResult] = []
    queued: list[PartitionResult] = []
    c.write(GROUP, TOPIC, 0, WriteData(0, 1, 0, (batch(0, 0, ACKED, 1),)), answers.append)
    c.write(GROUP, TOPIC, 0, WriteData(0, 1, 0, (batch(1, 1, ACKED, 1),)), queued.append)
    c.on_resigned(idx, 2)
    assert queued == [PartitionResult(ErrorCode.NOT_COORDINATOR)]  # never ran: answered at once
    assert c.on_elected(idx, 3) and c.complete_load(idx, 3, log.loaded(idx))
    log.release()  # the write was replicated after all
    assert answers == [OK]
    assert read(c, leader_epoch=1).state_batches == (batch(0, 0, ACKED, 1),)  # from the new load


# ---------------------------------------------------------------------------------- log size


def neighbour(idx: int) -> str:
    """A group whose share-partition (TOPIC, 0) lives in the same state partition as GROUP's."""
    return next(g for g in (f"g-{i}" for i in range(10_000)) if index_of(0, group=g) == idx)


def test_last_redundant_offset_is_the_oldest_latest_snapshot() -> None:
    c, log = make(per_snapshot=0)  # every record a snapshot
    idx = index_of()
    other = neighbour(idx)
    assert c.last_redundant_offset(idx) is None  # empty
    init(c)  # offset 0
    assert c.last_redundant_offset(idx) is None  # offset 0: nothing below it
    read(c)  # offset 1: a new snapshot of GROUP's share-partition
    assert c.last_redundant_offset(idx) == 1
    assert call(c.initialize, other, TOPIC, 0, InitializeData(0)) == OK  # offset 2
    assert c.last_redundant_offset(idx) == 1
    write(c, batch(0, 0, ACKED, 1))  # offset 3
    assert c.last_redundant_offset(idx) == 2  # now the other one's snapshot is the oldest
    # an append issued after the oldest snapshot lands above it: it does not hold pruning back
    log.hold = True
    c.write(GROUP, TOPIC, 0, WriteData(0, 1, 0, (batch(1, 1, ACKED, 1),)), lambda r: None)
    assert c.last_redundant_offset(idx) == 2
    log.release()
    log.hold = False
    assert call(c.delete, other, TOPIC, 0) == OK  # offset 5, a tombstone
    assert c.last_redundant_offset(idx) == 4
    assert call(c.delete, GROUP, TOPIC, 0) == OK  # offset 6
    assert c.last_redundant_offset(idx) == 7  # nothing live: all of it


def test_pruning_below_the_redundant_offset_loses_nothing() -> None:
    c, log = make(per_snapshot=1)
    idx = index_of()
    init(c)
    read(c)
    for i in range(6):
        write(c, batch(i, i, ACKED, 1))
    target = c.last_redundant_offset(idx)
    assert target is not None and target > 0
    before = read(c)
    log.partitions[idx] = log.partitions[idx][target:]  # what DeleteRecords leaves
    pruned = make(log, own=False)[0]
    assert pruned.on_elected(idx, 1)
    assert pruned.complete_load(idx, 1, [(target + i, k, v) for i, (k, v) in enumerate(log.partitions[idx])])
    assert read(pruned) == before


def test_an_earlier_append_in_flight_blocks_pruning() -> None:
    c, log = make(per_snapshot=0)
    idx = index_of()
    other = neighbour(idx)
    log.hold = True
    c.initialize(other, TOPIC, 0, InitializeData(0), lambda r: None)  # offset 0
    c.initialize(GROUP, TOPIC, 0, InitializeData(0), lambda r: None)  # offset 1
    # the later append is answered first: the earlier one lies below it and is not replayed
    # yet, so the oldest snapshot known (offset 1) is no safe place to prune to
    log.held.reverse()
    log.release()
    assert c.last_redundant_offset(idx) is None
    log.release()
    log.hold = False
    assert c.last_redundant_offset(idx) is None  # offset 0: nothing below
    read(c)  # GROUP's snapshot at 2
    call(c.read, other, TOPIC, 0, 1)  # the other's at 3
    assert c.last_redundant_offset(idx) == 2


def test_cold_partitions_are_snapshotted_once_they_are_old() -> None:
    clock = Clock(1_000_000)
    c, log = make(clock=clock, cold_ms=60_000)
    idx = index_of()
    init(c)
    read(c)
    write(c, batch(0, 4, ACKED, 1))
    assert c.snapshot_cold_partitions() == 0  # not old yet
    clock.now += 60_000
    assert c.snapshot_cold_partitions() == 1
    assert log.record_types(idx) == ["S", "U", "U", "S"]
    cold = decode_record(*log.partitions[idx][-1]).value
    assert isinstance(cold, ShareSnapshotValue)
    assert (cold.snapshot_epoch, cold.create_timestamp, cold.write_timestamp) == (1, 1_000_000, 1_060_000)
    assert cold.state_batches == (batch(0, 4, ACKED, 1),) and cold.leader_epoch == 1
    assert c.last_redundant_offset(idx) == 3
    clock.now += 600_000
    assert c.snapshot_cold_partitions() == 0  # every share-partition already cold-snapshotted: quiet
    assert read(reloaded(log)).state_batches == (batch(0, 4, ACKED, 1),)


def test_config_bounds() -> None:
    with pytest.raises(ValueError):
        ShareCoordinatorConfig(snapshot_update_records_per_snapshot=501)
    with pytest.raises(ValueError):
        ShareCoordinatorConfig(state_topic_num_partitions=0)
    assert RECORD_TYPE_UPDATE == 1
