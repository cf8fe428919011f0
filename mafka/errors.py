"""Kafka protocol error codes and the exceptions that carry them.

Contract:

* :class:`ErrorCode` is an :class:`~enum.IntEnum` holding every error code of
  Kafka's ``org.apache.kafka.common.protocol.Errors`` (codes -1 through 133,
  Apache Kafka 4.x), under Kafka's enum name and number verbatim. Each member
  knows whether Kafka's exception for it is a ``RetriableException``
  (:attr:`ErrorCode.retriable`), whether it is an ``InvalidMetadataException``
  after which a client should refresh its metadata
  (:attr:`ErrorCode.invalid_metadata`, which implies ``retriable``), Kafka's
  default message (:attr:`ErrorCode.description`) and its exception class
  (:attr:`ErrorCode.exception`).
* The enum body below is the single table of that data; nothing else is
  maintained by hand. For every code except ``NONE`` the module generates one
  exception class, a module attribute listed in ``__all__``, named after the
  Kafka name in CamelCase plus ``Error`` (a trailing ``_ERROR`` or
  ``_EXCEPTION`` is dropped first): ``NOT_LEADER_OR_FOLLOWER`` ->
  :class:`NotLeaderOrFollowerError`, ``KAFKA_STORAGE_ERROR`` ->
  ``KafkaStorageError``, ``INVALID_TOPIC_EXCEPTION`` -> ``InvalidTopicError``.
* Every exception derives from :class:`KafkaError`; the retriable ones from
  :class:`RetriableError`, the metadata ones from :class:`InvalidMetadataError`
  (mirroring Kafka's Java hierarchy), so ``except RetriableError`` works.
  Exactly one class is registered per code; :meth:`KafkaError.for_code` finds
  it. A number Kafka does not define maps to a subclass of
  ``UnknownServerError`` (:class:`UnknownErrorCodeError`) that keeps the raw
  number in ``raw_code``, the way Kafka's clients treat unknown codes as
  ``UNKNOWN_SERVER_ERROR``.
* :func:`raise_for_code` raises the matching exception and does nothing for
  ``NONE`` (0).
* Two exceptions carry no error code and so are not :class:`KafkaError` s;
  they are defined here once for broker, tools and client:
  :class:`ConfigError` (Kafka's ``org.apache.kafka.common.config.ConfigException``,
  a :class:`ValueError`: a configuration Kafka would refuse, the broker's
  ``server.properties`` as much as a client's settings) and
  :class:`IllegalStateError` (``java.lang.IllegalStateException``: a state
  machine asked for a transition it does not allow, a bug rather than a
  client error).
* The client library's :class:`mafka.client.KafkaError` is a different thing
  with the same name, kept for confluent-kafka compatibility: an error *value*
  (``msg.error()``, ``KafkaException.args[0]``) holding a code, a message and
  flags.  Its broker codes, names, descriptions and retriable flags come from
  :class:`ErrorCode` here; it adds librdkafka's local (negative) codes.  A
  :class:`KafkaError` exception raised inside the client reaches applications
  as a ``KafkaException`` wrapping such a value
  (:func:`mafka.client.kafka_error.error_for`).

Example:
    >>> raise_for_code(0)
    >>> try:
    ...     raise_for_code(6)
    ... except RetriableError as exc:
    ...     (exc.code.name, exc.retriable, exc.invalid_metadata)
    ('NOT_LEADER_OR_FOLLOWER', True, True)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from enum import IntEnum
from functools import cache
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Final, TypeVar, overload

__all__ = [
    "ERROR_CLASSES",
    "ConfigError",
    "ErrorCode",
    "IllegalStateError",
    "InvalidMetadataError",
    "KafkaError",
    "RetriableError",
    "UnknownErrorCodeError",
    "raise_for_code",
]  # The generated per-code exception classes are appended below.

# Kind of Kafka's exception class, the second column of the table in ErrorCode:
_N: Final = "ApiException"  # neither retriable nor a metadata error
_R: Final = "RetriableException"  # retriable
_M: Final = "InvalidMetadataException"  # retriable, and the client refreshes its metadata


class ErrorCode(IntEnum):
    """Kafka's protocol error codes, named and numbered as in Kafka's ``Errors`` enum.

    Each member is declared as ``NAME = code, kind, description`` where ``kind``
    names the Java base class of Kafka's exception for the code. Transcribed from
    ``clients/src/main/java/org/apache/kafka/common/protocol/Errors.java`` and the
    exception classes in ``org.apache.kafka.common.errors``: codes -1 to 128 from
    apache/kafka trunk of October 2024; codes 129 to 133 and the current wording of
    24 and 81 from Kafka 4.x copies of that file.
    """

    _kind: str
    _description: str

    # ErrorCode(6) is the enum's lookup by value (EnumType.__call__); the three-argument form
    # builds the members below, and only while the class is being created.  The lookup overload
    # is there for type checkers, which take an enum's call signature from its __new__.
    @overload
    def __new__(cls, code: int) -> ErrorCode: ...
    @overload
    def __new__(cls, code: int, kind: str, description: str) -> ErrorCode: ...
    def __new__(cls, code: int, kind: str = _N, description: str = "") -> ErrorCode:
        member = int.__new__(cls, code)
        member._value_ = code
        member._kind = kind
        member._description = description
        return member

    UNKNOWN_SERVER_ERROR = (
        -1,
        _N,
        "The server experienced an unexpected error when processing the request.",
    )
    NONE = 0, _N, ""
    OFFSET_OUT_OF_RANGE = (
        1,
        _N,
        "The requested offset is not within the range of offsets maintained by the server.",
    )
    CORRUPT_MESSAGE = (
        2,
        _R,
        "This message has failed its CRC checksum, exceeds the valid size, has a null "
        "key for a compacted topic, or is otherwise corrupt.",
    )
    UNKNOWN_TOPIC_OR_PARTITION = 3, _M, "This server does not host this topic-partition."
    INVALID_FETCH_SIZE = 4, _N, "The requested fetch size is invalid."
    LEADER_NOT_AVAILABLE = (
        5,
        _M,
        "There is no leader for this topic-partition as we are in the middle of a "
        "leadership election.",
    )
    NOT_LEADER_OR_FOLLOWER = (
        6,
        _M,
        "For requests intended only for the leader, this error indicates that the "
        "broker is not the current leader. For requests intended for any replica, this "
        "error indicates that the broker is not a replica of the topic partition.",
    )
    REQUEST_TIMED_OUT = 7, _R, "The request timed out."
    BROKER_NOT_AVAILABLE = 8, _N, "The broker is not available."
    REPLICA_NOT_AVAILABLE = (
        9,
        _M,
        "The replica is not available for the requested topic-partition. Produce/Fetch "
        "requests and other requests intended only for the leader or follower return "
        "NOT_LEADER_OR_FOLLOWER if the broker is not a replica of the topic-partition.",
    )
    MESSAGE_TOO_LARGE = (
        10,
        _N,
        "The request included a message larger than the max message size the server will accept.",
    )
    STALE_CONTROLLER_EPOCH = 11, _N, "The controller moved to another broker."
    OFFSET_METADATA_TOO_LARGE = 12, _N, "The metadata field of the offset request was too large."
    NETWORK_EXCEPTION = 13, _M, "The server disconnected before a response was received."
    COORDINATOR_LOAD_IN_PROGRESS = (
        14,
        _R,
        "The coordinator is loading and hence can't process requests.",
    )
    COORDINATOR_NOT_AVAILABLE = 15, _R, "The coordinator is not available."
    NOT_COORDINATOR = 16, _R, "This is not the correct coordinator."
    INVALID_TOPIC_EXCEPTION = (
        17,
        _N,
        "The request attempted to perform an operation on an invalid topic.",
    )
    RECORD_LIST_TOO_LARGE = (
        18,
        _N,
        "The request included message batch larger than the configured segment size on the server.",
    )
    NOT_ENOUGH_REPLICAS = (
        19,
        _R,
        "Messages are rejected since there are fewer in-sync replicas than required.",
    )
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = (
        20,
        _R,
        "Messages are written to the log, but to fewer in-sync replicas than required.",
    )
    INVALID_REQUIRED_ACKS = 21, _N, "Produce request specified an invalid value for required acks."
    ILLEGAL_GENERATION = 22, _N, "Specified group generation id is not valid."
    INCONSISTENT_GROUP_PROTOCOL = (
        23,
        _N,
        "The group member's supported protocols are incompatible with those of existing"
        " members or first group member tried to join with empty protocol type or empty"
        " protocol list.",
    )
    INVALID_GROUP_ID = 24, _N, "The group id is invalid."
    UNKNOWN_MEMBER_ID = 25, _N, "The coordinator is not aware of this member."
    INVALID_SESSION_TIMEOUT = (
        26,
        _N,
        "The session timeout is not within the range allowed by the broker (as "
        "configured by group.min.session.timeout.ms and group.max.session.timeout.ms).",
    )
    REBALANCE_IN_PROGRESS = 27, _N, "The group is rebalancing, so a rejoin is needed."
    INVALID_COMMIT_OFFSET_SIZE = 28, _N, "The committing offset data size is not valid."
    TOPIC_AUTHORIZATION_FAILED = 29, _N, "Topic authorization failed."
    GROUP_AUTHORIZATION_FAILED = 30, _N, "Group authorization failed."
    CLUSTER_AUTHORIZATION_FAILED = 31, _N, "Cluster authorization failed."
    INVALID_TIMESTAMP = 32, _N, "The timestamp of the message is out of acceptable range."
    UNSUPPORTED_SASL_MECHANISM = 33, _N, "The broker does not support the requested SASL mechanism."
    ILLEGAL_SASL_STATE = 34, _N, "Request is not valid given the current SASL state."
    UNSUPPORTED_VERSION = 35, _N, "The version of API is not supported."
    TOPIC_ALREADY_EXISTS = 36, _N, "Topic with this name already exists."
    INVALID_PARTITIONS = 37, _N, "Number of partitions is below 1."
    INVALID_REPLICATION_FACTOR = (
        38,
        _N,
        "Replication factor is below 1 or larger than the number of available brokers.",
    )
    INVALID_REPLICA_ASSIGNMENT = 39, _N, "Replica assignment is invalid."
    INVALID_CONFIG = 40, _N, "Configuration is invalid."
    NOT_CONTROLLER = 41, _R, "This is not the correct controller for this cluster."
    INVALID_REQUEST = (
        42,
        _N,
        "This most likely occurs because of a request being malformed by the client "
        "library or the message was sent to an incompatible broker. See the broker logs"
        " for more details.",
    )
    UNSUPPORTED_FOR_MESSAGE_FORMAT = (
        43,
        _N,
        "The message format version on the broker does not support the request.",
    )
    POLICY_VIOLATION = 44, _N, "Request parameters do not satisfy the configured policy."
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45, _N, "The broker received an out of order sequence number."
    DUPLICATE_SEQUENCE_NUMBER = 46, _N, "The broker received a duplicate sequence number."
    INVALID_PRODUCER_EPOCH = 47, _N, "Producer attempted to produce with an old epoch."
    INVALID_TXN_STATE = (
        48,
        _N,
        "The producer attempted a transactional operation in an invalid state.",
    )
    INVALID_PRODUCER_ID_MAPPING = (
        49,
        _N,
        "The producer attempted to use a producer id which is not currently assigned to"
        " its transactional id.",
    )
    INVALID_TRANSACTION_TIMEOUT = (
        50,
        _N,
        "The transaction timeout is larger than the maximum value allowed by the broker"
        " (as configured by transaction.max.timeout.ms).",
    )
    CONCURRENT_TRANSACTIONS = (
        51,
        _R,
        "The producer attempted to update a transaction while another concurrent "
        "operation on the same transaction was ongoing.",
    )
    TRANSACTION_COORDINATOR_FENCED = (
        52,
        _N,
        "Indicates that the transaction coordinator sending a WriteTxnMarker is no "
        "longer the current coordinator for a given producer.",
    )
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53, _N, "Transactional Id authorization failed."
    SECURITY_DISABLED = 54, _N, "Security features are disabled."
    OPERATION_NOT_ATTEMPTED = (
        55,
        _N,
        "The broker did not attempt to execute this operation. This may happen for "
        "batched RPCs where some operations in the batch failed, causing the broker to "
        "respond without trying the rest.",
    )
    KAFKA_STORAGE_ERROR = 56, _M, "Disk error when trying to access log file on the disk."
    LOG_DIR_NOT_FOUND = (
        57,
        _N,
        "The user-specified log directory is not found in the broker config.",
    )
    SASL_AUTHENTICATION_FAILED = 58, _N, "SASL Authentication failed."
    UNKNOWN_PRODUCER_ID = (
        59,
        _N,
        "This exception is raised by the broker if it could not locate the producer "
        "metadata associated with the producerId in question. This could happen if, for"
        " instance, the producer's records were deleted because their retention time "
        "had elapsed. Once the last records of the producerId are removed, the "
        "producer's metadata is removed from the broker, and future appends by the "
        "producer will return this exception.",
    )
    REASSIGNMENT_IN_PROGRESS = 60, _N, "A partition reassignment is in progress."
    DELEGATION_TOKEN_AUTH_DISABLED = 61, _N, "Delegation Token feature is not enabled."
    DELEGATION_TOKEN_NOT_FOUND = 62, _N, "Delegation Token is not found on server."
    DELEGATION_TOKEN_OWNER_MISMATCH = 63, _N, "Specified Principal is not valid Owner/Renewer."
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = (
        64,
        _N,
        "Delegation Token requests are not allowed on PLAINTEXT/1-way SSL channels and "
        "on delegation token authenticated channels.",
    )
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = 65, _N, "Delegation Token authorization failed."
    DELEGATION_TOKEN_EXPIRED = 66, _N, "Delegation Token is expired."
    INVALID_PRINCIPAL_TYPE = 67, _N, "Supplied principalType is not supported."
    NON_EMPTY_GROUP = 68, _N, "The group is not empty."
    GROUP_ID_NOT_FOUND = 69, _N, "The group id does not exist."
    FETCH_SESSION_ID_NOT_FOUND = 70, _R, "The fetch session ID was not found."
    INVALID_FETCH_SESSION_EPOCH = 71, _R, "The fetch session epoch is invalid."
    LISTENER_NOT_FOUND = (
        72,
        _M,
        "There is no listener on the leader broker that matches the listener on which "
        "metadata request was processed.",
    )
    TOPIC_DELETION_DISABLED = 73, _N, "Topic deletion is disabled."
    FENCED_LEADER_EPOCH = (
        74,
        _M,
        "The leader epoch in the request is older than the epoch on the broker.",
    )
    UNKNOWN_LEADER_EPOCH = (
        75,
        _R,
        "The leader epoch in the request is newer than the epoch on the broker.",
    )
    UNSUPPORTED_COMPRESSION_TYPE = (
        76,
        _N,
        "The requesting client does not support the compression type of given partition.",
    )
    STALE_BROKER_EPOCH = 77, _N, "Broker epoch has changed."
    OFFSET_NOT_AVAILABLE = (
        78,
        _R,
        "The leader high watermark has not caught up from a recent leader election so "
        "the offsets cannot be guaranteed to be monotonically increasing.",
    )
    MEMBER_ID_REQUIRED = (
        79,
        _N,
        "The group member needs to have a valid member id before actually entering a "
        "consumer group.",
    )
    PREFERRED_LEADER_NOT_AVAILABLE = 80, _M, "The preferred leader was not available."
    GROUP_MAX_SIZE_REACHED = 81, _N, "The group has reached its maximum size."
    FENCED_INSTANCE_ID = (
        82,
        _N,
        "The broker rejected this static consumer since another consumer with the same "
        "group.instance.id has registered with a different member.id.",
    )
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83, _M, "Eligible topic partition leaders are not available."
    ELECTION_NOT_NEEDED = 84, _M, "Leader election not needed for topic partition."
    NO_REASSIGNMENT_IN_PROGRESS = 85, _N, "No partition reassignment is in progress."
    GROUP_SUBSCRIBED_TO_TOPIC = (
        86,
        _N,
        "Deleting offsets of a topic is forbidden while the consumer group is actively "
        "subscribed to it.",
    )
    INVALID_RECORD = (
        87,
        _N,
        "This record has failed the validation on broker and hence will be rejected.",
    )
    UNSTABLE_OFFSET_COMMIT = 88, _R, "There are unstable offsets that need to be cleared."
    THROTTLING_QUOTA_EXCEEDED = 89, _R, "The throttling quota has been exceeded."
    PRODUCER_FENCED = (
        90,
        _N,
        "There is a newer producer with the same transactionalId which fences the current one.",
    )
    RESOURCE_NOT_FOUND = 91, _N, "A request illegally referred to a resource that does not exist."
    DUPLICATE_RESOURCE = 92, _N, "A request illegally referred to the same resource twice."
    UNACCEPTABLE_CREDENTIAL = (
        93,
        _N,
        "Requested credential would not meet criteria for acceptability.",
    )
    INCONSISTENT_VOTER_SET = (
        94,
        _N,
        "Indicates that the either the sender or recipient of a voter-only request is "
        "not one of the expected voters.",
    )
    INVALID_UPDATE_VERSION = 95, _N, "The given update version was invalid."
    FEATURE_UPDATE_FAILED = (
        96,
        _N,
        "Unable to update finalized features due to an unexpected server error.",
    )
    PRINCIPAL_DESERIALIZATION_FAILURE = (
        97,
        _N,
        "Request principal deserialization failed during forwarding. This indicates an "
        "internal error on the broker cluster security setup.",
    )
    SNAPSHOT_NOT_FOUND = 98, _N, "Requested snapshot was not found."
    POSITION_OUT_OF_RANGE = (
        99,
        _N,
        "Requested position is not greater than or equal to zero, and less than the "
        "size of the snapshot.",
    )
    UNKNOWN_TOPIC_ID = 100, _M, "This server does not host this topic ID."
    DUPLICATE_BROKER_REGISTRATION = 101, _N, "This broker ID is already in use."
    BROKER_ID_NOT_REGISTERED = 102, _N, "The given broker ID was not registered."
    INCONSISTENT_TOPIC_ID = 103, _M, "The log's topic ID did not match the topic ID in the request."
    INCONSISTENT_CLUSTER_ID = (
        104,
        _N,
        "The clusterId in the request does not match that found on the server.",
    )
    TRANSACTIONAL_ID_NOT_FOUND = 105, _N, "The transactionalId could not be found."
    FETCH_SESSION_TOPIC_ID_ERROR = (
        106,
        _R,
        "The fetch session encountered inconsistent topic ID usage.",
    )
    INELIGIBLE_REPLICA = 107, _N, "The new ISR contains at least one ineligible replica."
    NEW_LEADER_ELECTED = (
        108,
        _N,
        "The AlterPartition request successfully updated the partition state but the "
        "leader has changed.",
    )
    OFFSET_MOVED_TO_TIERED_STORAGE = 109, _N, "The requested offset is moved to tiered storage."
    FENCED_MEMBER_EPOCH = (
        110,
        _N,
        "The member epoch is fenced by the group coordinator. The member must abandon "
        "all its partitions and rejoin.",
    )
    UNRELEASED_INSTANCE_ID = (
        111,
        _N,
        "The instance ID is still used by another member in the consumer group. That "
        "member must leave first.",
    )
    UNSUPPORTED_ASSIGNOR = (
        112,
        _N,
        "The assignor or its version range is not supported by the consumer group.",
    )
    STALE_MEMBER_EPOCH = (
        113,
        _N,
        "The member epoch is stale. The member must retry after receiving its updated "
        "member epoch via the ConsumerGroupHeartbeat API.",
    )
    MISMATCHED_ENDPOINT_TYPE = 114, _N, "The request was sent to an endpoint of the wrong type."
    UNSUPPORTED_ENDPOINT_TYPE = 115, _N, "This endpoint type is not supported yet."
    UNKNOWN_CONTROLLER_ID = 116, _N, "This controller ID is not known."
    UNKNOWN_SUBSCRIPTION_ID = (
        117,
        _N,
        "Client sent a push telemetry request with an invalid or outdated subscription ID.",
    )
    TELEMETRY_TOO_LARGE = (
        118,
        _N,
        "Client sent a push telemetry request larger than the maximum size the broker will accept.",
    )
    INVALID_REGISTRATION = (
        119,
        _N,
        "The controller has considered the broker registration to be invalid.",
    )
    TRANSACTION_ABORTABLE = (
        120,
        _N,
        "The server encountered an error with the transaction. The client can abort the"
        " transaction to continue using this transactional ID.",
    )
    INVALID_RECORD_STATE = (
        121,
        _N,
        "The record state is invalid. The acknowledgement of delivery could not be completed.",
    )
    SHARE_SESSION_NOT_FOUND = 122, _R, "The share session was not found."
    INVALID_SHARE_SESSION_EPOCH = 123, _R, "The share session epoch is invalid."
    FENCED_STATE_EPOCH = (
        124,
        _N,
        "The share coordinator rejected the request because the share-group state epoch"
        " did not match.",
    )
    INVALID_VOTER_KEY = 125, _N, "The voter key doesn't match the receiving replica's key."
    DUPLICATE_VOTER = 126, _N, "The voter is already part of the set of voters."
    VOTER_NOT_FOUND = 127, _N, "The voter is not part of the set of voters."
    INVALID_REGULAR_EXPRESSION = 128, _N, "The regular expression is not valid."
    REBOOTSTRAP_REQUIRED = (
        129,
        _N,
        "Client metadata is stale. The client should rebootstrap to obtain new metadata.",
    )
    STREAMS_INVALID_TOPOLOGY = 130, _N, "The supplied topology is invalid."
    STREAMS_INVALID_TOPOLOGY_EPOCH = 131, _N, "The supplied topology epoch is invalid."
    STREAMS_TOPOLOGY_FENCED = 132, _N, "The supplied topology epoch is outdated."
    SHARE_SESSION_LIMIT_REACHED = 133, _R, "The limit of share sessions has been reached."

    @property
    def retriable(self) -> bool:
        """Whether Kafka's exception for this code is a ``RetriableException``."""
        return self._kind in (_R, _M)

    @property
    def invalid_metadata(self) -> bool:
        """Whether this is an ``InvalidMetadataException``: refresh metadata, then retry."""
        return self._kind == _M

    @property
    def description(self) -> str:
        """Kafka's default message for this code (empty for ``NONE``)."""
        return self._description

    @property
    def exception(self) -> type[KafkaError] | None:
        """The exception class registered for this code, or None for ``NONE``.

        Like Kafka's ``Errors.NONE.exception()``, which is null.
        """
        return _REGISTRY.get(self)


