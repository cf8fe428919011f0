"""The share coordinator on a real cluster: share-partition state survives a coordinator SIGKILL.

One 3-broker cluster for the module (durable settings: RF 3,
``min.insync.replicas=2``, unclean election off) with a 5-partition
``__share_group_state``.  A raw client (``tests.harness.raw_client``) plays
the brokers' persister and sends the inter-broker share-state RPCs
(InitializeShareGroupState 83, ReadShareGroupState 84, WriteShareGroupState
85 v1, ReadShareGroupStateSummary 87 v1) straight to the coordinator: the
leader of partition ``abs(javaHash("<group>:<topic id>:<partition>")) % 5``
of ``__share_group_state``, as ZooKeeper names it.

* The first request creates ``__share_group_state`` (COORDINATOR_NOT_AVAILABLE
  until it is there), with Kafka's configs (not compacted, kept forever).
* Initialize, read (recording the share-partition leader's epoch), several
  writes: the state read back is the merge of the writes; a broker that is
  not the coordinator answers NOT_COORDINATOR.
* The coordinator is SIGKILLed: the new leader of the state partition loads
  it and answers the same state (epochs, start offset, state batches, and the
  summary); a write with a stale state epoch is FENCED_STATE_EPOCH and one
  with a stale leader epoch FENCED_LEADER_EPOCH, neither changing anything;
  a write from the current leader still succeeds there.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from mafka.errors import ErrorCode
from mafka.share.coordinator import share_partition_for
from tests.harness.chaos import Chaos, create_topic, healed
from tests.harness.cluster import ClusterSpec
from tests.harness.raw_client import BlockingClient

pytestmark = pytest.mark.integration

STATE_TOPIC = "__share_group_state"
STATE_PARTITIONS = 5
SETTINGS = {
    "zookeeper.session.timeout.ms": "6000",
    "replica.lag.time.max.ms": "4000",
    "min.insync.replicas": "2",
    "unclean.leader.election.enable": "false",
    "default.replication.factor": "3",
    "auto.leader.rebalance.enable": "false",  # leaders move only when the test moves them
    "share.coordinator.state.topic.num.partitions": str(STATE_PARTITIONS),
}
CLUSTER = ClusterSpec(settings=SETTINGS, shared=False)  # kills a broker

INITIALIZE, READ, WRITE, SUMMARY = 83, 84, 85, 87
RETRIABLE = {ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
             ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
ACKED, AVAILABLE, ARCHIVED = 2, 0, 4


@pytest.fixture
def chaos(cluster: Any) -> Any:
    with healed(cluster) as ch:
        yield ch


def znode(chaos: Chaos, path: str) -> Any:
    """A JSON znode's content (None: no such znode)."""
    stat = chaos.zk.exists(path)
    return None if stat is None else json.loads(chaos.zk.get(path)[0])


def topic_id_of(client: BlockingClient, topic: str) -> bytes:
    md = client.call(3, 12, {"topics": [{"topic_id": bytes(16), "name": topic}], "allow_auto_topic_creation": False,
                             "include_topic_authorized_operations": False})
    (t,) = [t for t in md.topics if t.name == topic]
    assert t.error_code == 0 and t.topic_id != bytes(16)
    return bytes(t.topic_id)


def partition_errors(response: Any) -> list[int]:
    return [p.error_code for r in response.results for p in r.partitions]


def only(response: Any) -> Any:
    ((result,),) = [r.partitions for r in response.results]
    return result


