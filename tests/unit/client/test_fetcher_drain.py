"""Fetcher without a loop: buffering fetch responses, draining them into Messages, seeks and resets."""

from __future__ import annotations

from types import SimpleNamespace as NS
from typing import Any
from unittest import mock

import pytest

from mafka.client import record_decoder
from mafka.client.config import parse_config
from mafka.client.fetcher import EARLIEST, LATEST, Fetcher
from mafka.client.kafka_error import KafkaError
from mafka.client.metadata import ClusterMetadata
from mafka.errors import ErrorCode
from mafka.wire.compression import CompressionType
from mafka.wire.records import ControlRecordType, Record, build_batch, build_control_batch

TP = ("t", 0)
TP1 = ("t", 1)
TS = 1_700_000_000_000


def make(**conf: Any) -> Fetcher:
    config = parse_config("consumer", {"bootstrap.servers": "x:1", **conf})
    md = ClusterMetadata()
    md.update(NS(brokers=[NS(node_id=1, host="h", port=1), NS(node_id=2, host="h", port=2)],
                 topics=[NS(error_code=0, name="t", partitions=[
                     NS(error_code=0, partition_index=0, leader_id=1, replica_nodes=[1], isr_nodes=[1]),
                     NS(error_code=0, partition_index=1, leader_id=1, replica_nodes=[1], isr_nodes=[1]),
                     NS(error_code=0, partition_index=2, leader_id=2, replica_nodes=[2], isr_nodes=[2]),
                 ])]), now=0.0)
    return Fetcher(NS(config=config, metadata=md))


def batch(start: int, n: int, codec: int = 0, **kw: Any) -> bytes:
    return build_batch([Record(start + i, TS + i, None, b"v%d" % (start + i)) for i in range(n)],
                       base_offset=start, compression=codec, **kw)


def partition_data(index: int, records: bytes | None, hw: int, error: int = 0,
                   aborted: list[NS] | None = None) -> NS:
    return NS(partition_index=index, error_code=error, high_watermark=hw, last_stable_offset=hw,
              log_start_offset=0, aborted_transactions=aborted, preferred_read_replica=-1,
              records=records)


def fetch_response(*partitions: NS, topic: str = "t") -> NS:
    """A decoded Fetch v11 response body."""
    return NS(throttle_time_ms=0, error_code=0, session_id=0,
              responses=[NS(topic=topic, partitions=list(partitions))])


def sent_for(f: Fetcher, *tps: tuple[str, int]) -> dict[tuple[str, int], tuple[int, int]]:
    """What _fetch_loop records as sent: tp -> (epoch, fetch offset) at send time."""
    return {tp: (f.partitions[tp].epoch, f.partitions[tp].fetch_offset) for tp in tps}


def deliver(f: Fetcher, records: bytes | None, hw: int, tp: tuple[str, int] = TP, error: int = 0,
            aborted: list[NS] | None = None) -> bool:
    sent = sent_for(f, tp)
    return f._on_response(1, fetch_response(partition_data(tp[1], records, hw, error, aborted),
                                            topic=tp[0]), sent)


def offsets(messages: list) -> list[int]:
    return [m.offset() for m in messages]


# -- draining -------------------------------------------------------------------------------------


def test_assign_sets_position_and_wants_topic() -> None:
    f = make()
    f.kernel.metadata.need_update = False
    f.assign({TP: 5, TP1: None})
    assert f.partitions[TP].position == 5 and f.partitions[TP].fetch_offset == 5
    assert f.partitions[TP1].position is None
    assert "t" in f.kernel.metadata.wanted


def test_drain_from_position_in_order() -> None:
    f = make()
    f.assign({TP: 5})
    # the response starts with the (compressed) batch holding offset 5
    data = batch(0, 8, int(CompressionType.GZIP)) + batch(8, 4)
    assert deliver(f, data, hw=12) is False
    state = f.partitions[TP]
    assert state.fetch_offset == 12
    assert state.buffered == len(data)
    out = f.drain(100)
    assert offsets(out) == list(range(5, 12))
    assert [m.value() for m in out] == [b"v%d" % i for i in range(5, 12)]
    assert all(m.error() is None and (m.topic(), m.partition()) == TP for m in out)
    assert state.position == 12
    assert state.buffered == 0
    assert f.drain(100) == []


