"""ACLs on a real 3-broker cluster, judged by two independent clients (confluent-kafka and kafka-python).

The cluster runs Kafka's AclAuthorizer.  PLAINTEXT (the harness's and the
brokers' own listener) is ``User:ANONYMOUS``, a super user; clients
authenticate on SASL_PLAINTEXT with PLAIN as ``admin`` (a super user),
``alice`` and ``bob``, who may do only what their ACLs say.  ACLs are created
and removed through the brokers (CreateAcls/DeleteAcls), and every broker
must apply a change within a second or so.
"""

from __future__ import annotations

import json
import time
import uuid

import pytest

from tests.harness.client_round_trips import poll_values, produce_all
from tests.harness.cluster import ClusterSpec
from tests.harness.raw_connection import Raw

pytestmark = pytest.mark.integration

JAAS = (
    'org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret" '
    'user_alice="alice-secret" user_bob="bob-secret";'
)
CLUSTER = ClusterSpec(
    settings={
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:ANONYMOUS;User:admin",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
    },
    listeners=("SASL_PLAINTEXT",),
    # not shared: ACLs are cluster-wide state, and this module grants bob Read on every group ("*")
    shared=False,
)
PASSWORDS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
RUN = uuid.uuid4().hex[:6]
ORDERS = f"orders-{RUN}"  # alice writes (literal ACL); bob is allowed AND denied Read
PREFIX = f"feed-{RUN}-"  # alice reads every topic with this prefix (prefixed ACL)
SECRET = f"secret-{RUN}"  # nobody but super users
GROUP_PREFIX = f"g-alice-{RUN}"


def sasl(cluster, user: str) -> dict:
    return {"bootstrap.servers": cluster.bootstrap_for("SASL_PLAINTEXT"), "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN", "sasl.username": user, "sasl.password": PASSWORDS[user]}


