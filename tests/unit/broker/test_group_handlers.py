"""Consumer-group APIs end to end: encoded requests → handlers → a real GroupCoordinator → decoded responses.

The fake broker's ``group_service.coordinator`` is a real
:class:`~mafka.group.coordinator.GroupCoordinator` over a fake clock, fake
timers and a fake ``__consumer_offsets`` log (appends complete at once, or
when the test releases them).  It owns every offsets partition but one
(``FOREIGN``'s), so NOT_COORDINATOR is reachable.  Every version both
advertised and decoded is exercised (``kafka-protocol.md`` §2).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from twisted.internet import defer

from mafka.broker.dispatcher import Dispatcher, collect_handlers
from mafka.errors import ErrorCode as E
from mafka.group.coordinator import CoordinatorConfig, GroupCoordinator
from mafka.group.offsets_records import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetKey,
    OffsetValue,
)
from mafka.wire.codec import decode_request, decode_response, encode_request
from mafka.wire.errors import UnsupportedVersion
from tests.unit.group.fakes import T0, Clock, FakeLog, Timers

OFFSET_COMMIT, OFFSET_FETCH, JOIN, HEARTBEAT, LEAVE, SYNC = 8, 9, 11, 12, 13, 14
DESCRIBE, LIST, DELETE = 15, 16, 42

DELAY = 50
SESSION = 10_000
REBALANCE = 20_000
PARTITIONS = 50
GROUP = "group"
OTHER = "other-group"
FOREIGN = "foreign-group"  # its offsets partition is not owned
PROTOCOLS = [{"name": "range", "metadata": b"range-meta"}]
CONN = SimpleNamespace(peer="127.0.0.1:5555", listener="PLAINTEXT")
TOPICS = {"foo": 2, "bar": 1}

JOIN_VERSIONS = range(0, 6)
SYNC_VERSIONS = HEARTBEAT_VERSIONS = range(0, 4)
LEAVE_VERSIONS = range(0, 3)
COMMIT_VERSIONS = range(2, 4)
FETCH_VERSIONS = range(1, 4)
DESCRIBE_VERSIONS = range(0, 5)
LIST_VERSIONS = range(0, 5)
DELETE_VERSIONS = range(0, 2)


# ------------------------------------------------------------------ fakes


class MetadataCache:
    def partition(self, topic: str, index: int):
        count = TOPICS.get(topic)
        return SimpleNamespace(leader=1) if count is not None and 0 <= index < count else None


class Broker:
    def __init__(self, *, load: bool = True) -> None:
        self.clock = Clock()
        self.timers = Timers(self.clock)
        self.log = FakeLog()
        self.coordinator = GroupCoordinator(
            CoordinatorConfig(
                offsets_partitions=PARTITIONS,
                min_session_timeout_ms=1000,
                max_session_timeout_ms=60_000,
                initial_rebalance_delay_ms=DELAY,
            ),
            self.clock,
            self.timers,
            self.log,
        )
        self.group_service = SimpleNamespace(coordinator=self.coordinator, checked_coordinator=lambda: self.coordinator)
        self.metadata_cache = MetadataCache()
        self.reactor = SimpleNamespace(seconds=lambda: self.clock.now / 1000)
        foreign = self.coordinator.partition_for(FOREIGN)
        for name in (GROUP, OTHER, "g1", "g2", "g3", "g4"):
            assert self.coordinator.partition_for(name) != foreign
        for p in range(PARTITIONS):
            if p != foreign:
                assert self.coordinator.on_elected(p, 0)
                if load:
                    assert self.coordinator.complete_load(p, 0, [])
        self.dispatcher = Dispatcher(collect_handlers(self))

    def send(self, api_key: int, version: int, body: dict, *, client_id: str = "client", conn=CONN) -> Reply:
        request = decode_request(encode_request(api_key, version, 7, client_id, body)[4:])
        return Reply(api_key, version, self.dispatcher.dispatch(request, conn))

    def ask(self, api_key: int, version: int, body: dict, **kw):
        """Send and insist on an immediate answer; the decoded body."""
        reply = self.send(api_key, version, body, **kw)
        return reply.body


class Reply:
    """A handler's answer, immediate or a Deferred inspected by callback (no reactor)."""

    def __init__(self, api_key: int, version: int, result) -> None:
        self.api_key, self.version = api_key, version
        self.chunks = None
        self.failure = None
        if isinstance(result, defer.Deferred):
            result.addCallbacks(self._set, self._failed)
        else:
            self._set(result)

    def _set(self, chunks) -> None:
        self.chunks = chunks

    def _failed(self, failure) -> None:
        self.failure = failure

    @property
    def done(self) -> bool:
        assert self.failure is None, self.failure
        return self.chunks is not None

    @property
    def body(self):
        assert self.done, "no response yet"
        correlation_id, body = decode_response(self.api_key, self.version, b"".join(self.chunks)[4:])
        assert correlation_id == 7
        return body


