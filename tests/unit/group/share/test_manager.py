"""The coordinator's share groups (:mod:`mafka.group.share.manager` through
:class:`~mafka.group.coordinator.GroupCoordinator`): writes before answers, the share-partitions'
initialization round trip, loads, and group ids shared with the other group types."""

from __future__ import annotations

from mafka.errors import ErrorCode as E
from mafka.group.consumer.group_types import HeartbeatRequest as ConsumerHeartbeat
from mafka.group.coordinator import CoordinatorConfig, GroupCoordinator
from mafka.group.share.group_types import HeartbeatRequest
from mafka.group.share.records import is_share_group_key
from tests.unit.group.consumer.group_helpers import topics
from tests.unit.group.fakes import Clock, FakeLog, Timers

GROUP = "sg"
TOPICS = topics(foo=2)
MEMBER = "m" * 22


def make(log: FakeLog | None = None, initialize: bool | None = True):
    clock = Clock()
    log = log or FakeLog()
    coordinator = GroupCoordinator(CoordinatorConfig(offsets_partitions=1), clock, Timers(clock), log, lambda: TOPICS)
    asked: list = []
    if initialize is not None:
        def initializer(request, done):
            asked.append(request)
            done(initialize)
        coordinator.share_groups.initializer = initializer
    assert coordinator.on_elected(0, 1)
    assert coordinator.complete_load(0, 1, log.durable[0])
    return coordinator, log, asked


def heartbeat(coordinator, member=MEMBER, epoch=0, names=("foo",)) -> list:
    out: list = []
    coordinator.share_group_heartbeat(HeartbeatRequest(GROUP, member, epoch, subscribed_topic_names=names), out.append)
    return out


def test_a_join_is_written_then_its_partitions_initialized_then_assigned() -> None:
    coordinator, log, asked = make()
    log.auto = False
    answers = heartbeat(coordinator)
    assert answers == [] and all(is_share_group_key(k) for k, _ in log.held[0][1])
    log.auto = True
    log.release()
    (joined,) = answers
    assert joined.error_code == E.NONE and joined.member_epoch > 0
    assert len(asked) == 1 and asked[0].topic_partitions() == {TOPICS["foo"].topic_id: frozenset({0, 1})}
    (next_beat,) = heartbeat(coordinator, epoch=joined.member_epoch, names=None)
    assert next_beat.error_code == E.NONE
    assert next_beat.assignment == {TOPICS["foo"].topic_id: frozenset({0, 1})}


def test_without_a_share_coordinator_nothing_is_assigned() -> None:
    coordinator, _, _ = make(initialize=None)
    (joined,) = heartbeat(coordinator)
    (beat,) = heartbeat(coordinator, epoch=joined.member_epoch, names=None)
    assert not beat.assignment


def test_a_new_coordinator_resumes_the_share_group_from_its_records() -> None:
    coordinator, log, _ = make()
    (joined,) = heartbeat(coordinator)
    heartbeat(coordinator, epoch=joined.member_epoch, names=None)
    before = coordinator.share_groups.get(GROUP).group.snapshot()
    successor, _, _ = make(log)
    assert successor.share_groups.get(GROUP).group.snapshot() == before
    assert successor.group_manager.get_group(GROUP) is None  # no classic group beside it


def test_a_group_id_belongs_to_one_group_type() -> None:
    coordinator, _, _ = make()
    heartbeat(coordinator)
    consumer: list = []
    coordinator.consumer_group_heartbeat(
        ConsumerHeartbeat(GROUP, "c" * 22, 0, rebalance_timeout_ms=1000, subscribed_topic_names=["foo"],
                          topic_partitions={}), consumer.append)
    assert consumer[0].error_code == E.GROUP_ID_NOT_FOUND
    joins: list = []
    coordinator.join_group(GROUP, "", None, False, "c", "/h", 30_000, 10_000, "consumer", [("range", b"")],
                           joins.append)
    assert joins[0].error == E.INCONSISTENT_GROUP_PROTOCOL
    error, groups = coordinator.list_groups()
    assert [(g.group_id, g.group_type, g.protocol_type) for g in groups] == [(GROUP, "share", "share")]
    other: list = []
    coordinator.consumer_group_heartbeat(
        ConsumerHeartbeat("cg", "c" * 22, 0, rebalance_timeout_ms=1000, subscribed_topic_names=["foo"],
                          topic_partitions={}), other.append)
    share_to_consumer: list = []
    coordinator.share_group_heartbeat(HeartbeatRequest("cg", MEMBER, 0, subscribed_topic_names=["foo"]),
                                      share_to_consumer.append)
    assert share_to_consumer[0].error_code == E.GROUP_ID_NOT_FOUND


