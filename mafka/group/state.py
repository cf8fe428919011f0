"""Kafka 2.8's consumer-group metadata model: group states, members, protocol vote.

A pure model of ``kafka.coordinator.group.GroupMetadata`` and ``MemberMetadata``
(Kafka 2.8): no I/O, no reactor, no clock — every time is passed in as ``now_ms``.
The group coordinator drives it; committed offsets live elsewhere.

Contract:

* :class:`GroupState` holds the five states; :data:`VALID_PREVIOUS_STATES` is
  Kafka's table of legal previous states for each target;
  :meth:`GroupMetadata.transition_to` raises :class:`IllegalStateError` for any
  other move (Dead may be re-entered from Dead, as in Kafka).
* :class:`MemberMetadata` is one member: its ids, timeouts, ordered
  ``supported_protocols`` (``(name, metadata bytes)`` in the client's order of
  preference), its assignment and its awaiting-join / awaiting-sync flags (the
  coordinator's parked-callback bookkeeping, reduced to booleans here).
* :class:`GroupMetadata` keeps members in insertion order, the static members
  (``group.instance.id`` → member id), the pending members of KIP-394's
  MEMBER_ID_REQUIRED flow, and per-protocol support counts used for the
  protocol vote exactly as Kafka does (:meth:`GroupMetadata.select_protocol`).

Deliberate deviation: when the leader leaves, Kafka picks ``members.keys.headOption``
of a ``mutable.HashMap`` (an arbitrary member, since member ids carry a random
UUID); here the earliest-added remaining member becomes leader.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from mafka.errors import IllegalStateError

__all__ = [
    "MEMBER_ID_DELIMITER",
    "VALID_PREVIOUS_STATES",
    "GroupMetadata",
    "GroupState",
    "MemberMetadata",
    "java_string_hash",
    "new_member_id",
]

MEMBER_ID_DELIMITER = "-"

Protocols = Sequence[tuple[str, bytes]]


class GroupState(enum.Enum):
    """The five group states under the names Kafka reports (DescribeGroups, ListGroups)."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value


#: Target state -> the states a group may be in just before moving to it (Kafka 2.8 GroupState).
VALID_PREVIOUS_STATES: dict[GroupState, frozenset[GroupState]] = {
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}
    ),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.DEAD: frozenset(
        {
            GroupState.STABLE,
            GroupState.PREPARING_REBALANCE,
            GroupState.COMPLETING_REBALANCE,
            GroupState.EMPTY,
            GroupState.DEAD,
        }
    ),
}


