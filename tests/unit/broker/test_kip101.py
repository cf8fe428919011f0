"""KIP-101's two failure scenarios, deterministically, at unit level (§4.6 of
``shared/reference/zk-controller-replication.md``).

Two brokers are in-process :class:`ReplicaManager` objects over real logs in
tmp dirs.  "Replication" is a follower Fetch on the leader's replica manager
whose bytes are appended on the follower; a restart shuts the broker's
LogManager down (HWs checkpointed) and opens a new one on the same dir; the
truncation protocol is the leader's OffsetForLeaderEpoch answer
(:meth:`ReplicaManager.end_offset_for_epoch`) fed to :func:`truncation_for` on
the follower, then :meth:`ReplicaManager.truncate_follower`.

Each scenario also runs with the pre-0.11 rule (truncate to the own HW) as a
negative control: it must show the bug the epoch rule fixes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from twisted.internet import task

from mafka.broker.replica_manager import FetchPartition, ReplicaManager
from mafka.broker.truncation import truncation_for
from mafka.errors import ErrorCode
from mafka.log.config import LogConfig
from mafka.log.manager import CLEAN_SHUTDOWN_FILE, LogManager, log_dir_name
from mafka.wire.codec import decode_request, encode_request
from mafka.wire.records import Record, build_batch, iter_records

TP = ("t", 0)


def message(value: bytes) -> bytes:
    return build_batch([Record(0, 1000, b"k", value)])


def lai(*, leader, epoch, isr, replicas=(1, 2)):
    body = {
        "controller_id": 9, "controller_epoch": 1, "broker_epoch": -1,
        "topic_states": [{"topic_name": "t", "partition_states": [
            {"partition_index": 0, "controller_epoch": 1, "leader": leader, "leader_epoch": epoch, "isr": list(isr),
             "zk_version": 0, "replicas": list(replicas), "is_new": False}]}],
        "live_leaders": [],
    }
    return decode_request(encode_request(4, 2, 1, "controller", body)[4:]).body


def fired(d):
    out: list = []
    d.addCallback(out.append)
    assert out, "expected an immediate answer"
    return out[0]


class Broker:
    """One broker's replica manager over its own log dir; restartable."""

    def __init__(self, broker_id: int, root: Path, clock: task.Clock) -> None:
        self.id = broker_id
        self.dir = root / f"broker-{broker_id}"
        self.clock = clock
        self.running = False
        self.start()

    def start(self) -> None:
        self.manager = LogManager([self.dir], LogConfig(), lambda: 1_000_000_000, broker_id=self.id, cluster_id="c")
        self.manager.startup()
        self.rm = ReplicaManager(self.id, self.manager, self.clock, high_watermarks=self.manager.read_high_watermarks())
        self.running = True

    def stop(self) -> None:
        """A controlled stop: the HW checkpoint, then every log flushed and closed."""
        self.manager.write_high_watermarks({tp: p.high_watermark for tp, p in self.rm.partitions.items()})
        self.rm.shutdown()
        self.manager.shutdown()
        self.running = False

    def restart(self) -> None:
        self.stop()
        self.start()

    @property
    def partition(self):
        return self.rm.partitions[TP]

    @property
    def partition_dir(self) -> Path:
        return self.dir / log_dir_name(*TP)

    def produce(self, value: bytes, acks: int = -1) -> list:
        out: list = []
        self.rm.append_records([(*TP, message(value))], acks=acks, timeout_ms=30_000, produce_version=7,
                               max_message_bytes=lambda t: 1 << 20).addCallback(out.append)
        return out

    def values(self) -> list[bytes]:
        log = self.partition.log
        return [r.value for r in iter_records(log.read(log.log_start_offset, 1 << 30).read())]

    def segment_bytes(self) -> bytes:
        return b"".join(p.read_bytes() for p in sorted(self.partition_dir.glob("*.log")))


def fetch_for(leader: Broker, follower: Broker, epoch: int):
    """The follower's Fetch, answered by the leader (which records the follower's position)."""
    offset = follower.partition.log.next_offset
    [r] = fired(leader.rm.fetch(follower.id, 0, 1, 1 << 20, [FetchPartition("t", 0, offset, 1 << 20, epoch)]))
    assert r.error == ErrorCode.NONE
    return r.result


def replicate(leader: Broker, follower: Broker, epoch: int) -> None:
    """One fetch round: the follower appends what the leader returned and adopts its HW."""
    result = fetch_for(leader, follower, epoch)
    leo = follower.rm.append_as_follower(TP, epoch, result.data.read(), result.high_watermark, result.log_start_offset)
    assert leo is not None


def truncate_by_epoch(leader: Broker, follower: Broker, epoch: int) -> None:
    """KIP-101/279: OffsetForLeaderEpoch rounds until the truncation is complete."""
    for _ in range(10):
        p = follower.partition
        asked = p.log.epoch_cache.latest_epoch
        assert asked is not None
        answer = leader.rm.end_offset_for_epoch("t", 0, epoch, asked)
        decision = truncation_for(p.log.epoch_cache, p.log.next_offset, p.high_watermark, *answer)
        assert fired(follower.rm.truncate_follower(TP, epoch, decision.offset)) is True
        if decision.complete:
            return
    raise AssertionError("truncation did not converge")


def truncate_by_hw(follower: Broker, epoch: int) -> None:
    """The pre-0.11 rule: a new follower truncates to its own HW."""
    assert fired(follower.rm.truncate_follower(TP, epoch, follower.partition.high_watermark)) is True


