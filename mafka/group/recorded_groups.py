"""Groups whose every change is a ``__consumer_offsets`` record: Kafka 4's ``consumer`` and ``share`` groups.

:class:`RecordedGroups` is what a coordinator keeps for one such group type: the groups of the
``__consumer_offsets`` partitions it leads, their timers, their writes and their loads.  The
group objects (:class:`~mafka.group.consumer.group.ConsumerGroup`,
:class:`~mafka.group.share.group.ShareGroup`) compute every change as records and apply them
at once through ``replay``; a :class:`GroupKind` tells this module how to make, rebuild and
encode one type.  Plain Python: time from ``clock()`` (ms), delays from a
:class:`~mafka.timers.Timers`, writes through an
:class:`~mafka.group.coordinator_types.OffsetsLog`.

Contract:

* **Write before answer.**  :meth:`RecordedGroups.commit` appends the records a change applied;
  its ``done(error)`` runs once the append completed (acks=all: replicated).  If the append
  fails the group is rebuilt from the records known to be written, so memory never runs ahead
  of the log for long, and a group that only the failed write created is forgotten.
  :func:`append_error` maps the failure as Kafka 4's coordinator runtime does.
* **Timers.**  One timer per group at the group's ``next_deadline_ms()``; when it fires,
  ``expire`` runs and the records it applied are written.
* **Load.**  :meth:`RecordedGroups.load` replays a partition's records of this type (log
  order) into groups; deleted (Dead) groups are not kept.  Timers start at load time.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Generic, Protocol, TypeVar

from mafka.errors import ErrorCode
from mafka.group.consumer.member import TopicInfo
from mafka.group.coordinator_types import OffsetsLog
from mafka.timers import TimerHandle, Timers

__all__ = ["GroupKind", "RecordedGroupEntry", "RecordedGroups", "append_error", "no_overrides", "with_timeout_overrides"]

log = logging.getLogger("mafka.group.coordinator")

_COORDINATOR_NOT_AVAILABLE = frozenset({
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    ErrorCode.REQUEST_TIMED_OUT,
})
_NOT_COORDINATOR = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR})


def append_error(error: int) -> ErrorCode:
    """Kafka 4's ``CoordinatorRuntime`` mapping of a failed ``__consumer_offsets`` write."""
    if error in _COORDINATOR_NOT_AVAILABLE:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if error in _NOT_COORDINATOR:
        return ErrorCode.NOT_COORDINATOR
    return ErrorCode.UNKNOWN_SERVER_ERROR


G = TypeVar("G")
C = TypeVar("C")


def no_overrides(_group_id: str) -> Mapping[str, str]:
    """No group has config overrides (no group configs wired)."""
    return {}


def with_timeout_overrides(config: C, overrides: Mapping[str, str], prefix: str) -> C:
    """*config* (a frozen dataclass with ``session_timeout_ms`` and ``heartbeat_interval_ms``) with a
    group's overrides applied: Kafka 4's ``GroupConfig`` ``<prefix>.session.timeout.ms`` and
    ``<prefix>.heartbeat.interval.ms`` (*prefix* ``consumer`` or ``share``), read as Kafka's
    ``GroupCoordinatorShard.group<Type>SessionTimeoutMs(groupId)`` reads them.  The overrides were
    validated when written; one that does not parse as a positive int is ignored."""
    changes: dict[str, int] = {}
    for name, field_name in ((f"{prefix}.session.timeout.ms", "session_timeout_ms"),
                             (f"{prefix}.heartbeat.interval.ms", "heartbeat_interval_ms")):
        raw = overrides.get(name)
        if raw is None:
            continue
        try:
            value = int(str(raw).strip())
        except ValueError:
            continue
        if value >= 1:
            changes[field_name] = value
    return replace(config, **changes) if changes else config  # type: ignore[type-var]