_REGISTRY: dict[ErrorCode, type[KafkaError]] = {}

ERROR_CLASSES: Final[Mapping[ErrorCode, type[KafkaError]]] = MappingProxyType(_REGISTRY)
"""Read-only view of the registry: every code except ``NONE`` -> its exception class."""


class KafkaError(Exception):
    """Base class of every Kafka protocol error.

    A bare ``KafkaError`` stands for ``UNKNOWN_SERVER_ERROR``, so code that
    turns exceptions into response error codes can rely on ``exc.code``.

    Attributes:
        code: The error code the class stands for.
        raw_code: The number sent on the wire; ``int(code)`` except for
            :class:`UnknownErrorCodeError`, which keeps an undefined number.
        retriable: Whether the failed request may simply be retried.
        invalid_metadata: Whether the client should refresh its metadata first.
        message: The message given to the constructor, or the code's description.
    """

    code: ClassVar[ErrorCode] = ErrorCode.UNKNOWN_SERVER_ERROR
    raw_code: ClassVar[int] = ErrorCode.UNKNOWN_SERVER_ERROR.value
    retriable: ClassVar[bool] = False
    invalid_metadata: ClassVar[bool] = False

    def __init__(self, message: str | None = None) -> None:
        """Creates the exception.

        Args:
            message: Details; defaults to Kafka's message for the code.
        """
        self.message: str = message if message is not None else self.code.description
        super().__init__(self.message)

    @classmethod
    def for_code(cls, code: int) -> type[KafkaError]:
        """Returns the exception class registered for a wire error code.

        Args:
            code: An :class:`ErrorCode` or any int read off the wire.

        Returns:
            The registered class; for a number Kafka does not define, a subclass
            of :class:`UnknownErrorCodeError` whose ``raw_code`` is that number
            (the same class each time for the same number).

        Raises:
            ValueError: If ``code`` is 0 (``NONE``), which is not an error.
        """
        if code == ErrorCode.NONE:
            raise ValueError("error code 0 (NONE) is not an error and has no exception class")
        try:
            return _REGISTRY[ErrorCode(code)]
        except ValueError:
            return _unknown_code_class(int(code))


