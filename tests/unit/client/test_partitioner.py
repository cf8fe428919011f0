"""Partitioners: Java's murmur2, librdkafka's partitioner table, KIP-480 sticky partitioning."""

from __future__ import annotations

import random
import zlib

import pytest

from mafka.client.partitioner import (
    PARTITIONERS,
    StickyPartitioner,
    fnv1a,
    murmur2,
    to_positive,
)

# apache/kafka clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java testMurmur2
JAVA_MURMUR2 = [
    (b"21", -973932308),
    (b"foobar", -790332482),
    (b"a-little-bit-long-string", -985981536),
    (b"a-little-bit-longer-string", -1486304829),
    (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
    (bytes([ord("a"), ord("b"), ord("c")]), 479470107),
]

_UNALIGNED = b"PreAmbleWillBeRemoved,ThePrePartThatIs"


def _int32(x: int) -> int:
    return x - (1 << 32) if x & 0x80000000 else x


# librdkafka src/rdmurmur2.c unittest_murmur2 ("Java murmur2 results", as int32).
LIBRDKAFKA_MURMUR2 = [
    (b"kafka", _int32(0xD067CF64)),
    (b"giberish123456789", _int32(0x8F552B0C)),
    (b"1234", _int32(0x9FC97B14)),
    (b"234", _int32(0xE7C009CA)),
    (b"34", _int32(0x873930DA)),
    (b"4", _int32(0x5A4B5CA1)),
    (_UNALIGNED, _int32(0x78424F1C)),
    (_UNALIGNED[1:], _int32(0x4A62B377)),
    (_UNALIGNED[2:], _int32(0xE0E4E09E)),
    (_UNALIGNED[3:], _int32(0x62B8B43F)),
    (b"", _int32(0x106E08D9)),
]

# librdkafka src/rdfnv1a.c unittest_fnv1a (Go hash/fnv New32a, then abs as Sarama does).
LIBRDKAFKA_FNV1A = [
    (b"kafka", 0xD33C4E1),
    (b"giberish123456789", 0x77A58295),
    (b"1234", 0x23BDD03),
    (b"234", 0x2DEA3CD2),
    (b"34", 0x740FA83E),
    (b"4", 0x310CA263),
    (_UNALIGNED, 0x65CBD69C),
    (_UNALIGNED[1:], 0x6E49C79A),
    (_UNALIGNED[2:], 0x69EED356),
    (_UNALIGNED[3:], 0x6ABCC023),
    (b"", 0x7EE3623B),
]


# -- hashes ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("data", "expected"), JAVA_MURMUR2)
def test_murmur2_matches_java_utils_vectors(data: bytes, expected: int) -> None:
    assert murmur2(data) == expected


@pytest.mark.parametrize(("data", "expected"), LIBRDKAFKA_MURMUR2)
def test_murmur2_matches_librdkafka_vectors(data: bytes, expected: int) -> None:
    assert murmur2(data) == expected


def test_murmur2_accepts_bytes_like_and_is_signed_32_bit() -> None:
    assert murmur2(bytearray(b"foobar")) == murmur2(memoryview(b"foobar")) == -790332482
    rng = random.Random(7)
    for _ in range(500):
        value = murmur2(rng.randbytes(rng.randrange(0, 40)))
        assert -(2**31) <= value < 2**31


def test_to_positive_clears_the_sign_bit_like_java() -> None:
    assert to_positive(-(2**31)) == 0  # Integer.MIN_VALUE: not abs()
    assert to_positive(-1) == 0x7FFFFFFF
    assert to_positive(-973932308) == 1173551340
    assert to_positive(0) == 0
    assert to_positive(479470107) == 479470107


@pytest.mark.parametrize(("data", "expected"), LIBRDKAFKA_FNV1A)
def test_fnv1a_matches_librdkafka_vectors(data: bytes, expected: int) -> None:
    assert fnv1a(data) == expected


def test_fnv1a_is_the_abs_variant_not_reference_fnv1a() -> None:
    # Reference FNV-1a of "1234" is 0xfdc422fd (negative as int32); librdkafka negates it.
    assert fnv1a(b"1234") == (1 << 32) - 0xFDC422FD
    assert fnv1a(b"") == (1 << 32) - 0x811C9DC5  # the offset basis itself is negative


def test_zlib_crc32_is_the_standard_crc32_librdkafka_uses() -> None:
    # The CRC-32 (ISO-HDLC) check value; rd_crc32 is that reflected 0x04c11db7 CRC.
    assert zlib.crc32(b"123456789") == 0xCBF43926
    assert zlib.crc32(b"") == 0


# -- the partitioner table ---------------------------------------------------------------------


def test_partitioner_names_are_librdkafkas() -> None:
    assert set(PARTITIONERS) == {
        "random", "consistent", "consistent_random", "murmur2", "murmur2_random",
        "fnv1a", "fnv1a_random",
    }


@pytest.mark.parametrize("name", ["murmur2", "murmur2_random"])
@pytest.mark.parametrize(("key", "java_hash"), JAVA_MURMUR2)
@pytest.mark.parametrize("n", [1, 2, 3, 6, 7, 12, 100, 1000])
def test_murmur2_key_lands_where_the_java_producer_puts_it(
    name: str, key: bytes, java_hash: int, n: int
) -> None:
    # Java's BuiltInPartitioner.partitionForKey: Utils.toPositive(Utils.murmur2(key)) % n.
    assert PARTITIONERS[name](key, n) == (java_hash & 0x7FFFFFFF) % n


def test_murmur2_known_placements() -> None:
    # Worked by hand from the Java vectors: to_positive(-973932308) = 1173551340.
    assert PARTITIONERS["murmur2_random"](b"21", 3) == 1173551340 % 3 == 0
    assert PARTITIONERS["murmur2_random"](b"21", 10) == 0
    assert PARTITIONERS["murmur2_random"](b"abc", 10) == 479470107 % 10 == 7
    # to_positive(-790332482) = 1357151166
    assert PARTITIONERS["murmur2_random"](b"foobar", 6) == 1357151166 % 6 == 0
    assert PARTITIONERS["murmur2_random"](b"foobar", 7) == 1357151166 % 7 == 0


def test_murmur2_null_and_empty_keys() -> None:
    empty = (0x106E08D9 & 0x7FFFFFFF) % 7
    assert PARTITIONERS["murmur2"](None, 7) == empty  # librdkafka: a single partition
    assert PARTITIONERS["murmur2"](b"", 7) == empty
    assert PARTITIONERS["murmur2_random"](None, 7) is None  # sticky, as Java
    assert PARTITIONERS["murmur2_random"](b"", 7) == empty  # an empty key is a key


@pytest.mark.parametrize(
    "key", [b"kafka", b"123456789", b"user-42", bytes(range(256)), b"\xff\xfe"]
)
@pytest.mark.parametrize("n", [1, 3, 8, 1000])
def test_consistent_is_crc32_mod_n(key: bytes, n: int) -> None:
    expected = zlib.crc32(key) % n
    assert PARTITIONERS["consistent"](key, n) == expected
    assert PARTITIONERS["consistent_random"](key, n) == expected


def test_consistent_known_placements() -> None:
    assert PARTITIONERS["consistent"](b"123456789", 10) == 0xCBF43926 % 10 == 2
    assert PARTITIONERS["consistent"](b"123456789", 7) == 3421780262 % 7 == 5


def test_consistent_null_and_empty_keys() -> None:
    # CRC32 of nothing is 0: every null or empty key goes to partition 0.
    assert PARTITIONERS["consistent"](None, 5) == 0
    assert PARTITIONERS["consistent"](b"", 5) == 0
    # consistent_random treats both as unkeyed (librdkafka tests keylen == 0).
    assert PARTITIONERS["consistent_random"](None, 5) is None
    assert PARTITIONERS["consistent_random"](b"", 5) is None


@pytest.mark.parametrize(("key", "h"), LIBRDKAFKA_FNV1A)
@pytest.mark.parametrize("n", [1, 3, 16])
def test_fnv1a_placement(key: bytes, h: int, n: int) -> None:
    assert PARTITIONERS["fnv1a"](key, n) == h % n
    assert PARTITIONERS["fnv1a_random"](key, n) == h % n


def test_fnv1a_null_keys() -> None:
    assert PARTITIONERS["fnv1a"](None, 16) == 0x7EE3623B % 16
    assert PARTITIONERS["fnv1a_random"](None, 16) is None
    assert PARTITIONERS["fnv1a_random"](b"", 16) == 0x7EE3623B % 16


@pytest.mark.parametrize("name", sorted(PARTITIONERS))
def test_every_partitioner_stays_in_range(name: str) -> None:
    rng = random.Random(name)
    part = PARTITIONERS[name]
    for n in (1, 2, 5, 64):
        for _ in range(200):
            got = part(rng.randbytes(rng.randrange(1, 20)), n)
            assert got is not None and 0 <= got < n


def test_random_covers_all_partitions_whatever_the_key() -> None:
    seen_keyed = {PARTITIONERS["random"](b"same-key", 8) for _ in range(2000)}
    seen_null = {PARTITIONERS["random"](None, 8) for _ in range(2000)}
    assert seen_keyed == seen_null == set(range(8))


# -- sticky partitioner ------------------------------------------------------------------------


def test_sticky_stays_on_one_partition_until_a_new_batch() -> None:
    sticky = StickyPartitioner(random.Random(1))
    first = sticky.partition("t", 10, None)
    assert all(sticky.partition("t", 10, None) == first for _ in range(100))
    assert sticky.current("t") == first

    sticky.on_new_batch("t", 10, first, None)
    second = sticky.partition("t", 10, None)
    assert second != first
    assert all(sticky.partition("t", 10, None) == second for _ in range(100))


def test_sticky_ignores_a_batch_of_a_partition_already_left() -> None:
    sticky = StickyPartitioner(random.Random(2))
    first = sticky.partition("t", 10, None)
    sticky.on_new_batch("t", 10, first, None)
    second = sticky.current("t")
    sticky.on_new_batch("t", 10, first, None)  # a late report for the old partition
    assert sticky.current("t") == second


def test_sticky_topics_are_independent() -> None:
    sticky = StickyPartitioner(random.Random(3))
    a = sticky.partition("a", 50, None)
    b = sticky.partition("b", 50, None)
    sticky.on_new_batch("a", 50, a, None)
    assert sticky.partition("b", 50, None) == b
    assert sticky.current("a") != a


def test_sticky_chooses_only_available_partitions() -> None:
    sticky = StickyPartitioner(random.Random(4))
    available = [1, 4, 7]
    seen = set()
    prev = sticky.partition("t", 8, available)
    for _ in range(300):
        seen.add(prev)
        sticky.on_new_batch("t", 8, prev, available)
        nxt = sticky.partition("t", 8, available)
        assert nxt != prev
        prev = nxt
    assert seen == set(available)


def test_sticky_moves_off_a_partition_that_lost_its_leader() -> None:
    sticky = StickyPartitioner(random.Random(5))
    first = sticky.partition("t", 6, None)
    others = [p for p in range(6) if p != first]
    assert sticky.partition("t", 6, others) in others


def test_sticky_with_a_single_available_partition() -> None:
    sticky = StickyPartitioner(random.Random(6))
    assert sticky.partition("t", 5, [3]) == 3
    sticky.on_new_batch("t", 5, 3, [3])
    assert sticky.partition("t", 5, [3]) == 3
    one = StickyPartitioner()
    assert one.partition("t", 1, None) == 0
    one.on_new_batch("t", 1, 0, None)
    assert one.partition("t", 1, None) == 0


def test_sticky_with_no_leader_anywhere_picks_any_partition() -> None:
    sticky = StickyPartitioner(random.Random(7))
    assert sticky.partition("t", 4, []) in range(4)


def test_sticky_repicks_after_the_partition_count_shrinks() -> None:
    sticky = StickyPartitioner(random.Random(8))
    for _ in range(50):
        sticky.on_new_batch("t", 100, sticky.partition("t", 100, None), None)
        if sticky.current("t") >= 10:
            break
    assert sticky.current("t") >= 10
    assert sticky.partition("t", 10, None) in range(10)


def test_sticky_on_new_batch_before_any_record_picks_one() -> None:
    sticky = StickyPartitioner(random.Random(9))
    sticky.on_new_batch("t", 4, 0, None)
    assert sticky.current("t") in range(4)


def test_sticky_spreads_over_all_partitions_across_batches() -> None:
    sticky = StickyPartitioner()
    seen = set()
    for _ in range(500):
        p = sticky.partition("t", 12, None)
        seen.add(p)
        sticky.on_new_batch("t", 12, p, None)
    assert seen == set(range(12))


def test_sticky_refuses_a_topic_without_partitions() -> None:
    with pytest.raises(ValueError):
        StickyPartitioner().partition("t", 0, None)
