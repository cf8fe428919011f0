"""The consumer-protocol member's I/O (mafka.client.consumer_group_member) against a scripted
coordinator in-process: what reaches the application, in which order, and which heartbeats and
commits go out when.  No sockets: the kernel is a fake whose ``send`` answers from the script."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from types import SimpleNamespace as NS
from typing import Any

import pytest

from mafka.client.config import parse_config
from mafka.client.consumer_group_member import (
    CONSUMER_GROUP_HEARTBEAT,
    ConsumerGroupMember,
    new_group_member,
)
from mafka.client.group_member import GroupMember, RebalanceEvent
from mafka.client.kafka_error import KafkaError
from mafka.client.metadata import ClusterMetadata
from mafka.client.transport import UnsupportedByBroker
from mafka.errors import ErrorCode

T1 = bytes(range(16))
T2 = bytes(range(16, 32))
OFFSET_COMMIT = 8
#: A heartbeat interval long enough that a test waiting on an interval-paced heartbeat times out.
SLOW = 60_000


def metadata(topics: dict[str, bytes]) -> ClusterMetadata:
    md = ClusterMetadata()
    md.update(NS(brokers=[NS(node_id=1, host="h", port=1)],
                 topics=[NS(name=name, error_code=0, topic_id=tid, is_internal=False,
                            partitions=[NS(error_code=0, partition_index=p, leader_id=1, replica_nodes=[1],
                                           isr_nodes=[1]) for p in range(4)])
                         for name, tid in topics.items()]), 0.0)
    return md


def hb_answer(epoch: int, assignment: dict[bytes, list[int]] | None = None, code: int = 0,
              interval: int = SLOW) -> NS:
    tps = None if assignment is None else NS(topic_partitions=[NS(topic_id=t, partitions=ps)
                                                              for t, ps in assignment.items()])
    return NS(error_code=code, error_message=None, member_id=None, member_epoch=epoch,
              heartbeat_interval_ms=interval, assignment=tps)


def commit_answer(body: dict[str, Any], code: int = 0) -> NS:
    return NS(topics=[NS(name=t["name"], partitions=[NS(partition_index=p["partition_index"], error_code=code)
                                                     for p in t["partitions"]]) for t in body["topics"]])


class FakeKernel:
    """What the member uses of :class:`~mafka.client.kernel.Kernel`; ``respond(api_key, body)``
    is the coordinator.  ``timeline`` records heartbeats and commits as they are sent."""

    def __init__(self, respond: Callable[[int, dict[str, Any]], Any], *, topics: dict[str, bytes] | None = None,
                 **conf: Any) -> None:
        self.config = parse_config("consumer", {"bootstrap.servers": "x:1", "group.id": "g",
                                                "group.protocol": "consumer", **conf})
        self.topics = dict(topics or {"t1": T1})
        self.metadata = metadata(self.topics)
        self.respond = respond
        self.timeline: list[tuple[str, Any]] = []
        self.refreshes = 0
        self.tasks: set[asyncio.Task[Any]] = set()

    async def find_coordinator(self, key: str) -> int:
        return 1

    async def send(self, node: int, api_key: int, body: dict[str, Any], channel: str = "default",
                   timeout: float | None = None) -> Any:
        if api_key == CONSUMER_GROUP_HEARTBEAT:
            owned = None if body["topic_partitions"] is None else {
                t["topic_id"]: t["partitions"] for t in body["topic_partitions"]}
            self.timeline.append(("heartbeat", (body["member_epoch"], owned)))
        elif api_key == OFFSET_COMMIT:
            self.timeline.append(("commit", body["generation_id_or_member_epoch"]))
        await asyncio.sleep(0)
        return self.respond(api_key, body)

    def disconnect(self, node: int, channel: str | None = None) -> None:
        pass

    def spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        return task

    async def refresh_metadata(self, all_topics: bool = False) -> ClusterMetadata:
        self.refreshes += 1
        self.metadata = metadata(self.topics)
        return self.metadata

    async def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


class App:
    """The application side of a Consumer: handles each rebalance event at once, recording it
    in the kernel's timeline, and collects errors."""

    def __init__(self, kernel: FakeKernel) -> None:
        self.kernel = kernel
        self.errors: list[KafkaError] = []
        self.changed = asyncio.Event()

    def notify(self, event: Any) -> None:
        if isinstance(event, KafkaError):
            self.errors.append(event)
        else:
            assert isinstance(event, RebalanceEvent) and event.incremental
            self.kernel.timeline.append((event.kind, sorted(p for _, p in event.partitions)))
            event.done.set_result(None)
        self.changed.set()


