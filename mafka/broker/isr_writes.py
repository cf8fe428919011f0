"""The partition leader's ISR writes, gathered per reactor turn into one ZooKeeper batch.

Why: a leader writes a partition's state itself when its ISR shrinks or
expands (Kafka 2.6's ``ReplicationUtils.updateLeaderAndIsr``; Kafka 2.7+
sends AlterIsr to the controller, which batches).  When a broker restarts
with 100,000 partitions, every partition's ISR expands within seconds:
100,000 single ``setData`` requests, each with its own kazoo round of
Python work on the broker.  :class:`IsrWriteBatcher` hands the writes asked
for in one reactor turn to one batch call (independent compare-and-sets,
which the store sends as few multis); each caller still gets its own
partition's outcome, exactly as from a single write.

Plain Python with the clock injected (``callLater``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from twisted.internet import defer

__all__ = ["IsrWriteBatcher"]

Write = tuple[Any, int]  # (LeaderIsrAndControllerEpoch, expected zkVersion)
WriteMany = Callable[[Mapping[tuple[str, int], Write]], "defer.Deferred[dict[tuple[str, int], tuple[bool, int]]]"]


class IsrWriteBatcher:
    """``write(tp, state, expected_version)`` → Deferred of ``(written, new zkVersion or -1)``.

    Writes asked for before the reactor's next turn go in one ``write_many`` call.  Two writes of
    one partition never share a batch (the later starts the next batch), so they are applied in order.

    Args:
        clock: ``IReactorTime``.
        write_many: Partition → (state, expected version) to per-partition outcomes (the ZooKeeper
            client's ``conditional_update_partition_states_as_leader``).
    """

    def __init__(self, clock: Any, write_many: WriteMany) -> None:
        self._clock = clock
        self._write_many = write_many
        self._pending: dict[tuple[str, int], tuple[Write, defer.Deferred]] = {}
        self._call: Any = None
        #: batches sent, and writes in them
        self.batches = 0
        self.writes = 0

    def write(self, tp: tuple[str, int], state: Any, expected_version: int) -> defer.Deferred:
        if tp in self._pending:
            self._flush()
        d: defer.Deferred = defer.Deferred()
        self._pending[tp] = ((state, expected_version), d)
        if self._call is None:
            self._call = self._clock.callLater(0, self._flush)
        return d

    def _flush(self) -> None:
        if self._call is not None and self._call.active():
            self._call.cancel()
        self._call = None
        batch, self._pending = self._pending, {}
        if not batch:
            return
        self.batches += 1
        self.writes += len(batch)
        sent = defer.maybeDeferred(self._write_many, {tp: write for tp, (write, _d) in batch.items()})

        def answered(results: dict[tuple[str, int], tuple[bool, int]]) -> None:
            for tp, (_write, d) in batch.items():
                d.callback(results.get(tp, (False, -1)))

        def failed(failure: Any) -> None:
            for _write, d in batch.values():
                d.errback(failure)

        sent.addCallbacks(answered, failed)
