"""The planner's :class:`~mafka.spark.offset_ranges.OffsetSource` on a live cluster, through ``mafka.client``.

Used on the driver, once per read (a streaming read: once per trigger):
partition counts from Metadata, log start offsets, high watermarks (last
stable offsets with ``isolation.level=read_committed``) and offsets for
timestamps from ListOffsets (one request per leader for all partitions at once).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from mafka.client.admin import AdminClient
from mafka.client.admin_types import IsolationLevel, OffsetSpec
from mafka.client.kafka_error import KafkaException
from mafka.client.message import TopicPartition
from mafka.spark.offset_ranges import ReadOptionsError
from mafka.topics import TopicPartitionTuple

__all__ = ["ClusterOffsets"]


class ClusterOffsets:
    """Answers the planner's questions with one AdminClient (close it, or use ``with``).

    Args:
        bootstrap_servers: ``host:port,...``.
        client_config: further client settings (``client.id``, timeouts).
        timeout: seconds for each question.
    """

    def __init__(self, bootstrap_servers: str, client_config: Mapping[str, Any] | None = None,
                 timeout: float = 30.0) -> None:
        self.timeout = timeout
        # kafka.isolation.level=read_committed: the latest offset is the last stable offset, as the
        # Java client's (and so Spark's Kafka source's) end offsets are.
        level = str((client_config or {}).get("isolation.level", "read_uncommitted")).lower()
        self.isolation_level = IsolationLevel.READ_COMMITTED if level == "read_committed" else None
        self._admin = AdminClient({**(client_config or {}), "bootstrap.servers": bootstrap_servers})

    def __enter__(self) -> ClusterOffsets:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._admin.close()

    def partition_counts(self) -> dict[str, int]:
        try:
            metadata = self._admin.list_topics(timeout=self.timeout)
        except KafkaException as exc:
            raise ReadOptionsError(f"cannot reach the cluster to plan the read: {exc}") from None
        return {name: len(t.partitions) for name, t in metadata.topics.items() if t.error is None}

    def earliest(self, tps: Iterable[TopicPartitionTuple]) -> dict[TopicPartitionTuple, int]:
        return self._list({tp: OffsetSpec.earliest() for tp in tps}, "log start offset")

    def latest(self, tps: Iterable[TopicPartitionTuple]) -> dict[TopicPartitionTuple, int]:
        return self._list({tp: OffsetSpec.latest() for tp in tps}, "high watermark")

    def offsets_for_times(self, timestamps: Mapping[TopicPartitionTuple, int]) -> dict[TopicPartitionTuple, int | None]:
        found = self._list({tp: OffsetSpec.for_timestamp(ts) for tp, ts in timestamps.items()}, "offset for a timestamp")
        return {tp: (offset if offset >= 0 else None) for tp, offset in found.items()}

    def _list(self, specs: dict[TopicPartitionTuple, OffsetSpec], what: str) -> dict[TopicPartitionTuple, int]:
        if not specs:
            return {}
        futures = self._admin.list_offsets({TopicPartition(t, p): spec for (t, p), spec in specs.items()},
                                           isolation_level=self.isolation_level, request_timeout=self.timeout)
        out = {}
        for tp, future in futures.items():
            try:
                out[(tp.topic, tp.partition)] = future.result(self.timeout).offset
            except KafkaException as exc:
                raise ReadOptionsError(f"{tp.topic}-{tp.partition}: cannot get the {what}: {exc}") from None
        return out
