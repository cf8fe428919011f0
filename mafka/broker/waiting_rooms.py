"""The waiting rooms: produces waiting for replication, fetches waiting for data.

Owns Kafka's two purgatories of a broker's ``ReplicaManager`` (Kafka's
``DelayedProduce`` and ``DelayedFetch``): an acks=−1 produce (or a
transaction marker) parks until the high watermark covers its batch or its
timeout passes (:meth:`WaitingRooms.await_replication`); a fetch without
``min_bytes`` parks until enough data exists, leadership or the leader
epoch of one of its partitions moves, or ``max_wait_ms`` passes
(:meth:`WaitingRooms.park_fetch`).  Whoever changes a partition (an append,
a high-watermark move, a role change, an ISR change) calls
:meth:`WaitingRooms.wake`, which re-checks everything parked on it.

Collaborators are explicit: the reactor clock for the timers, a lookup of
the hosted partition, the topics' ``min.insync.replicas`` and the replica
manager's read, which answers a completed fetch.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from twisted.internet import defer

from mafka.errors import ErrorCode

from .partition import Partition
from .replica_records import FetchedPartition, FetchPartition, ProduceResult, fetch_only_from_leader
from .replica_selector import ClientMetadata

__all__ = ["WaitingRooms"]

#: ``(replica_id, max_bytes, partitions, whole_first_batches, client_metadata, isolation_level)`` → the fetch's answer.
ReadFn = Callable[[int, int, Sequence[FetchPartition], bool, ClientMetadata | None, int], list[FetchedPartition]]


@dataclass(eq=False)
class _DelayedFetch:
    replica_id: int
    min_bytes: int
    max_bytes: int
    partitions: list[FetchPartition]
    deferred: defer.Deferred
    timer: Any = None
    done: bool = False
    whole_first_batches: bool = False
    client_metadata: ClientMetadata | None = None
    isolation_level: int = 0
    #: per entry of ``partitions``: the bytes available there when last checked; and their sum
    available: list[int] = field(default_factory=list)
    total: int = 0
    #: (topic, partition) → its entries in ``partitions`` (so a wake re-checks just those)
    entries: dict[tuple[str, int], list[int]] = field(default_factory=dict)

    def add(self, p: FetchPartition) -> int:
        """Lists *p*; returns its entry."""
        i = len(self.partitions)
        self.partitions.append(p)
        self.available.append(0)
        self.entries.setdefault((p.topic, p.partition), []).append(i)
        return i

    @property
    def fetch_only_from_leader(self) -> bool:
        return fetch_only_from_leader(self.replica_id, self.client_metadata)


@dataclass(eq=False)
class _DelayedProduce:
    min_isr: dict[tuple[str, int], int]
    waiting: dict[tuple[str, int], ProduceResult]
    results: dict[tuple[str, int], ProduceResult]
    deferred: defer.Deferred
    timer: Any = None
    done: bool = False
    keys: list = field(default_factory=list)


class WaitingRooms:
    """The parked produces and fetches of one broker, by partition.

    Args:
        clock: an ``IReactorTime`` for the timers (``callLater``).
        partition: ``(topic, index)`` → the hosted :class:`Partition`, or None.
        min_insync_replicas: topic → its ``min.insync.replicas``.
        read: reads a fetch's partitions (:data:`ReadFn`); a completed fetch fires with its result.
    """

    def __init__(
        self,
        clock: Any,
        *,
        partition: Callable[[tuple[str, int]], Partition | None],
        min_insync_replicas: Callable[[str], int],
        read: ReadFn,
    ) -> None:
        self.clock = clock
        self._partition = partition
        self._min_insync_replicas = min_insync_replicas
        self._read = read
        self._fetch_waiters: dict[tuple[str, int], set[_DelayedFetch]] = defaultdict(set)
        self._produce_waiters: dict[tuple[str, int], set[_DelayedProduce]] = defaultdict(set)

    def wake(self, tp: tuple[str, int]) -> None:
        """Something changed at *tp* (an append, a HW move, a role change): re-check who waits on it.

        A parked fetch re-checks only *tp*: what it found at its other
        partitions holds until they are woken in turn (a fetch of thousands
        of partitions must not be re-read whole at each of their changes).
        """
        for fetch in list(self._fetch_waiters.get(tp, ())):
            self._recheck_fetch(fetch, tp)
        for produce in list(self._produce_waiters.get(tp, ())):
            self._check_produce(produce)

    # ================================================================== produce (acks=−1)

    def await_replication(self, results: dict[tuple[str, int], ProduceResult], timeout_ms: int) -> defer.Deferred:
        """Fires with *results* once every successful partition in it is replicated (acks=−1).

        Each partition whose append succeeded waits until its high watermark
        covers the batch (:meth:`Partition.replication_status`): its result
        becomes NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below
        ``min.insync.replicas`` meanwhile, NOT_LEADER_OR_FOLLOWER if the
        partition is gone or no longer led here, REQUEST_TIMED_OUT after
        *timeout_ms*.
        """
        waiting = {tp: r for tp, r in results.items() if r.error == ErrorCode.NONE}
        d: defer.Deferred = defer.Deferred()
        delayed = _DelayedProduce({tp: self._min_insync_replicas(tp[0]) for tp in waiting}, waiting, results, d, keys=list(waiting))
        for tp in waiting:
            self._produce_waiters[tp].add(delayed)
        delayed.timer = self.clock.callLater(timeout_ms / 1000.0, self._expire_produce, delayed)
        self._check_produce(delayed)  # watch first, then check (answers at once when already replicated)
        return d

    def _check_produce(self, delayed: _DelayedProduce) -> None:
        for tp, r in list(delayed.waiting.items()):
            partition = self._partition(tp)
            status = (
                ErrorCode.NOT_LEADER_OR_FOLLOWER
                if partition is None
                else partition.replication_status(r.last_offset + 1, delayed.min_isr[tp])
            )
            if status is None:
                continue
            if status != ErrorCode.NONE:
                delayed.results[tp] = ProduceResult(status)
            del delayed.waiting[tp]
        if not delayed.waiting:
            self._finish_produce(delayed)

    def _expire_produce(self, delayed: _DelayedProduce) -> None:
        delayed.timer = None
        for tp in delayed.waiting:
            delayed.results[tp] = ProduceResult(ErrorCode.REQUEST_TIMED_OUT)
        delayed.waiting.clear()
        self._finish_produce(delayed)

    def _finish_produce(self, delayed: _DelayedProduce) -> None:
        if delayed.done:
            return
        delayed.done = True
        if delayed.timer is not None and delayed.timer.active():
            delayed.timer.cancel()
        # A timer that fired keeps its arguments, this object among them: a reference cycle
        # (with every partition of the fetch) that only a full collection would free.
        delayed.timer = None
        for tp in delayed.keys:
            self._produce_waiters[tp].discard(delayed)
        delayed.deferred.callback(delayed.results)

    # ================================================================== fetch

    def park_fetch(
        self, replica_id: int, max_wait_ms: int, min_bytes: int, max_bytes: int, partitions: Sequence[FetchPartition],
        *, whole_first_batches: bool, client_metadata: ClientMetadata | None, isolation_level: int,
        on_park: Callable[[Callable[[FetchPartition], None]], None] | None = None,
    ) -> defer.Deferred:
        """Parks a fetch that found too little; fires with its read once *min_bytes* are there or at *max_wait_ms*.

        It is woken by :meth:`wake` on any of its partitions, and answered at
        once (with the partition's error) if leadership or the leader epoch of
        one of them moved.  The arguments are those of
        :meth:`ReplicaManager.fetch <mafka.broker.replica_manager.ReplicaManager.fetch>`;
        *on_park*, if given, receives a function that adds a partition to the
        parked fetch (read when it completes, watched from now on; a no-op
        once it completed).
        """
        d: defer.Deferred = defer.Deferred()
        delayed = _DelayedFetch(
            replica_id, min_bytes, max_bytes, [], d, whole_first_batches=whole_first_batches,
            client_metadata=client_metadata, isolation_level=isolation_level,
        )
        for p in partitions:
            delayed.add(p)
            self._fetch_waiters[(p.topic, p.partition)].add(delayed)
        delayed.timer = self.clock.callLater(max_wait_ms / 1000.0, self._complete_fetch, delayed)
        if on_park is not None:
            on_park(lambda p: self._extend_fetch(delayed, p))
        # Check again now that it is watched (Kafka's tryCompleteElseWatch): the caller's
        # first read can complete a parked produce, whose connection may then run its next,
        # pipelined produce at once — an append this fetch was not yet watching for.
        self._try_complete_fetch(delayed)
        return d

    def _extend_fetch(self, delayed: _DelayedFetch, p: FetchPartition) -> None:
        if delayed.done:
            return
        i = delayed.add(p)
        self._fetch_waiters[(p.topic, p.partition)].add(delayed)
        if self._check_entry(delayed, i):
            self._complete_fetch(delayed)

    def _try_complete_fetch(self, delayed: _DelayedFetch) -> None:
        """Checks every partition of *delayed* (at park time); completes it if it has enough."""
        for i in range(len(delayed.partitions)):
            if self._check_entry(delayed, i):
                self._complete_fetch(delayed)
                return

    def _recheck_fetch(self, delayed: _DelayedFetch, tp: tuple[str, int]) -> None:
        for i in delayed.entries.get(tp, ()):
            if self._check_entry(delayed, i):
                self._complete_fetch(delayed)
                return

    def _check_entry(self, delayed: _DelayedFetch, i: int) -> bool:
        """Updates what entry *i* adds to the fetch; True if the fetch must complete now."""
        p = delayed.partitions[i]
        partition = self._partition((p.topic, p.partition))
        only_leader = delayed.fetch_only_from_leader
        if (
            partition is None
            or (only_leader and not partition.is_leader)
            or (p.current_leader_epoch >= 0 and p.current_leader_epoch != partition.leader_epoch)
        ):
            # Leadership or the leader epoch moved (Kafka's DelayedFetch cases A and F):
            # answer now, with the error, so a follower re-truncates at once
            # rather than after max_wait_ms.
            return True
        now = partition.bytes_available(
            p.fetch_offset, delayed.replica_id, fetch_only_from_leader=only_leader, isolation_level=delayed.isolation_level
        )
        delayed.total += now - delayed.available[i]
        delayed.available[i] = now
        return delayed.total >= delayed.min_bytes

    def _complete_fetch(self, delayed: _DelayedFetch) -> None:
        if delayed.done:
            return
        delayed.done = True
        if delayed.timer is not None and delayed.timer.active():
            delayed.timer.cancel()
        # A timer that fired keeps its arguments, this object among them: a reference cycle
        # (with every partition of the fetch) that only a full collection would free.
        delayed.timer = None
        for p in delayed.partitions:
            self._fetch_waiters[(p.topic, p.partition)].discard(delayed)
        delayed.deferred.callback(
            self._read(
                delayed.replica_id, delayed.max_bytes, delayed.partitions, delayed.whole_first_batches, delayed.client_metadata,
                delayed.isolation_level,
            )
        )
