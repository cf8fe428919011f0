"""The fast path for a broker that certainly died: act on a refused connection, not on session expiry.

ZooKeeper session expiry stays the authority on a broker that may be alive
(see :mod:`mafka.controller.liveness` for why a refused connection — and
only a refused connection — proves the process that held the port is gone).
Two roles, one per side of the controller election:

* :class:`RefusedBrokers`, on the **active controller**: watches the
  inter-broker listener of every live broker.  When one refuses, and its
  ``/brokers/ids/<id>`` still carries the broker epoch (czxid) the
  controller knows — the dead process's session has simply not expired yet
  — the broker is *fenced*: the controller does what it does for a broker
  whose znode vanished (``onBrokerFailure``: new leaders from the ISR, the
  broker out of every ISR, UpdateMetadata without it), and keeps treating
  that registration as absent until it goes away.  A restarted broker waits
  for its old session to expire before it registers again
  (``KafkaServer._register``) and then arrives as a new registration, the
  ordinary path.  A fenced broker whose listener accepts connections again
  for twice the session timeout while its *old* registration remains (a
  process that was alive all along behind a firewall that answered with
  resets) is taken back as if it had just registered.

* :class:`ControllerRefusal`, on **every other broker**: watches the active
  controller's listener.  When it refuses and ``/controller`` is still the
  node that controller created, the broker deletes ``/controller`` behind a
  check of ``/controller_epoch`` (the same fenced delete a controller uses to
  resign), so a new controller is elected now rather than after the dead
  one's session expires.  The new controller then finds the dead broker
  registered, watches it, and fences it at its first refusal — or at once,
  if it is the broker that saw the refusal and the dead controller's
  ``/brokers/ids`` node belongs to the same session as its ``/controller``
  node did (a container's address may vanish right after its process, so
  a second probe could find no one to refuse it).

Why the check is airtight: ``/controller_epoch`` is read *before*
``/controller``.  Every election creates ``/controller`` and bumps
``/controller_epoch`` in one multi, and only after the previous
``/controller`` is gone; so if the ``/controller`` read second is the node
being watched, no election happened since the epoch was read, and the
delete — conditional on that epoch's zkVersion — can only remove that node.

Everything decided here goes through the controller's event queue, as
session expiry does.  The TCP probing is :class:`BrokerLivenessWatch`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from mafka.controller.channel import broker_endpoint
from mafka.controller.liveness import BrokerLivenessWatch
from mafka.coordination.kafka_zk import ControllerMovedError
from mafka.coordination.znodes.brokers import BrokerRegistration

__all__ = ["ControllerRefusal", "RefusedBrokers", "WatchFactory"]

log = logging.getLogger("mafka.controller")

Registrations = Mapping[int, tuple[BrokerRegistration, int]]
#: Builds a watch: ``(on_refused, on_reachable, comeback_after_s) -> BrokerLivenessWatch``.
WatchFactory = Callable[[Callable[[int, int], None], Callable[[int, int], None], float], BrokerLivenessWatch]


def _endpoint(registration: BrokerRegistration, listener_name: str | None) -> tuple[str, int] | None:
    try:
        return broker_endpoint(registration, listener_name)
    except KeyError:
        return None


class RefusedBrokers:
    """The active controller's fast path (see the module doc).

    Args:
        core: The controller's core (``is_active``, ``context``, ``zk``, ``fire``, ``channel``).
        make_watch: Builds the :class:`BrokerLivenessWatch`.
        fence: ``(broker ids) -> awaitable``: treat the brokers as dead (``onBrokerFailure``).
        recheck: ``() -> awaitable``: re-read ``/brokers/ids`` (``processBrokerChange``).
        comeback_after_s: How long a fenced broker must accept connections to be taken back.
        known_dead: ``() -> {broker id: epoch}``: registrations already seen dead on this broker
            (by its :class:`ControllerRefusal`: the controller it replaces); fenced when first watched.
    """

    def __init__(
        self,
        core: Any,
        make_watch: WatchFactory,
        fence: Callable[[list[int]], Awaitable[None]],
        recheck: Callable[[], Awaitable[None]],
        comeback_after_s: float,
        known_dead: Callable[[], dict[int, int]] = dict,
    ) -> None:
        self._core = core
        self._known_dead = known_dead
        self._fence = fence
        self._recheck = recheck
        self._watch = make_watch(self._on_refused, self._on_reachable, comeback_after_s)
        #: broker id → the broker epoch (czxid) of the registration fenced
        self._fenced: dict[int, int] = {}

    @property
    def fenced(self) -> dict[int, int]:
        """Broker id → fenced registration's epoch (a copy)."""
        return dict(self._fenced)

    def visible(self, registered: Registrations) -> dict[int, tuple[BrokerRegistration, int]]:
        """The registrations the controller should see: *registered* less the fenced ones.

        A fenced broker whose registration is gone or replaced is forgotten
        here (its next registration is an ordinary new broker).
        """
        out = dict(registered)
        for broker_id, epoch in list(self._fenced.items()):
            got = registered.get(broker_id)
            if got is not None and got[1] == epoch:
                del out[broker_id]
                continue
            del self._fenced[broker_id]
            self._core.context.fenced_registrations.pop(broker_id, None)
            self._watch.forget(broker_id)
            log.info("controller %d: broker %d's fenced registration (epoch %d) is gone",
                     self._core.broker_id, broker_id, epoch)
        return out

    def watch(self, brokers: Registrations) -> None:
        """Watches live brokers (id → (registration, epoch)); never the controller itself."""
        listener = self._core.channel.listener_name
        known_dead = self._known_dead()
        for broker_id, (registration, epoch) in sorted(brokers.items()):
            if broker_id == self._core.broker_id:
                continue
            if known_dead.get(broker_id) == epoch:
                self._on_refused(broker_id, epoch)  # the same checks as a refusal seen now
                continue
            endpoint = _endpoint(registration, listener)
            if endpoint is not None:
                self._watch.watch(broker_id, epoch, *endpoint)

    def forget(self, broker_ids: list[int]) -> None:
        """Stops watching brokers that are gone (their registration vanished)."""
        for broker_id in broker_ids:
            if broker_id not in self._fenced:
                self._watch.forget(broker_id)

    def stop(self) -> None:
        """At resignation: no more watching, nothing fenced (a new controller starts afresh)."""
        self._watch.stop()
        self._fenced.clear()
        self._core.context.fenced_registrations.clear()

    # ------------------------------------------------------------------ events

    def _on_refused(self, broker_id: int, epoch: int) -> None:
        self._core.fire("BrokerRefused", self._process_refused, broker_id, epoch)

    def _on_reachable(self, broker_id: int, epoch: int) -> None:
        self._core.fire("BrokerReachable", self._process_reachable, broker_id, epoch)

    async def _process_refused(self, broker_id: int, epoch: int) -> None:
        ctx = self._core.context
        if not self._core.is_active or ctx.broker_epoch(broker_id) != epoch:
            return  # resigned, or a newer registration (or none) since the probe began
        got = await self._core.zk.get_broker_and_epoch(broker_id)
        if got is None or got[1] != epoch:
            await self._recheck()  # its znode already went or changed: the ordinary path
            return
        if not self._core.is_active or ctx.broker_epoch(broker_id) != epoch:
            return
        registration = ctx.live_brokers[broker_id]
        log.warning(
            "controller %d: broker %d (epoch %d) refuses connections while its registration remains: "
            "its process is gone; failing it over now instead of at its session expiry",
            self._core.broker_id, broker_id, epoch,
        )
        self._fenced[broker_id] = epoch
        ctx.fenced_registrations[broker_id] = registration  # listed to clients until its znode goes
        endpoint = _endpoint(registration, self._core.channel.listener_name)
        if endpoint is not None:
            self._watch.fence(broker_id, epoch, *endpoint)
        await self._fence([broker_id])

    async def _process_reachable(self, broker_id: int, epoch: int) -> None:
        if not self._core.is_active or self._fenced.get(broker_id) != epoch:
            return
        got = await self._core.zk.get_broker_and_epoch(broker_id)
        if got is None or got[1] != epoch or self._fenced.get(broker_id) != epoch:
            return  # visible() forgets it at the next broker change
        log.warning(
            "controller %d: broker %d (epoch %d) accepts connections again with its old registration; "
            "taking it back", self._core.broker_id, broker_id, epoch,
        )
        del self._fenced[broker_id]
        self._core.context.fenced_registrations.pop(broker_id, None)
        self._watch.forget(broker_id)
        await self._recheck()  # seen as a new broker: onBrokerStartup, and watched again


