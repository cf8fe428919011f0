"""The controller's typed core: the state and plumbing every controller collaborator shares.

Kafka's ``KafkaController`` hands its ``ControllerContext``, ``KafkaZkClient``
and ``ControllerBrokerRequestBatch`` explicitly to the collaborators it
delegates to (``ReplicaStateMachine``, ``PartitionStateMachine``,
``TopicDeletionManager``).  :class:`ControllerCore` is that bundle: one per
:class:`~mafka.controller.controller.Controller`, created by it and passed to
each collaborator's constructor.  It owns:

* the handles: this broker's id, its ``KafkaZkClient``, the reactor (the
  clock: ``seconds``/``callLater``), the :class:`~mafka.controller.config.ControllerConfig`,
  the :class:`~mafka.controller.channel.ControllerChannelManager` and the one
  :class:`~mafka.controller.channel.ControllerBrokerRequestBatch` the state
  machines fill, the :class:`~mafka.controller.stats.ControllerStats`, the
  :class:`~mafka.background.BackgroundPasses`, the replica-assignment rng;
* the shared data: the :class:`~mafka.controller.context.ControllerContext`
  (what the active controller knows about the cluster), who the controller
  is (``active_controller_id``, hence :attr:`ControllerCore.is_active`) and
  whether this controller was stopped;
* the event plumbing: the :class:`~mafka.controller.events.ControllerEventQueue`
  and :meth:`ControllerCore.enqueue` / :meth:`ControllerCore.fire` /
  :meth:`ControllerCore.run_admin` (a ``ControllerMovedError`` raised by an
  event hands over to the *on_controller_moved* routine of the controller
  and becomes ``NotControllerError``);
* the admin waiters (:class:`OutcomeWaiters`), checked after every event;
* :meth:`ControllerCore.send_update_metadata` (UpdateMetadata in a batch of its own) and
  :meth:`ControllerCore.bulk_state_changes` (one batch, the garbage collector paused).

It decides nothing: the collaborators do, each for its own concern, and
they reach each other only through references given to their constructors.
"""

from __future__ import annotations

import contextlib
import logging
import random
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from mafka.background import BackgroundPasses
from mafka.controller.channel import ControllerBrokerRequestBatch, ControllerChannelManager
from mafka.controller.collector import CollectorPause
from mafka.controller.config import ControllerConfig
from mafka.controller.context import ControllerContext
from mafka.controller.events import ControllerEventQueue, EventDropped
from mafka.controller.stats import ControllerStats
from mafka.coordination.kafka_zk import ControllerMovedError, KafkaZkClient
from mafka.errors import NotControllerError
from mafka.topics import TopicPartitionTuple

__all__ = ["STATE_WRITE_ATTEMPTS", "ControllerCore", "OutcomeWaiters"]

log = logging.getLogger("mafka.controller")

T = TypeVar("T")

#: Conditional state writes that hit a BadVersion are re-read and retried this many times.
STATE_WRITE_ATTEMPTS = 10


@dataclass(eq=False)
class _Waiter:
    predicate: Callable[[], bool]
    deferred: Deferred[bool | None]
    timer: Any = None


class OutcomeWaiters:
    """Admin requests waiting for an outcome to show in the context (partitions online, topic gone).

    Args:
        reactor: ``IReactorTime`` for the timeouts.
    """

    def __init__(self, reactor: Any) -> None:
        self._reactor = reactor
        self._waiters: list[_Waiter] = []

    def wait_until(self, predicate: Callable[[], bool], timeout_ms: int) -> Deferred[bool | None]:
        """Fires True once *predicate* holds (checked after every event), False at the
        timeout, None if the controller resigns first."""
        d: Deferred[bool | None] = Deferred()
        if predicate():
            d.callback(True)
            return d
        waiter = _Waiter(predicate, d)
        waiter.timer = self._reactor.callLater(
            max(timeout_ms, 0) / 1000.0, self._expire_waiter, waiter
        )
        self._waiters.append(waiter)
        return d

    def _expire_waiter(self, waiter: _Waiter) -> None:
        if waiter in self._waiters:
            self._waiters.remove(waiter)
            waiter.deferred.callback(False)

    def check(self) -> None:
        """Fires the waiters whose predicate holds now (run after every event)."""
        for waiter in list(self._waiters):
            try:
                done = waiter.predicate()
            except Exception:
                log.exception("admin waiter predicate failed")
                done = False
            if done and waiter in self._waiters:
                self._waiters.remove(waiter)
                if waiter.timer is not None and waiter.timer.active():
                    waiter.timer.cancel()
                waiter.deferred.callback(True)

    def fail_all(self) -> None:
        """Fires every waiter with None (the controller resigned or stopped)."""
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if waiter.timer is not None and waiter.timer.active():
                waiter.timer.cancel()
            waiter.deferred.callback(None)


