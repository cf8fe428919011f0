"""SASL/SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), both sides, as Kafka 2.8 speaks them.

This module owns the SCRAM exchange: the message grammar (Kafka's
``ScramMessages``, ASCII only, as its regular expressions are), the key
arithmetic (``ScramFormatter``), the server (``ScramSaslServer``) and the
client (``ScramSaslClient``).  Credentials are
:class:`~mafka.broker.scram.ScramCredential`; where they come from is the
caller's business.  Pure Python, no I/O.

The exchange::

    client-first   n,[a=authzid],n=<saslname>,r=<cnonce>[,ext=value...]
    server-first   r=<cnonce+snonce>,s=<base64 salt>,i=<iterations>
    client-final   c=<base64 gs2 header>,r=<cnonce+snonce>,p=<base64 ClientProof>
    server-final   v=<base64 ServerSignature>

``AuthMessage = client-first-bare "," server-first "," client-final-without-proof``,
``ClientProof = ClientKey XOR HMAC(StoredKey, AuthMessage)``,
``ServerSignature = HMAC(ServerKey, AuthMessage)``.

Where Mafka is stricter than Kafka 2.8 (each a deliberate choice):

* An unknown user is not revealed.  Kafka fails it at the client-first
  message; :class:`ScramServer` answers a normal-looking server-first (a
  fake salt derived from a key and the user name, so stable across
  attempts, and 4096 iterations) and fails at the client-final message with
  exactly the error a wrong password gets.
* The client-final nonce must equal the server-first's (Kafka 2.8 does not
  check it; later Kafka versions check a suffix) and its channel binding
  must be the base64 of the client-first's gs2 header (Kafka ignores it).
* Tokens over :data:`~mafka.security.sasl.MAX_TOKEN_BYTES` are refused.
* Delegation tokens (the ``tokenauth=true`` extension) are refused: Mafka
  has none.
* The AuthMessage is built from the messages' own text (RFC 5802), where
  Kafka rebuilds it from parsed fields; the two agree for every message a
  Kafka or librdkafka client sends.
* An authorization id is compared after unescaping ``=2C``/``=3D`` (Kafka
  compares the escaped form).

Like Kafka, passwords are not SASLprep-normalized (just UTF-8), and user
names outside ASCII do not parse on the server (Kafka's grammar is ASCII).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from collections.abc import Callable
from enum import Enum

from mafka.broker.scram import ScramCredential, ScramMechanism, generate_credential

from .sasl import SaslAuthenticationError, SaslException, check_token_size

__all__ = [
    "CLIENT_MAX_ITERATIONS",
    "FAKE_ITERATIONS",
    "ScramClient",
    "ScramServer",
    "salted_password",
    "secure_random_string",
]

#: The iterations the server-first of an unknown user announces (``kafka-configs``' default).
FAKE_ITERATIONS = 4096
#: The most iterations :class:`ScramClient` computes by default.  Kafka's client has no
#: bound; one keeps a hostile or misconfigured server from making the client spin on
#: PBKDF2 for minutes (Kafka's brokers accept at most 16384 via the admin API, more only
#: through ZooKeeper-written credentials).
CLIENT_MAX_ITERATIONS = 1_000_000
#: Java's ``Integer.MAX_VALUE``: Kafka parses iteration counts into an int.
_JAVA_INT_MAX = 2**31 - 1

# Kafka's ScramMessages grammar.  Java's [\x01-\x7F&&[^,]] and friends, spelled as ranges.
_VALUE_SAFE = r"[\x01-\x2b\x2d-\x3c\x3e-\x7f]+"  # no ',' and no '='
_VALUE = r"[\x01-\x2b\x2d-\x7f]+"  # no ','
_PRINTABLE = r"[\x21-\x2b\x2d-\x7e]+"  # visible ASCII but ','
_SASLNAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"
_B64 = "[a-zA-Z0-9/+]"
_BASE64 = f"(?:{_B64}{{4}})*(?:{_B64}{{3}}=|{_B64}{{2}}==)?"
_RESERVED = f"(?:m={_VALUE},)?"
_EXTENSIONS = f"(?:,[A-Za-z]+={_VALUE})*"

_CLIENT_FIRST = re.compile(
    f"(?P<gs2>n,(?:a=(?P<authzid>{_SASLNAME}))?,)"
    f"(?P<bare>{_RESERVED}n=(?P<saslname>{_SASLNAME}),r=(?P<nonce>{_PRINTABLE})"
    f"(?P<extensions>{_EXTENSIONS}))"
)
_SERVER_FIRST = re.compile(
    f"{_RESERVED}r=(?P<nonce>{_PRINTABLE}),s=(?P<salt>{_BASE64}),i=(?P<iterations>[0-9]+){_EXTENSIONS}"
)
_CLIENT_FINAL = re.compile(
    f"(?P<without_proof>c=(?P<channel>{_BASE64}),r=(?P<nonce>{_PRINTABLE}){_EXTENSIONS})"
    f",p=(?P<proof>{_BASE64})"
)
_SERVER_FINAL = re.compile(f"e=(?P<error>{_VALUE_SAFE})|v=(?P<signature>{_BASE64}){_EXTENSIONS}")
_NONCE = re.compile(_PRINTABLE)
_SASLNAME_ESCAPE = re.compile("=2C|=3D")

#: Kafka's ``ScramLoginModule.TOKEN_AUTH_CONFIG`` extension.
_TOKEN_AUTH = "tokenauth"
_INVALID_PROOF = "Invalid client credentials"

#: The default key for unknown users' fake salts: random per process.  A broker that
#: wants fake salts to be stable across restarts and brokers passes its own key.
_PROCESS_FAKE_SALT_KEY = secrets.token_bytes(32)


def secure_random_string() -> str:
    """Kafka's ``ScramFormatter.secureRandomString``: a random 130-bit number in base 36."""
    return _base36(secrets.randbits(130))


