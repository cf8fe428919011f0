"""The share-partitions a leader holds: loading, fetching, acknowledging, lock timers, failovers.

The manager runs against the real share coordinator (:class:`~mafka.share.coordinator.ShareCoordinator`)
over a fake ``__share_group_state`` log (:class:`StateLog`) whose appends complete at once,
wait for :meth:`StateLog.release`, or fail; time is a fake clock with fake timers.  A failover
is a second manager (the new leader, a higher leader epoch) reading the same coordinator: what
it finds is exactly what was written before the old leader answered.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from mafka.errors import ErrorCode
from mafka.group.share.acknowledgements import PartitionAcknowledgement
from mafka.group.share.partition_manager import (
    PartitionStatus,
    ShareGroupSettings,
    SharePartitionManager,
    persister_error,
)
from mafka.group.share.partition_state import (
    AcknowledgementBatch,
    AcknowledgeType,
    AcquiredRecords,
    FetchedBatch,
    RecordState,
)
from mafka.group.share.state_records import SharePartitionKey
from mafka.share.coordinator import ShareCoordinator, ShareCoordinatorConfig
from mafka.share.state_types import InitializeData, PartitionResult, ReadResult, WriteData
from tests.unit.group.fakes import Clock, Timers

TOPIC = bytes(range(1, 17))
GROUP = "queue"
KEY = SharePartitionKey(GROUP, TOPIC, 0)
ACCEPT, RELEASE, REJECT = AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT
SETTINGS = ShareGroupSettings(record_lock_duration_ms=2000, delivery_count_limit=3, max_record_locks=100,
                              auto_offset_reset="earliest")


class StateLog:
    """``__share_group_state``-0 in memory: appends succeed at once, are held (``hold``) or fail (``fail_with``)."""

    def __init__(self) -> None:
        self.records: list[tuple[bytes, bytes | None]] = []
        self.hold = False
        self.fail_with: int | None = None
        self.held: list[Callable[[], None]] = []

    def append(self, partition: int, records: Any, done: Callable[[int, int | None], None]) -> None:
        if self.fail_with is not None:
            done(self.fail_with, None)
            return

        def complete() -> None:
            offset = len(self.records)
            self.records.extend(records)
            done(ErrorCode.NONE, offset)

        if self.hold:
            self.held.append(complete)
        else:
            complete()

    def release(self) -> None:
        held, self.held = self.held, []
        for complete in held:
            complete()


class CoordinatorPersister:
    """The manager's persister seam over a real share coordinator; counts the calls."""

    def __init__(self, coordinator: ShareCoordinator) -> None:
        self.coordinator = coordinator
        self.reads = 0
        self.writes: list[WriteData] = []

    def read(self, key: SharePartitionKey, leader_epoch: int, done: Callable[[ReadResult], None]) -> None:
        self.reads += 1
        self.coordinator.read(key.group_id, key.topic_id, key.partition, leader_epoch, done)

    def write(self, key: SharePartitionKey, data: WriteData, done: Callable[[PartitionResult], None]) -> None:
        self.writes.append(data)
        self.coordinator.write(key.group_id, key.topic_id, key.partition, data, done)


class Leader:
    """One share-partition leader: a manager, its clock and timers, and what it told its listeners."""

    def __init__(self, coordinator: ShareCoordinator, clock: Clock, settings: ShareGroupSettings = SETTINGS) -> None:
        self.clock = clock
        self.timers = Timers(clock)
        self.persister = CoordinatorPersister(coordinator)
        self.manager = SharePartitionManager(self.persister, self.timers, clock, lambda _group: settings)
        self.available: list[SharePartitionKey] = []
        self.unlocked: list[SharePartitionKey] = []
        self.manager.on_available = self.available.append
        self.manager.on_unlocked = self.unlocked.append

    def load(self, leader_epoch: int = 1, log: tuple[int, int] = (0, 100), key: SharePartitionKey = KEY) -> list:
        answers: list = []
        self.manager.load(key, leader_epoch, lambda: log, lambda e, m: answers.append(e))
        return answers

    def fetch(self, member: str, first: int, last: int, max_records: int = 500, key: SharePartitionKey = KEY,
              batches: list[FetchedBatch] | None = None) -> tuple[tuple[AcquiredRecords, ...], list]:
        """A fetch that read plain one-record batches ``first..last`` (or *batches*) from the log."""
        offset = self.manager.begin_fetch(key, 0)
        assert offset is not None, "the fetch lock was not free"
        read = batches if batches is not None else [FetchedBatch(o, o) for o in range(first, last + 1)]
        durable: list = []
        acquired = self.manager.end_fetch(key, member, read, max_records, lambda e, m: durable.append(e),
                                          fetch_offset=offset)
        return acquired, durable

    def ack(self, member: str, *batches: AcknowledgementBatch, key: SharePartitionKey = KEY,
            version: int = 1) -> list[PartitionAcknowledgement]:
        answers: list[PartitionAcknowledgement] = []
        self.manager.acknowledge(key, member, list(batches), answers.append, api_version=version)
        return answers

    def state(self, key: SharePartitionKey = KEY) -> Any:
        sp = self.manager.get(key)
        assert sp is not None and sp.state is not None
        return sp.state


