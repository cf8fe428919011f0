"""The client's TLS and SASL keys: librdkafka's names and meanings, kafka-python's spellings,
cross-key rules, and :func:`mafka.client.security.client_security`."""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

import pytest

from mafka.client.config import ClientConfig, ConfigError, parse_config
from mafka.client.security import ClientSecurity, client_security

BOOT = {"bootstrap.servers": "127.0.0.1:9092"}
SASL = {"security.protocol": "sasl_plaintext", "sasl.mechanism": "PLAIN",
        "sasl.username": "alice", "sasl.password": "alice-secret"}


def cfg(role: str = "producer", **conf: Any) -> ClientConfig:
    return parse_config(role, {**BOOT, **conf})


def refused(conf: dict[str, Any], role: str = "consumer") -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_config(role, {**BOOT, **conf})
    return info.value


@pytest.fixture
def ca_file() -> Path:
    """A real PEM CA bundle (the certifi/system one ssl knows): files only need to exist and load."""
    paths = ssl.get_default_verify_paths()
    for candidate in (paths.cafile, paths.openssl_cafile):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    pytest.skip("no system CA bundle file")


# -- security.protocol and the SASL keys --------------------------------------------------------


@pytest.mark.parametrize("given", ["PLAINTEXT", "ssl", "Sasl_Plaintext", "SASL_SSL"])
def test_security_protocol_any_case(given: str) -> None:
    extra = {k: v for k, v in SASL.items() if k != "security.protocol"} if "sasl" in given.lower() else {}
    assert cfg(**{"security.protocol": given}, **extra)["security.protocol"] == given.lower()


def test_security_protocol_refuses_other_words() -> None:
    err = refused({"security.protocol": "tls"})
    assert err.key == "security.protocol" and "plaintext, ssl, sasl_plaintext, sasl_ssl" in str(err)


@pytest.mark.parametrize(("key", "value", "stored"), [
    ("sasl.mechanism", "PLAIN", "PLAIN"),
    ("sasl.mechanisms", "SCRAM-SHA-256", "SCRAM-SHA-256"),
    ("sasl.mechanism", "scram-sha-512", "SCRAM-SHA-512"),
    ("sasl_mechanism", "Scram-Sha-512", "SCRAM-SHA-512"),
])
def test_sasl_mechanism_spellings(key: str, value: str, stored: str) -> None:
    conf = {**SASL}
    del conf["sasl.mechanism"]
    parsed = cfg(**conf, **{key: value})
    assert parsed["sasl.mechanisms"] == stored and parsed["sasl.mechanism"] == stored
    assert parsed.user_set("sasl.mechanisms")


@pytest.mark.parametrize("mechanism", ["GSSAPI", "OAUTHBEARER", "oauthbearer"])
def test_gssapi_and_oauthbearer_are_refused_clearly(mechanism: str) -> None:
    err = refused({**SASL, "sasl.mechanism": mechanism})
    assert err.key == "sasl.mechanism"
    assert "is not supported by Mafka's client" in str(err) and "PLAIN, SCRAM-SHA-256, SCRAM-SHA-512" in str(err)


def test_unknown_mechanism_is_refused() -> None:
    assert refused({**SASL, "sasl.mechanism": "DIGEST-MD5"}).key == "sasl.mechanism"


def test_sasl_protocol_needs_a_mechanism() -> None:
    conf = {k: v for k, v in SASL.items() if k != "sasl.mechanism"}
    err = refused(conf)
    assert err.key == "sasl.mechanisms" and "GSSAPI" in str(err) and "must be set" in str(err)


@pytest.mark.parametrize("missing", ["sasl.username", "sasl.password"])
def test_sasl_protocol_needs_username_and_password(missing: str) -> None:
    conf = {k: v for k, v in SASL.items() if k != missing}
    err = refused({**conf, "security.protocol": "SASL_SSL"})
    assert err.key == missing
    assert "sasl.username and sasl.password must be set" in str(err) and "sasl_ssl" in str(err)


def test_kafka_python_spellings() -> None:
    parsed = cfg(security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-256",
                 sasl_plain_username="bob", sasl_plain_password="pw")
    assert parsed["security.protocol"] == "sasl_plaintext"
    assert (parsed["sasl.username"], parsed["sasl.password"]) == ("bob", "pw")
    assert parsed.user_set("sasl_plain_username") and "sasl.plain.username" not in parsed.as_dict()


def test_passwords_are_kept_as_given_and_hidden() -> None:
    parsed = cfg(**{**SASL, "sasl.password": "  spaced secret  ", "ssl.key.password": "key-secret"})
    assert parsed["sasl.password"] == "  spaced secret  "
    assert parsed["sasl.username"] == "alice"
    text = repr(parsed)
    assert "spaced secret" not in text and "key-secret" not in text and "'[hidden]'" in text
    assert "'alice'" in text


def test_a_bad_password_value_is_not_shown() -> None:
    err = refused({**SASL, "sasl.password": 12.5})
    assert err.key == "sasl.password" and "12.5" not in str(err) and "[hidden]" in str(err)
    assert cfg(**{**SASL, "sasl.password": 1234})["sasl.password"] == "1234"