def test_drain_one_at_a_time_decodes_each_chunk_once() -> None:
    f = make()
    f.assign({TP: 0})
    deliver(f, batch(0, 4) + batch(4, 3, int(CompressionType.LZ4)), hw=7)
    deliver(f, batch(7, 5), hw=12)
    assert len(f.partitions[TP].chunks) == 2
    with mock.patch("mafka.client.fetcher.decode_records", wraps=record_decoder.decode_records) as spy:
        seen = []
        for _ in range(20):
            out = f.drain(1)
            assert len(out) <= 1
            seen += offsets(out)
            if out:
                assert f.partitions[TP].position == out[0].offset() + 1
    assert seen == list(range(12))
    assert spy.call_count == 2
    assert [c.args[3] for c in spy.call_args_list] == [0, 7]  # min_offset = position
    assert f.partitions[TP].buffered == 0


def test_drain_max_records_across_partitions() -> None:
    f = make()
    f.assign({TP: 0, TP1: 0})
    deliver(f, batch(0, 3), hw=3, tp=TP)
    deliver(f, batch(0, 3), hw=3, tp=TP1)
    first = f.drain(4)
    assert [(m.partition(), m.offset()) for m in first] == [(0, 0), (0, 1), (0, 2), (1, 0)]
    second = f.drain(4)
    assert [(m.partition(), m.offset()) for m in second] == [(1, 1), (1, 2)]
    assert f.partitions[TP].position == 3 and f.partitions[TP1].position == 3


def test_position_advances_past_chunk_of_only_control_records() -> None:
    f = make(**{"enable.partition.eof": True})
    f.assign({TP: 0})
    deliver(f, build_control_batch(ControlRecordType.COMMIT, producer_id=1, producer_epoch=0,
                                   base_offset=0, timestamp=TS), hw=1)
    out = f.drain(10)
    assert f.partitions[TP].position == 1
    assert [(m.offset(), m.error()) for m in out] == [(1, KafkaError._PARTITION_EOF)]


def test_position_advances_past_trailing_commit_marker() -> None:
    """Kafka's consumer ends up past a transaction's marker once it has returned the records."""
    f = make(**{"enable.partition.eof": True})
    f.assign({TP: 5})
    data = (
        batch(5, 3, producer_id=1, producer_epoch=0, base_sequence=0, is_transactional=True)
        + build_control_batch(ControlRecordType.COMMIT, producer_id=1, producer_epoch=0,
                              base_offset=8, timestamp=TS)
    )
    deliver(f, data, hw=9)
    out = f.drain(10)
    assert offsets(out) == [5, 6, 7, 9]
    assert out[-1].error() == KafkaError._PARTITION_EOF
    assert f.partitions[TP].position == 9


def test_position_advances_past_trailing_aborted_data_one_by_one() -> None:
    f = make()
    f.assign({TP: 0})
    data = (
        batch(0, 2)
        + batch(2, 2, producer_id=7, producer_epoch=0, base_sequence=0, is_transactional=True)
        + build_control_batch(ControlRecordType.ABORT, producer_id=7, producer_epoch=0,
                              base_offset=4, timestamp=TS)
    )
    deliver(f, data, hw=5, aborted=[NS(producer_id=7, first_offset=2)])
    assert offsets(f.drain(1)) == [0]
    assert f.partitions[TP].position == 1
    assert offsets(f.drain(1)) == [1]
    assert f.partitions[TP].position == 5  # past the aborted batch and its marker
    assert f.drain(1) == []


def test_read_committed_skips_aborted_data() -> None:
    f = make()  # isolation.level defaults to read_committed
    f.assign({TP: 0})
    data = (
        batch(0, 2, producer_id=7, producer_epoch=0, base_sequence=0, is_transactional=True)
        + batch(2, 2)
        + build_control_batch(ControlRecordType.ABORT, producer_id=7, producer_epoch=0,
                              base_offset=4, timestamp=TS)
        + batch(5, 1)
    )
    deliver(f, data, hw=6, aborted=[NS(producer_id=7, first_offset=0)])
    assert offsets(f.drain(10)) == [2, 3, 5]


