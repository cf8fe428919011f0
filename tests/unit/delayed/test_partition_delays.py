"""Delayed messages at the partition: envelopes take the producer's offsets and sequences, every replica
indexes what it appends, a reopened or truncated replica's index follows its log."""

from __future__ import annotations

import pytest

from mafka.broker.partition import LeaderState, Partition
from mafka.delayed.envelope import delivery_batch, read_envelope
from mafka.delayed.produce import DelaySettings, envelope_if_delayed
from mafka.errors import OutOfOrderSequenceNumberError
from mafka.log.config import LogConfig
from mafka.log.log import Log
from mafka.wire.batch import BatchHeader
from mafka.wire.records import Record, build_batch, iter_records

T0 = 1_800_000_000_000


def produced(values, *, delay: bytes | None = None, seq: int = 0, pid: int = 5) -> bytes:
    headers = (("mafka.delay.ms", delay),) if delay is not None else ()
    return build_batch([Record(i, T0, b"k", v, headers) for i, v in enumerate(values)], producer_id=pid,
                       producer_epoch=0, base_sequence=seq)


def leader(tmp_path, name="t-0") -> Partition:
    log = Log.open(tmp_path / name, LogConfig(), lambda: T0)
    p = Partition("t", 0, 1, log, high_watermark=0)
    p.make_leader(LeaderState(1, 0, (1,), (1,), 0, 1), T0)
    return p


def produce(p: Partition, batch: bytes):
    header = BatchHeader(batch)
    env = envelope_if_delayed(batch, header, DelaySettings(), now_ms=T0)
    if env is not None:
        batch, header = env, BatchHeader(env)
    return p.append_as_leader(batch, header, now_ms=T0)


def visible(p: Partition) -> list[bytes]:
    data = p.log.read(0, 1 << 20).region.read()
    return [r.value for r in iter_records(data)]


def test_an_envelope_takes_the_offsets_and_sequences_its_records_would_have(tmp_path):
    p = leader(tmp_path)
    assert produce(p, produced([b"a", b"b"], seq=0)).first_offset == 0
    info = produce(p, produced([b"x", b"y", b"z"], delay=b"5000", seq=2))
    assert (info.first_offset, info.last_offset) == (2, 4)
    assert produce(p, produced([b"c"], seq=5)).first_offset == 5  # the next sequence follows the envelope's
    with pytest.raises(OutOfOrderSequenceNumberError):
        produce(p, produced([b"d"], seq=9))
    # a retry of the delayed batch is a duplicate, answered with its offsets, not stored twice
    again = produce(p, produced([b"x", b"y", b"z"], delay=b"5000", seq=2))
    assert (again.first_offset, p.log.next_offset) == (2, 6)
    assert visible(p) == [b"a", b"b", b"c"]
    idx = p.delays.index
    assert idx.pending_records() == 3 and idx.first_pending_envelope_offset() == 2


def deliver_due(p: Partition, now: int) -> None:
    idx = p.delays.index
    idx.load(now + 120_000)
    for due in idx.due(now):
        data = p.log.read(due.envelope_offset, 1).region.read()
        env = read_envelope(data[:BatchHeader(data).size])
        group = next(g for g in env.groups() if due.envelope_offset + g.first_delta == due.original_offset)
        p.append_as_leader(delivery_batch(env, group), now_ms=now, origin="delayed")


def test_the_leader_delivers_and_its_index_sees_the_delivery(tmp_path):
    p = leader(tmp_path)
    produce(p, produced([b"x", b"y"], delay=b"5000"))
    deliver_due(p, T0 + 4999)
    assert visible(p) == []
    deliver_due(p, T0 + 5000)
    assert visible(p) == [b"x", b"y"]
    assert p.delays.index.pending_records() == 0
    deliver_due(p, T0 + 99_000)
    assert visible(p) == [b"x", b"y"], "delivered twice"


def test_a_follower_indexes_the_leaders_envelopes_and_deliveries(tmp_path):
    lead = leader(tmp_path, "lead")
    produce(lead, produced([b"x"], delay=b"1000"))
    produce(lead, produced([b"y"], delay=b"9000", seq=1))
    deliver_due(lead, T0 + 1000)
    follower_log = Log.open(tmp_path / "follow", LogConfig(), lambda: T0)
    f = Partition("t", 0, 2, follower_log)
    f.append_as_follower(lead.log.read(0, 1 << 20).region.read())
    assert f.delays is not None and f.delays.index.pending_records() == 1
    # becoming leader, it delivers what is left, once
    f.make_leader(LeaderState(2, 1, (2,), (1, 2), 1, 1), T0)
    deliver_due(f, T0 + 10_000)
    assert visible(f) == [b"x", b"y"]


def test_a_reopened_replica_rebuilds_its_index_from_the_log(tmp_path):
    p = leader(tmp_path)
    produce(p, produced([b"x"], delay=b"1000"))
    produce(p, produced([b"y"], delay=b"2000", seq=1))
    deliver_due(p, T0 + 1000)
    p.delays.index.close()
    p.log.close()
    # no checkpoint was written: the files may miss anything, the log is the truth
    for f in (tmp_path / "t-0" / "delayed").glob("*.delayed"):
        f.write_bytes(b"")
    again = leader(tmp_path)
    assert again.delays is not None and again.delays.index.pending_records() == 1
    deliver_due(again, T0 + 5000)
    assert visible(again) == [b"x", b"y"]


def test_truncation_brings_back_a_delivery_that_was_cut_off(tmp_path):
    p = leader(tmp_path)
    produce(p, produced([b"x"], delay=b"1000"))
    deliver_due(p, T0 + 1000)
    assert visible(p) == [b"x"] and p.delays.index.pending_records() == 0
    p.log.truncate_to(1)  # the delivery (offset 1) was never replicated
    p.truncated()
    assert p.delays.index.pending_records() == 1
    deliver_due(p, T0 + 2000)
    assert visible(p) == [b"x"]


def test_retention_stops_at_the_first_envelope_still_pending(tmp_path):
    from mafka.broker.delayed_delivery import retention_bound

    p = leader(tmp_path)
    produce(p, produced([b"a", b"b"]))
    produce(p, produced([b"x"], delay=b"1000", seq=2))
    produce(p, produced([b"c"], seq=3))
    p.high_watermark = 4
    assert retention_bound(p) == 2
    deliver_due(p, T0 + 1000)  # delivered at offset 4
    p.high_watermark = 5
    assert retention_bound(p) == 2  # until the bucket is released (its delivery below the HW)
    assert p.delays.index.release_delivered(p.high_watermark)
    assert retention_bound(p) == 5
