"""A consumer group driven by ConsumerGroupHeartbeat: joins, revocation, fencing, static members,
timers on a fake clock, deletion, and failover by replaying its records."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from mafka.errors import ErrorCode, IllegalStateError, NonEmptyGroupError
from mafka.group.consumer import records as rec
from mafka.group.consumer.group import (
    ConsumerGroup,
    ConsumerGroupConfig,
    ConsumerGroupState,
    HeartbeatRequest,
    HeartbeatResult,
    new_member_id,
)
from mafka.group.consumer.member import ConsumerGroupMember, MemberState, TopicInfo
from tests.hypothesis_budget import examples
from tests.unit.group.consumer.group_helpers import (
    GROUP,
    StickyAssignor,
    beat,
    join,
    make_group,
    ok,
    topic_id,
    topics,
    tp,
)

FOO = topic_id("foo")
T = topics(foo=4, bar=2)


def record_types(result: HeartbeatResult) -> list[str]:
    return [type(r.key).__name__.removeprefix("ConsumerGroup") + ("-" if r.value is None else "") for r in result.records]


def replayed(group: ConsumerGroup, records: list[rec.CoordinatorRecord]) -> ConsumerGroup:
    """The group its records rebuild, through their bytes (as a new coordinator reads them)."""
    decoded = [rec.decode_record(*rec.encode_record(r)) for r in records]
    return ConsumerGroup.from_records(GROUP, decoded, 0, group.config, {"sticky": StickyAssignor()})


class Log:
    """The group's records, as its ``__consumer_offsets`` partition would hold them."""

    def __init__(self, group: ConsumerGroup) -> None:
        self.group = group
        self.records: list[rec.CoordinatorRecord] = []

    def hb(self, request: HeartbeatRequest, now_ms: int = 0, cluster: dict[str, TopicInfo] = T) -> HeartbeatResult:
        result = self.group.heartbeat(request, now_ms, cluster)
        self.records.extend(result.records)
        return result


def two_members() -> tuple[Log, dict[str, HeartbeatResult]]:
    """a owns foo-0..3 at epoch 1; b has joined, epoch 2, whose target gives it foo-2, foo-3."""
    log = Log(make_group())
    first = ok(log.hb(join("a")))
    second = ok(log.hb(join("b")))
    return log, {"a": first, "b": second}


# --------------------------------------------------------------------------- joining and reconciling


def test_first_member_joins_an_empty_group() -> None:
    log = Log(make_group())
    assert log.group.state is ConsumerGroupState.EMPTY
    result = ok(log.hb(join("a")))
    assert result.response.member_id == "a"
    assert result.response.member_epoch == 1
    assert result.response.heartbeat_interval_ms == 5000
    assert result.response.assignment == tp("foo", 0, 1, 2, 3)
    # Kafka's record order: subscription, metadata, epoch, target, target epoch, current assignment.
    assert record_types(result) == [
        "MemberMetadataKey",
        "PartitionMetadataKey",
        "MetadataKey",
        "TargetAssignmentMemberKey",
        "TargetAssignmentMetadataKey",
        "CurrentMemberAssignmentKey",
    ]
    group = log.group
    assert (group.group_epoch, group.assignment_epoch, group.state) == (1, 1, ConsumerGroupState.STABLE)
    assert group.subscription_metadata == {"foo": T["foo"]}
    assert group.subscribed_topic_names == {"foo": 1}
    member = group.members["a"]
    assert (member.client_id, member.client_host, member.rebalance_timeout_ms) == ("client", "/127.0.0.1", 30000)


def test_a_second_member_gets_only_what_the_first_has_revoked() -> None:
    log, first = two_members()
    group = log.group
    a_all = tp("foo", 0, 1, 2, 3)
    # b is at epoch 2 but gets nothing yet: a still owns everything.
    assert (first["b"].response.member_epoch, first["b"].response.assignment) == (2, {})
    assert group.members["b"].state is MemberState.UNRELEASED_PARTITIONS
    assert group.state is ConsumerGroupState.RECONCILING
    assert group.target_assignment == {"a": tp("foo", 0, 1), "b": tp("foo", 2, 3)}

    # a's heartbeat: revoke foo-2, foo-3 first, keeping foo-0, foo-1, still at epoch 1.
    r = ok(log.hb(beat("a", 1, a_all)))
    assert (r.response.member_epoch, r.response.assignment) == (1, tp("foo", 0, 1))
    a = group.members["a"]
    assert (a.state, a.partitions_pending_revocation) == (MemberState.UNREVOKED_PARTITIONS, tp("foo", 2, 3))
    # b asks again: the partitions are still a's, b waits.
    assert ok(log.hb(beat("b", 2, {}))).response.assignment is None
    assert group.members["b"].assigned_partitions == {}

    # a acknowledges: stable at epoch 2; then b gets foo-2, foo-3.
    r = ok(log.hb(beat("a", 1, tp("foo", 0, 1))))
    assert (r.response.member_epoch, group.members["a"].state) == (2, MemberState.STABLE)
    r = ok(log.hb(beat("b", 2, {})))
    assert (r.response.member_epoch, r.response.assignment) == (2, tp("foo", 2, 3))
    assert group.state is ConsumerGroupState.STABLE


