"""The transaction coordinator's ``__transaction_state`` I/O on a broker.

* :func:`read_state_records` over a real :class:`~mafka.log.log.Log` (the
  same mixed log the group service's reader is tested on: plain, compressed,
  tombstone, keyless, transactional and control batches);
* :class:`TransactionStateLog` against a fake replica manager: one
  uncompressed batch, acks=all, ``request.timeout.ms``, errors mapped.
"""

from __future__ import annotations

import pytest

from mafka.broker.replica_manager import ProduceResult
from mafka.broker.transaction_service import TransactionStateLog, read_state_records
from mafka.errors import ErrorCode as E
from mafka.log.validation import validate_produce_batch
from mafka.wire.compression import CompressionType
from mafka.wire.records import decode_batch

from .test_group_service import append_broker, filled_log

TOPIC = "__transaction_state"


def _pairs(expected) -> list[tuple[bytes, bytes | None]]:
    """What the transaction reader keeps of the group reader's expectation: keyed data records."""
    return [(r.key, r.value) for r in expected if hasattr(r, "key")]


@pytest.mark.parametrize("buffer_bytes", [1, 100, 1 << 20])
def test_read_state_records_returns_every_keyed_record_in_order_and_skips_markers(tmp_path, buffer_bytes):
    log, expected = filled_log(tmp_path)
    assert read_state_records(log, buffer_bytes) == _pairs(expected)


def test_read_state_records_across_segments_and_from_inside_a_batch(tmp_path):
    log, expected = filled_log(tmp_path, segment_bytes=150)
    assert len(log.segments) > 2
    assert read_state_records(log, 1) == _pairs(expected)
    assert log.increment_log_start_offset(104)  # inside the compressed batch
    assert read_state_records(log, 1 << 20) == _pairs(expected[4:])


def test_transaction_state_log_appends_one_uncompressed_batch_with_acks_all():
    broker = append_broker(request_timeout_ms=4321)
    done = []
    records = [(b"txn-1", b"state-1"), (b"txn-2", None)]
    TransactionStateLog(broker).append(12, records, done.append)
    (call,) = broker.replica_manager.calls
    assert (call["acks"], call["timeout_ms"], call["extra"]) == (-1, 4321, {})
    ((topic, partition, batch),) = call["entries"]
    assert (topic, partition) == (TOPIC, 12)
    decoded = decode_batch(batch)
    assert decoded.header.compression == CompressionType.NONE
    assert [(r.key, r.value) for r in decoded.records] == records
    validate_produce_batch(batch, produce_version=call["produce_version"], max_message_bytes=1_000_012)
    assert done == []
    broker.replica_manager.deferreds[0].callback({(TOPIC, 12): ProduceResult(E.NONE, 77)})
    assert done == [E.NONE]


def test_transaction_state_log_maps_errors_and_failures():
    broker = append_broker()
    done = []
    state_log = TransactionStateLog(broker)
    for _ in range(2):
        state_log.append(3, [(b"k", b"v")], done.append)
    first, second = broker.replica_manager.deferreds
    first.callback({(TOPIC, 3): ProduceResult(E.NOT_ENOUGH_REPLICAS_AFTER_APPEND)})
    second.errback(RuntimeError("replica manager broke"))
    broker.replica_manager.raise_error = RuntimeError("no partition")
    state_log.append(3, [(b"k", b"v")], done.append)
    assert done == [E.NOT_ENOUGH_REPLICAS_AFTER_APPEND, E.UNKNOWN_SERVER_ERROR, E.UNKNOWN_SERVER_ERROR]
