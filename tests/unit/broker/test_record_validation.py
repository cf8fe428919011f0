"""Kafka's per-record produce validation (KIP-467): compacted topics need keys, timestamps within
``message.timestamp.difference.max.ms``, no LogAppendTime from producers, and Produce v8's record errors.

Real logs in a tmp dir, the Produce handler through the dispatcher.
"""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest
from twisted.internet import defer, task

from mafka.broker.dispatcher import Dispatcher, collect_handlers
from mafka.broker.metadata_cache import MetadataCache
from mafka.broker.replica_manager import ReplicaManager
from mafka.errors import ErrorCode
from mafka.log.config import LogConfig
from mafka.log.manager import LogManager
from mafka.log.validation import needs_record_checks
from mafka.wire.batch import BatchHeader
from mafka.wire.records import Record, build_batch
from tests.unit.broker.test_replica_manager import call, leader_and_isr

NOW = int(time.time() * 1000)

CONFIGS = {
    "compacted": LogConfig(cleanup_policy=("compact",)),
    "bounded": LogConfig(message_timestamp_difference_max_ms=60_000),
    "plain": LogConfig(),
}


@pytest.fixture
def env(tmp_path):
    manager = LogManager([tmp_path / "d"], LogConfig(), lambda: NOW, broker_id=1, cluster_id="c",
                         topic_config=lambda topic: CONFIGS[topic])
    manager.startup()
    clock = task.Clock()
    clock.advance(NOW / 1000)
    rm = ReplicaManager(1, manager, clock)
    broker = SimpleNamespace(
        replica_manager=rm, metadata_cache=MetadataCache(1), broker_epoch=100,
        max_message_bytes=lambda topic: 1048588, auto_create_topics=False,
        auto_create_topic=lambda name: None, on_metadata_update=lambda deleted: None,
        run_blocking=lambda fn, *args: defer.maybeDeferred(fn, *args),
    )
    for topic in CONFIGS:
        rm.become_leader_or_follower(leader_and_isr(topic))
    env = SimpleNamespace(rm=rm, manager=manager, dispatcher=Dispatcher(collect_handlers(broker)))
    yield env
    manager.shutdown()


def produce(env, topic, records, version=8):
    body = {"acks": 1, "timeout_ms": 1000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": records}]}]}
    resp, _ = call(env, 0, version, body)
    return resp.responses[0].partition_responses[0]


def keyed(*keys, ts=NOW, compression=0):
    return build_batch([Record(i, ts, k, b"v") for i, k in enumerate(keys)], compression=compression)


@pytest.mark.parametrize("compression", [0, 1, 3])
def test_compacted_topic_refuses_records_without_a_key_and_names_them(env, compression):
    p = produce(env, "compacted", keyed(b"a", None, b"c", None, compression=compression))
    assert p.error_code == ErrorCode.INVALID_RECORD
    assert p.error_message == "One or more records have been rejected"
    assert [(e.batch_index, e.batch_index_error_message) for e in p.record_errors] == [
        (i, "Compacted topic cannot accept message without key in topic partition compacted-0.") for i in (1, 3)
    ]
    # Nothing of the refused batch was stored; a batch with every key goes in at offset 0.
    assert env.manager.get_log("compacted", 0).next_offset == 0
    ok = produce(env, "compacted", keyed(b"a", b"b", compression=compression))
    assert (ok.error_code, ok.base_offset, list(ok.record_errors), ok.error_message) == (0, 0, [], None)


def test_older_produce_versions_get_the_error_code_only(env):
    p = produce(env, "compacted", keyed(None), version=7)
    assert p.error_code == ErrorCode.INVALID_RECORD


def test_timestamps_outside_the_configured_difference_are_refused(env):
    records = [Record(0, NOW, b"k", b"v"), Record(1, NOW - 61_000, b"k", b"v"),
               Record(2, NOW + 59_000, b"k", b"v"), Record(3, -1, b"k", b"v")]
    p = produce(env, "bounded", build_batch(records))
    assert p.error_code == ErrorCode.INVALID_TIMESTAMP
    assert p.error_message == "One or more records have been rejected due to invalid timestamp"
    assert [e.batch_index for e in p.record_errors] == [1]
    assert p.record_errors[0].batch_index_error_message == (
        f"Timestamp {NOW - 61_000} of message with offset 1 is out of range. "
        f"The timestamp should be within [{NOW - 60_000}, {NOW + 60_000}]"
    )
    # The same records are fine on a topic with Kafka's default (unbounded) difference.
    assert produce(env, "plain", build_batch(records)).error_code == 0


def test_a_producer_may_not_set_log_append_time(env):
    p = produce(env, "bounded", build_batch([Record(0, NOW, b"k", b"v")], timestamp_type=1))
    assert p.error_code == ErrorCode.INVALID_TIMESTAMP
    assert "Producer should not set timestamp type to LogAppendTime." in p.record_errors[0].batch_index_error_message


def test_default_topics_keep_batches_opaque():
    plain = BatchHeader(keyed(None))
    assert not needs_record_checks(plain, CONFIGS["plain"])
    assert needs_record_checks(plain, CONFIGS["compacted"])
    assert needs_record_checks(plain, CONFIGS["bounded"])
    assert not needs_record_checks(plain, LogConfig(message_timestamp_type="LogAppendTime",
                                                    message_timestamp_difference_max_ms=1))
