"""The Java exception class Kafka's clients raise for each protocol error code.

Contract:

* :data:`JAVA_EXCEPTIONS` maps every :class:`~mafka.errors.ErrorCode` except ``NONE`` to
  ``(package, simple class name)`` of the exception Kafka's ``Errors.exception()`` builds for it,
  so a tool can print ``org.apache.kafka.common.errors.RecordTooLargeException: …`` exactly as
  Kafka's Java tools do.  ``NONE`` has no entry: Kafka's ``Errors.NONE`` builds no exception
  (``message -> null``).
* Kafka's class names are not derivable from the enum names (``MESSAGE_TOO_LARGE`` is
  ``RecordTooLargeException``, ``TOPIC_AUTHORIZATION_FAILED`` is ``TopicAuthorizationException``,
  ``OFFSET_METADATA_TOO_LARGE`` is ``OffsetMetadataTooLarge`` without a suffix), nor from
  :mod:`mafka.errors`' class names, hence this table.  Every class lives in
  ``org.apache.kafka.common.errors`` except ``INVALID_RECORD``'s ``InvalidRecordException``, which
  is in ``org.apache.kafka.common``.
* :func:`java_class` gives the fully qualified name.

Source: the constructor references (``XException::new``) and imports of
``clients/src/main/java/org/apache/kafka/common/protocol/Errors.java`` in apache/kafka:

* codes -1 to 104 from tag ``2.8.0`` (the file is identical in 2.8.1 and 2.8.2);
* codes 105 to 128 from trunk of October 2024 (commit 1eb7644349cb; its entries for -1 to 104 name
  the same classes as 2.8);
* codes 129 to 133 (Kafka 4.0/4.1, newer than that trunk) from the exception classes of those
  names in apache/kafka's ``org.apache.kafka.common.errors`` package, matching the enum names the
  way :mod:`mafka.errors` transcribes them.

Example:
    >>> java_class(10)
    'org.apache.kafka.common.errors.RecordTooLargeException'
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from mafka.errors import ErrorCode

__all__ = ["JAVA_EXCEPTIONS", "java_class"]

_ERRORS: Final = "org.apache.kafka.common.errors"
_COMMON: Final = "org.apache.kafka.common"

JAVA_EXCEPTIONS: Final[Mapping[ErrorCode, tuple[str, str]]] = MappingProxyType({
    # Codes -1 to 104: Kafka 2.8.0.
    ErrorCode.UNKNOWN_SERVER_ERROR: (_ERRORS, "UnknownServerException"),
    ErrorCode.OFFSET_OUT_OF_RANGE: (_ERRORS, "OffsetOutOfRangeException"),
    ErrorCode.CORRUPT_MESSAGE: (_ERRORS, "CorruptRecordException"),
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: (_ERRORS, "UnknownTopicOrPartitionException"),
    ErrorCode.INVALID_FETCH_SIZE: (_ERRORS, "InvalidFetchSizeException"),
    ErrorCode.LEADER_NOT_AVAILABLE: (_ERRORS, "LeaderNotAvailableException"),
    ErrorCode.NOT_LEADER_OR_FOLLOWER: (_ERRORS, "NotLeaderOrFollowerException"),
    ErrorCode.REQUEST_TIMED_OUT: (_ERRORS, "TimeoutException"),
    ErrorCode.BROKER_NOT_AVAILABLE: (_ERRORS, "BrokerNotAvailableException"),
    ErrorCode.REPLICA_NOT_AVAILABLE: (_ERRORS, "ReplicaNotAvailableException"),
    ErrorCode.MESSAGE_TOO_LARGE: (_ERRORS, "RecordTooLargeException"),
    ErrorCode.STALE_CONTROLLER_EPOCH: (_ERRORS, "ControllerMovedException"),
    ErrorCode.OFFSET_METADATA_TOO_LARGE: (_ERRORS, "OffsetMetadataTooLarge"),
    ErrorCode.NETWORK_EXCEPTION: (_ERRORS, "NetworkException"),
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: (_ERRORS, "CoordinatorLoadInProgressException"),
    ErrorCode.COORDINATOR_NOT_AVAILABLE: (_ERRORS, "CoordinatorNotAvailableException"),
    ErrorCode.NOT_COORDINATOR: (_ERRORS, "NotCoordinatorException"),
    ErrorCode.INVALID_TOPIC_EXCEPTION: (_ERRORS, "InvalidTopicException"),
    ErrorCode.RECORD_LIST_TOO_LARGE: (_ERRORS, "RecordBatchTooLargeException"),
    ErrorCode.NOT_ENOUGH_REPLICAS: (_ERRORS, "NotEnoughReplicasException"),
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: (_ERRORS, "NotEnoughReplicasAfterAppendException"),
    ErrorCode.INVALID_REQUIRED_ACKS: (_ERRORS, "InvalidRequiredAcksException"),
    ErrorCode.ILLEGAL_GENERATION: (_ERRORS, "IllegalGenerationException"),
    ErrorCode.INCONSISTENT_GROUP_PROTOCOL: (_ERRORS, "InconsistentGroupProtocolException"),
    ErrorCode.INVALID_GROUP_ID: (_ERRORS, "InvalidGroupIdException"),
    ErrorCode.UNKNOWN_MEMBER_ID: (_ERRORS, "UnknownMemberIdException"),
    ErrorCode.INVALID_SESSION_TIMEOUT: (_ERRORS, "InvalidSessionTimeoutException"),
    ErrorCode.REBALANCE_IN_PROGRESS: (_ERRORS, "RebalanceInProgressException"),
    ErrorCode.INVALID_COMMIT_OFFSET_SIZE: (_ERRORS, "InvalidCommitOffsetSizeException"),
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: (_ERRORS, "TopicAuthorizationException"),
    ErrorCode.GROUP_AUTHORIZATION_FAILED: (_ERRORS, "GroupAuthorizationException"),
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: (_ERRORS, "ClusterAuthorizationException"),
    ErrorCode.INVALID_TIMESTAMP: (_ERRORS, "InvalidTimestampException"),
    ErrorCode.UNSUPPORTED_SASL_MECHANISM: (_ERRORS, "UnsupportedSaslMechanismException"),
    ErrorCode.ILLEGAL_SASL_STATE: (_ERRORS, "IllegalSaslStateException"),
    ErrorCode.UNSUPPORTED_VERSION: (_ERRORS, "UnsupportedVersionException"),
    ErrorCode.TOPIC_ALREADY_EXISTS: (_ERRORS, "TopicExistsException"),
    ErrorCode.INVALID_PARTITIONS: (_ERRORS, "InvalidPartitionsException"),
    ErrorCode.INVALID_REPLICATION_FACTOR: (_ERRORS, "InvalidReplicationFactorException"),
    ErrorCode.INVALID_REPLICA_ASSIGNMENT: (_ERRORS, "InvalidReplicaAssignmentException"),
    ErrorCode.INVALID_CONFIG: (_ERRORS, "InvalidConfigurationException"),
    ErrorCode.NOT_CONTROLLER: (_ERRORS, "NotControllerException"),
    ErrorCode.INVALID_REQUEST: (_ERRORS, "InvalidRequestException"),
    ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT: (_ERRORS, "UnsupportedForMessageFormatException"),
    ErrorCode.POLICY_VIOLATION: (_ERRORS, "PolicyViolationException"),
    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER: (_ERRORS, "OutOfOrderSequenceException"),
    ErrorCode.DUPLICATE_SEQUENCE_NUMBER: (_ERRORS, "DuplicateSequenceException"),
    ErrorCode.INVALID_PRODUCER_EPOCH: (_ERRORS, "InvalidProducerEpochException"),
    ErrorCode.INVALID_TXN_STATE: (_ERRORS, "InvalidTxnStateException"),
    ErrorCode.INVALID_PRODUCER_ID_MAPPING: (_ERRORS, "InvalidPidMappingException"),
    ErrorCode.INVALID_TRANSACTION_TIMEOUT: (_ERRORS, "InvalidTxnTimeoutException"),
    ErrorCode.CONCURRENT_TRANSACTIONS: (_ERRORS, "ConcurrentTransactionsException"),
    ErrorCode.TRANSACTION_COORDINATOR_FENCED: (_ERRORS, "TransactionCoordinatorFencedException"),
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: (_ERRORS, "TransactionalIdAuthorizationException"),
    ErrorCode.SECURITY_DISABLED: (_ERRORS, "SecurityDisabledException"),
    ErrorCode.OPERATION_NOT_ATTEMPTED: (_ERRORS, "OperationNotAttemptedException"),
    ErrorCode.KAFKA_STORAGE_ERROR: (_ERRORS, "KafkaStorageException"),
    ErrorCode.LOG_DIR_NOT_FOUND: (_ERRORS, "LogDirNotFoundException"),
    ErrorCode.SASL_AUTHENTICATION_FAILED: (_ERRORS, "SaslAuthenticationException"),
    ErrorCode.UNKNOWN_PRODUCER_ID: (_ERRORS, "UnknownProducerIdException"),
    ErrorCode.REASSIGNMENT_IN_PROGRESS: (_ERRORS, "ReassignmentInProgressException"),
    ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED: (_ERRORS, "DelegationTokenDisabledException"),
    ErrorCode.DELEGATION_TOKEN_NOT_FOUND: (_ERRORS, "DelegationTokenNotFoundException"),
    ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH: (_ERRORS, "DelegationTokenOwnerMismatchException"),
    ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED: (_ERRORS, "UnsupportedByAuthenticationException"),
    ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED: (_ERRORS, "DelegationTokenAuthorizationException"),
    ErrorCode.DELEGATION_TOKEN_EXPIRED: (_ERRORS, "DelegationTokenExpiredException"),
    ErrorCode.INVALID_PRINCIPAL_TYPE: (_ERRORS, "InvalidPrincipalTypeException"),
    ErrorCode.NON_EMPTY_GROUP: (_ERRORS, "GroupNotEmptyException"),
    ErrorCode.GROUP_ID_NOT_FOUND: (_ERRORS, "GroupIdNotFoundException"),
    ErrorCode.FETCH_SESSION_ID_NOT_FOUND: (_ERRORS, "FetchSessionIdNotFoundException"),
    ErrorCode.INVALID_FETCH_SESSION_EPOCH: (_ERRORS, "InvalidFetchSessionEpochException"),
    ErrorCode.LISTENER_NOT_FOUND: (_ERRORS, "ListenerNotFoundException"),
    ErrorCode.TOPIC_DELETION_DISABLED: (_ERRORS, "TopicDeletionDisabledException"),
    ErrorCode.FENCED_LEADER_EPOCH: (_ERRORS, "FencedLeaderEpochException"),
    ErrorCode.UNKNOWN_LEADER_EPOCH: (_ERRORS, "UnknownLeaderEpochException"),
    ErrorCode.UNSUPPORTED_COMPRESSION_TYPE: (_ERRORS, "UnsupportedCompressionTypeException"),
    ErrorCode.STALE_BROKER_EPOCH: (_ERRORS, "StaleBrokerEpochException"),
    ErrorCode.OFFSET_NOT_AVAILABLE: (_ERRORS, "OffsetNotAvailableException"),
    ErrorCode.MEMBER_ID_REQUIRED: (_ERRORS, "MemberIdRequiredException"),
    ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE: (_ERRORS, "PreferredLeaderNotAvailableException"),
    ErrorCode.GROUP_MAX_SIZE_REACHED: (_ERRORS, "GroupMaxSizeReachedException"),
    ErrorCode.FENCED_INSTANCE_ID: (_ERRORS, "FencedInstanceIdException"),
    ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE: (_ERRORS, "EligibleLeadersNotAvailableException"),
    ErrorCode.ELECTION_NOT_NEEDED: (_ERRORS, "ElectionNotNeededException"),
    ErrorCode.NO_REASSIGNMENT_IN_PROGRESS: (_ERRORS, "NoReassignmentInProgressException"),
    ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC: (_ERRORS, "GroupSubscribedToTopicException"),
    ErrorCode.INVALID_RECORD: (_COMMON, "InvalidRecordException"),
    ErrorCode.UNSTABLE_OFFSET_COMMIT: (_ERRORS, "UnstableOffsetCommitException"),
    ErrorCode.THROTTLING_QUOTA_EXCEEDED: (_ERRORS, "ThrottlingQuotaExceededException"),
    ErrorCode.PRODUCER_FENCED: (_ERRORS, "ProducerFencedException"),
    ErrorCode.RESOURCE_NOT_FOUND: (_ERRORS, "ResourceNotFoundException"),
    ErrorCode.DUPLICATE_RESOURCE: (_ERRORS, "DuplicateResourceException"),
    ErrorCode.UNACCEPTABLE_CREDENTIAL: (_ERRORS, "UnacceptableCredentialException"),
    ErrorCode.INCONSISTENT_VOTER_SET: (_ERRORS, "InconsistentVoterSetException"),
    ErrorCode.INVALID_UPDATE_VERSION: (_ERRORS, "InvalidUpdateVersionException"),
    ErrorCode.FEATURE_UPDATE_FAILED: (_ERRORS, "FeatureUpdateFailedException"),
    ErrorCode.PRINCIPAL_DESERIALIZATION_FAILURE: (_ERRORS, "PrincipalDeserializationException"),
    ErrorCode.SNAPSHOT_NOT_FOUND: (_ERRORS, "SnapshotNotFoundException"),
    ErrorCode.POSITION_OUT_OF_RANGE: (_ERRORS, "PositionOutOfRangeException"),
    ErrorCode.UNKNOWN_TOPIC_ID: (_ERRORS, "UnknownTopicIdException"),
    ErrorCode.DUPLICATE_BROKER_REGISTRATION: (_ERRORS, "DuplicateBrokerRegistrationException"),
    ErrorCode.BROKER_ID_NOT_REGISTERED: (_ERRORS, "BrokerIdNotRegisteredException"),
    ErrorCode.INCONSISTENT_TOPIC_ID: (_ERRORS, "InconsistentTopicIdException"),
    ErrorCode.INCONSISTENT_CLUSTER_ID: (_ERRORS, "InconsistentClusterIdException"),
    # Codes 105 to 128: apache/kafka trunk, October 2024.
    ErrorCode.TRANSACTIONAL_ID_NOT_FOUND: (_ERRORS, "TransactionalIdNotFoundException"),
    ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR: (_ERRORS, "FetchSessionTopicIdException"),
    ErrorCode.INELIGIBLE_REPLICA: (_ERRORS, "IneligibleReplicaException"),
    ErrorCode.NEW_LEADER_ELECTED: (_ERRORS, "NewLeaderElectedException"),
    ErrorCode.OFFSET_MOVED_TO_TIERED_STORAGE: (_ERRORS, "OffsetMovedToTieredStorageException"),
    ErrorCode.FENCED_MEMBER_EPOCH: (_ERRORS, "FencedMemberEpochException"),
    ErrorCode.UNRELEASED_INSTANCE_ID: (_ERRORS, "UnreleasedInstanceIdException"),
    ErrorCode.UNSUPPORTED_ASSIGNOR: (_ERRORS, "UnsupportedAssignorException"),
    ErrorCode.STALE_MEMBER_EPOCH: (_ERRORS, "StaleMemberEpochException"),
    ErrorCode.MISMATCHED_ENDPOINT_TYPE: (_ERRORS, "MismatchedEndpointTypeException"),
    ErrorCode.UNSUPPORTED_ENDPOINT_TYPE: (_ERRORS, "UnsupportedEndpointTypeException"),
    ErrorCode.UNKNOWN_CONTROLLER_ID: (_ERRORS, "UnknownControllerIdException"),
    ErrorCode.UNKNOWN_SUBSCRIPTION_ID: (_ERRORS, "UnknownSubscriptionIdException"),
    ErrorCode.TELEMETRY_TOO_LARGE: (_ERRORS, "TelemetryTooLargeException"),
    ErrorCode.INVALID_REGISTRATION: (_ERRORS, "InvalidRegistrationException"),
    ErrorCode.TRANSACTION_ABORTABLE: (_ERRORS, "TransactionAbortableException"),
    ErrorCode.INVALID_RECORD_STATE: (_ERRORS, "InvalidRecordStateException"),
    ErrorCode.SHARE_SESSION_NOT_FOUND: (_ERRORS, "ShareSessionNotFoundException"),
    ErrorCode.INVALID_SHARE_SESSION_EPOCH: (_ERRORS, "InvalidShareSessionEpochException"),
    ErrorCode.FENCED_STATE_EPOCH: (_ERRORS, "FencedStateEpochException"),
    ErrorCode.INVALID_VOTER_KEY: (_ERRORS, "InvalidVoterKeyException"),
    ErrorCode.DUPLICATE_VOTER: (_ERRORS, "DuplicateVoterException"),
    ErrorCode.VOTER_NOT_FOUND: (_ERRORS, "VoterNotFoundException"),
    ErrorCode.INVALID_REGULAR_EXPRESSION: (_ERRORS, "InvalidRegularExpression"),
    # Codes 129 to 133: Kafka 4.x; see the module docstring.
    ErrorCode.REBOOTSTRAP_REQUIRED: (_ERRORS, "RebootstrapRequiredException"),
    ErrorCode.STREAMS_INVALID_TOPOLOGY: (_ERRORS, "StreamsInvalidTopologyException"),
    ErrorCode.STREAMS_INVALID_TOPOLOGY_EPOCH: (_ERRORS, "StreamsInvalidTopologyEpochException"),
    ErrorCode.STREAMS_TOPOLOGY_FENCED: (_ERRORS, "StreamsTopologyFencedException"),
    ErrorCode.SHARE_SESSION_LIMIT_REACHED: (_ERRORS, "ShareSessionLimitReachedException"),
})


def java_class(code: int) -> str:
    """The fully qualified name of Kafka's exception class for a protocol error code.

    Raises:
        ValueError: ``code`` is ``NONE`` (0), which is not an error, or a number Kafka does not
            define.
    """
    try:
        package, name = JAVA_EXCEPTIONS[ErrorCode(code)]
    except KeyError:
        raise ValueError(f"error code {code} (NONE) is not an error and has no exception class") from None
    return f"{package}.{name}"
