"""No work silently stops on an exception inside a Deferred callback (issue 28).

An exception raised in a callback nobody handles becomes "Unhandled error in
Deferred" (logged at garbage collection, if ever) and whatever the callback
was to do next never happens.  Each case here makes a callback raise and
shows the Deferred ends without a failure and the work goes on: the
coordinators' appends and loads (``internal_topics``), an ISR write
(``ReplicaManager._write_isr``), a WriteTxnMarkers answer (``TxnMarkerChannel``)
and a producer-id claim (``TransactionService``).
"""

from __future__ import annotations

import logging
from types import SimpleNamespace

from twisted.internet import defer, task
from twisted.python.failure import Failure

from mafka.broker.internal_topics import append_coordinator_batch, load_on_leadership
from mafka.broker.replica_manager import ProduceResult, ReplicaManager
from mafka.broker.transaction_service import _ProducerIds
from mafka.errors import ErrorCode as E

from .test_group_service import FakeReplicaManager, append_broker
from .test_txn_markers import _answer, _World

log = logging.getLogger("test")


def ended_cleanly(d: defer.Deferred) -> bool:
    return d.called and not isinstance(d.result, Failure)


# ------------------------------------------------------------------ internal_topics


def test_an_exception_in_the_append_callback_is_logged_not_left_in_the_deferred(caplog):
    broker = append_broker()
    outcomes = []

    def done(error, offset):
        outcomes.append((error, offset))
        raise RuntimeError("the coordinator's continuation broke")

    with caplog.at_level(logging.ERROR, logger="test"):
        append_coordinator_batch(broker, "__consumer_offsets", 3, b"batch", done, acks=-1, timeout_ms=5000, logger=log)
        append_coordinator_batch(broker, "__consumer_offsets", 3, b"batch", done, acks=-1, timeout_ms=5000, logger=log)
        ok, failed = broker.replica_manager.deferreds
        ok.callback({("__consumer_offsets", 3): ProduceResult(E.NONE, 17)})
        failed.errback(RuntimeError("replica manager broke"))
    assert outcomes == [(E.NONE, 17), (E.UNKNOWN_SERVER_ERROR, None)]
    assert ended_cleanly(ok) and ended_cleanly(failed)
    logged = [r for r in caplog.records if "coordinator append failed" in r.getMessage()]
    assert len(logged) == 2 and all(r.exc_info[0] is RuntimeError for r in logged)  # with the traceback


def test_an_unreadable_append_result_still_calls_done_once():
    broker = append_broker()
    outcomes = []
    append_coordinator_batch(broker, "__consumer_offsets", 3, b"batch", lambda *a: outcomes.append(a),
                             acks=-1, timeout_ms=5000, logger=log)
    (d,) = broker.replica_manager.deferreds
    d.callback({})  # no result for the partition
    assert outcomes == [(E.UNKNOWN_SERVER_ERROR, None)] and ended_cleanly(d)


class LoadingCoordinator:
    def __init__(self, *, broken_replay: bool) -> None:
        self.broken_replay = broken_replay
        self.events: list = []

    def on_elected(self, index, epoch):
        self.events.append(("elected", index, epoch))
        return True

    def complete_load(self, index, epoch, records):
        self.events.append(("complete", index, epoch))
        if self.broken_replay:
            raise ValueError("a record the replay did not expect")
        return True

    def fail_load(self, index, epoch):
        self.events.append(("fail", index, epoch))


def test_a_replay_that_raises_gives_the_load_up_instead_of_loading_forever(caplog):
    loads: list[defer.Deferred] = []

    def run_blocking(fn, *args):
        d: defer.Deferred = defer.Deferred()
        loads.append(d)
        return d

    rm = FakeReplicaManager()
    rm.partitions[("__transaction_state", 4)] = SimpleNamespace(log=object())
    broker = SimpleNamespace(replica_manager=rm, run_blocking=run_blocking)
    coordinator = LoadingCoordinator(broken_replay=True)
    with caplog.at_level(logging.ERROR, logger="test"):
        load_on_leadership(broker, coordinator, "__transaction_state", 4, True, 9, lambda *_: [], 1024, log)
        loads[0].callback([(b"k", b"v")])
    assert coordinator.events == [("elected", 4, 9), ("complete", 4, 9), ("fail", 4, 9)]
    assert ended_cleanly(loads[0])
    assert "a record the replay did not expect" in caplog.text


