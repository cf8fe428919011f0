"""``__transaction_state`` keys and values against hand-built Kafka 2.8 bytes."""

from __future__ import annotations

import struct

import pytest

from mafka.errors import IllegalStateError
from mafka.transaction.log_records import (
    TransactionLogDecodeError,
    TransactionLogValue,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    metadata_from_value,
    value_from_transit,
)
from mafka.transaction.metadata import TransactionState, TxnTransitMetadata

S = TransactionState

# key: version 0, STRING "txn"
KEY = b"\x00\x00" + b"\x00\x03txn"

# value: version 0, producer_id 5, epoch 1, timeout 60000, status Ongoing(1),
# partitions [{"bar", [2]}, {"foo", [0, 3]}], last update 1000, start 900
VALUE = (
    b"\x00\x00"
    + b"\x00\x00\x00\x00\x00\x00\x00\x05"
    + b"\x00\x01"
    + b"\x00\x00\xea\x60"
    + b"\x01"
    + b"\x00\x00\x00\x02"
    + b"\x00\x03bar" + b"\x00\x00\x00\x01" + b"\x00\x00\x00\x02"
    + b"\x00\x03foo" + b"\x00\x00\x00\x02" + b"\x00\x00\x00\x00" + b"\x00\x00\x00\x03"
    + b"\x00\x00\x00\x00\x00\x00\x03\xe8"
    + b"\x00\x00\x00\x00\x00\x00\x03\x84"
)

# an Empty value: null partition array
EMPTY_VALUE = (
    b"\x00\x00" + struct.pack(">qhib", 7, 0, 1000, 0) + b"\xff\xff\xff\xff" + struct.pack(">qq", 42, -1)
)


def transit(state, partitions=(), pid=5, epoch=1, timeout=60000, start=900, last=1000):
    return TxnTransitMetadata(pid, pid, epoch, -1, timeout, state, frozenset(partitions), start, last)


def test_key_bytes():
    assert encode_key("txn") == KEY
    assert decode_key(KEY) == "txn"
    assert encode_key("") == b"\x00\x00\x00\x00"
    assert encode_key("é") == b"\x00\x00\x00\x02\xc3\xa9"


def test_value_bytes_round_trip():
    v = decode_value(VALUE)
    assert v == TransactionLogValue(5, 1, 60000, S.ONGOING, (("bar", (2,)), ("foo", (0, 3))), 1000, 900)
    assert v.topic_partitions() == {("bar", 2), ("foo", 0), ("foo", 3)}
    assert encode_value(v) == VALUE


def test_value_from_transit_is_byte_exact_and_sorted():
    t = transit(S.ONGOING, {("foo", 3), ("bar", 2), ("foo", 0)})
    assert encode_value(value_from_transit(t)) == VALUE


def test_empty_state_writes_null_partitions():
    t = transit(S.EMPTY, (), pid=7, epoch=0, timeout=1000, start=-1, last=42)
    assert encode_value(value_from_transit(t)) == EMPTY_VALUE
    v = decode_value(EMPTY_VALUE)
    assert v.partitions is None and v.transaction_status == S.EMPTY


def test_empty_state_with_partitions_is_refused():
    with pytest.raises(IllegalStateError):
        value_from_transit(transit(S.EMPTY, {("foo", 0)}))


def test_complete_state_writes_an_empty_array_not_null():
    data = encode_value(value_from_transit(transit(S.COMPLETE_COMMIT)))
    assert data[2 + 8 + 2 + 4 + 1 :][:4] == b"\x00\x00\x00\x00"


def test_tombstone():
    assert encode_value(None) is None
    assert decode_value(None) is None


def test_metadata_from_value():
    m = metadata_from_value("txn", decode_value(VALUE))
    assert (m.producer_id, m.producer_epoch, m.txn_timeout_ms, m.state) == (5, 1, 60000, S.ONGOING)
    assert m.topic_partitions == {("bar", 2), ("foo", 0), ("foo", 3)}
    assert (m.txn_start_timestamp, m.txn_last_update_timestamp) == (900, 1000)
    # The log keeps no last producer id / epoch (Kafka 2.8).
    assert (m.last_producer_id, m.last_producer_epoch) == (-1, -1)
    assert m.pending_state is None


def test_metadata_from_empty_value_ignores_partitions():
    v = TransactionLogValue(5, 1, 60000, S.EMPTY, (("foo", (1,)),), 1, -1)
    assert metadata_from_value("t", v).topic_partitions == set()


@pytest.mark.parametrize(
    "data, message",
    [
        (b"\x00\x01\x00\x03txn", "Unknown version 1"),
        (b"\x00", "truncated"),
        (b"\x00\x00\x00\x05tx", "truncated"),
        (b"\x00\x00\xff\xfftxn", "negative length"),
        (b"\x00\x00\x00\x01\xff", "UTF-8"),
        (KEY + b"\x00", "trailing"),
        (None, "should not be null"),
    ],
)
def test_bad_keys(data, message):
    with pytest.raises(TransactionLogDecodeError, match=message):
        decode_key(data)


@pytest.mark.parametrize(
    "data, message",
    [
        (b"\x00\x01" + VALUE[2:], "Unknown version 1"),
        (VALUE[:-1], "truncated"),
        (VALUE[:16] + b"\x09" + VALUE[17:], "Unknown transaction state byte 9"),
        (VALUE[:17] + b"\xff\xff\xff\xfe" + VALUE[21:], "negative count"),
        (VALUE[:17] + b"\x00\x10\x00\x00" + VALUE[21:], "exceeds the remaining bytes"),
        (VALUE + b"\x00", "trailing"),
        (b"", "truncated"),
        ("text", "expected bytes"),
    ],
)
def test_bad_values(data, message):
    with pytest.raises(TransactionLogDecodeError, match=message):
        decode_value(data)


def test_decode_error_is_a_value_error():
    assert issubclass(TransactionLogDecodeError, ValueError)


def test_out_of_range_fields_are_refused_on_encode():
    with pytest.raises(ValueError):
        encode_value(TransactionLogValue(5, 40000, 1, S.ONGOING, (), 1, 1))
