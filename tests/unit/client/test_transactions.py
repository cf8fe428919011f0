"""The transactional producer (KIP-98/KIP-447) against a fake kernel: the request sequence, retries,
fencing, abortable errors, purging on abort and the epoch bump.

Each test drives a ProducerEngine and its TransactionManager on its own event loop.  The fake
kernel answers the transaction and group coordinators from per-API scripts (an error code, an
exception to raise, or HANG: an answer the test gives later) and records every request *as the
broker would decode it*: each body is encoded with mafka.wire at the newest version and decoded
again, so a misspelled field shows up as a default value.  Produce requests are answered at once
(per-partition error codes can be queued) unless held.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import SimpleNamespace as NS
from typing import Any

import pytest

from mafka.client.config import parse_config
from mafka.client.group_metadata import ConsumerGroupMetadata
from mafka.client.kafka_error import KafkaError, KafkaException
from mafka.client.metadata import ClusterMetadata
from mafka.client.producer_batch import ProducerBatch
from mafka.client.sender import ProducerEngine
from mafka.client.txn_state import TxnState
from mafka.errors import ErrorCode
from mafka.errors import KafkaError as BrokerError
from mafka.wire.codec import decode_request, encode_request
from mafka.wire.records import decode_batch
from mafka.wire.registry import API_SPECS

TOPIC = "t"
TID = "tx-1"
TS = 1_700_000_000_000
PID = 4000

PRODUCE, INIT_PRODUCER_ID, ADD_PARTITIONS, ADD_OFFSETS, END_TXN, TXN_OFFSET_COMMIT = 0, 22, 24, 25, 26, 28
TXN_NODE, GROUP_NODE = 1, 2
HANG = "hang"

E = ErrorCode


def wire(api_key: int, body: dict[str, Any]) -> Any:
    """``body`` as a broker decodes it from the newest version this client speaks."""
    version = API_SPECS[api_key].decode[1]
    return decode_request(encode_request(api_key, version, 1, "c", body)[4:]).body


@dataclass
class Sent:
    """One partition's batch in a Produce request."""

    partition: int
    pid: int
    epoch: int
    seq: int
    transactional: bool
    values: list[bytes | None]


