"""SCRAM-SHA-256/512 (mafka.security.sasl_scram): RFC 7677's vector, both sides, and every way to fail."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mafka.broker.scram import ScramCredential, ScramMechanism, generate_credential
from mafka.security.sasl import (
    MAX_TOKEN_BYTES,
    SaslAuthenticationError,
    SaslException,
    client_error_message,
)
from mafka.security.sasl_scram import (
    FAKE_ITERATIONS,
    ScramClient,
    ScramServer,
    salted_password,
    secure_random_string,
)

SHA256 = ScramMechanism.SCRAM_SHA_256
SHA512 = ScramMechanism.SCRAM_SHA_512

# RFC 7677 section 3.
RFC_CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_FIRST = (
    b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
)
RFC_CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="

SERVER_FIRST_SHAPE = re.compile(rb"r=([!-+\--~]+),s=([A-Za-z0-9+/]+=*),i=([0-9]+)")


def credential(mechanism: ScramMechanism, password: str, salt: bytes = b"saltsalt", iterations: int = 4096) -> ScramCredential:
    return generate_credential(
        mechanism, salt, salted_password(mechanism, password, salt, iterations), iterations
    )


def rfc_server(**kwargs: object) -> ScramServer:
    users = {"user": credential(SHA256, "pencil", RFC_SALT)}
    return ScramServer(SHA256, users.get, nonce=lambda: RFC_SERVER_NONCE, **kwargs)  # type: ignore[arg-type]


def client_final(mechanism: ScramMechanism, client_first: bytes, server_first: bytes, password: str,
                 *, channel: bytes = b"biws", nonce: bytes | None = None) -> bytes:
    """The client-final message computed from RFC 5802 directly (independent of ScramClient)."""
    digest = mechanism.hash_name
    fields = dict(item.split(b"=", 1) for item in server_first.split(b","))
    salted = hashlib.pbkdf2_hmac(digest, password.encode(), base64.b64decode(fields[b"s"]), int(fields[b"i"]))
    client_key = hmac.new(salted, b"Client Key", digest).digest()
    stored_key = hashlib.new(digest, client_key).digest()
    bare = client_first.split(b",", 2)[2]
    without_proof = b"c=" + channel + b",r=" + (fields[b"r"] if nonce is None else nonce)
    signature = hmac.new(stored_key, b",".join((bare, server_first, without_proof)), digest).digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    return without_proof + b",p=" + base64.b64encode(proof)


def failure(server: ScramServer, token: bytes) -> SaslAuthenticationError:
    with pytest.raises(SaslAuthenticationError) as info:
        server.evaluate(token)
    return info.value


# ----------------------------------------------------------------------------- RFC 7677 vector


def test_rfc7677_server_side_byte_for_byte() -> None:
    server = rfc_server()
    assert server.evaluate(RFC_CLIENT_FIRST) == RFC_SERVER_FIRST
    assert not server.complete
    assert server.evaluate(RFC_CLIENT_FINAL) == RFC_SERVER_FINAL
    assert server.complete
    assert server.authorization_id == "user"
    assert server.mechanism_name == "SCRAM-SHA-256"


def test_rfc7677_client_side_byte_for_byte() -> None:
    client = ScramClient(SHA256, "user", "pencil", nonce=RFC_CLIENT_NONCE)
    assert client.first_message() == RFC_CLIENT_FIRST
    assert client.final_message(RFC_SERVER_FIRST) == RFC_CLIENT_FINAL
    assert not client.complete
    client.verify_server_final(RFC_SERVER_FINAL)
    assert client.complete


def test_independent_proof_matches_rfc() -> None:
    """The test's own RFC 5802 arithmetic agrees with the RFC, so the tests below can rely on it."""
    assert client_final(SHA256, RFC_CLIENT_FIRST, RFC_SERVER_FIRST, "pencil") == RFC_CLIENT_FINAL


