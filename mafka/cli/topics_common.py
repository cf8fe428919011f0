"""What both forms of ``mafka topics`` share: Kafka 2.8's errors, output lines, topic selection."""

from __future__ import annotations

import re
from collections.abc import Iterable

from mafka.topics import INTERNAL_TOPICS

__all__ = [
    "TopicCommandError",
    "format_partition_line",
    "format_topic_line",
    "parse_replica_assignment",
    "select_topics",
]


class TopicCommandError(Exception):
    """A failure reported as Kafka reports it (``exception`` names the Java class)."""

    def __init__(self, message: str, exception: str = "java.lang.IllegalArgumentException") -> None:
        super().__init__(message)
        self.message = message
        self.exception = exception


def format_topic_line(name: str, partitions: int, rf: int, configs: dict[str, str], topic_id: str | None = None) -> str:
    """Kafka 2.8's per-topic describe line (``TopicId`` only when the topic has one)."""
    conf = ",".join(f"{k}={v}" for k, v in configs.items())
    shown_id = "" if topic_id is None else f"\tTopicId: {topic_id}"
    return f"Topic: {name}{shown_id}\tPartitionCount: {partitions}\tReplicationFactor: {rf}\tConfigs: {conf}"


def format_partition_line(name: str, partition: int, leader: int, replicas: list[int], isr: list[int]) -> str:
    """Kafka 2.8's per-partition describe line (``Leader: none`` without a leader)."""
    shown = str(leader) if leader >= 0 else "none"
    return (
        f"\tTopic: {name}\tPartition: {partition}\tLeader: {shown}"
        f"\tReplicas: {','.join(map(str, replicas))}\tIsr: {','.join(map(str, isr))}"
    )


def select_topics(names: Iterable[str], pattern: str | None, exclude_internal: bool = False) -> list[str]:
    """The sorted *names* that ``--topic`` selects: Kafka's ``IncludeList``.

    ``--topic`` is a Java regular expression matched against the whole name,
    with ``,`` read as ``|`` and spaces and surrounding quotes dropped, so
    ``--topic a,b`` and ``--topic 'orders.*'`` both work as in Kafka.  No
    pattern selects every topic.
    """
    chosen = sorted(n for n in names if not (exclude_internal and n in INTERNAL_TOPICS))
    if not pattern:
        return chosen
    raw = re.sub(r"[\"']+$", "", re.sub(r"^[\"']+", "", pattern.strip().replace(",", "|").replace(" ", "")))
    try:
        regex = re.compile(raw)
    except re.error:
        return [n for n in chosen if n == pattern]
    return [n for n in chosen if regex.fullmatch(n)]


def parse_replica_assignment(text: str) -> dict[int, list[int]]:
    """``--replica-assignment 1:2,2:3`` → ``{0: [1, 2], 1: [2, 3]}`` (Kafka's ``parseReplicaAssignment``).

    Raises:
        TopicCommandError: Not integers, a duplicate broker in one list, or lists of different lengths.
    """
    out: dict[int, list[int]] = {}
    for partition, entry in enumerate(text.split(",")):
        try:
            replicas = [int(b.strip()) for b in entry.split(":") if b.strip()]
        except ValueError:
            raise TopicCommandError(f"Invalid replica assignment: {text}") from None
        duplicates = sorted({b for b in replicas if replicas.count(b) > 1})
        if duplicates:
            raise TopicCommandError(
                f"Partition replica lists may not contain duplicate entries: {','.join(map(str, duplicates))}",
                "kafka.admin.AdminCommandFailedException")
        if out and len(replicas) != len(out[0]):
            raise TopicCommandError(f"Partition {partition} has different replication factor: {replicas}",
                                    "kafka.admin.AdminOperationException")
        out[partition] = replicas
    return out
