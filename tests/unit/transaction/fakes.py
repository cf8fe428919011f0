"""Fakes for the transaction coordinator's seams: a state log, producer ids, a marker sink.

The clock and timers are the group coordinator's fakes (same ``Timers`` protocol).
"""

from __future__ import annotations

from mafka.errors import ErrorCode as E
from mafka.transaction.log_records import decode_key, decode_value
from tests.unit.group.fakes import T0, Clock, Timers

__all__ = ["T0", "Box", "Clock", "FakeMarkers", "FakeProducerIds", "FakeStateLog", "Timers"]


class Box:
    """A respond callable; .value insists it was called exactly once."""

    def __init__(self) -> None:
        self.results: list = []

    def __call__(self, *args) -> None:
        self.results.append(args[0] if len(args) == 1 else args)

    @property
    def done(self) -> bool:
        return bool(self.results)

    @property
    def value(self):
        assert len(self.results) == 1, self.results
        return self.results[0]


class FakeStateLog:
    """Records every append; completes it at once with NONE (auto) or holds it for release()."""

    def __init__(self) -> None:
        self.auto = True
        self.appends: list[tuple[int, list]] = []
        self.held: list[tuple[int, list, object]] = []
        self.durable: dict[int, list] = {}

    def append(self, partition, records, done):
        records = list(records)
        self.appends.append((partition, records))
        if self.auto:
            self._complete(partition, records, done, E.NONE)
        else:
            self.held.append((partition, records, done))

    def _complete(self, partition, records, done, error):
        if error == E.NONE:
            self.durable.setdefault(partition, []).extend(records)
        done(error)

    def release(self, error=E.NONE, index=0):
        partition, records, done = self.held.pop(index)
        self._complete(partition, records, done, error)

    def decoded(self, since: int = 0):
        """[(transactional id, TransactionLogValue | None)] of the appends since ``since``."""
        return [(decode_key(k), decode_value(v)) for _, records in self.appends[since:] for k, v in records]

    def last_value(self):
        return self.decoded()[-1][1]


class FakeProducerIds:
    """Hands out 1000, 1001, … at once (auto) or holds each request for release()."""

    def __init__(self, first: int = 1000) -> None:
        self.next_id = first
        self.auto = True
        self.held: list = []
        self.calls = 0

    def generate(self, done):
        self.calls += 1
        if self.auto:
            self._give(done)
        else:
            self.held.append(done)

    def _give(self, done):
        pid = self.next_id
        self.next_id += 1
        done(E.NONE, pid)

    def release(self, error=E.NONE, index=0):
        done = self.held.pop(index)
        if error == E.NONE:
            self._give(done)
        else:
            done(error, -1)


class FakeMarkers:
    """Records every send_markers call; complete(i) reports its markers written."""

    def __init__(self) -> None:
        self.sent: list[dict] = []

    def send_markers(self, coordinator_epoch, transactional_id, producer_id, producer_epoch, result,
                     partitions, on_complete):
        self.sent.append({
            "coordinator_epoch": coordinator_epoch,
            "transactional_id": transactional_id,
            "producer_id": producer_id,
            "producer_epoch": producer_epoch,
            "result": result,
            "partitions": set(partitions),
            "on_complete": on_complete,
        })

    def complete(self, index: int = -1) -> None:
        self.sent[index]["on_complete"]()
