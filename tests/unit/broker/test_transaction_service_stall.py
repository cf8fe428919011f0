"""The transaction service's stall guard: no answers from transaction state a freeze made stale.

The same guard as the group service's (``test_group_service``'s stall
tests): a broker frozen past its ZooKeeper session resigns every
``__transaction_state`` partition until the controller confirms it, whether
the first thing to run after the freeze is a request, the 100 ms tick or the
timed-out-transaction abort pass.  A ``task.Clock`` and the fake broker of
``test_group_service``.
"""

from __future__ import annotations

from types import SimpleNamespace

from mafka.background import BackgroundPasses
from mafka.broker.transaction_service import TransactionService
from mafka.errors import ErrorCode as E
from mafka.topics import TRANSACTION_STATE_TOPIC as TOPIC

from .test_group_service import ServiceBroker, run_load

TXN_ID = "txn"


def describe(service: TransactionService) -> int:
    (description,) = service.checked_coordinator().describe_transactions([TXN_ID])
    return description.error


def loaded_service(*, supervised: bool = False, abort=None):
    broker = ServiceBroker(zookeeper_session_timeout_ms=6000, transaction_abort_timed_out_transaction_cleanup_interval_ms=10_000)
    broker.broker_id, broker.broker_epoch = 1, 100
    if supervised:
        broker.background = BackgroundPasses(broker.reactor)
    service = TransactionService(broker)
    p = service.coordinator.partition_for(TXN_ID)
    partition = SimpleNamespace(log=None, is_leader=True, leader_epoch=3)
    broker.replica_manager.partitions[(TOPIC, p)] = partition
    broker.metadata_cache.partition = lambda topic, index: SimpleNamespace(leader=1) if index == p else None
    if abort is not None:
        service.coordinator.abort_timed_out_transactions = lambda: abort(service)
    service.startup()
    service.on_leadership(TOPIC, p, True, 3)
    run_load(broker, records=[])
    service.tick()
    assert describe(service) == E.TRANSACTIONAL_ID_NOT_FOUND  # served: the id simply has no transaction
    return broker, service, p


def frozen_service(**kw):
    broker, service, p = loaded_service(**kw)
    broker.reactor.advance(7)  # frozen past the 6 s session: no tick ran
    return broker, service, p


def test_a_broker_frozen_past_its_session_stops_coordinating_until_it_is_confirmed_leader() -> None:
    broker, service, p = frozen_service()
    assert describe(service) == E.NOT_COORDINATOR  # the first request after waking is refused
    service.on_metadata_update()  # metadata from before it registered again: not evidence
    assert describe(service) == E.NOT_COORDINATOR
    broker.broker_epoch = 200  # registered again; the controller still names it leader
    service.on_metadata_update()
    assert describe(service) == E.COORDINATOR_LOAD_IN_PROGRESS
    run_load(broker, records=[])
    assert describe(service) == E.TRANSACTIONAL_ID_NOT_FOUND


def test_the_overdue_tick_after_a_freeze_resigns_before_any_request_is_read() -> None:
    broker, service, p = frozen_service()
    service.tick()
    assert describe(service) == E.NOT_COORDINATOR


def test_a_frozen_broker_that_lost_leadership_stays_resigned() -> None:
    broker, service, p = frozen_service()
    assert describe(service) == E.NOT_COORDINATOR
    broker.broker_epoch = 200
    broker.metadata_cache.partition = lambda topic, index: SimpleNamespace(leader=2)
    service.on_metadata_update()
    for _ in range(200):  # the fallback re-check finds nothing to take back either
        service.tick()
        broker.reactor.advance(0.1)
    assert len(broker.loads) == 1
    assert describe(service) == E.NOT_COORDINATOR


def test_a_broker_whose_session_survived_takes_its_partitions_back_after_twice_the_session() -> None:
    broker, service, p = frozen_service()
    assert describe(service) == E.NOT_COORDINATOR
    for _ in range(125):  # running again, ticking; the registration never changed
        service.tick()
        broker.reactor.advance(0.1)
    run_load(broker, records=[])
    assert describe(service) == E.TRANSACTIONAL_ID_NOT_FOUND


def test_regular_ticks_never_resign() -> None:
    broker, service, p = loaded_service()
    for _ in range(200):
        service.tick()
        broker.reactor.advance(0.1)
    assert describe(service) == E.TRANSACTIONAL_ID_NOT_FOUND


def test_the_abort_pass_after_a_freeze_resigns_before_it_aborts_anything() -> None:
    # In a broker the coordinator's passes are supervised broker passes, each checking for a stall first.
    owned_when_aborting = []
    broker, service, p = loaded_service(
        supervised=True, abort=lambda service: owned_when_aborting.append(service.coordinator.owned_partitions()))
    assert set(broker.background.passes) == {"transaction-abort", "transactionalId-expiration"}
    broker.reactor.advance(10)  # frozen 10 s; the abort pass is the first to run
    assert owned_when_aborting == [set()]
    assert describe(service) == E.NOT_COORDINATOR
    service.shutdown()
    assert broker.background.passes == {}
