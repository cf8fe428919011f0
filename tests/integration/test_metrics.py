"""Every broker's ``/metrics`` on a real 3-broker cluster, after a produce/consume run by confluent-kafka.

Metrics are on by default: ``mafka cluster up`` gives each broker a port and
writes its URL into ``cluster.json``.  Each scrape parses with
``prometheus_client.parser``, holds every name the issue lists (jmx_exporter's
names for Kafka's MBeans, kafka_exporter's for lag), and the values follow
what the test did: messages in summed over the brokers equals what was
produced, and a group's lag — exported once, by its coordinator — equals the
records it left, and grows when it stops consuming while more arrive.
"""

from __future__ import annotations

import json
import time
import urllib.request
import uuid
from collections.abc import Iterable

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from prometheus_client.parser import text_string_to_metric_families

from tests.harness.cluster import ClusterSpec, LocalCluster
from tests.harness.waits import wait_until

pytestmark = pytest.mark.integration

CLUSTER = ClusterSpec()

#: every series the issue names, as exposition sample names
REQUIRED = [
    *(f"kafka_server_brokertopicmetrics_{m}_total" for m in (
        "messagesin", "bytesin", "bytesout", "bytesrejected", "failedproducerequests", "failedfetchrequests",
        "totalproducerequests", "totalfetchrequests")),
    *(f"kafka_server_replicamanager_{m}" for m in (
        "partitioncount", "leadercount", "underreplicatedpartitions", "underminisrpartitioncount",
        "offlinereplicacount")),
    "kafka_server_replicamanager_isrshrinks_total", "kafka_server_replicamanager_isrexpands_total",
    "kafka_server_replicafetchermanager_maxlag",
    *(f"kafka_controller_kafkacontroller_{m}" for m in (
        "activecontrollercount", "offlinepartitionscount", "preferredreplicaimbalancecount", "globaltopiccount",
        "globalpartitioncount")),
    "kafka_controller_controllerstats_leaderelectionrateandtimems_count",
    "kafka_controller_controllerstats_uncleanleaderelections_total",
    "kafka_network_requestmetrics_requests_total",
    *(f"kafka_network_requestmetrics_{t}" for t in (
        "totaltimems", "requestqueuetimems", "localtimems", "remotetimems", "responsesendtimems")),
    *(f"kafka_network_requestmetrics_{t}_count" for t in (
        "totaltimems", "requestqueuetimems", "localtimems", "remotetimems", "responsesendtimems")),
    "kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent",
    *(f"kafka_log_log_{m}" for m in ("size", "numlogsegments", "logstartoffset", "logendoffset")),
    "kafka_log_logflushstats_logflushrateandtimems_count",
    "kafka_server_sessionexpirelistener_zookeeperexpires_total",
    "kafka_server_sessionexpirelistener_zookeeperdisconnects_total",
    "kafka_server_sessionexpirelistener_zookeepersyncconnects_total",
    "kafka_server_zookeeperclientmetrics_zookeeperrequestlatencyms_count",
    "kafka_coordinator_group_groupmetadatamanager_numgroups",
    "kafka_coordinator_group_groupmetadatamanager_numgroupsstable",
    "kafka_server_group_coordinator_metrics_group_completed_rebalance_count",
    "kafka_server_group_coordinator_metrics_offset_commit_count",
    "mafka_transaction_coordinator_transactions", "mafka_transaction_markers_written_total",
]
#: present on at least one broker once the run has happened (each is exported where its subject lives)
SOMEWHERE = ["kafka_topic_partition_current_offset", "kafka_topic_partition_oldest_offset",
             "kafka_consumergroup_lag", "kafka_consumergroup_current_offset", "kafka_consumergroup_group_lag_seconds",
             "kafka_consumergroup_members"]

Samples = list[tuple[str, dict[str, str], float]]


def scrape(url: str) -> Samples:
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    return [(s.name, s.labels, s.value) for f in text_string_to_metric_families(text) for s in f.samples]


def scrape_all(cluster: LocalCluster) -> dict[int, Samples]:
    return {b["id"]: scrape(b["metrics"]) for b in cluster.info["brokers"]}


def total(samples: Iterable[tuple[str, dict[str, str], float]], name: str, **labels: str) -> float:
    return sum(v for n, ls, v in samples if n == name and all(ls.get(k) == x for k, x in labels.items()))


def lag_rows(scrapes: dict[int, Samples], group: str) -> dict[tuple[int, int], float]:
    """(broker, partition) → lag of *group* as each broker exports it."""
    return {(broker, int(ls["partition"])): v for broker, samples in scrapes.items()
            for n, ls, v in samples if n == "kafka_consumergroup_lag" and ls.get("consumergroup") == group}


