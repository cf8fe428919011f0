"""The share-partition metrics on a real cluster's ``/metrics``, driven by a confluent-kafka ShareConsumer.

A ShareConsumer in explicit acknowledgement mode polls records of a one-partition topic: the
partition leader's ``mafka_share_partition_acquired_records`` (the locks in flight) and
``kafka_server_sharepartitionmetrics_inflightmessagecount`` count them.  It RELEASEs them and
polls again: they come back, counted by ``mafka_share_redelivered_records_total`` and
``kafka_server_sharegroupmetrics_recordacknowledgements_total{ackType="Release"}``.  Once it
ACCEPTs them, no lock is left.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.harness.chaos import create_topic
from tests.harness.cluster import ClusterSpec, LocalCluster
from tests.harness.waits import wait_until
from tests.integration.test_metrics import Samples, scrape_all, total
from tests.integration.test_share_group_delete import (
    _admin,
    _applied_everywhere,
    _produce,
    _set_earliest,
)

pytestmark = pytest.mark.integration

CLUSTER = ClusterSpec()  # shared: uuid topic and group names, no broker config changed, every broker stays up


def _sum(scrapes: dict[int, Samples], name: str, **labels: str) -> float:
    return sum(total(s, name, **labels) for s in scrapes.values())


def _poll_batch(consumer: Any) -> list[Any]:
    got: list[Any] = []

    def some() -> bool:
        got.extend(m for m in consumer.poll(timeout=0.5) or [] if m.error() is None)
        return bool(got)

    wait_until(some, 60, "the share consumer receives records", interval=0.1)
    return got


def test_share_metrics_follow_locks_and_redeliveries(cluster: LocalCluster) -> None:
    from confluent_kafka import AcknowledgeType, ShareConsumer

    topic = create_topic(cluster, partitions=1, rf=3)
    group = f"share-metrics-{uuid.uuid4().hex[:8]}"
    values = [f"m{i}-{uuid.uuid4().hex[:6]}".encode() for i in range(10)]
    _produce(cluster, topic, values)
    admin = _admin(cluster)
    _set_earliest(admin, group)
    _applied_everywhere(admin, cluster, group)
    labels = {"group": group, "topic": topic, "partition": "0"}
    releases_before = _sum(scrape_all(cluster), "kafka_server_sharegroupmetrics_recordacknowledgements_total",
                           ackType="Release")

    consumer = ShareConsumer({"bootstrap.servers": cluster.bootstrap, "group.id": group,
                              "share.acknowledgement.mode": "explicit"})
    try:
        consumer.subscribe([topic])
        first = _poll_batch(consumer)
        scrapes = scrape_all(cluster)
        assert _sum(scrapes, "mafka_share_partition_acquired_records", **labels) == len(first)
        assert _sum(scrapes, "kafka_server_sharepartitionmetrics_inflightmessagecount", **labels) >= len(first)
        assert _sum(scrapes, "mafka_share_redelivered_records_total", **labels) == 0

        for m in first:
            consumer.acknowledge(m, AcknowledgeType.RELEASE)
        consumer.commit_sync()
        again = _poll_batch(consumer)
        redelivered = {bytes(m.value()) for m in again} & {bytes(m.value()) for m in first}
        assert redelivered, "released records come back first"
        scrapes = scrape_all(cluster)
        assert _sum(scrapes, "mafka_share_redelivered_records_total", **labels) == len(redelivered)
        assert _sum(scrapes, "mafka_share_partition_acquired_records", **labels) == len(again)
        released = _sum(scrapes, "kafka_server_sharegroupmetrics_recordacknowledgements_total", ackType="Release")
        assert released - releases_before >= len(first)

        for m in again:
            consumer.acknowledge(m, AcknowledgeType.ACCEPT)
        consumer.commit_sync()
        assert _sum(scrape_all(cluster), "mafka_share_partition_acquired_records", **labels) == 0
    finally:
        consumer.close()