# ----------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("mechanism", [SHA256, SHA512])
def test_round_trip_client_and_server(mechanism: ScramMechanism) -> None:
    salt = secure_random_string().encode()
    users = {"alice": credential(mechanism, "alice-secret", salt, 8192)}
    server = ScramServer(mechanism, users.get)
    client = ScramClient(mechanism, "alice", "alice-secret")
    server_first = server.evaluate(client.first_message())
    match = SERVER_FIRST_SHAPE.fullmatch(server_first)
    assert match is not None and match[3] == b"8192"
    assert base64.b64decode(match[2]) == salt
    server_final = server.evaluate(client.final_message(server_first))
    client.verify_server_final(server_final)
    assert server.complete and client.complete
    assert server.authorization_id == "alice"
    assert len(base64.b64decode(server_final[2:])) == hashlib.new(mechanism.hash_name).digest_size


def test_user_names_are_escaped_and_unescaped() -> None:
    looked_up: list[str] = []

    def lookup(user: str) -> ScramCredential | None:
        looked_up.append(user)
        return credential(SHA512, "pw") if user == "a,b=c" else None

    client = ScramClient(SHA512, "a,b=c", "pw")
    first = client.first_message()
    assert first.startswith(b"n,,n=a=2Cb=3Dc,r=")
    server = ScramServer(SHA512, lookup)
    client.verify_server_final(server.evaluate(client.final_message(server.evaluate(first))))
    assert looked_up == ["a,b=c"]
    assert server.authorization_id == "a,b=c"


def test_authzid_equal_to_user_with_matching_channel_binding() -> None:
    server = rfc_server()
    first = b"n,a=user,n=user,r=" + RFC_CLIENT_NONCE.encode()
    server_first = server.evaluate(first)
    channel = base64.b64encode(b"n,a=user,")
    server.evaluate(client_final(SHA256, first, server_first, "pencil", channel=channel))
    assert server.authorization_id == "user"


def test_extensions_are_part_of_the_auth_message() -> None:
    server = rfc_server()
    first = b"n,,n=user,r=abc,foo=bar,tokenauth=false"
    server_first = server.evaluate(first)
    server.evaluate(client_final(SHA256, first, server_first, "pencil"))
    assert server.complete


# ----------------------------------------------------------------------------- failures


def test_wrong_password_fails_at_client_final_hidden_from_client() -> None:
    server = rfc_server()
    server_first = server.evaluate(RFC_CLIENT_FIRST)
    error = failure(server, client_final(SHA256, RFC_CLIENT_FIRST, server_first, "pencil2"))
    assert type(error) is SaslException
    assert error.message == "Invalid client credentials"
    assert client_error_message(error, "SCRAM-SHA-256") == (
        "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"
    )
    assert not server.complete
    assert failure(server, RFC_CLIENT_FINAL).message == "Unexpected challenge in Sasl server state FAILED"
    with pytest.raises(RuntimeError):
        _ = server.authorization_id