class GroupKind(Protocol[G]):
    """How :class:`RecordedGroups` makes, rebuilds and encodes one group type."""

    #: for logs: "consumer", "share"
    name: str

    def new(self, group_id: str) -> G: ...

    def from_records(self, group_id: str, records: Iterable[Any], now_ms: int) -> G: ...

    def decode(self, key: bytes, value: bytes | None) -> Any:
        """A record from its bytes (``ValueError`` if malformed)."""
        ...

    def encode(self, record: Any) -> tuple[bytes, bytes | None]: ...

    def is_dead(self, group: G) -> bool: ...

    def expire(self, group: G, now_ms: int, topics: Mapping[str, TopicInfo]) -> tuple[Any, ...]:
        """Run the group's timers; the records they applied."""
        ...

    def next_deadline_ms(self, group: G) -> int | None: ...


@dataclass(eq=False)
class RecordedGroupEntry(Generic[G]):
    """A group and what the registry keeps beside it."""

    group: G
    group_id: str
    partition: int
    #: key bytes → the last record written for it (tombstones drop the key): what a rebuild replays
    written: dict[bytes, Any] = field(default_factory=dict)
    #: bumped by every rebuild: an append that completes after one replays the written records again
    rebuilds: int = 0
    timer: TimerHandle | None = None
    timer_at: int | None = None


