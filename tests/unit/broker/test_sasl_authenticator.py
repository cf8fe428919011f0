"""The broker's per-connection SASL state machine, without sockets (a fake clock, a fake mechanism)."""

from __future__ import annotations

import pytest

from mafka.broker.sasl_authenticator import (
    DISPATCH,
    Close,
    RawReply,
    Reply,
    SaslServerAuthenticator,
    SaslState,
)
from mafka.errors import ErrorCode
from mafka.security.principal import KafkaPrincipal
from mafka.security.sasl import SaslAuthenticationError

HANDSHAKE, API_VERSIONS, AUTHENTICATE, METADATA = 17, 18, 36, 3


class TwoStep:
    """A fake mechanism: the first token must be b"hello", the second b"<user>:ok"."""

    mechanism_name = "PLAIN"

    def __init__(self) -> None:
        self.complete = False
        self.authorization_id = ""
        self.step = 0

    def evaluate(self, token: bytes) -> bytes:
        if self.step == 0:
            if token != b"hello":
                raise SaslAuthenticationError("Authentication failed: Invalid username or password")
            self.step = 1
            return b"challenge"
        user, _, verdict = token.decode().partition(":")
        if verdict != "ok":
            raise SaslAuthenticationError("Authentication failed: Invalid username or password")
        self.complete = True
        self.authorization_id = user
        return b"done"


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def make(**kw) -> tuple[SaslServerAuthenticator, Clock]:
    clock = Clock()
    return SaslServerAuthenticator(("PLAIN", "SCRAM-SHA-512"), lambda m: TwoStep(), clock, **kw), clock


def login(auth: SaslServerAuthenticator, user: str = "alice", version: int = 1) -> Reply:
    assert isinstance(auth.on_request(HANDSHAKE, 1, {"mechanism": "PLAIN"}), Reply)
    assert isinstance(auth.on_request(AUTHENTICATE, version, {"auth_bytes": b"hello"}), Reply)
    step = auth.on_request(AUTHENTICATE, version, {"auth_bytes": f"{user}:ok".encode()})
    assert isinstance(step, Reply)
    return step


def test_api_versions_then_handshake_then_authenticate_yields_the_principal():
    auth, _ = make()
    assert auth.on_request(API_VERSIONS, 3, {}) is DISPATCH
    step = auth.on_request(HANDSHAKE, 1, {"mechanism": "PLAIN"})
    assert isinstance(step, Reply) and step.body["error_code"] == 0
    assert step.body["mechanisms"] == ["PLAIN", "SCRAM-SHA-512"]
    first = auth.on_request(AUTHENTICATE, 1, {"auth_bytes": b"hello"})
    assert isinstance(first, Reply) and first.body["auth_bytes"] == b"challenge" and not first.close
    assert auth.principal is None
    last = auth.on_request(AUTHENTICATE, 1, {"auth_bytes": b"alice:ok"})
    assert isinstance(last, Reply) and last.body["error_code"] == 0 and last.body["auth_bytes"] == b"done"
    assert auth.principal == KafkaPrincipal("User", "alice")
    assert auth.on_request(METADATA, 9, {}) is DISPATCH


@pytest.mark.parametrize("api_key", [METADATA, 0, 1, 4, 36])
def test_any_other_request_before_the_handshake_closes_the_connection(api_key):
    auth, _ = make()
    step = auth.on_request(api_key, 0, {"auth_bytes": b""})
    assert isinstance(step, Close) and "during SASL handshake" in step.reason
    assert auth.principal is None


def test_a_second_api_versions_or_a_request_mid_authentication_closes():
    auth, _ = make()
    assert auth.on_request(API_VERSIONS, 3, {}) is DISPATCH
    assert isinstance(auth.on_request(API_VERSIONS, 3, {}), Close)
    auth, _ = make()
    auth.on_request(HANDSHAKE, 1, {"mechanism": "PLAIN"})
    step = auth.on_request(METADATA, 9, {})
    assert isinstance(step, Close) and "during SASL authentication" in step.reason


