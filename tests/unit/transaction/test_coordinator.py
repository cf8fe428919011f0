"""The transaction coordinator against a fake clock, timers, state log, producer ids and marker sink.

Scenarios follow Kafka 2.8's TransactionCoordinatorTest / TransactionStateManagerTest /
TransactionMarkerChannelManagerTest (same facts, own code).
"""

from __future__ import annotations

import pytest

from mafka.errors import ErrorCode as E
from mafka.transaction.coordinator import (
    ListTransactionsResult,
    TransactionCoordinator,
    TransactionListing,
    error_for_version,
    expected_producer_id_and_epoch,
)
from mafka.transaction.log_records import (
    TransactionLogValue,
    encode_key,
    encode_value,
)
from mafka.transaction.markers import TransactionResult
from mafka.transaction.metadata import TransactionState
from mafka.transaction.state_manager import TransactionConfig
from tests.unit.transaction.fakes import (
    T0,
    Box,
    Clock,
    FakeMarkers,
    FakeProducerIds,
    FakeStateLog,
    Timers,
)

S = TransactionState
TID = "txn-0"
TIMEOUT = 60_000
TP = ("foo", 0)
TP1 = ("foo", 1)
TP2 = ("bar", 0)
PARTITIONS = 5
EXPIRATION = 24 * 3600 * 1000


class H:
    """One coordinator owning TID's partition (epoch 1), plus helpers that speak its API."""

    def __init__(self, load=True, **config) -> None:
        self.clock = Clock()
        self.timers = Timers(self.clock)
        self.log = FakeStateLog()
        self.pids = FakeProducerIds()
        self.markers = FakeMarkers()
        self.config = TransactionConfig(
            **{"transaction_log_num_partitions": PARTITIONS, "transactional_id_expiration_ms": EXPIRATION, **config}
        )
        self.c = TransactionCoordinator(self.config, self.clock, self.timers, self.log, self.pids, self.markers)
        self.c.startup()
        self.p = self.c.partition_for(TID)
        if load:
            self.own(self.p)

    def own(self, partition: int, epoch: int = 1, records=()) -> None:
        assert self.c.on_elected(partition, epoch)
        assert self.c.complete_load(partition, epoch, list(records))

    def ids_on(self, partition: int, n: int = 1, avoid=()) -> list[str]:
        out = [f"id-{i}" for i in range(10_000) if self.c.partition_for(f"id-{i}") == partition and f"id-{i}" not in avoid]
        return out[:n]

    def other_partition(self) -> int:
        return (self.p + 1) % PARTITIONS

    # requests
    def init(self, tid=TID, timeout=TIMEOUT, expected=None) -> Box:
        box = Box()
        self.c.handle_init_producer_id(tid, timeout, expected, box)
        return box

    def add(self, pid, epoch, partitions=(TP,), tid=TID) -> Box:
        box = Box()
        self.c.handle_add_partitions(tid, pid, epoch, partitions, box)
        return box

    def end(self, pid, epoch, commit=True, tid=TID) -> Box:
        box = Box()
        self.c.handle_end_transaction(tid, pid, epoch, commit, box)
        return box

    def md(self, tid=TID):
        error, entry = self.c.txn_manager.get_transaction_state(tid)
        assert error == E.NONE
        return entry.transaction_metadata if entry else None

    # flows
    def ready(self, tid=TID) -> tuple[int, int]:
        error, pid, epoch = self.init(tid).value
        assert error == E.NONE
        return pid, epoch

    def ongoing(self, partitions=(TP, TP1), tid=TID) -> tuple[int, int]:
        pid, epoch = self.ready(tid)
        assert set(self.add(pid, epoch, partitions, tid).value.values()) == {E.NONE}
        return pid, epoch


def add_error(box: Box) -> int:
    errors = set(box.value.values())
    assert len(errors) == 1, box.value
    return errors.pop()


def value(state, pid=7, epoch=2, partitions=None, timeout=TIMEOUT, last=T0 - 10, start=T0 - 20):
    return encode_value(TransactionLogValue(pid, epoch, timeout, state, partitions, last, start))


# ------------------------------------------------------------------ InitProducerId


