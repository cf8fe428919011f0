"""The consumer's sans-IO group membership: requests built, answers interpreted (no sockets)."""

from __future__ import annotations

from types import SimpleNamespace as NS

from mafka.client.assignors import parse_strategy_list
from mafka.client.group_state import Membership
from mafka.client.kafka_error import KafkaError
from mafka.errors import ErrorCode
from mafka.group.consumer_protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)


def member(strategy: str = "range", instance_id: str | None = None) -> Membership:
    return Membership("g", instance_id, 10000, 300000, parse_strategy_list(strategy))


def join_response(m: Membership, code: int = 0, member_id: str = "m-1", leader: str = "m-1",
                  generation: int = 3, protocol: str = "range", members=()) -> NS:
    return NS(error_code=code, generation_id=generation, protocol_name=protocol, leader=leader,
              member_id=member_id, members=list(members))


def sync_response(assigned: dict[str, list[int]], code: int = 0) -> NS:
    return NS(error_code=code, assignment=encode_assignment(Assignment(assigned)))


def test_join_request_lists_every_assignor_with_the_subscription_and_clears_need_rejoin() -> None:
    m = member("range,roundrobin")
    m.need_rejoin = True
    body = m.join_request({"b", "a"})
    assert [p["name"] for p in body["protocols"]] == ["range", "roundrobin"]
    assert decode_subscription(body["protocols"][0]["metadata"]).topics == ["a", "b"]
    assert body["protocol_type"] == "consumer" and body["member_id"] == "" and body["group_instance_id"] is None
    assert not m.need_rejoin


def test_member_id_required_means_join_again_with_that_id() -> None:
    m = member()
    out = m.on_join(join_response(m, code=ErrorCode.MEMBER_ID_REQUIRED, member_id="m-7"))
    assert out.kind == "retry" and m.member_id == "m-7" and m.need_rejoin
    assert m.join_request({"t"})["member_id"] == "m-7"


def test_the_leader_assigns_every_member_with_the_chosen_assignor() -> None:
    m = member()
    subs = [NS(member_id=mid, group_instance_id=None, metadata=encode_subscription(Subscription(["t"])))
            for mid in ("m-1", "m-2")]
    response = join_response(m, members=subs)
    assert m.on_join(response).kind == "leader" and m.generation == 3 and m.protocol == "range"
    assert m.leader_topics(response) == {"t"}
    assignments = m.leader_assignments(response, {"t": 4})
    assert {k: decode_assignment(v).assigned_partitions for k, v in assignments.items()} == {
        "m-1": {"t": [0, 1]}, "m-2": {"t": [2, 3]}}
    assert m.on_join(join_response(m, leader="m-2")).kind == "follower"


def test_eager_sync_assigns_all_and_every_partition_is_revoked_before_the_next_join() -> None:
    m = member()
    m.on_join(join_response(m))
    out = m.on_sync(sync_response({"t": [0, 1]}))
    assert out.kind == "assigned" and out.assign == {("t", 0), ("t", 1)} and not out.incremental
    assert m.owned == {("t", 0), ("t", 1)}
    assert m.revoke_before_join() == {("t", 0), ("t", 1)} and m.owned == set()


def test_cooperative_sync_moves_only_the_difference_and_asks_for_a_rejoin_after_revoking() -> None:
    m = member("cooperative-sticky")
    m.on_join(join_response(m, protocol="cooperative-sticky"))
    m.on_sync(sync_response({"t": [0, 1, 2, 3]}))
    assert m.revoke_before_join() == set()  # cooperative: keeps what it owns while joining
    owned = decode_subscription(m.join_request({"t"})["protocols"][0]["metadata"]).owned_partitions
    assert owned == {"t": [0, 1, 2, 3]}
    m.on_join(join_response(m, protocol="cooperative-sticky", generation=4))
    out = m.on_sync(sync_response({"t": [0, 1]}))
    assert out.incremental and out.revoke == {("t", 2), ("t", 3)} and out.assign == set()
    assert m.need_rejoin and m.owned == {("t", 0), ("t", 1)}
    m.need_rejoin = False
    out = m.on_sync(sync_response({"t": [0, 1]}))
    assert out.revoke == set() and not m.need_rejoin


