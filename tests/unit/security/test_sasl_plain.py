"""SASL/PLAIN (mafka.security.sasl_plain): Kafka's PlainSaslServer texts and rules."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mafka.security.sasl import (
    MAX_TOKEN_BYTES,
    SaslAuthenticationError,
    SaslException,
    client_error_message,
)
from mafka.security.sasl_plain import PlainServer, plain_client_token

USERS = {"alice": "alice-secret", "admin": "admin-secret", "\u00e9mile": "mot de passe \u00e9"}
INVALID = "Authentication failed: Invalid username or password"
AUTHZID = "Authentication failed: Client requested an authorization id that is different from username"


def failure(token: bytes, users: dict[str, str] = USERS) -> SaslAuthenticationError:
    server = PlainServer(users.get)
    with pytest.raises(SaslAuthenticationError) as info:
        server.evaluate(token)
    assert not server.complete
    return info.value


def test_good_credentials_complete_with_an_empty_challenge() -> None:
    server = PlainServer(USERS.get)
    assert server.mechanism_name == "PLAIN"
    assert not server.complete
    assert server.evaluate(b"\0alice\0alice-secret") == b""
    assert server.complete
    assert server.authorization_id == "alice"


def test_non_ascii_credentials() -> None:
    server = PlainServer(USERS.get)
    server.evaluate(plain_client_token("\u00e9mile", "mot de passe \u00e9"))
    assert server.authorization_id == "\u00e9mile"


def test_wrong_password_and_unknown_user_get_the_same_visible_message() -> None:
    wrong = failure(b"\0alice\0nope")
    unknown = failure(b"\0mallory\0nope")
    for error in (wrong, unknown):
        assert type(error) is SaslAuthenticationError
        assert error.message == INVALID
        assert client_error_message(error, "PLAIN") == INVALID


def test_password_prefix_and_case_do_not_match() -> None:
    assert failure(b"\0alice\0alice-secre").message == INVALID
    assert failure(b"\0alice\0alice-secret ").message == INVALID
    assert failure(b"\0alice\0ALICE-SECRET").message == INVALID
    assert failure(b"\0Alice\0alice-secret").message == INVALID


def test_authzid_rules() -> None:
    server = PlainServer(USERS.get)
    server.evaluate(b"alice\0alice\0alice-secret")
    assert server.authorization_id == "alice"
    assert failure(b"admin\0alice\0alice-secret").message == AUTHZID
    # The password is checked first: a wrong one says nothing about the authorization id.
    assert failure(b"admin\0alice\0wrong").message == INVALID


@pytest.mark.parametrize(
    ("token", "message"),
    [
        (b"", "Invalid SASL/PLAIN response: expected 3 tokens, got 1"),
        (b"alice", "Invalid SASL/PLAIN response: expected 3 tokens, got 1"),
        (b"alice\0alice-secret", "Invalid SASL/PLAIN response: expected 3 tokens, got 2"),
        (b"\0alice\0alice-secret\0", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"),
        (b"a\0b\0c\0d\0e", "Invalid SASL/PLAIN response: expected 3 tokens, got 4"),
        (b"\0\0alice-secret", "Authentication failed: username not specified"),
        (b"\0alice\0", "Authentication failed: password not specified"),
        (b"\0\0", "Authentication failed: username not specified"),
        (b"\0alice\0\xff\xfe", INVALID),
        (b"\0\xff\0x", INVALID),
    ],
)
def test_malformed_tokens(token: bytes, message: str) -> None:
    error = failure(token)
    assert type(error) is SaslAuthenticationError
    assert error.message == message


def test_oversize_token_is_refused_hidden() -> None:
    error = failure(b"\0alice\0" + b"x" * MAX_TOKEN_BYTES)
    assert type(error) is SaslException
    assert client_error_message(error, "PLAIN") == (
        "Authentication failed during authentication due to invalid credentials with SASL mechanism PLAIN"
    )


def test_lookup_failure() -> None:
    def broken(user: str) -> str | None:
        raise RuntimeError("backend down")

    server = PlainServer(broken)
    with pytest.raises(SaslAuthenticationError) as info:
        server.evaluate(b"\0alice\0alice-secret")
    assert info.value.message == "Authentication failed: credentials for user could not be verified"
    assert isinstance(info.value.__cause__, RuntimeError)


def test_tokens_after_the_end_fail() -> None:
    server = PlainServer(USERS.get)
    server.evaluate(b"\0alice\0alice-secret")
    with pytest.raises(SaslException) as info:
        server.evaluate(b"\0alice\0alice-secret")
    assert info.value.message == "Unexpected challenge in Sasl server state COMPLETE"
    assert not server.complete

    server = PlainServer(USERS.get)
    with pytest.raises(SaslAuthenticationError):
        server.evaluate(b"\0alice\0wrong")
    with pytest.raises(SaslException) as info:
        server.evaluate(b"\0alice\0alice-secret")  # no second guess on the same exchange
    assert info.value.message == "Unexpected challenge in Sasl server state FAILED"
    assert not server.complete


def test_authorization_id_before_completion() -> None:
    server = PlainServer(USERS.get)
    with pytest.raises(RuntimeError):
        _ = server.authorization_id


def test_client_token() -> None:
    assert plain_client_token("alice", "alice-secret") == b"\0alice\0alice-secret"
    assert plain_client_token("alice", "s\u00e9", authzid="alice") == b"alice\0alice\0s\xc3\xa9"
    assert plain_client_token("", "") == b"\0\0"
    for args in (("a\0b", "pw"), ("alice", "p\0w")):
        with pytest.raises(ValueError):
            plain_client_token(*args)
    with pytest.raises(ValueError):
        plain_client_token("alice", "pw", authzid="x\0")


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=100), st.lists(st.sampled_from(["\0", "alice", "alice-secret", "\u00e9", "x"])).map(lambda p: "".join(p).encode())))
def test_fuzz_only_sasl_errors(token: bytes) -> None:
    server = PlainServer(USERS.get)
    try:
        server.evaluate(token)
    except SaslAuthenticationError:
        assert not server.complete
    else:
        assert token.split(b"\0")[1:] == [b"alice", b"alice-secret"]
        assert server.authorization_id == "alice"
