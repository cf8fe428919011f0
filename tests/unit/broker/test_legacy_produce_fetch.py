"""Old clients' formats through the broker: Produce v0–2 up-converted, Fetch v0–3 down-converted.

The log always holds record batch v2 (KIP-724); magic 0/1 exist only at the
edge.  Real logs in tmp dirs, as ``test_replica_manager``.
"""

from __future__ import annotations

import gzip
from types import SimpleNamespace

import pytest
from kafka.record.memory_records import MemoryRecords

from mafka.errors import ErrorCode
from mafka.log.config import LogConfig
from mafka.wire.batch import iter_batches
from mafka.wire.compression import CompressionType
from mafka.wire.legacy_records import (
    TIMESTAMP_TYPE_MASK,
    LegacyRecord,
    build_message_set,
    encode_message,
    iter_entries,
    iter_legacy_records,
)
from mafka.wire.records import (
    ControlRecordType,
    Record,
    build_batch,
    build_control_batch,
    iter_records,
)

from .test_replica_manager import call, fetch_body, leader_and_isr, produce
from .test_replica_manager import env as replica_env  # noqa: F401 (a fixture, used by name)

TS = 1_600_000_000_000


def legacy(n, *, magic, codec=CompressionType.NONE, start=0, ts=TS, **kw):
    recs = [LegacyRecord(i, ts + start + i, b"k%d" % (start + i) if i % 4 else None, b"value-%d" % (start + i)) for i in range(n)]
    return build_message_set(recs, magic=magic, compression=codec, **kw)


def v2(n, *, start=0, codec=CompressionType.NONE, ts=TS, **kw):
    return build_batch([Record(i, ts + start + i, b"k%d" % (start + i), b"value-%d" % (start + i)) for i in range(n)],
                       compression=codec, **kw)


def produced(resp):
    p = resp.responses[0].partition_responses[0]
    return p.error_code, p.base_offset


def stored(env, topic="t"):
    """The log's batches and records, read back by Fetch v11."""
    resp, _ = call(env, 1, 11, fetch_body(0, topic=topic, max_wait_ms=0))
    data = bytes(resp.responses[0].partitions[0].records)
    return [h for _, h in iter_batches(data)], list(iter_records(data))


def fetch_part(env, version, offset, *, pmb=1 << 20, max_bytes=1 << 20, topic="t", replica_id=-1):
    body = fetch_body(offset, topic=topic, max_wait_ms=0, min_bytes=0, replica_id=replica_id)
    body["max_bytes"] = max_bytes
    body["topics"][0]["partitions"][0]["partition_max_bytes"] = pmb
    resp, _ = call(env, 1, version, body)
    return resp.responses[0].partitions[0]


def messages(part):
    return list(iter_legacy_records(bytes(part.records)))


@pytest.fixture
def bare(replica_env):  # noqa: F811 (the imported fixture)
    """A broker hosting no partition yet (``test_replica_manager``'s ``env``)."""
    return replica_env


@pytest.fixture
def leader(bare):
    """A broker leading t-0."""
    bare.rm.become_leader_or_follower(leader_and_isr())
    return bare


# -- Produce v0–2 -------------------------------------------------------------------------------


@pytest.mark.parametrize(("version", "magic"), [(0, 0), (1, 0), (2, 0), (2, 1)])
@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4])
def test_legacy_produce_is_stored_as_one_v2_batch(leader, version, magic, codec):
    env = leader
    assert produced(produce(env, v2(2), version=7)[0]) == (0, 0)
    resp, _ = produce(env, legacy(5, magic=magic, codec=codec, start=2), version=version)
    assert produced(resp) == (0, 2)  # (decoded at `version`: a v0 answer without throttle time, no trailing bytes)
    batches, records = stored(env)
    assert len(batches) == 2
    header = batches[1]
    assert (header.base_offset, header.record_count, header.compression) == (2, 5, codec)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (-1, -1, -1)
    assert header.timestamp_type == 0
    got = [(r.offset, r.key, r.value, r.timestamp, r.headers) for r in records[2:]]
    want_ts = [TS + 2 + i if magic else -1 for i in range(5)]
    assert got == [(2 + i, b"k%d" % (2 + i) if i % 4 else None, b"value-%d" % (2 + i), want_ts[i], ()) for i in range(5)]


def test_produce_v2_response_and_log_append_time_topic(bare):
    env = bare
    env.rm.log_config_for = lambda topic: LogConfig(message_timestamp_type="LogAppendTime")
    env.rm.become_leader_or_follower(leader_and_isr())
    resp, _ = produce(env, legacy(3, magic=1), version=2)
    p = resp.responses[0].partition_responses[0]
    assert (p.error_code, p.base_offset) == (0, 0) and p.log_append_time_ms > 0
    batches, records = stored(env)
    assert batches[0].timestamp_type == 1 and {r.timestamp for r in records} == {p.log_append_time_ms}