class TestInitProducerId:
    def test_new_transactional_id(self):
        h = H()
        assert h.init().value == (E.NONE, 1000, 0)
        [(tid, v)] = h.log.decoded()
        assert tid == TID and h.log.appends[0][0] == h.p
        assert (v.producer_id, v.producer_epoch, v.transaction_timeout_ms, v.transaction_status) == (
            1000, 0, TIMEOUT, S.EMPTY)
        assert (v.partitions, v.transaction_start_timestamp_ms, v.transaction_last_update_timestamp_ms) == (
            None, -1, T0)
        m = h.md()
        assert (m.state, m.producer_id, m.producer_epoch, m.pending_state) == (S.EMPTY, 1000, 0, None)

    def test_answer_waits_for_the_log(self):
        h = H()
        h.log.auto = False
        box = h.init()
        assert not box.done
        assert h.md().producer_epoch == -1 and h.md().pending_state == S.EMPTY
        h.log.release()
        assert box.value == (E.NONE, 1000, 0)

    def test_null_transactional_id_is_a_plain_producer_id(self):
        h = H()
        assert h.init(tid=None).value == (E.NONE, 1000, 0)
        assert h.log.appends == []

    def test_producer_id_failure_is_answered(self):
        h = H()
        h.pids.auto = False
        box = h.init(tid=None)
        h.pids.release(E.COORDINATOR_NOT_AVAILABLE)
        assert box.value == (E.COORDINATOR_NOT_AVAILABLE, -1, -1)
        box = h.init()
        h.pids.release(E.COORDINATOR_NOT_AVAILABLE)
        assert box.value == (E.COORDINATOR_NOT_AVAILABLE, -1, -1)
        assert h.md() is None and h.log.appends == []

    def test_empty_transactional_id(self):
        assert H().init(tid="").value == (E.INVALID_REQUEST, -1, -1)

    @pytest.mark.parametrize("timeout", [0, -1, 900_001])
    def test_invalid_timeout(self, timeout):
        assert H().init(timeout=timeout).value == (E.INVALID_TRANSACTION_TIMEOUT, -1, -1)

    def test_max_timeout_is_allowed(self):
        assert H().init(timeout=900_000).value[0] == E.NONE

    def test_not_coordinator_and_loading(self):
        h = H(load=False)
        assert h.init().value == (E.NOT_COORDINATOR, -1, -1)
        assert h.c.on_elected(h.p, 1)
        assert h.init().value == (E.COORDINATOR_LOAD_IN_PROGRESS, -1, -1)
        assert h.pids.calls == 0

    def test_epoch_bump_on_empty_and_complete(self):
        h = H()
        assert h.init().value == (E.NONE, 1000, 0)
        h.clock.now += 5
        assert h.init(timeout=30_000).value == (E.NONE, 1000, 1)
        m = h.md()
        assert (m.txn_timeout_ms, m.last_producer_epoch, m.txn_last_update_timestamp) == (30_000, -1, T0 + 5)
        pid, epoch = 1000, 1
        h.add(pid, epoch)
        h.end(pid, epoch)
        h.markers.complete()
        assert h.md().state == S.COMPLETE_COMMIT
        assert h.init().value == (E.NONE, 1000, 2)
        assert h.pids.calls == 1

    def test_concurrent_async_creation_uses_one_producer_id(self):
        h = H()
        h.pids.auto = False
        first, second = h.init(), h.init()
        h.pids.release()
        assert first.value == (E.NONE, 1000, 0)
        h.pids.release()  # id 1001 is drawn but the id exists now: it just bumps
        assert second.value == (E.NONE, 1000, 1)

    def test_resigned_while_drawing_a_producer_id(self):
        h = H()
        h.pids.auto = False
        box = h.init()
        h.c.on_resigned(h.p, 2)
        h.pids.release()
        assert box.value == (E.NOT_COORDINATOR, -1, -1)

    def test_rotation_waits_for_the_producer_id(self):
        h = H()
        pid, _ = h.ready()
        h.md().producer_epoch = 32766
        h.pids.auto = False
        box = h.init()
        assert not box.done and h.md().pending_state is None
        h.pids.release()
        assert box.value == (E.NONE, 1001, 0)
        assert (h.md().producer_id, h.md().last_producer_id) == (1001, pid)

    def test_pending_transition_is_concurrent(self):
        h = H()
        h.ready()
        h.log.auto = False
        first = h.init()
        assert h.init().value == (E.CONCURRENT_TRANSACTIONS, -1, -1)
        h.log.release()
        assert first.value == (E.NONE, 1000, 1)

    @pytest.mark.parametrize("commit", [True, False])
    def test_prepare_states_are_concurrent(self, commit):
        h = H()
        pid, epoch = h.ongoing()
        assert h.end(pid, epoch, commit).value == E.NONE
        assert h.init().value == (E.CONCURRENT_TRANSACTIONS, -1, -1)
        h.markers.complete()
        assert h.init().value == (E.NONE, pid, epoch + 1)

    def test_prepare_state_without_pending_is_concurrent(self):
        h = H(load=False)
        h.own(h.p, records=[(encode_key(TID), value(S.PREPARE_COMMIT, partitions=(("foo", (0,)),)))])
        h.md().pending_state = None  # as if the Complete* append had been dropped
        assert h.init().value == (E.CONCURRENT_TRANSACTIONS, -1, -1)


class TestFencing:
    def test_init_over_an_open_transaction_fences_and_aborts(self):
        h = H()
        pid, epoch = h.ongoing()
        h.log.auto = False
        box = h.init()
        assert not box.done  # PrepareAbort first
        h.log.release()
        assert box.value == (E.CONCURRENT_TRANSACTIONS, -1, -1)
        _, v = h.log.decoded()[-1]
        assert (v.transaction_status, v.producer_epoch) == (S.PREPARE_ABORT, epoch + 1)
        assert v.topic_partitions() == {TP, TP1}
        m = h.md()
        assert (m.state, m.producer_epoch, m.last_producer_epoch, m.pending_state) == (
            S.PREPARE_ABORT, epoch + 1, -1, S.COMPLETE_ABORT)
        [sent] = h.markers.sent
        assert (sent["result"], sent["producer_epoch"], sent["partitions"]) == (
            TransactionResult.ABORT, epoch + 1, {TP, TP1})
        # The old producer is fenced everywhere.
        assert add_error(h.add(pid, epoch, [TP2])) == E.PRODUCER_FENCED
        assert h.end(pid, epoch).value == E.PRODUCER_FENCED
        # Still aborting: the client's retry waits.
        assert h.init().value == (E.CONCURRENT_TRANSACTIONS, -1, -1)
        h.log.auto = True
        h.markers.complete()
        assert h.md().state == S.COMPLETE_ABORT
        assert h.init().value == (E.NONE, pid, epoch + 2)

    def test_failed_fence_keeps_the_raised_epoch_and_does_not_bump_again(self):
        h = H()
        pid, epoch = h.ongoing()
        h.log.auto = False
        box = h.init()
        h.log.release(E.NOT_ENOUGH_REPLICAS)
        assert box.value == (E.COORDINATOR_NOT_AVAILABLE, -1, -1)
        m = h.md()
        assert (m.state, m.pending_state, m.producer_epoch, m.has_failed_epoch_fence) == (
            S.ONGOING, None, epoch + 1, True)
        assert h.end(pid, epoch).value == E.PRODUCER_FENCED  # the old epoch stays fenced
        h.log.auto = True
        assert h.init().value == (E.CONCURRENT_TRANSACTIONS, -1, -1)
        assert h.log.last_value().producer_epoch == epoch + 1  # not epoch + 2
        h.markers.complete()
        assert not h.md().has_failed_epoch_fence
        assert h.init().value == (E.NONE, pid, epoch + 2)

    def test_fence_exhausting_the_epochs_rotates_on_retry(self):
        h = H()
        pid, _ = h.ongoing()
        h.md().producer_epoch = 32765
        assert h.init().value == (E.CONCURRENT_TRANSACTIONS, -1, -1)
        h.markers.complete()
        assert h.md().producer_epoch == 32766
        assert h.init().value == (E.NONE, 1001, 0)
        assert (h.md().last_producer_id, h.md().last_producer_epoch) == (pid, -1)


