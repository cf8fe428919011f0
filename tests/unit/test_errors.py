"""Tests for mafka.errors: Kafka's error codes, their flags and exception classes.

The table is cross-checked against kafka-python 3 (``kafka.errors``), an
independent transcription of the same Kafka ``Errors`` enum. Where the two
disagree on purpose, the difference is listed in an explicit allowlist below,
so any other disagreement fails the test.
"""

from __future__ import annotations

import ast
import pickle

import kafka.errors as kp_errors
import pytest

from mafka import errors
from mafka.errors import (
    ERROR_CLASSES,
    ErrorCode,
    InvalidMetadataError,
    KafkaError,
    RetriableError,
    UnknownErrorCodeError,
    raise_for_code,
)

# kafka-python's ``message`` attribute (its name for the code) where it keeps a
# name Kafka has since replaced; the value is Kafka's current name.
KAFKA_PYTHON_OLD_NAMES: dict[int, tuple[str, str]] = {
    -1: ("UNKNOWN", "UNKNOWN_SERVER_ERROR"),
    0: ("NO_ERROR", "NONE"),
    6: ("NOT_LEADER_FOR_PARTITION", "NOT_LEADER_OR_FOLLOWER"),  # renamed in Kafka 2.7 (KAFKA-10223)
    10: ("MESSAGE_SIZE_TOO_LARGE", "MESSAGE_TOO_LARGE"),
    17: ("INVALID_TOPIC", "INVALID_TOPIC_EXCEPTION"),
    39: ("INVALID_REPLICATION_ASSIGNMENT", "INVALID_REPLICA_ASSIGNMENT"),
}

# Codes whose retriable flag in kafka-python differs from Kafka's Java hierarchy,
# which mafka follows: code -> (kafka-python's flag, Kafka's flag).
KAFKA_PYTHON_RETRIABLE_DIFFS: dict[int, tuple[bool, bool]] = {
    # Kafka: CorruptRecordException extends RetriableException.
    # kafka-python: CorruptRecordError derives from BrokerResponseError only.
    2: (False, True),
}

# Codes whose invalid_metadata flag in kafka-python differs from Kafka's:
# code -> (kafka-python's flag, Kafka's flag).
KAFKA_PYTHON_INVALID_METADATA_DIFFS: dict[int, tuple[bool, bool]] = {
    # Kafka: UnknownLeaderEpochException extends RetriableException, not
    # InvalidMetadataException. kafka-python: UnknownLeaderEpochError is an
    # InvalidMetadataError. Both agree it is retriable.
    75: (True, False),
}


def _kafka_python_errors() -> dict[int, type[kp_errors.KafkaError]]:
    """kafka-python's errno -> class table (its ``None`` key, a base class, is skipped)."""
    return {errno: cls for errno, cls in kp_errors.kafka_errors.items() if isinstance(errno, int)}


# --- cross-check against kafka-python ------------------------------------------------


def test_kafka_python_table_is_substantial() -> None:
    kp = _kafka_python_errors()
    assert len(kp) > 100
    assert {-1, 0, 6, 127} <= kp.keys()


def test_every_kafka_python_code_exists_here() -> None:
    missing = sorted(set(_kafka_python_errors()) - {code.value for code in ErrorCode})
    assert missing == []


def test_names_match_kafka_python_except_known_renames() -> None:
    mismatches = {
        errno: (cls.message, ErrorCode(errno).name)
        for errno, cls in _kafka_python_errors().items()
        if cls.message != ErrorCode(errno).name
    }
    print("kafka-python name mismatches (kafka-python, Kafka):", mismatches)
    unexpected = {k: v for k, v in mismatches.items() if KAFKA_PYTHON_OLD_NAMES.get(k) != v}
    assert unexpected == {}


def test_retriable_matches_kafka_python_except_known_diffs() -> None:
    mismatches = {
        errno: (bool(cls.retriable), ErrorCode(errno).retriable)
        for errno, cls in _kafka_python_errors().items()
        if bool(cls.retriable) != ErrorCode(errno).retriable
    }
    print("kafka-python retriable mismatches (kafka-python, Kafka):", mismatches)
    unexpected = {k: v for k, v in mismatches.items() if KAFKA_PYTHON_RETRIABLE_DIFFS.get(k) != v}
    assert unexpected == {}


def test_invalid_metadata_matches_kafka_python_except_known_diffs() -> None:
    mismatches = {
        errno: (bool(cls.invalid_metadata), ErrorCode(errno).invalid_metadata)
        for errno, cls in _kafka_python_errors().items()
        if bool(cls.invalid_metadata) != ErrorCode(errno).invalid_metadata
    }
    print("kafka-python invalid_metadata mismatches (kafka-python, Kafka):", mismatches)
    unexpected = {
        k: v for k, v in mismatches.items() if KAFKA_PYTHON_INVALID_METADATA_DIFFS.get(k) != v
    }
    assert unexpected == {}


