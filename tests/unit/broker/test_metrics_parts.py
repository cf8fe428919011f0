"""The plain-Python parts of the metrics endpoint: topic counters, request timings, reactor idle, lag, snapshot."""

from __future__ import annotations

from types import SimpleNamespace

from prometheus_client.parser import text_string_to_metric_families
from twisted.internet import defer, task

from mafka.broker.broker_topic_stats import BrokerTopicStats
from mafka.broker.group_lag import GroupLagSampler, LagTracker
from mafka.broker.metrics import render_metrics
from mafka.broker.metrics_snapshot import SLICE, Snapshot, take_snapshot
from mafka.broker.reactor_idle import ReactorIdle
from mafka.broker.request_metrics import RequestMetrics
from mafka.errors import ErrorCode


def test_topic_counters_count_as_kafkas_replica_manager_does() -> None:
    stats = BrokerTopicStats()
    stats.produced("a", ErrorCode.NONE, records=10, size=1000)
    stats.produced("a", ErrorCode.NOT_LEADER_OR_FOLLOWER, size=50)  # not a failure in Kafka's count
    stats.produced("a", ErrorCode.MESSAGE_TOO_LARGE, size=70)  # rejected bytes, not a failure
    stats.produced("b", ErrorCode.INVALID_RECORD, size=5)  # a failure
    stats.fetched("a", ErrorCode.NONE, 300)
    stats.fetched("a", ErrorCode.NONE, 900, follower=True)  # replication, all topics only
    stats.fetched("a", ErrorCode.OFFSET_OUT_OF_RANGE)  # not a failure
    stats.fetched("a", ErrorCode.UNKNOWN_SERVER_ERROR)  # a failure
    a, b, every = stats.of("a"), stats.of("b"), stats.all_topics
    assert (a.messages_in, a.bytes_in, a.bytes_rejected, a.total_produce_requests, a.failed_produce_requests) == \
        (10, 1000, 70, 3, 0)
    assert (b.total_produce_requests, b.failed_produce_requests) == (1, 1)
    assert (a.bytes_out, a.total_fetch_requests, a.failed_fetch_requests) == (300, 4, 1)
    assert (every.bytes_out, every.replication_bytes_out, every.failed_produce_requests) == (300, 900, 1)
    stats.remove("a")  # a deleted topic's series go; the all-topics counts keep its traffic
    assert [name for name, _ in stats.snapshot()[1]] == ["b"] and stats.all_topics.messages_in == 10


def test_request_metrics_keep_kafkas_five_times_per_request_and_count_versions() -> None:
    now = [0]
    metrics = RequestMetrics(lambda: now[0])
    for i in range(100):
        metrics.record("Produce", 9, 1.0, 2.0, float(i), 0.5, 3.5 + i)
    metrics.record("Produce", 7, 1.0, 2.0, 3.0, 0.5, 6.5)
    assert sorted(metrics.counts()) == [("Produce", 7, 1), ("Produce", 9, 100)]
    rows = {timer: (n, values) for _, timer, n, values in metrics.quantiles(0.5, 0.99)}
    assert rows["RemoteTimeMs"][0] == 101 and rows["RemoteTimeMs"][1] == [49.0, 98.0]
    now[0] = 61_000  # the window is the last minute
    assert all(values == [None, None] for _, _, _, values in metrics.quantiles(0.5, 0.99))


def test_reactor_idle_is_one_minus_the_reactor_cpu_share() -> None:
    wall, cpu = [0.0], [0.0]
    idle = ReactorIdle(wall=lambda: wall[0], cpu=lambda: cpu[0])
    idle.sample()
    assert idle.idle_fraction() is None
    for _ in range(10):
        wall[0] += 1.0
        cpu[0] += 0.25
        idle.sample()
    assert idle.idle_fraction() == 0.75
    for _ in range(120):  # a busy stretch longer than the window: only it counts
        wall[0] += 1.0
        cpu[0] += 1.0
        idle.sample()
    assert idle.idle_fraction() == 0.0


def test_lag_in_records_and_in_seconds_from_the_first_unconsumed_records_timestamp() -> None:
    tracker = LagTracker(kept=2)
    tracker.record({("t", 0): 200, ("t", 1): 50}, [("g", "t", 0, 150), ("g", "t", 1, 50), ("h", "t", 0, 120)])
    # caught up: 0 s; behind and the record's timestamp not known yet: no figure
    assert tracker.rows(20_000) == [("g", "t", 0, 150, 50, None), ("g", "t", 1, 50, 0, 0.0),
                                    ("h", "t", 0, 120, 80, None)]
    assert tracker.missing_timestamps() == {("t", 0): 150}  # one offset per partition a round
    tracker.remember("t", 0, 150, 5_000)
    assert tracker.missing_timestamps() == {("t", 0): 120}
    tracker.remember("t", 0, 120, 2_000)
    assert [secs for *_, secs in tracker.rows(20_000)] == [15.0, 0.0, 18.0]
    tracker.remember("t", 0, 999, 1)  # the cache is bounded: the oldest timestamp goes
    assert ("t", 0, 150) not in tracker.timestamps and len(tracker.timestamps) == 2