def test_read_uncommitted_returns_aborted_data() -> None:
    f = make(**{"isolation.level": "read_uncommitted"})
    f.assign({TP: 0})
    data = batch(0, 2, producer_id=7, producer_epoch=0, base_sequence=0, is_transactional=True)
    deliver(f, data, hw=2, aborted=[NS(producer_id=7, first_offset=0)])
    assert offsets(f.drain(10)) == [0, 1]


def test_corrupt_chunk_gives_bad_msg_error() -> None:
    f = make(**{"check.crcs": True})
    f.assign({TP: 0})
    data = bytearray(batch(0, 2))
    data[-1] ^= 0xFF
    deliver(f, bytes(data), hw=2)
    (msg,) = f.drain(10)
    assert msg.error() == KafkaError._BAD_MSG
    assert (msg.topic(), msg.partition(), msg.offset()) == ("t", 0, 0)
    assert f.partitions[TP].buffered == 0


# -- seeks, stale responses, resets ------------------------------------------------------------------


def test_seek_discards_buffered_chunks() -> None:
    f = make()
    f.assign({TP: 0})
    deliver(f, batch(0, 5), hw=5)
    f.drain(2)
    assert f.partitions[TP].decoded  # three decoded, not yet returned
    epoch = f.partitions[TP].epoch
    f.seek(TP, 3)
    state = f.partitions[TP]
    assert state.epoch != epoch
    assert not state.chunks and not state.decoded and state.buffered == 0
    assert (state.position, state.fetch_offset) == (3, 3)
    assert f.drain(10) == []
    deliver(f, batch(3, 2), hw=5)
    assert offsets(f.drain(10)) == [3, 4]


def test_stale_chunk_of_old_epoch_is_not_decoded() -> None:
    f = make()
    f.assign({TP: 0})
    data = batch(0, 3)
    state = f.partitions[TP]
    state.chunks.append((state.epoch - 1, data, None, 3, -1))
    state.buffered += len(data)
    with mock.patch("mafka.client.fetcher.decode_records") as spy:
        assert f.drain(10) == []
    spy.assert_not_called()
    assert state.buffered == 0


def test_seek_to_beginning_or_end_clears_position() -> None:
    f = make()
    f.assign({TP: 4, TP1: 4})
    f.seek(TP, EARLIEST)
    f.seek(TP1, LATEST)
    assert (f.partitions[TP].position, f.partitions[TP].reset_to) == (None, EARLIEST)
    assert (f.partitions[TP1].fetch_offset, f.partitions[TP1].reset_to) == (None, LATEST)
    with pytest.raises(KeyError):
        f.seek(("other", 0), 1)


def test_response_for_partition_sought_meanwhile_is_dropped() -> None:
    f = make()
    f.assign({TP: 0})
    sent = sent_for(f, TP)  # request goes out at epoch e, offset 0
    f.seek(TP, 100)
    f._on_response(1, fetch_response(partition_data(0, batch(0, 5), hw=5)), sent)
    state = f.partitions[TP]
    assert not state.chunks and state.buffered == 0
    assert state.fetch_offset == 100 and state.high_watermark == -1
    assert f.drain(10) == []


def test_response_begun_before_a_revoke_and_reassign_is_dropped() -> None:
    """An eager rebalance revokes every partition and assigns some of them again: each gets a new
    state, positioned at the committed offset. A fetch sent for the old state and answered after
    that must not be buffered into the new one: it starts past the committed offset when the old
    state had fetched records the application never got, and those would be skipped."""
    f = make()
    f.assign({TP: None})
    f.partitions[TP].position = f.partitions[TP].fetch_offset = 0  # the old generation's reset
    deliver(f, batch(0, 5), hw=5)
    assert offsets(f.drain(3)) == [0, 1, 2]  # 3 and 4 are decoded, not yet returned
    sent = sent_for(f, TP)  # the next fetch goes out at offset 5
    f.assign({})  # revoked
    f.assign({TP: None})  # assigned again: a new state, reset to the committed offset 3
    state = f.partitions[TP]
    state.position = state.fetch_offset = 3
    f._on_response(1, fetch_response(partition_data(0, batch(5, 3), hw=8)), sent)
    assert not state.chunks and state.fetch_offset == 3
    deliver(f, batch(3, 5), hw=8)
    assert offsets(f.drain(10)) == [3, 4, 5, 6, 7]