def state_of(read: Any) -> tuple[int, int, list[tuple[int, int, int, int]]]:
    p = only(read)
    assert p.error_code == 0, ErrorCode(p.error_code).name
    return p.state_epoch, p.start_offset, [(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
                                           for b in p.state_batches]


class Coordinator:
    """Sends share-state RPCs to the current coordinator of one share-partition, retrying as the persister does."""

    def __init__(self, cluster: Any, chaos: Chaos, group: str, topic_id: bytes, partition: int) -> None:
        self.client = BlockingClient(cluster.bootstrap, client_id="share-state-test", timeout_s=30)
        self.chaos = chaos
        self.group, self.topic_id, self.partition = group, topic_id, partition
        self.index = share_partition_for(group, topic_id, partition, STATE_PARTITIONS)

    def close(self) -> None:
        self.client.close()

    def broker(self) -> int:
        return self.chaos.leader(STATE_TOPIC, self.index)

    def body(self, **fields: Any) -> dict[str, Any]:
        return {"group_id": self.group,
                "topics": [{"topic_id": self.topic_id, "partitions": [{"partition": self.partition, **fields}]}]}

    def send(self, api_key: int, version: int, body: dict[str, Any], broker: int | None = None,
             timeout: float = 60.0) -> Any:
        """The answer of the coordinator (or of ``broker``), once it is not a retriable error."""
        def attempt() -> tuple[bool, Any]:
            to = self.broker() if broker is None else broker
            if to < 0:
                return True, None
            response = self.client.call(api_key, version, body, broker_id=to, timeout=10)
            return any(e in RETRIABLE for e in partition_errors(response)) and broker is None, response

        response = self.client.retrying(attempt, timeout)
        assert response is not None, f"no coordinator for {STATE_TOPIC}-{self.index}"
        return response

    def initialize(self, state_epoch: int, start_offset: int) -> int:
        return only(self.send(INITIALIZE, 0, self.body(state_epoch=state_epoch, start_offset=start_offset))).error_code

    def read(self, leader_epoch: int) -> Any:
        return self.send(READ, 0, self.body(leader_epoch=leader_epoch))

    def write(self, state_epoch: int, leader_epoch: int, start_offset: int,
              batches: list[tuple[int, int, int, int]]) -> int:
        body = self.body(state_epoch=state_epoch, leader_epoch=leader_epoch, start_offset=start_offset,
                         delivery_complete_count=-1,
                         state_batches=[{"first_offset": f, "last_offset": last, "delivery_state": s,
                                         "delivery_count": c} for f, last, s, c in batches])
        return only(self.send(WRITE, 1, body)).error_code

    def summary(self) -> tuple[int, int, int, int]:
        p = only(self.send(SUMMARY, 1, self.body(leader_epoch=0)))
        assert p.error_code == 0, ErrorCode(p.error_code).name
        return p.state_epoch, p.leader_epoch, p.start_offset, p.delivery_complete_count


def test_share_partition_state_survives_a_coordinator_sigkill(cluster: Any, chaos: Chaos) -> None:
    topic = create_topic(cluster, partitions=4, rf=3, configs={"min.insync.replicas": "2"}, chaos=chaos)
    with BlockingClient(cluster.bootstrap, client_id="share-state-test") as client:
        topic_id = topic_id_of(client, topic)
    group = f"share-{uuid.uuid4().hex[:8]}"
    coordinator = Coordinator(cluster, chaos, group, topic_id, 2)
    try:
        # The first request creates __share_group_state; until it exists: COORDINATOR_NOT_AVAILABLE.
        first = coordinator.send(INITIALIZE, 0, coordinator.body(state_epoch=1, start_offset=0), broker=1)
        assert partition_errors(first) in ([ErrorCode.COORDINATOR_NOT_AVAILABLE], [ErrorCode.NOT_COORDINATOR],
                                           [ErrorCode.NONE])
        victim = chaos.wait_leader(STATE_TOPIC, coordinator.index, timeout=60)
        chaos.wait_full_isr(STATE_TOPIC, range(STATE_PARTITIONS), timeout=60)
        assert coordinator.initialize(state_epoch=1, start_offset=0) == ErrorCode.NONE
        assert state_of(coordinator.read(leader_epoch=1)) == (1, 0, [])

        writes = [
            (0, [(0, 9, AVAILABLE, 1), (10, 19, AVAILABLE, 1)]),  # acquired 0-19 (delivery 1)
            (0, [(0, 4, ACKED, 1), (5, 5, ARCHIVED, 1)]),  # accepted 0-4, rejected 5
            (6, [(6, 9, ACKED, 1), (10, 14, AVAILABLE, 2)]),  # start moved to 6; 10-14 delivered again
            (6, [(20, 24, ARCHIVED, 5)]),
        ]
        for start, batches in writes:
            assert coordinator.write(1, 1, start, batches) == ErrorCode.NONE
        expected = (1, 6, [(6, 9, ACKED, 1), (10, 14, AVAILABLE, 2), (15, 19, AVAILABLE, 1), (20, 24, ARCHIVED, 5)])
        assert state_of(coordinator.read(leader_epoch=1)) == expected
        summary = coordinator.summary()
        assert summary == (1, 1, 6, -1)
        others = [b for b in chaos.broker_ids if b != victim]
        assert partition_errors(coordinator.send(READ, 0, coordinator.body(leader_epoch=1), broker=others[0])) == \
            [ErrorCode.NOT_COORDINATOR]

        chaos.kill(victim)
        successor = chaos.wait_leader(STATE_TOPIC, coordinator.index, timeout=30, not_in=[victim])
        assert successor != victim
        assert state_of(coordinator.read(leader_epoch=1)) == expected
        assert coordinator.broker() == successor
        assert coordinator.summary() == summary

        # Fenced: a stale state epoch, then a stale leader epoch (after a newer leader read); nothing changes.
        assert coordinator.write(0, 1, 6, [(10, 14, ACKED, 2)]) == ErrorCode.FENCED_STATE_EPOCH
        assert state_of(coordinator.read(leader_epoch=2)) == expected  # records leader epoch 2
        assert coordinator.write(1, 1, 6, [(10, 14, ACKED, 2)]) == ErrorCode.FENCED_LEADER_EPOCH
        assert state_of(coordinator.read(leader_epoch=2)) == expected
        # The current share-partition leader still writes, at the new coordinator.
        assert coordinator.write(1, 2, 10, [(10, 14, ACKED, 2)]) == ErrorCode.NONE
        assert state_of(coordinator.read(leader_epoch=2)) == \
            (1, 10, [(10, 14, ACKED, 2), (15, 19, AVAILABLE, 1), (20, 24, ARCHIVED, 5)])
    finally:
        coordinator.close()


def test_the_state_topic_is_kafkas_not_compacted(cluster: Any, chaos: Chaos) -> None:
    config = znode(chaos, f"/config/topics/{STATE_TOPIC}")
    if config is None:  # created by the other test; on its own, create it now
        with BlockingClient(cluster.bootstrap, client_id="share-state-test") as client:
            client.call(INITIALIZE, 0, {"group_id": "g", "topics": [{"topic_id": bytes(range(16)), "partitions": [
                {"partition": 0, "state_epoch": 0, "start_offset": -1}]}]})
        config = chaos.wait_until(lambda: znode(chaos, f"/config/topics/{STATE_TOPIC}"), 30, "the state topic exists")
    assert config["config"]["cleanup.policy"] == "delete"
    assert config["config"]["retention.ms"] == "-1"
    assert config["config"]["min.insync.replicas"] == "2"
    assert len(znode(chaos, f"/brokers/topics/{STATE_TOPIC}")["partitions"]) == STATE_PARTITIONS