def test_record_timestamp_finds_the_record_at_or_after_an_offset_in_a_fetched_batch() -> None:
    from mafka.broker.group_lag import record_timestamp
    from mafka.wire.records import Record, build_batch

    batch = bytearray(build_batch([Record(0, 1000, None, b"a"), Record(1, 1500, None, b"b"),
                                   Record(2, 1700, None, b"c")]))
    batch[0:8] = (40).to_bytes(8, "big")  # the batch at base offset 40
    assert record_timestamp(bytes(batch), 41) == 1500
    assert record_timestamp(bytes(batch), 40) == 1000
    assert record_timestamp(bytes(batch), 43) is None
    assert record_timestamp(b"\x00garbage", 0) is None


def test_the_lag_sampler_asks_each_leader_once_for_ends_and_for_timestamps() -> None:
    from mafka.wire.records import Record, build_batch

    clock = task.Clock()
    clock.advance(100)
    asked: list[tuple[int, int, dict]] = []

    class FakeConnection:
        def __init__(self, broker_id: int) -> None:
            self.broker_id = broker_id

        def request(self, api_key: int, version: int, body: dict) -> defer.Deferred:
            asked.append((self.broker_id, api_key, body))
            if api_key == 2:  # ListOffsets
                topics = [SimpleNamespace(name=t["name"], partitions=[
                    SimpleNamespace(partition_index=p["partition_index"], error_code=0,
                                    offset=1000 + p["partition_index"]) for p in t["partitions"]])
                    for t in body["topics"]]
                return defer.succeed(SimpleNamespace(topics=topics))
            responses = []
            for t in body["topics"]:  # Fetch: the batch holding each offset
                parts = []
                for p in t["partitions"]:
                    batch = bytearray(build_batch([Record(0, 90_000, None, b"x")]))
                    batch[0:8] = p["fetch_offset"].to_bytes(8, "big")
                    parts.append(SimpleNamespace(partition_index=p["partition"], error_code=0, records=bytes(batch)))
                responses.append(SimpleNamespace(topic=t["topic"], partitions=parts))
            return defer.succeed(SimpleNamespace(responses=responses))

    manager = SimpleNamespace(committed_offsets=lambda: [("g", "t", 0, 5), ("g", "t", 1, 7), ("g", "t", 2, 9)])
    leaders = {("t", 0): 1, ("t", 1): 2, ("t", 2): 2}
    broker = SimpleNamespace(
        reactor=clock, broker_id=1, config=SimpleNamespace(inter_broker_listener="PLAINTEXT"),
        group_service=SimpleNamespace(coordinator=SimpleNamespace(group_manager=manager)),
        replica_manager=SimpleNamespace(partitions={("t", 0): SimpleNamespace(is_leader=True, high_watermark=40)}),
        metadata_cache=SimpleNamespace(partition=lambda t, i: SimpleNamespace(leader=leaders[(t, i)]),
                                       endpoint=lambda b, listener: ("127.0.0.1", 9000 + b)))
    sampler = GroupLagSampler(broker, connect=lambda b, host, port: FakeConnection(b))
    sampler.sample()
    # ends: this broker's own HW for t-0, one ListOffsets to broker 2 for t-1 and t-2;
    # timestamps: one Fetch per leader (this broker included)
    assert sorted((b, key) for b, key, _ in asked) == [(1, 1), (2, 1), (2, 2)]
    rows = {(p, lag, secs) for _, _, p, _, lag, secs in sampler.tracker.rows(100_000)}
    assert rows == {(0, 35, 10.0), (1, 994, 10.0), (2, 993, 10.0)}
    asked.clear()
    sampler.sample()  # the same committed offsets: their timestamps are known, no Fetch again
    assert [key for _, key, _ in asked] == [2]


def _partition(topic: str, index: int) -> SimpleNamespace:
    log = SimpleNamespace(segments=[SimpleNamespace(size=100)], log_start_offset=0, next_offset=10)
    return SimpleNamespace(log=log, is_leader=True, isr=(1, 2, 3), is_under_replicated=False, high_watermark=10,
                           follower_lag=0, delays=None)