def ack(first: int, last: int, kind: int) -> AcknowledgementBatch:
    return AcknowledgementBatch.of(first, last, kind)


@pytest.fixture
def log() -> StateLog:
    return StateLog()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def coordinator(log: StateLog, clock: Clock) -> ShareCoordinator:
    c = ShareCoordinator(ShareCoordinatorConfig(state_topic_num_partitions=1), clock, log)
    assert c.on_elected(0, 0)
    assert c.complete_load(0, 0, [])
    answers: list = []
    c.initialize(GROUP, TOPIC, 0, InitializeData(state_epoch=0), answers.append)  # as the group coordinator does
    assert answers == [PartitionResult()]
    return c


@pytest.fixture
def leader(coordinator: ShareCoordinator, clock: Clock) -> Leader:
    node = Leader(coordinator, clock)
    assert node.load() == [ErrorCode.NONE]
    return node


def durable_state(coordinator: ShareCoordinator, key: SharePartitionKey = KEY) -> Any:
    state = coordinator.state(key.group_id, key.topic_id, key.partition)
    assert state is not None
    return state


# ------------------------------------------------------------------------------ loading


def test_an_uninitialized_share_partition_starts_at_latest_and_writes_that_start_at_once(
        coordinator: ShareCoordinator, clock: Clock) -> None:
    node = Leader(coordinator, clock, ShareGroupSettings())  # share.auto.offset.reset: Kafka's default, latest
    assert node.load(log=(5, 42)) == [ErrorCode.NONE]
    assert node.state().start_offset == 42
    assert durable_state(coordinator).start_offset == 42  # a failover now does not move it
    assert node.available == [KEY]


def test_earliest_starts_at_the_log_start_offset(leader: Leader, coordinator: ShareCoordinator) -> None:
    assert leader.state().start_offset == 0
    assert durable_state(coordinator).start_offset == 0


def test_loads_wait_for_the_read_and_a_second_load_shares_it(coordinator: ShareCoordinator, clock: Clock,
                                                             log: StateLog) -> None:
    node = Leader(coordinator, clock)
    log.hold = True  # the read of a new leader epoch writes that epoch first
    first, second = node.load(), node.load()
    assert first == second == []
    sp = node.manager.get(KEY)
    assert sp is not None and sp.status is PartitionStatus.LOADING
    assert node.manager.begin_fetch(KEY, 0) is None  # nothing to fetch while loading
    log.release()
    assert first == second == [ErrorCode.NONE]
    assert node.persister.reads == 1


def test_a_failed_read_answers_the_waiters_and_forgets_the_partition(coordinator: ShareCoordinator,
                                                                     clock: Clock) -> None:
    node = Leader(coordinator, clock)
    never = SharePartitionKey(GROUP, TOPIC, 3)  # never initialized by the group coordinator
    assert node.load(key=never) == [ErrorCode.UNKNOWN_SERVER_ERROR]  # INVALID_REQUEST, as Kafka maps it
    assert node.manager.get(never) is None
    assert node.available == [never]
    assert node.load() == [ErrorCode.NONE]  # another share-partition is unaffected


