"""Incremental fetch sessions (KIP-227): the session cache and each fetch's context.

A fetcher that sends the same partitions again and again (a follower of many
partitions, a consumer of many) may open a *session*: its first fetch
(``session_epoch`` 0) lists every partition; the broker caches them and
answers with a ``session_id``.  Later fetches carry that id and the next
epoch, list only partitions whose fetch state changed (``topics``) or that
leave the session (``forgotten_topics_data``), and the response lists only
partitions with something to say: records, an error, a preferred read
replica (KIP-392), or a changed high watermark / log start offset / last
stable offset.  Partitions that
answered move to the end of the session so that others are read first next
time (``fetch.max.bytes`` is shared fairly).

Kafka's rules (``FetchSession.scala``), kept here:

* epoch −1 (FINAL) closes any session named and fetches sessionless;
  epoch 0 (INITIAL) closes any session named and starts a full fetch, after
  which a new session is created if the cache has room;
* an incremental fetch naming an unknown session gets
  FETCH_SESSION_ID_NOT_FOUND, one with the wrong epoch
  INVALID_FETCH_SESSION_EPOCH (top-level errors, no partitions);
* the cache holds at most ``max.incremental.fetch.session.cache.slots``
  sessions.  A new session may evict one unused for longer than the
  eviction time (120 s, as Kafka's constant); otherwise it may evict the
  least valuable *evictable* session — ordered by (privileged, size, id),
  where followers' sessions are privileged — if that is no more valuable
  than itself.  Sessions younger than the eviction time are evictable only
  by privileged (follower) sessions, and only when they are not privileged
  themselves.

**Idle partitions of a follower's session are not read.**  Kafka reads every
partition of a session on every fetch; a follower's session holds every
partition it follows from this leader, and with thousands of partitions and
a fetch every ``replica.fetch.wait.max.ms`` that reading was most of an idle
broker's work.  Here a partition whose last read in a *privileged*
(follower) session found the follower in the ISR, at the log end and with
nothing to say becomes *idle*: later fetches skip it until
:meth:`FetchSessionCache.partition_changed` (called by the replica manager
for every append, high-watermark move, ISR change and role change) or a
request listing it makes it *busy* again; a parked fetch of the session is
extended with it at once.  What the skipped read would have done to the
leader's view of the follower (caught up as of this fetch) the follower's
state takes from the session's :class:`~mafka.broker.partition.FetchClock`.
The response is the same as Kafka's: an idle partition had nothing to say
and nothing changed.  Consumers' sessions read everything, as Kafka's.

Plain Python with the time passed in; the fetch handler drives it.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from mafka.errors import ErrorCode

from .partition import FetchClock
from .replica_manager import FetchPartition

__all__ = [
    "INVALID_SESSION_ID",
    "INITIAL_EPOCH",
    "FINAL_EPOCH",
    "EVICTION_MS",
    "CachedPartition",
    "FetchSession",
    "FetchSessionCache",
    "FetchContext",
    "new_context",
    "next_epoch",
]

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
#: Kafka's ``MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS``.
EVICTION_MS = 120_000

_INT32_MAX = 2**31 - 1


def next_epoch(epoch: int) -> int:
    """The epoch after *epoch*: wraps from 2^31−1 to 1; FINAL stays FINAL."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == _INT32_MAX else epoch + 1


