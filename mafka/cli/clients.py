"""What the CLI tools share on top of :mod:`mafka.client`: properties, client settings, log lines.

The tools build :class:`~mafka.client.Producer`, :class:`~mafka.client.Consumer` and
:class:`~mafka.client.AdminClient` from Kafka-style ``key=value`` properties
(``--producer-property``, ``--consumer-property``, ``--producer-props``, and the
``--producer.config`` / ``--consumer.config`` files).  Kafka's Java clients accept
keys Mafka's client does not know (serializer classes, Java-only tuning); as the
Java client does, such keys are left out with a ``WARN … was supplied but isn't a
known config.`` line on stderr, and the serializer/deserializer class keys the
tools themselves set in Kafka are dropped silently.  A known key with a bad value
is an error (:class:`mafka.client.ConfigError`).  The Java client's TLS and SASL
keys (``sasl.jaas.config``, ``ssl.truststore.location`` …) are translated to
mafka.client's first (:mod:`mafka.client.java_security`), so a Java tool's
security configuration file works unchanged; :func:`admin_config` reads the
admin tools' ``--command-config`` / ``--admin.config`` file.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from mafka import properties
from mafka.cli.java_exceptions import java_class
from mafka.client.config import PROPERTIES
from mafka.client.java_security import translate_java_security
from mafka.client.kafka_error import KafkaError as ClientError
from mafka.errors import ConfigError, ErrorCode

__all__ = [
    "KafkaToolError",
    "stamp",
    "log_line",
    "parse_properties",
    "load_properties",
    "known_config",
    "client_settings",
    "admin_config",
    "java_double",
    "java_exception",
    "error_text",
]

#: Keys a Kafka tool sets for its Java client that mean nothing to Mafka's (bytes in, bytes out).
JAVA_ONLY_KEYS = frozenset({
    "key.serializer", "value.serializer", "key.deserializer", "value.deserializer",
})

_KNOWN = frozenset({p.name for p in PROPERTIES} | {a.name for p in PROPERTIES for a in p.aliases})

_CONFIG_CLASS = {
    "producer": "org.apache.kafka.clients.producer.ProducerConfig",
    "consumer": "org.apache.kafka.clients.consumer.ConsumerConfig",
    "admin": "org.apache.kafka.clients.admin.AdminClientConfig",
}


class KafkaToolError(Exception):
    """A tool failure printed as Kafka prints its exception: ``class: message`` on stderr, exit status 1."""

    def __init__(self, message: str, exception: str = "kafka.admin.AdminOperationException") -> None:
        super().__init__(message)
        self.message = message
        self.exception = exception

    def __str__(self) -> str:
        return f"{self.exception}: {self.message}"


def stamp() -> str:
    """log4j's ``[%d]`` timestamp: ``2024-01-02 03:04:05,678``."""
    return datetime.now().strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]


def log_line(level: str, message: str, logger: str) -> str:
    """One line as Kafka's tools log it: ``[stamp] LEVEL message (logger)``."""
    return f"[{stamp()}] {level} {message} ({logger})"


def parse_properties(entries: Iterable[str]) -> dict[str, str]:
    """``["k=v", …]`` → ``{k: v}`` (Kafka's ``parseKeyValueArgs``: split at the first ``=``).

    Raises:
        ValueError: an entry without ``=``.
    """
    out = {}
    for entry in entries:
        key, sep, value = entry.partition("=")
        if not sep:
            raise ValueError(f"Invalid property: {entry} (expected key=value)")
        out[key.strip()] = value
    return out


def load_properties(path: str) -> dict[str, str]:
    """A Java ``.properties`` file as Kafka's ``Utils.loadProps`` reads it (``Properties.load(InputStream)``,
    see :mod:`mafka.properties`): ISO-8859-1 bytes, ``key=value`` / ``key: value`` / ``key value``
    lines, ``#``/``!`` comments, backslash escapes and continuations; values keep trailing blanks.

    Raises:
        OSError: the file cannot be read.
        ValueError: a malformed ``\\uXXXX`` escape (:class:`mafka.properties.MalformedEscapeError`;
            Kafka's tools die of ``IllegalArgumentException: Malformed \\uxxxx encoding.``).
    """
    return properties.load_file(path)


