"""The newer consumer-group protocol versions, sent by real clients to a real 3-broker cluster.

Which client sends which version (each negotiates the highest version it
shares with Mafka's ApiVersions):

* confluent-kafka (librdkafka 2.x): a consumer's commit is OffsetCommit **v9**
  (its highest, and Mafka's; asserted from librdkafka's protocol debug log) with the
  consumed records' leader epoch, ``committed()`` is OffsetFetch **v9**;
  ``describe_consumer_groups`` is DescribeGroups **v5** (it speaks up to 5);
  ``alter_consumer_group_offsets`` / ``list_consumer_group_offsets`` are
  OffsetCommit v9 / OffsetFetch v9 (confluent-kafka takes one group per call);
* kafka-python 3.0's admin: ``describe_groups`` is DescribeGroups v5 (it always
  asks for authorized operations), ``list_group_offsets`` with several groups
  of one coordinator is **one** OffsetFetch v9 (KIP-709; v9 adds KIP-848's member
  fields, null here), ``alter_group_offsets`` is OffsetCommit v9 with leader epochs, ``remove_group_members`` is LeaveGroup
  **v4** (KIP-345's batch), ``delete_group_offsets`` is OffsetDelete v0.

The leader epochs make the versions visible: a committed epoch only travels in
OffsetCommit v6+ and comes back only in OffsetFetch v5+.  The last test kills
the coordinator of a group after OffsetDelete: the deletion must survive the
failover (the tombstones were replicated before the answer).
"""

from __future__ import annotations

import logging
import re
import subprocess
import sys
import time
import uuid

import pytest

from mafka.errors import ErrorCode
from mafka.group.offsets_records import offsets_partition_for
from tests.harness.chaos import create_topic
from tests.harness.cluster import ClusterSpec, LocalCluster
from tests.harness.group_clients import close_quietly
from tests.harness.waits import wait_until

pytestmark = pytest.mark.integration

SETTINGS = {
    "zookeeper.session.timeout.ms": "6000",
    "default.replication.factor": "3",
    "offsets.topic.replication.factor": "3",
    "auto.leader.rebalance.enable": "false",
    "replica.lag.time.max.ms": "4000",
    "group.initial.rebalance.delay.ms": "300",
}
OFFSETS_PARTITIONS = 50  # offsets.topic.num.partitions, Kafka's default


CLUSTER = ClusterSpec(settings=SETTINGS, shared=False)  # kills and restarts a broker


@pytest.fixture(scope="module")
def topic(cluster: LocalCluster) -> str:
    """A 3-partition, RF 3 topic holding 30 records (10 per partition)."""
    from confluent_kafka import Producer

    name = create_topic(cluster, partitions=3, rf=3, name=f"gapi-{uuid.uuid4().hex[:6]}")
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(30):
        producer.produce(name, value=f"v{i}".encode(), partition=i % 3)
    assert producer.flush(30) == 0
    # __consumer_offsets is created by the first FindCoordinator; kafka-python's admin does
    # not retry COORDINATOR_NOT_AVAILABLE, so wait until a group lookup is answered.
    admin = kp_admin(cluster)
    try:
        wait_for(
            lambda: admin.list_group_offsets({"probe": None}) == {"probe": {}},
            60,
            "a group coordinator",
        )
    finally:
        admin.close()
    return name


def kp_admin(cluster: LocalCluster):
    from kafka.admin import KafkaAdminClient

    return KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30000)


def ck_admin(cluster: LocalCluster):
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": cluster.bootstrap})


def group_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def same_coordinator_groups(n: int) -> list[str]:
    """``n`` group ids hashed to one ``__consumer_offsets`` partition, so one coordinator."""
    first = group_name("multi")
    wanted = offsets_partition_for(first, OFFSETS_PARTITIONS)
    out = [first]
    i = 0
    while len(out) < n:
        candidate = f"{first}-{i}"
        if offsets_partition_for(candidate, OFFSETS_PARTITIONS) == wanted:
            out.append(candidate)
        i += 1
    return out