async def until(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    """Waits (polling the loop) until ``predicate()`` holds; fails the test after ``timeout``."""
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.005)


def start(kernel: FakeKernel) -> tuple[ConsumerGroupMember, App]:
    app = App(kernel)
    member = new_group_member(kernel, app.notify)  # type: ignore[arg-type]
    assert isinstance(member, ConsumerGroupMember)
    kernel.spawn(member.run())
    member.subscribe(["t1"])
    return member, app


def test_group_protocol_chooses_the_member() -> None:
    classic = FakeKernel(lambda k, b: None)
    classic.config = parse_config("consumer", {"bootstrap.servers": "x:1", "group.id": "g"})
    assert isinstance(new_group_member(classic, lambda e: None), GroupMember)  # type: ignore[arg-type]


def test_revocation_reaches_the_application_before_the_new_partitions_and_is_acknowledged_at_once() -> None:
    def coordinator(api_key: int, body: dict[str, Any]) -> Any:
        owned = body["topic_partitions"]
        if body["member_epoch"] == 0:
            return hb_answer(1, {T1: [0, 1, 2]})
        if owned is not None and owned[0]["partitions"] == [0, 1, 2]:
            return hb_answer(2, {T1: [1, 2, 3]})  # t1-0 moves away, t1-3 comes
        return hb_answer(2)

    async def run() -> list[tuple[str, Any]]:
        kernel = FakeKernel(coordinator)
        member, _ = start(kernel)
        # Every heartbeat after the join is an acknowledgement: with a 60 s interval, only a
        # prompt one can arrive within the wait.
        await until(lambda: ("heartbeat", (2, {T1: [1, 2, 3]})) in kernel.timeline)
        assert member.owned == {("t1", 1), ("t1", 2), ("t1", 3)} and member.generation == 2
        await kernel.close()
        return kernel.timeline

    assert asyncio.run(run()) == [
        ("heartbeat", (0, {})),
        ("assign", [0, 1, 2]),
        ("heartbeat", (1, {T1: [0, 1, 2]})),
        ("revoke", [0]),  # only the partition that moves: t1-1 and t1-2 are kept throughout
        ("assign", [3]),
        ("heartbeat", (2, {T1: [1, 2, 3]})),
    ]


def test_a_fenced_member_loses_its_partitions_then_rejoins_with_epoch_0_and_the_same_id() -> None:
    member_ids: list[str] = []

    def coordinator(api_key: int, body: dict[str, Any]) -> Any:
        member_ids.append(body["member_id"])
        if body["member_epoch"] == 0:
            return hb_answer(5 if len(member_ids) > 1 else 1, {T1: [0, 1]} if len(member_ids) == 1 else {T1: [2]})
        if body["member_epoch"] == 1:
            return hb_answer(-1, code=ErrorCode.FENCED_MEMBER_EPOCH)
        return hb_answer(5)

    async def run() -> list[tuple[str, Any]]:
        kernel = FakeKernel(coordinator)
        member, _ = start(kernel)
        await until(lambda: ("heartbeat", (5, {T1: [2]})) in kernel.timeline)
        assert member.owned == {("t1", 2)}
        await kernel.close()
        return kernel.timeline

    assert asyncio.run(run()) == [
        ("heartbeat", (0, {})),
        ("assign", [0, 1]),
        ("heartbeat", (1, {T1: [0, 1]})),  # answered FENCED_MEMBER_EPOCH
        ("lost", [0, 1]),
        ("heartbeat", (0, {})),  # rejoins only after the application let go
        ("assign", [2]),
        ("heartbeat", (5, {T1: [2]})),
    ]
    assert len(set(member_ids)) == 1 and len(member_ids[0]) == 22