class TestKip360:
    def test_expected_current_epoch_bumps(self):
        h = H()
        pid, epoch = h.ready()
        assert h.init(expected=(pid, epoch)).value == (E.NONE, pid, epoch + 1)
        assert h.md().last_producer_epoch == epoch

    def test_retry_of_a_bump_returns_the_same_epoch(self):
        h = H()
        pid, epoch = h.ready()
        h.init(expected=(pid, epoch))
        assert h.init(expected=(pid, epoch)).value == (E.NONE, pid, epoch + 1)

    def test_other_epoch_is_fenced(self):
        h = H()
        pid, _ = h.ready()
        h.init()
        h.init()  # epoch 2, last -1
        assert h.init(expected=(pid, 0)).value == (E.PRODUCER_FENCED, -1, -1)

    def test_other_producer_id_is_fenced(self):
        h = H()
        pid, epoch = h.ready()
        assert h.init(expected=(pid + 5, epoch)).value == (E.PRODUCER_FENCED, -1, -1)

    def test_new_metadata_accepts_any_expected_pair(self):
        # A producer recovering from UNKNOWN_PRODUCER_ID after its id expired.
        assert H().init(expected=(77, 3)).value == (E.NONE, 1000, 0)

    def test_rotation_with_expected_epoch_and_its_retry(self):
        h = H()
        pid, _ = h.ready()
        h.md().producer_epoch = 32766
        assert h.init(expected=(pid, 32766)).value == (E.NONE, 1001, 0)
        m = h.md()
        assert (m.producer_id, m.last_producer_id, m.producer_epoch, m.last_producer_epoch) == (1001, pid, 0, 32766)
        # The answer was lost: the retry names the old id with its exhausted epoch.
        assert h.init(expected=(pid, 32766)).value == (E.NONE, 1001, 0)
        # An old id with a non-exhausted epoch is fenced.
        assert h.init(expected=(pid, 5)).value == (E.PRODUCER_FENCED, -1, -1)

    def test_exhausted_without_expected_rotates(self):
        h = H()
        pid, _ = h.ready()
        h.md().producer_epoch = 32766
        assert h.init().value == (E.NONE, 1001, 0)
        assert (h.md().last_producer_id, h.md().last_producer_epoch) == (pid, -1)

    def test_exhausted_but_expected_epoch_differs_is_fenced(self):
        h = H()
        pid, _ = h.ready()
        h.md().producer_epoch = 32766
        h.md().last_producer_epoch = 32765
        # Kafka 2.8 only rotates when the expected epoch is the exhausted one; otherwise it
        # tries to bump, which throws (IllegalStateException → UNKNOWN_SERVER_ERROR), even for
        # a retry naming the last epoch.
        assert h.init(expected=(pid, 32765)).value == (E.UNKNOWN_SERVER_ERROR, -1, -1)
        assert h.init(expected=(pid, 100)).value == (E.UNKNOWN_SERVER_ERROR, -1, -1)
        assert h.md().pending_state is None and h.pids.calls == 1

    def test_edge_helpers(self):
        assert expected_producer_id_and_epoch(-1, -1) == (E.NONE, None)
        assert expected_producer_id_and_epoch(5, -1) == (E.INVALID_REQUEST, None)
        assert expected_producer_id_and_epoch(-1, 3) == (E.INVALID_REQUEST, None)
        assert expected_producer_id_and_epoch(5, 3) == (E.NONE, (5, 3))
        assert error_for_version(22, 3, E.PRODUCER_FENCED) == E.INVALID_PRODUCER_EPOCH
        assert error_for_version(22, 4, E.PRODUCER_FENCED) == E.PRODUCER_FENCED
        for api in (24, 25, 26):
            assert error_for_version(api, 1, E.PRODUCER_FENCED) == E.INVALID_PRODUCER_EPOCH
            assert error_for_version(api, 2, E.PRODUCER_FENCED) == E.PRODUCER_FENCED
        assert error_for_version(26, 0, E.CONCURRENT_TRANSACTIONS) == E.CONCURRENT_TRANSACTIONS


# ------------------------------------------------------------------ AddPartitions / AddOffsets


