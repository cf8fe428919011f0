"""Streaming offset planning (Spark's KafkaMicroBatchStream rules) against a fake cluster and a fake clock."""

from __future__ import annotations

import json

import pytest

from mafka.spark.offset_ranges import OffsetRange, ReadOptionsError, parse_read_options
from mafka.spark.stream_offsets import (
    INSTRUCTION_FOR_FAIL_ON_DATA_LOSS_TRUE,
    StreamDataLossError,
    StreamPlanner,
    offsets_from_json,
    offsets_to_json,
    parse_stream_options,
    time_string_ms,
)


class FakeCluster:
    """Topics as {name: [(log start, high watermark) per partition]}; timestamps: one record per ms from
    1000 at the log start.  Every question is recorded."""

    def __init__(self, topics: dict[str, list[tuple[int, int]]]) -> None:
        self.topics = {t: list(parts) for t, parts in topics.items()}
        self.asked: list[str] = []
        self.stale: list[dict] = []  # answers to give to latest() before the true ones
        self.failures = 0

    def partition_counts(self):
        self.asked.append("counts")
        if self.failures:
            self.failures -= 1
            raise ReadOptionsError("cannot reach the cluster")
        return {t: len(p) for t, p in self.topics.items()}

    def earliest(self, tps):
        self.asked.append("earliest")
        return {tp: self.topics[tp[0]][tp[1]][0] for tp in tps}

    def latest(self, tps):
        self.asked.append("latest")
        if self.stale:
            return {tp: self.stale.pop(0).get(tp, self.topics[tp[0]][tp[1]][1]) for tp in tps}
        return {tp: self.topics[tp[0]][tp[1]][1] for tp in tps}

    def offsets_for_times(self, timestamps):
        out = {}
        for tp, ts in timestamps.items():
            start, end = self.topics[tp[0]][tp[1]]
            offset = start + max(0, ts - 1000)
            out[tp] = offset if offset < end else None
        return out

    def grow(self, topic: str, partition: int, by: int) -> None:
        start, end = self.topics[topic][partition]
        self.topics[topic][partition] = (start, end + by)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def planner(cluster: FakeCluster, clock: Clock | None = None, **options: str) -> StreamPlanner:
    options.setdefault("kafka.bootstrap.servers", "h:1")
    if not any(k in options for k in ("subscribe", "subscribePattern", "assign")):
        options["subscribe"] = "t"
    sleeps: list[float] = []
    p = StreamPlanner(parse_stream_options(options), cluster, clock=clock or Clock(), sleep=sleeps.append)
    p.sleeps = sleeps  # type: ignore[attr-defined]
    return p


def tps(**offsets: int) -> dict:
    """t0=5, t1=7 → {("t", 0): 5, ("t", 1): 7}."""
    return {(k.rstrip("0123456789"), int(k[len(k.rstrip("0123456789")):])): v for k, v in offsets.items()}


# -- options and offsets JSON -----------------------------------------------------------------


def test_offsets_json_is_sparks_form_sorted_by_topic_and_partition():
    offsets = {("b", 0): 3, ("a", 10): 7, ("a", 2): 23}
    as_json = offsets_to_json(offsets)
    assert json.dumps(as_json, separators=(",", ":")) == '{"a":{"2":23,"10":7},"b":{"0":3}}'
    assert offsets_from_json(as_json) == offsets
    assert offsets_from_json('{"a":{"2":23}}') == {("a", 2): 23}
    with pytest.raises(ValueError, match='Expected e.g. {"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}, got'):
        offsets_from_json({"a": [1, 2]})


def test_streaming_options_default_to_latest_and_refuse_ending_offsets():
    opts = parse_stream_options({"kafka.bootstrap.servers": "h:1", "subscribe": "t"})
    assert opts.read.starting.keyword == -1 and opts.max_offsets_per_trigger is None
    assert opts.max_trigger_delay_ms == 15 * 60 * 1000 and opts.fetch_retries == 3
    assert parse_stream_options({"kafka.bootstrap.servers": "h:1", "subscribe": "t",
                                 "startingOffsets": '{"t": {"0": -1}}'}).read.starting.offsets == {"t": {0: -1}}
    for key in ("endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp"):
        with pytest.raises(ReadOptionsError, match=f"option '{key}' is not valid in streaming queries"):
            parse_stream_options({"kafka.bootstrap.servers": "h:1", "subscribe": "t", key: "1"})


