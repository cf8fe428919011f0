"""Kafka 2.8's ZooKeeper data model: every znode's path and its exact bytes.

Pure code: no Twisted, no I/O.  Each znode Kafka's ZooKeeper mode uses has a
small class (or a frozen dataclass when the node carries a value) with its
path and an encoder/decoder that produces **byte for byte** what Kafka 2.8.2
writes (``core/src/main/scala/kafka/zk/ZkData.scala``,
``coordinator/transaction/ProducerIdManager.scala``), so a Mafka cluster's
ZooKeeper tree is indistinguishable from a Kafka one and Kafka's own tools can
read it.

Contract:

* Encoders return compact JSON exactly as Kafka's ``Json.encodeAsBytes``
  (Jackson) writes it: no spaces, UTF-8, control characters escaped as Jackson
  does (``\\n``-style short forms, otherwise ``\\u00XX`` in upper-case hex),
  ``/`` and non-ASCII left as they are.
* **Key order is Kafka's iteration order, not insertion order.**  Kafka builds
  its JSON from Scala and Java maps and Jackson writes them in the order they
  iterate, so this module reproduces those maps' orders (Scala 2.13 — the
  Kafka 2.8 default build — and a Java 9+ runtime):

  - a Scala immutable ``Map`` of at most 4 entries keeps insertion order
    (``/controller``, ``/cluster/id``, configs' outer object, producer-id
    blocks, notifications);
  - a Scala immutable ``Map`` of 5 or more entries is a CHAMP hash trie
    (the partition state: ``{"controller_epoch":…,"leader":…,"version":1,
    "leader_epoch":…,"isr":[…]}``);
  - a Scala ``mutable.HashMap`` iterates by bucket (``/brokers/ids/N``,
    ``/brokers/topics/T`` and its per-partition maps, ``/feature``);
  - ``java.util.Properties`` (topic and broker configs) is a
    ``ConcurrentHashMap`` on Java 9+; ``java.util.HashMap`` for feature maps.

  Arrays built from Kafka *sets* (ISR-change and preferred-election partition
  lists) keep the caller's order: Kafka's order there is an accident of hashing
  and no reader depends on it.
* Strings vs numbers as Kafka writes them: ``timestamp`` fields are strings,
  ``/cluster/id``'s ``version`` is the string ``"1"``, producer-id block bounds
  are strings, ``/controller_epoch`` is plain decimal text (not JSON).
* Decoders accept every variant Kafka itself reads (broker registration v1–v5,
  topic assignment v1–v3, controller v1/v2, config-change v1/v2, numbers where
  Kafka writes strings) and raise :class:`ValueError` with the znode named on
  anything else (bad UTF-8, not JSON, wrong types, missing fields).
* Value classes are frozen and hashable; their mappings are read-only views.

Example:
    >>> ControllerZNode(broker_id=2, timestamp=1650000000000).encode()
    b'{"version":1,"brokerid":2,"timestamp":"1650000000000"}'
    >>> LeaderIsrAndControllerEpoch(1, 0, (1, 2, 3), 1).encode()
    b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1,2,3]}'
"""

from __future__ import annotations

import base64
import json
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from mafka.endpoint import SECURITY_PROTOCOLS, Endpoint, parse_endpoint
from mafka.topics import TopicPartitionTuple

__all__ = [
    # paths
    "ADMIN_PATH",
    "BROKERS_PATH",
    "BROKER_IDS_PATH",
    "BROKER_SEQUENCE_ID_PATH",
    "CLUSTER_PATH",
    "CONFIG_PATH",
    "CONSUMERS_PATH",
    "PERSISTENT_ZK_PATHS",
    "TOPICS_PATH",
    "ConfigType",
    "broker_path",
    "partition_state_path",
    "topic_partition_path",
    "topic_partitions_path",
    "topic_path",
    # znodes
    "BrokerRegistration",
    "ClusterIdZNode",
    "ConfigChangeNotificationZNode",
    "ConfigEntityZNode",
    "ControllerEpochZNode",
    "ControllerZNode",
    "DeleteTopicsZNode",
    "FeatureZNode",
    "IsrChangeNotificationZNode",
    "LeaderIsrAndControllerEpoch",
    "LogDirEventNotificationZNode",
    "PreferredReplicaElectionZNode",
    "ProducerIdBlock",
    "ReassignPartitionsZNode",
    "TopicAssignment",
    # helpers
    "encode_json",
    "new_cluster_id",
    "new_topic_id",
    "uuid_bytes",
    "uuid_string",
    "sequence_number",
    "validate_base64_uuid",
]


