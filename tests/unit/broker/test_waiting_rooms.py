"""The fetch waiting room (mafka.broker.waiting_rooms) with fake partitions and a Clock."""

from __future__ import annotations

from typing import Any

from twisted.internet.task import Clock

from mafka.broker.replica_records import FetchPartition
from mafka.broker.waiting_rooms import WaitingRooms


class FakePartition:
    def __init__(self) -> None:
        self.is_leader = True
        self.leader_epoch = 5
        self.bytes = 0
        self.checks = 0

    def bytes_available(self, offset: int, replica_id: int, *, fetch_only_from_leader: bool,
                        isolation_level: int) -> int:
        self.checks += 1
        return self.bytes


def make(n: int) -> tuple[Clock, WaitingRooms, dict[tuple[str, int], FakePartition], list[Any]]:
    clock = Clock()
    parts = {("t", i): FakePartition() for i in range(n)}
    reads: list[Any] = []

    def read(replica_id: int, max_bytes: int, partitions: Any, whole: bool, cm: Any, iso: int) -> list[Any]:
        reads.append([(p.topic, p.partition) for p in partitions])
        return []

    rooms = WaitingRooms(clock, partition=parts.get, min_insync_replicas=lambda t: 1, read=read)
    return clock, rooms, parts, reads


def park(rooms: WaitingRooms, n: int, min_bytes: int = 1) -> Any:
    return rooms.park_fetch(
        1, 500, min_bytes, 1 << 20, [FetchPartition("t", i, 0, 1 << 20, 5) for i in range(n)],
        whole_first_batches=False, client_metadata=None, isolation_level=0,
    )


def test_a_wake_rechecks_only_the_woken_partition_of_a_large_parked_fetch() -> None:
    n = 3000
    clock, rooms, parts, reads = make(n)
    d = park(rooms, n)
    assert not d.called
    for i in range(n):  # every partition changes, none gains data (say, an ISR or HW change)
        rooms.wake(("t", i))
    checks = sum(p.checks for p in parts.values())
    assert checks == 2 * n, checks  # once at park time, once per wake: not n per wake
    parts[("t", 1234)].bytes = 10
    rooms.wake(("t", 1234))
    assert d.called and len(reads) == 1 and len(reads[0]) == n


def test_min_bytes_add_up_across_partitions_and_a_shrink_is_counted() -> None:
    clock, rooms, parts, reads = make(3)
    d = park(rooms, 3, min_bytes=100)
    parts[("t", 0)].bytes = 60
    rooms.wake(("t", 0))
    parts[("t", 0)].bytes = 30  # (deleted records) the partition's share is replaced, not added
    rooms.wake(("t", 0))
    parts[("t", 1)].bytes = 60
    rooms.wake(("t", 1))
    assert not d.called  # 30 + 60 < 100
    parts[("t", 2)].bytes = 10
    rooms.wake(("t", 2))
    assert d.called


def test_a_leader_epoch_change_completes_at_once_and_max_wait_otherwise() -> None:
    clock, rooms, parts, reads = make(2)
    d = park(rooms, 2)
    parts[("t", 1)].leader_epoch = 6
    rooms.wake(("t", 1))
    assert d.called
    parts[("t", 1)].leader_epoch = 5
    d2 = park(rooms, 2)
    assert not d2.called
    clock.advance(0.5)
    assert d2.called and len(reads) == 2


def test_an_extended_fetch_is_woken_by_its_new_partition() -> None:
    clock, rooms, parts, reads = make(3)
    extend: list[Any] = []
    d = rooms.park_fetch(
        1, 500, 1, 1 << 20, [FetchPartition("t", 0, 0, 1 << 20, 5)], whole_first_batches=False,
        client_metadata=None, isolation_level=0, on_park=extend.append,
    )
    extend[0](FetchPartition("t", 2, 0, 1 << 20, 5))
    rooms.wake(("t", 1))  # not in the fetch
    assert not d.called
    parts[("t", 2)].bytes = 5
    rooms.wake(("t", 2))
    assert d.called and reads[-1] == [("t", 0), ("t", 2)]


def test_a_fetch_answered_at_max_wait_leaves_no_reference_cycle() -> None:
    # A fired timer keeps its arguments: the parked fetch held its timer, which held the fetch, and
    # that cycle (with every partition of the fetch) waited for a full collection -- at 100,000
    # partitions, for the heap freezer's whole collection.
    from tests.cyclic_garbage import cyclic_garbage

    def park_and_expire() -> None:
        clock, rooms, parts, reads = make(50)
        d = park(rooms, 50)
        clock.advance(0.5)
        assert d.called and len(reads) == 1

    assert cyclic_garbage(park_and_expire)["mafka.broker.replica_records.FetchPartition"] == 0
