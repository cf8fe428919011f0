"""Replica assignment for new topics and for added partitions, exactly as Kafka 2.8 does it.

Pure functions: no ZooKeeper, no Twisted; the only randomness (Kafka's start
index and first follower shift) comes from an injected :class:`random.Random`.

Sources (apache/kafka 2.8.2): ``core/src/main/scala/kafka/admin/AdminUtils.scala``
(``assignReplicasToBrokers`` and its rack-unaware and rack-aware variants,
``getRackAlternatedBrokerList``, ``replicaIndex``),
``core/src/main/scala/kafka/zk/AdminZkClient.scala`` (``getBrokerMetadatas``,
``validateTopicCreate``, ``createNewPartitionsAssignment``,
``validateReplicaAssignment``, ``createPartitionsWithAssignment``) and
``core/src/main/scala/kafka/server/ZkAdminManager.scala`` (``createPartitions``).

Contract:

* ``brokers`` is either a sequence of broker ids (no rack information) or a
  mapping broker id -> rack (``None`` = the broker has no rack). Brokers are
  ordered by id before assignment, as ``AdminZkClient.getBrokerMetadatas``
  does (``sortBy(_.id)``); the rack-aware list is built from racks sorted by
  name and ids sorted within each rack, so input order never matters.
* Checks run in Kafka's order: partitions <= 0 -> :class:`InvalidPartitionsError`
  (INVALID_PARTITIONS), replication factor <= 0 or > number of brokers ->
  :class:`InvalidReplicationFactorError` (INVALID_REPLICATION_FACTOR), racks
  given for some brokers but not all -> :class:`AdminOperationError` (Kafka's
  ``AdminOperationException``, which is not an ``ApiException``, so Kafka
  answers UNKNOWN_SERVER_ERROR for it).
* The result maps partition id -> replica list (first replica = preferred
  leader) with keys in ascending order starting at ``max(0, start_partition)``.

Example (the table in AdminUtils' scaladoc: 5 brokers, RF 3, start index 0):
    >>> assign_replicas([0, 1, 2, 3, 4], 10, 3, start_index=0)[5]
    [0, 2, 3]
    >>> assign_replicas({0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2",
    ...                  5: "rack1"}, 7, 3, start_index=0, start_partition=0)[6]
    [0, 4, 2]
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import TypeAlias

from mafka.errors import (
    BrokerNotAvailableError,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    UnknownServerError,
    UnknownTopicOrPartitionError,
)

__all__ = [
    "AdminOperationError",
    "Brokers",
    "add_partitions",
    "assign_replicas",
    "internal_topic_replication_factor",
    "new_partitions_assignment",
    "rack_alternated_broker_list",
    "validate_topic_assignment",
]

Brokers: TypeAlias = Sequence[int] | Mapping[int, str | None]
"""Broker ids, or broker id -> rack (``None`` when the broker has no rack)."""


class AdminOperationError(UnknownServerError):
    """Kafka's ``kafka.admin.AdminOperationException``.

    It is not an ``ApiException``, so ``ApiError.fromThrowable`` turns it into
    UNKNOWN_SERVER_ERROR (-1); hence the base class.
    """


def _broker_metadata(brokers: Brokers) -> tuple[list[int], dict[int, str | None]]:
    """Returns (broker ids sorted ascending, id -> rack) for either input form.

    Raises:
        ValueError: If a broker id is listed twice.
    """
    if isinstance(brokers, Mapping):
        racks = {int(broker): rack for broker, rack in brokers.items()}
    else:
        ids = [int(broker) for broker in brokers]
        if len(set(ids)) != len(ids):
            raise ValueError(f"duplicate broker ids in {ids}")
        racks = dict.fromkeys(ids)
    return sorted(racks), racks


def _replica_index(
    first_replica_index: int, second_replica_shift: int, replica_index: int, n_brokers: int
) -> int:
    """AdminUtils.replicaIndex: the broker index of follower ``replica_index``."""
    shift = 1 + (second_replica_shift + replica_index) % (n_brokers - 1)
    return (first_replica_index + shift) % n_brokers


def rack_alternated_broker_list(broker_racks: Mapping[int, str]) -> list[int]:
    """Kafka's ``getRackAlternatedBrokerList``: one broker per rack in turn.

    Racks are visited in sorted order and each rack's brokers in ascending id
    order; a rack that has run out of brokers is skipped.

    Example:
        >>> rack_alternated_broker_list({0: "rack1", 1: "rack3", 2: "rack3",
        ...                              3: "rack2", 4: "rack2", 5: "rack1"})
        [0, 3, 1, 5, 4, 2]
    """
    by_rack: dict[str, list[int]] = {}
    for broker, rack in broker_racks.items():
        by_rack.setdefault(rack, []).append(broker)
    iterators = {rack: iter(sorted(ids)) for rack, ids in by_rack.items()}
    racks = sorted(iterators)
    result: list[int] = []
    rack_index = 0
    while len(result) < len(broker_racks):
        taken = next(iterators[racks[rack_index]], None)
        if taken is not None:
            result.append(taken)
        rack_index = (rack_index + 1) % len(racks)
    return result


def _start_and_shift(
    n_brokers: int, start_index: int, rng: random.Random | None
) -> tuple[int, int]:
    """Kafka's ``startIndex`` and initial ``nextReplicaShift``, drawn in that order."""
    if start_index >= 0:
        return start_index, start_index
    if rng is None:
        rng = random.Random()
    start = rng.randrange(n_brokers)
    shift = rng.randrange(n_brokers)
    return start, shift