class ControllerRefusal:
    """A broker's watch of the active controller (see the module doc).

    Args:
        broker_id: This broker.
        zk: The broker's ``KafkaZkClient``.
        make_watch: Builds the :class:`BrokerLivenessWatch` (``comeback_after_s`` unused).
        listener_name: The listener the controller's channel uses (where to probe).
        fire: ``(name, fn, *args)``: queue an event on the controller's queue.
    """

    def __init__(
        self,
        broker_id: int,
        zk: Any,
        make_watch: WatchFactory,
        listener_name: str | None,
        fire: Callable[..., None],
    ) -> None:
        self._broker_id = broker_id
        self._zk = zk
        self._listener_name = listener_name
        self._fire = fire
        self._watch = make_watch(self._on_refused, lambda b, e: None, float("inf"))
        self._watching: tuple[int, int, int] | None = None
        #: broker id → broker epoch of a controller seen dead here (its registration, same session)
        self.dead: dict[int, int] = {}

    @property
    def watching(self) -> tuple[int, int, int] | None:
        """``(controller id, czxid, session)`` of the ``/controller`` node being watched, or None."""
        return self._watching

    async def refresh(self, active_controller_id: int) -> None:
        """Watches the controller ZooKeeper names now, if it is another broker (else stops)."""
        if active_controller_id in (-1, self._broker_id):
            self.stop()
            return
        current = await self._zk.get_controller_registration()
        if current is None or current[0] != active_controller_id:
            self.stop()
            return
        if current == self._watching:
            return
        got = await self._zk.get_broker(active_controller_id)
        endpoint = None if got is None else _endpoint(got, self._listener_name)
        if endpoint is None:
            self.stop()
            return
        self._watching = current
        self._watch.watch(current[0], current[1], *endpoint)

    def stop(self) -> None:
        self._watching = None
        self._watch.stop()

    def _on_refused(self, controller_id: int, czxid: int) -> None:
        self._fire("ControllerRefused", self._process_refused, controller_id, czxid)

    async def _process_refused(self, controller_id: int, czxid: int) -> None:
        watched = self._watching
        if watched is None or watched[:2] != (controller_id, czxid):
            return
        # The dead controller's broker registration, if the same session holds it: whoever of the
        # brokers that saw this is elected next fences it at once, without a probe of its own
        # (which may come too late to see a refusal: a container's address vanishes soon after
        # its process).
        broker = await self._zk.get_broker_session(controller_id)
        if broker is not None and broker[1] == watched[2]:
            self.dead[controller_id] = broker[0]
        epoch = await self._zk.get_controller_epoch()  # before /controller: see the module doc
        current = await self._zk.get_controller_registration()
        if epoch is None or current is None or current[:2] != (controller_id, czxid):
            return  # already gone or replaced: the /controller watch does the rest
        log.warning(
            "broker %d: controller %d refuses connections while /controller remains: its process is gone; "
            "deleting /controller (checked against controller epoch %d) so another broker is elected now",
            self._broker_id, controller_id, epoch[0],
        )
        self.stop()
        try:
            await self._zk.delete_controller(epoch[1])
        except ControllerMovedError:
            log.info("broker %d: a controller was elected meanwhile; /controller kept", self._broker_id)