# ------------------------------------------------------------------ ReplicaManager._write_isr


class ShrinkingPartition:
    tp = ("t", 0)
    leader_epoch = 3
    isr = (1, 2, 3)

    def __init__(self) -> None:
        self.pending_isr = None
        self.completions: list = []

    def begin_isr_change(self, new_isr):
        self.pending_isr = tuple(new_isr)
        return "state", 5

    def complete_isr_change(self, new_isr, epoch, zk_version, now_ms=0):
        self.completions.append(zk_version)
        if zk_version is not None:
            raise RuntimeError("advancing the high watermark broke")
        self.pending_isr = None
        return False


def test_an_isr_write_whose_outcome_cannot_be_applied_does_not_stay_pending(caplog):
    writes: list[defer.Deferred] = []

    def isr_writer(tp, state, expected):
        d: defer.Deferred = defer.Deferred()
        writes.append(d)
        return d

    rm = ReplicaManager(1, None, task.Clock(), isr_writer=isr_writer)
    p = ShrinkingPartition()
    with caplog.at_level(logging.ERROR, logger="mafka.broker.replica_manager"):
        rm._write_isr(p, (1, 2), "shrink")
        assert p.pending_isr == (1, 2)
        writes[0].callback((True, 6))
    assert p.completions == [6, None]
    assert p.pending_isr is None, "a pending ISR change would block every later shrink and expand"
    assert ended_cleanly(writes[0])
    assert "advancing the high watermark broke" in caplog.text


# ------------------------------------------------------------------ TxnMarkerChannel


def test_an_answer_that_cannot_be_read_is_retried_not_dropped(caplog):
    w = _World({("a", 0): 1})
    w.send([("a", 0)])
    ((_, _, _, body, d),) = w.take()
    with caplog.at_level(logging.ERROR, logger="mafka.broker.txn_markers"):
        d.callback(_answer(body, {("a", 0): 9999}))  # an error code this broker does not know
    assert ended_cleanly(d)
    assert "9999 is not a valid ErrorCode" in caplog.text
    w.clock.advance(0.1)
    ((_, _, _, body, d),) = w.take()  # sent again after the backoff
    d.callback(_answer(body, {}))
    assert w.completed == ["t"]


# ------------------------------------------------------------------ TransactionService's producer ids


def test_a_producer_id_continuation_that_raises_is_logged(caplog):
    claimed: defer.Deferred = defer.Deferred()
    ids = _ProducerIds(SimpleNamespace(producer_ids=SimpleNamespace(generate=lambda: claimed)))

    def done(error, pid):
        raise RuntimeError("the InitProducerId continuation broke")

    with caplog.at_level(logging.ERROR, logger="mafka.broker.transactions"):
        ids.generate(done)
        claimed.callback(1000)
    assert ended_cleanly(claimed)
    assert "the InitProducerId continuation broke" in caplog.text


# ------------------------------------------------------------------ a connection after a sendfile response


class FakeTransport:
    def __init__(self) -> None:
        self.producer = None
        self.aborted = False

    def registerProducer(self, producer, streaming):  # noqa: N802 - Twisted's name
        self.producer = producer

    def unregisterProducer(self):  # noqa: N802 - Twisted's name
        self.producer = None

    def abortConnection(self):  # noqa: N802 - Twisted's name
        self.aborted = True


def test_a_failure_serving_the_next_request_after_a_written_response_closes_the_connection(caplog):
    from mafka.broker.network import KafkaProtocol

    proto = KafkaProtocol(SimpleNamespace(), max_request_size=1 << 20, idle_ms=0, clock=task.Clock())
    proto.transport = FakeTransport()
    proto.busy = True

    def broken_next_frame():
        raise RuntimeError("a frame buffer bug")

    proto.frames = SimpleNamespace(next_frame=broken_next_frame)
    with caplog.at_level(logging.ERROR, logger="mafka.broker.network"):
        proto._respond([object()], request=None)  # a file region: written by a producer
        writer = proto.transport.producer
        writer.stopProducing()  # the response is done; the next frame is read
    assert ended_cleanly(writer.done)
    assert proto.closed and proto.transport.aborted and not proto.busy
    assert "a frame buffer bug" in caplog.text
