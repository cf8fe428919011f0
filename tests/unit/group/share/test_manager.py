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
