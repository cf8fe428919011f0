"""DescribeTransactions (65) and ListTransactions (66): requests through the dispatcher to a real coordinator and back.

The coordinator runs on the transaction unit tests' fakes (clock, state log, producer ids);
the broker around it is a namespace with nothing but ``transaction_service``.
"""

from __future__ import annotations

from types import SimpleNamespace

from mafka.broker.dispatcher import Dispatcher, collect_handlers
from mafka.errors import ErrorCode as E
from mafka.wire.codec import decode_request, decode_response, encode_request
from tests.unit.transaction.fakes import T0
from tests.unit.transaction.test_coordinator import TID, TIMEOUT, TP, TP1, TP2, H

DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS = 65, 66


def _ask(h: H, api_key: int, body: dict):
    broker = SimpleNamespace(transaction_service=SimpleNamespace(coordinator=h.c, checked_coordinator=lambda: h.c))
    dispatcher = Dispatcher(collect_handlers(broker))
    request = decode_request(encode_request(api_key, 0, 3, "admin", body)[4:])
    result = dispatcher.dispatch(request, SimpleNamespace(listener="PLAINTEXT"))
    _, response = decode_response(api_key, 0, b"".join(result)[4:])
    return response


def _describe(h: H, *ids: str):
    return _ask(h, DESCRIBE_TRANSACTIONS, {"transactional_ids": list(ids)}).transaction_states


def _list(h: H, states=(), producer_ids=()):
    return _ask(h, LIST_TRANSACTIONS, {"state_filters": list(states), "producer_id_filters": list(producer_ids)})


# ------------------------------------------------------------------ DescribeTransactions


def test_describe_an_ongoing_transaction():
    h = H()
    pid, epoch = h.ongoing(partitions=(TP, TP1, TP2))
    [d] = _describe(h, TID)
    assert (d.error_code, d.transactional_id, d.transaction_state, d.transaction_timeout_ms,
            d.transaction_start_time_ms, d.producer_id, d.producer_epoch) == (
        E.NONE, TID, "Ongoing", TIMEOUT, T0, pid, epoch)
    assert [(t.topic, t.partitions) for t in d.topics] == [("bar", [0]), ("foo", [0, 1])]


def test_describe_before_and_after_a_transaction():
    h = H()
    pid, epoch = h.ready()
    [d] = _describe(h, TID)
    assert (d.transaction_state, d.transaction_start_time_ms, d.topics) == ("Empty", -1, [])
    h.add(pid, epoch)
    h.end(pid, epoch, commit=False)
    [d] = _describe(h, TID)
    assert (d.transaction_state, [(t.topic, t.partitions) for t in d.topics]) == ("PrepareAbort", [("foo", [0])])
    h.markers.complete()
    [d] = _describe(h, TID)
    assert (d.transaction_state, d.topics) == ("CompleteAbort", [])


def test_describe_answers_each_id_in_order_with_its_own_error():
    h = H()
    h.ongoing()
    loading = next(p for p in range(5) if p != h.p)
    h.c.on_elected(loading, 1)
    elsewhere = next(p for p in range(5) if p not in (h.p, loading))
    missing = h.ids_on(h.p, avoid={TID})[0]
    ids = [missing, h.ids_on(elsewhere)[0], h.ids_on(loading)[0], "", TID, TID]
    states = _describe(h, *ids)
    assert [(s.transactional_id, s.error_code) for s in states] == [
        (ids[0], E.TRANSACTIONAL_ID_NOT_FOUND), (ids[1], E.NOT_COORDINATOR),
        (ids[2], E.COORDINATOR_LOAD_IN_PROGRESS), ("", E.INVALID_REQUEST), (TID, E.NONE), (TID, E.NONE)]
    failed = states[0]
    assert (failed.transaction_state, failed.producer_id, failed.producer_epoch, failed.topics) == ("", 0, 0, [])


def test_describe_nothing_and_an_inactive_coordinator():
    h = H()
    assert _describe(h) == []
    h.c.shutdown()
    assert [s.error_code for s in _describe(h, TID)] == [E.COORDINATOR_NOT_AVAILABLE]


# ------------------------------------------------------------------ ListTransactions


def test_list_with_and_without_filters():
    h = H()
    other = h.ids_on(h.p, avoid={TID})[0]
    pid, _ = h.ongoing()
    other_pid, _ = h.ready(other)
    r = _list(h)
    assert (r.error_code, r.unknown_state_filters) == (E.NONE, [])
    assert sorted((t.transactional_id, t.producer_id, t.transaction_state) for t in r.transaction_states) == sorted(
        [(TID, pid, "Ongoing"), (other, other_pid, "Empty")])
    r = _list(h, states=["Ongoing", "Bogus", "Bogus", "Ongoing"])
    assert r.unknown_state_filters == ["Bogus"], "filters are a set, as Kafka's"
    assert [t.transactional_id for t in r.transaction_states] == [TID]
    assert [t.transactional_id for t in _list(h, producer_ids=[other_pid, other_pid]).transaction_states] == [other]
    assert _list(h, states=["Ongoing"], producer_ids=[other_pid]).transaction_states == []
    assert _list(h, states=["Bogus"]).transaction_states == [], "only unknown states: nothing matches"


def test_list_only_this_coordinators_partitions():
    h = H()
    h.ongoing()
    elsewhere = H()  # a second coordinator, owning nothing
    elsewhere.c.on_resigned(elsewhere.p)
    assert _list(elsewhere).transaction_states == []
    assert len(_list(h).transaction_states) == 1


def test_list_while_loading_and_when_inactive():
    h = H()
    h.c.on_elected(h.other_partition(), 1)
    r = _list(h, states=["Bogus"])
    assert (r.error_code, r.unknown_state_filters, r.transaction_states) == (E.COORDINATOR_LOAD_IN_PROGRESS, [], [])
    h.c.shutdown()
    assert _list(h).error_code == E.COORDINATOR_NOT_AVAILABLE
