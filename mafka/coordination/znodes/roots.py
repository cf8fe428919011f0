"""The persistent roots every broker makes sure exist at startup (Kafka's ``ZkData.PersistentZkPaths``).

Owns :data:`PERSISTENT_ZK_PATHS` (in Kafka's order) and the legacy
``/consumers`` root (ZooKeeper-based consumers') that heads it.
"""

from __future__ import annotations

from mafka.coordination.znodes.admin import DeleteTopicsZNode
from mafka.coordination.znodes.brokers import BROKER_IDS_PATH, BROKER_SEQUENCE_ID_PATH
from mafka.coordination.znodes.cluster import ProducerIdBlock
from mafka.coordination.znodes.config import CONFIG_PATH, ConfigChangeNotificationZNode, ConfigType
from mafka.coordination.znodes.notifications import (
    IsrChangeNotificationZNode,
    LogDirEventNotificationZNode,
)
from mafka.coordination.znodes.topics import TOPICS_PATH

__all__ = ["CONSUMERS_PATH", "PERSISTENT_ZK_PATHS"]

CONSUMERS_PATH = "/consumers"

#: Persistent paths every broker makes sure exist at startup (``ZkData.PersistentZkPaths``), in Kafka's order.
PERSISTENT_ZK_PATHS: tuple[str, ...] = (
    CONSUMERS_PATH,
    BROKER_IDS_PATH,
    TOPICS_PATH,
    ConfigChangeNotificationZNode.PATH,
    DeleteTopicsZNode.PATH,
    BROKER_SEQUENCE_ID_PATH,
    IsrChangeNotificationZNode.PATH,
    ProducerIdBlock.PATH,
    LogDirEventNotificationZNode.PATH,
) + tuple(f"{CONFIG_PATH}/{t}" for t in ConfigType.ALL)
