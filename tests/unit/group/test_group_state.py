"""Unit tests for mafka.group.state: Kafka 2.8's group metadata model."""

from __future__ import annotations

import itertools
import uuid

import pytest

from mafka.errors import IllegalStateError
from mafka.group.state import (
    VALID_PREVIOUS_STATES,
    GroupMetadata,
    GroupState,
    MemberMetadata,
    _champ_order,
    java_string_hash,
    new_member_id,
)

S = GroupState
ALL_STATES = list(GroupState)

EXPECTED_TABLE = {
    S.PREPARING_REBALANCE: {S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY},
    S.COMPLETING_REBALANCE: {S.PREPARING_REBALANCE},
    S.STABLE: {S.COMPLETING_REBALANCE},
    S.EMPTY: {S.PREPARING_REBALANCE},
    S.DEAD: {S.STABLE, S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE, S.EMPTY, S.DEAD},
}

VALID_MOVES = [(src, dst) for dst, srcs in EXPECTED_TABLE.items() for src in srcs]
INVALID_MOVES = [
    (src, dst)
    for src, dst in itertools.product(ALL_STATES, ALL_STATES)
    if src not in EXPECTED_TABLE[dst]
]


def member(
    member_id: str,
    protocols: list[tuple[str, bytes]] | None = None,
    *,
    instance_id: str | None = None,
    protocol_type: str = "consumer",
    rebalance_timeout_ms: int = 300_000,
) -> MemberMetadata:
    return MemberMetadata(
        member_id=member_id,
        group_instance_id=instance_id,
        client_id="client",
        client_host="/127.0.0.1",
        rebalance_timeout_ms=rebalance_timeout_ms,
        session_timeout_ms=10_000,
        protocol_type=protocol_type,
        supported_protocols=protocols if protocols is not None else [("range", b"r")],
    )


def names(*protocols: str) -> list[tuple[str, bytes]]:
    return [(p, p.encode()) for p in protocols]


# -- transition table -------------------------------------------------------------


def test_table_is_exactly_kafkas() -> None:
    assert {k: set(v) for k, v in VALID_PREVIOUS_STATES.items()} == EXPECTED_TABLE
    assert [s.value for s in GroupState] == [
        "Empty",
        "PreparingRebalance",
        "CompletingRebalance",
        "Stable",
        "Dead",
    ]


@pytest.mark.parametrize(("src", "dst"), VALID_MOVES, ids=lambda s: str(s))
def test_valid_transition(src: GroupState, dst: GroupState) -> None:
    group = GroupMetadata("g", state=src)
    group.transition_to(dst, now_ms=42)
    assert group.state is dst
    assert group.current_state_timestamp_ms == 42


@pytest.mark.parametrize(("src", "dst"), INVALID_MOVES, ids=lambda s: str(s))
def test_invalid_transition_raises_and_keeps_state(src: GroupState, dst: GroupState) -> None:
    group = GroupMetadata("g", state=src)
    with pytest.raises(IllegalStateError, match=f"Instead it is in {src} state"):
        group.transition_to(dst, now_ms=1)
    assert group.state is src
    assert group.current_state_timestamp_ms is None


def test_invalid_move_count() -> None:
    # 25 pairs, 11 valid (3 + 1 + 1 + 1 + 5).
    assert len(VALID_MOVES) == 11
    assert len(INVALID_MOVES) == 14


@pytest.mark.parametrize("state", ALL_STATES, ids=str)
def test_can_rebalance(state: GroupState) -> None:
    expected = state in {S.STABLE, S.COMPLETING_REBALANCE, S.EMPTY}
    assert GroupMetadata("g", state=state).can_rebalance() is expected


# -- member ids and member metadata --------------------------------------------------


def test_new_member_id_is_client_id_dash_uuid4() -> None:
    mid = new_member_id("consumer-1")
    assert mid.startswith("consumer-1-")
    suffix = mid[len("consumer-1-") :]
    assert uuid.UUID(suffix).version == 4
    assert new_member_id("consumer-1") != mid
    assert new_member_id("c", "instance-a").startswith("instance-a-")


def test_member_matches_needs_same_names_order_and_bytes() -> None:
    m = member("m", [("range", b"a"), ("roundrobin", b"b")])
    assert m.matches([("range", b"a"), ("roundrobin", b"b")])
    assert m.matches([("range", bytearray(b"a")), ("roundrobin", b"b")])
    assert not m.matches([("roundrobin", b"b"), ("range", b"a")])
    assert not m.matches([("range", b"a"), ("roundrobin", b"X")])
    assert not m.matches([("range", b"a")])
    assert not m.matches([])


