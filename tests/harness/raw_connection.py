"""One blocking connection that sends exact requests, can authenticate with SASL, and sees a close.

Test infrastructure for the security tests: a request a client library would
never send (a follower fetch from a user, a LeaderAndIsr from a client), or
bytes that are not a request at all.
"""

from __future__ import annotations

import socket
import struct
from typing import Any

from mafka.security.sasl_client import SaslClientSession
from mafka.wire.codec import decode_response, encode_request

__all__ = ["Raw"]

SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36


class Raw:
    """One blocking connection speaking exact requests (and reporting a close)."""

    def __init__(self, address: tuple[str, int]) -> None:
        self.sock = socket.create_connection(address, timeout=10)
        self.cid = 0

    def close(self) -> None:
        self.sock.close()

    def send(self, api_key: int, version: int, body: dict) -> None:
        self.cid += 1
        self.sock.sendall(encode_request(api_key, version, self.cid, "raw", body))

    def call(self, api_key: int, version: int, body: dict) -> Any:
        self.send(api_key, version, body)
        (size,) = struct.unpack(">i", self._exact(4))
        cid, response = decode_response(api_key, version, self._exact(size))
        assert cid == self.cid
        return response

    def _exact(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError(f"closed after {len(out)} of {n} bytes")
            out += chunk
        return bytes(out)

    def closed_by_peer(self, timeout: float = 5.0) -> bool:
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False

    def authenticate(self, mechanism: str, user: str, password: str) -> Any:
        """SaslHandshake v1 + SaslAuthenticate v1; the last SaslAuthenticate response."""
        handshake = self.call(SASL_HANDSHAKE, 1, {"mechanism": mechanism})
        assert handshake.error_code == 0, handshake
        session = SaslClientSession(mechanism, user, password)
        token = session.first_token()
        while True:
            response = self.call(SASL_AUTHENTICATE, 1, {"auth_bytes": token})
            if response.error_code != 0:
                return response
            token = session.next_token(bytes(response.auth_bytes))
            if token is None:
                return response
