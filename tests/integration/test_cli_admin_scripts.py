"""The rest of Kafka 2.8's everyday admin scripts, as installed ``kafka-*.sh``, against a real 3-broker cluster.

* ``kafka-broker-api-versions.sh``: every broker's ApiVersions in Kafka 2.8's format;
* ``kafka-delete-records.sh``: the log start offset really moves (ListOffsets earliest, a consumer);
* ``kafka-reassign-partitions.sh --zookeeper``: ``--generate``, ``--execute`` (``/admin/reassign_partitions``
  with throttles) and ``--verify`` until done; the brokers really move the replicas (confluent-kafka
  metadata, the records readable at the new leader) and ``--verify`` removes the throttles;
* ``kafka-preferred-replica-election.sh``: after leadership moved away (a broker killed and restarted),
  ``--zookeeper`` and then ``--bootstrap-server`` bring the preferred leaders back.

One cluster for the module (auto leader rebalance off, so only the tools move leaders; a 6 s
ZooKeeper session so a SIGKILLed broker is noticed quickly).  Every wait is bounded; the machine
may be loaded, so the bounds are generous.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from mafka.broker.handlers.api_versions import SASL_APIS
from mafka.cli.broker_api_versions import format_api_versions
from mafka.wire.registry import api_versions_entries
from tests.harness.cluster import ClusterSpec, LocalCluster
from tests.harness.waits import wait_dead, wait_until

pytestmark = pytest.mark.integration

BIN = Path(sys.executable).parent
SETTINGS = {
    "zookeeper.session.timeout.ms": "6000",
    "auto.leader.rebalance.enable": "false",  # leaders move only when the tests move them
}


CLUSTER = ClusterSpec(settings=SETTINGS, shared=False)  # stops and restarts brokers, throttles replication


def script(name: str, *argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / name), *argv], capture_output=True, text=True, timeout=timeout)


def zk(cluster: LocalCluster) -> str:
    return f"127.0.0.1:{cluster.zookeeper_port}"


def poll(check: Any, what: str, timeout: float = 60.0) -> Any:
    return wait_until(check, timeout, what, interval=0.3)


def admin(cluster: LocalCluster) -> AdminClient:
    return AdminClient({"bootstrap.servers": cluster.bootstrap})


def partitions(cluster: LocalCluster, topic: str) -> dict[int, Any]:
    """partition → confluent-kafka PartitionMetadata (leader, replicas, isrs)."""
    md = admin(cluster).list_topics(topic, timeout=20)
    t = md.topics[topic]
    return {} if t.error is not None else dict(t.partitions)


def create_topic(cluster: LocalCluster, topic: str, assignment: dict[int, list[int]]) -> None:
    client = admin(cluster)  # kept alive until the future is done
    futures = client.create_topics(
        [NewTopic(topic, num_partitions=len(assignment),
                  replica_assignment=[assignment[p] for p in sorted(assignment)])], request_timeout=60)
    futures[topic].result(90)
    poll(lambda: (parts := partitions(cluster, topic)) and len(parts) == len(assignment) and all(
        parts[p].leader == r[0] and sorted(parts[p].isrs) == sorted(r) for p, r in assignment.items()),
        f"{topic} online with full ISRs")


def produce(cluster: LocalCluster, topic: str, partition: int, count: int) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "message.timeout.ms": 60000})
    errors: list[Any] = []
    for i in range(count):
        producer.produce(topic, f"v{i}".encode(), partition=partition,
                         on_delivery=lambda err, msg: errors.append(err))
    assert producer.flush(90) == 0, "no delivery reports in time"
    assert errors == [None] * count, errors


def read_values(cluster: LocalCluster, topic: str, partition: int, count: int) -> list[tuple[int, bytes]]:
    """(offset, value) of the first ``count`` records of the partition from its log start (earliest)."""
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"read-{topic}-{partition}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        consumer.assign([TopicPartition(topic, partition, -2)])  # OFFSET_BEGINNING
        got: list[Any] = []
        deadline = time.monotonic() + 60
        while len(got) < count and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is not None and msg.error() is None:
                got.append(msg)
        assert len(got) >= count, f"read {len(got)} of {count} records of {topic}-{partition}"
        return [(m.offset(), m.value()) for m in got[:count]]
    finally:
        consumer.close()


def watermarks(cluster: LocalCluster, topic: str, partition: int) -> tuple[int, int]:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "watermarks"})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=30)
    finally:
        consumer.close()


def dynamic_configs(cluster: LocalCluster, resource: ConfigResource) -> dict[str, str]:
    """The dynamically set configs of a topic or broker (DescribeConfigs; sources 1–3)."""
    client = admin(cluster)
    entries = client.describe_configs([resource], request_timeout=30)[resource].result(40)
    return {name: e.value for name, e in entries.items()
            if int(getattr(e.source, "value", e.source)) in (1, 2, 3) and e.value}


# --------------------------------------------------------------------------- broker-api-versions


def test_broker_api_versions_lists_every_broker(cluster: LocalCluster) -> None:
    r = script("kafka-broker-api-versions.sh", "--bootstrap-server", cluster.bootstrap.split(",")[1])
    assert (r.returncode, r.stderr) == (0, ""), r
    headers = re.findall(r"^(\S+):(\d+) \(id: (\d+) rack: null\) -> \($", r.stdout, re.MULTILINE)
    assert [int(i) for _, _, i in headers] == [1, 2, 3]
    for host, port, broker_id in headers:
        b = cluster.broker(int(broker_id))
        assert (host, int(port)) == (b["host"], b["port"])
    blocks = r.stdout.split("\n)\n")
    assert blocks[-1] == "" and len(blocks) == 4
    # a PLAINTEXT listener does not advertise SaslHandshake and SaslAuthenticate
    expected = format_api_versions(
        [(e["api_key"], e["min_version"], e["max_version"]) for e in api_versions_entries()
         if e["api_key"] not in SASL_APIS])
    for block in blocks[:3]:
        assert block.split(" -> ", 1)[1] + "\n)" == expected
        assert "\n\tProduce(0): 0 to 9 [usable: 9],\n" in block
        assert "\n\tMetadata(3): 0 to 12 [usable: 11],\n" in block, "usable: what Kafka 2.8's client speaks"
        assert "\n\tLeaderAndIsr(4): UNSUPPORTED,\n" in block


# --------------------------------------------------------------------------- delete-records


def test_delete_records_moves_the_log_start_offset(cluster: LocalCluster, tmp_path: Path) -> None:
    topic = "delrec"
    create_topic(cluster, topic, {0: [1, 2, 3], 1: [2, 3, 1]})
    produce(cluster, topic, 0, 10)
    produce(cluster, topic, 1, 6)
    assert watermarks(cluster, topic, 0) == (0, 10)
    offsets = tmp_path / "offsets.json"
    offsets.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "offset": 4},
        {"topic": topic, "partition": 1, "offset": -1},
    ]}))
    r = script("kafka-delete-records.sh", "--bootstrap-server", cluster.bootstrap, "--offset-json-file", str(offsets))
    assert r.returncode == 0, r
    # stderr (a pipe here) holds Mafka's progress summary alone; stdout is Kafka's
    assert re.fullmatch(r"delete-records: 2/2 partitions done \(100%\) in \d+\.\d s\n", r.stderr), r
    assert r.stdout.splitlines() == [
        "Executing records delete operation",
        "Records delete operation completed:",
        f"partition: {topic}-0\tlow_watermark: 4",
        f"partition: {topic}-1\tlow_watermark: 6",
    ]
    assert watermarks(cluster, topic, 0) == (4, 10)
    assert watermarks(cluster, topic, 1) == (6, 6)
    assert read_values(cluster, topic, 0, 6) == [(o, f"v{o}".encode()) for o in range(4, 10)]

    offsets.write_text(json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "offset": 99}]}))
    r = script("kafka-delete-records.sh", "--bootstrap-server", cluster.bootstrap, "--offset-json-file", str(offsets))
    assert r.returncode == 0, r
    assert r.stdout.splitlines()[-1] == (
        f"partition: {topic}-0\terror: org.apache.kafka.common.errors.OffsetOutOfRangeException: "
        "The requested offset is not within the range of offsets maintained by the server.")
    assert watermarks(cluster, topic, 0) == (4, 10)


# --------------------------------------------------------------------------- reassign-partitions --zookeeper


def test_zookeeper_reassignment_moves_the_replicas(cluster: LocalCluster, tmp_path: Path) -> None:
    topic = "zkmove"
    create_topic(cluster, topic, {0: [1], 1: [2]})
    produce(cluster, topic, 0, 20)
    produce(cluster, topic, 1, 20)

    to_move = tmp_path / "topics.json"
    to_move.write_text(json.dumps({"version": 1, "topics": [{"topic": topic}]}))
    r = script("kafka-reassign-partitions.sh", "--zookeeper", zk(cluster), "--generate",
               "--topics-to-move-json-file", str(to_move), "--broker-list", "2,3")
    assert r.returncode == 0, r
    lines = r.stdout.splitlines()
    assert lines[:3] == [
        "Warning: --zookeeper is deprecated, and will be removed in a future version of Kafka.",
        "Current partition replica assignment",
        f'{{"version":1,"partitions":[{{"topic":"{topic}","partition":0,"replicas":[1],"log_dirs":["any"]}},'
        f'{{"topic":"{topic}","partition":1,"replicas":[2],"log_dirs":["any"]}}]}}',
    ]
    assert lines[4] == "Proposed partition reassignment configuration"
    proposed = json.loads(lines[5])["partitions"]
    assert sorted(p["replicas"][0] for p in proposed) == [2, 3]

    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": [2, 3]},
        {"topic": topic, "partition": 1, "replicas": [3, 1]},
    ]}))
    r = script("kafka-reassign-partitions.sh", "--zookeeper", zk(cluster), "--execute",
               "--reassignment-json-file", str(plan), "--throttle", "50000000")
    assert r.returncode == 0, r
    assert r.stdout.splitlines() == [
        "Warning: --zookeeper is deprecated, and will be removed in a future version of Kafka.",
        "Current partition replica assignment",
        "",
        lines[2],
        "",
        "Save this to use as the --reassignment-json-file option during rollback",
        "Warning: You must run --verify periodically, until the reassignment completes, to ensure the "
        "throttle is removed.",
        "The inter-broker throttle limit was set to 50000000 B/s",
        f"Successfully started partition reassignments for {topic}-0,{topic}-1",
    ]
    # The throttles sit where Kafka keeps them until --verify sees the reassignment done.
    throttled = {"leader.replication.throttled.replicas": "0:1,1:2",
                 "follower.replication.throttled.replicas": "0:2,0:3,1:1,1:3"}
    poll(lambda: dynamic_configs(cluster, ConfigResource("topic", topic)) == throttled, "the topic throttles")
    poll(lambda: dynamic_configs(cluster, ConfigResource("broker", "3")).get("leader.replication.throttled.rate")
         == "50000000", "broker 3's throttle rate")

    def verified() -> str | None:
        v = script("kafka-reassign-partitions.sh", "--zookeeper", zk(cluster), "--verify",
                   "--reassignment-json-file", str(plan))
        assert v.returncode == 0, v
        moved = re.fullmatch(r"reassign-partitions: (\d)/2 partitions moved \(\d+%\) in \d+\.\d s\n", v.stderr)
        assert moved, v.stderr
        if "still in progress" in v.stdout:
            return None
        assert moved.group(1) == "2", "every partition complete: 2/2 on stderr too"
        return v.stdout

    out = poll(verified, "the reassignment to complete", timeout=120).splitlines()
    assert out == [
        "Warning: --zookeeper is deprecated, and will be removed in a future version of Kafka.",
        "Warning: because you are using the deprecated --zookeeper option, the results may be incomplete.  "
        "Use --bootstrap-server instead for more accurate results.",
        "Status of partition reassignment:",
        f"Reassignment of partition {topic}-0 is complete.",
        f"Reassignment of partition {topic}-1 is complete.",
        "Clearing broker-level throttles on brokers 1,2,3",
        f"Clearing topic-level throttles on topic {topic}",
    ]
    parts = poll(lambda: (p := partitions(cluster, topic)) and all(
        sorted(p[i].isrs) == sorted(p[i].replicas) for i in (0, 1)) and p, "full ISRs on the new replicas")
    assert parts[0].replicas == [2, 3] and parts[1].replicas == [3, 1]
    assert parts[0].leader in (2, 3) and parts[1].leader in (3, 1)
    assert read_values(cluster, topic, 0, 20) == [(o, f"v{o}".encode()) for o in range(20)], "the data moved too"
    poll(lambda: dynamic_configs(cluster, ConfigResource("topic", topic)) == {}, "the topic throttles removed")
    for b in ("1", "2", "3"):
        poll(lambda b=b: "leader.replication.throttled.rate" not in dynamic_configs(
            cluster, ConfigResource("broker", b)), f"broker {b}'s throttle removed")


# --------------------------------------------------------------------------- preferred-replica-election


def _move_leadership_off(cluster: LocalCluster, topic: str, victim: int, partition: int) -> None:
    """Stops ``victim`` (SIGTERM: a controlled shutdown hands its leadership over at once, where a SIGKILL
    waits out its ZooKeeper session), then restarts it and waits for full ISRs."""
    pid = cluster.broker(victim)["pid"]
    cluster.kill(victim, signal.SIGTERM)
    wait_dead(pid)
    poll(lambda: partitions(cluster, topic)[partition].leader not in (-1, victim),
         f"leadership of {topic}-{partition} to move off broker {victim}")
    cluster.restart(victim)
    poll(lambda: all(len(p.isrs) == 3 for p in partitions(cluster, topic).values()),
         f"broker {victim} back in every ISR of {topic}", timeout=120)
    assert partitions(cluster, topic)[partition].leader != victim, "nothing moved it back yet"


def test_preferred_replica_election_through_both_forms(cluster: LocalCluster, tmp_path: Path) -> None:
    topic = "pref"
    preferred = {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]}
    create_topic(cluster, topic, preferred)
    controller = cluster.controller_id()
    first, second = [b for b in (1, 2, 3) if b != controller]
    led_by = {r[0]: p for p, r in preferred.items()}

    def leaders() -> dict[int, int]:
        return {p: part.leader for p, part in partitions(cluster, topic).items()}

    # --zookeeper, for the partitions of a JSON file (one of which does not exist).
    _move_leadership_off(cluster, topic, first, led_by[first])
    election = tmp_path / "election.json"
    election.write_text(json.dumps({"partitions": [{"topic": topic, "partition": led_by[first]},
                                                   {"topic": topic, "partition": 9}]}))
    r = script("kafka-preferred-replica-election.sh", "--zookeeper", zk(cluster),
               "--path-to-json-file", str(election))
    assert (r.returncode, r.stderr) == (0, ""), r
    assert r.stdout.splitlines() == [
        "This tool is deprecated. Please use kafka-leader-election tool. Tracking issue: KAFKA-8405",
        "Warning: --zookeeper is deprecated and will be removed in a future version of Kafka.",
        "Use --bootstrap-server instead to specify a broker to connect to.",
        f"Created preferred replica election path with {topic}-{led_by[first]}",
        f"Successfully started preferred replica election for partitions Set({topic}-{led_by[first]})",
        f"Skipping preferred replica leader election for partition {topic}-9 since it doesn't exist.",
    ]
    poll(lambda: leaders() == {0: 1, 1: 2, 2: 3}, "the controller to elect the preferred leader")

    # --bootstrap-server, every partition of the cluster (no file).
    _move_leadership_off(cluster, topic, second, led_by[second])
    r = script("kafka-preferred-replica-election.sh", "--bootstrap-server", cluster.bootstrap)
    assert (r.returncode, r.stderr) == (0, ""), r
    lines = r.stdout.splitlines()
    assert lines[0] == "This tool is deprecated. Please use kafka-leader-election tool. Tracking issue: KAFKA-8405"
    prefix = "Successfully completed preferred leader election for partitions "
    assert lines[1].startswith(prefix), lines
    assert f"{topic}-{led_by[second]}" in lines[1][len(prefix):].split(", ")
    assert f"{topic}-{led_by[first]}" not in lines[1], "already led by its preferred replica"
    poll(lambda: leaders() == {0: 1, 1: 2, 2: 3}, "every preferred leader back in the metadata")