def salted_password(mechanism: ScramMechanism, password: str, salt: bytes, iterations: int) -> bytes:
    """RFC 5802's ``SaltedPassword = Hi(Normalize(password), salt, i)`` (PBKDF2 with the mechanism's HMAC).

    Normalize is plain UTF-8, as in Kafka's ``ScramFormatter.normalize``.

    Raises:
        ValueError: iterations below 1.
        KeyError: ``ScramMechanism.UNKNOWN``.
    """
    return hashlib.pbkdf2_hmac(mechanism.hash_name, password.encode("utf-8"), salt, iterations)


class _ServerState(Enum):
    RECEIVE_CLIENT_FIRST_MESSAGE = "RECEIVE_CLIENT_FIRST_MESSAGE"
    RECEIVE_CLIENT_FINAL_MESSAGE = "RECEIVE_CLIENT_FINAL_MESSAGE"
    COMPLETE = "COMPLETE"
    FAILED = "FAILED"


class ScramServer:
    """The server side of one SCRAM exchange (a :class:`~mafka.security.sasl.SaslServer`).

    Two tokens: the client-first message, answered with the server-first;
    the client-final message, answered with the server-final.  Any failure
    moves the server to FAILED for good, and so does a token after COMPLETE
    (as Kafka's ``ScramSaslServer`` does).

    An unknown user gets a server-first like any other: the salt is
    ``HMAC-SHA256(fake_salt_key, mechanism NUL username)`` shaped like Kafka's
    salts (a 130-bit number in base 36, as ASCII), the iterations
    :data:`FAKE_ITERATIONS`; the exchange then fails at the client-final
    message with the wrong-password error (same type, same text, same
    work), so neither the answer nor its stage tells a stranger whether the
    user exists.  The salt is stable for a user as long as the key is: the
    default key is random per process, so it changes when the broker
    restarts and differs between brokers (pass one shared, persistent key to
    make unknown users indistinguishable across those too).

    Args:
        mechanism: SCRAM-SHA-256 or SCRAM-SHA-512.
        lookup: user name → the user's credential for *mechanism*, None if
            the user has none.  An exception it raises fails the exchange with
            Kafka's "Credentials could not be obtained" (client-hidden).
        nonce: makes the server's part of the nonce (default
            :func:`secure_random_string`); for tests.
        fake_salt_key: the key unknown users' salts derive from.

    Raises:
        ValueError: ``ScramMechanism.UNKNOWN``.
    """

    def __init__(
        self,
        mechanism: ScramMechanism,
        lookup: Callable[[str], ScramCredential | None],
        *,
        nonce: Callable[[], str] | None = None,
        fake_salt_key: bytes | None = None,
    ) -> None:
        if mechanism is ScramMechanism.UNKNOWN:
            raise ValueError("SCRAM mechanism UNKNOWN has no server")
        self._mechanism = mechanism
        self._lookup = lookup
        self._server_nonce = nonce or secure_random_string
        self._fake_salt_key = _PROCESS_FAKE_SALT_KEY if fake_salt_key is None else fake_salt_key
        self._state = _ServerState.RECEIVE_CLIENT_FIRST_MESSAGE
        self._authorization_id: str | None = None
        # Between the two messages:
        self._credential: ScramCredential | None = None
        self._user_known = False
        self._gs2_header = ""
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""

    @property
    def mechanism_name(self) -> str:
        return self._mechanism.mechanism_name

    @property
    def complete(self) -> bool:
        return self._state is _ServerState.COMPLETE

    @property
    def authorization_id(self) -> str:
        """The authenticated user.

        Raises:
            RuntimeError: not complete.
        """
        if not self.complete or self._authorization_id is None:
            raise RuntimeError("Authentication exchange has not completed")
        return self._authorization_id

    def evaluate(self, token: bytes) -> bytes:
        """Evaluates the client-first or client-final message; returns the server-first or -final.

        Raises:
            SaslAuthenticationError: client-visible — an authorization id other
                than the user name (Kafka's text), the ``tokenauth`` extension.
            SaslException: client-hidden — a malformed or oversize message, a
                credential lookup failure, a stored credential with too few
                iterations, a wrong nonce or channel binding, a wrong proof or
                an unknown user ("Invalid client credentials" for both), a
                token after the exchange ended.
            ValueError: the ``nonce`` factory made a nonce outside printable ASCII
                or with a ``,`` (a caller's bug, not the client's).
        """
        state = self._state
        try:
            if state is _ServerState.RECEIVE_CLIENT_FIRST_MESSAGE:
                check_token_size(token)
                return self._receive_client_first(token)
            if state is _ServerState.RECEIVE_CLIENT_FINAL_MESSAGE:
                check_token_size(token)
                return self._receive_client_final(token)
            raise SaslException(f"Unexpected challenge in Sasl server state {state.value}")
        except SaslAuthenticationError:
            self._state = _ServerState.FAILED
            self._authorization_id = None
            self._clear()
            raise

    def _receive_client_first(self, token: bytes) -> bytes:
        text = token.decode("utf-8", errors="replace")
        match = _CLIENT_FIRST.fullmatch(text)
        if match is None:
            raise SaslException(f"Invalid SCRAM client first message format: {_loggable(text)}")
        username = _unescape(match["saslname"])
        extensions = _parse_extensions(match["extensions"])
        # Java's Boolean.parseBoolean: "true" in any case.
        if extensions.get(_TOKEN_AUTH, "").lower() == "true":
            raise SaslAuthenticationError(
                "Authentication failed: delegation token authentication is not supported"
            )
        # Checked before the lookup (Kafka checks after) so that it cannot tell users apart.
        authzid = match["authzid"]
        if authzid is not None and _unescape(authzid) != username:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is different from username"
            )
        try:
            credential = self._lookup(username)
        except Exception as exc:
            raise SaslException("Authentication failed: Credentials could not be obtained") from exc
        self._user_known = credential is not None
        if credential is None:
            credential = self._fake_credential(username)
        minimum = self._mechanism.min_iterations
        if credential.iterations < minimum:
            raise SaslException(
                f"Iterations {credential.iterations} is less than the minimum {minimum} for {self._mechanism.name}"
            )
        server_nonce = self._server_nonce()
        if _NONCE.fullmatch(server_nonce) is None:
            raise ValueError(f"server nonce {server_nonce!r} is not printable ASCII without ','")
        self._credential = credential
        self._authorization_id = username
        self._gs2_header = match["gs2"]
        self._client_first_bare = match["bare"]
        self._nonce = match["nonce"] + server_nonce
        self._server_first = f"r={self._nonce},s={_b64(credential.salt)},i={credential.iterations}"
        self._state = _ServerState.RECEIVE_CLIENT_FINAL_MESSAGE
        return self._server_first.encode("ascii")

    def _receive_client_final(self, token: bytes) -> bytes:
        credential = self._credential
        assert credential is not None  # set with the state
        text = token.decode("utf-8", errors="replace")
        match = _CLIENT_FINAL.fullmatch(text)
        if match is None:
            # Not Kafka's text with the message appended: it may hold a proof, which is not for logs.
            raise SaslException("Invalid SCRAM client final message format")
        # Kafka 3.x's check: the nonce must END with the server-first's (which holds the fresh server
        # part, so a replay still fails).  Equality, as RFC 5802 reads, would refuse librdkafka up to
        # 2.0 (Debian's kcat), which sends its client nonce twice: cnonce + cnonce + snonce.
        if not match["nonce"].endswith(self._nonce):
            raise SaslException("Invalid client nonce in the final client message.")
        if match["channel"] != _b64(self._gs2_header.encode("ascii")):
            raise SaslException("Invalid channel binding in the final client message.")
        auth_message = ",".join(
            (self._client_first_bare, self._server_first, match["without_proof"])
        ).encode()
        digest = self._mechanism.hash_name
        proof = base64.b64decode(match["proof"])
        client_signature = hmac.new(credential.stored_key, auth_message, digest).digest()
        # A proof of the wrong length fails like a wrong one, after the same work.
        size = len(client_signature)
        client_key = _xor(proof[:size].ljust(size, b"\0"), client_signature)
        computed_stored_key = hashlib.new(digest, client_key).digest()
        proof_ok = len(proof) == size and hmac.compare_digest(
            computed_stored_key, credential.stored_key
        )
        if not (proof_ok and self._user_known):
            raise SaslException(_INVALID_PROOF)
        server_signature = hmac.new(credential.server_key, auth_message, digest).digest()
        self._clear()
        self._state = _ServerState.COMPLETE
        return f"v={_b64(server_signature)}".encode("ascii")

    def _fake_credential(self, username: str) -> ScramCredential:
        seed = f"{self._mechanism.mechanism_name}\0{username}".encode()
        mac = hmac.new(self._fake_salt_key, seed, "sha256").digest()
        # 130 bits in base 36, the shape of Kafka's salts (ScramFormatter.secureRandomBytes).
        salt = _base36(int.from_bytes(mac[:17], "big") >> 6).encode("ascii")
        # Keys nobody knows the password of; the exchange fails on _user_known regardless.
        return generate_credential(
            self._mechanism, salt, secrets.token_bytes(len(mac)), FAKE_ITERATIONS
        )

    def _clear(self) -> None:
        self._credential = None
        self._gs2_header = self._client_first_bare = self._server_first = self._nonce = ""


