"""Client quota entities and their configs as Kafka 2.8 keeps them in ZooKeeper, and the quota admin APIs' rules.

Pure functions, no I/O; the broker's handlers, its config-change listener and
``mafka configs`` do the reads and writes.  This module owns:

* The entity model: :class:`ClientQuotaEntity` — a user, a client-id or a
  (user, client-id) pair, either part possibly :data:`DEFAULT` (Kafka's
  ``<default>`` entities).  Names here are the plain names (principal name,
  client id); sanitising happens only at the znode boundary.
* Where an entity lives (Kafka's ``ZkData`` / ``AdminZkClient.changeConfigs``):
  ``/config/users/<sanitized user>``, ``/config/users/<u>/clients/<sanitized
  client-id>``, ``/config/clients/<sanitized client-id>``, ``<default>`` for a
  default part (:func:`config_location`, :func:`entity_znode_path`); the change
  notification Kafka posts after every write, ``/config/changes/config_change_N``
  holding ``{"version":2,"entity_path":"users/<u>/clients/<c>"}``
  (:func:`change_notification_entity_path`,
  :func:`encode_change_notification`); and the way back from a notification
  or a znode to an entity (:func:`parse_entity_path`,
  :func:`entity_from_config_location`).
* The quota configs (``QuotaConfigs`` / ``DynamicConfig.Client`` /
  ``DynamicConfig.User``): ``producer_byte_rate`` and ``consumer_byte_rate``
  are LONGs, ``request_percentage`` and ``controller_mutation_rate`` DOUBLEs,
  none with a validator (Kafka 2.8 accepts negative values);
  :func:`validate_entity_config` is ``DynamicConfig.*.validate`` and
  :func:`quota_values` the broker's reading of them (``QuotaConfigHandler``).
* DescribeClientQuotas (48): :func:`parse_filter` (the request's
  ``ClientQuotaFilter`` and ``ZkAdminManager.describeClientQuotas``' checks)
  and :func:`describe_client_quotas` (its matching, over every stored quota
  entity config).
* AlterClientQuotas (49): :func:`parse_alteration_entity` and
  :func:`apply_alteration` (``ZkAdminManager.alterClientQuotas``: the entity
  checks, the per-key type rules, the new config to write), and
  :func:`alter_response_entity` (the entity as Kafka echoes it).
* :func:`api_error`: the (error code, error message) Kafka's ``ApiError.fromThrowable`` makes of an exception.

IP quotas (KIP-612, entity type ``ip``, ``connection_creation_rate``) are not
supported: Mafka has no per-IP connection-rate enforcement, so accepting
them would store a limit nothing applies.  DescribeClientQuotas with an
``ip`` component fails with UNSUPPORTED_VERSION (Kafka's answer for an entity
type the broker does not handle) and AlterClientQuotas of an ``ip`` entity
with INVALID_REQUEST, both saying so; ``/config/ips`` is never read.

What Kafka does that the handler must repeat (not expressible here):

* Describe needs DESCRIBE_CONFIGS on the cluster, alter ALTER_CONFIGS;
  otherwise the whole response is CLUSTER_AUTHORIZATION_FAILED (describe:
  top-level error code and no entries; alter: every entry, with the error's
  default message).  Any broker answers both in ZooKeeper mode.
* A describe failure (any exception raised here) is the top-level
  ``error_code``/``error_message`` (see :func:`api_error`) with ``entries`` null.
* Alter answers one entry per distinct entity (Kafka collects results in a
  map); each entry's entity is the request's, see :func:`alter_response_entity`.
  With ``validate_only`` nothing is written and :func:`validate_entity_config`
  is not run (Kafka validates only inside ``changeConfigs``); otherwise its
  failure is UNKNOWN_SERVER_ERROR without a message, as Kafka's.
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Final, Literal, TypeAlias

from mafka.broker.scram import desanitize, sanitize
from mafka.coordination.znodes.config import (
    ConfigChangeNotificationZNode,
    ConfigEntityZNode,
    ConfigType,
)
from mafka.errors import (
    ConfigError,
    ErrorCode,
    InvalidRequestError,
    KafkaError,
    UnsupportedVersionError,
)

__all__ = [
    "CLIENT_ID",
    "CONSUMER_BYTE_RATE",
    "CONTROLLER_MUTATION_RATE",
    "DEFAULT",
    "IP",
    "IP_CONNECTION_RATE",
    "PRODUCER_BYTE_RATE",
    "QUOTA_CONFIGS",
    "REQUEST_PERCENTAGE",
    "SCRAM_CONFIG_NAMES",
    "USER",
    "ClientQuotaEntity",
    "ClientQuotaFilter",
    "ClientQuotaFilterComponent",
    "Default",
    "EntityName",
    "MatchType",
    "QuotaConfigKey",
    "alter_response_entity",
    "api_error",
    "apply_alteration",
    "change_notification_entity_path",
    "config_location",
    "describe_client_quotas",
    "encode_change_notification",
    "entity_from_config_location",
    "entity_to_wire",
    "entity_znode_path",
    "is_client_or_user_quota_config",
    "java_double_to_string",
    "java_parse_double",
    "java_parse_long",
    "parse_alteration_entity",
    "parse_entity_path",
    "parse_filter",
    "quota_values",
    "validate_entity_config",
]


class Default(enum.Enum):
    """The default entity (Kafka's ``ConfigEntityName.Default``, ``<default>`` in znode names, null on the wire).

    A sentinel rather than the string ``<default>``: a client may really be
    called ``<default>`` (its znode name is then ``%3Cdefault%3E``), and Kafka
    keeps the two apart too (``DefaultClientIdEntity`` vs ``ClientIdEntity``).
    """

    DEFAULT = "<default>"

    def __repr__(self) -> str:
        return "<default>"


#: The default user or client-id.
DEFAULT: Final = Default.DEFAULT

#: A user or client-id part of an entity: a name, or :data:`DEFAULT`.
EntityName: TypeAlias = "str | Default"

#: ``ClientQuotaEntity`` entity types on the wire.
USER: Final = "user"
CLIENT_ID: Final = "client-id"
IP: Final = "ip"

#: Kafka's ``QuotaConfigs`` keys.
PRODUCER_BYTE_RATE: Final = "producer_byte_rate"
CONSUMER_BYTE_RATE: Final = "consumer_byte_rate"
REQUEST_PERCENTAGE: Final = "request_percentage"
CONTROLLER_MUTATION_RATE: Final = "controller_mutation_rate"
IP_CONNECTION_RATE: Final = "connection_creation_rate"

#: The SCRAM credentials that share ``/config/users/<user>`` (``ScramMechanism.mechanismNames``).
SCRAM_CONFIG_NAMES: Final = ("SCRAM-SHA-256", "SCRAM-SHA-512")

_LONG_MAX: Final = 2**63 - 1
_LONG_MIN: Final = -(2**63)
_INT_MAX: Final = 2**31 - 1


@dataclass(frozen=True, slots=True)
class ClientQuotaEntity:
    """A quota entity: ``users/<user>``, ``clients/<client-id>`` or ``users/<user>/clients/<client-id>``.

    Attributes:
        user: the user principal's name, :data:`DEFAULT`, or None when the entity has no user part.
        client_id: the client id, :data:`DEFAULT`, or None when it has no client-id part.

    Raises:
        ValueError: both parts None.
    """

    user: str | Default | None = None
    client_id: str | Default | None = None

    def __post_init__(self) -> None:
        if self.user is None and self.client_id is None:
            raise ValueError("a client quota entity needs a user or a client-id")

    def __str__(self) -> str:
        parts = []
        if self.user is not None:
            parts.append("default user" if self.user is DEFAULT else f"user {self.user}")
        if self.client_id is not None:
            parts.append("default client-id" if self.client_id is DEFAULT else f"client-id {self.client_id}")
        return " ".join(parts)


@dataclass(frozen=True, slots=True)
class QuotaConfigKey:
    """One quota config as ``QuotaConfigs`` defines it (no validator: any number of the type is accepted)."""

    name: str
    type: Literal["LONG", "DOUBLE"]
    #: Kafka's default: ``Long.MAX_VALUE`` for the byte rates, ``Integer.MAX_VALUE`` as a double for the others.
    default: float
    doc: str


#: The user and client-id quota configs, in ``QuotaConfigs.buildUserClientQuotaConfigDef``'s order.
QUOTA_CONFIGS: Final[Mapping[str, QuotaConfigKey]] = {
    k.name: k
    for k in (
        QuotaConfigKey(PRODUCER_BYTE_RATE, "LONG", float(_LONG_MAX),
                       "A rate representing the upper bound (bytes/sec) for producer traffic."),
        QuotaConfigKey(CONSUMER_BYTE_RATE, "LONG", float(_LONG_MAX),
                       "A rate representing the upper bound (bytes/sec) for consumer traffic."),
        QuotaConfigKey(REQUEST_PERCENTAGE, "DOUBLE", float(_INT_MAX),
                       "A percentage representing the upper bound of time spent for processing requests."),
        QuotaConfigKey(CONTROLLER_MUTATION_RATE, "DOUBLE", float(_INT_MAX),
                       "The rate at which mutations are accepted for the create topics request, the create "
                       "partitions request and the delete topics request. The rate is accumulated by the number "
                       "of partitions created or deleted."),
    )
}


def is_client_or_user_quota_config(name: str) -> bool:
    """``QuotaConfigs.isClientOrUserConfig``: one of the four quota keys (not SCRAM, not the IP rate)."""
    return name in QUOTA_CONFIGS


# --------------------------------------------------------------------------- Java number forms

_JAVA_LONG = re.compile(r"[+-]?[0-9]+")
_JAVA_DECIMAL = re.compile(r"([+-]?)(NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?)")
_JAVA_HEX = re.compile(
    r"([+-]?)0[xX]((?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+)[fFdD]?"
)


def _java_trim(text: str) -> str:
    """``String.trim``: strips characters up to U+0020 (not Unicode spaces, as Python's ``strip``)."""
    start, end = 0, len(text)
    while start < end and text[start] <= " ":
        start += 1
    while end > start and text[end - 1] <= " ":
        end -= 1
    return text[start:end]


def java_parse_long(text: str) -> int:
    """``Long.parseLong``: an optional sign and decimal digits, no spaces, within the long range.

    Raises:
        ValueError: anything else (Java's NumberFormatException).
    """
    if not _JAVA_LONG.fullmatch(text):
        raise ValueError(f'For input string: "{text}"')
    value = int(text)
    if not _LONG_MIN <= value <= _LONG_MAX:
        raise ValueError(f'For input string: "{text}"')
    return value


def java_parse_double(text: str) -> float:
    """``Double.parseDouble``: Java's grammar (``NaN``, ``Infinity``, ``1e3``, ``2.5d``, hex), trimmed first.

    Raises:
        ValueError: not a Java floating-point literal (NumberFormatException).
    """
    trimmed = _java_trim(text)
    m = _JAVA_DECIMAL.fullmatch(trimmed)
    if m is not None:
        sign, body = m.groups()
        if body not in ("NaN", "Infinity"):
            body = body.rstrip("fFdD")
        value = float("nan") if body == "NaN" else float("inf") if body == "Infinity" else float(body)
        return -value if sign == "-" else value
    h = _JAVA_HEX.fullmatch(trimmed)
    if h is not None:
        value = float.fromhex("0x" + h.group(2))
        return -value if h.group(1) == "-" else value
    raise ValueError(f'For input string: "{text}"')


def java_double_to_string(value: float) -> str:
    """``Double.toString``: ``50.0``, ``0.001``; ``1.0E7`` and ``1.0E-4`` outside [10⁻³, 10⁷).

    Digits are the shortest that read back to *value* (Python's ``repr``, as
    Java since JDK 19; older JDKs occasionally printed one digit more).
    """
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    magnitude = abs(value)
    shortest = Decimal(repr(magnitude)).as_tuple()
    digits = "".join(map(str, shortest.digits))
    # The power of ten of the first digit (Decimal keeps no leading zeros; the exponent is an int when finite).
    exponent = len(digits) - 1 + int(shortest.exponent)
    digits = digits.rstrip("0") or "0"
    if 1e-3 <= magnitude < 1e7:
        if exponent >= 0:
            whole = digits[: exponent + 1].ljust(exponent + 1, "0")
            frac = digits[exponent + 1:] or "0"
        else:
            whole, frac = "0", "0" * (-exponent - 1) + digits
        return f"{sign}{whole}.{frac}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"


def _java_double_to_long(value: float) -> int:
    """Java's ``(long) d`` / Scala's ``Double.toLong``: truncates, saturates, NaN is 0."""
    if math.isnan(value):
        return 0
    if value >= 2.0**63:
        return _LONG_MAX
    if value <= -(2.0**63):
        return _LONG_MIN
    return int(value)


# --------------------------------------------------------------------------- znodes and notifications


def config_location(entity: ClientQuotaEntity) -> tuple[str, str]:
    """The (root entity type, full sanitized name) Kafka stores *entity* under.

    ``("users", "alice")``, ``("users", "alice/clients/app")``,
    ``("users", "<default>/clients/<default>")``, ``("clients", "app")`` —
    the arguments of ``AdminZkClient.changeConfigs`` (and of
    :meth:`mafka.coordination.kafka_zk.configs.ConfigZk.set_entity_config`).
    """
    if entity.user is not None:
        user = _sanitized(entity.user)
        if entity.client_id is None:
            return ConfigType.USER, user
        return ConfigType.USER, f"{user}/{ConfigType.CLIENT}/{_sanitized(entity.client_id)}"
    if entity.client_id is None:  # ClientQuotaEntity refuses this; for the type checker
        raise ValueError("a client quota entity needs a user or a client-id")
    return ConfigType.CLIENT, _sanitized(entity.client_id)


def entity_znode_path(entity: ClientQuotaEntity) -> str:
    """``/config/users/<u>``, ``/config/users/<u>/clients/<c>`` or ``/config/clients/<c>`` (names sanitized)."""
    return ConfigEntityZNode.path(*config_location(entity))


def change_notification_entity_path(entity: ClientQuotaEntity) -> str:
    """The ``entity_path`` of the notification Kafka posts after changing *entity*: ``users/<u>/clients/<c>`` …"""
    return ConfigChangeNotificationZNode.entity_path(*config_location(entity))


def encode_change_notification(entity: ClientQuotaEntity) -> bytes:
    """The bytes of that ``/config/changes/config_change_N`` znode: ``{"version":2,"entity_path":"users/…"}``."""
    return ConfigChangeNotificationZNode.encode(change_notification_entity_path(entity))


def _sanitized(name: str | Default) -> str:
    return ConfigType.DEFAULT_ENTITY if name is DEFAULT else sanitize(name)


def _desanitized(name: str) -> str | Default:
    return DEFAULT if name == ConfigType.DEFAULT_ENTITY else desanitize(name)


def entity_from_config_location(entity_type: str, sanitized_name: str) -> ClientQuotaEntity:
    """The entity stored at ``/config/<entity_type>/<sanitized_name>``; the inverse of :func:`config_location`.

    A user path is split as Kafka's ``UserConfigHandler`` does: one part is a
    user, three parts ``<u>/clients/<c>`` a (user, client-id) pair.

    Raises:
        ValueError: *entity_type* is neither ``users`` nor ``clients``, or a
            malformed name (Kafka: ``Invalid quota entity path: …``).
    """
    if entity_type == ConfigType.CLIENT:
        if not sanitized_name:
            raise ValueError(f"Invalid quota entity path: {sanitized_name}")
        return ClientQuotaEntity(None, _desanitized(sanitized_name))
    if entity_type != ConfigType.USER:
        raise ValueError(f"{entity_type} is not a client quota entity type (users or clients)")
    parts = sanitized_name.split("/")
    # Kafka checks only the count; a middle part other than ``clients`` is a
    # path it never writes, refused here rather than read as a pair.
    if len(parts) == 1 and parts[0]:
        return ClientQuotaEntity(_desanitized(parts[0]), None)
    if len(parts) == 3 and parts[0] and parts[1] == ConfigType.CLIENT and parts[2]:
        return ClientQuotaEntity(_desanitized(parts[0]), _desanitized(parts[2]))
    raise ValueError(f"Invalid quota entity path: {sanitized_name}")


def parse_entity_path(entity_path: str) -> ClientQuotaEntity | None:
    """The quota entity a config change notification names (``users/…`` or ``clients/…``).

    Returns:
        None for another root type (``topics/T``, ``brokers/1``, ``ips/…``):
        not a client quota change.

    Raises:
        ValueError: a ``users/`` or ``clients/`` path that names no entity.
    """
    root, sep, rest = entity_path.partition("/")
    if not sep or root not in (ConfigType.USER, ConfigType.CLIENT):
        return None
    return entity_from_config_location(root, rest)


# --------------------------------------------------------------------------- config values


def _config_types(entity: ClientQuotaEntity, *, for_alter: bool) -> dict[str, str]:
    """The keys (and ConfigDef types) an entity's config may hold.

    ``DynamicConfig.User`` (SCRAM credentials and quotas) for a user; ``DynamicConfig.Client``
    (quotas only) for a client-id.  Kafka's two callers disagree on the rest:
    ``alterClientQuotas`` uses the user keys for (user, client-id) entities
    too, ``changeUserOrUserClientIdConfig`` validates those and
    ``users/<default>`` with the client keys.
    """
    quota_types: dict[str, str] = {name: key.type for name, key in QUOTA_CONFIGS.items()}
    if entity.user is None:
        return quota_types
    if for_alter or (entity.client_id is None and entity.user is not DEFAULT):
        return {**dict.fromkeys(SCRAM_CONFIG_NAMES, "STRING"), **quota_types}
    return quota_types


def validate_entity_config(entity: ClientQuotaEntity, config: Mapping[str, str]) -> None:
    """``DynamicConfig.Client.validate`` / ``DynamicConfig.User.validate`` before an entity's config is written.

    Raises:
        ValueError: a key the entity cannot hold (Kafka's IllegalArgumentException
            ``requirement failed: Unknown Dynamic Configuration: Set(k).``).
        ConfigError: a number that does not parse as its type (``ConfigException``:
            ``Invalid value x for configuration producer_byte_rate: Not a number of type LONG``).
    """
    types = _config_types(entity, for_alter=False)
    unknown = [k for k in config if k not in types]
    if unknown:
        raise ValueError(f"requirement failed: Unknown Dynamic Configuration: Set({', '.join(unknown)}).")
    # ConfigDef.parse goes through the definitions in order; the first bad value fails.
    for key, kind in types.items():
        if key not in config:
            continue
        value = config[key]
        try:
            if kind == "LONG":
                java_parse_long(_java_trim(value))
            elif kind == "DOUBLE":
                java_parse_double(value)
        except ValueError:
            raise ConfigError.for_key(key, f"Not a number of type {kind}", value=value) from None


def quota_values(config: Mapping[str, str]) -> dict[str, float | None]:
    """The four quotas an entity's stored config sets (None: not set), as Kafka's ``QuotaConfigHandler`` reads them.

    Byte rates are read as longs (``toLong.toDouble``: no spaces, no fraction),
    the others as doubles.

    Raises:
        ValueError: a value that does not parse (Kafka fails the notification's processing).
    """
    out: dict[str, float | None] = {}
    for name, key in QUOTA_CONFIGS.items():
        text = config.get(name)
        if text is None:
            out[name] = None
        elif key.type == "LONG":
            out[name] = float(java_parse_long(text))
        else:
            out[name] = java_parse_double(text)
    return out


# --------------------------------------------------------------------------- errors


def api_error(exc: BaseException) -> tuple[int, str | None]:
    """``ApiError.fromThrowable``: the error code and message to answer with.

    A :class:`~mafka.errors.KafkaError` gives its code and its message, the
    message left out (None) when it is the code's default or the code is
    UNKNOWN_SERVER_ERROR (Kafka does not leak internal details); anything
    else is UNKNOWN_SERVER_ERROR without a message.
    """
    if isinstance(exc, KafkaError) and exc.code is not ErrorCode.UNKNOWN_SERVER_ERROR:
        message: str | None = exc.message if exc.message != exc.code.description else None
        return int(exc.code), message
    return int(ErrorCode.UNKNOWN_SERVER_ERROR), None


_IP_UNSUPPORTED = (
    "IP connection rate quotas (entity type 'ip', connection_creation_rate, KIP-612) are not supported by Mafka"
)


# --------------------------------------------------------------------------- DescribeClientQuotas


class MatchType(enum.IntEnum):
    """``DescribeClientQuotasRequest``'s ``match_type``."""

    #: The entity with the name in ``match``.
    EXACT = 0
    #: The default entity.
    DEFAULT = 1
    #: Any entity of the type that has the type at all: any name, the default included (Kafka 2.8, ZooKeeper mode).
    SPECIFIED = 2


@dataclass(frozen=True, slots=True)
class ClientQuotaFilterComponent:
    """``ClientQuotaFilterComponent``: an entity type and how its name must match.

    ``match`` is the name for EXACT and None otherwise.
    """

    entity_type: str
    match_type: MatchType
    match: str | None = None


@dataclass(frozen=True, slots=True)
class ClientQuotaFilter:
    """``ClientQuotaFilter``: components, and whether entities with other parts are excluded (``strict``)."""

    components: tuple[ClientQuotaFilterComponent, ...]
    strict: bool = False

    def component(self, entity_type: str) -> ClientQuotaFilterComponent | None:
        return next((c for c in self.components if c.entity_type == entity_type), None)


def parse_filter(components: Iterable[tuple[str, int, str | None]], strict: bool) -> ClientQuotaFilter:
    """The request's filter, checked as ``DescribeClientQuotasRequest.filter`` and ``ZkAdminManager.describeClientQuotas``.

    Args:
        components: (``entity_type``, ``match_type``, ``match``) as on the wire.
        strict: the request's ``strict``.

    Raises:
        KafkaError: UNKNOWN_SERVER_ERROR for a match type other than 0–2 or
            EXACT with a null name (Kafka's IllegalArgumentException / NullPointerException).
        InvalidRequestError: an entity type given twice (``Duplicate user filter
            component entity type``) or empty (``Unexpected empty filter component entity type``).
        UnsupportedVersionError: another entity type (``Custom entity type 'x' not supported``),
            or ``ip`` (not supported by Mafka).
    """
    parsed: list[ClientQuotaFilterComponent] = []
    for entity_type, match_type, match in components:
        if match_type not in (0, 1, 2):
            raise KafkaError(f"Unexpected match type: {match_type}")
        kind = MatchType(match_type)
        if kind is MatchType.EXACT and match is None:
            raise KafkaError("EXACT filter component without a name")
        parsed.append(ClientQuotaFilterComponent(entity_type, kind, match if kind is MatchType.EXACT else None))
    seen: set[str] = set()
    for component in parsed:
        entity_type = component.entity_type
        if entity_type in (USER, CLIENT_ID, IP) and entity_type in seen:
            what = "client" if entity_type == CLIENT_ID else entity_type
            raise InvalidRequestError(f"Duplicate {what} filter component entity type")
        if entity_type == IP:
            raise UnsupportedVersionError(_IP_UNSUPPORTED)
        if entity_type == "":
            raise InvalidRequestError("Unexpected empty filter component entity type")
        if entity_type not in (USER, CLIENT_ID):
            raise UnsupportedVersionError(f"Custom entity type '{entity_type}' not supported")
        seen.add(entity_type)
    return ClientQuotaFilter(tuple(parsed), strict)


def _matches(component: ClientQuotaFilterComponent | None, name: str | Default | None, strict: bool) -> bool:
    """``ZkAdminManager``'s ``matches``: None is an absent part, :data:`DEFAULT` Kafka's ``Some(null)``."""
    if component is None:
        return name is None or not strict
    if component.match_type is MatchType.EXACT:
        return name == component.match
    if component.match_type is MatchType.DEFAULT:
        return name is DEFAULT
    return name is not None


def describe_client_quotas(
    quota_filter: ClientQuotaFilter, configs: Mapping[ClientQuotaEntity, Mapping[str, str]]
) -> list[tuple[ClientQuotaEntity, dict[str, float]]]:
    """The entities and quota values DescribeClientQuotas answers with.

    Args:
        quota_filter: from :func:`parse_filter`.
        configs: every stored user, client-id and (user, client-id) config
            (``/config/users/*``, ``/config/users/*/clients/*``, ``/config/clients/*``).
            Kafka reads only what the filter can match; matching over all of
            them gives the same answer.

    Returns:
        Each matching entity that has at least one quota key (SCRAM
        credentials are not quotas), with those keys' values as doubles: users
        first, then client-ids, then pairs (Kafka's order of collection),
        each group in *configs*' order.

    Raises:
        KafkaError: UNKNOWN_SERVER_ERROR for a stored value that is not a
            number (``Unexpected client quota configuration value: k -> v``).
    """
    user_component = quota_filter.component(USER)
    client_component = quota_filter.component(CLIENT_ID)
    strict = quota_filter.strict
    groups: tuple[list[tuple[ClientQuotaEntity, dict[str, float]]], ...] = ([], [], [])
    for entity, config in configs.items():
        if not (_matches(user_component, entity.user, strict) and _matches(client_component, entity.client_id, strict)):
            continue
        values: dict[str, float] = {}
        for key, text in config.items():
            if not is_client_or_user_quota_config(key):
                continue
            try:
                values[key] = java_parse_double(text)
            except ValueError:
                raise KafkaError(f"Unexpected client quota configuration value: {key} -> {text}") from None
        if values:
            group = 0 if entity.client_id is None else 1 if entity.user is None else 2
            groups[group].append((entity, values))
    return [*groups[0], *groups[1], *groups[2]]


def entity_to_wire(entity: ClientQuotaEntity) -> list[dict[str, str | None]]:
    """The ``entity`` array of a DescribeClientQuotas result: user, then client-id; a default's name is null."""
    out: list[dict[str, str | None]] = []
    for entity_type, name in ((USER, entity.user), (CLIENT_ID, entity.client_id)):
        if name is not None:
            out.append({"entity_type": entity_type, "entity_name": None if name is DEFAULT else name})
    return out


# --------------------------------------------------------------------------- AlterClientQuotas


def parse_alteration_entity(entity: Sequence[tuple[str, str | None]]) -> ClientQuotaEntity:
    """The entity an AlterClientQuotas entry alters (``parseAndSanitizeQuotaEntity`` and the combination check).

    Args:
        entity: (``entity_type``, ``entity_name``) pairs as on the wire; a null
            name is the default; a type given twice keeps its last name (Kafka
            builds a map).

    Raises:
        InvalidRequestError: no pairs (``Invalid empty client quota entity``),
            an unknown type (``Unhandled client quota entity type: x``), an
            empty name (``Empty user not supported``), or an ``ip`` part (not
            supported by Mafka; with a user or client-id Kafka's ``Invalid quota
            entity combination, IP entity should not be used with user/client ID entity.``).
    """
    if not entity:
        raise InvalidRequestError("Invalid empty client quota entity")
    names: dict[str, str | None] = {}
    for entity_type, name in entity:
        names[entity_type] = name
    parts: dict[str, str | Default] = {}
    for entity_type, name in names.items():
        if entity_type not in (USER, CLIENT_ID, IP):
            raise InvalidRequestError(f"Unhandled client quota entity type: {entity_type}")
        if name is not None and not name:
            raise InvalidRequestError(f"Empty {entity_type} not supported")
        parts[entity_type] = DEFAULT if name is None else name
    if IP in parts:
        if USER in parts or CLIENT_ID in parts:
            raise InvalidRequestError(
                "Invalid quota entity combination, IP entity should not be used with user/client ID entity."
            )
        raise InvalidRequestError(_IP_UNSUPPORTED)
    return ClientQuotaEntity(parts.get(USER), parts.get(CLIENT_ID))


def apply_alteration(
    entity: ClientQuotaEntity, config: Mapping[str, str], ops: Iterable[tuple[str, float | None]]
) -> dict[str, str]:
    """The entity's new config after an AlterClientQuotas entry's ops, as ``alterEntityQuotas`` computes it.

    Args:
        entity: from :func:`parse_alteration_entity`.
        config: the entity's stored config (SCRAM credentials of a user are kept).
        ops: (``key``, value) in request order; None removes the key (any key, as Kafka).

    Returns:
        The config to write (then :func:`validate_entity_config`, unless validate-only).
        A LONG is stored as its integer (``1024``), a DOUBLE as Java prints it (``50.0``).

    Raises:
        InvalidRequestError: a key the entity cannot hold (``Invalid configuration
            key k``) or a LONG value that is not within 10⁻⁶ of an integer
            (``Configuration producer_byte_rate must be a LONG value``; Kafka's
            rounding refuses negative integers this way, and takes NaN as 0).
        KafkaError: UNKNOWN_SERVER_ERROR for setting a SCRAM credential key
            (``Unexpected config type STRING``).
    """
    types = _config_types(entity, for_alter=True)
    props = dict(config)
    for key, value in ops:
        if value is None:
            props.pop(key, None)
            continue
        kind = types.get(key)
        if kind is None:
            raise InvalidRequestError(f"Invalid configuration key {key}")
        if kind == "DOUBLE":
            props[key] = java_double_to_string(value)
        elif kind == "LONG":
            epsilon = 1e-6
            long_value = _java_double_to_long(value + epsilon)
            # Kafka compares in doubles: NaN compares false, so NaN passes as 0.
            if abs(float(long_value) - value) > epsilon:
                raise InvalidRequestError(f"Configuration {key} must be a LONG value")
            props[key] = str(long_value)
        else:
            raise KafkaError(f"Unexpected config type {kind}")
    return props


def _java_string_hash(text: str) -> int:
    """``String.hashCode`` over UTF-16 code units, as an unsigned 32-bit number."""
    data = text.encode("utf-16-le")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] | data[i + 1] << 8)) & 0xFFFFFFFF
    return h


def alter_response_entity(entity: Sequence[tuple[str, str | None]]) -> list[dict[str, str | None]]:
    """The ``entity`` array Kafka echoes for an AlterClientQuotas entry: the request's pairs, as a ``java.util.HashMap``.

    Kafka rebuilds the request's entity as ``new HashMap<>(n)`` and answers
    with its iteration order (``client-id`` before ``user``); a type given
    twice appears once with its last name.  Unvalidated: unknown types are echoed too.
    """
    # HashMap(n): the table is tableSizeFor(n) (at least 1) and doubles when a
    # put takes the size past three quarters of it.
    capacity = 1
    while capacity < len(entity):
        capacity <<= 1
    threshold = int(capacity * 0.75)
    names: dict[str, str | None] = {}
    for entity_type, name in entity:
        if entity_type not in names and len(names) + 1 > threshold:
            capacity *= 2
            threshold = int(capacity * 0.75)
        names[entity_type] = name

    def bucket(key: str) -> int:
        h = _java_string_hash(key)
        return (h ^ (h >> 16)) & (capacity - 1)

    order = sorted(enumerate(names), key=lambda item: (bucket(item[1]), item[0]))
    return [{"entity_type": key, "entity_name": names[key]} for _, key in order]
