"""Client configuration under confluent-kafka's (librdkafka's) names, types, ranges and defaults.

:func:`parse_config` turns the ``conf`` dict a confluent-kafka user passes to
``Producer``/``Consumer``/``AdminClient`` into a :class:`ClientConfig`, so that
switching between confluent-kafka and ``mafka.client`` is a change of import.
Sources: librdkafka ``CONFIGURATION.md`` and ``src/rdkafka_conf.c`` (property
table, value parsing, ``rd_kafka_conf_finalize``), confluent-kafka-python
``confluent_kafka.c`` (the Python-only keys), Apache Kafka ``ProducerConfig``
(idempotence defaults).

Everything comes from one table, :data:`PROPERTIES`: one :class:`Prop` row per
canonical key with its aliases, kind, default, roles and limits.  Names:

* The canonical key is the name most users write (``linger.ms``, ``acks``,
  ``retries``, ``compression.type`` …); librdkafka's other name is an alias
  (``queue.buffering.max.ms``, ``request.required.acks``,
  ``message.send.max.retries``, ``compression.codec``, ``max.in.flight`` …),
  and so is the Java client's name where it differs (``fetch.max.wait.ms``,
  ``max.request.size``, ``send.buffer.bytes``, ``receive.buffer.bytes``, and
  ``buffer.memory`` in bytes for ``queue.buffering.max.kbytes`` in KiB).
* kafka-python's spellings work too: a key that is not known as written is
  looked up again with ``_`` → ``.`` (``bootstrap_servers``, ``linger_ms``,
  ``security_protocol``, ``sasl_mechanism``); its security names that differ
  more are aliases (``ssl.cafile`` for ``ssl_cafile`` …, see Security below).
  Keys that really contain ``_`` (``log_level``, ``error_cb``) match first.
* ``default.topic.config`` (a dict) is merged into the top level first, its
  values winning, as confluent-kafka does.

Values (librdkafka's parsing; confluent-kafka passes ``str(value)`` to it):

* bool: ``True``/``False``, ``0``/``1``, or the strings ``true``/``false``/
  ``t``/``f``/``1``/``0`` in any case.
* int: an ``int``, an integral ``float``, or a decimal string; some keys also
  take names (``acks="all"`` → ``-1``).  float: a number or numeric string.
* enum: one of the listed words, any case; a few are stored under one spelling
  (``auto.offset.reset``: ``smallest``/``beginning`` → ``earliest``,
  ``largest``/``end`` → ``latest``).
* list: a comma-separated string or a list of strings, stored as a tuple.
  ``bootstrap.servers`` also takes a list but is stored as one
  ``"host:port,host:port"`` string.
* callable: ``error_cb``, ``stats_cb``, ``throttle_cb``, ``oauth_cb``,
  ``on_delivery`` (producer), ``on_commit`` (consumer); ``logger`` is any
  object with a ``log()`` method (a :class:`logging.Logger`).
* ``None`` for any key means "not set": the default applies.

Errors are :class:`ConfigError` (a :class:`ValueError`; the one
:class:`mafka.errors.ConfigError` the broker's configuration raises too,
Kafka's ``ConfigException``) and name the key as the user spelled it: an unknown key (``No such configuration property:
"foo"``, confluent's text), a value of the wrong type, out of range or not
among the choices (``acks=2``: only -1, 0, 1 and ``"all"``, as in Java), a
missing ``bootstrap.servers``, an ``ssl.*``/``sasl.*`` key the client does not
implement (``ssl.keystore.location``, ``sasl.kerberos.*``,
``sasl.oauthbearer.*`` …: "not supported", since ignoring one could connect
in a way the user did not ask for), and the cross-key rules below; a
password's value is never shown.  A known key of another role (``group.id``
given to a producer) is validated and kept, and a warning in the librdkafka wording is
added to :attr:`ClientConfig.warnings` — librdkafka accepts such keys so
that one dict can configure both a producer and a consumer.  Exceptions are
the Python-only callbacks ``on_delivery`` and ``on_commit``, which
confluent-kafka rejects outside their role as unknown.

Security (librdkafka's keys and meanings; :mod:`mafka.client.security` builds
the TLS context and SASL settings from them):

* ``security.protocol``: ``plaintext`` (default), ``ssl``, ``sasl_plaintext``,
  ``sasl_ssl``, any case.
* ``sasl.mechanisms`` (alias ``sasl.mechanism``, Java's and kafka-python's
  name): ``PLAIN``, ``SCRAM-SHA-256``, ``SCRAM-SHA-512`` (any case, stored in
  upper case).  It has no default: librdkafka's and Java's, GSSAPI, is not
  spoken by the client, so a SASL protocol needs the key set; ``GSSAPI`` and
  ``OAUTHBEARER`` given explicitly are refused with that reason.
  ``sasl.username`` and ``sasl.password`` (kafka-python's
  ``sasl_plain_username`` / ``sasl_plain_password``) must both be set with a
  SASL protocol.  Passwords are kept as given (not trimmed) and hidden by
  ``repr()``.
* ``ssl.ca.location`` (``ssl_cafile``; ``probe`` = the system's CA store, as
  when unset), ``ssl.certificate.location`` (``ssl_certfile``),
  ``ssl.key.location`` (``ssl_keyfile``; without it the key is read from the
  certificate file), ``ssl.key.password`` (``ssl_password``): PEM files, which
  must exist when the protocol uses TLS; a key needs its certificate.
* ``ssl.endpoint.identification.algorithm``: ``https`` (default, librdkafka
  2.0's) verifies that the broker's certificate names the host the client
  dialled; ``none`` does not.  ``enable.ssl.certificate.verification=false``
  accepts any certificate (and so no host name check either).
* TLS keys with a non-TLS protocol and SASL keys with a non-SASL protocol are
  kept but do nothing; each adds a warning to :attr:`ClientConfig.warnings`.

Cross-key rules (producer):

* ``enable.idempotence`` defaults to **true** (Java 3.x's default; librdkafka's
  is false).  With idempotence on, ``acks`` must be ``all``, ``retries`` > 0
  and ``max.in.flight.requests.per.connection`` <= 5.  When the user set
  ``enable.idempotence=true`` a conflicting value is a ConfigError (librdkafka
  and Java agree); when idempotence is only the default, a conflicting value
  turns it off instead (Java's ``postProcessAndValidateIdempotenceConfigs``),
  so a librdkafka user's ``acks=1`` or ``max.in.flight=100`` keeps working.
  With idempotence on and ``max.in.flight…`` not set, it becomes
  ``min(value, 5)`` (librdkafka).
* ``transactional.id`` requires idempotence: a ConfigError when it ends up off.
  ``delivery.timeout.ms`` then defaults to ``transaction.timeout.ms`` and may
  not exceed it (librdkafka).
* ``partitioner`` defaults to ``murmur2_random``, not librdkafka's
  ``consistent_random``: keyed records then land on the same partition as
  with the Java client (and kafka-python, Kafka Streams, Kafka Connect), so
  Mafka's producers mix with JVM producers on one topic; unkeyed records use
  the sticky partitioner, as both librdkafka and Java do.

Cross-key rules (consumer):

* ``group.protocol`` is ``classic`` (JoinGroup/SyncGroup, the default, as in Java and
  librdkafka) or ``consumer`` (KIP-848's ConsumerGroupHeartbeat).  With ``consumer``,
  ``partition.assignment.strategy``, ``heartbeat.interval.ms`` and ``session.timeout.ms`` are
  the coordinator's to decide: setting one is a ConfigError in Java's words
  (``session.timeout.ms cannot be set when group.protocol=CONSUMER``; librdkafka refuses them
  too).  ``group.remote.assignor`` names the coordinator's assignor (``uniform``, ``range``;
  unset: the coordinator's default); with ``classic`` it is ignored, as librdkafka does (Java
  refuses it).

Derived defaults (librdkafka), used only when the key is not set:
``metadata.max.age.ms`` = 3 × ``topic.metadata.refresh.interval.ms`` (when
that is > 0); ``sticky.partitioning.linger.ms`` = min(900000, 2 ×
``linger.ms``); for consumers ``fetch.max.bytes`` = max(min(``fetch.max.bytes``,
``queued.max.messages.kbytes`` × 1024), ``message.max.bytes``), and a set
``fetch.max.bytes`` below ``message.max.bytes`` is a ConfigError.
``allow.auto.create.topics`` defaults to true for producers and false
otherwise (librdkafka).

Accepted and stored but with no effect in Mafka's client (librdkafka keys
confluent-kafka users commonly set; :data:`INERT_KEYS`):
``socket.keepalive.enable``, ``socket.nagle.disable``,
``socket.send.buffer.bytes``, ``socket.receive.buffer.bytes``,
``socket.max.fails``, ``broker.address.family``, ``broker.address.ttl``,
``connections.max.idle.ms``, ``enable.metrics.push``,
``topic.metadata.propagation.max.ms``, ``topic.metadata.refresh.sparse``, ``api.version.request.timeout.ms``,
``log.connection.close``, ``queue.buffering.backpressure.threshold``,
``sticky.partitioning.linger.ms``, ``compression.level``,
``fetch.error.backoff.ms``, ``fetch.queue.backoff.ms``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from mafka.errors import ConfigError

__all__ = [
    "INERT_KEYS",
    "PROPERTIES",
    "ROLES",
    "SASL_MECHANISMS",
    "SASL_PROTOCOLS",
    "TLS_PROTOCOLS",
    "Alias",
    "ClientConfig",
    "ConfigError",
    "Prop",
    "parse_config",
]

ROLES = ("producer", "consumer", "admin")

_ALL = frozenset(ROLES)
_P = frozenset({"producer"})
_C = frozenset({"consumer"})
_I32 = 2147483647


class Alias(NamedTuple):
    """Another name of a property; ``scale`` > 1 when its unit is that many canonical units'
    worth smaller (``buffer.memory`` in bytes = 1024 × ``queue.buffering.max.kbytes``)."""

    name: str
    scale: int = 1


class PerRole(dict[str, Any]):
    """A default that differs by role: ``PerRole(producer=True, default=False)``."""

    def for_role(self, role: str) -> Any:
        return self.get(role, self.get("default"))


@dataclass(frozen=True, slots=True)
class Prop:
    """One configuration property.

    ``kind`` names its parser (see :data:`_PARSERS`).  ``choices``: for ``enum`` the
    accepted words (lower case) → the stored value; for ``int`` symbolic names
    (``{"all": -1}``); for ``list`` the allowed items.  ``lo``/``hi`` bound ``int``
    and ``float`` values.  ``check`` is an extra rule on the parsed value returning
    why it is refused, or ``None``.  ``inert``: accepted and stored, no effect.
    ``strict_roles``: outside its roles the key is unknown (confluent-kafka's
    Python-only keys) instead of a warning.  ``sensitive``: a secret, hidden by
    :meth:`ClientConfig.__repr__`.
    """

    name: str
    kind: str
    default: Any
    roles: frozenset[str]
    aliases: tuple[Alias, ...] = ()
    lo: float | None = None
    hi: float | None = None
    choices: Mapping[str, Any] | None = None
    check: Callable[[Any], str | None] | None = None
    inert: bool = False
    strict_roles: bool = False
    sensitive: bool = False

    def default_for(self, role: str) -> Any:
        return self.default.for_role(role) if isinstance(self.default, PerRole) else self.default


def _a(*names: str | tuple[str, int]) -> tuple[Alias, ...]:
    return tuple(Alias(n) if isinstance(n, str) else Alias(*n) for n in names)


def _words(*words: str) -> dict[str, str]:
    return {w: w for w in words}


#: The SASL mechanisms Mafka's client speaks (:data:`mafka.security.sasl_client.CLIENT_MECHANISMS`).
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
# Known to librdkafka, refused with a clear reason rather than as an unknown word.
_UNSUPPORTED_MECHANISMS = ("GSSAPI", "OAUTHBEARER")


def _supported_mechanism(value: str) -> str | None:
    if value in _UNSUPPORTED_MECHANISMS:
        return f"{value} is not supported by Mafka's client; use one of: {', '.join(SASL_MECHANISMS)}"
    return None


_COOPERATIVE = frozenset({"cooperative-sticky"})


def _assignors(value: tuple[str, ...]) -> str | None:
    if not value:
        return "at least one assignment strategy is required"
    cooperative = {s in _COOPERATIVE for s in value}
    if len(cooperative) > 1:
        # librdkafka refuses the mix: the group would have to rebalance both ways.
        return "cooperative and eager (non-cooperative) strategies must not be mixed"
    return None


def _not_empty(value: str) -> str | None:
    return None if value else "must not be empty"


#: Every property the client knows.  Ranges and defaults are librdkafka's unless the
#: module docstring says otherwise.
PROPERTIES: tuple[Prop, ...] = (
    # -- every role ------------------------------------------------------------------------
    Prop("bootstrap.servers", "servers", None, _ALL, _a("metadata.broker.list")),
    Prop("client.id", "str", "mafka-python", _ALL),
    Prop("socket.timeout.ms", "int", 60000, _ALL, lo=10, hi=300000),
    Prop("socket.connection.setup.timeout.ms", "int", 30000, _ALL, lo=1000, hi=_I32),
    Prop("metadata.max.age.ms", "int", 900000, _ALL, lo=1, hi=86400000),
    Prop("topic.metadata.refresh.interval.ms", "int", 300000, _ALL, lo=-1, hi=3600000),
    Prop("reconnect.backoff.ms", "int", 100, _ALL, lo=0, hi=3600000),
    Prop("reconnect.backoff.max.ms", "int", 10000, _ALL, lo=0, hi=3600000),
    Prop("retry.backoff.ms", "int", 100, _ALL, lo=1, hi=300000),
    Prop("retry.backoff.max.ms", "int", 1000, _ALL, lo=1, hi=300000),
    # librdkafka's is a producer (topic) property; Java's applies to every client.
    Prop("request.timeout.ms", "int", 30000, _ALL, lo=1, hi=900000),
    Prop("api.version.request", "bool", True, _ALL),
    Prop("security.protocol", "enum", "plaintext", _ALL,
         choices=_words("plaintext", "ssl", "sasl_plaintext", "sasl_ssl")),
    # librdkafka's name is sasl.mechanisms, Java's (and kafka-python's) sasl.mechanism.
    # No default: librdkafka's and Java's, GSSAPI, is not spoken (a SASL protocol needs the key).
    Prop("sasl.mechanisms", "enum", None, _ALL, _a("sasl.mechanism"),
         choices={m.lower(): m for m in (*SASL_MECHANISMS, *_UNSUPPORTED_MECHANISMS)},
         check=_supported_mechanism),
    Prop("sasl.username", "str", None, _ALL, _a("sasl.plain.username")),
    Prop("sasl.password", "secret", None, _ALL, _a("sasl.plain.password"), sensitive=True),
    Prop("ssl.ca.location", "str", None, _ALL, _a("ssl.cafile"), check=_not_empty),
    Prop("ssl.certificate.location", "str", None, _ALL, _a("ssl.certfile"), check=_not_empty),
    Prop("ssl.key.location", "str", None, _ALL, _a("ssl.keyfile"), check=_not_empty),
    Prop("ssl.key.password", "secret", None, _ALL, _a("ssl.password"), sensitive=True),
    Prop("ssl.endpoint.identification.algorithm", "enum", "https", _ALL,
         choices=_words("none", "https")),
    Prop("enable.ssl.certificate.verification", "bool", True, _ALL),
    Prop("max.in.flight.requests.per.connection", "int", 1000000, _ALL, _a("max.in.flight"),
         lo=1, hi=1000000),
    Prop("message.max.bytes", "int", 1000000, _ALL, _a("max.request.size"), lo=1000, hi=1000000000),
    Prop("allow.auto.create.topics", "bool", PerRole(producer=True, default=False), _ALL),
    Prop("debug", "str", None, _ALL),
    Prop("log_level", "int", 6, _ALL, lo=0, hi=7),
    Prop("statistics.interval.ms", "int", 0, _ALL, lo=0, hi=86400000),
    Prop("client.rack", "str", None, _ALL),
    Prop("error_cb", "callable", None, _ALL),
    Prop("stats_cb", "callable", None, _ALL),
    Prop("throttle_cb", "callable", None, _ALL),
    Prop("oauth_cb", "callable", None, _ALL),
    Prop("logger", "logger", None, _ALL),
    # -- every role, inert -----------------------------------------------------------------
    Prop("socket.keepalive.enable", "bool", False, _ALL, inert=True),
    Prop("socket.nagle.disable", "bool", True, _ALL, inert=True),
    Prop("socket.send.buffer.bytes", "int", 0, _ALL, _a("send.buffer.bytes"),
         lo=0, hi=100000000, inert=True),
    Prop("socket.receive.buffer.bytes", "int", 0, _ALL, _a("receive.buffer.bytes"),
         lo=0, hi=100000000, inert=True),
    Prop("socket.max.fails", "int", 1, _ALL, lo=0, hi=1000000, inert=True),
    Prop("broker.address.family", "enum", "any", _ALL, choices=_words("any", "v4", "v6"),
         inert=True),
    Prop("broker.address.ttl", "int", 1000, _ALL, lo=0, hi=86400000, inert=True),
    Prop("connections.max.idle.ms", "int", 0, _ALL, lo=0, hi=_I32, inert=True),
    Prop("enable.metrics.push", "bool", True, _ALL, inert=True),
    Prop("topic.metadata.propagation.max.ms", "int", 30000, _ALL, lo=0, hi=3600000, inert=True),
    Prop("topic.metadata.refresh.sparse", "bool", True, _ALL, inert=True),
    Prop("api.version.request.timeout.ms", "int", 10000, _ALL, lo=1, hi=300000, inert=True),
    Prop("log.connection.close", "bool", True, _ALL, inert=True),
    # -- producer --------------------------------------------------------------------------
    Prop("acks", "int", -1, _P, _a("request.required.acks"), lo=-1, hi=1, choices={"all": -1}),
    Prop("enable.idempotence", "bool", True, _P),
    Prop("compression.type", "enum", "none", _P, _a("compression.codec"),
         choices=_words("none", "gzip", "snappy", "lz4", "zstd")),
    Prop("batch.size", "int", 1000000, _P, lo=1, hi=_I32),
    Prop("batch.num.messages", "int", 10000, _P, lo=1, hi=1000000),
    # A double in librdkafka: sub-millisecond lingers are allowed.
    Prop("linger.ms", "float", 5.0, _P, _a("queue.buffering.max.ms"), lo=0, hi=900000),
    Prop("queue.buffering.max.messages", "int", 100000, _P, lo=0, hi=_I32),
    Prop("queue.buffering.max.kbytes", "int", 1048576, _P, _a(("buffer.memory", 1024)),
         lo=1, hi=_I32),
    Prop("delivery.timeout.ms", "int", 300000, _P, _a("message.timeout.ms"), lo=0, hi=_I32),
    Prop("retries", "int", _I32, _P, _a("message.send.max.retries"), lo=0, hi=_I32),
    Prop("partitioner", "enum", "murmur2_random", _P,
         choices=_words("random", "consistent", "consistent_random", "murmur2",
                        "murmur2_random", "fnv1a", "fnv1a_random")),
    Prop("on_delivery", "callable", None, _P, strict_roles=True),
    Prop("delivery.report.only.error", "bool", False, _P),
    Prop("transactional.id", "str", None, _P, check=_not_empty),
    Prop("transaction.timeout.ms", "int", 60000, _P, lo=1000, hi=_I32),
    # -- producer, inert -------------------------------------------------------------------
    Prop("queue.buffering.backpressure.threshold", "int", 1, _P, lo=1, hi=1000000, inert=True),
    Prop("sticky.partitioning.linger.ms", "int", 10, _P, lo=0, hi=900000, inert=True),
    Prop("compression.level", "int", -1, _P, lo=-1, hi=12, inert=True),
    # -- consumer --------------------------------------------------------------------------
    Prop("group.id", "str", None, _C),
    Prop("group.instance.id", "str", None, _C),
    Prop("session.timeout.ms", "int", 45000, _C, lo=1, hi=3600000),
    Prop("heartbeat.interval.ms", "int", 3000, _C, lo=1, hi=3600000),
    Prop("max.poll.interval.ms", "int", 300000, _C, lo=1, hi=86400000),
    Prop("partition.assignment.strategy", "list", ("range", "roundrobin"), _C,
         choices=_words("range", "roundrobin", "cooperative-sticky"), check=_assignors),
    # KIP-848: "consumer" uses ConsumerGroupHeartbeat and the coordinator's assignor.
    Prop("group.protocol", "enum", "classic", _C, choices=_words("classic", "consumer")),
    Prop("group.remote.assignor", "str", None, _C, check=_not_empty),
    Prop("enable.auto.commit", "bool", True, _C),
    Prop("auto.commit.interval.ms", "int", 5000, _C, lo=0, hi=86400000),
    Prop("enable.auto.offset.store", "bool", True, _C),
    Prop("auto.offset.reset", "enum", "latest", _C,
         choices={"smallest": "earliest", "earliest": "earliest", "beginning": "earliest",
                  "largest": "latest", "latest": "latest", "end": "latest", "error": "error"}),
    Prop("isolation.level", "enum", "read_committed", _C,
         choices=_words("read_uncommitted", "read_committed")),
    Prop("fetch.wait.max.ms", "int", 500, _C, _a("fetch.max.wait.ms"), lo=0, hi=300000),
    Prop("fetch.min.bytes", "int", 1, _C, lo=1, hi=100000000),
    Prop("fetch.max.bytes", "int", 52428800, _C, lo=0, hi=2147483135),
    Prop("max.partition.fetch.bytes", "int", 1048576, _C, _a("fetch.message.max.bytes"),
         lo=1, hi=1000000000),
    Prop("queued.max.messages.kbytes", "int", 65536, _C, lo=1, hi=2097151),
    Prop("queued.min.messages", "int", 100000, _C, lo=1, hi=10000000),
    Prop("check.crcs", "bool", False, _C),
    Prop("enable.partition.eof", "bool", False, _C),
    Prop("on_commit", "callable", None, _C, strict_roles=True),
    # KIP-932's share consumer (mafka.client.ShareConsumer): records per poll (and per ShareFetch),
    # and whether poll() accepts the previous poll's records or the application acknowledges each.
    Prop("max.poll.records", "int", 500, _C, lo=1, hi=2147483647),
    Prop("share.acknowledgement.mode", "enum", "implicit", _C, choices=_words("implicit", "explicit")),
    # -- consumer, inert -------------------------------------------------------------------
    Prop("fetch.error.backoff.ms", "int", 500, _C, lo=0, hi=300000, inert=True),
    Prop("fetch.queue.backoff.ms", "int", 1000, _C, lo=0, hi=300000, inert=True),
)

#: Canonical keys accepted and stored without effect (listed in the module docstring).
INERT_KEYS: frozenset[str] = frozenset(p.name for p in PROPERTIES if p.inert)

#: Families of librdkafka keys of which the client implements only those in :data:`PROPERTIES`
#: (PEM files, PLAIN/SCRAM): the others (``ssl.keystore.location``, ``sasl.kerberos.*``,
#: ``sasl.oauthbearer.*`` …) are refused, since ignoring one could connect in a way the
#: user did not ask for.
_UNSUPPORTED_PREFIXES = ("ssl.", "sasl.")

_BY_NAME: dict[str, Prop] = {p.name: p for p in PROPERTIES}
# Every spelling → (property, scale).
_INDEX: dict[str, tuple[Prop, int]] = {p.name: (p, 1) for p in PROPERTIES}
for _p in PROPERTIES:
    for _alias in _p.aliases:
        _INDEX[_alias.name] = (_p, _alias.scale)
del _p, _alias


def _lookup(key: str) -> tuple[Prop, int] | None:
    """The property and unit scale for ``key`` as spelled, then with kafka-python's ``_``."""
    found = _INDEX.get(key)
    if found is None and "_" in key:
        found = _INDEX.get(key.replace("_", "."))
    return found


