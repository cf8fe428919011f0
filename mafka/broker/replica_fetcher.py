"""Followers fetch from their leaders (Kafka's ``ReplicaFetcherManager`` / ``ReplicaFetcherThread``).

The Twisted edge of replication.  For every (leader broker, fetcher id)
there is one :class:`ReplicaFetcher` with one connection; a partition goes
to fetcher ``hash(topic, partition) % num.replica.fetchers`` of its leader.

Each fetcher loops:

1. partitions that are new here (or at a new leader epoch) first **truncate
   by leader epoch**: OffsetForLeaderEpoch (v3, with this broker's id and the
   current leader epoch) for their latest epoch, then
   :func:`~mafka.broker.truncation.truncation_for` — possibly several rounds;
2. one Fetch (v11, ``replica_id`` = this broker, ``replica.fetch.wait.max.ms``,
   ``replica.fetch.min.bytes``) for all partitions ready to fetch, from each
   one's log end offset with its current leader epoch (KIP-320), in an
   incremental fetch session (KIP-227): after the first, full fetch only
   partitions whose fetch offset, log start or epoch moved are listed, and
   the leader answers only partitions with news;
3. the batches are appended as they are and the follower HW becomes
   min(leader HW, own LEO).

Errors: FENCED_LEADER_EPOCH parks the partition until the next LeaderAndIsr
re-adds it; NOT_LEADER_OR_FOLLOWER, UNKNOWN_LEADER_EPOCH and the like retry
after ``replica.fetch.backoff.ms``; OFFSET_OUT_OF_RANGE truncates to the
leader's log end if it is below ours, else restarts at the leader's log
start (Kafka's ``fetchOffsetAndTruncate``).  A request that gets no answer
within ``replica.socket.timeout.ms`` drops the connection.

Throttled replicas (``follower.replication.throttled.replicas``) are left
out of a Fetch while the follower's replication quota is exceeded (KIP-73).

All log work goes through the replica manager, which checks that the
partition is still followed at the same leader epoch before touching it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from twisted.internet import defer

from mafka.errors import ErrorCode
from mafka.interbroker.connection import InterBrokerConnection
from mafka.log.epoch_cache import UNDEFINED_EPOCH
from mafka.tcp import tcp_transport

from .fetch_session_handler import FetchSessionHandler, PartitionFetchState
from .truncation import truncation_for

__all__ = ["ReplicaFetcherManager", "ReplicaFetcher", "FetcherConfig", "fetcher_id"]

log = logging.getLogger("mafka.broker.replica_fetcher")

FETCH, LIST_OFFSETS, OFFSET_FOR_LEADER_EPOCH = 1, 2, 23
FETCH_VERSION, LIST_OFFSETS_VERSION, EPOCH_VERSION = 11, 1, 3

#: Errors after which a partition simply retries after the backoff.
#: How often a fetcher looks up every partition's fetch state anyway (see ``ReplicaFetcher._fetch_states``).
_REBUILD_S = 10.0

_RETRIABLE = {
    ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.UNKNOWN_LEADER_EPOCH,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.KAFKA_STORAGE_ERROR,
    ErrorCode.REPLICA_NOT_AVAILABLE,
    ErrorCode.LEADER_NOT_AVAILABLE,
}


@dataclass(frozen=True, slots=True)
class FetcherConfig:
    """The ``replica.*`` settings a fetcher uses."""

    num_fetchers: int = 1
    max_wait_ms: int = 500
    min_bytes: int = 1
    max_bytes: int = 10 * 1024 * 1024
    partition_max_bytes: int = 1024 * 1024
    backoff_ms: int = 1000
    socket_timeout_ms: int = 30000
    #: TLS/SASL of the connections to leaders (:class:`~mafka.interbroker.security.InterBrokerSecurity`)
    security: Any = None

    @classmethod
    def of(cls, config: Any, security: Any = None) -> FetcherConfig:
        """From a :class:`~mafka.broker.config.BrokerConfig` (and the inter-broker security)."""
        return cls(
            security=security,
            num_fetchers=max(1, config.num_replica_fetchers),
            max_wait_ms=config.replica_fetch_wait_max_ms,
            min_bytes=config.replica_fetch_min_bytes,
            max_bytes=config.replica_fetch_response_max_bytes,
            partition_max_bytes=config.replica_fetch_max_bytes,
            backoff_ms=config.replica_fetch_backoff_ms,
            socket_timeout_ms=config.replica_socket_timeout_ms,
        )


def fetcher_id(tp: tuple[str, int], num_fetchers: int) -> int:
    """Kafka's ``AbstractFetcherManager.getFetcherId``: ``Utils.abs(31 * topic.hashCode + partition) % n``.

    ``Utils.abs`` maps ``Integer.MIN_VALUE`` to 0.
    """
    h = 0
    for ch in tp[0]:  # topic names are ASCII, so code points are Java's UTF-16 units
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    h = _signed((31 * _signed(h) + tp[1]) & 0xFFFFFFFF)
    return (0 if h == -(1 << 31) else abs(h)) % num_fetchers


def _topics(to_send: dict[tuple[str, int], PartitionFetchState]) -> list[dict[str, Any]]:
    by_topic: dict[str, list[dict[str, int]]] = {}
    for (topic, index), s in to_send.items():
        by_topic.setdefault(topic, []).append(
            {
                "partition": index,
                "current_leader_epoch": s.current_leader_epoch,
                "fetch_offset": s.fetch_offset,
                "log_start_offset": s.log_start_offset,
                "partition_max_bytes": s.max_bytes,
            }
        )
    return [{"topic": t, "partitions": ps} for t, ps in by_topic.items()]


def _forgotten(to_forget: list[tuple[str, int]]) -> list[dict[str, Any]]:
    by_topic: dict[str, list[int]] = {}
    for topic, index in to_forget:
        by_topic.setdefault(topic, []).append(index)
    return [{"topic": t, "partitions": ps} for t, ps in by_topic.items()]


def _signed(x: int) -> int:
    return x - (1 << 32) if x & 0x80000000 else x


class _FetchTimeout(Exception):
    """No answer within ``replica.socket.timeout.ms``."""


@dataclass(slots=True)
class _PartitionFetch:
    leader_epoch: int
    truncating: bool = True
    fenced: bool = False
    delayed_until: float = 0.0
    retries: int = 0  # consecutive "leader not ready" answers


#: A partition added while a fetch is in flight interrupts it (and restarts the fetch session) only
#: while the fetcher follows at most this many partitions: see :meth:`ReplicaFetcher.add`.
INTERRUPT_MAX_PARTITIONS = 1000


class ReplicaFetcher:
    """Fetches the partitions this broker follows from one leader, over one connection.

    Args:
        broker_id: this broker (the ``replica_id`` of its requests).
        leader_id, host, port: the leader.
        reactor: the reactor (time and connections).
        replica_manager: a :class:`~mafka.broker.replica_manager.ReplicaManager`.
        config: the fetch settings.
        index: the fetcher id (for names).
    """

    def __init__(
        self, broker_id: int, leader_id: int, host: str, port: int, reactor: Any, replica_manager: Any,
        config: FetcherConfig, index: int = 0, throttle: Any = None,
    ) -> None:
        self.broker_id = broker_id
        self.leader_id = leader_id
        self.host, self.port = host, port
        self.reactor = reactor
        self.rm = replica_manager
        self.config = config
        self.throttle = throttle
        self.name = f"ReplicaFetcher-{index}-{leader_id}"
        self.conn = InterBrokerConnection(
            reactor, host, port, f"broker-{broker_id}-fetcher-{index}", backoff_s=config.backoff_ms / 1000,
            security=config.security,
        )
        self.partitions: dict[tuple[str, int], _PartitionFetch] = {}
        self.running = True
        self._wakeup: defer.Deferred | None = None
        self._fetch_in_flight = False
        self._interrupted = False
        self.session = FetchSessionHandler()  # one incremental fetch session with this leader (KIP-227)
        # Each partition's last fetch state, rebuilt only when the fetcher changed its log (or the epoch
        # moved), and all of them every _REBUILD_S (the log start moves with retention, unseen here):
        # with thousands of partitions, looking every one up on every fetch was most of an idle
        # follower's work.
        self._fetch_states: dict[tuple[str, int], PartitionFetchState] = {}
        self._changed: set[tuple[str, int]] = set()
        self._rebuild_at = 0.0
        # Every partition is ready to fetch (none truncating, fenced or delayed) and the session holds
        # exactly them: a fetch then costs what changed (_fetch_settled), not a pass over every
        # partition.  Anything that makes a partition unready, or adds or removes one, clears it.
        self._settled = False
        self._loop = defer.ensureDeferred(self._run())
        self._loop.addErrback(lambda f: log.error("%s stopped: %s", self.name, f.getTraceback()))

    # ------------------------------------------------------------------ membership

    def add(self, tp: tuple[str, int], leader_epoch: int) -> None:
        self.add_all([(tp, leader_epoch)])

    def add_all(self, items: Iterable[tuple[tuple[str, int], int]]) -> None:
        """Follows each (partition, leader epoch); one wake-up for all (a LeaderAndIsr's are one fetch)."""
        # In flight before the wake-up: a sleeping loop woken here sends a fetch naming them at once.
        in_flight = self._fetch_in_flight
        self._settled = False
        for tp, leader_epoch in items:
            self.partitions[tp] = _PartitionFetch(leader_epoch)
        self._wake()
        if in_flight and len(self.partitions) <= INTERRUPT_MAX_PARTITIONS:
            # The leader holds our long poll (up to replica.fetch.wait.max.ms) and
            # it does not name these partitions: drop it and start over, so they are
            # truncated and fetched now, not after the wait.  Starting over costs a
            # full fetch of every partition (the lost request leaves the session's
            # epoch unknown): with more partitions than the limit the new ones wait
            # for the long poll instead, as in Kafka (at 100,000 partitions, a full
            # fetch per LeaderAndIsr made creating them quadratic).
            self._interrupted = True
            proto = self.conn.protocol
            if proto is not None and not proto.lost:
                tcp_transport(proto).abortConnection()

    def remove(self, tp: tuple[str, int]) -> None:
        self._settled = False
        self.partitions.pop(tp, None)
        self._fetch_states.pop(tp, None)

    def stop(self) -> None:
        self._settled = False
        self.running = False
        self.partitions.clear()
        self.conn.close()
        self._wake()

    def _wake(self) -> None:
        d, self._wakeup = self._wakeup, None
        if d is not None:
            d.callback(None)

    def _sleep(self, seconds: float) -> defer.Deferred:
        """Waits *seconds*, or less if a partition is added or the fetcher stops."""
        d: defer.Deferred = defer.Deferred()
        self._wakeup = d
        call = self.reactor.callLater(max(0.0, seconds), self._wake)
        d.addBoth(lambda r: (call.cancel() if call.active() else None, r)[1])
        return d

    # ------------------------------------------------------------------ the loop

    async def _run(self) -> None:
        while self.running:
            try:
                await self._step()
            except Exception as exc:  # noqa: BLE001 - any failure: back off, reconnect, go on
                if self._interrupted:
                    self._interrupted = False
                    continue
                if self.running:
                    log.info("%s: %s: %s; backing off", self.name, type(exc).__name__, exc)
                    await self._sleep(self.config.backoff_ms / 1000)

    async def _step(self) -> None:
        """One round: a fetch of what changed while settled, else truncation or a fetch of every ready partition."""
        if self._settled and await self._fetch_settled():
            return
        now = self.reactor.seconds()
        ready = {tp: s for tp, s in self.partitions.items() if not s.fenced and s.delayed_until <= now}
        if not ready:
            waits = [s.delayed_until - now for s in self.partitions.values() if not s.fenced]
            await self._sleep(min(waits) if waits else 3600.0)
            return
        truncating = [tp for tp, s in ready.items() if s.truncating]
        if truncating:
            await self._truncate(truncating)
            return
        # Fenced partitions wait for a LeaderAndIsr (which unsettles): the others can settle.
        fenced = sum(1 for s in self.partitions.values() if s.fenced) if len(ready) < len(self.partitions) else 0
        await self._fetch(ready, every=len(ready) + fenced == len(self.partitions))

    async def _request(self, api_key: int, version: int, body: dict[str, Any], timeout_ms: int) -> Any:
        d = self.conn.request(api_key, version, body)
        timed_out = []

        def expire() -> None:
            timed_out.append(True)
            proto = self.conn.protocol
            if proto is not None and not proto.lost:
                tcp_transport(proto).abortConnection()
            d.cancel()

        call = self.reactor.callLater(timeout_ms / 1000, expire)
        try:
            return await d
        except defer.CancelledError:
            raise _FetchTimeout(f"no answer from broker {self.leader_id} within {timeout_ms} ms") from None
        finally:
            if call.active():
                call.cancel()

    def _delay(self, tp: tuple[str, int], state: _PartitionFetch) -> None:
        self._settled = False
        self._changed.add(tp)
        state.delayed_until = self.reactor.seconds() + self.config.backoff_ms / 1000

    def _truncated(self, tp: tuple[str, int]) -> None:
        self._changed.add(tp)

    def _current(self, tp: tuple[str, int], epoch: int) -> _PartitionFetch | None:
        state = self.partitions.get(tp)
        return state if state is not None and state.leader_epoch == epoch else None

    # ------------------------------------------------------------------ truncation

    async def _truncate(self, tps: list[tuple[str, int]]) -> None:
        asked: dict[tuple[str, int], int] = {}
        by_topic: dict[str, list[dict[str, int]]] = {}
        state: _PartitionFetch | None  # None once the partition moved on while we waited (_current)
        for tp in tps:
            state = self.partitions[tp]
            partition = self.rm.follower_partition(tp, state.leader_epoch)
            if partition is None:
                self._delay(tp, state)
                continue
            latest = partition.log.epoch_cache.latest_epoch
            if latest is None:
                # No epochs known (an empty log): the HW is where it resumes.
                target = min(partition.high_watermark, partition.log.next_offset)
                self._truncated(tp)
                if await self.rm.truncate_follower(tp, state.leader_epoch, target) and self._current(tp, state.leader_epoch):
                    state.truncating = False
                continue
            asked[tp] = state.leader_epoch
            by_topic.setdefault(tp[0], []).append(
                {"partition": tp[1], "current_leader_epoch": state.leader_epoch, "leader_epoch": latest}
            )
        if not by_topic:
            return
        body = {"replica_id": self.broker_id, "topics": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()]}
        response = await self._request(OFFSET_FOR_LEADER_EPOCH, EPOCH_VERSION, body, self.config.socket_timeout_ms)
        for topic in response.topics:
            for r in topic.partitions:
                tp = (topic.topic, r.partition)
                if tp not in asked:
                    continue
                state = self._current(tp, asked[tp])
                if state is None:
                    continue
                if r.error_code != ErrorCode.NONE:
                    self._partition_error(tp, state, ErrorCode(r.error_code))
                    continue
                partition = self.rm.follower_partition(tp, state.leader_epoch)
                if partition is None:
                    self._delay(tp, state)
                    continue
                decision = truncation_for(
                    partition.log.epoch_cache, partition.log.next_offset, partition.high_watermark, r.leader_epoch, r.end_offset
                )
                self._truncated(tp)
                still = await self.rm.truncate_follower(tp, state.leader_epoch, decision.offset)
                state = self._current(tp, asked[tp])
                if state is None:
                    continue
                if not still:
                    self._delay(tp, state)
                elif decision.complete or r.leader_epoch == UNDEFINED_EPOCH:
                    state.truncating = False

    # ------------------------------------------------------------------ fetching

    async def _fetch_settled(self) -> bool:
        """A fetch while settled: only the partitions this fetcher changed are looked up and sent.

        Every ``_REBUILD_S`` it first sweeps every partition's log start and end
        (:meth:`_sweep_log_starts`).  False (nothing sent) when the full pass must look at every
        partition: replication is throttled, the session is not open, or a partition is no longer
        followed as known.
        """
        now = self.reactor.seconds()
        if not self.session.incremental or (self.throttle is not None and self.throttle.active()):
            self._settled = False
            return False
        if now >= self._rebuild_at and not self._sweep_log_starts(now):
            return False
        updates: dict[tuple[str, int], PartitionFetchState] = {}
        for tp in self._changed:
            state = self.partitions.get(tp)
            partition = None if state is None else self.rm.follower_partition(tp, state.leader_epoch)
            if state is None or partition is None or tp not in self.session.partitions:
                self._settled = False
                return False
            updates[tp] = self._fetch_states[tp] = PartitionFetchState(
                partition.log.next_offset, partition.log.log_start_offset, self.config.partition_max_bytes, state.leader_epoch
            )
        self._changed.clear()
        await self._send_fetch(self.session.build_update(updates), self.session.partitions, set())
        return True

    def _sweep_log_starts(self, now: float) -> bool:
        """Marks changed the partitions whose log start or end moved unseen (the follower's own retention),
        every ``_REBUILD_S`` while settled; False (unsettled) if one is no longer followed as known.

        A look at two numbers per partition, where the full pass builds every partition's fetch state
        and diffs the session: at 50,000 partitions a fetcher, that was 250 ms every 10 s.
        """
        self._rebuild_at = now + _REBUILD_S
        states, changed = self._fetch_states, self._changed
        for tp, state in self.partitions.items():
            if state.fenced:
                continue  # not fetched until a LeaderAndIsr re-adds it
            known = states.get(tp)
            partition = self.rm.follower_partition(tp, state.leader_epoch)
            if partition is None or known is None or known.current_leader_epoch != state.leader_epoch:
                self._settled = False
                return False
            log_ = partition.log
            if log_.log_start_offset != known.log_start_offset or log_.next_offset != known.fetch_offset:
                changed.add(tp)
        return True

    async def _fetch(self, ready: dict[tuple[str, int], _PartitionFetch], every: bool = False) -> None:
        """A fetch of the *ready* partitions (*every*: they are all the partitions this fetcher follows
        but fenced ones)."""
        wanted: dict[tuple[str, int], PartitionFetchState] = {}
        throttled = set()
        throttling = self.throttle is not None and self.throttle.active()
        over_quota = throttling and self.throttle.quota.exceeded()
        now = self.reactor.seconds()
        reuse = not throttling and now < self._rebuild_at
        if not reuse:
            self._rebuild_at = now + _REBUILD_S
        changed, states = self._changed, self._fetch_states
        state: _PartitionFetch | None  # None once the partition moved on while we waited (_current)
        for tp, state in ready.items():
            if reuse and tp not in changed:
                known = states.get(tp)
                if known is not None and known.current_leader_epoch == state.leader_epoch:
                    wanted[tp] = known
                    continue
            partition = self.rm.follower_partition(tp, state.leader_epoch)
            if partition is None:
                self._delay(tp, state)
                continue
            if throttling and self.throttle.is_throttled(tp):
                if over_quota:
                    continue
                throttled.add(tp)
            wanted[tp] = states[tp] = PartitionFetchState(
                partition.log.next_offset, partition.log.log_start_offset, self.config.partition_max_bytes, state.leader_epoch
            )
        changed.clear()
        if not wanted:
            if over_quota:  # everything ready is throttled: wait for the quota to recover
                await self._sleep(self.config.backoff_ms / 1000)
            return
        # Settled from the next fetch on if this one asks for every partition (fenced ones aside),
        # unthrottled, and nothing became unready on the way (_delay clears it).
        self._settled = every and not throttling and len(wanted) == len(ready)
        await self._send_fetch(self.session.build(wanted), wanted, throttled)

    async def _send_fetch(self, request: Any, wanted: dict[tuple[str, int], PartitionFetchState],
                          throttled: set[tuple[str, int]]) -> None:
        """Sends *request* (built from *wanted*) and applies the answer."""
        body = {
            "replica_id": self.broker_id,
            "max_wait_ms": self.config.max_wait_ms,
            "min_bytes": self.config.min_bytes,
            "max_bytes": self.config.max_bytes,
            "isolation_level": 0,
            "session_id": request.session_id,
            "session_epoch": request.session_epoch,
            "topics": _topics(request.to_send),
            "forgotten_topics_data": _forgotten(request.to_forget),
            "rack_id": "",
        }
        timeout = self.config.max_wait_ms + self.config.socket_timeout_ms
        self._fetch_in_flight = True
        try:
            response = await self._request(FETCH, FETCH_VERSION, body, timeout)
        except BaseException:
            self.session.handle_error()
            raise
        finally:
            self._fetch_in_flight = False
        if not self.session.handle_response(response.error_code, response.session_id):
            if response.error_code != ErrorCode.NONE:
                log.info("%s: fetch session %d: %s; starting a new one", self.name, request.session_id,
                         ErrorCode(response.error_code).name)
            return
        for topic in response.responses:
            for r in topic.partitions:
                tp = (topic.topic, r.partition_index)
                asked = wanted.get(tp)
                if asked is None:
                    continue
                state = self._current(tp, asked.current_leader_epoch)
                if state is None or state.truncating:
                    continue
                error = ErrorCode(r.error_code)
                if error == ErrorCode.NONE:
                    state.retries = 0
                    if tp in throttled and r.records:
                        self.throttle.quota.record(len(r.records))
                    self._append(tp, state, r)
                elif error == ErrorCode.OFFSET_OUT_OF_RANGE:
                    await self._out_of_range(tp, state)
                else:
                    self._partition_error(tp, state, error)

    def _append(self, tp: tuple[str, int], state: _PartitionFetch, r: Any) -> None:
        self._changed.add(tp)
        try:
            leo = self.rm.append_as_follower(tp, state.leader_epoch, r.records, r.high_watermark, r.log_start_offset)
        except Exception as exc:  # noqa: BLE001 - a bad append re-truncates this partition only
            log.warning("%s: %s-%d: appending fetched data failed: %s; truncating again", self.name, tp[0], tp[1], exc)
            state.truncating = True
            self._delay(tp, state)
            return
        if leo is None:
            self._delay(tp, state)

    async def _out_of_range(self, tp: tuple[str, int], state: _PartitionFetch) -> None:
        epoch = state.leader_epoch
        partition = self.rm.follower_partition(tp, epoch)
        if partition is None:
            return
        leader_end = await self._list_offset(tp, -1)
        partition = self.rm.follower_partition(tp, epoch)
        if partition is None or self._current(tp, epoch) is None:
            return
        if leader_end is None:
            self._delay(tp, state)
            return
        if leader_end < partition.log.next_offset:
            log.warning("%s: %s-%d: the leader's log end %d is below ours (%d); truncating", self.name, tp[0], tp[1],
                        leader_end, partition.log.next_offset)
            self._truncated(tp)
            await self.rm.truncate_follower(tp, epoch, leader_end)
            return
        leader_start = await self._list_offset(tp, -2)
        partition = self.rm.follower_partition(tp, epoch)
        if partition is None or leader_start is None or self._current(tp, epoch) is None:
            return
        if leader_start > partition.log.next_offset:
            self._truncated(tp)
            await self.rm.reset_follower(tp, epoch, leader_start)

    async def _list_offset(self, tp: tuple[str, int], timestamp: int) -> int | None:
        body = {
            "replica_id": self.broker_id,
            "isolation_level": 0,
            "topics": [{"name": tp[0], "partitions": [{"partition_index": tp[1], "timestamp": timestamp}]}],
        }
        response = await self._request(LIST_OFFSETS, LIST_OFFSETS_VERSION, body, self.config.socket_timeout_ms)
        for topic in response.topics:
            for r in topic.partitions:
                if (topic.name, r.partition_index) == tp and r.error_code == ErrorCode.NONE:
                    return r.offset
        return None

    def _partition_error(self, tp: tuple[str, int], state: _PartitionFetch, error: ErrorCode) -> None:
        self._settled = False
        if error == ErrorCode.FENCED_LEADER_EPOCH:
            log.info("%s: %s-%d fenced at leader epoch %d; waiting for a LeaderAndIsr", self.name, tp[0], tp[1], state.leader_epoch)
            state.fenced = True
            return
        if error not in _RETRIABLE:
            log.warning("%s: %s-%d: %s", self.name, tp[0], tp[1], error.name)
        if error in (ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.NOT_LEADER_OR_FOLLOWER):
            # Usually the leader has not applied its own LeaderAndIsr yet and will in
            # moments: retry after 50 ms, doubling up to replica.fetch.backoff.ms.
            wait = min(0.05 * (2**state.retries), self.config.backoff_ms / 1000)
            state.retries += 1
            state.delayed_until = self.reactor.seconds() + wait
            return
        self._delay(tp, state)