def join_body(version: int, member_id: str = "", *, group: str = GROUP, instance: str | None = None,
              session: int = SESSION, rebalance: int = REBALANCE, protocols=None) -> dict:
    body = {
        "group_id": group,
        "session_timeout_ms": session,
        "rebalance_timeout_ms": rebalance,
        "member_id": member_id,
        "protocol_type": "consumer",
        "protocols": PROTOCOLS if protocols is None else protocols,
    }
    if version >= 5:
        body["group_instance_id"] = instance
    return body


def join_one(broker: Broker, version: int = 5, *, group: str = GROUP, client_id: str = "client",
             instance: str | None = None):
    """A single member joins (v4+: through MEMBER_ID_REQUIRED) and the initial delay passes."""
    member_id = ""
    if version >= 4 and instance is None:
        first = broker.ask(JOIN, version, join_body(version, group=group, instance=instance), client_id=client_id)
        assert first.error_code == E.MEMBER_ID_REQUIRED
        member_id = first.member_id
    reply = broker.send(JOIN, version, join_body(version, member_id, group=group, instance=instance),
                        client_id=client_id)
    assert not reply.done  # parked for the initial rebalance delay
    broker.timers.advance(DELAY)
    body = reply.body
    assert body.error_code == E.NONE
    return body


def stable_one(broker: Broker, assignment: bytes = b"assigned", **kw):
    """One member, joined and synced: the group is Stable."""
    joined = join_one(broker, **kw)
    synced = broker.send(SYNC, 3, {
        "group_id": kw.get("group", GROUP), "generation_id": joined.generation_id, "member_id": joined.member_id,
        "group_instance_id": kw.get("instance"),
        "assignments": [{"member_id": joined.member_id, "assignment": assignment}],
    })
    assert synced.body.error_code == E.NONE
    return joined


def commit_body(group: str, partitions: list[tuple[str, int, int]], *, generation: int = -1, member: str = "",
                retention: int = -1, metadata: str | None = None) -> dict:
    topics: dict[str, list] = {}
    for topic, index, offset in partitions:
        topics.setdefault(topic, []).append(
            {"partition_index": index, "committed_offset": offset, "committed_metadata": metadata})
    return {
        "group_id": group,
        "generation_id_or_member_epoch": generation,
        "member_id": member,
        "retention_time_ms": retention,
        "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
    }


def commit_errors(body) -> dict[tuple[str, int], int]:
    return {(t.name, p.partition_index): p.error_code for t in body.topics for p in t.partitions}


def fetched(body) -> dict[tuple[str, int], tuple[int, str | None, int]]:
    return {
        (t.name, p.partition_index): (p.committed_offset, p.metadata, p.error_code)
        for t in body.topics for p in t.partitions
    }


def fetch_body(group: str, partitions: list[tuple[str, int]] | None) -> dict:
    if partitions is None:
        return {"group_id": group, "topics": None}
    topics: dict[str, list[int]] = {}
    for topic, index in partitions:
        topics.setdefault(topic, []).append(index)
    return {"group_id": group, "topics": [{"name": t, "partition_indexes": ps} for t, ps in topics.items()]}


@pytest.fixture
def broker() -> Broker:
    return Broker()


# ------------------------------------------------------------------ JoinGroup


def test_join_group_v0_needs_no_member_id_and_uses_the_session_timeout_as_rebalance_timeout(broker):
    reply = broker.send(JOIN, 0, join_body(0, session=7000), client_id="cli")
    assert not reply.done
    broker.timers.advance(DELAY)
    body = reply.body
    assert body.error_code == E.NONE
    assert body.member_id.startswith("cli-")
    assert (body.generation_id, body.protocol_name, body.leader) == (1, "range", body.member_id)
    assert [(m.member_id, m.metadata) for m in body.members] == [(body.member_id, b"range-meta")]
    # The group record written on SyncGroup carries the member's timeouts.
    broker.ask(SYNC, 0, {"group_id": GROUP, "generation_id": 1, "member_id": body.member_id,
                         "assignments": [{"member_id": body.member_id, "assignment": b"a"}]})
    (value,) = [v for k, v in broker.log.decoded() if isinstance(k, GroupMetadataKey)]
    (member,) = value.members
    assert (member.session_timeout, member.rebalance_timeout) == (7000, 7000)
    assert (member.client_id, member.client_host) == ("cli", "/127.0.0.1")


@pytest.mark.parametrize("version", [1, 2, 3])
def test_join_group_v1_to_v3_keep_their_rebalance_timeout_and_need_no_member_id(broker, version):
    reply = broker.send(JOIN, version, join_body(version, session=7000, rebalance=9000))
    broker.timers.advance(DELAY)
    body = reply.body
    assert (body.error_code, body.generation_id, body.leader) == (E.NONE, 1, body.member_id)
    broker.ask(SYNC, 1, {"group_id": GROUP, "generation_id": 1, "member_id": body.member_id, "assignments": []})
    (value,) = [v for k, v in broker.log.decoded() if isinstance(k, GroupMetadataKey)]
    assert (value.members[0].session_timeout, value.members[0].rebalance_timeout) == (7000, 9000)


