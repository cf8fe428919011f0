"""The brokers and controller znodes: ``/brokers/ids/<id>``, ``/brokers/seqid``, ``/controller``, ``/controller_epoch``.

Owns the broker paths, :class:`BrokerRegistration` (registration JSON v1–v5),
:class:`ControllerZNode` and :class:`ControllerEpochZNode`, byte for byte as
Kafka 2.8 writes them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from mafka.coordination.znodes.decoding import (
    _MISSING,
    _as_long_string,
    _get_int,
    _load_object,
)
from mafka.coordination.znodes.encoding import (
    _java_hash_map,
    _scala_immutable_map,
    _scala_mutable_map,
    encode_json,
)
from mafka.endpoint import SECURITY_PROTOCOLS, Endpoint, parse_endpoint

__all__ = [
    "BROKERS_PATH",
    "BROKER_IDS_PATH",
    "BROKER_SEQUENCE_ID_PATH",
    "BrokerRegistration",
    "ControllerEpochZNode",
    "ControllerZNode",
    "broker_path",
]

BROKERS_PATH = "/brokers"
BROKER_IDS_PATH = "/brokers/ids"
BROKER_SEQUENCE_ID_PATH = "/brokers/seqid"


def broker_path(broker_id: int) -> str:
    """``/brokers/ids/<id>`` (ephemeral broker registration)."""
    return f"{BROKER_IDS_PATH}/{int(broker_id)}"


# --------------------------------------------------------------------------- /controller


@dataclass(frozen=True, slots=True)
class ControllerZNode:
    """``/controller`` (ephemeral): who the active controller is.

    Attributes:
        broker_id: The controller's broker id.
        timestamp: When it was elected, ms since the epoch (written as a string).
    """

    broker_id: int
    timestamp: int

    PATH = "/controller"

    def encode(self) -> bytes:
        """``{"version":1,"brokerid":B,"timestamp":"T"}``."""
        return encode_json(
            _scala_immutable_map(
                [
                    ("version", 1),
                    ("brokerid", int(self.broker_id)),
                    ("timestamp", str(int(self.timestamp))),
                ]
            )
        )

    @classmethod
    def decode(cls, data: bytes) -> ControllerZNode:
        """Reads v1 (and 3.x's v2 with ``kraftControllerEpoch``); timestamp may be missing (→ -1).

        Raises:
            ValueError: On anything without an integer ``brokerid``.
        """
        obj = _load_object(data, cls.PATH)
        broker_id = _get_int(obj, "brokerid", cls.PATH)
        ts = obj.get("timestamp", _MISSING)
        timestamp = (
            -1 if ts is _MISSING or ts is None else _as_long_string(ts, f"{cls.PATH} 'timestamp'")
        )
        return cls(broker_id, timestamp)


class ControllerEpochZNode:
    """``/controller_epoch`` (persistent): the controller epoch as plain decimal text.

    It is created as ``0`` so the first controller is epoch 1; its znode
    *version* (the "epoch zkVersion") fences every controller write.
    """

    PATH = "/controller_epoch"
    INITIAL_EPOCH = 0
    INITIAL_ZK_VERSION = 0

    @staticmethod
    def encode(epoch: int) -> bytes:
        """``b"5"`` for epoch 5."""
        return str(int(epoch)).encode("ascii")

    @staticmethod
    def decode(data: bytes) -> int:
        """The epoch. Raises ValueError unless *data* is a decimal integer."""
        try:
            text = bytes(data).decode("ascii").strip()
        except UnicodeDecodeError as exc:
            raise ValueError(f"/controller_epoch: not decimal text: {bytes(data)[:50]!r}") from exc
        if not re.fullmatch(r"[+-]?[0-9]+", text):
            raise ValueError(f"/controller_epoch: not decimal text: {bytes(data)[:50]!r}")
        return int(text)


# --------------------------------------------------------------------------- /brokers/ids/N


def _parse_endpoint(text: Any, protocol_map: Mapping[str, str] | None, what: str) -> Endpoint:
    if not isinstance(text, str):
        raise ValueError(f"{what}: endpoint {text!r} is not a string")
    try:
        return parse_endpoint(text, protocol_map)
    except ValueError as exc:
        raise ValueError(f"{what}: {exc}") from None


@dataclass(frozen=True, eq=False, slots=True)
class BrokerRegistration:
    """``/brokers/ids/<id>`` (ephemeral): a live broker's advertised listeners.

    Attributes:
        id: The broker id.
        endpoints: Listener name → :class:`mafka.endpoint.Endpoint` (the same
            name, security protocol, host or None, port), in advertised order
            (the JSON ``endpoints`` list order).  Plain ``(protocol, host,
            port)`` tuples are accepted.
        rack: ``broker.rack``, or None (then no ``rack`` key is written).
        jmx_port: -1 when JMX is off.
        timestamp: Registration time, ms (written as a string).
        features: Supported features, name → (min_version, max_version) (v5).
        version: JSON version: 5 (IBP ≥ 2.7, the default) or 4; 2 and 3 also encode.

    Equality is order-sensitive for ``endpoints`` (the order is part of the bytes).
    """

    id: int
    endpoints: Mapping[str, Endpoint]
    rack: str | None = None
    jmx_port: int = -1
    timestamp: int = 0
    features: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    version: int = 5

    def __post_init__(self) -> None:
        endpoints: dict[str, Endpoint] = {}
        for name, value in dict(self.endpoints).items():
            name = str(name)
            if isinstance(value, Endpoint):
                if value.name != name:
                    raise ValueError(
                        f"endpoint {value.connection_string} listed as listener {name}"
                    )
                _, protocol, host, port = value
            else:
                protocol, host, port = value
            if protocol not in SECURITY_PROTOCOLS:
                raise ValueError(f"unknown security protocol {protocol!r} for listener {name}")
            endpoints[name] = Endpoint(name, str(protocol), host or None, int(port))
        features = {str(k): (int(v[0]), int(v[1])) for k, v in dict(self.features).items()}
        object.__setattr__(self, "endpoints", MappingProxyType(endpoints))
        object.__setattr__(self, "features", MappingProxyType(features))

    def _key(self) -> tuple[Any, ...]:
        return (
            self.id,
            tuple(self.endpoints.items()),
            self.rack,
            self.jmx_port,
            self.timestamp,
            tuple(sorted(self.features.items())),
            self.version,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BrokerRegistration):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    @staticmethod
    def path_for(broker_id: int) -> str:
        """``/brokers/ids/<broker_id>``."""
        return broker_path(broker_id)

    @property
    def path(self) -> str:
        """This broker's registration path."""
        return broker_path(self.id)

    @property
    def plaintext_endpoint(self) -> Endpoint | None:
        """The first endpoint whose security protocol is PLAINTEXT, if any."""
        for endpoint in self.endpoints.values():
            if endpoint.security_protocol == "PLAINTEXT":
                return endpoint
        return None

    @property
    def host(self) -> str | None:
        """The legacy top-level ``host``: the first PLAINTEXT endpoint's host, else None."""
        endpoint = self.plaintext_endpoint
        return endpoint.host if endpoint else None

    @property
    def port(self) -> int:
        """The legacy top-level ``port``: the first PLAINTEXT endpoint's port, else -1."""
        endpoint = self.plaintext_endpoint
        return endpoint.port if endpoint else -1

    def encode(self) -> bytes:
        """The registration JSON in Kafka's (``mutable.HashMap``) key order.

        For v5: ``{"features":{…},"listener_security_protocol_map":{…},"endpoints":[…],
        "rack":…,"jmx_port":…,"port":…,"host":…,"version":5,"timestamp":"…"}``.
        """
        if self.version not in (2, 3, 4, 5):
            raise ValueError(f"cannot encode broker registration version {self.version}")
        pairs: list[tuple[str, Any]] = [
            ("version", self.version),
            ("host", self.host),
            ("port", self.port),
            ("endpoints", [ep.connection_string for ep in self.endpoints.values()]),
            ("jmx_port", int(self.jmx_port)),
            ("timestamp", str(int(self.timestamp))),
        ]
        if self.rack is not None and self.version >= 3:
            pairs.append(("rack", self.rack))
        if self.version >= 4:
            protocol_map = _scala_immutable_map(
                (name, ep.security_protocol) for name, ep in self.endpoints.items()
            )
            pairs.append(("listener_security_protocol_map", protocol_map))
        if self.version >= 5:
            features = _java_hash_map(
                (name, {"min_version": lo, "max_version": hi})
                for name, (lo, hi) in self.features.items()
            )
            pairs.append(("features", features))
        return encode_json(_scala_mutable_map(pairs, initial_entries=6))

    @classmethod
    def decode(cls, broker_id: int, data: bytes) -> BrokerRegistration:
        """Reads any registration version Kafka reads (v1 host/port only … v5 with features).

        Raises:
            ValueError: On garbage, version < 1, unparsable endpoints or unknown protocols.
        """
        what = broker_path(broker_id)
        obj = _load_object(data, what)
        version = _get_int(obj, "version", what)
        if version < 1:
            raise ValueError(f"{what}: unsupported broker registration version {version}")
        jmx_port = _get_int(obj, "jmx_port", what, -1)
        endpoints: dict[str, Endpoint] = {}
        if version == 1:
            host = obj.get("host")
            if host is not None and not isinstance(host, str):
                raise ValueError(f"{what}: 'host' must be a string")
            endpoints["PLAINTEXT"] = Endpoint(
                "PLAINTEXT", "PLAINTEXT", host or None, _get_int(obj, "port", what)
            )
        else:
            raw_map = obj.get("listener_security_protocol_map")
            protocol_map: dict[str, str] | None = None
            if raw_map is not None:
                if not isinstance(raw_map, dict) or not all(
                    isinstance(v, str) for v in raw_map.values()
                ):
                    raise ValueError(f"{what}: bad 'listener_security_protocol_map'")
                protocol_map = {k.upper(): v.upper() for k, v in raw_map.items()}
            raw_endpoints = obj.get("endpoints", _MISSING)
            if not isinstance(raw_endpoints, list):
                raise ValueError(f"{what}: 'endpoints' must be a list")
            for text in raw_endpoints:
                endpoint = _parse_endpoint(text, protocol_map, what)
                endpoints[endpoint.name] = endpoint
        rack = obj.get("rack")
        if rack is not None and not isinstance(rack, str):
            raise ValueError(f"{what}: 'rack' must be a string")
        ts = obj.get("timestamp")
        timestamp = -1 if ts is None else _as_long_string(ts, f"{what} 'timestamp'")
        features: dict[str, tuple[int, int]] = {}
        raw_features = obj.get("features")
        if raw_features is not None:
            if not isinstance(raw_features, dict):
                raise ValueError(f"{what}: 'features' must be an object")
            for name, ranges in raw_features.items():
                if not isinstance(ranges, dict):
                    raise ValueError(f"{what}: feature {name!r} must be an object")
                features[name] = (
                    _get_int(ranges, "min_version", what),
                    _get_int(ranges, "max_version", what),
                )
        return cls(broker_id, endpoints, rack, jmx_port, timestamp, features, version)
