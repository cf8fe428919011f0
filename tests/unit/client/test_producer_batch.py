"""ProducerBatch: records encoded as appended, built into a RecordBatch v2 the wire decoder reads back."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mafka.client.producer_batch import BATCH_OVERHEAD, ProducerBatch, encoded_record_size
from mafka.wire.batch import BatchHeader, validate_batch
from mafka.wire.compression import CompressionType
from mafka.wire.records import Record, build_batch, decode_batch
from tests.hypothesis_budget import examples

CODECS = list(CompressionType)


def new_batch(limit: int = 1 << 20, compression: int = 0, now: float = 0.0) -> ProducerBatch:
    return ProducerBatch("t", 3, limit, compression, now)


def fill(batch: ProducerBatch, records: list[tuple[int, bytes | None, bytes | None, object]]) -> None:
    for ts, key, value, headers in records:
        assert batch.try_append(ts, key, value, headers, None)


SAMPLE = [
    (1_700_000_000_000, b"k0", b"v0", None),
    (1_700_000_000_005, None, b"v1", [("h", b"x"), ("empty", b""), ("null", None)]),
    (1_699_999_999_990, b"k2", None, []),  # earlier than the first: negative delta
    (1_700_000_000_003, b"", b"x" * 300, [("big", b"y" * 200)]),
]


def decoded_view(data: bytes) -> list[tuple[int, int, bytes | None, bytes | None, tuple]]:
    decoded = decode_batch(data)
    return [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in decoded.records]


# -- build: round trip through the wire decoder --------------------------------------------------


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_build_decodes_back_for_every_codec(codec: CompressionType) -> None:
    batch = new_batch(compression=int(codec))
    fill(batch, SAMPLE)
    data = batch.build()
    decoded = decode_batch(data)  # CRC verified too
    h = decoded.header
    assert h.compression == codec
    assert h.record_count == 4
    assert h.base_offset == 0 and h.last_offset_delta == 3
    assert h.base_timestamp == SAMPLE[0][0]
    assert h.max_timestamp == max(ts for ts, *_ in SAMPLE)
    assert h.producer_id == -1 and h.producer_epoch == -1 and h.base_sequence == -1
    assert not h.is_transactional and not h.is_control
    assert h.partition_leader_epoch == -1
    assert decoded_view(data) == [
        (i, ts, key, value, tuple(headers or ())) for i, (ts, key, value, headers) in enumerate(SAMPLE)
    ]


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_build_matches_wire_build_batch_records(codec: CompressionType) -> None:
    """The incremental encoder and mafka.wire's build_batch produce the same records body."""
    batch = new_batch(compression=int(codec))
    fill(batch, SAMPLE)
    reference = build_batch(
        [Record(i, ts, key, value, tuple(headers or ())) for i, (ts, key, value, headers) in enumerate(SAMPLE)],
        compression=int(codec),
    )
    if codec == CompressionType.NONE:
        assert batch.build() == reference
    assert decoded_view(batch.build()) == decoded_view(reference)


def test_producer_fields_in_header() -> None:
    batch = new_batch(compression=int(CompressionType.LZ4))
    fill(batch, SAMPLE[:2])
    h = decode_batch(batch.build(producer_id=4242, producer_epoch=7, base_sequence=99)).header
    assert (h.producer_id, h.producer_epoch, h.base_sequence) == (4242, 7, 99)
    assert h.last_sequence == 100
    assert not h.is_transactional


def test_transactional_flag() -> None:
    batch = new_batch()
    fill(batch, SAMPLE[:1])
    h = decode_batch(batch.build(producer_id=1, producer_epoch=0, base_sequence=0, transactional=True)).header
    assert h.is_transactional and not h.is_control


def test_str_header_values_are_utf8_encoded() -> None:
    batch = new_batch()
    fill(batch, [(10, b"k", b"v", [("name", "välue"), ("b", b"raw")])])
    (record,) = decode_batch(batch.build()).records
    assert record.headers == (("name", "välue".encode()), ("b", b"raw"))
    # the record kept for the delivery report is the caller's own
    assert batch.records[0][4] == [("name", "välue"), ("b", b"raw")]