@pytest.fixture
def cluster(tmp_path):
    clock = task.Clock()
    clock.advance(1_000_000)
    brokers = {i: Broker(i, tmp_path, clock) for i in (1, 2)}
    yield brokers
    for b in brokers.values():
        if b.running:
            b.manager.shutdown()


@pytest.mark.parametrize("rule", ["epoch", "hw"])
def test_loss(cluster, rule):
    """B leads, A follows; m2 is acknowledged (B's HW 2) but A's HW is 1 when A restarts."""
    a, b = cluster[1], cluster[2]
    state = {"leader": 2, "epoch": 0, "isr": (1, 2)}
    b.rm.become_leader_or_follower(lai(**state))
    a.rm.become_leader_or_follower(lai(**state))

    ack1 = b.produce(b"m1")
    replicate(b, a, 0)  # A gets m1
    replicate(b, a, 0)  # A at 1 moves B's HW to 1 (m1 acknowledged); the answer carries the HW read before
    replicate(b, a, 0)  # A's HW 1
    ack2 = b.produce(b"m2")
    replicate(b, a, 0)  # A gets m2 (and HW 1)
    assert ack1[0][TP].error == ErrorCode.NONE and ack2 == []
    fetch_for(b, a, 0)  # A's fetch at 2 moves B's HW to 2 ... but A restarts before the answer
    assert b.partition.high_watermark == 2
    assert ack2[0][TP].error == ErrorCode.NONE  # m2 is acknowledged to the producer
    assert (a.partition.log.next_offset, a.partition.high_watermark) == (2, 1)

    a.restart()
    a.rm.become_leader_or_follower(lai(**state))
    assert (a.partition.log.next_offset, a.partition.high_watermark) == (2, 1)  # the checkpointed HW
    if rule == "epoch":
        truncate_by_epoch(b, a, 0)  # asks for epoch 0: B answers (0, 2)
    else:
        truncate_by_hw(a, 0)

    # B dies before A fetches again; A is elected (it is in the ISR).
    b.stop()
    a.rm.become_leader_or_follower(lai(leader=1, epoch=1, isr=(1,)))
    assert a.partition.is_leader
    if rule == "epoch":
        assert a.values() == [b"m1", b"m2"]  # the acknowledged m2 survives
        assert a.partition.high_watermark == 2
    else:
        assert a.values() == [b"m1"]  # negative control: the acknowledged m2 is lost
        assert a.partition.log.next_offset == 1


def lose_unflushed_tail(broker: Broker, keep_bytes: int) -> None:
    """A power loss: the segment file keeps only its first *keep_bytes*; the next start recovers it."""
    broker.stop()
    [segment] = sorted(broker.partition_dir.glob("*.log"))
    with open(segment, "r+b") as f:
        f.truncate(keep_bytes)
    (broker.dir / CLEAN_SHUTDOWN_FILE).unlink()  # not a clean shutdown: recovery runs
    broker.start()


@pytest.mark.parametrize("rule", ["epoch", "hw"])
def test_divergence(cluster, rule):
    """A leads with m1, m2 (HW 2 everywhere); a power loss leaves B with m1 only."""
    a, b = cluster[1], cluster[2]
    state = {"leader": 1, "epoch": 0, "isr": (1, 2)}
    a.rm.become_leader_or_follower(lai(**state))
    b.rm.become_leader_or_follower(lai(**state))
    a.produce(b"m1")
    replicate(a, b, 0)
    a.produce(b"m2")
    replicate(a, b, 0)
    replicate(a, b, 0)  # B at 2 moves A's HW to 2
    replicate(a, b, 0)  # B's HW 2 (a follower's HW lags its leader's by one round trip)
    assert [(x.partition.log.next_offset, x.partition.high_watermark) for x in (a, b)] == [(2, 2), (2, 2)]
    assert a.segment_bytes() == b.segment_bytes()
    m1_size = b.partition.log.read(0, 1 << 20, 1).size

    # Power loss on both; B's m2 was not flushed.
    a.stop()
    lose_unflushed_tail(b, m1_size)
    b.rm.become_leader_or_follower(lai(leader=2, epoch=1, isr=(2,)))  # B returns first and is elected
    assert b.values() == [b"m1"]
    assert b.produce(b"m3", acks=1)[0][TP].base_offset == 1
    assert b.partition.log.epoch_cache.entries == [(0, 0), (1, 1)]

    a.start()  # A returns with its HW 2 and follows B at epoch 1
    a.rm.become_leader_or_follower(lai(leader=2, epoch=1, isr=(2,)))
    assert (a.partition.log.next_offset, a.partition.high_watermark) == (2, 2)
    if rule == "epoch":
        truncate_by_epoch(b, a, 1)  # asks for epoch 0: B answers (0, 1)
        assert a.partition.log.next_offset == 1
    else:
        truncate_by_hw(a, 1)  # HW 2: nothing goes
        assert a.partition.log.next_offset == 2
    replicate(b, a, 1)
    b.produce(b"m4", acks=1)
    replicate(b, a, 1)
    replicate(b, a, 1)

    assert b.values() == [b"m1", b"m3", b"m4"]
    assert a.partition.log.next_offset == b.partition.log.next_offset == 3
    if rule == "epoch":
        assert a.values() == b.values()
        assert a.segment_bytes() == b.segment_bytes()  # byte-identical replicas
        assert a.partition.log.epoch_cache.entries == b.partition.log.epoch_cache.entries
    else:
        # Negative control: the same offsets hold different messages, for ever.
        assert a.values() == [b"m1", b"m2", b"m4"]
        assert a.segment_bytes() != b.segment_bytes()