def test_a_member_keeping_its_partitions_is_never_without_them() -> None:
    log = Log(make_group())
    ok(log.hb(join("a", ["foo", "bar"])))
    group = log.group
    kept = {0, 1}  # a's share of foo once b joins

    def check() -> None:
        assert kept <= group.members["a"].assigned_partitions[FOO]

    check()
    ok(log.hb(join("b", ["foo"])))
    check()
    a_owned = group.members["a"].assigned_partitions
    r = ok(log.hb(beat("a", 1, a_owned)))  # asked to revoke
    check()
    ok(log.hb(beat("a", 1, r.response.assignment)))  # acknowledged
    check()
    ok(log.hb(beat("b", 2, {})))
    check()
    assert group.state is ConsumerGroupState.STABLE


def test_a_member_whose_target_only_grows_moves_at_once() -> None:
    log = Log(make_group())
    ok(log.hb(join("a")))
    # A new partition: the group epoch moves, a keeps everything and gets foo-4 in one step.
    r = ok(log.hb(beat("a", 1, tp("foo", 0, 1, 2, 3)), cluster=topics(foo=5, bar=2)))
    assert (r.response.member_epoch, r.response.assignment) == (2, tp("foo", 0, 1, 2, 3, 4))
    assert log.group.members["a"].state is MemberState.STABLE
    assert "PartitionMetadataKey" in record_types(r)


def test_subscription_change_bumps_the_group_epoch() -> None:
    log = Log(make_group())
    ok(log.hb(join("a")))
    r = ok(log.hb(beat("a", 1, subscribed_topic_names=["foo", "bar"])))
    assert r.response.member_epoch == 2
    assert r.response.assignment == {**tp("foo", 0, 1, 2, 3), **tp("bar", 0, 1)}
    # Same subscription again: nothing written, nothing sent.
    r = ok(log.hb(beat("a", 2, subscribed_topic_names=["bar", "foo"])))
    assert (r.records, r.response.assignment) == ((), None)


def test_a_subscribed_topic_that_does_not_exist_yet_is_assigned_once_created() -> None:
    log = Log(make_group())
    ok(log.hb(join("a", ["foo", "later"])))
    assert set(log.group.subscription_metadata) == {"foo"}
    cluster = {**T, **topics(later=1)}
    r = ok(log.hb(beat("a", 1), cluster=cluster))
    assert r.response.member_epoch == 2
    assert r.response.assignment == {**tp("foo", 0, 1, 2, 3), **tp("later", 0)}


def test_a_new_regex_is_resolved_after_the_heartbeat_that_brought_it_as_kafka_does() -> None:
    """Kafka 4 resolves regexes asynchronously: the joining heartbeat assigns the literal topics
    only; the refresh then bumps the group epoch and the next heartbeat brings the regex's topics
    (librdkafka's 0045 do_test_resubscribe_with_regex expects exactly these two steps)."""
    log = Log(make_group())
    cluster = {**topics(foo=1, foo2=1, bar=1), **topics(__consumer_offsets=50)}
    r = ok(log.hb(join("a", ["bar"], regex="foo.*|__.*"), cluster=cluster))
    assert r.response.assignment == tp("bar", 0)
    assert log.group.members["a"].subscribed_topic_regex == "foo.*|__.*"
    assert log.group.regex_refresh_due(0, cluster)
    refreshed = log.group.refresh_regexes(0, cluster)
    log.records.extend(refreshed)
    assert log.group.group_epoch == 2 and not log.group.regex_refresh_due(0, cluster)
    r = ok(log.hb(beat("a", 1), cluster=cluster))
    # internal topics never match
    assert (r.response.member_epoch, r.response.assignment) == (2, {**tp("bar", 0), **tp("foo", 0), **tp("foo2", 0)})
    assert replayed(log.group, log.records).snapshot() == log.group.snapshot()