def test_size_is_exact_for_uncompressed_and_payload_excludes_header() -> None:
    batch = new_batch()
    assert batch.size == BATCH_OVERHEAD and batch.payload == 0
    fill(batch, SAMPLE)
    data = batch.build()
    assert batch.size == len(data)
    records = _encoded_records(data)
    assert len(records) == len(SAMPLE)
    assert batch.payload == sum(len(r) for r in records)


def _encoded_records(data: bytes) -> list[bytes]:
    """The encoded records (without their length prefix) of an uncompressed batch."""
    from mafka.wire.records import decode_varint

    out = []
    p = BATCH_OVERHEAD
    while p < len(data):
        n, p = decode_varint(data, p)
        out.append(data[p:p + n])
        p += n
    return out


def test_encoded_record_size_is_an_upper_bound() -> None:
    for ts, key, value, headers in SAMPLE:
        batch = new_batch()
        assert batch.try_append(ts, key, value, headers, None)
        assert batch.size - BATCH_OVERHEAD <= encoded_record_size(key, value, headers)


# -- appending --------------------------------------------------------------------------------


def test_first_record_always_accepted_even_over_limit() -> None:
    batch = new_batch(limit=10)
    assert batch.try_append(1, b"k", b"x" * 1000, None, "cb")
    assert batch.count == 1
    assert batch.is_full()
    # a second record is refused, and nothing of it is kept
    body, size, payload = bytes(batch.body), batch.size, batch.payload
    assert not batch.try_append(2, b"k", b"v", None, "cb2")
    assert (bytes(batch.body), batch.size, batch.payload, batch.count) == (body, size, payload, 1)
    assert len(batch.records) == 1
    assert decode_batch(batch.build()).header.record_count == 1


def test_limit_boundary_exact() -> None:
    probe = new_batch()
    fill(probe, [(1, b"a", b"1", None)])
    first = probe.size
    fill(probe, [(1, b"b", b"2", None)])
    second_adds = probe.size - first

    exact = new_batch(limit=first + second_adds)
    fill(exact, [(1, b"a", b"1", None)])
    assert exact.try_append(1, b"b", b"2", None, None)  # lands exactly on the limit
    assert exact.is_full()

    short = new_batch(limit=first + second_adds - 1)
    fill(short, [(1, b"a", b"1", None)])
    assert not short.try_append(1, b"b", b"2", None, None)
    assert short.count == 1 and not short.is_full()


def test_refused_record_does_not_move_timestamps() -> None:
    batch = new_batch(limit=80)
    fill(batch, [(100, b"k", b"v", None)])
    assert not batch.try_append(500, b"k", b"v" * 100, None, None)
    assert (batch.base_ts, batch.max_ts) == (100, 100)
    assert decode_batch(batch.build()).header.max_timestamp == 100


def test_records_kept_for_delivery_reports() -> None:
    batch = new_batch(now=12.5)
    cb = object()
    fill(batch, [(5, b"k", b"v", None)])
    assert batch.try_append(6, None, b"w", [("h", b"1")], cb)
    assert batch.records[1] == (cb, None, b"w", 6, [("h", b"1")])
    assert batch.created == 12.5


@pytest.mark.parametrize(
    "key, value",
    [("str-key", b"v"), (b"k", "str-value"), (5, b"v"), (b"k", 3.0)],
)
def test_non_bytes_key_or_value_raises_type_error(key: object, value: object) -> None:
    batch = new_batch()
    with pytest.raises(TypeError):
        batch.try_append(1, key, value, None, None)  # type: ignore[arg-type]
    assert batch.count == 0 and len(batch.body) == 0


def test_memoryview_and_bytearray_accepted() -> None:
    batch = new_batch()
    fill(batch, [(1, bytearray(b"ka"), memoryview(b"vb"), None)])
    (record,) = decode_batch(batch.build()).records
    assert (record.key, record.value) == (b"ka", b"vb")


# -- build caching ------------------------------------------------------------------------------