def test_legacy_produce_errors(leader):
    env = leader
    good = legacy(3, magic=1)
    flipped = bytearray(good)
    flipped[-1] ^= 0x01
    gz = legacy(2, magic=1, codec=CompressionType.GZIP)
    cases = [
        (bytes(flipped), 2, ErrorCode.CORRUPT_MESSAGE),
        (good[:-3], 2, ErrorCode.CORRUPT_MESSAGE),  # a torn last message
        (gz + gz, 2, ErrorCode.INVALID_RECORD),  # a compressed set is one wrapper
        (legacy(1, magic=1) + gz, 2, ErrorCode.INVALID_RECORD),
        (legacy(3, magic=1, log_append_time=5), 2, ErrorCode.INVALID_TIMESTAMP),
        (legacy(3, magic=1, codec=CompressionType.GZIP, log_append_time=5), 2, ErrorCode.INVALID_TIMESTAMP),
        (build_message_set([LegacyRecord(0, 0, None, b"x" * 2_000_000)], magic=0), 1, ErrorCode.MESSAGE_TOO_LARGE),
        (good, 3, ErrorCode.INVALID_RECORD),  # Produce v3+ needs magic 2
    ]
    for records, version, error in cases:
        resp, _ = produce(env, records, version=version)
        assert produced(resp)[0] == error, (version, error)
    assert env.rm.partitions[("t", 0)].log.next_offset == 0  # nothing was written


def test_corrupt_inner_message_of_a_wrapper_is_corrupt_message(leader):
    inner = bytearray(legacy(3, magic=1))
    inner[-1] ^= 0x01  # the wrapper's own CRC is right; an inner message's is not
    wrapped = bytearray()
    encode_message(wrapped, 2, None, gzip.compress(bytes(inner)), magic=1, timestamp=TS, attributes=CompressionType.GZIP)
    resp, _ = produce(leader, bytes(wrapped), version=2)
    assert produced(resp)[0] == ErrorCode.CORRUPT_MESSAGE
    assert leader.rm.partitions[("t", 0)].log.next_offset == 0


def test_compacted_topic_refuses_legacy_messages_without_key(bare):
    env = bare
    env.rm.log_config_for = lambda topic: LogConfig(cleanup_policy=("compact",))
    env.rm.become_leader_or_follower(leader_and_isr())
    resp, _ = produce(env, legacy(3, magic=0), version=1)  # record 0 has no key
    assert produced(resp)[0] == ErrorCode.INVALID_RECORD
    keyed = build_message_set([LegacyRecord(0, -1, b"a", b"1"), LegacyRecord(1, -1, b"b", None)], magic=0)
    assert produced(produce(env, keyed, version=1)[0]) == (0, 0)


def test_a_v2_batch_in_produce_v2_is_accepted_as_kafka_does(leader):
    assert produced(produce(leader, v2(3), version=2)[0]) == (0, 0)
    assert len(stored(leader)[1]) == 3


def test_acks_zero_legacy_produce(leader):
    result, closed = produce(leader, legacy(2, magic=0), version=0, acks=0)
    assert result is None and closed == []
    assert leader.rm.partitions[("t", 0)].log.next_offset == 2


# -- Fetch v0–3 ---------------------------------------------------------------------------------


def _fill(env):
    """0–3 plain, 4–8 gzip, a commit marker at 9, 10–12 lz4, 13–14 snappy (offsets)."""
    produce(env, v2(4))
    produce(env, v2(5, start=4, codec=CompressionType.GZIP))
    partition = env.rm.partitions[("t", 0)]
    marker = build_control_batch(ControlRecordType.COMMIT, producer_id=7, producer_epoch=0, timestamp=TS)
    with env.manager.log_io(("t", 0)):
        partition.log.append_as_leader(marker, partition.leader_epoch)
    produce(env, v2(3, start=10, codec=CompressionType.LZ4))
    produce(env, v2(2, start=13, codec=CompressionType.SNAPPY))


