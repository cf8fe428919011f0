"""Leadership and replica moves on a real 3-broker cluster: ``mafka leader-election`` and ``mafka reassign-partitions``.

One :class:`LocalCluster` for the module (auto leader rebalance off, so only
the tools move leaders; a 6 s ZooKeeper session so a SIGKILLed broker is
noticed quickly).  The tools run as their own processes, as a user runs them;
the cluster is read through Metadata v4.  Every wait is bounded.

Reassignment needs the new replicas to catch up and join the ISR (the
replica fetcher); the tests wait for that, bounded.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from mafka.errors import ErrorCode
from mafka.wire.records import Record, build_batch, iter_records
from tests.harness.cluster import ClusterSpec, LocalCluster
from tests.harness.raw_client import BlockingClient
from tests.harness.waits import wait_dead, wait_until

pytestmark = pytest.mark.integration

CREATE_TOPICS = 19


CLUSTER = ClusterSpec(settings={"zookeeper.session.timeout.ms": "6000", "auto.leader.rebalance.enable": "false"},
                      shared=False)  # kills and restarts brokers, throttles replication


def mafka(cluster: LocalCluster, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mafka.cli.main", argv[0], "--bootstrap-server", cluster.bootstrap, *argv[1:]],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def poll(check: Any, what: str, timeout: float = 30.0) -> Any:
    return wait_until(check, timeout, what, interval=0.2)


def partitions(cluster: LocalCluster, topic: str) -> dict[int, Any]:
    """partition → Metadata v4 partition (leader_id, replica_nodes, isr_nodes)."""
    with BlockingClient(cluster.bootstrap, timeout_s=10) as client:
        md = client.metadata([topic])
    (t,) = [t for t in md.topics if t.name == topic]
    return {p.partition_index: p for p in t.partitions}


def create(cluster: LocalCluster, assignment: dict[int, list[int]]) -> str:
    topic = f"lead-{uuid.uuid4().hex[:6]}"
    body = {
        "topics": [
            {
                "name": topic,
                "num_partitions": -1,
                "replication_factor": -1,
                "assignments": [{"partition_index": p, "broker_ids": r} for p, r in assignment.items()],
                "configs": [],
            }
        ],
        "timeout_ms": 30000,
        "validate_only": False,
    }
    with BlockingClient(cluster.bootstrap, timeout_s=30) as client:
        response = client.call_controller(CREATE_TOPICS, body, lambda r: [t.error_code for t in r.topics])
    assert response.topics[0].error_code == ErrorCode.NONE, response
    poll(
        lambda: all(
            p.leader_id == assignment[i][0] and sorted(p.isr_nodes) == sorted(assignment[i])
            for i, p in partitions(cluster, topic).items()
        )
        and len(partitions(cluster, topic)) == len(assignment),
        f"{topic} online with full ISRs",
    )
    return topic


def produce(cluster: LocalCluster, topic: str, partition: int, values: list[bytes]) -> None:
    """Writes ``values`` with acks=all to the leader, retrying retriable errors as Kafka clients do.

    A broker's metadata can name the leader before the leader itself has applied the
    controller's LeaderAndIsr (the two requests travel separately), and the leader then
    answers UNKNOWN_TOPIC_OR_PARTITION / NOT_LEADER_OR_FOLLOWER for a moment.
    """
    records = build_batch([Record(i, 1, None, v) for i, v in enumerate(values)])
    body = {
        "acks": -1,
        "timeout_ms": 10000,
        "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": records}]}],
    }

    def attempt() -> bool:
        leader = partitions(cluster, topic)[partition].leader_id
        with BlockingClient(cluster.bootstrap, timeout_s=15) as client:
            client.metadata([])
            response = client.call(0, 7, body, broker_id=leader)
        code = response.responses[0].partition_responses[0].error_code
        # Only errors that mean nothing was written are retried (no duplicate can result).
        not_yet = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.LEADER_NOT_AVAILABLE)
        assert code == 0 or code in not_yet, ErrorCode(code).name
        return code == 0

    poll(attempt, f"a write to {topic}-{partition}")


def read_all(cluster: LocalCluster, topic: str, partition: int, broker_id: int) -> list[bytes]:
    body = {
        "replica_id": -1,
        "max_wait_ms": 0,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "topics": [
            {
                "topic": topic,
                "partitions": [{"partition": partition, "fetch_offset": 0, "partition_max_bytes": 1 << 20}],
            }
        ],
    }
    with BlockingClient(cluster.bootstrap, timeout_s=15) as client:
        client.metadata([])
        response = client.call(1, 11, body, broker_id=broker_id)
    part = response.responses[0].partitions[0]
    if part.error_code != 0 or part.records is None:
        return []
    return [r.value for r in iter_records(bytes(part.records))]


# --------------------------------------------------------------------------- preferred leader election


def test_preferred_leaders_come_back_with_leader_election(cluster: LocalCluster) -> None:
    topic = create(cluster, {0: [1, 2, 3], 1: [2, 3, 1], 2: [3, 1, 2]})
    controller = cluster.controller_id()
    victim = next(b for b in (1, 2, 3) if b != controller)
    moved = next(p for p, r in {0: 1, 1: 2, 2: 3}.items() if r == victim)

    pid = cluster.broker(victim)["pid"]
    cluster.kill(victim, signal.SIGKILL)
    wait_dead(pid)
    poll(
        lambda: partitions(cluster, topic)[moved].leader_id not in (-1, victim),
        "leadership to move off the killed broker",
    )
    cluster.restart(victim)
    poll(
        lambda: all(len(p.isr_nodes) == 3 for p in partitions(cluster, topic).values()),
        "the restarted broker to rejoin every ISR",
        timeout=40,
    )
    assert partitions(cluster, topic)[moved].leader_id != victim, "nothing moved it back yet"

    r = mafka(cluster, "leader-election", "--election-type", "preferred", "--all-topic-partitions")
    assert r.returncode == 0, r
    assert r.stdout == f"Successfully completed leader election (PREFERRED) for partitions {topic}-{moved}\n"
    leaders = {p: part.leader_id for p, part in partitions(cluster, topic).items()}
    assert leaders == {0: 1, 1: 2, 2: 3}

    r = mafka(cluster, "leader-election", "--election-type", "preferred", "--topic", topic, "--partition", "0")
    assert (r.returncode, r.stdout) == (0, f"Valid replica already elected for partitions {topic}-0\n")


# --------------------------------------------------------------------------- reassignment


def configs(cluster: LocalCluster, resource_type: int, name: str, via: int) -> dict[str, str]:
    """DescribeConfigs v1 of one resource: the values set dynamically (sources 1–3)."""
    body = {
        "resources": [{"resource_type": resource_type, "resource_name": name, "configuration_keys": None}],
        "include_synonyms": False,
    }
    with BlockingClient(cluster.bootstrap, timeout_s=15) as client:
        client.metadata([])
        response = client.call(32, 1, body, broker_id=via)
    (result,) = response.results
    assert result.error_code == 0, result
    return {c.name: c.value for c in result.configs if c.config_source in (1, 2, 3) and c.value}


def run_reassignment(
    cluster: LocalCluster, tmp_path: Path, topic: str, target: dict[int, list[int]], throttled: dict[str, str]
) -> str:
    plan = tmp_path / f"{topic}.json"
    plan.write_text(
        json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": p, "replicas": r} for p, r in target.items()]})
    )
    r = mafka(cluster, "reassign-partitions", "--execute", "--reassignment-json-file", str(plan), "--throttle", "50000000")
    assert r.returncode == 0, r
    assert r.stdout.startswith("Current partition replica assignment\n\n{")
    assert "Warning: You must run --verify periodically" in r.stdout
    assert "The inter-broker throttle limit was set to 50000000 B/s" in r.stdout
    assert r.stdout.rstrip().endswith(
        "Successfully started partition reassignment for " + ",".join(f"{topic}-{p}" for p in sorted(target))
    )
    # The throttles are stored where Kafka keeps them (enforcing them is the fetcher's business).
    assert configs(cluster, 2, topic, 1) == throttled
    rates = configs(cluster, 4, "1", 1)
    assert rates["leader.replication.throttled.rate"] == rates["follower.replication.throttled.rate"] == "50000000"

    def verified() -> str | None:
        out = mafka(cluster, "reassign-partitions", "--verify", "--reassignment-json-file", str(plan))
        assert out.returncode == 0, out
        return out.stdout if "is still in progress" not in out.stdout else None

    return poll(verified, f"the reassignment of {topic} to finish", timeout=45)


def test_reassign_a_single_replica_to_another_broker(cluster: LocalCluster, tmp_path: Path) -> None:
    topic = create(cluster, {0: [1]})
    produce(cluster, topic, 0, [b"a", b"b", b"c"])
    throttled = {"leader.replication.throttled.replicas": "0:1", "follower.replication.throttled.replicas": "0:2"}
    final = run_reassignment(cluster, tmp_path, topic, {0: [2]}, throttled)
    assert final.splitlines()[:2] == ["Status of partition reassignment:", f"Reassignment of partition {topic}-0 is complete."]
    assert "Clearing broker-level throttles on brokers 1,2,3" in final
    assert f"Clearing topic-level throttles on topic {topic}" in final
    assert configs(cluster, 2, topic, 1) == {} and configs(cluster, 4, "1", 1) == {}
    part = partitions(cluster, topic)[0]
    assert (part.leader_id, list(part.replica_nodes), list(part.isr_nodes)) == (2, [2], [2])
    assert read_all(cluster, topic, 0, 2) == [b"a", b"b", b"c"]
    r = mafka(cluster, "reassign-partitions", "--list")
    assert (r.returncode, r.stdout) == (0, "No partition reassignments found.\n")


def test_grow_replication_factor_from_2_to_3(cluster: LocalCluster, tmp_path: Path) -> None:
    topic = create(cluster, {0: [2, 3]})
    produce(cluster, topic, 0, [b"x", b"y"])
    throttled = {"leader.replication.throttled.replicas": "0:2,0:3", "follower.replication.throttled.replicas": "0:1"}
    run_reassignment(cluster, tmp_path, topic, {0: [2, 3, 1]}, throttled)
    part = partitions(cluster, topic)[0]
    assert part.leader_id == 2
    assert list(part.replica_nodes) == [2, 3, 1] and sorted(part.isr_nodes) == [1, 2, 3]
    poll(lambda: read_all(cluster, topic, 0, 2) == [b"x", b"y"], "the data on the leader")


def test_generate_proposes_a_plan_over_the_given_brokers(cluster: LocalCluster, tmp_path: Path) -> None:
    topic = create(cluster, {0: [1], 1: [2]})
    topics_file = tmp_path / "topics.json"
    topics_file.write_text(json.dumps({"topics": [{"topic": topic}], "version": 1}))
    r = mafka(cluster, "reassign-partitions", "--generate", "--topics-to-move-json-file", str(topics_file), "--broker-list", "3")
    assert r.returncode == 0, r
    lines = r.stdout.splitlines()
    assert lines[0] == "Current partition replica assignment"
    assert json.loads(lines[1]) == {
        "version": 1,
        "partitions": [
            {"topic": topic, "partition": 0, "replicas": [1], "log_dirs": ["any"]},
            {"topic": topic, "partition": 1, "replicas": [2], "log_dirs": ["any"]},
        ],
    }
    assert lines[2:4] == ["", "Proposed partition reassignment configuration"]
    assert [p["replicas"] for p in json.loads(lines[4])["partitions"]] == [[3], [3]]