@pytest.mark.parametrize("version", [4, 5])
def test_join_group_v4_plus_requires_a_member_id_first(broker, version):
    first = broker.ask(JOIN, version, join_body(version), client_id="cli")
    assert first.error_code == E.MEMBER_ID_REQUIRED
    assert first.member_id.startswith("cli-")
    assert (first.generation_id, first.protocol_name, first.leader, list(first.members)) == (-1, "", "", [])
    reply = broker.send(JOIN, version, join_body(version, first.member_id), client_id="cli")
    assert not reply.done
    broker.timers.advance(DELAY)
    body = reply.body
    assert (body.error_code, body.member_id, body.generation_id) == (E.NONE, first.member_id, 1)
    assert (body.leader, body.protocol_name) == (first.member_id, "range")


@pytest.mark.parametrize("version", JOIN_VERSIONS)
def test_join_group_members_go_only_to_the_leader(broker, version):
    ids = []
    replies = []
    for client in ("a", "b"):
        member_id = ""
        if version >= 4:
            member_id = broker.ask(JOIN, version, join_body(version), client_id=client).member_id
        replies.append(broker.send(JOIN, version, join_body(version, member_id), client_id=client))
        ids.append(member_id)
    broker.timers.advance(4 * DELAY)
    bodies = [r.body for r in replies]
    assert all(b.error_code == E.NONE for b in bodies)
    assert bodies[0].generation_id == bodies[1].generation_id == 1
    leader = bodies[0].leader
    assert leader == bodies[1].leader and leader in {b.member_id for b in bodies}
    by_id = {b.member_id: b for b in bodies}
    assert sorted(m.member_id for m in by_id[leader].members) == sorted(by_id)
    (follower,) = [m for m in by_id if m != leader]
    assert list(by_id[follower].members) == []
    if version >= 4:
        assert sorted(ids) == sorted(by_id)


@pytest.mark.parametrize("version", JOIN_VERSIONS)
def test_join_group_errors_carry_an_empty_protocol_name(broker, version):
    bad_session = broker.ask(JOIN, version, join_body(version, session=10))
    assert (bad_session.error_code, bad_session.protocol_name, bad_session.generation_id) == (
        E.INVALID_SESSION_TIMEOUT, "", -1)
    elsewhere = broker.ask(JOIN, version, join_body(version, group=FOREIGN))
    assert (elsewhere.error_code, elsewhere.protocol_name, elsewhere.leader) == (E.NOT_COORDINATOR, "", "")
    unknown = broker.ask(JOIN, version, join_body(version, "nobody"))
    assert (unknown.error_code, unknown.member_id, unknown.protocol_name) == (E.UNKNOWN_MEMBER_ID, "nobody", "")
    assert broker.ask(JOIN, version, join_body(version, group="")).error_code == E.INVALID_GROUP_ID


def test_join_group_while_loading_is_coordinator_load_in_progress():
    broker = Broker(load=False)
    for version in JOIN_VERSIONS:
        assert broker.ask(JOIN, version, join_body(version)).error_code == E.COORDINATOR_LOAD_IN_PROGRESS


def test_join_group_v5_static_member_rejoins_without_a_rebalance(broker):
    first = stable_one(broker, version=5, instance="instance-1", client_id="cli")
    assert first.member_id.startswith("instance-1-")
    assert [(m.member_id, m.group_instance_id) for m in first.members] == [(first.member_id, "instance-1")]
    # The same instance restarts with no member id: a new id, same generation, no waiting.
    again = broker.ask(JOIN, 5, join_body(5, instance="instance-1"), client_id="cli")
    assert again.error_code == E.NONE
    assert again.member_id != first.member_id and again.member_id.startswith("instance-1-")
    assert again.generation_id == first.generation_id
    assert again.leader == first.member_id  # the old leader id, on purpose (Kafka's KIP-345)
    # The replaced member id is fenced.
    fenced = broker.ask(HEARTBEAT, 3, {"group_id": GROUP, "generation_id": first.generation_id,
                                       "member_id": first.member_id, "group_instance_id": "instance-1"})
    assert fenced.error_code == E.FENCED_INSTANCE_ID
    ok = broker.ask(HEARTBEAT, 3, {"group_id": GROUP, "generation_id": first.generation_id,
                                   "member_id": again.member_id, "group_instance_id": "instance-1"})
    assert ok.error_code == E.NONE
    # Its assignment survived the restart.
    sync = broker.ask(SYNC, 3, {"group_id": GROUP, "generation_id": again.generation_id,
                                "member_id": again.member_id, "group_instance_id": "instance-1", "assignments": []})
    assert (sync.error_code, sync.assignment) == (E.NONE, b"assigned")


