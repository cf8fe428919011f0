"""A share group driven by ShareGroupHeartbeat: joins, share-partition initialization, sharing
partitions beyond the partition count, leaving, fencing on a fake clock, errors that change
nothing, deletion, and failover by replaying its records (through their bytes)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mafka.errors import ErrorCode, IllegalStateError, NonEmptyGroupError
from mafka.group.consumer.member import TopicInfo
from mafka.group.share import records as rec
from mafka.group.share.group import (
    HeartbeatRequest,
    HeartbeatResult,
    ShareGroup,
    ShareGroupConfig,
    ShareGroupState,
)
from mafka.group.share.metadata_hash import metadata_hash
from mafka.group.share.state_metadata import StatePartitionMetadata
from tests.hypothesis_budget import examples

GROUP = "g"


def topic_id(name: str) -> bytes:
    """A fixed 16-byte id per topic name (never all zeros)."""
    return (b"\x01" + name.encode()).ljust(16, b"\xee")[:16]


def topics(**counts: int) -> dict[str, TopicInfo]:
    return {name: TopicInfo(topic_id(name), name, n) for name, n in counts.items()}


FOO, BAR = topic_id("foo"), topic_id("bar")
T = topics(foo=2, bar=3)


def join(member_id: str, names: Sequence[str] | None = ("foo",), rack_id: str | None = None) -> HeartbeatRequest:
    return HeartbeatRequest(GROUP, member_id, 0, rack_id, names, client_id="client", client_host="/127.0.0.1")


def beat(member_id: str, epoch: int, names: Sequence[str] | None = None) -> HeartbeatRequest:
    return HeartbeatRequest(GROUP, member_id, epoch, None, names, client_id="client", client_host="/127.0.0.1")


def ok(result: HeartbeatResult) -> HeartbeatResult:
    assert result.response.error_code == ErrorCode.NONE, result.response
    return result


def tp(name: str, *partitions: int) -> dict[bytes, frozenset[int]]:
    return {topic_id(name): frozenset(partitions)} if partitions else {}


def kinds(records: Sequence[rec.CoordinatorRecord]) -> list[str]:
    return [type(r.key).__name__.removeprefix("ShareGroup").removesuffix("Key") + ("-" if r.value is None else "") for r in records]


class Log:
    """A share group and its records, as its ``__consumer_offsets`` partition would hold them;
    it answers the share coordinator's initializations at once unless told not to."""

    def __init__(self, group: ShareGroup | None = None, *, auto_initialize: bool = True) -> None:
        self.group = group if group is not None else ShareGroup(GROUP)
        self.records: list[rec.CoordinatorRecord] = []
        self.auto_initialize = auto_initialize

    def hb(self, request: HeartbeatRequest, now_ms: int = 0, cluster: dict[str, TopicInfo] = T) -> HeartbeatResult:
        result = self.group.heartbeat(request, now_ms, cluster)
        self.records.extend(result.records)
        if result.initialize is not None and self.auto_initialize:
            self.records.extend(self.group.initialize_done(result.initialize.topic_partitions(), now_ms, cluster))
        return result

    def add(self, records: Sequence[rec.CoordinatorRecord]) -> None:
        self.records.extend(records)

    def replayed(self, now_ms: int = 0) -> ShareGroup:
        """The group its records rebuild, through their bytes (as a new coordinator reads them)."""
        decoded = [rec.decode_record(*rec.encode_record(r)) for r in self.records]
        return ShareGroup.from_records(GROUP, decoded, now_ms, self.group.config)

    def assert_replays(self) -> None:
        assert self.replayed().snapshot() == self.group.snapshot()


def settled(*member_ids: str, cluster: dict[str, TopicInfo] = T, names: Sequence[str] = ("foo",)) -> Log:
    """Members joined and heartbeated once more, partitions initialized and assigned."""
    log = Log()
    for m in member_ids:
        ok(log.hb(join(m, names), cluster=cluster))
    for _ in range(2):
        for m in member_ids:
            ok(log.hb(beat(m, log.group.members[m].member_epoch), cluster=cluster))
    return log


