"""Authorization of the data-path handlers: what each checks, what a refusal answers, and that it did nothing.

Each API: an allowed case and a refused case with Kafka 2.8's exact error
codes, checked against the broker's real state (log end offsets, high
watermarks, created topics, coordinator calls).  The authorizer is a real
:class:`~mafka.broker.authorization.BrokerAuthorizer` (enabled, no
ZooKeeper) whose ACL cache the tests fill; ``User:alice`` asks from
127.0.0.1 unless a test says otherwise.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from twisted.internet import defer

from mafka.broker.authorization import BrokerAuthorizer
from mafka.broker.authorized_operations import NOT_PROVIDED, bitfield
from mafka.broker.dispatcher import Dispatcher, collect_handlers
from mafka.broker.fetch_session import FetchSessionCache
from mafka.broker.metadata_cache import MetadataCache
from mafka.delayed.checks import Check, HalfChecks
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
from mafka.transaction.coordinator import (
    ListTransactionsResult,
    TransactionDescription,
    TransactionListing,
)
from mafka.wire.codec import decode_request, decode_response, encode_request
from mafka.wire.records import iter_records

from .test_metadata import TOPIC_ID, update_metadata, update_metadata_v7
from .test_replica_manager import batch, env, fetch_body, leader_and_isr  # noqa: F401 (env is a fixture)

Op = AclOperation
TOPIC, GROUP, CLUSTER, TXN = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER, ResourceType.TRANSACTIONAL_ID
ALICE = KafkaPrincipal("User", "alice")
ACL_AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"


# ---------------------------------------------------------------------- harness


def authorizer(*, enabled: bool = True, super_users: str = "") -> BrokerAuthorizer:
    config = {"authorizer.class.name": ACL_AUTHORIZER if enabled else "", "super.users": super_users}
    return BrokerAuthorizer(None, config)


def grant(authz: BrokerAuthorizer, resource_type: ResourceType, name: str, *ops: AclOperation,
          principal: str = "User:alice", deny: bool = False, pattern: PatternType = PatternType.LITERAL) -> None:
    """Adds one ACL per operation on ``resource_type:name`` (to those already there)."""
    key = ResourcePattern(resource_type, name, pattern)
    permission = AclPermissionType.DENY if deny else AclPermissionType.ALLOW
    added = {AccessControlEntry(principal, "*", op, permission) for op in ops}
    authz.acls.update(key, authz.acls.entries(key) | added)


def revoke(authz: BrokerAuthorizer, resource_type: ResourceType, name: str) -> None:
    authz.acls.update(ResourcePattern(resource_type, name, PatternType.LITERAL), ())


def connection(principal: KafkaPrincipal = ALICE, closed: list | None = None) -> SimpleNamespace:
    sink = closed if closed is not None else []
    return SimpleNamespace(listener="PLAINTEXT", peer="127.0.0.1:5000", host="127.0.0.1", principal=principal,
                           security_protocol="SASL_PLAINTEXT", close=lambda: sink.append(True))


def ask(broker_or_dispatcher, api_key: int, version: int, body: dict, *, principal: KafkaPrincipal = ALICE):
    """Runs a request through a dispatcher; returns (decoded response body or "pending" / None, closed)."""
    dispatcher = (broker_or_dispatcher if isinstance(broker_or_dispatcher, Dispatcher)
                  else Dispatcher(collect_handlers(broker_or_dispatcher)))
    request = decode_request(encode_request(api_key, version, 7, "client", body)[4:])
    closed: list = []
    out: list = []
    result = dispatcher.dispatch(request, connection(principal, closed))
    if isinstance(result, defer.Deferred):
        result.addCallback(out.append)
    else:
        out.append(result)
    if not out:
        return "pending", closed
    if out[0] is None:
        return None, closed
    data = b"".join(c if isinstance(c, bytes) else c.read() for c in out[0])
    return decode_response(api_key, version, data[4:])[1], closed


@pytest.fixture
def secured(env):  # noqa: F811
    """The replica manager's env (topic ``t`` led here, partition 0) with an enabled authorizer."""
    env.broker.authorizer = authorizer()
    env.rm.become_leader_or_follower(leader_and_isr())
    env.authz = env.broker.authorizer
    return env


def log_end(env, topic="t", partition=0) -> int:  # noqa: F811
    return env.rm.partitions[(topic, partition)].log.next_offset


def produce_body(records_by_topic: dict, *, acks=1, transactional_id=None):
    return {"transactional_id": transactional_id, "acks": acks, "timeout_ms": 1000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": records}]}
        for topic, records in records_by_topic.items()
    ]}


def errors_of(resp) -> dict:
    return {(t.name, p.index): p.error_code for t in resp.responses for p in t.partition_responses}


# ---------------------------------------------------------------------- the switch


def test_without_an_authorizer_or_with_a_disabled_one_everything_is_allowed(env):  # noqa: F811
    env.rm.become_leader_or_follower(leader_and_isr())
    for authz in (None, authorizer(enabled=False)):
        env.broker.authorizer = authz
        resp, _ = ask(env.dispatcher, 0, 8, produce_body({"t": batch(1)}))
        assert errors_of(resp) == {("t", 0): E.NONE}
    assert log_end(env) == 2


