"""confluent-kafka-shaped errors: :class:`KafkaError` values and :class:`KafkaException`.

A confluent-kafka user checks ``msg.error()`` and ``err.code()`` against
constants such as ``KafkaError._PARTITION_EOF`` or
``KafkaError.UNKNOWN_TOPIC_OR_PART``; this module keeps those names and
numbers so that such code runs unchanged.  Broker error codes come from the
single table in :mod:`mafka.errors` (Kafka's names, e.g.
``KafkaError.NOT_LEADER_OR_FOLLOWER``, plus librdkafka's older spellings
where they differ); client-local conditions use librdkafka's negative codes
(``_MSG_TIMED_OUT`` = -192 …) because applications compare against them.

How this relates to :mod:`mafka.errors`, which has a ``KafkaError`` too: that
one is the exception hierarchy of Kafka's protocol errors (one class per
:class:`~mafka.errors.ErrorCode`, ``except RetriableError`` …), raised by the
broker and inside the client.  The :class:`KafkaError` here is
confluent-kafka's error *value*: not an exception, one class for every code,
comparing equal to its int code, with librdkafka's ``fatal()`` and
``txn_requires_abort()`` flags.  Everything it knows about a broker code (the
name, the description, whether it is retriable) it reads from
:class:`~mafka.errors.ErrorCode`; nothing is tabled twice.  Client
applications only ever see this module's classes: a protocol exception
raised inside the client becomes a :class:`KafkaException` holding
:func:`error_for` of it.
"""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any, ClassVar

from mafka.errors import ErrorCode
from mafka.errors import KafkaError as BrokerError

__all__ = ["KafkaError", "KafkaException", "LOCAL_ERRORS", "error_for"]

#: librdkafka's local (negative) error codes the client raises, name -> (code, description).
LOCAL_ERRORS: dict[str, tuple[int, str]] = {
    "_BAD_MSG": (-199, "Local: Bad message format"),
    "_DESTROY": (-197, "Local: Broker handle destroyed"),
    "_FAIL": (-196, "Local: Communication failure with broker"),
    "_TRANSPORT": (-195, "Local: Broker transport failure"),
    "_MSG_TIMED_OUT": (-192, "Local: Message timed out"),
    "_PARTITION_EOF": (-191, "Broker: No more messages"),
    "_UNKNOWN_PARTITION": (-190, "Local: Unknown partition"),
    "_UNKNOWN_TOPIC": (-188, "Local: Unknown topic"),
    "_ALL_BROKERS_DOWN": (-187, "Local: All broker connections are down"),
    "_INVALID_ARG": (-186, "Local: Invalid argument or configuration"),
    "_TIMED_OUT": (-185, "Local: Timed out"),
    "_QUEUE_FULL": (-184, "Local: Queue full"),
    "_SSL": (-181, "Local: SSL error"),
    "_PREV_IN_PROGRESS": (-177, "Local: Previous operation in progress"),
    "_ASSIGN_PARTITIONS": (-175, "Local: Assign partitions"),
    "_REVOKE_PARTITIONS": (-174, "Local: Revoke partitions"),
    "_CONFLICT": (-173, "Local: Conflicting use"),
    "_STATE": (-172, "Local: Erroneous state"),
    "_AUTHENTICATION": (-169, "Local: Authentication failure"),
    "_NO_OFFSET": (-168, "Local: No offset stored"),
    "_OUTDATED": (-167, "Local: Outdated"),
    "_UNSUPPORTED_FEATURE": (-165, "Local: Required feature not supported by broker"),
    "_PURGE_QUEUE": (-152, "Local: Purged in queue"),
    "_PURGE_INFLIGHT": (-151, "Local: Purged in flight"),
    "_FATAL": (-150, "Local: Fatal error"),
    "_INCONSISTENT": (-149, "Local: Inconsistent state"),
    "_MAX_POLL_EXCEEDED": (-147, "Local: Maximum application poll interval (max.poll.interval.ms) exceeded"),
    "_NOT_CONFIGURED": (-145, "Local: Functionality not configured"),
    "_FENCED": (-144, "Local: This instance has been fenced by a newer instance"),
    "_ASSIGNMENT_LOST": (-142, "Local: Group partitions lost"),
    "_LOG_TRUNCATION": (-139, "Local: Partition log truncation detected"),
}

