"""ACL checks of the consumer-group, admin and inter-broker APIs (Kafka 2.8's ``KafkaApis``).

Requests go through the wire codec and a dispatcher to the handlers, as a
connection authenticated as ``User:alice`` (or ``User:mallory``, who holds
no ACL) sends them; the broker's :class:`BrokerAuthorizer` is real and
enabled, its ACL cache filled directly.  For each API: what an allowed
principal gets, what a refused one gets (the exact error codes), and that a
refused part did nothing (no offset committed, no topic created, the
controller or replica manager never asked).
"""

from __future__ import annotations

from collections import defaultdict
from types import SimpleNamespace as NS
from typing import Any

import pytest
from twisted.internet import defer

from mafka.broker.authorization import BrokerAuthorizer
from mafka.broker.authorized_operations import GROUP_OPERATIONS, NOT_PROVIDED, bitfield
from mafka.broker.config import BrokerConfig
from mafka.broker.dispatcher import Dispatcher
from mafka.broker.handler_authz import AdminAuthz
from mafka.broker.handlers import (
    configs,
    controlled_shutdown,
    controller_requests,
    elect_leaders,
    find_coordinator,
    groups,
    log_dirs,
    partition_reassignments,
    scram_credentials,
    topics,
)
from mafka.coordination.kafka_zk import KafkaZkClient
from mafka.coordination.memory_store import MemoryStore, MemoryZooKeeper
from mafka.errors import ErrorCode as E
from mafka.security.acl import (
    AccessControlEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from mafka.security.principal import KafkaPrincipal
from mafka.wire.codec import decode_request, decode_response, encode_request
from tests.unit.broker.test_find_coordinator import _broker as coordinator_broker
from tests.unit.broker.test_group_handlers import (
    DELAY,
    GROUP,
    OTHER,
    Broker,
    commit_body,
    commit_errors,
)

Op = AclOperation
TOPIC, GROUP_T, CLUSTER, TXN_ID = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER, ResourceType.TRANSACTIONAL_ID
AUTH_CLASS = "kafka.security.authorizer.AclAuthorizer"

TOPIC_DENIED, GROUP_DENIED = E.TOPIC_AUTHORIZATION_FAILED, E.GROUP_AUTHORIZATION_FAILED
CLUSTER_DENIED, TXN_DENIED = E.CLUSTER_AUTHORIZATION_FAILED, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def conn(user: str) -> NS:
    """A connection authenticated as ``User:<user>``."""
    return NS(principal=KafkaPrincipal("User", user), host="10.0.0.7", peer="10.0.0.7:5555", listener="PLAINTEXT")


ALICE, MALLORY, ROOT = conn("alice"), conn("mallory"), conn("root")


def authorizer(*grants: tuple[ResourceType, str, AclOperation], user: str = "alice") -> BrokerAuthorizer:
    """An enabled authorizer: ``User:root`` is a super user, *user* holds *grants* (ALLOW from any host)."""
    auth = BrokerAuthorizer(None, {"authorizer.class.name": AUTH_CLASS, "super.users": "User:root"})
    grouped: dict[ResourcePattern, set[AccessControlEntry]] = defaultdict(set)
    for resource_type, name, op in grants:
        entry = AccessControlEntry(f"User:{user}", "*", op, AclPermissionType.ALLOW)
        grouped[ResourcePattern(resource_type, name, PatternType.LITERAL)].add(entry)
    for pattern, entries in grouped.items():
        auth.acls.update(pattern, entries)
    assert auth.enabled
    return auth


def settled(result: Any) -> Any:
    """The value of an already-fired Deferred (or the value itself)."""
    if not isinstance(result, defer.Deferred):
        return result
    out: list[Any] = []
    result.addBoth(out.append)
    assert out, "no answer yet"
    if hasattr(out[0], "raiseException"):
        out[0].raiseException()
    return out[0]


def call(api: dict[int, Any], api_key: int, version: int, body: dict, connection: Any) -> Any:
    """Encode *body*, dispatch it to *api* as *connection*, and decode the (immediate) answer."""
    request = decode_request(encode_request(api_key, version, 9, "client", body)[4:])
    chunks = settled(Dispatcher(api).dispatch(request, connection))
    correlation_id, response = decode_response(api_key, version, b"".join(chunks)[4:])
    assert correlation_id == 9
    return response


class Forbidden:
    """A collaborator no refused request may touch: any attribute use fails the test."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        raise AssertionError(f"{self._name}.{attr} used by a refused request")


class Recorder:
    """A collaborator whose methods are the given functions, recording each call (name, args)."""

    def __init__(self, **answers: Any) -> None:
        self.calls: list[tuple[str, tuple]] = []
        self._answers = answers

    def __getattr__(self, name: str) -> Any:
        answers = self.__dict__["_answers"]
        if name not in answers:
            raise AttributeError(name)

        def method(*args: Any) -> Any:
            self.calls.append((name, args))
            return answers[name](*args)

        return method

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]


# ====================================================================== helper


def test_no_or_disabled_authorizer_allows_everything() -> None:
    for broker in (NS(), NS(authorizer=None), NS(authorizer=BrokerAuthorizer(None, {}))):
        authz = AdminAuthz(broker)
        assert authz.allows(MALLORY, Op.DELETE, TOPIC, "t")
        assert authz.allows_cluster(MALLORY, Op.CLUSTER_ACTION)
        assert authz.split(MALLORY, Op.READ, TOPIC, ["a", "b"]) == (["a", "b"], [])
    assert AdminAuthz(NS()).operations(MALLORY, GROUP_T, "g", GROUP_OPERATIONS) == GROUP_OPERATIONS
    disabled = AdminAuthz(NS(authorizer=BrokerAuthorizer(None, {})))
    assert disabled.operations(MALLORY, GROUP_T, "g", 0) == GROUP_OPERATIONS


def test_split_checks_each_name_once_and_keeps_order(monkeypatch: pytest.MonkeyPatch) -> None:
    auth = authorizer((TOPIC, "a", Op.READ))
    asked: list[str] = []
    real = auth.authorize

    def counting(connection: Any, op: AclOperation, rt: ResourceType, name: str) -> bool:
        asked.append(name)
        return real(connection, op, rt, name)

    monkeypatch.setattr(auth, "authorize", counting)
    items = [("a", 0), ("b", 0), ("a", 1), ("b", 1)]
    allowed, refused = AdminAuthz(NS(authorizer=auth)).split(ALICE, Op.READ, TOPIC, items, name_of=lambda tp: tp[0])
    assert (allowed, refused) == ([("a", 0), ("a", 1)], [("b", 0), ("b", 1)])
    assert sorted(asked) == ["a", "b"]


# ====================================================================== consumer groups


class AuthzBroker(Broker):
    """test_group_handlers' broker (a real GroupCoordinator; topics foo (2 partitions) and bar) with an authorizer."""

    authorizer: Any = None


def group_broker(*grants: tuple[ResourceType, str, AclOperation]) -> AuthzBroker:
    broker = AuthzBroker()
    broker.authorizer = authorizer(*grants)
    broker.dispatcher = Dispatcher(groups.handlers(broker))
    return broker


def ask(broker: Broker, api_key: int, version: int, body: dict, connection: Any) -> Any:
    return broker.send(api_key, version, body, conn=connection).body


def join_v0(broker: Broker, connection: Any, group: str = GROUP) -> Any:
    reply = broker.send(groups.JOIN_GROUP, 0, {
        "group_id": group, "session_timeout_ms": 10_000, "member_id": "", "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b"m"}],
    }, conn=connection)
    if not reply.done:
        broker.timers.advance(DELAY)  # the initial rebalance delay
    return reply.body


def committed(broker: Broker, group: str, *tps: tuple[str, int]) -> dict[tuple[str, int], int]:
    error, entries = broker.coordinator.fetch_offsets(group, list(tps))
    assert error == E.NONE
    return {tp: e.offset for tp, e in entries.items()}


def commit_as_root(broker: Broker, group: str, *partitions: tuple[str, int, int]) -> None:
    body = ask(broker, groups.OFFSET_COMMIT, 3, commit_body(group, list(partitions)), ROOT)
    assert set(commit_errors(body).values()) == {E.NONE}


def test_join_group_needs_read_on_the_group() -> None:
    broker = group_broker((GROUP_T, GROUP, Op.READ))
    refused = join_v0(broker, MALLORY)
    assert (refused.error_code, refused.member_id, refused.generation_id, refused.members) == (GROUP_DENIED, "", -1, [])
    assert broker.coordinator.group_manager.get_group(GROUP) is None  # no group was created
    joined = join_v0(broker, ALICE)
    assert joined.error_code == E.NONE and joined.member_id


def test_sync_heartbeat_and_leave_need_read_on_the_group() -> None:
    broker = group_broker((GROUP_T, GROUP, Op.READ))
    joined = join_v0(broker, ALICE)
    member = joined.member_id
    sync = {"group_id": GROUP, "generation_id": joined.generation_id, "member_id": member,
            "assignments": [{"member_id": member, "assignment": b"a"}]}
    refused = ask(broker, groups.SYNC_GROUP, 0, sync, MALLORY)
    assert (refused.error_code, refused.assignment) == (GROUP_DENIED, b"")
    assert ask(broker, groups.SYNC_GROUP, 0, sync, ALICE).error_code == E.NONE

    beat = {"group_id": GROUP, "generation_id": joined.generation_id, "member_id": member}
    assert ask(broker, groups.HEARTBEAT, 0, beat, MALLORY).error_code == GROUP_DENIED
    for version in (0, 3):
        left = ask(broker, groups.LEAVE_GROUP, version, {
            "group_id": GROUP, "member_id": member, "members": [{"member_id": member, "group_instance_id": None}],
        }, MALLORY)
        assert left.error_code == GROUP_DENIED
        if version >= 3:
            assert left.members == []
    # Nothing mallory sent removed the member.
    assert ask(broker, groups.HEARTBEAT, 0, beat, ALICE).error_code == E.NONE
    assert ask(broker, groups.LEAVE_GROUP, 0, {"group_id": GROUP, "member_id": member}, ALICE).error_code == E.NONE


def test_offset_commit_needs_read_on_the_group_then_on_each_topic() -> None:
    broker = group_broker((GROUP_T, GROUP, Op.READ), (TOPIC, "foo", Op.READ), (TOPIC, "ghost", Op.READ))
    partitions = [("foo", 0, 5), ("bar", 0, 6), ("secret", 0, 7), ("ghost", 0, 8)]
    body = ask(broker, groups.OFFSET_COMMIT, 3, commit_body(GROUP, partitions), ALICE)
    assert commit_errors(body) == {
        ("foo", 0): E.NONE,
        ("bar", 0): TOPIC_DENIED,
        ("secret", 0): TOPIC_DENIED,  # not readable: its non-existence is not revealed
        ("ghost", 0): E.UNKNOWN_TOPIC_OR_PARTITION,  # readable and unknown
    }
    assert committed(broker, GROUP, ("foo", 0), ("bar", 0)) == {("foo", 0): 5, ("bar", 0): -1}

    # Read on the topics but not on the group: every partition refused, nothing committed.
    broker = group_broker((TOPIC, "foo", Op.READ), (TOPIC, "bar", Op.READ))
    body = ask(broker, groups.OFFSET_COMMIT, 3, commit_body(GROUP, partitions[:2]), ALICE)
    assert commit_errors(body) == {("foo", 0): GROUP_DENIED, ("bar", 0): GROUP_DENIED}
    assert committed(broker, GROUP, ("foo", 0), ("bar", 0)) == {("foo", 0): -1, ("bar", 0): -1}


def txn_commit_body(group: str, transactional_id: str, *partitions: tuple[str, int, int]) -> dict:
    by_topic: dict[str, list] = defaultdict(list)
    for topic, index, offset in partitions:
        by_topic[topic].append({"partition_index": index, "committed_offset": offset,
                                "committed_leader_epoch": -1, "committed_metadata": ""})
    return {"transactional_id": transactional_id, "group_id": group, "producer_id": 4000, "producer_epoch": 2,
            "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]}


def test_txn_offset_commit_needs_write_on_the_transactional_id_read_on_group_and_topics() -> None:
    grants = ((TXN_ID, "tx", Op.WRITE), (GROUP_T, GROUP, Op.READ), (TOPIC, "foo", Op.READ))
    broker = group_broker(*grants)
    send = [("foo", 0, 3), ("bar", 0, 4)]

    def errors(transactional_id: str, group: str) -> dict[tuple[str, int], int]:
        body = ask(broker, groups.TXN_OFFSET_COMMIT, 2, txn_commit_body(group, transactional_id, *send), ALICE)
        return commit_errors(body)

    assert errors("other-tx", GROUP) == {("foo", 0): TXN_DENIED, ("bar", 0): TXN_DENIED}
    assert errors("tx", OTHER) == {("foo", 0): GROUP_DENIED, ("bar", 0): GROUP_DENIED}
    assert broker.log.appends == []  # nothing written for a refused request
    assert errors("tx", GROUP) == {("foo", 0): E.NONE, ("bar", 0): TOPIC_DENIED}
    assert len(broker.log.appends) == 1


def test_offset_fetch_needs_describe_on_the_group_and_hides_undescribable_topics() -> None:
    broker = group_broker((GROUP_T, GROUP, Op.DESCRIBE), (TOPIC, "foo", Op.DESCRIBE))
    commit_as_root(broker, GROUP, ("foo", 0, 10), ("bar", 0, 20))
    commit_as_root(broker, OTHER, ("foo", 0, 30))

    def fetched(body: Any) -> dict[tuple[str, int], tuple[int, int]]:
        return {(t.name, p.partition_index): (p.committed_offset, p.error_code) for t in body.topics for p in t.partitions}

    wanted = [{"name": "foo", "partition_indexes": [0]}, {"name": "bar", "partition_indexes": [0]}]
    body = ask(broker, groups.OFFSET_FETCH, 3, {"group_id": GROUP, "topics": wanted}, ALICE)
    assert body.error_code == E.NONE
    assert fetched(body) == {("foo", 0): (10, E.NONE), ("bar", 0): (-1, TOPIC_DENIED)}
    # Every committed partition (null topics): topics without Describe are left out.
    body = ask(broker, groups.OFFSET_FETCH, 3, {"group_id": GROUP, "topics": None}, ALICE)
    assert fetched(body) == {("foo", 0): (10, E.NONE)}
    # No Describe on the group: the group's error, no offsets (v1: on every partition asked).
    body = ask(broker, groups.OFFSET_FETCH, 3, {"group_id": OTHER, "topics": None}, ALICE)
    assert (body.error_code, body.topics) == (GROUP_DENIED, [])
    body = ask(broker, groups.OFFSET_FETCH, 1, {"group_id": OTHER, "topics": wanted[:1]}, ALICE)
    assert fetched(body) == {("foo", 0): (-1, GROUP_DENIED)}
    # v8: each group checked on its own.
    body = ask(broker, groups.OFFSET_FETCH, 8, {"groups": [
        {"group_id": GROUP, "topics": wanted}, {"group_id": OTHER, "topics": None},
    ], "require_stable": False}, ALICE)
    by_group = {g.group_id: g for g in body.groups}
    assert by_group[GROUP].error_code == E.NONE
    assert fetched(by_group[GROUP]) == {("foo", 0): (10, E.NONE), ("bar", 0): (-1, TOPIC_DENIED)}
    assert (by_group[OTHER].error_code, by_group[OTHER].topics) == (GROUP_DENIED, [])


def test_describe_groups_needs_describe_and_answers_the_authorizers_operations() -> None:
    broker = group_broker((GROUP_T, GROUP, Op.READ), (GROUP_T, GROUP, Op.DESCRIBE))
    commit_as_root(broker, GROUP, ("foo", 0, 1))
    commit_as_root(broker, OTHER, ("foo", 0, 1))
    body = ask(broker, groups.DESCRIBE_GROUPS, 3, {"groups": [GROUP, OTHER], "include_authorized_operations": True},
               ALICE)
    allowed, refused = body.groups
    assert (allowed.error_code, allowed.group_state) == (E.NONE, "Empty")
    assert allowed.authorized_operations == bitfield((Op.READ, Op.DESCRIBE))
    assert (refused.group_id, refused.error_code, refused.group_state, refused.protocol_type, refused.members,
            refused.authorized_operations) == (OTHER, GROUP_DENIED, "", "", [], NOT_PROVIDED)
    # A super user is allowed every operation a group supports.
    body = ask(broker, groups.DESCRIBE_GROUPS, 3, {"groups": [OTHER], "include_authorized_operations": True}, ROOT)
    assert body.groups[0].authorized_operations == GROUP_OPERATIONS


def test_list_groups_lists_what_the_principal_may_describe_or_all_with_cluster_describe() -> None:
    broker = group_broker((GROUP_T, GROUP, Op.DESCRIBE))
    commit_as_root(broker, GROUP, ("foo", 0, 1))
    commit_as_root(broker, OTHER, ("foo", 0, 1))
    assert [g.group_id for g in ask(broker, groups.LIST_GROUPS, 3, {}, ALICE).groups] == [GROUP]
    assert ask(broker, groups.LIST_GROUPS, 3, {}, MALLORY).groups == []
    broker.authorizer = authorizer((CLUSTER, "kafka-cluster", Op.DESCRIBE))
    listed = ask(broker, groups.LIST_GROUPS, 3, {}, ALICE)
    assert (listed.error_code, sorted(g.group_id for g in listed.groups)) == (E.NONE, sorted([GROUP, OTHER]))


def test_consumer_and_share_group_heartbeats_need_describe_on_every_subscribed_topic() -> None:
    """Kafka 4's ``handleConsumerGroupHeartbeat`` / ``handleShareGroupHeartbeat``: Read on the group,
    then Describe on each subscribed topic name, else TOPIC_AUTHORIZATION_FAILED and no group."""
    from mafka.broker.handlers import consumer_groups, share_groups

    broker = AuthzBroker()
    broker.authorizer = authorizer((GROUP_T, GROUP, Op.READ), (GROUP_T, "sg", Op.READ), (TOPIC, "foo", Op.DESCRIBE))
    broker.dispatcher = Dispatcher({**consumer_groups.handlers(broker), **share_groups.handlers(broker)})

    def consumer(names: list[str] | None, member: str = "m" * 22, epoch: int = 0) -> Any:
        return ask(broker, 68, 0, {
            "group_id": GROUP, "member_id": member, "member_epoch": epoch, "instance_id": None, "rack_id": None,
            "rebalance_timeout_ms": 30_000 if epoch == 0 else -1, "subscribed_topic_names": names,
            "server_assignor": None, "topic_partitions": [] if epoch == 0 else None,
        }, ALICE)

    def share(names: list[str] | None, epoch: int = 0) -> Any:
        return ask(broker, 76, 1, {"group_id": "sg", "member_id": "s" * 22, "member_epoch": epoch, "rack_id": None,
                                   "subscribed_topic_names": names}, ALICE)

    refused = consumer(["foo", "bar"])
    assert (refused.error_code, refused.member_epoch) == (E.TOPIC_AUTHORIZATION_FAILED, 0)
    assert broker.coordinator.consumer_groups.get(GROUP) is None
    joined = consumer(["foo"])
    assert joined.error_code == E.NONE and joined.member_epoch > 0
    assert consumer(None, epoch=joined.member_epoch).error_code == E.NONE  # an unchanged subscription
    assert consumer(["bar"], epoch=joined.member_epoch).error_code == E.TOPIC_AUTHORIZATION_FAILED

    assert share(["foo", "bar"]).error_code == E.TOPIC_AUTHORIZATION_FAILED
    assert broker.coordinator.share_groups.get("sg") is None
    assert share(["foo"]).error_code == E.NONE


def test_delete_groups_needs_delete_on_each_group() -> None:
    broker = group_broker((GROUP_T, GROUP, Op.DELETE))
    commit_as_root(broker, GROUP, ("foo", 0, 1))
    commit_as_root(broker, OTHER, ("foo", 0, 2))
    body = ask(broker, groups.DELETE_GROUPS, 1, {"groups_names": [GROUP, OTHER, GROUP]}, ALICE)
    assert [(r.group_id, r.error_code) for r in body.results] == [(GROUP, E.NONE), (OTHER, GROUP_DENIED)]
    assert committed(broker, GROUP, ("foo", 0)) == {("foo", 0): -1}
    assert committed(broker, OTHER, ("foo", 0)) == {("foo", 0): 2}  # untouched
    body = ask(broker, groups.DELETE_GROUPS, 1, {"groups_names": [OTHER]}, MALLORY)
    assert [(r.group_id, r.error_code) for r in body.results] == [(OTHER, GROUP_DENIED)]


def test_offset_delete_needs_delete_on_the_group_then_read_on_each_topic() -> None:
    broker = group_broker((GROUP_T, GROUP, Op.DELETE), (TOPIC, "foo", Op.READ))
    commit_as_root(broker, GROUP, ("foo", 0, 1), ("bar", 0, 2))
    request = {"group_id": GROUP, "topics": [
        {"name": "foo", "partitions": [{"partition_index": 0}]},
        {"name": "bar", "partitions": [{"partition_index": 0}]},
    ]}
    refused = ask(broker, groups.OFFSET_DELETE, 0, request, MALLORY)
    assert (refused.error_code, refused.topics) == (GROUP_DENIED, [])
    assert committed(broker, GROUP, ("foo", 0), ("bar", 0)) == {("foo", 0): 1, ("bar", 0): 2}
    body = ask(broker, groups.OFFSET_DELETE, 0, request, ALICE)
    assert body.error_code == E.NONE
    assert {(t.name, p.partition_index): p.error_code for t in body.topics for p in t.partitions} == {
        ("foo", 0): E.NONE, ("bar", 0): TOPIC_DENIED,
    }
    assert committed(broker, GROUP, ("foo", 0), ("bar", 0)) == {("foo", 0): -1, ("bar", 0): 2}


def test_group_apis_without_an_enabled_authorizer_allow_everyone() -> None:
    broker = group_broker()
    broker.authorizer = BrokerAuthorizer(None, {})
    commit_as_root(broker, GROUP, ("foo", 0, 1))
    body = ask(broker, groups.DESCRIBE_GROUPS, 3, {"groups": [GROUP], "include_authorized_operations": True}, MALLORY)
    assert (body.groups[0].error_code, body.groups[0].authorized_operations) == (E.NONE, GROUP_OPERATIONS)
    assert commit_errors(ask(broker, groups.OFFSET_COMMIT, 3, commit_body(GROUP, [("bar", 0, 4)]), MALLORY)) == {
        ("bar", 0): E.NONE,
    }


# ====================================================================== FindCoordinator


def find(broker: Any, key: str, key_type: int, connection: Any) -> Any:
    return call(find_coordinator.handlers(broker), 10, 1, {"key": key, "key_type": key_type}, connection)


def test_find_coordinator_needs_describe_on_the_group_or_transactional_id() -> None:
    broker, created = coordinator_broker({p: 1 for p in range(50)}, {p: 2 for p in range(50)})
    broker.authorizer = authorizer((GROUP_T, "g", Op.DESCRIBE), (TXN_ID, "tx", Op.DESCRIBE))
    assert (find(broker, "g", 0, ALICE).error_code, find(broker, "g", 0, ALICE).node_id) == (E.NONE, 1)
    assert (find(broker, "tx", 1, ALICE).error_code, find(broker, "tx", 1, ALICE).node_id) == (E.NONE, 2)
    refused = find(broker, "h", 0, ALICE)
    assert (refused.error_code, refused.error_message, refused.node_id, refused.host, refused.port) == (
        GROUP_DENIED, "Group authorization failed.", -1, "", -1)
    # A group's Describe is not a transactional id's.
    assert find(broker, "g", 1, ALICE).error_code == TXN_DENIED
    assert find(broker, "", 1, ALICE).error_code == TXN_DENIED  # checked first, as Kafka


def test_find_coordinator_refused_does_not_create_the_internal_topic() -> None:
    broker, created = coordinator_broker(None, None)
    broker.authorizer = authorizer()
    assert find(broker, "g", 0, ALICE).error_code == GROUP_DENIED
    assert find(broker, "tx", 1, ALICE).error_code == TXN_DENIED
    assert created == []
    assert find(broker, "g", 0, ROOT).error_code == E.COORDINATOR_NOT_AVAILABLE
    assert created == [True]


# ====================================================================== topics


def topics_broker(*grants: tuple[ResourceType, str, AclOperation], delete_enabled: bool = True) -> NS:
    def create_partitions(specs: list[tuple], *_: Any) -> defer.Deferred:
        names = [spec[0] for spec in specs]  # the controller's own duplicate check
        return defer.succeed({
            n: (E.INVALID_REQUEST, "Duplicate topic in request.") if names.count(n) > 1 else (E.NONE, None)
            for n in names
        })

    controller = Recorder(
        create_topics=lambda specs, *_: defer.succeed({s[0]: (E.NONE, None) for s in specs}),
        delete_topics=lambda names, *_: defer.succeed(dict.fromkeys(names, E.NONE)),
        create_partitions=create_partitions,
    )
    controller.is_active = True  # type: ignore[attr-defined]
    config = NS(num_partitions=1, default_replication_factor=1, delete_topic_enable=delete_enabled)
    return NS(controller=controller, config=config, authorizer=authorizer(*grants))


def create_topics_body(*names: str) -> dict:
    return {"topics": [{"name": n, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
                       for n in names], "timeout_ms": 1000, "validate_only": False}


def test_create_topics_needs_create_on_the_cluster_or_on_each_topic() -> None:
    broker = topics_broker((TOPIC, "a", Op.CREATE))
    body = call(topics.handlers(broker), 19, 4, create_topics_body("a", "b"), ALICE)
    assert [(t.name, t.error_code, t.error_message) for t in body.topics] == [
        ("a", E.NONE, None), ("b", TOPIC_DENIED, "Authorization failed.")]
    assert [[s[0] for s in args[0]] for _, args in broker.controller.calls] == [["a"]]

    broker = topics_broker((CLUSTER, "kafka-cluster", Op.CREATE))
    body = call(topics.handlers(broker), 19, 4, create_topics_body("a", "b"), ALICE)
    assert [t.error_code for t in body.topics] == [E.NONE, E.NONE]

    broker = topics_broker()
    body = call(topics.handlers(broker), 19, 2, create_topics_body("a"), ALICE)
    assert [t.error_code for t in body.topics] == [TOPIC_DENIED]
    assert broker.controller.calls == []


def test_delete_topics_needs_delete_on_each_topic_whether_or_not_it_exists() -> None:
    broker = topics_broker((TOPIC, "a", Op.DELETE))
    body = call(topics.handlers(broker), 20, 3, {"topic_names": ["a", "b", "ghost"], "timeout_ms": 1000}, ALICE)
    assert [(r.name, r.error_code) for r in body.responses] == [("a", E.NONE), ("b", TOPIC_DENIED), ("ghost", TOPIC_DENIED)]
    assert broker.controller.calls == [("delete_topics", (["a"], 1000))]

    broker = topics_broker()
    body = call(topics.handlers(broker), 20, 1, {"topic_names": ["a"], "timeout_ms": 1000}, ALICE)
    assert [r.error_code for r in body.responses] == [TOPIC_DENIED]
    assert broker.controller.calls == []

    # Deletion disabled: the controller's TOPIC_DELETION_DISABLED for every topic comes first, as in Kafka.
    broker = topics_broker(delete_enabled=False)
    call(topics.handlers(broker), 20, 3, {"topic_names": ["a"], "timeout_ms": 1000}, ALICE)
    assert broker.controller.names() == ["delete_topics"]


def test_create_partitions_needs_alter_on_each_topic() -> None:
    broker = topics_broker((TOPIC, "a", Op.ALTER))
    def request(*names: str) -> dict:
        return {"topics": [{"name": n, "count": 3, "assignments": None} for n in names], "timeout_ms": 1000,
                "validate_only": False}

    body = call(topics.handlers(broker), 37, 1, request("a", "b", "c", "c"), ALICE)
    assert [(r.name, r.error_code, r.error_message) for r in body.results] == [
        ("a", E.NONE, None),
        ("b", TOPIC_DENIED, "The topic authorization is failed."),
        ("c", E.INVALID_REQUEST, "Duplicate topic in request."),  # duplicates are not checked
        ("c", E.INVALID_REQUEST, "Duplicate topic in request."),
    ]
    assert [[s[0] for s in args[0]] for _, args in broker.controller.calls] == [["a", "c", "c"]]

    broker = topics_broker()
    body = call(topics.handlers(broker), 37, 0, request("a"), ALICE)
    assert [r.error_code for r in body.results] == [TOPIC_DENIED]
    assert broker.controller.calls == []


# ====================================================================== configs


@pytest.fixture
def zk() -> KafkaZkClient:
    store = MemoryStore(MemoryZooKeeper())
    store.start()
    client = KafkaZkClient(store)
    settled(client.create_persistent_roots())
    settled(client.create_topic("t", {0: [1]}, {"retention.ms": "1000"}))
    settled(client.create_topic("plain", {0: [1]}))
    return client


def configs_api(zk: KafkaZkClient, *grants: tuple[ResourceType, str, AclOperation]) -> dict[int, Any]:
    config = BrokerConfig.from_properties({"zookeeper.connect": "zk:2181", "broker.id": "1"})
    broker = NS(zk=zk, config=config, broker_id=1, topic_configs=None, authorizer=authorizer(*grants))
    return configs.handlers(broker)


def test_describe_configs_needs_describe_configs_on_the_topic_or_the_cluster(zk: KafkaZkClient) -> None:
    api = configs_api(zk, (TOPIC, "t", Op.DESCRIBE_CONFIGS))
    resources = [(2, "t"), (2, "plain"), (2, "ghost"), (4, "1"), (8, "1")]
    body = call(api, 32, 1, {"resources": [
        {"resource_type": rt, "resource_name": n, "configuration_keys": None} for rt, n in resources
    ], "include_synonyms": False}, ALICE)
    got = {(r.resource_type, r.resource_name): (r.error_code, r.error_message, len(r.configs)) for r in body.results}
    assert got[(2, "t")][0] == E.NONE and got[(2, "t")][2] > 0
    assert got[(2, "plain")] == (TOPIC_DENIED, "Topic authorization failed.", 0)
    assert got[(2, "ghost")] == (TOPIC_DENIED, "Topic authorization failed.", 0)  # not UNKNOWN_TOPIC_OR_PARTITION
    assert got[(4, "1")] == (CLUSTER_DENIED, "Cluster authorization failed.", 0)
    assert got[(8, "1")] == (CLUSTER_DENIED, "Cluster authorization failed.", 0)

    api = configs_api(zk, (CLUSTER, "kafka-cluster", Op.DESCRIBE_CONFIGS))
    body = call(api, 32, 1, {"resources": [{"resource_type": 4, "resource_name": "1", "configuration_keys": None}],
                             "include_synonyms": False}, ALICE)
    assert body.results[0].error_code == E.NONE and body.results[0].configs


def alter_body(*resources: tuple[int, str, dict[str, str]], incremental: bool = False) -> dict:
    def entry(k: str, v: str) -> dict:
        return {"name": k, "value": v, "config_operation": 0} if incremental else {"name": k, "value": v}

    return {"resources": [{"resource_type": rt, "resource_name": n, "configs": [entry(k, v) for k, v in c.items()]}
                          for rt, n, c in resources], "validate_only": False}


@pytest.mark.parametrize("api_key", [33, 44])
def test_alter_configs_need_alter_configs_on_the_topic_or_the_cluster(zk: KafkaZkClient, api_key: int) -> None:
    incremental = api_key == 44
    api = configs_api(zk, (TOPIC, "t", Op.ALTER_CONFIGS))
    body = call(api, api_key, 0, alter_body(
        (2, "t", {"retention.ms": "5000"}), (2, "plain", {"retention.ms": "6000"}),
        (4, "1", {"leader.replication.throttled.rate": "10"}), incremental=incremental), ALICE)
    assert [(r.resource_name, r.error_code, r.error_message) for r in body.responses] == [
        ("t", E.NONE, None), ("plain", TOPIC_DENIED, None), ("1", CLUSTER_DENIED, None)]
    assert settled(zk.get_topic_config("t"))["retention.ms"] == "5000"
    assert settled(zk.get_topic_config("plain")) == {}
    assert settled(zk.get_broker_config(1)) == {}

    api = configs_api(zk, (CLUSTER, "kafka-cluster", Op.ALTER_CONFIGS))
    body = call(api, api_key, 0, alter_body((4, "1", {"leader.replication.throttled.rate": "10"}),
                                            incremental=incremental), ALICE)
    assert body.responses[0].error_code == E.NONE
    assert settled(zk.get_broker_config(1)) == {"leader.replication.throttled.rate": "10"}


def test_broker_logger_resources_are_checked_on_the_cluster_by_incremental_alter_configs_only(zk: KafkaZkClient) -> None:
    logger = (8, "1", {"kafka.server": "DEBUG"})
    refused = call(configs_api(zk), 44, 0, alter_body(logger, incremental=True), ALICE)
    assert refused.responses[0].error_code == CLUSTER_DENIED
    # AlterConfigs rejects the type before any check (Kafka: InvalidRequestException).
    assert call(configs_api(zk), 33, 0, alter_body(logger), ALICE).responses[0].error_code == E.INVALID_REQUEST


# ====================================================================== ElectLeaders, reassignments, log dirs


def elect_body(partitions: dict[str, list[int]] | None) -> dict:
    return {"election_type": 0, "timeout_ms": 100, "topic_partitions": None if partitions is None else [
        {"topic": t, "partitions": ps} for t, ps in partitions.items()]}


def test_elect_leaders_needs_alter_on_the_cluster() -> None:
    controller = Recorder(elect_leaders=lambda *_: defer.succeed({("t", 0): (E.ELECTION_NOT_NEEDED, "not needed")}))
    controller.is_active = True  # type: ignore[attr-defined]
    refused_broker = NS(controller=controller, authorizer=authorizer(), metadata_cache=Forbidden("metadata_cache"))
    for version in (0, 1, 2):
        body = call(elect_leaders.handlers(refused_broker), 43, version, elect_body({"t": [0, 1]}), ALICE)
        if version >= 1:
            assert body.error_code == CLUSTER_DENIED
        assert {(r.topic, p.partition_id): (p.error_code, p.error_message)
                for r in body.replica_election_results for p in r.partition_result} == {
            ("t", 0): (CLUSTER_DENIED, None), ("t", 1): (CLUSTER_DENIED, None)}
    body = call(elect_leaders.handlers(refused_broker), 43, 1, elect_body(None), ALICE)
    assert (body.error_code, body.replica_election_results) == (CLUSTER_DENIED, [])
    assert controller.calls == []

    allowed_broker = NS(controller=controller, authorizer=authorizer((CLUSTER, "kafka-cluster", Op.ALTER)))
    body = call(elect_leaders.handlers(allowed_broker), 43, 1, elect_body({"t": [0]}), ALICE)
    assert body.error_code == E.NONE
    assert body.replica_election_results[0].partition_result[0].error_code == E.ELECTION_NOT_NEEDED
    assert controller.names() == ["elect_leaders"]


def reassignment_broker(*grants: tuple[ResourceType, str, AclOperation]) -> NS:
    controller = Recorder(
        alter_partition_reassignments=lambda *_: defer.succeed((E.NONE, None, {("t", 0): (E.NONE, None)})),
        list_partition_reassignments=lambda *_: defer.succeed((E.NONE, None, {})),
    )
    controller.is_active = True  # type: ignore[attr-defined]
    return NS(controller=controller, authorizer=authorizer(*grants))


def test_alter_partition_reassignments_needs_alter_on_the_cluster() -> None:
    request = {"timeout_ms": 100, "topics": [{"name": "t", "partitions": [{"partition_index": 0, "replicas": [1, 2]}]}]}
    broker = reassignment_broker((CLUSTER, "kafka-cluster", Op.DESCRIBE))
    body = call(partition_reassignments.handlers(broker), 45, 0, request, ALICE)
    assert (body.error_code, body.error_message) == (CLUSTER_DENIED, "Cluster authorization failed.")
    assert [(r.name, p.partition_index, p.error_code) for r in body.responses for p in r.partitions] == [
        ("t", 0, CLUSTER_DENIED)]
    assert broker.controller.calls == []
    broker = reassignment_broker((CLUSTER, "kafka-cluster", Op.ALTER))
    body = call(partition_reassignments.handlers(broker), 45, 0, request, ALICE)
    assert body.error_code == E.NONE and broker.controller.names() == ["alter_partition_reassignments"]


def test_list_partition_reassignments_needs_describe_on_the_cluster() -> None:
    request = {"timeout_ms": 100, "topics": [{"name": "t", "partition_indexes": [0, 1]}]}
    broker = reassignment_broker()
    body = call(partition_reassignments.handlers(broker), 46, 0, request, ALICE)
    assert body.error_code == CLUSTER_DENIED
    assert [(t.name, p.partition_index, p.replicas) for t in body.topics for p in t.partitions] == [
        ("t", 0, []), ("t", 1, [])]
    assert call(partition_reassignments.handlers(broker), 46, 0, {**request, "topics": None}, ALICE).topics == []
    assert broker.controller.calls == []
    broker = reassignment_broker((CLUSTER, "kafka-cluster", Op.DESCRIBE))
    body = call(partition_reassignments.handlers(broker), 46, 0, request, ALICE)
    assert body.error_code == E.NONE and broker.controller.names() == ["list_partition_reassignments"]


def log_dirs_broker(*grants: tuple[ResourceType, str, AclOperation]) -> NS:
    mover = Recorder(alter_replica_log_dirs=lambda assignments, known: defer.succeed(dict.fromkeys(assignments, E.NONE)))
    ran: list[Any] = []

    def run_blocking(fn: Any, *args: Any) -> defer.Deferred:
        ran.append(fn)
        return defer.succeed([])

    return NS(
        authorizer=authorizer(*grants), log_dir_mover=mover, metadata_cache=NS(partition=lambda *_: NS()),
        replica_manager=NS(partitions={}), log_manager=None, ran=ran, run_blocking=run_blocking,
    )


def test_alter_replica_log_dirs_needs_alter_on_the_cluster() -> None:
    request = {"dirs": [{"path": "/d1", "topics": [{"name": "t", "partitions": [0, 1]}]},
                        {"path": "/d2", "topics": [{"name": "u", "partitions": [0]}]}]}
    broker = log_dirs_broker((CLUSTER, "kafka-cluster", Op.DESCRIBE))
    body = call(log_dirs.handlers(broker), 34, 1, request, ALICE)
    assert [(r.topic_name, p.partition_index, p.error_code) for r in body.results for p in r.partitions] == [
        ("t", 0, CLUSTER_DENIED), ("t", 1, CLUSTER_DENIED), ("u", 0, CLUSTER_DENIED)]
    assert broker.log_dir_mover.calls == []
    broker = log_dirs_broker((CLUSTER, "kafka-cluster", Op.ALTER))
    body = call(log_dirs.handlers(broker), 34, 2, request, ALICE)
    assert {p.error_code for r in body.results for p in r.partitions} == {E.NONE}
    assert broker.log_dir_mover.names() == ["alter_replica_log_dirs"]


def test_describe_log_dirs_needs_describe_on_the_cluster() -> None:
    broker = log_dirs_broker((CLUSTER, "kafka-cluster", Op.CREATE))  # (Alter would imply Describe)
    for version in (1, 3, 4):
        body = call(log_dirs.handlers(broker), 35, version, {"topics": None}, ALICE)
        assert body.results == []
        if version >= 3:
            assert body.error_code == CLUSTER_DENIED
    assert broker.ran == []
    broker = log_dirs_broker((CLUSTER, "kafka-cluster", Op.DESCRIBE))
    assert call(log_dirs.handlers(broker), 35, 3, {"topics": None}, ALICE).error_code == E.NONE
    assert len(broker.ran) == 1


# ====================================================================== SCRAM credentials


def scram_broker(*grants: tuple[ResourceType, str, AclOperation], active: bool = True) -> NS:
    zk = Recorder(get_all_entities_with_config=lambda *_: defer.succeed([]),
                  get_entity_config=lambda *_: defer.succeed({}), set_entity_config=lambda *_: defer.succeed(None))
    return NS(zk=zk, controller=NS(is_active=active), authorizer=authorizer(*grants))


UPSERT = {"deletions": [], "upsertions": [
    {"name": n, "mechanism": 1, "iterations": 4096, "salt": b"salt", "salted_password": b"pw"} for n in ("bob", "al")]}


def test_describe_user_scram_credentials_needs_describe_on_the_cluster() -> None:
    broker = scram_broker((CLUSTER, "kafka-cluster", Op.CREATE))  # (Alter would imply Describe)
    body = call(scram_credentials.handlers(broker), 50, 0, {"users": None}, ALICE)
    assert (body.error_code, body.error_message, body.results) == (CLUSTER_DENIED, "Cluster authorization failed.", [])
    assert broker.zk.calls == []
    broker = scram_broker((CLUSTER, "kafka-cluster", Op.DESCRIBE))
    assert call(scram_credentials.handlers(broker), 50, 0, {"users": None}, ALICE).error_code == E.NONE
    assert broker.zk.names() == ["get_all_entities_with_config"]


def test_alter_user_scram_credentials_needs_alter_on_the_cluster_after_the_controller_check() -> None:
    broker = scram_broker((CLUSTER, "kafka-cluster", Op.DESCRIBE))
    body = call(scram_credentials.handlers(broker), 51, 0, UPSERT, ALICE)
    assert [(r.user, r.error_code, r.error_message) for r in body.results] == [
        ("al", CLUSTER_DENIED, "Cluster authorization failed."), ("bob", CLUSTER_DENIED, "Cluster authorization failed.")]
    assert broker.zk.calls == []
    broker = scram_broker(active=False)
    assert {r.error_code for r in call(scram_credentials.handlers(broker), 51, 0, UPSERT, ALICE).results} == {
        E.NOT_CONTROLLER}
    broker = scram_broker((CLUSTER, "kafka-cluster", Op.ALTER))
    body = call(scram_credentials.handlers(broker), 51, 0, UPSERT, ALICE)
    assert {r.error_code for r in body.results} == {E.NONE}
    assert broker.zk.names().count("set_entity_config") == 2


# ====================================================================== inter-broker (CVE-2018-1288)


def leader_and_isr_body(version: int) -> dict:
    return {
        "controller_id": 2, "controller_epoch": 1, "broker_epoch": -1, "type": 0, "live_leaders": [],
        "topic_states": [{"topic_name": "t", "topic_id": bytes(range(16)), "partition_states": [
            {"partition_index": p, "controller_epoch": 1, "leader": 1, "leader_epoch": 3, "isr": [1], "zk_version": 0,
             "replicas": [1], "adding_replicas": [], "removing_replicas": [], "is_new": False} for p in (0, 1)]}],
    }


def inter_broker(*grants: tuple[ResourceType, str, AclOperation], allowed: bool) -> NS:
    """A broker whose replica manager, metadata cache and controller must stay untouched unless *allowed*."""
    if not allowed:
        return NS(authorizer=authorizer(*grants), broker_epoch=0, replica_manager=Forbidden("replica_manager"),
                  metadata_cache=Forbidden("metadata_cache"), controller=Forbidden("controller"))
    rm = Recorder(prepare_partitions=lambda *_: None, truncations_in_flight=lambda *_: None,
                  become_leader_or_follower=lambda *_: {"error_code": E.NONE, "partition_errors": []},
                  stop_replicas=lambda *_: {"error_code": E.NONE, "partition_errors": []})
    rm.partitions = {}  # type: ignore[attr-defined]
    cache = Recorder(update=lambda *_: (E.NONE, []), note_leadership=lambda *_: None)
    controller = Recorder(controlled_shutdown=lambda *_: (E.NONE, []))
    controller.is_active = True  # type: ignore[attr-defined]
    return NS(authorizer=authorizer(*grants), broker_epoch=0, replica_manager=rm, metadata_cache=cache,
              controller=controller, topic_configs=None, run_blocking=lambda fn, *a: defer.succeed(fn(*a)),
              on_metadata_update=lambda deleted: None)


STOP_REPLICA_BODY = {"controller_id": 2, "controller_epoch": 1, "broker_epoch": -1, "delete_partitions": False,
                     "topics": [{"name": "t", "partition_indexes": [0, 1]}]}
UPDATE_METADATA_BODY = {"controller_id": 2, "controller_epoch": 1, "broker_epoch": -1, "topic_states": [],
                        "live_brokers": []}


@pytest.mark.parametrize("version", [2, 4, 5])
def test_leader_and_isr_needs_cluster_action(version: int) -> None:
    broker = inter_broker((CLUSTER, "kafka-cluster", Op.ALTER), allowed=False)
    body = call(controller_requests.handlers(broker), 4, version, leader_and_isr_body(version), ALICE)
    assert body.error_code == CLUSTER_DENIED
    if version >= 5:
        assert [(t.topic_id, p.partition_index, p.error_code) for t in body.topics for p in t.partition_errors] == [
            (bytes(range(16)), 0, CLUSTER_DENIED), (bytes(range(16)), 1, CLUSTER_DENIED)]
    else:
        assert [(p.topic_name, p.partition_index, p.error_code) for p in body.partition_errors] == [
            ("t", 0, CLUSTER_DENIED), ("t", 1, CLUSTER_DENIED)]
    broker = inter_broker((CLUSTER, "kafka-cluster", Op.CLUSTER_ACTION), allowed=True)
    body = call(controller_requests.handlers(broker), 4, version, leader_and_isr_body(version), ALICE)
    assert body.error_code == E.NONE
    assert "become_leader_or_follower" in broker.replica_manager.names()


def test_stop_replica_and_update_metadata_need_cluster_action() -> None:
    broker = inter_broker(allowed=False)
    api = controller_requests.handlers(broker)
    body = call(api, 5, 1, STOP_REPLICA_BODY, MALLORY)
    assert body.error_code == CLUSTER_DENIED
    assert [(p.topic_name, p.partition_index, p.error_code) for p in body.partition_errors] == [
        ("t", 0, CLUSTER_DENIED), ("t", 1, CLUSTER_DENIED)]
    assert call(api, 6, 7, UPDATE_METADATA_BODY, MALLORY).error_code == CLUSTER_DENIED

    broker = inter_broker(allowed=True)  # a super user: Kafka's super.users=User:broker setup
    api = controller_requests.handlers(broker)
    assert call(api, 5, 1, STOP_REPLICA_BODY, ROOT).error_code == E.NONE
    assert call(api, 6, 7, UPDATE_METADATA_BODY, ROOT).error_code == E.NONE
    assert broker.replica_manager.names() == ["stop_replicas"] and broker.metadata_cache.names() == ["update"]


def test_controlled_shutdown_needs_cluster_action() -> None:
    body = {"broker_id": 3, "broker_epoch": 5}
    broker = inter_broker((CLUSTER, "kafka-cluster", Op.ALL), allowed=True)  # ALL implies ClusterAction
    assert call(controlled_shutdown.handlers(broker), 7, 2, body, ALICE).error_code == E.NONE
    assert broker.controller.calls == [("controlled_shutdown", (3, 5))]
    broker = inter_broker((CLUSTER, "kafka-cluster", Op.ALTER), allowed=False)
    refused = call(controlled_shutdown.handlers(broker), 7, 2, body, ALICE)
    assert (refused.error_code, refused.remaining_partitions) == (CLUSTER_DENIED, [])


def test_inter_broker_requests_without_an_enabled_authorizer_are_served() -> None:
    broker = inter_broker(allowed=True)
    broker.authorizer = BrokerAuthorizer(None, {})
    assert call(controller_requests.handlers(broker), 6, 7, UPDATE_METADATA_BODY, MALLORY).error_code == E.NONE
