"""The admin request znodes under ``/admin``: topic deletions, legacy reassignments, preferred elections.

Owns :class:`DeleteTopicsZNode` (``/admin/delete_topics/<t>``),
:class:`ReassignPartitionsZNode` (``/admin/reassign_partitions``) and
:class:`PreferredReplicaElectionZNode` (``/admin/preferred_replica_election``),
byte for byte as Kafka 2.8's tools write them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from mafka.coordination.znodes.decoding import (
    _get_int,
    _get_str,
    _int_list,
    _load_object,
    _topic_partitions,
)
from mafka.coordination.znodes.encoding import _encode_partitions, encode_json
from mafka.topics import TopicPartitionTuple

__all__ = [
    "ADMIN_PATH",
    "DeleteTopicsZNode",
    "PreferredReplicaElectionZNode",
    "ReassignPartitionsZNode",
]

ADMIN_PATH = "/admin"


class DeleteTopicsZNode:
    """``/admin/delete_topics/<topic>`` (persistent, empty): topics queued for deletion."""

    PATH = "/admin/delete_topics"

    @staticmethod
    def path(topic: str) -> str:
        """``/admin/delete_topics/<topic>``."""
        return f"{DeleteTopicsZNode.PATH}/{topic}"


class ReassignPartitionsZNode:
    """``/admin/reassign_partitions`` (persistent, deprecated since 2.4): a legacy reassignment."""

    PATH = "/admin/reassign_partitions"

    @staticmethod
    def encode(reassignment: Mapping[TopicPartitionTuple, Sequence[int]]) -> bytes:
        """``{"version":1,"partitions":[{"topic":t,"partition":p,"replicas":[…]},…]}`` (caller's order)."""
        items = [
            {"topic": str(t), "partition": int(p), "replicas": [int(r) for r in replicas]}
            for (t, p), replicas in reassignment.items()
        ]
        return encode_json({"version": 1, "partitions": items})

    @staticmethod
    def decode(data: bytes) -> dict[TopicPartitionTuple, tuple[int, ...]]:
        """(topic, partition) → target replicas. Raises ValueError on garbage."""
        what = ReassignPartitionsZNode.PATH
        obj = _load_object(data, what)
        entries = obj.get("partitions")
        if not isinstance(entries, list):
            raise ValueError(f"{what}: 'partitions' must be a list")
        out: dict[TopicPartitionTuple, tuple[int, ...]] = {}
        for entry in entries:
            if not isinstance(entry, dict):
                raise ValueError(f"{what}: entry {entry!r} is not an object")
            tp = (_get_str(entry, "topic", what), _get_int(entry, "partition", what))
            out[tp] = _int_list(entry.get("replicas"), what)
        return out


class PreferredReplicaElectionZNode:
    """``/admin/preferred_replica_election`` (persistent): partitions to move to their preferred leader."""

    PATH = "/admin/preferred_replica_election"

    @staticmethod
    def encode(partitions: Iterable[TopicPartitionTuple]) -> bytes:
        """``{"version":1,"partitions":[{"topic":t,"partition":p},…]}`` (caller's order)."""
        return _encode_partitions(1, partitions)

    @staticmethod
    def decode(data: bytes) -> tuple[TopicPartitionTuple, ...]:
        """The partitions (duplicates dropped). Raises ValueError on garbage."""
        return _topic_partitions(
            _load_object(data, PreferredReplicaElectionZNode.PATH),
            PreferredReplicaElectionZNode.PATH,
        )