class FakeKernel:
    """The parts of Kernel the engine and the TransactionManager use."""

    def __init__(self, config: Any) -> None:
        self.config = config
        self.metadata = ClusterMetadata()
        self.metadata.update(NS(brokers=[NS(node_id=1, host="h", port=1), NS(node_id=2, host="h", port=2)],
                                topics=[NS(error_code=0, name=TOPIC, partitions=[
                                    NS(error_code=0, partition_index=i, leader_id=1, replica_nodes=[1],
                                       isr_nodes=[1]) for i in range(3)])]), now=0.0)
        self.script: dict[int, list[Any]] = defaultdict(list)
        self.hung: dict[int, list[asyncio.Future[Any]]] = defaultdict(list)
        self.calls: list[tuple[int, int, Any]] = []  # (node, api key, decoded body), coordinators only
        self.finds: list[tuple[str, int]] = []
        self.find_errors: list[Exception] = []
        self.disconnects: list[tuple[int, str | None]] = []
        self.produced: list[tuple[Any, list[Sent]]] = []  # (request body, batches)
        self.produce_errors: dict[int, list[int]] = defaultdict(list)
        self.hold_produce = False
        self.held: list[tuple[asyncio.Future[Any], list[Sent]]] = []
        self.log: dict[int, int] = defaultdict(int)  # partition -> next offset
        self.epoch = -1
        self.tasks: list[asyncio.Task[Any]] = []

    # -- coordinators ---------------------------------------------------------------------

    def api_calls(self, api_key: int) -> list[Any]:
        return [body for _, key, body in self.calls if key == api_key]

    def api_sequence(self) -> list[str]:
        names = {INIT_PRODUCER_ID: "InitProducerId", ADD_PARTITIONS: "AddPartitionsToTxn",
                 ADD_OFFSETS: "AddOffsetsToTxn", END_TXN: "EndTxn", TXN_OFFSET_COMMIT: "TxnOffsetCommit"}
        return [names[key] for _, key, _ in self.calls]

    async def find_coordinator(self, key: str, key_type: int = 0) -> int:
        self.finds.append((key, key_type))
        if self.find_errors:
            raise self.find_errors.pop(0)
        return TXN_NODE if key_type == 1 else GROUP_NODE

    def disconnect(self, node_id: int, channel: str | None = None) -> None:
        self.disconnects.append((node_id, channel))

    async def send(self, node_id: int, api_key: int, body: Any, channel: str = "default",
                   timeout: float | None = None, expect_response: bool = True, version: int | None = None) -> Any:
        assert channel == "txn"
        decoded = wire(api_key, body)
        self.calls.append((node_id, api_key, decoded))
        entry = self.script[api_key].pop(0) if self.script[api_key] else 0
        if isinstance(entry, Exception):
            raise entry
        if entry == HANG:
            future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            self.hung[api_key].append(future)
            entry = await future
        return self._answer(api_key, decoded, entry)

    def _answer(self, api_key: int, body: Any, code: int) -> NS:
        if api_key == INIT_PRODUCER_ID:
            if code:
                return NS(throttle_time_ms=0, error_code=code, producer_id=-1, producer_epoch=-1)
            self.epoch += 1
            return NS(throttle_time_ms=0, error_code=0, producer_id=PID, producer_epoch=self.epoch)
        if api_key == ADD_PARTITIONS:
            return NS(throttle_time_ms=0, results_by_topic_v3_and_below=[
                NS(name=t.name, results_by_partition=[NS(partition_index=p, partition_error_code=code)
                                                      for p in t.partitions])
                for t in body.v3_and_below_topics])
        if api_key == TXN_OFFSET_COMMIT:
            return NS(throttle_time_ms=0, topics=[
                NS(name=t.name, partitions=[NS(partition_index=p.partition_index, error_code=code)
                                            for p in t.partitions])
                for t in body.topics])
        return NS(throttle_time_ms=0, error_code=code)

    def answer_hung(self, api_key: int, code: int = 0) -> None:
        self.hung[api_key].pop(0).set_result(code)

    # -- produce ----------------------------------------------------------------------------

    def ready_connection(self, node: int, channel: str, on_ready: Any = None) -> FakeKernel:
        assert (node, channel) == (1, "produce")
        return self

    connected = True

    def request(self, api_key: int, body: dict[str, Any], version: int | None = None,
                expect_response: bool = True) -> asyncio.Future[Any]:
        assert api_key == PRODUCE
        decoded = wire(PRODUCE, body)
        batches = []
        for topic in decoded.topic_data:
            for part in topic.partition_data:
                b = decode_batch(part.records)
                h = b.header
                batches.append(Sent(part.index, h.producer_id, h.producer_epoch, h.base_sequence,
                                    h.is_transactional, [r.value for r in b.records]))
        self.produced.append((decoded, batches))
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if self.hold_produce:
            self.held.append((future, batches))
        else:
            self._answer_produce(future, batches)
        return future

    def _answer_produce(self, future: asyncio.Future[Any], batches: list[Sent]) -> None:
        parts = []
        for b in batches:
            code = self.produce_errors[b.partition].pop(0) if self.produce_errors[b.partition] else 0
            offset = -1
            if code == 0:
                offset = self.log[b.partition]
                self.log[b.partition] += len(b.values)
            parts.append(NS(index=b.partition, error_code=code, base_offset=offset, log_append_time_ms=-1,
                            log_start_offset=0))
        future.set_result(NS(responses=[NS(name=TOPIC, partition_responses=parts)], throttle_time_ms=0))

    def release_produce(self) -> None:
        self.hold_produce = False
        for future, batches in self.held:
            self._answer_produce(future, batches)
        self.held.clear()

    def close(self, reason: Exception | None = None) -> None:
        pass

    def sent(self) -> list[Sent]:
        return [b for _, batches in self.produced for b in batches]

    # -- the rest ---------------------------------------------------------------------------

    async def refresh_metadata(self, all_topics: bool = False) -> ClusterMetadata:
        return self.metadata

    async def send_any(self, api_key: int, body: Any, timeout: float | None = None) -> Any:
        raise AssertionError("a transactional producer gets its id from the transaction coordinator")

    def spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        self.tasks.append(task)
        return task


@dataclass
class Report:
    partition: int
    values: list[bytes | None]
    offset: int
    error: KafkaError | None