def test_a_super_user_needs_no_acl(env):  # noqa: F811
    env.rm.become_leader_or_follower(leader_and_isr())
    env.broker.authorizer = authorizer(super_users="User:root")
    resp, _ = ask(env.dispatcher, 0, 8, produce_body({"t": batch(1)}), principal=KafkaPrincipal("User", "root"))
    assert errors_of(resp) == {("t", 0): E.NONE}
    resp, _ = ask(env.dispatcher, 0, 8, produce_body({"t": batch(1)}))
    assert errors_of(resp) == {("t", 0): E.TOPIC_AUTHORIZATION_FAILED}


# ---------------------------------------------------------------------- Produce


def test_produce_needs_write_on_each_topic_and_refused_topics_get_nothing_appended(secured):
    secured.rm.become_leader_or_follower(leader_and_isr(topic="u"))
    grant(secured.authz, TOPIC, "t", Op.WRITE)
    grant(secured.authz, TOPIC, "u", Op.READ, Op.DESCRIBE)  # anything but Write
    resp, closed = ask(secured.dispatcher, 0, 8, produce_body({"t": batch(2), "u": batch(3)}))
    assert errors_of(resp) == {("t", 0): E.NONE, ("u", 0): E.TOPIC_AUTHORIZATION_FAILED}
    refused = resp.responses[1].partition_responses[0]
    assert (refused.base_offset, refused.log_start_offset) == (-1, -1)
    assert (log_end(secured, "t"), log_end(secured, "u")) == (2, 0)
    assert closed == []


def test_produce_refuses_an_unknown_topic_as_unauthorized_before_looking_it_up(secured):
    resp, _ = ask(secured.dispatcher, 0, 8, produce_body({"nowhere": batch(1)}))
    assert errors_of(resp) == {("nowhere", 0): E.TOPIC_AUTHORIZATION_FAILED}


def test_a_deny_beats_an_allow(secured):
    grant(secured.authz, TOPIC, "*", Op.WRITE)
    grant(secured.authz, TOPIC, "t", Op.WRITE, deny=True)
    resp, _ = ask(secured.dispatcher, 0, 8, produce_body({"t": batch(1)}))
    assert errors_of(resp) == {("t", 0): E.TOPIC_AUTHORIZATION_FAILED}


def test_produce_acks_0_refused_closes_the_connection_as_kafka_does_and_appends_nothing(secured):
    resp, closed = ask(secured.dispatcher, 0, 8, produce_body({"t": batch(1)}, acks=0))
    assert (resp, closed) == (None, [True])
    assert log_end(secured) == 0
    grant(secured.authz, TOPIC, "t", Op.WRITE)
    resp, closed = ask(secured.dispatcher, 0, 8, produce_body({"t": batch(1)}, acks=0))
    assert (resp, closed, log_end(secured)) == (None, [], 1)


