"""How the console names a failed cluster call: Kafka's error names, never a traceback.

Every page and action shows a failure as :class:`ConsoleError`: Kafka's error name
(``TOPIC_ALREADY_EXISTS``, ``CLUSTER_AUTHORIZATION_FAILED``; the client's local
``_TIMED_OUT`` / ``_TRANSPORT`` when the cluster did not answer) and a line of text.
:func:`error_name` maps whatever a client call raised to that name.
"""

from __future__ import annotations

from mafka.client.kafka_error import KafkaError as ClientError
from mafka.client.kafka_error import KafkaException
from mafka.client.security import AuthenticationFailed
from mafka.client.transport import UnsupportedByBroker
from mafka.errors import ErrorCode
from mafka.errors import KafkaError as BrokerError

__all__ = ["ConsoleError", "error_name", "code_name", "console_error"]


class ConsoleError(Exception):
    """A failed call, as the console shows it: ``name`` (Kafka's) and ``detail`` (one line)."""

    def __init__(self, name: str, detail: str = "") -> None:
        super().__init__(f"{name}: {detail}" if detail else name)
        self.name = name
        self.detail = detail


def code_name(code: int) -> str:
    """Kafka's name for an error code (broker or client-local), ``NONE`` for 0."""
    try:
        return ErrorCode(code).name
    except ValueError:
        return ClientError(code).name()


def error_name(exc: BaseException) -> str:
    """Kafka's error name for what a client call raised."""
    if isinstance(exc, ConsoleError):
        return exc.name
    if isinstance(exc, KafkaException):
        return exc.error.name()
    if isinstance(exc, ClientError):
        return exc.name()
    if isinstance(exc, BrokerError):
        return code_name(int(exc.code))
    if isinstance(exc, AuthenticationFailed):
        return exc.error.name()
    if isinstance(exc, UnsupportedByBroker):
        return ErrorCode.UNSUPPORTED_VERSION.name
    if isinstance(exc, TimeoutError):
        return ClientError(ClientError._TIMED_OUT).name()
    if isinstance(exc, (ConnectionError, OSError)):
        return ClientError(ClientError._TRANSPORT).name()
    return ErrorCode.UNKNOWN_SERVER_ERROR.name


def console_error(exc: BaseException, what: str) -> ConsoleError:
    """``exc`` as a :class:`ConsoleError` whose detail says which call (``what``) failed."""
    if isinstance(exc, ConsoleError):
        return exc
    text = str(exc) or type(exc).__name__
    return ConsoleError(error_name(exc), f"{what}: {text}")
