"""The client-side assignors against Kafka 2.8.2's documented examples and invariants.

Expected values come from the javadoc of ``RangeAssignor`` / ``RoundRobinAssignor`` /
``AbstractStickyAssignor`` and from ``RangeAssignorTest``, ``RoundRobinAssignorTest``,
``CooperativeStickyAssignorTest`` and ``AbstractStickyAssignorTest``.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mafka.client.assignors import (
    ASSIGNORS,
    COOPERATIVE,
    DEFAULT_GENERATION,
    EAGER,
    CooperativeStickyAssignor,
    MemberMetadata,
    RangeAssignor,
    RoundRobinAssignor,
    assignor_for,
    decode_generation,
    encode_generation,
    parse_strategy_list,
)
from mafka.group.consumer_protocol import (
    Assignment,
    Subscription,
    decode_subscription,
    encode_subscription,
)
from tests.hypothesis_budget import examples


def member(member_id, topics, owned=None, instance=None, generation=None):
    user_data = None if generation is None else encode_generation(generation)
    sub = Subscription(topics=list(topics), user_data=user_data, owned_partitions=owned or {})
    return member_id, MemberMetadata(member_id, sub, instance)


def group(*members):
    return dict(members)


SIX = {"t0": 3, "t1": 3}


# -- range ----------------------------------------------------------------------------------


def test_range_javadoc_example():
    members = group(member("C0", ["t0", "t1"]), member("C1", ["t0", "t1"]))
    assert RangeAssignor().assign(members, SIX) == {
        "C0": {"t0": [0, 1], "t1": [0, 1]},
        "C1": {"t0": [2], "t1": [2]},
    }


def test_range_mixed_subscriptions():
    # RangeAssignorTest.testMultipleConsumersMixedTopics
    members = group(
        member("consumer1", ["topic1"]),
        member("consumer2", ["topic1", "topic2"]),
        member("consumer3", ["topic1"]),
    )
    assert RangeAssignor().assign(members, {"topic1": 3, "topic2": 2}) == {
        "consumer1": {"topic1": [0]},
        "consumer2": {"topic1": [1], "topic2": [0, 1]},
        "consumer3": {"topic1": [2]},
    }


def test_range_more_members_than_partitions_and_member_without_topics():
    members = group(member("a", ["t"]), member("b", ["t"]), member("c", ["t"]), member("d", []))
    assert RangeAssignor().assign(members, {"t": 2}) == {
        "a": {"t": [0]}, "b": {"t": [1]}, "c": {}, "d": {},
    }


def test_range_static_members_sort_by_instance_id_and_before_dynamic():
    # testTwoStaticConsumersTwoTopicsSixPartitions: instance ids decide, not member ids
    members = group(
        member("consumer-b", ["t0", "t1"], instance="instance1"),
        member("consumer-a", ["t0", "t1"], instance="instance2"),
    )
    assert RangeAssignor().assign(members, SIX)["consumer-b"] == {"t0": [0, 1], "t1": [0, 1]}
    # testOneStaticConsumerAndOneDynamicConsumer...: the static one sorts first
    members = group(
        member("consumer-b", ["t0", "t1"], instance="instance1"),
        member("consumer-a", ["t0", "t1"]),
    )
    assert RangeAssignor().assign(members, SIX)["consumer-b"] == {"t0": [0, 1], "t1": [0, 1]}


def test_range_static_assignment_survives_member_id_changes():
    # testStaticMemberRangeAssignmentPersistentAfterMemberIdChanges
    ppt = {"topic1": 5, "topic2": 5}

    def by_instance(ids):
        members = group(*(member(m, ["topic1", "topic2"], instance=i) for m, i in ids))
        out = RangeAssignor().assign(members, ppt)
        return {i: out[m] for m, i in ids}

    before = by_instance([("consumer1", "instance1"), ("consumer2", "instance2"), ("consumer3", "instance3")])
    assert before == {
        "instance1": {"topic1": [0, 1], "topic2": [0, 1]},
        "instance2": {"topic1": [2, 3], "topic2": [2, 3]},
        "instance3": {"topic1": [4], "topic2": [4]},
    }
    assert by_instance([("consumer1", "instance1"), ("consumer5", "instance2"), ("consumer4", "instance3")]) == before


def test_member_order_is_javas_utf16_order():
    # U+FF21 sorts after U+1F600 by code point but before it in UTF-16 (surrogates D83D..).
    members = group(member("\uff21", ["t"]), member("\U0001f600", ["t"]))
    assert RangeAssignor().assign(members, {"t": 3}) == {"\U0001f600": {"t": [0, 1]}, "\uff21": {"t": [2]}}


# -- roundrobin -------------------------------------------------------------------------------


def test_roundrobin_javadoc_example():
    members = group(member("C0", ["t0", "t1"]), member("C1", ["t0", "t1"]))
    assert RoundRobinAssignor().assign(members, SIX) == {
        "C0": {"t0": [0, 2], "t1": [1]},
        "C1": {"t0": [1], "t1": [0, 2]},
    }


def test_roundrobin_javadoc_uneven_subscriptions():
    members = group(member("C0", ["t0"]), member("C1", ["t0", "t1"]), member("C2", ["t0", "t1", "t2"]))
    assert RoundRobinAssignor().assign(members, {"t0": 1, "t1": 2, "t2": 3}) == {
        "C0": {"t0": [0]},
        "C1": {"t1": [0]},
        "C2": {"t1": [1], "t2": [0, 1, 2]},
    }


def test_roundrobin_javadoc_three_members_and_static_order():
    ids = [("C0", "I0"), ("C1", "I1"), ("C2", "I2")]
    expected = [{"t0": [0], "t1": [0]}, {"t0": [1], "t1": [1]}, {"t0": [2], "t1": [2]}]
    out = RoundRobinAssignor().assign(group(*(member(m, ["t0", "t1"]) for m, _ in ids)), SIX)
    assert [out[m] for m, _ in ids] == expected
    # After a rolling bounce the member ids shuffle; the instance ids keep the order.
    bounced = [("C5", "I0"), ("C3", "I1"), ("C4", "I2")]
    out = RoundRobinAssignor().assign(
        group(*(member(m, ["t0", "t1"], instance=i) for m, i in bounced)), SIX
    )
    assert [out[m] for m, _ in bounced] == expected


@pytest.mark.parametrize("cls", [RangeAssignor, RoundRobinAssignor, CooperativeStickyAssignor])
def test_missing_topics_and_empty_groups(cls):
    members = group(member("a", ["t", "gone", "empty"]), member("b", []))
    assert cls().assign(members, {"t": 2, "empty": 0, "other": 4}) == {"a": {"t": [0, 1]}, "b": {}}
    assert cls().assign(group(member("a", ["gone"])), {}) == {"a": {}}
    assert cls().assign({}, {"t": 3}) == {}


def test_eager_assignors_ignore_owned_partitions_and_send_no_user_data():
    members = group(member("b", ["t"], owned={"t": [0, 1]}), member("a", ["t"]))
    assert RangeAssignor().assign(members, {"t": 2}) == {"a": {"t": [0]}, "b": {"t": [1]}}
    for cls in (RangeAssignor, RoundRobinAssignor):
        assert cls().subscription_user_data({"t"}, {"t": [0]}, 5) is None
        assert cls.rebalance_protocol == EAGER


# -- cooperative-sticky: user data ------------------------------------------------------------------


def test_generation_user_data_is_javas_single_int32():
    a = CooperativeStickyAssignor()
    assert a.rebalance_protocol == COOPERATIVE
    assert a.subscription_user_data({"t"}, {}, DEFAULT_GENERATION) == b"\xff\xff\xff\xff"
    assert a.subscription_user_data({"t"}, {"t": [0]}, 10) == b"\x00\x00\x00\x0a"
    a.on_assignment(Assignment({"t": [0]}), 11)
    # round trip through the consumer protocol codec, as a JoinGroup carries it
    sub = decode_subscription(encode_subscription(Subscription(["t"], encode_generation(7), {"t": [0]})))
    assert decode_generation(sub.user_data) == 7


def test_generation_decoding_mirrors_java():
    assert decode_generation(None) is None  # testDecodeGeneration: absent
    assert decode_generation(b"") == DEFAULT_GENERATION  # unreadable: -1, present
    assert decode_generation(b"\x00\x01") == DEFAULT_GENERATION
    assert decode_generation(b"\x00\x00\x00\x03") == 3
    # librdkafka's StickyAssignor-v1 layout: [("t", [0, 2])], generation 9
    rdkafka = b"\x00\x00\x00\x01" + b"\x00\x01t" + b"\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x02" + b"\x00\x00\x00\x09"
    assert decode_generation(rdkafka) == 9
    assert decode_generation(b"\x00\x00\x00\x05junk") == 5  # anything else: the leading int32
    assert decode_generation(b"\x7f\xff\xff\xff" + b"\x80\x00" * 8) == 0x7FFFFFFF
    assert decode_generation(b"\x00\x00\x00\x01\xff\xff\x00\x00\x00\x00\x00\x00\x00\x02") == 1


# -- cooperative-sticky: rounds -------------------------------------------------------------------


def rejoin(members, assignment, generation):
    """Every member rejoins owning what it was just given."""
    return {
        m: MemberMetadata(m, Subscription(meta.subscription.topics, encode_generation(generation), assignment[m]),
                          meta.group_instance_id)
        for m, meta in members.items()
    }


def flat(assignment):
    return {(t, p) for parts in assignment.values() for t, ps in parts.items() for p in ps}


def counts(assignment):
    return {m: sum(len(ps) for ps in parts.values()) for m, parts in assignment.items()}


def test_cooperative_fresh_group_is_balanced():
    members = group(*(member(f"c{i}", ["t0", "t1", "t2"]) for i in range(3)))
    out = CooperativeStickyAssignor().assign(members, {"t0": 4, "t1": 3, "t2": 3})
    assert sorted(counts(out).values()) == [3, 3, 4]
    assert len(flat(out)) == 10


def test_cooperative_new_member_gets_revoked_partitions_only_in_the_second_round():
    a = CooperativeStickyAssignor()
    owned1 = {"t0": [0, 1, 2], "t1": [0, 1, 2]}
    owned2 = {"t0": [3, 4, 5], "t1": [3, 4, 5]}
    members = group(
        member("c1", ["t0", "t1"], owned1, generation=4),
        member("c2", ["t0", "t1"], owned2, generation=4),
        member("c3", ["t0", "t1"]),
    )
    ppt = {"t0": 6, "t1": 6}
    first = a.assign(members, ppt)
    assert first["c3"] == {}
    assert counts(first) == {"c1": 4, "c2": 4, "c3": 0}
    assert flat({"c1": first["c1"]}) < flat({"c1": owned1})  # kept four of its own, revoked two
    assert flat({"c2": first["c2"]}) < flat({"c2": owned2})
    revoked = flat({"c1": owned1, "c2": owned2}) - flat(first)
    assert len(revoked) == 4  # in nobody's assignment this round

    second = a.assign(rejoin(members, first, 5), ppt)
    assert flat({"c3": second["c3"]}) == revoked
    assert second["c1"] == first["c1"] and second["c2"] == first["c2"]


def test_cooperative_keeps_a_balanced_owned_assignment():
    owned = {"a": {"t0": [2], "t1": [0, 3]}, "b": {"t0": [0, 3], "t1": [2]}, "c": {"t0": [1], "t1": [1]}}
    members = group(*(member(m, ["t0", "t1"], o, generation=8) for m, o in owned.items()))
    assert CooperativeStickyAssignor().assign(members, {"t0": 4, "t1": 4}) == {
        "a": {"t0": [2], "t1": [0, 3]},
        "b": {"t0": [0, 3], "t1": [2]},
        "c": {"t0": [1], "t1": [1]},
    }


def test_cooperative_member_leaving_keeps_survivors_partitions():
    # AbstractStickyAssignor javadoc example 1: C1 leaves; C0 and C2 keep theirs.
    owned = {"C0": {"t0": [0], "t1": [1], "t3": [0]}, "C2": {"t1": [0], "t2": [1]}}
    members = group(*(member(m, ["t0", "t1", "t2", "t3"], o, generation=2) for m, o in owned.items()))
    out = CooperativeStickyAssignor().assign(members, dict.fromkeys(["t0", "t1", "t2", "t3"], 2))
    assert counts(out) == {"C0": 4, "C2": 4}
    for m, o in owned.items():
        assert flat({m: o}) <= flat({m: out[m]})


def test_cooperative_javadoc_example_2_is_balanced_and_sticky():
    ppt = {"t0": 1, "t1": 2, "t2": 3}
    members = group(member("C0", ["t0"]), member("C1", ["t0", "t1"]), member("C2", ["t0", "t1", "t2"]))
    out = CooperativeStickyAssignor().assign(members, ppt)
    assert out == {"C0": {"t0": [0]}, "C1": {"t1": [0, 1]}, "C2": {"t2": [0, 1, 2]}}
    # C0 leaves: C1 picks up t0-0; nothing else moves.
    members = rejoin({m: members[m] for m in ("C1", "C2")}, out, 1)
    assert CooperativeStickyAssignor().assign(members, ppt) == {
        "C1": {"t0": [0], "t1": [0, 1]}, "C2": {"t2": [0, 1, 2]},
    }


def test_cooperative_same_generation_double_claim_is_withheld():
    # CooperativeStickyAssignorTest ...ClaimedByMultipleConsumersInSameGeneration...
    members = group(
        member("consumer1", ["t"], {"t": [0, 1]}, generation=3),
        member("consumer2", ["t"], {"t": [0, 2]}, generation=3),
        member("consumer3", ["t"], generation=3),
    )
    out = CooperativeStickyAssignor().assign(members, {"t": 3})
    assert out == {"consumer1": {"t": [1]}, "consumer2": {"t": [2]}, "consumer3": {}}


def test_cooperative_higher_generation_wins_a_conflict():
    # testOwnedPartitionsAreInvalidatedForConsumerWithStaleGeneration / ...WithNoGeneration
    claimed = {"t": [0, 2], "t2": [1]}
    for stale in (9, None):
        members = group(
            member("consumer1", ["t", "t2"], claimed, generation=10),
            member("consumer2", ["t", "t2"], claimed, generation=stale),
        )
        out = CooperativeStickyAssignor().assign(members, {"t": 3, "t2": 3})
        assert out == {"consumer1": {"t": [0, 2], "t2": [1]}, "consumer2": {"t": [1], "t2": [0, 2]}}


def test_cooperative_unsubscribed_topic_is_revoked_before_moving():
    members = group(
        member("a", ["x"], {"x": [0], "y": [0, 1]}, generation=1),
        member("b", ["x", "y"], {"x": [1]}, generation=1),
    )
    first = CooperativeStickyAssignor().assign(members, {"x": 2, "y": 2})
    # Balance wants a: x-0, x-1 and b: y-0, y-1; x-1 is b's and y-* are a's, so all three
    # wait for their owners to revoke them.
    assert first == {"a": {"x": [0]}, "b": {}}
    second = CooperativeStickyAssignor().assign(rejoin(members, first, 2), {"x": 2, "y": 2})
    assert second == {"a": {"x": [0, 1]}, "b": {"y": [0, 1]}}


def test_cooperative_fills_the_member_without_partitions():
    # testAllConsumersReachExpectedQuotaAndAreConsideredFilled
    members = group(
        member("consumer1", ["t"], {"t": [0, 1]}), member("consumer2", ["t"], {"t": [2]}),
        member("consumer3", ["t"]),
    )
    assert CooperativeStickyAssignor().assign(members, {"t": 4}) == {
        "consumer1": {"t": [0, 1]}, "consumer2": {"t": [2]}, "consumer3": {"t": [3]},
    }


# -- lookup -------------------------------------------------------------------------------------


def test_lookup_and_strategy_lists():
    assert set(ASSIGNORS) == {"range", "roundrobin", "cooperative-sticky"}
    assert isinstance(assignor_for("roundrobin"), RoundRobinAssignor)
    assert [a.name for a in parse_strategy_list(" range, roundrobin,,range ")] == ["range", "roundrobin"]
    java = ",".join(
        f"org.apache.kafka.clients.consumer.{c}"
        for c in ("CooperativeStickyAssignor", "RangeAssignor", "RoundRobinAssignor")
    )
    assert [a.name for a in parse_strategy_list(java)] == ["cooperative-sticky", "range", "roundrobin"]
    with pytest.raises(ValueError, match="'sticky'"):
        assignor_for("sticky")
    with pytest.raises(ValueError, match="'Range'"):
        parse_strategy_list("roundrobin,Range")
    with pytest.raises(ValueError):
        parse_strategy_list(" , ")


# -- properties --------------------------------------------------------------------------------

TOPICS = ["a", "b", "c", "d"]


@st.composite
def scenarios(draw):
    ppt = {t: draw(st.integers(0, 5)) for t in draw(st.sets(st.sampled_from(TOPICS)))}
    n = draw(st.integers(1, 5))
    subs = [draw(st.lists(st.sampled_from(TOPICS + ["gone"]), max_size=4)) for _ in range(n)]
    # instance ids are unique in a group; m{i} gets i{n - i}, reversing the member-id order
    instances = [f"i{n - i}" if draw(st.booleans()) else None for i in range(n)]
    return ppt, group(*(member(f"m{i}", subs[i], instance=instances[i]) for i in range(n)))


def subscribed_partitions(members, ppt):
    return {
        (t, p)
        for meta in members.values()
        for t in set(meta.subscription.topics)
        for p in range(ppt.get(t, 0))
    }


def check_valid(members, ppt, out, exactly_once):
    assert set(out) == set(members)
    seen = []
    for m, parts in out.items():
        for t, ps in parts.items():
            assert t in members[m].subscription.topics
            assert ps == sorted(ps) and ps
            seen += [(t, p) for p in ps]
    assert len(seen) == len(set(seen))  # at most one member each
    assert set(seen) <= subscribed_partitions(members, ppt)
    if exactly_once:
        assert set(seen) == subscribed_partitions(members, ppt)


def check_balanced(members, ppt, out):
    load = counts(out)
    subs = {m: frozenset(t for t in meta.subscription.topics if ppt.get(t, 0)) for m, meta in members.items()}
    for m1, m2 in itertools.combinations(members, 2):
        if subs[m1] == subs[m2]:
            assert abs(load[m1] - load[m2]) <= 1
    # Kafka's isBalanced: no single partition could move to a member holding 2+ fewer.
    for m, parts in out.items():
        for t in parts:
            assert all(load[o] + 1 >= load[m] for o in members if t in subs[o])


@settings(max_examples=examples(200), deadline=None)
@given(scenarios())
def test_property_range_and_roundrobin_assign_each_subscribed_partition_once(scenario):
    ppt, members = scenario
    for cls in (RangeAssignor, RoundRobinAssignor):
        check_valid(members, ppt, cls().assign(members, ppt), exactly_once=True)


@settings(max_examples=examples(200), deadline=None)
@given(scenarios(), st.data())
def test_property_cooperative_converges_in_two_rounds(scenario, data):
    ppt, members = scenario
    a = CooperativeStickyAssignor()
    # A previous, settled generation (some members may have left or resubscribed since).
    previous = a.assign(members, ppt)
    check_valid(members, ppt, previous, exactly_once=True)
    check_balanced(members, ppt, previous)
    changed = {}
    for m, meta in members.items():
        topics = data.draw(st.one_of(st.just(meta.subscription.topics), st.lists(st.sampled_from(TOPICS), max_size=3)))
        owned = previous[m] if data.draw(st.booleans()) else {}  # False: lost them
        changed[m] = MemberMetadata(m, Subscription(topics, encode_generation(1), owned), meta.group_instance_id)
    for extra in range(data.draw(st.integers(0, 2))):
        changed[f"new{extra}"] = MemberMetadata(f"new{extra}", Subscription(data.draw(st.lists(st.sampled_from(TOPICS), max_size=3))))
    for gone in data.draw(st.lists(st.sampled_from(sorted(changed)), max_size=2, unique=True)):
        if len(changed) > 1:
            del changed[gone]

    first = a.assign(changed, ppt)
    check_valid(changed, ppt, first, exactly_once=False)
    owners = {(t, p): m for m, meta in changed.items() for t, ps in meta.subscription.owned_partitions.items() for p in ps}
    for m, parts in first.items():  # nothing goes to a new member while another still owns it
        assert all(owners.get((t, p), m) == m for t, ps in parts.items() for p in ps)

    second = a.assign(rejoin(changed, first, 2), ppt)
    check_valid(changed, ppt, second, exactly_once=True)
    check_balanced(changed, ppt, second)
    for m in changed:  # the second round only adds
        assert flat({m: first[m]}) <= flat({m: second[m]})


@settings(max_examples=examples(150), deadline=None)
@given(
    st.dictionaries(st.sampled_from(TOPICS), st.integers(1, 3), min_size=1, max_size=3),
    st.lists(st.lists(st.sampled_from(TOPICS), max_size=3), min_size=1, max_size=3),
)
def test_property_cooperative_minimises_the_sum_of_squared_loads(ppt, subs):
    members = group(*(member(f"m{i}", s) for i, s in enumerate(subs)))
    out = CooperativeStickyAssignor().assign(members, ppt)
    partitions = sorted(subscribed_partitions(members, ppt))
    choices = [[m for m, meta in members.items() if t in meta.subscription.topics] for t, _ in partitions]
    best = min(
        sum(pick.count(m) ** 2 for m in members) for pick in itertools.product(*choices)
    )
    assert sum(c * c for c in counts(out).values()) == best


@settings(max_examples=examples(150), deadline=None)
@given(
    st.dictionaries(st.sampled_from(TOPICS), st.integers(1, 4), min_size=1, max_size=3),
    st.lists(
        st.tuples(
            st.lists(st.sampled_from(TOPICS), max_size=3),
            st.dictionaries(st.sampled_from(TOPICS), st.lists(st.integers(0, 4), max_size=3), max_size=2),
            st.one_of(st.none(), st.integers(-1, 3)),
        ),
        min_size=1,
        max_size=4,
    ),
)
def test_property_cooperative_never_hands_over_a_validly_owned_partition(ppt, specs):
    # Arbitrary (even conflicting or out-of-range) claims at arbitrary generations.
    members = group(*(member(f"m{i}", s, o, generation=g) for i, (s, o, g) in enumerate(specs)))
    out = CooperativeStickyAssignor().assign(members, ppt)
    check_valid(members, ppt, out, exactly_once=False)
    claims: dict = {}
    for m, meta in members.items():
        gen = decode_generation(meta.subscription.user_data)
        for t, ps in meta.subscription.owned_partitions.items():
            for p in set(ps):
                claims.setdefault((t, p), []).append((DEFAULT_GENERATION if gen is None else gen, m))
    for m, parts in out.items():
        for t, ps in parts.items():
            for p in ps:
                rivals = claims.get((t, p), [])
                if any(o != m for _, o in rivals):
                    top = max(g for g, _ in rivals)
                    assert [o for g, o in rivals if g == top] == [m]


@settings(max_examples=examples(200), deadline=None)
@given(
    st.dictionaries(st.sampled_from(TOPICS), st.integers(1, 8), min_size=1, max_size=3),
    st.integers(1, 6),
    st.data(),
)
def test_property_cooperative_identical_subscriptions_keep_the_most_owned(ppt, n, data):
    # Previous owners: any disjoint claims, however unbalanced.  Balanced counts are q or
    # q + 1 (r members); at best the r biggest owners keep q + 1 and the rest keep q.
    owned: dict[str, dict[str, list[int]]] = {f"m{i}": {} for i in range(n)}
    for t, count in ppt.items():
        for p in range(count):
            holder = data.draw(st.one_of(st.none(), st.sampled_from(sorted(owned))))
            if holder is not None:
                owned[holder].setdefault(t, []).append(p)
    members = group(*(member(m, sorted(ppt), o, generation=3) for m, o in owned.items()))
    out = CooperativeStickyAssignor().assign(members, ppt)
    kept = sum(len(flat({m: o}) & flat({m: out[m]})) for m, o in owned.items())
    q, r = divmod(sum(ppt.values()), n)
    sizes = sorted((len(flat({m: o})) for m, o in owned.items()), reverse=True)
    assert kept == sum(min(c, q + 1 if i < r else q) for i, c in enumerate(sizes))