def test_every_broker_serves_the_kafka_metric_set_and_lag_follows_the_consumer(cluster: LocalCluster) -> None:
    brokers = cluster.info["brokers"]
    assert all(b["metrics"].startswith("http://127.0.0.1:") for b in brokers), brokers
    topic, group = f"metrics-{uuid.uuid4().hex[:8]}", f"metrics-group-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, 3, 3)])[topic].result(30)
    before = scrape_all(cluster)
    in_before = sum(total(s, "kafka_server_brokertopicmetrics_messagesin_total", topic=topic) for s in before.values())
    assert in_before == 0

    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 5})
    n, value = 300, b"v" * 100
    began = time.time()
    for i in range(n):
        producer.produce(topic, key=str(i).encode(), value=value, partition=i % 3)
    assert producer.flush(30) == 0
    produced_at = time.time()

    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    consumer.subscribe([topic])
    read = 0
    try:
        def read_some() -> bool:
            nonlocal read
            for m in consumer.consume(50, timeout=1.0):
                if m.error() is None:
                    read += 1
            return read >= 120

        wait_until(read_some, timeout=60, what="the consumer read 120 records")
        positions = consumer.position(consumer.assignment())
        for tp in positions:
            tp.offset = max(0, tp.offset)  # a partition not read yet commits 0: all three have an offset
        consumer.commit(offsets=positions, asynchronous=False)
        committed = sum(tp.offset for tp in consumer.committed(consumer.assignment(), timeout=10))
        assert len(positions) == 3
    finally:
        consumer.close()

    # Messages in, summed over the brokers (each partition's leader counts its appends), is what was produced.
    def counted() -> bool:
        scrapes = scrape_all(cluster)
        return sum(total(s, "kafka_server_brokertopicmetrics_messagesin_total", topic=topic)
                   for s in scrapes.values()) == n
    wait_until(counted, timeout=10, what="messages in to add up to what was produced")
    scrapes = scrape_all(cluster)
    for broker, samples in scrapes.items():
        names = {name for name, _, _ in samples}
        missing = [name for name in REQUIRED if name not in names]
        assert not missing, f"broker {broker} lacks {missing}"
        idle = total(samples, "kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent")
        assert 0.0 <= idle <= 1.0
        assert total(samples, "kafka_server_replicamanager_partitioncount") >= 3
        # RF 3 on 3 brokers: every broker follows some partition, so its followers fetched from it
        assert total(samples, "kafka_network_requestmetrics_totaltimems_count", request="FetchFollower") > 0
    # every produce request was timed by the leader that answered it
    assert sum(total(s, "kafka_network_requestmetrics_totaltimems_count", request="Produce")
               for s in scrapes.values()) > 0
    assert sum(total(s, "kafka_server_brokertopicmetrics_bytesin_total", topic=topic)
               for s in scrapes.values()) >= n * len(value)
    assert sum(total(s, "kafka_server_brokertopicmetrics_bytesout_total", topic=topic)
               for s in scrapes.values()) >= read * len(value)
    assert sum(total(s, "kafka_controller_kafkacontroller_activecontrollercount") for s in scrapes.values()) == 1
    # the partitions' end offsets, each exported by its leader only
    assert sum(total(s, "kafka_topic_partition_current_offset", topic=topic) for s in scrapes.values()) == n
    # every replica's log end offset: three replicas of each partition
    wait_until(lambda: sum(total(s, "kafka_log_log_logendoffset", topic=topic)
                           for s in scrape_all(cluster).values()) == 3 * n,
               timeout=15, what="every replica to hold every record")

    # Lag: exported by the group's coordinator alone, and equal to the records left.
    def lag_settled() -> bool:
        rows = lag_rows(scrape_all(cluster), group)
        return len(rows) == 3 and sum(rows.values()) == n - committed

    wait_until(lag_settled, timeout=30, what=f"the group's lag to be {n - committed}")
    scrapes = scrape_all(cluster)
    rows = lag_rows(scrapes, group)
    assert len({broker for broker, _ in rows}) == 1, rows
    everywhere = {name for samples in scrapes.values() for name, _, _ in samples}
    assert [name for name in SOMEWHERE if name not in everywhere] == []

    # The group stops consuming; more records arrive: its lag grows by them.
    for i in range(90):
        producer.produce(topic, value=value, partition=i % 3)
    assert producer.flush(30) == 0

    def grown() -> bool:
        return sum(lag_rows(scrape_all(cluster), group).values()) == n + 90 - committed

    wait_until(grown, timeout=30, what="the stopped group's lag to grow by the new records")
    # Lag in seconds: the age of the first record not consumed, which was produced before the
    # first flush returned and after the test began.
    def seconds() -> list[float]:
        return [v for s in scrape_all(cluster).values() for name, ls, v in s
                if name == "kafka_consumergroup_group_lag_seconds" and ls.get("group") == group]

    wait_until(lambda: len(seconds()) == 3, timeout=30, what="lag in seconds per partition")
    # The age is taken when the scrape reads the broker, somewhere between these two instants (on a
    # loaded machine a scrape of three brokers can take over a second: compare with the scrape's own).
    before = time.time()
    ages = seconds()
    after = time.time()
    assert len(ages) == 3, ages
    assert before - produced_at - 0.1 <= max(ages) <= after - began + 0.1, (ages, produced_at, began, before, after)


def test_cluster_json_and_the_health_endpoint(cluster: LocalCluster) -> None:
    state = json.loads((cluster.directory / "cluster.json").read_text())
    urls = [b["metrics"] for b in state["brokers"]]
    assert len(set(urls)) == len(urls) == len(state["brokers"])
    for url in urls:
        health = url.replace("/metrics", "/health")
        assert urllib.request.urlopen(health, timeout=10).read() == b"ok\n"