class Harness:
    def __init__(self, **conf: Any) -> None:
        settings = {"bootstrap.servers": "x:1", "linger.ms": 0, "retry.backoff.ms": 1, "transactional.id": TID,
                    **conf}
        self.kernel = FakeKernel(parse_config("producer", settings))
        self.reports: list[Report] = []
        self.engine = ProducerEngine(self.kernel, self._report)
        assert self.engine.txn is not None
        self.txn = self.engine.txn

    def _report(self, batch: ProducerBatch, base_offset: int, timestamp: int, error: KafkaError | None) -> None:
        self.reports.append(Report(batch.partition, [r[2] for r in batch.records], base_offset, error))

    @property
    def state(self) -> TxnState:
        return self.txn.state.state

    def produce(self, partition: int, *values: bytes) -> None:
        for value in values:
            self.txn.check_produce()
            self.engine.append(TOPIC, partition, TS, None, value, None, None)

    def errors(self) -> list[int | None]:
        return [None if r.error is None else r.error.code() for r in self.reports]

    async def until(self, cond: Callable[[], bool], what: str, timeout: float = 3.0) -> None:
        deadline = time.monotonic() + timeout
        while not cond():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}")
            self.engine.wake()
            await asyncio.sleep(0.001)

    async def flush(self, timeout: float = 3.0) -> None:
        self.engine.begin_flush()
        try:
            await self.until(lambda: self.engine.pending() == 0, "the flush", timeout)
        finally:
            self.engine.end_flush()

    async def init(self) -> None:
        await self.txn.init_transactions(5.0)

    async def commit(self, timeout: float = 5.0) -> None:
        await self.txn.begin_commit()
        await self.flush()
        await self.txn.commit_transaction(timeout)

    async def abort(self, timeout: float = 5.0) -> None:
        await self.txn.begin_abort()
        await self.flush()
        await self.txn.abort_transaction(timeout)

    def run(self, scenario: Callable[[Harness], Awaitable[None]]) -> None:
        async def main() -> None:
            self.engine.start()
            try:
                await asyncio.wait_for(scenario(self), 15.0)
            finally:
                await self.engine.close()
                tasks = self.kernel.tasks
                crashed = [t for t in tasks if t.done() and not t.cancelled() and t.exception()]
                for t in tasks:
                    t.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
            assert not crashed, f"task died: {crashed[0].exception()!r}"

        asyncio.run(main())


def raised(exc_info: pytest.ExceptionInfo[KafkaException]) -> KafkaError:
    return exc_info.value.args[0]


# -- init_transactions ----------------------------------------------------------------------------


def test_init_transactions_finds_the_coordinator_and_retries_until_it_gets_an_id() -> None:
    h = Harness(**{"transaction.timeout.ms": 30000})
    h.kernel.find_errors = [BrokerError.for_code(E.COORDINATOR_NOT_AVAILABLE)(), ConnectionError("down")]
    h.kernel.script[INIT_PRODUCER_ID] = [
        int(E.COORDINATOR_LOAD_IN_PROGRESS), int(E.NOT_COORDINATOR), int(E.CONCURRENT_TRANSACTIONS),
        ConnectionError("lost"), int(E.COORDINATOR_NOT_AVAILABLE), 0,
    ]

    async def scenario(h: Harness) -> None:
        assert h.state is TxnState.INIT
        with pytest.raises(KafkaException) as exc:
            h.produce(0, b"early")
        assert raised(exc).code() == KafkaError._STATE and not raised(exc).fatal()
        await h.init()
        assert h.state is TxnState.READY
        assert (h.engine.producer_id, h.engine.producer_epoch) == (PID, 0)

    h.run(scenario)
    calls = h.kernel.api_calls(INIT_PRODUCER_ID)
    assert len(calls) == 6
    assert all(c.transactional_id == TID and c.transaction_timeout_ms == 30000 for c in calls)
    assert all((c.producer_id, c.producer_epoch) == (-1, -1) for c in calls)
    # the transaction coordinator, key type 1; looked up again after each coordinator error
    assert set(h.kernel.finds) == {(TID, 1)}
    assert len(h.kernel.finds) == 2 + 4
    assert (TXN_NODE, "txn") in h.kernel.disconnects


@pytest.mark.parametrize("code", [E.PRODUCER_FENCED, E.INVALID_PRODUCER_EPOCH])
def test_init_transactions_fenced_is_fatal(code: ErrorCode) -> None:
    h = Harness()
    h.kernel.script[INIT_PRODUCER_ID] = [int(code)]

    async def scenario(h: Harness) -> None:
        with pytest.raises(KafkaException) as exc:
            await h.init()
        err = raised(exc)
        assert err.code() == KafkaError._FENCED and err.fatal() and not err.retriable()
        assert not err.txn_requires_abort()
        assert h.state is TxnState.FATAL_ERROR
        for call in (h.txn.begin_transaction(), h.init()):
            with pytest.raises(KafkaException) as exc:
                await call
            assert raised(exc).code() == KafkaError._FENCED and raised(exc).fatal()
        with pytest.raises(KafkaException) as exc:
            h.produce(0, b"x")
        assert raised(exc).fatal()

    h.run(scenario)