class RetriableError(KafkaError):
    """Base of the errors whose Kafka exception is a ``RetriableException``."""

    retriable = True


class InvalidMetadataError(RetriableError):
    """Base of the errors whose Kafka exception is an ``InvalidMetadataException``.

    The client should refresh its metadata before retrying.
    """

    invalid_metadata = True


_BASES: Final[Mapping[str, type[KafkaError]]] = {
    _N: KafkaError,
    _R: RetriableError,
    _M: InvalidMetadataError,
}

_E = TypeVar("_E", bound=type[KafkaError])


def _kafka_error(code: ErrorCode) -> Callable[[_E], _E]:
    """Returns a class decorator registering its class as *the* exception for ``code``.

    The decorator sets the class's ``code``, ``raw_code``, ``retriable`` and
    ``invalid_metadata`` from the table and checks that the class derives from
    the base matching the code's kind.

    Args:
        code: The error code the decorated class stands for.

    Raises:
        ValueError: If ``code`` is ``NONE`` or already has a class.
        TypeError: If the class does not derive from the right base.
    """

    def decorator(klass: _E) -> _E:
        if code == ErrorCode.NONE:
            raise ValueError("NONE is not an error")
        base = _BASES[code._kind]
        if not issubclass(klass, base):
            raise TypeError(f"{klass.__name__} for {code.name} must derive from {base.__name__}")
        if code in _REGISTRY:
            raise ValueError(f"{code.name} already registered to {_REGISTRY[code].__name__}")
        klass.code = code
        klass.raw_code = code.value
        klass.retriable = code.retriable
        klass.invalid_metadata = code.invalid_metadata
        _REGISTRY[code] = klass
        return klass

    return decorator