@pytest.mark.parametrize(("version", "magic"), [(0, 0), (1, 0), (2, 1), (3, 1)])
def test_fetch_down_converts_v2_batches(leader, version, magic):
    env = leader
    _fill(env)
    part = fetch_part(env, version, 0)
    assert (part.error_code, part.high_watermark) == (0, 15)
    entries = list(iter_entries(bytes(part.records)))
    assert {e.magic for e in entries} == {magic} and {e.compression for e in entries} == {0}
    got = messages(part)
    offsets = [r.offset for r in got]
    assert offsets == [*range(9), *range(10, 15)]  # the marker at 9 is skipped
    for r in got:
        assert r.value == b"value-%d" % r.offset and r.key == b"k%d" % r.offset
    if magic:
        assert [r.timestamp for r in got] == [TS + o for o in offsets]
        assert not any(r.attributes & TIMESTAMP_TYPE_MASK for r in got)
    else:
        assert {r.timestamp for r in got} == {-1}
    # An independent reader (kafka-python's) sees the same.
    mr = MemoryRecords(bytes(part.records))
    theirs = []
    while (batch := mr.next_batch()) is not None:
        theirs += [(r.offset, r.key, r.value) for r in batch]
    assert theirs == [(r.offset, r.key, r.value) for r in got]


def test_log_append_time_batches_down_convert_with_the_flag(bare):
    env = bare
    env.rm.log_config_for = lambda topic: LogConfig(message_timestamp_type="LogAppendTime")
    env.rm.become_leader_or_follower(leader_and_isr())
    produce(env, v2(2, codec=CompressionType.GZIP))
    append_time = stored(env)[1][0].timestamp
    got = messages(fetch_part(env, 2, 0))
    assert [(r.offset, r.timestamp, r.timestamp_type) for r in got] == [(0, append_time, 1), (1, append_time, 1)]
    got = messages(fetch_part(env, 1, 0))
    assert [(r.offset, r.timestamp, r.attributes) for r in got] == [(0, -1, 0), (1, -1, 0)]


def test_fetch_from_the_middle_of_a_batch_and_at_the_end(leader):
    produce(leader, v2(5, codec=CompressionType.GZIP))
    assert [r.offset for r in messages(fetch_part(leader, 2, 3))] == [3, 4]
    part = fetch_part(leader, 1, 5)
    assert (part.error_code, bytes(part.records)) == (0, b"")
    assert fetch_part(leader, 1, 6).error_code == ErrorCode.OFFSET_OUT_OF_RANGE


def test_legacy_produce_then_legacy_fetch_round_trip(leader):
    sent = legacy(6, magic=0, codec=CompressionType.GZIP)
    produce(leader, sent, version=1)
    sent1 = legacy(3, magic=1, start=6)
    produce(leader, sent1, version=2)
    got0 = [(r.offset, r.key, r.value) for r in messages(fetch_part(leader, 1, 0))]
    assert got0 == [(r.offset + 0, r.key, r.value) for r in iter_legacy_records(sent)] + [
        (6 + r.offset, r.key, r.value) for r in iter_legacy_records(sent1)
    ]
    got1 = messages(fetch_part(leader, 3, 6))
    assert [(r.offset, r.timestamp) for r in got1] == [(6 + i, TS + 6 + i) for i in range(3)]


def _message_size(magic, key, value):
    return 12 + (14 if magic == 0 else 22) + len(key or b"") + len(value or b"")


@pytest.mark.parametrize(("version", "magic"), [(0, 0), (2, 1)])
def test_fetch_v0_to_v2_cut_at_partition_max_bytes_leaving_a_partial_message(leader, version, magic):
    produce(leader, v2(10))
    one = _message_size(magic, b"k0", b"value-0")
    part = fetch_part(leader, version, 0, pmb=3 * one + 5)
    assert len(part.records) == 3 * one + 5
    assert [r.offset for r in messages(part)] == [0, 1, 2]
    # Below one message: only a partial one, which the client skips (and grows its fetch size).
    part = fetch_part(leader, version, 0, pmb=one - 1)
    assert len(part.records) == one - 1 and messages(part) == []


def test_fetch_v3_keeps_the_first_message_whole_and_honours_max_bytes(leader):
    produce(leader, v2(10))
    one = _message_size(1, b"k0", b"value-0")
    part = fetch_part(leader, 3, 0, pmb=10)
    assert [r.offset for r in messages(part)] == [0] and len(part.records) == one
    part = fetch_part(leader, 3, 0, pmb=1 << 20, max_bytes=2 * one)
    assert [r.offset for r in messages(part)] == [0, 1]


def test_fetch_v3_response_max_bytes_spans_partitions(bare):
    env = bare
    env.rm.become_leader_or_follower(leader_and_isr(partitions=(0, 1)))
    produce(env, v2(10), partition=0)
    produce(env, v2(10), partition=1)
    one = _message_size(1, b"k0", b"value-0")
    body = fetch_body(0, max_wait_ms=0)
    body["max_bytes"] = 12 * one
    body["topics"][0]["partitions"].append({"partition": 1, "fetch_offset": 0, "partition_max_bytes": 1 << 20})
    resp, _ = call(env, 1, 3, body)
    counts = [len(messages(p)) for p in resp.responses[0].partitions]
    assert counts == [10, 2]
    # v0–2 have no response limit: both partitions whole.
    resp, _ = call(env, 1, 2, body)
    assert [len(messages(p)) for p in resp.responses[0].partitions] == [10, 10]