def _assign_rack_unaware(
    num_partitions: int,
    replication_factor: int,
    broker_list: list[int],
    start_index: int,
    start_partition: int,
    rng: random.Random | None,
) -> dict[int, list[int]]:
    n = len(broker_list)
    start, next_replica_shift = _start_and_shift(n, start_index, rng)
    result: dict[int, list[int]] = {}
    partition = max(0, start_partition)
    for _ in range(num_partitions):
        if partition > 0 and partition % n == 0:
            next_replica_shift += 1
        first = (partition + start) % n
        replicas = [broker_list[first]]
        for j in range(replication_factor - 1):
            replicas.append(broker_list[_replica_index(first, next_replica_shift, j, n)])
        result[partition] = replicas
        partition += 1
    return result


def _assign_rack_aware(
    num_partitions: int,
    replication_factor: int,
    broker_racks: dict[int, str],
    start_index: int,
    start_partition: int,
    rng: random.Random | None,
) -> dict[int, list[int]]:
    num_racks = len(set(broker_racks.values()))
    arranged = rack_alternated_broker_list(broker_racks)
    n = len(arranged)
    start, next_replica_shift = _start_and_shift(n, start_index, rng)
    result: dict[int, list[int]] = {}
    partition = max(0, start_partition)
    for _ in range(num_partitions):
        if partition > 0 and partition % n == 0:
            next_replica_shift += 1
        first = (partition + start) % n
        leader = arranged[first]
        replicas = [leader]
        racks_with_replicas = {broker_racks[leader]}
        brokers_with_replicas = {leader}
        k = 0
        for _ in range(replication_factor - 1):
            while True:
                broker = arranged[_replica_index(first, next_replica_shift * num_racks, k, n)]
                rack = broker_racks[broker]
                k += 1
                # Skip the broker if its rack already has a replica while some rack has
                # none, or if it already has a replica while some broker has none.
                if (rack not in racks_with_replicas or len(racks_with_replicas) == num_racks) and (
                    broker not in brokers_with_replicas or len(brokers_with_replicas) == n
                ):
                    replicas.append(broker)
                    racks_with_replicas.add(rack)
                    brokers_with_replicas.add(broker)
                    break
        result[partition] = replicas
        partition += 1
    return result