class RecordedGroups(Generic[G]):
    """The groups of one type held by a coordinator (see the module docstring).

    Args:
        kind: the group type's operations.
        clock: milliseconds now.
        timers: where the groups' timers run.
        offsets_log: where records are appended.
        topics: the cluster's topics by name, as groups see them (the caller caches it).
        partition_for: the ``__consumer_offsets`` partition of a group id.
    """

    def __init__(
        self,
        kind: GroupKind[G],
        clock: Callable[[], int],
        timers: Timers,
        offsets_log: OffsetsLog,
        topics: Callable[[], Mapping[str, TopicInfo]],
        partition_for: Callable[[str], int],
    ) -> None:
        self.kind = kind
        self._clock = clock
        self._timers = timers
        self._log = offsets_log
        self.topics = topics
        self.partition_for = partition_for
        self._groups: dict[str, RecordedGroupEntry[G]] = {}
        #: called with (group id, entry) whenever a group is dropped from memory (unload, delete, rebuild to nothing)
        self.on_dropped: Callable[[str, RecordedGroupEntry[G]], None] | None = None

    def now(self) -> int:
        return self._clock()

    # ------------------------------------------------------------------ registry

    def get(self, group_id: str) -> RecordedGroupEntry[G] | None:
        return self._groups.get(group_id)

    def is_current(self, entry: object) -> bool:
        """*entry* is still the registered entry of its group."""
        return isinstance(entry, RecordedGroupEntry) and self._groups.get(entry.group_id) is entry

    def entries(self) -> list[tuple[str, RecordedGroupEntry[G]]]:
        """Every group held here, by group id."""
        return sorted(self._groups.items())

    def new_entry(self, group_id: str) -> RecordedGroupEntry[G]:
        """An entry for a group not held yet (not registered until :meth:`register`)."""
        return RecordedGroupEntry(self.kind.new(group_id), group_id, self.partition_for(group_id))

    def register(self, entry: RecordedGroupEntry[G]) -> None:
        self._groups[entry.group_id] = entry

    # ------------------------------------------------------------------ load / unload

    def load(self, partition: int, records: Iterable[tuple[bytes, bytes | None]]) -> list[str]:
        """Rebuild the groups of ``partition`` from their records (log order).

        Malformed records are logged and skipped (a newer coordinator's record this one cannot
        read must not stop the partition from loading).  Returns the live group ids.
        """
        by_group: dict[str, list[Any]] = {}
        written: dict[str, dict[bytes, Any]] = {}
        for key, value in records:
            try:
                record = self.kind.decode(key, value)
            except ValueError as e:
                log.warning("Skipping an unreadable %s group record in __consumer_offsets-%d: %s",
                            self.kind.name, partition, e)
                continue
            gid = record.key.group_id
            by_group.setdefault(gid, []).append(record)
            view = written.setdefault(gid, {})
            view.pop(key, None)
            if record.value is not None:
                view[key] = record
        now = self._clock()
        loaded = []
        for gid, recs in by_group.items():
            try:
                group = self.kind.from_records(gid, recs, now)
            except Exception:  # noqa: BLE001 - one bad group must not stop the others loading
                log.exception("Could not rebuild %s group %s from __consumer_offsets-%d", self.kind.name, gid, partition)
                continue
            if self.kind.is_dead(group):
                continue
            self.unload_group(gid)
            entry = RecordedGroupEntry(group, gid, partition, written[gid])
            self._groups[gid] = entry
            self.arm(entry)
            loaded.append(gid)
        return loaded

    def unload(self, partition: int) -> None:
        """Forget the groups of ``partition`` (leadership moved away)."""
        for gid, entry in list(self._groups.items()):
            if entry.partition == partition:
                self.unload_group(gid)

    def unload_group(self, group_id: str) -> None:
        entry = self._groups.pop(group_id, None)
        if entry is None:
            return
        if entry.timer is not None:
            entry.timer.cancel()
            entry.timer = None
        if self.on_dropped is not None:
            self.on_dropped(group_id, entry)

    def shutdown(self) -> None:
        for gid in list(self._groups):
            self.unload_group(gid)

    # ------------------------------------------------------------------ timers

    def arm(self, entry: RecordedGroupEntry[G]) -> None:
        """Make sure a timer fires at the group's next deadline (an early one just re-arms)."""
        deadline = self.kind.next_deadline_ms(entry.group)
        if deadline is None:
            return
        if entry.timer is not None and entry.timer_at is not None and entry.timer_at <= deadline:
            return
        if entry.timer is not None:
            entry.timer.cancel()
        entry.timer_at = deadline
        entry.timer = self._timers.call_later(max(0, deadline - self._clock()), lambda: self._on_timer(entry))

    def _on_timer(self, entry: RecordedGroupEntry[G]) -> None:
        entry.timer = None
        entry.timer_at = None
        if not self.is_current(entry):
            return
        records = self.kind.expire(entry.group, self._clock(), self.topics())
        self.commit(entry, records, lambda _e: None)

    # ------------------------------------------------------------------ writes

    def commit(
        self,
        entry: RecordedGroupEntry[G],
        records: Iterable[Any],
        done: Callable[[int], None],
        *,
        extra: Iterable[tuple[bytes, bytes | None]] = (),
        created: bool = False,
        on_create_failed: Callable[[], None] | None = None,
    ) -> None:
        """Re-arm the group's timer and append *extra* (already-encoded records of no group held
        here) and *records* (applied to ``entry.group`` already); ``done(error)`` when the append
        completed, with the raw append error (:func:`append_error` maps it).  *created*: the write
        creates the group, which is forgotten again (and *on_create_failed* runs) if it fails."""
        self.arm(entry)
        records = tuple(records)
        encoded = list(extra) + [self.kind.encode(r) for r in records]
        if not encoded:
            done(ErrorCode.NONE)
            return
        rebuilds = entry.rebuilds

        def appended(error: int, _offset: int | None) -> None:
            if not self.is_current(entry):
                done(ErrorCode.NOT_COORDINATOR if error == ErrorCode.NONE else error)
                return
            if error == ErrorCode.NONE:
                for record in records:
                    key, _ = self.kind.encode(record)
                    entry.written.pop(key, None)
                    if record.value is not None:
                        entry.written[key] = record
                if entry.rebuilds != rebuilds:
                    self._rebuild(entry)  # a rebuild since this was applied dropped these records
                done(ErrorCode.NONE)
                return
            log.warning("Write of %s group %s's records to __consumer_offsets-%d failed: %s",
                        self.kind.name, entry.group_id, entry.partition, ErrorCode(error).name)
            if created and not entry.written:
                self.unload_group(entry.group_id)
                if on_create_failed is not None:
                    on_create_failed()
            else:
                self._rebuild(entry)
            done(error)

        self._log.append(entry.partition, encoded, appended)

    def _rebuild(self, entry: RecordedGroupEntry[G]) -> None:
        """Replace the group in memory with what its written records say."""
        entry.rebuilds += 1
        group = self.kind.from_records(entry.group_id, entry.written.values(), self._clock())
        if self.kind.is_dead(group) or not entry.written:
            self.unload_group(entry.group_id)
            return
        entry.group = group
        if entry.timer is not None:
            entry.timer.cancel()
            entry.timer = None
        self.arm(entry)