def test_topics_created_later_are_matched_by_a_batched_refresh() -> None:
    log = Log(make_group())
    cluster = topics(foo=1)
    ok(log.hb(join("a", None, regex="foo.*"), cluster=cluster))
    log.group.refresh_regexes(0, cluster)
    assert ok(log.hb(beat("a", 1), cluster=cluster)).response.assignment == tp("foo", 0)
    assert not log.group.regex_refresh_due(60_000, cluster)  # no new topic: nothing to do
    cluster = {**cluster, **topics(foo3=2)}
    assert not log.group.regex_refresh_due(9_999, cluster)  # Kafka refreshes at most every 10 s
    assert log.group.regex_refresh_due(10_000, cluster)
    log.group.refresh_regexes(10_000, cluster)
    r = ok(log.hb(beat("a", 2), now_ms=10_000, cluster=cluster))
    assert (r.response.member_epoch, r.response.assignment) == (3, {**tp("foo", 0), **tp("foo3", 0, 1)})


def test_a_regex_nobody_subscribes_to_any_more_is_resolved_again_when_subscribed_again() -> None:
    log = Log(make_group())
    cluster = topics(foo=1, bar=1)
    ok(log.hb(join("a", None, regex="foo.*"), cluster=cluster))
    log.group.refresh_regexes(0, cluster)
    ok(log.hb(beat("a", 1), cluster=cluster))
    ok(log.hb(beat("a", -1), cluster=cluster))
    r = ok(log.hb(join("a", ["bar"], regex="foo.*"), cluster=cluster))
    assert r.response.assignment == tp("bar", 0)  # the regex's topics come with the next refresh
    assert log.group.regex_refresh_due(0, cluster)


def test_a_resolved_regex_bumps_the_group_epoch_at_once_and_a_new_one_does_not() -> None:
    """Kafka's ``maybeUpdateRegularExpressions``: a member taking up a regex another member
    already resolved rebalances at once; a regex the group has not resolved waits for the
    refresh (one rebalance, not two)."""
    log = Log(make_group())
    cluster = topics(foo=2, bar=1, baz=1)
    ok(log.hb(join("a", ["bar"], regex="foo.*"), cluster=cluster))
    log.group.refresh_regexes(0, cluster)
    assert ok(log.hb(beat("a", 1), cluster=cluster)).response.member_epoch == 2
    r = ok(log.hb(join("b", None, regex="foo.*"), cluster=cluster))
    assert log.group.group_epoch == 3 and r.response.member_epoch == 3
    target_b = log.group.target_assignment["b"]
    assert target_b and set(target_b) == set(tp("foo", 0))
    r = ok(log.hb(join("c", None, regex="baz.*"), cluster=cluster))
    assert log.group.group_epoch == 3 and r.response.assignment == {}
    assert log.group.regex_refresh_due(0, cluster)
    log.group.refresh_regexes(0, cluster)
    assert log.group.group_epoch == 4
    r = ok(log.hb(beat("c", 3), cluster=cluster))
    assert (r.response.member_epoch, r.response.assignment) == (4, tp("baz", 0))


def test_the_assignor_most_members_ask_for_is_used() -> None:
    group = ConsumerGroup(GROUP, ConsumerGroupConfig(), {"sticky": StickyAssignor(), "other": (other := StickyAssignor("other"))})
    ok(group.heartbeat(join("a", assignor="other"), 0, T))
    assert len(other.calls) == 1
    assert group.preferred_assignor() == "other"


def test_an_assignor_failure_is_an_unknown_server_error_and_changes_nothing() -> None:
    log = Log(make_group())
    ok(log.hb(join("a")))
    before = log.group.snapshot()
    r = log.hb(join("b", assignor="broken"))
    assert r.response.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    assert "Failed to compute a new target assignment for epoch 2: assignor exploded" in (r.response.error_message or "")
    assert r.records == ()
    assert log.group.snapshot() == before


def test_the_assignment_is_sent_on_joins_full_requests_and_changes_only() -> None:
    log = Log(make_group())
    ok(log.hb(join("a")))
    assert ok(log.hb(beat("a", 1))).response.assignment is None
    full = beat("a", 1, tp("foo", 0, 1, 2, 3), rebalance_timeout_ms=30000, subscribed_topic_names=["foo"])
    assert ok(log.hb(full)).response.assignment == tp("foo", 0, 1, 2, 3)


# --------------------------------------------------------------------------- leaving and fencing


def test_a_leaving_member_is_removed_and_bumps_the_group_epoch() -> None:
    log, _ = two_members()
    r = ok(log.hb(beat("b", -1)))
    assert (r.response.member_id, r.response.member_epoch, r.response.heartbeat_interval_ms) == ("b", -1, 0)
    assert record_types(r) == [
        "CurrentMemberAssignmentKey-",
        "TargetAssignmentMemberKey-",
        "MemberMetadataKey-",
        "MetadataKey",
    ]
    group = log.group
    assert "b" not in group.members and group.group_epoch == 3
    assert group.state is ConsumerGroupState.ASSIGNING
    r = ok(log.hb(beat("a", 1, tp("foo", 0, 1, 2, 3))))
    assert (r.response.member_epoch, group.state) == (3, ConsumerGroupState.STABLE)
    ok(log.hb(beat("a", -1)))
    assert (group.state, group.group_epoch, group.subscription_metadata) == (ConsumerGroupState.EMPTY, 4, {})