def test_response_for_unassigned_or_unrequested_partition_ignored() -> None:
    f = make()
    f.assign({TP: 0, TP1: 0})
    sent = sent_for(f, TP)  # TP1 was not in this request
    resp = fetch_response(partition_data(0, batch(0, 1), hw=1), partition_data(1, batch(0, 1), hw=1),
                          partition_data(9, batch(0, 1), hw=1))
    f._on_response(1, resp, sent)
    assert len(f.partitions[TP].chunks) == 1
    assert not f.partitions[TP1].chunks
    f.remove([TP])
    f._on_response(1, fetch_response(partition_data(0, batch(1, 1), hw=2)), sent)
    assert TP not in f.partitions


def test_offset_out_of_range_resets_to_earliest() -> None:
    f = make(**{"auto.offset.reset": "earliest"})
    f.assign({TP: 50})
    deliver(f, batch(50, 2), hw=52)
    state = f.partitions[TP]
    epoch = state.epoch
    deliver(f, None, hw=-1, error=ErrorCode.OFFSET_OUT_OF_RANGE)
    assert state.position is None and state.fetch_offset is None
    assert state.reset_to == EARLIEST
    assert state.epoch == epoch + 1
    assert not state.chunks and state.buffered == 0
    assert state.error is None
    assert f.drain(10) == []
    assert f._fetchable(1) == []  # nothing to fetch until the reset gives a position


def test_offset_out_of_range_with_reset_error_reports() -> None:
    f = make(**{"auto.offset.reset": "error"})
    f.assign({TP: 50})
    deliver(f, None, hw=-1, error=ErrorCode.OFFSET_OUT_OF_RANGE)
    (msg,) = f.drain(10)
    assert msg.error() == KafkaError.OFFSET_OUT_OF_RANGE
    assert msg.offset() == 50
    assert f.partitions[TP].error is not None
    assert f._fetchable(1) == []


def test_retriable_error_requests_metadata_refresh() -> None:
    f = make()
    f.assign({TP: 0})
    assert deliver(f, None, hw=-1, error=ErrorCode.NOT_LEADER_OR_FOLLOWER) is True
    assert f.partitions[TP].error is None
    assert f.drain(10) == []


def test_fatal_error_is_reported_once_in_drain() -> None:
    f = make()
    f.assign({TP: 3})
    assert deliver(f, None, hw=-1, error=ErrorCode.TOPIC_AUTHORIZATION_FAILED) is False
    (msg,) = f.drain(10)
    assert msg.error() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert (msg.topic(), msg.partition(), msg.offset()) == ("t", 0, 3)
    assert f.drain(10) == []


def test_batch_larger_than_partition_max_bytes_is_an_error() -> None:
    f = make(**{"max.partition.fetch.bytes": 1000})
    f.assign({TP: 0})
    whole = build_batch([Record(0, TS, None, b"x" * 3000)])
    deliver(f, whole[:1000], hw=1)  # the broker sends the first max.partition.fetch.bytes
    state = f.partitions[TP]
    assert state.error == KafkaError.MESSAGE_TOO_LARGE
    assert state.fetch_offset == 0 and not state.chunks


def test_partial_batch_only_is_not_buffered() -> None:
    f = make()
    f.assign({TP: 0})
    data = batch(0, 3)
    deliver(f, data[:-5], hw=3)
    state = f.partitions[TP]
    assert not state.chunks and state.buffered == 0 and state.fetch_offset == 0
    assert state.error is None


# -- partition EOF, pause, accounting -------------------------------------------------------------------


