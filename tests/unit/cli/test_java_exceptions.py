"""Kafka's Java exception class per error code, and ``java_exception``'s lines built from it."""

from __future__ import annotations

import re

import pytest

from mafka.cli.clients import java_exception
from mafka.cli.java_exceptions import JAVA_EXCEPTIONS, java_class
from mafka.client.kafka_error import KafkaError as ClientError
from mafka.errors import ErrorCode

_ERRORS = "org.apache.kafka.common.errors"


def test_every_error_code_but_none_has_a_class() -> None:
    # NONE is the only code Kafka builds no exception for (Errors.NONE: message -> null).
    assert set(JAVA_EXCEPTIONS) == set(ErrorCode) - {ErrorCode.NONE}


def test_entries_are_java_names() -> None:
    for code, (package, name) in JAVA_EXCEPTIONS.items():
        assert re.fullmatch(r"org\.apache\.kafka\.common(\.errors)?", package), code
        assert re.fullmatch(r"[A-Z][A-Za-z]+", name), code
    # Only INVALID_RECORD's class lives outside the errors package.
    outside = {code for code, (package, _) in JAVA_EXCEPTIONS.items() if package != _ERRORS}
    assert outside == {ErrorCode.INVALID_RECORD}


# Kafka 2.8 codes whose class is not the enum name in CamelCase + "Exception", i.e. the ones the
# old derivation from mafka.errors' class names got wrong.
_RENAMED = {
    ErrorCode.CORRUPT_MESSAGE: "CorruptRecordException",
    ErrorCode.REQUEST_TIMED_OUT: "TimeoutException",
    ErrorCode.MESSAGE_TOO_LARGE: "RecordTooLargeException",
    ErrorCode.STALE_CONTROLLER_EPOCH: "ControllerMovedException",
    ErrorCode.OFFSET_METADATA_TOO_LARGE: "OffsetMetadataTooLarge",
    ErrorCode.RECORD_LIST_TOO_LARGE: "RecordBatchTooLargeException",
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: "TopicAuthorizationException",
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "GroupAuthorizationException",
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: "ClusterAuthorizationException",
    ErrorCode.TOPIC_ALREADY_EXISTS: "TopicExistsException",
    ErrorCode.INVALID_CONFIG: "InvalidConfigurationException",
    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER: "OutOfOrderSequenceException",
    ErrorCode.DUPLICATE_SEQUENCE_NUMBER: "DuplicateSequenceException",
    ErrorCode.INVALID_PRODUCER_ID_MAPPING: "InvalidPidMappingException",
    ErrorCode.INVALID_TRANSACTION_TIMEOUT: "InvalidTxnTimeoutException",
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: "TransactionalIdAuthorizationException",
    ErrorCode.SASL_AUTHENTICATION_FAILED: "SaslAuthenticationException",
    ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED: "DelegationTokenDisabledException",
    ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED: "UnsupportedByAuthenticationException",
    ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED: "DelegationTokenAuthorizationException",
    ErrorCode.NON_EMPTY_GROUP: "GroupNotEmptyException",
    ErrorCode.PRINCIPAL_DESERIALIZATION_FAILURE: "PrincipalDeserializationException",
}


@pytest.mark.parametrize("code", sorted(_RENAMED), ids=lambda c: c.name)
def test_renamed_classes(code: ErrorCode) -> None:
    assert java_class(code) == f"{_ERRORS}.{_RENAMED[code]}"


def test_classes_outside_the_errors_package_or_without_suffix() -> None:
    assert java_class(ErrorCode.INVALID_RECORD) == "org.apache.kafka.common.InvalidRecordException"
    assert java_class(ErrorCode.INVALID_REGULAR_EXPRESSION) == f"{_ERRORS}.InvalidRegularExpression"
    assert java_class(-1) == f"{_ERRORS}.UnknownServerException"


def test_java_class_refuses_none_and_unknown_codes() -> None:
    with pytest.raises(ValueError, match="NONE"):
        java_class(0)
    with pytest.raises(ValueError):
        java_class(9999)


def test_java_exception_lines() -> None:
    assert java_exception(ErrorCode.MESSAGE_TOO_LARGE) == (
        f"{_ERRORS}.RecordTooLargeException: The request included a message larger than the max"
        " message size the server will accept."
    )
    assert java_exception(ErrorCode.TOPIC_ALREADY_EXISTS, "Topic 't' already exists.") == (
        f"{_ERRORS}.TopicExistsException: Topic 't' already exists."
    )
    assert java_exception(ErrorCode.TOPIC_AUTHORIZATION_FAILED) == (
        f"{_ERRORS}.TopicAuthorizationException: Topic authorization failed."
    )


def test_java_exception_client_local_codes_unchanged() -> None:
    assert java_exception(ClientError._TIMED_OUT, "Timed out waiting for a node assignment.") == (
        f"{_ERRORS}.TimeoutException: Timed out waiting for a node assignment."
    )
    assert java_exception(ClientError._TRANSPORT, "down").startswith(
        "org.apache.kafka.common.KafkaException: down"
    )