def kafka_python(cluster, user: str) -> dict:
    return {"bootstrap_servers": cluster.bootstrap_for("SASL_PLAINTEXT"), "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "PLAIN", "sasl_plain_username": user, "sasl_plain_password": PASSWORDS[user]}


def acl_bindings():
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    allow, deny = AclPermissionType.ALLOW, AclPermissionType.DENY
    literal, prefixed = ResourcePatternType.LITERAL, ResourcePatternType.PREFIXED
    topic, group = ResourceType.TOPIC, ResourceType.GROUP
    return [
        AclBinding(topic, ORDERS, literal, "User:alice", "*", AclOperation.WRITE, allow),
        AclBinding(topic, PREFIX, prefixed, "User:alice", "*", AclOperation.READ, allow),
        AclBinding(group, GROUP_PREFIX, prefixed, "User:alice", "*", AclOperation.READ, allow),
        AclBinding(topic, ORDERS, literal, "User:bob", "*", AclOperation.READ, allow),
        AclBinding(topic, ORDERS, literal, "User:bob", "*", AclOperation.READ, deny),
        AclBinding(group, "*", literal, "User:bob", "*", AclOperation.READ, allow),
    ]


@pytest.fixture(scope="module")
def acls(cluster):
    """Topics created by the super user and the module's ACLs created through confluent-kafka's admin."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(sasl(cluster, "admin"))
    for future in admin.create_topics([NewTopic(t, 3, 3) for t in (ORDERS, PREFIX + "a", PREFIX + "b", SECRET)]).values():
        future.result(30)
    for future in admin.create_acls(acl_bindings()).values():
        assert future.result(30) is None
    wait_applied_everywhere(cluster, "alice", ORDERS)
    return admin


def can_describe_everywhere(cluster, user: str, topic: str) -> list[bool]:
    """Per broker: does a Metadata request from *user* show *topic* (Describe, implied by Write/Read)?"""
    out = []
    for b in cluster.info["brokers"]:
        raw = Raw((b["host"], b["listeners"]["SASL_PLAINTEXT"]))
        try:
            assert raw.authenticate("PLAIN", user, PASSWORDS[user]).error_code == 0
            meta = raw.call(3, 4, {"topics": None, "allow_auto_topic_creation": False})
            out.append(topic in {t.name for t in meta.topics})
        finally:
            raw.close()
    return out


def wait_applied_everywhere(cluster, user: str, topic: str, visible: bool = True, timeout: float = 10.0) -> float:
    start = time.monotonic()
    while can_describe_everywhere(cluster, user, topic) != [visible] * len(cluster.info["brokers"]):
        assert time.monotonic() - start < timeout, f"not every broker applied the ACL change for {user} on {topic}"
        time.sleep(0.05)
    return time.monotonic() - start


# ---------------------------------------------------------------------- the ACL APIs and their storage


def test_acls_are_stored_in_kafkas_zookeeper_layout(cluster, acls):
    from kazoo.client import KazooClient

    zk = KazooClient(hosts=cluster.info["zookeeper"]["connect"])
    zk.start(timeout=15)
    try:
        data, _ = zk.get(f"/kafka-acl/Topic/{ORDERS}")
        stored = json.loads(data)
        assert stored["version"] == 1
        assert {"principal": "User:alice", "permissionType": "Allow", "operation": "Write", "host": "*"} in stored["acls"]
        assert {"principal": "User:bob", "permissionType": "Deny", "operation": "Read", "host": "*"} in stored["acls"]
        prefixed = json.loads(zk.get(f"/kafka-acl-extended/prefixed/Topic/{PREFIX}")[0])
        assert prefixed["acls"] == [{"principal": "User:alice", "permissionType": "Allow", "operation": "Read", "host": "*"}]
        assert zk.get_children("/kafka-acl-changes") and zk.get_children("/kafka-acl-extended-changes")
    finally:
        zk.stop()
        zk.close()


def test_two_clients_describe_the_same_acls(cluster, acls):
    from confluent_kafka.admin import (
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )
    from kafka.admin import (
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        KafkaAdminClient,
        ResourcePatternFilter,
    )
    from kafka.admin import ResourceType as KpResourceType

    described = acls.describe_acls(
        AclBindingFilter(ResourceType.TOPIC, ORDERS, ResourcePatternType.MATCH, None, None,
                         AclOperation.ANY, AclPermissionType.ANY)).result(30)
    ours = {(b.principal, b.operation.name, b.permission_type.name) for b in described}
    assert ours == {("User:alice", "WRITE", "ALLOW"), ("User:bob", "READ", "ALLOW"), ("User:bob", "READ", "DENY")}
    admin = KafkaAdminClient(**kafka_python(cluster, "admin"))
    try:
        found, error = admin.describe_acls(ACLFilter(
            principal=None, host="*", operation=ACLOperation.ANY, permission_type=ACLPermissionType.ANY,
            resource_pattern=ResourcePatternFilter(KpResourceType.TOPIC, ORDERS, ACLResourcePatternType.LITERAL)))
    finally:
        admin.close()
    theirs = {(a.principal, a.operation.name, a.permission_type.name) for a in found}
    assert theirs == ours


def test_without_alter_on_the_cluster_acls_cannot_be_created(cluster, acls):
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )

    admin = AdminClient(sasl(cluster, "alice"))
    binding = AclBinding(ResourceType.TOPIC, SECRET, ResourcePatternType.LITERAL, "User:alice", "*",
                         AclOperation.ALL, AclPermissionType.ALLOW)
    with pytest.raises(KafkaException) as refused:
        admin.create_acls([binding])[binding].result(30)
    assert refused.value.args[0].code() == 31  # CLUSTER_AUTHORIZATION_FAILED


# ---------------------------------------------------------------------- the matrix, with confluent-kafka


def produce_error(cluster, user: str, topic: str) -> int | None:
    """The error code confluent-kafka's producer gets for one message (None: delivered)."""
    from confluent_kafka import Producer

    result = {}
    producer = Producer({**sasl(cluster, user), "acks": "all", "message.timeout.ms": 15000})
    producer.produce(topic, b"x", on_delivery=lambda err, msg: result.setdefault("err", err))
    producer.flush(20)
    err = result.get("err")
    return None if err is None else err.code()


def consume_error(cluster, user: str, topic: str, group: str) -> int | None:
    """What confluent-kafka's consumer meets reading *topic* in *group*: an error code, or None once data arrives."""
    from confluent_kafka import Consumer

    consumer = Consumer({**sasl(cluster, user), "group.id": group, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error() is None:
                return None
            if msg.error().code() in (29, 30):  # TOPIC_/GROUP_AUTHORIZATION_FAILED
                return msg.error().code()
        raise AssertionError(f"{user} read nothing and got no authorization error on {topic}")
    finally:
        consumer.close()


def test_literal_write_allows_alice_and_refuses_bob(cluster, acls):
    assert produce_error(cluster, "alice", ORDERS) is None
    assert produce_error(cluster, "bob", ORDERS) == 29


def test_prefixed_read_and_group_acls(cluster, acls):
    produce_all(sasl(cluster, "admin"), PREFIX + "a", [b"hello"], timeout=20)
    assert consume_error(cluster, "alice", PREFIX + "a", f"{GROUP_PREFIX}-1") is None
    assert consume_error(cluster, "alice", PREFIX + "a", f"other-{RUN}") == 30
    assert consume_error(cluster, "alice", SECRET, f"{GROUP_PREFIX}-2") == 29


def test_deny_beats_allow(cluster, acls):
    assert consume_error(cluster, "bob", ORDERS, f"bob-{RUN}") == 29


def test_metadata_hides_topics_a_principal_cannot_describe(cluster, acls):
    from confluent_kafka.admin import AdminClient

    seen = set(AdminClient(sasl(cluster, "alice")).list_topics(timeout=20).topics)
    assert {ORDERS, PREFIX + "a", PREFIX + "b"} <= seen
    assert SECRET not in seen
    assert SECRET in set(AdminClient(sasl(cluster, "admin")).list_topics(timeout=20).topics)


# ---------------------------------------------------------------------- the matrix, with kafka-python


def test_kafka_python_sees_the_same_decisions(cluster, acls):
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.errors import KafkaError, TopicAuthorizationFailedError

    producer = KafkaProducer(acks="all", **kafka_python(cluster, "alice"))
    try:
        producer.send(ORDERS, b"from kafka-python").get(timeout=30)
    finally:
        producer.close()
    # bob may write nowhere: an idempotent producer is refused its producer id (IdempotentWrite on the
    # cluster, or Write on some topic, KIP-679), a plain one its records
    producer = KafkaProducer(acks="all", max_block_ms=10000, **kafka_python(cluster, "bob"))
    try:
        with pytest.raises(KafkaError, match="ClusterAuthorizationFailed"):
            producer.send(ORDERS, b"nope").get(timeout=30)
    finally:
        producer.close()
    producer = KafkaProducer(acks="all", max_block_ms=10000, enable_idempotence=False, **kafka_python(cluster, "bob"))
    try:
        with pytest.raises(TopicAuthorizationFailedError):
            producer.send(ORDERS, b"nope").get(timeout=30)
    finally:
        producer.close()
    consumer = KafkaConsumer(**kafka_python(cluster, "alice"))
    try:
        assert SECRET not in consumer.topics()
        assert ORDERS in consumer.topics()
    finally:
        consumer.close()


# ---------------------------------------------------------------------- changes apply everywhere


def test_removing_an_acl_stops_a_reading_consumer_on_every_broker(cluster, acls):
    from confluent_kafka import Consumer
    from confluent_kafka.admin import (
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    topic = PREFIX + "b"
    produce_all(sasl(cluster, "admin"), topic, [b"m%d" % i for i in range(30)], partitions=3, timeout=20)
    consumer = Consumer({**sasl(cluster, "alice"), "group.id": f"{GROUP_PREFIX}-stop",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    try:
        assert len(poll_values(consumer, 30, timeout=30)) == 30
        doomed = AclBindingFilter(ResourceType.TOPIC, PREFIX, ResourcePatternType.PREFIXED, "User:alice", "*",
                                  AclOperation.READ, AclPermissionType.ALLOW)
        removed = acls.delete_acls([doomed])[doomed].result(30)
        assert len(removed) == 1
        refused_at = None
        deadline = time.monotonic() + 15
        while refused_at is None and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is not None and msg.error().code() == 29:
                refused_at = time.monotonic()
        assert refused_at is not None, "the consumer kept reading after its ACL was removed"
        # and every broker (each leads one partition) refuses alice now
        assert wait_applied_everywhere(cluster, "alice", topic, visible=False, timeout=5.0) < 2.0
    finally:
        consumer.close()
        for future in acls.create_acls([b for b in acl_bindings() if b.name == PREFIX]).values():
            future.result(30)


# ---------------------------------------------------------------------- inter-broker requests from a user


def test_a_user_cannot_pose_as_a_follower_or_a_controller(cluster, acls):
    b = cluster.info["brokers"][0]
    raw = Raw((b["host"], b["listeners"]["SASL_PLAINTEXT"]))
    try:
        assert raw.authenticate("PLAIN", "alice", PASSWORDS["alice"]).error_code == 0
        fetch = raw.call(1, 11, {
            "replica_id": 2, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": 0,
            "session_id": 0, "session_epoch": -1, "rack_id": "",
            "topics": [{"topic": PREFIX + "a", "partitions": [
                {"partition": p, "current_leader_epoch": -1, "fetch_offset": 0, "log_start_offset": 0,
                 "partition_max_bytes": 1 << 20} for p in range(3)]}],
            "forgotten_topics_data": [],
        })
        codes = {p.error_code for t in fetch.responses for p in t.partitions}
        assert codes == {29}, codes
        assert not any(len(p.records or b"") for t in fetch.responses for p in t.partitions)
        markers = raw.call(27, 0, {"markers": [{"producer_id": 1, "producer_epoch": 0, "transaction_result": True,
                                                "topics": [{"name": PREFIX + "a", "partition_indexes": [0]}],
                                                "coordinator_epoch": 0}]})
        assert {p.error_code for m in markers.markers for t in m.topics for p in t.partitions} == {31}
    finally:
        raw.close()


# ---------------------------------------------------------------------- the web console over SASL


def test_the_console_logs_in_with_sasl_and_shows_only_what_the_principal_may_describe(cluster, acls, tmp_path):
    """``mafka console`` with a SASL client config and no credentials asks who logs in; alice sees
    her topics and not the secret one, a wrong password is refused, and no page shows without a login."""
    import http.cookiejar
    import re
    import subprocess
    import sys
    import urllib.error
    import urllib.parse
    import urllib.request

    from tests.harness.cluster import free_ports
    from tests.harness.waits import wait_until

    config = tmp_path / "console.properties"
    config.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n")
    port = free_ports(1)[0]
    base = f"http://127.0.0.1:{port}"
    with open(tmp_path / "console.log", "w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "mafka.cli.main", "console", "--bootstrap-server",
             cluster.bootstrap_for("SASL_PLAINTEXT"), "--command-config", str(config), "--port", str(port)],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        def opener() -> urllib.request.OpenerDirector:
            return urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))

        def login(session: urllib.request.OpenerDirector, user: str, password: str) -> tuple[int, str]:
            form = session.open(base + "/login", timeout=30).read().decode()
            token = re.search(r'name="csrf_token" value="([^"]+)"', form)
            assert token, form
            data = urllib.parse.urlencode({"csrf_token": token.group(1), "username": user,
                                           "password": password}).encode()
            try:
                answer = session.open(base + "/login", data=data, timeout=30)
                return answer.status, answer.read().decode()
            except urllib.error.HTTPError as exc:
                return exc.code, exc.read().decode()

        wait_until(lambda: _answers(base + "/login"), 30, "the console to serve")
        anonymous = opener().open(base + "/topics", timeout=30)
        assert anonymous.url.startswith(base + "/login"), anonymous.url  # redirected: log in first

        status, page = login(opener(), "alice", "wrong")
        assert status == 401 and "SASL_AUTHENTICATION_FAILED" in page

        alice = opener()
        status, _ = login(alice, "alice", PASSWORDS["alice"])
        assert status == 200
        topics = alice.open(base + "/topics", timeout=30).read().decode()
        assert ORDERS in topics and PREFIX + "a" in topics and SECRET not in topics
        admin = opener()
        login(admin, "admin", PASSWORDS["admin"])
        assert SECRET in admin.open(base + "/topics", timeout=30).read().decode()
    finally:
        proc.terminate()
        proc.wait(20)


def _answers(url: str) -> bool:
    import urllib.request

    try:
        urllib.request.urlopen(url, timeout=5).read()
        return True
    except OSError:
        return False


def test_group_heartbeats_need_describe_on_every_subscribed_topic(cluster, acls):
    """Kafka 4's ``handleConsumerGroupHeartbeat`` / ``handleShareGroupHeartbeat``: a heartbeat subscribing
    to a topic the principal may not Describe is TOPIC_AUTHORIZATION_FAILED; alice may Read (so
    Describe) the prefixed topics, not SECRET."""
    group = f"{GROUP_PREFIX}-heartbeats"
    first = cluster.info["brokers"][0]
    raw = Raw((first["host"], first["listeners"]["SASL_PLAINTEXT"]))
    try:
        assert raw.authenticate("PLAIN", "alice", PASSWORDS["alice"]).error_code == 0
        deadline = time.monotonic() + 30
        while True:  # the first FindCoordinator creates __consumer_offsets: COORDINATOR_NOT_AVAILABLE meanwhile
            found = raw.call(10, 2, {"key": group, "key_type": 0})
            if found.error_code != 15 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert found.error_code == 0, found
    finally:
        raw.close()
    coordinator = next(b for b in cluster.info["brokers"] if b["id"] == found.node_id)
    raw = Raw((coordinator["host"], coordinator["listeners"]["SASL_PLAINTEXT"]))
    try:
        assert raw.authenticate("PLAIN", "alice", PASSWORDS["alice"]).error_code == 0

        def consumer_heartbeat(topics: list[str]):
            return raw.call(68, 1, {
                "group_id": group, "member_id": uuid.uuid4().hex[:22], "member_epoch": 0, "instance_id": None,
                "rack_id": None, "rebalance_timeout_ms": 30000, "subscribed_topic_names": topics,
                "subscribed_topic_regex": None, "server_assignor": None, "topic_partitions": []})

        assert consumer_heartbeat([PREFIX + "a", SECRET]).error_code == 29  # TOPIC_AUTHORIZATION_FAILED
        joined = consumer_heartbeat([PREFIX + "a"])
        assert joined.error_code == 0 and joined.member_epoch > 0, joined
        left = raw.call(68, 1, {
            "group_id": group, "member_id": joined.member_id, "member_epoch": -1, "instance_id": None,
            "rack_id": None, "rebalance_timeout_ms": -1, "subscribed_topic_names": None,
            "subscribed_topic_regex": None, "server_assignor": None, "topic_partitions": None})
        assert left.error_code == 0, left
        share = raw.call(76, 1, {"group_id": f"{group}-share", "member_id": uuid.uuid4().hex[:22],
                                 "member_epoch": 0, "rack_id": None, "subscribed_topic_names": [SECRET]})
        assert share.error_code == 29, share
    finally:
        raw.close()