def test_partition_eof_once_at_high_watermark() -> None:
    f = make(**{"enable.partition.eof": True})
    f.assign({TP: 0})
    deliver(f, batch(0, 3), hw=3)
    out = f.drain(10)
    assert offsets(out) == [0, 1, 2, 3]
    assert [m.error() for m in out[:3]] == [None] * 3
    eof = out[3]
    assert eof.error() == KafkaError._PARTITION_EOF and eof.error().code() == -191
    assert (eof.topic(), eof.partition()) == TP
    assert f.drain(10) == []  # only once
    deliver(f, None, hw=3)  # an empty fetch at the end: no second EOF
    assert f.drain(10) == []
    deliver(f, batch(3, 2), hw=5)
    out = f.drain(10)
    assert offsets(out) == [3, 4, 5] and out[-1].error() == KafkaError._PARTITION_EOF


def test_partition_eof_not_before_high_watermark_and_respects_max_records() -> None:
    f = make(**{"enable.partition.eof": True})
    f.assign({TP: 0})
    deliver(f, batch(0, 3), hw=10)
    assert offsets(f.drain(10)) == [0, 1, 2]  # not at the high watermark yet
    f2 = make(**{"enable.partition.eof": True})
    f2.assign({TP: 0})
    deliver(f2, batch(0, 2), hw=2)
    assert [m.error() for m in f2.drain(2)] == [None, None]
    (eof,) = f2.drain(2)
    assert eof.error() == KafkaError._PARTITION_EOF and eof.offset() == 2


def test_no_eof_without_the_setting() -> None:
    f = make()
    f.assign({TP: 0})
    deliver(f, batch(0, 2), hw=2)
    assert all(m.error() is None for m in f.drain(10))
    assert f.drain(10) == []


def test_paused_partition_returns_nothing() -> None:
    f = make()
    f.assign({TP: 0, TP1: 0})
    deliver(f, batch(0, 2), hw=2, tp=TP)
    deliver(f, batch(0, 2), hw=2, tp=TP1)
    f.pause([TP], True)
    out = f.drain(10)
    assert [(m.partition(), m.offset()) for m in out] == [(1, 0), (1, 1)]
    assert f.drain(10) == []
    assert f.partitions[TP].position == 0
    assert all(tp != TP for tp, _ in f._fetchable(1))
    f.pause([TP], False)
    assert offsets(f.drain(10)) == [0, 1]


def test_buffered_accounting_returns_to_zero() -> None:
    f = make()
    f.assign({TP: 0, TP1: 0})
    total = 0
    for i in range(4):
        data = batch(i * 3, 3, int(CompressionType.ZSTD) if i % 2 else 0)
        deliver(f, data, hw=(i + 1) * 3, tp=TP)
        deliver(f, data, hw=(i + 1) * 3, tp=TP1)
        total += len(data)
    assert f.partitions[TP].buffered == f.partitions[TP1].buffered == total
    got = 0
    while True:
        out = f.drain(5)
        if not out:
            break
        got += len(out)
    assert got == 24
    assert f.partitions[TP].buffered == f.partitions[TP1].buffered == 0


def test_fetchable_respects_leader_and_buffer_limit() -> None:
    f = make(**{"queued.max.messages.kbytes": 1, "max.partition.fetch.bytes": 1000})
    f.assign({TP: 0, TP1: 0, ("t", 2): 0})
    assert sorted(tp for tp, _ in f._fetchable(1)) == [TP, TP1]
    assert [tp for tp, _ in f._fetchable(2)] == [("t", 2)]
    f.partitions[TP].buffered = 1000  # at the per-partition limit
    assert [tp for tp, _ in f._fetchable(1)] == [TP1]


def test_on_data_called_when_data_arrives() -> None:
    f = make()
    calls = []
    f.on_data = lambda: calls.append(1)
    f.assign({TP: 0})
    deliver(f, None, hw=0)
    assert calls == []
    deliver(f, batch(0, 1), hw=1)
    assert calls == [1]


def test_corrupt_framing_stops_the_partition_and_tells_the_application() -> None:
    f = make()
    f.assign({TP: 0, TP1: 0})
    good = batch(0, 3)
    bad = bytearray(batch(0, 2))
    bad[16] = 7  # magic 7: the batch walk cannot go on
    deliver(f, bytes(bad), hw=2, tp=TP)
    deliver(f, good, hw=3, tp=TP1)
    first = f.drain(10)
    assert len(first) == 1 and first[0].error().code() == KafkaError._BAD_MSG
    assert first[0].partition() == 0
    rest = f.drain(10)
    assert [(m.partition(), m.offset()) for m in rest] == [(1, 0), (1, 1), (1, 2)]
    # The broken partition is no longer fetched (no busy refetch of the same bytes).
    assert TP not in [tp for tp, _ in f._fetchable(1)]
    assert TP1 in [tp for tp, _ in f._fetchable(1)]