class Collected(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def consumer(
    cluster: LocalCluster, group: str, *, instance: str | None = None, logger=None, **conf
):
    from confluent_kafka import Consumer

    config = {
        "bootstrap.servers": cluster.bootstrap,
        "group.id": group,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 1000,
        **conf,
    }
    if instance is not None:
        config["group.instance.id"] = instance
    if logger is not None:
        config["logger"] = logger
    return Consumer(config)




def consume_some(c, count: int, timeout: float = 60.0) -> list:
    """Polls until ``count`` records arrived (the consumer is then in a Stable group)."""
    got: list = []
    deadline = time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None:
            assert m.error() is None, m.error()
            got.append(m)
    assert len(got) >= count, f"only {len(got)} records within {timeout} s"
    return got


def wait_for(check, timeout: float = 60.0, what: str = "condition"):
    """``check()``'s first truthy answer; an exception counts as "not yet" until the deadline."""
    return wait_until(check, timeout, what, interval=0.5, retry=(Exception,))


# ------------------------------------------------------------------ OffsetCommit v9 / OffsetFetch v9


def test_confluent_consumer_commits_with_offset_commit_v9_and_its_leader_epoch(cluster, topic):
    from confluent_kafka import TopicPartition

    group = group_name("ck-commit")
    log = logging.getLogger(f"ck-{group}")
    log.propagate = False
    log.setLevel(logging.DEBUG)
    collected = Collected()
    log.addHandler(collected)
    c = consumer(cluster, group, logger=log, debug="protocol,cgrp")
    c.subscribe([topic])
    try:
        records = consume_some(c, 30)
        last = {}
        for m in records:
            last[m.partition()] = m
        epochs = {p: m.leader_epoch() for p, m in last.items()}
        assert all(e is not None and e >= 0 for e in epochs.values()), (
            epochs
        )  # Fetch answers leader epochs
        committed = c.commit(asynchronous=False)
        assert all(tp.error is None for tp in committed), committed
        # librdkafka speaks OffsetCommit up to v9, as Mafka does: v9 (flexible; a classic member's generation).
        # (Its log lines reach the logger from poll(): drain them.)
        wait_for(
            lambda: (
                c.poll(0.2) is None
                and any("Sent OffsetCommitRequest" in x for x in collected.lines)
            ),
            timeout=15,
            what="librdkafka's OffsetCommit log line",
        )
        sent = [line for line in collected.lines if "Sent OffsetCommitRequest" in line]
        assert sent and all(re.search(r"Sent OffsetCommitRequest \(v9,", line) for line in sent), (
            sent[:3]
        )
        # committed() is OffsetFetch v9; the leader epochs come back (only v6+ commits carry them).
        back = c.committed([TopicPartition(topic, p) for p in range(3)], timeout=30)
        assert {tp.partition: (tp.offset, tp.leader_epoch) for tp in back} == {
            p: (last[p].offset() + 1, epochs[p]) for p in range(3)
        }
        wait_for(
            lambda: (
                c.poll(0.2) is None and any("Sent OffsetFetchRequest" in x for x in collected.lines)
            ),
            timeout=15,
            what="librdkafka's OffsetFetch log line",
        )
        fetches = [line for line in collected.lines if "Sent OffsetFetchRequest" in line]
        assert fetches and all("(v9," in line for line in fetches), fetches[:3]
    finally:
        c.close()
    # The same offsets and epochs through kafka-python (OffsetFetch v9, one group).
    from kafka import TopicPartition as KTP

    admin = kp_admin(cluster)
    try:
        offsets = admin.list_group_offsets({group: None})[group]
    finally:
        admin.close()
    assert {
        tp.partition: (om.offset, om.leader_epoch)
        for tp, om in offsets.items()
        if tp.topic == topic
    } == {p: (last[p].offset() + 1, epochs[p]) for p in range(3)}
    assert all(isinstance(tp, KTP) for tp in offsets)


def test_admin_commits_with_leader_epochs_and_several_groups_come_back_in_one_fetch(cluster, topic):
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from kafka import TopicPartition as KTP
    from kafka.protocol.consumer import OffsetFetchRequest
    from kafka.structs import OffsetAndMetadata

    g1, g2, g3 = same_coordinator_groups(3)
    admin = kp_admin(cluster)
    ck = ck_admin(cluster)
    try:
        # kafka-python's alter_group_offsets: OffsetCommit v9 with leader epochs.
        result = admin.alter_group_offsets(
            g1,
            {
                KTP(topic, 0): OffsetAndMetadata(4, "m1", 7),
                KTP(topic, 1): OffsetAndMetadata(5, "", 8),
            },
        )
        assert {tp.partition: e.__name__ for tp, e in result.items()} == {
            0: "NoError",
            1: "NoError",
        }
        # confluent-kafka's alter_consumer_group_offsets: OffsetCommit v9 too.
        request = ConsumerGroupTopicPartitions(g2, [TopicPartition(topic, 2, 6, leader_epoch=9)])
        altered = ck.alter_consumer_group_offsets([request])[g2].result(30)
        assert [(tp.partition, tp.error) for tp in altered.topic_partitions] == [(2, None)]
        # kafka-python's list_group_offsets: one OffsetFetch v9 for the three groups.
        assert admin._manager.broker_version_data.api_version(OffsetFetchRequest) == 9
        answer = admin.list_group_offsets({g1: None, g2: [KTP(topic, 2), KTP(topic, 0)], g3: None})
        assert {
            g: {tp.partition: tuple(om) for tp, om in offsets.items()}
            for g, offsets in answer.items()
        } == {
            g1: {0: (4, "m1", 7), 1: (5, "", 8)},
            g2: {2: (6, "", 9), 0: (-1, "", -1)},
            g3: {},
        }
        # confluent-kafka's list_consumer_group_offsets (one group per call: librdkafka's own limit).
        listed = ck.list_consumer_group_offsets([ConsumerGroupTopicPartitions(g1)])[g1].result(30)
        assert sorted(
            (tp.partition, tp.offset, tp.leader_epoch) for tp in listed.topic_partitions
        ) == [(0, 4, 7), (1, 5, 8)]
    finally:
        admin.close()


# ------------------------------------------------------------------ DescribeGroups v5 / LeaveGroup v4


def test_describe_groups_v5_and_removing_a_static_member_by_instance_id(cluster, topic):
    from confluent_kafka import ConsumerGroupState
    from confluent_kafka.admin import AclOperation
    from kafka.admin import MemberToRemove

    group = group_name("static")
    c = consumer(cluster, group, instance="instance-1", **{"client.id": "static-client"})
    c.subscribe([topic])
    ck = ck_admin(cluster)
    admin = kp_admin(cluster)
    try:
        consume_some(c, 1)
        # confluent-kafka: DescribeGroups v5 with include_authorized_operations.
        described = ck.describe_consumer_groups([group], include_authorized_operations=True)[
            group
        ].result(30)
        assert described.state == ConsumerGroupState.STABLE
        assert sorted(op.name for op in described.authorized_operations) == [
            "DELETE",
            "DESCRIBE",
            "READ",
        ]
        assert (
            described.authorized_operations and AclOperation.READ in described.authorized_operations
        )
        (member,) = described.members
        assert (member.group_instance_id, member.client_id) == ("instance-1", "static-client")
        assert sorted(tp.partition for tp in member.assignment.topic_partitions) == [0, 1, 2]
        # kafka-python: DescribeGroups v5 (it always asks for the operations).
        kp = admin.describe_groups([group])[group]
        assert (kp["group_state"], kp["protocol_type"], kp["error"]) == ("Stable", "consumer", None)
        assert sorted(kp["authorized_operations"]) == ["DELETE", "DESCRIBE", "READ"]
        assert [(m["member_id"], m["group_instance_id"]) for m in kp["members"]] == [
            (member.member_id, "instance-1")
        ]
        # A static member that stops sends no LeaveGroup: it stays until its session times out...
        c.close()
        c = None
        assert admin.describe_groups([group])[group]["group_state"] == "Stable"
        # ...unless an operator removes it by its group.instance.id: LeaveGroup v4 (KIP-345).
        removed = admin.remove_group_members(
            group,
            [
                MemberToRemove(group_instance_id="instance-1"),
                MemberToRemove(group_instance_id="instance-9"),
            ],
        )
        assert {k: e.__name__ for k, e in removed.items()} == {
            "instance-1": "NoError",
            "instance-9": "UnknownMemberIdError",
        }
        after = admin.describe_groups([group])[group]
        assert (after["group_state"], after["members"]) == ("Empty", [])
    finally:
        if c is not None:
            c.close()
        admin.close()


def test_remove_group_members_by_member_id_of_a_live_dynamic_member(cluster, topic):
    from kafka.admin import MemberToRemove

    group = group_name("dynamic")
    c = consumer(cluster, group)
    c.subscribe([topic])
    admin = kp_admin(cluster)
    try:
        consume_some(c, 1)
        (member,) = admin.describe_groups([group])[group]["members"]
        removed = admin.remove_group_members(
            group,
            [
                MemberToRemove(member_id=member["member_id"]),
                MemberToRemove(member_id="not-a-member"),
            ],
        )
        assert {k: e.__name__ for k, e in removed.items()} == {
            member["member_id"]: "NoError",
            "not-a-member": "UnknownMemberIdError",
        }
        # The removed member's id is gone (the consumer rejoins later under a new id).
        members = admin.describe_groups([group])[group]["members"]
        assert member["member_id"] not in [m["member_id"] for m in members]
    finally:
        close_quietly(c)
        admin.close()


# ------------------------------------------------------------------ OffsetDelete v0


def test_delete_group_offsets_refuses_subscribed_topics_and_deletes_the_others(cluster, topic):
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from kafka import TopicPartition as KTP
    from kafka.errors import GroupIdNotFoundError
    from kafka.structs import OffsetAndMetadata

    other = create_topic(cluster, partitions=1, rf=3, name=f"gapi-other-{uuid.uuid4().hex[:6]}")
    group = group_name("delete")
    admin = kp_admin(cluster)
    ck = ck_admin(cluster)
    c = None
    try:
        assert all(
            e.__name__ == "NoError"
            for e in admin.alter_group_offsets(
                group,
                {
                    KTP(topic, 0): OffsetAndMetadata(1, "", 0),
                    KTP(other, 0): OffsetAndMetadata(2, "", 0),
                },
            ).values()
        )
        c = consumer(cluster, group)
        c.subscribe([topic])  # a live member subscribed to ``topic`` only
        consume_some(c, 1)
        result = admin.delete_group_offsets(group, [KTP(topic, 0), KTP(other, 0), KTP(other, 5)])
        assert {(tp.topic, tp.partition): e.__name__ for tp, e in result.items()} == {
            (topic, 0): "GroupSubscribedToTopicError",
            (other, 0): "NoError",
            (other, 5): "UnknownTopicOrPartitionError",
        }
        listed = ck.list_consumer_group_offsets(
            [
                ConsumerGroupTopicPartitions(
                    group, [TopicPartition(topic, 0), TopicPartition(other, 0)]
                )
            ]
        )[group].result(30)
        assert [(tp.topic, tp.offset) for tp in listed.topic_partitions] == [
            (topic, 1),
            (other, -1001),
        ]
        c.close()  # LeaveGroup: the group is Empty, its offsets may all go
        c = None
        result = admin.delete_group_offsets(group, [KTP(topic, 0)])
        assert {(tp.topic, tp.partition): e.__name__ for tp, e in result.items()} == {
            (topic, 0): "NoError"
        }
        assert admin.list_group_offsets({group: None})[group] == {}
        with pytest.raises(GroupIdNotFoundError):  # its last offset gone, the group is Dead
            admin.delete_group_offsets(group, [KTP(topic, 0)])
    finally:
        if c is not None:
            c.close()
        admin.close()


def test_delete_group_offsets_of_a_kip848_consumer_group(cluster, topic):
    """Kafka 4's ``OffsetMetadataManager.deleteOffsets`` for a ``consumer`` group: the topics its
    members' regex resolved to are GROUP_SUBSCRIBED_TO_TOPIC, other topics lose their offsets,
    and once Empty without offsets the group is still there (no GROUP_ID_NOT_FOUND)."""
    from confluent_kafka import Consumer
    from kafka import TopicPartition as KTP
    from kafka.structs import OffsetAndMetadata

    prefix = f"gapi848{uuid.uuid4().hex[:6]}"
    matched = create_topic(cluster, partitions=1, rf=3, name=f"{prefix}-matched")
    other = create_topic(cluster, partitions=1, rf=3, name=f"other-{prefix}")
    group = group_name("delete848")
    admin = kp_admin(cluster)
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "group.protocol": "consumer",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    closed = False
    try:
        c.subscribe([f"^{prefix}-.*"])

        def assigned() -> set[tuple[str, int]]:
            c.poll(0.2)
            return {(tp.topic, tp.partition) for tp in c.assignment()}

        wait_until(lambda: assigned() == {(matched, 0)}, 60, lambda: f"assignment {assigned()}")
        c.close()  # the consumer group is Empty: offsets may be committed from outside it
        closed = True
        result = admin.alter_group_offsets(
            group, {KTP(matched, 0): OffsetAndMetadata(1, "", 0), KTP(other, 0): OffsetAndMetadata(2, "", 0)})
        assert all(e.__name__ == "NoError" for e in result.values()), result
        c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "group.protocol": "consumer",
                      "enable.auto.commit": False, "auto.offset.reset": "earliest"})
        closed = False
        c.subscribe([f"^{prefix}-.*"])
        wait_until(lambda: assigned() == {(matched, 0)}, 60, lambda: f"assignment {assigned()}")
        result = admin.delete_group_offsets(group, [KTP(matched, 0), KTP(other, 0)])
        assert {(tp.topic, tp.partition): e.__name__ for tp, e in result.items()} == {
            (matched, 0): "GroupSubscribedToTopicError",
            (other, 0): "NoError",
        }
        left = admin.list_group_offsets({group: None})[group]
        assert {(tp.topic, om.offset) for tp, om in left.items()} == {(matched, 1)}
        c.close()
        closed = True
        for _ in range(2):  # the second time: the Empty group without offsets is still there
            result = admin.delete_group_offsets(group, [KTP(matched, 0)])
            assert {(tp.topic, tp.partition): e.__name__ for tp, e in result.items()} == {(matched, 0): "NoError"}
        assert admin.list_group_offsets({group: None})[group] == {}
    finally:
        if not closed:
            c.close()
        admin.close()


