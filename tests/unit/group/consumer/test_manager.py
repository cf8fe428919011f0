"""The coordinator's consumer groups (:mod:`mafka.group.consumer.manager` through
:class:`~mafka.group.coordinator.GroupCoordinator`): writes before answers, failed writes rolled
back, timers, a load rebuilding the group, conversions from and to classic groups, and the
member-epoch checks of offset commits and fetches.  Fake clock, timers and log."""

from __future__ import annotations

from mafka.errors import ErrorCode as E
from mafka.group.consumer.group import ConsumerGroup
from mafka.group.consumer.group_types import ConsumerGroupConfig, HeartbeatRequest
from mafka.group.consumer.records import is_consumer_group_key
from mafka.group.consumer_protocol import Subscription, encode_subscription
from mafka.group.coordinator import CoordinatorConfig, GroupCoordinator
from mafka.group.offsets import OffsetAndMetadata
from tests.unit.group.consumer.group_helpers import topics, tp
from tests.unit.group.fakes import Clock, FakeLog, Timers

GROUP = "cg"
TOPICS = topics(foo=4)
SESSION_MS = 10_000


def make(log: FakeLog | None = None, clock: Clock | None = None) -> tuple[GroupCoordinator, FakeLog, Timers]:
    clock = clock or Clock()
    timers = Timers(clock)
    log = log or FakeLog()
    config = CoordinatorConfig(offsets_partitions=1, consumer=ConsumerGroupConfig(session_timeout_ms=SESSION_MS))
    coordinator = GroupCoordinator(config, clock, timers, log, lambda: TOPICS)
    assert coordinator.on_elected(0, 1)
    assert coordinator.complete_load(0, 1, log.durable[0])
    return coordinator, log, timers


def group_of(coordinator: GroupCoordinator) -> ConsumerGroup:
    entry = coordinator.consumer_groups.get(GROUP)
    assert entry is not None
    return entry.group


def heartbeat(coordinator: GroupCoordinator, member: str, epoch: int, **fields) -> list:
    answers: list = []
    request = HeartbeatRequest(GROUP, member, epoch, **fields)
    coordinator.consumer_group_heartbeat(request, answers.append)
    return answers


def join(coordinator: GroupCoordinator, member: str) -> list:
    return heartbeat(coordinator, member, 0, rebalance_timeout_ms=30_000, subscribed_topic_names=["foo"],
                     topic_partitions={})


def test_a_join_is_answered_only_once_its_records_are_written() -> None:
    coordinator, log, _ = make()
    log.auto = False
    answers = join(coordinator, "m1")
    assert answers == [] and len(log.held) == 1
    assert all(is_consumer_group_key(k) for k, _ in log.held[0][1])
    log.release()
    (r,) = answers
    assert r.error_code == E.NONE and r.member_epoch == 1
    assert sum(len(ps) for ps in r.assignment.values()) == 4


def test_a_failed_write_answers_an_error_and_forgets_what_it_applied() -> None:
    coordinator, log, _ = make()
    (first,) = join(coordinator, "m1")
    log.auto = False
    answers = join(coordinator, "m2")
    log.release(E.NOT_LEADER_OR_FOLLOWER)
    assert answers[0].error_code == E.NOT_COORDINATOR
    group = group_of(coordinator)
    assert set(group.members) == {"m1"} and group.group_epoch == first.member_epoch
    log.auto = True
    (again,) = join(coordinator, "m2")
    assert again.error_code == E.NONE


def test_a_group_created_by_a_failed_write_is_forgotten() -> None:
    coordinator, log, _ = make()
    log.auto = False
    answers = join(coordinator, "m1")
    log.release(E.NOT_ENOUGH_REPLICAS)
    assert answers[0].error_code == E.COORDINATOR_NOT_AVAILABLE
    assert coordinator.consumer_groups.get(GROUP) is None


