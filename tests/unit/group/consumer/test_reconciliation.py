"""Reconciliation (Kafka 4's CurrentAssignmentBuilder): revoke first, assign only free partitions."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mafka.errors import FencedMemberEpochError
from mafka.group.consumer.member import ConsumerGroupMember, MemberState, partitions_of
from mafka.group.consumer.reconciliation import reconcile

FOO = b"F" * 16
BAR = b"B" * 16


def parts(**topics: tuple[int, ...]) -> dict[bytes, frozenset[int]]:
    ids = {"foo": FOO, "bar": BAR}
    return partitions_of({ids[t]: frozenset(p) for t, p in topics.items()})


def owners(taken: Mapping[tuple[bytes, int], int]):  # type: ignore[no-untyped-def]
    """A current_partition_epoch function: the given partitions are owned at the given epochs."""
    return lambda topic_id, p: taken.get((topic_id, p), -1)


NOBODY = owners({})


def member(epoch: int = 10, state: MemberState = MemberState.STABLE, **kw: object) -> ConsumerGroupMember:
    return ConsumerGroupMember("m", member_epoch=epoch, previous_member_epoch=epoch - 1, state=state, **kw)  # type: ignore[arg-type]


def test_a_member_reconciled_to_the_target_epoch_does_not_change() -> None:
    m = member(assigned_partitions=parts(foo=(0, 1)))
    assert reconcile(m, 10, parts(foo=(0, 1, 2)), NOBODY, None) is m


def test_a_member_keeping_its_partitions_moves_to_the_new_epoch_at_once() -> None:
    m = member(assigned_partitions=parts(foo=(0, 1)))
    new = reconcile(m, 11, parts(foo=(0, 1, 2), bar=(0,)), NOBODY, None)
    assert (new.state, new.member_epoch, new.previous_member_epoch) == (MemberState.STABLE, 11, 10)
    assert new.assigned_partitions == parts(foo=(0, 1, 2), bar=(0,))
    assert new.partitions_pending_revocation == {}


def test_partitions_leaving_the_target_are_revoked_before_anything_is_assigned() -> None:
    m = member(assigned_partitions=parts(foo=(0, 1, 2)))
    target = parts(foo=(0, 1), bar=(0,))  # foo-2 leaves, bar-0 arrives
    new = reconcile(m, 11, target, NOBODY, parts(foo=(0, 1, 2)))
    assert new.state is MemberState.UNREVOKED_PARTITIONS
    assert new.member_epoch == 10  # the target epoch only once the revocation is acknowledged
    assert new.assigned_partitions == parts(foo=(0, 1))  # kept partitions stay, bar-0 not yet
    assert new.partitions_pending_revocation == parts(foo=(2,))
    assert new.owned_partitions == parts(foo=(0, 1, 2))


@pytest.mark.parametrize("owned", [None, parts(foo=(0, 1, 2)), parts(foo=(2,))])
def test_an_unrevoked_member_waits_while_it_still_reports_the_revoked_partitions(owned: object) -> None:
    m = member(
        state=MemberState.UNREVOKED_PARTITIONS,
        assigned_partitions=parts(foo=(0, 1)),
        partitions_pending_revocation=parts(foo=(2,)),
    )
    assert reconcile(m, 11, parts(foo=(0, 1), bar=(0,)), NOBODY, owned) is m  # type: ignore[arg-type]


def test_an_acknowledged_revocation_moves_the_member_to_the_target_with_the_free_partitions() -> None:
    m = member(
        state=MemberState.UNREVOKED_PARTITIONS,
        assigned_partitions=parts(foo=(0, 1)),
        partitions_pending_revocation=parts(foo=(2,)),
    )
    new = reconcile(m, 11, parts(foo=(0, 1), bar=(0,)), NOBODY, parts(foo=(0, 1)))
    assert (new.state, new.member_epoch, new.previous_member_epoch) == (MemberState.STABLE, 11, 10)
    assert new.assigned_partitions == parts(foo=(0, 1), bar=(0,))
    assert new.partitions_pending_revocation == {}


def test_partitions_still_owned_by_another_member_are_not_assigned_until_released() -> None:
    m = member(assigned_partitions=parts(foo=(0,)))
    target = parts(foo=(0, 1, 2))
    busy = owners({(FOO, 1): 10, (FOO, 0): 10})  # foo-1 still owned by someone else (and foo-0 by us)
    new = reconcile(m, 11, target, busy, None)
    assert (new.state, new.member_epoch) == (MemberState.UNRELEASED_PARTITIONS, 11)
    assert new.assigned_partitions == parts(foo=(0, 2))
    # Still owned: it keeps waiting (Kafka rewrites the previous epoch to the current one here).
    again = reconcile(new, 11, target, owners({(FOO, 0): 11, (FOO, 1): 10, (FOO, 2): 11}), None)
    assert (again.state, again.member_epoch, again.assigned_partitions) == (new.state, 11, new.assigned_partitions)
    # Released: the member gets it and is stable.
    done = reconcile(new, 11, target, owners({(FOO, 0): 11, (FOO, 2): 11}), None)
    assert (done.state, done.member_epoch, done.assigned_partitions) == (MemberState.STABLE, 11, target)


def test_nothing_to_assign_but_unreleased_partitions_waits_at_the_target_epoch() -> None:
    m = member(assigned_partitions={})
    new = reconcile(m, 11, parts(foo=(3,)), owners({(FOO, 3): 9}), None)
    assert (new.state, new.member_epoch, new.assigned_partitions) == (MemberState.UNRELEASED_PARTITIONS, 11, {})


def test_partitions_the_member_no_longer_reports_are_dropped_without_waiting() -> None:
    # A member rejoining (owned = []) has already given everything up.
    m = member(assigned_partitions=parts(foo=(0, 1)))
    new = reconcile(m, 11, parts(foo=(1,)), NOBODY, {})
    assert (new.state, new.member_epoch, new.assigned_partitions) == (MemberState.STABLE, 11, parts(foo=(1,)))


def test_an_unknown_state_fences_a_member_that_still_owns_partitions() -> None:
    m = member(state=MemberState.UNKNOWN, assigned_partitions=parts(foo=(0,)))
    with pytest.raises(FencedMemberEpochError, match="must abandon all its partitions"):
        reconcile(m, 11, parts(foo=(0,)), NOBODY, parts(foo=(0,)))
    with pytest.raises(FencedMemberEpochError):
        reconcile(m, 11, parts(foo=(0,)), NOBODY, None)
    new = reconcile(m, 11, parts(foo=(0, 1)), NOBODY, {})
    assert (new.state, new.member_epoch, new.assigned_partitions) == (MemberState.STABLE, 11, parts(foo=(0, 1)))


# --------------------------------------------------------------------------- properties

partition_sets = st.dictionaries(
    st.sampled_from([FOO, BAR]), st.frozensets(st.integers(0, 5), max_size=6), max_size=2
).map(partitions_of)


@st.composite
def situations(draw: st.DrawFn):  # type: ignore[no-untyped-def]
    state = draw(st.sampled_from(list(MemberState)))
    assigned = draw(partition_sets)
    pending = (
        partitions_of({t: p - assigned.get(t, frozenset()) for t, p in draw(partition_sets).items()})
        if state is MemberState.UNREVOKED_PARTITIONS
        else {}
    )
    if state is MemberState.UNREVOKED_PARTITIONS and not pending:
        state = MemberState.STABLE  # UNREVOKED always has something to revoke
    epoch = draw(st.integers(1, 20))
    m = ConsumerGroupMember(
        "m",
        member_epoch=epoch,
        previous_member_epoch=epoch - 1,
        state=state,
        assigned_partitions=assigned,
        partitions_pending_revocation=pending,
    )
    target = draw(partition_sets)
    # A member waits for revocation only below the target epoch.
    lowest = epoch + 1 if state is MemberState.UNREVOKED_PARTITIONS else epoch
    target_epoch = draw(st.integers(lowest, epoch + 3))
    # Other members own some partitions (never this member's own); ours count as owned too.
    mine = {(t, p) for t, ps in m.owned_partitions.items() for p in ps}
    others = {
        (t, p)
        for t, ps in draw(partition_sets).items()
        for p in ps
        if (t, p) not in mine
    }
    taken = {tp: epoch for tp in mine | others}
    owned = draw(st.none() | partition_sets)
    return m, target_epoch, target, taken, others, owned


@given(situations())
def test_reconciliation_invariants(case) -> None:  # type: ignore[no-untyped-def]
    m, target_epoch, target, taken, others, owned = case
    try:
        new = reconcile(m, target_epoch, target, owners(taken), owned)
    except FencedMemberEpochError:
        assert m.state is MemberState.UNKNOWN and (owned is None or owned)
        return
    before = {(t, p) for t, ps in m.owned_partitions.items() for p in ps}
    after = {(t, p) for t, ps in new.owned_partitions.items() for p in ps}
    kept = {(t, p) for t, ps in m.assigned_partitions.items() for p in ps if p in target.get(t, frozenset())}
    assigned_after = {(t, p) for t, ps in new.assigned_partitions.items() for p in ps}
    # Never takes a partition another member owns.
    assert not (after - before) & others
    # Never loses an assigned partition its target still holds.
    assert kept <= assigned_after
    # Everything it holds is in its target or on its way out.
    pending_after = {(t, p) for t, ps in new.partitions_pending_revocation.items() for p in ps}
    assert all(p in target.get(t, frozenset()) for t, p in assigned_after) or new is m
    assert pending_after <= before
    # Epochs never go down, and never past the target.
    assert m.member_epoch <= new.member_epoch <= max(target_epoch, m.member_epoch)
    # New partitions only arrive with the target epoch.
    if assigned_after - before:
        assert new.member_epoch == target_epoch
    if new.state is MemberState.UNREVOKED_PARTITIONS:
        assert new.partitions_pending_revocation