# ------------------------------------------------------------------ SyncGroup


@pytest.mark.parametrize("version", SYNC_VERSIONS)
def test_sync_group_returns_the_leaders_assignment(broker, version):
    replies = []
    for client in ("a", "b"):
        replies.append(broker.send(JOIN, 1, join_body(1), client_id=client))
    broker.timers.advance(4 * DELAY)
    bodies = [r.body for r in replies]
    leader = bodies[0].leader
    follower = next(b.member_id for b in bodies if b.member_id != leader)
    generation = bodies[0].generation_id

    def sync(member_id, assignments):
        body = {"group_id": GROUP, "generation_id": generation, "member_id": member_id,
                "assignments": [{"member_id": m, "assignment": a} for m, a in assignments.items()]}
        if version >= 3:
            body["group_instance_id"] = None
        return broker.send(SYNC, version, body)

    waiting = sync(follower, {})
    assert not waiting.done  # parked until the leader's assignment is stored
    broker.log.auto = False
    from_leader = sync(leader, {leader: b"for-leader", follower: b"for-follower"})
    assert not from_leader.done and not waiting.done  # the group record is not yet replicated
    broker.log.release()
    assert (from_leader.body.error_code, from_leader.body.assignment) == (E.NONE, b"for-leader")
    assert (waiting.body.error_code, waiting.body.assignment) == (E.NONE, b"for-follower")
    # Stable: a SyncGroup is answered at once with the stored assignment.
    again = sync(follower, {})
    assert (again.body.error_code, again.body.assignment) == (E.NONE, b"for-follower")


@pytest.mark.parametrize("version", SYNC_VERSIONS)
def test_sync_group_errors(broker, version):
    joined = join_one(broker, 1)

    def sync(**overrides):
        body = {"group_id": GROUP, "generation_id": joined.generation_id, "member_id": joined.member_id,
                "assignments": []}
        body.update(overrides)
        return broker.ask(SYNC, version, body)

    assert sync(generation_id=99).error_code == E.ILLEGAL_GENERATION
    assert sync(member_id="stranger").error_code == E.UNKNOWN_MEMBER_ID
    assert sync(group_id=FOREIGN).error_code == E.NOT_COORDINATOR
    assert sync(group_id=OTHER).error_code == E.UNKNOWN_MEMBER_ID
    assert sync(group_id="").error_code == E.INVALID_GROUP_ID
    assert sync().assignment == b""


# ------------------------------------------------------------------ Heartbeat


@pytest.mark.parametrize("version", HEARTBEAT_VERSIONS)
def test_heartbeat_errors(broker, version):
    joined = stable_one(broker)

    def beat(**overrides):
        body = {"group_id": GROUP, "generation_id": joined.generation_id, "member_id": joined.member_id}
        if version >= 3:
            body["group_instance_id"] = None
        body.update(overrides)
        return broker.ask(HEARTBEAT, version, body).error_code

    assert beat() == E.NONE
    assert beat(generation_id=joined.generation_id + 1) == E.ILLEGAL_GENERATION
    assert beat(member_id="stranger") == E.UNKNOWN_MEMBER_ID
    assert beat(group_id=OTHER) == E.UNKNOWN_MEMBER_ID
    assert beat(group_id=FOREIGN) == E.NOT_COORDINATOR
    assert beat(group_id="") == E.INVALID_GROUP_ID
    # A second member joins: the first learns of the rebalance through its heartbeat.
    broker.send(JOIN, 1, join_body(1), client_id="newcomer")
    assert beat() == E.REBALANCE_IN_PROGRESS


def test_heartbeat_while_loading_is_answered_blindly():
    broker = Broker(load=False)
    for version in HEARTBEAT_VERSIONS:
        body = {"group_id": GROUP, "generation_id": 1, "member_id": "m"}
        if version >= 3:
            body["group_instance_id"] = None
        assert broker.ask(HEARTBEAT, version, body).error_code == E.NONE


# ------------------------------------------------------------------ LeaveGroup


@pytest.mark.parametrize("version", LEAVE_VERSIONS)
def test_leave_group_error_mapping(broker, version):
    joined = stable_one(broker)
    assert broker.ask(LEAVE, version, {"group_id": GROUP, "member_id": "stranger"}).error_code == E.UNKNOWN_MEMBER_ID
    assert broker.ask(LEAVE, version, {"group_id": OTHER, "member_id": "m"}).error_code == E.UNKNOWN_MEMBER_ID
    assert broker.ask(LEAVE, version, {"group_id": FOREIGN, "member_id": "m"}).error_code == E.NOT_COORDINATOR
    assert broker.ask(LEAVE, version, {"group_id": "", "member_id": "m"}).error_code == E.INVALID_GROUP_ID
    assert broker.ask(LEAVE, version, {"group_id": GROUP, "member_id": joined.member_id}).error_code == E.NONE
    (described,) = broker.ask(DESCRIBE, 0, {"groups": [GROUP]}).groups
    assert (described.group_state, list(described.members)) == ("Empty", [])
    # Gone now.
    again = broker.ask(LEAVE, version, {"group_id": GROUP, "member_id": joined.member_id})
    assert again.error_code == E.UNKNOWN_MEMBER_ID


