"""The envelope: offsets, sequences and bytes kept; records delivered by due time (mafka.delayed.envelope)."""

from __future__ import annotations

import pytest

from mafka.delayed.envelope import (
    ENVELOPE_TYPE,
    Delivery,
    delivery_batch,
    envelope_batch,
    is_envelope,
    read_delivery,
    read_envelope,
)
from mafka.delayed.headers import DELAY_HEADER, DELAYED_OFFSET_HEADER, ORIGINAL_TIMESTAMP_HEADER
from mafka.wire.batch import BatchHeader, validate_batch
from mafka.wire.compression import CompressionType
from mafka.wire.errors import CorruptRecordBatch
from mafka.wire.records import ControlRecord, Record, build_batch, decode_batch

T = 1_800_000_000_000


def produced(n: int = 3, compression: int = CompressionType.NONE, pid: int = 7) -> bytes:
    records = [Record(i, T + i, f"k{i}".encode(), f"v{i}".encode(), (("h", b"x"), (DELAY_HEADER, b"100")))
               for i in range(n)]
    return build_batch(records, compression=compression, producer_id=pid, producer_epoch=2, base_sequence=40)


@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.LZ4, CompressionType.ZSTD])
def test_the_envelope_keeps_the_producers_offsets_sequences_and_timestamps(codec):
    original = produced(4, codec)
    env = bytearray(envelope_batch(original, [T + 100] * 4))
    h, o = validate_batch(env), BatchHeader(original)
    assert h.is_control and not h.is_transactional and h.compression == CompressionType.NONE
    assert (h.last_offset_delta, h.record_count) == (3, 1)
    assert (h.producer_id, h.producer_epoch, h.base_sequence) == (7, 2, 40)
    assert (h.base_timestamp, h.max_timestamp) == (o.base_timestamp, o.max_timestamp)
    assert is_envelope(env) and not is_envelope(original)
    # what a client decodes: one control record of an unknown type, nothing for the application
    decoded = decode_batch(env)
    assert len(decoded.records) == 1 and isinstance(decoded.records[0], ControlRecord)
    assert decoded.records[0].type == ENVELOPE_TYPE and decoded.records[0].version == 0
    got = read_envelope(env)
    assert got.original == original and got.due_ms == (T + 100,) * 4


def test_groups_by_due_time_keep_offset_order():
    env = read_envelope(envelope_batch(produced(5), [T + 9, T + 5, T + 9, T + 5, T + 1]))
    assert [(g.due_ms, g.first_delta, g.deltas) for g in env.groups()] == [
        (T + 1, 4, (4,)), (T + 5, 1, (1, 3)), (T + 9, 0, (0, 2))]


def test_a_delivery_carries_the_acknowledged_offsets_and_original_timestamps():
    stored = bytearray(envelope_batch(produced(3, CompressionType.LZ4), [T + 50, T + 80, T + 50]))
    stored[0:8] = (1000).to_bytes(8, "big")  # where the log put it: offsets 1000..1002
    env = read_envelope(stored)
    group = env.groups()[0]
    out = delivery_batch(env, group)
    h = validate_batch(out)
    assert (h.producer_id, h.compression, h.is_control) == (-1, CompressionType.NONE, False)
    records = decode_batch(out).records
    assert [(r.key, r.value, r.timestamp) for r in records] == [(b"k0", b"v0", T + 50), (b"k2", b"v2", T + 50)]
    assert [dict(r.headers) for r in records] == [
        {"h": b"x", ORIGINAL_TIMESTAMP_HEADER: str(T + 0).encode(), DELAYED_OFFSET_HEADER: b"1000"},
        {"h": b"x", ORIGINAL_TIMESTAMP_HEADER: str(T + 2).encode(), DELAYED_OFFSET_HEADER: b"1002"}]
    assert read_delivery(out) == Delivery(1000, T + 50, 2)
    assert read_delivery(delivery_batch(env, env.groups()[1])) == Delivery(1001, T + 80, 1)


def test_ordinary_batches_are_not_deliveries():
    assert read_delivery(produced(2, pid=-1)) is None
    assert read_delivery(produced(2)) is None  # idempotent: never a delivery
    forged = build_batch([Record(0, T, None, b"v", ((DELAYED_OFFSET_HEADER, b"x"),))])
    assert read_delivery(forged) is None


def test_damage_and_misuse_are_refused():
    env = bytearray(envelope_batch(produced(2), [T, T]))
    env[-1] ^= 0xFF
    with pytest.raises(CorruptRecordBatch):
        read_envelope(env)
    with pytest.raises(CorruptRecordBatch):
        read_envelope(produced(2))
    with pytest.raises(ValueError):
        envelope_batch(produced(2), [T])
    txn = build_batch([Record(0, T, None, b"v")], producer_id=1, producer_epoch=0, base_sequence=0,
                      is_transactional=True)
    with pytest.raises(ValueError):
        envelope_batch(txn, [T])


def test_due_times_are_stored_as_runs_so_an_envelope_of_one_delay_adds_little():
    original = produced(500)
    one = envelope_batch(original, [T + 1] * 500)
    assert len(one) - len(original) < 120
    spread = envelope_batch(original, [T + i for i in range(500)])
    assert len(spread) - len(original) <= 256 + 12 * 500  # within mafka.log.log.size_limit's allowance
    assert read_envelope(spread).due_ms == tuple(T + i for i in range(500))


def test_the_log_takes_an_envelope_of_a_batch_that_met_max_message_bytes(tmp_path):
    from mafka.log.config import LogConfig
    from mafka.log.log import Log

    original = produced(200)
    limit = len(original)  # the producer's batch is exactly at max.message.bytes
    log = Log.open(tmp_path / "t-0", LogConfig(max_message_bytes=limit), lambda: T)
    try:
        info = log.append_as_leader(envelope_batch(original, [T + i % 7 for i in range(200)]), 0)
        assert (info.first_offset, info.last_offset) == (0, 199)
    finally:
        log.close()
