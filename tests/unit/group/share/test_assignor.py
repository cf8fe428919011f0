"""Kafka's share assignor ``simple``: sharing when members outnumber partitions, balance,
stickiness, only initialized partitions, and its invariants on random groups."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from mafka.group.share.assignor import ShareAssignmentSpec, ShareMemberSpec, SimpleAssignor
from tests.hypothesis_budget import examples

A = b"A" * 16
B = b"B" * 16
ASSIGNOR = SimpleAssignor()


def members(n: int, topics: frozenset[bytes] = frozenset({A}), current: dict[str, dict[bytes, frozenset[int]]] | None = None) -> dict[str, ShareMemberSpec]:
    current = current or {}
    return {f"m{i}": ShareMemberSpec(topics, current.get(f"m{i}", {})) for i in range(n)}


def assign(specs: dict[str, ShareMemberSpec], assignable: dict[bytes, frozenset[int]], homogeneous: bool = True) -> dict[str, dict[bytes, frozenset[int]]]:
    return ASSIGNOR.assign(ShareAssignmentSpec(specs, assignable, homogeneous))


def sharing(result: dict[str, dict[bytes, frozenset[int]]]) -> Counter[tuple[bytes, int]]:
    return Counter((t, p) for parts in result.values() for t, ps in parts.items() for p in ps)


def test_more_members_than_partitions_every_member_gets_one() -> None:
    result = assign(members(5), {A: frozenset({0, 1})})
    assert ASSIGNOR.name == "simple"
    assert all(len(parts[A]) >= 1 for parts in result.values())
    # desired sharing ceil(5/2) = 3: each partition goes to three members; counts [2,1,1,1,1]
    assert sharing(result) == {(A, 0): 3, (A, 1): 3}
    assert sorted(len(parts[A]) for parts in result.values()) == [1, 1, 1, 1, 2]


def test_fewer_members_than_partitions_divides_them() -> None:
    result = assign(members(2), {A: frozenset(range(5))})
    assert sharing(result) == {(A, p): 1 for p in range(5)}
    assert sorted(len(parts[A]) for parts in result.values()) == [2, 3]


def test_a_single_partition_is_shared_by_everyone() -> None:
    result = assign(members(4), {A: frozenset({0})})
    assert result == {f"m{i}": {A: frozenset({0})} for i in range(4)}


def test_only_assignable_partitions_are_given_and_others_are_taken_away() -> None:
    # 4 partitions exist but only 0 and 2 are initialized; m0 still holds 1 from before.
    result = assign(members(2, current={"m0": {A: frozenset({1, 2})}}), {A: frozenset({0, 2})})
    assert result == {"m0": {A: frozenset({2})}, "m1": {A: frozenset({0})}}
    assert assign(members(2), {}) == {"m0": {}, "m1": {}}


def test_members_keep_what_they_have_when_one_joins() -> None:
    before = assign(members(2), {A: frozenset(range(4))})
    specs = members(3, current=before)
    after = assign(specs, {A: frozenset(range(4))})
    # 3 members, 4 partitions: sharing 1, counts [2,1,1]; nobody loses more than needed.
    assert sharing(after) == {(A, p): 1 for p in range(4)}
    for m in ("m0", "m1"):
        kept = after[m][A] & before[m][A]
        assert len(kept) == len(after[m][A])  # what m keeps it had before
    assert len(after["m2"][A]) == 1


def test_unsubscribed_topics_are_taken_away() -> None:
    specs = {
        "m0": ShareMemberSpec(frozenset({B}), {A: frozenset({0}), B: frozenset({0})}),
        "m1": ShareMemberSpec(frozenset({B}), {}),
    }
    result = assign(specs, {A: frozenset({0}), B: frozenset({0, 1})})
    assert A not in result["m0"]
    assert sharing(result) == {(B, 0): 1, (B, 1): 1}


def test_heterogeneous_subscriptions_balance_topic_by_topic() -> None:
    specs = {
        "m0": ShareMemberSpec(frozenset({A})),
        "m1": ShareMemberSpec(frozenset({A, B})),
        "m2": ShareMemberSpec(frozenset({B})),
    }
    result = assign(specs, {A: frozenset({0}), B: frozenset({0, 1, 2, 3})}, homogeneous=False)
    assert result["m0"] == {A: frozenset({0})}
    assert result["m1"][A] == frozenset({0})  # A-0 shared by its two subscribers
    assert sorted(len(result[m][B]) for m in ("m1", "m2")) == [2, 2]
    assert sharing(result)[(A, 0)] == 2


def test_same_input_same_answer() -> None:
    specs = members(7, current={"m3": {A: frozenset({1})}})
    assert assign(specs, {A: frozenset(range(3))}) == assign(dict(reversed(specs.items())), {A: frozenset(range(3))})


# --------------------------------------------------------------------------- invariants

topic_ids = st.sampled_from([A, B])


@st.composite
def groups(draw: st.DrawFn) -> tuple[dict[str, ShareMemberSpec], dict[bytes, frozenset[int]], bool]:
    assignable = {
        t: frozenset(draw(st.sets(st.integers(0, 5), max_size=6))) for t in draw(st.sets(topic_ids, min_size=1))
    }
    homogeneous = draw(st.booleans())
    shared = frozenset(draw(st.sets(topic_ids, min_size=1)))
    specs = {}
    for i in range(draw(st.integers(1, 8))):
        subscribed = shared if homogeneous else frozenset(draw(st.sets(topic_ids, min_size=1)))
        current = {t: frozenset(draw(st.sets(st.integers(0, 6), max_size=3))) for t in draw(st.sets(topic_ids))}
        specs[f"m{i}"] = ShareMemberSpec(subscribed, current)
    return specs, assignable, homogeneous


@settings(max_examples=examples(300))
@given(groups())
def test_assignment_invariants(group: tuple[dict[str, ShareMemberSpec], dict[bytes, frozenset[int]], bool]) -> None:
    specs, assignable, homogeneous = group
    result = ASSIGNOR.assign(ShareAssignmentSpec(specs, assignable, homogeneous))
    assert set(result) == set(specs)
    count = sharing(result)
    for m, parts in result.items():
        for t, ps in parts.items():
            # only subscribed, assignable partitions, never an empty topic entry
            assert t in specs[m].subscribed_topic_ids and ps and ps <= assignable.get(t, frozenset())
    for t in {t for s in specs.values() for t in s.subscribed_topic_ids}:
        subscribers = [m for m, s in specs.items() if t in s.subscribed_topic_ids]
        initialized = sorted(assignable.get(t, frozenset()))
        if not initialized:
            continue
        want = -(-len(subscribers) // len(initialized))  # ceil
        for p in initialized:
            # every initialized partition is fetched by someone, and never by more than needed
            assert 1 <= count[(t, p)] <= want, (t, p, count)
        if not homogeneous:
            for m in subscribers:
                assert result[m].get(t), f"{m} subscribes to {t!r} but got none of it"
    if homogeneous:
        topics = next(iter(specs.values())).subscribed_topic_ids
        if any(assignable.get(t) for t in topics):
            assert all(result[m] for m in specs), "with partitions to share, every member gets one"
    # stable: assigning again from the answer changes nothing
    again = {m: ShareMemberSpec(s.subscribed_topic_ids, result[m]) for m, s in specs.items()}
    assert ASSIGNOR.assign(ShareAssignmentSpec(again, assignable, homogeneous)) == result