class TestAddPartitions:
    def test_add_starts_the_transaction(self):
        h = H()
        pid, epoch = h.ready()
        h.clock.now += 100
        box = h.add(pid, epoch, [TP, TP1])
        assert box.value == {TP: E.NONE, TP1: E.NONE}
        m = h.md()
        assert (m.state, m.topic_partitions, m.txn_start_timestamp) == (S.ONGOING, {TP, TP1}, T0 + 100)
        v = h.log.last_value()
        assert (v.transaction_status, v.partitions, v.transaction_start_timestamp_ms) == (
            S.ONGOING, (("foo", (0, 1)),), T0 + 100)

    def test_already_included_partitions_answer_without_a_write(self):
        h = H()
        pid, epoch = h.ongoing()
        writes = len(h.log.appends)
        assert h.add(pid, epoch, [TP1]).value == {TP1: E.NONE}
        assert len(h.log.appends) == writes
        assert add_error(h.add(pid, epoch, [TP1, TP2])) == E.NONE
        assert len(h.log.appends) == writes + 1
        assert h.md().topic_partitions == {TP, TP1, TP2}

    def test_answer_waits_for_the_log(self):
        h = H()
        pid, epoch = h.ready()
        h.log.auto = False
        box = h.add(pid, epoch)
        assert not box.done and h.md().state == S.EMPTY and h.md().topic_partitions == set()
        assert add_error(h.add(pid, epoch, [TP1])) == E.CONCURRENT_TRANSACTIONS
        h.log.release()
        assert add_error(box) == E.NONE

    def test_errors(self):
        h = H()
        pid, epoch = h.ready()
        assert add_error(h.add(pid, epoch, tid="")) == E.INVALID_REQUEST
        assert add_error(h.add(pid, epoch, tid=h.ids_on(h.p, avoid={TID})[0])) == E.INVALID_PRODUCER_ID_MAPPING
        assert add_error(h.add(pid + 1, epoch)) == E.INVALID_PRODUCER_ID_MAPPING
        assert add_error(h.add(pid, epoch + 1)) == E.PRODUCER_FENCED
        assert add_error(h.add(pid, epoch - 1)) == E.PRODUCER_FENCED
        assert add_error(h.add(pid, epoch, tid=h.ids_on(h.other_partition())[0])) == E.NOT_COORDINATOR

    @pytest.mark.parametrize("commit", [True, False])
    def test_while_ending_is_concurrent(self, commit):
        h = H()
        pid, epoch = h.ongoing()
        h.log.auto = False
        h.end(pid, epoch, commit)
        assert add_error(h.add(pid, epoch, [TP2])) == E.CONCURRENT_TRANSACTIONS  # Prepare* pending
        h.log.release()
        assert add_error(h.add(pid, epoch, [TP2])) == E.CONCURRENT_TRANSACTIONS  # markers out
        h.log.auto = True
        h.markers.complete()
        assert add_error(h.add(pid, epoch, [TP2])) == E.NONE  # a new transaction
        assert h.md().topic_partitions == {TP2}

    def test_add_offsets_to_txn(self):
        h = H()
        pid, epoch = h.ready()
        box = Box()
        h.c.handle_add_offsets_to_txn(TID, pid, epoch, 17, box)
        assert box.value == E.NONE
        assert h.md().topic_partitions == {("__consumer_offsets", 17)}
        box = Box()
        h.c.handle_add_offsets_to_txn(TID, pid, epoch + 1, 17, box)
        assert box.value == E.PRODUCER_FENCED


# ------------------------------------------------------------------ EndTxn and markers


