"""KIP-392 replica selection: which replica a consumer should fetch a partition from.

Plain Python, no I/O: Kafka 2.8's ``org.apache.kafka.common.replica``
(``ReplicaSelector``, ``RackAwareReplicaSelector``, ``ReplicaView``,
``PartitionView``, ``ClientMetadata``).  The partition leader asks the
broker's selector (``replica.selector.class``) for each consumer Fetch v11+
and, when the answer is not the leader itself, tells the consumer to fetch
from that replica instead (the Fetch response's ``preferred_read_replica``).

Only Kafka's own selector class exists here: :func:`replica_selector_for`
maps ``replica.selector.class`` to an instance (None when unset: Kafka's
default, every consumer reads from the leader) and refuses any other name,
as Kafka fails to instantiate a class it cannot find.

Example:
    >>> leader = ReplicaView(1, "r1", 10, 0)
    >>> near = ReplicaView(2, "r2", 10, 50)
    >>> RackAwareReplicaSelector().select(("t", 0), ClientMetadata("r2"), PartitionView({leader, near}, leader))
    ReplicaView(broker_id=2, rack='r2', log_end_offset=10, time_since_last_caught_up_ms=50)
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "RACK_AWARE_REPLICA_SELECTOR",
    "ClientMetadata",
    "PartitionView",
    "RackAwareReplicaSelector",
    "ReplicaSelector",
    "ReplicaView",
    "UnknownReplicaSelectorError",
    "most_caught_up",
    "replica_selector_for",
]

#: Kafka's only shipped selector, the one ``replica.selector.class`` may name.
RACK_AWARE_REPLICA_SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"

#: The id of Kafka's ``Node.noNode()``: a replica whose broker has no live endpoint on the client's listener.
NO_NODE = -1


@dataclass(frozen=True, slots=True)
class ClientMetadata:
    """Who is fetching (Kafka's ``DefaultClientMetadata``); every Fetch v11+ carries it."""

    rack_id: str
    client_id: str = ""
    client_address: str = ""
    listener_name: str = "PLAINTEXT"


@dataclass(frozen=True, slots=True)
class ReplicaView:
    """One replica as a selector sees it (Kafka's ``DefaultReplicaView``).

    ``broker_id`` is :data:`NO_NODE` (and ``rack`` None) when the broker has
    no live endpoint on the client's listener.  The leader's
    ``time_since_last_caught_up_ms`` is always 0.
    """

    broker_id: int
    rack: str | None
    log_end_offset: int
    time_since_last_caught_up_ms: int


@dataclass(frozen=True, slots=True)
class PartitionView:
    """The replicas a selector may choose from, the leader among them (Kafka's ``DefaultPartitionView``)."""

    replicas: Collection[ReplicaView]
    leader: ReplicaView


def _most_caught_up_key(r: ReplicaView) -> tuple[int, int, int]:
    # ReplicaView.comparator(): log end offset, then the shorter time since caught up, then the broker id.
    return (r.log_end_offset, -r.time_since_last_caught_up_ms, r.broker_id)


def most_caught_up(replicas: Collection[ReplicaView]) -> ReplicaView:
    """The greatest replica by Kafka's ``ReplicaView.comparator()`` (a deterministic tie-break)."""
    return max(replicas, key=_most_caught_up_key)


class ReplicaSelector(Protocol):
    """Kafka's ``ReplicaSelector``: the replica a client should read a partition from."""

    def select(self, topic_partition: tuple[str, int], client: ClientMetadata, partition: PartitionView) -> ReplicaView | None:
        """The preferred replica among ``partition.replicas``, or None for no preference (the leader)."""
        ...


class RackAwareReplicaSelector:
    """Kafka's ``RackAwareReplicaSelector``: a replica in the client's rack, else the leader.

    A client without a rack (an empty ``rack_id``) gets the leader.  Among
    replicas in the client's rack the leader wins if it is one of them;
    otherwise the most caught-up of them (:func:`most_caught_up`).
    """

    def select(self, topic_partition: tuple[str, int], client: ClientMetadata, partition: PartitionView) -> ReplicaView | None:
        if not client.rack_id:
            return partition.leader
        same_rack = [r for r in partition.replicas if r.rack == client.rack_id]
        if not same_rack or partition.leader in same_rack:
            return partition.leader
        return most_caught_up(same_rack)


class UnknownReplicaSelectorError(ValueError):
    """``replica.selector.class`` names a class Mafka does not provide."""


_SELECTORS: dict[str, Callable[[], ReplicaSelector]] = {RACK_AWARE_REPLICA_SELECTOR: RackAwareReplicaSelector}


def replica_selector_for(class_name: str | None) -> ReplicaSelector | None:
    """The selector ``replica.selector.class`` names; None when unset (consumers read from the leader).

    Raises:
        UnknownReplicaSelectorError: any other class name, the empty one
        included (Kafka's ``CoreUtils.createObject`` cannot load it either).
    """
    if class_name is None:
        return None
    factory = _SELECTORS.get(class_name)
    if factory is None:
        raise UnknownReplicaSelectorError(
            f"Class {class_name} cannot be found: the only replica selector is {RACK_AWARE_REPLICA_SELECTOR}"
        )
    return factory()
