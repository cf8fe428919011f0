"""One share-partition's in-flight records: worked examples, then a Hypothesis state machine.

The state machine runs several members against a small synthetic log (plain
batches, control batches, compaction holes and aborted transactions) with a
fake clock: fetches, acknowledgements (valid, foreign, expired and malformed),
members leaving, lock expiry, the LSO moving, and crashes that rebuild the
share-partition from the ``__share_group_state`` bytes written so far.  A
model kept from the answers alone checks, at every step, that no record is
held by two members, an accepted record is never delivered again, every
record below the SPSO is finished, no record is delivered more than
``delivery.count.limit`` times, locks never exceed the maximum, each
acknowledgement's error is the one predicted, and after a crash nothing
acknowledged is lost and everything unacknowledged is available again.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from mafka.errors import ErrorCode
from mafka.group.share.partition_state import (
    AcknowledgementBatch,
    AcknowledgeType,
    AcquiredRecords,
    FetchedBatch,
    RecordState,
    SharePartitionConfig,
    SharePartitionState,
    StateBatch,
)
from mafka.group.share.state_records import (
    SharePartitionKey,
    ShareStateShard,
    decode_record,
    restore_partition_state,
)
from tests.hypothesis_budget import examples

ACCEPT, RELEASE, REJECT, RENEW, GAP = (
    AcknowledgeType.ACCEPT,
    AcknowledgeType.RELEASE,
    AcknowledgeType.REJECT,
    AcknowledgeType.RENEW,
    AcknowledgeType.GAP,
)
OK, BAD_STATE, BAD_REQUEST = ErrorCode.NONE, ErrorCode.INVALID_RECORD_STATE, ErrorCode.INVALID_REQUEST

CONFIG = SharePartitionConfig(record_lock_duration_ms=1000, delivery_count_limit=3, max_record_locks=20)


def fresh(config: SharePartitionConfig = CONFIG, start: int = 0) -> SharePartitionState:
    state = SharePartitionState.new(config, auto_offset_reset="earliest", log_start_offset=start, log_end_offset=100)
    state.take_state_write()
    return state


def ack(first: int, last: int, *types: int) -> AcknowledgementBatch:
    return AcknowledgementBatch(first, last, tuple(int(t) for t in types))


def view(state: SharePartitionState) -> list[tuple]:
    """Everything observable about the state, to compare before and after."""
    return [
        (r.first_offset, r.last_offset, r.state, r.delivery_count, r.member_id, r.lock_expiry_ms)
        for r in state.records()
    ] + [("spso", state.start_offset, "speo", state.end_offset)]


def states(state: SharePartitionState, first: int, last: int) -> list[RecordState | None]:
    return [rec.state if (rec := state.record(o)) is not None else None for o in range(first, last + 1)]


# ---------------------------------------------------------------------- start offset


def test_auto_offset_reset_picks_the_log_start_or_end():
    earliest = SharePartitionState.new(CONFIG, auto_offset_reset="earliest", log_start_offset=7, log_end_offset=50)
    latest = SharePartitionState.new(CONFIG, auto_offset_reset="LATEST", log_start_offset=7, log_end_offset=50)
    assert (earliest.start_offset, earliest.end_offset) == (7, 7)
    assert (latest.start_offset, latest.end_offset) == (50, 50)
    write = latest.take_state_write()
    assert write is not None and write.initialize and write.start_offset == 50 and write.batches == ()
    assert latest.take_state_write() is None


def test_auto_offset_reset_rejects_other_values():
    with pytest.raises(ValueError, match="share.auto.offset.reset"):
        SharePartitionState.new(CONFIG, auto_offset_reset="none", log_start_offset=0, log_end_offset=0)


def test_config_rejects_non_positive_values():
    with pytest.raises(ValueError, match="max_record_locks"):
        SharePartitionConfig(max_record_locks=0)
    with pytest.raises(ValueError, match="delivery_count_limit"):
        SharePartitionConfig(delivery_count_limit=-1)


# ---------------------------------------------------------------------- acquire


def test_acquire_locks_records_for_the_member_with_a_delivery_count():
    state = fresh()
    got = state.acquire("m1", (0, 9), 100, now_ms=5_000)
    assert got == (AcquiredRecords(0, 9, 1),)
    [run] = state.records()
    assert (run.state, run.member_id, run.lock_expiry_ms) == (RecordState.ACQUIRED, "m1", 6_000)
    assert state.end_offset == 10 and state.next_fetch_offset() == 10
    # The same records are not acquirable again while locked.
    assert state.acquire("m2", (0, 9), 100, now_ms=5_001) == ()


def test_max_records_is_a_hard_limit_and_the_rest_stays_unfetched():
    state = fresh()
    assert state.acquire("m1", [FetchedBatch(0, 4), FetchedBatch(5, 9)], 3, 0) == (AcquiredRecords(0, 2, 1),)
    assert state.end_offset == 3
    assert state.acquire("m2", [FetchedBatch(0, 4), FetchedBatch(5, 9)], 3, 0, fetch_offset=3) == (
        AcquiredRecords(3, 5, 1),
    )


def test_the_window_never_holds_more_than_max_record_locks():
    state = fresh(SharePartitionConfig(max_record_locks=5))
    assert state.acquire("m1", (0, 99), 100, 0) == (AcquiredRecords(0, 4, 1),)
    assert state.acquire("m2", (5, 99), 100, 0) == ()
    assert state.acquired_count() == 5
    # Finishing the first records moves the SPSO and frees room.
    assert state.acknowledge("m1", [ack(0, 1, ACCEPT)], 0).error == OK
    assert state.start_offset == 2
    assert state.acquire("m2", (5, 99), 100, 0) == (AcquiredRecords(5, 6, 1),)
    assert state.end_offset - state.start_offset == 5


def test_gaps_are_archived_and_never_delivered():
    """Compaction holes, control batches (markers, delayed envelopes) and offsets before the first batch."""
    state = fresh()
    fetched = [FetchedBatch(2, 4), FetchedBatch(5, 5, control=True), FetchedBatch(8, 9)]
    got = state.acquire("m1", fetched, 100, 0, fetch_offset=0)
    assert got == (AcquiredRecords(2, 4, 1), AcquiredRecords(8, 9, 1))
    # 0-1 (before the first batch) were archived and the SPSO moved past them.
    assert state.start_offset == 2
    assert states(state, 5, 7) == [RecordState.ARCHIVED] * 3
    assert state.record(6).delivery_count == 0
    assert state.acknowledge("m1", [ack(2, 4, ACCEPT), ack(8, 9, ACCEPT)], 0).error == OK
    assert (state.start_offset, state.end_offset, list(state.records())) == (10, 10, [])
    write = state.take_state_write()
    assert write is not None and write.start_offset == 10
    assert StateBatch(5, 7, int(RecordState.ARCHIVED), 0) in write.batches


def test_read_committed_stops_at_the_lso_and_archives_aborted_records():
    state = fresh()
    got = state.acquire("m1", (0, 9), 100, 0, last_stable_offset=8, aborted=[(3, 4)])
    assert got == (AcquiredRecords(0, 2, 1), AcquiredRecords(5, 7, 1))
    assert states(state, 3, 4) == [RecordState.ARCHIVED] * 2
    assert state.end_offset == 8  # 8 and 9 are past the LSO: untouched
    assert state.acquire("m2", (0, 9), 100, 0, fetch_offset=8, last_stable_offset=10) == (AcquiredRecords(8, 9, 1),)


def test_a_record_at_the_delivery_limit_is_archived_not_delivered_again():
    state = fresh(SharePartitionConfig(delivery_count_limit=2))
    assert state.acquire("m1", (0, 0), 1, 0) == (AcquiredRecords(0, 0, 1),)
    assert state.acknowledge("m1", [ack(0, 0, RELEASE)], 0).error == OK
    assert state.record(0).state == RecordState.AVAILABLE
    assert state.acquire("m2", (0, 0), 1, 0) == (AcquiredRecords(0, 0, 2),)
    assert state.acknowledge("m2", [ack(0, 0, RELEASE)], 0).error == OK
    assert state.record(0) is None and state.start_offset == 1  # archived, and the SPSO moved past it
    assert state.acquire("m3", (0, 0), 1, 0) == ()


# ---------------------------------------------------------------------- acknowledge


def test_acknowledge_types_end_in_kafkas_states():
    state = fresh()
    state.acquire("m1", (0, 9), 100, 0)
    result = state.acknowledge("m1", [ack(1, 1, ACCEPT), ack(2, 2, RELEASE), ack(3, 3, REJECT), ack(4, 4, GAP)], 10)
    assert result.errors == (OK, OK, OK, OK)
    assert states(state, 0, 4) == [
        RecordState.ACQUIRED,
        RecordState.ACKNOWLEDGED,
        RecordState.AVAILABLE,
        RecordState.ARCHIVED,
        RecordState.ARCHIVED,
    ]
    assert state.next_fetch_offset() == 2
    write = state.take_state_write()
    assert write is not None
    assert {(b.first_offset, b.delivery_state) for b in write.batches} >= {(1, 2), (2, 0), (3, 4), (4, 4)}


def test_per_offset_acknowledge_types():
    state = fresh()
    state.acquire("m1", (0, 3), 100, 0)
    assert state.acknowledge("m1", [ack(0, 3, ACCEPT, ACCEPT, REJECT, RELEASE)], 0).error == OK
    # 0-2 are finished (ACKNOWLEDGED, ACKNOWLEDGED, ARCHIVED): the SPSO moved past them.
    assert state.start_offset == 3
    assert states(state, 2, 3) == [None, RecordState.AVAILABLE]
    write = state.take_state_write()
    assert write is not None and StateBatch(2, 2, int(RecordState.ARCHIVED), 1) in write.batches


def test_renew_restarts_the_lock_and_keeps_the_record():
    state = fresh()
    state.acquire("m1", (0, 1), 100, now_ms=0)
    assert state.acknowledge("m1", [ack(0, 0, RENEW)], now_ms=900).error == OK
    assert state.record(0).lock_expiry_ms == 1900 and state.record(1).lock_expiry_ms == 1000
    assert state.take_state_write() is not None  # the acquisition only; RENEW writes nothing
    assert state.expire_locks(1000) == 1
    assert state.record(0).state == RecordState.ACQUIRED and state.record(1).state == RecordState.AVAILABLE
    assert state.acknowledge("m1", [ack(0, 0, ACCEPT)], now_ms=1899).error == OK


@pytest.mark.parametrize(
    "why, member, batch, now",
    [
        ("another member holds it", "m2", ack(0, 1, ACCEPT), 10),
        ("never acquired", "m1", ack(5, 5, ACCEPT), 10),
        ("past the SPEO", "m1", ack(2, 50, ACCEPT), 10),
        ("partly held", "m1", ack(2, 5, ACCEPT), 10),
        ("lock expired", "m1", ack(0, 0, ACCEPT), 1000),
    ],
)
def test_invalid_record_state_changes_nothing(why, member, batch, now):
    state = fresh()
    state.acquire("m1", (0, 3), 100, now_ms=0)
    state.take_state_write()
    if now >= 1000:
        # The lock ran out: expiring it is the clock's doing, not the acknowledgement's.
        state.expire_locks(now)
        state.take_state_write()
    before = view(state)
    assert state.acknowledge(member, [batch], now).errors == (BAD_STATE,), why
    assert view(state) == before
    assert state.take_state_write() is None


def test_acknowledging_twice_is_invalid_record_state():
    state = fresh()
    state.acquire("m1", (0, 3), 100, 0)
    assert state.acknowledge("m1", [ack(1, 1, ACCEPT)], 0).error == OK
    state.take_state_write()
    before = view(state)
    assert state.acknowledge("m1", [ack(1, 1, ACCEPT)], 0).error == BAD_STATE
    assert view(state) == before and state.take_state_write() is None


def test_a_bad_range_does_not_stop_the_good_ones():
    state = fresh()
    state.acquire("m1", (0, 3), 100, 0)
    state.acquire("m2", (4, 5), 100, 0)
    result = state.acknowledge("m1", [ack(0, 1, ACCEPT), ack(3, 3, REJECT), ack(4, 4, ACCEPT)], 0)
    assert result.errors == (OK, OK, BAD_STATE) and result.error == BAD_STATE
    assert states(state, 2, 4) == [RecordState.ACQUIRED, RecordState.ARCHIVED, RecordState.ACQUIRED]
    assert state.record(4).member_id == "m2"


@pytest.mark.parametrize(
    "why, batches",
    [
        ("reversed", [ack(0, 0, ACCEPT), ack(3, 2, ACCEPT)]),
        ("overlapping", [ack(0, 2, ACCEPT), ack(2, 3, ACCEPT)]),
        ("not ascending", [ack(2, 3, ACCEPT), ack(0, 1, ACCEPT)]),
        ("unknown type", [ack(0, 1, 5)]),
        ("no types", [ack(0, 1)]),
        ("one type per offset, but too few", [ack(0, 2, ACCEPT, ACCEPT)]),
    ],
)
def test_invalid_request_refuses_the_whole_call_and_changes_nothing(why, batches):
    state = fresh()
    state.acquire("m1", (0, 3), 100, now_ms=0)
    state.take_state_write()
    before = view(state)
    # Even at a time past the locks: a refused request does not get as far as expiring them.
    result = state.acknowledge("m1", batches, now_ms=5_000)
    assert result.errors == (BAD_REQUEST,) * len(batches) and result.error == BAD_REQUEST, why
    assert view(state) == before
    assert state.take_state_write() is None


# ---------------------------------------------------------------------- time and members


def test_locks_expire_on_the_fake_clock():
    state = fresh()
    state.acquire("m1", (0, 4), 100, now_ms=1_000)
    state.acquire("m2", (5, 6), 100, now_ms=1_500)
    assert state.next_lock_expiry_ms() == 2_000
    assert state.expire_locks(1_999) == 0
    assert state.record(0).state == RecordState.ACQUIRED
    assert state.expire_locks(2_000) == 5
    assert states(state, 0, 6) == [RecordState.AVAILABLE] * 5 + [RecordState.ACQUIRED] * 2
    assert state.next_lock_expiry_ms() == 2_500 and state.next_fetch_offset() == 0
    # The expired records go to the next member with their delivery count incremented.
    assert state.acquire("m2", (0, 6), 100, now_ms=2_000) == (AcquiredRecords(0, 4, 2),)
    # Acquire (and acknowledge) expire locks at their own now_ms first.
    assert state.acquire("m3", (0, 6), 100, now_ms=2_500) == (AcquiredRecords(5, 6, 2),)


def test_an_expired_lock_at_the_delivery_limit_archives_the_record():
    state = fresh(SharePartitionConfig(record_lock_duration_ms=10, delivery_count_limit=2))
    state.acquire("m1", (0, 0), 1, now_ms=0)
    state.expire_locks(10)
    state.acquire("m1", (0, 0), 1, now_ms=10)
    assert state.expire_locks(20) == 1
    assert state.record(0) is None and state.start_offset == 1


def test_release_member_frees_only_its_records_and_keeps_the_count():
    state = fresh()
    state.acquire("m1", (0, 2), 100, 0)
    state.acquire("m2", (3, 4), 100, 0)
    assert state.release_member("m1") == 3
    assert states(state, 0, 4) == [RecordState.AVAILABLE] * 3 + [RecordState.ACQUIRED] * 2
    assert state.record(0).delivery_count == 1
    assert state.release_member("gone") == 0


# ---------------------------------------------------------------------- offsets from outside


def test_log_start_offset_moving_drops_what_is_gone():
    state = fresh()
    state.acquire("m1", (0, 9), 100, 0)
    state.take_state_write()
    state.update_log_start_offset(4)
    assert state.start_offset == 4 and state.record(3) is None
    assert state.acknowledge("m1", [ack(2, 2, ACCEPT)], 0).error == BAD_STATE
    write = state.take_state_write()
    assert write is not None and write.start_offset == 4
    state.update_log_start_offset(50)
    assert (state.start_offset, state.end_offset, list(state.records())) == (50, 50, [])


def test_reset_to_forgets_everything_and_bumps_the_state_epoch():
    state = fresh()
    state.acquire("m1", (0, 9), 100, 0)
    state.reset_to(42)
    assert (state.start_offset, state.end_offset, list(state.records()), state.state_epoch) == (42, 42, [], 1)
    write = state.take_state_write()
    assert write is not None and write.initialize and write.start_offset == 42 and write.state_epoch == 1
    assert write.batches == ()
    assert state.acknowledge("m1", [ack(0, 0, ACCEPT)], 0).error == BAD_STATE


# ---------------------------------------------------------------------- durability


def test_restore_fills_holes_and_archives_records_at_the_limit():
    batches = [StateBatch(10, 11, 2, 1), StateBatch(14, 15, 0, 3), StateBatch(16, 16, 0, 1)]
    state = SharePartitionState.restore(CONFIG, start_offset=8, batches=batches, state_epoch=2)
    assert states(state, 8, 16) == [RecordState.AVAILABLE] * 2 + [RecordState.ACKNOWLEDGED] * 2 + [
        RecordState.AVAILABLE
    ] * 2 + [RecordState.ARCHIVED] * 2 + [RecordState.AVAILABLE]
    assert state.record(12).delivery_count == 0 and state.record(16).delivery_count == 1
    assert (state.start_offset, state.end_offset, state.state_epoch) == (8, 17, 2)
    write = state.take_state_write()  # the archiving at the limit is to be persisted
    assert write is not None and write.batches == (StateBatch(14, 15, 4, 3),)


def test_without_persist_acquisitions_an_acquisition_writes_nothing():
    """Kafka's own behaviour: a failover forgets in-flight deliveries (KIP-932 says so)."""
    state = fresh(SharePartitionConfig(persist_acquisitions=False))
    state.acquire("m1", (0, 4), 100, 0)
    assert state.take_state_write() is None
    kept = fresh()
    kept.acquire("m1", (0, 4), 100, 0)
    write = kept.take_state_write()
    assert write is not None and write.batches == (StateBatch(0, 4, 0, 1),)