@pytest.mark.parametrize("key", [
    "ssl.keystore.location", "ssl.keystore.password", "ssl.truststore.location", "ssl.certificate.pem",
    "sasl.kerberos.service.name", "sasl.oauthbearer.config", "sasl.jaas.config",
])
def test_unimplemented_ssl_and_sasl_keys_stay_refused(key: str) -> None:
    err = refused({key: "x"})
    assert err.key == key and f'"{key}" is not supported by Mafka\'s client' in str(err)


# -- TLS keys ---------------------------------------------------------------------------------


def test_tls_keys_and_their_kafka_python_spellings(ca_file: Path) -> None:
    parsed = cfg(security_protocol="SSL", ssl_cafile=str(ca_file), ssl_certfile=str(ca_file),
                 ssl_keyfile=str(ca_file), ssl_password="pw")
    assert parsed["ssl.ca.location"] == str(ca_file)
    assert parsed["ssl.certificate.location"] == str(ca_file)
    assert parsed["ssl.key.location"] == str(ca_file)
    assert parsed["ssl.key.password"] == "pw"


def test_tls_defaults() -> None:
    parsed = cfg()
    assert parsed["ssl.endpoint.identification.algorithm"] == "https"
    assert parsed["enable.ssl.certificate.verification"] is True
    assert parsed["ssl.ca.location"] is None and parsed["sasl.mechanisms"] is None


def test_endpoint_identification_words() -> None:
    assert cfg(**{"ssl.endpoint.identification.algorithm": "NONE"})[
        "ssl.endpoint.identification.algorithm"] == "none"
    assert refused({"ssl.endpoint.identification.algorithm": "http"}).key == \
        "ssl.endpoint.identification.algorithm"


@pytest.mark.parametrize("key", ["ssl.ca.location", "ssl.certificate.location", "ssl.key.location"])
def test_tls_files_must_exist(key: str, tmp_path: Path, ca_file: Path) -> None:
    missing = str(tmp_path / "nope.pem")
    conf = {"security.protocol": "ssl", key: missing}
    if key == "ssl.key.location":
        conf["ssl.certificate.location"] = str(ca_file)
    err = refused(conf)
    assert err.key == key and missing in str(err) and "no such file" in str(err)
    assert refused({**conf, "security.protocol": "plaintext", key: ""}).key == key  # empty: not a path


def test_a_key_needs_its_certificate(ca_file: Path) -> None:
    err = refused({"security.protocol": "ssl", "ssl.key.location": str(ca_file)})
    assert err.key == "ssl.key.location" and "ssl.certificate.location" in str(err)


def test_ca_location_probe_means_the_system_store() -> None:
    parsed = cfg(**{"security.protocol": "ssl", "ssl.ca.location": "probe"})
    security = client_security(parsed)
    # Not a file name: no "no such file", and the context trusts the system's CAs.
    assert security is not None and security.ssl_context is not None
    assert security.ssl_context.verify_mode == ssl.CERT_REQUIRED


def test_keys_the_protocol_does_not_use_are_kept_with_a_warning(tmp_path: Path) -> None:
    missing = str(tmp_path / "never-read.pem")
    parsed = cfg(**{"ssl.ca.location": missing, "sasl.username": "alice"})
    assert parsed["ssl.ca.location"] == missing  # not checked: plaintext never opens it
    assert parsed.warnings == (
        "Configuration property ssl.ca.location is ignored: security.protocol is plaintext",
        "Configuration property sasl.username is ignored: security.protocol is plaintext",
    )
    tls = cfg(**{"security.protocol": "ssl", "sasl.mechanism": "PLAIN"})
    assert tls.warnings == ("Configuration property sasl.mechanism is ignored: security.protocol is ssl",)
    assert cfg(**SASL).warnings == ()


def test_enable_ssl_certificate_verification_is_no_longer_inert() -> None:
    from mafka.client.config import INERT_KEYS

    assert "enable.ssl.certificate.verification" not in INERT_KEYS


# -- client_security ----------------------------------------------------------------------------


def test_plaintext_has_no_security() -> None:
    assert client_security(cfg()) is None
    assert client_security(cfg(**{"ssl.ca.location": "probe"})) is None


def test_sasl_plaintext_security() -> None:
    security = client_security(cfg(**{**SASL, "sasl.mechanism": "scram-sha-512"}))
    assert security == ClientSecurity("sasl_plaintext", None, "SCRAM-SHA-512", "alice", "alice-secret")
    assert "alice-secret" not in repr(security)


def test_ssl_context_verifies_certificate_and_host_by_default(ca_file: Path) -> None:
    security = client_security(cfg(**{"security.protocol": "ssl", "ssl.ca.location": str(ca_file)}))
    assert security is not None and security.mechanism is None
    context = security.ssl_context
    assert context is not None
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname is True


def test_ssl_context_without_host_name_check() -> None:
    security = client_security(cfg(**{"security.protocol": "SSL",
                                      "ssl.endpoint.identification.algorithm": "none"}))
    assert security is not None and security.ssl_context is not None
    assert security.ssl_context.verify_mode == ssl.CERT_REQUIRED
    assert security.ssl_context.check_hostname is False


def test_ssl_context_without_verification() -> None:
    security = client_security(cfg(**{"security.protocol": "sasl_ssl", **{k: v for k, v in SASL.items()
                                                                            if k != "security.protocol"},
                                      "enable.ssl.certificate.verification": "false"}))
    assert security is not None and security.ssl_context is not None
    assert security.ssl_context.verify_mode == ssl.CERT_NONE
    assert security.ssl_context.check_hostname is False
    assert security.mechanism == "PLAIN"
