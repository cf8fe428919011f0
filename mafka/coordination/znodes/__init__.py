"""Kafka 2.8's ZooKeeper data model: every znode's path and its exact bytes.

Pure code: no Twisted, no I/O.  Each znode Kafka's ZooKeeper mode uses has a
small class (or a frozen dataclass when the node carries a value) with its
path and an encoder/decoder that produces **byte for byte** what Kafka 2.8.2
writes (``core/src/main/scala/kafka/zk/ZkData.scala``,
``coordinator/transaction/ProducerIdManager.scala``), so a Mafka cluster's
ZooKeeper tree is indistinguishable from a Kafka one and Kafka's own tools can
read it.

Contract:

* Encoders return compact JSON exactly as Kafka's ``Json.encodeAsBytes``
  (Jackson) writes it: no spaces, UTF-8, control characters escaped as Jackson
  does (``\\n``-style short forms, otherwise ``\\u00XX`` in upper-case hex),
  ``/`` and non-ASCII left as they are.
* **Key order is Kafka's iteration order, not insertion order.**  Kafka builds
  its JSON from Scala and Java maps and Jackson writes them in the order they
  iterate, so this module reproduces those maps' orders (Scala 2.13 — the
  Kafka 2.8 default build — and a Java 9+ runtime):

  - a Scala immutable ``Map`` of at most 4 entries keeps insertion order
    (``/controller``, ``/cluster/id``, configs' outer object, producer-id
    blocks, notifications);
  - a Scala immutable ``Map`` of 5 or more entries is a CHAMP hash trie
    (the partition state: ``{"controller_epoch":…,"leader":…,"version":1,
    "leader_epoch":…,"isr":[…]}``);
  - a Scala ``mutable.HashMap`` iterates by bucket (``/brokers/ids/N``,
    ``/brokers/topics/T`` and its per-partition maps, ``/feature``);
  - ``java.util.Properties`` (topic and broker configs) is a
    ``ConcurrentHashMap`` on Java 9+; ``java.util.HashMap`` for feature maps.

  Arrays built from Kafka *sets* (ISR-change and preferred-election partition
  lists) keep the caller's order: Kafka's order there is an accident of hashing
  and no reader depends on it.
* Strings vs numbers as Kafka writes them: ``timestamp`` fields are strings,
  ``/cluster/id``'s ``version`` is the string ``"1"``, producer-id block bounds
  are strings, ``/controller_epoch`` is plain decimal text (not JSON).
* Decoders accept every variant Kafka itself reads (broker registration v1–v5,
  topic assignment v1–v3, controller v1/v2, config-change v1/v2, numbers where
  Kafka writes strings) and raise :class:`ValueError` with the znode named on
  anything else (bad UTF-8, not JSON, wrong types, missing fields).
* Value classes are frozen and hashable; their mappings are read-only views.

Example:
    >>> ControllerZNode(broker_id=2, timestamp=1650000000000).encode()
    b'{"version":1,"brokerid":2,"timestamp":"1650000000000"}'
    >>> LeaderIsrAndControllerEpoch(1, 0, (1, 2, 3), 1).encode()
    b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1,2,3]}'

The package is split by znode family; import from here (this module is the
public surface) or from the family module:

* :mod:`~mafka.coordination.znodes.brokers` — ``/brokers/ids/<id>``,
  ``/brokers/seqid``, ``/controller``, ``/controller_epoch``;
* :mod:`~mafka.coordination.znodes.topics` — ``/brokers/topics/<t>`` and the
  partitions' ``state`` nodes;
* :mod:`~mafka.coordination.znodes.admin` — ``/admin/delete_topics``,
  ``/admin/reassign_partitions``, ``/admin/preferred_replica_election``;
* :mod:`~mafka.coordination.znodes.config` — ``/config/<type>/<name>`` and
  ``/config/changes``;
* :mod:`~mafka.coordination.znodes.notifications` — ``/isr_change_notification``
  and ``/log_dir_event_notification``;
* :mod:`~mafka.coordination.znodes.cluster` — ``/cluster/id``, ``/feature``,
  ``/latest_producer_id_block``;
* :mod:`~mafka.coordination.znodes.mafka_nodes` — Mafka's own ``/mafka/*`` znodes;
* :mod:`~mafka.coordination.znodes.roots` — ``PersistentZkPaths``;
* :mod:`~mafka.coordination.znodes.ids` — cluster and topic ids (base64 UUIDs);
* :mod:`~mafka.coordination.znodes.encoding` / :mod:`~mafka.coordination.znodes.decoding`
  — the JSON writer with Kafka's map key orders, and the strict readers.
"""