def new_member_id(client_id: str, group_instance_id: str | None = None) -> str:
    """Kafka's ``generateMemberId``: ``<client id or instance id>-<random UUID>``."""
    prefix = client_id if group_instance_id is None else group_instance_id
    return prefix + MEMBER_ID_DELIMITER + str(uuid.uuid4())


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - 0x1_0000_0000 if value & 0x8000_0000 else value


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units), as a signed int32."""
    data = text.encode("utf-16-be")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return _int32(h)


def _scala_improve(hcode: int) -> int:
    """Scala 2.13 ``collection.Hashing.improve`` (the CHAMP ``HashMap`` key hash), unsigned."""
    h = hcode & 0xFFFFFFFF
    h = (h + (~(h << 9) & 0xFFFFFFFF)) & 0xFFFFFFFF
    h ^= h >> 14
    h = (h + (h << 4)) & 0xFFFFFFFF
    return h ^ (h >> 10)


def _champ_order(keys: list[str]) -> list[str]:
    """The iteration order of a Scala 2.13 ``immutable.HashMap`` holding ``keys``.

    The CHAMP trie is canonical: at each level (5 hash bits, low bits first) a key
    alone under its 5-bit mask is payload, keys sharing a mask go into a sub-node.
    Iteration is pre-order: a node's payload by ascending mask, then its sub-nodes
    by ascending mask. Keys with identical hashes (a collision node) keep ``keys`` order.
    """
    hashed = [(_scala_improve(java_string_hash(k)), k) for k in keys]

    def walk(entries: list[tuple[int, str]], shift: int) -> list[str]:
        if shift >= 32:
            return [k for _, k in entries]
        by_mask: dict[int, list[tuple[int, str]]] = {}
        for entry in entries:
            by_mask.setdefault((entry[0] >> shift) & 31, []).append(entry)
        payload = [group[0][1] for _, group in sorted(by_mask.items()) if len(group) == 1]
        nodes = [group for _, group in sorted(by_mask.items()) if len(group) > 1]
        out = payload
        for group in nodes:
            out.extend(walk(group, shift + 5))
        return out

    return walk(hashed, 0)


@dataclass(eq=False)
class MemberMetadata:
    """One group member (Kafka 2.8 ``MemberMetadata``)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    supported_protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    awaiting_join: bool = False
    awaiting_sync: bool = False
    is_leaving: bool = False
    is_new: bool = False
    heartbeat_satisfied: bool = False
    last_heartbeat_ms: int = 0

    def __post_init__(self) -> None:
        self.supported_protocols = [(name, bytes(meta)) for name, meta in self.supported_protocols]

    @property
    def is_static_member(self) -> bool:
        return self.group_instance_id is not None

    @property
    def protocols(self) -> set[str]:
        return {name for name, _ in self.supported_protocols}

    def protocol_names(self) -> list[str]:
        """The protocol names in the member's order of preference."""
        return [name for name, _ in self.supported_protocols]

    def metadata(self, protocol: str) -> bytes:
        """The member's metadata for ``protocol``; ValueError if it does not support it."""
        for name, meta in self.supported_protocols:
            if name == protocol:
                return meta
        raise ValueError(f"Member {self.member_id} does not support protocol {protocol}")

    def matches(self, protocols: Protocols) -> bool:
        """True if ``protocols`` equals the member's protocols: same names, order and bytes."""
        if len(protocols) != len(self.supported_protocols):
            return False
        return all(
            n1 == n2 and bytes(m1) == m2
            for (n1, m1), (n2, m2) in zip(protocols, self.supported_protocols, strict=True)
        )

    def vote(self, candidates: Iterable[str]) -> str:
        """The member's most preferred protocol among ``candidates``."""
        allowed = set(candidates)
        for name, _ in self.supported_protocols:
            if name in allowed:
                return name
        raise ValueError(f"Member {self.member_id} does not support any of the candidate protocols")

    def has_satisfied_heartbeat(self) -> bool:
        """Kafka's ``hasSatisfiedHeartbeat`` (used by the heartbeat purgatory)."""
        if self.is_new:
            return self.heartbeat_satisfied
        if self.awaiting_join or self.awaiting_sync:
            return True
        return self.heartbeat_satisfied

    def heartbeat(self, now_ms: int) -> None:
        self.last_heartbeat_ms = now_ms
        self.heartbeat_satisfied = True

    def session_expired(self, now_ms: int) -> bool:
        return now_ms - self.last_heartbeat_ms >= self.session_timeout_ms


