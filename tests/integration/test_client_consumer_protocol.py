"""mafka.client's consumers with ``group.protocol=consumer`` (KIP-848) on a real 3-broker cluster.

* Three :class:`~mafka.client.Consumer` members share a 6-partition topic while a producer
  writes; a fourth member joins, then one member closes.  Checked: a member's ``on_revoke``
  never names a partition it still has once the change settled (only what moves is revoked,
  never everything), no partition is ever held by two members at once (the coordinator gives a
  partition out only after its owner revoked it), every acknowledged record is consumed at
  least once, and the group's committed offsets never go backwards (sampled throughout).
* Two :class:`~mafka.client.aio.AIOConsumer` members split the topic, commit, and the survivor
  takes every partition when the other stops, reading on from the committed offsets.
* A regex subscription (``^name.*``) is resolved by the coordinator, and a topic created
  later that matches is assigned and read.

The coordinator's heartbeat interval is 500 ms here (``group.consumer.heartbeat.interval.ms``;
Kafka's default 5 s would only make the test slower).
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections import defaultdict
from typing import Any

import pytest

from tests.harness.cluster import ClusterSpec

from .test_clients import wait_for_leaders

pytestmark = pytest.mark.integration

PARTITIONS = 6
ALL = frozenset(range(PARTITIONS))
SETTINGS = {
    "group.consumer.heartbeat.interval.ms": "500",
    "group.consumer.min.heartbeat.interval.ms": "500",
}
#: shared with any module asking for the same settings; topics and groups are uuid-named
CLUSTER = ClusterSpec(settings=SETTINGS)


def new_topic(cluster: Any) -> str:
    from confluent_kafka.admin import AdminClient, NewTopic

    name = f"kip848-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    for future in admin.create_topics([NewTopic(name, PARTITIONS, 3)]).values():
        future.result(30)
    wait_for_leaders(cluster, name, PARTITIONS)
    return name


def wait_for(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


class Ledger:
    """Who holds which partition, as the members' callbacks say, and every callback in order."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.owner: dict[int, str] = {}
        self.held: dict[str, set[int]] = defaultdict(set)
        self.events: list[tuple[str, str, frozenset[int]]] = []  # (member, kind, partitions)
        self.overlaps: list[tuple[str, int, str]] = []
        self.consumed: set[bytes] = set()

    def note(self, name: str, kind: str, parts: list[Any]) -> None:
        ps = frozenset(p.partition for p in parts)
        with self.lock:
            self.events.append((name, kind, ps))
            for p in ps:
                if kind == "assign":
                    other = self.owner.get(p)
                    if other is not None and other != name:
                        self.overlaps.append((name, p, other))
                    self.owner[p] = name
                    self.held[name].add(p)
                else:
                    if self.owner.get(p) == name:
                        del self.owner[p]
                    self.held[name].discard(p)

    def snapshot(self) -> tuple[int, dict[str, frozenset[int]]]:
        """(how many callbacks so far, what each member holds)."""
        with self.lock:
            return len(self.events), {n: frozenset(ps) for n, ps in self.held.items()}


class Member(threading.Thread):
    """One group member on its own thread: subscribe, poll, record; close when told."""

    def __init__(self, name: str, bootstrap: str, group: str, topic: str, ledger: Ledger) -> None:
        super().__init__(name=f"member-{name}", daemon=True)
        self.member = name
        self.conf = {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                     "auto.offset.reset": "earliest", "enable.auto.commit": True,
                     "auto.commit.interval.ms": 200}
        self.topic = topic
        self.ledger = ledger
        self.stop = threading.Event()
        self.errors: list[Any] = []
        self.consumer: Any = None

    def reconciled(self) -> bool:
        """The member owns its whole target and acknowledged it (its state machine is STABLE)."""
        from mafka.client.consumer_membership import MemberState

        member = None if self.consumer is None else self.consumer._member
        return member is not None and member.state.state is MemberState.STABLE and not member.state.reconciling

    def run(self) -> None:
        from mafka.client import Consumer

        self.consumer = consumer = Consumer(self.conf)
        ledger, name = self.ledger, self.member
        consumer.subscribe([self.topic], on_assign=lambda c, ps: ledger.note(name, "assign", ps),
                           on_revoke=lambda c, ps: ledger.note(name, "revoke", ps),
                           on_lost=lambda c, ps: ledger.note(name, "lost", ps))
        try:
            while not self.stop.is_set():
                for msg in consumer.consume(500, 0.1):
                    if msg.error() is not None:
                        self.errors.append(msg.error())
                        continue
                    with ledger.lock:
                        ledger.consumed.add(msg.value())
        finally:
            consumer.close()  # on_revoke for what it holds, the commit, then the leave heartbeat