# --------------------------------------------------------------------------- paths

CONSUMERS_PATH = "/consumers"
BROKERS_PATH = "/brokers"
BROKER_IDS_PATH = "/brokers/ids"
TOPICS_PATH = "/brokers/topics"
BROKER_SEQUENCE_ID_PATH = "/brokers/seqid"
CONFIG_PATH = "/config"
ADMIN_PATH = "/admin"
CLUSTER_PATH = "/cluster"


class ConfigType:
    """Kafka's config entity types (``ConfigType``), the children of ``/config``."""

    TOPIC = "topics"
    CLIENT = "clients"
    USER = "users"
    BROKER = "brokers"
    IP = "ips"
    ALL = (TOPIC, CLIENT, USER, BROKER, IP)
    #: The entity name of the cluster-wide default (``/config/brokers/<default>``).
    DEFAULT_ENTITY = "<default>"


def broker_path(broker_id: int) -> str:
    """``/brokers/ids/<id>`` (ephemeral broker registration)."""
    return f"{BROKER_IDS_PATH}/{int(broker_id)}"


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


# --------------------------------------------------------------------------- JSON writer

_SHORT_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f]')


def _escape_char(match: re.Match[str]) -> str:
    ch = match.group(0)
    return _SHORT_ESCAPES.get(ch) or f"\\u{ord(ch):04X}"


def _write_json(value: Any, out: list[str]) -> None:
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(str(int(value)))
    elif isinstance(value, str):
        out.append('"' + _NEEDS_ESCAPE.sub(_escape_char, value) + '"')
    elif isinstance(value, Mapping):
        out.append("{")
        for i, (key, item) in enumerate(value.items()):
            if i:
                out.append(",")
            if not isinstance(key, str):
                raise TypeError(f"JSON object keys must be str, not {type(key).__name__}")
            _write_json(key, out)
            out.append(":")
            _write_json(item, out)
        out.append("}")
    elif isinstance(value, list | tuple):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _write_json(item, out)
        out.append("]")
    else:
        raise TypeError(f"cannot encode {type(value).__name__} as Kafka JSON")


def encode_json(value: Any) -> bytes:
    """Compact JSON exactly as Jackson's default ``ObjectMapper`` writes it, in UTF-8.

    Mappings are written in their iteration order (build them with the key
    order Kafka's maps have).  Supports None, bool, int, str, mappings with str
    keys, lists and tuples.

    Raises:
        TypeError: For any other value (floats included).
        UnicodeEncodeError: For strings with lone surrogates.
    """
    out: list[str] = []
    _write_json(value, out)
    return "".join(out).encode("utf-8")


# --------------------------------------------------------------------------- Kafka's map orders


def _i32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - 0x1_0000_0000 if x & 0x8000_0000 else x


def _java_hash(s: str) -> int:
    """``java.lang.String.hashCode`` (over UTF-16 code units), as a signed int."""
    h = 0
    raw = s.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(raw), 2):
        h = (31 * h + (raw[i] << 8 | raw[i + 1])) & 0xFFFFFFFF
    return _i32(h)


def _spread16(h: int) -> int:
    """``h ^ (h >>> 16)``: java.util.HashMap's and Scala mutable.HashMap's hash improvement."""
    return _i32(h ^ ((h & 0xFFFFFFFF) >> 16))


def _scala_improve(h: int) -> int:
    """``scala.collection.Hashing.improve`` (immutable.HashMap's key hash)."""
    h = _i32(h + ~_i32(h << 9))
    h = _i32(h ^ ((h & 0xFFFFFFFF) >> 14))
    h = _i32(h + _i32(h << 4))
    return _i32(h ^ ((h & 0xFFFFFFFF) >> 10))


