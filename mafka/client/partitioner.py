"""Producer partitioners: librdkafka's ``partitioner`` choices and KIP-480's sticky partitioner.

Pure functions, no I/O.  Sources: librdkafka ``src/rdkafka_msg.c``
(``rd_kafka_msg_partitioner_*``, ``rd_kafka_msg_partitioner``), ``src/rdmurmur2.c``,
``src/rdfnv1a.c``, ``src/rdcrc32.h``; Apache Kafka ``Utils.murmur2`` /
``Utils.toPositive`` and ``StickyPartitionCache`` (KIP-480).

Hashes:

* :func:`murmur2` is Java Kafka's ``Utils.murmur2`` bit for bit (a *signed* 32-bit
  result); ``to_positive(murmur2(key)) % n`` is the Java producer's partition for a
  keyed record, and librdkafka's ``murmur2``/``murmur2_random`` compute the same.
* :func:`fnv1a` is librdkafka's ``rd_fnv1a``: 32-bit FNV-1a computed in a signed
  ``int32`` and then made non-negative with ``abs`` (Sarama's ``NewHashPartitioner``
  variant, *not* the reference FNV-1a); ``-2**31`` stays ``0x80000000``.
* CRC32 is ``zlib.crc32``: librdkafka's ``rd_crc32`` is the standard reflected CRC-32
  (poly ``0x04c11db7``, init and final XOR ``0xffffffff``).  The unsigned CRC is taken
  modulo the partition count, as in C (``uint32 % int32`` is unsigned).

:data:`PARTITIONERS` maps each ``partitioner`` config value to
``f(key, num_partitions) -> int | None``.  ``None`` means "unkeyed record: ask the
:class:`StickyPartitioner`".  The null-key rules follow librdkafka's dispatcher, which
sends a record to the sticky partition only for the ``*_random`` partitioners (for
``consistent_random`` also for an empty key) and calls the plain ones directly:

=====================  ===================  =========================  ======================
partitioner            key ``None``          key ``b""``                 other keys
=====================  ===================  =========================  ======================
``random``             random                random                      random
``consistent``         ``crc32(b"") % n``    ``crc32(b"") % n`` (= 0)    ``crc32(key) % n``
``consistent_random``  None (sticky)         None (sticky)               ``crc32(key) % n``
``murmur2``            hash of ``b""``       hash of ``b""``             ``to_positive(murmur2(key)) % n``
``murmur2_random``     None (sticky)         hash of ``b""``             as ``murmur2``
``fnv1a``              ``fnv1a(b"") % n``    ``fnv1a(b"") % n``          ``fnv1a(key) % n``
``fnv1a_random``       None (sticky)         ``fnv1a(b"") % n``          as ``fnv1a``
=====================  ===================  =========================  ======================

So a caller must pass unkeyed records through the partitioner too, and use the sticky
partitioner only when it answers ``None``.  ``murmur2_random`` (Mafka's default) is the
Java producer's ``DefaultPartitioner``/built-in partitioner for keyed records.  With
librdkafka's ``sticky.partitioning.linger.ms=0`` the ``*_random`` partitioners spread
unkeyed records at random instead; that switch is the producer's, not this module's.
"""

from __future__ import annotations

import random
import struct
import zlib
from collections.abc import Callable, Sequence

__all__ = [
    "PARTITIONERS",
    "StickyPartitioner",
    "fnv1a",
    "murmur2",
    "to_positive",
]

_M32 = 0xFFFFFFFF
_MURMUR_SEED = 0x9747B28C
_MURMUR_M = 0x5BD1E995
_FNV_OFFSET = 0x811C9DC5
_FNV_PRIME = 0x01000193


def murmur2(data: bytes) -> int:
    """Java Kafka's ``Utils.murmur2(data)``: MurmurHash2, seed ``0x9747b28c``, signed int32.

    Words are read little-endian whatever the host (``MurmurHashNeutral2``), the tail
    bytes unsigned, exactly as the Java code masks them with ``& 0xff``.
    """
    length = len(data)
    m = _MURMUR_M
    h = (_MURMUR_SEED ^ length) & _M32
    nwords = length >> 2
    # One struct call for all whole words: the per-word Python work is the cost here.
    for k in struct.unpack_from(f"<{nwords}I", data):
        k = (k * m) & _M32
        k ^= k >> 24
        k = (k * m) & _M32
        h = ((h * m) & _M32) ^ k
    tail = nwords << 2
    rest = length & 3
    if rest:
        if rest == 3:
            h ^= data[tail + 2] << 16
        if rest >= 2:
            h ^= data[tail + 1] << 8
        h ^= data[tail]
        h = (h * m) & _M32
    h ^= h >> 13
    h = (h * m) & _M32
    h ^= h >> 15
    return h - 0x100000000 if h & 0x80000000 else h


