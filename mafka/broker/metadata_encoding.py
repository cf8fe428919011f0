"""Metadata (3) response bodies encoded by hand, byte for byte what the codec writes.

The codec (Construct) walks a dict per field; a Metadata answer with 100,000
partitions is a million fields and seconds of reactor time.  This module
writes the same bytes with one ``struct`` pack per partition and a memo of
the replica lists (a cluster has few distinct ones), in pieces that can be
kept and reassembled:

* :func:`encode_topic` — one existing topic's entry (a *fragment*), with
  ``topic_authorized_operations`` "not provided"; :func:`with_operations`
  swaps in another value;
* :func:`encode_error_topic` — an entry without partitions (unknown,
  refused, being created);
* :func:`encode_head` / :func:`encode_tail` — what comes before the topics
  (throttle time, brokers, cluster id, controller id, the topic count) and
  after them (the cluster's authorized operations, tagged fields).

Contract: ``head + b"".join(fragments) + tail`` is exactly what
``encode_body(MetadataResponse, version, body)`` writes for the equivalent
dict body, at every version of :data:`VERSIONS` (the unit tests compare the
bytes).  Which fields a version carries is read from the schema
(:mod:`mafka.wire.apis.metadata`); their order and encodings are written
out here.  Pure functions of their arguments: safe in a worker thread.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mafka.broker.authorized_operations import NOT_PROVIDED
from mafka.errors import ErrorCode
from mafka.wire.apis.metadata import SPEC
from mafka.wire.primitives import uvarint_bytes
from mafka.wire.schema import Field, versions

from .metadata_cache import PartitionInfo

__all__ = [
    "VERSIONS",
    "TopicLayout",
    "encode_topic",
    "encode_error_topic",
    "with_operations",
    "encode_head",
    "encode_tail",
    "Broker",
]

#: The Metadata versions this module encodes (those Mafka answers).
VERSIONS = range(SPEC.decode[0], SPEC.decode[1] + 1)

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_TOPIC_OPS_NOT_PROVIDED = _I32.pack(NOT_PROVIDED)
# error_code, partition_index, leader_id[, leader_epoch]
_PARTITION_HEAD = struct.Struct(">hii").pack
_PARTITION_HEAD_WITH_EPOCH = struct.Struct(">hiii").pack
_NONE, _LEADER_NOT_AVAILABLE = int(ErrorCode.NONE), int(ErrorCode.LEADER_NOT_AVAILABLE)

#: (node_id, host, port, rack), as :meth:`MetadataCache.alive_brokers` gives them.
Broker = tuple[int, str, int, str | None]


def _fields(fields: Sequence[Field], name: str) -> tuple[Field, ...]:
    return next(f for f in fields if f.name == name).fields


def _present(fields: Sequence[Field], version: int) -> frozenset[str]:
    return frozenset(f.name for f in fields if version in versions(f.versions))


_RESPONSE = SPEC.response.fields
_TOPIC = _fields(_RESPONSE, "topics")
_PARTITION = _fields(_TOPIC, "partitions")


@dataclass(frozen=True, slots=True)
class TopicLayout:
    """How a topic entry looks on the wire at some version; versions with equal layouts share fragments."""

    flexible: bool
    topic_id: bool
    is_internal: bool
    leader_epoch: bool
    offline_replicas: bool
    authorized_operations: bool

    @classmethod
    def of(cls, version: int) -> TopicLayout:
        """The layout of *version* (KeyError outside :data:`VERSIONS`)."""
        layout = _LAYOUTS.get(version)
        if layout is None:
            raise KeyError(f"Metadata v{version} is not encoded here")
        return layout


def _layout(version: int) -> TopicLayout:
    topic, partition = _present(_TOPIC, version), _present(_PARTITION, version)
    return TopicLayout(
        flexible=SPEC.response.is_flexible(version),
        topic_id="topic_id" in topic,
        is_internal="is_internal" in topic,
        leader_epoch="leader_epoch" in partition,
        offline_replicas="offline_replicas" in partition,
        authorized_operations="topic_authorized_operations" in topic,
    )


_LAYOUTS = {v: _layout(v) for v in VERSIONS}


# ------------------------------------------------------------------ primitives


def _uvarint(value: int) -> bytes:
    return _SMALL_UVARINTS[value] if value < 0x80 else uvarint_bytes(value)


_SMALL_UVARINTS = [bytes((v,)) for v in range(0x80)]


def _count(n: int, flexible: bool) -> bytes:
    """An array's length prefix (compact: N+1 as an unsigned varint)."""
    return _uvarint(n + 1) if flexible else _I32.pack(n)


def _string(value: str | None, flexible: bool) -> bytes:
    if value is None:
        return b"\x00" if flexible else b"\xff\xff"
    data = value.encode("utf-8")
    if len(data) > 0x7FFF:
        raise ValueError(f"string of {len(data)} bytes exceeds 32767")
    return (_uvarint(len(data) + 1) if flexible else _I16.pack(len(data))) + data


def _int_array(values: tuple[int, ...], flexible: bool, memo: dict[tuple[int, ...], bytes]) -> bytes:
    """An int32 array, memoized: replica lists repeat across partitions."""
    data = memo.get(values)
    if data is None:
        data = memo[values] = _count(len(values), flexible) + struct.pack(f">{len(values)}i", *values)
    return data


# ------------------------------------------------------------------ topics


