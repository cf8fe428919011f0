"""The mechanism factory (mafka.security.sasl_servers) and the shared error contract (mafka.security.sasl)."""

from __future__ import annotations

import pytest

from mafka.broker.scram import ScramCredential, ScramMechanism, generate_credential
from mafka.security.sasl import (
    ENABLED_MECHANISMS,
    SaslAuthenticationError,
    SaslException,
    UnsupportedSaslMechanismError,
    client_error_message,
)
from mafka.security.sasl_plain import PlainServer, plain_client_token
from mafka.security.sasl_scram import ScramClient, ScramServer, salted_password
from mafka.security.sasl_servers import create_sasl_server


def scram_store() -> dict[tuple[ScramMechanism, str], ScramCredential]:
    store = {}
    for mechanism in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512):
        salt = b"somesalt"
        store[mechanism, "alice"] = generate_credential(
            mechanism, salt, salted_password(mechanism, f"pw-{mechanism.name}", salt, 4096), 4096
        )
    return store


def factory(name: str) -> object:
    store = scram_store()
    return create_sasl_server(
        name,
        plain_users={"alice": "plain-pw"}.get,
        scram_credentials=lambda mechanism, user: store.get((mechanism, user)),
    )


def test_enabled_mechanisms() -> None:
    assert ENABLED_MECHANISMS == ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


def test_plain() -> None:
    server = factory("PLAIN")
    assert isinstance(server, PlainServer)
    server.evaluate(plain_client_token("alice", "plain-pw"))
    assert server.complete and server.authorization_id == "alice"


@pytest.mark.parametrize("mechanism", [ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512])
def test_scram_looks_up_its_own_mechanism(mechanism: ScramMechanism) -> None:
    server = factory(mechanism.mechanism_name)
    assert isinstance(server, ScramServer)
    assert server.mechanism_name == mechanism.mechanism_name
    client = ScramClient(mechanism, "alice", f"pw-{mechanism.name}")
    client.verify_server_final(server.evaluate(client.final_message(server.evaluate(client.first_message()))))
    assert server.complete and server.authorization_id == "alice"


def test_scram_other_mechanisms_password_fails() -> None:
    server = factory("SCRAM-SHA-512")
    assert isinstance(server, ScramServer)
    client = ScramClient(ScramMechanism.SCRAM_SHA_512, "alice", "pw-SCRAM_SHA_256")
    server_first = server.evaluate(client.first_message())
    with pytest.raises(SaslException):
        server.evaluate(client.final_message(server_first))


@pytest.mark.parametrize("name", ["GSSAPI", "OAUTHBEARER", "plain", "SCRAM-SHA-1", ""])
def test_unsupported(name: str) -> None:
    with pytest.raises(UnsupportedSaslMechanismError, match=f"^Unsupported SASL mechanism {name}$"):
        factory(name)


def test_missing_credential_source() -> None:
    with pytest.raises(ValueError, match="Callback handler not specified for SASL mechanism PLAIN"):
        create_sasl_server("PLAIN", plain_users=None, scram_credentials=None)
    with pytest.raises(ValueError, match="Callback handler not specified for SASL mechanism SCRAM-SHA-256"):
        create_sasl_server("SCRAM-SHA-256", plain_users={}.get, scram_credentials=None)


def test_client_error_message() -> None:
    visible = SaslAuthenticationError("Authentication failed: Invalid username or password")
    hidden = SaslException("Invalid client credentials")
    assert visible.client_visible and not hidden.client_visible
    assert isinstance(hidden, SaslAuthenticationError)
    assert client_error_message(visible, "PLAIN") == "Authentication failed: Invalid username or password"
    assert client_error_message(hidden, "SCRAM-SHA-512") == (
        "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"
    )
    assert client_error_message(hidden, "SCRAM-SHA-512", reauthentication=True) == (
        "Authentication failed during re-authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"
    )
    assert str(hidden) == hidden.message == "Invalid client credentials"