def test_fetch_of_a_second_partition_whose_first_batch_exceeds_its_limit_gives_a_partial_message(bare):
    env = bare
    env.rm.become_leader_or_follower(leader_and_isr(partitions=(0, 1)))
    produce(env, v2(1), partition=0)
    produce(env, build_batch([Record(0, TS, b"k", b"x" * 5000)]), partition=1)
    body = fetch_body(0, max_wait_ms=0)
    body["topics"][0]["partitions"].append({"partition": 1, "fetch_offset": 0, "partition_max_bytes": 1000})
    resp, _ = call(env, 1, 1, body)
    second = resp.responses[0].partitions[1]
    assert len(second.records) == 1000 and messages(second) == []


def test_zstd_batches_and_zstd_topics_are_refused_to_old_fetchers(leader):
    produce(leader, v2(2))
    produce(leader, v2(2, start=2, codec=CompressionType.ZSTD))
    part = fetch_part(leader, 2, 2)
    assert part.error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE and part.high_watermark == -1
    # From offset 0 the plain batch is answered and the zstd one ends the answer.
    assert [r.offset for r in messages(fetch_part(leader, 2, 0))] == [0, 1]
    assert fetch_part(leader, 11, 2).error_code == 0
    leader.broker.topic_configs = SimpleNamespace(overrides={"t": {"compression.type": "zstd"}}, broker_overrides={})
    assert fetch_part(leader, 1, 0).error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE


def test_down_conversion_can_be_disabled_per_topic_or_broker(leader):
    produce(leader, v2(2))
    leader.broker.topic_configs = SimpleNamespace(overrides={"t": {"message.downconversion.enable": "false"}}, broker_overrides={})
    assert fetch_part(leader, 3, 0).error_code == ErrorCode.UNSUPPORTED_VERSION
    assert fetch_part(leader, 4, 0).error_code == 0
    leader.broker.topic_configs = SimpleNamespace(overrides={}, broker_overrides={"log.message.downconversion.enable": "false"})
    assert fetch_part(leader, 0, 0).error_code == ErrorCode.UNSUPPORTED_VERSION
    leader.broker.topic_configs = None
    leader.broker.config = SimpleNamespace(log_message_downconversion_enable=False, fetch_max_bytes=1 << 20)
    assert fetch_part(leader, 0, 0).error_code == ErrorCode.UNSUPPORTED_VERSION


def test_legacy_fetch_long_poll_is_woken_by_a_legacy_produce(leader):
    from mafka.wire.codec import decode_request, decode_response, encode_request

    request = decode_request(encode_request(1, 1, 9, "c", fetch_body(0, max_wait_ms=500))[4:])
    got = []
    leader.dispatcher.dispatch(request, SimpleNamespace(listener="PLAINTEXT", close=lambda: None)).addCallback(got.append)
    assert got == []
    produce(leader, legacy(2, magic=0), version=1)
    assert len(got) == 1
    data = b"".join(c if isinstance(c, bytes) else c.read() for c in got[0])
    part = decode_response(1, 1, data[4:])[1].responses[0].partitions[0]
    assert [r.value for r in iter_legacy_records(bytes(part.records))] == [b"value-0", b"value-1"]


def test_records_without_timestamps_do_not_roll_a_segment_per_append(leader):
    # Magic-0 records keep no timestamp (−1): the segment then ages by the clock, as Kafka's
    # timeWaitedForRoll, instead of rolling at each later batch that has timestamps.
    for i in range(3):
        produce(leader, legacy(2, magic=0, start=2 * i), version=1)
        produce(leader, v2(2, start=6 + 2 * i))
    assert len(leader.rm.partitions[("t", 0)].log.segments) == 1


@pytest.mark.parametrize("value", ["0.8.0", "0.8.2.2", "0.9.0.1", "0.10.0", "0.10.0-IV1", "0.10.2.1", "0.11.0", "1.0",
                                   "1.1.1", "2.0-IV1", "2.4", "2.8", "2.8-IV1", "2.8.2", " 2.7 "])
def test_message_format_version_accepts_kafka_2_8_api_versions(value):
    from mafka.controller.admin import validate_topic_configs

    validate_topic_configs({"message.format.version": value})


@pytest.mark.parametrize("value", ["0.7.0", "0.8", "0.10", "2.9", "3.0", "2.8-IV2", "latest", ""])
def test_message_format_version_refuses_other_values(value):
    from mafka.controller.admin import validate_topic_configs
    from mafka.errors import InvalidConfigError

    with pytest.raises(InvalidConfigError, match="message.format.version"):
        validate_topic_configs({"message.format.version": value})
