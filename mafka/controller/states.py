"""The controller's partition and replica state machines: states, legal moves, state tables.

Pure data and bookkeeping; the actions taken on entering a state (ZooKeeper
writes, LeaderAndIsr/StopReplica requests) belong to the controller.

Sources (apache/kafka 2.8.2): the ``PartitionState`` and ``ReplicaState``
case objects at the end of ``core/src/main/scala/kafka/controller/
PartitionStateMachine.scala`` and ``ReplicaStateMachine.scala`` (names,
``state`` bytes, ``validPreviousStates``), and ``ControllerContext``
(``putPartitionStateIfNotExists``, ``checkValidPartitionStateChange`` and the
replica counterparts).

Contract:

* :class:`PartitionState` and :class:`ReplicaState` use Kafka's names and
  state bytes as values. They are plain enums: a partition state never
  equals a replica state.
* :data:`PARTITION_VALID_PREVIOUS_STATES` / :data:`REPLICA_VALID_PREVIOUS_STATES`
  map each target state to the states it may be entered from.
  :func:`check_transition` raises :class:`IllegalStateTransition` for any
  other (current, target) pair, including pairs mixing the two kinds.
* :class:`PartitionStateTable` / :class:`ReplicaStateTable` hold one state per
  key (a partition, or a (partition, replica) pair) and apply a batch
  transition the way Kafka's state machines do: keys never seen are first
  registered as NonExistent; the batch is split into valid and invalid keys
  against the states *before* the batch; valid keys move to the target;
  invalid ones are left alone and reported (Kafka logs them and skips them).

Example:
    >>> table = PartitionStateTable()
    >>> table.transition(["t-0", "t-1"], PartitionState.NewPartition).valid
    ('t-0', 't-1')
    >>> result = table.transition(["t-0"], PartitionState.NonExistentPartition)
    >>> result.invalid[0].current
    <PartitionState.NewPartition: 0>
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Mapping
from enum import Enum
from typing import Final, Generic, NamedTuple, TypeVar

__all__ = [
    "PARTITION_VALID_PREVIOUS_STATES",
    "REPLICA_VALID_PREVIOUS_STATES",
    "IllegalStateTransition",
    "InvalidTransition",
    "PartitionState",
    "PartitionStateTable",
    "ReplicaState",
    "ReplicaStateTable",
    "StateChangeFailed",
    "TransitionResult",
    "check_transition",
    "is_valid_transition",
    "valid_previous_states",
]


class StateChangeFailed(Exception):
    """A partition could not move to the target state (Kafka's ``StateChangeFailedException``)."""


class PartitionState(Enum):
    """Kafka's partition states; the values are Kafka's ``state`` bytes."""

    NewPartition = 0
    OnlinePartition = 1
    OfflinePartition = 2
    NonExistentPartition = 3


class ReplicaState(Enum):
    """Kafka's replica states; the values are Kafka's ``state`` bytes."""

    NewReplica = 1
    OnlineReplica = 2
    OfflineReplica = 3
    ReplicaDeletionStarted = 4
    ReplicaDeletionSuccessful = 5
    ReplicaDeletionIneligible = 6
    NonExistentReplica = 7


_P = PartitionState
_R = ReplicaState

PARTITION_VALID_PREVIOUS_STATES: Final[dict[PartitionState, frozenset[PartitionState]]] = {
    _P.NewPartition: frozenset({_P.NonExistentPartition}),
    _P.OnlinePartition: frozenset({_P.NewPartition, _P.OnlinePartition, _P.OfflinePartition}),
    _P.OfflinePartition: frozenset({_P.NewPartition, _P.OnlinePartition, _P.OfflinePartition}),
    _P.NonExistentPartition: frozenset({_P.OfflinePartition}),
}
"""Target partition state -> the states it may be entered from (Kafka's ``validPreviousStates``)."""

REPLICA_VALID_PREVIOUS_STATES: Final[dict[ReplicaState, frozenset[ReplicaState]]] = {
    _R.NewReplica: frozenset({_R.NonExistentReplica}),
    _R.OnlineReplica: frozenset(
        {_R.NewReplica, _R.OnlineReplica, _R.OfflineReplica, _R.ReplicaDeletionIneligible}
    ),
    _R.OfflineReplica: frozenset(
        {_R.NewReplica, _R.OnlineReplica, _R.OfflineReplica, _R.ReplicaDeletionIneligible}
    ),
    _R.ReplicaDeletionStarted: frozenset({_R.OfflineReplica}),
    _R.ReplicaDeletionSuccessful: frozenset({_R.ReplicaDeletionStarted}),
    _R.ReplicaDeletionIneligible: frozenset({_R.OfflineReplica, _R.ReplicaDeletionStarted}),
    _R.NonExistentReplica: frozenset({_R.ReplicaDeletionSuccessful}),
}
"""Target replica state -> the states it may be entered from (Kafka's ``validPreviousStates``)."""

State = PartitionState | ReplicaState
S = TypeVar("S", PartitionState, ReplicaState)
K = TypeVar("K", bound=Hashable)


def valid_previous_states(target: PartitionState | ReplicaState) -> frozenset[State]:
    """The states ``target`` may be entered from."""
    if isinstance(target, PartitionState):
        return PARTITION_VALID_PREVIOUS_STATES[target]
    return REPLICA_VALID_PREVIOUS_STATES[target]


def is_valid_transition(current: State, target: State) -> bool:
    """Whether ``current -> target`` is in Kafka's table (False for mixed kinds)."""
    return type(current) is type(target) and current in valid_previous_states(target)


def _describe(key: object, current: State, target: State) -> str:
    kind = "Partition" if isinstance(target, PartitionState) else "Replica"
    subject = kind if key is None else f"{kind} {key}"
    allowed = ",".join(s.name for s in sorted(valid_previous_states(target), key=lambda s: s.value))
    return (
        f"{subject} should be in one of {allowed} states before moving to {target.name} state. "
        f"Instead it is in {current.name} state"
    )


class IllegalStateTransition(Exception):
    """A state change not allowed by Kafka's table (Kafka's ``IllegalStateException``).

    Attributes:
        current: The state the partition or replica is in.
        target: The state it was asked to move to.
        key: The partition or (partition, replica), if known.
    """

    def __init__(self, current: State, target: State, key: object = None) -> None:
        self.current = current
        self.target = target
        self.key = key
        if type(current) is not type(target):
            message = f"cannot move a {type(current).__name__} to the {type(target).__name__} {target.name}"
        else:
            message = _describe(key, current, target)
        super().__init__(message)


def check_transition(current: State, target: State) -> None:
    """Raises :class:`IllegalStateTransition` unless ``current -> target`` is legal."""
    if not is_valid_transition(current, target):
        raise IllegalStateTransition(current, target)


class InvalidTransition(NamedTuple, Generic[K, S]):
    """A key a batch transition skipped: where it was and where it was asked to go."""

    key: K
    current: S
    target: S

    @property
    def error(self) -> IllegalStateTransition:
        """The exception Kafka would log for this key."""
        return IllegalStateTransition(self.current, self.target, self.key)


class TransitionResult(NamedTuple, Generic[K, S]):
    """The outcome of a batch transition.

    Attributes:
        valid: The keys whose move was legal, in the order given.
        invalid: The keys skipped, with the state they are in, in the order given.
    """

    valid: tuple[K, ...]
    invalid: tuple[InvalidTransition[K, S], ...]


class _StateTable(Generic[K, S]):
    """State per key with Kafka's batch-transition semantics (see module doc)."""

    _initial: S
    _table: Mapping[S, frozenset[S]]

    def __init__(self, states: Mapping[K, S] | None = None) -> None:
        self._states: dict[K, S] = {}
        if states:
            for key, state in states.items():
                self.put(key, state)

    def _check_kind(self, state: S) -> None:
        if not isinstance(state, type(self._initial)):
            raise TypeError(
                f"{type(self).__name__} holds {type(self._initial).__name__}, not {state!r}"
            )

    def state(self, key: K) -> S:
        """The key's state; NonExistent for a key never seen (or removed)."""
        return self._states.get(key, self._initial)

    def put(self, key: K, state: S) -> None:
        """Sets a state without checking the transition (Kafka's ``putPartitionState``)."""
        self._check_kind(state)
        self._states[key] = state

    def remove(self, key: K) -> None:
        """Forgets the key (as Kafka does when a topic's deletion completes)."""
        self._states.pop(key, None)

    def __contains__(self, key: object) -> bool:
        return key in self._states

    def __len__(self) -> int:
        return len(self._states)

    def __iter__(self) -> Iterator[K]:
        return iter(self._states)

    def items(self) -> list[tuple[K, S]]:
        """(key, state) pairs in registration order."""
        return list(self._states.items())

    def in_state(self, *states: S) -> list[K]:
        """The keys currently in any of ``states``, in registration order."""
        wanted = set(states)
        return [key for key, state in self._states.items() if state in wanted]

    def count(self, state: S) -> int:
        """How many keys are in ``state``."""
        return sum(1 for s in self._states.values() if s == state)

    def check(self, keys: Iterable[K], target: S) -> TransitionResult[K, S]:
        """Splits ``keys`` into legal and illegal moves to ``target``; changes nothing."""
        self._check_kind(target)
        allowed = self._table[target]
        valid: list[K] = []
        invalid: list[InvalidTransition[K, S]] = []
        for key in keys:
            current = self.state(key)
            if current in allowed:
                valid.append(key)
            else:
                invalid.append(InvalidTransition(key, current, target))
        return TransitionResult(tuple(valid), tuple(invalid))

    def transition(self, keys: Iterable[K], target: S) -> TransitionResult[K, S]:
        """Moves every key whose move is legal to ``target``; reports the rest.

        Unknown keys are first registered as NonExistent (Kafka's
        ``put*StateIfNotExists``), so they stay in the table even if skipped.
        The split uses the states from before the batch.
        """
        keys = list(keys)
        for key in keys:
            self._states.setdefault(key, self._initial)
        result = self.check(keys, target)
        for key in result.valid:
            self._states[key] = target
        return result


class PartitionStateTable(_StateTable[K, PartitionState]):
    """Partition -> :class:`PartitionState` (the partition part of Kafka's ``ControllerContext``)."""

    _initial = PartitionState.NonExistentPartition
    _table = PARTITION_VALID_PREVIOUS_STATES


class ReplicaStateTable(_StateTable[K, ReplicaState]):
    """(partition, replica) -> :class:`ReplicaState` (the replica part of ``ControllerContext``)."""

    _initial = ReplicaState.NonExistentReplica
    _table = REPLICA_VALID_PREVIOUS_STATES