def test_a_silent_member_is_fenced_by_its_session_timer_and_the_fencing_is_written() -> None:
    coordinator, log, timers = make()
    join(coordinator, "m1")
    join(coordinator, "m2")
    appended = len(log.appends)
    for _ in range(4):  # m2 heartbeats every quarter session; m1 is silent for a whole session
        timers.advance(SESSION_MS // 4 + 1)
        heartbeat(coordinator, "m2", group_of(coordinator).members["m2"].member_epoch)
    group = group_of(coordinator)
    assert set(group.members) == {"m2"}
    assert len(log.appends) > appended


def test_a_new_coordinator_resumes_the_group_from_its_records() -> None:
    coordinator, log, _ = make()
    join(coordinator, "m1")
    join(coordinator, "m2")
    m1 = group_of(coordinator).members["m1"]
    heartbeat(coordinator, "m1", m1.member_epoch, topic_partitions=m1.assigned_partitions)
    before = group_of(coordinator).snapshot()
    successor, _, _ = make(log)
    after = group_of(successor).snapshot()
    assert after == before
    # the member carries on at its epoch: no fencing after a failover
    m2 = after.members["m2"]
    (r,) = heartbeat(successor, "m2", m2.member_epoch)
    assert r.error_code == E.NONE


def test_commits_and_fetches_check_member_epochs() -> None:
    coordinator, _, _ = make()
    (r,) = join(coordinator, "m1")
    offsets = {("foo", 0): OffsetAndMetadata(5, -1, "", 0, None)}
    results: list = []
    coordinator.commit_offsets(GROUP, "m1", None, r.member_epoch + 1, offsets, results.append, api_version=9)
    coordinator.commit_offsets(GROUP, "m1", None, r.member_epoch, offsets, results.append, api_version=8)
    coordinator.commit_offsets(GROUP, "nobody", None, r.member_epoch, offsets, results.append, api_version=9)
    coordinator.commit_offsets(GROUP, "", None, -1, offsets, results.append, api_version=9)
    coordinator.commit_offsets(GROUP, "m1", None, r.member_epoch, offsets, results.append, api_version=9)
    assert [x[("foo", 0)] for x in results] == [
        E.STALE_MEMBER_EPOCH, E.UNSUPPORTED_VERSION, E.UNKNOWN_MEMBER_ID, E.UNKNOWN_MEMBER_ID, E.NONE,
    ]
    assert coordinator.fetch_offsets(GROUP, [("foo", 0)], False, "m1", r.member_epoch + 1)[0] == E.STALE_MEMBER_EPOCH
    error, entries = coordinator.fetch_offsets(GROUP, [("foo", 0)], False, "m1", r.member_epoch)
    assert error == E.NONE and entries[("foo", 0)].offset == 5
    error, entries = coordinator.fetch_offsets(GROUP, None)  # an admin client
    assert error == E.NONE and entries[("foo", 0)].offset == 5


def test_an_empty_classic_group_converts_and_keeps_its_offsets() -> None:
    coordinator, _, _ = make()
    done: list = []
    coordinator.commit_offsets(GROUP, "", None, -1, {("foo", 1): OffsetAndMetadata(7, -1, "", 0, None)}, done.append)
    assert coordinator.group_manager.get_group(GROUP) is not None
    (r,) = join(coordinator, "m1")
    assert r.error_code == E.NONE
    assert coordinator.group_manager.get_group(GROUP) is None
    assert coordinator.fetch_offsets(GROUP, [("foo", 1)])[1][("foo", 1)].offset == 7
    error, groups = coordinator.list_groups()
    assert [(g.group_id, g.group_type, g.state) for g in groups] == [(GROUP, "consumer", "Stable")]


def classic_join_args(joins: list) -> tuple:
    subscription = encode_subscription(Subscription(topics=["foo"]))
    return (GROUP, "", None, False, "c", "/h", 30_000, 10_000, "consumer", [("range", subscription)], joins.append)


def test_with_migration_disabled_a_classic_join_is_refused_while_consumer_members_run() -> None:
    clock = Clock()
    log = FakeLog()
    config = CoordinatorConfig(offsets_partitions=1,
                               consumer=ConsumerGroupConfig(session_timeout_ms=SESSION_MS, migration_policy="disabled"))
    coordinator = GroupCoordinator(config, clock, Timers(clock), log, lambda: TOPICS)
    assert coordinator.on_elected(0, 1) and coordinator.complete_load(0, 1, [])
    join(coordinator, "m1")
    joins: list = []
    coordinator.join_group(*classic_join_args(joins))
    assert joins[-1].error == E.INCONSISTENT_GROUP_PROTOCOL
    assert set(group_of(coordinator).members) == {"m1"}


def test_a_classic_member_joins_a_running_consumer_group_as_a_classic_member() -> None:
    coordinator, _, _ = make()
    join(coordinator, "m1")
    joins: list = []
    coordinator.join_group(*classic_join_args(joins))  # require_known_member_id False: joins at once
    assert joins and joins[-1].error == E.NONE, joins
    members = group_of(coordinator).members
    assert len(members) == 2
    assert [m.uses_classic_protocol for _, m in sorted(members.items(), key=lambda kv: kv[0] != "m1")] == [False, True]


def test_a_classic_join_converts_an_empty_consumer_group_back() -> None:
    coordinator, log, _ = make()
    join(coordinator, "m1")
    heartbeat(coordinator, "m1", -1)
    appended = len(log.appends)
    joins: list = []
    coordinator.join_group(*classic_join_args(joins))
    assert coordinator.consumer_groups.get(GROUP) is None
    assert any(v is None for _, records in log.appends[appended:] for k, v in records if is_consumer_group_key(k))


def test_delete_groups_refuses_a_group_with_members_and_tombstones_an_empty_one() -> None:
    coordinator, log, _ = make()
    join(coordinator, "m1")
    results: list = []
    coordinator.delete_groups([GROUP], results.append)
    assert results[-1] == {GROUP: E.NON_EMPTY_GROUP}
    heartbeat(coordinator, "m1", -1)
    coordinator.delete_groups([GROUP], results.append)
    assert results[-1] == {GROUP: E.NONE}
    successor, _, _ = make(log)
    assert successor.consumer_groups.get(GROUP) is None


def test_offset_delete_keeps_the_subscribed_topics_offsets_and_deletes_the_others() -> None:
    """Kafka 4's ``deleteOffsets`` for a consumer group with members: GROUP_SUBSCRIBED_TO_TOPIC for
    a subscribed topic, the others' offsets tombstoned; the group itself stays."""
    coordinator, log, _ = make()
    (r,) = join(coordinator, "m1")
    offsets = {("foo", 0): OffsetAndMetadata(5, -1, "", 0, None), ("bar", 0): OffsetAndMetadata(6, -1, "", 0, None)}
    coordinator.commit_offsets(GROUP, "m1", None, r.member_epoch, offsets, lambda _r: None, api_version=9)
    answers: list = []
    coordinator.delete_offsets(GROUP, [("foo", 0), ("bar", 0), ("baz", 1)], lambda e, res: answers.append((e, res)))
    assert answers == [(E.NONE, {("foo", 0): E.GROUP_SUBSCRIBED_TO_TOPIC, ("bar", 0): E.NONE, ("baz", 1): E.NONE})]
    error, entries = coordinator.fetch_offsets(GROUP, None)
    assert error == E.NONE and set(entries) == {("foo", 0)}
    assert coordinator.consumer_groups.get(GROUP) is not None
    successor, _, _ = make(log)
    assert set(successor.fetch_offsets(GROUP, None)[1]) == {("foo", 0)}


def test_offset_delete_of_an_empty_consumer_group_keeps_the_group() -> None:
    """Unlike a classic group, an Empty consumer group left without offsets does not go Dead:
    Kafka 4 leaves that to ``cleanupGroupMetadata``."""
    coordinator, log, _ = make()
    (r,) = join(coordinator, "m1")
    coordinator.commit_offsets(GROUP, "m1", None, r.member_epoch, {("foo", 0): OffsetAndMetadata(5, -1, "", 0, None)},
                               lambda _r: None, api_version=9)
    heartbeat(coordinator, "m1", -1)
    answers: list = []
    coordinator.delete_offsets(GROUP, [("foo", 0)], lambda e, res: answers.append((e, res)))
    assert answers == [(E.NONE, {("foo", 0): E.NONE})]
    assert coordinator.fetch_offsets(GROUP, None)[1] == {}
    assert coordinator.consumer_groups.get(GROUP) is not None
    assert coordinator.group_manager.get_group(GROUP) is None  # no classic group appeared either


def test_offset_delete_refuses_the_topics_a_resolved_regex_subscribes_to() -> None:
    clock = Clock()
    timers = Timers(clock)
    log = FakeLog()
    config = CoordinatorConfig(offsets_partitions=1, consumer=ConsumerGroupConfig(session_timeout_ms=SESSION_MS))
    coordinator = GroupCoordinator(config, clock, timers, log, lambda: {**TOPICS, **topics(bar=1)})
    assert coordinator.on_elected(0, 1) and coordinator.complete_load(0, 1, log.durable[0])
    heartbeat(coordinator, "m1", 0, rebalance_timeout_ms=30_000, subscribed_topic_regex="ba.*", topic_partitions={})
    answers: list = []
    coordinator.delete_offsets(GROUP, [("bar", 0)], lambda e, res: answers.append((e, res)))
    timers.advance(0)  # the regex is resolved
    coordinator.delete_offsets(GROUP, [("bar", 0)], lambda e, res: answers.append((e, res)))
    assert answers == [(E.NONE, {("bar", 0): E.NONE}), (E.NONE, {("bar", 0): E.GROUP_SUBSCRIBED_TO_TOPIC})]


def test_a_regex_is_resolved_after_the_answer_and_new_topics_at_most_every_10_seconds() -> None:
    """The manager's refresh step: the join is answered without the regex's topics, the
    resolution (a timer at 0 ms) writes the group epoch it bumped, the next heartbeat brings the
    partitions; a topic created later is matched by a heartbeat's refresh 10 s after the last;
    a successor coordinator keeps the resolution."""
    clock = Clock()
    timers = Timers(clock)
    log = FakeLog()
    cluster = {**TOPICS, **topics(bar=1)}
    config = CoordinatorConfig(offsets_partitions=1, consumer=ConsumerGroupConfig(session_timeout_ms=SESSION_MS))
    coordinator = GroupCoordinator(config, clock, timers, log, lambda: cluster)
    assert coordinator.on_elected(0, 1) and coordinator.complete_load(0, 1, log.durable[0])
    (r,) = heartbeat(coordinator, "m1", 0, rebalance_timeout_ms=30_000, subscribed_topic_names=["foo"],
                     subscribed_topic_regex="ba.*", topic_partitions={})
    assert (r.member_epoch, r.assignment) == (1, tp("foo", 0, 1, 2, 3))
    appends = len(log.appends)
    timers.advance(0)
    assert len(log.appends) == appends + 1  # the resolution's records, written
    (r,) = heartbeat(coordinator, "m1", 1, topic_partitions=r.assignment)
    assert (r.member_epoch, r.assignment) == (2, {**tp("foo", 0, 1, 2, 3), **tp("bar", 0)})

    cluster["baz"] = topics(baz=1)["baz"]
    timers.advance(5_000)
    (r,) = heartbeat(coordinator, "m1", 2, topic_partitions=r.assignment)
    timers.advance(0)
    assert r.member_epoch == 2 and group_of(coordinator).group_epoch == 2  # not yet
    timers.advance(5_000)
    (r,) = heartbeat(coordinator, "m1", 2, topic_partitions=r.assignment)
    timers.advance(0)
    assert group_of(coordinator).group_epoch == 3
    (r,) = heartbeat(coordinator, "m1", 2, topic_partitions=r.assignment)
    assert (r.member_epoch, r.assignment) == (3, {**tp("foo", 0, 1, 2, 3), **tp("bar", 0), **tp("baz", 0)})

    successor = GroupCoordinator(config, clock, Timers(clock), log, lambda: cluster)
    assert successor.on_elected(0, 2) and successor.complete_load(0, 2, log.durable[0])
    assert group_of(successor).subscribed_topics() == {"foo", "bar", "baz"}


def test_group_config_overrides_set_the_session_timeout_and_heartbeat_interval() -> None:
    """Kafka 4's ``consumer.session.timeout.ms`` / ``consumer.heartbeat.interval.ms`` group configs:
    read at each heartbeat, for this group only."""
    coordinator, _, timers = make()
    overrides: dict[str, dict[str, str]] = {}
    coordinator.use_group_configs(lambda g: overrides.get(g, {}))
    (r,) = join(coordinator, "m1")
    assert r.heartbeat_interval_ms == 5_000  # the broker's group.consumer.heartbeat.interval.ms
    overrides[GROUP] = {"consumer.session.timeout.ms": "3000", "consumer.heartbeat.interval.ms": "1000"}
    (beat,) = heartbeat(coordinator, "m1", r.member_epoch)
    assert beat.error_code == E.NONE and beat.heartbeat_interval_ms == 1_000
    timers.advance(2_999)
    assert set(group_of(coordinator).members) == {"m1"}
    timers.advance(2)  # silent for the overridden 3 s, far less than the broker's SESSION_MS
    assert group_of(coordinator).members == {}
    # Another group keeps the broker's settings.
    other: list = []
    coordinator.consumer_group_heartbeat(HeartbeatRequest("other", "o1", 0, rebalance_timeout_ms=30_000,
                                                          subscribed_topic_names=["foo"], topic_partitions={}),
                                         other.append)
    assert other[0].heartbeat_interval_ms == 5_000
    timers.advance(SESSION_MS - 1)
    entry = coordinator.consumer_groups.get("other")
    assert entry is not None and set(entry.group.members) == {"o1"}


def test_a_group_loaded_with_overrides_arms_its_session_timers_with_them() -> None:
    coordinator, log, _ = make()
    join(coordinator, "m1")
    clock = Clock()
    timers = Timers(clock)
    config = CoordinatorConfig(offsets_partitions=1, consumer=ConsumerGroupConfig(session_timeout_ms=SESSION_MS))
    successor = GroupCoordinator(config, clock, timers, log, lambda: TOPICS)
    successor.use_group_configs(lambda g: {"consumer.session.timeout.ms": "2000"} if g == GROUP else {})
    assert successor.on_elected(0, 2)
    assert successor.complete_load(0, 2, log.durable[0])
    assert set(group_of(successor).members) == {"m1"}
    timers.advance(2_001)
    assert group_of(successor).members == {}