class TestEndTransaction:
    @pytest.mark.parametrize("commit", [True, False])
    def test_end_then_markers_then_complete(self, commit):
        h = H()
        pid, epoch = h.ongoing()
        h.log.auto = False
        h.clock.now += 50
        box = h.end(pid, epoch, commit)
        assert not box.done and h.markers.sent == []
        prepare = S.PREPARE_COMMIT if commit else S.PREPARE_ABORT
        complete = S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT
        assert h.md().pending_state == prepare and h.md().state == S.ONGOING
        h.log.release()
        assert box.value == E.NONE
        v = h.log.last_value()
        assert (v.transaction_status, v.topic_partitions(), v.transaction_last_update_timestamp_ms) == (
            prepare, {TP, TP1}, T0 + 50)
        m = h.md()
        assert (m.state, m.pending_state, m.topic_partitions) == (prepare, complete, {TP, TP1})
        [sent] = h.markers.sent
        assert sent == {**sent, "coordinator_epoch": 1, "transactional_id": TID, "producer_id": pid,
                        "producer_epoch": epoch, "partitions": {TP, TP1},
                        "result": TransactionResult.COMMIT if commit else TransactionResult.ABORT}
        assert h.c.should_send_markers(TID, 1)
        appends = len(h.log.appends)
        h.markers.complete()
        assert len(h.log.appends) == appends + 1
        assert h.md().state == prepare  # Complete* not durable yet
        h.log.release()
        v = h.log.last_value()
        assert (v.transaction_status, v.partitions, v.transaction_start_timestamp_ms) == (complete, (), T0)
        m = h.md()
        assert (m.state, m.pending_state, m.topic_partitions) == (complete, None, set())
        assert not h.c.should_send_markers(TID, 1)

    def test_retries_of_end(self):
        h = H()
        pid, epoch = h.ongoing()
        assert h.end(pid, epoch, True).value == E.NONE
        # Markers still out (Complete* pending): any end is concurrent.
        assert h.end(pid, epoch, True).value == E.CONCURRENT_TRANSACTIONS
        assert h.end(pid, epoch, False).value == E.CONCURRENT_TRANSACTIONS
        h.markers.complete()
        assert h.end(pid, epoch, True).value == E.NONE
        assert h.end(pid, epoch, False).value == E.INVALID_TXN_STATE

    def test_retries_after_abort(self):
        h = H()
        pid, epoch = h.ongoing()
        assert h.end(pid, epoch, False).value == E.NONE
        h.markers.complete()
        assert h.end(pid, epoch, False).value == E.NONE
        assert h.end(pid, epoch, True).value == E.INVALID_TXN_STATE

    def test_prepare_state_without_pending_answers_by_result(self):
        h = H(load=False)
        h.own(h.p, records=[(encode_key(TID), value(S.PREPARE_COMMIT, partitions=(("foo", (0,)),)))])
        h.md().pending_state = None
        assert h.end(7, 2, True).value == E.CONCURRENT_TRANSACTIONS
        assert h.end(7, 2, False).value == E.INVALID_TXN_STATE

    def test_errors(self):
        h = H()
        pid, epoch = h.ready()
        assert h.end(pid, epoch).value == E.INVALID_TXN_STATE  # Empty: nothing to end
        assert h.end(pid, epoch, tid="").value == E.INVALID_REQUEST
        assert h.end(pid + 1, epoch).value == E.INVALID_PRODUCER_ID_MAPPING
        assert h.end(pid, epoch + 1).value == E.PRODUCER_FENCED  # clients must match exactly
        assert h.end(pid, epoch, tid=h.ids_on(h.p, avoid={TID})[0]).value == E.INVALID_PRODUCER_ID_MAPPING
        assert h.end(pid, epoch, tid=h.ids_on(h.other_partition())[0]).value == E.NOT_COORDINATOR

    def test_empty_transaction_completes_without_markers(self):
        h = H()
        pid, epoch = h.ready()
        assert h.add(pid, epoch, ()).value == {}  # no partition to answer for, as Kafka
        assert (h.md().state, h.md().topic_partitions) == (S.ONGOING, set())
        assert h.end(pid, epoch).value == E.NONE
        assert h.markers.sent == []
        assert h.md().state == S.COMPLETE_COMMIT

    def test_complete_append_retries_when_unavailable(self):
        h = H()
        pid, epoch = h.ongoing()
        h.end(pid, epoch)
        h.log.auto = False
        h.markers.complete()
        h.log.release(E.NOT_ENOUGH_REPLICAS)
        assert h.md().pending_state == S.COMPLETE_COMMIT  # kept for the retry
        assert h.init().value == (E.CONCURRENT_TRANSACTIONS, -1, -1)
        appends = len(h.log.appends)
        h.timers.advance(h.config.log_append_retry_backoff_ms)
        assert len(h.log.appends) == appends + 1
        h.log.release()
        assert (h.md().state, h.md().pending_state) == (S.COMPLETE_COMMIT, None)

    def test_complete_append_dropped_when_not_coordinator(self):
        h = H()
        pid, epoch = h.ongoing()
        h.end(pid, epoch)
        h.log.auto = False
        h.markers.complete()
        h.log.release(E.NOT_LEADER_OR_FOLLOWER)
        assert (h.md().state, h.md().pending_state) == (S.PREPARE_COMMIT, None)
        h.timers.advance(10 * h.config.log_append_retry_backoff_ms)
        assert h.log.held == []

    def test_failed_prepare_append_reverts(self):
        h = H()
        pid, epoch = h.ongoing()
        h.log.auto = False
        box = h.end(pid, epoch)
        h.log.release(E.REQUEST_TIMED_OUT)
        assert box.value == E.COORDINATOR_NOT_AVAILABLE
        m = h.md()
        assert (m.state, m.pending_state, m.producer_epoch, m.topic_partitions) == (
            S.ONGOING, None, epoch, {TP, TP1})
        assert h.markers.sent == []
        h.log.auto = True
        assert h.end(pid, epoch).value == E.NONE

    def test_resigned_while_prepare_in_flight(self):
        h = H()
        pid, epoch = h.ongoing()
        h.log.auto = False
        box = h.end(pid, epoch)
        h.c.on_resigned(h.p, 2)
        h.log.release()
        assert box.value == E.NOT_COORDINATOR
        assert h.markers.sent == []

    def test_reloaded_at_new_epoch_while_prepare_in_flight(self):
        h = H()
        pid, epoch = h.ongoing()
        durable = list(h.log.durable[h.p])
        h.log.auto = False
        box = h.end(pid, epoch)
        h.c.on_resigned(h.p, 2)
        h.own(h.p, epoch=3, records=durable)
        h.log.release()
        assert box.value == E.NOT_COORDINATOR
        m = h.md()  # the reloaded metadata is untouched by the old epoch's append
        assert (m.state, m.pending_state) == (S.ONGOING, None)
        assert h.markers.sent == []

    def test_failed_append_after_epoch_change_leaves_new_metadata_alone(self):
        h = H()
        pid, epoch = h.ready()
        durable = list(h.log.durable[h.p])
        h.log.auto = False
        box = h.add(pid, epoch)
        h.c.on_resigned(h.p, 2)
        h.own(h.p, epoch=3, records=durable)
        h.add(pid, epoch, [TP2])  # in flight at the new epoch
        assert h.md().pending_state == S.ONGOING
        h.log.release(E.NOT_ENOUGH_REPLICAS, index=0)
        assert add_error(box) == E.COORDINATOR_NOT_AVAILABLE
        assert h.md().pending_state == S.ONGOING  # still the new epoch's

    def test_markers_completed_after_resign_are_ignored(self):
        h = H()
        pid, epoch = h.ongoing()
        h.end(pid, epoch)
        durable = list(h.log.durable[h.p])
        h.c.on_resigned(h.p, 2)
        assert not h.c.should_send_markers(TID, 1)
        appends = len(h.log.appends)
        h.markers.complete()
        assert len(h.log.appends) == appends
        # Re-elected: the load re-sends the markers at the new epoch.
        h.own(h.p, epoch=3, records=durable)
        assert h.markers.sent[-1]["coordinator_epoch"] == 3
        h.markers.complete(0)  # the old delivery finishing late changes nothing
        assert len(h.log.appends) == appends
        assert h.c.should_send_markers(TID, 3) and not h.c.should_send_markers(TID, 1)
        h.markers.complete()
        assert h.md().state == S.COMPLETE_COMMIT


