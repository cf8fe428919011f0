"""Fakes for the group coordinator's seams (no reactor, no log): a clock, timers, an offsets log.

Shared by ``tests/unit/group/coordinator_harness.py`` and
``tests/unit/broker/test_group_handlers.py``.
"""

from __future__ import annotations

import heapq
from collections import defaultdict

from mafka.errors import ErrorCode as E
from mafka.group.offsets import LogRecord, TxnMarker
from mafka.group.offsets_records import GroupMetadataKey, decode_record

T0 = 1_700_000_000_000  # whole seconds: reactor.seconds() * 1000 is exact


class Clock:
    def __init__(self, now: int = T0) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


class Handle:
    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class Timers:
    """A heap of (deadline, seq, fn); advance() fires due timers at their deadline."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.heap: list = []
        self.seq = 0

    def call_later(self, delay_ms, fn):
        assert delay_ms >= 0
        handle = Handle()
        self.seq += 1
        heapq.heappush(self.heap, (self.clock.now + delay_ms, self.seq, fn, handle))
        return handle

    def advance(self, ms: int) -> None:
        target = self.clock.now + ms
        while self.heap and self.heap[0][0] <= target:
            deadline, _, fn, handle = heapq.heappop(self.heap)
            if handle.cancelled:
                continue
            self.clock.now = max(self.clock.now, deadline)
            fn()
        self.clock.now = target

    def live(self) -> int:
        return sum(1 for entry in self.heap if not entry[3].cancelled)


class FakeLog:
    """Records every append; completes it at once (auto) or holds it for release().

    ``durable[partition]`` is what a load would read back: a
    :class:`~mafka.group.offsets.LogRecord` per record (with its batch's producer id,
    transactional bit and base offset) and a :class:`~mafka.group.offsets.TxnMarker`
    per :meth:`marker`. ``producers`` holds each append's (producer id, epoch).
    """

    def __init__(self) -> None:
        self.auto = True
        self.appends: list[tuple[int, list]] = []
        self.producers: list[tuple[int, int]] = []
        self.held: list[tuple[int, list, object, int]] = []
        self.durable: dict[int, list] = defaultdict(list)
        self.next_offset: dict[int, int] = defaultdict(int)

    def append(self, partition, records, done, *, producer_id=-1, producer_epoch=-1):
        records = list(records)
        self.appends.append((partition, records))
        self.producers.append((producer_id, producer_epoch))
        if self.auto:
            self._complete(partition, records, done, E.NONE, producer_id)
        else:
            self.held.append((partition, records, done, producer_id))

    def _complete(self, partition, records, done, error, producer_id=-1):
        if error == E.NONE:
            base = self.next_offset[partition]
            self.next_offset[partition] += len(records)
            self.durable[partition].extend(
                LogRecord(k, v, producer_id, producer_id >= 0, base) for k, v in records
            )
            done(E.NONE, base)
        else:
            done(error, None)

    def release(self, error=E.NONE, index=0):
        partition, records, done, producer_id = self.held.pop(index)
        self._complete(partition, records, done, error, producer_id)

    def marker(self, partition, producer_id, commit):
        """Write a COMMIT/ABORT control batch (as the WriteTxnMarkers path would)."""
        offset = self.next_offset[partition]
        self.next_offset[partition] += 1
        self.durable[partition].append(TxnMarker(producer_id, commit, offset))

    def decoded(self, since: int = 0):
        return [decode_record(k, v) for _, records in self.appends[since:] for k, v in records]

    def group_values(self, since: int = 0):
        return [v for k, v in self.decoded(since) if isinstance(k, GroupMetadataKey)]
