"""KafkaError / KafkaException: confluent-kafka's names, numbers and shape (cross-checked against it)."""

from __future__ import annotations

import ast

import confluent_kafka
import pytest

from mafka.client import kafka_error
from mafka.client.kafka_error import LOCAL_ERRORS, KafkaError, KafkaException, error_for
from mafka.errors import ErrorCode, NotLeaderOrFollowerError
from mafka.errors import KafkaError as BrokerError

CK = confluent_kafka.KafkaError


def test_well_known_constants() -> None:
    assert KafkaError._PARTITION_EOF == -191
    assert KafkaError._MSG_TIMED_OUT == -192
    assert KafkaError._TRANSPORT == -195
    assert KafkaError._ALL_BROKERS_DOWN == -187
    assert KafkaError.UNKNOWN_TOPIC_OR_PART == 3
    assert KafkaError.NOT_LEADER_FOR_PARTITION == 6
    assert KafkaError.MSG_SIZE_TOO_LARGE == 10
    assert KafkaError.NO_ERROR == 0
    # Kafka's own names are there as well
    assert KafkaError.UNKNOWN_TOPIC_OR_PARTITION == 3
    assert KafkaError.NOT_LEADER_OR_FOLLOWER == 6
    assert KafkaError.OFFSET_OUT_OF_RANGE == 1


def test_type_checking_declarations_match_the_constants_set() -> None:
    """The ``if TYPE_CHECKING:`` block in ``class KafkaError`` declares exactly the codes set on it.

    Type checkers cannot see the constants the module sets with ``setattr()``, so the class spells
    them out for them; this keeps that list equal to what is set: same names, same order (local
    codes, Kafka's names, librdkafka's spellings), each an ``int`` ``ClassVar``.
    """
    assert kafka_error.__file__ is not None
    with open(kafka_error.__file__, encoding="utf-8") as source:
        tree = ast.parse(source.read())
    (cls,) = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "KafkaError"]
    blocks = [
        node
        for node in cls.body
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
    ]
    declarations = [node for block in blocks for node in block.body if isinstance(node, ast.AnnAssign)]
    assert all(ast.unparse(node.annotation) == "ClassVar[int]" and node.value is None for node in declarations)
    declared = [ast.unparse(node.target) for node in declarations]
    expected = list(
        dict.fromkeys([*LOCAL_ERRORS, *(member.name for member in ErrorCode), *kafka_error._LIBRDKAFKA_ALIASES])
    )
    assert declared == expected
    assert all(type(getattr(KafkaError, name)) is int for name in declared)
    # and nothing else is set on the class as an int constant
    assert {name for name, value in vars(KafkaError).items() if type(value) is int} == set(declared)


@pytest.mark.parametrize("name", sorted(LOCAL_ERRORS))
def test_local_codes_match_confluent_kafka(name: str) -> None:
    code, _ = LOCAL_ERRORS[name]
    assert hasattr(CK, name), f"confluent_kafka lacks {name}"
    assert getattr(KafkaError, name) == code == getattr(CK, name)
    assert KafkaError(code).name() == CK(code).name() == name


def test_every_local_error_is_known_to_confluent_kafka() -> None:
    missing = [name for name in LOCAL_ERRORS if not hasattr(CK, name)]
    assert missing == []


def test_broker_codes_match_confluent_kafka() -> None:
    """Every ErrorCode name (and librdkafka alias) confluent-kafka also defines has its number."""
    names = [m.name for m in ErrorCode] + [
        "UNKNOWN_TOPIC_OR_PART", "NOT_LEADER_FOR_PARTITION", "MSG_SIZE_TOO_LARGE",
        "OFFSET_OUT_OF_RANGE", "REQUEST_TIMED_OUT", "NO_ERROR",
    ]
    shared = [n for n in names if hasattr(CK, n)]
    assert len(shared) > 60  # a real comparison, not an empty one
    mismatched = {n: (getattr(KafkaError, n), getattr(CK, n)) for n in shared
                  if getattr(KafkaError, n) != getattr(CK, n)}
    assert mismatched == {}


