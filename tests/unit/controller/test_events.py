"""mafka.controller.events: one event at a time, in order; watch events coalesced while they wait."""

from __future__ import annotations

from typing import Any

from twisted.internet.defer import Deferred
from twisted.internet.task import Clock
from twisted.python.failure import Failure

from mafka.controller.events import ControllerEventQueue, EventDropped


def outcomes(d: Deferred[Any]) -> list[Any]:
    box: list[Any] = []
    d.addBoth(box.append)
    return box


def test_a_keyed_event_is_queued_once_while_it_waits() -> None:
    clock = Clock()
    queue = ControllerEventQueue(clock)
    ran: list[str] = []
    gate: Deferred[None] = Deferred()

    def blocking() -> Deferred[None]:
        ran.append("blocking")
        return gate

    def handler(name: str) -> Any:
        return lambda: ran.append(name) or name

    queue.put("Blocking", blocking)
    clock.advance(0)
    first = outcomes(queue.put("TopicChange", handler("topics-1"), key="TopicChange"))
    second = outcomes(queue.put("TopicChange", handler("topics-2"), key="TopicChange"))
    other = outcomes(queue.put("BrokerChange", handler("brokers"), key="BrokerChange"))
    assert queue.pending == ["TopicChange", "BrokerChange"]
    gate.callback(None)
    clock.advance(0)
    assert ran == ["blocking", "topics-1", "brokers"]
    assert first == second == ["topics-1"] and other == ["brokers"]
    # once it runs, a new change needs a new event
    gate2: Deferred[None] = Deferred()
    queue.put("TopicChange", lambda: ran.append("topics-3") or gate2, key="TopicChange")
    clock.advance(0)
    queue.put("TopicChange", handler("topics-4"), key="TopicChange")
    assert queue.pending == ["TopicChange"]
    gate2.callback(None)
    clock.advance(0)
    assert ran[-2:] == ["topics-3", "topics-4"]
    assert queue.idle


def test_dropping_waiting_events_fails_the_coalesced_puts_too() -> None:
    clock = Clock()
    queue = ControllerEventQueue(clock)
    gate: Deferred[None] = Deferred()
    queue.put("Blocking", lambda: gate)
    clock.advance(0)
    first = outcomes(queue.put("TopicChange", lambda: None, key="k"))
    second = outcomes(queue.put("TopicChange", lambda: None, key="k"))
    queue.clear_and_put("Expire", lambda: None)
    for box in (first, second):
        assert isinstance(box[0], Failure) and box[0].check(EventDropped)
    # the key is free again
    third = outcomes(queue.put("TopicChange", lambda: "again", key="k"))
    gate.callback(None)
    clock.advance(0)
    assert third == ["again"]