def test_build_is_cached_while_producer_fields_do_not_change() -> None:
    batch = new_batch(compression=int(CompressionType.GZIP))
    fill(batch, SAMPLE[:2])
    first = batch.build(1, 0, 10)
    assert batch.build(1, 0, 10) is first
    other = batch.build(1, 0, 20)
    assert other is not first and other != first
    assert decode_batch(other).header.base_sequence == 20
    assert decode_batch(batch.build(2, 0, 20)).header.producer_id == 2
    assert decode_batch(batch.build(2, 1, 20)).header.producer_epoch == 1
    # back to the first fields: the same bytes as before
    assert batch.build(1, 0, 10) == first


def test_append_after_build_invalidates_cache() -> None:
    batch = new_batch()
    fill(batch, SAMPLE[:1])
    before = batch.build()
    fill(batch, SAMPLE[1:2])
    after = batch.build()
    assert decode_batch(before).header.record_count == 1
    assert decode_batch(after).header.record_count == 2


def test_build_cache_distinguishes_transactional_flag() -> None:
    batch = new_batch()
    fill(batch, SAMPLE[:1])
    plain = batch.build(5, 0, 0)
    txn = batch.build(5, 0, 0, transactional=True)
    assert not BatchHeader(plain).is_transactional
    assert BatchHeader(txn).is_transactional
    validate_batch(txn)


# -- split ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.ZSTD], ids=lambda c: c.name)
def test_split_gives_one_batch_per_record(codec: CompressionType) -> None:
    batch = new_batch(limit=5000, compression=int(codec), now=1.0)
    callbacks = [object() for _ in SAMPLE]
    for cb, (ts, key, value, headers) in zip(callbacks, SAMPLE, strict=True):
        assert batch.try_append(ts, key, value, headers, cb)
    batch.base_sequence = 40
    batch.attempts = 2
    singles = batch.split(now=9.0)
    assert len(singles) == len(SAMPLE)
    assert sum(s.payload for s in singles) == batch.payload
    for single, cb, (ts, key, value, headers) in zip(singles, callbacks, SAMPLE, strict=True):
        assert (single.topic, single.partition) == ("t", 3)
        assert single.count == 1
        assert single.created == 1.0  # keeps the original age for the delivery timeout
        assert single.base_sequence == -1 and single.attempts == 0
        assert single.compression == codec and single.limit == 5000
        assert single.records == [(cb, key, value, ts, headers)]
        decoded = decode_batch(single.build())
        assert decoded.header.compression == codec
        (record,) = decoded.records
        assert (record.offset, record.timestamp, record.key, record.value, record.headers) == (
            0, ts, key, value, tuple(headers or ())
        )


# -- property ---------------------------------------------------------------------------------------

_bytes_or_none = st.one_of(st.none(), st.binary(max_size=300))
_header = st.tuples(st.text(max_size=12), _bytes_or_none)
_record = st.tuples(
    st.integers(min_value=0, max_value=(1 << 45)),
    _bytes_or_none,
    _bytes_or_none,
    st.one_of(st.none(), st.lists(_header, max_size=4)),
)


@settings(max_examples=examples(150), deadline=None)
@given(
    records=st.lists(_record, min_size=1, max_size=25),
    codec=st.sampled_from(CODECS),
    producer=st.tuples(
        st.integers(min_value=-1, max_value=(1 << 40)),
        st.integers(min_value=-1, max_value=32767),
        st.integers(min_value=-1, max_value=(1 << 31) - 1),
    ),
)
def test_round_trip_property(
    records: list[tuple[int, bytes | None, bytes | None, list | None]],
    codec: CompressionType,
    producer: tuple[int, int, int],
) -> None:
    batch = new_batch(limit=1 << 30, compression=int(codec))
    fill(batch, records)
    data = batch.build(*producer)
    decoded = decode_batch(data)
    h = decoded.header
    assert (h.producer_id, h.producer_epoch, h.base_sequence) == producer
    assert h.record_count == len(records)
    assert h.last_offset_delta == len(records) - 1
    assert h.base_timestamp == records[0][0]
    assert h.max_timestamp == max(r[0] for r in records)
    assert h.compression == codec
    assert decoded_view(data) == [
        (i, ts, key, value, tuple(headers or ())) for i, (ts, key, value, headers) in enumerate(records)
    ]
    if codec == CompressionType.NONE:
        assert batch.size == len(data)
