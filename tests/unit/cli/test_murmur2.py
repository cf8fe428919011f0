"""Kafka's murmur2 partitioner: vectors from Kafka's UtilsTest and a cross-check with kafka-python."""

from __future__ import annotations

import random

import pytest

from mafka.cli.console_producer import murmur2, partition_for_key, to_positive
from mafka.client.partitioner import StickyPartitioner

# org.apache.kafka.common.utils.UtilsTest#testMurmur2
KAFKA_VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    bytes([ord("a"), ord("b"), ord("c")]): 479470107,
}


@pytest.mark.parametrize(("data", "expected"), list(KAFKA_VECTORS.items()))
def test_kafka_vectors(data: bytes, expected: int) -> None:
    assert murmur2(data) == expected


def test_empty_and_short_keys_are_signed_int32() -> None:
    for n in range(0, 9):
        h = murmur2(b"x" * n)
        assert -(1 << 31) <= h < (1 << 31)


def test_matches_kafka_python() -> None:
    default = pytest.importorskip("kafka.partitioner.default")
    rng = random.Random(7)
    for _ in range(500):
        data = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 40)))
        assert murmur2(data) & 0xFFFFFFFF == default.murmur2(data) & 0xFFFFFFFF


def test_partition_for_key_matches_kafka_python_partitioner() -> None:
    default = pytest.importorskip("kafka.partitioner.default")
    for key in (b"a", b"b", b"user-42", b"\xff\x00\x80", b"21"):
        for n in (1, 3, 6, 7):
            idx = (default.murmur2(key) & 0x7FFFFFFF) % n
            assert partition_for_key(key, n) == idx


def test_to_positive() -> None:
    assert to_positive(-1) == 0x7FFFFFFF
    assert to_positive(-973932308) == (-973932308) & 0x7FFFFFFF
    assert to_positive(5) == 5


def test_sticky_partitioner_changes_partition_per_batch() -> None:
    """The console producer's keyless records: the producer's sticky partitioner (KIP-480)."""
    sticky = StickyPartitioner(random.Random(1))
    first = sticky.partition("t", 3, [0, 1, 2])
    assert sticky.partition("t", 3, [0, 1, 2]) == first
    sticky.on_new_batch("t", 3, first, [0, 1, 2])
    second = sticky.partition("t", 3, [0, 1, 2])
    assert second != first
    sticky.on_new_batch("t", 3, second, [2])
    assert sticky.partition("t", 3, [2]) == 2