# -- leader changes: KIP-320 offset validation ------------------------------------------------------


def epochs(f: Fetcher, epoch: int) -> None:
    """Metadata now says partition 0 of "t" is led by broker 1 in leader epoch ``epoch``."""
    f.kernel.metadata.update(NS(brokers=[NS(node_id=1, host="h", port=1)], topics=[NS(
        error_code=0, name="t", partitions=[
            NS(error_code=0, partition_index=0, leader_id=1, replica_nodes=[1], isr_nodes=[1], leader_epoch=epoch)])]),
        now=1.0)


def answering(f: Fetcher, *, end_offset: int = -1, leader_epoch: int = -1, error: int = 0,
              raises: BaseException | None = None, during: Any = None) -> list[Any]:
    """Makes the kernel answer OffsetForLeaderEpoch so; returns the list of request bodies sent."""
    sent: list[Any] = []

    async def send(node: int, api_key: int, body: Any, **kw: Any) -> Any:
        sent.append((node, api_key, body))
        if during is not None:
            during()
        if raises is not None:
            raise raises
        return NS(topics=[NS(topic="t", partitions=[
            NS(error_code=error, partition=0, leader_epoch=leader_epoch, end_offset=end_offset)])])

    f.kernel.send = send
    return sent


def fetched_in_epoch_3() -> Fetcher:
    """Position 0 drained to 2, fetched up to 6, all in leader epoch 3, confirmed under epoch 3."""
    f = make(**{"auto.offset.reset": "earliest"})
    epochs(f, 3)
    f.assign({TP: 0})
    assert f._unconfirmed([(TP, f.partitions[TP])]) == []  # the first fetch has nothing to check
    deliver(f, batch(0, 6, partition_leader_epoch=3), hw=6)
    assert offsets(f.drain(2)) == [0, 1]
    state = f.partitions[TP]
    assert (state.position, state.position_epoch, state.fetch_offset, state.fetch_epoch) == (2, 3, 6, 3)
    return f


def test_a_new_leader_epoch_holds_fetching_until_the_position_is_confirmed() -> None:
    import asyncio

    f = fetched_in_epoch_3()
    state = f.partitions[TP]
    epochs(f, 4)
    todo = f._unconfirmed([(TP, state)])
    assert todo == [(TP, state, 4)]
    sent = answering(f, end_offset=6, leader_epoch=3)
    asyncio.run(f._validate(1, todo))
    assert sent[0][1] == 23
    assert sent[0][2]["topics"] == [{"topic": "t", "partitions": [
        {"partition": 0, "current_leader_epoch": 4, "leader_epoch": 3}]}]
    assert state.validated_epoch == 4 and state.fetch_offset == 6
    assert offsets(f.drain(10)) == [2, 3, 4, 5]  # nothing was dropped


def test_truncation_past_the_position_drops_the_buffer_and_refetches_from_the_position() -> None:
    import asyncio

    f = fetched_in_epoch_3()
    state = f.partitions[TP]
    epochs(f, 4)
    answering(f, end_offset=4, leader_epoch=3)
    asyncio.run(f._validate(1, f._unconfirmed([(TP, state)])))
    assert (state.position, state.fetch_offset, state.fetch_epoch) == (2, 2, 3)
    assert state.buffered == 0 and f.drain(10) == []
    assert f._unconfirmed([(TP, state)]) == [(TP, state, 4)]  # checked again from the position


def test_truncation_under_the_position_moves_it_back_to_the_divergence_point() -> None:
    import asyncio

    f = fetched_in_epoch_3()
    f.drain(10)  # the application has read up to 6
    state = f.partitions[TP]
    epochs(f, 4)
    answering(f, end_offset=1, leader_epoch=2)
    asyncio.run(f._validate(1, f._unconfirmed([(TP, state)])))
    assert (state.position, state.fetch_offset, state.position_epoch) == (1, 1, 2)
    assert state.error is None