def test_init_transactions_timeout_is_retriable_and_calling_again_resumes() -> None:
    h = Harness()
    h.kernel.script[INIT_PRODUCER_ID] = [int(E.COORDINATOR_LOAD_IN_PROGRESS), HANG]

    async def scenario(h: Harness) -> None:
        with pytest.raises(KafkaException) as exc, h.txn.api.call("init_transactions", resumable=True):
            await h.txn.init_transactions(0.05)
        err = raised(exc)
        # the last error InitProducerId met is what the application is told, retriable
        assert err.code() == E.COORDINATOR_LOAD_IN_PROGRESS and err.retriable() and not err.fatal()
        assert h.state is TxnState.WAIT_PID
        # another API call meanwhile conflicts with the unfinished one
        with pytest.raises(KafkaException) as exc, h.txn.api.call("begin_transaction"):
            pass
        assert raised(exc).code() == KafkaError._CONFLICT and raised(exc).retriable()
        # The background InitProducerId goes on after the call's 50 ms: its retry (the second
        # request, the one that hangs) may come after them on a busy machine.
        await h.until(lambda: h.kernel.hung[INIT_PRODUCER_ID], "the second InitProducerId", 5.0)
        h.kernel.answer_hung(INIT_PRODUCER_ID)
        await h.until(lambda: h.state is TxnState.READY_NOT_ACKED, "its answer", 5.0)
        assert h.state is TxnState.READY_NOT_ACKED  # done, but the application has not been told
        with h.txn.api.call("init_transactions", resumable=True):
            await h.txn.init_transactions(1.0)
        assert h.state is TxnState.READY
        with h.txn.api.call("begin_transaction"):
            await h.txn.begin_transaction()
        # initialized already: a state error, not a new producer id
        with pytest.raises(KafkaException) as exc:
            await h.txn.init_transactions(1.0)
        assert raised(exc).code() == KafkaError._STATE

    h.run(scenario)
    assert len(h.kernel.api_calls(INIT_PRODUCER_ID)) == 2


# -- a transaction --------------------------------------------------------------------------------


def test_commit_registers_partitions_before_producing_then_ends_the_transaction() -> None:
    h = Harness()
    h.kernel.script[ADD_PARTITIONS] = [HANG]

    async def scenario(h: Harness) -> None:
        await h.init()
        with pytest.raises(KafkaException) as exc:
            await h.txn.begin_commit()  # commit without begin
        assert raised(exc).code() == KafkaError._STATE
        await h.txn.begin_transaction()
        h.produce(0, b"a0", b"a1")
        h.produce(1, b"b0")
        await h.until(lambda: h.kernel.hung[ADD_PARTITIONS], "AddPartitionsToTxn")
        await asyncio.sleep(0.02)
        assert h.kernel.produced == []  # nothing is sent before the partitions are registered
        h.kernel.answer_hung(ADD_PARTITIONS)
        await h.commit()
        assert h.state is TxnState.READY
        # the second transaction registers its partitions again; sequences go on
        await h.txn.begin_transaction()
        h.produce(0, b"a2")
        await h.commit()

    h.run(scenario)
    assert h.kernel.api_sequence() == [
        "InitProducerId", "AddPartitionsToTxn", "EndTxn", "AddPartitionsToTxn", "EndTxn"]
    add1, add2 = h.kernel.api_calls(ADD_PARTITIONS)
    # one request for both partitions (batched)
    assert (add1.v3_and_below_transactional_id, add1.v3_and_below_producer_id,
            add1.v3_and_below_producer_epoch) == (TID, PID, 0)
    assert [(t.name, sorted(t.partitions)) for t in add1.v3_and_below_topics] == [(TOPIC, [0, 1])]
    assert [(t.name, t.partitions) for t in add2.v3_and_below_topics] == [(TOPIC, [0])]
    end1, end2 = h.kernel.api_calls(END_TXN)
    assert (end1.transactional_id, end1.producer_id, end1.producer_epoch, end1.committed) == (TID, PID, 0, True)
    assert end2.committed is True
    for body, _ in h.kernel.produced:
        assert body.transactional_id == TID
    sent = sorted(h.kernel.sent(), key=lambda b: (b.partition, b.seq))
    assert [(b.partition, b.seq, b.values) for b in sent] == [
        (0, 0, [b"a0", b"a1"]), (0, 2, [b"a2"]), (1, 0, [b"b0"])]
    assert all(b.transactional and (b.pid, b.epoch) == (PID, 0) for b in sent)
    assert h.errors() == [None, None, None]


