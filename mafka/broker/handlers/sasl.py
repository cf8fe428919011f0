"""SaslHandshake (17) and SaslAuthenticate (36) once authentication is over, as Kafka's ``KafkaApis``.

While a connection authenticates, :mod:`mafka.broker.sasl_authenticator`
answers these requests itself; the dispatcher sees them only after that (or
on a listener without SASL), where Kafka answers ILLEGAL_SASL_STATE.
"""

from __future__ import annotations

from typing import Any

from mafka.errors import ErrorCode

SASL_HANDSHAKE = 17
SASL_AUTHENTICATE = 36


def handlers(broker: Any) -> dict[int, Any]:
    def handshake(request: Any, connection: Any) -> dict[str, Any]:
        return {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": []}

    def authenticate(request: Any, connection: Any) -> dict[str, Any]:
        return {
            "error_code": ErrorCode.ILLEGAL_SASL_STATE,
            "error_message": "SaslAuthenticate request received after successful authentication",
            "auth_bytes": b"",
            "session_lifetime_ms": 0,
        }

    return {SASL_HANDSHAKE: handshake, SASL_AUTHENTICATE: authenticate}
