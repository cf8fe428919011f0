"""What a ``/metrics`` scrape reads off the broker: copied on the reactor in slices, plain values after.

The broker's state is only ever read on the reactor; with 10,000 partitions
one pass over them takes tens of milliseconds, so :func:`take_snapshot` reads
:data:`SLICE` partitions per reactor turn (other work runs in between) into
plain tuples.  The text is then rendered from the snapshot in a worker thread
(:mod:`mafka.broker.metrics_families`).  A snapshot is consistent per
partition, not across partitions — as a scrape of Kafka's MBeans is.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from twisted.internet import defer

from mafka.group.share.partition_state import AcknowledgeType

__all__ = ["PartitionColumns", "Snapshot", "take_snapshot", "SLICE"]

#: partitions read per reactor turn (a few ms of reactor time each, on a busy machine)
SLICE = 500


class PartitionColumns:
    """The hosted partitions' figures, one list per figure (index *i* of each is partition *i*).

    Columns rather than an object per partition: a row object (or tuple) per partition is a
    container the garbage collector tracks, and 10,000 of them per scrape set off collections
    that held the reactor for longer than the copying itself; lists of strings, ints and
    bools add nothing for it to trace.
    """

    __slots__ = ("topic", "partition", "leader", "under_replicated", "under_min_isr", "size", "segments",
                 "log_start", "log_end", "high_watermark", "follower_lag", "delayed_pending")

    def __init__(self) -> None:
        self.topic: list[str] = []
        self.partition: list[int] = []
        self.leader: list[bool] = []
        self.under_replicated: list[bool] = []
        self.under_min_isr: list[bool] = []
        self.size: list[int] = []
        self.segments: list[int] = []
        self.log_start: list[int] = []
        self.log_end: list[int] = []
        self.high_watermark: list[int] = []
        self.follower_lag: list[int] = []
        #: delayed records held by a partition led here, -1 when it holds none or is not led here
        self.delayed_pending: list[int] = []

    def __len__(self) -> int:
        return len(self.topic)


@dataclass
class Snapshot:
    """Plain values for one scrape (see the module doc)."""

    now_ms: int = 0
    partitions: PartitionColumns = field(default_factory=PartitionColumns)
    offline_replicas: int = 0
    topic_stats: tuple[tuple[int, ...], list[tuple[str, tuple[int, ...]]]] = ((), [])
    isr_shrinks: int = 0
    isr_expands: int = 0
    controller: dict[str, int] = field(default_factory=dict)
    groups: list[tuple[str, str, int]] = field(default_factory=list)
    offsets: int = 0
    completed_rebalances: int = 0
    offset_commits: int = 0
    lag_rows: list[tuple[str, str, int, int, int, float | None]] = field(default_factory=list)
    transactions: dict[str, int] = field(default_factory=dict)
    markers_written: dict[bool, int] = field(default_factory=dict)
    zookeeper: dict[str, int] = field(default_factory=dict)
    delayed_delivered: int = 0
    half_waiting: dict[str, int] = field(default_factory=dict)
    cold: dict[str, Any] = field(default_factory=dict)
    #: the share-partitions led here (:func:`_share`): "partitions" (group, topic, partition, in
    #: flight, acquired), "redelivered" / "lock_timeouts" (group, topic, partition, count), and
    #: "acknowledged" (ack type name, records)
    share: dict[str, list[Any]] = field(default_factory=dict)
    #: monotonic ms when rendered: the time the latency windows (kept in monotonic ms) are read at
    monotonic_ms: int = 0
    #: the longest reactor turn one step of taking this snapshot took (ms), per kind of step
    #: (``partitions``, ``controller``, ``rest``): what a scrape costs the reactor
    longest_steps: dict[str, float] = field(default_factory=dict)
    #: objects the render thread reads itself (their own locks)
    readers: dict[str, Any] = field(default_factory=dict)


def _partition_rows(broker: Any, out: PartitionColumns) -> Iterator[str]:
    rm = broker.replica_manager
    if rm is None:
        return
    min_isr: dict[str, int] = {}
    partitions = rm.partitions
    keys = list(partitions)  # the dict's own key tuples: nothing new for the collector
    for i, key in enumerate(keys):
        if i and i % SLICE == 0:
            yield "partitions"
        p = partitions.get(key)
        if p is None:
            continue  # gone while the snapshot was being taken
        topic = key[0]
        log = p.log
        leader = p.is_leader
        under_min = False
        if leader:
            floor = min_isr.get(topic)
            if floor is None:
                floor = min_isr[topic] = rm.min_insync_replicas(topic)
            under_min = len(p.isr) < floor
        delays = p.delays
        segments = log.segments
        size = 0
        for segment in segments:
            size += segment.size
        out.topic.append(topic)
        out.partition.append(key[1])
        out.leader.append(leader)
        out.under_replicated.append(leader and p.is_under_replicated)
        out.under_min_isr.append(under_min)
        out.size.append(size)
        out.segments.append(len(segments))
        out.log_start.append(log.log_start_offset)
        out.log_end.append(log.next_offset)
        out.high_watermark.append(p.high_watermark)
        out.follower_lag.append(0 if leader else p.follower_lag)
        out.delayed_pending.append(delays.index.pending_records() if leader and delays is not None else -1)


def _controller(broker: Any, out: dict[str, int]) -> Iterator[str]:
    """The controller's figures into *out*; the active controller's pass over its partitions a slice
    per reactor turn, as the partitions' own."""
    controller = getattr(broker, "controller", None)
    active = bool(getattr(controller, "is_active", False))
    out.update(active=1 if active else 0, offline=0, imbalance=0, topics=0, partitions=0)
    if controller is None:
        return
    stats = controller.stats
    out["unclean"] = stats.unclean_leader_elections
    out["elections"] = stats.leader_elections.count
    if not active:
        return
    from mafka.controller.states import PartitionState

    ctx = controller.context
    out["topics"] = len(ctx.all_topics)
    out["partitions"] = len(ctx.leadership)
    out["offline"] = len(ctx.partitions_in_states(PartitionState.OfflinePartition))
    imbalance = 0
    leadership = ctx.leadership
    keys = list(leadership)  # its own key tuples (no (key, value) pair per partition for the collector)
    for i, tp in enumerate(keys):
        if i and i % SLICE == 0:
            yield "controller"
        state = leadership.get(tp)
        replicas = ctx.assignments.get(tp[0], {}).get(tp[1])
        if state is not None and replicas and state.leader != replicas[0] \
                and not ctx.is_topic_queued_for_deletion(tp[0]):
            imbalance += 1
    out["imbalance"] = imbalance