from __future__ import annotations

from mafka.coordination.znodes.admin import (
    ADMIN_PATH,
    DeleteTopicsZNode,
    PreferredReplicaElectionZNode,
    ReassignPartitionsZNode,
)
from mafka.coordination.znodes.brokers import (
    BROKER_IDS_PATH,
    BROKER_SEQUENCE_ID_PATH,
    BROKERS_PATH,
    BrokerRegistration,
    ControllerEpochZNode,
    ControllerZNode,
    broker_path,
)
from mafka.coordination.znodes.cluster import (
    CLUSTER_PATH,
    ClusterIdZNode,
    FeatureZNode,
    ProducerIdBlock,
)
from mafka.coordination.znodes.config import (
    CONFIG_PATH,
    ConfigChangeNotificationZNode,
    ConfigEntityZNode,
    ConfigType,
)
from mafka.coordination.znodes.encoding import encode_json
from mafka.coordination.znodes.ids import (
    new_cluster_id,
    new_topic_id,
    uuid_bytes,
    uuid_string,
    validate_base64_uuid,
)
from mafka.coordination.znodes.mafka_nodes import (
    MONITOR_PATH,
    REBALANCER_PATH,
    REBALANCER_STATE_PATH,
    monitor_path,
)
from mafka.coordination.znodes.notifications import (
    IsrChangeNotificationZNode,
    LogDirEventNotificationZNode,
    sequence_number,
)
from mafka.coordination.znodes.roots import CONSUMERS_PATH, PERSISTENT_ZK_PATHS
from mafka.coordination.znodes.topics import (
    TOPICS_PATH,
    LeaderIsrAndControllerEpoch,
    TopicAssignment,
    partition_state_path,
    topic_partition_path,
    topic_partitions_path,
    topic_path,
)

__all__ = [
    # paths
    "ADMIN_PATH",
    "BROKERS_PATH",
    "BROKER_IDS_PATH",
    "BROKER_SEQUENCE_ID_PATH",
    "CLUSTER_PATH",
    "CONFIG_PATH",
    "CONSUMERS_PATH",
    "PERSISTENT_ZK_PATHS",
    "TOPICS_PATH",
    "ConfigType",
    "MONITOR_PATH",
    "REBALANCER_PATH",
    "REBALANCER_STATE_PATH",
    "monitor_path",
    "broker_path",
    "partition_state_path",
    "topic_partition_path",
    "topic_partitions_path",
    "topic_path",
    # znodes
    "BrokerRegistration",
    "ClusterIdZNode",
    "ConfigChangeNotificationZNode",
    "ConfigEntityZNode",
    "ControllerEpochZNode",
    "ControllerZNode",
    "DeleteTopicsZNode",
    "FeatureZNode",
    "IsrChangeNotificationZNode",
    "LeaderIsrAndControllerEpoch",
    "LogDirEventNotificationZNode",
    "PreferredReplicaElectionZNode",
    "ProducerIdBlock",
    "ReassignPartitionsZNode",
    "TopicAssignment",
    # helpers
    "encode_json",
    "new_cluster_id",
    "new_topic_id",
    "uuid_bytes",
    "uuid_string",
    "sequence_number",
    "validate_base64_uuid",
]