@pytest.mark.parametrize("epoch", [2, 5, 100])
def test_an_epoch_ahead_of_the_members_is_fenced(epoch: int) -> None:
    log = Log(make_group())
    ok(log.hb(join("a")))
    r = log.hb(beat("a", epoch))
    assert r.response.error_code == ErrorCode.FENCED_MEMBER_EPOCH
    assert "greater member epoch" in (r.response.error_message or "")
    assert r.records == ()


def test_a_stale_epoch_is_fenced_unless_it_is_the_previous_one_with_owned_partitions_still_assigned() -> None:
    log, _ = two_members()
    group = log.group
    ok(log.hb(beat("a", 1, tp("foo", 0, 1, 2, 3))))  # a: UNREVOKED at 1
    ok(log.hb(beat("a", 1, tp("foo", 0, 1))))  # a: epoch 2, previous 1 (say the response was lost)
    assert (group.members["a"].member_epoch, group.members["a"].previous_member_epoch) == (2, 1)
    # The previous epoch with only partitions still assigned: accepted, told epoch 2.
    r = ok(log.hb(beat("a", 1, tp("foo", 0))))
    assert r.response.member_epoch == 2
    # The previous epoch without its partitions, or with one it no longer has: fenced.
    for owned in (None, tp("foo", 0, 2)):
        r = log.hb(beat("a", 1, owned))
        assert r.response.error_code == ErrorCode.FENCED_MEMBER_EPOCH, owned
        assert "smaller member epoch (1)" in (r.response.error_message or "")
    # Older than the previous epoch: fenced.
    ok(log.hb(beat("b", 2, {})))
    assert log.hb(beat("b", 1, {})).response.error_code == ErrorCode.FENCED_MEMBER_EPOCH


def test_a_fenced_member_rejoins_with_epoch_zero_under_its_member_id() -> None:
    log = Log(make_group())
    ok(log.hb(join("a")))
    assert log.hb(beat("a", 7)).response.error_code == ErrorCode.FENCED_MEMBER_EPOCH
    r = ok(log.hb(join("a")))  # KIP-848: rejoin, get the assignment back
    assert (r.response.member_epoch, r.response.assignment) == (1, tp("foo", 0, 1, 2, 3))
    assert log.group.group_epoch == 1  # nothing changed, no rebalance


def test_unknown_members() -> None:
    log = Log(make_group())
    ok(log.hb(join("a")))
    for request in (beat("zz", 1), beat("zz", -1)):
        r = log.hb(request)
        assert r.response.error_code == ErrorCode.UNKNOWN_MEMBER_ID
        assert r.response.error_message == f"Member zz is not a member of group {GROUP}."


def test_a_version_0_join_without_a_member_id_gets_one_from_the_coordinator() -> None:
    log = Log(make_group())
    request = HeartbeatRequest(GROUP, "", 0, rebalance_timeout_ms=1000, subscribed_topic_names=["foo"], topic_partitions={}, api_version=0)
    r = ok(log.hb(request))
    assert r.response.member_id in log.group.members and len(r.response.member_id or "") == 22
    assert log.hb(HeartbeatRequest(GROUP, "", 0, rebalance_timeout_ms=1000, subscribed_topic_names=["foo"], topic_partitions={})).response.error_code == ErrorCode.INVALID_REQUEST
    assert all(not new_member_id().startswith("-") for _ in range(200))


def test_group_max_size() -> None:
    group = make_group(max_size=1)
    ok(group.heartbeat(join("a"), 0, T))
    r = group.heartbeat(join("b"), 0, T)
    assert r.response.error_code == ErrorCode.GROUP_MAX_SIZE_REACHED
    assert r.response.error_message == "The consumer group has reached its maximum capacity of 1 members."
    ok(group.heartbeat(beat("a", 1), 0, T))  # members already in stay welcome