def test_cli_delete_offsets(cluster, topic):
    from kafka import TopicPartition as KTP
    from kafka.structs import OffsetAndMetadata

    group = group_name("cli")
    admin = kp_admin(cluster)
    try:
        admin.alter_group_offsets(
            group, {KTP(topic, p): OffsetAndMetadata(p + 1, "", -1) for p in range(3)}
        )
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "mafka.cli.main",
                "consumer-groups",
                "--bootstrap-server",
                cluster.bootstrap,
                "--delete-offsets",
                "--group",
                group,
                "--topic",
                f"{topic}:0,2",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0, out.stdout + out.stderr
        row = "%-30s %-15s %-15s"
        assert out.stdout.split("\n") == [
            f"Request succeed for deleting offsets with topic {topic}:0,2 group {group}",
            "",
            row % ("TOPIC", "PARTITION", "STATUS"),
            row % (topic, 0, "Successful"),
            row % (topic, 2, "Successful"),
            "",
        ]
        left = admin.list_group_offsets({group: None})[group]
        assert {tp.partition: om.offset for tp, om in left.items()} == {1: 2}
    finally:
        admin.close()


def test_deleted_offsets_stay_deleted_after_the_coordinator_is_killed(cluster, topic):
    """Runs last: it kills a broker (restarted at the end)."""
    from kafka import TopicPartition as KTP
    from kafka.structs import OffsetAndMetadata

    group = group_name("durable")
    admin = kp_admin(cluster)
    ck = ck_admin(cluster)
    killed = None
    try:
        admin.alter_group_offsets(
            group, {KTP(topic, p): OffsetAndMetadata(10 + p, "", 0) for p in range(3)}
        )
        result = admin.delete_group_offsets(group, [KTP(topic, 0), KTP(topic, 1)])
        assert all(e.__name__ == "NoError" for e in result.values()), result
        killed = ck.describe_consumer_groups([group])[group].result(30).coordinator.id
        del ck  # no librdkafka client lives through the kill (see below)
        cluster.kill(killed)

        # kafka-python asks, a fresh client per attempt.  Not librdkafka: an admin request
        # that times out while its coordinator is unreachable aborts the process once the
        # coordinator is found again (`rd_kafka_enq_once_del_source_return: eonce->refcnt > 0`,
        # confluentinc/librdkafka#4605; real Kafka triggers it the same way — reproduced here
        # with list_consumer_group_offsets(request_timeout=0.001) on a healthy cluster).
        # The killed broker cannot answer: an answer comes from the new coordinator,
        # which loaded the group from its own replica of __consumer_offsets.
        def after_failover():
            fresh = kp_admin(cluster)
            try:
                found = fresh.list_group_offsets({group: [KTP(topic, p) for p in range(3)]})[group]
            finally:
                fresh.close()
            return sorted((tp.partition, om.offset) for tp, om in found.items())

        offsets = wait_for(after_failover, timeout=90, what="a new coordinator answering")
        assert offsets == [(0, -1), (1, -1), (2, 12)]
    finally:
        admin.close()
        if killed is not None:
            cluster.restart(killed)
            cluster.wait_serving(killed)