def assign_replicas(
    brokers: Brokers,
    num_partitions: int,
    replication_factor: int,
    *,
    start_index: int = -1,
    start_partition: int = -1,
    rng: random.Random | None = None,
) -> dict[int, list[int]]:
    """Kafka's ``AdminUtils.assignReplicasToBrokers``.

    Rack-unaware (no broker has a rack): the first replica of partition p is
    ``brokers[(p + start) % n]``; follower j is
    ``brokers[(f + 1 + (shift + j) % (n - 1)) % n]``, where ``shift`` grows by
    one every time p reaches a multiple of n. Rack-aware (every broker has a
    rack): the same on the rack-alternated list with ``shift * numRacks``,
    skipping a candidate whose rack already holds a replica while some rack
    holds none, or that already holds a replica while some broker holds none.

    Args:
        brokers: Broker ids, or broker id -> rack; ordered by id (see module doc).
        num_partitions: How many partitions to assign.
        replication_factor: Replicas per partition.
        start_index: Kafka's ``fixedStartIndex``; >= 0 fixes both the start
            position and the initial follower shift, < 0 draws both from ``rng``.
        start_partition: The first partition id (< 0 means 0).
        rng: Source of the random start and shift (``randrange`` is called for
            the start, then for the shift); a fresh ``random.Random()`` if None.

    Returns:
        Partition id -> replicas, first replica being the preferred leader.

    Raises:
        InvalidPartitionsError: ``num_partitions <= 0``.
        InvalidReplicationFactorError: ``replication_factor <= 0`` or larger
            than the number of brokers.
        AdminOperationError: Some brokers have a rack and some do not.
    """
    broker_list, racks = _broker_metadata(brokers)
    if num_partitions <= 0:
        raise InvalidPartitionsError("Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise InvalidReplicationFactorError("Replication factor must be larger than 0.")
    if replication_factor > len(broker_list):
        raise InvalidReplicationFactorError(
            f"Replication factor: {replication_factor} larger than available brokers: "
            f"{len(broker_list)}."
        )
    if all(rack is None for rack in racks.values()):
        return _assign_rack_unaware(
            num_partitions, replication_factor, broker_list, start_index, start_partition, rng
        )
    if any(rack is None for rack in racks.values()):
        raise AdminOperationError(
            "Not all brokers have rack information for replica rack aware assignment."
        )
    broker_racks = {broker: rack for broker, rack in racks.items() if rack is not None}
    return _assign_rack_aware(
        num_partitions, replication_factor, broker_racks, start_index, start_partition, rng
    )


def _check_enforced_racks(racks: Mapping[int, str | None]) -> None:
    """``AdminZkClient.getBrokerMetadatas`` with ``RackAwareMode.Enforced``."""
    with_rack = sum(1 for rack in racks.values() if rack is not None)
    if 0 < with_rack < len(racks):
        raise AdminOperationError(
            "Not all brokers have rack information. Add --disable-rack-aware in command line"
            " to make replica assignment without rack information."
        )


def _validate_new_replica_assignment(
    assignment: Mapping[int, Sequence[int]],
    expected_replication_factor: int,
    available_brokers: set[int],
) -> None:
    """``AdminZkClient.validateReplicaAssignment`` for manual CreatePartitions assignments."""
    for partition, replicas in sorted(assignment.items()):
        if not replicas:
            raise InvalidReplicaAssignmentError(
                f"Cannot have replication factor of 0 for partition id {partition}."
            )
        if len(set(replicas)) != len(replicas):
            raise InvalidReplicaAssignmentError(
                "Duplicate brokers not allowed in replica assignment: "
                f"{', '.join(map(str, replicas))} for partition id {partition}."
            )
        if not set(replicas) <= available_brokers:
            raise BrokerNotAvailableError(
                f"Some brokers specified for partition id {partition} are not available. "
                f"Specified brokers: {', '.join(map(str, replicas))}, "
                f"available brokers: {', '.join(map(str, sorted(available_brokers)))}."
            )
    bad = sorted(
        (partition, len(replicas))
        for partition, replicas in assignment.items()
        if len(replicas) != expected_replication_factor
    )
    if bad:
        raise InvalidReplicaAssignmentError(
            "Inconsistent replication factor between partitions, partition 0 has "
            f"{expected_replication_factor} while partitions "
            f"[{', '.join(str(p) for p, _ in bad)}] have replication factors "
            f"[{', '.join(str(rf) for _, rf in bad)}], respectively."
        )


def new_partitions_assignment(
    existing: Mapping[int, Sequence[int]],
    brokers: Brokers,
    new_total: int,
    *,
    replica_assignment: Sequence[Sequence[int]] | None = None,
) -> dict[int, list[int]]:
    """The assignment of only the partitions CreatePartitions adds.

    Kafka's ``ZkAdminManager.createPartitions`` checks followed by
    ``AdminZkClient.createNewPartitionsAssignment``. Without a manual
    assignment the new partitions continue the topic's layout:
    ``assign_replicas(brokers, new_total - len(existing), len(existing[0]),
    start_index=<index of the first broker (by id) whose id >= existing[0][0],
    else 0>, start_partition=len(existing))``, so no randomness is involved.

    Args:
        existing: The topic's current assignment, partition id -> replicas.
        brokers: All brokers (ids, or id -> rack), as for :func:`assign_replicas`.
        new_total: The requested total partition count.
        replica_assignment: The request's ``Assignments``: one replica list per
            new partition, for partitions ``len(existing)``, ``len(existing) + 1``, ...

    Returns:
        New partition id -> replicas.

    Raises:
        AdminOperationError: Some brokers have a rack and some do not (Kafka
            checks this first, in ``getBrokerMetadatas``), or partition 0 is
            missing or has no replicas.
        UnknownTopicOrPartitionError: ``existing`` is empty.
        InvalidPartitionsError: ``new_total`` is not larger than the current count.
        InvalidReplicaAssignmentError: A manual assignment names unknown brokers,
            has the wrong number of entries, an empty or duplicate replica list,
            or a replication factor other than partition 0's.
        InvalidReplicationFactorError: Partition 0 has more replicas than there
            are brokers (automatic assignment).
    """
    broker_list, racks = _broker_metadata(brokers)
    _check_enforced_racks(racks)
    if not existing:
        raise UnknownTopicOrPartitionError("The topic does not exist.")
    old_count = len(existing)
    increment = new_total - old_count
    if increment < 0:
        raise InvalidPartitionsError(
            f"Topic currently has {old_count} partitions, which is higher than the requested "
            f"{new_total}."
        )
    if increment == 0:
        raise InvalidPartitionsError(f"Topic already has {old_count} partitions.")

    manual: dict[int, list[int]] | None = None
    if replica_assignment is not None:
        lists = [[int(broker) for broker in replicas] for replicas in replica_assignment]
        unknown = {broker for replicas in lists for broker in replicas} - set(broker_list)
        if unknown:
            raise InvalidReplicaAssignmentError(
                f"Unknown broker(s) in replica assignment: {', '.join(map(str, sorted(unknown)))}."
            )
        if len(lists) != increment:
            raise InvalidReplicaAssignmentError(
                f"Increasing the number of partitions by {increment} but {len(lists)} "
                "assignments provided."
            )
        manual = {old_count + index: replicas for index, replicas in enumerate(lists)}

    if 0 not in existing:
        raise AdminOperationError(
            "Unexpected existing replica assignment for topic, partition id 0 is missing. "
            f"Assignment: {dict(existing)}"
        )
    partition0 = list(existing[0])
    if manual is not None:
        _validate_new_replica_assignment(manual, len(partition0), set(broker_list))
        return manual
    if not partition0:
        # Kafka fails on ``existingAssignmentPartition0.head`` (NoSuchElementException),
        # which is answered as UNKNOWN_SERVER_ERROR.
        raise AdminOperationError("Partition 0 of the topic has no replicas.")
    start_index = next(
        (index for index, broker in enumerate(broker_list) if broker >= partition0[0]), 0
    )
    return assign_replicas(
        brokers,
        increment,
        len(partition0),
        start_index=start_index,
        start_partition=old_count,
    )


def add_partitions(
    existing: Mapping[int, Sequence[int]],
    brokers: Brokers,
    new_total: int,
    *,
    replica_assignment: Sequence[Sequence[int]] | None = None,
) -> dict[int, list[int]]:
    """The topic's whole assignment after CreatePartitions (existing + new).

    Kafka's ``AdminZkClient.addPartitions`` / ``createPartitionsWithAssignment``:
    what gets written to ``/brokers/topics/T``. See
    :func:`new_partitions_assignment` for the arguments and errors.

    Example (Kafka's AddPartitionsTest.testReplicaPlacementPartialServers):
        >>> add_partitions({0: [1, 2]}, [0, 1, 2, 3], 3)
        {0: [1, 2], 1: [2, 0], 2: [3, 1]}
    """
    new = new_partitions_assignment(
        existing, brokers, new_total, replica_assignment=replica_assignment
    )
    combined = {partition: list(replicas) for partition, replicas in existing.items()}
    combined.update(new)
    return combined


def validate_topic_assignment(assignment: Mapping[int, Sequence[int]]) -> None:
    """The assignment checks of ``AdminZkClient.validateTopicCreate`` (CreateTopics).

    Used for manual assignments (CreateTopics ``Assignments``); Kafka does not
    check here that the brokers exist.

    Raises:
        InvalidReplicaAssignmentError: Partitions have different replica counts
            (also for an empty assignment, as in Kafka), a replica list has
            duplicates, or the partition ids fail Kafka's consecutive-ids check
            (the non-negative ids must sum to n(n-1)/2, n = number of partitions).
    """
    if len({len(replicas) for replicas in assignment.values()}) != 1:
        raise InvalidReplicaAssignmentError(
            "All partitions should have the same number of replicas"
        )
    for replicas in assignment.values():
        if len(set(replicas)) != len(replicas):
            raise InvalidReplicaAssignmentError(
                f"Duplicate replica assignment found: {dict(assignment)}"
            )
    size = len(assignment)
    if sum(partition for partition in assignment if partition >= 0) != size * (size - 1) // 2:
        raise InvalidReplicaAssignmentError(
            "partitions should be a consecutive 0-based integer sequence"
        )


def internal_topic_replication_factor(configured: int, live_broker_count: int) -> int:
    """The replication factor to create an internal topic (``__consumer_offsets``) with.

    ``offsets.topic.replication.factor`` (default 3) capped at the number of
    live brokers, so a one- or two-broker development cluster gets a working
    offsets topic.  Kafka 2.8 itself does not cap: with fewer live brokers
    than configured, ``KafkaApis.createInternalTopic`` answers
    COORDINATOR_NOT_AVAILABLE until enough brokers are up (its shipped
    ``server.properties`` sets the factor to 1 for development instead).

    Args:
        configured: ``offsets.topic.replication.factor`` (at least 1).
        live_broker_count: Registered brokers now.

    Returns:
        ``min(configured, live_broker_count)``, and at least 1.

    Raises:
        ValueError: *configured* is below 1.

    Example:
        >>> internal_topic_replication_factor(3, 1), internal_topic_replication_factor(3, 5)
        (1, 3)
    """
    if configured < 1:
        raise ValueError(f"offsets.topic.replication.factor must be at least 1, not {configured}")
    return max(1, min(configured, live_broker_count))