def test_truncation_with_auto_offset_reset_error_stops_the_partition_with_log_truncation() -> None:
    import asyncio

    f = fetched_in_epoch_3()
    f.reset_to = None  # auto.offset.reset=error
    f.drain(10)
    state = f.partitions[TP]
    epochs(f, 4)
    answering(f, end_offset=1, leader_epoch=2)
    asyncio.run(f._validate(1, f._unconfirmed([(TP, state)])))
    [event] = f.drain(10)
    assert event.error().code() == KafkaError._LOG_TRUNCATION
    assert state.error is not None and f._fetchable(1) == []


def test_an_unknown_epoch_on_the_new_leader_resets_by_auto_offset_reset() -> None:
    import asyncio

    f = fetched_in_epoch_3()
    f.drain(10)
    state = f.partitions[TP]
    epochs(f, 4)
    answering(f, end_offset=-1, leader_epoch=-1)
    asyncio.run(f._validate(1, f._unconfirmed([(TP, state)])))
    assert state.position is None and state.reset_to == EARLIEST


@pytest.mark.parametrize("error", [ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_LEADER_EPOCH,
                                   ErrorCode.NOT_LEADER_OR_FOLLOWER])
def test_a_refused_validation_is_asked_again_after_a_metadata_refresh(error: ErrorCode) -> None:
    import asyncio

    f = fetched_in_epoch_3()
    f.backoff = 0
    state = f.partitions[TP]
    epochs(f, 4)
    answering(f, error=error)
    asyncio.run(f._validate(1, f._unconfirmed([(TP, state)])))
    assert state.validated_epoch == 3 and f.kernel.metadata.need_update
    assert f._unconfirmed([(TP, state)]) == [(TP, state, 4)]


def test_a_broker_without_offset_for_leader_epoch_is_fetched_from_unchecked() -> None:
    import asyncio

    from mafka.client.transport import UnsupportedByBroker

    f = fetched_in_epoch_3()
    state = f.partitions[TP]
    epochs(f, 4)
    answering(f, raises=UnsupportedByBroker("no"))
    asyncio.run(f._validate(1, f._unconfirmed([(TP, state)])))
    assert state.validated_epoch == 4 and state.fetch_offset == 6


def test_a_validation_answer_for_a_position_sought_meanwhile_is_ignored() -> None:
    import asyncio

    f = fetched_in_epoch_3()
    state = f.partitions[TP]
    epochs(f, 4)
    todo = f._unconfirmed([(TP, state)])
    answering(f, end_offset=0, leader_epoch=3, during=lambda: f.seek(TP, 5))
    asyncio.run(f._validate(1, todo))
    assert (state.position, state.fetch_offset) == (5, 5) and state.error is None


# -- the supervisor ---------------------------------------------------------------------------------

def test_partitions_assigned_after_start_are_fetched_without_waiting_out_the_backoff() -> None:
    """The supervisor is woken by assign: a new consumer's first fetch does not wait
    ``retry.backoff.ms`` (it waited 100 ms, the default, before every Spark read task's first fetch)."""
    import asyncio
    import time

    async def scenario() -> float:
        f = make(**{"retry.backoff.ms": 2000})
        sent = asyncio.Event()

        async def send(*args: Any, **kwargs: Any) -> Any:
            sent.set()
            await asyncio.Event().wait()  # no answer: the test only looks at when it was sent

        tasks: list[asyncio.Task] = []
        f.kernel.spawn = lambda coro: tasks.append(asyncio.ensure_future(coro)) or tasks[-1]
        async def refresh_metadata() -> None:
            pass  # the test's metadata already names every leader

        f.kernel.send = send
        f.kernel.refresh_metadata = refresh_metadata
        f.start()
        await asyncio.sleep(0.05)  # the supervisor has looked once (nothing assigned) and sleeps
        began = time.monotonic()
        f.assign({TP: 5})
        await asyncio.wait_for(sent.wait(), 5)
        took = time.monotonic() - began
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return took

    assert asyncio.run(scenario()) < 0.5