class _ClientState(Enum):
    SEND_CLIENT_FIRST_MESSAGE = "SEND_CLIENT_FIRST_MESSAGE"
    RECEIVE_SERVER_FIRST_MESSAGE = "RECEIVE_SERVER_FIRST_MESSAGE"
    RECEIVE_SERVER_FINAL_MESSAGE = "RECEIVE_SERVER_FINAL_MESSAGE"
    COMPLETE = "COMPLETE"
    FAILED = "FAILED"


class ScramClient:
    """The client side of one SCRAM exchange (Kafka's ``ScramSaslClient``).

    Call :meth:`first_message`, send it; feed the server-first to
    :meth:`final_message`, send that; feed the server-final to
    :meth:`verify_server_final`.  Any failure (or a call out of order)
    leaves the client FAILED.  Like Kafka's client it sends no
    authorization id (gs2 header ``n,,``) and no extensions.

    Args:
        mechanism: SCRAM-SHA-256 or SCRAM-SHA-512.
        username: escaped on the wire (``,`` → ``=2C``, ``=`` → ``=3D``).
        password: UTF-8, not SASLprep-normalized (as Kafka).
        nonce: the client nonce (default :func:`secure_random_string`); for tests.
        max_iterations: the most iterations a server may ask for
            (:data:`CLIENT_MAX_ITERATIONS`).

    Raises:
        ValueError: ``ScramMechanism.UNKNOWN``, or a nonce outside printable
            ASCII or containing ``,``.
    """

    def __init__(
        self,
        mechanism: ScramMechanism,
        username: str,
        password: str,
        *,
        nonce: str | None = None,
        max_iterations: int = CLIENT_MAX_ITERATIONS,
    ) -> None:
        if mechanism is ScramMechanism.UNKNOWN:
            raise ValueError("SCRAM mechanism UNKNOWN has no client")
        self._nonce = secure_random_string() if nonce is None else nonce
        if _NONCE.fullmatch(self._nonce) is None:
            raise ValueError(f"client nonce {self._nonce!r} is not printable ASCII without ','")
        self._mechanism = mechanism
        self._password = password
        self._max_iterations = max_iterations
        self._state = _ClientState.SEND_CLIENT_FIRST_MESSAGE
        self._client_first_bare = f"n={_escape(username)},r={self._nonce}"
        self._salted_password = b""
        self._auth_message = b""

    @property
    def mechanism_name(self) -> str:
        return self._mechanism.mechanism_name

    @property
    def complete(self) -> bool:
        """True once the server's signature has been verified."""
        return self._state is _ClientState.COMPLETE

    def first_message(self) -> bytes:
        """The client-first message ``n,,n=<saslname>,r=<nonce>``.

        Raises:
            SaslException: called twice.
        """
        self._expect(_ClientState.SEND_CLIENT_FIRST_MESSAGE)
        self._state = _ClientState.RECEIVE_SERVER_FIRST_MESSAGE
        return f"n,,{self._client_first_bare}".encode()

    def final_message(self, server_first: bytes) -> bytes:
        """The client-final message, with the proof, for the server-first message.

        Raises:
            SaslException: a malformed server-first (Kafka's "Invalid SCRAM server
                first message format"), a nonce not extending the client's,
                iterations below the mechanism's minimum or above
                ``max_iterations``, or called out of order.
        """
        self._expect(_ClientState.RECEIVE_SERVER_FIRST_MESSAGE)
        try:
            return self._final_message(server_first)
        except SaslException:
            self._fail()
            raise

    def verify_server_final(self, server_final: bytes) -> None:
        """Checks the server's signature; the exchange is then complete.

        Raises:
            SaslException: the server sent ``e=<error>``, a malformed message or
                a wrong signature, or called out of order.
        """
        self._expect(_ClientState.RECEIVE_SERVER_FINAL_MESSAGE)
        try:
            self._verify_server_final(server_final)
        except SaslException:
            self._fail()
            raise
        self._salted_password = self._auth_message = b""
        self._state = _ClientState.COMPLETE

    def _final_message(self, server_first: bytes) -> bytes:
        check_token_size(server_first)
        text = server_first.decode("utf-8", errors="replace")
        match = _SERVER_FIRST.fullmatch(text)
        if match is None:
            raise SaslException(f"Invalid SCRAM server first message format: {_loggable(text)}")
        digits = match["iterations"]
        if len(digits) > 10 or int(digits) > _JAVA_INT_MAX:
            raise SaslException("Invalid SCRAM server first message format: invalid iterations")
        iterations = int(digits)
        if iterations <= 0:
            raise SaslException(
                f"Invalid SCRAM server first message format: invalid iterations {iterations}"
            )
        if not match["nonce"].startswith(self._nonce):
            raise SaslException("Invalid server nonce: does not start with client nonce")
        name = self._mechanism.name
        if iterations < self._mechanism.min_iterations:
            raise SaslException(
                f"Requested iterations {iterations} is less than the minimum "
                f"{self._mechanism.min_iterations} for {name}"
            )
        if iterations > self._max_iterations:
            raise SaslException(
                f"Requested iterations {iterations} is more than the maximum {self._max_iterations} for {name}"
            )
        salt = base64.b64decode(match["salt"])
        self._salted_password = salted_password(self._mechanism, self._password, salt, iterations)
        without_proof = f"c={_b64(b'n,,')},r={match['nonce']}"
        self._auth_message = f"{self._client_first_bare},{text},{without_proof}".encode()
        digest = self._mechanism.hash_name
        client_key = hmac.new(self._salted_password, b"Client Key", digest).digest()
        stored_key = hashlib.new(digest, client_key).digest()
        client_signature = hmac.new(stored_key, self._auth_message, digest).digest()
        proof = _xor(client_key, client_signature)
        self._state = _ClientState.RECEIVE_SERVER_FINAL_MESSAGE
        return f"{without_proof},p={_b64(proof)}".encode("ascii")

    def _verify_server_final(self, server_final: bytes) -> None:
        check_token_size(server_final)
        text = server_final.decode("utf-8", errors="replace")
        match = _SERVER_FINAL.fullmatch(text)
        if match is None:
            raise SaslException(f"Invalid SCRAM server final message format: {_loggable(text)}")
        if match["error"] is not None:
            raise SaslException(
                f"Sasl authentication using {self._mechanism.name} failed with error: {match['error']}"
            )
        digest = self._mechanism.hash_name
        server_key = hmac.new(self._salted_password, b"Server Key", digest).digest()
        expected = hmac.new(server_key, self._auth_message, digest).digest()
        if not hmac.compare_digest(base64.b64decode(match["signature"]), expected):
            raise SaslException("Invalid server signature in server final message")

    def _expect(self, state: _ClientState) -> None:
        if self._state is not state:
            current = self._state
            self._fail()
            raise SaslException(f"Unexpected challenge in Sasl client state {current.value}")

    def _fail(self) -> None:
        self._state = _ClientState.FAILED
        self._salted_password = self._auth_message = b""


