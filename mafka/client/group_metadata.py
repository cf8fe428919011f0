"""``ConsumerGroupMetadata``: what a transactional producer needs to know about a consumer (KIP-447).

``Consumer.consumer_group_metadata()`` returns one; the producer's
``send_offsets_to_transaction(offsets, group_metadata)`` sends its group id,
generation, member id and group instance id with TxnOffsetCommit, so the
group coordinator refuses offsets from a consumer that has since lost its
partitions (a zombie).

confluent-kafka hands out librdkafka's serialized form (``bytes`` starting
``b"CGMDv2:"``); :meth:`ConsumerGroupMetadata.coerce` reads that too, so a
confluent-kafka consumer's metadata works with Mafka's producer, and
``bytes(metadata)`` writes it.  A plain group id string is accepted as well
(Java's deprecated ``sendOffsetsToTransaction(offsets, groupId)``: no
generation, so no zombie fencing).
"""

from __future__ import annotations

import struct
import sys
from typing import Any

from mafka.client.kafka_error import KafkaError, KafkaException

__all__ = ["ConsumerGroupMetadata"]

_MAGIC = b"CGMDv2:"
# librdkafka copies the int32 generation in host byte order.
_GENERATION = struct.Struct("<i" if sys.byteorder == "little" else ">i")


class ConsumerGroupMetadata:
    """A consumer's group membership at one moment: group id, generation, member id, instance id."""

    __slots__ = ("group_id", "generation_id", "member_id", "group_instance_id")

    def __init__(self, group_id: str, generation_id: int = -1, member_id: str = "",
                 group_instance_id: str | None = None) -> None:
        self.group_id = group_id
        self.generation_id = generation_id
        self.member_id = member_id
        self.group_instance_id = group_instance_id

    @classmethod
    def coerce(cls, value: Any) -> ConsumerGroupMetadata:
        """A ``ConsumerGroupMetadata``, librdkafka's serialized bytes, or a group id.

        Raises:
            KafkaException: ``_INVALID_ARG`` for anything else.
        """
        if isinstance(value, ConsumerGroupMetadata):
            return value
        if isinstance(value, str) and value:
            return cls(value)
        if isinstance(value, (bytes, bytearray, memoryview)):
            return cls.parse(bytes(value))
        raise KafkaException(KafkaError(KafkaError._INVALID_ARG,
                                        "group_metadata must be the consumer's consumer_group_metadata()"))

    @classmethod
    def parse(cls, data: bytes) -> ConsumerGroupMetadata:
        """Reads librdkafka's ``rd_kafka_consumer_group_metadata_write`` format.

        Raises:
            KafkaException: ``_BAD_MSG`` for bytes of another format.
        """
        try:
            if not data.startswith(_MAGIC):
                raise ValueError("no CGMDv2 magic")
            p = len(_MAGIC)
            (generation,) = _GENERATION.unpack_from(data, p)
            p += _GENERATION.size
            group_id, p = _cstring(data, p)
            member_id, p = _cstring(data, p)
            instance_is_null = data[p]
            p += 1
            instance = None if instance_is_null else _cstring(data, p)[0]
        except (ValueError, IndexError, struct.error) as exc:
            raise KafkaException(KafkaError(KafkaError._BAD_MSG,
                                            f"Input buffer is not a serialized consumer group metadata: {exc}")
                                 ) from None
        return cls(group_id, generation, member_id, instance)

    def __bytes__(self) -> bytes:
        out = bytearray(_MAGIC)
        out += _GENERATION.pack(self.generation_id)
        out += self.group_id.encode() + b"\x00"
        out += self.member_id.encode() + b"\x00"
        if self.group_instance_id is None:
            out.append(1)
        else:
            out.append(0)
            out += self.group_instance_id.encode() + b"\x00"
        return bytes(out)

    def __eq__(self, other: Any) -> bool:
        if not isinstance(other, ConsumerGroupMetadata):
            return NotImplemented
        return (self.group_id, self.generation_id, self.member_id, self.group_instance_id) == (
            other.group_id, other.generation_id, other.member_id, other.group_instance_id)

    def __hash__(self) -> int:
        return hash((self.group_id, self.generation_id, self.member_id, self.group_instance_id))

    def __repr__(self) -> str:
        return (f"ConsumerGroupMetadata(group_id={self.group_id!r}, generation_id={self.generation_id}, "
                f"member_id={self.member_id!r}, group_instance_id={self.group_instance_id!r})")


def _cstring(data: bytes, p: int) -> tuple[str, int]:
    end = data.index(b"\x00", p)
    return data[p:end].decode("utf-8"), end + 1
