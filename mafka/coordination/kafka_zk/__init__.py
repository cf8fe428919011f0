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

The package is split by znode family; :class:`KafkaZkClient`
(:mod:`~mafka.coordination.kafka_zk.client`) composes one helper per family
and is the class to use:

* :mod:`~mafka.coordination.kafka_zk.core` — the store session, controller-epoch fencing;
* :mod:`~mafka.coordination.kafka_zk.cluster` — persistent roots, ``/cluster/id``,
  ``/feature``, producer-id blocks;
* :mod:`~mafka.coordination.kafka_zk.brokers` — broker registration;
* :mod:`~mafka.coordination.kafka_zk.controller` — controller election;
* :mod:`~mafka.coordination.kafka_zk.topics` — topics and their assignments;
* :mod:`~mafka.coordination.kafka_zk.partition_states` — leader/ISR state, conditional writes;
* :mod:`~mafka.coordination.kafka_zk.configs` — entity configs and change notifications;
* :mod:`~mafka.coordination.kafka_zk.admin` — topic deletion, reassignment and
  preferred-election requests;
* :mod:`~mafka.coordination.kafka_zk.notifications` — ISR change and log dir events;
* :mod:`~mafka.coordination.kafka_zk.mafka_nodes` — Mafka's own ``/mafka/*`` znodes.
"""

from __future__ import annotations

from mafka.coordination.kafka_zk.brokers import BrokerIdAlreadyRegisteredError
from mafka.coordination.kafka_zk.client import KafkaZkClient
from mafka.coordination.kafka_zk.controller import ControllerElection
from mafka.coordination.kafka_zk.core import ControllerMovedError
from mafka.coordination.kafka_zk.partition_states import PartitionStateResults
from mafka.topics import validate_topic_name

__all__ = [
    "BrokerIdAlreadyRegisteredError",
    "ControllerElection",
    "ControllerMovedError",
    "KafkaZkClient",
    "PartitionStateResults",
    "validate_topic_name",
]
