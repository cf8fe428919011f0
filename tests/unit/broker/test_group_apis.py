"""The newer consumer-group protocol versions, end to end: encoded requests → handlers →
a real GroupCoordinator → decoded responses.

DescribeGroups v3–5 (authorized operations, v5 flexible), OffsetCommit v6–8
(committed leader epoch, group instance id, v8 flexible), OffsetFetch v5–8
(leader epoch, v6 flexible, require_stable, several groups), LeaveGroup v3–4
(a batch by member id or group instance id, v4 flexible) and OffsetDelete v0.
The fake broker is :mod:`tests.unit.broker.test_group_handlers`' (a coordinator
over a fake clock, fake timers and a fake ``__consumer_offsets`` log that owns
every offsets partition but ``FOREIGN``'s).
"""

from __future__ import annotations

import pytest

from mafka.broker.authorized_operations import DELETE, DESCRIBE, READ, bitfield
from mafka.errors import ErrorCode as E
from mafka.group.consumer_protocol import Subscription, encode_subscription
from mafka.group.offsets_records import GroupMetadataKey, OffsetKey, OffsetValue
from tests.unit.broker.test_group_handlers import (
    DESCRIBE as DESCRIBE_GROUPS,
)
from tests.unit.broker.test_group_handlers import (
    FOREIGN,
    GROUP,
    JOIN,
    LEAVE,
    LIST,
    OFFSET_COMMIT,
    OFFSET_FETCH,
    OTHER,
    SYNC,
    Broker,
    commit_errors,
    join_body,
    stable_one,
)

OFFSET_DELETE = 47
NOT_PROVIDED = -(2**31)
#: Kafka's answer for a group without an authorizer: READ, DESCRIBE and DELETE.
GROUP_OPERATIONS = bitfield((READ, DESCRIBE, DELETE))


@pytest.fixture
def broker() -> Broker:
    return Broker()


def subscribed(topics: list[str]) -> list[dict]:
    """JoinGroup protocols carrying a real consumer-protocol subscription."""
    return [{"name": "range", "metadata": encode_subscription(Subscription(topics))}]


def stable_consumer(
    broker: Broker, topics: list[str], *, group: str = GROUP, instance: str | None = None
):
    """One member subscribed to ``topics``, joined (v5) and synced: the group is Stable."""
    member_id = ""
    if instance is None:
        first = broker.ask(JOIN, 5, join_body(5, group=group, protocols=subscribed(topics)))
        member_id = first.member_id
    reply = broker.send(
        JOIN,
        5,
        join_body(5, member_id, group=group, instance=instance, protocols=subscribed(topics)),
    )
    broker.timers.advance(100)
    joined = reply.body
    assert joined.error_code == E.NONE
    synced = broker.ask(
        SYNC,
        3,
        {
            "group_id": group,
            "generation_id": joined.generation_id,
            "member_id": joined.member_id,
            "group_instance_id": instance,
            "assignments": [{"member_id": joined.member_id, "assignment": b""}],
        },
    )
    assert synced.error_code == E.NONE
    return joined


def commit(
    broker: Broker,
    version: int,
    group: str,
    partitions: list[tuple[str, int, int, int]],
    *,
    generation: int = -1,
    member: str = "",
    instance: str | None = None,
    **kw,
):
    """OffsetCommit of (topic, partition, offset, leader epoch) tuples; the decoded response."""
    topics: dict[str, list] = {}
    for topic, index, offset, epoch in partitions:
        topics.setdefault(topic, []).append(
            {
                "partition_index": index,
                "committed_offset": offset,
                "committed_leader_epoch": epoch,
                "committed_metadata": "m",
            }
        )
    body = {
        "group_id": group,
        "generation_id_or_member_epoch": generation,
        "member_id": member,
        "group_instance_id": instance,
        "retention_time_ms": -1,
        "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
    }
    return broker.send(OFFSET_COMMIT, version, body, **kw)


def topics_of(partitions: list[tuple[str, int]] | None):
    if partitions is None:
        return None
    topics: dict[str, list[int]] = {}
    for topic, index in partitions:
        topics.setdefault(topic, []).append(index)
    return [{"name": t, "partition_indexes": ps} for t, ps in topics.items()]