def test_unknown_user_looks_like_a_wrong_password() -> None:
    key = b"k" * 32
    users = {"alice": credential(SHA256, "alice-secret", secure_random_string().encode())}

    def attempt(user: str, password: str) -> tuple[bytes, SaslAuthenticationError]:
        server = ScramServer(SHA256, users.get, fake_salt_key=key)
        first = f"n,,n={user},r=clientnonce".encode()
        server_first = server.evaluate(first)  # no failure at the first message
        return server_first, failure(server, client_final(SHA256, first, server_first, password))

    known_first, wrong_password = attempt("alice", "guess")
    unknown_first, unknown_user = attempt("mallory", "guess")
    assert type(unknown_user) is type(wrong_password)
    assert unknown_user.message == wrong_password.message
    assert client_error_message(unknown_user, "SCRAM-SHA-256") == client_error_message(
        wrong_password, "SCRAM-SHA-256"
    )

    match = SERVER_FIRST_SHAPE.fullmatch(unknown_first)
    assert match is not None
    assert match[1].startswith(b"clientnonce") and len(match[1]) > len(b"clientnonce")
    assert match[3] == str(FAKE_ITERATIONS).encode()
    fake_salt = base64.b64decode(match[2])
    real_salt = base64.b64decode(SERVER_FIRST_SHAPE.fullmatch(known_first)[2])  # type: ignore[index]
    # Kafka's salts are a 130-bit number in base 36 (25 or 26 characters, nearly always).
    assert re.fullmatch(rb"[0-9a-z]{20,26}", fake_salt)
    assert re.fullmatch(rb"[0-9a-z]{20,26}", real_salt)

    # Stable for the same user (with the same key), different for other users and mechanisms.
    assert SERVER_FIRST_SHAPE.fullmatch(attempt("mallory", "x")[0])[2] == match[2]  # type: ignore[index]
    assert SERVER_FIRST_SHAPE.fullmatch(attempt("trudy", "x")[0])[2] != match[2]  # type: ignore[index]
    other = ScramServer(SHA512, {}.get, fake_salt_key=key).evaluate(b"n,,n=mallory,r=clientnonce")
    assert SERVER_FIRST_SHAPE.fullmatch(other)[2] != match[2]  # type: ignore[index]


def test_unknown_user_salt_stable_with_the_default_key() -> None:
    def salt_of(user: str) -> bytes:
        server_first = ScramServer(SHA256, {}.get).evaluate(f"n,,n={user},r=n1".encode())
        return SERVER_FIRST_SHAPE.fullmatch(server_first)[2]  # type: ignore[index]

    assert salt_of("nobody") == salt_of("nobody")
    assert salt_of("nobody") != salt_of("somebody")


def test_unknown_user_fails_even_with_a_proof_for_the_fake_salt() -> None:
    """Whatever password the client uses against the fake salt, the exchange fails."""
    server = ScramServer(SHA256, {}.get)
    first = b"n,,n=ghost,r=abc"
    server_first = server.evaluate(first)
    error = failure(server, client_final(SHA256, first, server_first, ""))
    assert error.message == "Invalid client credentials"


def test_unknown_user_fails_even_if_the_fake_credential_matched(monkeypatch: pytest.MonkeyPatch) -> None:
    """The failure of an unknown user does not rest on the fake keys being unguessable."""
    monkeypatch.setattr(ScramServer, "_fake_credential", lambda self, user: credential(SHA256, "pencil", RFC_SALT))
    server = ScramServer(SHA256, {}.get, nonce=lambda: RFC_SERVER_NONCE)
    assert server.evaluate(RFC_CLIENT_FIRST) == RFC_SERVER_FIRST
    error = failure(server, RFC_CLIENT_FINAL)
    assert error.message == "Invalid client credentials"


def test_tampered_nonce_is_refused() -> None:
    server = rfc_server()
    server_first = server.evaluate(RFC_CLIENT_FIRST)
    full_nonce = (RFC_CLIENT_NONCE + RFC_SERVER_NONCE).encode()
    for nonce in (full_nonce[:-1], full_nonce + b"x", RFC_CLIENT_NONCE.encode(), b"x" + full_nonce[1:]):
        server = rfc_server()
        server.evaluate(RFC_CLIENT_FIRST)
        token = client_final(SHA256, RFC_CLIENT_FIRST, server_first, "pencil", nonce=nonce)
        error = failure(server, token)
        assert type(error) is SaslException
        assert error.message == "Invalid client nonce in the final client message."


def test_librdkafka_2_0s_doubled_client_nonce_is_accepted() -> None:
    """librdkafka up to 2.0 (Debian's kcat) sends r=<cnonce><cnonce><snonce>; Kafka 3 accepts it (suffix check)."""
    server = rfc_server()
    server_first = server.evaluate(RFC_CLIENT_FIRST)
    doubled = (RFC_CLIENT_NONCE + RFC_CLIENT_NONCE + RFC_SERVER_NONCE).encode()
    token = client_final(SHA256, RFC_CLIENT_FIRST, server_first, "pencil", nonce=doubled)
    assert server.evaluate(token).startswith(b"v=")
    assert server.complete