@pytest.mark.parametrize(
    "log_error, answer",
    [
        (E.UNKNOWN_TOPIC_OR_PARTITION, E.COORDINATOR_NOT_AVAILABLE),
        (E.NOT_ENOUGH_REPLICAS, E.COORDINATOR_NOT_AVAILABLE),
        (E.NOT_ENOUGH_REPLICAS_AFTER_APPEND, E.COORDINATOR_NOT_AVAILABLE),
        (E.REQUEST_TIMED_OUT, E.COORDINATOR_NOT_AVAILABLE),
        (E.NOT_LEADER_OR_FOLLOWER, E.NOT_COORDINATOR),
        (E.KAFKA_STORAGE_ERROR, E.NOT_COORDINATOR),
        (E.MESSAGE_TOO_LARGE, E.UNKNOWN_SERVER_ERROR),
        (E.RECORD_LIST_TOO_LARGE, E.UNKNOWN_SERVER_ERROR),
        (E.INVALID_REQUIRED_ACKS, E.INVALID_REQUIRED_ACKS),
    ],
)
def test_append_error_mapping_reverts_pending_state(log_error, answer):
    h = H()
    pid, epoch = h.ready()
    h.log.auto = False
    box = h.add(pid, epoch)
    h.log.release(log_error)
    assert add_error(box) == answer
    m = h.md()
    assert (m.state, m.pending_state, m.topic_partitions) == (S.EMPTY, None, set())


# ------------------------------------------------------------------ timeouts and expiration


class TestTimedOutTransactions:
    def test_aborts_after_timeout(self):
        h = H()
        pid, epoch = h.ongoing()
        h.clock.now += TIMEOUT
        assert h.c.abort_timed_out_transactions() == 0  # start + timeout < now is required
        h.clock.now += 1
        assert h.c.abort_timed_out_transactions() == 1
        m = h.md()
        assert (m.state, m.producer_epoch, m.pending_state) == (S.PREPARE_ABORT, epoch + 1, S.COMPLETE_ABORT)
        assert h.markers.sent[-1]["result"] == TransactionResult.ABORT
        assert h.end(pid, epoch).value == E.PRODUCER_FENCED
        assert h.c.abort_timed_out_transactions() == 0  # already aborting
        h.markers.complete()
        assert h.md().state == S.COMPLETE_ABORT
        assert h.init().value == (E.NONE, pid, epoch + 2)

    def test_periodic(self):
        h = H()
        h.ongoing()
        h.timers.advance(TIMEOUT)
        assert h.md().state == S.ONGOING
        h.timers.advance(h.config.abort_timed_out_transactions_interval_ms)
        assert h.md().state == S.PREPARE_ABORT

    def test_skips_pending_and_not_ongoing(self):
        h = H()
        pid, epoch = h.ongoing()
        other = h.ids_on(h.p, avoid={TID})[0]
        h.ready(other)
        h.log.auto = False
        h.add(pid, epoch, [TP2])  # pending
        h.clock.now += 10 * TIMEOUT
        assert h.c.abort_timed_out_transactions() == 0

    def test_fence_write_failure_is_only_logged(self):
        h = H()
        pid, epoch = h.ongoing()
        h.clock.now += TIMEOUT + 1
        h.log.auto = False
        h.c.abort_timed_out_transactions()
        h.log.release(E.NOT_ENOUGH_REPLICAS)
        m = h.md()
        assert (m.state, m.pending_state, m.producer_epoch, m.has_failed_epoch_fence) == (
            S.ONGOING, None, epoch + 1, True)
        h.log.auto = True
        h.c.abort_timed_out_transactions()
        assert (h.md().state, h.md().producer_epoch) == (S.PREPARE_ABORT, epoch + 1)