class ReplicaFetcherManager:
    """The fetchers of this broker, by (leader, fetcher id).

    Args:
        broker_id: this broker.
        reactor: the reactor.
        replica_manager: the replica manager (set later with :attr:`replica_manager` if circular).
        config: a :class:`FetcherConfig`.
        throttle: None, or an object with ``is_throttled(tp) -> bool`` and a
            ``quota`` (:class:`~mafka.broker.replication_quota.ReplicationQuota`).
    """

    def __init__(self, broker_id: int, reactor: Any, replica_manager: Any, config: FetcherConfig, *, throttle: Any = None) -> None:
        self.broker_id = broker_id
        self.throttle = throttle
        self.reactor = reactor
        self.replica_manager = replica_manager
        self.config = config
        self.fetchers: dict[tuple[int, int], ReplicaFetcher] = {}
        self._owner: dict[tuple[str, int], tuple[int, int]] = {}
        self.closed = False

    def add_partitions(self, targets: dict[tuple[str, int], Any]) -> None:
        """Follows each partition from its :class:`~mafka.broker.replica_manager.FollowerTarget` (re-truncating first).

        Nothing is followed once :meth:`shutdown` ran.
        """
        if self.closed:
            return
        adding: dict[ReplicaFetcher, list[tuple[tuple[str, int], int]]] = {}
        for tp, target in targets.items():
            self._detach(tp)
            key = (target.leader_id, fetcher_id(tp, self.config.num_fetchers))
            fetcher = self.fetchers.get(key)
            moved: dict[tuple[str, int], Any] = {}
            pending: list[tuple[tuple[str, int], int]] = []
            if fetcher is not None and (fetcher.host, fetcher.port) != (target.host, target.port):
                # The leader came back on another endpoint: its partitions move to a new connection.
                moved = dict(fetcher.partitions)
                pending = adding.pop(fetcher, [])
                fetcher.stop()
                fetcher = None
            if fetcher is None:
                fetcher = ReplicaFetcher(
                    self.broker_id, target.leader_id, target.host, target.port, self.reactor, self.replica_manager,
                    self.config, key[1], self.throttle,
                )
                self.fetchers[key] = fetcher
                fetcher.add_all((other, state.leader_epoch) for other, state in moved.items())
                if pending:
                    adding[fetcher] = pending
            adding.setdefault(fetcher, []).append((tp, target.leader_epoch))
            self._owner[tp] = key
        for fetcher, items in adding.items():
            fetcher.add_all(items)
        self._stop_idle()

    def remove_partitions(self, tps: Iterable[tuple[str, int]]) -> None:
        for tp in tps:
            self._detach(tp)
        self._stop_idle()

    def _detach(self, tp: tuple[str, int]) -> None:
        key = self._owner.pop(tp, None)
        if key is not None and key in self.fetchers:
            self.fetchers[key].remove(tp)

    def _stop_idle(self) -> None:
        for key, fetcher in list(self.fetchers.items()):
            if not fetcher.partitions:
                fetcher.stop()
                del self.fetchers[key]

    def shutdown(self) -> None:
        """Stops every fetcher for good (a broker going down fetches nothing more)."""
        self.closed = True
        for fetcher in self.fetchers.values():
            fetcher.stop()
        self.fetchers.clear()
        self._owner.clear()

    def partitions(self) -> dict[tuple[str, int], int]:
        """Followed partition → leader id (for tests and tools)."""
        return {tp: key[0] for tp, key in self._owner.items()}
