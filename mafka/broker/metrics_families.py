"""The Prometheus families of one scrape, from a :class:`~mafka.broker.metrics_snapshot.Snapshot` (any thread).

Names are what the common jmx_exporter rules (``kafka-2_0_0.yml``,
``lowercaseOutputName: true``) make of Kafka's MBeans, so Kafka dashboards and
alerts work unchanged: a meter ``…PerSec`` → ``kafka_<domain>_<type>_<name>_total``;
a gauge → ``kafka_<domain>_<type>_<name>`` with its keys as labels; a
histogram or timer → a summary ``kafka_<domain>_<type>_<name>{quantile="0.50"…"0.999"}``
and ``…_count`` (no ``_sum``, as jmx_exporter).  Consumer lag uses
kafka_exporter's names (``kafka_consumergroup_lag`` …) and kafka-lag-exporter's
``kafka_consumergroup_group_lag_seconds``.  Mafka's own series start with
``mafka_``.  README.md's "Metrics" table maps each to its MBean.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import fields
from typing import Any

from mafka.latency import LatencyWindow

from .broker_topic_stats import TopicCounters
from .metrics_snapshot import Snapshot
from .metrics_text import TextBlock, block, label_value, number
from .request_latency import is_slow
from .request_metrics import RequestMetrics

__all__ = ["families", "QUANTILES"]

#: Yammer's percentiles as jmx_exporter labels them ("0.$N" of ``NthPercentile``)
QUANTILES = (("0.50", 0.50), ("0.75", 0.75), ("0.95", 0.95), ("0.98", 0.98), ("0.99", 0.99), ("0.999", 0.999))

#: BrokerTopicMetrics meter per TopicCounters field; None: all topics only
_TOPIC_METERS = {
    "messages_in": ("messagesin", "Messages appended as leader (MessagesInPerSec)"),
    "bytes_in": ("bytesin", "Bytes appended as leader from producers (BytesInPerSec)"),
    "bytes_out": ("bytesout", "Bytes returned to consumers (BytesOutPerSec)"),
    "bytes_rejected": ("bytesrejected", "Bytes of batches refused as too large (BytesRejectedPerSec)"),
    "replication_bytes_in": ("replicationbytesin", "Bytes appended as a follower (ReplicationBytesInPerSec)"),
    "replication_bytes_out": ("replicationbytesout", "Bytes returned to followers (ReplicationBytesOutPerSec)"),
    "total_produce_requests": ("totalproducerequests", "Partitions of produce requests (TotalProduceRequestsPerSec)"),
    "failed_produce_requests": ("failedproducerequests", "Failed produce partitions (FailedProduceRequestsPerSec)"),
    "total_fetch_requests": ("totalfetchrequests", "Partitions of fetch requests (TotalFetchRequestsPerSec)"),
    "failed_fetch_requests": ("failedfetchrequests", "Failed fetch partitions (FailedFetchRequestsPerSec)"),
}
_ALL_TOPICS_ONLY = {"replication_bytes_in", "replication_bytes_out"}


def _counter(name: str, doc: str, samples: Iterable[tuple[dict[str, str], float]]) -> TextBlock:
    return block(name, doc, "counter", ((name + "_total", labels, value) for labels, value in samples))


def _gauge(name: str, doc: str, value: float, labels: dict[str, str] | None = None) -> TextBlock:
    return block(name, doc, "gauge", [(name, labels, value)])


def _gauges(name: str, doc: str, samples: Iterable[tuple[dict[str, str], float]]) -> TextBlock:
    return block(name, doc, "gauge", ((name, labels, value) for labels, value in samples))


def _summary(name: str, doc: str, rows: Iterable[tuple[dict[str, str], int, list[float | None]]]) -> TextBlock:
    """A jmx_exporter histogram: quantile gauges and a ``_count``, no ``_sum``."""
    samples: list[tuple[str, dict[str, str] | None, float]] = []
    for labels, count, values in rows:
        for (label, _), value in zip(QUANTILES, values, strict=True):
            if value is not None:
                samples.append((name, {**labels, "quantile": label}, value))
        samples.append((name + "_count", labels, count))
    return block(name, doc, "summary", samples)


def _window_summary(name: str, doc: str, window: LatencyWindow | None, now_ms: int) -> TextBlock:
    rows: list[tuple[dict[str, str], int, list[float | None]]] = [] if window is None else [
        ({}, window.count, window.percentiles(now_ms, *(q for _, q in QUANTILES)))]
    return _summary(name, doc, rows)


def _per_partition(name: str, doc: str, rows: Iterable[tuple[str, int, float]]) -> TextBlock:
    """A gauge with ``topic`` and ``partition`` labels, one line per row, written straight to text (the bulk)."""
    return TextBlock(name, doc, "gauge",
                     [f'{name}{{partition="{index}",topic="{label_value(topic)}"}} {number(value)}\n'
                      for topic, index, value in rows])


def _topic_metrics(snap: Snapshot) -> Iterator[TextBlock]:
    all_topics, per_topic = snap.topic_stats
    if not all_topics:
        return
    for i, field_name in enumerate(f.name for f in fields(TopicCounters)):
        short, doc = _TOPIC_METERS[field_name]
        samples: list[tuple[dict[str, str], float]] = [({}, all_topics[i])]
        if field_name not in _ALL_TOPICS_ONLY:
            samples += [({"topic": topic}, values[i]) for topic, values in per_topic]
        yield _counter(f"kafka_server_brokertopicmetrics_{short}", doc, samples)


def _replica_manager(snap: Snapshot) -> Iterator[TextBlock]:
    cols = snap.partitions
    led = cols.leader
    for name, value, doc in (
        ("partitioncount", len(cols), "Partitions hosted here"),
        ("leadercount", sum(led), "Partitions led here"),
        ("underreplicatedpartitions", sum(cols.under_replicated),
         "Partitions led here whose ISR is smaller than their replica set"),
        ("underminisrpartitioncount", sum(cols.under_min_isr),
         "Partitions led here with fewer in sync than min.insync.replicas"),
        ("offlinereplicacount", snap.offline_replicas, "Replicas here that are offline (their log dir failed)"),
    ):
        yield _gauge(f"kafka_server_replicamanager_{name}", doc, value)
    yield _counter("kafka_server_replicamanager_isrshrinks", "ISR shrinks written by this broker (IsrShrinksPerSec)",
                   [({}, snap.isr_shrinks)])
    yield _counter("kafka_server_replicamanager_isrexpands", "ISR expansions written by this broker (IsrExpandsPerSec)",
                   [({}, snap.isr_expands)])
    yield _gauge("kafka_server_replicafetchermanager_maxlag",
                 "Largest lag, in messages, of a replica this broker follows (ReplicaFetcherManager MaxLag)",
                 max(cols.follower_lag, default=0), {"clientId": "Replica"})


def _logs(snap: Snapshot) -> Iterator[TextBlock]:
    cols = snap.partitions
    topics, indexes = cols.topic, cols.partition
    yield _per_partition("kafka_log_log_size", "Bytes in the partition's log", zip(topics, indexes, cols.size, strict=True))
    yield _per_partition("kafka_log_log_numlogsegments", "Segments in the partition's log",
                         zip(topics, indexes, cols.segments, strict=True))
    yield _per_partition("kafka_log_log_logstartoffset", "The log start offset", zip(topics, indexes, cols.log_start, strict=True))
    yield _per_partition("kafka_log_log_logendoffset", "The log end offset", zip(topics, indexes, cols.log_end, strict=True))
    # kafka_exporter's partition offsets, from each partition's leader (every partition once cluster-wide)
    led = [i for i, leader in enumerate(cols.leader) if leader]
    yield _per_partition("kafka_topic_partition_current_offset", "The partition's high watermark (its leader's)",
                         ((topics[i], indexes[i], cols.high_watermark[i]) for i in led))
    yield _per_partition("kafka_topic_partition_oldest_offset", "The partition's log start offset (its leader's)",
                         ((topics[i], indexes[i], cols.log_start[i]) for i in led))


def _controller(snap: Snapshot) -> Iterator[TextBlock]:
    c = snap.controller
    for name, key, doc in (
        ("activecontrollercount", "active", "1 on the active controller"),
        ("offlinepartitionscount", "offline", "Partitions without a live leader (active controller only)"),
        ("preferredreplicaimbalancecount", "imbalance", "Partitions not led by their preferred replica"),
        ("globaltopiccount", "topics", "Topics in the cluster (active controller only)"),
        ("globalpartitioncount", "partitions", "Partitions in the cluster (active controller only)"),
    ):
        yield _gauge(f"kafka_controller_kafkacontroller_{name}", doc, c.get(key, 0))
    yield _counter("kafka_controller_controllerstats_uncleanleaderelections",
                   "Leaders elected from outside the ISR (UncleanLeaderElectionsPerSec)", [({}, c.get("unclean", 0))])


def _groups(snap: Snapshot) -> Iterator[TextBlock]:
    by_state = {"PreparingRebalance": 0, "CompletingRebalance": 0, "Stable": 0, "Dead": 0, "Empty": 0}
    for _, state, _ in snap.groups:
        by_state[state] = by_state.get(state, 0) + 1
    prefix = "kafka_coordinator_group_groupmetadatamanager_"
    yield _gauge(prefix + "numgroups", "Groups this broker coordinates", len(snap.groups))
    for state, n in by_state.items():
        yield _gauge(prefix + f"numgroups{state.lower()}", f"Groups coordinated here in state {state}", n)
    yield _gauge(prefix + "numoffsets", "Committed offsets held by this coordinator", snap.offsets)
    yield _gauge("kafka_server_group_coordinator_metrics_group_completed_rebalance_count",
                 "Rebalances completed by this coordinator (group-coordinator-metrics)", snap.completed_rebalances)
    yield _gauge("kafka_server_group_coordinator_metrics_offset_commit_count",
                 "Offsets committed through this coordinator (group-coordinator-metrics)", snap.offset_commits)
    yield _gauges("kafka_consumergroup_members", "Members of the group (kafka_exporter)",
                  (({"consumergroup": group}, n) for group, _, n in snap.groups))


def _lag(snap: Snapshot) -> Iterator[TextBlock]:
    lag: list[tuple[dict[str, str], float]] = []
    current: list[tuple[dict[str, str], float]] = []
    seconds: list[tuple[dict[str, str], float]] = []
    lag_sum: dict[tuple[str, str], int] = {}
    for group, topic, index, committed, records, secs in snap.lag_rows:
        labels = {"consumergroup": group, "topic": topic, "partition": str(index)}
        lag.append((labels, records))
        current.append((labels, committed))
        if secs is not None:
            seconds.append(({"group": group, "topic": topic, "partition": str(index)}, secs))
        lag_sum[(group, topic)] = lag_sum.get((group, topic), 0) + records
    yield _gauges("kafka_consumergroup_lag", "Records between the committed offset and the high watermark", lag)
    yield _gauges("kafka_consumergroup_current_offset", "The group's committed offset", current)
    yield _gauges("kafka_consumergroup_group_lag_seconds",
                  "Age of the first record the group has not consumed, s (kafka-lag-exporter)", seconds)
    yield _gauges("kafka_consumergroup_lag_sum", "The group's lag over the topic's partitions",
                  (({"consumergroup": g, "topic": t}, n) for (g, t), n in sorted(lag_sum.items())))


def _share(snap: Snapshot) -> Iterator[TextBlock]:
    """KIP-932's share-partitions led here: Kafka 4.2's ``SharePartitionMetrics`` and
    ``ShareGroupMetrics`` where Kafka has the figure, ``mafka_share_*`` for the locks held and the
    redeliveries."""
    share = snap.share
    if not share:
        return

    def labels(group: str, topic: str, partition: int) -> dict[str, str]:
        return {"group": group, "topic": topic, "partition": str(partition)}

    rows = share["partitions"]
    yield _gauges("kafka_server_sharepartitionmetrics_inflightmessagecount",
                  "Records in the share-partition's in-flight window, start to end offset (InFlightMessageCount)",
                  ((labels(g, t, p), n) for g, t, p, n, _ in rows))
    yield _gauges("mafka_share_partition_acquired_records",
                  "Records of the share-partition acquired by members now (in-flight locks)",
                  ((labels(g, t, p), n) for g, t, p, _, n in rows))
    yield _counter("kafka_server_sharepartitionmetrics_acquisitionlocktimeout",
                   "Records whose acquisition lock timed out (AcquisitionLockTimeoutPerSec)",
                   ((labels(g, t, p), n) for g, t, p, n in share["lock_timeouts"]))
    yield _counter("mafka_share_redelivered_records",
                   "Records delivered again (acquired with a delivery count above 1)",
                   ((labels(g, t, p), n) for g, t, p, n in share["redelivered"]))
    yield _counter("kafka_server_sharegroupmetrics_recordacknowledgements",
                   "Records acknowledged, by acknowledgement type (RecordAcknowledgementsPerSec)",
                   (({"ackType": kind}, n) for kind, n in share["acknowledged"]))


def _transactions(snap: Snapshot) -> Iterator[TextBlock]:
    yield _gauges("mafka_transaction_coordinator_transactions", "Transactions this coordinator holds, by state",
                  (({"state": state}, snap.transactions.get(state, 0)) for state in (
                      "EMPTY", "ONGOING", "PREPARE_COMMIT", "PREPARE_ABORT", "COMPLETE_COMMIT", "COMPLETE_ABORT",
                      "DEAD", "PREPARE_EPOCH_FENCE")))
    yield _counter("mafka_transaction_markers_written", "Transaction markers partition leaders wrote for this coordinator",
                   [({"result": "COMMIT"}, snap.markers_written.get(True, 0)),
                    ({"result": "ABORT"}, snap.markers_written.get(False, 0))])


def _zookeeper(snap: Snapshot) -> Iterator[TextBlock]:
    z = snap.zookeeper
    prefix = "kafka_server_sessionexpirelistener_"
    yield _counter(prefix + "zookeeperexpires", "ZooKeeper sessions expired (ZooKeeperExpiresPerSec)",
                   [({}, z.get("expires", 0))])
    yield _counter(prefix + "zookeeperdisconnects", "ZooKeeper disconnects (ZooKeeperDisconnectsPerSec)",
                   [({}, z.get("disconnects", 0))])
    yield _counter(prefix + "zookeepersyncconnects", "ZooKeeper (re)connections (ZooKeeperSyncConnectsPerSec)",
                   [({}, z.get("sync_connects", 0))])
    yield _window_summary("kafka_server_zookeeperclientmetrics_zookeeperrequestlatencyms",
                          "ZooKeeper request latency, ms (ZooKeeperRequestLatencyMs)",
                          snap.readers.get("zookeeper_latency"), snap.monotonic_ms)


def _requests(metrics: RequestMetrics | None) -> Iterator[TextBlock]:
    if metrics is None:
        return
    yield _counter("kafka_network_requestmetrics_requests", "Requests answered (RequestsPerSec)",
                   (({"request": name, "version": str(version)}, n) for name, version, n in sorted(metrics.counts())))
    by_timer: dict[str, list[tuple[dict[str, str], int, list[float | None]]]] = {}
    for name, timer, n, values in metrics.quantiles(*(q for _, q in QUANTILES)):
        by_timer.setdefault(timer, []).append(({"request": name}, n, values))
    for timer, rows in sorted(by_timer.items()):
        yield _summary(f"kafka_network_requestmetrics_{timer.lower()}", f"{timer} per request (RequestMetrics)", rows)


def _mafka(snap: Snapshot, broker: Any) -> Iterator[TextBlock]:
    cols = snap.partitions
    yield _per_partition("mafka_delayed_pending_messages", "Delayed records held until due by the partitions led here",
                         ((topic, index, n) for topic, index, n in zip(cols.topic, cols.partition, cols.delayed_pending, strict=True)
                          if n >= 0))
    yield _counter("mafka_delayed_delivered", "Delayed records delivered by this broker", [({}, snap.delayed_delivered)])
    delivery = snap.readers.get("delayed_lateness")
    lateness = [] if delivery is None else [
        ({"quantile": q}, v) for q, v in zip(("0.5", "0.99"), delivery.lateness_percentiles(0.5, 0.99), strict=True)
        if v is not None]
    yield _gauges("mafka_delayed_delivery_lag_ms", "Due time to append, over the recent deliveries", lateness)
    yield _gauges("mafka_txn_half_waiting_checks", "Half-message check-backs queued for a producer group",
                  (({"producer_group": group}, n) for group, n in snap.half_waiting.items()))
    latencies = getattr(broker, "request_latencies", None)
    if latencies is not None:
        now = snap.now_ms
        p99 = latencies.percentiles("Produce", now, 0.99)[0]
        slow = is_slow(p99, latencies.samples("Produce", now), broker.config.mafka_slow_node_threshold_ms)
        yield _gauge("mafka_broker_slow", "1 while the Produce TP99 is above mafka.slow.node.threshold.ms",
                     1 if slow else 0)
    cold = snap.cold
    if "moved" in cold:
        yield _counter("mafka_cold_segments_moved", "segments moved to the cold tier since startup",
                       [({}, cold["moved"])])
        yield _gauges("mafka_cold_dir_unusable", "1 for a cold log dir the mover stopped using (full, or an I/O error)",
                      (({"dir": d, "reason": "" if why is None else ("full" if why == "full" else "io_error")},
                        0 if why is None else 1) for d, why in cold["problems"]))
    if "reads" in cold:
        yield _counter("mafka_cold_reads", "fetch reads served from the cold tier", [({}, cold["reads"])])


def families(snap: Snapshot, broker: Any) -> Iterator[TextBlock]:
    """Every family of the scrape; runs in a worker thread (reads only the snapshot and locked windows)."""
    yield from _topic_metrics(snap)
    yield from _replica_manager(snap)
    yield from _logs(snap)
    yield from _controller(snap)
    controller = getattr(broker, "controller", None)
    if controller is not None:
        yield _window_summary("kafka_controller_controllerstats_leaderelectionrateandtimems",
                              "Leader elections and their time, ms (LeaderElectionRateAndTimeMs)",
                              controller.stats.leader_elections, snap.monotonic_ms)
    log_manager = getattr(broker, "log_manager", None)
    yield _window_summary("kafka_log_logflushstats_logflushrateandtimems", "Log flushes and their time, ms (fsync)",
                          getattr(log_manager, "flush_times", None), snap.monotonic_ms)
    yield from _groups(snap)
    yield from _lag(snap)
    yield from _share(snap)
    yield from _transactions(snap)
    yield from _zookeeper(snap)
    yield from _requests(getattr(broker, "request_metrics", None))
    idle = getattr(broker, "reactor_idle", None)
    fraction = idle.idle_fraction() if idle is not None else None
    if fraction is not None:
        yield _gauge("kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent",
                     "Share of the last minute the reactor thread (Mafka's request handler) was idle, 0-1", fraction)
    yield from _mafka(snap, broker)
    yield _gauges("mafka_metrics_snapshot_longest_step_ms",
                  "The longest reactor turn one step of this scrape's snapshot took (ms), per kind of step",
                  (({"step": name}, ms) for name, ms in sorted(snap.longest_steps.items())))