def _class_name(code: ErrorCode) -> str:
    """``NOT_LEADER_OR_FOLLOWER`` -> ``NotLeaderOrFollowerError``; see the module docstring."""
    stem = re.sub(r"_(ERROR|EXCEPTION)$", "", code.name)
    return "".join(word.capitalize() for word in stem.split("_")) + "Error"


def _generate_classes() -> None:
    """Creates, registers and exports one exception class per error code."""
    namespace = globals()
    for code in ErrorCode:
        if code == ErrorCode.NONE:
            continue
        name = _class_name(code)
        if name in namespace:
            raise RuntimeError(f"class name {name} for {code.name} is already taken")
        klass = type(
            name,
            (_BASES[code._kind],),
            {
                "__module__": __name__,
                "__qualname__": name,
                "__doc__": f"Kafka error {code.value} ({code.name}): {code.description}",
            },
        )
        namespace[name] = _kafka_error(code)(klass)
        __all__.append(name)


_generate_classes()

if TYPE_CHECKING:
    # The classes _generate_classes() has just made, declared for type checkers, which cannot see
    # classes made with type(): one per code but NONE, in code order, with the base its kind
    # gives.  Nothing here runs; tests/unit/test_errors.py checks these lines against the
    # generated classes.
    class UnknownServerError(KafkaError): ...
    class OffsetOutOfRangeError(KafkaError): ...
    class CorruptMessageError(RetriableError): ...
    class UnknownTopicOrPartitionError(InvalidMetadataError): ...
    class InvalidFetchSizeError(KafkaError): ...
    class LeaderNotAvailableError(InvalidMetadataError): ...
    class NotLeaderOrFollowerError(InvalidMetadataError): ...
    class RequestTimedOutError(RetriableError): ...
    class BrokerNotAvailableError(KafkaError): ...
    class ReplicaNotAvailableError(InvalidMetadataError): ...
    class MessageTooLargeError(KafkaError): ...
    class StaleControllerEpochError(KafkaError): ...
    class OffsetMetadataTooLargeError(KafkaError): ...
    class NetworkError(InvalidMetadataError): ...
    class CoordinatorLoadInProgressError(RetriableError): ...
    class CoordinatorNotAvailableError(RetriableError): ...
    class NotCoordinatorError(RetriableError): ...
    class InvalidTopicError(KafkaError): ...
    class RecordListTooLargeError(KafkaError): ...
    class NotEnoughReplicasError(RetriableError): ...
    class NotEnoughReplicasAfterAppendError(RetriableError): ...
    class InvalidRequiredAcksError(KafkaError): ...
    class IllegalGenerationError(KafkaError): ...
    class InconsistentGroupProtocolError(KafkaError): ...
    class InvalidGroupIdError(KafkaError): ...
    class UnknownMemberIdError(KafkaError): ...
    class InvalidSessionTimeoutError(KafkaError): ...
    class RebalanceInProgressError(KafkaError): ...
    class InvalidCommitOffsetSizeError(KafkaError): ...
    class TopicAuthorizationFailedError(KafkaError): ...
    class GroupAuthorizationFailedError(KafkaError): ...
    class ClusterAuthorizationFailedError(KafkaError): ...
    class InvalidTimestampError(KafkaError): ...
    class UnsupportedSaslMechanismError(KafkaError): ...
    class IllegalSaslStateError(KafkaError): ...
    class UnsupportedVersionError(KafkaError): ...
    class TopicAlreadyExistsError(KafkaError): ...
    class InvalidPartitionsError(KafkaError): ...
    class InvalidReplicationFactorError(KafkaError): ...
    class InvalidReplicaAssignmentError(KafkaError): ...
    class InvalidConfigError(KafkaError): ...
    class NotControllerError(RetriableError): ...
    class InvalidRequestError(KafkaError): ...
    class UnsupportedForMessageFormatError(KafkaError): ...
    class PolicyViolationError(KafkaError): ...
    class OutOfOrderSequenceNumberError(KafkaError): ...
    class DuplicateSequenceNumberError(KafkaError): ...
    class InvalidProducerEpochError(KafkaError): ...
    class InvalidTxnStateError(KafkaError): ...
    class InvalidProducerIdMappingError(KafkaError): ...
    class InvalidTransactionTimeoutError(KafkaError): ...
    class ConcurrentTransactionsError(RetriableError): ...
    class TransactionCoordinatorFencedError(KafkaError): ...
    class TransactionalIdAuthorizationFailedError(KafkaError): ...
    class SecurityDisabledError(KafkaError): ...
    class OperationNotAttemptedError(KafkaError): ...
    class KafkaStorageError(InvalidMetadataError): ...
    class LogDirNotFoundError(KafkaError): ...
    class SaslAuthenticationFailedError(KafkaError): ...
    class UnknownProducerIdError(KafkaError): ...
    class ReassignmentInProgressError(KafkaError): ...
    class DelegationTokenAuthDisabledError(KafkaError): ...
    class DelegationTokenNotFoundError(KafkaError): ...
    class DelegationTokenOwnerMismatchError(KafkaError): ...
    class DelegationTokenRequestNotAllowedError(KafkaError): ...
    class DelegationTokenAuthorizationFailedError(KafkaError): ...
    class DelegationTokenExpiredError(KafkaError): ...
    class InvalidPrincipalTypeError(KafkaError): ...
    class NonEmptyGroupError(KafkaError): ...
    class GroupIdNotFoundError(KafkaError): ...
    class FetchSessionIdNotFoundError(RetriableError): ...
    class InvalidFetchSessionEpochError(RetriableError): ...
    class ListenerNotFoundError(InvalidMetadataError): ...
    class TopicDeletionDisabledError(KafkaError): ...
    class FencedLeaderEpochError(InvalidMetadataError): ...
    class UnknownLeaderEpochError(RetriableError): ...
    class UnsupportedCompressionTypeError(KafkaError): ...
    class StaleBrokerEpochError(KafkaError): ...
    class OffsetNotAvailableError(RetriableError): ...
    class MemberIdRequiredError(KafkaError): ...
    class PreferredLeaderNotAvailableError(InvalidMetadataError): ...
    class GroupMaxSizeReachedError(KafkaError): ...
    class FencedInstanceIdError(KafkaError): ...
    class EligibleLeadersNotAvailableError(InvalidMetadataError): ...
    class ElectionNotNeededError(InvalidMetadataError): ...
    class NoReassignmentInProgressError(KafkaError): ...
    class GroupSubscribedToTopicError(KafkaError): ...
    class InvalidRecordError(KafkaError): ...
    class UnstableOffsetCommitError(RetriableError): ...
    class ThrottlingQuotaExceededError(RetriableError): ...
    class ProducerFencedError(KafkaError): ...
    class ResourceNotFoundError(KafkaError): ...
    class DuplicateResourceError(KafkaError): ...
    class UnacceptableCredentialError(KafkaError): ...
    class InconsistentVoterSetError(KafkaError): ...
    class InvalidUpdateVersionError(KafkaError): ...
    class FeatureUpdateFailedError(KafkaError): ...
    class PrincipalDeserializationFailureError(KafkaError): ...
    class SnapshotNotFoundError(KafkaError): ...
    class PositionOutOfRangeError(KafkaError): ...
    class UnknownTopicIdError(InvalidMetadataError): ...
    class DuplicateBrokerRegistrationError(KafkaError): ...
    class BrokerIdNotRegisteredError(KafkaError): ...
    class InconsistentTopicIdError(InvalidMetadataError): ...
    class InconsistentClusterIdError(KafkaError): ...
    class TransactionalIdNotFoundError(KafkaError): ...
    class FetchSessionTopicIdError(RetriableError): ...
    class IneligibleReplicaError(KafkaError): ...
    class NewLeaderElectedError(KafkaError): ...
    class OffsetMovedToTieredStorageError(KafkaError): ...
    class FencedMemberEpochError(KafkaError): ...
    class UnreleasedInstanceIdError(KafkaError): ...
    class UnsupportedAssignorError(KafkaError): ...
    class StaleMemberEpochError(KafkaError): ...
    class MismatchedEndpointTypeError(KafkaError): ...
    class UnsupportedEndpointTypeError(KafkaError): ...
    class UnknownControllerIdError(KafkaError): ...
    class UnknownSubscriptionIdError(KafkaError): ...
    class TelemetryTooLargeError(KafkaError): ...
    class InvalidRegistrationError(KafkaError): ...
    class TransactionAbortableError(KafkaError): ...
    class InvalidRecordStateError(KafkaError): ...
    class ShareSessionNotFoundError(RetriableError): ...
    class InvalidShareSessionEpochError(RetriableError): ...
    class FencedStateEpochError(KafkaError): ...
    class InvalidVoterKeyError(KafkaError): ...
    class DuplicateVoterError(KafkaError): ...
    class VoterNotFoundError(KafkaError): ...
    class InvalidRegularExpressionError(KafkaError): ...
    class RebootstrapRequiredError(KafkaError): ...
    class StreamsInvalidTopologyError(KafkaError): ...
    class StreamsInvalidTopologyEpochError(KafkaError): ...
    class StreamsTopologyFencedError(KafkaError): ...
    class ShareSessionLimitReachedError(RetriableError): ...