def test_aliases_name_kafka_spelling() -> None:
    assert KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART).name() == "UNKNOWN_TOPIC_OR_PARTITION"
    assert KafkaError(6).name() == "NOT_LEADER_OR_FOLLOWER"


def test_name_and_str() -> None:
    eof = KafkaError(KafkaError._PARTITION_EOF)
    assert eof.code() == -191
    assert eof.name() == "_PARTITION_EOF"
    assert eof.str() == str(eof) == "Broker: No more messages" == CK(-191).str()
    timed_out = KafkaError(KafkaError._MSG_TIMED_OUT)
    assert str(timed_out) == "Local: Message timed out" == CK(-192).str()
    broker = KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    assert broker.name() == "UNKNOWN_TOPIC_OR_PARTITION"
    assert broker.str().startswith("Broker: ")
    assert broker.str() == "Broker: " + ErrorCode.UNKNOWN_TOPIC_OR_PARTITION.description
    custom = KafkaError(KafkaError._INVALID_ARG, "bad thing")
    assert custom.str() == str(custom) == "bad thing"
    unknown = KafkaError(-12345)
    assert unknown.name() == "ERR_-12345"
    assert unknown.str() == "Unknown error code -12345"
    assert "code=_PARTITION_EOF" in repr(eof) and "val=-191" in repr(eof)


def test_retriable_from_error_table() -> None:
    for code in ErrorCode:
        assert KafkaError(code).retriable() is code.retriable
    assert KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER).retriable() is True
    assert KafkaError(ErrorCode.TOPIC_AUTHORIZATION_FAILED).retriable() is False
    assert KafkaError(KafkaError._MSG_TIMED_OUT).retriable() is True
    assert KafkaError(KafkaError._TRANSPORT).retriable() is True
    assert KafkaError(KafkaError._PARTITION_EOF).retriable() is False
    assert KafkaError(KafkaError._INVALID_ARG).retriable() is False
    # explicit flags win
    assert KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER, retriable=False).retriable() is False
    assert KafkaError(KafkaError._FATAL, fatal=True).fatal() is True
    assert KafkaError(KafkaError._FATAL).fatal() is False
    assert KafkaError(48, txn_requires_abort=True).txn_requires_abort() is True


def test_equality_with_ints_and_errors() -> None:
    err = KafkaError(KafkaError._PARTITION_EOF)
    assert err == -191
    assert err == KafkaError._PARTITION_EOF
    assert -191 == err
    assert err != -192
    assert err == KafkaError(-191, "other text")
    assert err != KafkaError(-192)
    assert err != "-191"
    assert hash(err) == hash(KafkaError(-191))
    assert len({err, KafkaError(-191), KafkaError(3)}) == 2
    assert KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER) == KafkaError.NOT_LEADER_FOR_PARTITION


def test_kafka_exception_carries_error() -> None:
    err = KafkaError(KafkaError._TIMED_OUT, "flush timed out")
    exc = KafkaException(err)
    assert exc.args[0] is err
    assert exc.error is err
    assert str(exc) == "flush timed out"
    with pytest.raises(KafkaException) as info:
        raise KafkaException(KafkaError.UNKNOWN_TOPIC_OR_PART, "no such topic")
    carried = info.value.args[0]
    assert isinstance(carried, KafkaError)
    assert carried.code() == 3 and carried.str() == "no such topic"
    assert info.value.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    plain = KafkaException(KafkaError._STATE)
    assert plain.args[0].str() == LOCAL_ERRORS["_STATE"][1]


def test_error_for_a_protocol_exception() -> None:
    # No message from the broker: confluent-kafka's "Broker: <description>".
    err = error_for(NotLeaderOrFollowerError())
    assert (err.code(), err.name(), err.retriable()) == (6, "NOT_LEADER_OR_FOLLOWER", True)
    assert err.str() == f"Broker: {ErrorCode.NOT_LEADER_OR_FOLLOWER.description}"
    # The broker's own message is kept; an undefined code keeps its number.
    assert error_for(NotLeaderOrFollowerError("moved")).str() == "moved"
    assert error_for(BrokerError.for_code(999)()).code() == 999