class TestExpiration:
    def test_idle_ids_get_a_tombstone_and_leave(self):
        h = H()
        h.ready()
        h.clock.now += EXPIRATION - 1
        assert h.c.remove_expired_transactional_ids() == 0
        h.clock.now += 1
        h.log.auto = False
        assert h.c.remove_expired_transactional_ids() == 1
        assert h.log.appends[-1] == (h.p, [(encode_key(TID), None)])
        assert h.md().pending_state == S.DEAD
        assert h.init().value == (E.CONCURRENT_TRANSACTIONS, -1, -1)
        h.log.release()
        assert h.md() is None
        assert h.c.describe_transactions([TID])[0].error == E.TRANSACTIONAL_ID_NOT_FOUND
        h.log.auto = True
        assert h.init().value == (E.NONE, 1001, 0)

    @pytest.mark.parametrize("commit", [True, False])
    def test_completed_transactions_expire(self, commit):
        h = H()
        pid, epoch = h.ongoing()
        h.end(pid, epoch, commit)
        h.markers.complete()
        h.clock.now += EXPIRATION
        assert h.c.remove_expired_transactional_ids() == 1
        assert h.md() is None

    def test_open_transactions_do_not_expire(self):
        h = H()
        pid, epoch = h.ongoing()
        h.clock.now += 10 * EXPIRATION
        h.log.auto = False
        h.end(pid, epoch)
        assert h.c.remove_expired_transactional_ids() == 0  # Ongoing, pending PrepareCommit
        h.log.release()
        assert h.c.remove_expired_transactional_ids() == 0  # PrepareCommit

    def test_failed_tombstone_keeps_the_id(self):
        h = H()
        h.ready()
        h.clock.now += EXPIRATION
        h.log.auto = False
        h.c.remove_expired_transactional_ids()
        h.log.release(E.NOT_ENOUGH_REPLICAS)
        m = h.md()
        assert (m.state, m.pending_state) == (S.EMPTY, None)
        h.log.auto = True
        assert h.init().value == (E.NONE, 1000, 1)

    def test_tombstone_after_resign_changes_nothing(self):
        h = H()
        h.ready()
        durable = list(h.log.durable[h.p])
        h.clock.now += EXPIRATION
        h.log.auto = False
        h.c.remove_expired_transactional_ids()
        h.c.on_resigned(h.p, 2)
        h.own(h.p, epoch=3, records=durable)
        h.log.release()
        assert h.md() is not None and h.md().pending_state is None

    def test_batches_split_by_size(self):
        h = H(max_tombstone_batch_bytes=200)
        ids = h.ids_on(h.p, 6)
        for tid in ids:
            h.ready(tid)
        h.clock.now += EXPIRATION
        before = len(h.log.appends)
        assert h.c.remove_expired_transactional_ids() == 6
        batches = h.log.appends[before:]
        assert len(batches) > 1 and sum(len(r) for _, r in batches) == 6
        assert all(h.md(tid) is None for tid in ids)

    def test_periodic(self):
        h = H(remove_expired_transactional_ids_interval_ms=1000)
        h.ready()
        h.timers.advance(EXPIRATION + 1000)
        assert h.md() is None


# ------------------------------------------------------------------ leadership and loading


class TestLoading:
    def records(self, h):
        a, b, c, d, e = h.ids_on(h.p, 5)
        recs = [
            (encode_key(a), value(S.PREPARE_COMMIT, pid=10, epoch=1, partitions=(("foo", (0, 1)),))),
            (encode_key(b), value(S.ONGOING, pid=11, partitions=(("bar", (0,)),))),
            (encode_key(c), value(S.EMPTY, pid=12)),
            (encode_key(c), None),
            (encode_key(d), value(S.EMPTY, pid=13, epoch=0)),
            (encode_key(d), value(S.COMPLETE_ABORT, pid=13, epoch=4, partitions=())),
            (encode_key(e), value(S.PREPARE_ABORT, pid=14, epoch=9, partitions=(("bar", (3,)),))),
        ]
        return (a, b, c, d, e), recs

    def test_replay_and_resend_markers(self):
        h = H(load=False)
        (a, b, c, d, e), recs = self.records(h)
        assert h.c.on_elected(h.p, 4)
        assert h.init(a).value == (E.COORDINATOR_LOAD_IN_PROGRESS, -1, -1)
        assert h.c.loading_partitions() == {h.p}
        assert h.c.complete_load(h.p, 4, recs)
        assert h.c.owned_partitions() == {h.p}
        assert h.md(c) is None
        assert (h.md(d).state, h.md(d).producer_epoch) == (S.COMPLETE_ABORT, 4)
        assert (h.md(b).state, h.md(b).topic_partitions) == (S.ONGOING, {("bar", 0)})
        assert h.md(a).pending_state == S.COMPLETE_COMMIT
        sent = {s["transactional_id"]: s for s in h.markers.sent}
        assert set(sent) == {a, e}
        assert (sent[a]["result"], sent[a]["partitions"], sent[a]["producer_id"], sent[a]["producer_epoch"],
                sent[a]["coordinator_epoch"]) == (TransactionResult.COMMIT, {("foo", 0), ("foo", 1)}, 10, 1, 4)
        assert (sent[e]["result"], sent[e]["partitions"]) == (TransactionResult.ABORT, {("bar", 3)})
        assert h.init(a).value == (E.CONCURRENT_TRANSACTIONS, -1, -1)
        for s in h.markers.sent:
            s["on_complete"]()
        assert h.md(a).state == S.COMPLETE_COMMIT and h.md(e).state == S.COMPLETE_ABORT
        assert [v.transaction_status for _, v in h.log.decoded()] == [S.COMPLETE_COMMIT, S.COMPLETE_ABORT]
        assert h.init(a).value == (E.NONE, 10, 2)

    def test_stale_and_repeated_elections(self):
        h = H(load=False)
        assert h.c.on_elected(h.p, 5)
        assert not h.c.on_elected(h.p, 5)  # already loading at this epoch
        assert not h.c.on_elected(h.p, 4)  # stale
        assert not h.c.complete_load(h.p, 4, [])
        assert h.c.complete_load(h.p, 5, [])
        assert not h.c.on_elected(h.p, 5)  # already loaded at this epoch
        assert h.c.on_elected(h.p, 6)  # a new term reloads
        assert h.c.complete_load(h.p, 6, [])

    def test_stale_resignation_is_ignored(self):
        h = H(load=False)
        h.own(h.p, epoch=5)
        h.c.on_resigned(h.p, 4)
        assert h.c.owned_partitions() == {h.p}
        h.c.on_resigned(h.p, 6)
        assert h.c.owned_partitions() == set()
        assert h.init().value == (E.NOT_COORDINATOR, -1, -1)
        assert not h.c.on_elected(h.p, 5)

    def test_resign_without_epoch(self):
        h = H()
        h.c.on_resigned(h.p)
        assert h.init().value == (E.NOT_COORDINATOR, -1, -1)

    def test_resign_while_loading_makes_the_load_stale(self):
        h = H(load=False)
        assert h.c.on_elected(h.p, 5)
        h.c.on_resigned(h.p, 6)
        assert not h.c.complete_load(h.p, 5, [])
        assert h.init().value == (E.NOT_COORDINATOR, -1, -1)

    def test_fail_load(self):
        h = H(load=False)
        h.own(h.p, epoch=1)
        h.ready()
        assert h.c.on_elected(h.p, 2)
        h.c.fail_load(h.p, 1)  # stale: ignored
        assert h.c.loading_partitions() == {h.p}
        h.c.fail_load(h.p, 2)
        assert h.init().value == (E.NOT_COORDINATOR, -1, -1)  # the old cache is not served
        assert h.c.on_elected(h.p, 3)

    def test_undecodable_record_ends_the_replay(self):
        h = H(load=False)
        a, b = h.ids_on(h.p, 2)
        recs = [
            (encode_key(a), value(S.EMPTY, pid=1)),
            (encode_key(b), b"\x00\x07garbage"),
            (encode_key(b), value(S.EMPTY, pid=2)),
        ]
        h.own(h.p, records=recs)
        assert h.md(a).producer_id == 1
        assert h.md(b) is None

    def test_reload_replaces_the_cache(self):
        h = H()
        pid, epoch = h.ongoing()
        durable = list(h.log.durable[h.p])
        assert h.c.on_elected(h.p, 2)
        assert h.add(pid, epoch, [TP2]).value == {TP2: E.COORDINATOR_LOAD_IN_PROGRESS}
        assert h.c.complete_load(h.p, 2, durable)
        m = h.md()
        assert (m.state, m.producer_id, m.producer_epoch, m.topic_partitions) == (S.ONGOING, pid, epoch, {TP, TP1})
        # Loaded metadata has no last epoch (not in the log).
        assert m.last_producer_epoch == -1

    def test_round_trip_through_the_log(self):
        h = H()
        pid, epoch = h.ongoing()
        h.clock.now += 7
        h.add(pid, epoch, [TP2])
        before = h.md()
        fields = (before.producer_id, before.producer_epoch, before.txn_timeout_ms, before.state,
                  set(before.topic_partitions), before.txn_start_timestamp, before.txn_last_update_timestamp)
        durable = list(h.log.durable[h.p])
        h.c.on_resigned(h.p, 2)
        h.own(h.p, epoch=3, records=durable)
        m = h.md()
        assert m is not before
        assert (m.producer_id, m.producer_epoch, m.txn_timeout_ms, m.state, m.topic_partitions,
                m.txn_start_timestamp, m.txn_last_update_timestamp) == fields

    def test_shutdown(self):
        h = H()
        h.c.shutdown()
        assert h.timers.live() == 0
        assert h.init().value == (E.NOT_COORDINATOR, -1, -1)