class UnknownErrorCodeError(UnknownServerError):
    """An error code Kafka does not define, treated as ``UNKNOWN_SERVER_ERROR``.

    :meth:`KafkaError.for_code` returns a subclass per number with ``raw_code``
    set to it; ``code`` stays ``UNKNOWN_SERVER_ERROR``.
    """

    def __init__(self, message: str | None = None) -> None:
        """Creates the exception.

        Args:
            message: Details; defaults to a message naming the raw code.
        """
        if message is None:
            message = f"Unknown error code {self.raw_code}. {self.code.description}"
        super().__init__(message)

    def __reduce__(self) -> tuple[Any, ...]:
        return _unknown_code_error, (self.raw_code, self.message)


@cache
def _unknown_code_class(raw_code: int) -> type[UnknownErrorCodeError]:
    """The :class:`UnknownErrorCodeError` subclass for one undefined number."""
    return type(
        UnknownErrorCodeError.__name__,
        (UnknownErrorCodeError,),
        {"__module__": __name__, "raw_code": raw_code},
    )


def _unknown_code_error(raw_code: int, message: str) -> UnknownErrorCodeError:
    """Rebuilds a pickled :class:`UnknownErrorCodeError`."""
    return _unknown_code_class(raw_code)(message)


def raise_for_code(code: int, message: str | None = None) -> None:
    """Raises the exception for a wire error code; does nothing for 0 (``NONE``).

    Args:
        code: An :class:`ErrorCode` or any int read off the wire.
        message: Details; defaults to Kafka's message for the code.

    Raises:
        KafkaError: The subclass registered for ``code`` (see
            :meth:`KafkaError.for_code`), unless ``code`` is 0.
    """
    if code != ErrorCode.NONE:
        raise KafkaError.for_code(code)(message)