def encode_topic(
    layout: TopicLayout,
    name: str,
    topic_id: bytes,
    is_internal: bool,
    partitions: Mapping[int, PartitionInfo],
    alive: frozenset[int] | set[int],
    memo: dict[tuple[int, ...], bytes] | None = None,
) -> bytes:
    """One existing topic's entry, its authorized operations "not provided".

    Args:
        layout: the version's :class:`TopicLayout`.
        name, topic_id, is_internal: the topic's (a zero id for a topic without one).
        partitions: {index: info}, answered by ascending index.
        alive: the ids of the brokers alive on the request's listener: a
            partition whose leader is not among them is answered
            LEADER_NOT_AVAILABLE with leader -1, as Kafka answers a client
            that cannot reach the leader.
        memo: shared by calls encoding one batch at one layout (replica lists).
    """
    flexible = layout.flexible
    memo = {} if memo is None else memo
    epoch, offline, tags = layout.leader_epoch, layout.offline_replicas, flexible
    head = _PARTITION_HEAD_WITH_EPOCH if epoch else _PARTITION_HEAD
    body: list[bytes] = []
    append = body.append
    for index in sorted(partitions):
        info = partitions[index]
        leader = info.leader
        if leader >= 0 and leader in alive:
            error = _NONE
        else:
            error, leader = _LEADER_NOT_AVAILABLE, -1
        append(head(error, index, leader, info.leader_epoch) if epoch else head(error, index, leader))
        append(_int_array(info.replicas, flexible, memo))
        append(_int_array(info.isr, flexible, memo))
        if offline:
            append(_int_array(info.offline_replicas, flexible, memo))
        if tags:
            append(b"\x00")
    out = [_topic_head(layout, _NONE, name, topic_id, is_internal), _count(len(partitions), flexible), *body]
    if layout.authorized_operations:
        out.append(_TOPIC_OPS_NOT_PROVIDED)
    if flexible:
        out.append(b"\x00")
    return b"".join(out)


def _topic_head(layout: TopicLayout, error: int, name: str | None, topic_id: bytes, is_internal: bool) -> bytes:
    out = [_I16.pack(error), _string(name, layout.flexible)]
    if layout.topic_id:
        if len(topic_id) != 16:
            raise ValueError("uuid must be 16 bytes")
        out.append(topic_id)
    if layout.is_internal:
        out.append(b"\x01" if is_internal else b"\x00")
    return b"".join(out)


def encode_error_topic(
    layout: TopicLayout,
    error: int,
    name: str | None,
    *,
    topic_id: bytes | None = None,
    is_internal: bool = False,
    operations: int = NOT_PROVIDED,
) -> bytes:
    """An entry without partitions: an unknown, refused or just auto-created topic, or an unknown id."""
    out = [
        _topic_head(layout, error, name, bytes(16) if topic_id is None else topic_id, is_internal),
        _count(0, layout.flexible),
    ]
    if layout.authorized_operations:
        out.append(_I32.pack(operations))
    if layout.flexible:
        out.append(b"\x00")
    return b"".join(out)


def with_operations(layout: TopicLayout, fragment: bytes, operations: int) -> bytes:
    """*fragment* (from :func:`encode_topic`) with ``topic_authorized_operations`` set to *operations*."""
    if not layout.authorized_operations or operations == NOT_PROVIDED:
        return fragment
    end = len(fragment) - (1 if layout.flexible else 0)
    return b"".join((fragment[: end - 4], _I32.pack(operations), fragment[end:]))


# ------------------------------------------------------------------ the envelope


def _has(name: str, version: int) -> bool:
    return version in versions(next(f for f in _RESPONSE if f.name == name).versions)


@dataclass(frozen=True, slots=True)
class _Envelope:
    throttle: bool
    rack: bool
    cluster_id: bool
    controller_id: bool
    cluster_operations: bool
    flexible: bool


def _envelope(version: int) -> _Envelope:
    return _Envelope(
        throttle=_has("throttle_time_ms", version),
        rack="rack" in _present(_fields(_RESPONSE, "brokers"), version),
        cluster_id=_has("cluster_id", version),
        controller_id=_has("controller_id", version),
        cluster_operations=_has("cluster_authorized_operations", version),
        flexible=SPEC.response.is_flexible(version),
    )


_ENVELOPES = {v: _envelope(v) for v in VERSIONS}

#: Where ``throttle_time_ms`` sits in the head, for versions that have it (it comes first).
THROTTLE_OFFSET = 0


def has_throttle_time(version: int) -> bool:
    return _ENVELOPES[version].throttle


def encode_head(
    version: int, brokers: Sequence[Broker], cluster_id: str | None, controller_id: int, topic_count: int,
) -> bytes:
    """Everything before the topic entries: throttle time (0), brokers, cluster id, controller id, topic count."""
    e = _ENVELOPES[version]
    flexible = e.flexible
    out: list[bytes] = []
    if e.throttle:
        out.append(_I32.pack(0))
    out.append(_count(len(brokers), flexible))
    for node_id, host, port, rack in brokers:
        out.append(_I32.pack(node_id))
        out.append(_string(host, flexible))
        out.append(_I32.pack(port))
        if e.rack:
            out.append(_string(rack, flexible))
        if flexible:
            out.append(b"\x00")
    if e.cluster_id:
        out.append(_string(cluster_id, flexible))
    if e.controller_id:
        out.append(_I32.pack(controller_id))
    out.append(_count(topic_count, flexible))
    return b"".join(out)


def encode_tail(version: int, cluster_operations: int = NOT_PROVIDED) -> bytes:
    """Everything after the topic entries: the cluster's authorized operations (v8–10), tagged fields (v9+)."""
    e = _ENVELOPES[version]
    out = _I32.pack(cluster_operations) if e.cluster_operations else b""
    return out + b"\x00" if e.flexible else out