@dataclass(slots=True)
class CachedPartition:
    """One partition of a session: what the fetcher asked for and what it was last told."""

    topic: str
    partition: int
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    fetcher_log_start_offset: int = -1
    # What the last response said (−1: nothing yet, or an error to be repeated).
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    #: Skipped by the session's fetches until it changes (see the module docstring).
    idle: bool = False
    #: Position in the session's read order (larger: read later).
    order: int = 0
    #: The leader's state of the follower, attached to the session's clock while idle.
    follower: Any = None

    def to_fetch(self) -> FetchPartition:
        return FetchPartition(
            self.topic, self.partition, self.fetch_offset, self.max_bytes, self.current_leader_epoch, self.fetcher_log_start_offset
        )

    def update_request(self, p: Any) -> None:
        self.fetch_offset = p.fetch_offset
        self.max_bytes = p.max_bytes
        self.current_leader_epoch = p.current_leader_epoch
        self.fetcher_log_start_offset = getattr(p, "log_start_offset", -1)

    def must_respond(self, error: int, records: int, high_watermark: int, log_start_offset: int, last_stable_offset: int) -> bool:
        """Whether an incremental response includes this partition; records what it will say.

        Kafka's ``maybeUpdateResponseData``: records or an error always;
        else a change of high watermark, log start or last stable offset.
        After an error the cached high watermark is reset so the partition
        is sent again once the error is gone.
        """
        respond = records > 0
        if self.high_watermark != high_watermark:
            respond = True
            self.high_watermark = high_watermark
        if self.log_start_offset != log_start_offset:
            respond = True
            self.log_start_offset = log_start_offset
        if self.last_stable_offset != last_stable_offset:
            respond = True
            self.last_stable_offset = last_stable_offset
        if error != ErrorCode.NONE:
            self.high_watermark = -1
            respond = True
        return respond


class FetchSession:
    """A cached session: its partitions in fetch order, its next expected epoch.

    A privileged session also knows which partitions are *busy* (to be read
    by its next fetch; the others are idle), the clock its idle followers'
    states read, and the parked fetch to extend when an idle partition
    changes (:meth:`park`).
    """

    __slots__ = (
        "id", "privileged", "partitions", "creation_ms", "last_used_ms", "epoch", "cached_size", "busy", "clock",
        "_extend", "_next_order", "_reading", "_missed",
    )

    def __init__(self, session_id: int, privileged: bool, partitions: Iterable[CachedPartition], now_ms: int) -> None:
        self.id = session_id
        self.privileged = privileged
        self.partitions: dict[tuple[str, int], CachedPartition] = {}
        self._next_order = 0
        for c in partitions:
            self.partitions[(c.topic, c.partition)] = c
            self._place_last(c)
        self.creation_ms = now_ms
        self.last_used_ms = now_ms
        self.epoch = next_epoch(INITIAL_EPOCH)
        self.cached_size = -1
        self.busy: set[tuple[str, int]] = {tp for tp, c in self.partitions.items() if not c.idle}
        self.clock = FetchClock(now_ms)
        self._extend: Any = None
        #: the partitions the fetch in progress reads (:meth:`begin_read` until :meth:`settle`), else None
        self._reading: set[tuple[str, int]] | None = None
        #: partitions woken while that fetch was read but not yet parked (:meth:`park` adds them to it)
        self._missed: list[tuple[str, int]] = []

    def _place_last(self, c: CachedPartition) -> None:
        c.order = self._next_order
        self._next_order += 1

    @property
    def size(self) -> int:
        return len(self.partitions)

    def evictable_key(self) -> tuple[bool, int, int]:
        """Kafka's EvictableKey order: unprivileged before privileged, then smaller, then lower id."""
        return (self.privileged, self.cached_size, self.id)

    def update(self, wanted: Sequence[Any], forgotten: Iterable[tuple[str, int]]) -> None:
        """Applies an incremental request: adds or updates *wanted* (busy from now), drops *forgotten*."""
        for p in wanted:
            tp = (p.topic, p.partition)
            cached = self.partitions.get(tp)
            if cached is None:
                cached = self.partitions[tp] = _cached(p)
                self._place_last(cached)
            else:
                cached.update_request(p)
            self.wake(tp)
        for tp in forgotten:
            cached = self.partitions.pop(tp, None)
            self.busy.discard(tp)
            if cached is not None and cached.follower is not None:
                # No longer fetched here: the follower must not look caught up by this clock.
                cached.follower.detach(self.clock)
                cached.follower = None

    def move_to_end(self, tp: tuple[str, int]) -> None:
        cached = self.partitions.pop(tp, None)
        if cached is not None:
            self.partitions[tp] = cached
            self._place_last(cached)

    def to_read(self) -> list[CachedPartition]:
        """The partitions the next fetch reads, in session order: all, or for a privileged session the busy ones."""
        if not self.privileged:
            return list(self.partitions.values())
        busy = [self.partitions[tp] for tp in self.busy]
        busy.sort(key=_by_order)
        return busy

    def begin_read(self) -> list[CachedPartition]:
        """:meth:`to_read` for a fetch now starting; until it parks, partitions woken outside it are kept for it."""
        read = self.to_read()
        self._reading = {(c.topic, c.partition) for c in read}
        self._missed = []
        return read

    def wake(self, tp: tuple[str, int]) -> None:
        """*tp* changed (or was asked for): its next fetch reads it; a parked fetch reads it now.

        A fetch read but not yet parked gets it when it parks (:meth:`park`): its
        own read may have woken *tp* — the follower's fetch offset moves the high
        watermark, which answers a parked acks=all produce, whose connection then
        runs its next pipelined produce at once, an append at another partition.
        """
        cached = self.partitions.get(tp)
        if cached is None:
            return
        if cached.follower is not None:
            cached.follower.detach(self.clock)
            cached.follower = None
        cached.idle = False
        self.busy.add(tp)
        reading = self._reading
        if reading is None or tp in reading:
            return
        extend = self._extend
        if extend is None:
            self._missed.append(tp)
            return
        reading.add(tp)
        extend(cached.to_fetch())

    def park(self, extend: Any) -> None:
        """A fetch of this session parked; *extend(FetchPartition)* adds a partition to it.

        The partitions woken since its read began (:meth:`begin_read`) are added at once.
        """
        self._extend = extend
        if extend is None:
            return
        missed, self._missed = self._missed, []
        for tp in missed:
            # extend() may answer the fetch (settle() then ends the read): the rest wait, busy, for the next.
            cached = self.partitions.get(tp)
            if self._extend is None or self._reading is None or cached is None or tp in self._reading:
                continue
            self._reading.add(tp)
            extend(cached.to_fetch())

    def settle(self, results: Sequence[Any], now_ms: int, idle_follower: Any) -> None:
        """After a privileged fetch read *results*: marks the idle ones (see the module docstring), moves the clock.

        ``idle_follower(cached, result)`` is the follower's state attached to
        this session's clock if the read left the partition idle, else None.
        """
        self._extend = None
        self._reading = None
        self._missed = []
        for r in results:
            tp = (r.topic, r.partition)
            cached = self.partitions.get(tp)
            if cached is None:
                continue
            follower = idle_follower(cached, r, self.clock)
            if follower is not None:
                cached.idle = True
                cached.follower = follower
                self.busy.discard(tp)
        self.clock.last_fetch_ms = max(self.clock.last_fetch_ms, now_ms)


