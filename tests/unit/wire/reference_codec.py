"""kafka-python's protocol classes, the independent codec the conformance suite checks against.

kafka-python 3 generates its codecs from the Kafka 4.x JSON schemas it
bundles.  Those lack the ZooKeeper-era inter-broker APIs and Kafka 4's group
APIs (KIP-848, KIP-932), so their Kafka schemas (the inter-broker ones reduced
to the versions Mafka speaks, the group ones verbatim) live in
``kafka_schemas/`` and are loaded through the same kafka-python machinery.
"""

from __future__ import annotations

import importlib
import pkgutil
import uuid
from functools import cache
from typing import Any

import kafka.protocol
from kafka.protocol.api_message import ApiMessage

from .strategies import KAFKA_NAMES, field_name, in_version, int_to_bitfield

_FIXTURES = "tests.unit.wire.kafka_schemas"
_FIXTURE_NAMES = {
    "LeaderAndIsrRequest",
    "LeaderAndIsrResponse",
    "StopReplicaRequest",
    "StopReplicaResponse",
    "UpdateMetadataRequest",
    "UpdateMetadataResponse",
    "ControlledShutdownRequest",
    "ControlledShutdownResponse",
    # Kafka 4's group APIs (KIP-848, KIP-932), verbatim from Kafka 4.4: newer than kafka-python's bundle.
    *(
        f"{api}{kind}"
        for api in (
            "ConsumerGroupHeartbeat", "ConsumerGroupDescribe", "ShareGroupHeartbeat", "ShareGroupDescribe",
            "ShareFetch", "ShareAcknowledge", "DescribeShareGroupOffsets", "AlterShareGroupOffsets",
            "DeleteShareGroupOffsets",
        )
        for kind in ("Request", "Response")
    ),
    # KIP-932's inter-broker share-group state APIs, verbatim from Kafka 4.4.
    *(
        f"{api}{kind}"
        for api in (
            "InitializeShareGroupState", "ReadShareGroupState", "WriteShareGroupState", "DeleteShareGroupState",
            "ReadShareGroupStateSummary",
        )
        for kind in ("Request", "Response")
    ),
}


def _all_subclasses(cls: type) -> list[type]:
    out = []
    for sub in cls.__subclasses__():
        out.append(sub)
        out.extend(_all_subclasses(sub))
    return out


@cache
def message_class(name: str) -> type:
    """kafka-python's class for a Kafka message name such as ``"ProduceRequest"``."""
    if name in _FIXTURE_NAMES:
        cls = type(name, (ApiMessage,), {}, load_json=_FIXTURES)
        _note_renames(name, cls._json["fields"])
        return cls
    for info in pkgutil.walk_packages(kafka.protocol.__path__, "kafka.protocol."):
        if ".old" in info.name or "generate" in info.name:
            continue
        importlib.import_module(info.name)
    for cls in _all_subclasses(ApiMessage):
        if cls.__name__ == name and getattr(cls, "_class_version", None) is None and cls._json is not None:
            _note_renames(name, cls._json["fields"])
            return cls
    raise LookupError(name)


def json_fields(name: str) -> list[dict[str, Any]]:
    """The JSON field list kafka-python holds for *name*."""
    return message_class(name)._json["fields"]


def _note_renames(name: str, fields: list[dict[str, Any]]) -> None:
    """Records the fields kafka-python renamed in *name*'s loaded schema (see ``KAFKA_NAMES``)."""
    if name == "MetadataResponse":
        # kafka-python renames both authorized-operations fields to ``authorized_operations``.
        topic_fields = next(f for f in fields if f["name"] == "Topics")["fields"]
        for owner, kafka_name in ((fields, "ClusterAuthorizedOperations"), (topic_fields, "TopicAuthorizedOperations")):
            for f in owner:
                if f["name"] in ("authorized_operations", kafka_name):
                    KAFKA_NAMES[id(f)] = kafka_name
    if name == "LeaderAndIsrRequest":
        # Our fixture calls Kafka's ``Type`` ``RequestType``: kafka-python's message classes
        # already have a ``type`` attribute (request or response).
        for f in fields:
            if f["name"] == "RequestType":
                KAFKA_NAMES[id(f)] = "Type"
    if name == "DescribeClusterResponse":
        # ... and DescribeCluster's ClusterAuthorizedOperations too.
        for f in fields:
            if f["name"] in ("authorized_operations", "ClusterAuthorizedOperations"):
                KAFKA_NAMES[id(f)] = "ClusterAuthorizedOperations"


def build(name: str, version: int, vals: dict[str, Any]) -> Any:
    """A kafka-python message object from plain values."""
    cls = message_class(name)
    return _build_struct(cls, cls._struct, vals, version)


def _build_struct(data_class: type, struct_field: Any, vals: dict[str, Any], version: int) -> Any:
    kwargs = {}
    for f in struct_field.fields.values():
        if not in_version(f._json, version):
            continue
        v = vals[field_name(f._json)]
        if f.is_struct_array() and v is not None:
            v = [_build_struct(f.data_class, f, e, version) for e in v]
        elif f.is_struct() and v is not None:
            v = _build_struct(f.data_class, f, v, version)
        elif f._json["type"] == "bitfield":
            v = int_to_bitfield(v)
        elif f._type_str == "uuid" and v is not None:
            v = uuid.UUID(bytes=v)
        kwargs[f.name] = v
    return data_class(version=version, **kwargs)


def encode(name: str, version: int, vals: dict[str, Any]) -> bytes:
    return build(name, version, vals).encode(version=version)


def decode(name: str, version: int, data: bytes) -> Any:
    obj = message_class(name).decode(data, version=version)
    # kafka-python 3.0.12 leaves the _header slot unset on decoded objects,
    # and some encode() overrides read it.
    object.__setattr__(obj, "_header", None)
    return obj
