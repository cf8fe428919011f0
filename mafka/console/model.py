"""What the console's pages show: plain records, filled by :mod:`mafka.console.cluster`.

Nothing here talks to a cluster or knows HTML; the templates render these fields
(autoescaped: every string here may hold attacker-chosen bytes — topic names, group ids,
client ids, hosts).  ``None`` means "not known" and is shown as ``—``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = [
    "LogDir",
    "Broker",
    "TopicRow",
    "ConfigRow",
    "PartitionRow",
    "TopicDetail",
    "GroupRow",
    "MemberRow",
    "GroupPartitionRow",
    "GroupDetail",
    "TransactionRow",
    "ReassignmentRow",
    "BrokerDisk",
    "Notice",
]


@dataclass
class Notice:
    """A problem worth a line on the page (a broker down, an endpoint unreachable): Kafka's
    error name and what it concerns."""

    name: str
    detail: str


@dataclass
class LogDir:
    path: str
    error: str | None = None
    used_bytes: int = 0
    total_bytes: int | None = None
    usable_bytes: int | None = None
    #: a cold-tier dir (reported by the broker's metrics, not by DescribeLogDirs)
    cold: bool = False


@dataclass
class Broker:
    id: int
    host: str
    port: int
    rack: str | None
    controller: bool
    up: bool
    #: why it is shown down: Kafka's error name of the failed probe, or "not registered"
    down_reason: str | None = None
    #: False for a broker seen earlier that Metadata no longer lists
    registered: bool = True
    dirs: list[LogDir] = field(default_factory=list)
    slow: bool | None = None


@dataclass
class TopicRow:
    name: str
    partitions: int
    replication_factor: int
    under_replicated: int
    internal: bool
    size_bytes: int | None = None
    messages_per_s: float | None = None
    error: str | None = None


@dataclass
class ConfigRow:
    name: str
    value: str | None
    source: str
    is_default: bool
    is_sensitive: bool
    is_read_only: bool


@dataclass
class PartitionRow:
    partition: int
    leader: int
    replicas: list[int]
    isr: list[int]
    log_start: int | None = None
    log_end: int | None = None
    #: delayed records pending (MafkaDescribeDelayed); None against a broker without it
    delayed_pending: int | None = None
    error: str | None = None

    @property
    def under_replicated(self) -> bool:
        return len(self.isr) < len(self.replicas)


@dataclass
class TopicDetail:
    name: str
    partitions: list[PartitionRow]
    configs: list[ConfigRow]
    configs_error: str | None = None
    offsets_error: str | None = None
    delayed_note: str | None = None


@dataclass
class GroupRow:
    group_id: str
    state: str
    #: ListGroups' group type (``CLASSIC``, ``CONSUMER``, ``SHARE``…), ``UNKNOWN`` when not reported
    type: str
    members: int | None = None
    coordinator: str | None = None
    protocol_type: str | None = None
    error: str | None = None


@dataclass
class MemberRow:
    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    assignment: list[tuple[str, int]]


@dataclass
class GroupPartitionRow:
    topic: str
    partition: int
    committed: int | None
    log_end: int | None
    member: str | None
    error: str | None = None

    @property
    def lag(self) -> int | None:
        if self.committed is None or self.log_end is None:
            return None
        return max(0, self.log_end - self.committed)


@dataclass
class GroupDetail:
    group_id: str
    state: str
    protocol_type: str
    protocol: str
    coordinator: str | None
    members: list[MemberRow]
    partitions: list[GroupPartitionRow]
    offsets_error: str | None = None

    @property
    def total_lag(self) -> int:
        return sum(p.lag or 0 for p in self.partitions)


@dataclass
class TransactionRow:
    transactional_id: str
    coordinator: int
    producer_id: int
    state: str
    producer_epoch: int | None = None
    timeout_ms: int | None = None
    start_ms: int | None = None
    duration_ms: int | None = None
    partitions: list[tuple[str, int]] = field(default_factory=list)
    hanging: bool = False
    error: str | None = None


@dataclass
class ReassignmentRow:
    topic: str
    partition: int
    replicas: list[int]
    adding: list[int]
    removing: list[int]


@dataclass
class BrokerDisk:
    """One broker's disks as the rebalancer sees them: used fraction per log dir, and throttles."""

    broker: int
    up: bool
    dirs: list[LogDir]
    leader_throttle: str | None = None
    follower_throttle: str | None = None

    @property
    def usage(self) -> float | None:
        total = sum(d.total_bytes or 0 for d in self.dirs if not d.cold)
        usable = sum(d.usable_bytes or 0 for d in self.dirs if not d.cold)
        if total <= 0:
            return None
        return (total - usable) / total