# -- commit fencing during rebalances (Kafka's GroupCoordinator.handleCommitOffsets) --------------


def test_offset_commits_are_fenced_by_generation_and_membership_during_rebalances(cluster: LocalCluster) -> None:
    """Kafka's rules, on a real broker: a member's commit is accepted while the group is Stable or
    PreparingRebalance with its current generation; refused with ILLEGAL_GENERATION for an old generation,
    REBALANCE_IN_PROGRESS while the new generation awaits its SyncGroup, UNKNOWN_MEMBER_ID once the
    member has left. Only accepted commits are visible to OffsetFetch."""
    import threading

    from tests.harness.raw_client import BlockingClient

    topic = create_topic(cluster, partitions=1, rf=1)  # earlier tests here may leave a broker down
    group = f"fence-{uuid.uuid4().hex[:8]}"
    a, b = BlockingClient(cluster.bootstrap, "member-a"), BlockingClient(cluster.bootstrap, "member-b")
    try:
        deadline = time.monotonic() + 60
        while True:  # the first group request creates __consumer_offsets: COORDINATOR_NOT_AVAILABLE meanwhile
            coordinator = a.call(10, 1, {"key": group, "key_type": 0})
            if coordinator.error_code == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert coordinator.error_code == 0, coordinator
        a.metadata()
        b.metadata()
        node = coordinator.node_id

        def join(client: BlockingClient, member_id: str) -> object:
            body = {"group_id": group, "session_timeout_ms": 30000, "rebalance_timeout_ms": 30000,
                    "member_id": member_id, "group_instance_id": None, "protocol_type": "consumer",
                    "protocols": [{"name": "range", "metadata": b""}]}
            joined = client.call(11, 5, body, broker_id=node, timeout=60)
            deadline = time.monotonic() + 30
            while joined.error_code in (14, 15) and time.monotonic() < deadline:  # the coordinator is loading
                time.sleep(0.2)
                joined = client.call(11, 5, body, broker_id=node, timeout=60)
            if joined.error_code == 79:  # MEMBER_ID_REQUIRED (KIP-394): join again with the given id
                body["member_id"] = joined.member_id
                joined = client.call(11, 5, body, broker_id=node, timeout=60)
            assert joined.error_code == 0, joined
            return joined

        def sync(client: BlockingClient, member_id: str, generation: int, assignments: list) -> None:
            synced = client.call(14, 3, {"group_id": group, "generation_id": generation, "member_id": member_id,
                                         "group_instance_id": None, "assignments": assignments},
                                 broker_id=node, timeout=60)
            assert synced.error_code == 0, synced

        def commit(member_id: str, generation: int, offset: int) -> int:
            body = {"group_id": group, "generation_id_or_member_epoch": generation, "member_id": member_id,
                    "group_instance_id": None,
                    "topics": [{"name": topic, "partitions": [
                        {"partition_index": 0, "committed_offset": offset, "committed_leader_epoch": -1,
                         "committed_metadata": None}]}]}
            return a.call(8, 7, body, broker_id=node).topics[0].partitions[0].error_code

        def committed() -> int:
            got = a.call(9, 5, {"group_id": group, "topics": [{"name": topic, "partition_indexes": [0]}]},
                         broker_id=node)
            return got.topics[0].partitions[0].committed_offset

        first = join(a, "")
        member_a, gen1 = first.member_id, first.generation_id
        sync(a, member_a, gen1, [{"member_id": member_a, "assignment": b""}])
        assert commit(member_a, gen1, 10) == 0  # Stable, current generation
        assert committed() == 10

        joined_b: list = []
        waiter = threading.Thread(target=lambda: joined_b.append(join(b, "")))
        waiter.start()
        deadline = time.monotonic() + 30
        while True:  # B's join moves the group to PreparingRebalance
            state = a.call(15, 4, {"groups": [group], "include_authorized_operations": False},
                           broker_id=node).groups[0].group_state
            if state == "PreparingRebalance" or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert state == "PreparingRebalance"
        assert commit(member_a, gen1, 20) == 0  # still allowed while the group prepares its rebalance
        second = join(a, member_a)
        waiter.join(60)
        assert joined_b and not waiter.is_alive()
        gen2 = second.generation_id
        assert gen2 == gen1 + 1
        assert commit(member_a, gen1, 99) == ErrorCode.ILLEGAL_GENERATION
        assert commit(member_a, gen2, 99) == ErrorCode.REBALANCE_IN_PROGRESS  # CompletingRebalance
        member_b = joined_b[0].member_id
        assignments = [{"member_id": m, "assignment": b""} for m in (member_a, member_b)]
        leader_is_a = second.leader == member_a
        sync_b = threading.Thread(target=lambda: sync(b, member_b, gen2, [] if leader_is_a else assignments))
        sync_b.start()
        sync(a, member_a, gen2, assignments if leader_is_a else [])
        sync_b.join(60)
        assert commit(member_a, gen2, 30) == 0
        left = a.call(13, 3, {"group_id": group, "members": [{"member_id": member_a, "group_instance_id": None}]},
                      broker_id=node)
        assert left.error_code == 0 and left.members[0].error_code == 0
        assert commit(member_a, gen2, 99) == ErrorCode.UNKNOWN_MEMBER_ID
        assert committed() == 30
    finally:
        a.close()
        b.close()