def to_positive(n: int) -> int:
    """Java Kafka's ``Utils.toPositive``: clears the sign bit (not ``abs``: ``MIN_VALUE`` → 0)."""
    return n & 0x7FFFFFFF


def fnv1a(data: bytes) -> int:
    """librdkafka's ``rd_fnv1a(data)``: unsigned 32-bit result of ``abs(int32 FNV-1a)``."""
    h = _FNV_OFFSET
    for byte in data:
        h = ((h ^ byte) * _FNV_PRIME) & _M32
    # rd_fnv1a negates a negative int32; 2**32 - h is that, and maps INT32_MIN to itself.
    return 0x100000000 - h if h & 0x80000000 else h


# The shared generator for the "random" choices; a producer is one process, and
# random.Random is safe to call from several threads.
_rng = random.Random()


def _random(key: bytes | None, n: int) -> int:
    return _rng.randrange(n)


def _consistent(key: bytes | None, n: int) -> int:
    return zlib.crc32(key or b"") % n


def _consistent_random(key: bytes | None, n: int) -> int | None:
    # librdkafka tests keylen == 0, so an empty key is unkeyed here (and only here).
    if not key:
        return None
    return zlib.crc32(key) % n


def _murmur2(key: bytes | None, n: int) -> int:
    return (murmur2(key or b"") & 0x7FFFFFFF) % n


def _murmur2_random(key: bytes | None, n: int) -> int | None:
    if key is None:
        return None
    return (murmur2(key) & 0x7FFFFFFF) % n


def _fnv1a(key: bytes | None, n: int) -> int:
    return fnv1a(key or b"") % n


def _fnv1a_random(key: bytes | None, n: int) -> int | None:
    if key is None:
        return None
    return fnv1a(key) % n


#: ``partitioner`` config value → ``f(key, num_partitions)``; ``None`` = use the sticky partition.
PARTITIONERS: dict[str, Callable[[bytes | None, int], int | None]] = {
    "random": _random,
    "consistent": _consistent,
    "consistent_random": _consistent_random,
    "murmur2": _murmur2,
    "murmur2_random": _murmur2_random,
    "fnv1a": _fnv1a,
    "fnv1a_random": _fnv1a_random,
}


class StickyPartitioner:
    """KIP-480's sticky partition per topic for unkeyed records (Java's ``StickyPartitionCache``).

    Every unkeyed record of a topic goes to the topic's current sticky partition, so
    those records fill one batch instead of many small ones; when that batch is full
    or sent, :meth:`on_new_batch` moves the topic to another random partition.

    ``available`` is the topic's partitions that have a leader; ``None`` means "not
    known, treat all ``range(num_partitions)`` as available", an empty sequence means
    "none has a leader" (then any partition is chosen, as Java does, and the record
    waits for a leader).  A sticky partition is replaced on the next :meth:`partition`
    call when it is no longer below ``num_partitions`` or no longer in a non-empty
    ``available`` (librdkafka re-picks as soon as the partition is unavailable).

    Not locked: call it from one thread at a time (the producer's append path).
    """

    __slots__ = ("_rng", "_sticky")

    def __init__(self, rng: random.Random | None = None) -> None:
        self._rng = rng if rng is not None else random.Random()
        self._sticky: dict[str, int] = {}

    def partition(self, topic: str, num_partitions: int, available: Sequence[int] | None) -> int:
        """The sticky partition of ``topic``; picks one first if there is none yet (or it is stale).

        Raises:
            ValueError: ``num_partitions`` < 1.
        """
        current = self._sticky.get(topic)
        if (
            current is None
            or current >= num_partitions
            or (available and current not in available)
        ):
            current = self._pick(num_partitions, available, current)
            self._sticky[topic] = current
        return current

    def on_new_batch(
        self,
        topic: str,
        num_partitions: int,
        prev_partition: int,
        available: Sequence[int] | None,
    ) -> None:
        """The batch of ``prev_partition`` is full or sent: stick ``topic`` to another partition.

        Only when ``prev_partition`` is still the sticky partition (a batch completing on
        a partition the topic has already left must not move it again, as in Java's
        ``nextPartition``); the new one differs from the old whenever there is a choice.
        """
        current = self._sticky.get(topic)
        if current is not None and current != prev_partition:
            return
        self._sticky[topic] = self._pick(num_partitions, available, current)

    def current(self, topic: str) -> int | None:
        """The sticky partition of ``topic`` now, or ``None`` before the first pick."""
        return self._sticky.get(topic)

    def _pick(self, num_partitions: int, available: Sequence[int] | None, old: int | None) -> int:
        if num_partitions < 1:
            raise ValueError(f"num_partitions must be >= 1, got {num_partitions}")
        candidates: Sequence[int] = available if available else range(num_partitions)
        if len(candidates) == 1:
            return candidates[0]
        choice = self._rng.choice
        new = choice(candidates)
        # At least two distinct candidates here, so this ends quickly (Java loops likewise).
        while new == old:
            new = choice(candidates)
        return new