# --------------------------------------------------------------------------- joining


def test_first_member_joins_and_its_partitions_are_initialized_first() -> None:
    log = Log(auto_initialize=False)
    group = log.group
    assert group.state is ShareGroupState.EMPTY
    result = ok(log.hb(join("a")))
    assert result.response.member_id == "a"
    assert result.response.member_epoch == 1
    assert result.response.heartbeat_interval_ms == 5000
    assert result.response.assignment == {}  # nothing initialized yet: nothing to assign
    assert kinds(result.records) == [
        "MemberMetadata",
        "Metadata",
        "TargetAssignmentMember",
        "TargetAssignmentMetadata",
        "CurrentMemberAssignment",
        "StatePartitionMetadata",
    ]
    assert result.records[1].value == rec.ShareGroupMetadataValue(1, metadata_hash({"foo"}, T))
    assert result.initialize is not None
    assert (result.initialize.group_id, result.initialize.state_epoch) == (GROUP, 1)
    assert result.initialize.partitions == {FOO: {0: -1, 1: -1}}
    assert group.state_partition_metadata == StatePartitionMetadata(initializing={FOO: ("foo", frozenset({0, 1}))})
    assert (group.group_epoch, group.assignment_epoch, group.state) == (1, 1, ShareGroupState.STABLE)
    member = group.members["a"]
    assert (member.client_id, member.client_host, member.subscribed_topic_names) == ("client", "/127.0.0.1", frozenset({"foo"}))

    # The share coordinator initialized them: the next heartbeat bumps the epoch and assigns.
    done = group.initialize_done(result.initialize.topic_partitions(), 10, T)
    log.add(done)
    assert group.initialized_partitions == {FOO: frozenset({0, 1})}
    assert group.state_partition_metadata == StatePartitionMetadata(initialized={FOO: ("foo", frozenset({0, 1}))})
    second = ok(log.hb(beat("a", 1), 20))
    assert (second.response.member_epoch, second.response.assignment) == (2, tp("foo", 0, 1))
    assert second.initialize is None
    assert kinds(second.records) == ["Metadata", "TargetAssignmentMember", "TargetAssignmentMetadata", "CurrentMemberAssignment"]
    log.assert_replays()

    # Nothing changed: no records, no assignment in the response.
    third = ok(log.hb(beat("a", 2), 30))
    assert (third.records, third.response.member_epoch, third.response.assignment) == ((), 2, None)


def test_five_members_on_two_partitions_all_get_a_partition() -> None:
    log = settled("a", "b", "c", "d", "e")
    group = log.group
    assert all(group.members[m].assigned_partitions for m in "abcde")
    shares = Counter(p for m in "abcde" for p in group.members[m].assigned_partitions[FOO])
    assert shares == {0: 3, 1: 3}  # ceil(5/2) members per partition
    assert all(group.members[m].member_epoch == group.assignment_epoch for m in "abcde")
    log.assert_replays()


def test_a_member_gets_its_new_target_at_once_no_revocation() -> None:
    log = settled("a")
    assert log.group.members["a"].assigned_partitions == tp("foo", 0, 1)
    joined = ok(log.hb(join("b")))
    # b is given its share immediately, though a has not heartbeated since.
    assert joined.response.assignment is not None and len(joined.response.assignment[FOO]) == 1
    assert log.group.members["a"].assigned_partitions == tp("foo", 0, 1)  # a still fetches both until it hears
    epoch = joined.response.member_epoch
    a = ok(log.hb(beat("a", log.group.members["a"].member_epoch)))
    assert a.response.member_epoch == epoch
    assert a.response.assignment is not None
    assert a.response.assignment[FOO] | joined.response.assignment[FOO] == {0, 1}
    assert a.response.assignment[FOO].isdisjoint(joined.response.assignment[FOO])
    log.assert_replays()