def test_a_snapshot_reads_one_slice_of_partitions_per_reactor_turn_and_renders_elsewhere() -> None:
    turns: list = []  # what the snapshot left for a later reactor turn
    reactor = SimpleNamespace(seconds=lambda: 100.0, callLater=lambda delay, fn, *args: turns.append((fn, args)))
    n = SLICE * 3 + 5
    partitions = {("t", i): _partition("t", i) for i in range(n)}
    rm = SimpleNamespace(partitions=partitions, min_insync_replicas=lambda topic: 2, offline_partitions=set(),
                         topic_stats=BrokerTopicStats(), isr_shrinks=0, isr_expands=0)
    broker = SimpleNamespace(reactor=reactor, replica_manager=rm)
    d = take_snapshot(broker)
    ran = 0
    while not d.called:
        fn, args = turns.pop(0)
        fn(*args)
        ran += 1
    assert ran == 6 and not turns  # three more slices, the last one, the controller's pass, the rest: a turn each
    snap: Snapshot = d.result
    assert len(snap.partitions) == n
    text = render_metrics(broker, snap).decode()
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for f in text_string_to_metric_families(text) for s in f.samples}
    assert samples[("kafka_server_replicamanager_partitioncount", ())] == n
    assert samples[("kafka_log_log_size", (("partition", "7"), ("topic", "t")))] == 100
    assert samples[("kafka_topic_partition_current_offset", (("partition", "7"), ("topic", "t")))] == 10


def test_the_lean_text_format_parses_back_exactly_with_any_label_value() -> None:
    from mafka.broker.metrics_text import block, exposition

    nasty = 'a"b\\c\nd'
    text = exposition([
        block("x", "doc with \\ and\nnewline", "gauge", [("x", {"topic": nasty}, 1.5), ("x", None, 2)]),
        block("c", "a counter", "counter", [("c_total", {"k": "v"}, 3)]),
    ]).decode()
    parsed = {f.name: f for f in text_string_to_metric_families(text)}
    assert [(s.labels, s.value) for s in parsed["x"].samples] == [({"topic": nasty}, 1.5), ({}, 2.0)]
    assert parsed["c"].type == "counter" and parsed["c"].samples[0].value == 3.0
    # negative control: the same value unescaped does not survive a parse
    broken = text.replace('a\\"b\\\\c\\nd', nasty)
    try:
        survived = [s.labels for f in text_string_to_metric_families(broken) for s in f.samples if f.name == "x"]
    except ValueError:
        survived = []
    assert {"topic": nasty} not in survived


def test_share_partition_metrics_render_with_kafkas_names() -> None:
    from mafka.group.share.partition_state import AcknowledgeType
    from mafka.group.share.state_records import SharePartitionKey

    topic_id = bytes(range(16))
    key = SharePartitionKey("q", topic_id, 1)
    gone = SharePartitionKey("q", bytes(16 * [9]), 0)  # a topic the metadata cache no longer knows
    manager = SimpleNamespace(
        share_partition_rows=lambda: [(key, 12, 4), (gone, 1, 1)],
        redelivered={key: 7, gone: 1}, lock_timeouts={key: 3},
        acknowledged={AcknowledgeType.ACCEPT: 20, AcknowledgeType.RELEASE: 2},
    )
    cache = SimpleNamespace(topic_name=lambda tid: "orders" if tid == topic_id else None)
    reactor = SimpleNamespace(seconds=lambda: 100.0, callLater=lambda delay, fn, *args: fn(*args))
    broker = SimpleNamespace(reactor=reactor, replica_manager=None, share_fetch=SimpleNamespace(manager=manager),
                             metadata_cache=cache)
    d = take_snapshot(broker)
    assert d.called
    text = render_metrics(broker, d.result).decode()
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for f in text_string_to_metric_families(text) for s in f.samples}
    labels = (("group", "q"), ("partition", "1"), ("topic", "orders"))
    assert samples[("kafka_server_sharepartitionmetrics_inflightmessagecount", labels)] == 12
    assert samples[("mafka_share_partition_acquired_records", labels)] == 4
    assert samples[("kafka_server_sharepartitionmetrics_acquisitionlocktimeout_total", labels)] == 3
    assert samples[("mafka_share_redelivered_records_total", labels)] == 7
    assert samples[("kafka_server_sharegroupmetrics_recordacknowledgements_total", (("ackType", "Accept"),))] == 20
    assert samples[("kafka_server_sharegroupmetrics_recordacknowledgements_total", (("ackType", "Reject"),))] == 0
    # the share-partition of a topic the metadata cache no longer names has no series
    assert sum(1 for name, _ in samples if name == "mafka_share_partition_acquired_records") == 1
    assert sum(1 for name, _ in samples if name == "mafka_share_redelivered_records_total") == 1
