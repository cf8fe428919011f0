"""Which share-partitions of a share group have durable state: Kafka 4's
``ShareGroupStatePartitionMetadataInfo`` and the ``GroupMetadataManager`` code around it.

A share group assigns a share-partition only once its state exists in ``__share_group_state``
(Kafka's share coordinator has *initialized* it, with the group epoch as state epoch and the
start offset still to be decided by ``share.auto.offset.reset``).  The group coordinator keeps,
in the group's ``ShareGroupStatePartitionMetadata`` record, three sets:

* ``initializing``: topic id → (name, partitions) it has asked the share coordinator to
  initialize; each topic with the time it was (re-)asked, soft state not in the record (Kafka
  stamps every initializing topic with the time the record is replayed; so does this).
* ``initialized``: topic id → (name, partitions) whose state exists; only these are assignable.
* ``deleting``: topic id → name whose state is being deleted (DeleteShareGroupOffsets, or the
  group being deleted).

Contract: :class:`StatePartitionMetadata` is an immutable value; each function returns the
new value the record to write must carry (Kafka's helper of the same role named in each
docstring), and never changes its argument.  Topic ids are 16-byte values, partitions ints.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from mafka.group.consumer.member import TopicInfo

__all__ = [
    "InitMap",
    "StatePartitionMetadata",
    "combine_init_maps",
    "to_initialize",
]

#: topic id → (topic name, partitions)
InitMap = Mapping[bytes, tuple[str, frozenset[int]]]

#: Kafka's name for a topic it cannot find in its metadata image
UNKNOWN_TOPIC_NAME = "<UNKNOWN>"


def _freeze(topics: Mapping[bytes, tuple[str, Iterable[int]]]) -> dict[bytes, tuple[str, frozenset[int]]]:
    """Normalised: partitions frozen, topics with no partition dropped."""
    out: dict[bytes, tuple[str, frozenset[int]]] = {}
    for topic_id, (name, parts) in topics.items():
        frozen = frozenset(parts)
        if frozen:
            out[bytes(topic_id)] = (name, frozen)
    return out


def combine_init_maps(base: InitMap, extra: InitMap) -> dict[bytes, tuple[str, frozenset[int]]]:
    """Kafka's ``combineInitMaps``: the union of both, partitions merged, *extra*'s name winning."""
    out = dict(base)
    for topic_id, (name, parts) in extra.items():
        previous = out.get(topic_id)
        out[topic_id] = (name, parts | (previous[1] if previous else frozenset()))
    return out


@dataclass(frozen=True)
class StatePartitionMetadata:
    """A share group's ``ShareGroupStatePartitionMetadata``: initializing, initialized, deleting."""

    initializing: InitMap = field(default_factory=dict)
    initialized: InitMap = field(default_factory=dict)
    deleting: Mapping[bytes, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "initializing", _freeze(self.initializing))
        object.__setattr__(self, "initialized", _freeze(self.initialized))
        object.__setattr__(self, "deleting", dict(self.deleting))

    def initialized_partitions(self) -> dict[bytes, frozenset[int]]:
        """Topic id → initialized partitions (what may be assigned: Kafka's ``stripInitValue``)."""
        return {t: parts for t, (_, parts) in self.initialized.items()}

    # ------------------------------------------------------------------ initialization

    def with_initializing(self, topics: InitMap) -> StatePartitionMetadata:
        """Kafka's ``addInitializingTopicsRecords``: *topics* join the initializing ones (and
        leave the deleting ones, where a deletion did not finish)."""
        return StatePartitionMetadata(
            combine_init_maps(self.initializing, topics),
            self.initialized,
            {t: n for t, n in self.deleting.items() if t not in topics},
        )

    def with_initialized(self, partitions: Mapping[bytes, Iterable[int]], names: Mapping[bytes, str]) -> StatePartitionMetadata:
        """Kafka's ``initializeShareGroupState``: the share coordinator initialized *partitions*;
        they become initialized and stop initializing.  *names*: topic id → name of the
        topics that exist (others are named ``<UNKNOWN>`` as Kafka names them)."""
        done = {t: (names.get(t, UNKNOWN_TOPIC_NAME), frozenset(p)) for t, p in partitions.items()}
        initializing = {}
        for t, (name, parts) in self.initializing.items():
            left = parts - done.get(t, ("", frozenset()))[1]
            if left:
                initializing[t] = (name, left)
        return StatePartitionMetadata(initializing, combine_init_maps(self.initialized, _freeze(done)), self.deleting)

    def without_initializing(self, partitions: Mapping[bytes, Iterable[int]]) -> StatePartitionMetadata:
        """Kafka's ``uninitializeShareGroupState``: initializing *partitions* failed; forget them
        (the next heartbeat asks again)."""
        initializing = {}
        for t, (name, parts) in self.initializing.items():
            left = parts - frozenset(partitions.get(t, ()))
            if left:
                initializing[t] = (name, left)
        return StatePartitionMetadata(initializing, self.initialized, self.deleting)

    # ------------------------------------------------------------------ deletion

    def without_topics(self, deleted_topic_ids: Iterable[bytes]) -> StatePartitionMetadata:
        """Kafka's ``maybeCleanupShareGroupState``: topics were deleted; they leave all three sets
        (the share coordinator deletes their state itself)."""
        gone = set(deleted_topic_ids)
        return StatePartitionMetadata(
            {t: v for t, v in self.initializing.items() if t not in gone},
            {t: v for t, v in self.initialized.items() if t not in gone},
            {t: n for t, n in self.deleting.items() if t not in gone},
        )

    def deleting_for_offsets(self, topic_ids: Iterable[bytes]) -> StatePartitionMetadata:
        """Kafka's ``sharePartitionsEligibleForOffsetDeletion``: the initialized topics among
        *topic_ids* move to deleting (DeleteShareGroupOffsets)."""
        chosen = {t for t in topic_ids if t in self.initialized}
        return StatePartitionMetadata(
            self.initializing,
            {t: v for t, v in self.initialized.items() if t not in chosen},
            {**self.deleting, **{t: self.initialized[t][0] for t in chosen}},
        )

    def delete_candidates(self, retry: InitMap) -> dict[bytes, tuple[str, frozenset[int]]]:
        """Kafka's ``shareGroupBuildPartitionDeleteRequest`` candidates (the group is being
        deleted): everything initialized or initializing, plus *retry* (the deleting topics
        that still exist, with all their partitions: an earlier deletion did not finish)."""
        return combine_init_maps(combine_init_maps(self.initialized, self.initializing), retry)

    def without_deleting(self, topic_ids: Iterable[bytes]) -> StatePartitionMetadata:
        """Kafka's ``completeDeleteShareGroupOffsets``: the state of *topic_ids* is deleted."""
        done = set(topic_ids)
        return StatePartitionMetadata(
            self.initializing, self.initialized, {t: n for t, n in self.deleting.items() if t not in done}
        )


