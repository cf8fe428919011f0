"""Where broker config values come from, and which unknown keys are worth a warning.

Owns the three sources :meth:`~mafka.broker.config.BrokerConfig.from_file`
merges, lowest precedence first (:func:`collect_properties`):

1. a ``server.properties`` file, read as Kafka's ``Utils.loadProps``
   (:func:`load_properties`, :func:`parse_properties`; the syntax itself is
   :mod:`mafka.properties`);
2. ``KAFKA_*`` environment variables by the cp-kafka image's rule
   (:func:`env_var_to_key`, :func:`env_overrides`), launcher variables
   (:data:`NON_CONFIG_ENV_VARS`, ``KAFKA_JMX_*``) skipped;
3. ``--set key=value`` overrides (:func:`parse_override`).

It also owns the unknown-key policy: Kafka's "supplied but isn't a known
config" warning (:func:`warn_unknown`, logged on the ``mafka.broker.config``
logger), silent for the families Mafka passes through unmodelled
(:data:`PASSTHROUGH_PREFIXES`).  Turning the raw strings into typed values
is :class:`~mafka.broker.config_keys.ConfigKey`'s business.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

from mafka import properties
from mafka.errors import ConfigError

__all__ = [
    "NON_CONFIG_ENV_VARS",
    "PASSTHROUGH_PREFIXES",
    "collect_properties",
    "env_overrides",
    "env_var_to_key",
    "key_to_env_var",
    "load_properties",
    "parse_override",
    "parse_properties",
    "warn_unknown",
]

# The broker config's logger (the name operators filter on), though the warning is issued here.
log = logging.getLogger("mafka.broker.config")

#: ``KAFKA_*`` environment variables that configure the launcher (JVM, log4j, JMX), not the broker:
#: the exclusions of cp-kafka's ``kafka.properties.template`` plus those of Apache Kafka's
#: ``kafka-run-class.sh``.  Every ``KAFKA_JMX_*`` variable is skipped as well.
NON_CONFIG_ENV_VARS: Final = frozenset(
    {
        "KAFKA_VERSION",
        "KAFKA_HOME",
        "KAFKA_HEAP_OPTS",
        "KAFKA_OPTS",
        "KAFKA_JVM_PERFORMANCE_OPTS",
        "KAFKA_GC_LOG_OPTS",
        "KAFKA_LOG4J_OPTS",
        "KAFKA_LOG4J_ROOT_LOGLEVEL",
        "KAFKA_LOG4J_LOGGERS",
        "KAFKA_TOOLS_LOG4J_LOGLEVEL",
        "KAFKA_DEBUG",
        "KAFKA_JMX_OPTS",
        "KAFKA_JMX_PORT",
        "KAFKA_JMX_HOSTNAME",
    }
)
_NON_CONFIG_ENV_PREFIXES: Final = ("KAFKA_JMX_",)
_ENV_PREFIX: Final = "KAFKA_"

#: Kafka broker config families Mafka does not model; such keys are kept in
#: :attr:`BrokerConfig.unknown` without the unknown-key warning.
PASSTHROUGH_PREFIXES: Final = (
    "listener.name.",
    "ssl.",
    "sasl.",
    "zookeeper.ssl.",
    "security.providers",
    "principal.builder.class",
    "super.users",
    "allow.everyone.if.no.acl.found",
    "quota.",
    "replication.quota.",
    "alter.log.dirs.replication.quota.",
    "controller.quota.",
    "client.quota.callback.class",
    "delegation.token.",
    "password.encoder.",
)


# =================================================================== Java properties files

def parse_properties(text: str) -> dict[str, str]:
    """Parse Java ``.properties`` text exactly as ``java.util.Properties.load(Reader)``.

    See :mod:`mafka.properties`: the key ends at the first unescaped ``=``,
    ``:`` or blank; blanks and one ``=``/``:`` after it are skipped; the rest of
    the logical line (trailing blanks included) is the value.  A later duplicate
    key wins.

    Raises:
        ConfigError: a malformed ``\\uXXXX`` escape.
    """
    try:
        return properties.loads(text)
    except properties.MalformedEscapeError as exc:
        raise ConfigError(f"{exc} (line {exc.line})") from None


def load_properties(path: str | os.PathLike[str]) -> dict[str, str]:
    """Read a properties file as Kafka's ``Utils.loadProps``: ISO-8859-1 bytes, Java syntax.

    Raises:
        OSError: the file cannot be read.
        ConfigError: a malformed ``\\uXXXX`` escape.
    """
    data = Path(path).read_bytes()
    try:
        return parse_properties(data.decode("iso-8859-1"))
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None


# =================================================================== environment and overrides

_ENV_SINGLE_UNDERSCORE: Final = re.compile(r"(?<=[^_])_(?=[^_])")


def env_var_to_key(name: str) -> str | None:
    """The config key a ``KAFKA_*`` environment variable sets, or ``None`` if it sets none.

    cp-kafka's rule (confluent-docker-utils ``env_to_props``): drop the
    ``KAFKA_`` prefix, lower-case, turn each single ``_`` (one between two
    non-underscores) into ``.``, then ``___`` into ``-`` and ``__`` into ``_``.
    Launcher variables (:data:`NON_CONFIG_ENV_VARS`, ``KAFKA_JMX_*``) give ``None``.

    >>> env_var_to_key("KAFKA_LISTENER_SECURITY_PROTOCOL_MAP")
    'listener.security.protocol.map'
    >>> env_var_to_key("KAFKA_LISTENER_NAME_INTERNAL_SSL_KEY___PASSWORD")
    'listener.name.internal.ssl.key-password'
    >>> env_var_to_key("KAFKA_HEAP_OPTS") is None
    True
    """
    if not name.startswith(_ENV_PREFIX) or name in NON_CONFIG_ENV_VARS:
        return None
    if name.startswith(_NON_CONFIG_ENV_PREFIXES):
        return None
    raw = name[len(_ENV_PREFIX) :].lower()
    if not raw:
        return None
    dotted = ".".join(_ENV_SINGLE_UNDERSCORE.split(raw))
    return "_".join("-".join(dotted.split("___")).split("__"))


def key_to_env_var(key: str) -> str:
    """The ``KAFKA_*`` variable that sets ``key`` (inverse of :func:`env_var_to_key`).

    >>> key_to_env_var("advertised.listeners")
    'KAFKA_ADVERTISED_LISTENERS'
    """
    return _ENV_PREFIX + key.replace("_", "__").replace("-", "___").replace(".", "_").upper()


def env_overrides(env: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    """The config keys set by ``env``, as ``{key: (value, variable name)}``.

    Variables are applied in sorted name order, so if two map to one key the
    result does not depend on the environment's order.
    """
    out: dict[str, tuple[str, str]] = {}
    for name in sorted(env):
        key = env_var_to_key(name)
        if key is not None:
            out[key] = (env[name], name)
    return out


def parse_override(text: str) -> tuple[str, str]:
    """Split one ``--set key=value`` argument at its first ``=``.

    Raises:
        ConfigError: no ``=`` or an empty key.
    """
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"override {text!r} is not of the form key=value")
    return key, value


def collect_properties(
    path: str | os.PathLike[str] | None,
    env: Mapping[str, str] | None,
    overrides: Mapping[str, Any] | Iterable[str] | None,
) -> tuple[dict[str, Any], dict[str, str]]:
    """The file's properties, then ``env``'s ``KAFKA_*`` variables, then ``overrides``, each over the last.

    Returns ``(key → raw value, key → where it was set)``; see
    :meth:`~mafka.broker.config.BrokerConfig.from_file` for the arguments.

    Raises:
        OSError: the file cannot be read.
        ConfigError: a malformed file or override.
    """
    merged: dict[str, Any] = {}
    sources: dict[str, str] = {}
    if path is not None:
        for key, value in load_properties(path).items():
            merged[key], sources[key] = value, str(path)
    for key, (value, var) in env_overrides(env or {}).items():
        merged[key], sources[key] = value, f"environment variable {var}"
    if overrides is not None:
        pairs = overrides.items() if isinstance(overrides, Mapping) else map(parse_override, overrides)
        for key, value in pairs:
            merged[key], sources[key] = value, "--set override"
    return merged, sources


# =================================================================== unknown keys

def _is_passthrough(key: str) -> bool:
    return key.startswith(PASSTHROUGH_PREFIXES)


def warn_unknown(key: str, source: str | None) -> None:
    """Kafka's warning for a key no config defines, unless its family is passed through (:data:`PASSTHROUGH_PREFIXES`)."""
    if not _is_passthrough(key):
        where = f" (set by {source})" if source else ""
        log.warning("The configuration '%s' was supplied but isn't a known config.%s", key, where)
