"""SCRAM credentials as Kafka 2.8 stores them in ZooKeeper (KIP-554), without authentication itself.

Pure functions, no I/O:

* :class:`ScramMechanism` — Kafka's public ``ScramMechanism`` (the wire's
  ``mechanism`` byte: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512, anything else
  UNKNOWN) with the hash and the iteration bounds Kafka enforces (at least
  4096, ``InternalScramMechanism.minIterations``; at most 16384, the
  broker's ``maxIterations``).
* :func:`generate_credential` — RFC 5802 from the client's salted password:
  ``ClientKey = HMAC(SaltedPassword, "Client Key")``, ``StoredKey =
  H(ClientKey)``, ``ServerKey = HMAC(SaltedPassword, "Server Key")``
  (Kafka's ``ScramFormatter.generateCredential``); the password itself
  never reaches the broker.
* :func:`credential_to_string` / :func:`credential_from_string` — Kafka's
  ``ScramCredentialUtils``: ``salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>``,
  the value stored under the mechanism's name in ``/config/users/<user>``.
* :func:`sanitize` / :func:`desanitize` — Kafka's ``Sanitizer``: user names
  become znode names by ``URLEncoder`` (UTF-8; letters, digits and ``.-_``
  kept, ``*`` as ``%2A``, a space as ``%20``).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass
from enum import IntEnum
from urllib.parse import unquote_plus

__all__ = [
    "MAX_ITERATIONS",
    "ScramCredential",
    "ScramMechanism",
    "credential_from_string",
    "credential_to_string",
    "desanitize",
    "generate_credential",
    "sanitize",
]

#: The most iterations the broker accepts (``ZkAdminManager.alterUserScramCredentials``).
MAX_ITERATIONS = 16384


class ScramMechanism(IntEnum):
    """Kafka's ``ScramMechanism``: the wire type byte; ``mechanism_name`` is the config key."""

    UNKNOWN = 0
    SCRAM_SHA_256 = 1
    SCRAM_SHA_512 = 2

    @classmethod
    def from_type(cls, value: int) -> ScramMechanism:
        """The mechanism for a wire byte; UNKNOWN for any other value."""
        try:
            return cls(value)
        except ValueError:
            return cls.UNKNOWN

    @property
    def mechanism_name(self) -> str:
        """``SCRAM-SHA-256`` / ``SCRAM-SHA-512`` (``UNKNOWN`` for UNKNOWN)."""
        return self.name.replace("_", "-") if self is not ScramMechanism.UNKNOWN else "UNKNOWN"

    @property
    def hash_name(self) -> str:
        return {ScramMechanism.SCRAM_SHA_256: "sha256", ScramMechanism.SCRAM_SHA_512: "sha512"}[
            self
        ]

    @property
    def min_iterations(self) -> int:
        return 4096


#: The known mechanisms in Kafka's order (describe lists credentials in it).
MECHANISMS = (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512)


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """What the broker keeps of a password (Kafka's ``ScramCredential``)."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def generate_credential(
    mechanism: ScramMechanism, salt: bytes, salted_password: bytes, iterations: int
) -> ScramCredential:
    """The stored and server keys derived from the client's salted password (RFC 5802 §3)."""
    digest = mechanism.hash_name
    client_key = hmac.new(salted_password, b"Client Key", digest).digest()
    stored_key = hashlib.new(digest, client_key).digest()
    server_key = hmac.new(salted_password, b"Server Key", digest).digest()
    return ScramCredential(bytes(salt), stored_key, server_key, iterations)


def credential_to_string(credential: ScramCredential) -> str:
    """``salt=…,stored_key=…,server_key=…,iterations=…`` (standard Base64, padded)."""

    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode("ascii")

    return (
        f"salt={b64(credential.salt)},stored_key={b64(credential.stored_key)},"
        f"server_key={b64(credential.server_key)},iterations={credential.iterations}"
    )


def credential_from_string(value: str) -> ScramCredential:
    """Parses :func:`credential_to_string`'s format.

    Raises:
        ValueError: Not exactly the four properties, or a bad value.
    """
    props = {}
    for token in value.split(","):
        key, sep, val = token.partition("=")
        if not sep or not key:
            raise ValueError(f"Credentials not valid: {value}")
        props[key] = val
    if set(props) != {"salt", "stored_key", "server_key", "iterations"}:
        raise ValueError(f"Credentials not valid: {value}")
    return ScramCredential(
        base64.b64decode(props["salt"], validate=True),
        base64.b64decode(props["stored_key"], validate=True),
        base64.b64decode(props["server_key"], validate=True),
        int(props["iterations"]),
    )


_KEPT = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_")


def sanitize(name: str) -> str:
    """Kafka's ``Sanitizer.sanitize``: the entity name as a znode name."""
    return "".join(chr(b) if b in _KEPT else f"%{b:02X}" for b in name.encode("utf-8"))


def desanitize(name: str) -> str:
    """Kafka's ``Sanitizer.desanitize`` (``URLDecoder``: ``+`` is a space)."""
    return unquote_plus(name, encoding="utf-8")