@pytest.mark.parametrize(("option", "value", "message"), [
    ("startingOffsets", "{not json", "option 'startingOffsets' is not valid JSON"),
    ("maxOffsetsPerTrigger", "0", "option 'maxOffsetsPerTrigger' must be at least 1"),
    ("minOffsetsPerTrigger", "many", "option 'minOffsetsPerTrigger' must be an integer"),
    ("maxTriggerDelay", "soon", "option 'maxTriggerDelay': invalid time string"),
    ("fetchOffset.numRetries", "-1", "option 'fetchOffset.numRetries' must be at least 1"),
])
def test_bad_streaming_options_name_the_option(option, value, message):
    with pytest.raises(ReadOptionsError, match=message):
        parse_stream_options({"kafka.bootstrap.servers": "h:1", "subscribe": "t", option: value})


def test_a_batch_read_accepts_and_ignores_the_streaming_options():
    opts = parse_read_options({"kafka.bootstrap.servers": "h:1", "subscribe": "t", "maxOffsetsPerTrigger": "5",
                               "minOffsetsPerTrigger": "1", "maxTriggerDelay": "1m"})
    assert opts.starting.keyword == -2


def test_time_strings_as_spark_reads_them():
    assert [time_string_ms(s) for s in ("15m", "30s", "500ms", "1h", "250", "2min", "1d")] == [
        900_000, 30_000, 500, 3_600_000, 250, 120_000, 86_400_000]


# -- the start --------------------------------------------------------------------------------


def test_the_start_is_latest_by_default_earliest_or_json_or_timestamps():
    cluster = FakeCluster({"t": [(10, 100), (0, 50)]})
    assert planner(cluster).initial_offsets() == tps(t0=100, t1=50)
    assert planner(cluster, startingOffsets="earliest").initial_offsets() == tps(t0=10, t1=0)
    assert planner(cluster, startingOffsets='{"t": {"0": 42, "1": -2}}').initial_offsets() == tps(t0=42, t1=0)
    assert planner(cluster, startingOffsets='{"t": {"0": -1, "1": 7}}').initial_offsets() == tps(t0=100, t1=7)
    assert planner(cluster, startingTimestamp="1005").initial_offsets() == tps(t0=15, t1=5)
    # the global timestamp wins over per-partition ones, which win over offsets
    assert planner(cluster, startingTimestamp="1001", startingOffsetsByTimestamp='{"t": {"0": 1002, "1": 1003}}',
                   startingOffsets="earliest").initial_offsets() == tps(t0=11, t1=1)
    assert planner(cluster, startingOffsetsByTimestamp='{"t": {"0": 1002, "1": 1003}}',
                   startingOffsets="earliest").initial_offsets() == tps(t0=12, t1=3)


def test_a_start_json_must_name_every_partition_and_a_timestamp_must_match():
    cluster = FakeCluster({"t": [(0, 10), (0, 10)]})
    with pytest.raises(ReadOptionsError, match="must name every partition read; t-1 is missing"):
        planner(cluster, startingOffsets='{"t": {"0": 1}}').initial_offsets()
    with pytest.raises(ReadOptionsError, match="option 'startingTimestamp': t-0 has no record at or after"):
        planner(cluster, startingTimestamp="99999").initial_offsets()
    assert planner(cluster, startingTimestamp="99999", startingOffsetsByTimestampStrategy="latest"
                   ).initial_offsets() == tps(t0=10, t1=10)


def test_a_subscribed_topic_that_does_not_exist_yet_is_read_from_earliest_once_it_does():
    cluster = FakeCluster({"other": [(0, 5)]})
    p = planner(cluster, subscribe="t", startingOffsets="latest")
    start = p.initial_offsets()
    assert start == {} and p.latest_offsets(start) == {}
    cluster.topics["t"] = [(0, 30)]
    end = p.latest_offsets(start)
    assert end == tps(t0=30)
    assert p.plan_ranges(start, end) == [OffsetRange("t", 0, 0, 30)]


# -- each trigger -----------------------------------------------------------------------------


def test_each_trigger_reads_to_the_latest_offsets():
    cluster = FakeCluster({"t": [(0, 100), (0, 50)]})
    p = planner(cluster, startingOffsets="earliest")
    start = p.initial_offsets()
    end = p.latest_offsets(start)
    assert end == tps(t0=100, t1=50) and p.latest == end
    assert p.plan_ranges(start, end) == [OffsetRange("t", 0, 0, 100), OffsetRange("t", 1, 0, 50)]
    cluster.grow("t", 1, 5)
    nxt = p.latest_offsets(end)
    assert nxt == tps(t0=100, t1=55)
    assert p.plan_ranges(end, nxt) == [OffsetRange("t", 1, 50, 55)]  # empty ranges left out
    assert p.plan_ranges(nxt, nxt) == []