def fetch(broker: Broker, version: int, group: str, partitions, *, require_stable: bool = False):
    """OffsetFetch v1–7 for one group; {tp: (offset, leader epoch, error)} and the top-level error."""
    body = broker.ask(
        OFFSET_FETCH,
        version,
        {"group_id": group, "topics": topics_of(partitions), "require_stable": require_stable},
    )
    got = {
        (t.name, p.partition_index): (p.committed_offset, p.committed_leader_epoch, p.error_code)
        for t in body.topics
        for p in t.partitions
    }
    return got, body.error_code


def fetch_groups(
    broker: Broker, groups: dict[str, list[tuple[str, int]] | None], *, require_stable=False
):
    """OffsetFetch v8: {group: (error, {tp: (offset, leader epoch, metadata, error)})} in answer order."""
    body = broker.ask(
        OFFSET_FETCH,
        8,
        {
            "groups": [{"group_id": g, "topics": topics_of(ps)} for g, ps in groups.items()],
            "require_stable": require_stable,
        },
    )
    return {
        g.group_id: (
            g.error_code,
            {
                (t.name, p.partition_index): (
                    p.committed_offset,
                    p.committed_leader_epoch,
                    p.metadata,
                    p.error_code,
                )
                for t in g.topics
                for p in t.partitions
            },
        )
        for g in body.groups
    }


def offset_values(broker: Broker, since: int = 0) -> dict[tuple[str, int], OffsetValue | None]:
    return {
        (k.topic, k.partition): v for k, v in broker.log.decoded(since) if isinstance(k, OffsetKey)
    }