@pytest.mark.parametrize(
    "request_, message",
    [
        (join("a", rebalance_timeout_ms=-1), "RebalanceTimeoutMs must be provided in first request."),
        (HeartbeatRequest(GROUP, "a", 0, rebalance_timeout_ms=1, subscribed_topic_names=["foo"]), "TopicPartitions must be empty when (re-)joining."),
        (HeartbeatRequest(GROUP, "a", 0, rebalance_timeout_ms=1, subscribed_topic_names=["foo"], topic_partitions={FOO: [0]}), "TopicPartitions must be empty when (re-)joining."),
        (HeartbeatRequest(GROUP, "a", 0, rebalance_timeout_ms=1, topic_partitions={}), "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."),
        (beat("a", -3), "MemberEpoch is invalid."),
        (beat("", 3), "MemberId can't be empty."),
        (beat(" ", -1), "MemberId can't be empty."),
        (HeartbeatRequest(" ", "a", 1), "GroupId can't be empty."),
        (beat("a", 1, instance_id=""), "InstanceId can't be empty."),
        (beat("a", 1, rack_id=" "), "RackId can't be empty."),
        (beat("a", -2), "InstanceId can't be null."),
    ],
)
def test_invalid_requests(request_: HeartbeatRequest, message: str) -> None:
    log = Log(make_group())
    ok(log.hb(join("a")))
    r = log.hb(request_)
    assert (r.response.error_code, r.response.error_message) == (ErrorCode.INVALID_REQUEST, message)
    assert r.records == ()


def test_unsupported_assignor_and_invalid_regex() -> None:
    group = make_group()
    r = group.heartbeat(join("a", assignor="nope"), 0, T)
    assert r.response.error_code == ErrorCode.UNSUPPORTED_ASSIGNOR
    assert r.response.error_message == "ServerAssignor nope is not supported. Supported assignors: sticky, other, broken."
    r = group.heartbeat(join("a", None, regex="foo("), 0, T)
    assert r.response.error_code == ErrorCode.INVALID_REGULAR_EXPRESSION
    assert (r.response.error_message or "").startswith("SubscribedTopicRegex `foo(` is not a valid regular expression")
    assert group.state is ConsumerGroupState.EMPTY and not group.members


def test_a_heartbeat_for_another_group_is_a_caller_bug() -> None:
    with pytest.raises(ValueError, match="sent to group"):
        make_group().heartbeat(HeartbeatRequest("other", "a", 1), 0, T)


# --------------------------------------------------------------------------- static members


def test_a_static_member_rejoining_gets_its_assignment_back_without_a_rebalance() -> None:
    log = Log(make_group())
    ok(log.hb(join("a1", instance_id="ia")))
    ok(log.hb(join("b", ["foo"])))
    ok(log.hb(beat("a1", 1, tp("foo", 0, 1, 2, 3), instance_id="ia")))
    ok(log.hb(beat("a1", 1, tp("foo", 0, 1), instance_id="ia")))
    ok(log.hb(beat("b", 2, {})))
    group = log.group
    assert group.state is ConsumerGroupState.STABLE
    epoch = group.group_epoch

    # Leaves for a while: no rebalance, its partitions stay reserved.
    r = ok(log.hb(beat("a1", -2, instance_id="ia")))
    assert (r.response.member_epoch, record_types(r)) == (-2, ["CurrentMemberAssignmentKey"])
    assert group.group_epoch == epoch
    assert group.partition_owner(FOO, 0) == "a1"

    # The same instance id under a new member id takes over, at the same epoch.
    r = ok(log.hb(join("a2", instance_id="ia")))
    assert (r.response.member_id, r.response.member_epoch, r.response.assignment) == ("a2", epoch, tp("foo", 0, 1))
    assert group.group_epoch == epoch and group.state is ConsumerGroupState.STABLE
    assert "a1" not in group.members and group.static_members["ia"] == "a2"
    assert group.partition_owner(FOO, 0) == "a2"

    # The old member id is fenced out.
    r = log.hb(beat("a1", epoch, instance_id="ia"))
    assert r.response.error_code == ErrorCode.FENCED_INSTANCE_ID
    assert r.response.error_message == "Static member a1 with instance id ia was fenced by member a2."


def test_a_static_member_rejoin_is_not_a_rebalance() -> None:
    log = Log(make_group())
    ok(log.hb(join("a1", instance_id="ia")))
    ok(log.hb(beat("a1", -2, instance_id="ia")))
    before = log.group.group_epoch
    r = ok(log.hb(join("a2", instance_id="ia")))
    assert (log.group.group_epoch, r.response.member_epoch, r.response.assignment) == (before, 1, tp("foo", 0, 1, 2, 3))
    # Kafka's replaceMember: the predecessor's tombstones, the new member with its predecessor's
    # target and partitions at epoch 0; then its reconciliation to the current epoch.
    assert record_types(r) == [
        "CurrentMemberAssignmentKey-",
        "TargetAssignmentMemberKey-",
        "MemberMetadataKey-",
        "MemberMetadataKey",
        "TargetAssignmentMemberKey",
        "CurrentMemberAssignmentKey",
        "CurrentMemberAssignmentKey",
    ]


