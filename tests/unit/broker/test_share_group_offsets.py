"""DescribeShareGroupOffsets (90), AlterShareGroupOffsets (91), DeleteShareGroupOffsets (92) at the
broker (:mod:`mafka.broker.handlers.share_group_offsets`) over a real group coordinator and a fake
share-group state persister; every request and answer goes through the wire codec."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from twisted.internet import defer

from mafka.broker.handlers import share_group_offsets
from mafka.errors import ErrorCode as E
from mafka.errors import NotLeaderOrFollowerError
from mafka.group.coordinator import CoordinatorConfig, GroupCoordinator
from mafka.group.share.group_types import HeartbeatRequest
from mafka.security.acl import AclOperation, ResourceType
from mafka.share.state_types import PartitionResult, SummaryResult
from mafka.wire.codec import decode_request, decode_response, encode_request, encode_response
from tests.unit.group.consumer.group_helpers import topics
from tests.unit.group.fakes import Clock, FakeLog, Timers

GROUP = "sg"
TOPICS = topics(foo=2)
FOO = TOPICS["foo"].topic_id
MEMBER = "m" * 22


class Persister:
    """Answers at once; remembers what it was asked."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, dict]] = []
        self.summary: dict[tuple[bytes, int], SummaryResult] = {}
        self.fail: dict[tuple[bytes, int], E] = {}

    def _results(self, topics: dict, make: Any) -> defer.Deferred:
        return defer.succeed({t: {p: make(t, p) for p in ps} for t, ps in topics.items()})

    def read_summary(self, group_id: str, topics: dict) -> defer.Deferred:
        self.calls.append(("summary", group_id, topics))
        return self._results(topics, lambda t, p: self.summary.get((t, p), SummaryResult()))

    def initialize(self, group_id: str, topics: dict) -> defer.Deferred:
        self.calls.append(("initialize", group_id, topics))
        return self._results(topics, lambda t, p: PartitionResult(self.fail.get((t, p), E.NONE)))

    def delete(self, group_id: str, topics: dict) -> defer.Deferred:
        self.calls.append(("delete", group_id, {t: sorted(ps) for t, ps in topics.items()}))
        return self._results(topics, lambda t, p: PartitionResult(self.fail.get((t, p), E.NONE)))


class Replicas:
    """Leads foo-0 only, whose high watermark is 100."""

    def list_offset(self, topic: str, index: int, timestamp: int) -> tuple[int, int, int]:
        assert timestamp == -1
        if (topic, index) != ("foo", 0):
            raise NotLeaderOrFollowerError()
        return -1, 100, 3