class Writer(threading.Thread):
    """An idempotent producer writing unique values until stopped (bounded: 20,000 records)."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(name="writer", daemon=True)
        self.bootstrap, self.topic = bootstrap, topic
        self.stop = threading.Event()
        self.acked: dict[bytes, tuple[int, int]] = {}
        self.failed: list[Any] = []

    def run(self) -> None:
        from mafka.client import Producer

        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 5})

        def report(err: Any, msg: Any) -> None:
            if err is not None:
                self.failed.append(err)
            else:
                self.acked[msg.value()] = (msg.partition(), msg.offset())

        i = 0
        while not self.stop.is_set() and i < 20_000:
            # keyed: murmur2 spreads the records over every partition
            producer.produce(self.topic, value=f"v-{i}".encode(), key=str(i).encode(), on_delivery=report)
            i += 1
            if i % 20 == 0:
                producer.poll(0.01)
        assert producer.flush(60) == 0
        producer.close()


class CommitWatch(threading.Thread):
    """Samples the group's committed offsets (OffsetFetch as an outsider) every 100 ms."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        super().__init__(name="commit-watch", daemon=True)
        self.conf = {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer"}
        self.topic = topic
        self.stop = threading.Event()
        self.seen: dict[int, list[int]] = defaultdict(list)

    def run(self) -> None:
        from mafka.client import Consumer, TopicPartition

        watcher = Consumer(self.conf)
        try:
            while not self.stop.is_set():
                try:
                    got = watcher.committed([TopicPartition(self.topic, p) for p in range(PARTITIONS)], timeout=10)
                except Exception:  # noqa: BLE001 - a sample lost to a coordinator hiccup
                    got = []
                for tp in got:
                    if tp.offset >= 0:
                        self.seen[tp.partition].append(tp.offset)
                self.stop.wait(0.1)
        finally:
            watcher.close()


class Settled:
    """Whether the group is done changing, asked of the coordinator (ConsumerGroupDescribe,
    through confluent-kafka's admin client) and of the members: the group is Stable (every
    member at the group's epoch with its whole target, nothing pending revocation) with exactly
    ``members``, and each member's application holds what the coordinator says it owns."""

    def __init__(self, bootstrap: str, group: str, ledger: Ledger) -> None:
        from confluent_kafka.admin import AdminClient

        self.admin = AdminClient({"bootstrap.servers": bootstrap})
        self.group, self.ledger = group, ledger

    def __call__(self, members: list[Member]) -> bool:
        from confluent_kafka import ConsumerGroupState

        if not all(m.reconciled() for m in members):
            return False
        try:
            described = self.admin.describe_consumer_groups([self.group])[self.group].result(10)
        except Exception:  # noqa: BLE001 - the coordinator moving: ask again
            return False
        if described.state != ConsumerGroupState.STABLE or len(described.members) != len(members):
            return False
        owns = {d.member_id: frozenset(tp.partition for tp in d.assignment.topic_partitions)
                for d in described.members}
        with self.ledger.lock:
            held = {m.consumer.memberid(): frozenset(self.ledger.held.get(m.member, set())) for m in members}
        return owns == held and all(owns.values()) and set().union(*owns.values()) == set(ALL)


def test_members_join_and_leave_while_a_producer_writes(cluster: Any) -> None:
    topic = new_topic(cluster)
    group = f"kip848-{uuid.uuid4().hex[:8]}"
    ledger = Ledger()
    members = {n: Member(n, cluster.bootstrap, group, topic, ledger) for n in ("m1", "m2", "m3", "m4")}
    writer = Writer(cluster.bootstrap, topic)
    watch = CommitWatch(cluster.bootstrap, group, topic)
    settled = Settled(cluster.bootstrap, group, ledger)
    try:
        for n in ("m1", "m2", "m3"):
            members[n].start()
        wait_for(lambda: settled([members[n] for n in ("m1", "m2", "m3")]), 60, "three members to share the partitions")
        mark0, held0 = ledger.snapshot()
        writer.start()
        watch.start()
        wait_for(lambda: len(ledger.consumed) > 500, 60, "records to flow")

        members["m4"].start()
        wait_for(lambda: settled(list(members.values())), 60, "the fourth member to get partitions")
        mark1, held1 = ledger.snapshot()
        wait_for(lambda: len(ledger.consumed) > len(writer.acked) // 2 + 500, 60, "records to flow with four")

        members["m1"].stop.set()
        members["m1"].join(30)
        assert not members["m1"].is_alive()
        wait_for(lambda: settled([members[n] for n in ("m2", "m3", "m4")]), 60, "the survivors to take m1's partitions")
        mark2, held2 = ledger.snapshot()
        time.sleep(1.0)  # the survivors read on
        writer.stop.set()
        writer.join(90)
        assert not writer.is_alive() and writer.failed == []
        wait_for(lambda: set(writer.acked) <= ledger.consumed, 60, "every acknowledged record to be consumed")
        time.sleep(0.5)  # one more auto-commit round for the watch
    finally:
        writer.stop.set()
        watch.stop.set()
        for m in members.values():
            m.stop.set()
        for m in members.values():
            if m.is_alive() or m.ident is not None:
                m.join(30)
        watch.join(30)

    events = ledger.events
    assert [m.errors for m in members.values()] == [[], [], [], []]
    assert not ledger.overlaps, (ledger.overlaps, events)
    assert not [e for e in events if e[1] == "lost"], events  # nobody was fenced

    def revoked(name: str, lo: int, hi: int) -> frozenset[int]:
        return frozenset().union(*[ps for n, kind, ps in events[lo:hi] if n == name and kind == "revoke"])

    # A revocation names only partitions the member no longer has once the change settled.
    for lo, hi, after in ((0, mark0, held0), (mark0, mark1, held1), (mark1, mark2, held2)):
        for name, holds in after.items():
            assert not revoked(name, lo, hi) & holds, (name, events[lo:hi], after)
    # The fourth member's arrival: each member gave up exactly what moved to m4, never all it had.
    for name in ("m1", "m2", "m3"):
        assert revoked(name, mark0, mark1) == held0[name] - held1[name], (name, events[mark0:mark1])
        assert held1[name], (name, held1)
    assert held1["m4"] == frozenset().union(*[held0[n] - held1[n] for n in ("m1", "m2", "m3")])
    # m1 closing: the survivors keep everything they had and only gain.
    for name in ("m2", "m3", "m4"):
        assert held1[name] <= held2[name], (name, events[mark1:mark2])
    print(f"\n{len(writer.acked)} records acknowledged, {len(ledger.consumed)} consumed; {len(events)} callbacks; "
          f"committed offsets sampled {sum(len(v) for v in watch.seen.values())} times")
    assert set(writer.acked) <= ledger.consumed
    assert len(writer.acked) > 1000
    assert sorted(watch.seen) == sorted(ALL), watch.seen
    for p, offsets in watch.seen.items():
        assert offsets == sorted(offsets), (p, offsets)  # committed offsets never go backwards


def test_asyncio_members_split_the_topic_and_the_survivor_takes_over(cluster: Any) -> None:
    from mafka.client import Consumer, TopicPartition
    from mafka.client.aio import AIOConsumer, AIOProducer

    topic = new_topic(cluster)
    group = f"kip848-aio-{uuid.uuid4().hex[:8]}"

    async def produce(producer: AIOProducer, tag: str, n: int) -> dict[bytes, tuple[int, int]]:
        futures = [await producer.send(topic, f"{tag}-{i}".encode(), key=str(i).encode()) for i in range(n)]
        return {f"{tag}-{i}".encode(): (m.partition, m.offset) for i, m in enumerate(await asyncio.gather(*futures))}

    async def drain(consumers: list[AIOConsumer], got: dict[bytes, int], want: set[bytes], until: Any) -> None:
        deadline = time.monotonic() + 60
        while not (want <= set(got) and until()):
            assert time.monotonic() < deadline, (len(want - set(got)), [c.assignment() for c in consumers])
            for i, c in enumerate(consumers):
                for msgs in (await c.getmany(timeout_ms=100)).values():
                    for m in msgs:
                        got[m.value()] = i

    def parts(c: AIOConsumer) -> set[int]:
        return {tp.partition for tp in c.assignment()}

    async def run() -> tuple[dict[bytes, tuple[int, int]], dict[bytes, int], dict[bytes, int]]:
        conf = {"bootstrap_servers": cluster.bootstrap, "group_id": group, "group_protocol": "consumer",
                "auto_offset_reset": "earliest", "enable_auto_commit": False}
        async with AIOProducer(bootstrap_servers=cluster.bootstrap) as producer:
            c1, c2 = AIOConsumer(topic, **conf), AIOConsumer(topic, **conf)
            await c1.start()
            await c2.start()
            got: dict[bytes, int] = {}
            try:
                await drain([c1, c2], got, set(),
                            lambda: parts(c1) and parts(c2) and parts(c1) | parts(c2) == set(ALL)
                            and not parts(c1) & parts(c2))
                first = await produce(producer, "a", 600)  # keyed: every partition gets records
                await drain([c1, c2], got, set(first), lambda: True)
                await c1.commit()
                await c2.commit()
            finally:
                await c2.stop()
            try:
                second = await produce(producer, "b", 300)
                after: dict[bytes, int] = {}
                await drain([c1], after, set(second), lambda: parts(c1) == set(ALL))
                await c1.commit()
            finally:
                await c1.stop()
        return {**first, **second}, got, after

    acked, got, after = asyncio.run(run())
    assert {v for v in acked if v.startswith(b"a-")} <= set(got)
    assert set(got.values()) == {0, 1}  # both members read
    assert {v for v in acked if v.startswith(b"b-")} <= set(after)
    # The survivor starts c2's partitions at c2's commits: nothing read before is read again.
    assert not [v for v in after if v.startswith(b"a-")]
    # What c1 committed last is the end of every partition (OffsetFetch as an outsider).
    ends: dict[int, int] = defaultdict(int)
    for p, off in acked.values():
        ends[p] = max(ends[p], off + 1)
    check = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "group.protocol": "consumer"})
    try:
        committed = check.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=30)
    finally:
        check.close()
    # (A partition the sticky partitioner gave no record has nothing committed: OFFSET_INVALID.)
    assert {tp.partition: tp.offset for tp in committed} == {p: ends.get(p, -1001) for p in range(PARTITIONS)}