def test_an_unknown_topic_id_is_assigned_once_metadata_names_it() -> None:
    def coordinator(api_key: int, body: dict[str, Any]) -> Any:
        if body["member_epoch"] == 0:
            return hb_answer(1, {T1: [0], T2: [0, 1]})
        return hb_answer(1)

    async def run() -> tuple[list[tuple[str, Any]], int]:
        kernel = FakeKernel(coordinator)
        kernel.topics = {"t1": T1}
        member, _ = start(kernel)
        await until(lambda: ("heartbeat", (1, {T1: [0]})) in kernel.timeline)  # the resolvable part
        assert kernel.refreshes >= 1 and member.owned == {("t1", 0)}
        kernel.topics["t2"] = T2  # the topic appears in metadata
        await until(lambda: ("heartbeat", (1, {T1: [0], T2: [0, 1]})) in kernel.timeline)
        await kernel.close()
        return [e for e in kernel.timeline if e[0] != "heartbeat"], kernel.refreshes

    events, refreshes = asyncio.run(run())
    assert events == [("assign", [0]), ("assign", [0, 1])]  # t1-0, then t2-0 and t2-1


def test_a_commit_with_a_stale_epoch_is_retried_with_the_epoch_of_the_next_heartbeat() -> None:
    epoch = {"now": 1}

    def coordinator(api_key: int, body: dict[str, Any]) -> Any:
        if api_key == OFFSET_COMMIT:
            stale = body["generation_id_or_member_epoch"] != epoch["now"]
            return commit_answer(body, ErrorCode.STALE_MEMBER_EPOCH if stale else 0)
        if body["member_epoch"] == 0:
            return hb_answer(1, {T1: [0, 1]}, interval=50)
        return hb_answer(epoch["now"], interval=50)

    async def run() -> tuple[dict[Any, int], list[Any]]:
        kernel = FakeKernel(coordinator)
        member, _ = start(kernel)
        await until(lambda: member.generation == 1 and member.owned == {("t1", 0), ("t1", 1)})
        epoch["now"] = 2  # the coordinator moved the member on; it learns so with its next heartbeat
        result = await member.commit({("t1", 0): (10, None), ("t1", 1): (20, None)})
        await kernel.close()
        return result, [e[1] for e in kernel.timeline if e[0] == "commit"]

    result, commit_epochs = asyncio.run(run())
    assert result == {("t1", 0): 0, ("t1", 1): 0}
    assert commit_epochs == [1, 2]


def test_a_stale_commit_is_not_retried_for_a_partition_the_member_gave_up() -> None:
    def coordinator(api_key: int, body: dict[str, Any]) -> Any:
        if api_key == OFFSET_COMMIT:
            return commit_answer(body, ErrorCode.STALE_MEMBER_EPOCH)
        return hb_answer(1, {T1: [0]} if body["member_epoch"] == 0 else None)

    async def run() -> dict[Any, int]:
        kernel = FakeKernel(coordinator)
        member, _ = start(kernel)
        await until(lambda: member.owned == {("t1", 0)})
        result = await member.commit({("t1", 3): (10, None)})  # not (or no longer) its partition
        await kernel.close()
        assert [e for e in kernel.timeline if e[0] == "commit"] == [("commit", 1)]
        return result

    assert asyncio.run(run()) == {("t1", 3): ErrorCode.STALE_MEMBER_EPOCH}


