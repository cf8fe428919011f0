"""mafka.client's ShareConsumer (KIP-932) on a real 3-broker cluster.

1. Five members of one share group on a 2-partition topic all receive records; together they get
   every record, each ACCEPTed once (implicit acknowledgement, results through the callback).
2. A member that RELEASEs every record it gets: its records are delivered again (delivery count 2
   or more) and ACCEPTed by the other member; nothing is accepted twice.
3. A member (a process of its own) that holds records without acknowledging them: frozen
   (SIGSTOP), its records go to another member only after the lock duration; killed (SIGKILL), its
   records go to another member (the broker releases them when the connection drops, at the latest
   after the lock duration).
4. Poison records: one REJECTed is never delivered again; one RELEASEd every time is delivered
   exactly ``group.share.delivery.count.limit`` times, then archived.
5. The leader of a partition is SIGKILLed while three members consume (explicit ACCEPT,
   ``commit_async``): the checker (:mod:`tests.harness.share_checker`) finds every produced record
   ACCEPTed exactly once or archived, none lost; its negative control shows it catches a record
   accepted twice and a record lost.
Plus the asyncio face (AIOShareConsumer) and the API's refusals (explicit-mode polls with records
unacknowledged, acknowledge in implicit mode, a poll without a subscription).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness.chaos import Chaos, create_topic
from tests.harness.cluster import ClusterFactory, LocalCluster
from tests.harness.share_checker import ShareHistory, check
from tests.harness.waits import wait_until

pytestmark = pytest.mark.integration

LOCK_MS = 4000
DELIVERY_LIMIT = 3
SETTINGS = {
    "zookeeper.session.timeout.ms": "6000",
    "default.replication.factor": "3",
    "offsets.topic.replication.factor": "3",
    "offsets.topic.num.partitions": "3",
    "share.coordinator.state.topic.num.partitions": "3",
    "auto.leader.rebalance.enable": "false",
    "replica.lag.time.max.ms": "4000",
    "group.share.record.lock.duration.ms": str(LOCK_MS),
    "group.share.delivery.count.limit": str(DELIVERY_LIMIT),
}
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def cluster(cluster_factory: ClusterFactory) -> Iterator[LocalCluster]:
    with cluster_factory.own(name="share-client", settings=SETTINGS) as c:  # its own: one test kills a leader
        yield c


# ------------------------------------------------------------------------------ helpers


def _share_group(cluster: LocalCluster) -> str:
    """A new share group whose share-partitions start at the earliest offset, known to every broker."""
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    group = f"sc-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    entry = ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)
    for future in admin.incremental_alter_configs([ConfigResource(ResourceType.GROUP, group,
                                                                  incremental_configs=[entry])]).values():
        future.result(30)

    def everywhere() -> bool:
        for broker in cluster.info["brokers"]:
            one = AdminClient({"bootstrap.servers": f"127.0.0.1:{broker['port']}"})
            (res,) = one.describe_configs([ConfigResource(ResourceType.GROUP, group)]).values()
            if res.result(10)["share.auto.offset.reset"].value != "earliest":
                return False
        return True

    wait_until(everywhere, 30, "every broker applies share.auto.offset.reset=earliest", interval=0.3,
               retry=(Exception,))
    return group


def _produce(cluster: LocalCluster, topic: str, n: int, partitions: int, prefix: str = "r") -> set[tuple[int, int]]:
    """``n`` records spread over the partitions (acks=all); returns their (partition, offset)s."""
    from confluent_kafka import Producer

    done: set[tuple[int, int]] = set()

    def report(err: Any, msg: Any) -> None:
        assert err is None, err
        done.add((msg.partition(), msg.offset()))

    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 5})
    for i in range(n):
        producer.produce(topic, f"{prefix}-{i}".encode(), key=f"k{i}".encode(), partition=i % partitions,
                         on_delivery=report)
    assert producer.flush(60) == 0
    assert len(done) == n
    return done


def _consumer(cluster: LocalCluster, group: str, **conf: Any) -> Any:
    from mafka.client import ShareConsumer

    settings = {"bootstrap.servers": cluster.bootstrap, "group.id": group}
    settings.update({k.replace("_", "."): v for k, v in conf.items()})
    return ShareConsumer(settings)


class _Worker(threading.Thread):
    """One in-process ShareConsumer polling in a thread until stopped; ``decide(msg)`` gives the
    acknowledge type in explicit mode (None: implicit)."""

    def __init__(self, cluster: LocalCluster, group: str, topic: str, history: ShareHistory, name: str,
                 decide: Any = None, work_s: float = 0.0, max_poll_records: int = 10) -> None:
        super().__init__(name=name, daemon=True)
        conf = {"max_poll_records": max_poll_records}
        if decide is not None:
            conf["share_acknowledgement_mode"] = "explicit"
        self.consumer = _consumer(cluster, group, **conf)
        self.history = history
        self.decide = decide
        self.work_s = work_s
        self.got: list[tuple[int, int, int]] = []
        self.got_at: list[float] = []
        self.types: dict[tuple[int, int], int] = {}
        self.errors: list[str] = []
        self.stopping = threading.Event()
        self.consumer.set_acknowledgement_commit_callback(self._on_ack)
        self.consumer.subscribe([topic])
        self._sent: dict[tuple[int, int], list[int]] = {}
        self._lock = threading.Lock()

    def _on_ack(self, offsets: Any, exc: Any) -> None:
        with self._lock:
            for tp, done in offsets.items():
                for o in done:
                    types = self._sent.get((tp.partition, o)) or [1]
                    self.history.ack([(tp.partition, o)], types.pop(0), exc is None)

    def run(self) -> None:
        try:
            while not self.stopping.is_set():
                msgs = self.consumer.poll(0.3)
                for m in msgs:
                    if m.error() is not None:
                        self.errors.append(m.error().name())
                        continue
                    record = (m.partition(), m.offset())
                    self.got.append((m.partition(), m.offset(), m.delivery_count()))
                    self.got_at.append(time.monotonic())
                    self.history.deliver(record)
                    if self.work_s:
                        time.sleep(self.work_s)
                    ack_type = 1 if self.decide is None else int(self.decide(m))
                    with self._lock:
                        self._sent.setdefault(record, []).append(ack_type)
                    if self.decide is not None:
                        self.consumer.acknowledge(m, ack_type)
                if msgs and self.decide is not None:
                    self.consumer.commit_async()
        except Exception as exc:  # noqa: BLE001 - reported by the test
            self.errors.append(repr(exc))
        finally:
            self.consumer.close()

    def stop(self) -> None:
        self.stopping.set()
        self.join(30)
        assert not self.is_alive(), f"{self.name} did not stop"


def _accepted(history: ShareHistory) -> Counter[tuple[int, int]]:
    return Counter(r for r, t, ok in history.acks if ok and t == 1)


def _start_offsets(cluster: LocalCluster, group: str, topic: str, partitions: int) -> dict[int, int]:
    from mafka.client import AdminClient, TopicPartition

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    futures = admin.list_share_group_offsets({group: [TopicPartition(topic, p) for p in range(partitions)]})
    got = futures[group].result(30)
    return {tp.partition: -1 if info.start_offset is None else info.start_offset for tp, info in got.items()}


# ------------------------------------------------------------------------------ a member process


class _MemberProcess:
    """``tests/harness/share_member.py`` in a process of its own; its JSON events collected."""

    def __init__(self, cluster: LocalCluster, group: str, topic: str, mode: str, log: Path) -> None:
        argv = [sys.executable, "-m", "tests.harness.share_member", "--bootstrap", cluster.bootstrap,
                "--group", group, "--topic", topic, "--mode", mode]
        self.log = open(log, "ab")
        self.proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=self.log,
                                     start_new_session=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
        self.events: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self.events.append(json.loads(line))
            except ValueError:
                continue

    def got(self) -> list[tuple[int, int]]:
        return [(e["p"], e["o"]) for e in list(self.events) if e["event"] == "got"]

    def signal(self, sig: int) -> float:
        at = time.monotonic()
        os.kill(self.proc.pid, sig)
        return at

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self._reader.join(5)
        self.log.close()


# ------------------------------------------------------------------------------ the tests


def test_five_members_on_two_partitions_all_receive_and_each_record_is_accepted_once(cluster: LocalCluster) -> None:
    topic = create_topic(cluster, partitions=2, rf=3)
    group = _share_group(cluster)
    produced = _produce(cluster, topic, 300, 2)
    history = ShareHistory(produced=produced)
    workers = [_Worker(cluster, group, topic, history, f"m{i}", work_s=0.005, max_poll_records=5) for i in range(5)]
    for w in workers:
        w.start()
    try:
        wait_until(lambda: set(_accepted(history)) >= produced, 120,
                   lambda: f"{len(set(_accepted(history)) & produced)} of {len(produced)} accepted", interval=0.3)
    finally:
        for w in workers:
            w.stop()
    assert all(not w.errors for w in workers), [w.errors for w in workers]
    assert all(w.got for w in workers), [len(w.got) for w in workers]  # every member received records
    assert check(history, {}) == []
    assert max(_accepted(history).values()) == 1


def test_released_records_are_delivered_again_and_accepted_by_another_member(cluster: LocalCluster) -> None:
    from mafka.client import AcknowledgeType

    topic = create_topic(cluster, partitions=1, rf=3)
    group = _share_group(cluster)
    produced = _produce(cluster, topic, 60, 1)
    history = ShareHistory(produced=produced)
    releaser = _consumer(cluster, group, share_acknowledgement_mode="explicit", max_poll_records=10)
    accepter: _Worker | None = None
    try:
        releaser.subscribe([topic])
        got: list[Any] = []
        wait_until(lambda: got.extend(m for m in releaser.poll(0.5) if m.error() is None) or got, 60,
                   "the releasing member got records", interval=0.1)
        for m in got:
            releaser.acknowledge(m, AcknowledgeType.RELEASE)
        outcome = releaser.commit_sync(30)
        assert outcome and all(v is None for v in outcome.values()), outcome
        released = {(m.partition(), m.offset()) for m in got}
        assert all(m.delivery_count() == 1 for m in got)

        accepter = _Worker(cluster, group, topic, history, "accepter", decide=lambda m: AcknowledgeType.ACCEPT)
        accepter.start()
        wait_until(lambda: set(_accepted(history)) >= produced, 120,
                   lambda: f"{len(set(_accepted(history)))} of {len(produced)} accepted", interval=0.3)
    finally:
        if accepter is not None:
            accepter.stop()
        releaser.close()
    counts = {(p, o): dc for p, o, dc in accepter.got}
    assert {r: counts[r] for r in released} == {r: 2 for r in released}  # delivered again, to the other
    assert all(dc == 1 for r, dc in counts.items() if r not in released)
    assert check(history, {}) == []


def test_a_frozen_members_records_move_after_the_lock_duration_and_a_killed_members_too(
        cluster: LocalCluster, tmp_path: Path) -> None:
    topic = create_topic(cluster, partitions=1, rf=3)
    group = _share_group(cluster)
    produced = _produce(cluster, topic, 40, 1)
    holder = _MemberProcess(cluster, group, topic, "hold", tmp_path / "holder.log")
    history = ShareHistory(produced=produced)
    other: _Worker | None = None
    try:
        wait_until(lambda: holder.got(), 60, "the holding member got records", interval=0.2)
        held = set(holder.got())
        held_at = min(e["t"] for e in holder.events if e["event"] == "got")
        holder.signal(signal.SIGSTOP)
        other = _Worker(cluster, group, topic, history, "other")
        other.start()
        wait_until(lambda: held <= set(_accepted(history)), 60,
                   lambda: f"{len(held & set(_accepted(history)))} of {len(held)} held records accepted by the other",
                   interval=0.2)
        firsts = [t for (p, o, _), t in zip(list(other.got), list(other.got_at), strict=False) if (p, o) in held]
        assert min(firsts) - held_at >= LOCK_MS / 1000.0 - 0.5  # not before the lock ran out
        assert all(dc >= 2 for p, o, dc in other.got if (p, o) in held)
        holder.signal(signal.SIGCONT)
        other.stop()
        other = None

        more = _produce(cluster, topic, 20, 1, prefix="second")
        history.produced |= more
        holder2 = _MemberProcess(cluster, group, topic, "hold", tmp_path / "holder2.log")
        try:
            wait_until(lambda: set(holder2.got()) & more, 60, "the second holder got records", interval=0.2)
            held2 = set(holder2.got())
            holder2.signal(signal.SIGKILL)
            other = _Worker(cluster, group, topic, history, "other2")
            other.start()
            wait_until(lambda: held2 <= set(_accepted(history)), 60, "the killed member's records accepted",
                       interval=0.2)
        finally:
            holder2.close()
    finally:
        if other is not None:
            other.stop()
        holder.close()
    assert [r for r, n in _accepted(history).items() if n > 1] == []


def test_poison_records_are_archived_rejected_at_once_or_at_the_delivery_limit(cluster: LocalCluster) -> None:
    from mafka.client import AcknowledgeType

    topic = create_topic(cluster, partitions=1, rf=3)
    group = _share_group(cluster)
    produced = _produce(cluster, topic, 30, 1)
    history = ShareHistory(produced=produced)

    def decide(m: Any) -> int:
        if m.value() == b"r-7":
            return AcknowledgeType.REJECT
        if m.value() == b"r-11":
            return AcknowledgeType.RELEASE  # always: delivered until the limit archives it
        return AcknowledgeType.ACCEPT

    worker = _Worker(cluster, group, topic, history, "poison", decide=decide)
    worker.start()
    try:
        wait_until(lambda: len(set(_accepted(history))) >= len(produced) - 2, 60, "the good records accepted",
                   interval=0.2)
        wait_until(lambda: sum(1 for p, o, _ in worker.got if o == 11) >= DELIVERY_LIMIT, 60,
                   "the released record delivered up to the limit", interval=0.2)
        time.sleep(LOCK_MS / 1000.0 + 1.0)  # anything still coming back would come by now
    finally:
        worker.stop()
    deliveries = Counter(o for _, o, _ in worker.got)
    assert deliveries[7] == 1  # rejected: never again
    assert deliveries[11] == DELIVERY_LIMIT  # released each time: archived at the limit
    assert [dc for _, o, dc in worker.got if o == 11] == list(range(1, DELIVERY_LIMIT + 1))
    assert check(history, {}, delivery_limit=DELIVERY_LIMIT) == []
    offsets = _start_offsets(cluster, group, topic, 1)
    assert offsets[0] == 30  # every record acknowledged or archived


def test_a_leader_sigkill_loses_no_acknowledgement_and_redelivers_the_rest(cluster: LocalCluster) -> None:
    from mafka.client import AcknowledgeType

    chaos = Chaos(cluster)
    topic = create_topic(cluster, partitions=2, rf=3)
    group = _share_group(cluster)
    produced = _produce(cluster, topic, 600, 2)
    history = ShareHistory(produced=produced)
    workers = [_Worker(cluster, group, topic, history, f"w{i}", decide=lambda m: AcknowledgeType.ACCEPT,
                       work_s=0.003, max_poll_records=20) for i in range(3)]
    for w in workers:
        w.start()
    killed = -1
    try:
        wait_until(lambda: len(_accepted(history)) >= 150, 90, "a quarter accepted", interval=0.1)
        killed = chaos.leader(topic, 0)
        chaos.kill(killed)

        def all_acknowledged() -> bool:
            return _start_offsets(cluster, group, topic, 2) == {0: 300, 1: 300}

        wait_until(all_acknowledged, 180,
                   lambda: f"{len(set(_accepted(history)) & produced)} of {len(produced)} accepted", interval=1.0,
                   retry=(Exception,))
        time.sleep(2.0)  # the last acknowledgements' answers reach the members
    finally:
        for w in workers:
            w.stop()
        if killed >= 0:
            chaos.restart(killed)
    offsets = _start_offsets(cluster, group, topic, 2)
    violations = check(history, offsets)
    assert violations == [], violations[:10]
    assert offsets == {0: 300, 1: 300}


def test_the_checker_catches_a_record_accepted_twice_and_a_lost_record() -> None:
    history = ShareHistory(produced={(0, 0), (0, 1), (0, 2), (0, 3)})
    for r in [(0, 0), (0, 1), (0, 1), (0, 3)]:
        history.deliver(r)
        history.ack([r], 1, True)
    history.deliver((0, 3))
    history.ack([(0, 2)], 1, False)  # an ACCEPT whose answer was lost, below the start offset: fine
    assert check(history, {0: 4}) == ["accepted twice: partition 0 offset 1 (2 successful ACCEPTs)"]
    history.produced.add((0, 4))  # never delivered
    history.ack([(1, 9)], 1, True)
    found = check(history, {0: 4})
    assert "lost: partition 0 offset 4 (delivered 0 times, never acknowledged)" in found
    assert "phantom: partition 1 offset 9 was acknowledged but never produced" in found
    assert check(history, {0: 2}) != check(history, {0: 4})  # (0, 2) counts only below the start offset


def test_the_api_refuses_what_confluent_kafka_refuses(cluster: LocalCluster) -> None:
    from mafka.client import AcknowledgeType, IllegalStateException

    topic = create_topic(cluster, partitions=1, rf=3)
    group = _share_group(cluster)
    _produce(cluster, topic, 5, 1)
    implicit = _consumer(cluster, group)
    explicit = _consumer(cluster, group, share_acknowledgement_mode="explicit")
    try:
        with pytest.raises(IllegalStateException):
            implicit.poll(0.1)  # not subscribed
        with pytest.raises(ValueError):
            implicit.subscribe([topic, topic])
        explicit.subscribe([topic])
        got: list[Any] = []
        wait_until(lambda: got.extend(m for m in explicit.poll(0.5) if m.error() is None) or got, 60,
                   "the explicit member got records", interval=0.1)
        with pytest.raises(IllegalStateException):
            explicit.poll(0.1)  # records of the last poll unacknowledged
        for m in got:
            explicit.acknowledge(m, AcknowledgeType.ACCEPT)
        with pytest.raises(IllegalStateException):
            explicit.acknowledge(got[0])  # acknowledged already
        outcome = explicit.commit_sync(30)
        assert outcome and all(v is None for v in outcome.values()), outcome
        implicit.subscribe([topic])
        with pytest.raises(IllegalStateException):
            implicit.acknowledge(got[0])  # implicit mode
    finally:
        implicit.close()
        explicit.close()
    with pytest.raises(IllegalStateException):
        explicit.poll(0.1)  # closed


def test_the_asyncio_share_consumer_consumes_and_acknowledges(cluster: LocalCluster) -> None:
    from mafka.client.aio import AIOShareConsumer

    topic = create_topic(cluster, partitions=2, rf=3)
    group = _share_group(cluster)
    produced = _produce(cluster, topic, 40, 2)

    async def consume() -> tuple[set[tuple[int, int]], dict[Any, Any]]:
        consumer = AIOShareConsumer({"bootstrap.servers": cluster.bootstrap, "group.id": group})
        await consumer.start()
        consumer.subscribe([topic])
        seen: set[tuple[int, int]] = set()
        deadline = time.monotonic() + 60
        try:
            while seen < produced and time.monotonic() < deadline:
                for m in await consumer.poll(0.5):
                    assert m.error() is None, m.error()
                    seen.add((m.partition(), m.offset()))
            result = await consumer.commit_sync(30)
        finally:
            await consumer.close()
        return seen, result

    seen, result = asyncio.run(consume())
    assert seen == produced
    assert result and all(v is None for v in result.values()), result
    offsets = _start_offsets(cluster, group, topic, 2)
    assert offsets == {0: 20, 1: 20}