@pytest.mark.parametrize("channel", [b"eSws", b"", base64.b64encode(b"n,a=user,"), b"biwsbiws"])
def test_tampered_channel_binding_is_refused(channel: bytes) -> None:
    server = rfc_server()
    server_first = server.evaluate(RFC_CLIENT_FIRST)
    error = failure(server, client_final(SHA256, RFC_CLIENT_FIRST, server_first, "pencil", channel=channel))
    assert type(error) is SaslException
    assert error.message == "Invalid channel binding in the final client message."


def test_authzid_other_than_the_user_is_refused_visibly() -> None:
    for user in ("user", "nobody"):  # the same answer whether the user exists or not
        server = rfc_server()
        error = failure(server, f"n,a=admin,n={user},r=abc".encode())
        assert type(error) is SaslAuthenticationError
        assert error.message == (
            "Authentication failed: Client requested an authorization id that is different from username"
        )
        assert client_error_message(error, "SCRAM-SHA-256") == error.message


@pytest.mark.parametrize("value", ["true", "TRUE", "True"])
def test_delegation_token_authentication_is_refused(value: str) -> None:
    server = rfc_server()
    error = failure(server, f"n,,n=tokenid,r=abc,tokenauth={value}".encode())
    assert type(error) is SaslAuthenticationError
    assert "delegation token" in error.message
    assert not server.complete


def test_wrong_length_proof_fails_like_a_wrong_password() -> None:
    for proof in (b"", b"AAAA", base64.b64encode(b"x" * 64)):
        server = rfc_server()
        server.evaluate(RFC_CLIENT_FIRST)
        nonce = (RFC_CLIENT_NONCE + RFC_SERVER_NONCE).encode()
        error = failure(server, b"c=biws,r=" + nonce + b",p=" + proof)
        assert type(error) is SaslException
        assert error.message == "Invalid client credentials"


@pytest.mark.parametrize(
    "token",
    [
        b"",
        b"n,,",
        b"n,,n=user",
        b"n,,n=,r=abc",
        b"n,,n=user,r=",
        b"y,,n=user,r=abc",
        b"p=tls-unique,,n=user,r=abc",
        b"n,,n=us=er,r=abc",
        b"n,,n=user,r=a,b",
        b"n,,n=user,r=abc,=x",
        b"n,,n=\xc3\xa9,r=abc",
        b"n,,n=user,r=abc\xff",
        b"n,,n=user,r=abc\n",
    ],
)
def test_malformed_client_first_is_a_hidden_failure(token: bytes) -> None:
    error = failure(rfc_server(), token)
    assert type(error) is SaslException
    assert error.message.startswith("Invalid SCRAM client first message format")
    assert "\n" not in error.message


@pytest.mark.parametrize(
    "token",
    [
        b"",
        b"c=biws",
        b"c=biws,r=" + (RFC_CLIENT_NONCE + RFC_SERVER_NONCE).encode(),
        b"c=biws,r=x,p=abc",  # proof not base64
        b"c=biw,r=x,p=AAAA",
        b"r=x,c=biws,p=AAAA",
        b"c=biws,r=x,p=AAAA,e=1",
    ],
)
def test_malformed_client_final_is_a_hidden_failure(token: bytes) -> None:
    server = rfc_server()
    server.evaluate(RFC_CLIENT_FIRST)
    error = failure(server, token)
    assert type(error) is SaslException
    assert error.message == "Invalid SCRAM client final message format"