def test_heartbeat_answers() -> None:
    m = member()
    m.on_join(join_response(m))
    m.on_sync(sync_response({"t": [0]}))
    assert m.on_heartbeat(0).kind == "ok"
    assert m.on_heartbeat(ErrorCode.REBALANCE_IN_PROGRESS).kind == "rejoin" and m.need_rejoin
    assert m.owned == {("t", 0)}  # a rebalance keeps the partitions until the join revokes them
    lost = m.on_heartbeat(ErrorCode.UNKNOWN_MEMBER_ID)
    assert lost.kind == "lost" and lost.lost == {("t", 0)} and m.owned == set()
    assert m.member_id == "" and m.generation == -1
    assert m.on_heartbeat(ErrorCode.NOT_COORDINATOR).coordinator_lost


def test_a_fenced_static_member_stops_with_a_fatal_error() -> None:
    m = member(instance_id="i-1")
    m.on_join(join_response(m))
    out = m.on_heartbeat(ErrorCode.FENCED_INSTANCE_ID)
    assert out.fatal and out.notify.code() == ErrorCode.FENCED_INSTANCE_ID and out.notify.fatal()
    assert m.leave_request() is None  # a static member never sends LeaveGroup (KIP-345)


def test_other_errors_reach_the_application_but_rebalances_do_not() -> None:
    m = member()
    assert m.on_error(ErrorCode.GROUP_AUTHORIZATION_FAILED).notify == KafkaError(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    assert m.on_error(ErrorCode.REBALANCE_IN_PROGRESS).notify is None
    assert m.on_error(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS).notify is None


def test_commits_inside_and_outside_the_group_and_their_answers() -> None:
    m = member()
    m.on_join(join_response(m))
    inside = m.commit_request({("t", 0): (5, None)}, in_group=True)
    assert (inside["generation_id_or_member_epoch"], inside["member_id"]) == (3, "m-1")
    outside = m.commit_request({("t", 0): (5, "meta")}, in_group=False)
    assert (outside["generation_id_or_member_epoch"], outside["member_id"]) == (-1, "")
    assert inside["group_instance_id"] == m.instance_id and outside["group_instance_id"] is None
    assert outside["topics"] == [{"name": "t", "partitions": [
        {"partition_index": 0, "committed_offset": 5, "committed_metadata": "meta"}]}]

    def answer(code: int) -> NS:
        return NS(topics=[NS(name="t", partitions=[NS(partition_index=0, error_code=code)])])

    assert m.on_commit(answer(0)) == ({("t", 0): 0}, False, False)
    assert m.on_commit(answer(ErrorCode.NOT_COORDINATOR))[1:] == (True, True)
    assert m.on_commit(answer(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS))[1:] == (True, False)
    m.need_rejoin = False
    assert m.on_commit(answer(ErrorCode.ILLEGAL_GENERATION))[1:] == (False, False) and m.need_rejoin


def test_committed_offsets_and_leaving() -> None:
    m = member()
    topics = [{"name": "t", "partition_indexes": [0, 1]}, {"name": "u", "partition_indexes": [2]}]
    # Both shapes: v1–7 (one group) and v8+ (the ``groups`` batch).
    assert m.fetch_request([("t", 1), ("t", 0), ("u", 2)]) == {
        "group_id": "g", "topics": topics, "require_stable": False, "groups": [{"group_id": "g", "topics": topics}]}
    assert m.fetch_request([("t", 0)], require_stable=True)["require_stable"] is True  # KIP-447
    partitions = [NS(partition_index=0, committed_offset=9, error_code=0),
                  NS(partition_index=1, committed_offset=-1, error_code=0)]
    response = NS(error_code=0, groups=[], topics=[NS(name="t", partitions=partitions)])
    assert m.on_fetch(response) == ({("t", 0): 9, ("t", 1): -1}, False, False)
    v8 = NS(groups=[NS(group_id="g", error_code=0, topics=[NS(name="t", partitions=partitions)])], topics=[])
    assert m.on_fetch(v8) == ({("t", 0): 9, ("t", 1): -1}, False, False)
    v8_error = NS(groups=[NS(group_id="g", error_code=ErrorCode.NOT_COORDINATOR, topics=[])], topics=[])
    assert m.on_fetch(v8_error) == ({}, True, True)
    assert m.leave_request() is None  # never joined
    m.on_join(join_response(m))
    assert m.leave_request() == {"group_id": "g", "member_id": "m-1",
                                 "members": [{"member_id": "m-1", "group_instance_id": None}]}
    m.left()
    assert (m.member_id, m.generation, m.need_rejoin) == ("", -1, True)