def test_max_offsets_per_trigger_is_shared_in_proportion_to_what_each_partition_has():
    cluster = FakeCluster({"t": [(0, 1000), (0, 3000), (0, 1), (0, 0)]})
    p = planner(cluster, startingOffsets="earliest", maxOffsetsPerTrigger="100")
    start = p.initial_offsets()
    end = p.latest_offsets(start)
    # 100·1000/4001 = 24.99 → 24, 100·3000/4001 = 74.98 → 74, 100·1/4001 < 1 → 1 (never starved), empty: its end
    assert end == tps(t0=24, t1=74, t2=1, t3=0)
    assert sum(e - start[tp] for tp, e in end.items()) <= 100
    # the engine's ReadAllAvailable (Trigger.Once) lifts the limit
    assert p.latest_offsets(start, read_all=True) == tps(t0=1000, t1=3000, t2=1, t3=0)


def test_rate_limit_counts_a_new_partition_from_its_earliest_offset():
    cluster = FakeCluster({"t": [(0, 100), (40, 140)]})
    p = planner(cluster, assign='{"t": [0, 1]}', maxOffsetsPerTrigger="50")
    end = p.latest_offsets(tps(t0=0))  # t-1 is new: 100 offsets from its earliest, 40
    assert end == tps(t0=25, t1=65)


def test_min_offsets_per_trigger_waits_until_max_trigger_delay():
    cluster = FakeCluster({"t": [(0, 10)]})
    clock = Clock()
    p = planner(cluster, clock, startingOffsets="earliest", minOffsetsPerTrigger="20", maxTriggerDelay="30s")
    start = p.initial_offsets()
    # the first trigger runs at once (nothing triggered yet, as Spark's lastTriggerMillis = 0)
    first = p.latest_offsets(start)
    assert first == tps(t0=10)
    cluster.grow("t", 0, 5)
    clock.now += 10_000
    assert p.latest_offsets(first) == first  # 5 < 20 and 10 s < 30 s: skipped
    cluster.grow("t", 0, 15)
    clock.now += 1_000
    assert p.latest_offsets(first) == tps(t0=30)  # 20 available now
    cluster.grow("t", 0, 1)
    clock.now += 29_999
    assert p.latest_offsets(tps(t0=30)) == tps(t0=30)
    clock.now += 1
    assert p.latest_offsets(tps(t0=30)) == tps(t0=31)  # 30 s since the last batch


def test_min_and_max_together():
    cluster = FakeCluster({"t": [(0, 10)]})
    clock = Clock()
    p = planner(cluster, clock, minOffsetsPerTrigger="20", maxOffsetsPerTrigger="25")
    assert p.latest_offsets(tps(t0=10)) == tps(t0=10)  # first trigger: nothing new
    cluster.grow("t", 0, 15)
    clock.now += 1000
    assert p.latest_offsets(tps(t0=10)) == tps(t0=10)  # 15 < 20
    cluster.grow("t", 0, 100)
    clock.now += 1000
    assert p.latest_offsets(tps(t0=10)) == tps(t0=35)  # 115 ≥ 20, capped at 25


def test_trigger_available_now_stops_at_the_offsets_of_its_start():
    cluster = FakeCluster({"t": [(0, 100), (0, 100)]})
    p = planner(cluster, startingOffsets="earliest", maxOffsetsPerTrigger="60", minOffsetsPerTrigger="1000")
    p.available_now = True
    start = p.initial_offsets()
    ends = []
    while True:
        end = p.latest_offsets(start)
        if end == start:
            break
        ends.append(end)
        cluster.grow("t", 0, 10)  # written after the query started: not read
        start = end
    assert ends == [tps(t0=30, t1=30), tps(t0=60, t1=60), tps(t0=90, t1=90), tps(t0=100, t1=100)]


def test_latest_offsets_below_the_querys_are_fetched_again():
    cluster = FakeCluster({"t": [(0, 100)]})
    p = planner(cluster, **{"fetchOffset.retryIntervalMs": "10"})
    cluster.stale = [{("t", 0): 40}]
    assert p.latest_offsets(tps(t0=90)) == tps(t0=100)
    assert p.sleeps == [0.01]  # type: ignore[attr-defined]
    cluster.stale = [{("t", 0): 40}] * 3  # still behind after fetchOffset.numRetries attempts: taken as is
    assert p.latest_offsets(tps(t0=90)) == tps(t0=40)


def test_offset_questions_are_retried_on_errors():
    cluster = FakeCluster({"t": [(0, 100)]})
    cluster.failures = 2
    p = planner(cluster)
    assert p.latest_offsets(tps(t0=0)) == tps(t0=100)
    cluster.failures = 3
    with pytest.raises(ReadOptionsError, match="cannot reach the cluster"):
        p.latest_offsets(tps(t0=0))


# -- new partitions and topics; data loss -----------------------------------------------------


