"""The cluster-wide singleton znodes: ``/cluster/id``, ``/feature`` and ``/latest_producer_id_block``.

Owns :class:`ClusterIdZNode`, :class:`FeatureZNode` (KIP-584 finalized
features) and :class:`ProducerIdBlock` (the last claimed block of producer
ids), byte for byte as Kafka 2.8.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from mafka.coordination.znodes.decoding import (
    _as_int,
    _as_long_string,
    _get_int,
    _get_str,
    _load_object,
)
from mafka.coordination.znodes.encoding import (
    _java_hash_map,
    _scala_immutable_map,
    _scala_mutable_map,
    encode_json,
)

__all__ = [
    "CLUSTER_PATH",
    "ClusterIdZNode",
    "FeatureZNode",
    "ProducerIdBlock",
]

CLUSTER_PATH = "/cluster"


# --------------------------------------------------------------------------- /latest_producer_id_block


@dataclass(frozen=True, slots=True)
class ProducerIdBlock:
    """``/latest_producer_id_block`` (persistent, created empty): the last claimed producer-id block.

    Attributes:
        broker: The broker that claimed it.
        block_start: First producer id (inclusive).
        block_end: Last producer id (**inclusive**).
    """

    broker: int
    block_start: int
    block_end: int

    PATH = "/latest_producer_id_block"
    DEFAULT_SIZE = 1000
    MAX_ID = (1 << 63) - 1

    @property
    def size(self) -> int:
        """Number of producer ids in the block."""
        return self.block_end - self.block_start + 1

    @classmethod
    def first(cls, broker: int, size: int = DEFAULT_SIZE) -> ProducerIdBlock:
        """The first block ever: [0, size − 1]."""
        return cls(broker, 0, size - 1)

    def next_block(self, broker: int, size: int = DEFAULT_SIZE) -> ProducerIdBlock:
        """The block after this one, for *broker*: [end + 1, end + size].

        Raises:
            OverflowError: If producer ids would exceed 2**63 − 1.
        """
        if self.block_end > self.MAX_ID - size:
            raise OverflowError("producer ids exhausted")
        return ProducerIdBlock(broker, self.block_end + 1, self.block_end + size)

    def encode(self) -> bytes:
        """``{"version":1,"broker":B,"block_start":"S","block_end":"E"}`` (bounds as strings)."""
        return encode_json(
            _scala_immutable_map(
                [
                    ("version", 1),
                    ("broker", int(self.broker)),
                    ("block_start", str(int(self.block_start))),
                    ("block_end", str(int(self.block_end))),
                ]
            )
        )

    @classmethod
    def decode(cls, data: bytes) -> ProducerIdBlock:
        """Reads the block (bounds as strings, numbers tolerated). Raises ValueError on garbage or empty data."""
        what = cls.PATH
        obj = _load_object(data, what)
        for key in ("block_start", "block_end"):
            if key not in obj:
                raise ValueError(f"{what}: missing {key!r}")
        return cls(
            _get_int(obj, "broker", what),
            _as_long_string(obj["block_start"], f"{what} 'block_start'"),
            _as_long_string(obj["block_end"], f"{what} 'block_end'"),
        )


# --------------------------------------------------------------------------- /cluster/id


class ClusterIdZNode:
    """``/cluster/id`` (persistent): the cluster id, created by the first broker up."""

    PATH = "/cluster/id"

    @staticmethod
    def encode(cluster_id: str) -> bytes:
        """``{"version":"1","id":"…"}`` — the version is the *string* "1"."""
        return encode_json(_scala_immutable_map([("version", "1"), ("id", str(cluster_id))]))

    @staticmethod
    def decode(data: bytes) -> str:
        """The id (any string, as Kafka). Raises ValueError on garbage."""
        return _get_str(_load_object(data, ClusterIdZNode.PATH), "id", ClusterIdZNode.PATH)


# --------------------------------------------------------------------------- /feature


@dataclass(frozen=True, slots=True)
class FeatureZNode:
    """``/feature`` (persistent): the cluster's finalized features (KIP-584).

    Attributes:
        status: :attr:`ENABLED` (1, IBP ≥ 2.7) or :attr:`DISABLED` (0).
        features: Name → (min_version_level, max_version_level).
    """

    status: int
    features: Mapping[str, tuple[int, int]] = field(default_factory=dict)

    PATH = "/feature"
    DISABLED = 0
    ENABLED = 1

    def __post_init__(self) -> None:
        if self.status not in (self.DISABLED, self.ENABLED):
            raise ValueError(f"bad feature status {self.status!r}")
        features = {str(k): (int(v[0]), int(v[1])) for k, v in dict(self.features).items()}
        object.__setattr__(self, "features", MappingProxyType(features))

    def __hash__(self) -> int:
        return hash((self.status, tuple(sorted(self.features.items()))))

    def encode(self) -> bytes:
        """``{"features":{…},"version":1,"status":S}`` (a 3-entry ``mutable.HashMap``)."""
        features = _java_hash_map(
            (name, {"min_version_level": lo, "max_version_level": hi})
            for name, (lo, hi) in self.features.items()
        )
        return encode_json(
            _scala_mutable_map([("version", 1), ("status", self.status), ("features", features)], 3)
        )

    @classmethod
    def decode(cls, data: bytes) -> FeatureZNode:
        """Reads v1+. Raises ValueError if version < 1, status or features is missing, or status is unknown."""
        what = cls.PATH
        obj = _load_object(data, what)
        version = _get_int(obj, "version", what)
        if version < 1:
            raise ValueError(f"{what}: unsupported version {version}")
        raw = obj.get("features")
        if not isinstance(raw, dict):
            raise ValueError(f"{what}: features map can not be absent")
        status = obj.get("status")
        if status is None:
            raise ValueError(f"{what}: status can not be absent")
        status = _as_int(status, f"{what} 'status'")
        if status not in (cls.DISABLED, cls.ENABLED):
            raise ValueError(f"{what}: malformed status {status}")
        features: dict[str, tuple[int, int]] = {}
        for name, ranges in raw.items():
            if not isinstance(ranges, dict):
                raise ValueError(f"{what}: feature {name!r} must be an object")
            features[name] = (
                _get_int(ranges, "min_version_level", what),
                _get_int(ranges, "max_version_level", what),
            )
        return cls(status, features)