def test_leave_group_while_loading():
    broker = Broker(load=False)
    for version in LEAVE_VERSIONS:
        body = {"group_id": GROUP, "member_id": "m"}
        assert broker.ask(LEAVE, version, body).error_code == E.COORDINATOR_LOAD_IN_PROGRESS


# ------------------------------------------------------------------ OffsetCommit


def committed_values(broker: Broker, since: int = 0) -> dict[tuple[str, int], OffsetValue]:
    return {(k.topic, k.partition): v for k, v in broker.log.decoded(since) if isinstance(k, OffsetKey)}


@pytest.mark.parametrize("version", COMMIT_VERSIONS)
def test_offset_commit_default_retention_has_no_expire_timestamp(broker, version):
    body = broker.ask(OFFSET_COMMIT, version, commit_body(GROUP, [("foo", 0, 10), ("foo", 1, 11)], metadata="m"))
    assert commit_errors(body) == {("foo", 0): E.NONE, ("foo", 1): E.NONE}
    values = committed_values(broker)
    assert values == {
        ("foo", 0): OffsetValue(10, -1, "m", T0, None),
        ("foo", 1): OffsetValue(11, -1, "m", T0, None),
    }


@pytest.mark.parametrize("version", COMMIT_VERSIONS)
def test_offset_commit_retention_sets_the_expire_timestamp(broker, version):
    body = broker.ask(OFFSET_COMMIT, version, commit_body(GROUP, [("bar", 0, 5)], retention=60_000))
    assert commit_errors(body) == {("bar", 0): E.NONE}
    value = committed_values(broker)[("bar", 0)]
    assert (value.offset, value.metadata, value.commit_timestamp, value.expire_timestamp) == (5, "", T0, T0 + 60_000)