@pytest.mark.parametrize(
    ("allowlist", "attribute"),
    [
        (KAFKA_PYTHON_OLD_NAMES, "message"),
        (KAFKA_PYTHON_RETRIABLE_DIFFS, "retriable"),
        (KAFKA_PYTHON_INVALID_METADATA_DIFFS, "invalid_metadata"),
    ],
)
def test_allowlists_are_not_stale(
    allowlist: dict[int, tuple[object, object]], attribute: str
) -> None:
    """Every allowlisted difference still exists, so the allowlists stay truthful."""
    kp = _kafka_python_errors()
    ours = {"message": "name", "retriable": "retriable", "invalid_metadata": "invalid_metadata"}
    for errno, (theirs, kafka) in allowlist.items():
        assert getattr(kp[errno], attribute) == theirs, errno
        assert getattr(ErrorCode(errno), ours[attribute]) == kafka, errno


# --- the enum ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("NONE", 0),
        ("UNKNOWN_SERVER_ERROR", -1),
        ("NOT_LEADER_OR_FOLLOWER", 6),
        ("NOT_CONTROLLER", 41),
        ("FENCED_LEADER_EPOCH", 74),
        ("STALE_BROKER_EPOCH", 77),
        ("INVALID_RECORD", 87),
        ("PRODUCER_FENCED", 90),
    ],
)
def test_spot_values(name: str, value: int) -> None:
    assert ErrorCode[name] == value
    assert ErrorCode(value).name == name


def test_codes_are_contiguous_from_minus_one() -> None:
    values = [code.value for code in ErrorCode]
    assert values == list(range(-1, max(values) + 1))
    assert max(values) >= 128


@pytest.mark.parametrize(
    ("value", "retriable"),
    [
        (6, True),  # NOT_LEADER_OR_FOLLOWER
        (10, False),  # MESSAGE_TOO_LARGE
        (19, True),  # NOT_ENOUGH_REPLICAS
        (22, False),  # ILLEGAL_GENERATION
        (0, False),  # NONE
        (-1, False),  # UNKNOWN_SERVER_ERROR
    ],
)
def test_retriable_spot_checks(value: int, retriable: bool) -> None:
    assert ErrorCode(value).retriable is retriable


@pytest.mark.parametrize("value", [3, 5, 6, 9, 13, 56, 72, 74, 80, 83, 84, 100, 103])
def test_invalid_metadata_spot_checks(value: int) -> None:
    assert ErrorCode(value).invalid_metadata is True


def test_invalid_metadata_implies_retriable() -> None:
    for code in ErrorCode:
        if code.invalid_metadata:
            assert code.retriable, code


def test_descriptions() -> None:
    assert ErrorCode.NONE.description == ""
    assert ErrorCode.NOT_CONTROLLER.description == (
        "This is not the correct controller for this cluster."
    )
    for code in ErrorCode:
        if code != ErrorCode.NONE:
            assert code.description.strip() == code.description != "", code


# --- exception classes and the registry ----------------------------------------------


@pytest.mark.parametrize("code", [c for c in ErrorCode if c != ErrorCode.NONE], ids=str)
def test_for_code_round_trip(code: ErrorCode) -> None:
    cls = KafkaError.for_code(code)
    assert cls is KafkaError.for_code(int(code))
    assert cls is code.exception is ERROR_CLASSES[code]
    assert cls.code is code
    assert cls.raw_code == code.value
    assert cls.retriable is code.retriable
    assert cls.invalid_metadata is code.invalid_metadata
    assert issubclass(cls, RetriableError) is code.retriable
    assert issubclass(cls, InvalidMetadataError) is code.invalid_metadata
    # A real, exported module attribute.
    assert getattr(errors, cls.__name__) is cls
    assert cls.__name__ in errors.__all__
    assert cls.__module__ == "mafka.errors"
    # raise_for_code raises exactly that class, with Kafka's message by default.
    with pytest.raises(cls) as info:
        raise_for_code(code.value)
    assert type(info.value) is cls
    assert str(info.value) == info.value.message == code.description
    # Instances survive pickling (e.g. across process pools).
    clone = pickle.loads(pickle.dumps(cls("boom")))
    assert type(clone) is cls and clone.message == "boom"


def test_one_class_per_code() -> None:
    assert len(ERROR_CLASSES) == len(ErrorCode) - 1
    assert len(set(ERROR_CLASSES.values())) == len(ERROR_CLASSES)
    assert ErrorCode.NONE not in ERROR_CLASSES
    with pytest.raises(TypeError):
        ERROR_CLASSES[ErrorCode.NONE] = KafkaError  # type: ignore[index]


