"""A holding dispatcher: nothing answered before admit/open; parked requests go in arrival order."""

from __future__ import annotations

from types import SimpleNamespace

from mafka.broker.dispatcher import Dispatcher


def _request(api_key: int, n: int):
    return SimpleNamespace(header=SimpleNamespace(api_key=api_key, n=n), body=n, spec=SimpleNamespace(name=str(api_key)))


def _dispatcher(calls: list, hold: bool = True) -> Dispatcher:
    handlers = {k: (lambda request, connection, k=k: calls.append((k, request.body)) or {"n": request.body}) for k in (3, 6, 10)}
    d = Dispatcher(handlers, hold=hold)
    d._encode = staticmethod(lambda body, request: body)  # no wire encoding needed here
    return d


def _answers(results: list) -> list:
    out = []
    for r in results:
        r.addCallback(out.append)
    return out


def test_nothing_is_answered_before_open_and_parked_requests_go_in_order():
    calls: list = []
    d = _dispatcher(calls)
    results = [d.dispatch(_request(k, n), None) for n, k in enumerate([3, 10, 3])]
    answered = _answers(results)
    assert calls == [] and answered == [] and not d.is_open
    d.open()
    assert calls == [(3, 0), (10, 1), (3, 2)]
    assert answered == [{"n": 0}, {"n": 1}, {"n": 2}]
    assert d.dispatch(_request(3, 9), None) == {"n": 9}  # open: answered at once


def test_admitted_keys_pass_while_clients_wait():
    calls: list = []
    d = _dispatcher(calls)
    early_client = d.dispatch(_request(3, 0), None)
    early_controller = d.dispatch(_request(6, 1), None)
    assert calls == []
    d.admit({6})
    assert calls == [(6, 1)]  # the parked controller request is released, the client's is not
    assert d.dispatch(_request(6, 2), None) == {"n": 2}
    late_client = d.dispatch(_request(10, 3), None)
    assert calls == [(6, 1), (6, 2)]
    answered = _answers([early_client, late_client])
    d.open()
    assert calls == [(6, 1), (6, 2), (3, 0), (10, 3)]
    assert answered == [{"n": 0}, {"n": 3}]
    assert early_controller.called


def test_a_dispatcher_without_hold_answers_at_once():
    calls: list = []
    d = _dispatcher(calls, hold=False)
    assert d.is_open and d.dispatch(_request(10, 0), None) == {"n": 0}
