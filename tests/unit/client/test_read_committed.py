"""The consumer side of transactions: read_committed filtering (Kafka's Fetcher algorithm), control
batches never delivered, positions moved past markers and aborted data, and the end of a partition
at the last stable offset.

Record sets are built with mafka.wire and fed to a Fetcher without a loop, as fetch responses.
"""

from __future__ import annotations

from types import SimpleNamespace as NS
from typing import Any

import pytest

from mafka.client.config import parse_config
from mafka.client.fetcher import Fetcher
from mafka.client.kafka_error import KafkaError
from mafka.client.metadata import ClusterMetadata
from mafka.client.record_decoder import decode_records
from mafka.wire.compression import CompressionType
from mafka.wire.records import ControlRecordType, Record, build_batch, build_control_batch

TP = ("t", 0)
TS = 1_700_000_000_000
P1, P2, P3 = 101, 202, 303
COMMIT, ABORT = ControlRecordType.COMMIT, ControlRecordType.ABORT


def txn(pid: int, start: int, values: list[bytes], codec: int = 0) -> bytes:
    records = [Record(start + i, TS + start + i, None, v) for i, v in enumerate(values)]
    return build_batch(records, base_offset=start, producer_id=pid, producer_epoch=0, base_sequence=start,
                       is_transactional=True, compression=codec)


def plain(start: int, values: list[bytes]) -> bytes:
    return build_batch([Record(start + i, TS + start + i, None, v) for i, v in enumerate(values)],
                       base_offset=start)


def marker(kind: ControlRecordType, pid: int, offset: int) -> bytes:
    return build_control_batch(kind, producer_id=pid, producer_epoch=0, base_offset=offset, timestamp=TS)


def aborted(*pairs: tuple[int, int]) -> list[NS]:
    return [NS(producer_id=pid, first_offset=first) for pid, first in pairs]


def make(**conf: Any) -> Fetcher:
    config = parse_config("consumer", {"bootstrap.servers": "x:1", **conf})
    md = ClusterMetadata()
    md.update(NS(brokers=[NS(node_id=1, host="h", port=1)],
                 topics=[NS(error_code=0, name="t", partitions=[
                     NS(error_code=0, partition_index=0, leader_id=1, replica_nodes=[1], isr_nodes=[1])])]),
              now=0.0)
    return Fetcher(NS(config=config, metadata=md))


def deliver(f: Fetcher, records: bytes, hw: int, lso: int | None = None, txns: list[NS] | None = None) -> None:
    state = f.partitions[TP]
    sent = {TP: (state.epoch, state.fetch_offset)}
    part = NS(partition_index=0, error_code=0, high_watermark=hw, last_stable_offset=hw if lso is None else lso,
              log_start_offset=0, aborted_transactions=txns, preferred_read_replica=-1, records=records)
    f._on_response(1, NS(throttle_time_ms=0, error_code=0, session_id=0,
                         responses=[NS(topic="t", partitions=[part])]), sent)


def interleaved() -> tuple[bytes, list[NS]]:
    """Three producers' transactions interleaved on one partition, and their aborted list.

    P1's first transaction (0-1, 5) is aborted (marker at 7); P2's (2-3) committed (marker at 6);
    a plain record at 4; P1's second transaction (8) committed (marker at 10); P3's (9) aborted
    (marker at 11).
    """
    data = (
        txn(P1, 0, [b"p1-aborted-0", b"p1-aborted-1"])
        + txn(P2, 2, [b"p2-0", b"p2-1"])
        + plain(4, [b"plain"])
        + txn(P1, 5, [b"p1-aborted-2"])
        + marker(COMMIT, P2, 6)
        + marker(ABORT, P1, 7)
        + txn(P1, 8, [b"p1-committed"])
        + txn(P3, 9, [b"p3-aborted"])
        + marker(COMMIT, P1, 10)
        + marker(ABORT, P3, 11)
    )
    return data, aborted((P3, 9), (P1, 0))  # any order: a min-heap by first offset


def test_interleaved_producers_read_committed() -> None:
    data, txns = interleaved()
    result = decode_records("t", 0, data, 0, aborted=txns)
    assert [(m.offset(), m.value()) for m in result.messages] == [
        (2, b"p2-0"), (3, b"p2-1"), (4, b"plain"), (8, b"p1-committed")]
    assert result.next_offset == 12


def test_interleaved_producers_read_uncommitted_gets_all_data_but_no_markers() -> None:
    data, _ = interleaved()
    result = decode_records("t", 0, data, 0)
    assert [m.offset() for m in result.messages] == [0, 1, 2, 3, 4, 5, 8, 9]
    assert result.next_offset == 12


@pytest.mark.parametrize("isolation", ["read_committed", "read_uncommitted"])
def test_fetcher_delivers_no_markers_and_moves_past_them(isolation: str) -> None:
    data, txns = interleaved()
    f = make(**{"isolation.level": isolation})
    f.assign({TP: 0})
    deliver(f, data, hw=12, txns=txns)
    out = f.drain(100)
    expected = [2, 3, 4, 8] if isolation == "read_committed" else [0, 1, 2, 3, 4, 5, 8, 9]
    assert [m.offset() for m in out] == expected
    assert all(m.error() is None for m in out)
    assert f.partitions[TP].position == 12  # past the trailing markers