def test_add_partitions_retries_concurrent_transactions_quickly_and_refinds_a_moved_coordinator() -> None:
    h = Harness(**{"retry.backoff.ms": 2000})
    h.kernel.script[ADD_PARTITIONS] = [int(E.CONCURRENT_TRANSACTIONS), int(E.CONCURRENT_TRANSACTIONS), 0]

    async def scenario(h: Harness) -> None:
        await h.init()
        await h.txn.begin_transaction()
        h.produce(0, b"x")
        started = time.monotonic()
        await h.until(lambda: h.engine.pending() == 0, "delivery")
        # CONCURRENT_TRANSACTIONS (the last transaction's markers still being written) is
        # asked again after 20 ms, not after retry.backoff.ms
        assert time.monotonic() - started < 1.0
        await h.commit()

    h.run(scenario)
    assert h.kernel.api_sequence() == ["InitProducerId"] + ["AddPartitionsToTxn"] * 3 + ["EndTxn"]


def test_add_partitions_not_coordinator_finds_the_coordinator_again() -> None:
    h = Harness()
    h.kernel.script[ADD_PARTITIONS] = [int(E.NOT_COORDINATOR), ConnectionError("lost"), 0]

    async def scenario(h: Harness) -> None:
        await h.init()
        await h.txn.begin_transaction()
        h.produce(2, b"x")
        await h.commit()

    h.run(scenario)
    assert h.kernel.api_sequence() == ["InitProducerId"] + ["AddPartitionsToTxn"] * 3 + ["EndTxn"]
    assert len(h.kernel.finds) == 3
    assert h.errors() == [None]


def test_commit_or_abort_of_an_empty_transaction_sends_nothing() -> None:
    h = Harness()

    async def scenario(h: Harness) -> None:
        await h.init()
        await h.txn.begin_transaction()
        await h.commit()
        await h.txn.begin_transaction()
        await h.abort()
        assert h.state is TxnState.READY

    h.run(scenario)
    assert h.kernel.api_sequence() == ["InitProducerId"]


@pytest.mark.parametrize("code", [E.PRODUCER_FENCED, E.INVALID_PRODUCER_EPOCH, E.INVALID_TXN_STATE])
def test_add_partitions_fencing_is_fatal(code: ErrorCode) -> None:
    h = Harness()
    h.kernel.script[ADD_PARTITIONS] = [int(code)]

    async def scenario(h: Harness) -> None:
        await h.init()
        await h.txn.begin_transaction()
        h.produce(0, b"x", b"y")
        await h.until(lambda: h.state is TxnState.FATAL_ERROR, "the fatal error")
        await h.until(lambda: h.reports, "the purge")
        with pytest.raises(KafkaException) as exc:
            await h.txn.begin_commit()
        err = raised(exc)
        assert err.fatal() and err.code() == (KafkaError._FENCED if code != E.INVALID_TXN_STATE else code)
        with pytest.raises(KafkaException) as exc:
            await h.txn.begin_abort()
        assert raised(exc).fatal()

    h.run(scenario)
    assert h.errors() == [KafkaError._PURGE_QUEUE]  # the queued records fail
    assert h.kernel.produced == []


# -- errors inside a transaction -------------------------------------------------------------------


def test_a_failed_produce_makes_the_transaction_abortable_and_the_abort_bumps_the_epoch() -> None:
    h = Harness()
    h.kernel.produce_errors[1] = [int(E.INVALID_RECORD)]

    async def scenario(h: Harness) -> None:
        await h.init()
        await h.txn.begin_transaction()
        h.produce(0, b"ok")
        h.produce(1, b"bad")
        await h.until(lambda: h.state is TxnState.ABORTABLE_ERROR, "the abortable error")
        with pytest.raises(KafkaException) as exc:
            h.produce(0, b"more")  # no producing in a failed transaction
        assert raised(exc).code() == KafkaError._STATE
        with pytest.raises(KafkaException) as exc:
            await h.txn.begin_commit()
        err = raised(exc)
        assert err.code() == E.INVALID_RECORD and err.txn_requires_abort()
        assert not err.fatal() and not err.retriable()
        await h.abort()
        assert h.state is TxnState.READY
        assert (h.engine.producer_id, h.engine.producer_epoch) == (PID, 1)
        # the next transaction starts at sequence 0 under the new epoch
        await h.txn.begin_transaction()
        h.produce(0, b"next")
        await h.commit()

    h.run(scenario)
    assert h.kernel.api_sequence() == [
        "InitProducerId", "AddPartitionsToTxn", "EndTxn", "InitProducerId", "AddPartitionsToTxn", "EndTxn"]
    aborted, committed = h.kernel.api_calls(END_TXN)
    assert aborted.committed is False and (aborted.producer_id, aborted.producer_epoch) == (PID, 0)
    assert committed.committed is True and (committed.producer_id, committed.producer_epoch) == (PID, 1)
    bump = h.kernel.api_calls(INIT_PRODUCER_ID)[1]
    # KIP-360: the current id and epoch, so the coordinator bumps the epoch instead of fencing
    assert (bump.producer_id, bump.producer_epoch) == (PID, 0)
    last = h.kernel.sent()[-1]
    assert (last.values, last.seq, last.epoch) == ([b"next"], 0, 1)
    bad = [r for r in h.reports if r.partition == 1]
    assert [r.error.code() for r in bad] == [E.INVALID_RECORD]