def delete(broker: Broker, group: str, partitions: list[tuple[str, int]]):
    topics: dict[str, list[dict]] = {}
    for topic, index in partitions:
        topics.setdefault(topic, []).append({"partition_index": index})
    return broker.send(
        OFFSET_DELETE,
        0,
        {"group_id": group, "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]},
    )


def deleted(body) -> tuple[int, list[tuple[str, int, int]]]:
    return body.error_code, [
        (t.name, p.partition_index, p.error_code) for t in body.topics for p in t.partitions
    ]


# ------------------------------------------------------------------ DescribeGroups v3–5


@pytest.mark.parametrize("version", [3, 4, 5])
def test_describe_groups_answers_the_groups_operations_when_asked(broker, version):
    stable_one(broker)
    asked = broker.ask(
        DESCRIBE_GROUPS,
        version,
        {"groups": [GROUP, OTHER, FOREIGN, ""], "include_authorized_operations": True},
    ).groups
    assert [(g.group_id, g.error_code, g.group_state) for g in asked] == [
        (GROUP, E.NONE, "Stable"),
        (OTHER, E.NONE, "Dead"),
        (FOREIGN, E.NOT_COORDINATOR, ""),
        ("", E.NONE, "Dead"),
    ]
    # Kafka: the operations of a group answered without error; "not provided" beside an error.
    assert [g.authorized_operations for g in asked] == [
        GROUP_OPERATIONS,
        GROUP_OPERATIONS,
        NOT_PROVIDED,
        GROUP_OPERATIONS,
    ]
    assert GROUP_OPERATIONS == (1 << 3) | (1 << 6) | (1 << 8)
    not_asked = broker.ask(
        DESCRIBE_GROUPS, version, {"groups": [GROUP], "include_authorized_operations": False}
    )
    assert [g.authorized_operations for g in not_asked.groups] == [NOT_PROVIDED]


def test_describe_groups_v5_is_flexible_and_carries_static_members(broker):
    stable_one(broker, instance="inst-1", client_id="static-client")
    (group,) = broker.ask(
        DESCRIBE_GROUPS, 5, {"groups": [GROUP], "include_authorized_operations": True}
    ).groups
    (member,) = group.members
    assert (member.group_instance_id, member.client_id, member.client_host) == (
        "inst-1",
        "static-client",
        "/127.0.0.1",
    )
    assert (group.protocol_type, group.protocol_data, member.member_assignment) == (
        "consumer",
        "range",
        b"assigned",
    )
    assert group.tagged_fields == {} and member.tagged_fields == {}


# ------------------------------------------------------------------ OffsetCommit v6–8 / OffsetFetch v5–8


@pytest.mark.parametrize("version", [6, 7, 8])
def test_offset_commit_stores_the_leader_epoch_that_offset_fetch_v5_plus_returns(broker, version):
    body = commit(broker, version, OTHER, [("foo", 0, 42, 7), ("foo", 1, 43, -1)]).body
    assert commit_errors(body) == {("foo", 0): E.NONE, ("foo", 1): E.NONE}
    # In the __consumer_offsets value (OffsetCommitValue v3 carries the leader epoch).
    values = offset_values(broker)
    assert (
        values[("foo", 0)].offset,
        values[("foo", 0)].leader_epoch,
        values[("foo", 0)].expire_timestamp,
    ) == (42, 7, None)
    assert values[("foo", 1)].leader_epoch == -1
    for fetch_version in (5, 6, 7):
        got, error = fetch(broker, fetch_version, OTHER, [("foo", 0), ("foo", 1), ("bar", 0)])
        assert error == E.NONE
        assert got == {
            ("foo", 0): (42, 7, E.NONE),
            ("foo", 1): (43, -1, E.NONE),
            ("bar", 0): (-1, -1, E.NONE),
        }
    # Below v5 the field is not on the wire.
    got, _ = fetch(broker, 4, OTHER, [("foo", 0)])
    assert got == {("foo", 0): (42, -1, E.NONE)}
    assert fetch_groups(broker, {OTHER: [("foo", 0)]}) == {
        OTHER: (E.NONE, {("foo", 0): (42, 7, "m", E.NONE)})
    }


@pytest.mark.parametrize("version", [2, 5])
def test_offset_commit_below_v6_has_no_leader_epoch(broker, version):
    commit(broker, version, OTHER, [("foo", 0, 5, 9)])  # the epoch is not on the wire below v6
    assert offset_values(broker)[("foo", 0)].leader_epoch == -1


@pytest.mark.parametrize("version", [7, 8])
def test_offset_commit_v7_plus_fences_a_replaced_static_member(broker, version):
    first = stable_one(broker, instance="inst")
    ok = commit(
        broker,
        version,
        GROUP,
        [("foo", 0, 1, 3)],
        generation=first.generation_id,
        member=first.member_id,
        instance="inst",
    ).body
    assert commit_errors(ok) == {("foo", 0): E.NONE}
    # The same instance restarts: a new member id takes over "inst" without a rebalance.
    rejoined = broker.ask(JOIN, 5, join_body(5, group=GROUP, instance="inst"))
    assert rejoined.error_code == E.NONE and rejoined.member_id != first.member_id
    stale = commit(
        broker,
        version,
        GROUP,
        [("foo", 0, 2, 3)],
        generation=first.generation_id,
        member=first.member_id,
        instance="inst",
    ).body
    assert commit_errors(stale) == {("foo", 0): E.FENCED_INSTANCE_ID}
    current = commit(
        broker,
        version,
        GROUP,
        [("foo", 0, 3, 4)],
        generation=rejoined.generation_id,
        member=rejoined.member_id,
        instance="inst",
    ).body
    assert commit_errors(current) == {("foo", 0): E.NONE}
    stranger = commit(
        broker,
        version,
        GROUP,
        [("foo", 0, 4, 4)],
        generation=rejoined.generation_id,
        member="nobody",
    ).body
    assert commit_errors(stranger) == {("foo", 0): E.UNKNOWN_MEMBER_ID}
    got, _ = fetch(broker, 7, GROUP, [("foo", 0)])
    assert got == {("foo", 0): (3, 4, E.NONE)}


@pytest.mark.parametrize("version", [7, 8])
def test_offset_fetch_require_stable_reports_a_commit_still_being_appended(broker, version):
    commit(broker, 8, OTHER, [("foo", 0, 10, 1), ("foo", 1, 20, 1)])
    broker.log.auto = False
    pending = commit(broker, 8, OTHER, [("foo", 0, 11, 2)])
    assert not pending.done
    if version == 7:
        got, _ = fetch(broker, 7, OTHER, [("foo", 0), ("foo", 1)], require_stable=True)
        relaxed, _ = fetch(broker, 7, OTHER, [("foo", 0), ("foo", 1)], require_stable=False)
    else:
        got = {
            tp: (o, e, err)
            for tp, (o, e, _, err) in fetch_groups(
                broker, {OTHER: [("foo", 0), ("foo", 1)]}, require_stable=True
            )[OTHER][1].items()
        }
        relaxed = {
            tp: (o, e, err)
            for tp, (o, e, _, err) in fetch_groups(broker, {OTHER: [("foo", 0), ("foo", 1)]})[
                OTHER
            ][1].items()
        }
    assert got == {("foo", 0): (-1, -1, E.UNSTABLE_OFFSET_COMMIT), ("foo", 1): (20, 1, E.NONE)}
    assert relaxed == {("foo", 0): (10, 1, E.NONE), ("foo", 1): (20, 1, E.NONE)}
    broker.log.release()
    assert commit_errors(pending.body) == {("foo", 0): E.NONE}
    got, _ = fetch(broker, 7, OTHER, [("foo", 0)], require_stable=True)
    assert got == {("foo", 0): (11, 2, E.NONE)}


def test_offset_fetch_v8_answers_several_groups_each_with_its_own_error(broker):
    commit(broker, 8, OTHER, [("foo", 0, 5, 1), ("bar", 0, 6, 2)])
    commit(broker, 8, "g1", [("foo", 1, 7, 3)])
    answer = fetch_groups(
        broker,
        {OTHER: None, "g1": [("foo", 1), ("foo", 0)], "g2": None, FOREIGN: None, "": [("foo", 0)]},
    )
    assert list(answer) == [OTHER, "g1", "g2", FOREIGN, ""]
    assert answer[OTHER] == (
        E.NONE,
        {("bar", 0): (6, 2, "m", E.NONE), ("foo", 0): (5, 1, "m", E.NONE)},
    )
    assert answer["g1"] == (
        E.NONE,
        {("foo", 1): (7, 3, "m", E.NONE), ("foo", 0): (-1, -1, "", E.NONE)},
    )
    assert answer["g2"] == (E.NONE, {})
    assert answer[FOREIGN] == (E.NOT_COORDINATOR, {})
    assert answer[""] == (
        E.NONE,
        {("foo", 0): (-1, -1, "", E.NONE)},
    )  # "" is allowed for offsets, as in Kafka


def test_offset_fetch_v6_plus_while_loading():
    broker = Broker(load=False)
    for version in (6, 7):
        got, error = fetch(broker, version, GROUP, [("foo", 0)])
        assert (got, error) == ({}, E.COORDINATOR_LOAD_IN_PROGRESS)
    assert fetch_groups(broker, {GROUP: None, FOREIGN: None}) == {
        GROUP: (E.COORDINATOR_LOAD_IN_PROGRESS, {}),
        FOREIGN: (E.NOT_COORDINATOR, {}),
    }


# ------------------------------------------------------------------ LeaveGroup v3–4


def members_of(body) -> list[tuple[str, str | None, int]]:
    return [(m.member_id, m.group_instance_id, m.error_code) for m in body.members]


@pytest.mark.parametrize("version", [3, 4])
def test_leave_group_v3_plus_removes_a_batch_by_member_id_or_instance_id(broker, version):
    static = stable_one(broker, instance="inst-a")
    dynamic = broker.send(JOIN, 5, join_body(5, group=GROUP))  # MEMBER_ID_REQUIRED: now pending
    pending_id = dynamic.body.member_id
    body = broker.ask(
        LEAVE,
        version,
        {
            "group_id": GROUP,
            "members": [
                {
                    "member_id": "",
                    "group_instance_id": "inst-a",
                },  # administrative removal (KIP-345)
                {"member_id": "", "group_instance_id": "inst-unknown"},
                {"member_id": "stranger", "group_instance_id": None},
                {"member_id": pending_id, "group_instance_id": None},  # a pending member may leave
            ],
        },
    )
    assert body.error_code == E.NONE
    assert members_of(body) == [
        ("", "inst-a", E.NONE),
        ("", "inst-unknown", E.UNKNOWN_MEMBER_ID),
        ("stranger", None, E.UNKNOWN_MEMBER_ID),
        (pending_id, None, E.NONE),
    ]
    (described,) = broker.ask(DESCRIBE_GROUPS, 5, {"groups": [GROUP]}).groups
    assert (described.group_state, list(described.members)) == ("Empty", [])
    # The removed static member's id is gone too.
    again = broker.ask(
        LEAVE,
        version,
        {
            "group_id": GROUP,
            "members": [{"member_id": static.member_id, "group_instance_id": "inst-a"}],
        },
    )
    assert members_of(again) == [(static.member_id, "inst-a", E.UNKNOWN_MEMBER_ID)]


@pytest.mark.parametrize("version", [3, 4])
def test_leave_group_v3_plus_fences_an_old_member_id_of_a_static_member(broker, version):
    first = stable_one(broker, instance="inst")
    rejoined = broker.ask(JOIN, 5, join_body(5, group=GROUP, instance="inst"))
    assert rejoined.error_code == E.NONE
    body = broker.ask(
        LEAVE,
        version,
        {
            "group_id": GROUP,
            "members": [{"member_id": first.member_id, "group_instance_id": "inst"}],
        },
    )
    assert (body.error_code, members_of(body)) == (
        E.NONE,
        [(first.member_id, "inst", E.FENCED_INSTANCE_ID)],
    )
    body = broker.ask(
        LEAVE,
        version,
        {
            "group_id": GROUP,
            "members": [{"member_id": rejoined.member_id, "group_instance_id": "inst"}],
        },
    )
    assert members_of(body) == [(rejoined.member_id, "inst", E.NONE)]


@pytest.mark.parametrize("version", [3, 4])
def test_leave_group_v3_plus_group_errors_have_no_members(broker, version):
    member = [{"member_id": "m", "group_instance_id": None}]
    for group, error in ((FOREIGN, E.NOT_COORDINATOR), ("", E.INVALID_GROUP_ID)):
        body = broker.ask(LEAVE, version, {"group_id": group, "members": member})
        assert (body.error_code, members_of(body)) == (error, [])
    body = broker.ask(LEAVE, version, {"group_id": "g3", "members": member})  # no such group
    assert (body.error_code, members_of(body)) == (E.NONE, [("m", None, E.UNKNOWN_MEMBER_ID)])
    loading = Broker(load=False)
    body = loading.ask(LEAVE, version, {"group_id": GROUP, "members": member})
    assert (body.error_code, members_of(body)) == (E.COORDINATOR_LOAD_IN_PROGRESS, [])


# ------------------------------------------------------------------ OffsetDelete v0


def test_offset_delete_of_an_empty_group_writes_tombstones_and_the_group_dies_with_its_last_offset(
    broker,
):
    commit(broker, 8, OTHER, [("foo", 0, 5, 1), ("foo", 1, 6, 1), ("bar", 0, 7, 1)])
    since = len(broker.log.appends)
    body = delete(broker, OTHER, [("foo", 0), ("foo", 1), ("nope", 0), ("foo", 9)]).body
    # Grouped by topic, in the order topics first appear.
    assert deleted(body) == (
        E.NONE,
        [
            ("foo", 0, E.NONE),
            ("foo", 1, E.NONE),
            ("foo", 9, E.UNKNOWN_TOPIC_OR_PARTITION),
            ("nope", 0, E.UNKNOWN_TOPIC_OR_PARTITION),
        ],
    )
    assert offset_values(broker, since) == {("foo", 0): None, ("foo", 1): None}
    got, _ = fetch(broker, 7, OTHER, [("foo", 0), ("foo", 1), ("bar", 0)])
    assert got == {
        ("foo", 0): (-1, -1, E.NONE),
        ("foo", 1): (-1, -1, E.NONE),
        ("bar", 0): (7, 1, E.NONE),
    }
    # A partition without a committed offset is answered NONE and needs no tombstone.
    since = len(broker.log.appends)
    assert deleted(delete(broker, OTHER, [("foo", 0)]).body) == (E.NONE, [("foo", 0, E.NONE)])
    assert broker.log.appends[since:] == []
    # The last offset goes: the (offsets-only, generation 0) group is Dead, with no group tombstone.
    since = len(broker.log.appends)
    assert deleted(delete(broker, OTHER, [("bar", 0)]).body) == (E.NONE, [("bar", 0, E.NONE)])
    assert broker.log.decoded(since) == [(OffsetKey(OTHER, "bar", 0), None)]
    assert [g.group_id for g in broker.ask(LIST, 4, {"states_filter": []}).groups] == []
    assert deleted(delete(broker, OTHER, [("bar", 0)]).body) == (E.GROUP_ID_NOT_FOUND, [])


def test_offset_delete_of_a_consumer_group_left_empty_writes_its_group_tombstone(broker):
    joined = stable_consumer(broker, ["foo"])
    commit(
        broker,
        8,
        GROUP,
        [("foo", 0, 3, 1)],
        generation=joined.generation_id,
        member=joined.member_id,
    )
    broker.ask(
        LEAVE,
        4,
        {
            "group_id": GROUP,
            "members": [{"member_id": joined.member_id, "group_instance_id": None}],
        },
    )
    since = len(broker.log.appends)
    assert deleted(delete(broker, GROUP, [("foo", 0)]).body) == (E.NONE, [("foo", 0, E.NONE)])
    assert broker.log.decoded(since) == [
        (OffsetKey(GROUP, "foo", 0), None),
        (GroupMetadataKey(GROUP), None),
    ]
    (described,) = broker.ask(DESCRIBE_GROUPS, 5, {"groups": [GROUP]}).groups
    assert described.group_state == "Dead"


def test_offset_delete_refuses_the_topics_a_live_consumer_group_subscribes_to(broker):
    joined = stable_consumer(broker, ["foo"])
    commit(
        broker,
        8,
        GROUP,
        [("foo", 0, 3, 1), ("bar", 0, 4, 1)],
        generation=joined.generation_id,
        member=joined.member_id,
    )
    body = delete(broker, GROUP, [("foo", 0), ("bar", 0)]).body
    assert deleted(body) == (E.NONE, [("foo", 0, E.GROUP_SUBSCRIBED_TO_TOPIC), ("bar", 0, E.NONE)])
    got, _ = fetch(broker, 7, GROUP, [("foo", 0), ("bar", 0)])
    assert got == {("foo", 0): (3, 1, E.NONE), ("bar", 0): (-1, -1, E.NONE)}
    (described,) = broker.ask(DESCRIBE_GROUPS, 5, {"groups": [GROUP]}).groups
    assert described.group_state == "Stable"  # a live group never dies of it


def test_offset_delete_counts_every_topic_as_subscribed_when_subscriptions_cannot_be_read(broker):
    stable_one(broker)  # its protocol metadata (b"range-meta") is no consumer subscription
    body = delete(broker, GROUP, [("foo", 0), ("bar", 0)]).body
    assert deleted(body) == (
        E.NONE,
        [("foo", 0, E.GROUP_SUBSCRIBED_TO_TOPIC), ("bar", 0, E.GROUP_SUBSCRIBED_TO_TOPIC)],
    )


def test_offset_delete_group_errors(broker):
    reply = broker.send(JOIN, 1, {**join_body(1, group="g4"), "protocol_type": "connect"})
    broker.timers.advance(100)
    assert reply.body.error_code == E.NONE  # a non-consumer group with a member
    for group, error in (
        ("g4", E.NON_EMPTY_GROUP),
        ("g3", E.GROUP_ID_NOT_FOUND),
        (FOREIGN, E.NOT_COORDINATOR),
        ("", E.INVALID_GROUP_ID),
    ):
        assert deleted(delete(broker, group, [("foo", 0)]).body) == (error, []), group
    loading = Broker(load=False)
    assert deleted(delete(loading, GROUP, [("foo", 0)]).body) == (
        E.COORDINATOR_LOAD_IN_PROGRESS,
        [],
    )


def test_offset_delete_answers_once_the_tombstones_are_appended(broker):
    commit(broker, 8, OTHER, [("foo", 0, 5, 1), ("foo", 1, 6, 1)])
    broker.log.auto = False
    reply = delete(broker, OTHER, [("foo", 0)])
    assert not reply.done
    broker.log.release()
    assert deleted(reply.body) == (E.NONE, [("foo", 0, E.NONE)])
    failing = delete(broker, OTHER, [("foo", 1)])
    assert not failing.done
    broker.log.release(E.NOT_LEADER_OR_FOLLOWER)  # leadership moved: the client retries elsewhere
    assert deleted(failing.body) == (E.NOT_COORDINATOR, [])


def test_offset_delete_survives_a_coordinator_failover(broker):
    """A new coordinator that replays the durable records does not see the deleted offsets."""
    commit(broker, 8, OTHER, [("foo", 0, 5, 1), ("bar", 0, 6, 2)])
    assert deleted(delete(broker, OTHER, [("foo", 0)]).body) == (E.NONE, [("foo", 0, E.NONE)])
    successor = Broker(load=False)
    partition = successor.coordinator.partition_for(OTHER)
    assert successor.coordinator.complete_load(partition, 0, broker.log.durable[partition])
    got, _ = fetch(successor, 7, OTHER, [("foo", 0), ("bar", 0)])
    assert got == {("foo", 0): (-1, -1, E.NONE), ("bar", 0): (6, 2, E.NONE)}