def test_compressed_transactional_batches_are_filtered_whole() -> None:
    gz = int(CompressionType.GZIP)
    data = (txn(P1, 0, [b"a", b"b", b"c"], gz) + txn(P2, 3, [b"d", b"e"], gz)
            + marker(ABORT, P1, 5) + marker(COMMIT, P2, 6))
    result = decode_records("t", 0, data, 0, aborted=aborted((P1, 0)))
    assert [m.value() for m in result.messages] == [b"d", b"e"]


def test_an_aborted_transaction_spanning_two_fetches() -> None:
    f = make()
    f.assign({TP: 0})
    # the first response (cut short by the byte limits) ends before P1's ABORT marker
    deliver(f, txn(P1, 0, [b"x0", b"x1"]) + txn(P2, 2, [b"y0"]) + marker(COMMIT, P2, 3),
            hw=8, txns=aborted((P1, 0)))
    assert [m.value() for m in f.drain(100)] == [b"y0"]
    assert f.partitions[TP].position == 4
    # the second response lists the same aborted transaction: it overlaps the fetched range
    deliver(f, txn(P1, 4, [b"x2"]) + marker(ABORT, P1, 5) + txn(P1, 6, [b"z0"]) + marker(COMMIT, P1, 7),
            hw=8, txns=aborted((P1, 0)))
    assert [m.value() for m in f.drain(100)] == [b"z0"]
    assert f.partitions[TP].position == 8


def test_a_marker_before_the_position_still_ends_the_abort() -> None:
    """A batch below min_offset is not returned, but its ABORT marker still counts: the
    producer's next transaction after it is committed data."""
    data = txn(P1, 0, [b"old"]) + marker(ABORT, P1, 1) + txn(P1, 2, [b"new"]) + marker(COMMIT, P1, 3)
    result = decode_records("t", 0, data, 2, aborted=aborted((P1, 0)))
    assert [(m.offset(), m.value()) for m in result.messages] == [(2, b"new")]
    assert result.next_offset == 4


def test_an_abort_marker_of_a_producer_not_aborting_changes_nothing() -> None:
    data = (txn(P1, 0, [b"a"]) + marker(ABORT, P2, 1) + txn(P2, 2, [b"b"]) + marker(ABORT, P2, 3)
            + marker(COMMIT, P1, 4))
    # only P2's second transaction (from 2) was aborted; its earlier marker must not end anything
    result = decode_records("t", 0, data, 0, aborted=aborted((P2, 2)))
    assert [m.value() for m in result.messages] == [b"a"]


def test_position_moves_past_an_aborted_tail_returned_one_by_one() -> None:
    f = make()
    f.assign({TP: 0})
    deliver(f, plain(0, [b"a", b"b"]) + txn(P1, 2, [b"c"]) + marker(ABORT, P1, 3), hw=4,
            txns=aborted((P1, 2)))
    assert [m.value() for m in f.drain(1)] == [b"a"]
    assert f.partitions[TP].position == 1
    assert [m.value() for m in f.drain(1)] == [b"b"]
    assert f.partitions[TP].position == 4
    assert f.drain(1) == []


def test_partition_eof_at_the_last_stable_offset_under_read_committed() -> None:
    f = make(**{"enable.partition.eof": True})
    f.assign({TP: 0})
    # offsets 0-1 committed; 2-3 in a transaction still open: LSO 2, HWM 4
    deliver(f, plain(0, [b"a", b"b"]), hw=4, lso=2)
    out = f.drain(10)
    assert [(m.offset(), m.error()) for m in out] == [(0, None), (1, None), (2, KafkaError._PARTITION_EOF)]


def test_partition_eof_at_the_high_watermark_under_read_uncommitted() -> None:
    f = make(**{"enable.partition.eof": True, "isolation.level": "read_uncommitted"})
    f.assign({TP: 0})
    deliver(f, plain(0, [b"a", b"b"]), hw=4, lso=2)
    assert [m.offset() for m in f.drain(10)] == [0, 1]  # no EOF: two more records exist
    deliver(f, txn(P1, 2, [b"c", b"d"]), hw=4, lso=2)
    out = f.drain(10)
    assert [(m.offset(), m.error()) for m in out] == [(2, None), (3, None), (4, KafkaError._PARTITION_EOF)]


def test_list_offsets_uses_the_isolation_level() -> None:
    sent: list[dict[str, Any]] = []

    class Kernel:
        def __init__(self, config: Any, md: ClusterMetadata) -> None:
            self.config = config
            self.metadata = md

        async def refresh_metadata(self) -> None:
            pass

        async def send(self, node: int, api_key: int, body: dict[str, Any], **kw: Any) -> NS:
            sent.append(body)
            return NS(topics=[NS(name="t", partitions=[NS(partition_index=0, error_code=0, offset=7)])])

    import asyncio

    for isolation, level in (("read_committed", 1), ("read_uncommitted", 0)):
        f = make(**{"isolation.level": isolation})
        f.kernel = Kernel(f.kernel.config, f.kernel.metadata)
        assert asyncio.run(f.list_offsets({TP: -1})) == {TP: 7}
        assert sent[-1]["isolation_level"] == level
    # read_committed is the default, as in librdkafka
    assert make().read_committed