def _dedupe(pairs: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    # A later put of an existing key replaces the value in place (all the maps below).
    out: dict[str, Any] = {}
    for key, value in pairs:
        out[key] = value
    return out


def _scala_immutable_map(pairs: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """The iteration order of Scala 2.13's ``immutable.Map(pairs…)`` / ``Seq.toMap``.

    Up to 4 entries (``Map1``–``Map4``): insertion order.  From 5 on: a CHAMP
    trie, iterated depth-first, each node's own entries (by 5-bit hash chunk,
    lowest bits first) before its sub-nodes.
    """
    entries = _dedupe(pairs)
    if len(entries) <= 4:
        return entries
    hashed = [(key, _scala_improve(_java_hash(key)) & 0xFFFFFFFF) for key in entries]

    def walk(items: list[tuple[str, int]], shift: int) -> list[str]:
        if shift >= 32:  # full hash collision: insertion order
            return [key for key, _ in items]
        groups: dict[int, list[tuple[str, int]]] = {}
        for item in items:
            groups.setdefault((item[1] >> shift) & 31, []).append(item)
        order = sorted(groups)
        keys = [groups[m][0][0] for m in order if len(groups[m]) == 1]
        for m in order:
            if len(groups[m]) > 1:
                keys += walk(groups[m], shift + 5)
        return keys

    return {key: entries[key] for key in walk(hashed, 0)}


def _scala_table_size_for(capacity: int) -> int:
    return min(1 << ((max(capacity - 1, 4)).bit_length() - 1) << 1, 1 << 30)


def _scala_mutable_map(
    pairs: Iterable[tuple[str, Any]], initial_entries: int = 0
) -> dict[str, Any]:
    """The iteration order of Scala 2.13's ``mutable.HashMap``.

    Args:
        pairs: Entries in insertion order.
        initial_entries: How many entries the map was *constructed* with
            (``mutable.Map(a, b, c)`` sizes its table for them); 0 for
            ``mutable.Map()``.
    """
    entries = _dedupe(pairs)
    if initial_entries > 0:
        table = _scala_table_size_for(int((initial_entries + 1) / 0.75))
    else:
        table = _scala_table_size_for(16)
    size = 0
    for _ in entries:
        if size + 1 >= int(table * 0.75):  # put0 grows before inserting
            table *= 2
        size += 1
    keyed = []
    for index, key in enumerate(entries):
        h = _spread16(_java_hash(key))
        keyed.append(((h & (table - 1)), h, index, key))
    keyed.sort()
    return {key: entries[key] for *_, key in keyed}


def _java_hash_map(pairs: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """The iteration order of ``java.util.HashMap`` (default capacity) after these puts.

    Buckets in table order, insertion order within a bucket (resizes keep it).
    Tree bins (8+ keys in one bucket of a 64+ table) are not modelled.
    """
    entries = _dedupe(pairs)
    table, threshold = 16, 12
    for size in range(1, len(entries) + 1):
        if size > threshold:
            table, threshold = table * 2, threshold * 2
    keyed = sorted(
        (
            (_spread16(_java_hash(key)) & (table - 1), index, key)
            for index, key in enumerate(entries)
        ),
    )
    return {key: entries[key] for *_, key in keyed}


def _java_properties(pairs: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """The iteration order of ``java.util.Properties`` on Java 9+ after these ``put``s.

    Java 9+ keeps a Properties' entries in a ``ConcurrentHashMap(8)`` (a
    16-slot table resized at 75 %).  Bins are appended to; a resize splits
    each bin keeping its tail run and prepending the nodes before it; a bin of
    8+ nodes in a table under 64 slots presizes the table instead of turning
    into a tree, and tree bins take new keys at their head.
    """
    entries = _dedupe(pairs)
    hashes = {key: _spread16(_java_hash(key)) & 0x7FFFFFFF for key in entries}
    n, size_ctl = 16, 12
    bins: list[list[str]] = [[] for _ in range(n)]
    trees: set[int] = set()
    count = 0

    def transfer() -> None:
        nonlocal n, size_ctl, bins, trees
        new_bins: list[list[str]] = [[] for _ in range(2 * n)]
        new_trees: set[int] = set()
        for i, chain in enumerate(bins):
            if not chain:
                continue
            if i in trees:
                lo = [k for k in chain if not hashes[k] & n]
                hi = [k for k in chain if hashes[k] & n]
                new_bins[i], new_bins[i + n] = lo, hi
                if len(lo) > 6:
                    new_trees.add(i)
                if len(hi) > 6:
                    new_trees.add(i + n)
                continue
            run_bit, last_run = hashes[chain[0]] & n, 0
            for j in range(1, len(chain)):
                bit = hashes[chain[j]] & n
                if bit != run_bit:
                    run_bit, last_run = bit, j
            lo_list: list[str] = [] if run_bit else chain[last_run:]
            hi_list: list[str] = chain[last_run:] if run_bit else []
            for key in chain[:last_run]:
                if hashes[key] & n:
                    hi_list.insert(0, key)
                else:
                    lo_list.insert(0, key)
            new_bins[i], new_bins[i + n] = lo_list, hi_list
        size_ctl = (n << 1) - (n >> 1)
        n, bins, trees = 2 * n, new_bins, new_trees

    for key in entries:
        i = hashes[key] & (n - 1)
        chain = bins[i]
        bin_count = len(chain)
        if i in trees:
            chain.insert(0, key)
        else:
            chain.append(key)
            if bin_count >= 8:
                if n < 64:  # treeifyBin → tryPresize(n << 1)
                    want = n << 1
                    c = 1 << (want + (want >> 1) + 1 - 1).bit_length()
                    while not (c <= size_ctl):
                        transfer()
                else:
                    trees.add(i)
        count += 1
        while count >= size_ctl:
            transfer()
    return {key: entries[key] for chain in bins for key in chain}


# --------------------------------------------------------------------------- decoding helpers

_MISSING: Any = object()


def _load(data: bytes, what: str) -> Any:
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"{what}: znode data must be bytes, not {type(data).__name__}")
    try:
        return json.loads(bytes(data).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"{what}: not valid JSON: {bytes(data)[:200]!r}") from exc


def _load_object(data: bytes, what: str) -> dict[str, Any]:
    obj = _load(data, what)
    if not isinstance(obj, dict):
        raise ValueError(f"{what}: expected a JSON object, got {type(obj).__name__}")
    return obj


def _as_int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{what}: expected an integer, got {value!r}")
    return value


def _get_int(obj: Mapping[str, Any], key: str, what: str, default: Any = _MISSING) -> int:
    value = obj.get(key, _MISSING)
    if value is _MISSING:
        if default is _MISSING:
            raise ValueError(f"{what}: missing {key!r}")
        return default
    return _as_int(value, f"{what} {key!r}")


def _as_long_string(value: Any, what: str) -> int:
    """A long Kafka writes as a decimal string (numbers tolerated)."""
    if isinstance(value, str):
        if re.fullmatch(r"-?[0-9]+", value):
            return int(value)
        raise ValueError(f"{what}: expected a decimal string, got {value!r}")
    return _as_int(value, what)


def _get_str(obj: Mapping[str, Any], key: str, what: str, default: Any = _MISSING) -> str:
    value = obj.get(key, _MISSING)
    if value is _MISSING:
        if default is _MISSING:
            raise ValueError(f"{what}: missing {key!r}")
        return default
    if not isinstance(value, str):
        raise ValueError(f"{what} {key!r}: expected a string, got {value!r}")
    return value


def _int_list(value: Any, what: str) -> tuple[int, ...]:
    if not isinstance(value, list):
        raise ValueError(f"{what}: expected a list of integers, got {value!r}")
    return tuple(_as_int(v, what) for v in value)


def _partition_key(key: str, what: str) -> int:
    if not re.fullmatch(r"-?[0-9]+", key):
        raise ValueError(f"{what}: partition {key!r} is not an integer")
    return int(key)


def _topic_partitions(obj: Mapping[str, Any], what: str) -> tuple[TopicPartitionTuple, ...]:
    entries = obj.get("partitions", _MISSING)
    if entries is _MISSING:
        raise ValueError(f"{what}: missing 'partitions'")
    if not isinstance(entries, list):
        raise ValueError(f"{what}: 'partitions' must be a list")
    out: dict[TopicPartitionTuple, None] = {}
    for entry in entries:
        if not isinstance(entry, dict):
            raise ValueError(f"{what}: partition entry {entry!r} is not an object")
        out[(_get_str(entry, "topic", what), _get_int(entry, "partition", what))] = None
    return tuple(out)


def _encode_partitions(version: int, partitions: Iterable[TopicPartitionTuple]) -> bytes:
    items = [
        _scala_immutable_map([("topic", str(t)), ("partition", int(p))]) for t, p in partitions
    ]
    return encode_json(_scala_immutable_map([("version", version), ("partitions", items)]))


def _freeze(mapping: Mapping[Any, Any]) -> MappingProxyType[Any, Any]:
    return MappingProxyType(dict(mapping))


def sequence_number(child_name: str, prefix: str) -> str:
    """The sequence suffix of a sequential znode's name (``isr_change_0000000042`` → ``0000000042``)."""
    index = child_name.rfind(prefix)
    if index < 0:
        raise ValueError(f"{child_name!r} is not a {prefix!r} sequential node")
    return child_name[index + len(prefix) :]


# --------------------------------------------------------------------------- ids


def validate_base64_uuid(value: str, what: str = "uuid") -> str:
    """Checks Kafka's ``Uuid.toString`` form (22 url-safe base64 chars, no padding); returns it.

    Raises:
        ValueError: If *value* does not decode to exactly 16 bytes.
    """
    if not isinstance(value, str) or not re.fullmatch(r"[A-Za-z0-9_-]{22}", value):
        raise ValueError(f"{what}: {value!r} is not a 22-character url-safe base64 UUID")
    raw = base64.urlsafe_b64decode(value + "==")
    if len(raw) != 16 or base64.urlsafe_b64encode(raw).rstrip(b"=").decode() != value:
        raise ValueError(f"{what}: {value!r} is not a canonical base64 UUID")
    return value


def _uuid_to_base64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def uuid_bytes(value: str | None) -> bytes:
    """The 16 wire bytes of a base64 UUID (``Uuid.fromString``); None is Kafka's ZERO_UUID."""
    if value is None:
        return bytes(16)
    return base64.urlsafe_b64decode(value + "==")


def uuid_string(raw: bytes) -> str | None:
    """The base64 form of 16 wire bytes (``Uuid.toString``); the zero UUID is None."""
    if raw == bytes(16):
        return None
    return _uuid_to_base64(raw)


def new_cluster_id() -> str:
    """A fresh cluster id as Kafka makes one (``CoreUtils.generateUuidAsBase64``)."""
    return _uuid_to_base64(uuid.uuid4().bytes)


def new_topic_id() -> str:
    """A fresh topic id (``Uuid.randomUuid``: never the zero or the sentinel 0/1 UUID)."""
    while True:
        raw = uuid.uuid4().bytes
        if raw not in (bytes(16), bytes(15) + b"\x01"):
            return _uuid_to_base64(raw)


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

def _parse_endpoint(
    text: Any, protocol_map: Mapping[str, str] | None, what: str
) -> Endpoint:
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
                    raise ValueError(f"endpoint {value.connection_string} listed as listener {name}")
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
        """``{"controller_epoch":C,"leader":L,"version":1,"leader_epoch":E,"isr":[…]}`` (a 5-entry CHAMP map)."""
        return encode_json(
            _scala_immutable_map(
                [
                    ("version", 1),
                    ("leader", int(self.leader)),
                    ("leader_epoch", int(self.leader_epoch)),
                    ("controller_epoch", int(self.controller_epoch)),
                    ("isr", list(self.isr)),
                ]
            )
        )

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


# --------------------------------------------------------------------------- /admin


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


# --------------------------------------------------------------------------- /config


class ConfigEntityZNode:
    """``/config/<type>/<name>`` (persistent): dynamic config overrides of one entity."""

    @staticmethod
    def path(entity_type: str, entity_name: str | int) -> str:
        """``/config/<entity_type>/<entity_name>``."""
        return f"{CONFIG_PATH}/{entity_type}/{entity_name}"

    @staticmethod
    def topic_path(topic: str) -> str:
        """``/config/topics/<topic>``."""
        return ConfigEntityZNode.path(ConfigType.TOPIC, topic)

    @staticmethod
    def broker_path(broker_id: int | None) -> str:
        """``/config/brokers/<id>``, or ``/config/brokers/<default>`` for None."""
        name = ConfigType.DEFAULT_ENTITY if broker_id is None else str(int(broker_id))
        return ConfigEntityZNode.path(ConfigType.BROKER, name)

    @staticmethod
    def encode(config: Mapping[str, str]) -> bytes:
        """``{"version":1,"config":{…}}``, values as strings, keys in ``java.util.Properties`` order."""
        return encode_json(
            _scala_immutable_map(
                [
                    ("version", 1),
                    ("config", _java_properties((str(k), str(v)) for k, v in config.items())),
                ]
            )
        )

    @staticmethod
    def decode(data: bytes) -> dict[str, str]:
        """The config map; empty data or a missing ``config`` is ``{}`` (as Kafka).

        Numbers and booleans are read as their Java string forms; anything else is a ValueError.
        """
        if not bytes(data):
            return {}
        obj = _load_object(data, "config")
        config = obj.get("config")
        if config is None:
            return {}
        if not isinstance(config, dict):
            raise ValueError("config: 'config' must be an object")
        out: dict[str, str] = {}
        for key, value in config.items():
            if isinstance(value, bool):
                out[key] = "true" if value else "false"
            elif isinstance(value, int | str):
                out[key] = str(value)
            else:
                raise ValueError(f"config: value of {key!r} must be a string, got {value!r}")
        return out


class ConfigChangeNotificationZNode:
    """``/config/changes/config_change_<seq>`` (persistent sequential): "entity X's config changed"."""

    PATH = "/config/changes"
    PREFIX = "config_change_"
    CREATE_PATH = f"{PATH}/{PREFIX}"

    @staticmethod
    def entity_path(entity_type: str, entity_name: str | int) -> str:
        """The sanitized entity path announced, e.g. ``topics/T`` or ``brokers/<default>``."""
        return f"{entity_type}/{entity_name}"

    @staticmethod
    def encode(entity_path: str) -> bytes:
        """``{"version":2,"entity_path":"topics/T"}``."""
        return encode_json(
            _scala_immutable_map([("version", 2), ("entity_path", str(entity_path))])
        )

    @staticmethod
    def decode(data: bytes) -> str:
        """The entity path; v1 (``entity_type`` + ``entity_name``) is read as ``type/name``.

        Raises:
            ValueError: On garbage or an unknown version.
        """
        what = ConfigChangeNotificationZNode.PATH
        obj = _load_object(data, what)
        version = _get_int(obj, "version", what)
        if version == 2:
            return _get_str(obj, "entity_path", what)
        if version == 1:
            return f"{_get_str(obj, 'entity_type', what)}/{_get_str(obj, 'entity_name', what)}"
        raise ValueError(f"{what}: unsupported config change notification version {version}")


# --------------------------------------------------------------------------- notifications


class IsrChangeNotificationZNode:
    """``/isr_change_notification/isr_change_<seq>`` (persistent sequential): partitions whose ISR changed."""

    PATH = "/isr_change_notification"
    PREFIX = "isr_change_"
    CREATE_PATH = f"{PATH}/{PREFIX}"
    VERSION = 1

    @staticmethod
    def path(seq: str) -> str:
        """``/isr_change_notification/isr_change_<seq>``."""
        return f"{IsrChangeNotificationZNode.CREATE_PATH}{seq}"

    @staticmethod
    def encode(partitions: Iterable[TopicPartitionTuple]) -> bytes:
        """``{"version":1,"partitions":[{"topic":t,"partition":p},…]}`` (caller's order)."""
        return _encode_partitions(IsrChangeNotificationZNode.VERSION, partitions)

    @staticmethod
    def decode(data: bytes) -> tuple[TopicPartitionTuple, ...]:
        """The partitions (duplicates dropped). Raises ValueError on garbage."""
        return _topic_partitions(
            _load_object(data, IsrChangeNotificationZNode.PATH), IsrChangeNotificationZNode.PATH
        )


class LogDirEventNotificationZNode:
    """``/log_dir_event_notification/log_dir_event_<seq>`` (persistent sequential): a broker's log dir failed."""

    PATH = "/log_dir_event_notification"
    PREFIX = "log_dir_event_"
    CREATE_PATH = f"{PATH}/{PREFIX}"
    LOG_DIR_FAILURE = 1

    @staticmethod
    def path(seq: str) -> str:
        """``/log_dir_event_notification/log_dir_event_<seq>``."""
        return f"{LogDirEventNotificationZNode.CREATE_PATH}{seq}"

    @staticmethod
    def encode(broker_id: int) -> bytes:
        """``{"version":1,"broker":B,"event":1}``."""
        return encode_json(
            _scala_immutable_map(
                [
                    ("version", 1),
                    ("broker", int(broker_id)),
                    ("event", LogDirEventNotificationZNode.LOG_DIR_FAILURE),
                ]
            )
        )

    @staticmethod
    def decode(data: bytes) -> int:
        """The broker id. Raises ValueError on garbage."""
        return _get_int(
            _load_object(data, LogDirEventNotificationZNode.PATH),
            "broker",
            LogDirEventNotificationZNode.PATH,
        )


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


#: Persistent paths every broker makes sure exist at startup (``ZkData.PersistentZkPaths``), in Kafka's order.
PERSISTENT_ZK_PATHS: tuple[str, ...] = (
    CONSUMERS_PATH,
    BROKER_IDS_PATH,
    TOPICS_PATH,
    ConfigChangeNotificationZNode.PATH,
    DeleteTopicsZNode.PATH,
    BROKER_SEQUENCE_ID_PATH,
    IsrChangeNotificationZNode.PATH,
    ProducerIdBlock.PATH,
    LogDirEventNotificationZNode.PATH,
) + tuple(f"{CONFIG_PATH}/{t}" for t in ConfigType.ALL)