class ControllerCore:
    """What the controller's collaborators share (see the module doc).

    Args:
        broker_id: This broker's id.
        zk: This broker's KafkaZkClient (its ZooKeeper session).
        reactor: ``IReactorTime``: the controller's clock.
        config: The controller's settings.
        channel: Where controller requests go.
        background: Runs the controller's periodic work.
        rng: Randomness for replica assignment (None: the module's).
        on_controller_moved: Awaited when an event hit a fenced write
            (``ControllerMovedError``): the controller re-reads ``/controller``
            and resigns (KC ``handleControllerMoved``).
    """

    def __init__(
        self,
        broker_id: int,
        zk: KafkaZkClient,
        reactor: Any,
        *,
        config: ControllerConfig,
        channel: ControllerChannelManager,
        background: BackgroundPasses,
        rng: random.Random | None,
        on_controller_moved: Callable[[], Awaitable[None]],
    ) -> None:
        self.broker_id = broker_id
        self.zk = zk
        self.reactor = reactor
        self.config = config
        self.channel = channel
        self.background = background
        self.rng = rng
        self.context = ControllerContext()
        #: The batch every state change fills and sends; its response callbacks
        #: are set by the controller once the collaborators exist.
        self.batch = ControllerBrokerRequestBatch(broker_id, self.context, channel)
        #: Pauses the cyclic garbage collector during bulk work (:meth:`bulk_state_changes`).
        self.collector = CollectorPause(reactor)
        #: Kafka's ``ControllerStats`` (``UncleanLeaderElectionsPerSec`` …).
        self.stats = ControllerStats()
        self.waiters = OutcomeWaiters(reactor)
        self.events = ControllerEventQueue(reactor, after_event=self._after_event)
        #: The controller's broker id as last seen in ``/controller`` (-1 if none/unknown).
        self.active_controller_id = -1
        #: Set once the controller stopped: no more events are queued.
        self.stopped = False
        self._on_controller_moved = on_controller_moved

    @property
    def is_active(self) -> bool:
        """True while this broker is the controller (Kafka's ``isActive``)."""
        return self.active_controller_id == self.broker_id

    # ------------------------------------------------------------------ event plumbing

    def enqueue(
        self, name: str, fn: Callable[..., Awaitable[T]], *args: Any, coalesce: bool = False
    ) -> Deferred[T]:
        """Queues ``fn(*args)`` as the event *name*; fires with its result once it has run.

        With *coalesce*, nothing is queued while the same event (name and
        arguments) still waits — for events that re-read ZooKeeper when they
        run (see :class:`~mafka.controller.events.ControllerEventQueue`).
        """

        async def run() -> T:
            try:
                return await fn(*args)
            except ControllerMovedError as exc:
                log.info(
                    "controller %d: controller moved while processing %s: %s",
                    self.broker_id,
                    name,
                    exc,
                )
                try:
                    await self._on_controller_moved()
                except Exception:
                    log.exception(
                        "controller %d: handling the controller move failed", self.broker_id
                    )
                raise NotControllerError(f"controller moved while processing {name}") from exc

        return self.events.put(name, run, key=(name, fn, *args) if coalesce else None)

    def fire(
        self, name: str, fn: Callable[..., Awaitable[Any]], *args: Any, coalesce: bool = False
    ) -> None:
        """Queues an event nobody waits for (failures are logged); nothing once stopped.

        *coalesce* as for :meth:`enqueue`: a ZooKeeper watch's event, which reads the latest state.
        """
        if self.stopped:
            return
        self.enqueue(name, fn, *args, coalesce=coalesce).addErrback(self.log_event_failure, name)

    def log_event_failure(self, failure: Failure, name: str) -> None:
        if failure.check(EventDropped, NotControllerError):
            log.debug("controller %d: %s: %s", self.broker_id, name, failure.getErrorMessage())
            return None
        log.error(
            "controller %d: error processing %s: %s",
            self.broker_id,
            name,
            failure.getTraceback(),
        )
        return None

    def _after_event(self, name: str) -> None:
        self.waiters.check()

    async def run_admin(self, name: str, fn: Callable[..., Awaitable[T]], *args: Any) -> T | None:
        """Runs an admin step as an event; None when this broker is not (or stops being) the controller."""
        if not self.is_active or self.stopped:
            return None
        try:
            return await self.enqueue(name, fn, *args)
        except (NotControllerError, EventDropped):
            return None

    # ------------------------------------------------------------------ requests

    @contextlib.contextmanager
    def bulk_state_changes(self) -> Iterator[None]:
        """One controller action over many partitions (a broker's failure or startup, a controlled
        shutdown, new partitions): the requests of its state changes are merged into one batch per
        broker (``batch.merged()``) and the cyclic garbage collector is paused meanwhile
        (:mod:`mafka.controller.collector`)."""
        with self.collector.paused(), self.batch.merged():
            yield

    def send_update_metadata(
        self, broker_ids: Iterable[int], partitions: Iterable[TopicPartitionTuple]
    ) -> None:
        """KC ``sendUpdateMetadataRequest`` (its own batch).

        Inside a merged batch (``batch.merged()``) it is sent at once too,
        after what was merged so far, so the order of requests is kept."""
        if self.batch.is_merging:
            self.batch.flush()
            self.batch.add_update_metadata(broker_ids, partitions)
            self.batch.flush()
            return
        self.batch.new_batch()
        self.batch.add_update_metadata(broker_ids, partitions)
        self.batch.send_requests(self.context.epoch)