def test_static_member_errors() -> None:
    log = Log(make_group())
    ok(log.hb(join("a1", instance_id="ia")))
    r = log.hb(join("a2", instance_id="ia"))
    assert r.response.error_code == ErrorCode.UNRELEASED_INSTANCE_ID
    assert r.response.error_message == (
        "Static member a2 with instance id ia cannot join the group because the instance id is owned by a1 member."
    )
    r = log.hb(beat("a1", 1, instance_id="nobody"))
    assert (r.response.error_code, r.response.error_message) == (ErrorCode.UNKNOWN_MEMBER_ID, "Instance id nobody is unknown.")
    assert log.hb(beat("a2", -2, instance_id="ia")).response.error_code == ErrorCode.FENCED_INSTANCE_ID
    assert log.hb(beat("a2", -1, instance_id="ia")).response.error_code == ErrorCode.FENCED_INSTANCE_ID
    r = ok(log.hb(beat("a1", -1, instance_id="ia")))  # a static member leaving for good
    assert "a1" not in log.group.members and "ia" not in log.group.static_members


# --------------------------------------------------------------------------- timers


def test_session_timeout_fences_a_silent_member() -> None:
    log = Log(make_group(session_timeout_ms=10_000))
    group = log.group
    ok(log.hb(join("a"), now_ms=1_000))
    ok(log.hb(join("b"), now_ms=2_000))
    ok(log.hb(beat("b", 2), now_ms=9_000))
    assert group.next_deadline_ms() == 11_000
    assert group.expire(10_999).fenced == ()
    result = group.expire(11_000)
    log.records.extend(result.records)
    assert [(f.member_id, f.reason) for f in result.fenced] == [("a", "the member session expired.")]
    assert "a" not in group.members and group.group_epoch == 3
    assert group.next_deadline_ms() == 19_000
    # b alone now: gets everything on its next heartbeat.
    r = ok(log.hb(beat("b", 2, {}), now_ms=12_000))
    assert (r.response.member_epoch, r.response.assignment) == (3, tp("foo", 0, 1, 2, 3))
    assert replayed(group, log.records).snapshot() == group.snapshot()


def test_a_member_that_does_not_revoke_within_its_rebalance_timeout_is_fenced() -> None:
    log = Log(make_group(session_timeout_ms=60_000))
    group = log.group
    ok(log.hb(join("a", rebalance_timeout_ms=5_000), now_ms=0))
    ok(log.hb(join("b"), now_ms=0))
    ok(log.hb(beat("a", 1, tp("foo", 0, 1, 2, 3)), now_ms=1_000))  # asked to revoke at 1 000
    assert group.members["a"].state is MemberState.UNREVOKED_PARTITIONS
    ok(log.hb(beat("a", 1, tp("foo", 0, 1, 2, 3)), now_ms=4_000))  # heartbeats, but does not revoke
    assert group.expire(5_999).fenced == ()
    result = group.expire(6_000)
    assert [(f.member_id, f.reason) for f in result.fenced] == [("a", "it failed to transition from epoch 1 within 5000ms.")]
    assert group.partition_owner(FOO, 2) is None  # free for b now


def test_a_member_that_revokes_in_time_is_not_fenced() -> None:
    group = make_group(session_timeout_ms=60_000)
    ok(group.heartbeat(join("a", rebalance_timeout_ms=5_000), 0, T))
    ok(group.heartbeat(join("b"), 0, T))
    ok(group.heartbeat(beat("a", 1, tp("foo", 0, 1, 2, 3)), 1_000, T))
    ok(group.heartbeat(beat("a", 1, tp("foo", 0, 1)), 2_000, T))
    assert group.expire(6_000).fenced == ()
    assert group.next_deadline_ms() == 60_000


def test_a_static_member_that_left_is_fenced_when_its_session_expires() -> None:
    group = make_group(session_timeout_ms=10_000)
    ok(group.heartbeat(join("a", instance_id="ia"), 0, T))
    ok(group.heartbeat(beat("a", -2, instance_id="ia"), 5_000, T))
    assert group.expire(9_999).fenced == ()
    assert [f.member_id for f in group.expire(10_000).fenced] == ["a"]
    assert group.state is ConsumerGroupState.EMPTY and group.static_members == {}


def test_timers_are_rearmed_after_a_load() -> None:
    log = Log(make_group(session_timeout_ms=10_000))
    ok(log.hb(join("a", rebalance_timeout_ms=3_000)))
    ok(log.hb(join("b")))
    ok(log.hb(beat("a", 1, tp("foo", 0, 1, 2, 3))))
    loaded = ConsumerGroup.from_records(GROUP, log.records, 50_000, log.group.config, {"sticky": StickyAssignor()})
    assert loaded.next_deadline_ms() == 53_000  # a's rebalance timeout, from the load
    assert [f.member_id for f in loaded.expire(53_000).fenced] == ["a"]
    assert [f.member_id for f in loaded.expire(60_000).fenced] == ["b"]


# --------------------------------------------------------------------------- deletion, replay