def test_rejoining_with_epoch_zero_keeps_the_member() -> None:
    log = settled("a")
    before = log.group.members["a"]
    again = ok(log.hb(join("a")))
    assert again.records == ()  # same subscription, same client: nothing to write
    assert (again.response.member_epoch, again.response.assignment) == (before.member_epoch, tp("foo", 0, 1))


def test_the_previous_epoch_is_accepted_in_case_the_bump_was_lost() -> None:
    log = settled("a")
    a = log.group.members["a"]
    assert ok(log.hb(beat("a", a.previous_member_epoch))).response.member_epoch == a.member_epoch


def test_subscribing_to_another_topic_bumps_the_epoch_and_initializes_it() -> None:
    log = settled("a")
    epoch = log.group.group_epoch
    result = ok(log.hb(beat("a", log.group.members["a"].member_epoch, ["foo", "bar"])))
    assert log.group.group_epoch == epoch + 1
    assert result.initialize is not None and result.initialize.partitions == {BAR: {0: -1, 1: -1, 2: -1}}
    # bar is not assigned before it is initialized; the next heartbeat assigns it
    assert result.response.assignment == tp("foo", 0, 1)
    after = ok(log.hb(beat("a", log.group.members["a"].member_epoch)))
    assert after.response.assignment == {**tp("foo", 0, 1), **tp("bar", 0, 1, 2)}
    log.assert_replays()


def test_more_partitions_bump_the_epoch_and_are_shared_once_initialized() -> None:
    log = settled("a", "b")
    epoch = log.group.group_epoch
    bigger = topics(foo=4, bar=3)
    result = ok(log.hb(beat("a", log.group.members["a"].member_epoch), cluster=bigger))
    assert log.group.group_epoch == epoch + 1  # the metadata hash moved
    assert result.initialize is not None and result.initialize.partitions == {FOO: {2: -1, 3: -1}}
    for _ in range(2):
        for m in "ab":
            ok(log.hb(beat(m, log.group.members[m].member_epoch), cluster=bigger))
    assigned = [log.group.members[m].assigned_partitions[FOO] for m in "ab"]
    assert assigned[0] | assigned[1] == {0, 1, 2, 3} and len(assigned[0]) == len(assigned[1]) == 2
    log.assert_replays()


def test_an_unanswered_initialization_is_asked_again_after_the_retry_interval() -> None:
    log = Log(ShareGroup(GROUP, ShareGroupConfig(initialize_retry_interval_ms=1000)), auto_initialize=False)
    first = ok(log.hb(join("a"), 0))
    assert first.initialize is not None
    assert ok(log.hb(beat("a", 1), 999)).initialize is None  # still being initialized
    again = ok(log.hb(beat("a", 1), 1000))
    assert again.initialize is not None and again.initialize.partitions == {FOO: {0: -1, 1: -1}}
    # a failed initialization is forgotten at once: the next heartbeat asks again
    log.add(log.group.initialize_failed({FOO: {0, 1}}, 1001))
    assert log.group.state_partition_metadata == StatePartitionMetadata()
    assert ok(log.hb(beat("a", 1), 1002)).initialize is not None
    log.assert_replays()


# --------------------------------------------------------------------------- leaving and fencing


def test_a_member_leaves_with_epoch_minus_one() -> None:
    log = settled("a", "b")
    epoch = log.group.group_epoch
    result = ok(log.hb(beat("b", -1)))
    assert (result.response.member_id, result.response.member_epoch, result.left_member_id) == ("b", -1, "b")
    assert kinds(result.records) == ["CurrentMemberAssignment-", "TargetAssignmentMember-", "MemberMetadata-", "Metadata"]
    assert set(log.group.members) == {"a"} and "b" not in log.group.target_assignment
    assert log.group.group_epoch == epoch + 1
    # a gets everything again on its next heartbeat
    assert ok(log.hb(beat("a", log.group.members["a"].member_epoch))).response.assignment == tp("foo", 0, 1)
    log.assert_replays()
    # the last member leaving empties the group
    ok(log.hb(beat("a", log.group.members["a"].member_epoch)))
    ok(log.hb(beat("a", -1)))
    assert log.group.state is ShareGroupState.EMPTY
    log.assert_replays()


