"""``mafka configs``: Kafka 2.8's ``kafka-configs.sh`` (``kafka.admin.ConfigCommand``) for Mafka.

Exactly one of ``--describe`` / ``--alter``, against ``--bootstrap-server``
(the admin APIs) or the deprecated ``--zookeeper`` (the znodes, as Kafka 2.8
still allowed).  The entity is ``--entity-type topics|brokers|users|clients|ips|broker-loggers``
with ``--entity-name N`` or ``--entity-default``, or one of Kafka's shorthand
flags (``--topic T``, ``--broker N``, ``--broker-defaults``, ``--user U`` …).

``--bootstrap-server``:

* topics and brokers: describe prints Kafka's blocks (DescribeConfigs;
  without ``--all`` only the dynamic overrides)::

      Dynamic configs for topic t are:
        retention.ms=1000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1000}

  alter is IncrementalAlterConfigs (SET for ``--add-config``, DELETE for
  ``--delete-config``, which must name existing overrides) and prints
  ``Completed updating config for topic t.``;
* users: SCRAM credentials, ``--add-config 'SCRAM-SHA-256=[iterations=8192,password=p]'``
  / ``--delete-config SCRAM-SHA-256`` (AlterUserScramCredentials, the salted
  password computed here as Kafka's admin client does) and describe
  (DescribeUserScramCredentials): ``SCRAM credential configs for
  user-principal 'alice' are SCRAM-SHA-256=iterations=8192``;
* client quotas — ``--entity-type users|clients`` with ``--entity-name``
  or ``--entity-default``, alone or as a (users, clients) pair, and the
  ``producer_byte_rate``, ``consumer_byte_rate``, ``request_percentage``,
  ``controller_mutation_rate`` keys: alter first describes the entity (a
  deleted key must be set: ``Invalid config(s): k``), then sends
  AlterClientQuotas and prints ``Completed updating config for user alice.``
  (``… default config for users in the cluster.``); describe sends
  DescribeClientQuotas (``containsOnly`` the entities given, a type without
  a name matching any entity of it) and prints, in the order of the Java
  ``HashMap`` s Kafka's admin client builds,
  ``Quota configs for user-principal 'alice', client-id 'app' are producer_byte_rate=1000.0``
  — for users without clients or defaults followed by their SCRAM
  credentials.  ``ips`` go the same way and get the brokers' answer (IP
  quotas are not implemented by Mafka);
* broker loggers are not implemented: a clear error.

``--zookeeper``: reads ``/config/<type>/<name>`` (``/config/users/<u>/clients/<c>``
for a (users, clients) pair; every entity of a type, or every client of a
user, when no name is given); alter writes the whole new config there and
posts ``/config/changes/config_change_N``, as Kafka 2.8's
``AdminZkClient.changeConfigs`` (topic configs validated first, the topic
must exist; user and client configs checked as ``DynamicConfig.User`` /
``DynamicConfig.Client``; SCRAM credentials generated here; broker configs
limited to the replication throttles, the only dynamic broker configs Mafka
has; ips refused: Mafka has no IP quotas).  Output: ``Configs for topic 't'
are k=v,k2=v2``, ``Configs for user-principal 'u', client-id 'c' are …``
and ``Completed updating config for entity: topic 't'.``

Errors are printed as Kafka's tool prints them: argument errors and invalid
configs as the bare message on stderr; anything else as ``Error while
executing config command with args '…'`` followed by the Java exception
line.  Exit status 1.

Where Kafka prints a Java ``HashMap``'s entries (describe lines, the topics
listed), they come in that map's iteration order, so output matches Kafka's
line for line.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import ipaddress
import re
import secrets
import socket
import sys
import time
from collections.abc import Iterable
from typing import Any

from mafka.cli.clients import admin_config, error_text, load_properties
from mafka.cli.java_exceptions import java_class
from mafka.client.admin import AdminClient
from mafka.client.admin_types import (
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ResourceType,
)
from mafka.client.kafka_error import KafkaError as ClientError
from mafka.client.kafka_error import KafkaException
from mafka.errors import ErrorCode

__all__ = [
    "ConfigCommandError",
    "add_parser",
    "check_args",
    "entity_names",
    "entity_types",
    "format_config_entry",
    "java_hash_order",
    "parse_add_config",
    "run",
]

TOPICS, CLIENTS, USERS, BROKERS, IPS = "topics", "clients", "users", "brokers", "ips"
BROKER_LOGGERS = "broker-loggers"
#: Kafka's ``ConfigType.all`` (what ``--zookeeper`` accepts), and with broker loggers (``--bootstrap-server``).
ZK_SUPPORTED_TYPES = (TOPICS, CLIENTS, USERS, BROKERS, IPS)
BROKER_SUPPORTED_TYPES = (*ZK_SUPPORTED_TYPES, BROKER_LOGGERS)
#: ``ConfigEntityName.Default``: the znode name of a default entity.
DEFAULT_ENTITY = "<default>"

SCRAM_MECHANISMS = {"SCRAM-SHA-256": (1, "sha256"), "SCRAM-SHA-512": (2, "sha512")}
DEFAULT_SCRAM_ITERATIONS = 4096
MIN_SCRAM_ITERATIONS = 4096
#: Kafka's ``QuotaConfigs``: user/client quota configs, and the IP one.
QUOTA_CONFIGS = frozenset({"producer_byte_rate", "consumer_byte_rate", "request_percentage",
                           "controller_mutation_rate"})
IP_QUOTA_CONFIGS = frozenset({"connection_creation_rate"})
#: The broker configs Kafka lets ``--zookeeper`` change while brokers run; they are also
#: the only dynamic broker configs Mafka's brokers have (``DynamicConfig.Broker``).
THROTTLE_CONFIGS = ("leader.replication.throttled.rate", "follower.replication.throttled.rate",
                    "replica.alter.log.dirs.io.max.bytes.per.second")

#: Java ``ConfigEntry.ConfigSource`` names, by DescribeConfigs source id.
_SOURCE_NAMES = {0: "UNKNOWN", 1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG",
                 3: "DYNAMIC_DEFAULT_BROKER_CONFIG", 4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG",
                 6: "DYNAMIC_BROKER_LOGGER_CONFIG"}

_EXECUTION = "java.util.concurrent.ExecutionException"
_ERRORS = "org.apache.kafka.common.errors"
_CONFIG_EXCEPTION = "org.apache.kafka.common.config.ConfigException"
_IPS_UNSUPPORTED_ZK = ("IP connection rate quotas (--entity-type ips, connection_creation_rate, KIP-612) are not "
                      "implemented in Mafka")
_BROKER_LOGGERS_UNSUPPORTED = ("Broker logger configs (--entity-type broker-loggers) are not implemented in Mafka: "
                               "its brokers have no BROKER_LOGGER config resource")
_USAGE_MESSAGE = ("This tool helps to manipulate and describe entity config for a topic, client, user, "
                  "broker or ip")


class ConfigCommandError(Exception):
    """A failure, printed as Kafka's ``ConfigCommand.main`` prints it.

    ``exception`` None: an IllegalArgumentException / InvalidConfigurationException
    (the message alone on stderr); otherwise the Java exception line that follows
    ``Error while executing config command with args …``.  ``usage``: the
    message is followed by the option help (``CommandLineUtils.printUsageAndDie``).
    """

    def __init__(self, message: str, exception: str | None = None, usage: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.exception = exception
        self.usage = usage


# ----------------------------------------------------------------------------- arguments


class _EntityName(argparse.Action):
    """``--entity-name N`` / ``--entity-default``: one list, in command-line order (Kafka's ``entityNames``)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        names = list(getattr(namespace, self.dest) or [])
        names.append(("default", "") if self.nargs == 0 else ("name", values))
        setattr(namespace, self.dest, names)


def add_parser(sub: Any) -> None:
    p = sub.add_parser("configs", help="describe or change topic, broker and user configs (kafka-configs)",
                       description=_USAGE_MESSAGE)
    p.add_argument("--bootstrap-server", metavar="HOST:PORT")
    p.add_argument("--zookeeper", metavar="HOST:PORT[/CHROOT]",
                   help="DEPRECATED (as in Kafka 2.8): read and write ZooKeeper's config znodes directly")
    p.add_argument("--command-config", metavar="FILE",
                   help="Property file containing configs to be passed to Admin Client.")
    p.add_argument("--alter", action="store_true", help="alter the configuration for the entity")
    p.add_argument("--describe", action="store_true", help="list configs for the given entity")
    p.add_argument("--all", action="store_true",
                   help="list all configs for the given topic or broker, not only the dynamic ones")
    p.add_argument("--entity-type", action="append", default=[],
                   help="topics/clients/users/brokers/broker-loggers/ips")
    p.add_argument("--entity-name", dest="entity_names", action=_EntityName,
                   help="topic name/client id/user principal name/broker id")
    p.add_argument("--entity-default", dest="entity_names", action=_EntityName, nargs=0,
                   help="the default entity of clients/users/brokers/ips")
    p.add_argument("--add-config", metavar="K1=V1,K2=[V1,V2]",
                   help="configs to add; square brackets group values that contain commas")
    p.add_argument("--add-config-file", metavar="FILE", help="a properties file of configs to add")
    p.add_argument("--delete-config", action="append", default=[], metavar="K1,K2",
                   help="config keys to remove")
    p.add_argument("--force", action="store_true", help="suppress console prompts (accepted; there are none)")
    p.add_argument("--topic", help="the topic's name")
    p.add_argument("--client", help="the client's id")
    p.add_argument("--client-defaults", action="store_true", help="the config defaults for all clients")
    p.add_argument("--user", help="the user's principal name")
    p.add_argument("--user-defaults", action="store_true", help="the config defaults for all users")
    p.add_argument("--broker", help="the broker's id")
    p.add_argument("--broker-defaults", action="store_true", help="the config defaults for all brokers")
    p.add_argument("--broker-logger", help="the broker's id for its logger config")
    p.add_argument("--ip", help="the IP address")
    p.add_argument("--ip-defaults", action="store_true", help="the config defaults for all IPs")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for the cluster")
    p.set_defaults(func=run, entity_names=None, configs_parser=p)


_ENTITY_FLAGS = (("topic", TOPICS), ("client", CLIENTS), ("user", USERS), ("broker", BROKERS),
                 ("broker_logger", BROKER_LOGGERS), ("ip", IPS))
_DEFAULT_FLAGS = (("client_defaults", CLIENTS), ("user_defaults", USERS), ("broker_defaults", BROKERS),
                  ("ip_defaults", IPS))


def entity_types(args: argparse.Namespace) -> list[str]:
    """Kafka's ``entityTypes``: the ``--entity-type`` values, then the shorthand flags' types."""
    return (list(args.entity_type)
            + [t for flag, t in _ENTITY_FLAGS if getattr(args, flag) is not None]
            + [t for flag, t in _DEFAULT_FLAGS if getattr(args, flag)])


def entity_names(args: argparse.Namespace) -> list[str]:
    """Kafka's ``entityNames``: names in command-line order ("" for a default), then the shorthand flags'."""
    return ([value for _, value in args.entity_names or []]
            + [getattr(args, flag) for flag, _ in _ENTITY_FLAGS if getattr(args, flag) is not None]
            + ["" for flag, _ in _DEFAULT_FLAGS if getattr(args, flag)])


def _java_int(text: str) -> bool:
    """Whether Java's ``Integer.parseInt`` accepts *text*."""
    return re.fullmatch(r"[+-]?[0-9]+", text) is not None and -(2**31) <= int(text) < 2**31


def _valid_ip_entity(name: str) -> bool:
    """``DynamicConfig.Ip.isValidIpEntity``: an address or a host name that resolves."""
    if name == DEFAULT_ENTITY:
        return True
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        pass
    try:
        socket.getaddrinfo(name, None)
        return True
    except OSError:
        return False


def check_args(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """(entity types, entity names) after Kafka 2.8's ``ConfigCommandOptions.checkArgs``.

    Raises:
        ConfigCommandError: the first rule broken, with Kafka's message.
    """
    if int(args.alter) + int(args.describe) != 1:
        raise ConfigCommandError("Command must include exactly one action: --describe, --alter", usage=True)
    if args.describe:
        for given, name in ((args.add_config is not None, "add-config"), (bool(args.delete_config), "delete-config")):
            if given:
                raise ConfigCommandError(f'Option "[describe]" can\'t be used with option "[{name}]"', usage=True)
    types, names = entity_types(args), entity_names(args)
    duplicates = list(types)
    for t in dict.fromkeys(types):
        duplicates.remove(t)
    if duplicates:
        raise ConfigCommandError(f"Duplicate entity type(s) specified: {','.join(duplicates)}")
    allowed, connect = (BROKER_SUPPORTED_TYPES, "--bootstrap-server") if args.bootstrap_server \
        else (ZK_SUPPORTED_TYPES, "--zookeeper")
    for t in types:
        if t not in allowed:
            raise ConfigCommandError(f"Invalid entity type {t}, the entity type must be one of "
                                     f"{','.join(allowed)} with the {connect} argument")
    if not types:
        raise ConfigCommandError("At least one entity type must be specified")
    if len(types) > 1 and set(types) != {USERS, CLIENTS}:
        raise ConfigCommandError(f"Only '{USERS}' and '{CLIENTS}' entity types may be specified together")
    flags = [f for f, _ in _ENTITY_FLAGS if getattr(args, f) is not None] + [f for f, _ in _DEFAULT_FLAGS if getattr(args, f)]
    if (args.entity_names or args.entity_type) and flags:
        raise ConfigCommandError("--entity-{type,name,default} should not be used in conjunction with specific entity flags")
    has_name = any(n != "" for n in names)
    has_default = any(n == "" for n in names)
    if not args.bootstrap_server and not args.zookeeper:
        raise ConfigCommandError("One of the required --bootstrap-server or --zookeeper arguments must be specified")
    if args.bootstrap_server and args.zookeeper:
        raise ConfigCommandError("Only one of --bootstrap-server or --zookeeper must be specified")
    if args.all and args.zookeeper:
        raise ConfigCommandError("--bootstrap-server must be specified for --all")
    given_names = [v for kind, v in args.entity_names or [] if kind == "name"][:1]
    if has_name and (BROKERS in types or BROKER_LOGGERS in types):
        for broker_id in given_names + [v for v in (args.broker, args.broker_logger) if v is not None]:
            if not _java_int(broker_id):
                raise ConfigCommandError(f"The entity name for {types[0]} must be a valid integer broker id, "
                                         f"but it is: {broker_id}")
    if has_name and IPS in types:
        for ip in given_names + ([args.ip] if args.ip is not None else []):
            if not _valid_ip_entity(ip):
                raise ConfigCommandError(f"The entity name for {types[0]} must be a valid IP or resolvable host, "
                                         f"but it is: {ip}")
    if args.describe and BROKER_LOGGERS in types and not has_name:
        raise ConfigCommandError(f"an entity name must be specified with --describe of {','.join(types)}")
    if args.alter:
        if any(t in types for t in (USERS, CLIENTS, BROKERS, IPS)):
            if not has_name and not has_default:
                raise ConfigCommandError("an entity-name or default entity must be specified with --alter of "
                                         "users, clients, brokers or ips")
        elif not has_name:
            raise ConfigCommandError(f"an entity name must be specified with --alter of {','.join(types)}")
        if args.add_config is not None and args.add_config_file is not None:
            raise ConfigCommandError("Only one of --add-config or --add-config-file must be specified")
        if args.add_config is None and args.add_config_file is None and not args.delete_config:
            raise ConfigCommandError("At least one of --add-config, --add-config-file, or --delete-config "
                                     "must be specified with --alter")
    return types, names


# ----------------------------------------------------------------------------- configs given


def _java_split(text: str, pattern: str, keep_trailing: bool) -> list[str]:
    """Java's ``String.split(regex)`` (limit 0 drops trailing empty strings) or ``split(regex, -1)``."""
    parts = re.split(pattern, text)
    if len(parts) == 1 or keep_trailing:
        return parts
    while parts and parts[-1] == "":
        parts.pop()
    return parts


_OUTSIDE_BRACKETS = r"(?=[^\]]*(?:\[|$))"


def parse_add_config(text: str) -> dict[str, str]:
    """``--add-config 'k1=v1,k2=[a,b,c]'`` → ``{"k1": "v1", "k2": "a,b,c"}`` (Kafka's ``parseConfigsToBeAdded``).

    Commas and ``=`` inside square brackets do not split; every ``[`` and
    ``]`` is then dropped from the values, and keys and values are trimmed.
    An empty value (``k=``) is allowed.

    Raises:
        ConfigCommandError: a pair that is not exactly ``key=val``.
    """
    pairs = [_java_split(pair, r"\s*=\s*" + _OUTSIDE_BRACKETS, keep_trailing=True)
             for pair in _java_split(text, "," + _OUTSIDE_BRACKETS, keep_trailing=False)]
    if not all(len(p) == 2 for p in pairs):
        raise ConfigCommandError('Invalid entity config: all configs to be added must be in the format "key=val".')
    return {key.strip(): re.sub(r"[\[\]]", "", value).strip() for key, value in pairs}


def _configs_to_add(args: argparse.Namespace) -> dict[str, str]:
    props: dict[str, str] = {}
    if args.add_config_file is not None:
        try:
            props.update(load_properties(args.add_config_file))
        except ValueError as exc:  # a malformed \uxxxx escape, as Java's Properties.load
            raise ConfigCommandError(f"{args.add_config_file}: {exc}") from None
        except OSError as exc:
            raise ConfigCommandError(f"{args.add_config_file} ({exc.strerror or exc})",
                                     "java.nio.file.NoSuchFileException" if isinstance(exc, FileNotFoundError)
                                     else "java.io.IOException") from None
    if args.add_config is not None:
        props.update(parse_add_config(args.add_config))
    if "message.format.version" in props:
        print(f"WARNING: The configuration message.format.version={props['message.format.version']} is specified. "
              "This configuration will be ignored if the version is newer than the inter.broker.protocol.version "
              "specified in the broker.")
    return props


def _configs_to_delete(args: argparse.Namespace) -> list[str]:
    return [name.strip() for entry in args.delete_config for name in entry.split(",")]


def _scala_set(items: Iterable[str]) -> str:
    return f"Set({', '.join(items)})"


# ----------------------------------------------------------------------------- output


def _java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units), as an unsigned 32-bit int."""
    data = text.encode("utf-16-be")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h


def java_hash_order(keys: Iterable[str], concurrent: bool = False) -> list[str]:
    """*keys* in the iteration order of a Java ``HashMap`` they were put into, in this order.

    Buckets by ``hash ^ (hash >>> 16)`` in a table of 16 doubled while the map
    is over ¾ full (``concurrent``: a ``ConcurrentHashMap``, as
    ``java.util.Properties`` keeps, which grows at ¾ rather than beyond it);
    one bucket's keys in insertion order.
    """
    ordered = list(dict.fromkeys(keys))
    capacity = 16
    while (len(ordered) >= capacity * 3 // 4) if concurrent else (len(ordered) > capacity * 3 // 4):
        capacity *= 2

    def bucket(key: str) -> int:
        h = _java_string_hash(key)
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(ordered, key=bucket)


def _java_bool(value: bool) -> str:
    return "true" if value else "false"


def _java_str(value: str | None) -> str:
    return "null" if value is None else value


def _source_name(source: Any) -> str:
    return _SOURCE_NAMES.get(int(source), "UNKNOWN")


def format_config_entry(entry: ConfigEntry) -> str:
    """``  name=value sensitive=false synonyms={SOURCE:name=value, …}`` (Kafka's describe line)."""
    synonyms = ", ".join(f"{_source_name(s.source)}:{s.name}={_java_str(s.value)}" for s in entry.synonyms.values())
    return f"  {entry.name}={_java_str(entry.value)} sensitive={_java_bool(entry.is_sensitive)} synonyms={{{synonyms}}}"


def _entity_string(entity_type: str, sanitized: str | None) -> str:
    """Kafka's ``ConfigCommand.Entity.toString``: ``topic 't'``, ``user-principal 'alice'``, ``default brokers``."""
    type_name = {USERS: "user-principal", CLIENTS: "client-id", TOPICS: "topic"}.get(entity_type, entity_type)
    if sanitized is None:
        return entity_type
    if sanitized == DEFAULT_ENTITY:
        return f"default {type_name}"
    if entity_type in (USERS, CLIENTS):
        from mafka.broker.scram import desanitize

        sanitized = desanitize(sanitized)
    return f"{type_name} '{sanitized}'"


# ----------------------------------------------------------------------------- SCRAM


def _scram_salt() -> bytes:
    """Kafka's ``ScramFormatter.secureRandomBytes``: a random 130-bit number in base 36, as UTF-8."""
    value = secrets.randbits(130)
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        value, rest = divmod(value, 36)
        out = digits[rest] + out
        if not value:
            return out.encode("ascii")


def _salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    """RFC 5802's ``Hi(Normalize(password), salt, i)`` (Kafka's ``ScramFormatter.hi``)."""
    return hashlib.pbkdf2_hmac(SCRAM_MECHANISMS[mechanism][1], password.encode("utf-8"), salt, iterations)


def _scram_iterations_password(mechanism: str, text: str, zookeeper: bool) -> tuple[int, str]:
    """``[iterations=N,]password=P`` → (iterations, password), checked as Kafka's tool checks it."""
    internal = mechanism.replace("-", "_")
    found = re.fullmatch(r"(?:iterations=([0-9]*),)?password=(.*)" if zookeeper
                         else r"(?:iterations=(-?[0-9]*),)?password=(.*)", text)
    if found is None:
        raise ConfigCommandError(f"Invalid credential property {internal}={text}")
    raw, password = found.group(1), found.group(2)
    if raw is None or (not zookeeper and raw == "-1"):
        iterations = DEFAULT_SCRAM_ITERATIONS
    elif not _java_int(raw):
        raise ConfigCommandError(f'For input string: "{raw}"', "java.lang.NumberFormatException")
    else:
        iterations = int(raw)
    if iterations < MIN_SCRAM_ITERATIONS:
        raise ConfigCommandError(f"Iterations {iterations} is less than the minimum {MIN_SCRAM_ITERATIONS} "
                                 f"required for {internal if zookeeper else mechanism}")
    return iterations, password


def _scram_credential(mechanism: str, text: str) -> str:
    """The stored form of a new credential (``preProcessScramCredentials``), for ``--zookeeper``."""
    from mafka.broker.scram import ScramMechanism, credential_to_string, generate_credential

    iterations, password = _scram_iterations_password(mechanism, text, zookeeper=True)
    salt = _scram_salt()
    credential = generate_credential(ScramMechanism(SCRAM_MECHANISMS[mechanism][0]), salt,
                                     _salted_password(mechanism, password, salt, iterations), iterations)
    return credential_to_string(credential)


# ----------------------------------------------------------------------------- errors


_TIMEOUTS = frozenset({ClientError._TIMED_OUT, ClientError._TRANSPORT, ClientError._ALL_BROKERS_DOWN})


def _broker_failure(code: int, message: str | None) -> ConfigCommandError:
    """A broker error code as the ExecutionException Kafka's ``…all().get()`` throws."""
    try:
        ec = ErrorCode(code)
    except ValueError:
        return ConfigCommandError(message or f"error code {code}", f"{_EXECUTION}: org.apache.kafka.common.KafkaException")
    return ConfigCommandError(message or ec.description, f"{_EXECUTION}: {java_class(ec)}")


def _timed_out(call: str) -> ConfigCommandError:
    return ConfigCommandError(f"Timed out waiting for a node assignment. Call: {call}",
                              f"{_EXECUTION}: {_ERRORS}.TimeoutException")


def _result(future: Any, timeout: float, call: str) -> Any:
    try:
        return future.result(timeout + 5.0)
    except KafkaException as exc:
        err = exc.error
        if err.code() in _TIMEOUTS:
            raise _timed_out(call) from None
        try:
            ErrorCode(err.code())
        except ValueError:
            raise ConfigCommandError(err.str(), f"{_EXECUTION}: org.apache.kafka.common.KafkaException") from None
        raise _broker_failure(err.code(), error_text(err)) from None
    except TimeoutError:
        raise ConfigCommandError("", "java.util.concurrent.TimeoutException") from None


def _command_line() -> str:
    argv = sys.argv[1:]
    return " ".join(argv[argv.index("configs") + 1:] if "configs" in argv else argv)


def _report(exc: ConfigCommandError, parser: argparse.ArgumentParser | None) -> None:
    if exc.exception is None:
        print(exc.message, file=sys.stderr)
        if exc.usage and parser is not None:
            print(parser.format_help(), file=sys.stderr, end="")
        return
    print(f"Error while executing config command with args '{_command_line()}'", file=sys.stderr)
    print(f"{exc.exception}: {exc.message}" if exc.message else exc.exception, file=sys.stderr)


# ----------------------------------------------------------------------------- --bootstrap-server


def _resource(entity_type: str, name: str) -> tuple[ConfigResource, ConfigSource]:
    """The ConfigResource of an entity and the source of its dynamic configs (``getResourceConfig``)."""
    if entity_type == TOPICS:
        if name:
            from mafka.errors import InvalidTopicError
            from mafka.topics import validate_topic_name

            try:
                validate_topic_name(name)
            except InvalidTopicError as exc:
                raise ConfigCommandError(exc.message, f"{_ERRORS}.InvalidTopicException") from None
        return ConfigResource(ResourceType.TOPIC, name), ConfigSource.DYNAMIC_TOPIC_CONFIG
    if entity_type == BROKERS:
        if name == "":
            return ConfigResource(ResourceType.BROKER, name), ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
        if not _java_int(name):
            raise ConfigCommandError(f"The entity name for {entity_type} must be a valid integer broker id, found: {name}")
        return ConfigResource(ResourceType.BROKER, name), ConfigSource.DYNAMIC_BROKER_CONFIG
    if entity_type == BROKER_LOGGERS:
        raise ConfigCommandError(_BROKER_LOGGERS_UNSUPPORTED)
    raise ConfigCommandError(f"Invalid entity type: {entity_type}")


def _resource_config(admin: AdminClient, entity_type: str, name: str, describe_all: bool,
                     timeout: float) -> list[ConfigEntry]:
    """Kafka's ``getResourceConfig``: the entity's entries (only its dynamic ones unless *describe_all*)."""
    resource, dynamic = _resource(entity_type, name)
    futures = admin.describe_configs([resource], request_timeout=timeout)
    entries: dict[str, ConfigEntry] = _result(futures[resource], timeout, "describeConfigs")
    return [entries[k] for k in java_hash_order(entries)
            if describe_all or entries[k].source == dynamic]


def _describe_resources(admin: AdminClient, entity_type: str, name: str | None, describe_all: bool,
                        timeout: float) -> None:
    if name is not None:
        names = [name]
    elif entity_type == TOPICS:
        try:
            listed = admin.list_topics(timeout=timeout)
        except KafkaException as exc:
            if exc.error.code() in _TIMEOUTS:
                raise _timed_out("listTopics") from None
            raise _broker_failure(exc.error.code(), error_text(exc.error)) from None
        names = java_hash_order(sorted(t for t, m in listed.topics.items() if m.error is None))
    else:
        cluster = _result(admin.describe_cluster(request_timeout=timeout), timeout, "describeCluster")
        names = [str(n.id) for n in sorted(cluster.nodes, key=lambda n: n.id)] + [""]
    for entity in names:
        if entity == "":
            print(f"Default configs for {entity_type} in the cluster are:")
        else:
            print(f"{'All' if describe_all else 'Dynamic'} configs for {entity_type[:-1]} {entity} are:")
        sys.stdout.flush()
        for entry in _resource_config(admin, entity_type, entity, describe_all, timeout):
            print(format_config_entry(entry))


def _alter_resource(admin: AdminClient, entity_type: str, name: str, added: dict[str, str],
                    deleted: list[str], timeout: float) -> None:
    """Topics and brokers: IncrementalAlterConfigs, after checking that what is deleted is set."""
    old = {e.name for e in _resource_config(admin, entity_type, name, False, timeout)}
    invalid = [k for k in deleted if k not in old]
    if invalid:
        raise ConfigCommandError(f"Invalid config(s): {','.join(invalid)}")
    resource, _ = _resource(entity_type, name)
    for key, value in added.items():
        resource.add_incremental_config(ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET))
    for key in deleted:
        resource.add_incremental_config(ConfigEntry(key, "", incremental_operation=AlterConfigOpType.DELETE))
    if resource.incremental_configs:
        futures = admin.incremental_alter_configs([resource], request_timeout=timeout)
        _result(futures[resource], timeout, "incrementalAlterConfigs")


DESCRIBE_CLIENT_QUOTAS = 48
ALTER_CLIENT_QUOTAS = 49
DESCRIBE_USER_SCRAM_CREDENTIALS = 50
ALTER_USER_SCRAM_CREDENTIALS = 51


async def _admin_request(bootstrap: str, timeout: float, api_key: int, body: dict[str, Any],
                         command_config: str | None = None) -> Any:
    """Sends one admin request and returns the answer.

    SCRAM alterations go to the controller (retried while it moves); the
    others to any broker (Kafka's ``LeastLoadedNodeProvider``), retried while
    none is reachable.
    """
    from mafka.client.config import parse_config
    from mafka.client.kernel import Kernel

    kernel = Kernel(parse_config("admin", admin_config(bootstrap, "mafka-configs", timeout, command_config)))
    try:
        async with asyncio.timeout(timeout):
            while True:
                try:
                    if api_key != ALTER_USER_SCRAM_CREDENTIALS:
                        return await kernel.send_any(api_key, body)
                    md = await kernel.refresh_metadata()
                    if md.controller_id >= 0 and md.controller_id in md.brokers:
                        response = await kernel.send(md.controller_id, api_key, body)
                        if not any(r.error_code == ErrorCode.NOT_CONTROLLER for r in response.results):
                            return response
                except (ConnectionError, TimeoutError):
                    pass
                await asyncio.sleep(0.2)
    finally:
        await kernel.close()


_CALLS = {DESCRIBE_USER_SCRAM_CREDENTIALS: "describeUserScramCredentials",
          ALTER_USER_SCRAM_CREDENTIALS: "alterUserScramCredentials",
          DESCRIBE_CLIENT_QUOTAS: "describeClientQuotas", ALTER_CLIENT_QUOTAS: "alterClientQuotas"}


def _admin(args: argparse.Namespace, api_key: int, body: dict[str, Any]) -> Any:
    try:
        return asyncio.run(_admin_request(args.bootstrap_server, args.timeout, api_key, body,
                                          args.command_config))
    except TimeoutError:
        raise _timed_out(_CALLS[api_key]) from None


_scram = _admin


def _zookeeper_form() -> Any:
    """:mod:`mafka.cli.configs_zookeeper` (imported on use: it imports this module's helpers)."""
    from mafka.cli import configs_zookeeper  # noqa: PLC0415 (a cycle at module level)

    return configs_zookeeper


def _quotas() -> Any:
    """:mod:`mafka.cli.configs_quotas` (imported on use: it imports this module's helpers)."""
    from mafka.cli import configs_quotas  # noqa: PLC0415 (a cycle at module level)

    return configs_quotas


def _describe_users(args: argparse.Namespace, types: list[str], names: list[str]) -> None:
    """Kafka's ``describeClientQuotaAndUserScramCredentialConfigs``: quotas, then SCRAM credentials.

    The credentials are described only without clients and without a default entity.
    """
    _quotas().describe_quotas(args, types, names)
    if CLIENTS in types or "" in names:
        return
    body = {"users": [{"name": n} for n in names] or None}
    response = _scram(args, DESCRIBE_USER_SCRAM_CREDENTIALS, body)
    if response.error_code:
        raise _broker_failure(response.error_code, response.error_message)
    mechanisms = {number: name for name, (number, _) in SCRAM_MECHANISMS.items()}
    for result in response.results:
        if result.error_code == ErrorCode.RESOURCE_NOT_FOUND:
            continue
        if result.error_code:
            failure = _broker_failure(result.error_code, result.error_message)
            simple = (failure.exception or "").rsplit(".", 1)[-1]
            print(f"Error retrieving SCRAM credential configs for user-principal '{result.user}': "
                  f"{simple}: {failure.message}")
            continue
        text = ", ".join(f"{mechanisms.get(i.mechanism, 'UNKNOWN')}=iterations={i.iterations}"
                         for i in result.credential_infos)
        print(f"SCRAM credential configs for user-principal '{result.user}' are {text}")


def _alter_users(args: argparse.Namespace, types: list[str], names: list[str], added: dict[str, str],
                 deleted: list[str]) -> None:
    """Kafka's ``alterConfig`` for users and clients: quotas (AlterClientQuotas) or SCRAM credentials."""
    scram_add = {k: v for k, v in added.items() if k in SCRAM_MECHANISMS}
    unknown_add = [k for k in added if k not in SCRAM_MECHANISMS and k not in QUOTA_CONFIGS]
    scram_delete = [k for k in deleted if k in SCRAM_MECHANISMS]
    unknown_delete = [k for k in deleted if k not in SCRAM_MECHANISMS and k not in QUOTA_CONFIGS]
    quotas = any(k in QUOTA_CONFIGS for k in added) or any(k in QUOTA_CONFIGS for k in deleted)
    if types[0] == CLIENTS or len(types) == 2:
        if unknown_add or scram_add:
            raise ConfigCommandError(f"Only quota configs can be added for '{CLIENTS}' using --bootstrap-server. "
                                     f"Unexpected config names: {_scala_set(unknown_add + list(scram_add))}")
        if unknown_delete or scram_delete:
            raise ConfigCommandError(f"Only quota configs can be deleted for '{CLIENTS}' using --bootstrap-server. "
                                     f"Unexpected config names: ArrayBuffer({', '.join(unknown_delete + scram_delete)})")
    else:
        if unknown_add:
            raise ConfigCommandError(f"Only quota and SCRAM credential configs can be added for '{USERS}' using "
                                     f"--bootstrap-server. Unexpected config names: {_scala_set(unknown_add)}")
        if unknown_delete:
            raise ConfigCommandError(f"Only quota and SCRAM credential configs can be deleted for '{USERS}' using "
                                     f"--bootstrap-server. Unexpected config names: "
                                     f"ArrayBuffer({', '.join(unknown_delete)})")
        if scram_add or scram_delete:
            if "" in names:
                raise ConfigCommandError("The use of --entity-default or --user-defaults is not allowed with User "
                                         "SCRAM Credentials using --bootstrap-server.")
            if quotas:
                raise ConfigCommandError(f"Cannot alter both quota and SCRAM credential configs simultaneously for "
                                         f"'{USERS}' using --bootstrap-server.")
    if quotas:
        _quotas().alter_quotas(args, types, names, added, deleted)
        return
    user = names[0]
    upsertions = []
    for mechanism, text in scram_add.items():
        iterations, password = _scram_iterations_password(mechanism, text, zookeeper=False)
        salt = _scram_salt()
        upsertions.append({"name": user, "mechanism": SCRAM_MECHANISMS[mechanism][0], "iterations": iterations,
                           "salt": salt, "salted_password": _salted_password(mechanism, password, salt, iterations)})
    deletions = [{"name": user, "mechanism": SCRAM_MECHANISMS[m][0]} for m in scram_delete]
    response = _scram(args, ALTER_USER_SCRAM_CREDENTIALS, {"deletions": deletions, "upsertions": upsertions})
    for result in response.results:
        if result.error_code:
            raise _broker_failure(result.error_code, result.error_message)


def _run_bootstrap(args: argparse.Namespace, types: list[str], names: list[str]) -> None:
    if args.alter and len(types) != len(names):
        raise ConfigCommandError("An entity name must be specified for every entity type")
    head = types[0]
    if head == BROKER_LOGGERS:
        raise ConfigCommandError(_BROKER_LOGGERS_UNSUPPORTED)
    if head == IPS:
        # Mafka's brokers answer IP quotas (KIP-612) with an error saying they are not supported.
        if args.describe:
            _quotas().describe_quotas(args, types, names)
        else:
            added, deleted = _configs_to_add(args), _configs_to_delete(args)
            unknown = [k for k in (*added, *deleted) if k not in IP_QUOTA_CONFIGS]
            if unknown:
                raise ConfigCommandError(f"Only connection quota configs can be added for '{IPS}' using "
                                         f"--bootstrap-server. Unexpected config names: {','.join(unknown)}")
            _quotas().alter_quotas(args, types, names, added, deleted)
    elif head in (USERS, CLIENTS):
        if args.describe:
            _describe_users(args, types, names)
        else:
            _alter_users(args, types, names, _configs_to_add(args), _configs_to_delete(args))
    else:
        with AdminClient(admin_config(args.bootstrap_server, "mafka-configs", args.timeout,
                                      args.command_config)) as admin:
            if args.describe:
                _describe_resources(admin, head, names[0] if names else None, args.all, args.timeout)
                return
            _alter_resource(admin, head, names[0], _configs_to_add(args), _configs_to_delete(args), args.timeout)
    if args.alter:
        if names[0]:
            print(f"Completed updating config for {head[:-1]} {names[0]}.")
        else:
            print(f"Completed updating default config for {head} in the cluster.")


# ----------------------------------------------------------------------------- --zookeeper


def run(args: argparse.Namespace) -> int:
    parser = getattr(args, "configs_parser", None)
    started = time.monotonic()
    try:
        types, names = check_args(args)
        if args.zookeeper:
            _zookeeper_form().run_zookeeper(args, types, names)
        else:
            _run_bootstrap(args, types, names)
    except ConfigCommandError as exc:
        sys.stdout.flush()
        _report(exc, parser)
        return 1
    except ValueError as exc:  # a bad --bootstrap-server list
        sys.stdout.flush()
        _report(ConfigCommandError(str(exc), "org.apache.kafka.common.config.ConfigException"), parser)
        return 1
    except TimeoutError:
        sys.stdout.flush()
        _report(ConfigCommandError(f"timed out after {time.monotonic() - started:.1f}s",
                                   "java.util.concurrent.TimeoutException"), parser)
        return 1
    sys.stdout.flush()
    return 0