def test_a_mechanism_not_enabled_is_refused_and_the_connection_closed():
    auth, _ = make()
    step = auth.on_request(HANDSHAKE, 1, {"mechanism": "GSSAPI"})
    assert isinstance(step, Reply) and step.close
    assert step.body["error_code"] == ErrorCode.UNSUPPORTED_SASL_MECHANISM
    assert step.body["mechanisms"] == ["PLAIN", "SCRAM-SHA-512"]
    assert auth.state is SaslState.FAILED


def test_a_failed_authentication_is_answered_after_the_delay_and_closes():
    auth, _ = make(failed_delay_ms=250)
    auth.on_request(HANDSHAKE, 1, {"mechanism": "PLAIN"})
    step = auth.on_request(AUTHENTICATE, 1, {"auth_bytes": b"nope"})
    assert isinstance(step, Reply) and step.close and step.delay_s == 0.25
    assert step.body["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert step.body["error_message"] == "Authentication failed: Invalid username or password"
    assert auth.principal is None
    assert isinstance(auth.on_request(AUTHENTICATE, 1, {"auth_bytes": b"hello"}), Close)


def test_handshake_v0_switches_to_raw_tokens():
    auth, _ = make()
    assert isinstance(auth.on_request(HANDSHAKE, 0, {"mechanism": "PLAIN"}), Reply)
    assert auth.expects_raw_token
    assert auth.on_raw_token(b"hello") == RawReply(b"challenge")
    assert auth.on_raw_token(b"bob:ok") == RawReply(b"done")
    assert not auth.expects_raw_token
    assert auth.principal == KafkaPrincipal("User", "bob")


def test_a_bad_raw_token_closes_without_a_reply():
    auth, _ = make()
    auth.on_request(HANDSHAKE, 0, {"mechanism": "PLAIN"})
    assert isinstance(auth.on_raw_token(b"garbage"), Close)
    assert auth.principal is None


def test_after_authentication_sasl_requests_go_to_the_dispatcher_without_reauthentication():
    auth, _ = make()
    login(auth)
    assert auth.on_request(HANDSHAKE, 1, {"mechanism": "PLAIN"}) is DISPATCH
    assert auth.on_request(AUTHENTICATE, 1, {"auth_bytes": b""}) is DISPATCH


def test_session_lifetime_expiry_and_reauthentication():
    auth, clock = make(reauth_ms=10_000)
    done = login(auth)
    assert done.body["session_lifetime_ms"] == 10_000
    clock.now += 9.0
    assert auth.on_request(METADATA, 9, {}) is DISPATCH
    # re-authenticate as the same user: a fresh 10 s
    login(auth)
    assert auth.principal == KafkaPrincipal("User", "alice")
    clock.now += 9.0
    assert auth.on_request(METADATA, 9, {}) is DISPATCH
    clock.now += 1.5
    step = auth.on_request(METADATA, 9, {})
    assert isinstance(step, Close) and "expired" in step.reason


def test_reauthentication_cannot_change_the_principal():
    auth, _ = make(reauth_ms=10_000)
    login(auth, "alice")
    step = login(auth, "mallory")
    assert step.close and step.body["error_code"] == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert "Cannot change principals" in step.body["error_message"]


def test_reauthentication_with_another_mechanism_is_refused():
    auth, _ = make(reauth_ms=10_000)
    login(auth)
    step = auth.on_request(HANDSHAKE, 1, {"mechanism": "SCRAM-SHA-512"})
    assert isinstance(step, Reply) and step.close and step.body["error_code"] == ErrorCode.ILLEGAL_SASL_STATE


def test_v0_authenticate_reports_no_session_lifetime():
    auth, _ = make(reauth_ms=10_000)
    done = login(auth, version=0)
    assert done.body["session_lifetime_ms"] == 0