def test_a_silent_member_is_fenced_when_its_session_expires() -> None:
    log = Log()
    ok(log.hb(join("a"), 0))
    ok(log.hb(join("b"), 10_000))
    assert log.group.next_deadline_ms() == 45_000
    assert log.group.expire(44_999, T).fenced == ()
    ok(log.hb(beat("a", log.group.members["a"].member_epoch), 40_000))  # a keeps its session alive
    expired = log.group.expire(55_000, T)
    log.add(expired.records)
    assert [f.member_id for f in expired.fenced] == ["b"]
    assert expired.fenced[0].reason == "the member session expired."
    assert set(log.group.members) == {"a"}
    assert log.group.next_deadline_ms() == 85_000
    log.assert_replays()
    # a member fenced and coming back with its old epoch must rejoin
    assert log.hb(beat("b", 3), 56_000).response.error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_timers_are_armed_again_after_a_failover() -> None:
    log = settled("a")
    group = log.replayed(now_ms=1_000)
    assert group.next_deadline_ms() == 46_000
    assert [f.member_id for f in group.expire(46_000, T).fenced] == ["a"]


# --------------------------------------------------------------------------- errors


def _error(log: Log, request: HeartbeatRequest, code: ErrorCode, message: str | None = None) -> None:
    before = log.group.snapshot()
    result = log.group.heartbeat(request, 0, T)
    assert result.response.error_code == code, result.response
    if message is not None:
        assert result.response.error_message == message
    assert result.records == () and result.initialize is None
    assert log.group.snapshot() == before


@pytest.mark.parametrize(
    "request_, message",
    [
        (HeartbeatRequest(GROUP, "", 0, None, ["foo"]), "Invalid member id in the request."),
        (HeartbeatRequest(GROUP, "m" * 37, 0, None, ["foo"]), "Invalid member id in the request."),
        (HeartbeatRequest(GROUP, "  ", 0, None, ["foo"]), "MemberId can't be empty."),
        (HeartbeatRequest(" ", "m", 0, None, ["foo"]), "GroupId can't be empty."),
        (HeartbeatRequest(GROUP, "m", 0, " ", ["foo"]), "RackId can't be empty."),
        (HeartbeatRequest(GROUP, "m", 0, None, None), "SubscribedTopicNames must be set in first request."),
        (HeartbeatRequest(GROUP, "m", 0, None, []), "SubscribedTopicNames must be set in first request."),
        (HeartbeatRequest(GROUP, "a", -2), "MemberEpoch is invalid."),
    ],
)
def test_invalid_requests(request_: HeartbeatRequest, message: str) -> None:
    _error(settled("a"), request_, ErrorCode.INVALID_REQUEST, message)


def test_unknown_members_and_wrong_epochs_are_refused() -> None:
    log = settled("a", "b", "c")
    a = log.group.members["a"]
    _error(log, beat("x", 1), ErrorCode.UNKNOWN_MEMBER_ID, f"Member x is not a member of group {GROUP}.")
    _error(log, beat("x", -1), ErrorCode.UNKNOWN_MEMBER_ID)
    _error(log, beat("a", a.member_epoch + 1), ErrorCode.FENCED_MEMBER_EPOCH)
    older = [e for e in range(1, a.member_epoch) if e != a.previous_member_epoch]
    assert older, a
    for e in older:  # smaller, and not the previous epoch
        _error(log, beat("a", e), ErrorCode.FENCED_MEMBER_EPOCH)


def test_the_group_has_a_maximum_size() -> None:
    log = Log(ShareGroup(GROUP, ShareGroupConfig(max_size=2)))
    ok(log.hb(join("a")))
    ok(log.hb(join("b")))
    _error(
        log,
        join("c"),
        ErrorCode.GROUP_MAX_SIZE_REACHED,
        "The share group has reached its maximum capacity of 2 members.",
    )
    ok(log.hb(join("a")))  # members already in may still rejoin


