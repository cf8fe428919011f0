"""A Hypothesis state machine drives the log against a simple in-memory model.

Appends (as leader), follower appends, reads at random offsets, rolls,
truncation, retention by time, DeleteRecords, flushes and clean and unclean
restarts: after every step a full read of the log equals the model record
for record, and a read at a random offset returns the batch holding it.

``MAFKA_STATEFUL_EXAMPLES=1500`` runs a deeper search (about a minute).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from mafka.log.config import LogConfig
from mafka.log.epoch_cache import LeaderEpochCache
from mafka.log.log import Log
from mafka.wire.records import Record, build_batch, iter_records
from tests.hypothesis_budget import examples

CONFIG = LogConfig(segment_bytes=1200, index_interval_bytes=150, retention_ms=10_000)
payloads = st.binary(max_size=40)


def read_all(log: Log, start: int, end: int) -> list[tuple]:
    """Every record in [start, end) through log.read, 300 bytes at a time."""
    out = []
    offset = start
    while offset < end:
        info = log.read(offset, 300)
        assert info.region is not None, f"nothing at {offset} < {end}"
        got = [r for r in iter_records(info.read()) if r.offset >= offset]
        assert got, f"read at {offset} returned no whole record"
        out.extend((r.offset, r.timestamp, r.key, r.value) for r in got)
        offset = got[-1].offset + 1
    return out


class LogMachine(RuleBasedStateMachine):
    @initialize()
    def open_log(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="mafka-log-"))
        self.dir = self.tmp / "topic-0"
        self.now = [1_000_000]
        self.epoch = 0
        # model: batches as (base, last, [(offset, ts, key, value)])
        self.batches: list[tuple[int, int, list[tuple]]] = []
        self.start = 0
        self.end = 0
        self.log = self._open(clean=True, recovery_point=0, log_start=0)

    def _open(self, *, clean: bool, recovery_point: int, log_start: int) -> Log:
        cache = LeaderEpochCache.in_dir(self.dir) if self.dir.exists() else None
        return Log.open(
            self.dir,
            CONFIG,
            lambda: self.now[0],
            log_start_offset=log_start,
            recovery_point=recovery_point,
            had_clean_shutdown=clean,
            epoch_cache=cache,
        )

    def teardown(self):
        self.log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def _records(self, values, base):
        ts = self.now[0]
        return [Record(offset=base + i, timestamp=ts + i, key=b"k%d" % (base + i), value=v) for i, v in enumerate(values)]

    def _model_append(self, records):
        rows = [(r.offset, r.timestamp, r.key, r.value) for r in records]
        self.batches.append((rows[0][0], rows[-1][0], rows))
        self.end = rows[-1][0] + 1

    @rule(values=st.lists(payloads, min_size=1, max_size=6), bump_epoch=st.booleans(), codec=st.sampled_from([0, 0, 1, 3]))
    def append_as_leader(self, values, bump_epoch, codec):
        if bump_epoch:
            self.epoch += 1
        records = self._records(values, self.end)
        # Producers send base offset 0; the log assigns the real ones.
        produced = build_batch([r.__class__(i, r.timestamp, r.key, r.value) for i, r in enumerate(records)], compression=codec)
        info = self.log.append_as_leader(produced, self.epoch)
        assert info.first_offset == self.end
        assert info.last_offset == self.end + len(values) - 1
        self._model_append(records)
        self.now[0] += 7

    @rule(values=st.lists(payloads, min_size=1, max_size=6), gap=st.integers(0, 3))
    def append_as_follower(self, values, gap):
        base = self.end + gap
        records = self._records(values, base)
        self.log.append_as_follower(build_batch(records, base_offset=base, partition_leader_epoch=self.epoch))
        self._model_append(records)
        self.now[0] += 7

    @rule()
    def roll(self):
        self.log.roll()

    @precondition(lambda self: self.batches)
    @rule(data=st.data())
    def truncate(self, data):
        target = data.draw(st.integers(self.start, self.end))
        self.log.truncate_to(target)
        # Whole batches holding offsets ≥ target go (a batch cut in its middle goes entirely).
        self.batches = [b for b in self.batches if b[1] < target]
        if self.batches:
            self.end = self.batches[-1][1] + 1
        else:  # nothing left: the log end falls back to its first segment's base
            assert self.log.next_offset <= target
            self.end = self.log.next_offset
        if self.end < self.start:  # nothing left at or above the log start
            self.batches, self.end = [], self.start

    @precondition(lambda self: self.end > self.start)
    @rule(data=st.data())
    def delete_records(self, data):
        new_start = data.draw(st.integers(self.start, self.end))
        self.log.increment_log_start_offset(new_start)
        assert self.log.log_start_offset == new_start
        self.log.delete_old_segments(high_watermark=self.end)  # time retention may apply too
        assert self.log.log_start_offset >= new_start
        self.start = self.log.log_start_offset
        assert self.log.segments[0].base_offset <= self.start

    @rule(advance=st.integers(0, 20_000))
    def retention_by_time(self, advance):
        self.now[0] += advance
        self.log.delete_old_segments(high_watermark=self.end)
        assert self.log.log_start_offset >= self.start
        self.start = self.log.log_start_offset

    @rule()
    def flush(self):
        self.log.flush()
        assert self.log.recovery_point == self.end

    @rule(clean=st.booleans())
    def restart(self, clean):
        recovery_point, log_start = self.log.recovery_point, self.log.log_start_offset
        if clean:
            self.log.flush()
            recovery_point = self.log.recovery_point
        # An unclean stop loses nothing already written to the page cache:
        # the reopened log must equal the model, recovered from the recovery point.
        self.log.close()
        self.log = self._open(clean=clean, recovery_point=recovery_point, log_start=log_start)

    @precondition(lambda self: self.end > self.start)
    @rule(data=st.data())
    def read_at_random_offset(self, data):
        offset = data.draw(st.integers(self.start, self.end - 1))
        info = self.log.read(offset, 1)  # KIP-74: one whole batch even with max_bytes=1
        records = list(iter_records(info.read()))
        holding = [b for b in self.batches if b[0] <= offset <= b[1]]
        if holding:
            assert [(r.offset, r.timestamp, r.key, r.value) for r in records] == holding[0][2]
        else:  # offset in a follower gap: the next batch is returned
            assert records and records[0].offset > offset

    @invariant()
    def log_equals_model(self):
        if not hasattr(self, "log"):
            return
        assert self.log.next_offset == self.end
        assert self.log.log_start_offset == self.start
        expected = [row for b in self.batches for row in b[2] if row[0] >= self.start]
        got = read_all(self.log, self.start, self.end)
        # A read may start inside a batch that straddles the log start offset.
        assert [row for row in got if row[0] >= self.start] == expected

    @invariant()
    def epoch_cache_ends_at_log_end(self):
        if not hasattr(self, "log"):
            return
        latest = self.log.epoch_cache.latest_epoch
        if latest is not None:
            assert self.log.epoch_cache.end_offset_for(latest, self.log.next_offset) == (latest, self.log.next_offset)
            assert all(e.start_offset <= self.log.next_offset for e in self.log.epoch_cache.entries)


LogMachine.TestCase.settings = settings(
    max_examples=int(os.environ.get("MAFKA_STATEFUL_EXAMPLES", examples(150))), stateful_step_count=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
TestLogAgainstModel = LogMachine.TestCase