def _delete(coordinator, *groups: str) -> tuple[dict, dict]:
    """DeleteGroups as the broker runs it: the share groups' first step, then the deletion."""
    begun: list = []
    coordinator.begin_share_group_deletions(list(groups), begun.append)
    deleted: list = []
    coordinator.delete_groups(list(groups), deleted.append)
    return begun[0], deleted[0]


def test_a_share_group_with_a_member_is_not_deleted() -> None:
    coordinator, _, _ = make()
    (joined,) = heartbeat(coordinator)
    heartbeat(coordinator, epoch=joined.member_epoch, names=None)
    begun, deleted = _delete(coordinator, GROUP)
    assert begun == {GROUP: (E.NON_EMPTY_GROUP, {})}
    assert deleted == {GROUP: E.NON_EMPTY_GROUP}
    assert coordinator.share_groups.get(GROUP) is not None


def test_an_empty_share_group_is_deleted_with_its_share_partition_state() -> None:
    coordinator, log, _ = make()
    (joined,) = heartbeat(coordinator)
    heartbeat(coordinator, epoch=joined.member_epoch, names=None)
    (left,) = heartbeat(coordinator, epoch=-1, names=None)
    assert left.error_code == E.NONE
    begun, deleted = _delete(coordinator, GROUP, "unknown")
    # The initialized share-partitions are the ones whose state the share coordinator deletes.
    assert begun == {GROUP: (E.NONE, {TOPICS["foo"].topic_id: frozenset({0, 1})})}
    assert deleted == {GROUP: E.NONE, "unknown": E.GROUP_ID_NOT_FOUND}
    assert coordinator.share_groups.get(GROUP) is None
    assert [g.group_id for g in coordinator.list_groups()[1]] == []
    # Tombstones are written: a new coordinator does not find the group, and the id starts afresh.
    successor, _, asked = make(log)
    assert successor.share_groups.get(GROUP) is None
    (again,) = heartbeat(successor)
    assert again.error_code == E.NONE and again.member_epoch == 1
    assert asked[-1].topic_partitions() == {TOPICS["foo"].topic_id: frozenset({0, 1})}


def test_a_failed_write_of_the_first_step_is_the_groups_error() -> None:
    coordinator, log, _ = make()
    (joined,) = heartbeat(coordinator)
    heartbeat(coordinator, epoch=joined.member_epoch, names=None)
    heartbeat(coordinator, epoch=-1, names=None)
    log.auto = False
    begun: list = []
    coordinator.begin_share_group_deletions([GROUP], begun.append)
    log.release(E.NOT_LEADER_OR_FOLLOWER)
    assert begun == [{GROUP: (E.NOT_COORDINATOR, {})}]
    assert coordinator.share_groups.get(GROUP) is not None


def test_group_config_overrides_set_the_share_session_timeout_and_heartbeat_interval() -> None:
    """Kafka 4.2's ``share.session.timeout.ms`` / ``share.heartbeat.interval.ms`` group configs."""
    clock = Clock()
    timers = Timers(clock)
    log = FakeLog()
    coordinator = GroupCoordinator(CoordinatorConfig(offsets_partitions=1), clock, timers, log, lambda: TOPICS)
    overrides: dict[str, dict[str, str]] = {}
    coordinator.use_group_configs(lambda g: overrides.get(g, {}))
    assert coordinator.on_elected(0, 1)
    assert coordinator.complete_load(0, 1, log.durable[0])
    (joined,) = heartbeat(coordinator)
    assert joined.heartbeat_interval_ms == 5_000  # group.share.heartbeat.interval.ms
    overrides[GROUP] = {"share.session.timeout.ms": "4000", "share.heartbeat.interval.ms": "1500"}
    (beat,) = heartbeat(coordinator, epoch=joined.member_epoch, names=None)
    assert beat.error_code == E.NONE and beat.heartbeat_interval_ms == 1_500
    timers.advance(3_999)
    assert MEMBER in coordinator.share_groups.get(GROUP).group.members
    timers.advance(2)  # silent for the overridden 4 s (the broker's is 45 s): fenced
    assert not coordinator.share_groups.get(GROUP).group.members