def test_a_heartbeat_for_another_group_is_a_caller_bug() -> None:
    with pytest.raises(ValueError, match="sent to group"):
        ShareGroup(GROUP).heartbeat(HeartbeatRequest("other", "m", 0, None, ["foo"]), 0, T)


# --------------------------------------------------------------------------- deletion and admin


def test_delete_an_empty_group_and_join_it_again() -> None:
    log = settled("a")
    with pytest.raises(NonEmptyGroupError):
        log.group.delete()
    ok(log.hb(beat("a", -1)))
    records, to_delete = log.group.begin_delete(0, T)
    log.add(records)
    assert to_delete == {FOO: frozenset({0, 1})}
    assert log.group.state_partition_metadata == StatePartitionMetadata(deleting={FOO: "foo"})
    tombstones = log.group.delete()
    log.add(tombstones)
    assert kinds(tombstones) == [
        "TargetAssignmentMetadata-",
        "StatePartitionMetadata-",
        "Metadata-",
    ]
    assert log.group.state is ShareGroupState.DEAD
    assert log.replayed().state is ShareGroupState.DEAD
    assert log.group.heartbeat(beat("a", 3), 0, T).response.error_code == ErrorCode.GROUP_ID_NOT_FOUND
    # a join creates a new group of the same id, from epoch 0
    result = ok(log.hb(join("z")))
    assert (result.response.member_epoch, log.group.state) == (1, ShareGroupState.STABLE)
    log.assert_replays()


def test_alter_and_delete_share_group_offsets() -> None:
    log = settled("a")
    with pytest.raises(NonEmptyGroupError):
        log.group.alter_offsets({FOO: {0: 5}}, 0, T)
    ok(log.hb(beat("a", -1)))
    records, request = log.group.alter_offsets({BAR: {1: 7, 0: 3}}, 0, T)
    log.add(records)
    assert request.partitions == {BAR: {0: 3, 1: 7}}
    assert request.state_epoch == log.group.group_epoch
    log.add(log.group.initialize_done(request.topic_partitions(), 0, T))
    assert log.group.initialized_partitions == {FOO: frozenset({0, 1}), BAR: frozenset({0, 1})}

    records, to_delete = log.group.begin_delete_offsets([FOO, topic_id("nope")], 0, T)
    log.add(records)
    assert to_delete == {FOO: frozenset({0, 1})}
    metadata = log.group.state_partition_metadata
    assert metadata is not None and metadata.deleting == {FOO: "foo"} and FOO not in metadata.initialized
    log.add(log.group.complete_delete_offsets([FOO], 0))
    assert log.group.state_partition_metadata == StatePartitionMetadata(initialized={BAR: ("bar", frozenset({0, 1}))})
    log.assert_replays()


def test_deleted_topics_leave_the_state_metadata() -> None:
    log = settled("a", names=("foo", "bar"))
    assert set(log.group.initialized_partitions) == {FOO, BAR}
    assert log.group.topics_deleted([topic_id("other")], 0) == ()
    records = log.group.topics_deleted([BAR], 0)
    log.add(records)
    assert set(log.group.initialized_partitions) == {FOO}
    # bar is gone from the cluster too: the hash moves and a loses it
    result = ok(log.hb(beat("a", log.group.members["a"].member_epoch), cluster=topics(foo=2)))
    assert result.response.assignment == tp("foo", 0, 1)
    log.assert_replays()


def test_describe() -> None:
    log = settled("a", "b")
    log.hb(HeartbeatRequest(GROUP, "b", log.group.members["b"].member_epoch, "rack-1"))
    description = log.group.describe(T)
    assert (description.group_id, description.group_state, description.assignor_name) == (GROUP, "Stable", "simple")
    assert (description.group_epoch, description.assignment_epoch) == (log.group.group_epoch, log.group.assignment_epoch)
    a, b = description.members
    assert (a.member_id, b.member_id, b.rack_id, a.client_id, a.subscribed_topic_names) == ("a", "b", "rack-1", "client", ("foo",))
    assert {p for m in (a, b) for t in m.assignment for p in t.partitions} == {0, 1}
    assert all(t.topic_name == "foo" for m in (a, b) for t in m.assignment)
    assert log.group.describe({}).members[0].assignment == ()  # a topic no longer known is left out


