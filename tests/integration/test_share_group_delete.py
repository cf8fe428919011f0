"""DeleteGroups (42) of a share group on a real cluster, driven by confluent-kafka's AdminClient (Kafka 4.2).

A share group set to ``share.auto.offset.reset=earliest`` consumes (and implicitly accepts)
every record of a topic.  While its member is live, ``delete_consumer_groups`` answers
NON_EMPTY_GROUP; once the member left the group is deleted: its records are tombstoned and its
share-partition state is deleted at the share coordinator (DeleteShareGroupState), so the
group is no longer listed, a second delete is GROUP_ID_NOT_FOUND, and a new member of the
same group id starts from scratch — from the earliest offset — and is given every record
again.  ``mafka share-groups --delete`` deletes a share group the same way.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from typing import Any

import pytest

from tests.harness.chaos import create_topic
from tests.harness.cluster import ClusterSpec, LocalCluster
from tests.harness.waits import wait_until

pytestmark = pytest.mark.integration

CLUSTER = ClusterSpec()  # shared: uuid topic and group names, no broker config changed, every broker stays up

WAIT = 30


def _admin(cluster: LocalCluster) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": cluster.bootstrap})


def _set_earliest(admin: Any, group: str) -> None:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=WAIT)


def _applied_everywhere(admin: Any, cluster: LocalCluster, group: str) -> None:
    """Wait until every broker describes the override (it applies what it describes)."""
    from tests.integration.test_group_configs import _every_broker_applies

    wait_until(lambda: _every_broker_applies(cluster, group, "share.auto.offset.reset", "earliest"), WAIT,
               "every broker applies share.auto.offset.reset=earliest", interval=0.2)


def _produce(cluster: LocalCluster, topic: str, values: list[bytes]) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 0})
    for v in values:
        producer.produce(topic, v, partition=0)
    assert producer.flush(30) == 0


def _consume_all(cluster: LocalCluster, group: str, topic: str, values: list[bytes], close: bool = True) -> Any:
    """A ShareConsumer of *group* that receives every one of *values* (returned open unless *close*)."""
    from confluent_kafka import ShareConsumer

    consumer = ShareConsumer({"bootstrap.servers": cluster.bootstrap, "group.id": group})
    seen: list[bytes] = []
    try:
        consumer.subscribe([topic])

        def all_received() -> bool:
            for message in consumer.poll(timeout=0.5) or []:
                if message.error() is None:
                    seen.append(bytes(message.value() or b""))
            return set(seen) >= set(values)

        wait_until(all_received, 90, lambda: f"{len(values)} records, got {len(set(seen))}", interval=0.1)
        # One more poll acknowledges (implicitly) what the last one delivered.
        consumer.poll(timeout=0.5)
    except BaseException:
        consumer.close()
        raise
    assert sorted(set(seen)) == sorted(values)
    if close:
        consumer.close()
    return consumer


def _delete_error(admin: Any, group: str) -> Any:
    """The group's error of a DeleteGroups (None: deleted)."""
    from confluent_kafka import KafkaException

    try:
        admin.delete_consumer_groups([group])[group].result(WAIT)
    except KafkaException as exc:
        return exc.args[0].code()
    return None


def _listed(cluster: LocalCluster, group: str) -> bool:
    r = subprocess.run(
        [sys.executable, "-m", "mafka.cli.main", "share-groups", "--bootstrap-server", cluster.bootstrap, "--list"],
        capture_output=True, text=True, timeout=60,
    )
    assert r.returncode == 0, r
    return group in r.stdout.split()


def test_delete_a_share_group(cluster: LocalCluster) -> None:
    from confluent_kafka import KafkaError

    admin = _admin(cluster)
    topic = create_topic(cluster, partitions=1, rf=3)
    group = f"share-del-{uuid.uuid4().hex[:8]}"
    values = [f"v{i}-{uuid.uuid4().hex[:6]}".encode() for i in range(10)]
    _produce(cluster, topic, values)
    _set_earliest(admin, group)
    _applied_everywhere(admin, cluster, group)

    member = _consume_all(cluster, group, topic, values, close=False)
    try:
        assert _delete_error(admin, group) == KafkaError.NON_EMPTY_GROUP
        assert _listed(cluster, group)
    finally:
        member.close()

    # The member's leave is answered before close returns, so the group is empty now; a
    # coordinator that has not written the leave yet would say NON_EMPTY_GROUP once more.
    outcome: list[Any] = []
    wait_until(lambda: outcome.append(_delete_error(admin, group)) or outcome[-1] != KafkaError.NON_EMPTY_GROUP,
               WAIT, "the share group is empty", interval=0.5)
    assert outcome[-1] is None
    assert not _listed(cluster, group)
    assert _delete_error(admin, group) == KafkaError.GROUP_ID_NOT_FOUND

    # The same group id again: a new group, whose share-partition starts at the earliest offset.
    _consume_all(cluster, group, topic, values)


def _cli_delete(cluster: LocalCluster, *groups: str) -> subprocess.CompletedProcess[str]:
    argv = [a for g in groups for a in ("--group", g)]
    return subprocess.run(
        [sys.executable, "-m", "mafka.cli.main", "share-groups", "--bootstrap-server", cluster.bootstrap,
         "--timeout", "15000", "--delete", *argv],
        capture_output=True, text=True, timeout=60,
    )


def test_mafka_share_groups_delete(cluster: LocalCluster) -> None:
    topic = create_topic(cluster, partitions=1, rf=3)
    group = f"share-cli-del-{uuid.uuid4().hex[:8]}"
    values = [f"c{i}-{uuid.uuid4().hex[:6]}".encode() for i in range(5)]
    _produce(cluster, topic, values)
    admin = _admin(cluster)
    _set_earliest(admin, group)
    _applied_everywhere(admin, cluster, group)

    member = _consume_all(cluster, group, topic, values, close=False)
    try:
        r = _cli_delete(cluster, group)
        assert r.returncode == 1, r
        assert r.stdout.splitlines() == [
            "", "Error: Deletion of some share groups failed:",
            f"* Group '{group}' could not be deleted due to: "
            f"org.apache.kafka.common.errors.GroupNotEmptyException: Share group '{group}' is not EMPTY.",
        ]
    finally:
        member.close()

    def deleted() -> bool:
        r = _cli_delete(cluster, group)
        return r.returncode == 0 and r.stdout == f"Deletion of requested share groups ('{group}') was successful.\n"

    wait_until(deleted, WAIT, "mafka share-groups --delete deletes the empty share group", interval=0.5)
    assert not _listed(cluster, group)
    r = _cli_delete(cluster, group)
    assert r.returncode == 1 and f"Group '{group}' is not a share group." in r.stdout, r
