"""TransactionMetadata: Kafka 2.8's transition table, the prepare/complete pattern, KIP-360 epochs."""

from __future__ import annotations

import pytest

from mafka.errors import ErrorCode as E
from mafka.errors import IllegalStateError
from mafka.transaction.metadata import (
    VALID_PREVIOUS_STATES,
    TransactionMetadata,
    TransactionState,
    is_epoch_exhausted,
    is_valid_transition,
)

S = TransactionState
ALL = list(S)
TP = ("foo", 0)
TP1 = ("foo", 1)

# Kafka 2.8 TransactionMetadata.validPreviousStates, written out again to check ours.
KAFKA_TABLE = {
    S.EMPTY: {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.ONGOING: {S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.PREPARE_COMMIT: {S.ONGOING},
    S.PREPARE_ABORT: {S.ONGOING, S.PREPARE_EPOCH_FENCE},
    S.COMPLETE_COMMIT: {S.PREPARE_COMMIT},
    S.COMPLETE_ABORT: {S.PREPARE_ABORT},
    S.DEAD: {S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT},
    S.PREPARE_EPOCH_FENCE: {S.ONGOING},
}


def md(state=S.EMPTY, epoch=3, partitions=(), pid=100, start=-1, **kw) -> TransactionMetadata:
    return TransactionMetadata(
        "txn", producer_id=pid, producer_epoch=epoch, txn_timeout_ms=1000, state=state,
        topic_partitions=set(partitions), txn_start_timestamp=start, txn_last_update_timestamp=10, **kw,
    )


def test_state_bytes_and_names():
    assert [(s.value, str(s)) for s in S] == [
        (0, "Empty"), (1, "Ongoing"), (2, "PrepareCommit"), (3, "PrepareAbort"),
        (4, "CompleteCommit"), (5, "CompleteAbort"), (6, "Dead"), (7, "PrepareEpochFence"),
    ]
    assert S.from_name("PrepareAbort") is S.PREPARE_ABORT
    assert S.from_name("prepareabort") is None
    assert {s for s in S if s.is_expiration_allowed} == {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}


@pytest.mark.parametrize("new", ALL)
@pytest.mark.parametrize("old", ALL)
def test_transition_table(old, new):
    assert {k: set(v) for k, v in VALID_PREVIOUS_STATES.items()} == KAFKA_TABLE
    assert is_valid_transition(old, new) == (old in KAFKA_TABLE[new])


# Each prepare method and the state it moves to (prepare_complete: Complete* matching the Prepare*).
PREPARES = {
    "increment_epoch": (lambda m: m.prepare_increment_producer_epoch(2000, None, 50)[1], S.EMPTY),
    "rotation": (lambda m: m.prepare_producer_id_rotation(200, 2000, 50, False), S.EMPTY),
    "add_partitions": (lambda m: m.prepare_add_partitions({TP1}, 50), S.ONGOING),
    "commit": (lambda m: m.prepare_abort_or_commit(S.PREPARE_COMMIT, 50), S.PREPARE_COMMIT),
    "abort": (lambda m: m.prepare_abort_or_commit(S.PREPARE_ABORT, 50), S.PREPARE_ABORT),
    "complete": (lambda m: m.prepare_complete(50), None),
    "dead": (lambda m: m.prepare_dead(), S.DEAD),
    "fence": (lambda m: m.prepare_fence_producer_epoch(), S.PREPARE_EPOCH_FENCE),
}


@pytest.mark.parametrize("name", list(PREPARES))
@pytest.mark.parametrize("state", ALL)
def test_every_prepare_from_every_state(name, state):
    prepare, target = PREPARES[name]
    if target is None:
        target = S.COMPLETE_COMMIT if state == S.PREPARE_COMMIT else S.COMPLETE_ABORT
    m = md(state, partitions={TP} if state != S.EMPTY else (), start=5)
    if state in KAFKA_TABLE[target]:
        transit = prepare(m)
        assert transit.txn_state == target
        assert m.pending_state == target
        assert m.state == state  # nothing but the pending state changes before the append
        # A second prepare while pending is refused.
        with pytest.raises(IllegalStateError):
            prepare(m)
    else:
        with pytest.raises(IllegalStateError):
            prepare(m)
        assert m.pending_state is None


def test_full_commit_cycle():
    m = md(S.EMPTY, epoch=-1)
    t = m.prepare_increment_producer_epoch(1000, None, 20)[1]
    m.complete_transition_to(t)
    assert (m.state, m.producer_epoch, m.last_producer_epoch, m.txn_last_update_timestamp) == (S.EMPTY, 0, -1, 20)

    t = m.prepare_add_partitions({TP}, 30)
    assert (t.txn_start_timestamp, t.topic_partitions) == (30, frozenset({TP}))
    m.complete_transition_to(t)
    assert (m.state, m.topic_partitions, m.txn_start_timestamp) == (S.ONGOING, {TP}, 30)

    t = m.prepare_add_partitions({TP1}, 40)
    assert t.txn_start_timestamp == 30  # an open transaction keeps its start
    m.complete_transition_to(t)
    assert m.topic_partitions == {TP, TP1}

    m.complete_transition_to(m.prepare_abort_or_commit(S.PREPARE_COMMIT, 50))
    assert (m.state, m.topic_partitions, m.txn_last_update_timestamp) == (S.PREPARE_COMMIT, {TP, TP1}, 50)

    t = m.prepare_complete(60)
    assert t.topic_partitions == frozenset() and t.txn_state == S.COMPLETE_COMMIT
    m.complete_transition_to(t)
    assert (m.state, m.topic_partitions, m.pending_state) == (S.COMPLETE_COMMIT, set(), None)

    t = m.prepare_add_partitions({TP}, 70)
    assert t.txn_start_timestamp == 70  # a new transaction starts its clock


def test_transit_last_producer_id_is_the_current_id():
    m = md(S.COMPLETE_ABORT, epoch=5)
    t = m.prepare_producer_id_rotation(200, 1000, 20, record_last_epoch=True)
    assert (t.producer_id, t.last_producer_id, t.producer_epoch, t.last_producer_epoch) == (200, 100, 0, 5)
    m.complete_transition_to(t)
    assert (m.producer_id, m.last_producer_id, m.producer_epoch, m.last_producer_epoch) == (200, 100, 0, 5)


def test_rotation_without_expected_epoch_forgets_the_last_epoch():
    t = md(S.EMPTY, epoch=32766).prepare_producer_id_rotation(200, 1000, 20, record_last_epoch=False)
    assert t.last_producer_epoch == -1


def test_rotation_refused_with_an_open_transaction():
    with pytest.raises(IllegalStateError, match="pending"):
        md(S.ONGOING).prepare_producer_id_rotation(200, 1000, 20, False)


class TestIncrementProducerEpoch:
    def test_no_expected_epoch_bumps_and_forgets_last(self):
        m = md(S.EMPTY, epoch=3, last_producer_epoch=2)
        error, t = m.prepare_increment_producer_epoch(1000, None, 20)
        assert error == E.NONE and (t.producer_epoch, t.last_producer_epoch) == (4, -1)

    def test_expected_current_epoch_bumps_and_remembers(self):
        error, t = md(S.EMPTY, epoch=3).prepare_increment_producer_epoch(1000, 3, 20)
        assert error == E.NONE and (t.producer_epoch, t.last_producer_epoch) == (4, 3)

    def test_new_metadata_accepts_any_expected_epoch(self):
        error, t = md(S.EMPTY, epoch=-1).prepare_increment_producer_epoch(1000, 7, 20)
        assert error == E.NONE and (t.producer_epoch, t.last_producer_epoch) == (0, -1)

    def test_expected_last_epoch_is_a_retry(self):
        m = md(S.EMPTY, epoch=4, last_producer_epoch=3)
        error, t = m.prepare_increment_producer_epoch(1000, 3, 20)
        assert error == E.NONE and (t.producer_epoch, t.last_producer_epoch) == (4, 3)
        m.complete_transition_to(t)  # same epoch: a valid completion
        assert m.producer_epoch == 4

    def test_other_epoch_is_fenced(self):
        m = md(S.EMPTY, epoch=4, last_producer_epoch=3)
        assert m.prepare_increment_producer_epoch(1000, 2, 20) == (E.PRODUCER_FENCED, None)
        assert m.pending_state is None

    def test_exhausted_epoch_raises(self):
        with pytest.raises(IllegalStateError):
            md(S.EMPTY, epoch=32766).prepare_increment_producer_epoch(1000, None, 20)

    def test_new_timeout_applies(self):
        m = md(S.EMPTY)
        m.complete_transition_to(m.prepare_increment_producer_epoch(5000, None, 20)[1])
        assert m.txn_timeout_ms == 5000


def test_epoch_exhaustion_threshold():
    assert not is_epoch_exhausted(32765)
    assert is_epoch_exhausted(32766) and is_epoch_exhausted(32767)


class TestFence:
    def test_bumps_and_keeps_the_transaction(self):
        m = md(S.ONGOING, epoch=3, partitions={TP}, start=5, last_producer_epoch=2)
        t = m.prepare_fence_producer_epoch()
        assert (t.producer_epoch, t.last_producer_epoch, t.topic_partitions, t.txn_start_timestamp) == (
            4, -1, frozenset({TP}), 5)
        assert t.txn_last_update_timestamp == 10

    def test_after_a_failed_fence_the_epoch_is_not_bumped_again(self):
        m = md(S.ONGOING, epoch=4, has_failed_epoch_fence=True)
        assert m.prepare_fence_producer_epoch().producer_epoch == 4

    def test_max_epoch_cannot_be_fenced(self):
        with pytest.raises(IllegalStateError, match="overflow"):
            md(S.ONGOING, epoch=32767).prepare_fence_producer_epoch()

    def test_completing_a_fence_is_illegal(self):
        m = md(S.ONGOING)
        t = m.prepare_fence_producer_epoch()
        with pytest.raises(IllegalStateError):
            m.complete_transition_to(t)

    def test_prepare_complete_clears_the_failed_fence_flag(self):
        m = md(S.PREPARE_ABORT, partitions={TP}, start=5, has_failed_epoch_fence=True)
        m.prepare_complete(20)
        assert not m.has_failed_epoch_fence


class TestCompleteChecks:
    def test_without_pending_state(self):
        m = md(S.EMPTY)
        t = m.prepare_add_partitions({TP}, 20)
        m.pending_state = None
        with pytest.raises(IllegalStateError, match="does not have a pending state"):
            m.complete_transition_to(t)

    def test_pending_state_differs(self):
        m = md(S.ONGOING, partitions={TP}, start=5)
        t = m.prepare_abort_or_commit(S.PREPARE_COMMIT, 20)
        m.pending_state = S.PREPARE_ABORT
        with pytest.raises(IllegalStateError):
            m.complete_transition_to(t)

    def test_epoch_jump_to_empty_is_refused(self):
        m = md(S.EMPTY, epoch=3)
        t = m.prepare_increment_producer_epoch(1000, None, 20)[1]
        m.producer_epoch = 1  # the transit's 4 is no longer current + 1
        with pytest.raises(IllegalStateError):
            m.complete_transition_to(t)
        assert m.state == S.EMPTY and m.pending_state == S.EMPTY  # nothing applied

    def test_ongoing_with_other_epoch_is_refused(self):
        m = md(S.EMPTY)
        t = m.prepare_add_partitions({TP}, 20)
        m.producer_epoch += 1
        with pytest.raises(IllegalStateError):
            m.complete_transition_to(t)
        assert m.topic_partitions == set()

    def test_prepare_commit_with_other_partitions_is_refused(self):
        m = md(S.ONGOING, partitions={TP}, start=5)
        t = m.prepare_abort_or_commit(S.PREPARE_COMMIT, 20)
        m.topic_partitions.add(TP1)
        with pytest.raises(IllegalStateError):
            m.complete_transition_to(t)

    def test_complete_without_start_is_refused(self):
        m = md(S.PREPARE_COMMIT, partitions={TP}, start=-1)
        t = m.prepare_complete(20)
        with pytest.raises(IllegalStateError):
            m.complete_transition_to(t)

    def test_dead_is_never_completed(self):
        m = md(S.EMPTY)
        t = m.prepare_dead()
        with pytest.raises(IllegalStateError, match="expired"):
            m.complete_transition_to(t)

    def test_negative_ids_and_epochs(self):
        with pytest.raises(ValueError):
            md(S.EMPTY).prepare_producer_id_rotation(-5, 1000, 20, False)
        with pytest.raises(ValueError):
            md(S.ONGOING, epoch=-1).prepare_add_partitions({TP}, 20)