def _by_order(c: CachedPartition) -> int:
    return c.order


def _cached(p: Any) -> CachedPartition:
    return CachedPartition(
        p.topic,
        p.partition,
        p.fetch_offset,
        p.max_bytes,
        p.current_leader_epoch,
        getattr(p, "log_start_offset", -1),
    )


class FetchSessionCache:
    """Every session of this broker, bounded by *max_entries* (see the module docstring).

    Args:
        max_entries: ``max.incremental.fetch.session.cache.slots`` (0 = no sessions).
        eviction_ms: how long a session is protected after creation, and
            after which an unused one is stale.
        rng: session ids are drawn from it (seed it in tests).
    """

    def __init__(self, max_entries: int, eviction_ms: int = EVICTION_MS, rng: random.Random | None = None) -> None:
        self.max_entries = max_entries
        self.eviction_ms = eviction_ms
        self._rng = rng or random.SystemRandom()
        self._sessions: dict[int, FetchSession] = {}
        #: partition → the privileged sessions holding it (to wake them on a change)
        self._privileged_by_tp: dict[tuple[str, int], set[FetchSession]] = {}
        self.num_partitions = 0
        self.evictions = 0

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, session_id: int) -> FetchSession | None:
        return self._sessions.get(session_id)

    def remove(self, session_id: int) -> FetchSession | None:
        session = self._sessions.pop(session_id, None)
        if session is not None and session.cached_size >= 0:
            self.num_partitions -= session.cached_size
        if session is not None and session.privileged:
            # Its clock stops with it, so followers still attached to it simply stop catching up.
            self._unindex(session, session.partitions)
        return session

    def update(self, session: FetchSession, wanted: Sequence[Any], forgotten: Iterable[tuple[str, int]]) -> None:
        """:meth:`FetchSession.update`, keeping the index of privileged sessions by partition."""
        forgotten = list(forgotten)
        session.update(wanted, forgotten)
        if session.privileged:
            self._index(session, ((p.topic, p.partition) for p in wanted))
            self._unindex(session, (tp for tp in forgotten if tp not in session.partitions))

    def partition_changed(self, tp: tuple[str, int]) -> None:
        """Something changed at *tp* (an append, a HW or ISR move, a role change): sessions holding it read it next."""
        for session in self._privileged_by_tp.get(tp, ()):
            session.wake(tp)

    def _index(self, session: FetchSession, tps: Iterable[tuple[str, int]]) -> None:
        for tp in tps:
            self._privileged_by_tp.setdefault(tp, set()).add(session)

    def _unindex(self, session: FetchSession, tps: Iterable[tuple[str, int]]) -> None:
        for tp in tps:
            holders = self._privileged_by_tp.get(tp)
            if holders is not None:
                holders.discard(session)
                if not holders:
                    del self._privileged_by_tp[tp]

    def touch(self, session: FetchSession, now_ms: int) -> None:
        """Marks *session* used now and re-counts its size."""
        session.last_used_ms = now_ms
        if session.cached_size >= 0:
            self.num_partitions -= session.cached_size
        session.cached_size = session.size
        self.num_partitions += session.cached_size

    def maybe_create(self, now_ms: int, privileged: bool, partitions: Sequence[CachedPartition]) -> int:
        """Caches a new session for *partitions* if there is room; its id, or 0."""
        if self.max_entries <= 0 or not partitions:
            return INVALID_SESSION_ID
        candidate = (privileged, len(partitions))
        if len(self._sessions) >= self.max_entries and not self._try_evict(candidate, now_ms):
            return INVALID_SESSION_ID
        session_id = self._new_id()
        session = FetchSession(session_id, privileged, partitions, now_ms)
        self._sessions[session_id] = session
        if privileged:
            self._index(session, session.partitions)
        self.touch(session, now_ms)
        return session_id

    def _new_id(self) -> int:
        while True:
            session_id = self._rng.randint(1, _INT32_MAX)
            if session_id not in self._sessions:
                return session_id

    def _try_evict(self, candidate: tuple[bool, int], now_ms: int) -> bool:
        if not self._sessions:
            return False
        stalest = min(self._sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now_ms - stalest.last_used_ms > self.eviction_ms:
            self._evict(stalest)
            return True
        privileged = candidate[0]
        evictable = [
            s
            for s in self._sessions.values()
            if now_ms - s.creation_ms > self.eviction_ms or (privileged and not s.privileged)
        ]
        if not evictable:
            return False
        victim = min(evictable, key=FetchSession.evictable_key)
        # Kafka compares the newcomer's key (id unknown yet, so as if larger) with the victim's.
        if candidate < victim.evictable_key()[:2]:
            return False
        self._evict(victim)
        return True

    def _evict(self, session: FetchSession) -> None:
        self.remove(session.id)
        self.evictions += 1


class FetchContext:
    """What one Fetch request means for sessions, and how its response is shaped.

    Attributes:
        error: a top-level error (the request is answered with it and nothing
            else), or NONE.
        partitions: what to read, in order (for an incremental fetch: every
            partition of the session).
    """

    __slots__ = ("kind", "error", "partitions", "session", "expected_epoch", "privileged", "_cache")

    def __init__(
        self,
        kind: str,
        cache: FetchSessionCache,
        *,
        error: ErrorCode = ErrorCode.NONE,
        partitions: Sequence[Any] = (),
        session: FetchSession | None = None,
        privileged: bool = False,
    ) -> None:
        self.kind = kind  # "error" | "sessionless" | "full" | "incremental"
        self.error = error
        self.partitions = list(partitions)
        self.session = session
        self.expected_epoch = session.epoch if session is not None else 0
        self.privileged = privileged
        self._cache = cache

    @property
    def on_park(self) -> Any:
        """For a privileged incremental fetch: the hook its parked fetch hands its ``extend`` to (else None)."""
        session = self.session
        return session.park if session is not None and session.privileged else None

    def respond(self, results: Sequence[Any], now_ms: int, idle_follower: Any = None) -> tuple[ErrorCode, int, list[Any]]:
        """(top-level error, session id, the results to send) for *results* read in :attr:`partitions` order.

        Each result has ``topic``, ``partition``, ``error`` and ``result``
        (None on error, else ``high_watermark``, ``log_start_offset``,
        ``last_stable_offset`` and ``data.size``).  With *idle_follower* (see
        :meth:`FetchSession.settle`) a privileged session learns which
        partitions are idle; without it every partition stays busy.
        """
        if self.kind == "error":
            return self.error, INVALID_SESSION_ID, []
        if self.kind == "sessionless":
            return ErrorCode.NONE, INVALID_SESSION_ID, list(results)
        if self.kind == "full":
            cached = []
            for p, r in zip(self.partitions, results, strict=True):
                c = _cached(p)
                _note(c, r)
                cached.append(c)
            session_id = self._cache.maybe_create(now_ms, self.privileged, cached)
            created = self._cache.get(session_id) if session_id != INVALID_SESSION_ID else None
            if created is not None and created.privileged and idle_follower is not None:
                created.settle(results, now_ms, idle_follower)
            return ErrorCode.NONE, session_id, list(results)
        session = self.session
        assert session is not None
        if session.epoch != self.expected_epoch:
            # Another fetch of this session got in while this one was parked.
            return ErrorCode.INVALID_FETCH_SESSION_EPOCH, INVALID_SESSION_ID, []
        out = []
        for r in results:
            tp = (r.topic, r.partition)
            known = session.partitions.get(tp)
            if known is None:  # forgotten meanwhile
                continue
            if _note(known, r):
                out.append(r)
                session.move_to_end(tp)
        if session.privileged and idle_follower is not None:
            session.settle(results, now_ms, idle_follower)
        return ErrorCode.NONE, session.id, out


def _note(c: CachedPartition, r: Any) -> bool:
    res = r.result
    if res is None:
        return c.must_respond(r.error, 0, -1, -1, -1)
    lso = getattr(res, "last_stable_offset", res.high_watermark)
    respond = c.must_respond(r.error, res.data.size, res.high_watermark, res.log_start_offset, lso)
    # A preferred read replica (KIP-392) is always sent, as Kafka's maybeUpdateResponseData.
    return respond or getattr(r, "preferred_read_replica", -1) >= 0


def new_context(
    cache: FetchSessionCache,
    now_ms: int,
    *,
    session_id: int,
    session_epoch: int,
    wanted: Sequence[Any],
    forgotten: Iterable[tuple[str, int]],
    privileged: bool,
) -> FetchContext:
    """The context of a fetch (Kafka's ``FetchManager.newContext``).

    *wanted* are the request's partitions (objects with ``topic``,
    ``partition``, ``fetch_offset``, ``max_bytes``, ``current_leader_epoch``
    and optionally ``log_start_offset``).
    """
    if session_epoch in (INITIAL_EPOCH, FINAL_EPOCH):
        if session_id != INVALID_SESSION_ID:
            cache.remove(session_id)
        if session_epoch == FINAL_EPOCH:
            return FetchContext("sessionless", cache, partitions=wanted)
        return FetchContext("full", cache, partitions=wanted, privileged=privileged)
    session = cache.get(session_id)
    if session is None:
        return FetchContext("error", cache, error=ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
    if session.epoch != session_epoch:
        return FetchContext("error", cache, error=ErrorCode.INVALID_FETCH_SESSION_EPOCH)
    session.park(None)  # a fetch of it still parked is answered with INVALID_FETCH_SESSION_EPOCH anyway
    cache.update(session, wanted, forgotten)
    if not session.partitions:
        cache.remove(session_id)
        return FetchContext("sessionless", cache, partitions=())
    cache.touch(session, now_ms)
    session.epoch = next_epoch(session.epoch)
    to_read = [c.to_fetch() for c in (session.begin_read() if session.privileged else session.to_read())]
    return FetchContext("incremental", cache, partitions=to_read, session=session, privileged=privileged)