def test_member_metadata_and_vote() -> None:
    m = member("m", [("sticky", b"s"), ("range", b"r")])
    assert m.metadata("range") == b"r"
    assert m.metadata("sticky") == b"s"
    with pytest.raises(ValueError):
        m.metadata("roundrobin")
    assert m.vote({"range", "sticky"}) == "sticky"
    assert m.vote({"range"}) == "range"
    with pytest.raises(ValueError):
        m.vote({"roundrobin"})
    assert m.protocols == {"sticky", "range"}
    assert not m.is_static_member
    assert member("s", instance_id="i").is_static_member


def test_member_heartbeat_and_session_expiry() -> None:
    m = member("m")
    m.heartbeat(1_000)
    assert m.last_heartbeat_ms == 1_000
    assert not m.session_expired(10_999)
    assert m.session_expired(11_000)


def test_has_satisfied_heartbeat() -> None:
    m = member("m")
    assert not m.has_satisfied_heartbeat()
    m.awaiting_join = True
    assert m.has_satisfied_heartbeat()
    m.is_new = True
    assert not m.has_satisfied_heartbeat()
    m.heartbeat(5)
    assert m.has_satisfied_heartbeat()


# -- protocol selection ----------------------------------------------------------------


def test_java_string_hash() -> None:
    # Values from java.lang.String.hashCode.
    assert java_string_hash("range") == 108280125
    assert java_string_hash("roundrobin") == -128548644
    assert java_string_hash("cooperative-sticky") == 1843682987
    assert java_string_hash("é€𝄞") == 16751501
    assert java_string_hash("") == 0


def test_select_protocol_majority_of_first_preferences() -> None:
    group = GroupMetadata("g")
    group.add(member("m1", names("range", "roundrobin")))
    group.add(member("m2", names("roundrobin", "range")))
    group.add(member("m3", names("roundrobin", "range")))
    assert group.select_protocol() == "roundrobin"


def test_select_protocol_votes_only_for_common_candidates() -> None:
    # Kafka's example: candidates {A, B}; m1 votes B, m2 votes A, m3 votes B.
    group = GroupMetadata("g")
    group.add(member("m1", names("B", "A")))
    group.add(member("m2", names("A", "B", "C")))
    group.add(member("m3", names("D", "B", "A")))
    assert group.candidate_protocols() == {"A", "B"}
    assert group.select_protocol() == "B"


def test_select_protocol_single_member_gets_its_first_choice() -> None:
    group = GroupMetadata("g")
    group.add(member("m1", names("cooperative-sticky", "range")))
    assert group.select_protocol() == "cooperative-sticky"


def test_select_protocol_on_empty_group_raises() -> None:
    with pytest.raises(IllegalStateError):
        GroupMetadata("g").select_protocol()


def test_champ_order() -> None:
    # improve(hash) & 31: range 20, roundrobin 7, cooperative-sticky 1, sticky 20.
    assert _champ_order(["range", "roundrobin"]) == ["roundrobin", "range"]
    assert _champ_order(["roundrobin", "range"]) == ["roundrobin", "range"]
    assert _champ_order(["range", "cooperative-sticky"]) == ["cooperative-sticky", "range"]
    # range and sticky share mask 20 at the root: a sub-node, iterated after root payload.
    assert _champ_order(["range", "sticky", "roundrobin"])[0] == "roundrobin"
    assert set(_champ_order(["range", "sticky", "roundrobin"])) == {"range", "sticky", "roundrobin"}


@pytest.mark.parametrize("first", ["m1", "m2"])
def test_select_protocol_tie_follows_scala_hashmap_order_not_join_order(first: str) -> None:
    prefs = {"m1": names("range", "roundrobin"), "m2": names("roundrobin", "range")}
    order = [first, "m2" if first == "m1" else "m1"]
    group = GroupMetadata("g")
    for mid in order:
        group.add(member(mid, prefs[mid]))
    # one vote each: Kafka 2.8 (Scala 2.13) iterates roundrobin first and keeps it.
    assert group.select_protocol() == "roundrobin"


def test_select_protocol_tie_with_cooperative_sticky() -> None:
    group = GroupMetadata("g")
    group.add(member("m1", names("range", "cooperative-sticky")))
    group.add(member("m2", names("cooperative-sticky", "range")))
    assert group.select_protocol() == "cooperative-sticky"


def test_supports_protocols_when_empty() -> None:
    group = GroupMetadata("g")
    assert group.supports_protocols("consumer", ["range"])
    assert not group.supports_protocols("", ["range"])
    assert not group.supports_protocols("consumer", [])


