"""The transactional producer's plain parts: state machine, error tables, the one-call-at-a-time
guard, ConsumerGroupMetadata (and librdkafka's serialized form) and the transactional config rules."""

from __future__ import annotations

import threading

import pytest

from mafka.client.config import ConfigError, parse_config
from mafka.client.group_metadata import ConsumerGroupMetadata
from mafka.client.kafka_error import KafkaError, KafkaException
from mafka.client.txn_state import (
    Action,
    ApiGuard,
    TransactionState,
    TxnState,
    add_offsets_action,
    add_partitions_action,
    end_txn_action,
    init_pid_action,
    normalize,
    txn_error,
    txn_offset_commit_action,
)
from mafka.errors import ErrorCode as E

S = TxnState


def in_transaction() -> TransactionState:
    st = TransactionState()
    for s in (S.WAIT_PID, S.READY_NOT_ACKED, S.READY):
        st.set(s)
    st.begin()
    return st


# -- states -----------------------------------------------------------------------------------------


def test_state_names_are_librdkafkas() -> None:
    assert [s.value for s in TxnState] == [
        "Init", "WaitPID", "ReadyNotAcked", "Ready", "InTransaction", "BeginCommit", "CommittingTransaction",
        "CommitNotAcked", "BeginAbort", "AbortingTransaction", "AbortedNotAcked", "AbortableError", "FatalError"]


def test_require_gives_state_abortable_or_fatal_errors() -> None:
    st = TransactionState()
    with pytest.raises(KafkaException) as exc:
        st.require(S.IN_TRANSACTION)
    err = exc.value.args[0]
    assert err.code() == KafkaError._STATE and str(err) == "Operation not valid in state Init"
    assert not (err.fatal() or err.retriable() or err.txn_requires_abort())

    st = in_transaction()
    assert st.set_abortable(E.INVALID_RECORD, "produce failed") is True
    with pytest.raises(KafkaException) as exc:
        st.require(S.IN_TRANSACTION)
    err = exc.value.args[0]
    assert err.code() == E.INVALID_RECORD and err.txn_requires_abort() and not err.fatal()

    st.set_fatal(E.PRODUCER_FENCED, "fenced")
    with pytest.raises(KafkaException) as exc:
        st.require(S.BEGIN_ABORT)
    err = exc.value.args[0]
    assert err.code() == KafkaError._FENCED and err.fatal() and not err.txn_requires_abort()


def test_invalid_transitions_are_bugs() -> None:
    st = TransactionState()
    with pytest.raises(RuntimeError):
        st.set(S.IN_TRANSACTION)
    st.set(S.FATAL_ERROR)  # any state may become fatal
    assert st.state is S.FATAL_ERROR


def test_first_abortable_error_is_kept_and_later_ones_only_add_the_bump() -> None:
    st = in_transaction()
    assert st.set_abortable(E.INVALID_RECORD, "first")
    assert not st.set_abortable(E.UNKNOWN_PRODUCER_ID, "second", bump=True)
    assert st.error is not None and st.error.code() == E.INVALID_RECORD
    assert st.requires_bump
    st.set(S.BEGIN_ABORT)
    assert not st.set_abortable(E.NOT_ENOUGH_REPLICAS, "while aborting")
    assert st.state is S.BEGIN_ABORT


def test_abortable_after_fatal_changes_nothing() -> None:
    st = in_transaction()
    st.set_fatal(E.INVALID_PRODUCER_EPOCH, "fenced")
    assert not st.set_abortable(E.INVALID_RECORD, "x", bump=True)
    assert st.state is S.FATAL_ERROR and not st.requires_bump
    # the first fatal error is kept
    st.set_fatal(E.CLUSTER_AUTHORIZATION_FAILED, "later")
    assert st.error is not None and st.error.code() == KafkaError._FENCED


def test_producing_only_inside_a_transaction() -> None:
    st = TransactionState()
    err = st.produce_error()
    assert err is not None and err.code() == KafkaError._STATE
    assert "Init" in str(err)
    st = in_transaction()
    assert st.produce_error() is None
    st.set(S.BEGIN_COMMIT)
    err = st.produce_error()
    assert err is not None and err.code() == KafkaError._STATE and "BeginCommit" in str(err)
    st.set_fatal(E.PRODUCER_FENCED, "fenced")
    err = st.produce_error()
    assert err is not None and err.fatal() and err.code() == KafkaError._FENCED