@dataclass(eq=False)
class GroupMetadata:
    """One consumer group's membership and state (Kafka 2.8 ``GroupMetadata``)."""

    group_id: str
    state: GroupState = GroupState.EMPTY
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    current_state_timestamp_ms: int | None = None
    new_member_added: bool = False
    members: dict[str, MemberMetadata] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    pending_members: set[str] = field(default_factory=set)
    _supported_protocols: dict[str, int] = field(default_factory=dict, repr=False)

    # -- state -------------------------------------------------------------------

    def is_in_state(self, state: GroupState) -> bool:
        return self.state is state

    def can_rebalance(self) -> bool:
        return self.state in VALID_PREVIOUS_STATES[GroupState.PREPARING_REBALANCE]

    def transition_to(self, target: GroupState, now_ms: int | None = None) -> None:
        allowed = VALID_PREVIOUS_STATES[target]
        if self.state not in allowed:
            names = ",".join(sorted(s.value for s in allowed))
            raise IllegalStateError(
                f"Group {self.group_id} should be in the {names} states before moving to "
                f"{target} state. Instead it is in {self.state} state"
            )
        self.state = target
        if now_ms is not None:
            self.current_state_timestamp_ms = now_ms

    # -- members -------------------------------------------------------------------

    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def get(self, member_id: str) -> MemberMetadata:
        return self.members[member_id]

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def add(self, member: MemberMetadata) -> None:
        """Add ``member``; the first member fixes the protocol type and becomes leader."""
        instance_id = member.group_instance_id
        if instance_id is not None and instance_id in self.static_members:
            raise IllegalStateError(
                f"Static member with groupInstanceId={instance_id} cannot be added to group "
                f"{self.group_id} since it is already a member"
            )
        if member.member_id in self.members:
            raise IllegalStateError(
                f"Member {member.member_id} is already in group {self.group_id}"
            )
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.protocol_type != member.protocol_type:
            raise ValueError(
                f"Member protocol type {member.protocol_type!r} differs from the group's "
                f"{self.protocol_type!r}"
            )
        if self.members and not self._shares_a_candidate(member.protocols):
            raise ValueError(f"Member {member.member_id} supports none of the group's protocols")
        if instance_id is not None:
            self.static_members[instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self._count_protocols(member, +1)
        self.pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> MemberMetadata | None:
        """Remove a member (and its static id and pending entry); re-elect the leader if needed."""
        member = self.members.pop(member_id, None)
        if member is not None:
            self._count_protocols(member, -1)
            if member.group_instance_id is not None:
                self.static_members.pop(member.group_instance_id, None)
        if self.is_leader(member_id):
            self.leader_id = next(iter(self.members), None)
        self.pending_members.discard(member_id)
        return member

    def update_member(self, member: MemberMetadata, protocols: Protocols) -> None:
        """Replace a member's protocols on rejoin, keeping the support counts right."""
        self._count_protocols(member, -1)
        member.supported_protocols = [(name, bytes(meta)) for name, meta in protocols]
        self._count_protocols(member, +1)

    def maybe_elect_new_joined_leader(self) -> bool:
        """Kafka's ``maybeElectNewJoinedLeader``: a leader that has not rejoined yields to one that has."""
        if self.leader_id is None:
            return False
        if self.members[self.leader_id].awaiting_join:
            return True
        for member_id, member in self.members.items():
            if member.awaiting_join:
                self.leader_id = member_id
                return True
        return False

    def all_members(self) -> list[str]:
        return list(self.members)

    def all_member_metadata(self) -> list[MemberMetadata]:
        return list(self.members.values())

    def not_yet_rejoined_members(self) -> list[MemberMetadata]:
        return [m for m in self.members.values() if not m.awaiting_join]

    def num_awaiting_join(self) -> int:
        return sum(1 for m in self.members.values() if m.awaiting_join)

    def has_all_members_joined(self) -> bool:
        """Every member has rejoined and no MEMBER_ID_REQUIRED member is still pending."""
        return self.num_awaiting_join() == len(self.members) and not self.pending_members

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    # -- pending members (KIP-394) --------------------------------------------------

    def add_pending_member(self, member_id: str) -> None:
        self.pending_members.add(member_id)

    def remove_pending_member(self, member_id: str) -> None:
        self.pending_members.discard(member_id)

    def is_pending_member(self, member_id: str) -> bool:
        return member_id in self.pending_members

    # -- static members (KIP-345) ---------------------------------------------------

    def has_static_member(self, group_instance_id: str | None) -> bool:
        return group_instance_id is not None and group_instance_id in self.static_members

    def current_static_member_id(self, group_instance_id: str) -> str | None:
        return self.static_members.get(group_instance_id)

    def is_static_member_fenced(self, member_id: str, group_instance_id: str | None) -> bool:
        """True if ``group_instance_id`` is now held by a member id other than ``member_id``."""
        if group_instance_id is None or group_instance_id not in self.static_members:
            return False
        return self.static_members[group_instance_id] != member_id

    def replace_static_member(
        self, group_instance_id: str, old_member_id: str, new_member_id: str
    ) -> MemberMetadata:
        """Move a static member to a new member id, keeping its metadata and assignment.

        The caller fences the old id's parked JoinGroup/SyncGroup (FENCED_INSTANCE_ID)
        — here its awaiting flags are cleared. Leadership follows the member.
        """
        member = self.members.pop(old_member_id, None)
        if member is None:
            raise ValueError(f"Cannot replace non-existing member id {old_member_id}")
        member.awaiting_join = False
        member.awaiting_sync = False
        member.member_id = new_member_id
        self.members[new_member_id] = member
        if self.is_leader(old_member_id):
            self.leader_id = new_member_id
        self.static_members[group_instance_id] = new_member_id
        return member

    # -- protocols ----------------------------------------------------------------

    def _count_protocols(self, member: MemberMetadata, delta: int) -> None:
        for name in member.protocols:
            count = self._supported_protocols.get(name, 0) + delta
            if count:
                self._supported_protocols[name] = count
            else:
                self._supported_protocols.pop(name, None)

    def candidate_protocols(self) -> set[str]:
        """The protocols every current member supports."""
        n = len(self.members)
        return {name for name, count in self._supported_protocols.items() if count == n}

    def _shares_a_candidate(self, protocols: Iterable[str]) -> bool:
        n = len(self.members)
        return any(self._supported_protocols.get(p, 0) == n for p in protocols)

    def supports_protocols(self, protocol_type: str, protocols: Iterable[str]) -> bool:
        """Kafka's ``supportsProtocols``: may a member with these protocols join?

        An Empty group takes any non-empty type with at least one protocol; otherwise
        the type must match and one of the protocols must be supported by every member.
        """
        names = list(protocols)
        if self.state is GroupState.EMPTY:
            return bool(protocol_type) and bool(names)
        return self.protocol_type == protocol_type and self._shares_a_candidate(names)

    def select_protocol(self) -> str:
        """Kafka's vote: each member votes for its most preferred common protocol.

        The protocol with most votes wins. Ties go the way Kafka 2.8 (Scala 2.13)
        breaks them: ``groupBy`` builds an ``immutable.HashMap`` of the votes and
        ``maxBy`` keeps the first maximum in that map's iteration order.
        """
        if not self.members:
            raise IllegalStateError("Cannot select protocol for empty group")
        candidates = self.candidate_protocols()
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = member.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        best: str | None = None
        for name in _champ_order(list(votes)):
            if best is None or votes[name] > votes[best]:
                best = name
        assert best is not None
        return best

    # -- generations ----------------------------------------------------------------

    def init_next_generation(self, now_ms: int) -> None:
        """Bump the generation: choose the protocol and await sync, or go Empty if no one is left."""
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition_to(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.transition_to(GroupState.EMPTY, now_ms)

    def current_member_metadata(self) -> list[tuple[str, str | None, bytes]]:
        """The leader's JoinGroup member list: (member id, group instance id, metadata)."""
        if self.state in (GroupState.DEAD, GroupState.PREPARING_REBALANCE):
            raise IllegalStateError(
                f"Cannot obtain member metadata for group in state {self.state}"
            )
        if self.protocol_name is None:
            raise IllegalStateError(f"Group {self.group_id} has no selected protocol")
        return [
            (member_id, m.group_instance_id, m.metadata(self.protocol_name))
            for member_id, m in self.members.items()
        ]