class Authorizer:
    enabled = True

    def __init__(self, denied: set[tuple[AclOperation, ResourceType, str]]) -> None:
        self.denied = denied

    def authorize(self, _connection: Any, operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
        return (operation, resource_type, name) not in self.denied


def make(denied: set | None = None) -> tuple[dict, GroupCoordinator, Persister]:
    clock = Clock()
    log = FakeLog()
    coordinator = GroupCoordinator(CoordinatorConfig(offsets_partitions=1), clock, Timers(clock), log, lambda: TOPICS)
    coordinator.share_groups.initializer = lambda request, done: done(True)
    assert coordinator.on_elected(0, 1) and coordinator.complete_load(0, 1, log.durable[0])
    persister = Persister()
    broker = SimpleNamespace(
        group_service=SimpleNamespace(checked_coordinator=lambda: coordinator),
        metadata_cache=SimpleNamespace(topic_ids={"foo": FOO}, partitions={"foo": {0: None, 1: None}}),
        replica_manager=Replicas(),
        share_persister=persister,
        authorizer=Authorizer(denied or set()),
    )
    return share_group_offsets.handlers(broker), coordinator, persister


def call(handlers: dict, key: int, version: int, body: dict) -> Any:
    request = decode_request(encode_request(key, version, 7, "admin", body)[4:])
    result = handlers[key](request, object())
    answers: list = []
    defer.maybeDeferred(lambda: result).addCallback(answers.append)
    (answer,) = answers
    return decode_response(key, version, encode_response(request.header, answer)[4:])[1]


def join(coordinator: GroupCoordinator) -> int:
    out: list = []
    coordinator.share_group_heartbeat(HeartbeatRequest(GROUP, MEMBER, 0, subscribed_topic_names=["foo"]), out.append)
    assert out[0].error_code == E.NONE
    return out[0].member_epoch


def share_group(coordinator: GroupCoordinator) -> Any:
    entry = coordinator.share_groups.get(GROUP)
    assert entry is not None
    return entry.group


def leave(coordinator: GroupCoordinator) -> None:
    out: list = []
    coordinator.share_group_heartbeat(HeartbeatRequest(GROUP, MEMBER, -1), out.append)
    assert out[0].error_code == E.NONE


def describe(handlers: dict, topics_: list | None, version: int = 1) -> Any:
    body = call(handlers, 90, version, {"groups": [{"group_id": GROUP, "topics": topics_}]})
    (group,) = body.groups
    return group


def test_describe_all_reads_the_initialized_partitions_with_lag_where_the_high_watermark_is_here() -> None:
    handlers, coordinator, persister = make()
    join(coordinator)  # the fixture's initializer initializes foo-0 and foo-1
    persister.summary[(FOO, 0)] = SummaryResult(state_epoch=1, leader_epoch=3, start_offset=40, delivery_complete_count=10)
    persister.summary[(FOO, 1)] = SummaryResult(state_epoch=1, leader_epoch=2, start_offset=7, delivery_complete_count=0)
    group = describe(handlers, None)
    assert group.error_code == E.NONE
    (topic,) = group.topics
    assert (topic.topic_name, topic.topic_id) == ("foo", FOO)
    got = {p.partition_index: (p.start_offset, p.leader_epoch, p.lag, p.error_code) for p in topic.partitions}
    # foo-0: 100 - 40 - 10; foo-1 is led elsewhere: its lag is not known here
    assert got == {0: (40, 3, 50, E.NONE), 1: (7, 2, -1, E.NONE)}


def test_describe_v0_has_no_lag_and_an_unknown_topic_answers_minus_one() -> None:
    handlers, coordinator, persister = make()
    join(coordinator)
    persister.summary[(FOO, 0)] = SummaryResult(start_offset=5, delivery_complete_count=0)
    group = describe(handlers, [{"topic_name": "foo", "partitions": [0]}, {"topic_name": "nope", "partitions": [2]}], 0)
    by_name = {t.topic_name: t for t in group.topics}
    assert [(p.partition_index, p.start_offset) for p in by_name["foo"].partitions] == [(0, 5)]
    assert [(p.partition_index, p.start_offset, p.error_code) for p in by_name["nope"].partitions] == [(2, -1, E.NONE)]
    assert by_name["nope"].topic_id == bytes(16)


def test_describe_of_a_group_that_is_not_a_share_group_is_group_id_not_found() -> None:
    handlers, _, persister = make()
    group = describe(handlers, None)
    assert group.error_code == E.GROUP_ID_NOT_FOUND and group.topics == []
    assert persister.calls == []


def test_describe_needs_describe_on_the_group_and_on_each_topic() -> None:
    handlers, coordinator, _ = make({(AclOperation.DESCRIBE, ResourceType.TOPIC, "foo")})
    join(coordinator)
    assert describe(handlers, None).topics == []
    (topic,) = describe(handlers, [{"topic_name": "foo", "partitions": [1]}]).topics
    assert [(p.error_code, p.start_offset) for p in topic.partitions] == [(E.TOPIC_AUTHORIZATION_FAILED, -1)]
    handlers, coordinator, _ = make({(AclOperation.DESCRIBE, ResourceType.GROUP, GROUP)})
    join(coordinator)
    assert describe(handlers, None).error_code == E.GROUP_AUTHORIZATION_FAILED


def alter(handlers: dict, partitions: dict[str, dict[int, int]]) -> Any:
    return call(handlers, 91, 0, {"group_id": GROUP, "topics": [
        {"topic_name": name, "partitions": [{"partition_index": p, "start_offset": o} for p, o in parts.items()]}
        for name, parts in partitions.items()
    ]})


def test_alter_needs_an_empty_group() -> None:
    handlers, coordinator, persister = make()
    join(coordinator)
    body = alter(handlers, {"foo": {0: 3}})
    assert body.error_code == E.NON_EMPTY_GROUP and body.responses == []
    assert [c[0] for c in persister.calls] == []


def test_alter_writes_then_initializes_at_the_new_offsets() -> None:
    handlers, coordinator, persister = make()
    join(coordinator)
    leave(coordinator)
    epoch = share_group(coordinator).group_epoch
    body = alter(handlers, {"foo": {0: 3, 5: 9}, "nope": {0: 1}})
    assert body.error_code == E.NONE
    got = {(t.topic_name, p.partition_index): p.error_code for t in body.responses for p in t.partitions}
    assert got == {("foo", 0): E.NONE, ("foo", 5): E.UNKNOWN_TOPIC_OR_PARTITION, ("nope", 0): E.UNKNOWN_TOPIC_OR_PARTITION}
    ((op, gid, topics_),) = persister.calls
    assert (op, gid) == ("initialize", GROUP)
    assert {t: {p: d.start_offset for p, d in ps.items()} for t, ps in topics_.items()} == {FOO: {0: 3}}
    # Kafka 4.2 bumps the group epoch: the new state epoch fences leaders holding the old state
    assert topics_[FOO][0].state_epoch == epoch + 1 == share_group(coordinator).group_epoch
    assert share_group(coordinator).initialized_partitions[FOO] >= {0}


def test_alter_creates_an_unknown_share_group_and_reports_a_refused_initialization() -> None:
    handlers, coordinator, persister = make()
    persister.fail[(FOO, 1)] = E.FENCED_STATE_EPOCH
    body = alter(handlers, {"foo": {0: 3, 1: 4}})
    got = {p.partition_index: p.error_code for t in body.responses for p in t.partitions}
    assert got == {0: E.NONE, 1: E.FENCED_STATE_EPOCH}
    entry = coordinator.share_groups.get(GROUP)
    assert entry is not None and not entry.group.members
    assert FOO not in entry.group.initialized_partitions  # the failed answer leaves it uninitialized


def test_alter_needs_read_on_the_group_and_on_each_topic() -> None:
    handlers, _, persister = make({(AclOperation.READ, ResourceType.GROUP, GROUP)})
    assert alter(handlers, {"foo": {0: 3}}).error_code == E.GROUP_AUTHORIZATION_FAILED
    handlers, _, persister = make({(AclOperation.READ, ResourceType.TOPIC, "foo")})
    body = alter(handlers, {"foo": {0: 3}})
    assert [p.error_code for t in body.responses for p in t.partitions] == [E.TOPIC_AUTHORIZATION_FAILED]
    assert persister.calls == []


def delete(handlers: dict, *names: str) -> Any:
    return call(handlers, 92, 0, {"group_id": GROUP, "topics": [{"topic_name": n} for n in names]})


def test_delete_removes_the_state_of_initialized_topics() -> None:
    handlers, coordinator, persister = make()
    join(coordinator)
    assert delete(handlers, "foo").error_code == E.NON_EMPTY_GROUP
    leave(coordinator)
    body = delete(handlers, "foo", "nope")
    assert body.error_code == E.NONE
    got = {t.topic_name: (t.error_code, t.topic_id) for t in body.responses}
    assert got == {"foo": (E.NONE, FOO), "nope": (E.UNKNOWN_TOPIC_OR_PARTITION, bytes(16))}
    assert persister.calls == [("delete", GROUP, {FOO: [0, 1]})]
    assert FOO not in share_group(coordinator).initialized_partitions
    # nothing left to delete
    (again,) = delete(handlers, "foo").responses
    assert (again.error_code, again.error_message) == (E.UNKNOWN_TOPIC_OR_PARTITION, "There is no offset information to delete.")


def test_delete_keeps_a_topic_the_share_coordinator_could_not_delete() -> None:
    handlers, coordinator, persister = make()
    join(coordinator)
    leave(coordinator)
    persister.fail[(FOO, 1)] = E.UNKNOWN_SERVER_ERROR
    (topic,) = delete(handlers, "foo").responses
    assert topic.error_code == E.UNKNOWN_SERVER_ERROR


def test_delete_needs_delete_on_the_group_and_read_on_each_topic() -> None:
    handlers, _, _ = make({(AclOperation.DELETE, ResourceType.GROUP, GROUP)})
    assert delete(handlers, "foo").error_code == E.GROUP_AUTHORIZATION_FAILED
    handlers, coordinator, persister = make({(AclOperation.READ, ResourceType.TOPIC, "foo")})
    join(coordinator)
    leave(coordinator)
    assert [(t.topic_name, t.error_code) for t in delete(handlers, "foo").responses] == [
        ("foo", E.TOPIC_AUTHORIZATION_FAILED)]
    assert persister.calls == []
