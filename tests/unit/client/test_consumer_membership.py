"""KIP-848's member state machine (mafka.client.consumer_membership): requests built, answers
interpreted, reconciliations computed — no sockets, time passed in."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from mafka.client.consumer_membership import (
    ConsumerMembership,
    MemberState,
    combine_regexes,
    new_member_id,
)
from mafka.errors import ErrorCode

T1 = bytes(range(16))
T2 = bytes(range(16, 32))
T3 = bytes(range(32, 48))
NAMES = {T1: "t1", T2: "t2"}  # T3 is unknown to metadata
resolve = NAMES.get


def member(**kwargs) -> ConsumerMembership:
    kwargs.setdefault("member_id", "m-1")
    return ConsumerMembership("g", 300000, **kwargs)


def answer(epoch: int, assignment: dict[bytes, list[int]] | None = None, interval: int = 5000,
           code: int = 0, member_id: str | None = "m-1", message: str | None = None) -> NS:
    tps = None if assignment is None else NS(topic_partitions=[NS(topic_id=t, partitions=ps)
                                                              for t, ps in assignment.items()])
    return NS(error_code=code, error_message=message, member_id=member_id, member_epoch=epoch,
              heartbeat_interval_ms=interval, assignment=tps)


def reconcile(m: ConsumerMembership) -> tuple[frozenset, frozenset]:
    """Carries out the next reconciliation as the driver does (revoke, then assign, then done)."""
    rec = m.start_reconciliation(resolve)
    assert rec is not None
    m.revoked(rec)
    m.assigned(rec)
    m.reconciliation_done(rec)
    return rec.revoke, rec.assign


def joined(assignment: dict[bytes, list[int]], **kwargs) -> ConsumerMembership:
    """A member that joined, reconciled ``assignment`` and acknowledged it (epoch 1, STABLE)."""
    m = member(**kwargs)
    m.subscribe(["t1", "t2"])
    m.heartbeat_request(0.0)
    m.on_heartbeat_response(answer(1, assignment), 0.0)
    reconcile(m)
    m.heartbeat_request(0.0)
    m.on_heartbeat_response(answer(1), 0.0)
    assert m.state is MemberState.STABLE
    return m


def owned(body: dict) -> dict[bytes, list[int]] | None:
    tps = body["topic_partitions"]
    return None if tps is None else {t["topic_id"]: t["partitions"] for t in tps}


# -- identity and joining ------------------------------------------------------------------------


def test_member_ids_are_kafka_uuid_strings_and_differ() -> None:
    ids = {new_member_id() for _ in range(200)}
    assert len(ids) == 200
    for mid in ids:
        assert len(mid) == 22 and not mid.startswith("-")
        assert set(mid) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    assert len(ConsumerMembership("g", 1000).member_id) == 22


def test_the_join_heartbeat_is_full_at_epoch_0_and_sent_at_once() -> None:
    m = member(server_assignor="uniform", rack_id="r1", instance_id="i-1")
    assert m.time_to_next_heartbeat(0.0) is None  # not subscribed: no heartbeat
    m.subscribe(["b", "a"])
    assert m.state is MemberState.JOINING and m.time_to_next_heartbeat(0.0) == 0
    body = m.heartbeat_request(0.0)
    assert body == {
        "group_id": "g", "member_id": "m-1", "member_epoch": 0, "instance_id": "i-1", "rack_id": "r1",
        "rebalance_timeout_ms": 300000, "subscribed_topic_names": ["a", "b"], "subscribed_topic_regex": None,
        "server_assignor": "uniform", "topic_partitions": [],
    }
    assert m.time_to_next_heartbeat(0.0) is None  # one in flight at a time


def test_a_join_answer_sets_epoch_and_interval_and_the_assignment_is_reconciled_then_acknowledged() -> None:
    m = member()
    m.subscribe(["t1"])
    m.heartbeat_request(0.0)
    out = m.on_heartbeat_response(answer(1, {T1: [0, 1]}, interval=3000), 10.0)
    assert out.reconcile and m.state is MemberState.RECONCILING and m.member_epoch == 1
    rec = m.start_reconciliation(resolve)
    assert rec is not None and rec.revoke == frozenset() and rec.assign == {("t1", 0), ("t1", 1)} and rec.announce
    assert m.start_reconciliation(resolve) is None  # one at a time
    m.revoked(rec)
    m.assigned(rec)
    assert m.held == {("t1", 0), ("t1", 1)}
    m.reconciliation_done(rec)
    assert m.state is MemberState.ACKNOWLEDGING
    assert m.time_to_next_heartbeat(10.5) == 0  # the ack goes at once, not 3 s after the answer
    ack = m.heartbeat_request(10.5)
    assert owned(ack) == {T1: [0, 1]} and ack["member_epoch"] == 1
    # Only what changed: the subscription and the rebalance timeout were sent already.
    assert ack["subscribed_topic_names"] is None and ack["rebalance_timeout_ms"] == -1 and ack["rack_id"] is None
    assert m.state is MemberState.STABLE
    m.on_heartbeat_response(answer(1, interval=3000), 11.0)
    assert m.time_to_next_heartbeat(11.0) == pytest.approx(3.0)
    assert owned(m.heartbeat_request(14.0)) is None  # unchanged: not sent again


def test_an_empty_first_assignment_is_still_announced_once() -> None:
    m = member()
    m.subscribe(["t1"])
    m.heartbeat_request(0.0)
    m.on_heartbeat_response(answer(1, {}), 0.0)
    rec = m.start_reconciliation(resolve)
    assert rec is not None and rec.assign == frozenset() and rec.announce
    m.reconciliation_done(rec)
    m.heartbeat_request(0.0)
    m.on_heartbeat_response(answer(2, {T1: [0]}), 0.0)
    rec = m.start_reconciliation(resolve)
    assert rec is not None and not rec.announce


# -- incremental reconciliation ------------------------------------------------------------------


def test_only_what_moves_is_revoked_and_only_what_is_new_is_assigned() -> None:
    m = joined({T1: [0, 1, 2]})
    m.heartbeat_request(5.0)
    m.on_heartbeat_response(answer(2, {T1: [1, 2, 3], T2: [0]}), 5.0)
    revoke, assign = reconcile(m)
    assert revoke == {("t1", 0)}
    assert assign == {("t1", 3), ("t2", 0)}
    assert m.held == {("t1", 1), ("t1", 2), ("t1", 3), ("t2", 0)}
    # Partitions kept (t1-1, t1-2) are in neither set: the application never stops them.
    assert not (revoke | assign) & {("t1", 1), ("t1", 2)}


def test_a_revocation_is_reported_as_the_new_owned_set_in_a_prompt_heartbeat() -> None:
    m = joined({T1: [0, 1, 2, 3]})
    m.heartbeat_request(5.0)
    m.on_heartbeat_response(answer(2, {T1: [0, 1]}, interval=5000), 5.0)
    rec = m.start_reconciliation(resolve)
    assert rec is not None and rec.revoke == {("t1", 2), ("t1", 3)} and rec.assign == frozenset()
    # While the application revokes, heartbeats go on at the interval and report nothing new.
    assert m.time_to_next_heartbeat(6.0) == pytest.approx(4.0)
    assert owned(m.heartbeat_request(10.0)) is None
    m.on_heartbeat_response(answer(2), 10.0)
    m.revoked(rec)
    assert m.held == {("t1", 0), ("t1", 1)}
    m.assigned(rec)
    m.reconciliation_done(rec)
    assert m.time_to_next_heartbeat(10.1) == 0
    ack = m.heartbeat_request(10.1)
    assert owned(ack) == {T1: [0, 1]} and ack["member_epoch"] == 2


def test_a_target_that_moves_during_a_reconciliation_is_reconciled_after_the_ack() -> None:
    m = joined({T1: [0, 1]})
    m.heartbeat_request(1.0)
    m.on_heartbeat_response(answer(2, {T1: [0]}), 1.0)
    rec = m.start_reconciliation(resolve)
    assert rec is not None
    m.heartbeat_request(2.0)
    m.on_heartbeat_response(answer(3, {T1: [0, 2]}), 2.0)  # a new target before the first is done
    m.revoked(rec)
    m.assigned(rec)
    m.reconciliation_done(rec)
    ack = m.heartbeat_request(2.1)
    assert owned(ack) == {T1: [0]}  # what it really owns now
    assert m.state is MemberState.RECONCILING
    revoke, assign = reconcile(m)
    assert revoke == frozenset() and assign == {("t1", 2)}
    assert owned(m.heartbeat_request(2.2)) == {T1: [0, 2]}


def test_the_same_assignment_again_changes_nothing() -> None:
    m = joined({T1: [0, 1]})
    m.heartbeat_request(1.0)
    out = m.on_heartbeat_response(answer(1, {T1: [1, 0]}), 1.0)
    assert not out.reconcile and m.state is MemberState.STABLE
    assert m.start_reconciliation(resolve) is None


def test_an_unknown_topic_id_waits_for_metadata_while_the_rest_is_reconciled() -> None:
    m = joined({T1: [0]})
    m.heartbeat_request(1.0)
    m.on_heartbeat_response(answer(2, {T1: [0], T3: [0, 1]}), 1.0)
    assert m.missing_topic_ids(resolve) == {T3}
    assert m.start_reconciliation(resolve) is None  # the resolvable part is what it owns already
    assert m.state is MemberState.ACKNOWLEDGING  # acknowledged under the new local epoch
    assert owned(m.heartbeat_request(1.1)) == {T1: [0]}
    assert m.state is MemberState.RECONCILING
    with_t3 = {**NAMES, T3: "t3"}.get  # a metadata refresh named it
    assert m.missing_topic_ids(with_t3) == frozenset()
    rec = m.start_reconciliation(with_t3)
    assert rec is not None and rec.revoke == frozenset() and rec.assign == {("t3", 0), ("t3", 1)}


def test_a_held_topic_keeps_its_name_when_metadata_forgets_it() -> None:
    m = joined({T1: [0, 1]})
    m.heartbeat_request(1.0)
    m.on_heartbeat_response(answer(2, {T1: [0]}), 1.0)
    rec = m.start_reconciliation(lambda _tid: None)
    assert rec is not None and rec.revoke == {("t1", 1)}


# -- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize("code", [ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID])
def test_a_fenced_member_loses_everything_and_rejoins_at_epoch_0_with_the_same_id(code: int) -> None:
    m = joined({T1: [0, 1]})
    m.heartbeat_request(1.0)
    out = m.on_heartbeat_response(answer(-1, code=code), 1.0)
    assert out.release and not out.fatal and out.error is None
    assert m.state is MemberState.FENCED and m.time_to_next_heartbeat(1.0) is None
    assert m.held == {("t1", 0), ("t1", 1)}  # the driver hands these over as lost
    m.released()
    assert m.held == set() and m.state is MemberState.JOINING
    assert m.time_to_next_heartbeat(1.0) == 0  # no backoff after a fencing
    body = m.heartbeat_request(1.0)
    assert body["member_id"] == "m-1" and body["member_epoch"] == 0
    assert body["topic_partitions"] == [] and body["subscribed_topic_names"] == ["t1", "t2"]
    assert body["rebalance_timeout_ms"] == 300000


def test_a_reconciliation_overtaken_by_a_fencing_is_dropped_after_its_step() -> None:
    m = joined({T1: [0, 1]})
    m.heartbeat_request(1.0)
    m.on_heartbeat_response(answer(2, {T1: [0, 2]}), 1.0)
    rec = m.start_reconciliation(resolve)
    assert rec is not None
    m.revoked(rec)  # the application gave up t1-1
    m.heartbeat_request(2.0)
    assert m.on_heartbeat_response(answer(-1, code=ErrorCode.FENCED_MEMBER_EPOCH), 2.0).release
    assert m.aborted(rec)
    assert m.held == {("t1", 0)}  # lost: only what it still holds
    m.released()
    m.reconciliation_done(rec)
    assert m.state is MemberState.JOINING and m.current.partitions == {}


@pytest.mark.parametrize("code", [ErrorCode.UNRELEASED_INSTANCE_ID, ErrorCode.GROUP_MAX_SIZE_REACHED,
                                  ErrorCode.UNSUPPORTED_ASSIGNOR, ErrorCode.INVALID_REQUEST,
                                  ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.FENCED_INSTANCE_ID,
                                  ErrorCode.INVALID_REGULAR_EXPRESSION, ErrorCode.UNSUPPORTED_VERSION])
def test_fatal_errors_stop_the_member(code: int) -> None:
    m = joined({T1: [0]})
    m.heartbeat_request(1.0)
    out = m.on_heartbeat_response(answer(-1, code=code, message="no"), 1.0)
    assert out.fatal and out.release and out.error is not None and out.error.fatal() and out.error.code() == code
    assert m.state is MemberState.FATAL and m.time_to_next_heartbeat(100.0) is None
    assert m.leave_request() is None  # a failed member does not leave: it is out already


@pytest.mark.parametrize("code", [ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE])
def test_a_moved_coordinator_is_found_again_and_the_retry_is_full(code: int) -> None:
    m = joined({T1: [0]})
    m.heartbeat_request(1.0)
    out = m.on_heartbeat_response(answer(-1, code=code), 1.0)
    assert out.coordinator_lost and not out.release and m.state is MemberState.STABLE
    assert m.time_to_next_heartbeat(1.0) == pytest.approx(0.0)
    body = m.heartbeat_request(1.0)
    assert body["member_epoch"] == 1
    assert body["rebalance_timeout_ms"] == 300000 and body["subscribed_topic_names"] == ["t1", "t2"]
    assert owned(body) == {T1: [0]}


def test_coordinator_load_in_progress_backs_off_exponentially_up_to_the_cap() -> None:
    m = joined({T1: [0]}, retry_backoff_ms=100, retry_backoff_max_ms=300)
    waits = []
    for _ in range(4):
        m.heartbeat_request(0.0)
        m.on_heartbeat_response(answer(-1, code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS), 0.0)
        waits.append(m.time_to_next_heartbeat(0.0))
    # The retry waits for the backoff, not the heartbeat interval (Java's onFailedAttempt).
    assert waits == [pytest.approx(0.1), pytest.approx(0.2), pytest.approx(0.3), pytest.approx(0.3)]
    m.heartbeat_request(10.0)
    m.on_heartbeat_failure(10.0)  # no answer at all: the same
    assert m.time_to_next_heartbeat(10.0) == pytest.approx(0.3)
    m.heartbeat_request(11.0)
    m.on_heartbeat_response(answer(1, interval=5000), 11.0)  # a good answer ends the backoff
    assert m.time_to_next_heartbeat(11.0) == pytest.approx(5.0)
    m.heartbeat_request(16.0)
    m.on_heartbeat_response(answer(-1, code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS), 16.0)
    assert m.time_to_next_heartbeat(16.0) == pytest.approx(0.1)


def test_topic_authorization_failed_is_told_and_the_member_stays() -> None:
    m = joined({T1: [0]})
    m.heartbeat_request(1.0)
    out = m.on_heartbeat_response(answer(-1, code=ErrorCode.TOPIC_AUTHORIZATION_FAILED), 1.0)
    assert out.error is not None and not out.fatal and not out.release and m.state is MemberState.STABLE


# -- leaving -----------------------------------------------------------------------------------


def test_a_dynamic_member_leaves_with_epoch_minus_1() -> None:
    m = joined({T1: [0]})
    body = m.leave_request()
    assert body is not None and body["member_epoch"] == -1 and body["member_id"] == "m-1"
    assert body["instance_id"] is None and body["topic_partitions"] is None
    assert m.state is MemberState.UNSUBSCRIBED and m.held == set() and m.time_to_next_heartbeat(0.0) is None
    # An answer to a heartbeat sent before leaving changes nothing.
    m.on_heartbeat_response(answer(5, {T1: [0, 1]}), 1.0)
    assert m.state is MemberState.UNSUBSCRIBED and m.start_reconciliation(resolve) is None
    m.subscribe(["t1"])  # subscribing again joins again, same member id
    body = m.heartbeat_request(2.0)
    assert body["member_epoch"] == 0 and body["member_id"] == "m-1"


def test_a_static_member_leaves_with_epoch_minus_2() -> None:
    m = joined({T1: [0]}, instance_id="i-1")
    body = m.leave_request()
    assert body is not None and body["member_epoch"] == -2 and body["instance_id"] == "i-1"


def test_a_member_that_never_sent_a_heartbeat_has_nothing_to_leave() -> None:
    m = member()
    m.subscribe(["t1"])
    assert m.leave_request() is None


def test_max_poll_interval_exceeded_leaves_and_waits_for_a_poll_to_rejoin() -> None:
    m = joined({T1: [0]})
    body = m.poll_timeout_leave()
    assert body is not None and body["member_epoch"] == -1
    assert m.state is MemberState.STALE and m.time_to_next_heartbeat(0.0) is None
    assert m.held == {("t1", 0)}  # released as lost by the driver
    m.released()
    assert m.state is MemberState.STALE
    m.rejoin()
    assert m.state is MemberState.JOINING and m.heartbeat_request(0.0)["member_epoch"] == 0


# -- subscriptions -----------------------------------------------------------------------------


def test_regex_entries_are_combined_as_librdkafka_does() -> None:
    assert combine_regexes(["a", "^x.*", "^y"]) == "(^x.*)|(^y)"
    assert combine_regexes(["a"]) is None


def test_a_regex_subscription_is_sent_as_subscribed_topic_regex() -> None:
    m = member()
    m.subscribe(["^orders-.*"])
    body = m.heartbeat_request(0.0)
    assert body["subscribed_topic_regex"] == "(^orders-.*)" and body["subscribed_topic_names"] == []
    m.on_heartbeat_response(answer(1, {}), 0.0)
    reconcile(m)
    m.heartbeat_request(0.0)
    m.on_heartbeat_response(answer(1), 0.0)
    # Switching to names: the names are sent and the regex removed with an empty string (Java).
    m.subscribe(["orders-1"])
    assert m.time_to_next_heartbeat(0.1) == 0  # a changed subscription goes at once
    body = m.heartbeat_request(0.1)
    assert body["subscribed_topic_names"] == ["orders-1"] and body["subscribed_topic_regex"] == ""
    m.on_heartbeat_response(answer(1), 0.1)
    body = m.heartbeat_request(6.0)
    assert body["subscribed_topic_names"] is None and body["subscribed_topic_regex"] is None


def test_a_regex_is_sent_again_after_an_error_and_only_then() -> None:
    m = member()
    m.subscribe(["t1", "^x.*"])
    m.heartbeat_request(0.0)
    m.on_heartbeat_response(answer(1, {}), 0.0)
    reconcile(m)
    assert m.heartbeat_request(0.0)["subscribed_topic_regex"] is None
    m.on_heartbeat_response(answer(-1, code=ErrorCode.NOT_COORDINATOR), 0.0)
    body = m.heartbeat_request(0.0)
    assert body["subscribed_topic_regex"] == "(^x.*)" and body["subscribed_topic_names"] == ["t1"]


# -- offsets -----------------------------------------------------------------------------------


def test_commits_carry_the_member_epoch_and_member_id() -> None:
    m = joined({T1: [0]}, instance_id="i-1")
    body = m.commit_request({("t1", 0): (42, None)}, in_group=True)
    assert body["generation_id_or_member_epoch"] == 1 and body["member_id"] == "m-1"
    assert body["group_instance_id"] == "i-1"
    assert body["topics"] == [{"name": "t1", "partitions": [
        {"partition_index": 0, "committed_offset": 42, "committed_leader_epoch": -1, "committed_metadata": None}]}]
    outside = m.commit_request({("t1", 0): (42, None)}, in_group=False)
    assert outside["generation_id_or_member_epoch"] == -1 and outside["member_id"] == ""
    fresh = member()
    assert fresh.commit_request({("t1", 0): (1, None)}, in_group=True)["generation_id_or_member_epoch"] == -1


def test_a_stale_member_epoch_on_commit_is_flagged_for_a_retry() -> None:
    response = NS(topics=[NS(name="t1", partitions=[NS(partition_index=0, error_code=ErrorCode.STALE_MEMBER_EPOCH),
                                                    NS(partition_index=1, error_code=0)])])
    result, retry, lost, stale = ConsumerMembership.on_commit(response)
    assert result == {("t1", 0): ErrorCode.STALE_MEMBER_EPOCH, ("t1", 1): 0} and stale and not retry and not lost


def test_offset_fetch_names_the_member_and_its_epoch() -> None:
    m = joined({T1: [0]})
    group = m.fetch_request([("t1", 1), ("t1", 0)], require_stable=True)["groups"][0]
    assert group == {"group_id": "g", "member_id": "m-1", "member_epoch": 1,
                     "topics": [{"name": "t1", "partition_indexes": [0, 1]}]}
    assert member().fetch_request([("t1", 0)])["groups"][0]["member_epoch"] == -1
    stale = NS(groups=[NS(error_code=ErrorCode.STALE_MEMBER_EPOCH, topics=[])])
    assert ConsumerMembership.on_fetch(stale) == ({}, ErrorCode.STALE_MEMBER_EPOCH, True, False)
