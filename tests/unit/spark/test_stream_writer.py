from __future__ import annotations

import pytest

from mafka.spark.offset_ranges import ReadOptionsError
from mafka.spark.stream_writer import (
    MafkaStreamWriter,
    PreparedTransaction,
    already_written,
    end_transactions,
    parse_stream_options,
    transactional_id,
)
from mafka.spark.writer import WriteError

BASE = {"kafka.bootstrap.servers": "h:9092", "topic": "out"}


def test_at_least_once_by_default_and_sparks_checkpoint_location_and_query_name_are_not_client_options():
    options, columns = parse_stream_options({**BASE, "checkpointLocation": "/tmp/ckpt", "queryName": "copy"},
                                            ["key", "value"])
    assert not options.exactly_once and options.prefix is None
    assert options.sink.topic == "out" and options.sink.client_config == {}
    assert columns == ["key", "value"]


def test_exactly_once_and_the_prefix_are_the_streaming_sinks_own_options():
    options, _ = parse_stream_options({**BASE, "exactlyOnce": "TRUE", "transactionalIdPrefix": " copy "},
                                      ["value"])
    assert options.exactly_once and options.prefix == "copy"
    assert "exactlyonce" not in options.sink.client_config


@pytest.mark.parametrize("extra, columns, message", [
    ({"exactlyOnce": "yes"}, ["value"], "'exactlyOnce' must be true or false"),
    ({"transactionalIdPrefix": " "}, ["value"], "'transactionalIdPrefix' must not be empty"),
    ({"kafka.transactional.id": "t"}, ["value"], "'kafka.transactional.id' is not supported"),
    ({"startingOffsets": "earliest"}, ["value"], "unknown option 'startingoffsets'"),
    ({}, ["key"], "a 'value' column is required"),
])
def test_bad_options_fail_on_the_driver_naming_them(extra, columns, message):
    with pytest.raises(ReadOptionsError, match=message):
        parse_stream_options({**BASE, **extra}, columns)


def test_one_transactional_id_per_spark_partition_the_same_in_every_batch():
    assert transactional_id("mafka-spark-q1", 0) == "mafka-spark-q1-0"
    assert transactional_id("mafka-spark-q1", 7) != transactional_id("mafka-spark-q1", 0)


@pytest.mark.parametrize("marker, batch, done", [
    (-1001, 0, False),  # no marker committed yet
    (0, 0, False),
    (1, 0, True),  # batch 0 committed: marker 1
    (5, 4, True),
    (5, 5, False),  # the next batch
    (9, 3, True),
])
def test_a_marker_of_batch_plus_one_or_more_means_the_batch_is_committed(marker, batch, done):
    assert already_written(marker, batch) is done


def test_a_task_without_an_open_transaction_leaves_the_driver_nothing_to_end():
    opts, _ = parse_stream_options({**BASE, "exactlyOnce": "true"}, ["value"])
    skipped = PreparedTransaction("p-0", -1, -1, 0, skipped=True)
    empty = PreparedTransaction("p-1", -1, -1, 0)
    assert not skipped.open and not empty.open and PreparedTransaction("p-2", 4, 0, 10).open
    end_transactions(opts.sink, [skipped, empty], committed=True)  # no connection attempted


def test_the_exactly_once_write_needs_a_micro_batch_task():
    writer = MafkaStreamWriter({**BASE, "exactlyOnce": "true"}, ["value"])
    with pytest.raises(WriteError, match="must run in a Spark task"):
        writer.write(iter([{"value": b"v"}]))