def test_a_regex_subscription_is_resolved_by_the_coordinator_and_follows_new_topics(cluster: Any) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    from mafka.client import Consumer, Producer

    first = new_topic(cluster)
    second = first + "-later"
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"kip848-re-{uuid.uuid4().hex[:8]}",
                         "group.protocol": "consumer", "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([f"^{first}.*"])

        def assigned() -> set[tuple[str, int]]:
            consumer.poll(0.1)
            return {(tp.topic, tp.partition) for tp in consumer.assignment()}

        wait_for(lambda: assigned() == {(first, p) for p in ALL}, 60, "the first topic's partitions")
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        for future in admin.create_topics([NewTopic(second, 2, 3)]).values():
            future.result(30)
        wait_for_leaders(cluster, second, 2)
        wait_for(lambda: assigned() == {(first, p) for p in ALL} | {(second, 0), (second, 1)}, 60,
                 "the new topic's partitions")
        producer = Producer({"bootstrap.servers": cluster.bootstrap})
        producer.produce(second, value=b"found", partition=1)
        assert producer.flush(30) == 0
        producer.close()
        msg = None
        deadline = time.monotonic() + 30
        while msg is None and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
        assert msg is not None and msg.error() is None
        assert (msg.topic(), msg.partition(), msg.value()) == (second, 1, b"found")
    finally:
        consumer.close()
