"""The offset-range planner: Spark's Kafka source options resolved against a fake cluster."""

from __future__ import annotations

import json

import pytest

from mafka.spark.offset_ranges import (
    OffsetRange,
    ReadOptionsError,
    parse_read_options,
    plan_ranges,
    split_ranges,
)


class FakeSource:
    """Two topics: ``a`` (3 partitions, log start 10, high watermark 100 + 10·p) and ``b`` (1 partition,
    0..50); one record per millisecond from timestamp 1000 at the log start."""

    def __init__(self) -> None:
        self.counts = {"a": 3, "b": 1, "__consumer_offsets": 50}
        self.start = {("a", p): 10 for p in range(3)} | {("b", 0): 0}
        self.end = {("a", p): 100 + 10 * p for p in range(3)} | {("b", 0): 50}
        self.asked_times: dict = {}

    def partition_counts(self):
        return dict(self.counts)

    def earliest(self, tps):
        return {tp: self.start[tp] for tp in tps}

    def latest(self, tps):
        return {tp: self.end[tp] for tp in tps}

    def offsets_for_times(self, timestamps):
        self.asked_times.update(timestamps)
        out = {}
        for tp, ts in timestamps.items():
            offset = self.start[tp] + max(0, ts - 1000)
            out[tp] = offset if offset < self.end[tp] else None
        return out


def plan(**options):
    options.setdefault("kafka.bootstrap.servers", "h:1")
    return plan_ranges(parse_read_options(options), FakeSource())


def test_subscribe_reads_every_partition_from_earliest_to_latest():
    assert plan(subscribe="a,b") == [
        OffsetRange("a", 0, 10, 100), OffsetRange("a", 1, 10, 110), OffsetRange("a", 2, 10, 120),
        OffsetRange("b", 0, 0, 50),
    ]


def test_a_pattern_matches_whole_names_and_leaves_internal_topics_out():
    assert {r.topic for r in plan(subscribePattern="a|b|__.*")} == {"a", "b"}
    assert {r.topic for r in plan(subscribePattern="a")} == {"a"}


def test_assign_takes_the_listed_partitions_only():
    assert plan(assign=json.dumps({"a": [2, 0]})) == [OffsetRange("a", 0, 10, 100), OffsetRange("a", 2, 10, 120)]


def test_option_names_are_case_insensitive_as_spark_passes_them():
    assert plan(SUBSCRIBE="b", STARTINGOFFSETS='{"b": {"0": 5}}') == [OffsetRange("b", 0, 5, 50)]


def test_per_partition_offsets_with_earliest_and_latest_markers():
    ranges = plan(subscribe="a", startingOffsets='{"a": {"0": 20, "1": -2, "2": 50}}',
                  endingOffsets='{"a": {"0": 30, "1": 40, "2": -1}}')
    assert ranges == [OffsetRange("a", 0, 20, 30), OffsetRange("a", 1, 10, 40), OffsetRange("a", 2, 50, 120)]


def test_ranges_above_the_high_watermark_are_clipped_and_empty_ones_dropped():
    ranges = plan(subscribe="a", startingOffsets='{"a": {"0": 20, "1": 200, "2": 10}}',
                  endingOffsets='{"a": {"0": 5000, "1": 300, "2": 10}}')
    assert ranges == [OffsetRange("a", 0, 20, 100)]


def test_a_start_below_the_log_start_fails_unless_data_loss_is_allowed():
    source = FakeSource()
    source.start[("b", 0)] = 7
    with pytest.raises(ReadOptionsError, match=r"b-0: offsets 3 to 7 are no longer in the log.*failOnDataLoss"):
        plan_ranges(parse_read_options({"kafka.bootstrap.servers": "h:1", "subscribe": "b",
                                        "startingOffsets": '{"b": {"0": 3}}'}), source)
    source = FakeSource()
    source.start[("b", 0)] = 7
    ranges = plan_ranges(parse_read_options({"kafka.bootstrap.servers": "h:1", "subscribe": "b",
                                             "startingOffsets": '{"b": {"0": 3}}', "failOnDataLoss": "false"}),
                         source)
    assert ranges == [OffsetRange("b", 0, 7, 50)]


def test_a_start_after_the_end_is_an_error():
    with pytest.raises(ReadOptionsError, match="b-0: the starting offset 30 is after the ending offset 20"):
        plan(subscribe="b", startingOffsets='{"b": {"0": 30}}', endingOffsets='{"b": {"0": 20}}')


def test_timestamps_resolve_through_offsets_for_times_and_the_global_one_wins():
    ranges = plan(subscribe="b", startingTimestamp="1005", startingOffsetsByTimestamp='{"b": {"0": 1020}}',
                  startingOffsets='{"b": {"0": 40}}', endingOffsetsByTimestamp='{"b": {"0": 1030}}')
    assert ranges == [OffsetRange("b", 0, 5, 30)]


def test_a_timestamp_after_every_record_fails_or_starts_at_the_end_by_strategy():
    with pytest.raises(ReadOptionsError, match="b-0 has no record at or after timestamp 9999"):
        plan(subscribe="b", startingTimestamp="9999")
    assert plan(subscribe="b", startingTimestamp="9999", startingOffsetsByTimestampStrategy="latest") == []
    # An ending timestamp after every record ends at the high watermark.
    assert plan(subscribe="b", endingTimestamp="9999") == [OffsetRange("b", 0, 0, 50)]