# --------------------------------------------------------------------------- replay


def test_replay_refuses_inconsistent_records() -> None:
    group = ShareGroup(GROUP)
    group.replay(rec.member_subscription_record(GROUP, "m", None, "c", "h", ["foo"]))
    with pytest.raises(IllegalStateError, match="invalid leave group epoch"):
        group.replay(rec.member_subscription_tombstone(GROUP, "m"))
    with pytest.raises(IllegalStateError, match="still has 1 members"):
        group.replay(rec.group_epoch_tombstone(GROUP))
    with pytest.raises(ValueError, match="replayed into group"):
        group.replay(rec.group_epoch_record("other", 1, 0))
    # tombstones for a group that never existed change nothing
    empty = ShareGroup(GROUP)
    empty.replay(rec.target_assignment_epoch_tombstone(GROUP))
    empty.replay(rec.group_epoch_tombstone(GROUP))
    assert empty.state is ShareGroupState.DEAD
    empty.replay(rec.member_subscription_tombstone(GROUP, "ghost"))
    assert empty.state is ShareGroupState.DEAD


@st.composite
def operations(draw: st.DrawFn) -> list[tuple[str, str, int]]:
    return draw(
        st.lists(
            st.tuples(
                st.sampled_from(["join", "beat", "stale", "leave", "expire", "grow", "sub_bar", "delete_bar"]),
                st.sampled_from(["a", "b", "c", "d"]),
                st.integers(0, 30_000),
            ),
            max_size=25,
        )
    )


@settings(max_examples=examples(150), deadline=None)
@given(operations())
def test_any_sequence_replays_to_the_same_group_and_keeps_the_invariants(ops: list[tuple[str, str, int]]) -> None:
    log = Log(ShareGroup(GROUP, ShareGroupConfig(session_timeout_ms=45_000)))
    cluster = dict(T)
    now = 0
    for op, m, dt in ops:
        now += dt
        member = log.group.members.get(m)
        answered = None
        if op == "join":
            answered = log.hb(join(m), now, cluster)
        elif op == "beat" and member is not None:
            answered = ok(log.hb(beat(m, member.member_epoch), now, cluster))
        elif op == "stale" and member is not None:
            assert log.hb(beat(m, member.member_epoch + 1), now, cluster).response.error_code == ErrorCode.FENCED_MEMBER_EPOCH
        elif op == "leave" and member is not None:
            ok(log.hb(beat(m, -1), now, cluster))
        elif op == "expire":
            log.add(log.group.expire(now, cluster).records)
        elif op == "grow":
            cluster["foo"] = TopicInfo(FOO, "foo", cluster["foo"].partitions + 1)
        elif op == "sub_bar" and member is not None:
            answered = ok(log.hb(beat(m, member.member_epoch, ["foo", "bar"]), now, cluster))
        elif op == "delete_bar" and "bar" in cluster:
            del cluster["bar"]
            log.add(log.group.topics_deleted([BAR], now))
        group = log.group
        assert all(mm.member_epoch <= group.group_epoch for mm in group.members.values())
        if answered is not None and answered.response.error_code == ErrorCode.NONE:
            # what a heartbeat hands out: initialized partitions of subscribed topics that exist
            mm = group.members[m]
            assert answered.response.member_epoch == mm.member_epoch
            for t, parts in mm.assigned_partitions.items():
                assert parts <= group.initialized_partitions.get(t, frozenset())
                assert t in {cluster[n].topic_id for n in mm.subscribed_topic_names if n in cluster}
    log.assert_replays()
    # once everyone has heartbeated twice, every member has something (foo has partitions)
    for _ in range(2):
        for m in sorted(log.group.members):
            ok(log.hb(beat(m, log.group.members[m].member_epoch), now, cluster))
    assert all(mm.assigned_partitions for mm in log.group.members.values())
    log.assert_replays()