# -- value parsers -----------------------------------------------------------------------------


class _Rejected(Exception):
    """A value refused by a parser; the argument says why."""


_TRUE = frozenset({"true", "t", "1"})
_FALSE = frozenset({"false", "f", "0"})


def _parse_bool(prop: Prop, raw: Any, scale: int) -> bool:
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, int) and raw in (0, 1):
        return bool(raw)
    if isinstance(raw, str):
        word = raw.strip().lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
    raise _Rejected("expected true or false")


def _limits(prop: Prop, scale: int) -> str:
    # In a scaled alias's unit: anything that rounds up into lo is accepted.
    lo = "" if prop.lo is None else _num((prop.lo - 1) * scale + 1 if scale != 1 else prop.lo)
    hi = "" if prop.hi is None else _num(prop.hi * scale)
    return f"{lo}..{hi}"


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def _in_range(prop: Prop, value: float) -> bool:
    return (prop.lo is None or value >= prop.lo) and (prop.hi is None or value <= prop.hi)


def _parse_int(prop: Prop, raw: Any, scale: int) -> int:
    names = prop.choices or {}
    reason = f"expected an integer in {_limits(prop, scale)}"
    if names:
        reason += " or " + ", ".join(f'"{n}"' for n in names)
    value: int | None = None
    if isinstance(raw, bool):
        pass  # confluent-kafka would pass "True", which librdkafka refuses for integers
    elif isinstance(raw, int):
        value = raw
    elif isinstance(raw, float):
        if raw.is_integer():
            value = int(raw)
    elif isinstance(raw, str):
        text = raw.strip()
        if text.lower() in names:
            # A symbolic name is already in canonical units (int properties map names to ints).
            symbolic: int = names[text.lower()]
            return symbolic
        try:
            value = int(text)
        except ValueError:
            try:
                as_float = float(text)
            except ValueError:
                as_float = math.nan
            if as_float.is_integer():
                value = int(as_float)
    if value is None:
        raise _Rejected(reason)
    if scale != 1:
        value = -(-value // scale)  # a byte limit in KiB, rounded up
    if not _in_range(prop, value):
        raise _Rejected(reason)
    return value


def _parse_float(prop: Prop, raw: Any, scale: int) -> float:
    reason = f"expected a number in {_limits(prop, scale)}"
    value = math.nan
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        value = float(raw)
    elif isinstance(raw, str):
        try:
            value = float(raw.strip())
        except ValueError:
            pass
    if not math.isfinite(value) or not _in_range(prop, value / scale):
        raise _Rejected(reason)
    return value / scale


def _parse_str(prop: Prop, raw: Any, scale: int) -> str:
    if isinstance(raw, str):
        return raw.strip()  # Kafka's ConfigDef.parseType trims STRING values
    if isinstance(raw, int) and not isinstance(raw, bool):
        return str(raw)  # confluent-kafka would pass str(value)
    raise _Rejected("expected a string")


def _parse_secret(prop: Prop, raw: Any, scale: int) -> str:
    if isinstance(raw, str):
        return raw  # not trimmed: blanks may be part of a password (librdkafka keeps them)
    if isinstance(raw, int) and not isinstance(raw, bool):
        return str(raw)
    raise _Rejected("expected a string")


def _parse_enum(prop: Prop, raw: Any, scale: int) -> Any:
    choices = prop.choices or {}
    if isinstance(raw, str) and raw.strip().lower() in choices:
        return choices[raw.strip().lower()]
    raise _Rejected("expected one of: " + ", ".join(choices))


def _items(raw: Any) -> list[str] | None:
    if isinstance(raw, str):
        parts = raw.split(",")
    elif isinstance(raw, (list, tuple)) and all(isinstance(x, str) for x in raw):
        parts = list(raw)
    else:
        return None
    return [p.strip() for p in parts if p.strip()]


def _parse_list(prop: Prop, raw: Any, scale: int) -> tuple[str, ...]:
    allowed = prop.choices
    reason = "expected a comma-separated list" + (
        " of: " + ", ".join(allowed) if allowed else ""
    )
    items = _items(raw)
    if items is None:
        raise _Rejected(reason)
    if allowed is not None:
        if any(i.lower() not in allowed for i in items):
            raise _Rejected(reason)
        items = [allowed[i.lower()] for i in items]
    return tuple(items)


def _parse_servers(prop: Prop, raw: Any, scale: int) -> str:
    items = _items(raw)
    if not items:
        raise _Rejected("expected a non-empty comma-separated list of host:port")
    return ",".join(items)


def _parse_callable(prop: Prop, raw: Any, scale: int) -> Any:
    if callable(raw):
        return raw
    raise _Rejected("expected a callable")


def _parse_logger(prop: Prop, raw: Any, scale: int) -> Any:
    if callable(getattr(raw, "log", None)):
        return raw
    raise _Rejected("expected a logging.Logger (an object with a log() method)")


_PARSERS: dict[str, Callable[[Prop, Any, int], Any]] = {
    "bool": _parse_bool,
    "int": _parse_int,
    "float": _parse_float,
    "str": _parse_str,
    "secret": _parse_secret,
    "enum": _parse_enum,
    "list": _parse_list,
    "servers": _parse_servers,
    "callable": _parse_callable,
    "logger": _parse_logger,
}
assert {p.kind for p in PROPERTIES} <= _PARSERS.keys()


def _show(value: Any) -> str:
    if isinstance(value, (str, int, float)):
        return str(value)
    return repr(value)


def _invalid(key: str, raw: Any, reason: str) -> ConfigError:
    return ConfigError(
        f'Invalid value "{_show(raw)}" for configuration property "{key}": {reason}', key, raw
    )


# -- the configuration -------------------------------------------------------------------------


class ClientConfig:
    """A parsed client configuration: typed values by canonical key.

    ``cfg[key]`` accepts any spelling (canonical, alias, kafka-python's) and returns
    the canonical property's value, in the alias's unit for a scaled alias
    (``cfg["buffer.memory"]`` is bytes); a known key that was neither set nor belongs
    to :attr:`role` gives its default; an unknown key raises :class:`KeyError`.
    :attr:`warnings` holds librdkafka-style warnings (keys of another role) for the
    client to log.  Treat it as read-only.
    """

    __slots__ = ("_user", "_values", "role", "warnings")

    def __init__(
        self,
        role: str,
        values: dict[str, Any],
        user: frozenset[str],
        warnings: tuple[str, ...] = (),
    ) -> None:
        self.role = role
        self._values = values
        self._user = user
        self.warnings = warnings

    def __getitem__(self, key: str) -> Any:
        found = _lookup(key)
        if found is None:
            raise KeyError(key)
        prop, scale = found
        value = self._values.get(prop.name, prop.default_for(self.role))
        if scale != 1 and value is not None:
            value *= scale
        return value

    def get(self, key: str, default: Any = None) -> Any:
        """``cfg[key]``, or ``default`` for a key the client does not know."""
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and _lookup(key) is not None

    def user_set(self, key: str) -> bool:
        """Whether the user gave a (non-``None``) value for ``key``'s property, under any name.

        Raises:
            KeyError: an unknown key.
        """
        found = _lookup(key)
        if found is None:
            raise KeyError(key)
        return found[0].name in self._user

    def as_dict(self) -> dict[str, Any]:
        """Canonical key → value: every key of :attr:`role` plus every key the user set."""
        return dict(self._values)

    def __repr__(self) -> str:
        shown = {k: "[hidden]" if v is not None and _BY_NAME[k].sensitive else v
                 for k, v in self._values.items()}
        return f"ClientConfig({self.role!r}, {shown!r})"


def parse_config(role: str, conf: Mapping[str, Any] | None) -> ClientConfig:
    """Validates confluent-kafka-style ``conf`` for a ``role`` client (see the module docstring).

    Raises:
        ValueError: ``role`` is not one of :data:`ROLES`.
        TypeError: ``conf`` is not a mapping, or a key is not a string.
        ConfigError: an unknown key, a bad value, a missing ``bootstrap.servers``, an
            unsupported feature or a cross-key conflict; the message names the key.
    """
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
    if conf is None:
        conf = {}
    if not isinstance(conf, Mapping):
        raise TypeError(f"configuration must be a dict, not {type(conf).__name__}")
    items = dict(conf)
    topic_conf = items.pop("default.topic.config", None)
    if topic_conf is not None:
        if not isinstance(topic_conf, Mapping):
            raise _invalid("default.topic.config", topic_conf, "expected a dict")
        items.update(topic_conf)

    values: dict[str, Any] = {}
    spelled: dict[str, tuple[str, Any]] = {}  # canonical → (key as given, raw value)
    warnings: list[str] = []
    for key, raw in items.items():
        if not isinstance(key, str):
            raise TypeError(f"configuration property names must be str, not {type(key).__name__}")
        found = _lookup(key)
        if found is None or (found[0].strict_roles and role not in found[0].roles):
            if key.startswith(_UNSUPPORTED_PREFIXES):
                raise ConfigError(
                    f'Configuration property "{key}" is not supported by Mafka\'s client '
                    "(TLS takes PEM files: ssl.ca.location, ssl.certificate.location, "
                    "ssl.key.location; SASL: PLAIN and SCRAM with sasl.username/sasl.password)",
                    key, raw)
            raise ConfigError(f'No such configuration property: "{key}"', key, raw)
        prop, scale = found
        if raw is None:
            # confluent-kafka passes None as "unset": back to the default.
            values.pop(prop.name, None)
            spelled.pop(prop.name, None)
            continue
        try:
            value = _PARSERS[prop.kind](prop, raw, scale)
            reason = prop.check(value) if prop.check else None
        except _Rejected as rejected:
            reason = str(rejected)
        if reason is not None:
            raise _invalid(key, "[hidden]" if prop.sensitive else raw, reason)
        values[prop.name] = value
        spelled[prop.name] = (key, raw)
        if role not in prop.roles:
            kind = "/".join(sorted(prop.roles))
            warnings.append(
                f"Configuration property {key} is a {kind} property and will be ignored "
                f"by this {role} instance")

    if "bootstrap.servers" not in values:
        raise ConfigError(
            'Missing required configuration property: "bootstrap.servers"', "bootstrap.servers")

    for prop in PROPERTIES:
        if role in prop.roles and prop.name not in values:
            values[prop.name] = prop.default_for(role)
    for rule in _RULES:
        rule(role, values, spelled)
    warnings.extend(_ignored_security_keys(values, spelled))
    ordered = {p.name: values[p.name] for p in PROPERTIES if p.name in values}  # table order
    return ClientConfig(role, ordered, frozenset(spelled), tuple(warnings))


# -- cross-key rules ---------------------------------------------------------------------------
# Each rule reads and adjusts ``values`` (canonical → value) for ``role``; ``spelled``
# holds what the user set (canonical → (key as given, raw value)).

_IDEMPOTENT_MAX_IN_FLIGHT = 5


def _idempotence(role: str, values: dict[str, Any], spelled: dict[str, tuple[str, Any]]) -> None:
    if role != "producer" or not values["enable.idempotence"]:
        return
    explicit = "enable.idempotence" in spelled
    conflicts = (
        ("acks", values["acks"] != -1, 'must be "all" (-1)'),
        ("retries", values["retries"] < 1, "must be >= 1"),
        ("max.in.flight.requests.per.connection",
         values["max.in.flight.requests.per.connection"] > _IDEMPOTENT_MAX_IN_FLIGHT,
         f"must be <= {_IDEMPOTENT_MAX_IN_FLIGHT}"),
    )
    for name, conflicting, need in conflicts:
        if conflicting and name in spelled:
            if explicit:
                key, raw = spelled[name]
                raise _invalid(key, raw, f'{need} when "enable.idempotence" is true')
            # Idempotence was only the default: the user's explicit choice wins (Java).
            values["enable.idempotence"] = False
            return
    if "max.in.flight.requests.per.connection" not in spelled:
        values["max.in.flight.requests.per.connection"] = min(
            values["max.in.flight.requests.per.connection"], _IDEMPOTENT_MAX_IN_FLIGHT)


def _transactions(role: str, values: dict[str, Any], spelled: dict[str, tuple[str, Any]]) -> None:
    if role != "producer" or values["transactional.id"] is None:
        return
    if not values["enable.idempotence"]:
        key, raw = spelled["transactional.id"]
        raise _invalid(key, raw, 'a transactional producer requires "enable.idempotence" true')
    # A record must not outlive its transaction (librdkafka's rule).
    if "delivery.timeout.ms" not in spelled:
        values["delivery.timeout.ms"] = values["transaction.timeout.ms"]
    elif values["delivery.timeout.ms"] > values["transaction.timeout.ms"]:
        key, raw = spelled["delivery.timeout.ms"]
        raise _invalid(key, raw, 'must be <= "transaction.timeout.ms" for a transactional producer')


def _derived_defaults(role: str, values: dict[str, Any], spelled: dict[str, tuple[str, Any]]) -> None:
    refresh = values["topic.metadata.refresh.interval.ms"]
    if "metadata.max.age.ms" not in spelled and refresh > 0:
        values["metadata.max.age.ms"] = min(refresh * 3, 86400000)
    if role == "producer" and "sticky.partitioning.linger.ms" not in spelled:
        values["sticky.partitioning.linger.ms"] = int(min(900000, 2 * values["linger.ms"]))


def _fetch_max_bytes(role: str, values: dict[str, Any], spelled: dict[str, tuple[str, Any]]) -> None:
    if role != "consumer":
        return
    message_max = values["message.max.bytes"]
    if "fetch.max.bytes" in spelled:
        if values["fetch.max.bytes"] < message_max:
            key, raw = spelled["fetch.max.bytes"]
            raise _invalid(key, raw, f'must be >= "message.max.bytes" ({message_max})')
    else:
        values["fetch.max.bytes"] = max(
            min(values["fetch.max.bytes"], values["queued.max.messages.kbytes"] * 1024), message_max)


#: ``security.protocol`` values that use TLS / SASL.
TLS_PROTOCOLS = frozenset({"ssl", "sasl_ssl"})
SASL_PROTOCOLS = frozenset({"sasl_plaintext", "sasl_ssl"})
#: The PEM files of the TLS keys; ``ssl.ca.location=probe`` means the system's CA store (librdkafka).
_TLS_FILES = ("ssl.ca.location", "ssl.certificate.location", "ssl.key.location")
_SASL_KEYS = ("sasl.mechanisms", "sasl.username", "sasl.password")
_TLS_KEYS = (*_TLS_FILES, "ssl.key.password", "ssl.endpoint.identification.algorithm",
             "enable.ssl.certificate.verification")


#: Keys the consumer protocol takes from the coordinator instead (Java's
#: ``CONSUMER_PROTOCOL_UNSUPPORTED_CONFIGS``; librdkafka refuses the same three).
_CONSUMER_PROTOCOL_UNSUPPORTED = ("partition.assignment.strategy", "heartbeat.interval.ms", "session.timeout.ms")


def _group_protocol(role: str, values: dict[str, Any], spelled: dict[str, tuple[str, Any]]) -> None:
    if role != "consumer" or values["group.protocol"] != "consumer":
        return
    refused = [name for name in _CONSUMER_PROTOCOL_UNSUPPORTED if name in spelled]
    if refused:
        key, raw = spelled[refused[0]]
        # Java's ConfigException text (ConsumerConfig.checkUnsupportedConfigsPostProcess).
        raise ConfigError(", ".join(spelled[name][0] for name in refused)
                          + " cannot be set when group.protocol=CONSUMER", key, raw)


def _security(role: str, values: dict[str, Any], spelled: dict[str, tuple[str, Any]]) -> None:
    protocol = values["security.protocol"]
    if protocol in SASL_PROTOCOLS:
        _sasl_settings(protocol, values, spelled)
    if protocol in TLS_PROTOCOLS:
        _tls_files(values, spelled)


def _sasl_settings(protocol: str, values: dict[str, Any], spelled: dict[str, tuple[str, Any]]) -> None:
    if values["sasl.mechanisms"] is None:
        # librdkafka's (and Java's) default mechanism is GSSAPI, which the client does not speak.
        raise ConfigError(
            f'"sasl.mechanism" must be set for security.protocol {protocol}: the default, GSSAPI, '
            f"is not supported by Mafka's client; use one of: {', '.join(SASL_MECHANISMS)}",
            "sasl.mechanisms")
    missing = [key for key in ("sasl.username", "sasl.password") if values[key] is None]
    if missing:
        raise ConfigError(
            f"sasl.username and sasl.password must be set for SASL mechanism "
            f"{values['sasl.mechanisms']} (security.protocol {protocol})", missing[0])


def _tls_files(values: dict[str, Any], spelled: dict[str, tuple[str, Any]]) -> None:
    for name in _TLS_FILES:
        path = values[name]
        if path is None or (name == "ssl.ca.location" and path == "probe"):
            continue
        if not os.path.isfile(path):
            key, raw = spelled[name]
            raise _invalid(key, raw, "no such file")
    if values["ssl.key.location"] is not None and values["ssl.certificate.location"] is None:
        key, raw = spelled["ssl.key.location"]
        raise _invalid(key, raw, 'requires "ssl.certificate.location" (the certificate of that key)')


def _ignored_security_keys(values: dict[str, Any], spelled: dict[str, tuple[str, Any]]) -> list[str]:
    """Warnings for TLS/SASL keys the protocol does not use: a forgotten ``security.protocol``
    would otherwise show only as a broker that hangs up."""
    protocol = values["security.protocol"]
    unused = [k for k in _TLS_KEYS if protocol not in TLS_PROTOCOLS and k in spelled]
    unused += [k for k in _SASL_KEYS if protocol not in SASL_PROTOCOLS and k in spelled]
    return [f"Configuration property {spelled[k][0]} is ignored: security.protocol is {protocol}"
            for k in unused]


_RULES: tuple[Callable[[str, dict[str, Any], dict[str, tuple[str, Any]]], None], ...] = (
    _idempotence,
    _transactions,
    _derived_defaults,
    _fetch_max_bytes,
    _group_protocol,
    _security,
)