def test_registering_a_second_class_for_a_code_fails() -> None:
    duplicate = type("AnotherNotControllerError", (RetriableError,), {})
    with pytest.raises(ValueError, match="already registered"):
        errors._kafka_error(ErrorCode.NOT_CONTROLLER)(duplicate)
    assert ERROR_CLASSES[ErrorCode.NOT_CONTROLLER] is errors.NotControllerError


def test_registering_with_the_wrong_base_fails() -> None:
    not_retriable = type("NotControllerButFatalError", (KafkaError,), {})
    with pytest.raises(TypeError, match="must derive from RetriableError"):
        errors._kafka_error(ErrorCode.NOT_CONTROLLER)(not_retriable)


def test_registering_a_class_for_none_fails() -> None:
    with pytest.raises(ValueError, match="NONE"):
        errors._kafka_error(ErrorCode.NONE)(type("NoneError", (KafkaError,), {}))


@pytest.mark.parametrize(
    ("code", "class_name"),
    [
        (ErrorCode.NOT_LEADER_OR_FOLLOWER, "NotLeaderOrFollowerError"),
        (ErrorCode.UNKNOWN_SERVER_ERROR, "UnknownServerError"),
        (ErrorCode.KAFKA_STORAGE_ERROR, "KafkaStorageError"),
        (ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR, "FetchSessionTopicIdError"),
        (ErrorCode.NETWORK_EXCEPTION, "NetworkError"),
        (ErrorCode.INVALID_TOPIC_EXCEPTION, "InvalidTopicError"),
        (ErrorCode.MESSAGE_TOO_LARGE, "MessageTooLargeError"),
        (ErrorCode.INVALID_TXN_STATE, "InvalidTxnStateError"),
    ],
)
def test_class_names(code: ErrorCode, class_name: str) -> None:
    assert code.exception is not None
    assert code.exception.__name__ == class_name


def test_imports_by_name() -> None:
    from mafka.errors import NotLeaderOrFollowerError, UnknownServerError

    assert NotLeaderOrFollowerError.code is ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert issubclass(NotLeaderOrFollowerError, InvalidMetadataError)
    assert UnknownServerError.code is ErrorCode.UNKNOWN_SERVER_ERROR


def test_type_checking_declarations_match_the_generated_classes() -> None:
    """The ``if TYPE_CHECKING:`` block of mafka/errors.py declares exactly the generated classes.

    Type checkers cannot see classes made with ``type()``, so the module spells them out for them;
    this keeps that list equal to what ``_generate_classes`` makes: same names, same bases, same
    (code) order.
    """
    assert errors.__file__ is not None
    with open(errors.__file__, encoding="utf-8") as source:
        tree = ast.parse(source.read())
    blocks = [
        node
        for node in tree.body
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
    ]
    declared = [
        (node.name, [ast.unparse(base) for base in node.bases])
        for block in blocks
        for node in block.body
        if isinstance(node, ast.ClassDef)
    ]
    generated = [(cls.__name__, [cls.__bases__[0].__name__]) for cls in ERROR_CLASSES.values()]
    assert declared == generated
    assert all(getattr(errors, name) is cls for name, cls in ((c.__name__, c) for c in ERROR_CLASSES.values()))


def test_none_is_not_an_error() -> None:
    assert raise_for_code(0) is None
    assert raise_for_code(ErrorCode.NONE, "ignored") is None
    assert ErrorCode.NONE.exception is None
    with pytest.raises(ValueError):
        KafkaError.for_code(0)


def test_custom_message() -> None:
    with pytest.raises(errors.NotControllerError, match="^controller is broker 3$") as info:
        raise_for_code(41, "controller is broker 3")
    assert info.value.retriable is True
    assert info.value.code == 41


def test_bare_kafka_error_is_unknown_server_error() -> None:
    exc = KafkaError()
    assert exc.code is ErrorCode.UNKNOWN_SERVER_ERROR
    assert exc.retriable is False
    assert str(exc) == ErrorCode.UNKNOWN_SERVER_ERROR.description


@pytest.mark.parametrize("raw", [9999, -2, 32767, -32768])
def test_unknown_codes_keep_the_raw_number(raw: int) -> None:
    cls = KafkaError.for_code(raw)
    assert cls is KafkaError.for_code(raw)
    assert issubclass(cls, UnknownErrorCodeError)
    assert issubclass(cls, errors.UnknownServerError)
    assert cls.code is ErrorCode.UNKNOWN_SERVER_ERROR
    assert cls.raw_code == raw
    assert cls.retriable is False
    with pytest.raises(UnknownErrorCodeError) as info:
        raise_for_code(raw)
    assert info.value.raw_code == raw
    assert str(raw) in str(info.value)
    clone = pickle.loads(pickle.dumps(info.value))
    assert type(clone) is cls and clone.message == info.value.message
