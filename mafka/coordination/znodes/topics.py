"""The topic znodes: ``/brokers/topics/<t>`` (replica assignment) and its partitions' ``state`` nodes.

Owns the topic and partition paths, :class:`TopicAssignment` (assignment JSON
v1–v3, written as v3) and :class:`LeaderIsrAndControllerEpoch` (a
partition's leader, ISR and epochs), byte for byte as Kafka 2.8 writes them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from mafka.coordination.znodes.decoding import (
    _MISSING,
    _get_int,
    _int_list,
    _load_object,
    _partition_key,
)
from mafka.coordination.znodes.encoding import (
    _scala_immutable_map,
    _scala_mutable_map,
    encode_json,
)
from mafka.coordination.znodes.ids import validate_base64_uuid

__all__ = [
    "TOPICS_PATH",
    "LeaderIsrAndControllerEpoch",
    "TopicAssignment",
    "partition_state_path",
    "topic_partition_path",
    "topic_partitions_path",
    "topic_path",
]

TOPICS_PATH = "/brokers/topics"


def topic_path(topic: str) -> str:
    """``/brokers/topics/<topic>`` (the replica assignment)."""
    return f"{TOPICS_PATH}/{topic}"


def topic_partitions_path(topic: str) -> str:
    """``/brokers/topics/<topic>/partitions`` (an empty parent node)."""
    return f"{topic_path(topic)}/partitions"


def topic_partition_path(topic: str, partition: int) -> str:
    """``/brokers/topics/<topic>/partitions/<p>`` (an empty parent node)."""
    return f"{topic_partitions_path(topic)}/{int(partition)}"


def partition_state_path(topic: str, partition: int) -> str:
    """``/brokers/topics/<topic>/partitions/<p>/state`` (leader, ISR and epochs)."""
    return f"{topic_partition_path(topic, partition)}/state"


# --------------------------------------------------------------------------- /brokers/topics/T


def _freeze_replicas(
    mapping: Mapping[int, Sequence[int]],
) -> MappingProxyType[int, tuple[int, ...]]:
    return MappingProxyType(
        {int(p): tuple(int(r) for r in replicas) for p, replicas in dict(mapping).items()}
    )


@dataclass(frozen=True, slots=True)
class TopicAssignment:
    """``/brokers/topics/<topic>`` (persistent): the replica assignment, written as v3.

    Attributes:
        partitions: Partition → replicas (assignment order: the first is preferred).
        adding_replicas: Partition → replicas being added by a reassignment.
        removing_replicas: Partition → replicas being removed by a reassignment.
        topic_id: The topic id (22-char base64), or None (IBP < 2.8).
    """

    partitions: Mapping[int, tuple[int, ...]]
    adding_replicas: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    removing_replicas: Mapping[int, tuple[int, ...]] = field(default_factory=dict)
    topic_id: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "partitions", _freeze_replicas(self.partitions))
        adding = {p: r for p, r in _freeze_replicas(self.adding_replicas).items() if r}
        removing = {p: r for p, r in _freeze_replicas(self.removing_replicas).items() if r}
        object.__setattr__(self, "adding_replicas", MappingProxyType(adding))
        object.__setattr__(self, "removing_replicas", MappingProxyType(removing))
        if self.topic_id is not None:
            validate_base64_uuid(self.topic_id, "topic_id")

    def __hash__(self) -> int:
        return hash(
            (
                tuple(sorted(self.partitions.items())),
                tuple(sorted(self.adding_replicas.items())),
                tuple(sorted(self.removing_replicas.items())),
                self.topic_id,
            )
        )

    path = staticmethod(topic_path)

    @property
    def is_being_reassigned(self) -> bool:
        """True if any partition has adding or removing replicas."""
        return bool(self.adding_replicas or self.removing_replicas)

    def encode(self) -> bytes:
        """Kafka 2.8's v3 JSON (``version`` 3 even without a topic id; empty maps written as ``{}``).

        ``{"partitions":{"0":[1,2]},"topic_id":"…","adding_replicas":{},"removing_replicas":{},"version":3}``
        """

        def replica_map(mapping: Mapping[int, tuple[int, ...]]) -> dict[str, Any]:
            return _scala_mutable_map((str(p), list(r)) for p, r in mapping.items())

        pairs: list[tuple[str, Any]] = [
            ("version", 3),
            ("partitions", replica_map(self.partitions)),
            ("adding_replicas", replica_map(self.adding_replicas)),
            ("removing_replicas", replica_map(self.removing_replicas)),
        ]
        if self.topic_id is not None:
            pairs.append(("topic_id", self.topic_id))
        return encode_json(_scala_mutable_map(pairs, initial_entries=4))

    @classmethod
    def decode(cls, data: bytes, topic: str = "?") -> TopicAssignment:
        """Reads v1 (partitions only), v2 (+ adding/removing) and v3 (+ topic_id).

        As Kafka, adding/removing entries are only kept for partitions listed in
        ``partitions``; a missing ``partitions`` is an empty assignment.

        Raises:
            ValueError: On garbage or non-integer partitions/replicas.
        """
        what = topic_path(topic)
        obj = _load_object(data, what)

        def replica_map(key: str) -> dict[str, Any]:
            value = obj.get(key)
            if value is None:
                return {}
            if not isinstance(value, dict):
                raise ValueError(f"{what}: {key!r} must be an object")
            return value

        partitions_json = replica_map("partitions")
        adding_json = replica_map("adding_replicas")
        removing_json = replica_map("removing_replicas")
        partitions: dict[int, tuple[int, ...]] = {}
        adding: dict[int, tuple[int, ...]] = {}
        removing: dict[int, tuple[int, ...]] = {}
        for key, replicas in partitions_json.items():
            p = _partition_key(key, what)
            partitions[p] = _int_list(replicas, what)
            if key in adding_json:
                adding[p] = _int_list(adding_json[key], what)
            if key in removing_json:
                removing[p] = _int_list(removing_json[key], what)
        topic_id = obj.get("topic_id")
        if topic_id is not None:
            topic_id = validate_base64_uuid(topic_id, f"{what} 'topic_id'")
        return cls(partitions, adding, removing, topic_id)


# --------------------------------------------------------------------------- partition state

#: The partition state's keys as Kafka's ``Map(...)`` of them iterates (a 5-entry CHAMP map).
_STATE_KEY_ORDER = tuple(
    _scala_immutable_map(
        (key, None) for key in ("version", "leader", "leader_epoch", "controller_epoch", "isr")
    )
)


@dataclass(frozen=True, slots=True)
class LeaderIsrAndControllerEpoch:
    """``/brokers/topics/<t>/partitions/<p>/state``: leader, leader epoch, ISR, controller epoch.

    Attributes:
        leader: Leader broker id (-1 none, -2 during topic deletion).
        leader_epoch: Bumped on every leader (or controller-made ISR) change.
        isr: In-sync replicas (stored as a tuple).
        controller_epoch: Epoch of the controller that made the leadership decision.
        zk_version: The state znode's stat version — **not** in the JSON and
            ignored by ``==``/``hash``; -1 when unknown.
    """

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    zk_version: int = field(default=-1, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "isr", tuple(int(r) for r in self.isr))

    path = staticmethod(partition_state_path)

    def with_zk_version(self, zk_version: int) -> LeaderIsrAndControllerEpoch:
        """The same state carrying *zk_version*."""
        return replace(self, zk_version=zk_version)

    def encode(self) -> bytes:
        """``{"controller_epoch":C,"leader":L,"version":1,"leader_epoch":E,"isr":[…]}`` (a 5-entry CHAMP map).

        Written directly in that fixed key order (what :func:`encode_json`
        would write for the map, all values being integers): a controller
        writes this for every partition it touches, thousands at a time.
        """
        values = {
            "version": "1",
            "leader": str(int(self.leader)),
            "leader_epoch": str(int(self.leader_epoch)),
            "controller_epoch": str(int(self.controller_epoch)),
            "isr": "[" + ",".join(str(int(r)) for r in self.isr) + "]",
        }
        return ("{" + ",".join(f'"{key}":{values[key]}' for key in _STATE_KEY_ORDER) + "}").encode()

    @classmethod
    def decode(cls, data: bytes, zk_version: int = -1) -> LeaderIsrAndControllerEpoch:
        """Reads the state JSON; *zk_version* is the node's stat version.

        Raises:
            ValueError: If leader, leader_epoch, isr or controller_epoch is missing or mistyped.
        """
        what = "partition state"
        obj = _load_object(data, what)
        isr = obj.get("isr", _MISSING)
        if isr is _MISSING:
            raise ValueError(f"{what}: missing 'isr'")
        return cls(
            _get_int(obj, "leader", what),
            _get_int(obj, "leader_epoch", what),
            _int_list(isr, f"{what} 'isr'"),
            _get_int(obj, "controller_epoch", what),
            zk_version,
        )