@pytest.mark.parametrize(("coordinator_error", "client_error"), [
    (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE),
    (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE),
    (ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.NOT_LEADER_OR_FOLLOWER),
    (ErrorCode.FENCED_STATE_EPOCH, ErrorCode.NOT_LEADER_OR_FOLLOWER),
    (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    (ErrorCode.INVALID_REQUEST, ErrorCode.UNKNOWN_SERVER_ERROR),
])
def test_share_coordinator_errors_are_mapped_as_kafka_does(coordinator_error: ErrorCode,
                                                           client_error: ErrorCode) -> None:
    assert persister_error(coordinator_error) == client_error


# ------------------------------------------------------------------------------ fetching


def test_two_members_get_different_records_and_one_fetch_at_a_time(leader: Leader) -> None:
    m = leader.manager
    assert m.begin_fetch(KEY, 0) == 0
    assert m.begin_fetch(KEY, 0) is None  # the fetch lock is taken
    durable: list = []
    got_a = m.end_fetch(KEY, "a", [FetchedBatch(o, o) for o in range(10)], 4, lambda e, _m: durable.append(e),
                        fetch_offset=0)
    assert got_a == (AcquiredRecords(0, 3, 1),)
    assert leader.unlocked == [KEY]
    got_b, _ = leader.fetch("b", 0, 9, max_records=100)
    assert got_b == (AcquiredRecords(4, 9, 1),)
    assert durable == [ErrorCode.NONE]
    assert [(r.first_offset, r.last_offset, r.member_id) for r in leader.state().records()] == [
        (0, 3, "a"), (4, 9, "b")]


def test_an_acquisition_is_answered_only_once_its_delivery_count_is_durable(leader: Leader, log: StateLog,
                                                                           coordinator: ShareCoordinator) -> None:
    log.hold = True
    acquired, durable = leader.fetch("a", 0, 4)
    assert acquired == (AcquiredRecords(0, 4, 1),)
    assert durable == []  # not delivered yet
    log.release()
    assert durable == [ErrorCode.NONE]
    assert [(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
            for b in durable_state(coordinator).state_batches] == [(0, 4, 0, 1)]


def test_control_batches_and_aborted_records_are_archived_never_delivered(leader: Leader) -> None:
    m = leader.manager
    offset = m.begin_fetch(KEY, 0)
    assert offset == 0
    read = [FetchedBatch(0, 1), FetchedBatch(2, 4), FetchedBatch(5, 5, control=True), FetchedBatch(6, 7)]
    got = m.end_fetch(KEY, "a", read, 100, lambda e, _m: None, fetch_offset=offset, aborted=[(2, 4)])
    assert got == (AcquiredRecords(0, 1, 1), AcquiredRecords(6, 7, 1))
    assert leader.state().record(3).state is RecordState.ARCHIVED


def test_a_full_window_takes_no_fetch_until_records_finish(coordinator: ShareCoordinator, clock: Clock) -> None:
    node = Leader(coordinator, clock, ShareGroupSettings(max_record_locks=100, auto_offset_reset="earliest"))
    node.load()
    got, _ = node.fetch("a", 0, 199)
    assert got == (AcquiredRecords(0, 99, 1),)  # group.share.partition.max.record.locks
    assert node.manager.begin_fetch(KEY, 0) is None
    assert node.ack("a", ack(0, 9, ACCEPT)) == [PartitionAcknowledgement()]
    assert KEY in node.available  # room again: waiting fetches are woken
    assert node.manager.begin_fetch(KEY, 0) == 100


def test_records_below_the_log_start_offset_are_skipped(leader: Leader) -> None:
    assert leader.manager.begin_fetch(KEY, 30) == 30  # retention moved the log start past the SPSO
    leader.manager.abort_fetch(KEY)
    assert leader.state().start_offset == 30


# ------------------------------------------------------------------------------ acknowledging


def test_an_acknowledgement_is_answered_only_after_it_is_written(leader: Leader, log: StateLog,
                                                                 coordinator: ShareCoordinator) -> None:
    leader.fetch("a", 0, 9)
    log.hold = True
    answers = leader.ack("a", ack(0, 9, ACCEPT))
    assert answers == []
    assert durable_state(coordinator).start_offset == 0
    log.release()
    assert answers == [PartitionAcknowledgement()]
    assert durable_state(coordinator).start_offset == 10


def test_changes_made_during_a_write_go_in_the_next_one(leader: Leader, log: StateLog) -> None:
    leader.fetch("a", 0, 9)
    log.hold = True
    first = leader.ack("a", ack(0, 4, ACCEPT))
    second = leader.ack("a", ack(5, 9, ACCEPT))
    assert len(log.held) == 1  # one WriteShareGroupState in flight per share-partition
    log.release()  # the first write completes; the second is sent
    assert first == [PartitionAcknowledgement()] and second == []
    log.release()
    assert second == [PartitionAcknowledgement()]


def test_a_failed_write_answers_the_error_and_the_state_is_read_again(leader: Leader, log: StateLog,
                                                                       coordinator: ShareCoordinator) -> None:
    leader.fetch("a", 0, 9)
    assert leader.ack("a", ack(0, 2, ACCEPT)) == [PartitionAcknowledgement()]
    log.fail_with = ErrorCode.NOT_ENOUGH_REPLICAS
    answers = leader.ack("a", ack(3, 5, ACCEPT))
    assert [a.error_code for a in answers] == [ErrorCode.COORDINATOR_NOT_AVAILABLE]
    assert leader.manager.get(KEY) is None  # memory never stays ahead of the durable state
    log.fail_with = None
    assert leader.load() == [ErrorCode.NONE]
    state = leader.state()
    assert state.start_offset == 3  # the written ACCEPT survived, the failed one did not
    assert [(r.first_offset, r.last_offset, r.state, r.delivery_count) for r in state.records()] == [
        (3, 9, RecordState.AVAILABLE, 1)]


def test_release_makes_records_available_to_another_member(leader: Leader) -> None:
    leader.fetch("a", 0, 4)
    leader.available.clear()
    assert leader.ack("a", ack(0, 4, RELEASE)) == [PartitionAcknowledgement()]
    assert leader.available == [KEY]
    got, _ = leader.fetch("b", 0, 4)
    assert got == (AcquiredRecords(0, 4, 2),)


def test_new_group_settings_apply_to_a_loaded_share_partition(leader: Leader) -> None:
    """A group config change reaches the share-partitions already loaded (Kafka reads them at each use)."""
    leader.fetch("a", 0, 1)
    changed = ShareGroupSettings(record_lock_duration_ms=5000, delivery_count_limit=2, max_record_locks=100,
                                 auto_offset_reset="earliest")
    leader.manager.update_settings(KEY, changed)
    sp = leader.manager.get(KEY)
    assert sp is not None and sp.settings is changed
    assert leader.state().config.record_lock_duration_ms == 5000
    assert leader.state().config.persist_acquisitions  # kept
    leader.timers.advance(2000)  # a's lock was taken under the old duration: it expires as it was given
    got, _ = leader.fetch("b", 0, 1)
    assert got == (AcquiredRecords(0, 1, 2),)
    leader.timers.advance(4999)
    assert leader.fetch("c", 0, 1)[0] == ()  # b's lock is the new one: still held
    leader.timers.advance(1)  # delivery count 2 reaches the new limit of 2: archived, not offered again
    assert leader.fetch("c", 0, 1)[0] == ()
    assert leader.state().start_offset == 2
    leader.manager.update_settings(SharePartitionKey(GROUP, TOPIC, 9), changed)  # not loaded here: nothing


def test_reject_archives_for_good(leader: Leader) -> None:
    leader.fetch("a", 0, 4)
    assert leader.ack("a", ack(2, 2, REJECT)) == [PartitionAcknowledgement()]
    assert leader.ack("a", ack(0, 1, RELEASE), ack(3, 4, RELEASE)) == [PartitionAcknowledgement()]
    got, _ = leader.fetch("b", 0, 4)
    assert got == (AcquiredRecords(0, 1, 2), AcquiredRecords(3, 4, 2))


def test_acknowledging_records_not_held_changes_nothing_of_the_partition(leader: Leader,
                                                                         coordinator: ShareCoordinator) -> None:
    leader.fetch("a", 0, 4)
    leader.fetch("b", 5, 9)
    writes = len(leader.persister.writes)
    answers = leader.ack("a", ack(0, 4, ACCEPT), ack(5, 5, ACCEPT))  # 5 is b's
    assert [a.error_code for a in answers] == [ErrorCode.INVALID_RECORD_STATE]
    assert len(leader.persister.writes) == writes
    assert leader.state().record(0).state is RecordState.ACQUIRED  # the valid batch was not applied either
    assert [a.error_code for a in leader.ack("a", ack(50, 50, ACCEPT))] == [ErrorCode.INVALID_RECORD_STATE]
    assert [a.error_code for a in leader.ack("b", ack(5, 9, ACCEPT))] == [ErrorCode.NONE]  # b is undisturbed


def test_malformed_batches_are_invalid_request(leader: Leader) -> None:
    leader.fetch("a", 0, 9)
    overlapping = leader.ack("a", ack(0, 5, ACCEPT), ack(5, 9, ACCEPT))
    reversed_ = leader.ack("a", ack(5, 3, ACCEPT))
    renew_in_v1 = leader.ack("a", ack(0, 1, AcknowledgeType.RENEW))
    assert [a.error_code for a in overlapping + reversed_ + renew_in_v1] == [ErrorCode.INVALID_REQUEST] * 3
    assert leader.state().acquired_count() == 10


def test_no_share_partition_here_is_unknown_topic_or_partition(leader: Leader) -> None:
    other = SharePartitionKey("other-group", TOPIC, 0)
    assert [a.error_code for a in leader.ack("a", ack(0, 0, ACCEPT), key=other)] == [
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
    assert leader.ack("a", key=other) == [PartitionAcknowledgement()]  # nothing to acknowledge: NONE


# ------------------------------------------------------------------------------ locks and members


def test_an_unacknowledged_record_comes_back_after_the_lock_duration(leader: Leader,
                                                                     coordinator: ShareCoordinator) -> None:
    leader.fetch("a", 0, 2)
    leader.available.clear()
    leader.timers.advance(1999)
    assert leader.state().acquired_count() == 3
    leader.timers.advance(1)
    assert leader.state().acquired_count() == 0
    assert leader.available == [KEY]
    assert [a.error_code for a in leader.ack("a", ack(0, 2, ACCEPT))] == [ErrorCode.INVALID_RECORD_STATE]
    got, _ = leader.fetch("b", 0, 2)
    assert got == (AcquiredRecords(0, 2, 2),)
    assert leader.timers.live() == 1  # one timer per share-partition, at the earliest expiry


def test_metrics_count_locks_held_lock_timeouts_redeliveries_and_acknowledgements(leader: Leader) -> None:
    manager = leader.manager
    leader.fetch("a", 0, 9)
    assert manager.share_partition_rows() == [(KEY, 10, 10)]  # 10 in flight, all 10 locked
    assert leader.ack("a", ack(0, 3, ACCEPT), ack(4, 4, REJECT), ack(5, 6, RELEASE)) == [PartitionAcknowledgement()]
    assert manager.acknowledged == {AcknowledgeType.ACCEPT: 4, AcknowledgeType.REJECT: 1, AcknowledgeType.RELEASE: 2}
    assert manager.share_partition_rows() == [(KEY, 5, 3)]  # 0-4 done: the window is 5-9, 7-9 still locked
    assert manager.redelivered == {} and manager.lock_timeouts == {}
    leader.timers.advance(2000)  # 7-9's locks time out
    assert manager.lock_timeouts == {KEY: 3}
    assert manager.share_partition_rows() == [(KEY, 5, 0)]
    got, _ = leader.fetch("b", 5, 9)
    assert got == (AcquiredRecords(5, 9, 2),)
    assert manager.redelivered == {KEY: 5}  # released twice and timed out three: delivered again
    leader.manager.leadership_changed(TOPIC, 0, None)  # dropped: the counters stay
    assert manager.share_partition_rows() == [] and manager.redelivered == {KEY: 5}


def test_a_record_past_the_delivery_count_limit_is_archived(leader: Leader) -> None:
    for delivery in (1, 2, 3):
        got, _ = leader.fetch("a", 0, 0)
        assert got == (AcquiredRecords(0, 0, delivery),)
        leader.timers.advance(2000)  # the consumer crashes on it each time
    assert leader.state().start_offset == 1  # delivery.count.limit 3: archived, the SPSO moves past it
    assert leader.manager.begin_fetch(KEY, 0) == 1


def test_a_member_that_leaves_releases_its_records(leader: Leader) -> None:
    leader.fetch("a", 0, 4)
    leader.fetch("b", 5, 9)
    assert leader.manager.release_member(GROUP, "a") == 5
    assert leader.manager.release_member("other-group", "b") == 0
    assert leader.manager.release_member(GROUP, "b", [(TOPIC, 1)]) == 0  # not a partition of its session
    state = leader.state()
    assert state.record(0).state is RecordState.AVAILABLE and state.record(5).member_id == "b"


# ------------------------------------------------------------------------------ failovers


def test_a_new_leader_loses_no_acknowledgement_and_redelivers_every_unacknowledged_record(
        leader: Leader, coordinator: ShareCoordinator, clock: Clock) -> None:
    leader.fetch("a", 0, 9)
    leader.fetch("b", 10, 14)
    assert leader.ack("a", ack(0, 4, ACCEPT), ack(6, 6, REJECT)) == [PartitionAcknowledgement()]
    new = Leader(coordinator, clock)
    assert new.load(leader_epoch=2) == [ErrorCode.NONE]
    state = new.state()
    assert state.start_offset == 5
    assert [(r.first_offset, r.last_offset, r.state, r.delivery_count) for r in state.records()] == [
        (5, 5, RecordState.AVAILABLE, 1), (6, 6, RecordState.ARCHIVED, 1),
        (7, 14, RecordState.AVAILABLE, 1)]
    # The old leader, still running, is fenced: its acknowledgement is refused, not lost silently.
    answers = leader.ack("a", ack(5, 5, ACCEPT))
    assert [a.error_code for a in answers] == [ErrorCode.NOT_LEADER_OR_FOLLOWER]
    assert leader.manager.get(KEY) is None


def test_leadership_moving_drops_the_share_partition(leader: Leader) -> None:
    leader.fetch("a", 0, 4)
    leader.manager.leadership_changed(TOPIC, 0, 1)  # same epoch: nothing happens
    assert leader.manager.get(KEY) is not None
    leader.manager.leadership_changed(TOPIC, 0, None)
    assert leader.manager.get(KEY) is None
    assert not leader.manager.holds(TOPIC, 0)
    assert leader.timers.live() == 0
    assert [a.error_code for a in leader.ack("a", ack(0, 4, ACCEPT))] == [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]


def test_a_group_without_sessions_here_is_dropped_and_a_recreated_group_starts_afresh(
        leader: Leader, coordinator: ShareCoordinator) -> None:
    leader.fetch("a", 0, 9)
    assert leader.ack("a", ack(0, 9, ACCEPT)) == [PartitionAcknowledgement()]
    assert leader.state().start_offset == 10
    assert leader.manager.drop_group("other-group") == 0
    # The group is deleted (DeleteShareGroupState) and created again, at the same state epoch.
    deleted: list = []
    coordinator.delete(GROUP, TOPIC, 0, deleted.append)
    initialized: list = []
    coordinator.initialize(GROUP, TOPIC, 0, InitializeData(state_epoch=0), initialized.append)
    assert deleted == initialized == [PartitionResult()]
    # Its last share session here went (Kafka's onGroupEmpty): the old state is forgotten.
    assert leader.manager.drop_group(GROUP) == 1
    assert leader.manager.get(KEY) is None and not leader.manager.holds(TOPIC, 0)
    assert leader.timers.live() == 0
    assert leader.load() == [ErrorCode.NONE]
    assert leader.state().start_offset == 0  # share.auto.offset.reset earliest, not the old group's 10
    acquired, _ = leader.fetch("b", 0, 9)
    assert [(a.first_offset, a.last_offset) for a in acquired] == [(0, 9)]


def test_a_load_at_a_newer_leader_epoch_reloads(leader: Leader, coordinator: ShareCoordinator) -> None:
    leader.fetch("a", 0, 4)
    assert leader.load(leader_epoch=3) == [ErrorCode.NONE]
    assert leader.persister.reads == 2
    assert leader.state().acquired_count() == 0
    assert leader.state().leader_epoch == 3
