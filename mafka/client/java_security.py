"""The Java clients' TLS and SASL keys in the tools' properties files, as :mod:`mafka.client` keys.

Kafka's tools take a Java client configuration (``--command-config``,
``--producer.config``, ``--consumer.config``, ``--admin.config`` files and
``--producer-property``-style flags).  Its security keys differ from
librdkafka's, which :mod:`mafka.client` speaks; :func:`translate_java_security`
is the one place that maps them, for every tool (through
:func:`mafka.cli.clients.client_settings`):

==========================================  ==========================================
Java client                                 mafka.client
==========================================  ==========================================
``security.protocol=SASL_SSL``              the same (any case)
``sasl.mechanism=SCRAM-SHA-512``            the same (an alias of ``sasl.mechanisms``)
``sasl.jaas.config=… PlainLoginModule``     ``sasl.username``, ``sasl.password`` from
or ``… ScramLoginModule required``          the entry's ``username`` / ``password``
``username="…" password="…";``              options
``ssl.truststore.location`` (PEM)           ``ssl.ca.location``
``ssl.keystore.location`` (PEM: key and     ``ssl.certificate.location`` (the key is
certificate chain in one file)              read from the same file)
``ssl.key.password``                        the same
``ssl.endpoint.identification.algorithm=``  ``…=none`` (empty: no host name check);
                                            ``https`` stays
==========================================  ==========================================

Store types follow :mod:`mafka.security.tls` (the broker's side): only PEM,
and an unset ``ssl.truststore.type``/``ssl.keystore.type`` counts as PEM;
JKS or PKCS12 is a :class:`~mafka.errors.ConfigError`, and so are a store
password with PEM (Kafka refuses it too), inline PEM values
(``ssl.truststore.certificates``, ``ssl.keystore.key``,
``ssl.keystore.certificate.chain``; the client loads files), a
``sasl.jaas.config`` that does not parse, names another login module
(Kerberos, OAuth) or lacks ``username``/``password``.  Keys already in
mafka.client's spelling pass through unchanged, and win over what a Java key
translates to.  The Java-only tuning keys (``ssl.protocol``,
``ssl.enabled.protocols``, ``ssl.cipher.suites``, ``sasl.login.*`` …) are
left in: the tools warn about and drop them like any key the client does not
know.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from mafka.errors import ConfigError
from mafka.security.jaas import (
    PLAIN_LOGIN_MODULE,
    SCRAM_LOGIN_MODULE,
    client_credentials,
    parse_jaas_config,
)

__all__ = ["JAVA_SECURITY_KEYS", "translate_java_security"]

_PEM: Final = "PEM"
_INLINE_PEM: Final = ("ssl.truststore.certificates", "ssl.keystore.key", "ssl.keystore.certificate.chain")
_LOGIN_MODULES: Final = (PLAIN_LOGIN_MODULE, SCRAM_LOGIN_MODULE)

#: The Java client keys :func:`translate_java_security` consumes.
JAVA_SECURITY_KEYS: Final = frozenset({
    "sasl.jaas.config",
    "ssl.truststore.location", "ssl.truststore.type", "ssl.truststore.password",
    "ssl.keystore.location", "ssl.keystore.type", "ssl.keystore.password",
    *_INLINE_PEM,
})


def translate_java_security(props: Mapping[str, Any]) -> dict[str, Any]:
    """``props`` with the Java client's security keys replaced by mafka.client's (see the
    module docstring); every other key unchanged.

    Raises:
        ConfigError: a store that is not PEM, a store password with PEM, inline PEM
            values, or a ``sasl.jaas.config`` that is malformed, names a login module
            other than PLAIN's or SCRAM's, or lacks ``username``/``password``.
    """
    out = {k: v for k, v in props.items() if k not in JAVA_SECURITY_KEYS}
    translated: dict[str, Any] = {}
    for key in _INLINE_PEM:
        if props.get(key) is not None:
            raise ConfigError(f"{key} is not supported by Mafka's tools: put the PEM text in a file "
                              f"and name it in {key.split('.')[1]}.location", key)
    if props.get("sasl.jaas.config") is not None:
        translated.update(_jaas_credentials(str(props["sasl.jaas.config"])))
    ca = _pem_store(props, "truststore")
    if ca is not None:
        translated["ssl.ca.location"] = ca
    chain = _pem_store(props, "keystore")
    if chain is not None:
        translated["ssl.certificate.location"] = chain
    algorithm = props.get("ssl.endpoint.identification.algorithm")
    if isinstance(algorithm, str) and not algorithm.strip():
        out["ssl.endpoint.identification.algorithm"] = "none"  # Java's empty value: no host check
    for key, value in translated.items():
        out.setdefault(key, value)  # a key given in mafka.client's own spelling wins
    return out


def _jaas_credentials(text: str) -> dict[str, str]:
    """``sasl.username``/``sasl.password`` from a PLAIN or SCRAM login module entry."""
    try:
        entry = parse_jaas_config(text)
    except ValueError as exc:  # Kafka's texts, which never quote the value (it holds a password)
        raise ConfigError(f"Invalid sasl.jaas.config: {exc}", "sasl.jaas.config") from exc
    if entry.login_module not in _LOGIN_MODULES:
        raise ConfigError(
            f"sasl.jaas.config: login module {entry.login_module} is not supported by Mafka's client "
            f"(only {PLAIN_LOGIN_MODULE} and {SCRAM_LOGIN_MODULE})", "sasl.jaas.config")
    try:
        username, password = client_credentials(entry)
    except ValueError as exc:
        raise ConfigError(f"sasl.jaas.config: {exc}", "sasl.jaas.config") from exc
    return {"sasl.username": username, "sasl.password": password}


def _pem_store(props: Mapping[str, Any], store: str) -> str | None:
    """The file of ``ssl.<store>.location``, after checking it is PEM without a store password.

    Raises:
        ConfigError: a type other than PEM, or ``ssl.<store>.password`` set.
    """
    type_key, password_key = f"ssl.{store}.type", f"ssl.{store}.password"
    store_type = props.get(type_key)
    if store_type is not None and str(store_type).strip().upper() != _PEM:
        raise ConfigError.for_key(
            type_key, f"Mafka supports only PEM {store[:-5]} stores (JKS and PKCS12 are not supported: "
            "convert the store to PEM, e.g. with keytool -importkeystore and openssl pkcs12)",
            value=store_type)
    if props.get(password_key) is not None:
        only = ", only key password may be specified" if store == "keystore" else ""
        raise ConfigError(f"SSL {store[:-5]} store password cannot be specified with PEM format{only} "
                          f"({password_key} is set)", password_key)
    location = props.get(f"ssl.{store}.location")
    return None if location is None else str(location).strip()