@pytest.mark.parametrize("code", [E.INVALID_PRODUCER_EPOCH, E.PRODUCER_FENCED])
def test_a_fenced_produce_is_fatal_and_fails_the_queued_records(code: ErrorCode) -> None:
    h = Harness(**{"linger.ms": 10000})
    h.kernel.produce_errors[0] = [int(code)]

    async def scenario(h: Harness) -> None:
        await h.init()
        await h.txn.begin_transaction()
        h.kernel.hold_produce = True
        h.produce(0, b"first")
        h.engine.begin_flush()  # sends the first batch; the next waits on the long linger
        await h.until(lambda: h.kernel.held, "the produce")
        h.engine.end_flush()
        h.produce(1, b"queued")
        await h.until(lambda: len(h.kernel.api_calls(ADD_PARTITIONS)) == 2, "registration of partition 1")
        h.kernel.release_produce()
        await h.until(lambda: h.state is TxnState.FATAL_ERROR, "the fatal error")
        await h.until(lambda: len(h.reports) == 2, "the reports")
        with pytest.raises(KafkaException) as exc:
            await h.txn.begin_commit()
        err = raised(exc)
        assert err.code() == KafkaError._FENCED and err.fatal()
        with pytest.raises(KafkaException) as exc:
            await h.txn.begin_abort()
        assert raised(exc).code() == KafkaError._FENCED

    h.run(scenario)
    assert sorted(h.errors()) == sorted([int(code), KafkaError._PURGE_QUEUE])
    assert "EndTxn" not in h.kernel.api_sequence()


def test_abort_purges_queued_batches_and_waits_for_those_in_flight() -> None:
    h = Harness(**{"linger.ms": 10000})

    async def scenario(h: Harness) -> None:
        await h.init()
        await h.txn.begin_transaction()
        h.kernel.hold_produce = True
        h.produce(0, b"in-flight")
        h.engine.begin_flush()
        await h.until(lambda: h.kernel.held, "the produce")
        h.engine.end_flush()
        h.produce(0, b"q1")
        h.produce(1, b"q2", b"q3")
        await h.until(lambda: len(h.kernel.api_calls(ADD_PARTITIONS)) == 2, "registration of partition 1")
        await h.txn.begin_abort()
        # queued records fail on the sender's next pass; the one in flight is still out
        await h.until(lambda: len(h.reports) == 2, "the purge")
        assert sorted(r.values[0] for r in h.reports) == [b"q1", b"q2"]
        assert h.errors() == [KafkaError._PURGE_QUEUE] * 2
        with pytest.raises(KafkaException) as exc:
            h.produce(0, b"late")
        assert raised(exc).code() == KafkaError._STATE
        with pytest.raises(KafkaException) as exc:
            await h.txn.abort_transaction(0.05)  # without the face's flush: EndTxn waits for it
        assert raised(exc).code() == KafkaError._TIMED_OUT and raised(exc).retriable()
        assert h.kernel.api_calls(END_TXN) == []
        h.kernel.release_produce()
        await h.flush()
        await h.txn.abort_transaction(5.0)
        assert h.state is TxnState.READY

    h.run(scenario)
    assert [b.values for b in h.kernel.sent()] == [[b"in-flight"]]
    assert h.kernel.api_calls(END_TXN)[0].committed is False
    # no epoch bump: every sent batch was answered, the sequences have no hole
    assert len(h.kernel.api_calls(INIT_PRODUCER_ID)) == 1