_LOCAL_BY_CODE = {code: (name, text) for name, (code, text) in LOCAL_ERRORS.items()}

# librdkafka spells a few broker codes differently; confluent-kafka users use these.
_LIBRDKAFKA_ALIASES = {
    "UNKNOWN_TOPIC_OR_PART": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    "NOT_LEADER_FOR_PARTITION": ErrorCode.NOT_LEADER_OR_FOLLOWER,
    "MSG_SIZE_TOO_LARGE": ErrorCode.MESSAGE_TOO_LARGE,
    "OFFSET_OUT_OF_RANGE": ErrorCode.OFFSET_OUT_OF_RANGE,
    "REQUEST_TIMED_OUT": ErrorCode.REQUEST_TIMED_OUT,
    "NO_ERROR": ErrorCode.NONE,
}


class KafkaError:
    """An error value: a code, its name, a message, and whether a retry may help.

    Compares equal to its int code, as confluent-kafka's does, so
    ``err.code() == KafkaError._PARTITION_EOF`` and ``err == KafkaError.X`` both work.
    """

    __slots__ = ("_code", "_reason", "_fatal", "_retriable", "_txn_requires_abort")

    if TYPE_CHECKING:
        # The code constants the loops after this class set with setattr(), declared for type
        # checkers, which cannot see them: librdkafka's local codes (LOCAL_ERRORS), Kafka's
        # names (ErrorCode, in code order), then librdkafka's spellings (_LIBRDKAFKA_ALIASES) not
        # already among them.  Nothing here runs; tests/unit/client/test_kafka_error.py checks
        # these lines against what is set.
        _BAD_MSG: ClassVar[int]
        _DESTROY: ClassVar[int]
        _FAIL: ClassVar[int]
        _TRANSPORT: ClassVar[int]
        _MSG_TIMED_OUT: ClassVar[int]
        _PARTITION_EOF: ClassVar[int]
        _UNKNOWN_PARTITION: ClassVar[int]
        _UNKNOWN_TOPIC: ClassVar[int]
        _ALL_BROKERS_DOWN: ClassVar[int]
        _INVALID_ARG: ClassVar[int]
        _TIMED_OUT: ClassVar[int]
        _QUEUE_FULL: ClassVar[int]
        _SSL: ClassVar[int]
        _PREV_IN_PROGRESS: ClassVar[int]
        _ASSIGN_PARTITIONS: ClassVar[int]
        _REVOKE_PARTITIONS: ClassVar[int]
        _CONFLICT: ClassVar[int]
        _STATE: ClassVar[int]
        _AUTHENTICATION: ClassVar[int]
        _NO_OFFSET: ClassVar[int]
        _OUTDATED: ClassVar[int]
        _UNSUPPORTED_FEATURE: ClassVar[int]
        _PURGE_QUEUE: ClassVar[int]
        _PURGE_INFLIGHT: ClassVar[int]
        _FATAL: ClassVar[int]
        _INCONSISTENT: ClassVar[int]
        _MAX_POLL_EXCEEDED: ClassVar[int]
        _NOT_CONFIGURED: ClassVar[int]
        _FENCED: ClassVar[int]
        _ASSIGNMENT_LOST: ClassVar[int]
        _LOG_TRUNCATION: ClassVar[int]
        UNKNOWN_SERVER_ERROR: ClassVar[int]
        NONE: ClassVar[int]
        OFFSET_OUT_OF_RANGE: ClassVar[int]
        CORRUPT_MESSAGE: ClassVar[int]
        UNKNOWN_TOPIC_OR_PARTITION: ClassVar[int]
        INVALID_FETCH_SIZE: ClassVar[int]
        LEADER_NOT_AVAILABLE: ClassVar[int]
        NOT_LEADER_OR_FOLLOWER: ClassVar[int]
        REQUEST_TIMED_OUT: ClassVar[int]
        BROKER_NOT_AVAILABLE: ClassVar[int]
        REPLICA_NOT_AVAILABLE: ClassVar[int]
        MESSAGE_TOO_LARGE: ClassVar[int]
        STALE_CONTROLLER_EPOCH: ClassVar[int]
        OFFSET_METADATA_TOO_LARGE: ClassVar[int]
        NETWORK_EXCEPTION: ClassVar[int]
        COORDINATOR_LOAD_IN_PROGRESS: ClassVar[int]
        COORDINATOR_NOT_AVAILABLE: ClassVar[int]
        NOT_COORDINATOR: ClassVar[int]
        INVALID_TOPIC_EXCEPTION: ClassVar[int]
        RECORD_LIST_TOO_LARGE: ClassVar[int]
        NOT_ENOUGH_REPLICAS: ClassVar[int]
        NOT_ENOUGH_REPLICAS_AFTER_APPEND: ClassVar[int]
        INVALID_REQUIRED_ACKS: ClassVar[int]
        ILLEGAL_GENERATION: ClassVar[int]
        INCONSISTENT_GROUP_PROTOCOL: ClassVar[int]
        INVALID_GROUP_ID: ClassVar[int]
        UNKNOWN_MEMBER_ID: ClassVar[int]
        INVALID_SESSION_TIMEOUT: ClassVar[int]
        REBALANCE_IN_PROGRESS: ClassVar[int]
        INVALID_COMMIT_OFFSET_SIZE: ClassVar[int]
        TOPIC_AUTHORIZATION_FAILED: ClassVar[int]
        GROUP_AUTHORIZATION_FAILED: ClassVar[int]
        CLUSTER_AUTHORIZATION_FAILED: ClassVar[int]
        INVALID_TIMESTAMP: ClassVar[int]
        UNSUPPORTED_SASL_MECHANISM: ClassVar[int]
        ILLEGAL_SASL_STATE: ClassVar[int]
        UNSUPPORTED_VERSION: ClassVar[int]
        TOPIC_ALREADY_EXISTS: ClassVar[int]
        INVALID_PARTITIONS: ClassVar[int]
        INVALID_REPLICATION_FACTOR: ClassVar[int]
        INVALID_REPLICA_ASSIGNMENT: ClassVar[int]
        INVALID_CONFIG: ClassVar[int]
        NOT_CONTROLLER: ClassVar[int]
        INVALID_REQUEST: ClassVar[int]
        UNSUPPORTED_FOR_MESSAGE_FORMAT: ClassVar[int]
        POLICY_VIOLATION: ClassVar[int]
        OUT_OF_ORDER_SEQUENCE_NUMBER: ClassVar[int]
        DUPLICATE_SEQUENCE_NUMBER: ClassVar[int]
        INVALID_PRODUCER_EPOCH: ClassVar[int]
        INVALID_TXN_STATE: ClassVar[int]
        INVALID_PRODUCER_ID_MAPPING: ClassVar[int]
        INVALID_TRANSACTION_TIMEOUT: ClassVar[int]
        CONCURRENT_TRANSACTIONS: ClassVar[int]
        TRANSACTION_COORDINATOR_FENCED: ClassVar[int]
        TRANSACTIONAL_ID_AUTHORIZATION_FAILED: ClassVar[int]
        SECURITY_DISABLED: ClassVar[int]
        OPERATION_NOT_ATTEMPTED: ClassVar[int]
        KAFKA_STORAGE_ERROR: ClassVar[int]
        LOG_DIR_NOT_FOUND: ClassVar[int]
        SASL_AUTHENTICATION_FAILED: ClassVar[int]
        UNKNOWN_PRODUCER_ID: ClassVar[int]
        REASSIGNMENT_IN_PROGRESS: ClassVar[int]
        DELEGATION_TOKEN_AUTH_DISABLED: ClassVar[int]
        DELEGATION_TOKEN_NOT_FOUND: ClassVar[int]
        DELEGATION_TOKEN_OWNER_MISMATCH: ClassVar[int]
        DELEGATION_TOKEN_REQUEST_NOT_ALLOWED: ClassVar[int]
        DELEGATION_TOKEN_AUTHORIZATION_FAILED: ClassVar[int]
        DELEGATION_TOKEN_EXPIRED: ClassVar[int]
        INVALID_PRINCIPAL_TYPE: ClassVar[int]
        NON_EMPTY_GROUP: ClassVar[int]
        GROUP_ID_NOT_FOUND: ClassVar[int]
        FETCH_SESSION_ID_NOT_FOUND: ClassVar[int]
        INVALID_FETCH_SESSION_EPOCH: ClassVar[int]
        LISTENER_NOT_FOUND: ClassVar[int]
        TOPIC_DELETION_DISABLED: ClassVar[int]
        FENCED_LEADER_EPOCH: ClassVar[int]
        UNKNOWN_LEADER_EPOCH: ClassVar[int]
        UNSUPPORTED_COMPRESSION_TYPE: ClassVar[int]
        STALE_BROKER_EPOCH: ClassVar[int]
        OFFSET_NOT_AVAILABLE: ClassVar[int]
        MEMBER_ID_REQUIRED: ClassVar[int]
        PREFERRED_LEADER_NOT_AVAILABLE: ClassVar[int]
        GROUP_MAX_SIZE_REACHED: ClassVar[int]
        FENCED_INSTANCE_ID: ClassVar[int]
        ELIGIBLE_LEADERS_NOT_AVAILABLE: ClassVar[int]
        ELECTION_NOT_NEEDED: ClassVar[int]
        NO_REASSIGNMENT_IN_PROGRESS: ClassVar[int]
        GROUP_SUBSCRIBED_TO_TOPIC: ClassVar[int]
        INVALID_RECORD: ClassVar[int]
        UNSTABLE_OFFSET_COMMIT: ClassVar[int]
        THROTTLING_QUOTA_EXCEEDED: ClassVar[int]
        PRODUCER_FENCED: ClassVar[int]
        RESOURCE_NOT_FOUND: ClassVar[int]
        DUPLICATE_RESOURCE: ClassVar[int]
        UNACCEPTABLE_CREDENTIAL: ClassVar[int]
        INCONSISTENT_VOTER_SET: ClassVar[int]
        INVALID_UPDATE_VERSION: ClassVar[int]
        FEATURE_UPDATE_FAILED: ClassVar[int]
        PRINCIPAL_DESERIALIZATION_FAILURE: ClassVar[int]
        SNAPSHOT_NOT_FOUND: ClassVar[int]
        POSITION_OUT_OF_RANGE: ClassVar[int]
        UNKNOWN_TOPIC_ID: ClassVar[int]
        DUPLICATE_BROKER_REGISTRATION: ClassVar[int]
        BROKER_ID_NOT_REGISTERED: ClassVar[int]
        INCONSISTENT_TOPIC_ID: ClassVar[int]
        INCONSISTENT_CLUSTER_ID: ClassVar[int]
        TRANSACTIONAL_ID_NOT_FOUND: ClassVar[int]
        FETCH_SESSION_TOPIC_ID_ERROR: ClassVar[int]
        INELIGIBLE_REPLICA: ClassVar[int]
        NEW_LEADER_ELECTED: ClassVar[int]
        OFFSET_MOVED_TO_TIERED_STORAGE: ClassVar[int]
        FENCED_MEMBER_EPOCH: ClassVar[int]
        UNRELEASED_INSTANCE_ID: ClassVar[int]
        UNSUPPORTED_ASSIGNOR: ClassVar[int]
        STALE_MEMBER_EPOCH: ClassVar[int]
        MISMATCHED_ENDPOINT_TYPE: ClassVar[int]
        UNSUPPORTED_ENDPOINT_TYPE: ClassVar[int]
        UNKNOWN_CONTROLLER_ID: ClassVar[int]
        UNKNOWN_SUBSCRIPTION_ID: ClassVar[int]
        TELEMETRY_TOO_LARGE: ClassVar[int]
        INVALID_REGISTRATION: ClassVar[int]
        TRANSACTION_ABORTABLE: ClassVar[int]
        INVALID_RECORD_STATE: ClassVar[int]
        SHARE_SESSION_NOT_FOUND: ClassVar[int]
        INVALID_SHARE_SESSION_EPOCH: ClassVar[int]
        FENCED_STATE_EPOCH: ClassVar[int]
        INVALID_VOTER_KEY: ClassVar[int]
        DUPLICATE_VOTER: ClassVar[int]
        VOTER_NOT_FOUND: ClassVar[int]
        INVALID_REGULAR_EXPRESSION: ClassVar[int]
        REBOOTSTRAP_REQUIRED: ClassVar[int]
        STREAMS_INVALID_TOPOLOGY: ClassVar[int]
        STREAMS_INVALID_TOPOLOGY_EPOCH: ClassVar[int]
        STREAMS_TOPOLOGY_FENCED: ClassVar[int]
        SHARE_SESSION_LIMIT_REACHED: ClassVar[int]
        UNKNOWN_TOPIC_OR_PART: ClassVar[int]
        NOT_LEADER_FOR_PARTITION: ClassVar[int]
        MSG_SIZE_TOO_LARGE: ClassVar[int]
        NO_ERROR: ClassVar[int]

    def __init__(
        self,
        code: int,
        reason: str | None = None,
        fatal: bool = False,
        retriable: bool | None = None,
        txn_requires_abort: bool = False,
    ) -> None:
        self._code = int(code)
        self._fatal = fatal
        self._txn_requires_abort = txn_requires_abort
        if retriable is None:
            try:
                retriable = ErrorCode(self._code).retriable
            except ValueError:
                retriable = self._code in (-195, -192, -185, -187)
        self._retriable = retriable
        self._reason = reason if reason is not None else _default_text(self._code)

    def code(self) -> int:
        return self._code

    def name(self) -> str:
        local = _LOCAL_BY_CODE.get(self._code)
        if local is not None:
            return local[0]
        try:
            return ErrorCode(self._code).name
        except ValueError:
            return f"ERR_{self._code}"

    def str(self) -> str:
        return self._reason

    def fatal(self) -> bool:
        return self._fatal

    def retriable(self) -> bool:
        return self._retriable

    def txn_requires_abort(self) -> bool:
        return self._txn_requires_abort

    def __eq__(self, other: Any) -> bool:
        if isinstance(other, KafkaError):
            return self._code == other._code
        if isinstance(other, int):
            return self._code == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._code)

    # (``builtins.str``: in this class body ``str`` is the method above.)
    def __str__(self) -> builtins.str:
        return self._reason

    def __repr__(self) -> builtins.str:
        return f'KafkaError{{code={self.name()},val={self._code},str="{self._reason}"}}'