def test_partition_registration_bookkeeping() -> None:
    st = in_transaction()
    assert st.want([("t", 1), ("t", 0)]) is True
    assert st.want([("t", 0)]) is False
    assert st.take_pending() == [("t", 0), ("t", 1)]
    assert st.want([("t", 0), ("t", 2)]) is True  # t-0 is being registered: only t-2 is new
    assert st.pending == {("t", 2)}
    st.registered(("t", 0))
    assert st.admitted(("t", 0)) and not st.admitted(("t", 1))
    st.registration_failed()
    assert st.pending == {("t", 1), ("t", 2)} and st.registering == set()
    st.set(S.BEGIN_COMMIT)
    assert st.admitted(("t", 0))  # commit flushes registered partitions
    st.set(S.COMMIT_NOT_ACKED)
    assert not st.admitted(("t", 0))
    st.complete()
    assert st.state is S.READY and not st.added and not st.pending


# -- error tables -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("table", "code", "action"), [
    (init_pid_action, E.COORDINATOR_LOAD_IN_PROGRESS, Action.RETRY),
    (init_pid_action, E.CONCURRENT_TRANSACTIONS, Action.RETRY),
    (init_pid_action, E.NOT_COORDINATOR, Action.REFIND),
    (init_pid_action, E.COORDINATOR_NOT_AVAILABLE, Action.REFIND),
    (init_pid_action, E.PRODUCER_FENCED, Action.FATAL),
    (init_pid_action, E.INVALID_TRANSACTION_TIMEOUT, Action.FATAL),
    (init_pid_action, E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, Action.FATAL),
    (add_partitions_action, E.CONCURRENT_TRANSACTIONS, Action.RETRY),
    (add_partitions_action, E.UNKNOWN_TOPIC_OR_PARTITION, Action.RETRY),
    (add_partitions_action, E.NOT_COORDINATOR, Action.REFIND),
    (add_partitions_action, E.INVALID_PRODUCER_EPOCH, Action.FATAL),
    (add_partitions_action, E.INVALID_TXN_STATE, Action.FATAL),
    (add_partitions_action, E.UNKNOWN_PRODUCER_ID, Action.BUMP),
    (add_partitions_action, E.TOPIC_AUTHORIZATION_FAILED, Action.ABORTABLE),
    (add_partitions_action, E.OPERATION_NOT_ATTEMPTED, Action.ABORTABLE),
    (add_offsets_action, E.REQUEST_TIMED_OUT, Action.REFIND),
    (add_offsets_action, E.COORDINATOR_LOAD_IN_PROGRESS, Action.RETRY),
    (add_offsets_action, E.PRODUCER_FENCED, Action.FATAL),
    (add_offsets_action, E.GROUP_AUTHORIZATION_FAILED, Action.ABORTABLE),
    (txn_offset_commit_action, E.NOT_COORDINATOR, Action.REFIND),
    (txn_offset_commit_action, E.CONCURRENT_TRANSACTIONS, Action.RETRY),
    (txn_offset_commit_action, E.ILLEGAL_GENERATION, Action.ABORTABLE),
    (txn_offset_commit_action, E.FENCED_INSTANCE_ID, Action.ABORTABLE),
    (txn_offset_commit_action, E.INVALID_PRODUCER_EPOCH, Action.FATAL),
    (end_txn_action, E.CONCURRENT_TRANSACTIONS, Action.RETRY),
    (end_txn_action, E.COORDINATOR_NOT_AVAILABLE, Action.REFIND),
    (end_txn_action, E.UNKNOWN_PRODUCER_ID, Action.BUMP),
    (end_txn_action, E.INVALID_TXN_STATE, Action.FATAL),
    (end_txn_action, E.PRODUCER_FENCED, Action.FATAL),
    (end_txn_action, E.UNKNOWN_SERVER_ERROR, Action.ABORTABLE),
])
def test_error_tables(table, code, action) -> None:
    assert table(int(code)) is action


def test_fencing_errors_are_normalized_and_flags_follow_the_action() -> None:
    assert normalize(E.PRODUCER_FENCED) == normalize(E.INVALID_PRODUCER_EPOCH) == KafkaError._FENCED
    assert normalize(E.CONCURRENT_TRANSACTIONS) == E.CONCURRENT_TRANSACTIONS
    fatal = txn_error(E.PRODUCER_FENCED, None, Action.FATAL)
    assert fatal.code() == KafkaError._FENCED and fatal.fatal() and not fatal.retriable()
    assert str(fatal) == "Local: This instance has been fenced by a newer instance"
    retry = txn_error(E.COORDINATOR_LOAD_IN_PROGRESS, "x", Action.RETRY)
    assert retry.retriable() and not retry.fatal() and not retry.txn_requires_abort()
    abort = txn_error(E.INVALID_RECORD, "x", Action.BUMP)
    assert abort.txn_requires_abort() and not abort.retriable()


# -- ApiGuard ---------------------------------------------------------------------------------------