@pytest.mark.parametrize("version", COMMIT_VERSIONS)
def test_offset_commit_unknown_topic_or_partition_while_others_commit(broker, version):
    request = commit_body(GROUP, [("foo", 0, 1), ("nope", 0, 2), ("foo", 7, 3), ("bar", 0, 4)])
    body = broker.ask(OFFSET_COMMIT, version, request)
    # The response follows the request's order.
    assert [(t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in body.topics] == [
        ("foo", [(0, E.NONE), (7, E.UNKNOWN_TOPIC_OR_PARTITION)]),
        ("nope", [(0, E.UNKNOWN_TOPIC_OR_PARTITION)]),
        ("bar", [(0, E.NONE)]),
    ]
    assert set(committed_values(broker)) == {("foo", 0), ("bar", 0)}
    got = fetched(broker.ask(OFFSET_FETCH, version, fetch_body(GROUP, [("foo", 0), ("bar", 0)])))
    assert got == {("foo", 0): (1, "", E.NONE), ("bar", 0): (4, "", E.NONE)}


@pytest.mark.parametrize("version", COMMIT_VERSIONS)
def test_offset_commit_of_only_unknown_partitions_writes_nothing(broker, version):
    body = broker.ask(OFFSET_COMMIT, version, commit_body(GROUP, [("nope", 0, 1)]))
    assert commit_errors(body) == {("nope", 0): E.UNKNOWN_TOPIC_OR_PARTITION}
    assert broker.log.appends == []


@pytest.mark.parametrize("version", COMMIT_VERSIONS)
def test_offset_commit_waits_for_the_append_and_maps_its_error(broker, version):
    broker.log.auto = False
    reply = broker.send(OFFSET_COMMIT, version, commit_body(GROUP, [("foo", 0, 1), ("nope", 0, 2)]))
    assert not reply.done
    broker.log.release(E.NOT_ENOUGH_REPLICAS)
    assert commit_errors(reply.body) == {("foo", 0): E.COORDINATOR_NOT_AVAILABLE,
                                         ("nope", 0): E.UNKNOWN_TOPIC_OR_PARTITION}
    reply = broker.send(OFFSET_COMMIT, version, commit_body(GROUP, [("foo", 0, 1)]))
    assert not reply.done
    broker.log.release()
    assert commit_errors(reply.body) == {("foo", 0): E.NONE}


@pytest.mark.parametrize("version", COMMIT_VERSIONS)
def test_offset_commit_generations(broker, version):
    # Generation -1 into a group that does not exist: a standalone (assign()) group.
    body = broker.ask(OFFSET_COMMIT, version, commit_body(OTHER, [("foo", 0, 3)]))
    assert commit_errors(body) == {("foo", 0): E.NONE}
    (listed,) = broker.ask(LIST, 0, {}).groups
    assert (listed.group_id, listed.protocol_type) == (OTHER, "")
    # A generation of a group that does not exist (any more).
    stale = broker.ask(OFFSET_COMMIT, version, commit_body("g1", [("foo", 0, 3)], generation=4, member="m"))
    assert commit_errors(stale) == {("foo", 0): E.ILLEGAL_GENERATION}
    # A live group: its member at its generation commits; others are refused.
    joined = stable_one(broker)
    gen, member = joined.generation_id, joined.member_id
    ok = broker.ask(OFFSET_COMMIT, version, commit_body(GROUP, [("foo", 1, 8)], generation=gen, member=member))
    assert commit_errors(ok) == {("foo", 1): E.NONE}
    bad_gen = broker.ask(OFFSET_COMMIT, version, commit_body(GROUP, [("foo", 1, 9)], generation=gen + 1, member=member))
    assert commit_errors(bad_gen) == {("foo", 1): E.ILLEGAL_GENERATION}
    stranger = broker.ask(OFFSET_COMMIT, version, commit_body(GROUP, [("foo", 1, 9)], generation=gen, member="x"))
    assert commit_errors(stranger) == {("foo", 1): E.UNKNOWN_MEMBER_ID}
    standalone = broker.ask(OFFSET_COMMIT, version, commit_body(GROUP, [("foo", 1, 9)]))
    assert commit_errors(standalone) == {("foo", 1): E.UNKNOWN_MEMBER_ID}  # the group is not Empty
    elsewhere = broker.ask(OFFSET_COMMIT, version, commit_body(FOREIGN, [("foo", 1, 9)]))
    assert commit_errors(elsewhere) == {("foo", 1): E.NOT_COORDINATOR}
    got = fetched(broker.ask(OFFSET_FETCH, 3, fetch_body(GROUP, [("foo", 1)])))
    assert got == {("foo", 1): (8, "", E.NONE)}


def test_offset_commit_versions_below_2_are_not_decoded():
    frame = encode_request(OFFSET_COMMIT, 2, 1, "c", commit_body(GROUP, []))[4:]
    for version in (0, 1):
        with pytest.raises(UnsupportedVersion):
            decode_request(frame[:2] + version.to_bytes(2, "big") + frame[4:])


# ------------------------------------------------------------------ OffsetFetch


def test_offset_fetch_v1_repeats_the_coordinator_error_per_partition():
    broker = Broker(load=False)
    wanted = [("foo", 0), ("foo", 1), ("bar", 0)]
    got = fetched(broker.ask(OFFSET_FETCH, 1, fetch_body(GROUP, wanted)))
    assert got == {tp: (-1, "", E.COORDINATOR_LOAD_IN_PROGRESS) for tp in wanted}
    got = fetched(broker.ask(OFFSET_FETCH, 1, fetch_body(FOREIGN, wanted)))
    assert got == {tp: (-1, "", E.NOT_COORDINATOR) for tp in wanted}


def test_offset_fetch_v1_answers_committed_and_uncommitted_partitions(broker):
    broker.ask(OFFSET_COMMIT, 2, commit_body(GROUP, [("foo", 0, 42)], metadata="meta"))
    got = fetched(broker.ask(OFFSET_FETCH, 1, fetch_body(GROUP, [("foo", 0), ("foo", 1), ("nope", 3)])))
    assert got == {("foo", 0): (42, "meta", E.NONE), ("foo", 1): (-1, "", E.NONE), ("nope", 3): (-1, "", E.NONE)}
    unknown_group = fetched(broker.ask(OFFSET_FETCH, 1, fetch_body("g2", [("foo", 0)])))
    assert unknown_group == {("foo", 0): (-1, "", E.NONE)}


@pytest.mark.parametrize("version", [2, 3])
def test_offset_fetch_v2_plus_null_topics_means_every_committed_partition(broker, version):
    broker.ask(OFFSET_COMMIT, 3, commit_body(GROUP, [("foo", 1, 11), ("bar", 0, 20), ("foo", 0, 10)]))
    body = broker.ask(OFFSET_FETCH, version, fetch_body(GROUP, None))
    assert body.error_code == E.NONE
    assert fetched(body) == {("bar", 0): (20, "", E.NONE), ("foo", 0): (10, "", E.NONE), ("foo", 1): (11, "", E.NONE)}
    empty = broker.ask(OFFSET_FETCH, version, fetch_body("g3", None))
    assert (empty.error_code, list(empty.topics)) == (E.NONE, [])
    some = broker.ask(OFFSET_FETCH, version, fetch_body(GROUP, [("foo", 1)]))
    assert (some.error_code, fetched(some)) == (E.NONE, {("foo", 1): (11, "", E.NONE)})


@pytest.mark.parametrize("version", [2, 3])
def test_offset_fetch_v2_plus_has_a_top_level_error(version):
    broker = Broker(load=False)
    for topics in (None, [("foo", 0)]):
        body = broker.ask(OFFSET_FETCH, version, fetch_body(GROUP, topics))
        assert (body.error_code, list(body.topics)) == (E.COORDINATOR_LOAD_IN_PROGRESS, [])
        body = broker.ask(OFFSET_FETCH, version, fetch_body(FOREIGN, topics))
        assert (body.error_code, list(body.topics)) == (E.NOT_COORDINATOR, [])


# ------------------------------------------------------------------ DescribeGroups / ListGroups


@pytest.mark.parametrize("version", DESCRIBE_VERSIONS)
def test_describe_groups(broker, version):
    joined = stable_one(broker, client_id="cli", assignment=b"the-assignment")
    request = {"groups": [GROUP, OTHER, FOREIGN]}
    if version >= 3:
        request["include_authorized_operations"] = False
    stable, dead, foreign = broker.ask(DESCRIBE, version, request).groups
    assert (stable.error_code, stable.group_id, stable.group_state, stable.protocol_type, stable.protocol_data) == (
        E.NONE, GROUP, "Stable", "consumer", "range")
    (member,) = stable.members
    assert (member.member_id, member.client_id, member.client_host) == (joined.member_id, "cli", "/127.0.0.1")
    assert (member.member_metadata, member.member_assignment) == (b"range-meta", b"the-assignment")
    if version >= 4:
        assert member.group_instance_id is None
    if version >= 3:
        assert stable.authorized_operations == -(2**31)
    assert (dead.error_code, dead.group_id, dead.group_state, list(dead.members)) == (E.NONE, OTHER, "Dead", [])
    assert (foreign.error_code, foreign.group_id, foreign.group_state) == (E.NOT_COORDINATOR, FOREIGN, "")


def test_describe_groups_v4_static_member_and_a_rebalancing_group(broker):
    stable_one(broker, version=5, instance="inst")
    (group,) = broker.ask(DESCRIBE, 4, {"groups": [GROUP], "include_authorized_operations": True}).groups
    assert [m.group_instance_id for m in group.members] == ["inst"]
    broker.send(JOIN, 1, join_body(1), client_id="newcomer")  # a rebalance starts
    (group,) = broker.ask(DESCRIBE, 4, {"groups": [GROUP], "include_authorized_operations": False}).groups
    assert (group.group_state, group.protocol_data) == ("PreparingRebalance", "")
    assert all(m.member_metadata == b"" and m.member_assignment == b"" for m in group.members)


@pytest.mark.parametrize("version", LIST_VERSIONS)
def test_list_groups(broker, version):
    assert (lambda b: (b.error_code, list(b.groups)))(broker.ask(LIST, version, {})) == (E.NONE, [])
    stable_one(broker)
    broker.ask(OFFSET_COMMIT, 2, commit_body(OTHER, [("foo", 0, 1)]))
    body = broker.ask(LIST, version, {})
    assert body.error_code == E.NONE
    assert sorted((g.group_id, g.protocol_type) for g in body.groups) == [(GROUP, "consumer"), (OTHER, "")]


def test_list_groups_v4_answers_states_and_filters_by_them(broker):
    stable_one(broker)
    broker.ask(OFFSET_COMMIT, 2, commit_body(OTHER, [("foo", 0, 1)]))
    body = broker.ask(LIST, 4, {"states_filter": []})
    assert sorted((g.group_id, g.group_state) for g in body.groups) == [(GROUP, "Stable"), (OTHER, "Empty")]
    body = broker.ask(LIST, 4, {"states_filter": ["Empty"]})
    assert [(g.group_id, g.group_state) for g in body.groups] == [(OTHER, "Empty")]
    body = broker.ask(LIST, 4, {"states_filter": ["PreparingRebalance", "Stable"]})
    assert [g.group_id for g in body.groups] == [GROUP]
    assert list(broker.ask(LIST, 4, {"states_filter": ["Dead"]}).groups) == []


def test_list_groups_while_loading():
    broker = Broker(load=False)
    for version in LIST_VERSIONS:
        body = broker.ask(LIST, version, {})
        assert (body.error_code, list(body.groups)) == (E.COORDINATOR_LOAD_IN_PROGRESS, [])


# ------------------------------------------------------------------ DeleteGroups


def delete_results(body) -> list[tuple[str, int]]:
    return [(r.group_id, r.error_code) for r in body.results]


@pytest.mark.parametrize("version", DELETE_VERSIONS)
def test_delete_groups(broker, version):
    broker.ask(OFFSET_COMMIT, 2, commit_body(OTHER, [("foo", 0, 5)]))
    stable_one(broker)
    since = len(broker.log.appends)
    body = broker.ask(DELETE, version, {"groups_names": [OTHER, GROUP, "g4", OTHER, FOREIGN]})
    assert delete_results(body) == [
        (OTHER, E.NONE), (GROUP, E.NON_EMPTY_GROUP), ("g4", E.GROUP_ID_NOT_FOUND), (FOREIGN, E.NOT_COORDINATOR)]
    # The deleted group's offsets got tombstones, and it is gone.
    assert broker.log.decoded(since) == [(OffsetKey(OTHER, "foo", 0), None)]
    assert fetched(broker.ask(OFFSET_FETCH, 1, fetch_body(OTHER, [("foo", 0)]))) == {("foo", 0): (-1, "", E.NONE)}
    assert [g.group_id for g in broker.ask(LIST, 0, {}).groups] == [GROUP]
    again = broker.ask(DELETE, version, {"groups_names": [OTHER]})
    assert delete_results(again) == [(OTHER, E.GROUP_ID_NOT_FOUND)]


@pytest.mark.parametrize("version", DELETE_VERSIONS)
def test_delete_groups_waits_for_the_tombstones(broker, version):
    joined = stable_one(broker)
    broker.ask(OFFSET_COMMIT, 2, commit_body(GROUP, [("foo", 0, 5)], generation=joined.generation_id,
                                             member=joined.member_id))
    broker.ask(LEAVE, 0, {"group_id": GROUP, "member_id": joined.member_id})  # Empty now
    broker.log.auto = False
    since = len(broker.log.appends)
    reply = broker.send(DELETE, version, {"groups_names": [GROUP, GROUP]})
    assert not reply.done
    decoded = broker.log.decoded(since)
    assert (OffsetKey(GROUP, "foo", 0), None) in decoded and (GroupMetadataKey(GROUP), None) in decoded
    broker.log.release(E.NOT_LEADER_OR_FOLLOWER)
    assert delete_results(reply.body) == [(GROUP, E.NOT_COORDINATOR)]


def test_group_metadata_value_is_what_describe_reports(broker):
    """The group record written on SyncGroup matches the described group."""
    joined = stable_one(broker, assignment=b"x")
    (value,) = [v for k, v in broker.log.decoded() if isinstance(k, GroupMetadataKey)]
    assert isinstance(value, GroupMetadataValue)
    assert (value.protocol_type, value.protocol, value.leader, value.generation) == (
        "consumer", "range", joined.member_id, joined.generation_id)
    assert [(m.member_id, m.assignment, m.subscription) for m in value.members] == [
        (joined.member_id, b"x", b"range-meta")]


class _StatePersister:
    """DeleteShareGroupState at a fake share coordinator: records the calls, answers *error* per partition."""

    def __init__(self, error: int = E.NONE) -> None:
        self.error = error
        self.calls: list[tuple[str, dict]] = []

    def delete(self, group_id: str, topics: dict) -> defer.Deferred:
        self.calls.append((group_id, {t: sorted(ps) for t, ps in topics.items()}))
        return defer.succeed({t: {p: SimpleNamespace(error=self.error) for p in ps} for t, ps in topics.items()})


def _empty_share_group(broker, group: str) -> bytes:
    """A share group whose one member joined (its share-partitions of foo initialized) and left."""
    from mafka.group.consumer.member import TopicInfo
    from mafka.group.share.group_types import HeartbeatRequest as ShareHeartbeat

    topic_id = bytes(range(16))
    shares = broker.coordinator.share_groups
    shares.topics = lambda: {"foo": TopicInfo(topic_id, "foo", 2)}
    shares.initializer = lambda request, done: done(True)
    answers: list = []
    broker.coordinator.share_group_heartbeat(ShareHeartbeat(group, "m" * 22, 0, subscribed_topic_names=["foo"]),
                                             answers.append)
    broker.coordinator.share_group_heartbeat(ShareHeartbeat(group, "m" * 22, -1), answers.append)
    assert [a.error_code for a in answers] == [E.NONE, E.NONE]
    return topic_id


@pytest.mark.parametrize("version", DELETE_VERSIONS)
def test_delete_groups_deletes_a_share_groups_state_at_the_share_coordinator_first(broker, version):
    topic_id = _empty_share_group(broker, "g1")
    broker.share_persister = _StatePersister(E.NOT_COORDINATOR)
    refused = broker.ask(DELETE, version, {"groups_names": ["g1"]})
    assert delete_results(refused) == [("g1", E.NOT_COORDINATOR)]  # the share coordinator's error: the group stays
    assert broker.coordinator.share_groups.get("g1") is not None
    broker.share_persister = persister = _StatePersister()
    deleted = broker.ask(DELETE, version, {"groups_names": ["g1", OTHER]})
    assert delete_results(deleted) == [("g1", E.NONE), (OTHER, E.GROUP_ID_NOT_FOUND)]
    assert persister.calls == [("g1", {topic_id: [0, 1]})]
    assert broker.coordinator.share_groups.get("g1") is None