@pytest.mark.parametrize(("options", "message"), [
    ({}, "exactly one of the options 'subscribe', 'subscribePattern' or 'assign'"),
    ({"subscribe": "a", "assign": '{"a": [0]}'}, "exactly one"),
    ({"subscribe": "nope"}, "topic 'nope' does not exist"),
    ({"assign": '{"a": [7]}'}, "topic 'a' has no partition 7"),
    ({"assign": "[1,2]"}, "option 'assign' must be a JSON object"),
    ({"subscribe": "a", "startingOffsets": "{bad json"}, "option 'startingOffsets' is not valid JSON"),
    ({"subscribe": "a", "startingOffsets": "latest"}, "'startingOffsets' cannot be latest"),
    ({"subscribe": "a", "startingOffsets": '{"a": {"0": -1, "1": 0, "2": 0}}'}, "'startingOffsets' cannot be latest"),
    ({"subscribe": "a", "endingOffsets": "earliest"}, "'endingOffsets' cannot be earliest"),
    ({"subscribe": "a", "startingOffsets": '{"a": {"0": 5}}'}, "must name every partition read; a-1 is missing"),
    ({"subscribe": "b", "startingOffsets": '{"b": {"0": 5}, "a": {"0": 1}}'}, "names a-0, which is not read"),
    ({"subscribe": "a", "minPartitions": "0"}, "'minPartitions' must be at least 1"),
    ({"subscribe": "a", "maxRecordsPerPartition": "x"}, "'maxRecordsPerPartition' must be an integer"),
    ({"subscribe": "a", "failOnDataLoss": "maybe"}, "'failOnDataLoss' must be true or false"),
    ({"subscribe": "a", "startingTimestamp": "-5"}, "'startingTimestamp' must be at least 0"),
    ({"subscribe": "a", "startingOffsetsByTimestampStrategy": "oldest"}, "must be 'error' or 'latest'"),
    ({"subscribe": "a", "colour": "blue"}, "unknown option 'colour'"),
    ({"subscribe": "a", "kafka.auto.offset.reset": "earliest"}, "'kafka.auto.offset.reset' is not supported"),
    ({"subscribePattern": "(", }, "'subscribePattern' is not a valid regex"),
])
def test_bad_requests_name_the_option(options, message):
    with pytest.raises(ReadOptionsError, match=message.replace("(", r"\(")):
        plan(**options)


def test_bootstrap_servers_are_required_and_client_options_pass_through():
    with pytest.raises(ReadOptionsError, match="'kafka.bootstrap.servers' is required"):
        parse_read_options({"subscribe": "a"})
    opts = parse_read_options({"mafka.bootstrap.servers": "h:1,h:2", "subscribe": "a", "kafka.client.id": "etl",
                               "includeHeaders": "true"})
    assert opts.bootstrap_servers == "h:1,h:2" and opts.client_config == {"client.id": "etl"}
    assert opts.include_headers is True


def test_max_records_per_partition_splits_ranges_into_contiguous_parts():
    ranges = plan(subscribe="b", maxRecordsPerPartition="20")
    assert ranges == [OffsetRange("b", 0, 0, 16), OffsetRange("b", 0, 16, 33), OffsetRange("b", 0, 33, 50)]
    assert all(r.count() <= 20 for r in ranges)


def test_min_partitions_splits_in_proportion_to_size_as_a_rounded_hint():
    ranges = [OffsetRange("a", 0, 0, 900), OffsetRange("a", 1, 0, 100)]
    out = split_ranges(ranges, min_partitions=10)
    assert [r.partition for r in out].count(0) == 9 and [r.partition for r in out].count(1) == 1
    assert sum(r.count() for r in out) == 1000
    # Already enough ranges: left alone.
    assert split_ranges(ranges, min_partitions=2) == ranges


@pytest.mark.parametrize("n", [1, 2, 3, 7, 50])
def test_splits_cover_each_range_exactly(n):
    r = OffsetRange("t", 3, 17, 66)
    parts = split_ranges([r], max_records=n)
    assert parts[0].from_offset == 17 and parts[-1].until_offset == 66
    assert all(a.until_offset == b.from_offset for a, b in zip(parts, parts[1:], strict=False))
    assert all(0 < p.count() <= n for p in parts)


def test_spark_kafkas_java_security_options_become_client_settings(tmp_path):
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n")
    opts = parse_read_options({
        "kafka.bootstrap.servers": "h:9094", "subscribe": "t",
        "kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required '
                                  'username="alice" password="Secret";',
        "kafka.ssl.truststore.type": "PEM", "kafka.ssl.truststore.location": str(ca),
    })
    assert opts.client_config == {
        "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "alice",
        "sasl.password": "Secret", "ssl.ca.location": str(ca),
    }


def test_a_java_key_store_option_is_refused_naming_it():
    with pytest.raises(ReadOptionsError, match="JKS|PEM"):
        parse_read_options({"kafka.bootstrap.servers": "h:9094", "subscribe": "t",
                            "kafka.ssl.truststore.type": "JKS", "kafka.ssl.truststore.location": "/x.jks"})