def _default_text(code: int) -> str:
    local = _LOCAL_BY_CODE.get(code)
    if local is not None:
        return local[1]
    try:
        return f"Broker: {ErrorCode(code).description}"
    except ValueError:
        return f"Unknown error code {code}"


for _name, (_code, _text) in LOCAL_ERRORS.items():
    setattr(KafkaError, _name, _code)
for _member in ErrorCode:
    setattr(KafkaError, _member.name, int(_member))
for _alias, _member in _LIBRDKAFKA_ALIASES.items():
    setattr(KafkaError, _alias, int(_member))


class KafkaException(Exception):
    """Raised by client calls; ``args[0]`` is the :class:`KafkaError` (confluent-kafka's shape)."""

    def __init__(self, error: KafkaError | int, reason: str | None = None) -> None:
        if not isinstance(error, KafkaError):
            error = KafkaError(error, reason)
        super().__init__(error)

    @property
    def error(self) -> KafkaError:
        error: KafkaError = self.args[0]
        return error

    def __str__(self) -> str:
        return str(self.args[0])


def error_for(exc: BrokerError) -> KafkaError:
    """The confluent-kafka error value for a protocol exception of :mod:`mafka.errors`.

    Same code (the raw number for one Kafka does not define) and the broker's
    message; when the broker sent none (the exception holds Kafka's
    description), confluent-kafka's text for the code, ``Broker: <description>``.
    """
    message = None if exc.message == exc.code.description else exc.message
    return KafkaError(exc.raw_code, message or None)