# ---------------------------------------------------------------------- the state machine

LIMIT = 3
LOCK_MS = 1000
MAX_LOCKS = 12
MEMBERS = ("m1", "m2", "m3")
KEY = SharePartitionKey("share-group", bytes(range(16)), 0)

log_pieces = st.lists(
    st.tuples(st.sampled_from(["data", "data", "data", "control", "hole", "aborted"]), st.integers(1, 4)),
    min_size=4,
    max_size=16,
)


class ShareMachine(RuleBasedStateMachine):
    @initialize(pieces=log_pieces, lso=st.integers(0, 80), snapshot_every=st.integers(0, 3))
    def setup(self, pieces, lso, snapshot_every):
        self.batches: list[tuple[int, int, str]] = []  # (first, last, kind), holes excluded
        self.deliverable: set[int] = set()
        offset = 0
        for kind, length in pieces:
            first, last = offset, offset + length - 1
            offset += length
            if kind != "hole":
                self.batches.append((first, last, kind))
            if kind == "data":
                self.deliverable.update(range(first, last + 1))
        self.log_end = offset
        self.lso = min(lso, self.log_end)
        self.now = 0
        self.config = SharePartitionConfig(
            record_lock_duration_ms=LOCK_MS, delivery_count_limit=LIMIT, max_record_locks=MAX_LOCKS
        )
        self.state = SharePartitionState.new(
            self.config, auto_offset_reset="earliest", log_start_offset=0, log_end_offset=self.log_end
        )
        self.snapshot_every = snapshot_every
        self.shard = ShareStateShard(snapshot_every)
        self.appended: list[tuple[bytes, bytes | None]] = []
        # The model, kept from the answers: delivery counts, holders and their lock expiry,
        # accepted records, and records finished otherwise (rejected, or archived at the limit).
        self.count: dict[int, int] = {}
        self.holder: dict[int, str] = {}
        self.expiry: dict[int, int] = {}
        self.accepted: set[int] = set()
        self.finished: set[int] = set()
        self._persist()

    # -------------------------------------------------------------- helpers

    def _persist(self):
        write = self.state.take_state_write()
        if write is None:
            return
        record = self.shard.write_state(KEY, write, self.now)
        key, value = record.key_bytes(), record.value_bytes()
        self.appended.append((key, value))
        self.shard.replay(decode_record(key, value))

    def _release(self, offset):
        del self.holder[offset], self.expiry[offset]
        if self.count[offset] >= LIMIT:
            self.finished.add(offset)

    def _model_expire(self):
        for o in [o for o, t in self.expiry.items() if t <= self.now]:
            self._release(o)

    # -------------------------------------------------------------- rules

    @rule(member=st.sampled_from(MEMBERS), max_records=st.integers(0, 6), chunk=st.integers(1, 4))
    def fetch(self, member, max_records, chunk):
        fo = self.state.next_fetch_offset()
        read = [b for b in self.batches if b[1] >= fo][:chunk]
        fetched = [FetchedBatch(first, last, control=kind == "control") for first, last, kind in read]
        aborted = [(first, last) for first, last, kind in read if kind == "aborted"]
        before = self.state.record(fo)
        was_available = before is not None and before.state == RecordState.AVAILABLE
        is_new_with_room = (
            fo == self.state.end_offset and self.state.end_offset - self.state.start_offset < MAX_LOCKS
        )
        got = self.state.acquire(
            member, fetched, max_records, self.now, fetch_offset=fo, last_stable_offset=self.lso, aborted=aborted
        )
        self._model_expire()
        delivered = 0
        for a in got:
            for o in range(a.first_offset, a.last_offset + 1):
                assert o in self.deliverable, f"gap offset {o} delivered"
                assert o < self.lso, f"offset {o} past the LSO {self.lso} delivered"
                assert o not in self.accepted, f"accepted offset {o} delivered again"
                assert o not in self.finished, f"finished offset {o} delivered again"
                assert o not in self.holder, f"offset {o} acquired by {member} while {self.holder.get(o)} holds it"
                count = self.count.get(o, 0) + 1
                assert a.delivery_count == count
                assert count <= LIMIT, f"offset {o} delivered {count} times"
                self.count[o] = count
                self.holder[o] = member
                self.expiry[o] = self.now + LOCK_MS
                delivered += 1
        assert delivered <= max_records
        # Progress: a deliverable record at the fetch offset is handed out when asked for.
        if max_records and fo in self.deliverable and fo < self.lso and self.count.get(fo, 0) < LIMIT:
            if was_available or is_new_with_room:
                assert got, f"nothing acquired at fetch offset {fo}"
        self._persist()

    @rule(data=st.data())
    def acknowledge_held(self, data):
        """A member acknowledges records it holds (some locks may have expired meanwhile)."""
        if not self.holder:
            return
        member = data.draw(st.sampled_from(sorted(set(self.holder.values()))))
        self._acknowledge(member, sorted(o for o, m in self.holder.items() if m == member), data)

    @rule(member=st.sampled_from(MEMBERS), data=st.data())
    def acknowledge_any(self, member, data):
        """A member acknowledges a mix of its records and arbitrary offsets."""
        held = [o for o, m in self.holder.items() if m == member]
        stray = data.draw(st.lists(st.integers(0, self.log_end + 2), min_size=1, max_size=3))
        self._acknowledge(member, sorted(set(held) | set(stray)), data)

    def _acknowledge(self, member, pool, data):
        chosen = sorted(set(data.draw(st.lists(st.sampled_from(pool), min_size=1, max_size=6))))
        batches: list = []
        current = [chosen[0]]
        for o in chosen[1:]:
            if o == current[-1] + 1 and data.draw(st.booleans()):
                current.append(o)
            else:
                batches.append(current)
                current = [o]
        batches.append(current)
        types = st.sampled_from([ACCEPT, ACCEPT, RELEASE, REJECT, RENEW, GAP])
        requests = []
        for offsets in batches:
            if len(offsets) > 1 and data.draw(st.booleans()):
                kinds = tuple(data.draw(types) for _ in offsets)
            else:
                kinds = (data.draw(types),)
            requests.append(AcknowledgementBatch(offsets[0], offsets[-1], tuple(int(k) for k in kinds)))
        # The acknowledgement expires locks at its now_ms first; so does the model.
        self._model_expire()
        predicted = tuple(
            OK
            if all(self.holder.get(o) == member for o in range(b.first_offset, b.last_offset + 1))
            else BAD_STATE
            for b in requests
        )
        result = self.state.acknowledge(member, requests, self.now)
        assert result.errors == predicted
        for b, code in zip(requests, result.errors, strict=True):
            if code != OK:
                continue
            for i, o in enumerate(range(b.first_offset, b.last_offset + 1)):
                kind = b.acknowledge_types[i if len(b.acknowledge_types) > 1 else 0]
                if kind == RENEW:
                    self.expiry[o] = self.now + LOCK_MS
                elif kind == RELEASE:
                    self._release(o)
                else:
                    del self.holder[o], self.expiry[o]
                    (self.accepted if kind == ACCEPT else self.finished).add(o)
        self._persist()

    @rule(member=st.sampled_from(MEMBERS), flaw=st.sampled_from(["reversed", "overlap", "type", "order"]))
    def acknowledge_malformed(self, member, flaw):
        start = self.state.start_offset
        if flaw == "reversed":
            batches = [ack(start + 3, start + 1, ACCEPT)]
        elif flaw == "overlap":
            batches = [ack(start, start + 2, ACCEPT), ack(start + 2, start + 4, REJECT)]
        elif flaw == "order":
            batches = [ack(start + 3, start + 4, ACCEPT), ack(start, start + 1, ACCEPT)]
        else:
            batches = [ack(start, start, 9)]
        before = view(self.state)
        result = self.state.acknowledge(member, batches, self.now + 10 * LOCK_MS)
        assert set(result.errors) == {BAD_REQUEST}
        assert view(self.state) == before
        assert self.state.take_state_write() is None

    @rule(ms=st.one_of(st.sampled_from([1, LOCK_MS - 1, LOCK_MS]), st.integers(0, 1500)))
    def tick(self, ms):
        self.now += ms

    @rule()
    def expire(self):
        expired = self.state.expire_locks(self.now)
        before = len(self.holder)
        self._model_expire()
        assert expired == before - len(self.holder)
        self._persist()

    @rule(member=st.sampled_from(MEMBERS))
    def member_leaves(self, member):
        released = self.state.release_member(member)
        mine = [o for o, m in self.holder.items() if m == member]
        assert released == len(mine)
        for o in mine:
            self._release(o)
        self._persist()

    @rule(step=st.integers(1, 10))
    def lso_moves(self, step):
        self.lso = min(self.log_end, self.lso + step)

    @rule()
    def crash_and_replay(self):
        """The leader and the share coordinator die; both come back from the appended bytes."""
        shard = ShareStateShard(self.snapshot_every)
        for key, value in self.appended:
            shard.replay_bytes(key, value)
        durable = shard.state(KEY)
        assert durable == self.shard.state(KEY)
        restored = restore_partition_state(self.config, durable)
        # The SPSO may move on: records restored at the delivery limit are archived at once.
        assert restored.start_offset >= self.state.start_offset
        assert restored.end_offset == self.state.end_offset
        for o in range(self.state.start_offset, self.state.end_offset):
            was, now = self.state.record(o), restored.record(o)
            if now is None:
                assert o < restored.start_offset
                assert was.state in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED) or was.delivery_count >= LIMIT
                continue
            if was.state in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED):
                assert now.state == was.state, f"offset {o}: {was.state.name} lost in the replay"
            elif was.delivery_count >= LIMIT:
                assert now.state == RecordState.ARCHIVED
            else:
                assert (now.state, now.delivery_count) == (RecordState.AVAILABLE, was.delivery_count), o
        self.state, self.shard = restored, shard
        for o in list(self.holder):
            self._release(o)
        self._persist()

    # -------------------------------------------------------------- invariants

    @invariant()
    def model_agrees(self):
        if not hasattr(self, "state"):
            return
        state = self.state
        start, end = state.start_offset, state.end_offset
        for o in self.deliverable:
            if o < start:
                assert o in self.accepted or o in self.finished, f"offset {o} below the SPSO {start} is not finished"
                continue
            rec = state.record(o)
            if rec is None:
                assert o >= end and o not in self.count
                continue
            assert rec.delivery_count == self.count.get(o, 0), o
            if o in self.holder:
                assert (rec.state, rec.member_id) == (RecordState.ACQUIRED, self.holder[o]), o
                assert rec.lock_expiry_ms == self.expiry[o]
            elif o in self.accepted:
                assert rec.state == RecordState.ACKNOWLEDGED, o
            elif o in self.finished:
                assert rec.state == RecordState.ARCHIVED, o
            else:
                assert rec.state == RecordState.AVAILABLE, o
        for o in range(start, end):
            if o not in self.deliverable:
                assert state.record(o).state == RecordState.ARCHIVED, f"gap offset {o} is not archived"
        assert all(c <= LIMIT for c in self.count.values())

    @invariant()
    def locks_are_bounded(self):
        if not hasattr(self, "state"):
            return
        assert self.state.acquired_count() <= MAX_LOCKS
        assert self.state.end_offset - self.state.start_offset <= MAX_LOCKS
        assert len(list(self.state.records())) <= MAX_LOCKS

    @invariant()
    def durable_start_offset_follows(self):
        if not hasattr(self, "state"):
            return
        assert self.shard.state(KEY).start_offset == self.state.start_offset


ShareMachine.TestCase.settings = settings(
    max_examples=examples(400),
    stateful_step_count=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_share_partition_state_machine = ShareMachine.TestCase
