"""``list_topics()`` results shaped like confluent-kafka's ``ClusterMetadata``.

Shared by the producer, the consumer and the admin client: brokers by id,
topics by name (each with partitions by id), ``controller_id``,
``cluster_id``, ``orig_broker_id`` / ``orig_broker_name``.  Beyond
confluent-kafka's fields, a topic carries ``topic_id`` (Kafka's base64 form,
None when the broker has none) and a partition its ``leader_epoch``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mafka.client.kafka_error import KafkaError, KafkaException
from mafka.client.metadata import BrokerInfo
from mafka.coordination.znodes import uuid_string

if TYPE_CHECKING:
    from mafka.client.kernel import Kernel
    from mafka.client.loop_thread import LoopThread

__all__ = ["ClusterMetadataView", "TopicMetadataView", "PartitionMetadataView", "list_topics"]


@dataclass
class PartitionMetadataView:
    id: int
    leader: int
    replicas: list[int]
    isrs: list[int]
    error: KafkaError | None = None
    leader_epoch: int = -1


@dataclass
class TopicMetadataView:
    topic: str
    partitions: dict[int, PartitionMetadataView] = field(default_factory=dict)
    error: KafkaError | None = None
    topic_id: str | None = None


@dataclass
class ClusterMetadataView:
    cluster_id: str | None = None
    controller_id: int = -1
    brokers: dict[int, BrokerInfo] = field(default_factory=dict)
    topics: dict[str, TopicMetadataView] = field(default_factory=dict)
    orig_broker_id: int = -1
    orig_broker_name: str | None = None


def _err(code: int) -> KafkaError | None:
    return None if code == 0 else KafkaError(code)


async def _fetch(kernel: Kernel, topic: str | None) -> ClusterMetadataView:
    md = kernel.metadata
    if topic is None:
        await kernel.refresh_metadata(all_topics=True)
        names = list(md.topics)
    else:
        md.want([topic])
        await kernel.refresh_metadata()
        names = [topic]
    view = ClusterMetadataView(md.cluster_id, md.controller_id, dict(md.brokers))
    for name in names:
        info = md.topics.get(name)
        if info is None:
            view.topics[name] = TopicMetadataView(name, error=KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PARTITION))
            continue
        tv = TopicMetadataView(name, error=_err(info.error), topic_id=uuid_string(info.topic_id))
        for p in info.partitions.values():
            tv.partitions[p.id] = PartitionMetadataView(p.id, p.leader, list(p.replicas), list(p.isrs), _err(p.error),
                                                        p.leader_epoch)
        view.topics[name] = tv
    return view


def list_topics(thread: LoopThread, kernel: Kernel, topic: str | None, timeout: float) -> ClusterMetadataView:
    """Runs a metadata request on ``thread``'s loop; KafkaException(_TIMED_OUT / _TRANSPORT) on failure."""
    wait = None if timeout is None or timeout < 0 else timeout
    try:
        return thread.run(_fetch(kernel, topic), timeout=wait if wait is not None else 60.0)
    except TimeoutError:
        raise KafkaException(KafkaError._TIMED_OUT) from None
    except ConnectionError as exc:
        raise KafkaException(KafkaError(KafkaError._TRANSPORT, str(exc))) from None