def test_supports_protocols_when_not_empty() -> None:
    group = GroupMetadata("g")
    group.add(member("m1", names("range", "roundrobin")))
    group.add(member("m2", names("roundrobin")))
    group.transition_to(S.PREPARING_REBALANCE)
    assert group.supports_protocols("consumer", ["roundrobin"])
    assert group.supports_protocols("consumer", ["sticky", "roundrobin"])
    # range is supported by m1 only, so not by every member
    assert not group.supports_protocols("consumer", ["range"])
    assert not group.supports_protocols("connect", ["roundrobin"])
    assert not group.supports_protocols("consumer", ["sticky"])


def test_add_rejects_unsupported_protocols_and_type() -> None:
    group = GroupMetadata("g")
    group.add(member("m1", names("range")))
    with pytest.raises(ValueError):
        group.add(member("m2", names("roundrobin")))
    with pytest.raises(ValueError):
        group.add(member("m3", names("range"), protocol_type="connect"))
    assert group.all_members() == ["m1"]


def test_protocol_counts_follow_remove_and_update() -> None:
    group = GroupMetadata("g")
    m1 = member("m1", names("range", "roundrobin"))
    group.add(m1)
    group.add(member("m2", names("roundrobin")))
    assert group.candidate_protocols() == {"roundrobin"}
    group.remove("m2")
    assert group.candidate_protocols() == {"range", "roundrobin"}
    group.update_member(m1, names("sticky"))
    assert group.candidate_protocols() == {"sticky"}
    assert m1.metadata("sticky") == b"sticky"


# -- join / leave bookkeeping --------------------------------------------------------------


def test_first_member_sets_type_and_leader() -> None:
    group = GroupMetadata("g")
    group.add(member("m1"))
    group.add(member("m2"))
    assert group.protocol_type == "consumer"
    assert group.leader_id == "m1"
    assert group.is_leader("m1")
    assert group.all_members() == ["m1", "m2"]
    assert group.has("m2") and group.get("m2").member_id == "m2"


def test_remove_leader_elects_next_and_last_clears() -> None:
    group = GroupMetadata("g")
    for mid in ("m1", "m2", "m3"):
        group.add(member(mid))
    assert group.remove("m1") is not None
    assert group.leader_id == "m2"
    group.remove("m3")
    assert group.leader_id == "m2"
    group.remove("m2")
    assert group.leader_id is None
    assert group.members == {}
    assert group.remove("nobody") is None


def test_remove_static_member_clears_instance_mapping() -> None:
    group = GroupMetadata("g")
    group.add(member("m1", instance_id="i1"))
    assert group.has_static_member("i1")
    group.remove("m1")
    assert not group.has_static_member("i1")
    assert group.static_members == {}


def test_add_duplicate_static_instance_raises() -> None:
    group = GroupMetadata("g")
    group.add(member("m1", instance_id="i1"))
    with pytest.raises(IllegalStateError):
        group.add(member("m2", instance_id="i1"))
    assert group.all_members() == ["m1"]


def test_rebalance_timeout_is_max_of_members() -> None:
    group = GroupMetadata("g")
    assert group.rebalance_timeout_ms() == 0
    group.add(member("m1", rebalance_timeout_ms=1_000))
    group.add(member("m2", rebalance_timeout_ms=5_000))
    assert group.rebalance_timeout_ms() == 5_000


def test_has_all_members_joined_and_not_yet_rejoined() -> None:
    group = GroupMetadata("g")
    assert group.has_all_members_joined()
    m1, m2 = member("m1"), member("m2")
    group.add(m1)
    group.add(m2)
    assert not group.has_all_members_joined()
    assert [m.member_id for m in group.not_yet_rejoined_members()] == ["m1", "m2"]
    m1.awaiting_join = True
    assert [m.member_id for m in group.not_yet_rejoined_members()] == ["m2"]
    assert group.num_awaiting_join() == 1
    assert not group.has_all_members_joined()
    m2.awaiting_join = True
    assert group.not_yet_rejoined_members() == []
    assert group.has_all_members_joined()


def test_pending_members_block_all_joined_until_added() -> None:
    group = GroupMetadata("g")
    m1 = member("m1")
    m1.awaiting_join = True
    group.add(m1)
    pending = new_member_id("client")
    group.add_pending_member(pending)
    assert group.is_pending_member(pending)
    assert not group.has_all_members_joined()
    joined = member(pending)
    joined.awaiting_join = True
    group.add(joined)
    assert not group.is_pending_member(pending)
    assert group.has_all_members_joined()


def test_pending_member_removed_by_remove_or_explicitly() -> None:
    group = GroupMetadata("g")
    group.add_pending_member("p1")
    group.add_pending_member("p2")
    group.remove("p1")
    group.remove_pending_member("p2")
    assert group.pending_members == set()
    assert group.has_all_members_joined()


