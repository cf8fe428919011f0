"""KIP-932's data path on a real 3-broker cluster: ShareFetch (78) and ShareAcknowledge (79).

Members are raw clients (:class:`ShareMember` over :class:`~tests.harness.raw_client.BlockingClient`):
each joins its share group with ShareGroupHeartbeat (76) at the group coordinator (FindCoordinator,
key type 0), opens a share session with each partition leader it fetches from, and sends exactly
the acknowledgements a test names.  Records are produced with confluent-kafka (acks=all), one batch
per flush.  The brokers run with ``group.share.record.lock.duration.ms=2000``.

Share-partitions start at ``share.auto.offset.reset`` latest (Kafka's default; there are no group
configs to change it yet), so each test first waits until its share-partition is live: it produces
probe records until a fetch acquires one, and accepts it.  Everything produced after that is the
group's.

1. Two members of a one-partition topic both receive records, never the same ones.
2. A RELEASE makes the records go to the other member (delivery count 2); a REJECT archives a
   record for good; an unacknowledged record comes back after the lock duration, and its first
   holder's late acknowledgement is INVALID_RECORD_STATE.
3. Bad requests: a fetch from a broker that does not lead the partition is NOT_LEADER_OR_FOLLOWER
   with the leader and its endpoint, an unknown topic id UNKNOWN_TOPIC_ID, a wrong session epoch
   INVALID_SHARE_SESSION_EPOCH, no session SHARE_SESSION_NOT_FOUND, overlapping acknowledgement
   batches INVALID_REQUEST — and none of them disturbs the member.
4. The leader is SIGKILLed with acknowledged and acquired records: the new leader re-reads the
   share-partition from the share coordinator (``__share_group_state``), no accepted record is
   delivered again and every unacknowledged one is.
5. confluent-kafka's ShareConsumer (librdkafka's preview share consumer) consumes and
   acknowledges through the advertised APIs.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from mafka.errors import ErrorCode
from mafka.wire.records import Record, iter_records
from tests.harness.chaos import Chaos, create_topic
from tests.harness.cluster import ClusterFactory, LocalCluster
from tests.harness.raw_client import BlockingClient
from tests.harness.waits import wait_until

pytestmark = pytest.mark.integration

LOCK_MS = 2000
SETTINGS = {
    "zookeeper.session.timeout.ms": "6000",
    "default.replication.factor": "3",
    "offsets.topic.replication.factor": "3",
    "offsets.topic.num.partitions": "3",
    "share.coordinator.state.topic.num.partitions": "3",
    "auto.leader.rebalance.enable": "false",
    "replica.lag.time.max.ms": "4000",
    "group.share.record.lock.duration.ms": str(LOCK_MS),
}
SHARE_GROUP_HEARTBEAT, SHARE_FETCH, SHARE_ACKNOWLEDGE, FIND_COORDINATOR, METADATA = 76, 78, 79, 10, 3
ACCEPT, RELEASE, REJECT = 1, 2, 3


@pytest.fixture(scope="module")
def cluster(cluster_factory: ClusterFactory) -> Iterator[LocalCluster]:
    with cluster_factory.own(name="share-fetch", settings=SETTINGS) as c:  # its own: one test kills a leader
        yield c


# ------------------------------------------------------------------------------ a raw share consumer


class ShareMember:
    """One share-group member speaking the share APIs itself (one session per leader)."""

    def __init__(self, bootstrap: str, group_id: str, topic: str) -> None:
        self.client = BlockingClient(bootstrap, client_id=f"share-{uuid.uuid4().hex[:6]}", timeout_s=30)
        self.group_id = group_id
        self.topic = topic
        self.member_id = uuid.uuid4().hex[:22]
        self.member_epoch = 0
        self.assignment: set[tuple[bytes, int]] = set()
        #: leader broker id → the next ShareSessionEpoch there
        self.session_epochs: dict[int, int] = {}

    def close(self) -> None:
        self.client.close()

    # -- group membership -------------------------------------------------------------------

    def coordinator(self) -> int:
        body = {"key": self.group_id, "key_type": 0}
        response = self.client.call(FIND_COORDINATOR, 1, body)
        assert response.error_code == ErrorCode.NONE, response
        self.client.brokers[response.node_id] = (response.host, response.port)
        return int(response.node_id)

    def heartbeat(self) -> Any:
        body = {"group_id": self.group_id, "member_id": self.member_id, "member_epoch": self.member_epoch,
                "rack_id": None, "subscribed_topic_names": [self.topic] if self.member_epoch == 0 else None}
        response = self.client.call(SHARE_GROUP_HEARTBEAT, 1, body, broker_id=self.coordinator())
        if response.error_code == ErrorCode.NONE:
            self.member_epoch = response.member_epoch
            if response.assignment is not None:
                self.assignment = {(bytes(t.topic_id), p) for t in response.assignment.topic_partitions
                                   for p in t.partitions}
        return response

    def join(self, topic_id: bytes, timeout: float = 60.0) -> None:
        """Heartbeat until the member is assigned partition 0 of the topic (initialized share-partitions only)."""
        def assigned() -> bool:
            response = self.heartbeat()
            return response.error_code == ErrorCode.NONE and (topic_id, 0) in self.assignment

        wait_until(assigned, timeout, f"{self.member_id} assigned {self.topic}-0", interval=0.3,
                   retry=(AssertionError,))

    # -- fetching and acknowledging ------------------------------------------------------------

    def fetch(self, leader: int, topic_id: bytes, *, acks: list[tuple[int, int, int]] = (),  # type: ignore[assignment]
              max_wait_ms: int = 1000, max_records: int = 500, epoch: int | None = None, partition: int = 0) -> Any:
        """One ShareFetch v1 to *leader*: opens the session (epoch 0) the first time."""
        session_epoch = self.session_epochs.get(leader, 0) if epoch is None else epoch
        body = {
            "group_id": self.group_id, "member_id": self.member_id, "share_session_epoch": session_epoch,
            "max_wait_ms": max_wait_ms, "min_bytes": 1, "max_bytes": 1 << 20, "max_records": max_records,
            "batch_size": max_records,
            "topics": [{"topic_id": topic_id, "partitions": [{
                "partition_index": partition,
                "acknowledgement_batches": [{"first_offset": f, "last_offset": last, "acknowledge_types": [t]}
                                            for f, last, t in acks],
            }]}],
            "forgotten_topics_data": [],
        }
        response = self.client.call(SHARE_FETCH, 1, body, broker_id=leader, timeout=max_wait_ms / 1000 + 30)
        if epoch is None and response.error_code == ErrorCode.NONE:
            self.session_epochs[leader] = session_epoch + 1
        return response

    def acknowledge(self, leader: int, topic_id: bytes, acks: list[tuple[int, int, int]], partition: int = 0) -> Any:
        epoch = self.session_epochs[leader]
        body = {
            "group_id": self.group_id, "member_id": self.member_id, "share_session_epoch": epoch,
            "topics": [{"topic_id": topic_id, "partitions": [{
                "partition_index": partition,
                "acknowledgement_batches": [{"first_offset": f, "last_offset": last, "acknowledge_types": [t]}
                                            for f, last, t in acks],
            }]}],
        }
        response = self.client.call(SHARE_ACKNOWLEDGE, 1, body, broker_id=leader)
        if response.error_code == ErrorCode.NONE:
            self.session_epochs[leader] = epoch + 1
        return response


def partition_of(response: Any, topic_id: bytes, partition: int = 0) -> Any:
    for t in response.responses:
        if bytes(t.topic_id) == topic_id:
            for p in t.partitions:
                if p.partition_index == partition:
                    return p
    return None


def acquired(response: Any, topic_id: bytes) -> dict[int, tuple[bytes, int]]:
    """offset → (value, delivery count) of every acquired record in a ShareFetch response."""
    p = partition_of(response, topic_id)
    if p is None or not p.acquired_records:
        return {}
    assert p.error_code == ErrorCode.NONE, p
    counts = {o: r.delivery_count for r in p.acquired_records for o in range(r.first_offset, r.last_offset + 1)}
    values = {r.offset: r.value for r in iter_records(bytes(p.records)) if isinstance(r, Record) and r.value is not None}
    missing = set(counts) - set(values)
    assert not missing, f"acquired offsets {sorted(missing)} are not in the records sent"
    return {o: (values[o], counts[o]) for o in sorted(counts)}


def runs(offsets: Iterator[int] | dict[int, Any], kind: int) -> list[tuple[int, int, int]]:
    """Acknowledgement batches of one type covering exactly *offsets* (one per run of consecutive offsets)."""
    out: list[tuple[int, int, int]] = []
    for o in sorted(offsets):
        if out and out[-1][1] + 1 == o:
            out[-1] = (out[-1][0], o, kind)
        else:
            out.append((o, o, kind))
    return out


def topic_id_of(client: BlockingClient, topic: str) -> bytes:
    response = client.call(METADATA, 12, {"topics": [{"name": topic, "topic_id": bytes(16)}],
                                          "allow_auto_topic_creation": False,
                                          "include_topic_authorized_operations": False})
    (t,) = response.topics
    assert t.error_code == ErrorCode.NONE
    return bytes(t.topic_id)


def produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    for v in values:
        producer.produce(topic, v, partition=0)
    assert producer.flush(30) == 0


def go_live(cluster: LocalCluster, member: ShareMember, leader: int, topic_id: bytes) -> None:
    """Wait until the share-partition is loaded at ``latest``: probes until one is acquired, accepted."""
    tag = uuid.uuid4().hex[:6]

    def probe() -> bool:
        produce(cluster.bootstrap, member.topic, [f"probe-{tag}".encode()])
        got = acquired(member.fetch(leader, topic_id, max_wait_ms=500), topic_id)
        if not got:
            return False
        response = member.acknowledge(leader, topic_id, [(min(got), max(got), ACCEPT)])
        assert partition_of(response, topic_id).error_code == ErrorCode.NONE
        return True

    wait_until(probe, 60, "the share-partition goes live", interval=0.2)


@pytest.fixture
def share(cluster: LocalCluster) -> Iterator[Any]:
    members: list[ShareMember] = []

    def make(partitions: int = 1) -> tuple[str, bytes, int, list[ShareMember]]:
        topic = create_topic(cluster, partitions=partitions, rf=3)
        group = f"share-{uuid.uuid4().hex[:8]}"
        a, b = ShareMember(cluster.bootstrap, group, topic), ShareMember(cluster.bootstrap, group, topic)
        members.extend((a, b))
        topic_id = topic_id_of(a.client, topic)
        leader = a.client.leader_for(topic, 0)
        a.join(topic_id)
        b.join(topic_id)
        go_live(cluster, a, leader, topic_id)
        return topic, topic_id, leader, [a, b]

    yield make
    for m in members:
        m.close()


# ------------------------------------------------------------------------------ the tests


class TestShareFetch:
    def test_two_members_receive_different_records(self, cluster: LocalCluster, share: Any) -> None:
        topic, topic_id, leader, (a, b) = share()
        values = [f"r{i}".encode() for i in range(20)]
        produce(cluster.bootstrap, topic, values)
        got_a = acquired(a.fetch(leader, topic_id, max_records=10, max_wait_ms=3000), topic_id)
        got_b = acquired(b.fetch(leader, topic_id, max_records=100, max_wait_ms=3000), topic_id)
        assert len(got_a) == 10 and got_b, (got_a, got_b)
        assert not set(got_a) & set(got_b)
        received = sorted(v for v, _ in [*got_a.values(), *got_b.values()])
        assert received == sorted(values)
        assert {c for _, c in [*got_a.values(), *got_b.values()]} == {1}
        response = a.acknowledge(leader, topic_id, [(min(got_a), max(got_a), ACCEPT)])
        assert partition_of(response, topic_id).error_code == ErrorCode.NONE
        # b accepts on its next fetch, as clients piggyback acknowledgements.
        response = b.fetch(leader, topic_id, acks=[(min(got_b), max(got_b), ACCEPT)], max_wait_ms=300)
        assert partition_of(response, topic_id).acknowledge_error_code == ErrorCode.NONE
        assert acquired(response, topic_id) == {}
        # Accepted records are finished: nothing more to fetch for anyone.
        assert acquired(a.fetch(leader, topic_id, max_wait_ms=300), topic_id) == {}

    def test_release_reject_and_lock_expiry(self, cluster: LocalCluster, share: Any) -> None:
        topic, topic_id, leader, (a, b) = share()
        produce(cluster.bootstrap, topic, [f"x{i}".encode() for i in range(6)])
        got = acquired(a.fetch(leader, topic_id, max_wait_ms=3000), topic_id)
        assert len(got) == 6
        first, last = min(got), max(got)
        poison = first + 2
        # REJECT one, RELEASE the others.
        response = a.acknowledge(leader, topic_id, [(first, poison - 1, RELEASE), (poison, poison, REJECT),
                                                    (poison + 1, last, RELEASE)])
        assert partition_of(response, topic_id).error_code == ErrorCode.NONE
        redelivered = acquired(b.fetch(leader, topic_id, max_wait_ms=3000), topic_id)
        assert set(redelivered) == set(got) - {poison}
        assert {c for _, c in redelivered.values()} == {2}
        # b holds them and says nothing: after the lock duration they come back to a.
        held_at = time.monotonic()
        again = acquired(a.fetch(leader, topic_id, max_wait_ms=LOCK_MS + 3000), topic_id)
        assert time.monotonic() - held_at >= (LOCK_MS - 300) / 1000
        assert set(again) == set(redelivered)
        assert {c for _, c in again.values()} == {3}
        late = b.acknowledge(leader, topic_id, runs(again, ACCEPT))
        assert partition_of(late, topic_id).error_code == ErrorCode.INVALID_RECORD_STATE
        response = a.acknowledge(leader, topic_id, runs(again, ACCEPT))
        assert partition_of(response, topic_id).error_code == ErrorCode.NONE
        produce(cluster.bootstrap, topic, [b"after"])
        after = acquired(b.fetch(leader, topic_id, max_wait_ms=3000), topic_id)
        assert [v for v, _ in after.values()] == [b"after"]  # the rejected record never comes back

    def test_bad_requests_are_refused_and_disturb_nothing(self, cluster: LocalCluster, share: Any) -> None:
        topic, topic_id, leader, (a, b) = share()
        follower = next(x for x in (1, 2, 3) if x != leader)
        response = b.fetch(follower, topic_id, max_wait_ms=0)
        p = partition_of(response, topic_id)
        assert p.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert p.current_leader.leader_id == leader
        assert [e.node_id for e in response.node_endpoints] == [leader]
        unknown = b.fetch(leader, uuid.uuid4().bytes, max_wait_ms=0, epoch=0)
        assert partition_of(unknown, bytes(unknown.responses[0].topic_id)).error_code == ErrorCode.UNKNOWN_TOPIC_ID
        assert b.fetch(leader, topic_id, max_wait_ms=0, epoch=7).error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
        stranger = ShareMember(cluster.bootstrap, a.group_id, topic)
        try:
            assert stranger.fetch(leader, topic_id, epoch=1).error_code == ErrorCode.SHARE_SESSION_NOT_FOUND
        finally:
            stranger.close()
        produce(cluster.bootstrap, topic, [b"y0", b"y1", b"y2"])
        got = acquired(a.fetch(leader, topic_id, max_wait_ms=3000), topic_id)
        assert len(got) == 3
        first = min(got)
        overlapping = a.acknowledge(leader, topic_id, [(first, first + 1, ACCEPT), (first + 1, first + 2, ACCEPT)])
        assert partition_of(overlapping, topic_id).error_code == ErrorCode.INVALID_REQUEST
        assert acquired(b.fetch(leader, topic_id, max_wait_ms=0, epoch=0), topic_id) == {}  # a new session for b
        b.session_epochs[leader] = 1
        not_held = b.acknowledge(leader, topic_id, [(first, first + 2, ACCEPT)])
        assert partition_of(not_held, topic_id).error_code == ErrorCode.INVALID_RECORD_STATE
        response = a.acknowledge(leader, topic_id, [(first, first + 2, ACCEPT)])
        assert partition_of(response, topic_id).error_code == ErrorCode.NONE

    def test_a_leader_sigkill_loses_no_acknowledgement(self, cluster: LocalCluster, share: Any) -> None:
        topic, topic_id, leader, (a, b) = share()
        values = [f"k{i}".encode() for i in range(30)]
        produce(cluster.bootstrap, topic, values)
        got = acquired(a.fetch(leader, topic_id, max_records=20, max_wait_ms=3000), topic_id)
        assert len(got) == 20
        offsets = sorted(got)
        accepted = offsets[:12]
        response = a.acknowledge(leader, topic_id, [(accepted[0], accepted[-1], ACCEPT)])
        assert partition_of(response, topic_id).error_code == ErrorCode.NONE
        unacknowledged = set(offsets[12:])
        chaos = Chaos(cluster)
        try:
            chaos.kill(leader)
            new_leader = chaos.wait_leader(topic, 0, timeout=60, not_in={leader})
            received: dict[int, tuple[bytes, int]] = {}

            def drained() -> bool:
                try:
                    got_now = acquired(b.fetch(new_leader, topic_id, max_wait_ms=1000), topic_id)
                except OSError:
                    return False
                received.update(got_now)
                if got_now:
                    response = b.acknowledge(new_leader, topic_id, [(min(got_now), max(got_now), ACCEPT)])
                    assert partition_of(response, topic_id).error_code == ErrorCode.NONE
                return len(received) >= 18

            wait_until(drained, 60, lambda: f"the 18 unaccepted records from the new leader: {sorted(received)}",
                       interval=0.2)
            assert not set(received) & set(accepted), "an accepted record was delivered again"
            assert set(received) == unacknowledged | set(range(offsets[-1] + 1, offsets[-1] + 11))
            assert sorted(v for v, _ in received.values()) == sorted(values[12:])
            assert all(c == 2 for o, (_, c) in received.items() if o in unacknowledged)
        finally:
            chaos.restart(leader)
            chaos.close()

    def test_confluent_kafka_share_consumer(self, cluster: LocalCluster) -> None:
        from confluent_kafka import ShareConsumer

        topic = create_topic(cluster, partitions=1, rf=3)
        consumer = ShareConsumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"share-{uuid.uuid4().hex[:8]}"})
        try:
            consumer.subscribe([topic])
            tag = uuid.uuid4().hex[:6]
            seen: list[bytes] = []

            def poll_some() -> list[bytes]:
                out = []
                for message in consumer.poll(timeout=0.5) or []:
                    if message.error() is None:
                        out.append(bytes(message.value() or b""))
                return out

            def live() -> bool:
                produce(cluster.bootstrap, topic, [f"probe-{tag}".encode()])
                return bool(poll_some())

            wait_until(live, 90, "the share consumer receives a record", interval=0.2)
            values = [f"c{i}-{tag}".encode() for i in range(50)]
            produce(cluster.bootstrap, topic, values)

            def all_received() -> bool:
                seen.extend(v for v in poll_some() if not v.startswith(b"probe-"))
                return len(set(seen)) >= len(values)

            wait_until(all_received, 60, lambda: f"50 records, got {len(set(seen))}", interval=0.1)
            assert sorted(set(seen)) == sorted(values)
            assert len(seen) == len(values)  # implicit acknowledgement: each accepted once, none redelivered
        finally:
            consumer.close()