def test_delete_an_empty_group_then_recreate_it() -> None:
    log = Log(make_group())
    ok(log.hb(join("a")))
    with pytest.raises(NonEmptyGroupError):
        log.group.delete()
    ok(log.hb(beat("a", -1)))
    deleted = log.group.delete()
    log.records.extend(deleted)
    assert [r.value for r in deleted] == [None] * len(deleted)
    assert log.group.state is ConsumerGroupState.DEAD
    assert replayed(log.group, log.records).state is ConsumerGroupState.DEAD
    assert log.hb(beat("a", 1)).response.error_code == ErrorCode.GROUP_ID_NOT_FOUND
    # A failed join leaves it deleted.
    dead = log.group.snapshot()
    assert log.hb(join("b", assignor="broken")).response.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
    assert log.group.snapshot() == dead
    # A join creates the group anew, from epoch 0.
    r = ok(log.hb(join("b")))
    assert r.response.member_epoch == 1 and log.group.state is ConsumerGroupState.STABLE
    assert replayed(log.group, log.records).snapshot() == log.group.snapshot()


def test_replaying_the_records_rebuilds_the_same_group() -> None:
    log, _ = two_members()
    ok(log.hb(join("s1", ["foo", "bar"], instance_id="is")))
    ok(log.hb(beat("a", 1, tp("foo", 0, 1, 2, 3))))
    ok(log.hb(beat("s1", -2, instance_id="is")))
    ok(log.hb(join("s2", ["foo", "bar"], instance_id="is")))
    ok(log.hb(beat("b", -1)))
    group = log.group
    rebuilt = replayed(group, log.records)
    assert rebuilt.snapshot() == group.snapshot()
    assert rebuilt.state is group.state
    # And the rebuilt group carries on exactly like the original.
    request = beat("a", group.members["a"].member_epoch, group.members["a"].assigned_partitions)
    assert rebuilt.heartbeat(request, 0, T) == group.heartbeat(request, 0, T)


def test_inconsistent_records_are_refused() -> None:
    group = make_group()
    group.replay(rec.member_subscription_record(GROUP, ConsumerGroupMember("a")))
    with pytest.raises(IllegalStateError, match="did not receive ConsumerGroupCurrentMemberAssignmentValue tombstone"):
        group.replay(rec.member_subscription_tombstone(GROUP, "a"))
    with pytest.raises(ValueError, match="replayed into group"):
        group.replay(rec.group_epoch_record("other", 1))


# --------------------------------------------------------------------------- random runs


@dataclass
class Client:
    """A consumer as the coordinator's counterpart: what it consumes and the epoch it sends."""

    member_id: str
    names: tuple[str, ...] | None
    regex: str | None
    instance_id: str | None
    epoch: int = 0
    joined: bool = False
    full: bool = True
    owned: dict[bytes, frozenset[int]] = field(default_factory=dict)


def owned_pairs(parts: Mapping[bytes, frozenset[int]]) -> set[tuple[bytes, int]]:
    return {(t, p) for t, ps in parts.items() for p in ps}


ACTIONS = ["new"] * 2 + ["beat"] * 10 + ["lost beat", "zombie beat", "leave", "tick", "tick", "grow", "refresh"]