# ------------------------------------------------------------------ KIP-664 read side


class TestListAndDescribe:
    def test_list(self):
        h = H()
        a = h.ids_on(h.p, 1, avoid={TID})[0]
        pid, _ = h.ongoing()
        apid, _ = h.ready(a)
        result = h.c.list_transactions()
        assert result.error == E.NONE and result.unknown_state_filters == []
        assert sorted(result.transaction_states, key=lambda t: t.transactional_id) == sorted(
            [TransactionListing(TID, pid, "Ongoing"), TransactionListing(a, apid, "Empty")],
            key=lambda t: t.transactional_id,
        )
        assert h.c.list_transactions(["Ongoing", "Bogus"]) == ListTransactionsResult(
            E.NONE, ["Bogus"], [TransactionListing(TID, pid, "Ongoing")])
        assert h.c.list_transactions(producer_id_filters=[apid]).transaction_states == [
            TransactionListing(a, apid, "Empty")]
        assert h.c.list_transactions(["Ongoing"], [apid]).transaction_states == []

    def test_list_while_loading(self):
        h = H()
        h.c.on_elected(h.other_partition(), 1)
        assert h.c.list_transactions().error == E.COORDINATOR_LOAD_IN_PROGRESS

    def test_describe(self):
        h = H()
        pid, epoch = h.ongoing(partitions=(TP1, TP2, TP))
        [d, missing, empty, elsewhere] = h.c.describe_transactions(
            [TID, h.ids_on(h.p, avoid={TID})[0], "", h.ids_on(h.other_partition())[0]])
        assert (d.error, d.state, d.producer_id, d.producer_epoch, d.transaction_timeout_ms,
                d.transaction_start_time_ms, d.topics) == (
            E.NONE, "Ongoing", pid, epoch, TIMEOUT, T0, {"bar": [0], "foo": [0, 1]})
        assert missing.error == E.TRANSACTIONAL_ID_NOT_FOUND
        assert empty.error == E.INVALID_REQUEST
        assert elsewhere.error == E.NOT_COORDINATOR

    def test_inactive(self):
        h = H()
        h.c.shutdown()
        assert h.c.list_transactions().error == E.COORDINATOR_NOT_AVAILABLE
        assert h.c.describe_transactions([TID])[0].error == E.COORDINATOR_NOT_AVAILABLE