def _transactions(broker: Any) -> tuple[dict[str, int], dict[bool, int]]:
    service = getattr(broker, "transaction_service", None)
    if service is None:
        return {}, {}
    counts: dict[str, int] = {}
    for metadata in service.coordinator.txn_manager.all_metadata():
        name = metadata.state.name
        counts[name] = counts.get(name, 0) + 1
    return counts, dict(service.channel.markers_written)


def _rest(broker: Any, snap: Snapshot) -> None:
    rm = broker.replica_manager
    if rm is not None:
        snap.offline_replicas = len(rm.offline_partitions)
        snap.topic_stats = rm.topic_stats.snapshot()
        snap.isr_shrinks, snap.isr_expands = rm.isr_shrinks, rm.isr_expands
    service = getattr(broker, "group_service", None)
    if service is not None:
        manager = service.coordinator.group_manager
        snap.groups, snap.offsets = manager.group_states(), manager.offsets_count()
        snap.completed_rebalances, snap.offset_commits = manager.completed_rebalances, manager.offset_commits
    sampler = getattr(broker, "group_lag", None)
    if sampler is not None:
        snap.lag_rows = sampler.tracker.rows(snap.now_ms)
    snap.transactions, snap.markers_written = _transactions(broker)
    store = getattr(broker, "store", None)
    snap.zookeeper = {name: getattr(store, name, 0) for name in ("expires", "disconnects", "sync_connects")}
    snap.readers["zookeeper_latency"] = getattr(store, "request_latency", None)
    delivery = getattr(broker, "delayed_delivery", None)
    if delivery is not None:
        snap.delayed_delivered = delivery.delivered_records
        snap.half_waiting = dict(delivery.checks.waiting())
        snap.readers["delayed_lateness"] = delivery
    lm = getattr(broker, "log_manager", None)
    if lm is not None and lm.cold_dirs:
        snap.cold = {"moved": lm.segments_moved_cold,
                     "problems": [(str(d), lm.cold_dir_problems.get(d)) for d in lm.cold_dirs]}
    reader = getattr(broker, "cold_reads", None)
    if reader is not None:
        snap.cold["reads"] = reader.reads
    snap.share = _share(broker)


def _share(broker: Any) -> dict[str, list[Any]]:
    """The share-partition figures of the broker's share fetch service (topic ids named by the
    metadata cache; a topic deleted meanwhile is left out)."""
    service = getattr(broker, "share_fetch", None)
    if service is None:
        return {}
    manager = service.manager
    name_of = broker.metadata_cache.topic_name

    def named(counts: dict[Any, int]) -> list[tuple[str, str, int, int]]:
        rows = []
        for key, n in counts.items():
            topic = name_of(key.topic_id)
            if topic is not None:
                rows.append((key.group_id, topic, key.partition, n))
        return sorted(rows)

    partitions = []
    for key, in_flight, acquired in manager.share_partition_rows():
        topic = name_of(key.topic_id)
        if topic is not None:
            partitions.append((key.group_id, topic, key.partition, in_flight, acquired))
    return {
        "partitions": sorted(partitions),
        "redelivered": named(manager.redelivered),
        "lock_timeouts": named(manager.lock_timeouts),
        # Kafka registers a meter per type at start-up: every type, 0 until counted
        "acknowledged": [(kind.name.capitalize(), manager.acknowledged.get(kind, 0))
                         for kind in AcknowledgeType if kind != AcknowledgeType.GAP],
    }


def take_snapshot(broker: Any) -> Any:
    """A Deferred firing with the broker's :class:`Snapshot`, read on the reactor a slice at a time."""
    snap = Snapshot(now_ms=int(broker.reactor.seconds() * 1000))

    def steps() -> Iterator[str]:
        """The work, a slice at a time; each yield names the slice just done."""
        yield from _partition_rows(broker, snap.partitions)
        yield "partitions"
        yield from _controller(broker, snap.controller)
        yield "controller"
        _rest(broker, snap)
        yield "rest"

    done: defer.Deferred = defer.Deferred()
    work = steps()

    def step() -> None:
        # One slice per reactor turn: whatever else is ready runs between two slices.
        started = time.perf_counter()
        try:
            name = next(work)
        except StopIteration:
            done.callback(snap)
        except Exception:  # noqa: BLE001 - the scrape fails, the broker does not
            done.errback()
        else:
            took = (time.perf_counter() - started) * 1000.0
            snap.longest_steps[name] = max(snap.longest_steps.get(name, 0.0), took)
            broker.reactor.callLater(0, step)

    step()
    return done