def test_oversize_tokens_are_refused_at_either_stage() -> None:
    big = b"n,,n=user,r=" + b"a" * MAX_TOKEN_BYTES
    error = failure(rfc_server(), big)
    assert type(error) is SaslException
    assert str(MAX_TOKEN_BYTES) in error.message
    server = rfc_server()
    server.evaluate(RFC_CLIENT_FIRST)
    assert str(MAX_TOKEN_BYTES) in failure(server, RFC_CLIENT_FINAL + b"A" * MAX_TOKEN_BYTES).message
    # At the limit a token is parsed (and here, being a valid message, accepted).
    at_limit = b"n,,n=user,r=" + b"a" * (MAX_TOKEN_BYTES - len(b"n,,n=user,r="))
    assert rfc_server().evaluate(at_limit).startswith(b"r=")


def test_token_after_completion_fails() -> None:
    server = rfc_server()
    server.evaluate(RFC_CLIENT_FIRST)
    server.evaluate(RFC_CLIENT_FINAL)
    assert server.complete
    error = failure(server, RFC_CLIENT_FINAL)
    assert type(error) is SaslException
    assert error.message == "Unexpected challenge in Sasl server state COMPLETE"
    assert not server.complete  # as Kafka's ScramSaslServer: the exchange is now FAILED


def test_stored_credential_below_minimum_iterations_is_refused() -> None:
    weak = credential(SHA256, "pencil", iterations=1000)
    error = failure(ScramServer(SHA256, {"user": weak}.get), RFC_CLIENT_FIRST)
    assert type(error) is SaslException
    assert error.message == "Iterations 1000 is less than the minimum 4096 for SCRAM_SHA_256"


def test_lookup_failure_is_hidden() -> None:
    def broken(user: str) -> ScramCredential | None:
        raise OSError("zookeeper down")

    error = failure(ScramServer(SHA256, broken), RFC_CLIENT_FIRST)
    assert type(error) is SaslException
    assert error.message == "Authentication failed: Credentials could not be obtained"
    assert isinstance(error.__cause__, OSError)


def test_unknown_mechanism_has_no_server_or_client() -> None:
    with pytest.raises(ValueError):
        ScramServer(ScramMechanism.UNKNOWN, {}.get)
    with pytest.raises(ValueError):
        ScramClient(ScramMechanism.UNKNOWN, "u", "p")


# ----------------------------------------------------------------------------- fuzzing

_SCRAM_ALPHABET = st.sampled_from(list("nrcpaemi,=2CD3biwsAZ+/09\x00\x7f\xff") + ["=2C", "=3D", ",r=", ",p=", "c=biws"])
_SCRAMISH = st.lists(_SCRAM_ALPHABET, max_size=40).map(lambda parts: "".join(parts).encode("utf-8", "surrogatepass"))


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=200), _SCRAMISH))
def test_fuzz_client_first_only_raises_sasl_errors(token: bytes) -> None:
    server = rfc_server()
    try:
        challenge = server.evaluate(token)
    except SaslAuthenticationError:
        assert not server.complete
    else:
        assert SERVER_FIRST_SHAPE.fullmatch(challenge)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=200), _SCRAMISH.map(lambda t: b"c=biws,r=" + t)))
def test_fuzz_client_final_only_raises_sasl_errors(token: bytes) -> None:
    server = rfc_server()
    server.evaluate(RFC_CLIENT_FIRST)
    with pytest.raises(SaslAuthenticationError):
        server.evaluate(token)
    assert not server.complete


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_fuzz_client_only_raises_sasl_errors(token: bytes) -> None:
    client = ScramClient(SHA256, "user", "pencil", nonce=RFC_CLIENT_NONCE)
    client.first_message()
    with pytest.raises(SaslException):
        client.final_message(token)
    client = ScramClient(SHA256, "user", "pencil", nonce=RFC_CLIENT_NONCE)
    client.first_message()
    client.final_message(RFC_SERVER_FIRST)
    if token != RFC_SERVER_FINAL:
        with pytest.raises(SaslException):
            client.verify_server_final(token)


# ----------------------------------------------------------------------------- client failures


def started_client(**kwargs: object) -> ScramClient:
    client = ScramClient(SHA256, "user", "pencil", nonce=RFC_CLIENT_NONCE, **kwargs)  # type: ignore[arg-type]
    client.first_message()
    return client