@settings(max_examples=examples(150), deadline=None)
@given(st.data())
def test_random_runs_keep_partitions_exclusive_and_epochs_monotonic(data: st.DataObject) -> None:
    """Random joins, heartbeats (some responses lost), leaves, static pauses and takeovers,
    timers, new partitions and regex resolutions (as the coordinator runs them: when due);
    after every step: no partition is owned by two members (in
    the coordinator's view or the clients'), a client consumes only what its member owns,
    epochs never go down, and a member never loses a partition its target keeps.  At the
    end the group converges to Stable, and replaying its records rebuilds it."""
    group = make_group(session_timeout_ms=45_000)
    cluster = dict(topics(foo=4, bar=2, baz=1))
    log: list[rec.CoordinatorRecord] = []
    clients: list[Client] = []
    now = 0
    serial = 0

    def send(client: Client, lose: bool = False) -> None:
        if not client.joined:
            request = join(client.member_id, client.names, regex=client.regex, instance_id=client.instance_id)
        elif client.full:
            request = beat(
                client.member_id, client.epoch, client.owned, instance_id=client.instance_id,
                rebalance_timeout_ms=30_000, subscribed_topic_names=client.names,
                subscribed_topic_regex=client.regex,
            )
        else:
            request = beat(client.member_id, client.epoch, client.owned, instance_id=client.instance_id)
        result = group.heartbeat(request, now, cluster)
        log.extend(result.records)
        code = result.response.error_code
        event(f"heartbeat: {code.name}")
        if any(m.state is MemberState.UNREVOKED_PARTITIONS for m in group.members.values()):
            event("a member was revoking")
        if code in (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID):
            client.owned, client.joined, client.epoch = {}, False, 0  # give everything up, rejoin
        elif code in (ErrorCode.FENCED_INSTANCE_ID, ErrorCode.UNRELEASED_INSTANCE_ID):
            client.owned = {}
            clients.remove(client)
        else:
            assert code == ErrorCode.NONE, result.response
            if lose:
                client.full = True  # a lost response: the next heartbeat is a full one
                return
            client.joined, client.epoch, client.full = True, result.response.member_epoch, False
            if result.response.assignment is not None:
                client.owned = dict(result.response.assignment)

    for _ in range(data.draw(st.integers(10, 80), label="steps")):
        kind = data.draw(st.sampled_from(ACTIONS) if clients else st.just("new"))
        before = group.snapshot()
        if kind == "new":
            serial += 1
            names = data.draw(st.sampled_from([("foo",), ("foo", "bar"), None]))
            instance = data.draw(st.sampled_from([None, None, "i0", "i1"]))
            clients.append(Client(f"m{serial}", names, "ba.*" if names is None else None, instance))
            send(clients[-1])
        elif kind in ("beat", "lost beat"):
            send(data.draw(st.sampled_from(clients)), lose=kind == "lost beat")
        elif kind == "zombie beat":  # a client sending an epoch it was never given
            client = data.draw(st.sampled_from(clients))
            if client.joined:
                client.epoch += 1
                send(client)
        elif kind == "leave":
            client = data.draw(st.sampled_from(clients))
            if client.joined:
                epoch = -2 if client.instance_id is not None and data.draw(st.booleans()) else -1
                event(f"leave with {epoch}")
                result = group.heartbeat(beat(client.member_id, epoch, instance_id=client.instance_id), now, cluster)
                log.extend(result.records)
                clients.remove(client)
        elif kind == "tick":
            now += data.draw(st.sampled_from([500, 2_000, 5_000, 20_000, 46_000]))
            expired = group.expire(now, cluster)
            log.extend(expired.records)
            fenced = {f.member_id for f in expired.fenced}
            if fenced:
                event("a timer fenced a member")
            for client in clients:
                if client.member_id in fenced:
                    client.owned = {}  # its own poll timer stopped it; it learns it was fenced next
        elif kind == "refresh":
            if group.regex_refresh_due(now, cluster):
                event("regexes resolved")
                log.extend(group.refresh_regexes(now, cluster))
        elif kind == "grow":
            name = data.draw(st.sampled_from(["foo", "bar", "baz"]))
            info = cluster[name]
            cluster[name] = TopicInfo(info.topic_id, name, info.partitions + 1)
        after = group.snapshot()

        # Coordinator view: no partition owned by two members.
        seen: set[tuple[bytes, int]] = set()
        for member in after.members.values():
            mine = owned_pairs(member.owned_partitions)
            assert not mine & seen
            seen |= mine
        # Client view: no partition consumed by two clients, and only what the coordinator says.
        consumed: set[tuple[bytes, int]] = set()
        for client in clients:
            mine = owned_pairs(client.owned)
            assert not mine & consumed
            consumed |= mine
            owner = after.members.get(client.member_id)
            if owner is not None:
                assert mine <= owned_pairs(owner.owned_partitions)
            else:
                assert not mine
        # Epochs never go down; members never lose a partition their target keeps.
        assert before.group_epoch <= after.group_epoch or before.state is ConsumerGroupState.DEAD
        assert before.assignment_epoch <= after.assignment_epoch
        assert after.assignment_epoch <= after.group_epoch
        for member_id, member in after.members.items():
            old = before.members.get(member_id)
            if member.member_epoch != -2:
                assert member.member_epoch <= after.assignment_epoch
            if old is None or member.member_epoch == -2 or old.member_epoch == -2:
                continue
            assert old.member_epoch <= member.member_epoch
            kept = owned_pairs(old.assigned_partitions) & owned_pairs(after.target_assignment.get(member_id, {}))
            assert kept <= owned_pairs(member.assigned_partitions)

    # Every client heartbeating in turn converges to the target assignment, Stable (once the
    # sessions of static members that left for a while have expired).
    for _ in range(10):
        now += 20_000
        for client in list(clients):
            send(client)
            if group.regex_refresh_due(now, cluster):
                log.extend(group.refresh_regexes(now, cluster))
        log.extend(group.expire(now, cluster).records)
    if clients:
        assert group.state is ConsumerGroupState.STABLE, group.snapshot()
        for client in clients:
            assert client.owned == dict(group.target_assignment[client.member_id])

    # A coordinator failover: the records rebuild the same group.
    assert replayed(group, log).snapshot() == group.snapshot()