def known_config(key: str) -> bool:
    """Whether :mod:`mafka.client` knows ``key`` (as spelled, or kafka-python's ``_`` form)."""
    return key in _KNOWN or ("_" in key and key.replace("_", ".") in _KNOWN)


def client_settings(props: Mapping[str, Any], role: str, warn: bool = True) -> dict[str, Any]:
    """``props`` with the Java client's security keys translated, without the keys Mafka's
    client does not know (each one warned about on stderr as the Java client does, except the
    serializer classes), ready for a ``role`` client.

    Raises:
        ConfigError (a ValueError): a security setting Mafka cannot honour
            (see :func:`mafka.client.java_security.translate_java_security`).
    """
    out: dict[str, Any] = {}
    for key, value in translate_java_security(props).items():
        if known_config(key):
            out[key] = value
        elif warn and key not in JAVA_ONLY_KEYS:
            print(log_line("WARN", f"The configuration '{key}' was supplied but isn't a known config.",
                           _CONFIG_CLASS[role]), file=sys.stderr)
    return out


def admin_config(bootstrap: str, client_id: str, timeout_s: float,
                 command_config: str | None = None) -> dict[str, Any]:
    """An :class:`~mafka.client.AdminClient` configuration whose calls are bounded by ``timeout_s``,
    with the settings of the ``command_config`` properties file if one is given (security
    keys translated, unknown keys warned about; ``bootstrap``, ``client_id`` and the
    timeouts win over the file, as the tools' flags do in Kafka).

    Raises:
        ConfigError (a ValueError): ``command_config`` cannot be read (or has a malformed
            escape), or holds a security setting Mafka cannot honour.
    """
    settings: dict[str, Any] = {}
    if command_config:
        try:
            loaded = load_properties(command_config)
        except OSError as exc:
            raise ConfigError(f"Failed to load {command_config}: {exc.strerror or exc}") from exc
        settings = client_settings(loaded, "admin")
    ms = int(timeout_s * 1000)
    return {
        **settings,
        "bootstrap.servers": bootstrap,
        "client.id": client_id,
        "socket.timeout.ms": min(300000, max(10, ms)),
        "request.timeout.ms": min(900000, max(1, ms)),
    }


def java_double(value: float, fmt: str) -> str:
    """``String.format(fmt, value)`` for one double, with Java's ``NaN`` / ``Infinity``."""
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    return fmt % value


def java_exception(code: int, message: str | None = None) -> str:
    """An error as the Java client's exception prints it: ``org.apache.kafka.common.errors.XException: text``.

    Broker codes take Kafka's own exception class for the code (:mod:`mafka.cli.java_exceptions`:
    ``MESSAGE_TOO_LARGE`` is ``RecordTooLargeException``) and the broker's message, else Kafka's
    description; the client's local codes are Kafka's ``TimeoutException`` (``_TIMED_OUT``,
    ``_MSG_TIMED_OUT``) or ``KafkaException``.

    Raises:
        ValueError: ``code`` is ``NONE`` (0), which is not an error.
    """
    try:
        ec = ErrorCode(code)
    except ValueError:
        text = message if message is not None else ClientError(code).str()
        if code in (ClientError._TIMED_OUT, ClientError._MSG_TIMED_OUT):
            return f"org.apache.kafka.common.errors.TimeoutException: {text}"
        return f"org.apache.kafka.common.KafkaException: {text}"
    return f"{java_class(ec)}: {message if message is not None else ec.description}"


def error_text(err: ClientError) -> str | None:
    """The broker's own message in a client KafkaError, None when it is just the code's description."""
    text = err.str()
    try:
        if text == f"Broker: {ErrorCode(err.code()).description}":
            return None
    except ValueError:
        pass
    return text
