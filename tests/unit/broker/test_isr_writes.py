"""IsrWriteBatcher: the leader's ISR writes of one reactor turn go in one batch, outcomes per partition."""

from __future__ import annotations

from typing import Any

from twisted.internet import defer
from twisted.internet.task import Clock

from mafka.broker.isr_writes import IsrWriteBatcher


class Writer:
    def __init__(self) -> None:
        self.batches: list[dict[tuple[str, int], Any]] = []
        self.answers: list[defer.Deferred] = []

    def __call__(self, writes: Any) -> defer.Deferred:
        self.batches.append(dict(writes))
        d: defer.Deferred = defer.Deferred()
        self.answers.append(d)
        return d


def outcome(d: defer.Deferred) -> Any:
    got: list[Any] = []
    d.addBoth(got.append)
    return got[0] if got else None


def test_writes_of_one_turn_share_a_batch_and_each_gets_its_own_outcome() -> None:
    clock, writer = Clock(), Writer()
    batcher = IsrWriteBatcher(clock, writer)
    a = batcher.write(("t", 0), "s0", 3)
    b = batcher.write(("t", 1), "s1", 7)
    assert writer.batches == []  # not before the reactor's next turn
    clock.advance(0)
    assert writer.batches == [{("t", 0): ("s0", 3), ("t", 1): ("s1", 7)}]
    writer.answers[0].callback({("t", 0): (True, 4), ("t", 1): (False, -1)})
    assert (outcome(a), outcome(b)) == ((True, 4), (False, -1))
    c = batcher.write(("t", 0), "s0'", 4)
    clock.advance(0)
    assert len(writer.batches) == 2 and batcher.batches == 2 and batcher.writes == 3
    writer.answers[1].callback({})  # a partition missing from the answer was not written
    assert outcome(c) == (False, -1)


def test_a_second_write_of_a_partition_starts_the_next_batch_and_a_failure_reaches_every_caller() -> None:
    clock, writer = Clock(), Writer()
    batcher = IsrWriteBatcher(clock, writer)
    first = batcher.write(("t", 0), "shrink", 3)
    other = batcher.write(("t", 1), "x", 1)
    second = batcher.write(("t", 0), "expand", 4)
    assert writer.batches == [{("t", 0): ("shrink", 3), ("t", 1): ("x", 1)}]  # sent at once, in order
    clock.advance(0)
    assert writer.batches[1] == {("t", 0): ("expand", 4)}
    writer.answers[0].errback(ConnectionError("lost"))
    for d in (first, other):
        failure = outcome(d)
        assert failure is not None and failure.check(ConnectionError)
    writer.answers[1].callback({("t", 0): (True, 5)})
    assert outcome(second) == (True, 5)