def test_records_that_failed_delivery_make_commit_refuse() -> None:
    h = Harness(**{"linger.ms": 10000, "delivery.timeout.ms": 50, "transaction.timeout.ms": 1000})
    h.kernel.script[ADD_PARTITIONS] = [HANG]

    async def scenario(h: Harness) -> None:
        await h.init()
        await h.txn.begin_transaction()
        h.produce(0, b"x")
        await h.until(lambda: h.reports, "the delivery timeout")
        assert h.errors() == [KafkaError._MSG_TIMED_OUT]
        await h.txn.begin_commit()
        with pytest.raises(KafkaException) as exc:
            await h.txn.commit_transaction(1.0)
        err = raised(exc)
        assert err.code() == KafkaError._INCONSISTENT and err.txn_requires_abort()
        assert h.state is TxnState.ABORTABLE_ERROR
        h.kernel.answer_hung(ADD_PARTITIONS)
        await h.abort()

    h.run(scenario)
    assert h.kernel.api_calls(END_TXN)[-1].committed is False


# -- send_offsets_to_transaction --------------------------------------------------------------------


def test_send_offsets_adds_the_group_then_commits_offsets_at_the_group_coordinator() -> None:
    h = Harness()
    h.kernel.script[ADD_OFFSETS] = [int(E.CONCURRENT_TRANSACTIONS), int(E.NOT_COORDINATOR), 0]
    h.kernel.script[TXN_OFFSET_COMMIT] = [int(E.COORDINATOR_LOAD_IN_PROGRESS), int(E.NOT_COORDINATOR), 0]
    group = ConsumerGroupMetadata("g", 7, "member-1", "instance-1")

    async def scenario(h: Harness) -> None:
        await h.init()
        await h.txn.begin_transaction()
        await h.txn.send_offsets_to_transaction({("in", 0): (42, 3, "meta"), ("in", 1): (-1001, -1, None)},
                                                group, 5.0)
        await h.commit()  # nothing produced, but offsets were: EndTxn is needed

    h.run(scenario)
    assert h.kernel.api_sequence() == (["InitProducerId"] + ["AddOffsetsToTxn"] * 3 + ["TxnOffsetCommit"] * 3
                                       + ["EndTxn"])
    add = h.kernel.api_calls(ADD_OFFSETS)[-1]
    assert (add.transactional_id, add.producer_id, add.producer_epoch, add.group_id) == (TID, PID, 0, "g")
    commit = h.kernel.api_calls(TXN_OFFSET_COMMIT)[-1]
    assert (commit.transactional_id, commit.group_id, commit.producer_id, commit.producer_epoch) == (TID, "g", PID, 0)
    assert (commit.generation_id, commit.member_id, commit.group_instance_id) == (7, "member-1", "instance-1")
    [topic] = commit.topics
    assert topic.name == "in"
    # the invalid offset is left out
    assert [(p.partition_index, p.committed_offset, p.committed_leader_epoch, p.committed_metadata)
            for p in topic.partitions] == [(0, 42, 3, "meta")]
    assert [node for node, key, _ in h.kernel.calls if key == TXN_OFFSET_COMMIT] == [GROUP_NODE] * 3
    assert ("g", 0) in h.kernel.finds and h.kernel.finds.count(("g", 0)) == 2


def test_send_offsets_of_nothing_sends_nothing() -> None:
    h = Harness()

    async def scenario(h: Harness) -> None:
        await h.init()
        with pytest.raises(KafkaException) as exc:
            await h.txn.send_offsets_to_transaction({("in", 0): (1, -1, None)}, ConsumerGroupMetadata("g"), 1.0)
        assert raised(exc).code() == KafkaError._STATE  # not in a transaction
        await h.txn.begin_transaction()
        await h.txn.send_offsets_to_transaction({("in", 0): (-1001, -1, None)}, ConsumerGroupMetadata("g"), 1.0)
        await h.commit()

    h.run(scenario)
    assert h.kernel.api_sequence() == ["InitProducerId"]


@pytest.mark.parametrize("code", [E.ILLEGAL_GENERATION, E.UNKNOWN_MEMBER_ID, E.FENCED_INSTANCE_ID])
def test_txn_offset_commit_from_a_zombie_consumer_is_abortable(code: ErrorCode) -> None:
    h = Harness()
    h.kernel.script[TXN_OFFSET_COMMIT] = [int(code)]

    async def scenario(h: Harness) -> None:
        await h.init()
        await h.txn.begin_transaction()
        with pytest.raises(KafkaException) as exc:
            await h.txn.send_offsets_to_transaction({("in", 0): (5, -1, None)}, ConsumerGroupMetadata("g", 1, "m"),
                                                    5.0)
        err = raised(exc)
        assert err.code() == code and err.txn_requires_abort() and not err.fatal()
        assert h.state is TxnState.ABORTABLE_ERROR
        await h.abort()

    h.run(scenario)
    assert h.kernel.api_sequence()[-1] == "EndTxn"
    assert h.kernel.api_calls(END_TXN)[0].committed is False