def _escape(username: str) -> str:
    """Kafka's ``ScramFormatter.saslName``: ``=`` → ``=3D``, ``,`` → ``=2C``."""
    return username.replace("=", "=3D").replace(",", "=2C")


def _unescape(saslname: str) -> str:
    """Kafka's ``ScramFormatter.username`` for a name the grammar accepted (every ``=`` starts an escape)."""
    return _SASLNAME_ESCAPE.sub(lambda m: "," if m[0] == "=2C" else "=", saslname)


def _parse_extensions(text: str) -> dict[str, str]:
    """``,key=value,...`` as the grammar matched it (Kafka's ``Utils.parseMap``: the last value wins)."""
    pairs = (item.partition("=") for item in text.split(",")[1:])
    return {key: value for key, _, value in pairs}


def _xor(first: bytes, second: bytes) -> bytes:
    return bytes(a ^ b for a, b in zip(first, second, strict=True))


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _base36(value: int) -> str:
    """Java's ``BigInteger.toString(36)`` for a non-negative value."""
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = []
    while True:
        value, rest = divmod(value, 36)
        out.append(digits[rest])
        if not value:
            return "".join(reversed(out))


def _loggable(text: str, limit: int = 200) -> str:
    """A peer's message for an error text: escaped (no line breaks in logs) and cut short."""
    shown = text.encode("unicode_escape").decode("ascii")
    return shown if len(shown) <= limit else f"{shown[:limit]}..."