def to_initialize(
    metadata: StatePartitionMetadata | None,
    initializing_since: Mapping[bytes, int],
    subscribed_topic_names: Iterable[str],
    topics: Mapping[str, TopicInfo],
    now_ms: int,
    retry_interval_ms: int,
) -> dict[bytes, tuple[str, frozenset[int]]]:
    """Kafka's ``subscribedTopicsChangeMap``: the subscribed partitions whose state is neither
    initialized nor being initialized since less than ``group.share.initialize.retry.interval.ms``.

    Args:
        metadata: the group's current state metadata (None: no record yet).
        initializing_since: topic id → when its initialization was last asked for.
        subscribed_topic_names: the group's subscribed topics.
        topics: the cluster's topics by name (a subscribed topic not there is skipped).
    """
    if metadata is None:
        already: dict[bytes, tuple[str, frozenset[int]]] = {}
    else:
        fresh = {
            t: v
            for t, v in metadata.initializing.items()
            if now_ms - initializing_since.get(t, now_ms) < retry_interval_ms
        }
        already = combine_init_maps(dict(metadata.initialized), fresh)
    out: dict[bytes, tuple[str, frozenset[int]]] = {}
    for name in set(subscribed_topic_names):
        info = topics.get(name)
        if info is None:
            continue
        have = already.get(info.topic_id, ("", frozenset()))[1]
        missing = frozenset(range(info.partitions)) - have
        if missing:
            out[info.topic_id] = (info.name, missing)
    return out