def test_add_offsets_fenced_is_fatal() -> None:
    h = Harness()
    h.kernel.script[ADD_OFFSETS] = [int(E.INVALID_PRODUCER_EPOCH)]

    async def scenario(h: Harness) -> None:
        await h.init()
        await h.txn.begin_transaction()
        with pytest.raises(KafkaException) as exc:
            await h.txn.send_offsets_to_transaction({("in", 0): (5, -1, None)}, ConsumerGroupMetadata("g"), 5.0)
        assert raised(exc).code() == KafkaError._FENCED and raised(exc).fatal()

    h.run(scenario)
    assert "TxnOffsetCommit" not in h.kernel.api_sequence()


# -- EndTxn ------------------------------------------------------------------------------------------


def test_end_txn_retries_then_fencing_is_fatal() -> None:
    h = Harness()
    h.kernel.script[END_TXN] = [int(E.CONCURRENT_TRANSACTIONS), int(E.COORDINATOR_NOT_AVAILABLE),
                                ConnectionError("lost"), int(E.PRODUCER_FENCED)]

    async def scenario(h: Harness) -> None:
        await h.init()
        await h.txn.begin_transaction()
        h.produce(0, b"x")
        await h.txn.begin_commit()
        await h.flush()
        with pytest.raises(KafkaException) as exc:
            await h.txn.commit_transaction(5.0)
        err = raised(exc)
        assert err.code() == KafkaError._FENCED and err.fatal()
        assert h.state is TxnState.FATAL_ERROR

    h.run(scenario)
    assert h.kernel.api_sequence().count("EndTxn") == 4


def test_commit_timeout_is_retriable_and_calling_again_finishes_it() -> None:
    h = Harness()
    h.kernel.script[END_TXN] = [HANG]

    async def scenario(h: Harness) -> None:
        await h.init()
        await h.txn.begin_transaction()
        h.produce(0, b"x")
        await h.txn.begin_commit()
        await h.flush()
        with pytest.raises(KafkaException) as exc:
            await h.txn.commit_transaction(0.02)
        assert raised(exc).code() == KafkaError._TIMED_OUT and raised(exc).retriable()
        assert h.state is TxnState.COMMITTING_TRANSACTION
        await h.until(lambda: h.kernel.hung[END_TXN], "EndTxn", 5.0)
        h.kernel.answer_hung(END_TXN)
        await h.until(lambda: h.state is TxnState.COMMIT_NOT_ACKED, "EndTxn's answer", 5.0)
        await h.txn.begin_commit()  # the face's second call goes through every phase again
        await h.txn.commit_transaction(1.0)
        assert h.state is TxnState.READY

    h.run(scenario)
    assert h.kernel.api_sequence().count("EndTxn") == 1


def test_end_txn_abortable_error_on_commit_then_abort() -> None:
    h = Harness()
    h.kernel.script[END_TXN] = [int(E.UNKNOWN_SERVER_ERROR)]

    async def scenario(h: Harness) -> None:
        await h.init()
        await h.txn.begin_transaction()
        h.produce(0, b"x")
        with pytest.raises(KafkaException) as exc:
            await h.commit()
        assert raised(exc).code() == E.UNKNOWN_SERVER_ERROR and raised(exc).txn_requires_abort()
        await h.abort()

    h.run(scenario)
    assert [c.committed for c in h.kernel.api_calls(END_TXN)] == [True, False]


def test_a_batch_failing_retriably_during_the_abort_is_not_sent_again_and_the_epoch_is_bumped() -> None:
    h = Harness()
    h.kernel.produce_errors[0] = [int(E.NOT_LEADER_OR_FOLLOWER)]

    async def scenario(h: Harness) -> None:
        await h.init()
        await h.txn.begin_transaction()
        h.kernel.hold_produce = True
        h.produce(0, b"x")
        await h.until(lambda: h.kernel.held, "the produce")
        await h.txn.begin_abort()
        h.kernel.release_produce()  # NOT_LEADER: retriable, but the transaction is ending
        await h.flush()
        await h.txn.abort_transaction(5.0)
        assert (h.engine.producer_id, h.engine.producer_epoch) == (PID, 1)

    h.run(scenario)
    assert len(h.kernel.sent()) == 1
    assert h.errors() == [E.NOT_LEADER_OR_FOLLOWER]
    # written or not is unknown: a hole in the sequence is possible, so the epoch is bumped
    assert h.kernel.api_sequence() == ["InitProducerId", "AddPartitionsToTxn", "EndTxn", "InitProducerId"]