# --------------------------------------------------------------------------- exceptions without a code


class ConfigError(ValueError):
    """A configuration Kafka would refuse: Kafka's ``ConfigException``.

    The one class for the broker's configuration (:mod:`mafka.broker.config`)
    and the client's (:mod:`mafka.client.config`, public there as
    ``mafka.client.ConfigError``); each words its messages as its Kafka
    counterpart does.

    Attributes:
        key: The configuration key at fault as the user spelled it (None for
            problems of the whole file or dict).
        value: The offending value (None when not about one value).
        source: Where the value was set (a file, an environment variable, an
            override), if known; the message ends with ``(set by <source>)``.
    """

    def __init__(self, message: str, key: str | None = None, value: Any = None, *, source: str | None = None) -> None:
        if source:
            message += f" (set by {source})"
        super().__init__(message)
        self.key = key
        self.value = value
        self.source = source

    @classmethod
    def for_key(cls, key: str | None, reason: str, *, value: Any = None, source: str | None = None) -> ConfigError:
        """Kafka's ``ConfigException(name, value, message)``.

        The message is ``Invalid value <value> for configuration <key>: <reason>``
        when there is a value, else just ``reason``.
        """
        message = reason if value is None else f"Invalid value {value} for configuration {key}: {reason}"
        return cls(message, key, value, source=source)


class IllegalStateError(Exception):
    """An operation or transition the current state does not allow (Kafka's ``IllegalStateException``).

    Raised by the group and transaction state machines (:mod:`mafka.group.state`,
    :mod:`mafka.transaction.metadata`): a bug, not a client error.
    """