def test_transactional_produce_needs_write_on_its_transactional_id(secured):
    grant(secured.authz, TOPIC, "t", Op.WRITE)
    txn = batch(2, producer_id=7, producer_epoch=0, base_sequence=0, is_transactional=True)
    for transactional_id in (None, "tx"):
        resp, closed = ask(secured.dispatcher, 0, 8, produce_body({"t": txn}, transactional_id=transactional_id))
        assert errors_of(resp) == {("t", 0): E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
        p = resp.responses[0].partition_responses[0]
        assert (p.base_offset, p.error_message) == (-1, "Transactional Id authorization failed.")
        assert closed == []
    assert log_end(secured) == 0
    grant(secured.authz, TXN, "tx", Op.WRITE)
    resp, _ = ask(secured.dispatcher, 0, 8, produce_body({"t": txn}, transactional_id="tx"))
    assert errors_of(resp) == {("t", 0): E.NONE}
    assert log_end(secured) == 2


def test_idempotent_produce_needs_only_write_on_the_topic_since_kip_679(secured):
    grant(secured.authz, TOPIC, "t", Op.WRITE)  # no IdempotentWrite on the cluster
    idempotent = batch(2, producer_id=7, producer_epoch=0, base_sequence=0)
    resp, _ = ask(secured.dispatcher, 0, 8, produce_body({"t": idempotent}))
    assert errors_of(resp) == {("t", 0): E.NONE}


def test_transactional_produce_refused_with_acks_0_closes_the_connection(secured):
    txn = batch(1, producer_id=7, producer_epoch=0, base_sequence=0, is_transactional=True)
    resp, closed = ask(secured.dispatcher, 0, 8, produce_body({"t": txn}, acks=0, transactional_id="tx"))
    assert (resp, closed, log_end(secured)) == (None, [True], 0)


# ---------------------------------------------------------------------- Fetch


def fetched(resp) -> dict:
    return {(t.topic, p.partition_index): p for t in resp.responses for p in t.partitions}


def test_a_consumer_fetch_needs_read_on_each_topic(secured):
    secured.rm.become_leader_or_follower(leader_and_isr(topic="u"))
    grant(secured.authz, TOPIC, "t", Op.WRITE, Op.READ)
    grant(secured.authz, TOPIC, "u", Op.WRITE)
    ask(secured.dispatcher, 0, 8, produce_body({"t": batch(2), "u": batch(2)}))
    body = fetch_body(0, max_wait_ms=0)
    body["topics"].append({"topic": "u", "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]})
    resp, _ = ask(secured.dispatcher, 1, 11, body)
    got = fetched(resp)
    assert resp.error_code == E.NONE
    assert [r.offset for r in iter_records(bytes(got["t", 0].records))] == [0, 1]
    refused = got["u", 0]
    assert (refused.error_code, refused.high_watermark, refused.last_stable_offset, refused.log_start_offset,
            bytes(refused.records)) == (E.TOPIC_AUTHORIZATION_FAILED, -1, -1, -1, b"")


def test_a_refused_consumer_fetch_answers_at_once_instead_of_long_polling(secured):
    resp, _ = ask(secured.dispatcher, 1, 11, fetch_body(0, max_wait_ms=500))
    assert fetched(resp)["t", 0].error_code == E.TOPIC_AUTHORIZATION_FAILED


def test_a_follower_fetch_without_cluster_action_reads_nothing_and_moves_no_follower_state(env):  # noqa: F811
    env.broker.authorizer = authz = authorizer()
    env.rm.become_leader_or_follower(leader_and_isr(isr=(1, 2), replicas=(1, 2)))
    grant(authz, TOPIC, "t", Op.ALL)  # topic rights do not make a replica
    ask(env.dispatcher, 0, 8, produce_body({"t": batch(3)}))
    partition = env.rm.partitions[("t", 0)]
    assert partition.high_watermark == 0  # follower 2 has not fetched yet
    resp, _ = ask(env.dispatcher, 1, 11, fetch_body(3, max_wait_ms=0, replica_id=2))
    assert resp.error_code == E.NONE  # Kafka: no top-level error, every partition refused
    assert {tp: p.error_code for tp, p in fetched(resp).items()} == {("t", 0): E.TOPIC_AUTHORIZATION_FAILED}
    assert partition.high_watermark == 0  # posing as replica 2 did not move the HW (CVE-2018-1288 class)
    grant(authz, CLUSTER, "kafka-cluster", Op.CLUSTER_ACTION)
    resp, _ = ask(env.dispatcher, 1, 11, fetch_body(3, max_wait_ms=0, replica_id=2))
    assert fetched(resp)["t", 0].error_code == E.NONE
    assert partition.high_watermark == 3


def session_body(offsets: dict, *, session_id: int, epoch: int, replica_id: int = -1) -> dict:
    return {
        "replica_id": replica_id, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
        "session_id": session_id, "session_epoch": epoch,
        "topics": [{"topic": "t", "partitions": [
            {"partition": p, "current_leader_epoch": -1, "fetch_offset": o, "log_start_offset": -1,
             "partition_max_bytes": 1 << 20}
            for p, o in offsets.items()
        ]}] if offsets else [],
        "forgotten_topics_data": [], "rack_id": "",
    }


def test_an_incremental_session_stops_reading_once_the_acl_is_removed(secured):
    grant(secured.authz, TOPIC, "t", Op.READ, Op.WRITE)
    ask(secured.dispatcher, 0, 8, produce_body({"t": batch(2)}))
    resp, _ = ask(secured.dispatcher, 1, 11, session_body({0: 0}, session_id=0, epoch=0))
    sid = resp.session_id
    assert sid != 0 and len(list(iter_records(bytes(fetched(resp)["t", 0].records)))) == 2

    revoke(secured.authz, TOPIC, "t")
    grant(secured.authz, TOPIC, "t", Op.WRITE)
    ask(secured.dispatcher, 0, 8, produce_body({"t": batch(3, value=b"secret")}))
    # The partition is in the session, not in the request: it is still checked, and refused.
    for epoch, offsets in ((1, {0: 2}), (2, {})):  # the consumer moved on to offset 2, then lists nothing
        resp, _ = ask(secured.dispatcher, 1, 11, session_body(offsets, session_id=sid, epoch=epoch))
        got = fetched(resp)
        assert (resp.error_code, resp.session_id) == (E.NONE, sid)
        assert (got["t", 0].error_code, bytes(got["t", 0].records)) == (E.TOPIC_AUTHORIZATION_FAILED, b"")

    grant(secured.authz, TOPIC, "t", Op.READ)
    resp, _ = ask(secured.dispatcher, 1, 11, session_body({}, session_id=sid, epoch=3))
    got = fetched(resp)["t", 0]
    assert got.error_code == E.NONE
    assert [r.value for r in iter_records(bytes(got.records))] == [b"secret"] * 3


def test_a_session_opened_by_an_unauthorized_follower_is_not_privileged(secured):
    secured.broker.fetch_sessions = cache = FetchSessionCache(10)
    dispatcher = Dispatcher(collect_handlers(secured.broker))
    resp, _ = ask(dispatcher, 1, 11, session_body({0: 0}, session_id=0, epoch=0, replica_id=2))
    assert fetched(resp)["t", 0].error_code == E.TOPIC_AUTHORIZATION_FAILED
    assert cache.get(resp.session_id).privileged is False  # cannot evict others' sessions as a follower would
    grant(secured.authz, CLUSTER, "kafka-cluster", Op.CLUSTER_ACTION)
    resp, _ = ask(dispatcher, 1, 11, session_body({0: 0}, session_id=0, epoch=0, replica_id=2))
    assert cache.get(resp.session_id).privileged is True


def test_a_legacy_fetch_is_refused_the_same_way(secured):
    resp, _ = ask(secured.dispatcher, 1, 3, fetch_body(0, max_wait_ms=0))
    assert fetched(resp)["t", 0].error_code == E.TOPIC_AUTHORIZATION_FAILED


# ---------------------------------------------------------------------- ListOffsets / OffsetForLeaderEpoch / DeleteRecords


def list_offsets_body(*topics, replica_id=-1):
    return {"replica_id": replica_id, "isolation_level": 0, "topics": [
        {"name": t, "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1,
                                    "max_num_offsets": 1}]}
        for t in topics
    ]}


def test_list_offsets_needs_describe_and_lists_refused_topics_last(secured):
    grant(secured.authz, TOPIC, "t", Op.WRITE, Op.DESCRIBE)
    ask(secured.dispatcher, 0, 8, produce_body({"t": batch(4)}))
    resp, _ = ask(secured.dispatcher, 2, 5, list_offsets_body("secret", "t"))
    got = [(t.name, p.error_code, p.offset, p.timestamp) for t in resp.topics for p in t.partitions]
    assert got == [("t", E.NONE, 4, -1), ("secret", E.TOPIC_AUTHORIZATION_FAILED, -1, -1)]
    # A replica id changes nothing (Kafka 2.8 checks no ClusterAction here); v0 is refused too.
    resp, _ = ask(secured.dispatcher, 2, 5, list_offsets_body("secret", replica_id=2))
    assert resp.topics[0].partitions[0].error_code == E.TOPIC_AUTHORIZATION_FAILED
    resp, _ = ask(secured.dispatcher, 2, 0, list_offsets_body("secret", "t"))
    assert [(t.name, p.error_code, p.old_style_offsets) for t in resp.topics for p in t.partitions] == [
        ("t", E.NONE, [4]), ("secret", E.TOPIC_AUTHORIZATION_FAILED, [])]


def epoch_body(*topics):
    return {"replica_id": -1, "topics": [
        {"topic": t, "partitions": [{"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0}]} for t in topics
    ]}


def test_offset_for_leader_epoch_needs_describe_or_cluster_action(secured):
    grant(secured.authz, TOPIC, "t", Op.WRITE, principal="User:producer")  # (Write would imply Describe)
    ask(secured.dispatcher, 0, 8, produce_body({"t": batch(2)}), principal=KafkaPrincipal("User", "producer"))
    resp, _ = ask(secured.dispatcher, 23, 3, epoch_body("t"))
    p = resp.topics[0].partitions[0]
    assert (p.error_code, p.leader_epoch, p.end_offset) == (E.TOPIC_AUTHORIZATION_FAILED, -1, -1)
    grant(secured.authz, TOPIC, "t", Op.DESCRIBE)
    resp, _ = ask(secured.dispatcher, 23, 3, epoch_body("other", "t"))
    assert [(t.topic, t.partitions[0].error_code, t.partitions[0].end_offset) for t in resp.topics] == [
        ("t", E.NONE, 2), ("other", E.TOPIC_AUTHORIZATION_FAILED, -1)]
    grant(secured.authz, CLUSTER, "kafka-cluster", Op.CLUSTER_ACTION)
    resp, _ = ask(secured.dispatcher, 23, 3, epoch_body("other", "t"))
    assert [(t.topic, t.partitions[0].error_code) for t in resp.topics] == [
        ("other", E.UNKNOWN_TOPIC_OR_PARTITION), ("t", E.NONE)]


def test_delete_records_needs_delete_on_the_topic(secured):
    grant(secured.authz, TOPIC, "t", Op.WRITE)
    ask(secured.dispatcher, 0, 8, produce_body({"t": batch(4)}))
    body = {"timeout_ms": 1000, "topics": [{"name": "t", "partitions": [{"partition_index": 0, "offset": 2}]}]}
    resp, _ = ask(secured.dispatcher, 21, 1, body)
    p = resp.topics[0].partitions[0]
    assert (p.error_code, p.low_watermark) == (E.TOPIC_AUTHORIZATION_FAILED, -1)
    assert secured.rm.partitions[("t", 0)].log.log_start_offset == 0
    grant(secured.authz, TOPIC, "t", Op.DELETE)
    resp, _ = ask(secured.dispatcher, 21, 1, body)
    p = resp.topics[0].partitions[0]
    assert (p.error_code, p.low_watermark) == (E.NONE, 2)


# ---------------------------------------------------------------------- Metadata


def metadata_broker(authz, *, auto=True):
    cache = MetadataCache(1)
    cache.update(update_metadata(partitions=1, extra_topics=[
        {"topic_name": "__consumer_offsets", "partition_states": [
            {"partition_index": 0, "controller_epoch": 1, "leader": 1, "leader_epoch": 0, "isr": [1],
             "zk_version": 0, "replicas": [1], "offline_replicas": []}]},
        {"topic_name": "other", "partition_states": [
            {"partition_index": 0, "controller_epoch": 1, "leader": 1, "leader_epoch": 0, "isr": [1],
             "zk_version": 0, "replicas": [1], "offline_replicas": []}]},
    ]))
    created: list = []
    return SimpleNamespace(metadata_cache=cache, auto_create_topics=auto, auto_create_topic=created.append,
                           created=created, authorizer=authz)


def metadata(broker, version, topics, **flags):
    body = {"topics": None if topics is None else [{"name": t} for t in topics], "allow_auto_topic_creation": True,
            **flags}
    return ask(broker, 3, version, body)[0]


def test_metadata_of_all_topics_leaves_out_those_the_principal_cannot_describe(secured):
    broker = metadata_broker(secured.authz)
    grant(secured.authz, TOPIC, "t", Op.DESCRIBE)
    assert [t.name for t in metadata(broker, 9, None).topics] == ["t"]
    assert [t.name for t in metadata(broker, 0, []).topics] == ["t"]
    grant(secured.authz, TOPIC, "__", Op.DESCRIBE, pattern=PatternType.PREFIXED)  # internal topics: the same rules
    assert sorted(t.name for t in metadata(broker, 9, None).topics) == ["__consumer_offsets", "t"]


def test_named_topics_without_describe_are_refused_whether_they_exist_or_not(secured):
    broker = metadata_broker(secured.authz)
    grant(secured.authz, TOPIC, "t", Op.DESCRIBE)
    got = {t.name: (t.error_code, t.is_internal, len(t.partitions)) for t in metadata(broker, 9, ["t", "other", "ghost", "__consumer_offsets"]).topics}
    assert got == {
        "t": (E.NONE, False, 1),
        "other": (E.TOPIC_AUTHORIZATION_FAILED, False, 0),
        "ghost": (E.TOPIC_AUTHORIZATION_FAILED, False, 0),
        "__consumer_offsets": (E.TOPIC_AUTHORIZATION_FAILED, False, 0),
    }
    assert broker.created == []  # not even an auto-creation attempt for a topic it may not see


def test_auto_creation_needs_create_on_the_cluster_or_the_topic(secured):
    broker = metadata_broker(secured.authz)
    grant(secured.authz, TOPIC, "*", Op.DESCRIBE)
    (topic,) = metadata(broker, 9, ["new1"]).topics
    assert (topic.name, topic.error_code) == ("new1", E.TOPIC_AUTHORIZATION_FAILED)
    assert broker.created == []
    grant(secured.authz, TOPIC, "new1", Op.CREATE)
    (topic,) = metadata(broker, 9, ["new1"]).topics
    assert topic.error_code == E.LEADER_NOT_AVAILABLE and broker.created == ["new1"]
    grant(secured.authz, CLUSTER, "kafka-cluster", Op.CREATE)
    (topic,) = metadata(broker, 9, ["new2"]).topics
    assert topic.error_code == E.LEADER_NOT_AVAILABLE and broker.created == ["new1", "new2"]


def test_without_auto_creation_a_missing_describable_topic_is_unknown(secured):
    broker = metadata_broker(secured.authz, auto=False)
    grant(secured.authz, TOPIC, "*", Op.DESCRIBE)
    (topic,) = metadata(broker, 9, ["new1"]).topics
    assert topic.error_code == E.UNKNOWN_TOPIC_OR_PARTITION


def test_authorized_operations_come_from_the_acls(secured):
    broker = metadata_broker(secured.authz)
    grant(secured.authz, TOPIC, "t", Op.DESCRIBE, Op.READ)
    flags = {"include_cluster_authorized_operations": True, "include_topic_authorized_operations": True}
    body = metadata(broker, 10, ["t", "other"], **flags)
    ops = {t.name: t.topic_authorized_operations for t in body.topics}
    assert ops == {"t": bitfield((Op.DESCRIBE, Op.READ)), "other": NOT_PROVIDED}
    assert body.cluster_authorized_operations == 0  # no Describe on the cluster: nothing revealed
    grant(secured.authz, CLUSTER, "kafka-cluster", Op.DESCRIBE, Op.IDEMPOTENT_WRITE)
    body = metadata(broker, 10, ["t"], **flags)
    assert body.cluster_authorized_operations == bitfield((Op.DESCRIBE, Op.IDEMPOTENT_WRITE))
    assert metadata(broker, 10, ["t"]).topics[0].topic_authorized_operations == NOT_PROVIDED


def test_a_topic_named_by_id_without_describe_is_refused_with_its_id_and_no_name(secured):
    cache = MetadataCache(1)
    cache.update(update_metadata_v7())
    broker = SimpleNamespace(metadata_cache=cache, auto_create_topics=False, authorizer=secured.authz)
    body = ask(broker, 3, 12, {"topics": [{"name": None, "topic_id": TOPIC_ID}], "allow_auto_topic_creation": False})[0]
    assert [(t.name, t.topic_id, t.error_code) for t in body.topics] == [(None, TOPIC_ID, E.TOPIC_AUTHORIZATION_FAILED)]
    grant(secured.authz, TOPIC, "t", Op.DESCRIBE)
    body = ask(broker, 3, 12, {"topics": [{"name": None, "topic_id": TOPIC_ID}], "allow_auto_topic_creation": False})[0]
    assert [(t.name, t.error_code) for t in body.topics] == [("t", E.NONE)]


# ---------------------------------------------------------------------- the transaction APIs


class _Coordinator:
    def __init__(self) -> None:
        self.calls: list = []

    def handle_init_producer_id(self, txn_id, timeout_ms, expected, respond):
        self.calls.append(("init", txn_id))
        respond(E.NONE, 42, 0)

    def handle_add_partitions(self, txn_id, pid, epoch, partitions, respond):
        self.calls.append(("add", txn_id, frozenset(partitions)))
        respond({tp: E.NONE for tp in partitions})

    def handle_add_offsets_to_txn(self, txn_id, pid, epoch, offsets_partition, respond):
        self.calls.append(("offsets", txn_id, offsets_partition))
        respond(E.NONE)

    def handle_end_transaction(self, txn_id, pid, epoch, commit, respond):
        self.calls.append(("end", txn_id, commit))
        respond(E.NONE)

    def describe_transactions(self, ids):
        self.calls.append(("describe", list(ids)))
        return [TransactionDescription(i, E.NONE, "Ongoing", 5, 0, 60000, 1, {"t": [0], "secret": [1]}) for i in ids]

    def list_transactions(self, states, producer_ids):
        return ListTransactionsResult(E.NONE, [], [TransactionListing("tx", 5, "Ongoing"),
                                                   TransactionListing("other", 6, "Empty")])


class _Known:
    def partition(self, topic, index):
        return SimpleNamespace(leader=1) if topic in ("t", "u", "__consumer_offsets") else None


def txn_broker(authz):
    coordinator = _Coordinator()
    generated: list = []
    appended: list = []

    def generate():
        generated.append(True)
        return defer.succeed(99)

    def append_txn_markers(entries, timeout_ms):
        appended.extend(entries)
        return defer.succeed({(t, p): E.NONE for t, p, *_ in entries})

    broker = SimpleNamespace(
        authorizer=authz,
        metadata_cache=_Known(),
        transaction_service=SimpleNamespace(checked_coordinator=lambda: coordinator),
        group_service=SimpleNamespace(coordinator=SimpleNamespace(partition_for=lambda g: 7,
                                                                  complete_transaction=lambda *a: None)),
        producer_ids=SimpleNamespace(generate=generate),
        replica_manager=SimpleNamespace(append_txn_markers=append_txn_markers),
        config=SimpleNamespace(request_timeout_ms=30000),
    )
    return broker, coordinator, generated, appended


def init_pid(broker, transactional_id):
    body = {"transactional_id": transactional_id, "transaction_timeout_ms": 60000, "producer_id": -1, "producer_epoch": -1}
    return ask(broker, 22, 4, body)[0]


def test_init_producer_id_with_a_transactional_id_needs_write_on_it():
    authz = authorizer()
    broker, coordinator, _, _ = txn_broker(authz)
    resp = init_pid(broker, "tx")
    assert (resp.error_code, resp.producer_id, resp.producer_epoch) == (E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1, -1)
    assert coordinator.calls == []
    grant(authz, TXN, "tx", Op.WRITE)
    assert init_pid(broker, "tx").producer_id == 42 and coordinator.calls == [("init", "tx")]


@pytest.mark.parametrize("acl", [
    (CLUSTER, "kafka-cluster", Op.IDEMPOTENT_WRITE),
    (TOPIC, "any-topic", Op.WRITE),  # KIP-679 (Kafka 2.8): Write on some topic is enough
    (TOPIC, "pre", Op.WRITE, PatternType.PREFIXED),
])
def test_an_idempotent_init_producer_id_needs_idempotent_write_or_write_on_some_topic(acl):
    authz = authorizer()
    broker, _, generated, _ = txn_broker(authz)
    resp = init_pid(broker, None)
    assert (resp.error_code, resp.producer_id) == (E.CLUSTER_AUTHORIZATION_FAILED, -1)
    assert generated == []
    resource_type, name, op, *pattern = acl
    grant(authz, resource_type, name, op, pattern=pattern[0] if pattern else PatternType.LITERAL)
    resp = init_pid(broker, None)
    assert (resp.error_code, resp.producer_id) == (E.NONE, 99)


def add_partitions(broker, *topics):
    body = {"v3_and_below_transactional_id": "tx", "v3_and_below_producer_id": 5, "v3_and_below_producer_epoch": 0,
            "v3_and_below_topics": [{"name": t, "partitions": [0]} for t in topics]}
    resp = ask(broker, 24, 3, body)[0]
    return {(t.name, p.partition_index): p.partition_error_code for t in resp.results_by_topic_v3_and_below
            for p in t.results_by_partition}


def test_add_partitions_to_txn_needs_write_on_the_transactional_id_and_on_each_topic():
    authz = authorizer()
    broker, coordinator, _, _ = txn_broker(authz)
    assert add_partitions(broker, "t", "u") == {("t", 0): E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                                                ("u", 0): E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
    grant(authz, TXN, "tx", Op.WRITE)
    grant(authz, TOPIC, "t", Op.WRITE)
    assert add_partitions(broker, "t", "u", "ghost") == {
        ("t", 0): E.OPERATION_NOT_ATTEMPTED, ("u", 0): E.TOPIC_AUTHORIZATION_FAILED,
        ("ghost", 0): E.TOPIC_AUTHORIZATION_FAILED}
    assert coordinator.calls == []
    grant(authz, TOPIC, "u", Op.WRITE)
    assert add_partitions(broker, "t", "u") == {("t", 0): E.NONE, ("u", 0): E.NONE}
    assert coordinator.calls == [("add", "tx", frozenset({("t", 0), ("u", 0)}))]


def test_add_partitions_to_txn_refuses_internal_topics_even_without_an_authorizer():
    broker, coordinator, _, _ = txn_broker(None)
    assert add_partitions(broker, "t", "__consumer_offsets") == {
        ("t", 0): E.OPERATION_NOT_ATTEMPTED, ("__consumer_offsets", 0): E.TOPIC_AUTHORIZATION_FAILED}
    assert coordinator.calls == []


def test_add_offsets_to_txn_needs_write_on_the_transactional_id_then_read_on_the_group():
    authz = authorizer()
    broker, coordinator, _, _ = txn_broker(authz)
    body = {"transactional_id": "tx", "producer_id": 5, "producer_epoch": 0, "group_id": "g"}
    assert ask(broker, 25, 3, body)[0].error_code == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    grant(authz, TXN, "tx", Op.WRITE)
    assert ask(broker, 25, 3, body)[0].error_code == E.GROUP_AUTHORIZATION_FAILED
    assert coordinator.calls == []
    grant(authz, GROUP, "g", Op.READ)
    assert ask(broker, 25, 3, body)[0].error_code == E.NONE
    assert coordinator.calls == [("offsets", "tx", 7)]


def test_end_txn_needs_write_on_the_transactional_id():
    authz = authorizer()
    broker, coordinator, _, _ = txn_broker(authz)
    body = {"transactional_id": "tx", "producer_id": 5, "producer_epoch": 0, "committed": True}
    grant(authz, TXN, "tx", Op.DESCRIBE)
    assert ask(broker, 26, 3, body)[0].error_code == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert coordinator.calls == []
    grant(authz, TXN, "tx", Op.WRITE)
    assert ask(broker, 26, 3, body)[0].error_code == E.NONE
    assert coordinator.calls == [("end", "tx", True)]


def test_write_txn_markers_needs_cluster_action():
    authz = authorizer()
    broker, _, _, appended = txn_broker(authz)
    grant(authz, TOPIC, "*", Op.ALL)
    grant(authz, TXN, "*", Op.ALL)
    body = {"markers": [{"producer_id": 5, "producer_epoch": 0, "transaction_result": True, "coordinator_epoch": 1,
                         "topics": [{"name": "t", "partition_indexes": [0, 1]}, {"name": "u", "partition_indexes": [0]}]}]}
    resp = ask(broker, 27, 1, body)[0]
    assert [(m.producer_id, t.name, p.partition_index, p.error_code)
            for m in resp.markers for t in m.topics for p in t.partitions] == [
        (5, "t", 0, E.CLUSTER_AUTHORIZATION_FAILED), (5, "t", 1, E.CLUSTER_AUTHORIZATION_FAILED),
        (5, "u", 0, E.CLUSTER_AUTHORIZATION_FAILED)]
    assert appended == []
    grant(authz, CLUSTER, "kafka-cluster", Op.CLUSTER_ACTION)
    resp = ask(broker, 27, 1, body)[0]
    assert {p.error_code for m in resp.markers for t in m.topics for p in t.partitions} == {E.NONE}
    assert len(appended) == 3


def test_describe_transactions_needs_describe_on_each_id_and_hides_undescribable_topics():
    authz = authorizer()
    broker, coordinator, _, _ = txn_broker(authz)
    grant(authz, TXN, "tx", Op.DESCRIBE)
    grant(authz, TOPIC, "t", Op.DESCRIBE)
    resp = ask(broker, 65, 0, {"transactional_ids": ["secret", "tx", "secret"]})[0]
    got = [(s.transactional_id, s.error_code, s.transaction_state, [t.topic for t in s.topics])
           for s in resp.transaction_states]
    assert got == [("secret", E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "", []),
                   ("tx", E.NONE, "Ongoing", ["t"]),
                   ("secret", E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "", [])]
    assert coordinator.calls == [("describe", ["tx"])]


def test_list_transactions_lists_only_describable_ids():
    authz = authorizer()
    broker, _, _, _ = txn_broker(authz)
    grant(authz, TXN, "tx", Op.WRITE)  # Write implies Describe
    resp = ask(broker, 66, 0, {"state_filters": [], "producer_id_filters": []})[0]
    assert [(t.transactional_id, t.producer_id) for t in resp.transaction_states] == [("tx", 5)]
    assert resp.error_code == E.NONE


# ---------------------------------------------------------------------- DescribeProducers / DescribeCluster


def test_describe_producers_needs_read_on_the_topic(secured):
    body = {"topics": [{"name": "t", "partition_indexes": [0]}, {"name": "ghost", "partition_indexes": [0]}]}
    secured.broker.metadata_cache.update(update_metadata(brokers=(1,), partitions=1))
    grant(secured.authz, TOPIC, "t", Op.DESCRIBE)  # Describe is not enough
    resp, _ = ask(secured.dispatcher, 61, 0, body)
    assert [(t.name, t.partitions[0].error_code) for t in resp.topics] == [
        ("t", E.TOPIC_AUTHORIZATION_FAILED), ("ghost", E.TOPIC_AUTHORIZATION_FAILED)]
    grant(secured.authz, TOPIC, "*", Op.READ)
    resp, _ = ask(secured.dispatcher, 61, 0, body)
    assert [(t.name, t.partitions[0].error_code) for t in resp.topics] == [
        ("t", E.NONE), ("ghost", E.UNKNOWN_TOPIC_OR_PARTITION)]


def test_describe_cluster_reveals_authorized_operations_only_with_describe_on_the_cluster(secured):
    broker = metadata_broker(secured.authz)
    body = {"include_cluster_authorized_operations": True, "endpoint_type": 1}
    resp = ask(broker, 60, 1, body)[0]
    assert (resp.error_code, resp.cluster_authorized_operations, len(resp.brokers)) == (E.NONE, 0, 3)
    grant(secured.authz, CLUSTER, "kafka-cluster", Op.ALTER)  # Alter implies Describe
    resp = ask(broker, 60, 1, body)[0]
    assert resp.cluster_authorized_operations == bitfield((Op.ALTER, Op.DESCRIBE))
    assert ask(broker, 60, 1, {**body, "include_cluster_authorized_operations": False})[0] \
        .cluster_authorized_operations == NOT_PROVIDED


# ---------------------------------------------------------------------- Mafka's delayed and half-message APIs


class _Delivery:
    def __init__(self) -> None:
        self.checks = HalfChecks()
        self.delivered_records = 3
        self.ended: list = []

    def lateness_percentiles(self, *qs):
        return [None for _ in qs]

    def take_checks(self, group, most):
        return self.checks.take(group, most)

    def end_half(self, topic, index, offset, commit, timeout_ms):
        self.ended.append((topic, index, offset, commit))
        return defer.succeed(E.NONE)


def delayed_broker(authz):
    delivery = _Delivery()
    delivery.checks.queue("pg", Check("t", 0, 10, "tx", b"k", b"half", (), 0))
    delivery.checks.queue("pg", Check("u", 0, 11, "", b"k", b"other", (), 0))
    partitions = {("t", 0): SimpleNamespace(is_leader=True, delays=None)}
    return SimpleNamespace(
        authorizer=authz, delayed_delivery=delivery,
        replica_manager=SimpleNamespace(partitions=partitions),
        metadata_cache=SimpleNamespace(partition=lambda topic, index: None),
    ), delivery


def test_describe_delayed_needs_describe_on_each_topic():
    authz = authorizer()
    broker, _ = delayed_broker(authz)
    body = {"topics": [{"name": "t", "partition_indexes": [0]}, {"name": "ghost", "partition_indexes": [0]}]}
    resp = ask(broker, 10000, 0, body)[0]
    assert [(t.name, t.partitions[0].error_code) for t in resp.topics] == [
        ("t", E.TOPIC_AUTHORIZATION_FAILED), ("ghost", E.TOPIC_AUTHORIZATION_FAILED)]
    grant(authz, TOPIC, "*", Op.DESCRIBE)
    resp = ask(broker, 10000, 0, body)[0]
    assert [(t.name, t.partitions[0].error_code, t.partitions[0].is_leader) for t in resp.topics] == [
        ("t", E.NONE, True), ("ghost", E.UNKNOWN_TOPIC_OR_PARTITION, False)]


def test_end_half_needs_write_on_the_topic():
    authz = authorizer()
    broker, delivery = delayed_broker(authz)
    body = {"topic": "t", "partition": 0, "offset": 10, "commit": True, "timeout_ms": 1000}
    grant(authz, TOPIC, "t", Op.READ)
    assert ask(broker, 10001, 0, body)[0].error_code == E.TOPIC_AUTHORIZATION_FAILED
    assert delivery.ended == []
    grant(authz, TOPIC, "t", Op.WRITE)
    assert ask(broker, 10001, 0, body)[0].error_code == E.NONE
    assert delivery.ended == [("t", 0, 10, True)]


def test_txn_checks_hand_out_nothing_unless_the_principal_may_write_every_check_it_would_take():
    authz = authorizer()
    broker, delivery = delayed_broker(authz)
    body = {"producer_group": "pg", "max_checks": 10}
    resp = ask(broker, 10002, 0, body)[0]
    assert (resp.error_code, resp.checks) == (E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, [])
    grant(authz, TXN, "tx", Op.WRITE)
    grant(authz, TOPIC, "t", Op.WRITE)
    resp = ask(broker, 10002, 0, body)[0]
    assert (resp.error_code, resp.checks) == (E.TOPIC_AUTHORIZATION_FAILED, [])  # "u" is not writable
    # Nothing was taken, nothing counted towards mafka.txn.check.max.times.
    assert delivery.checks.waiting() == {"pg": 2} and delivery.checks.times_checked("t", 0, 10) == 0
    resp = ask(broker, 10002, 0, {"producer_group": "pg", "max_checks": 1})[0]  # only t's check would be taken
    assert (resp.error_code, [(c.topic, c.value, c.times_checked) for c in resp.checks]) == (
        E.NONE, [("t", b"half", 1)])


def test_list_half_lists_only_describable_topics_and_transactional_ids():
    authz = authorizer()
    broker, _ = delayed_broker(authz)
    assert ask(broker, 10003, 0, {})[0].halves == []
    grant(authz, TOPIC, "*", Op.DESCRIBE)
    assert [(h.topic, h.offset) for h in ask(broker, 10003, 0, {})[0].halves] == [("u", 11)]
    grant(authz, TXN, "tx", Op.DESCRIBE)
    assert [(h.topic, h.transactional_id) for h in ask(broker, 10003, 0, {})[0].halves] == [("t", "tx"), ("u", "")]
