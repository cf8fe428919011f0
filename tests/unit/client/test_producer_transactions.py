"""The synchronous Producer's and the Consumer's transactional calls (confluent-kafka's names), with the
transaction manager talking to a fake coordinator (no broker: nothing is produced here; the
engine-level tests in test_transactions.py cover produce, abort purges and fencing)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mafka.client import (
    Consumer,
    ConsumerGroupMetadata,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from tests.unit.client.test_transactions import (
    ADD_OFFSETS,
    END_TXN,
    HANG,
    INIT_PRODUCER_ID,
    TXN_OFFSET_COMMIT,
    FakeKernel,
)

UNREACHABLE = "127.0.0.1:1"


class Coordinator(FakeKernel):
    """FakeKernel's coordinators, answered from the test's thread while the producer's loop runs."""

    def __init__(self, config: Any, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(config)
        self.loop = loop

    def answer_hung(self, api_key: int, code: int = 0) -> None:
        future = self.hung[api_key].pop(0)
        self.loop.call_soon_threadsafe(future.set_result, code)

    def spawn(self, coro: Any) -> asyncio.Task[Any]:
        return asyncio.ensure_future(coro)


@pytest.fixture
def producer():
    p = Producer({"bootstrap.servers": UNREACHABLE, "transactional.id": "tx-sync", "retry.backoff.ms": 1})
    txn = p._engine.txn
    assert txn is not None
    coordinator = Coordinator(p._kernel.config, p._thread.loop)
    txn.kernel = coordinator
    yield p, coordinator
    p.close()


def code_of(exc: pytest.ExceptionInfo[KafkaException]) -> int:
    return exc.value.args[0].code()


def test_the_transactional_api_needs_a_transactional_id() -> None:
    p = Producer({"bootstrap.servers": UNREACHABLE})
    try:
        for call in (p.init_transactions, p.begin_transaction, p.commit_transaction, p.abort_transaction):
            with pytest.raises(KafkaException) as exc:
                call()
            assert code_of(exc) == KafkaError._NOT_CONFIGURED
        with pytest.raises(KafkaException) as exc:
            p.send_offsets_to_transaction([TopicPartition("t", 0, 1)], ConsumerGroupMetadata("g"))
        assert code_of(exc) == KafkaError._NOT_CONFIGURED
    finally:
        p.close()


def test_produce_only_inside_a_transaction_and_commit_only_after_begin(producer) -> None:
    p, coordinator = producer
    with pytest.raises(KafkaException) as exc:
        p.produce("t", b"x")
    assert code_of(exc) == KafkaError._STATE
    p.init_transactions(5)
    with pytest.raises(KafkaException) as exc:
        p.produce("t", b"x")
    assert code_of(exc) == KafkaError._STATE
    assert "Ready" in str(exc.value)
    with pytest.raises(KafkaException) as exc:
        p.commit_transaction(1)
    assert code_of(exc) == KafkaError._STATE and not exc.value.args[0].retriable()
    with pytest.raises(KafkaException) as exc:
        p.abort_transaction(1)
    assert code_of(exc) == KafkaError._STATE
    p.begin_transaction()
    with pytest.raises(KafkaException) as exc:
        p.begin_transaction()
    assert code_of(exc) == KafkaError._STATE
    p.commit_transaction(5)  # nothing in it: no EndTxn
    assert coordinator.api_sequence() == ["InitProducerId"]


def test_send_offsets_then_commit_or_abort(producer) -> None:
    p, coordinator = producer
    p.init_transactions()
    group = ConsumerGroupMetadata("g", 4, "m-1", None)
    p.begin_transaction()
    p.send_offsets_to_transaction([TopicPartition("in", 0, 10), TopicPartition("in", 1, 20, leader_epoch=2)],
                                  group, 5)
    p.commit_transaction()
    p.begin_transaction()
    # confluent-kafka's serialized group metadata works too
    p.send_offsets_to_transaction([TopicPartition("in", 0, 11)], bytes(group))
    p.abort_transaction(5)
    assert coordinator.api_sequence() == ["InitProducerId", "AddOffsetsToTxn", "TxnOffsetCommit", "EndTxn",
                                          "AddOffsetsToTxn", "TxnOffsetCommit", "EndTxn"]
    first, second = coordinator.api_calls(TXN_OFFSET_COMMIT)
    assert [(t.name, [(q.partition_index, q.committed_offset, q.committed_leader_epoch) for q in t.partitions])
            for t in first.topics] == [("in", [(0, 10, -1), (1, 20, 2)])]
    assert (first.generation_id, first.member_id, first.group_instance_id) == (4, "m-1", None)
    assert second.topics[0].partitions[0].committed_offset == 11
    assert [c.committed for c in coordinator.api_calls(END_TXN)] == [True, False]
    assert [c.group_id for c in coordinator.api_calls(ADD_OFFSETS)] == ["g", "g"]


def test_send_offsets_checks_its_arguments(producer) -> None:
    p, _ = producer
    p.init_transactions(5)
    p.begin_transaction()
    for positions, md in ((None, ConsumerGroupMetadata("g")), ([TopicPartition("t", 0, 1)], None),
                          ([("t", 0, 1)], ConsumerGroupMetadata("g")), ([TopicPartition("t", 0, 1)], 42)):
        with pytest.raises(KafkaException) as exc:
            p.send_offsets_to_transaction(positions, md)
        assert code_of(exc) == KafkaError._INVALID_ARG


def test_init_transactions_timeout_then_resume(producer) -> None:
    p, coordinator = producer
    coordinator.script[INIT_PRODUCER_ID] = [HANG]
    with pytest.raises(KafkaException) as exc:
        p.init_transactions(0.2)
    assert code_of(exc) == KafkaError._TIMED_OUT and exc.value.args[0].retriable()
    with pytest.raises(KafkaException) as exc:
        p.begin_transaction()
    assert code_of(exc) == KafkaError._CONFLICT
    coordinator.answer_hung(INIT_PRODUCER_ID)
    p.init_transactions(5)
    p.begin_transaction()
    assert len(coordinator.api_calls(INIT_PRODUCER_ID)) == 1


def test_fenced_init_is_fatal(producer) -> None:
    p, coordinator = producer
    coordinator.script[INIT_PRODUCER_ID] = [90]  # PRODUCER_FENCED
    with pytest.raises(KafkaException) as exc:
        p.init_transactions(5)
    err = exc.value.args[0]
    assert err.code() == KafkaError._FENCED and err.fatal()
    with pytest.raises(KafkaException) as exc:
        p.produce("t", b"x")
    assert exc.value.args[0].fatal()


def test_consumer_group_metadata() -> None:
    c = Consumer({"bootstrap.servers": UNREACHABLE, "group.id": "cg", "group.instance.id": "inst-1"})
    try:
        md = c.consumer_group_metadata()
        assert (md.group_id, md.generation_id, md.member_id, md.group_instance_id) == ("cg", -1, "", "inst-1")
        member = c._member
        assert member is not None
        member.state.generation, member.state.member_id = 5, "cg-member"
        md = c.consumer_group_metadata()
        assert (md.generation_id, md.member_id) == (5, "cg-member")
    finally:
        c.close()
    plain = Consumer({"bootstrap.servers": UNREACHABLE})
    try:
        with pytest.raises(KafkaException) as exc:
            plain.consumer_group_metadata()
        assert code_of(exc) == KafkaError._UNSUPPORTED_FEATURE
    finally:
        plain.close()


def test_aio_producer_transactions() -> None:
    from mafka.client.aio import AIOProducer

    async def main() -> FakeKernel:
        p = AIOProducer(bootstrap_servers=UNREACHABLE, transactional_id="tx-aio", retry_backoff_ms=1)
        assert p._engine.txn is not None
        coordinator = FakeKernel(p._kernel.config)
        p._engine.txn.kernel = coordinator
        with pytest.raises(KafkaException) as exc:
            await p.send("t", b"x")
        assert code_of(exc) == KafkaError._STATE
        await p.init_transactions(5)
        async with p.transaction():
            await p.send_offsets_to_transaction([TopicPartition("in", 0, 3)], ConsumerGroupMetadata("g"))
        with pytest.raises(RuntimeError):
            async with p.transaction():
                await p.send_offsets_to_transaction([TopicPartition("in", 0, 4)], "g")
                raise RuntimeError("the block failed")
        await p.begin_transaction()
        await p.abort_transaction()
        await p.stop(1)
        return coordinator

    coordinator = asyncio.run(main())
    assert coordinator.api_sequence() == ["InitProducerId", "AddOffsetsToTxn", "TxnOffsetCommit", "EndTxn",
                                          "AddOffsetsToTxn", "TxnOffsetCommit", "EndTxn"]
    assert [c.committed for c in coordinator.api_calls(END_TXN)] == [True, False]