def test_api_guard_one_call_at_a_time_and_resumable_calls() -> None:
    guard = ApiGuard()
    with guard.call("begin_transaction"):
        pass
    # a resumable call that timed out stays current
    with pytest.raises(KafkaException), guard.call("commit_transaction", resumable=True):
        raise KafkaException(KafkaError(KafkaError._TIMED_OUT, retriable=True))
    with pytest.raises(KafkaException) as exc, guard.call("abort_transaction"):
        pass
    assert exc.value.args[0].code() == KafkaError._CONFLICT and exc.value.args[0].retriable()
    assert "commit_transaction" in str(exc.value)
    with guard.call("commit_transaction", resumable=True):
        pass
    with guard.call("abort_transaction"):
        pass
    # a non-retriable error ends even a resumable call
    with pytest.raises(KafkaException), guard.call("commit_transaction", resumable=True):
        raise KafkaException(KafkaError(KafkaError._STATE, retriable=False))
    with guard.call("begin_transaction"):
        pass


def test_api_guard_refuses_the_same_call_from_another_thread() -> None:
    guard = ApiGuard()
    inside = threading.Event()
    release = threading.Event()

    def first() -> None:
        with guard.call("commit_transaction", resumable=True):
            inside.set()
            release.wait(5)

    t = threading.Thread(target=first)
    t.start()
    inside.wait(5)
    try:
        with pytest.raises(KafkaException) as exc, guard.call("commit_transaction", resumable=True):
            pass
        assert exc.value.args[0].code() == KafkaError._PREV_IN_PROGRESS
    finally:
        release.set()
        t.join()


# -- ConsumerGroupMetadata --------------------------------------------------------------------------


def test_group_metadata_reads_librdkafkas_serialized_form() -> None:
    # confluent-kafka's Consumer({"group.id": "g", "group.instance.id": "inst"}).consumer_group_metadata()
    # before joining (librdkafka writes the generation in host byte order: little endian here)
    data = b"CGMDv2:\xff\xff\xff\xffg\x00\x00\x00inst\x00"
    md = ConsumerGroupMetadata.coerce(data)
    assert md == ConsumerGroupMetadata("g", -1, "", "inst")
    assert bytes(md) == data
    joined = ConsumerGroupMetadata("group", 12, "rdkafka-abc", None)
    assert ConsumerGroupMetadata.parse(bytes(joined)) == joined
    assert bytes(joined).endswith(b"rdkafka-abc\x00\x01")


def test_group_metadata_from_a_confluent_kafka_consumer() -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    c = confluent_kafka.Consumer({"bootstrap.servers": "127.0.0.1:1", "group.id": "cg",
                                  "group.instance.id": "i-1", "log_level": 0})
    try:
        md = ConsumerGroupMetadata.coerce(c.consumer_group_metadata())
    finally:
        c.close()
    assert (md.group_id, md.generation_id, md.member_id, md.group_instance_id) == ("cg", -1, "", "i-1")


def test_group_metadata_coerce() -> None:
    md = ConsumerGroupMetadata("g", 3, "m")
    assert ConsumerGroupMetadata.coerce(md) is md
    assert ConsumerGroupMetadata.coerce("plain-group") == ConsumerGroupMetadata("plain-group")
    for bad in (None, 5, ""):
        with pytest.raises(KafkaException) as exc:
            ConsumerGroupMetadata.coerce(bad)
        assert exc.value.args[0].code() == KafkaError._INVALID_ARG
    with pytest.raises(KafkaException) as exc:
        ConsumerGroupMetadata.coerce(b"not metadata")
    assert exc.value.args[0].code() == KafkaError._BAD_MSG


# -- config -------------------------------------------------------------------------------------------


def test_transactional_delivery_timeout_defaults_to_and_is_capped_by_the_transaction_timeout() -> None:
    cfg = parse_config("producer", {"bootstrap.servers": "x:1", "transactional.id": "t"})
    assert cfg["transaction.timeout.ms"] == 60000 and cfg["delivery.timeout.ms"] == 60000
    cfg = parse_config("producer", {"bootstrap.servers": "x:1", "transactional.id": "t",
                                    "transaction.timeout.ms": 20000, "message.timeout.ms": 5000})
    assert cfg["delivery.timeout.ms"] == 5000
    with pytest.raises(ConfigError) as exc:
        parse_config("producer", {"bootstrap.servers": "x:1", "transactional.id": "t",
                                  "transaction.timeout.ms": 20000, "delivery.timeout.ms": 30000})
    assert '"delivery.timeout.ms"' in str(exc.value) and "transaction.timeout.ms" in str(exc.value)
    # not transactional: untouched
    assert parse_config("producer", {"bootstrap.servers": "x:1"})["delivery.timeout.ms"] == 300000
