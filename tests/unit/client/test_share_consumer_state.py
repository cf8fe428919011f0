"""The share consumer's plain parts: heartbeat state (injected time), acknowledgement bookkeeping and batches."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from mafka.client.share_acknowledgements import (
    GAP,
    AcknowledgementBook,
    AcknowledgeType,
    IllegalStateError,
    acknowledgement_batches,
)
from mafka.client.share_membership import LEAVE_EPOCH, ShareMembership, ShareMemberState
from mafka.errors import ErrorCode

T1 = bytes(range(16))
T2 = bytes(range(1, 17))


def answer(code: int = 0, epoch: int = 1, interval: int = 5000, assignment: dict[bytes, list[int]] | None = None,
           member_id: str | None = None) -> Any:
    assigned = None
    if assignment is not None:
        assigned = SimpleNamespace(topic_partitions=[SimpleNamespace(topic_id=t, partitions=ps)
                                                     for t, ps in assignment.items()])
    return SimpleNamespace(error_code=code, error_message=None, member_id=member_id, member_epoch=epoch,
                           heartbeat_interval_ms=interval, assignment=assigned)


# -- membership ------------------------------------------------------------------------------


def test_join_sends_the_subscription_and_rack_then_heartbeats_on_the_interval() -> None:
    m = ShareMembership("g", rack_id="r1", member_id="m" * 22)
    assert m.time_to_next_heartbeat(0.0) is None  # not subscribed: nothing to send
    m.subscribe(["b", "a", "a"])
    assert m.time_to_next_heartbeat(0.0) == 0.0
    body = m.heartbeat_request(0.0)
    assert body == {"group_id": "g", "member_id": "m" * 22, "member_epoch": 0, "rack_id": "r1",
                    "subscribed_topic_names": ["a", "b"]}
    assert m.time_to_next_heartbeat(0.0) is None  # one in flight
    out = m.on_heartbeat_response(answer(epoch=3, assignment={T1: [0, 1]}), 0.1)
    assert out.assignment == {T1: frozenset({0, 1})}
    assert m.state is ShareMemberState.STABLE and m.member_epoch == 3
    assert m.time_to_next_heartbeat(0.1) == pytest.approx(5.0)
    body = m.heartbeat_request(5.1)
    assert body["subscribed_topic_names"] is None and body["rack_id"] is None and body["member_epoch"] == 3
    out = m.on_heartbeat_response(answer(epoch=3, assignment={T1: [0, 1]}), 5.2)
    assert out.assignment is None  # unchanged: nothing to do
    out = m.on_heartbeat_response(answer(epoch=4, assignment=None), 5.3)
    assert out.assignment is None and m.assignment == {T1: frozenset({0, 1})}


def test_a_changed_subscription_goes_at_once() -> None:
    m = ShareMembership("g")
    m.subscribe(["a"])
    m.heartbeat_request(0.0)
    m.on_heartbeat_response(answer(), 0.0)
    m.subscribe(["a", "b"])
    assert m.time_to_next_heartbeat(0.1) == 0.0
    assert m.heartbeat_request(0.1)["subscribed_topic_names"] == ["a", "b"]


def test_fencing_drops_the_assignment_and_rejoins_with_the_same_member_id() -> None:
    m = ShareMembership("g", member_id="x" * 22)
    m.subscribe(["a"])
    m.heartbeat_request(0.0)
    m.on_heartbeat_response(answer(epoch=5, assignment={T1: [0]}), 0.0)
    m.heartbeat_request(6.0)
    out = m.on_heartbeat_response(answer(code=ErrorCode.FENCED_MEMBER_EPOCH), 6.0)
    assert out.assignment == {} and not out.fatal
    assert m.state is ShareMemberState.JOINING and m.member_epoch == 0 and m.member_id == "x" * 22
    body = m.heartbeat_request(6.0)
    assert body["member_epoch"] == 0 and body["subscribed_topic_names"] == ["a"]


def test_coordinator_errors_retry_and_others_are_fatal() -> None:
    m = ShareMembership("g", retry_backoff_ms=100, retry_backoff_max_ms=400)
    m.subscribe(["a"])
    m.heartbeat_request(0.0)
    assert m.on_heartbeat_response(answer(code=ErrorCode.NOT_COORDINATOR), 0.0).coordinator_lost
    m.heartbeat_request(0.0)
    m.on_heartbeat_response(answer(code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS), 1.0)
    assert m.time_to_next_heartbeat(1.0) == pytest.approx(0.1)
    m.heartbeat_request(1.1)
    m.on_heartbeat_failure(1.1)
    assert m.time_to_next_heartbeat(1.1) == pytest.approx(0.2)  # doubling
    m.heartbeat_request(1.3)
    out = m.on_heartbeat_response(answer(code=ErrorCode.TOPIC_AUTHORIZATION_FAILED), 1.3)
    assert out.error is not None and not out.fatal and m.in_group
    m.heartbeat_request(2.0)
    out = m.on_heartbeat_response(answer(code=ErrorCode.GROUP_AUTHORIZATION_FAILED), 2.0)
    assert out.fatal and m.state is ShareMemberState.FATAL
    assert m.time_to_next_heartbeat(3.0) is None
    m.subscribe(["b"])
    assert m.state is ShareMemberState.FATAL


def test_leaving_and_the_poll_timer() -> None:
    m = ShareMembership("g")
    assert m.leave_request() is None  # never sent anything
    m.subscribe(["a"])
    m.heartbeat_request(0.0)
    m.on_heartbeat_response(answer(epoch=2, assignment={T1: [0]}), 0.0)
    body = m.poll_timeout_leave()
    assert body is not None and body["member_epoch"] == LEAVE_EPOCH
    assert m.state is ShareMemberState.STALE and m.assignment == {}
    assert m.time_to_next_heartbeat(1.0) is None
    m.rejoin()
    assert m.state is ShareMemberState.JOINING and m.heartbeat_request(1.0)["member_epoch"] == 0
    m.on_heartbeat_response(answer(epoch=7), 1.0)
    assert m.leave_request()["member_epoch"] == LEAVE_EPOCH  # type: ignore[index]
    assert m.state is ShareMemberState.UNSUBSCRIBED


# -- acknowledgements ------------------------------------------------------------------------


def test_batches_are_runs_of_consecutive_offsets_with_one_type_when_uniform() -> None:
    assert acknowledgement_batches({}) == []
    assert acknowledgement_batches({5: 1, 3: 1, 4: 1, 9: 3}) == [
        {"first_offset": 3, "last_offset": 5, "acknowledge_types": [1]},
        {"first_offset": 9, "last_offset": 9, "acknowledge_types": [3]},
    ]
    assert acknowledgement_batches({1: 1, 2: 2, 3: 0}) == [
        {"first_offset": 1, "last_offset": 3, "acknowledge_types": [1, 2, 0]},
    ]


def test_implicit_mode_accepts_the_last_poll_at_the_next_one() -> None:
    book = AcknowledgementBook(explicit=False)
    book.delivered(1, ("t", 0), [10, 11])
    book.delivered(2, ("t", 1), [4])
    assert book.held_count() == 3 and book.held_count(1) == 2
    with pytest.raises(IllegalStateError):
        book.acknowledge(("t", 0), 10, AcknowledgeType.ACCEPT)
    book.check_poll()
    assert book.held_count() == 0
    assert sorted(book.pending_nodes()) == [1, 2]
    assert book.take(1) == {("t", 0): {10: 1, 11: 1}}
    assert book.take(1) == {}


def test_explicit_mode_refuses_a_poll_until_everything_is_acknowledged() -> None:
    book = AcknowledgementBook(explicit=True)
    book.delivered(1, ("t", 0), [10, 11])
    with pytest.raises(IllegalStateError):
        book.check_poll()
    assert book.acknowledge(("t", 0), 10, AcknowledgeType.RELEASE) == 1
    with pytest.raises(IllegalStateError):
        book.acknowledge(("t", 0), 10, AcknowledgeType.ACCEPT)  # no longer in flight
    with pytest.raises(ValueError):
        book.acknowledge(("t", 0), 11, 7)
    with pytest.raises(IllegalStateError):
        book.acknowledge(("t", 0), 99, AcknowledgeType.ACCEPT)  # never delivered
    book.acknowledge(("t", 0), 11, AcknowledgeType.REJECT)
    book.check_poll()
    book.gaps(1, ("t", 0), [12])
    assert book.take(1, [("t", 0)]) == {("t", 0): {10: 2, 11: 3, 12: GAP}}
    assert not book.has_pending(1)