def client_failure(call: object, *args: object) -> SaslException:
    with pytest.raises(SaslException) as info:
        call(*args)  # type: ignore[operator]
    return info.value


@pytest.mark.parametrize(
    ("server_first", "message"),
    [
        (b"r=someoneelse,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "Invalid server nonce: does not start with client nonce"),
        (b"r=rOprNGfwEbeRWgbNEkqOx,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4095",
         "Requested iterations 4095 is less than the minimum 4096 for SCRAM_SHA_256"),
        (b"r=rOprNGfwEbeRWgbNEkqOx,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=0",
         "Invalid SCRAM server first message format: invalid iterations 0"),
        (b"r=rOprNGfwEbeRWgbNEkqOx,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=2147483648",
         "Invalid SCRAM server first message format: invalid iterations"),
        (b"r=rOprNGfwEbeRWgbNEkqOx,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=" + b"9" * 5000,
         "Invalid SCRAM server first message format: invalid iterations"),
        (b"r=rOprNGfwEbeRWgbNEkqOx,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=2000000",
         "Requested iterations 2000000 is more than the maximum 1000000 for SCRAM_SHA_256"),
        (b"e=unknown-user", "Invalid SCRAM server first message format: e=unknown-user"),
    ],
)
def test_client_refuses_bad_server_first(server_first: bytes, message: str) -> None:
    client = started_client()
    assert client_failure(client.final_message, server_first).message == message
    assert "Unexpected challenge" in client_failure(client.verify_server_final, RFC_SERVER_FINAL).message


def test_client_max_iterations_is_configurable() -> None:
    client = started_client(max_iterations=4096)
    error = client_failure(client.final_message, RFC_SERVER_FIRST.replace(b"i=4096", b"i=4097"))
    assert error.message == "Requested iterations 4097 is more than the maximum 4096 for SCRAM_SHA_256"


def test_client_refuses_server_error_and_wrong_signature() -> None:
    client = started_client()
    client.final_message(RFC_SERVER_FIRST)
    error = client_failure(client.verify_server_final, b"e=invalid-proof")
    assert error.message == "Sasl authentication using SCRAM_SHA_256 failed with error: invalid-proof"
    assert not client.complete

    client = started_client()
    client.final_message(RFC_SERVER_FIRST)
    wrong = b"v=" + base64.b64encode(b"\0" * 32)
    assert client_failure(client.verify_server_final, wrong).message == (
        "Invalid server signature in server final message"
    )
    assert not client.complete


def test_client_calls_out_of_order() -> None:
    client = ScramClient(SHA256, "user", "pencil")
    error = client_failure(client.final_message, RFC_SERVER_FIRST)
    assert error.message == "Unexpected challenge in Sasl client state SEND_CLIENT_FIRST_MESSAGE"
    client = started_client()
    assert "Unexpected challenge" in client_failure(client.first_message).message


def test_client_rejects_an_unprintable_nonce() -> None:
    for nonce in ("", "a,b", "caf\u00e9", "a b"):
        with pytest.raises(ValueError):
            ScramClient(SHA256, "user", "pencil", nonce=nonce)


def test_secure_random_string_is_base36_130_bits() -> None:
    values = {secure_random_string() for _ in range(50)}
    assert len(values) == 50
    assert all(re.fullmatch("[0-9a-z]{1,26}", v) for v in values)
    assert all(int(v, 36) < 2**130 for v in values)


def test_salted_password_is_pbkdf2() -> None:
    assert salted_password(SHA512, "pw", b"salt", 4096) == hashlib.pbkdf2_hmac("sha512", b"pw", b"salt", 4096)
    assert len(salted_password(SHA256, "\u00e9", b"s", 4096)) == 32


def test_bad_server_nonce_factory_is_a_caller_bug() -> None:
    server = ScramServer(SHA256, {}.get, nonce=lambda: "has,comma")
    with pytest.raises(ValueError):
        server.evaluate(RFC_CLIENT_FIRST)
