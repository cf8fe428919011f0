"""Kafka 2.8's ZooKeeper operations (``KafkaZkClient`` / ``AdminZkClient``) over a ClusterStore.

:class:`KafkaZkClient` composes the small :class:`~mafka.coordination.store.ClusterStore`
interface (create/get/set/delete/transaction/watch) into the operations a
Kafka broker, controller and admin path perform on ZooKeeper, writing the
exact bytes of :mod:`mafka.coordination.znodes`.  It imports no ZooKeeper
client; it works the same on ``KazooStore`` and ``MemoryStore``.

Contract:

* Every public operation returns a Twisted ``Deferred`` (firing on the thread
  the store fires on — the reactor thread).  Failures are the store's errors
  (:class:`~mafka.coordination.store.NoNodeError`, ``BadVersionError``,
  ``ConnectionLossError``, …) unless a method says otherwise, plus:

  - :class:`ControllerMovedError` — an epoch-checked write found that
    ``/controller_epoch``'s zkVersion is no longer the caller's (KAFKA-6082):
    another controller has been elected since; resign.
  - :class:`BrokerIdAlreadyRegisteredError` (a ``NodeExistsError``) — another
    session holds ``/brokers/ids/N``.
  - :class:`mafka.errors.TopicAlreadyExistsError`,
    :class:`mafka.errors.InvalidTopicError`,
    :class:`mafka.errors.UnknownTopicOrPartitionError` — admin paths, as
    ``AdminZkClient`` raises them.
* **Controller fencing.**  Every method taking ``epoch_zk_version`` performs
  each write as a ZooKeeper multi ``[check(/controller_epoch, epoch_zk_version), op]``
  (Kafka's ``wrapRequestWithControllerEpochCheck``), so a deposed controller
  can never overwrite the new one's state.  ``-1`` means "no check" (Kafka's
  ``MatchAnyVersion``; for non-controller callers).
* No operation retries on ``ConnectionLossError``: the outcome is unknown and
  the caller decides (Kafka blocks until reconnected and retries; the
  idempotent read-back checks that makes safe are kept where Kafka has them:
  broker registration, producer-id blocks, the leader's ISR write).
* Watch helpers only name Kafka's paths and delegate to the store's
  persistent ``watch_children``/``watch_data``.

Example (with :class:`~mafka.coordination.memory_store.MemoryStore`, whose
Deferreds fire synchronously)::

    zk = KafkaZkClient(store)
    zk.create_persistent_roots()
    epoch_d = zk.register_broker(BrokerRegistration(1, {"PLAINTEXT": ("PLAINTEXT", "h", 9092)}))
    election_d = zk.elect_controller(1, now_ms=1650000000000)  # → ControllerElection(True, 1, 1)
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, NamedTuple, ParamSpec, TypeVar

from twisted.internet.defer import Deferred, DeferredLock

from mafka.coordination.store import (
    BadVersionError,
    CheckOp,
    ClusterStore,
    CreateOp,
    DeleteOp,
    NodeExistsError,
    NoNodeError,
    Op,
    SetOp,
    Stat,
    StoreError,
    WatchCallback,
    WatchHandle,
)
from mafka.coordination.znodes import (
    BROKER_IDS_PATH,
    BROKER_SEQUENCE_ID_PATH,
    CONFIG_PATH,
    PERSISTENT_ZK_PATHS,
    TOPICS_PATH,
    BrokerRegistration,
    ClusterIdZNode,
    ConfigChangeNotificationZNode,
    ConfigEntityZNode,
    ConfigType,
    ControllerEpochZNode,
    ControllerZNode,
    DeleteTopicsZNode,
    FeatureZNode,
    IsrChangeNotificationZNode,
    LeaderIsrAndControllerEpoch,
    LogDirEventNotificationZNode,
    PreferredReplicaElectionZNode,
    ProducerIdBlock,
    ReassignPartitionsZNode,
    TopicAssignment,
    broker_path,
    new_cluster_id,
    partition_state_path,
    sequence_number,
    topic_partition_path,
    topic_partitions_path,
    topic_path,
)
from mafka.errors import InvalidTopicError, TopicAlreadyExistsError, UnknownTopicOrPartitionError
from mafka.topics import TopicPartitionTuple, validate_topic_name

__all__ = [
    "BrokerIdAlreadyRegisteredError",
    "ControllerElection",
    "ControllerMovedError",
    "KafkaZkClient",
    "PartitionStateResults",
    "validate_topic_name",
]

_P = ParamSpec("_P")
_T = TypeVar("_T")



class ControllerMovedError(Exception):
    """The ``/controller_epoch`` zkVersion check of a controller write failed: another controller won.

    Kafka's ``ControllerMovedException``; the controller must resign.
    """


class BrokerIdAlreadyRegisteredError(NodeExistsError):
    """``/brokers/ids/N`` exists and belongs to another ZooKeeper session."""


class ControllerElection(NamedTuple):
    """The outcome of :meth:`KafkaZkClient.elect_controller`.

    Attributes:
        won: True if this broker is now the controller.
        controller_epoch: The new epoch if won; otherwise the epoch stored in
            ``/controller_epoch`` when we looked (-1 if unknown).
        epoch_zk_version: ``/controller_epoch``'s zkVersion matching
            ``controller_epoch`` (the fencing token if won; -1 if unknown).
    """

    won: bool
    controller_epoch: int
    epoch_zk_version: int


class PartitionStateResults(NamedTuple):
    """Per-partition outcome of a batch of partition-state writes.

    Attributes:
        successes: Partition → the state written, carrying its new zk_version.
        failures: Partition → the store error (NoNode, NodeExists, …).
        bad_version: Partitions whose expected zkVersion was stale (re-read and retry).
    """

    successes: dict[TopicPartitionTuple, LeaderIsrAndControllerEpoch]
    failures: dict[TopicPartitionTuple, Exception]
    bad_version: list[TopicPartitionTuple]


def _deferred(fn: Callable[_P, Coroutine[Any, Any, _T]]) -> Callable[_P, Deferred[_T]]:
    """Turns an ``async def`` method into one returning a Deferred."""

    @functools.wraps(fn)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> Deferred[_T]:
        return Deferred.fromCoroutine(fn(*args, **kwargs))

    return wrapper


def _check_epoch_zk_version(epoch_zk_version: int) -> None:
    if epoch_zk_version < -1:
        raise ValueError(
            f"expected controller epoch zkVersion {epoch_zk_version} should be non-negative or equal to -1"
        )


#: Mafka's rebalancer: the plan being carried out, or the last one (``mafka.rebalancer.execution``)
REBALANCER_STATE_PATH = "/mafka/rebalancer/state"


class KafkaZkClient:
    """Kafka's ZooKeeper operations over one :class:`ClusterStore` session.

    Args:
        store: A started store (one ZooKeeper session).
    """

    def __init__(self, store: ClusterStore) -> None:
        self._store = store
        self._pid_lock = DeferredLock()

    @property
    def store(self) -> ClusterStore:
        """The underlying store."""
        return self._store

    # ------------------------------------------------------------------ small helpers

    async def _get_or_none(self, path: str) -> tuple[bytes, Stat] | None:
        try:
            return await self._store.get(path)
        except NoNodeError:
            return None

    async def _children_or_empty(self, path: str) -> list[str]:
        try:
            return sorted(await self._store.get_children(path))
        except NoNodeError:
            return []

    async def _epoch_checked(self, ops: Sequence[Op], epoch_zk_version: int) -> list[object]:
        _check_epoch_zk_version(epoch_zk_version)
        if epoch_zk_version == -1:
            return list(await self._store.transaction(list(ops)))
        try:
            results = await self._store.transaction(
                [CheckOp(ControllerEpochZNode.PATH, epoch_zk_version), *ops]
            )
        except BadVersionError as exc:
            # The store names no op: tell the check's failure from the ops' by the version now.
            # Versions only grow, so a check that failed still fails.
            stat = await self._store.exists(ControllerEpochZNode.PATH)
            if stat is None or stat.version != epoch_zk_version:
                found = None if stat is None else stat.version
                raise ControllerMovedError(
                    f"Controller epoch zkVersion check fails. Expected zkVersion = {epoch_zk_version}, found {found}"
                ) from exc
            raise
        return list(results[1:])

    def controller_epoch_checked(
        self, ops: Sequence[Op], epoch_zk_version: int
    ) -> Deferred[list[object]]:
        """Runs *ops* atomically behind ``check(/controller_epoch, epoch_zk_version)``.

        Args:
            ops: The controller's writes.
            epoch_zk_version: The zkVersion of ``/controller_epoch`` this
                controller got when elected; -1 runs *ops* unchecked.

        Returns:
            A Deferred firing with the results of *ops* (the check's own result dropped).
            It fails with :class:`ControllerMovedError` if the check failed, or
            with the first failing op's error otherwise.
        """
        return Deferred.fromCoroutine(self._epoch_checked(ops, epoch_zk_version))

    async def _delete_checked(self, path: str, epoch_zk_version: int) -> bool:
        try:
            await self._epoch_checked([DeleteOp(path)], epoch_zk_version)
        except NoNodeError:
            return False
        return True

    async def _delete_recursive(self, path: str, epoch_zk_version: int) -> bool:
        """Kafka's ``deleteRecursive``: children first, each delete epoch-checked; False if absent."""
        try:
            children = await self._store.get_children(path)
        except NoNodeError:
            return False
        for child in children:
            await self._delete_recursive(f"{path}/{child}", epoch_zk_version)
        await self._delete_checked(path, epoch_zk_version)
        return True

    async def _create_checked_if_absent(self, path: str, epoch_zk_version: int) -> None:
        try:
            await self._epoch_checked([CreateOp(path)], epoch_zk_version)
        except (NodeExistsError, NoNodeError):
            pass

    # ------------------------------------------------------------------ startup

    @_deferred
    async def create_persistent_roots(self) -> None:
        """Makes sure every path of ``ZkData.PersistentZkPaths`` exists (empty, persistent)."""
        for path in PERSISTENT_ZK_PATHS:
            await self._store.ensure_path(path)

    @_deferred
    async def get_cluster_id(self) -> str | None:
        """The cluster id in ``/cluster/id``, or None."""
        got = await self._get_or_none(ClusterIdZNode.PATH)
        return None if got is None else ClusterIdZNode.decode(got[0])

    @_deferred
    async def get_or_create_cluster_id(
        self, new_id_factory: Callable[[], str] = new_cluster_id
    ) -> str:
        """The cluster id, creating ``/cluster/id`` with ``new_id_factory()`` if there is none.

        If another broker creates it first, that broker's id is returned.
        """
        got = await self._get_or_none(ClusterIdZNode.PATH)
        if got is not None:
            return ClusterIdZNode.decode(got[0])
        proposed = new_id_factory()
        try:
            await self._store.create(
                ClusterIdZNode.PATH, ClusterIdZNode.encode(proposed), makepath=True
            )
            return proposed
        except NodeExistsError:
            data, _ = await self._store.get(ClusterIdZNode.PATH)
            return ClusterIdZNode.decode(data)

    @_deferred
    async def generate_broker_sequence_id(self) -> int:
        """Kafka's ``generateBrokerSequenceId``: bumps ``/brokers/seqid``, returns its new version (1, 2, …)."""
        while True:
            try:
                stat = await self._store.set(BROKER_SEQUENCE_ID_PATH, b"", -1)
                return stat.version
            except NoNodeError:
                await self._store.ensure_path(BROKER_SEQUENCE_ID_PATH)

    # ------------------------------------------------------------------ brokers

    @_deferred
    async def write_monitor_report(self, broker_id: int, data: bytes) -> None:
        """Writes this broker's slow-node report to the ephemeral ``/mafka/monitor/<broker_id>`` (Mafka's own
        znode): created by this session the first time, overwritten after."""
        path = f"/mafka/monitor/{broker_id}"
        try:
            await self._store.set(path, data)
            return
        except NoNodeError:
            pass
        await self._store.ensure_path("/mafka/monitor")
        try:
            await self._store.create(path, data, ephemeral=True)
        except NodeExistsError:  # a previous session's node, not yet expired
            await self._store.set(path, data)

    @_deferred
    async def rebalancer_state(self) -> tuple[bytes, int] | None:
        """``/mafka/rebalancer/state`` (Mafka's own znode) and its version, or None."""
        got = await self._get_or_none(REBALANCER_STATE_PATH)
        return None if got is None else (got[0], got[1].version)

    @_deferred
    async def write_rebalancer_state(self, data: bytes, version: int | None) -> int:
        """Writes the rebalancer state if it is still at *version* (None: it must not exist yet); the new version.

        Raises:
            BadVersionError / NodeExistsError: someone else wrote it meanwhile.
        """
        if version is None:
            await self._store.ensure_path("/mafka/rebalancer")
            await self._store.create(REBALANCER_STATE_PATH, data)
            return 0
        stat = await self._store.set(REBALANCER_STATE_PATH, data, version)
        return stat.version

    @_deferred
    async def monitor_reports(self) -> dict[int, bytes]:
        """Every ``/mafka/monitor/<id>`` report, raw (broker id → JSON bytes)."""
        try:
            children = await self._store.get_children("/mafka/monitor")
        except NoNodeError:
            return {}
        out: dict[int, bytes] = {}
        for child in children:
            got = await self._get_or_none(f"/mafka/monitor/{child}")
            if got is not None and child.isdigit():
                out[int(child)] = got[0]
        return out

    @_deferred
    async def register_broker(self, registration: BrokerRegistration) -> int:
        """Creates the ephemeral ``/brokers/ids/N``; returns the broker epoch (the node's czxid).

        As Kafka (KIP-380): one multi ``create(path, empty, EPHEMERAL)`` +
        ``setData(path, json, version 0)``.  If the node exists and this session
        owns it (a retried registration), its czxid is returned.

        Raises:
            BrokerIdAlreadyRegisteredError: Another session holds the id.
            NoNodeError: ``/brokers/ids`` does not exist (call :meth:`create_persistent_roots`).
        """
        path = registration.path
        ops: list[Op] = [CreateOp(path, b"", ephemeral=True), SetOp(path, registration.encode(), 0)]
        for _ in range(10):
            try:
                results = await self._store.transaction(ops)
            except NodeExistsError:
                got = await self._get_or_none(path)
                if got is None:
                    continue  # it went away while we looked: try again
                stat = got[1]
                if stat.ephemeral_owner and stat.ephemeral_owner == self._store.session_id:
                    return stat.czxid
                raise BrokerIdAlreadyRegisteredError(
                    f"broker id {registration.id} already registered (at {path}, by session {stat.ephemeral_owner:#x})"
                ) from None
            set_stat = results[1]
            assert isinstance(set_stat, Stat)
            return set_stat.czxid
        raise BrokerIdAlreadyRegisteredError(
            f"broker id {registration.id}: registration kept racing"
        )

    @_deferred
    async def update_broker(self, registration: BrokerRegistration) -> None:
        """Kafka's ``updateBrokerInfo``: rewrites ``/brokers/ids/N`` (any version)."""
        await self._store.set(registration.path, registration.encode(), -1)

    @_deferred
    async def get_broker(self, broker_id: int) -> BrokerRegistration | None:
        """The registration of *broker_id*, or None if it is not live."""
        got = await self._get_or_none(broker_path(broker_id))
        return None if got is None else BrokerRegistration.decode(broker_id, got[0])

    @_deferred
    async def get_broker_and_epoch(self, broker_id: int) -> tuple[BrokerRegistration, int] | None:
        """``(registration, broker epoch)`` of *broker_id*, or None if it is not live."""
        got = await self._get_or_none(broker_path(broker_id))
        return None if got is None else (BrokerRegistration.decode(broker_id, got[0]), got[1].czxid)

    @_deferred
    async def get_broker_ids(self) -> list[int]:
        """Live broker ids, sorted (Kafka's ``getSortedBrokerList``)."""
        return sorted(int(child) for child in await self._children_or_empty(BROKER_IDS_PATH))

    @_deferred
    async def get_all_brokers(self) -> dict[int, tuple[BrokerRegistration, int]]:
        """Broker id → ``(registration, broker epoch = czxid)`` of every live broker, by id.

        Brokers that vanish between the listing and the read are left out.
        """
        out: dict[int, tuple[BrokerRegistration, int]] = {}
        for broker_id in sorted(
            int(child) for child in await self._children_or_empty(BROKER_IDS_PATH)
        ):
            got = await self._get_or_none(broker_path(broker_id))
            if got is not None:
                out[broker_id] = (BrokerRegistration.decode(broker_id, got[0]), got[1].czxid)
        return out

    # ------------------------------------------------------------------ controller

    async def _read_controller_epoch(self) -> tuple[int, int] | None:
        got = await self._get_or_none(ControllerEpochZNode.PATH)
        return None if got is None else (ControllerEpochZNode.decode(got[0]), got[1].version)

    @_deferred
    async def get_controller_id(self) -> int | None:
        """The controller's broker id from ``/controller``, or None (absent or unreadable, as Kafka)."""
        got = await self._get_or_none(ControllerZNode.PATH)
        if got is None:
            return None
        try:
            return ControllerZNode.decode(got[0]).broker_id
        except ValueError:
            return None

    @_deferred
    async def get_controller_epoch(self) -> tuple[int, int] | None:
        """``(controller epoch, its zkVersion)`` from ``/controller_epoch``, or None."""
        return await self._read_controller_epoch()

    @_deferred
    async def elect_controller(self, broker_id: int, now_ms: int) -> ControllerElection:
        """Tries to become the controller (KC ``elect`` + ZC ``registerControllerAndIncrementControllerEpoch``).

        1. If ``/controller`` exists, someone (possibly a stale registration of
           ours) is the controller: lose.
        2. Read ``/controller_epoch`` → (E, V), creating it as ``0`` if missing.
        3. One multi: create ephemeral ``/controller`` (``{"version":1,"brokerid":…,"timestamp":"now_ms"}``)
           and ``setData(/controller_epoch, E+1, version V)``.  Success → won,
           epoch E+1, the new zkVersion.
        4. NodeExists/BadVersion → re-read: won only if ``/controller`` names us
           and the epoch is E+1 (our write went through), else lose.

        Returns:
            A :class:`ControllerElection`; keep ``epoch_zk_version`` to fence writes.
        """
        if await self._get_or_none(ControllerZNode.PATH) is not None:
            current = await self._read_controller_epoch()
            return ControllerElection(False, *(current or (-1, -1)))
        current = await self._read_controller_epoch()
        if current is None:
            try:
                await self._store.create(
                    ControllerEpochZNode.PATH,
                    ControllerEpochZNode.encode(ControllerEpochZNode.INITIAL_EPOCH),
                )
                current = (
                    ControllerEpochZNode.INITIAL_EPOCH,
                    ControllerEpochZNode.INITIAL_ZK_VERSION,
                )
            except NodeExistsError:
                current = await self._read_controller_epoch()
                if current is None:
                    raise StoreError(
                        "/controller_epoch existed before but went away while reading it"
                    ) from None
        epoch, epoch_zk_version = current
        new_epoch = epoch + 1
        try:
            results = await self._store.transaction(
                [
                    CreateOp(
                        ControllerZNode.PATH,
                        ControllerZNode(broker_id, now_ms).encode(),
                        ephemeral=True,
                    ),
                    SetOp(
                        ControllerEpochZNode.PATH,
                        ControllerEpochZNode.encode(new_epoch),
                        epoch_zk_version,
                    ),
                ]
            )
        except (NodeExistsError, BadVersionError):
            controller = await self.get_controller_id()
            after = await self._read_controller_epoch()
            if controller == broker_id and after is not None and after[0] == new_epoch:
                return ControllerElection(True, new_epoch, after[1])
            return ControllerElection(False, *(after or (-1, -1)))
        set_stat = results[1]
        assert isinstance(set_stat, Stat)
        return ControllerElection(True, new_epoch, set_stat.version)

    @_deferred
    async def delete_controller(self, epoch_zk_version: int) -> None:
        """Resigns: deletes ``/controller`` epoch-checked (KC ``triggerControllerMove``); absent is fine."""
        await self._delete_checked(ControllerZNode.PATH, epoch_zk_version)

    # ------------------------------------------------------------------ topics

    @_deferred
    async def topic_exists(self, topic: str) -> bool:
        """True if ``/brokers/topics/<topic>`` exists."""
        return await self._store.exists(topic_path(topic)) is not None

    @_deferred
    async def get_topics(self) -> list[str]:
        """All topic names, sorted."""
        return await self._children_or_empty(TOPICS_PATH)

    async def _set_or_create_entity_config(
        self, entity_type: str, entity_name: str, config: Mapping[str, str]
    ) -> None:
        path = ConfigEntityZNode.path(entity_type, entity_name)
        data = ConfigEntityZNode.encode(config)
        try:
            await self._store.set(path, data, -1)
        except NoNodeError:
            try:
                await self._store.create(path, data, makepath=True)
            except NodeExistsError:
                await self._store.set(path, data, -1)

    @_deferred
    async def create_topic(
        self,
        name: str,
        assignment: Mapping[int, Sequence[int]] | TopicAssignment,
        config: Mapping[str, str] | None = None,
        topic_id: str | None = None,
    ) -> TopicAssignment:
        """Creates a topic as ``AdminZkClient.createTopicWithAssignment``: config znode first, then assignment.

        Args:
            name: The topic (validated as Kafka's ``Topic.validate``).
            assignment: Partition → replicas, or a ready :class:`TopicAssignment`.
            config: Topic config overrides written to ``/config/topics/<name>`` (``{}`` if None).
            topic_id: The topic id (replaces the assignment's) — None writes none.

        Returns:
            The assignment written.

        Raises:
            TopicAlreadyExistsError: ``/brokers/topics/<name>`` exists (checked
                before the config is touched, and again by the create).
            InvalidTopicError: Illegal name, or it collides with an existing
                topic once ``.`` and ``_`` are treated alike.
        """
        validate_topic_name(name)
        if isinstance(assignment, TopicAssignment):
            written = assignment if topic_id is None else replace(assignment, topic_id=topic_id)
        else:
            written = TopicAssignment(assignment, topic_id=topic_id)
        if await self._store.exists(topic_path(name)) is not None:
            raise TopicAlreadyExistsError(f"Topic '{name}' already exists.")
        if "." in name or "_" in name:
            topics = await self._children_or_empty(TOPICS_PATH)
            if name in topics:
                raise TopicAlreadyExistsError(f"Topic '{name}' already exists.")
            folded = name.replace(".", "_")
            colliding = [t for t in topics if t.replace(".", "_") == folded]
            if colliding:
                raise InvalidTopicError(
                    f"Topic '{name}' collides with existing topics: {', '.join(colliding)}"
                )
        await self._set_or_create_entity_config(ConfigType.TOPIC, name, config or {})
        try:
            await self._store.create(topic_path(name), written.encode(), makepath=True)
        except NodeExistsError:
            raise TopicAlreadyExistsError(f"Topic '{name}' already exists.") from None
        return written

    @_deferred
    async def get_assignment(self, topic: str) -> tuple[TopicAssignment, int] | None:
        """``(assignment, zkVersion)`` of *topic*, or None if the topic does not exist."""
        got = await self._get_or_none(topic_path(topic))
        return None if got is None else (TopicAssignment.decode(got[0], topic), got[1].version)

    @_deferred
    async def set_assignment(
        self,
        topic: str,
        assignment: TopicAssignment,
        expected_version: int = -1,
        epoch_zk_version: int = -1,
    ) -> int:
        """Rewrites ``/brokers/topics/<topic>``; returns the new zkVersion.

        Args:
            expected_version: The zkVersion read with the assignment (-1: any).
            epoch_zk_version: Controller fencing (-1: none).

        Raises:
            BadVersionError: Someone else changed the assignment.
            NoNodeError: The topic does not exist.
            ControllerMovedError: The epoch check failed.
        """
        results = await self._epoch_checked(
            [SetOp(topic_path(topic), assignment.encode(), expected_version)], epoch_zk_version
        )
        stat = results[0]
        assert isinstance(stat, Stat)
        return stat.version

    @_deferred
    async def get_entity_config(self, entity_type: str, entity_name: str) -> dict[str, str]:
        """``/config/<entity_type>/<entity_name>`` as a dict (``{}`` if absent)."""
        got = await self._get_or_none(ConfigEntityZNode.path(entity_type, entity_name))
        return {} if got is None else ConfigEntityZNode.decode(got[0])

    @_deferred
    async def get_all_entities_with_config(self, entity_type: str) -> list[str]:
        """The (sanitized) names under ``/config/<entity_type>``, sorted (``getAllEntitiesWithConfig``)."""
        return await self._children_or_empty(f"{CONFIG_PATH}/{entity_type}")

    def get_topic_config(self, topic: str) -> Deferred[dict[str, str]]:
        """The topic's config overrides (``{}`` if none)."""
        return self.get_entity_config(ConfigType.TOPIC, topic)

    def get_broker_config(self, broker_id: int | None) -> Deferred[dict[str, str]]:
        """A broker's dynamic config overrides (None: the cluster default ``<default>``)."""
        name = ConfigType.DEFAULT_ENTITY if broker_id is None else str(int(broker_id))
        return self.get_entity_config(ConfigType.BROKER, name)

    @_deferred
    async def set_entity_config(
        self, entity_type: str, entity_name: str, config: Mapping[str, str]
    ) -> str:
        """Writes an entity's config, then announces it (``AdminZkClient.changeEntityConfig``).

        Returns:
            The path of the ``/config/changes/config_change_N`` node created.
        """
        await self._set_or_create_entity_config(entity_type, entity_name, config)
        return await self._post_config_change(
            ConfigChangeNotificationZNode.entity_path(entity_type, entity_name)
        )

    @_deferred
    async def set_topic_config(self, topic: str, config: Mapping[str, str]) -> str:
        """Replaces the topic's config overrides and posts a config change notification ``topics/<topic>``.

        Returns:
            The notification's path.

        Raises:
            UnknownTopicOrPartitionError: The topic does not exist (as ``changeTopicConfig``).
        """
        if await self._store.exists(topic_path(topic)) is None:
            raise UnknownTopicOrPartitionError(f"Topic {topic} does not exist.")
        await self._set_or_create_entity_config(ConfigType.TOPIC, topic, config)
        return await self._post_config_change(
            ConfigChangeNotificationZNode.entity_path(ConfigType.TOPIC, topic)
        )

    def set_broker_config(self, broker_id: int | None, config: Mapping[str, str]) -> Deferred[str]:
        """Replaces a broker's (None: the default's) dynamic config and announces it; returns the notification path."""
        name = ConfigType.DEFAULT_ENTITY if broker_id is None else str(int(broker_id))
        return self.set_entity_config(ConfigType.BROKER, name, config)

    async def _post_config_change(self, entity_path: str) -> str:
        await self._store.ensure_path(ConfigChangeNotificationZNode.PATH)
        return await self._store.create(
            ConfigChangeNotificationZNode.CREATE_PATH,
            ConfigChangeNotificationZNode.encode(entity_path),
            sequential=True,
        )

    @_deferred
    async def post_config_change_notification(self, entity_path: str) -> str:
        """Creates ``/config/changes/config_change_N`` for *entity_path* (e.g. ``topics/T``); returns its path."""
        return await self._post_config_change(entity_path)

    @_deferred
    async def get_config_change_notifications(self) -> list[str]:
        """Child names under ``/config/changes``, sorted (by sequence number)."""
        return [
            c
            for c in await self._children_or_empty(ConfigChangeNotificationZNode.PATH)
            if c.startswith(ConfigChangeNotificationZNode.PREFIX)
        ]

    # ------------------------------------------------------------------ partition states

    @_deferred
    async def create_partition_states(
        self,
        states: Mapping[TopicPartitionTuple, LeaderIsrAndControllerEpoch],
        controller_epoch: int,
        epoch_zk_version: int,
    ) -> PartitionStateResults:
        """Creates the state nodes of new partitions (PSM ``initializeLeaderAndIsrForPartitions``).

        Each state is written with *controller_epoch* (replacing the state's
        own).  As Kafka, the empty parents ``…/partitions`` and
        ``…/partitions/<p>`` are created first (existing ones are fine) but
        never the topic node itself, so a deleted topic is not resurrected:
        its partitions fail with NoNodeError.  Every create is epoch-checked.

        Returns:
            Per-partition results; successes carry zk_version 0.

        Raises:
            ControllerMovedError: The epoch check failed (nothing more is written).
        """
        stamped = {
            tp: replace(state, controller_epoch=controller_epoch) for tp, state in states.items()
        }
        for topic in dict.fromkeys(topic for topic, _ in stamped):
            await self._create_checked_if_absent(topic_partitions_path(topic), epoch_zk_version)
        for topic, partition in stamped:
            await self._create_checked_if_absent(
                topic_partition_path(topic, partition), epoch_zk_version
            )
        results = PartitionStateResults({}, {}, [])
        for (topic, partition), state in stamped.items():
            try:
                await self._epoch_checked(
                    [CreateOp(partition_state_path(topic, partition), state.encode())],
                    epoch_zk_version,
                )
            except ControllerMovedError:
                raise
            except StoreError as exc:
                results.failures[(topic, partition)] = exc
            else:
                results.successes[(topic, partition)] = state.with_zk_version(0)
        return results

    @_deferred
    async def get_partition_state(
        self, topic: str, partition: int
    ) -> tuple[LeaderIsrAndControllerEpoch, int] | None:
        """``(state, zkVersion)`` of one partition (the state also carries zk_version), or None."""
        got = await self._get_or_none(partition_state_path(topic, partition))
        if got is None:
            return None
        data, stat = got
        return LeaderIsrAndControllerEpoch.decode(data, stat.version), stat.version

    @_deferred
    async def get_partition_states(
        self, partitions: Iterable[TopicPartitionTuple]
    ) -> dict[TopicPartitionTuple, LeaderIsrAndControllerEpoch]:
        """States (with zk_version) of the partitions that have one; others are left out."""
        out: dict[TopicPartitionTuple, LeaderIsrAndControllerEpoch] = {}
        for topic, partition in partitions:
            got = await self._get_or_none(partition_state_path(topic, partition))
            if got is not None:
                out[(topic, partition)] = LeaderIsrAndControllerEpoch.decode(got[0], got[1].version)
        return out

    @_deferred
    async def update_partition_states_conditionally(
        self,
        states: Mapping[TopicPartitionTuple, LeaderIsrAndControllerEpoch],
        controller_epoch: int,
        epoch_zk_version: int,
    ) -> PartitionStateResults:
        """The controller's state writes (ZC ``updateLeaderAndIsr``): one conditional setData per partition.

        Each state is written with *controller_epoch*, expecting its own
        ``zk_version`` (-1: any), behind the controller-epoch check.

        Returns:
            Successes (with their new zk_version), BadVersion partitions in
            ``bad_version`` (re-read and retry them), other errors in ``failures``.

        Raises:
            ControllerMovedError: The epoch check failed.
        """
        results = PartitionStateResults({}, {}, [])
        for (topic, partition), state in states.items():
            new_state = replace(state, controller_epoch=controller_epoch)
            try:
                written = await self._epoch_checked(
                    [
                        SetOp(
                            partition_state_path(topic, partition),
                            new_state.encode(),
                            state.zk_version,
                        )
                    ],
                    epoch_zk_version,
                )
            except ControllerMovedError:
                raise
            except BadVersionError:
                results.bad_version.append((topic, partition))
            except StoreError as exc:
                results.failures[(topic, partition)] = exc
            else:
                stat = written[0]
                assert isinstance(stat, Stat)
                results.successes[(topic, partition)] = new_state.with_zk_version(stat.version)
        return results

    @_deferred
    async def conditional_update_partition_state_as_leader(
        self, partition: TopicPartitionTuple, state: LeaderIsrAndControllerEpoch, expected_version: int
    ) -> tuple[bool, int]:
        """The partition leader's ISR write (Kafka 2.6 ``ReplicationUtils.updateLeaderAndIsr``).

        ``setData(state, expected_version)`` without a controller check.  On
        BadVersion the node is read back: if it already holds exactly *state*
        (leader, leader epoch, ISR, controller epoch) the write counts as done
        (a retried write that had succeeded).

        Returns:
            ``(True, new zkVersion)`` or ``(False, -1)`` (stale version, no node, or unreadable).
        """
        topic, p = partition
        path = partition_state_path(topic, p)
        try:
            stat = await self._store.set(path, state.encode(), expected_version)
            return True, stat.version
        except NoNodeError:
            return False, -1
        except BadVersionError:
            got = await self._get_or_none(path)
            if got is None:
                return False, -1
            try:
                written = LeaderIsrAndControllerEpoch.decode(got[0], got[1].version)
            except ValueError:
                return False, -1
            if written == state:
                return True, got[1].version
            return False, -1

    # ------------------------------------------------------------------ topic deletion

    @_deferred
    async def mark_topic_for_deletion(self, topic: str) -> bool:
        """Queues *topic* for deletion (``AdminZkClient.deleteTopic``).

        Returns:
            True if newly queued, False if it already was.

        Raises:
            UnknownTopicOrPartitionError: The topic does not exist.
        """
        if await self._store.exists(topic_path(topic)) is None:
            raise UnknownTopicOrPartitionError(f"Topic `{topic}` to delete does not exist")
        try:
            await self._store.create(DeleteTopicsZNode.path(topic), b"", makepath=True)
        except NodeExistsError:
            return False
        return True

    @_deferred
    async def is_topic_marked_for_deletion(self, topic: str) -> bool:
        """True if ``/admin/delete_topics/<topic>`` exists."""
        return await self._store.exists(DeleteTopicsZNode.path(topic)) is not None

    @_deferred
    async def get_topic_deletions(self) -> list[str]:
        """Topics queued for deletion, sorted."""
        return await self._children_or_empty(DeleteTopicsZNode.PATH)

    @_deferred
    async def delete_topic_deletions(
        self, topics: Iterable[str], epoch_zk_version: int = -1
    ) -> None:
        """Removes ``/admin/delete_topics/<t>`` markers (absent ones are fine)."""
        for topic in topics:
            await self._delete_checked(DeleteTopicsZNode.path(topic), epoch_zk_version)

    @_deferred
    async def delete_topic_znodes(self, topic: str, epoch_zk_version: int = -1) -> None:
        """Finishes a deletion (TDM ``completeDeleteTopic``): deletes, recursively and epoch-checked,
        ``/brokers/topics/<t>``, then ``/config/topics/<t>``, then ``/admin/delete_topics/<t>``.

        Absent nodes are skipped.

        Raises:
            ControllerMovedError: The epoch check failed.
        """
        await self._delete_recursive(topic_path(topic), epoch_zk_version)
        await self._delete_recursive(ConfigEntityZNode.topic_path(topic), epoch_zk_version)
        await self._delete_recursive(DeleteTopicsZNode.path(topic), epoch_zk_version)

    # ------------------------------------------------------------------ ISR change notifications

    @_deferred
    async def post_isr_change_notification(self, partitions: Iterable[TopicPartitionTuple]) -> str:
        """Creates ``/isr_change_notification/isr_change_N`` listing *partitions*; returns its path."""
        return await self._store.create(
            IsrChangeNotificationZNode.CREATE_PATH,
            IsrChangeNotificationZNode.encode(partitions),
            sequential=True,
            makepath=True,
        )

    @_deferred
    async def get_isr_change_notifications(self) -> list[str]:
        """Sequence numbers of the pending ISR change notifications, sorted."""
        prefix = IsrChangeNotificationZNode.PREFIX
        children = await self._children_or_empty(IsrChangeNotificationZNode.PATH)
        return [sequence_number(c, prefix) for c in children if c.startswith(prefix)]

    @_deferred
    async def get_partitions_from_isr_change_notifications(
        self, sequence_numbers: Iterable[str]
    ) -> list[TopicPartitionTuple]:
        """The partitions the given notifications list, in order (vanished notifications skipped)."""
        out: list[TopicPartitionTuple] = []
        for seq in sequence_numbers:
            got = await self._get_or_none(IsrChangeNotificationZNode.path(seq))
            if got is not None:
                out.extend(IsrChangeNotificationZNode.decode(got[0]))
        return out

    @_deferred
    async def delete_isr_change_notifications(
        self, sequence_numbers: Iterable[str] | None = None, epoch_zk_version: int = -1
    ) -> None:
        """Deletes the given notifications (None: all of them); absent ones are fine."""
        if sequence_numbers is None:
            prefix = IsrChangeNotificationZNode.PREFIX
            children = await self._children_or_empty(IsrChangeNotificationZNode.PATH)
            sequence_numbers = [
                sequence_number(c, prefix) for c in children if c.startswith(prefix)
            ]
        for seq in list(sequence_numbers):
            await self._delete_checked(IsrChangeNotificationZNode.path(seq), epoch_zk_version)

    # ------------------------------------------------------------------ log dir events

    @_deferred
    async def post_log_dir_event(self, broker_id: int) -> str:
        """Creates ``/log_dir_event_notification/log_dir_event_N`` for *broker_id*; returns its path."""
        return await self._store.create(
            LogDirEventNotificationZNode.CREATE_PATH,
            LogDirEventNotificationZNode.encode(broker_id),
            sequential=True,
            makepath=True,
        )

    @_deferred
    async def get_log_dir_event_notifications(self) -> list[str]:
        """Sequence numbers of the pending log dir events, sorted."""
        prefix = LogDirEventNotificationZNode.PREFIX
        children = await self._children_or_empty(LogDirEventNotificationZNode.PATH)
        return [sequence_number(c, prefix) for c in children if c.startswith(prefix)]

    @_deferred
    async def get_broker_ids_from_log_dir_events(
        self, sequence_numbers: Iterable[str]
    ) -> list[int]:
        """The broker ids of the given events, in order (vanished events skipped)."""
        out: list[int] = []
        for seq in sequence_numbers:
            got = await self._get_or_none(LogDirEventNotificationZNode.path(seq))
            if got is not None:
                out.append(LogDirEventNotificationZNode.decode(got[0]))
        return out

    @_deferred
    async def delete_log_dir_event_notifications(
        self, sequence_numbers: Iterable[str] | None = None, epoch_zk_version: int = -1
    ) -> None:
        """Deletes the given events (None: all of them); absent ones are fine."""
        if sequence_numbers is None:
            prefix = LogDirEventNotificationZNode.PREFIX
            children = await self._children_or_empty(LogDirEventNotificationZNode.PATH)
            sequence_numbers = [
                sequence_number(c, prefix) for c in children if c.startswith(prefix)
            ]
        for seq in list(sequence_numbers):
            await self._delete_checked(LogDirEventNotificationZNode.path(seq), epoch_zk_version)

    # ------------------------------------------------------------------ admin requests

    @_deferred
    async def get_preferred_replica_election(self) -> tuple[TopicPartitionTuple, ...]:
        """Partitions in ``/admin/preferred_replica_election`` (empty if absent)."""
        got = await self._get_or_none(PreferredReplicaElectionZNode.PATH)
        return () if got is None else PreferredReplicaElectionZNode.decode(got[0])

    @_deferred
    async def delete_preferred_replica_election(self, epoch_zk_version: int = -1) -> None:
        """Deletes ``/admin/preferred_replica_election`` (absent is fine)."""
        await self._delete_checked(PreferredReplicaElectionZNode.PATH, epoch_zk_version)

    @_deferred
    async def get_partition_reassignment(self) -> dict[TopicPartitionTuple, tuple[int, ...]]:
        """The legacy ``/admin/reassign_partitions`` request (empty if absent)."""
        got = await self._get_or_none(ReassignPartitionsZNode.PATH)
        return {} if got is None else ReassignPartitionsZNode.decode(got[0])

    @_deferred
    async def delete_partition_reassignment(self, epoch_zk_version: int = -1) -> None:
        """Deletes ``/admin/reassign_partitions`` (absent is fine)."""
        await self._delete_checked(ReassignPartitionsZNode.PATH, epoch_zk_version)

    @_deferred
    async def set_partition_reassignment(
        self,
        reassignment: Mapping[TopicPartitionTuple, Sequence[int]],
        epoch_zk_version: int = -1,
    ) -> None:
        """Writes ``/admin/reassign_partitions``, creating it if absent (ZC ``setOrCreatePartitionReassignment``).

        The controller rewrites it (epoch-checked) as partitions finish; an
        admin tool (``epoch_zk_version`` -1) may create it.

        Raises:
            ControllerMovedError: The epoch check failed.
        """
        data = ReassignPartitionsZNode.encode(reassignment)
        try:
            await self._epoch_checked(
                [SetOp(ReassignPartitionsZNode.PATH, data, -1)], epoch_zk_version
            )
        except NoNodeError:
            await self._store.ensure_path("/admin")
            await self._epoch_checked(
                [CreateOp(ReassignPartitionsZNode.PATH, data)], epoch_zk_version
            )

    @_deferred
    async def create_partition_reassignment(
        self, reassignment: Mapping[TopicPartitionTuple, Sequence[int]]
    ) -> None:
        """Creates ``/admin/reassign_partitions`` as the legacy admin tool does (ZC ``createPartitionReassignment``).

        Raises:
            NodeExistsError: A reassignment is already pending there.
        """
        await self._store.ensure_path("/admin")
        await self._store.create(
            ReassignPartitionsZNode.PATH, ReassignPartitionsZNode.encode(reassignment)
        )

    @_deferred
    async def create_preferred_replica_election(self, partitions: Iterable[TopicPartitionTuple]) -> None:
        """Creates ``/admin/preferred_replica_election`` as the legacy admin tool does.

        Raises:
            NodeExistsError: An election is already pending there.
        """
        await self._store.ensure_path("/admin")
        await self._store.create(
            PreferredReplicaElectionZNode.PATH, PreferredReplicaElectionZNode.encode(partitions)
        )

    # ------------------------------------------------------------------ features

    @_deferred
    async def get_feature(self) -> tuple[FeatureZNode, int] | None:
        """``(/feature, zkVersion)``, or None."""
        got = await self._get_or_none(FeatureZNode.PATH)
        return None if got is None else (FeatureZNode.decode(got[0]), got[1].version)

    @_deferred
    async def set_feature(self, feature: FeatureZNode) -> int:
        """Creates or overwrites ``/feature`` (the controller at failover); returns its zkVersion."""
        data = feature.encode()
        try:
            stat = await self._store.set(FeatureZNode.PATH, data, -1)
            return stat.version
        except NoNodeError:
            try:
                await self._store.create(FeatureZNode.PATH, data)
                return 0
            except NodeExistsError:
                stat = await self._store.set(FeatureZNode.PATH, data, -1)
                return stat.version

    # ------------------------------------------------------------------ producer ids

    @_deferred
    async def claim_producer_id_block(
        self, broker_id: int, block_size: int = ProducerIdBlock.DEFAULT_SIZE
    ) -> ProducerIdBlock:
        """Claims the next block of producer ids (2.x ``ProducerIdManager.getNewProducerIdBlock``).

        Reads ``/latest_producer_id_block`` and its zkVersion; the next block is
        ``[end + 1, end + block_size]`` (``[0, block_size − 1]`` while the node
        is empty); it is written with that zkVersion.  On BadVersion the node is
        read back — if it holds our block the claim succeeded — else the loop
        starts over.  Claims through one client are serialized, so blocks from
        all brokers never overlap.

        Raises:
            OverflowError: Producer ids are exhausted.
            ValueError: The node holds garbage.
        """
        if block_size <= 0:
            raise ValueError(f"block_size must be positive, not {block_size}")
        await self._pid_lock.acquire()
        try:
            while True:
                got = await self._get_or_none(ProducerIdBlock.PATH)
                if got is None:
                    await self._store.ensure_path(ProducerIdBlock.PATH)
                    continue
                data, stat = got
                if data:
                    block = ProducerIdBlock.decode(data).next_block(broker_id, block_size)
                else:
                    block = ProducerIdBlock.first(broker_id, block_size)
                try:
                    await self._store.set(ProducerIdBlock.PATH, block.encode(), stat.version)
                    return block
                except BadVersionError:
                    back = await self._get_or_none(ProducerIdBlock.PATH)
                    if back is not None and back[0]:
                        try:
                            if ProducerIdBlock.decode(back[0]) == block:
                                return block
                        except ValueError:
                            pass
        finally:
            self._pid_lock.release()

    # ------------------------------------------------------------------ watches

    def watch_broker_ids(self, callback: WatchCallback) -> WatchHandle:
        """Children of ``/brokers/ids`` (brokers come and go)."""
        return self._store.watch_children(BROKER_IDS_PATH, callback)

    def watch_broker(self, broker_id: int, callback: WatchCallback) -> WatchHandle:
        """Data of ``/brokers/ids/<id>`` (re-registration with new endpoints)."""
        return self._store.watch_data(broker_path(broker_id), callback)

    def watch_controller(self, callback: WatchCallback) -> WatchHandle:
        """``/controller`` created, changed or deleted."""
        return self._store.watch_data(ControllerZNode.PATH, callback)

    def watch_topics(self, callback: WatchCallback) -> WatchHandle:
        """Children of ``/brokers/topics`` (topics created/deleted)."""
        return self._store.watch_children(TOPICS_PATH, callback)

    def watch_topic(self, topic: str, callback: WatchCallback) -> WatchHandle:
        """Data of ``/brokers/topics/<topic>`` (partitions added, reassignment)."""
        return self._store.watch_data(topic_path(topic), callback)

    def watch_partition_state(
        self, topic: str, partition: int, callback: WatchCallback
    ) -> WatchHandle:
        """Data of a partition's state node."""
        return self._store.watch_data(partition_state_path(topic, partition), callback)

    def watch_topic_deletions(self, callback: WatchCallback) -> WatchHandle:
        """Children of ``/admin/delete_topics``."""
        return self._store.watch_children(DeleteTopicsZNode.PATH, callback)

    def watch_isr_change_notifications(self, callback: WatchCallback) -> WatchHandle:
        """Children of ``/isr_change_notification``."""
        return self._store.watch_children(IsrChangeNotificationZNode.PATH, callback)

    def watch_log_dir_event_notifications(self, callback: WatchCallback) -> WatchHandle:
        """Children of ``/log_dir_event_notification``."""
        return self._store.watch_children(LogDirEventNotificationZNode.PATH, callback)

    def watch_config_changes(self, callback: WatchCallback) -> WatchHandle:
        """Children of ``/config/changes``."""
        return self._store.watch_children(ConfigChangeNotificationZNode.PATH, callback)

    def watch_preferred_replica_election(self, callback: WatchCallback) -> WatchHandle:
        """``/admin/preferred_replica_election`` created, changed or deleted."""
        return self._store.watch_data(PreferredReplicaElectionZNode.PATH, callback)

    def watch_partition_reassignment(self, callback: WatchCallback) -> WatchHandle:
        """``/admin/reassign_partitions`` created, changed or deleted."""
        return self._store.watch_data(ReassignPartitionsZNode.PATH, callback)

    def watch_feature(self, callback: WatchCallback) -> WatchHandle:
        """``/feature`` created, changed or deleted."""
        return self._store.watch_data(FeatureZNode.PATH, callback)
