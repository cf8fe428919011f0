"""Share sessions for ShareFetch / ShareAcknowledge: opening, epochs, incremental partitions,
closing, the session limit, members leaving and connections closing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mafka.errors import (
    ConfigError,
    ErrorCode,
    InvalidRequestError,
    InvalidShareSessionEpochError,
    KafkaError,
    ShareSessionLimitReachedError,
    ShareSessionNotFoundError,
)
from mafka.group.share.sessions import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    ShareFetchContextKind,
    ShareSessionCache,
    next_epoch,
)
from tests.hypothesis_budget import examples

T1 = b"\x01" * 16
T2 = b"\x02" * 16
G = "g"


def test_epoch_zero_opens_a_session_with_the_requests_partitions() -> None:
    cache = ShareSessionCache()
    ctx = cache.new_context(G, "m", INITIAL_EPOCH, [(T1, 0), (T1, 1)], connection_id="c1")
    assert ctx.kind is ShareFetchContextKind.NEW_SESSION
    assert ctx.partitions == ((T1, 0), (T1, 1))
    session = cache.get(G, "m")
    assert session is not None and session.epoch == 1 and session.connection_id == "c1"
    assert (len(cache), cache.total_partitions, cache.members(G)) == (1, 2, 1)


def test_subsequent_fetches_add_and_forget_partitions_and_move_the_epoch() -> None:
    cache = ShareSessionCache()
    cache.new_context(G, "m", 0, [(T1, 0)])
    ctx = cache.new_context(G, "m", 1, [(T2, 3), (T1, 0)], [])
    assert ctx.kind is ShareFetchContextKind.SUBSEQUENT
    assert (ctx.added, ctx.updated, ctx.removed) == (((T2, 3),), ((T1, 0),), ())
    assert ctx.partitions == ((T1, 0), (T2, 3))  # everything the session holds is fetched
    ctx = cache.new_context(G, "m", 2, [], [(T1, 0), (T1, 9)])
    assert (ctx.removed, ctx.partitions) == (((T1, 0),), ((T2, 3),))  # forgetting an absent one is harmless
    ctx = cache.new_context(G, "m", 3)  # nothing changes: still fetches what it holds
    assert ctx.partitions == ((T2, 3),)
    assert cache.get(G, "m").epoch == 4  # type: ignore[union-attr]


@pytest.mark.parametrize("epoch", [0, 1, 3, 5, -2])
def test_a_wrong_epoch_is_refused_and_changes_nothing(epoch: int) -> None:
    cache = ShareSessionCache()
    cache.new_context(G, "m", 0, [(T1, 0)])
    cache.new_context(G, "m", 1)
    if epoch == 0:
        # ShareAcknowledge never opens a session
        with pytest.raises(InvalidShareSessionEpochError):
            cache.acknowledge_session_update(G, "m", epoch)
    else:
        with pytest.raises(InvalidShareSessionEpochError) as info:
            cache.new_context(G, "m", epoch, [(T2, 0)])
        assert info.value.code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
        with pytest.raises(InvalidShareSessionEpochError):
            cache.acknowledge_session_update(G, "m", epoch)
    session = cache.get(G, "m")
    assert session is not None and (session.epoch, session.partitions) == (2, ((T1, 0),))


def test_unknown_sessions_are_not_found() -> None:
    cache = ShareSessionCache()
    for epoch in (1, FINAL_EPOCH):
        with pytest.raises(ShareSessionNotFoundError) as info:
            cache.new_context(G, "m", epoch)
        assert info.value.code == ErrorCode.SHARE_SESSION_NOT_FOUND
        with pytest.raises(ShareSessionNotFoundError):
            cache.acknowledge_session_update(G, "m", epoch)
    with pytest.raises(ShareSessionNotFoundError):
        cache.release_session(G, "m")
    cache.new_context(G, "other", 0)
    with pytest.raises(ShareSessionNotFoundError):
        cache.new_context("other-group", "other", 1)  # the key is (group, member)


def test_acknowledgements_cannot_open_a_session() -> None:
    cache = ShareSessionCache()
    with pytest.raises(InvalidRequestError):
        cache.new_context(G, "m", 0, [(T1, 0)], has_acknowledgements=True)
    assert len(cache) == 0


def test_share_acknowledge_moves_the_epoch_shared_with_share_fetch() -> None:
    cache = ShareSessionCache()
    cache.new_context(G, "m", 0, [(T1, 0)])
    cache.acknowledge_session_update(G, "m", 1)
    cache.new_context(G, "m", 2)
    cache.acknowledge_session_update(G, "m", 3)
    assert cache.get(G, "m").epoch == 4  # type: ignore[union-attr]


def test_the_final_epoch_fetches_nothing_then_closes_the_session() -> None:
    cache = ShareSessionCache()
    cache.new_context(G, "m", 0, [(T1, 0), (T2, 1)])
    ctx = cache.new_context(G, "m", FINAL_EPOCH, [(T1, 5)], has_acknowledgements=True)
    assert (ctx.kind, ctx.partitions) == (ShareFetchContextKind.FINAL, ())
    cache.acknowledge_session_update(G, "m", FINAL_EPOCH)  # final ShareAcknowledge: no change
    assert cache.get(G, "m").epoch == 1  # type: ignore[union-attr]
    assert cache.release_session(G, "m") == ((T1, 0), (T2, 1))  # the member's records there are released
    assert cache.get(G, "m") is None and cache.total_partitions == 0


def test_epoch_zero_replaces_the_members_session() -> None:
    cache = ShareSessionCache(max_entries=1)
    cache.new_context(G, "m", 0, [(T1, 0)], connection_id="c1")
    cache.new_context(G, "m", 1)
    ctx = cache.new_context(G, "m", 0, [(T2, 0)], connection_id="c2")  # its own old session does not count
    assert ctx.partitions == ((T2, 0),)
    session = cache.get(G, "m")
    assert session is not None and (session.epoch, session.partitions, session.connection_id) == (1, ((T2, 0),), "c2")
    # the old connection closing does not remove the new session
    assert cache.on_disconnect("c1") is None
    assert cache.get(G, "m") is session


def test_the_session_limit() -> None:
    cache = ShareSessionCache(max_entries=2)
    cache.new_context(G, "a", 0)
    cache.new_context(G, "b", 0)
    with pytest.raises(ShareSessionLimitReachedError) as info:
        cache.new_context(G, "c", 0)
    assert info.value.code == ErrorCode.SHARE_SESSION_LIMIT_REACHED
    assert cache.get(G, "c") is None
    cache.release_session(G, "a")
    cache.new_context(G, "c", 0)
    with pytest.raises(ConfigError, match="group.share.max.share.sessions"):
        ShareSessionCache(max_entries=0)


def test_sessions_go_when_their_member_leaves_or_their_connection_closes() -> None:
    cache = ShareSessionCache()
    cache.new_context(G, "a", 0, [(T1, 0)], connection_id="ca")
    cache.new_context(G, "b", 0, [(T1, 0)], connection_id="cb")
    cache.new_context("h", "a", 0, connection_id="cx")
    removed = cache.remove_member(G, "a")
    assert removed is not None and removed.partitions == ((T1, 0),)
    assert cache.remove_member(G, "a") is None
    assert cache.on_disconnect("ca") is None  # already gone with its member
    gone = cache.on_disconnect("cb")
    assert gone is not None and gone.key.member_id == "b"
    assert cache.on_disconnect("cb") is None and cache.on_disconnect("never") is None
    assert [s.key.group_id for s in cache.remove_group("h")] == ["h"]
    assert len(cache) == 0
    cache.new_context(G, "z", 0)
    cache.remove_all()
    assert len(cache) == 0


def test_next_epoch_wraps_and_final_stays_final() -> None:
    assert next_epoch(0) == 1
    assert next_epoch(41) == 42
    assert next_epoch(2**31 - 1) == 1
    assert next_epoch(FINAL_EPOCH) == FINAL_EPOCH


@settings(max_examples=examples(200))
@given(st.lists(st.tuples(st.sampled_from(["fetch", "ack", "bad", "open", "close"]), st.sets(st.integers(0, 3))), max_size=30))
def test_a_well_behaved_client_is_never_refused(ops: list[tuple[str, set[int]]]) -> None:
    """A client that keeps its own epoch (as librdkafka does) and a model of its partitions:
    the broker agrees with the model at every step, and a stray epoch is always refused."""
    cache = ShareSessionCache()
    epoch: int | None = None
    model: list[tuple[bytes, int]] = []
    for op, parts in ops:
        tps = [(T1, p) for p in sorted(parts)]
        if op == "open" or epoch is None:
            cache.new_context(G, "m", 0, tps)
            model, epoch = list(tps), 1
        elif op == "fetch":
            forget = [tp for tp in model if tp[1] % 2 == 1 and tp not in tps]
            ctx = cache.new_context(G, "m", epoch, tps, forget)
            model = [tp for tp in model if tp not in forget] + [tp for tp in tps if tp not in model]
            assert list(ctx.partitions) == model
            epoch = next_epoch(epoch)
        elif op == "ack":
            cache.acknowledge_session_update(G, "m", epoch)
            epoch = next_epoch(epoch)
        elif op == "bad":
            with pytest.raises(KafkaError):
                cache.new_context(G, "m", epoch + 1 + len(parts))
        else:
            cache.new_context(G, "m", FINAL_EPOCH)
            assert list(cache.release_session(G, "m")) == model
            epoch, model = None, []
        session = cache.get(G, "m")
        assert (session is None) == (epoch is None)
        if session is not None:
            assert session.epoch == epoch and list(session.partitions) == model