def test_maybe_elect_new_joined_leader() -> None:
    group = GroupMetadata("g")
    assert not group.maybe_elect_new_joined_leader()
    m1, m2 = member("m1"), member("m2")
    group.add(m1)
    group.add(m2)
    assert not group.maybe_elect_new_joined_leader()
    m2.awaiting_join = True
    assert group.maybe_elect_new_joined_leader()
    assert group.leader_id == "m2"
    m1.awaiting_join = True
    assert group.maybe_elect_new_joined_leader()
    assert group.leader_id == "m2"


# -- generations ---------------------------------------------------------------------------


def test_init_next_generation_with_members() -> None:
    group = GroupMetadata("g")
    group.add(member("m1", names("range", "roundrobin")))
    group.add(member("m2", names("range")))
    group.transition_to(S.PREPARING_REBALANCE, 10)
    group.init_next_generation(now_ms=20)
    assert group.generation_id == 1
    assert group.protocol_name == "range"
    assert group.state is S.COMPLETING_REBALANCE
    assert group.current_state_timestamp_ms == 20
    group.transition_to(S.STABLE, 30)
    group.transition_to(S.PREPARING_REBALANCE, 40)
    group.init_next_generation(now_ms=50)
    assert group.generation_id == 2


def test_init_next_generation_without_members_goes_empty() -> None:
    group = GroupMetadata("g", generation_id=4, protocol_name="range")
    group.transition_to(S.PREPARING_REBALANCE, 1)
    group.init_next_generation(now_ms=2)
    assert group.generation_id == 5
    assert group.protocol_name is None
    assert group.state is S.EMPTY


def test_init_next_generation_outside_preparing_rebalance_raises() -> None:
    group = GroupMetadata("g")
    group.add(member("m1"))
    with pytest.raises(IllegalStateError):
        group.init_next_generation(now_ms=1)


def test_current_member_metadata() -> None:
    group = GroupMetadata("g")
    group.add(member("m1", [("range", b"one")]))
    group.add(member("m2", [("range", b"two")], instance_id="i2"))
    group.transition_to(S.PREPARING_REBALANCE)
    with pytest.raises(IllegalStateError):
        group.current_member_metadata()
    group.init_next_generation(now_ms=1)
    assert group.current_member_metadata() == [("m1", None, b"one"), ("m2", "i2", b"two")]
    group.transition_to(S.DEAD)
    with pytest.raises(IllegalStateError):
        group.current_member_metadata()


# -- static membership -----------------------------------------------------------------------


def test_replace_static_member_keeps_assignment_and_leadership() -> None:
    group = GroupMetadata("g")
    old = member("old", [("range", b"sub")], instance_id="i1")
    group.add(old)
    group.add(member("m2"))
    group.transition_to(S.PREPARING_REBALANCE)
    group.init_next_generation(now_ms=1)
    group.transition_to(S.STABLE)
    old.assignment = b"partitions-0-1"
    old.awaiting_sync = True
    generation = group.generation_id

    replaced = group.replace_static_member("i1", "old", "new")

    assert replaced is old
    assert replaced.member_id == "new"
    assert replaced.assignment == b"partitions-0-1"
    assert replaced.metadata("range") == b"sub"
    assert not replaced.awaiting_sync and not replaced.awaiting_join
    assert group.static_members == {"i1": "new"}
    assert not group.has("old") and group.get("new") is old
    assert group.leader_id == "new"
    assert group.generation_id == generation
    assert group.state is S.STABLE
    assert group.candidate_protocols() == {"range"}


def test_replace_static_member_non_leader_keeps_leader() -> None:
    group = GroupMetadata("g")
    group.add(member("m1"))
    group.add(member("old", instance_id="i2"))
    group.replace_static_member("i2", "old", "new")
    assert group.leader_id == "m1"


def test_replace_unknown_static_member_raises() -> None:
    group = GroupMetadata("g")
    with pytest.raises(ValueError):
        group.replace_static_member("i1", "ghost", "new")


def test_is_static_member_fenced() -> None:
    group = GroupMetadata("g")
    group.add(member("old", instance_id="i1"))
    assert not group.is_static_member_fenced("old", "i1")
    group.replace_static_member("i1", "old", "new")
    assert group.is_static_member_fenced("old", "i1")
    assert not group.is_static_member_fenced("new", "i1")
    assert not group.is_static_member_fenced("old", None)
    assert not group.is_static_member_fenced("old", "unknown-instance")
    assert group.current_static_member_id("i1") == "new"
    assert group.current_static_member_id("nope") is None