@pytest.mark.parametrize("instance_id,epoch", [(None, -1), ("i-1", -2)])
def test_leaving_sends_the_leave_epoch(instance_id: str | None, epoch: int) -> None:
    def coordinator(api_key: int, body: dict[str, Any]) -> Any:
        return hb_answer(1 if body["member_epoch"] >= 0 else body["member_epoch"],
                         {T1: [0]} if body["member_epoch"] == 0 else None)

    async def run() -> list[tuple[str, Any]]:
        conf: dict[str, Any] = {"group.instance.id": instance_id} if instance_id else {}
        kernel = FakeKernel(coordinator, **conf)
        member, _ = start(kernel)
        await until(lambda: ("heartbeat", (1, {T1: [0]})) in kernel.timeline)
        member.unsubscribe()
        await member.leave()
        member.owned = set()
        await asyncio.sleep(0.05)  # no heartbeat after leaving
        await kernel.close()
        return kernel.timeline

    timeline = asyncio.run(run())
    assert timeline[-1] == ("heartbeat", (epoch, None))
    assert [e for e in timeline if e[0] == "heartbeat"][-2] == ("heartbeat", (1, {T1: [0]}))


def test_a_fatal_error_releases_the_partitions_tells_the_application_and_stops_heartbeating() -> None:
    def coordinator(api_key: int, body: dict[str, Any]) -> Any:
        if body["member_epoch"] == 0:
            return hb_answer(1, {T1: [0]}, interval=20)
        return hb_answer(-1, code=ErrorCode.GROUP_MAX_SIZE_REACHED)

    async def run() -> tuple[list[tuple[str, Any]], list[KafkaError]]:
        kernel = FakeKernel(coordinator)
        member, app = start(kernel)
        await until(lambda: bool(app.errors))
        await asyncio.sleep(0.1)
        await kernel.close()
        return kernel.timeline, app.errors

    timeline, errors = asyncio.run(run())
    assert timeline == [("heartbeat", (0, {})), ("assign", [0]), ("heartbeat", (1, {T1: [0]})), ("lost", [0])]
    assert [(e.code(), e.fatal()) for e in errors] == [(ErrorCode.GROUP_MAX_SIZE_REACHED, True)]


def test_a_cluster_without_the_consumer_protocol_is_a_fatal_error() -> None:
    def coordinator(api_key: int, body: dict[str, Any]) -> Any:
        raise UnsupportedByBroker("ConsumerGroupHeartbeat")

    async def run() -> list[KafkaError]:
        kernel = FakeKernel(coordinator)
        _, app = start(kernel)
        await until(lambda: bool(app.errors))
        await kernel.close()
        return app.errors

    [error] = asyncio.run(run())
    assert error.code() == ErrorCode.UNSUPPORTED_VERSION and error.fatal()
    assert "group.protocol=classic" in error.str()


def test_max_poll_interval_exceeded_leaves_loses_the_partitions_and_rejoins_on_the_next_poll() -> None:
    def coordinator(api_key: int, body: dict[str, Any]) -> Any:
        if body["member_epoch"] == 0:
            return hb_answer(3, {T1: [0, 1]}, interval=50)
        return hb_answer(body["member_epoch"] if body["member_epoch"] < 0 else 3, interval=50)

    async def run() -> tuple[list[tuple[str, Any]], list[KafkaError]]:
        poll_interval: dict[str, Any] = {"max.poll.interval.ms": 300}
        kernel = FakeKernel(coordinator, **poll_interval)
        member, app = start(kernel)
        await until(lambda: ("lost", [0, 1]) in kernel.timeline)  # nobody polls
        await asyncio.sleep(0.2)
        assert member.generation == -1 and not member.owned
        assert kernel.timeline[-2:] == [("heartbeat", (-1, None)), ("lost", [0, 1])]
        async def poll() -> None:  # the application polls again, and keeps polling
            while True:
                member.last_poll = time.monotonic()
                await asyncio.sleep(0.05)

        poller = kernel.spawn(poll())
        await until(lambda: kernel.timeline.count(("assign", [0, 1])) == 2)
        poller.cancel()
        await kernel.close()
        return kernel.timeline, app.errors

    timeline, errors = asyncio.run(run())
    assert [e.code() for e in errors] == [KafkaError._MAX_POLL_EXCEEDED]
    rejoin = timeline.index(("lost", [0, 1])) + 1
    assert timeline[rejoin] == ("heartbeat", (0, {}))  # same member, epoch 0, nothing owned