def test_new_partitions_and_matching_topics_are_read_from_earliest():
    cluster = FakeCluster({"ev-a": [(0, 10)], "other": [(0, 10)]})
    p = planner(cluster, subscribePattern="ev-.*", startingOffsets="latest")
    start = p.initial_offsets()
    assert start == {("ev-a", 0): 10}
    cluster.topics["ev-a"].append((0, 7))  # partition added
    cluster.topics["ev-b"] = [(0, 3)]  # a new matching topic
    end = p.latest_offsets(start)
    assert end == {("ev-a", 0): 10, ("ev-a", 1): 7, ("ev-b", 0): 3}
    assert p.plan_ranges(start, end) == [OffsetRange("ev-a", 1, 0, 7), OffsetRange("ev-b", 0, 0, 3)]


def test_a_deleted_topic_fails_with_sparks_message_or_is_skipped():
    cluster = FakeCluster({"ev-a": [(0, 10)], "ev-b": [(0, 5), (0, 5)]})
    start = {("ev-a", 0): 10, ("ev-b", 0): 5, ("ev-b", 1): 5}
    del cluster.topics["ev-b"]
    cluster.grow("ev-a", 0, 2)
    p = planner(cluster, subscribePattern="ev-.*")
    end = p.latest_offsets(start)
    assert end == {("ev-a", 0): 12}
    with pytest.raises(StreamDataLossError) as failed:
        p.plan_ranges(start, end)
    assert str(failed.value) == ("Set(ev-b-0, ev-b-1) are gone. Some data may have been missed.. "
                                 + INSTRUCTION_FOR_FAIL_ON_DATA_LOSS_TRUE)
    lenient = planner(cluster, subscribePattern="ev-.*", failOnDataLoss="false")
    assert lenient.plan_ranges(start, end) == [OffsetRange("ev-a", 0, 10, 12)]


def test_a_recreated_topic_below_the_checkpoint_is_data_loss():
    cluster = FakeCluster({"t": [(0, 5)]})  # the checkpoint says 100: the topic was recreated
    p = planner(cluster, **{"fetchOffset.retryIntervalMs": "0"})
    end = p.latest_offsets(tps(t0=100))
    assert end == tps(t0=5) and cluster.asked.count("latest") == 3  # fetched numRetries times
    with pytest.raises(StreamDataLossError, match=r"Partition t-0's offset was changed from 100 to 5, some data may"):
        p.plan_ranges(tps(t0=100), end)
    assert planner(cluster, failOnDataLoss="false").plan_ranges(tps(t0=100), end) == []


def test_a_new_partition_not_starting_at_zero_or_gone_is_data_loss():
    cluster = FakeCluster({"t": [(0, 10), (4, 9)]})
    p = planner(cluster)
    with pytest.raises(StreamDataLossError, match="Added partition t-1 starts from 4 instead of 0"):
        p.plan_ranges(tps(t0=10), tps(t0=10, t1=9))
    lenient = planner(cluster, failOnDataLoss="false")
    assert lenient.plan_ranges(tps(t0=10), tps(t0=10, t1=9)) == [OffsetRange("t", 1, 4, 9)]
    # a partition in the end offsets that is gone before its earliest offset is known
    with pytest.raises(StreamDataLossError, match=r"Cannot find earliest offsets of Set\(t-2\)"):
        p.plan_ranges(tps(t0=10), tps(t0=10, t2=3))
    assert lenient.plan_ranges(tps(t0=5), tps(t0=10, t2=3)) == [OffsetRange("t", 0, 5, 10)]


def test_min_partitions_splits_large_ranges():
    cluster = FakeCluster({"t": [(0, 1000), (0, 100)]})
    p = planner(cluster, minPartitions="5")
    ranges = p.plan_ranges(tps(t0=0, t1=0), tps(t0=1000, t1=100))
    assert [(r.partition, r.from_offset, r.until_offset) for r in ranges] == [
        (0, 0, 200), (0, 200, 400), (0, 400, 600), (0, 600, 800), (0, 800, 1000), (1, 0, 100)]
    # enough partitions already: one range per partition
    assert len(planner(cluster, minPartitions="2").plan_ranges(tps(t0=0, t1=0), tps(t0=1000, t1=100))) == 2


def test_a_first_batch_re_run_from_a_re_resolved_latest_reads_nothing_instead_of_failing():
    cluster = FakeCluster({"t": [(0, 100), (0, 100)]})
    logged_end = tps(t0=100, t1=100)  # batch 0 of the first run, logged but not committed
    cluster.grow("t", 0, 50)
    restarted = planner(cluster)  # startingOffsets=latest, resolved again by the restarted query
    start = restarted.initial_offsets()
    assert start == tps(t0=150, t1=100)
    assert restarted.plan_ranges(start, logged_end) == []
    # once the query triggers again, a latest offset below its own start is data loss as ever
    assert restarted.latest_offsets(logged_end) == tps(t0=150, t1=100)
    with pytest.raises(StreamDataLossError, match="offset was changed from 150 to 100"):
        restarted.plan_ranges(start, logged_end)
