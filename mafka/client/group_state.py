"""A consumer's group membership as plain state: requests to send, what each answer means.  No I/O.

:class:`Membership` holds the member's identity (member id, generation, chosen protocol),
the partitions it owns and whether it must rejoin, and turns JoinGroup / SyncGroup /
Heartbeat / OffsetCommit / OffsetFetch / LeaveGroup answers into :class:`Outcome` values.
The driver (:class:`~mafka.client.group_member.GroupMember`) does the sending, the
coordinator lookup, the waiting and the hand-over to the application; everything that
decides lives here and is unit-tested without sockets or a loop.

Kafka's rules kept here (``AbstractCoordinator`` / ``ConsumerCoordinator``):

* MEMBER_ID_REQUIRED (JoinGroup v4+): join again at once with the member id given;
* UNKNOWN_MEMBER_ID forgets the member id, ILLEGAL_GENERATION the generation; both,
  and REBALANCE_IN_PROGRESS, mean "rejoin"; from a heartbeat the first two (and
  FENCED_INSTANCE_ID) also mean the owned partitions are **lost** (not revoked: they
  may already belong to someone else, so nothing may be committed for them);
* NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE: find the coordinator again;
* FENCED_INSTANCE_ID is fatal for a static member (another instance took its id);
* EAGER protocols give up every partition before joining; COOPERATIVE ones
  (KIP-429) keep what they own, give up only what the new assignment moves away,
  and rejoin after such a revocation so the moved partitions can be handed out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mafka.client.assignors import Assignor, MemberMetadata
from mafka.client.kafka_error import KafkaError
from mafka.errors import ErrorCode
from mafka.group.consumer_protocol import (
    PROTOCOL_TYPE,
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from mafka.topics import TopicPartitionTuple

__all__ = ["Membership", "Outcome", "COORDINATOR_ERRORS", "REJOIN_ERRORS"]


COORDINATOR_ERRORS = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE})
REJOIN_ERRORS = frozenset({ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.ILLEGAL_GENERATION,
                           ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID})
_QUIET = frozenset({ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS})


@dataclass
class Outcome:
    """What an answer means for the driver.

    ``kind``: "retry" (send again now), "error", "leader", "follower", "assigned", "ok",
    "rejoin", "lost".  ``revoke`` / ``assign`` are the partitions to hand to the application
    (``incremental`` for cooperative rebalances); ``lost`` the partitions lost;
    ``coordinator_lost``: find the coordinator again; ``notify``: an error for the
    application; ``fatal``: stop (a fenced static member).
    """

    kind: str
    revoke: set[TopicPartitionTuple] = field(default_factory=set)
    assign: set[TopicPartitionTuple] = field(default_factory=set)
    lost: set[TopicPartitionTuple] = field(default_factory=set)
    incremental: bool = False
    coordinator_lost: bool = False
    notify: KafkaError | None = None
    fatal: bool = False


def _flatten(assignment: dict[str, list[int]]) -> set[TopicPartitionTuple]:
    return {(t, p) for t, ps in assignment.items() for p in ps}


def _by_topic(tps: Any) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for t, p in sorted(tps):
        out.setdefault(t, []).append(p)
    return out


class Membership:
    """One member's group state.

    Args:
        group_id: ``group.id``.
        instance_id: ``group.instance.id`` (static membership) or None.
        session_timeout_ms, rebalance_timeout_ms: as sent in JoinGroup
            (``session.timeout.ms``, ``max.poll.interval.ms``).
        assignors: the assignors of ``partition.assignment.strategy``, in preference order.
    """

    def __init__(self, group_id: str, instance_id: str | None, session_timeout_ms: int,
                 rebalance_timeout_ms: int, assignors: list[Assignor]) -> None:
        self.group_id = group_id
        self.instance_id = instance_id
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.assignors = assignors
        self.member_id = ""
        self.generation = -1
        self.protocol: str | None = None
        self.owned: set[TopicPartitionTuple] = set()
        self.need_rejoin = False

    # -- protocol choice ------------------------------------------------------------------

    @property
    def rebalance_protocol(self) -> str:
        """EAGER or COOPERATIVE: the chosen assignor's (the first one's before any join)."""
        chosen = next((a for a in self.assignors if a.name == self.protocol), self.assignors[0])
        return chosen.rebalance_protocol

    def cooperative(self) -> bool:
        """Every configured assignor is cooperative: owned partitions are kept across joins."""
        return all(a.rebalance_protocol == "COOPERATIVE" for a in self.assignors)

    # -- join and sync --------------------------------------------------------------------

    def revoke_before_join(self) -> set[TopicPartitionTuple]:
        """EAGER: everything owned is given up before joining (returned, and forgotten)."""
        if self.cooperative() or not self.owned:
            return set()
        owned, self.owned = self.owned, set()
        return owned

    def join_request(self, topics: set[str]) -> dict[str, Any]:
        """The JoinGroup body for a subscription to ``topics`` (clears :attr:`need_rejoin`)."""
        owned = _by_topic(self.owned)
        protocols = []
        for assignor in self.assignors:
            user_data = assignor.subscription_user_data(topics, owned, self.generation)
            sub = Subscription(sorted(topics), user_data, owned)
            protocols.append({"name": assignor.name, "metadata": encode_subscription(sub)})
        self.need_rejoin = False
        return {
            "group_id": self.group_id,
            "session_timeout_ms": self.session_timeout_ms,
            "rebalance_timeout_ms": self.rebalance_timeout_ms,
            "member_id": self.member_id,
            "group_instance_id": self.instance_id,
            "protocol_type": PROTOCOL_TYPE,
            "protocols": protocols,
        }

    def on_join(self, response: Any) -> Outcome:
        """A JoinGroup answer: "retry" (member id required), an error, "leader" or "follower"."""
        code = response.error_code
        if code == ErrorCode.MEMBER_ID_REQUIRED:
            self.member_id = response.member_id
            self.need_rejoin = True
            return Outcome("retry")
        if code != ErrorCode.NONE:
            return self.on_error(code)
        self.member_id = response.member_id
        self.generation = response.generation_id
        self.protocol = response.protocol_name
        return Outcome("leader" if response.leader == response.member_id else "follower")

    def leader_topics(self, response: Any) -> set[str]:
        """Every topic some member of a JoinGroup answer subscribes to (the leader needs their sizes)."""
        return {t for m in response.members for t in decode_subscription(m.metadata).topics}

    def leader_assignments(self, response: Any, partition_counts: dict[str, int]) -> dict[str, bytes]:
        """The leader's assignment: member id -> Assignment bytes, by the chosen assignor."""
        assignor = next(a for a in self.assignors if a.name == response.protocol_name)
        members = {
            m.member_id: MemberMetadata(m.member_id, decode_subscription(m.metadata),
                                        getattr(m, "group_instance_id", None))
            for m in response.members
        }
        result = assignor.assign(members, partition_counts)
        return {m: encode_assignment(Assignment({t: sorted(ps) for t, ps in parts.items()}))
                for m, parts in result.items()}

    def sync_request(self, assignments: dict[str, bytes]) -> dict[str, Any]:
        return {
            "group_id": self.group_id,
            "generation_id": self.generation,
            "member_id": self.member_id,
            "group_instance_id": self.instance_id,
            "assignments": [{"member_id": m, "assignment": a} for m, a in assignments.items()],
        }

    def on_sync(self, response: Any) -> Outcome:
        """A SyncGroup answer: the partitions to revoke and to assign, or an error.

        COOPERATIVE: only the difference moves; a revocation asks for another join.
        EAGER: everything assigned (nothing is owned any more at this point).
        """
        if response.error_code != ErrorCode.NONE:
            return self.on_error(response.error_code)
        assignment = decode_assignment(response.assignment) if response.assignment else Assignment()
        for assignor in self.assignors:
            if assignor.name == self.protocol:
                assignor.on_assignment(assignment, self.generation)
        new = _flatten(assignment.assigned_partitions)
        if self.rebalance_protocol == "COOPERATIVE":
            revoked = self.owned - new
            added = new - self.owned
            self.owned = new
            if revoked:
                self.need_rejoin = True  # so the revoked partitions can be handed out
            return Outcome("assigned", revoke=revoked, assign=added, incremental=True)
        self.owned = new
        return Outcome("assigned", assign=new)

    # -- heartbeats and errors ------------------------------------------------------------

    def heartbeat_request(self) -> dict[str, Any]:
        return {"group_id": self.group_id, "generation_id": self.generation,
                "member_id": self.member_id, "group_instance_id": self.instance_id}

    def on_heartbeat(self, code: int) -> Outcome:
        """A Heartbeat answer: "ok", "rejoin", a lost assignment, or another error."""
        if code == ErrorCode.NONE:
            return Outcome("ok")
        if code == ErrorCode.REBALANCE_IN_PROGRESS:
            self.need_rejoin = True
            return Outcome("rejoin")
        if code in (ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID):
            lost = self.lose()
            outcome = self.on_error(code)
            outcome.kind = "lost"
            outcome.lost = lost
            return outcome
        return self.on_error(code)

    def lose(self) -> set[TopicPartitionTuple]:
        """Forgets the owned partitions (they may belong to another member now) and returns them."""
        owned, self.owned = self.owned, set()
        return owned

    def on_error(self, code: int) -> Outcome:
        """What an error code from the coordinator means (Kafka's rules; module docstring)."""
        self.need_rejoin = True
        outcome = Outcome("error")
        if code in COORDINATOR_ERRORS:
            outcome.coordinator_lost = True
        elif code == ErrorCode.UNKNOWN_MEMBER_ID:
            self.member_id = ""
            self.generation = -1
        elif code == ErrorCode.ILLEGAL_GENERATION:
            self.generation = -1
        elif code == ErrorCode.FENCED_INSTANCE_ID:
            outcome.notify = KafkaError(code, "Broker: Static consumer fenced by other consumer with same "
                                              "group.instance.id", fatal=True)
            outcome.fatal = True
        elif code not in _QUIET:
            outcome.notify = KafkaError(code)
        return outcome

    # -- offsets and leaving --------------------------------------------------------------

    def commit_request(self, offsets: dict[TopicPartitionTuple, tuple[int, str | None]], in_group: bool) -> dict[str, Any]:
        """OffsetCommit; outside the group (``assign()`` consumers) with generation -1 and no member id."""
        topics: dict[str, list[dict[str, Any]]] = {}
        for (t, p), (off, meta) in offsets.items():
            topics.setdefault(t, []).append(
                {"partition_index": p, "committed_offset": off, "committed_metadata": meta})
        return {
            "group_id": self.group_id,
            "generation_id_or_member_epoch": self.generation if in_group else -1,
            "member_id": self.member_id if in_group else "",
            # v7+: a static member names its instance (a replaced instance is FENCED_INSTANCE_ID).
            "group_instance_id": self.instance_id if in_group else None,
            "retention_time_ms": -1,
            "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
        }

    def on_commit(self, response: Any) -> tuple[dict[TopicPartitionTuple, int], bool, bool]:
        """``(tp -> error code, retry?, coordinator lost?)``; a generation error asks for a rejoin."""
        result = {(t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions}
        codes = set(result.values())
        lost = bool(codes & COORDINATOR_ERRORS)
        retry = lost or ErrorCode.COORDINATOR_LOAD_IN_PROGRESS in codes
        if codes & REJOIN_ERRORS:
            self.need_rejoin = True
        return result, retry, lost

    def fetch_request(self, tps: list[TopicPartitionTuple], require_stable: bool = False) -> dict[str, Any]:
        """OffsetFetch in both shapes: one group (v1–7) and the ``groups`` batch (v8+);
        the negotiated version writes the fields it has.  ``require_stable`` (v7+, KIP-447;
        a read_committed consumer, as librdkafka and Java ask): offsets a transaction has
        yet to commit are answered UNSTABLE_OFFSET_COMMIT (ask again) instead of the older
        committed offset."""
        topics = [{"name": t, "partition_indexes": ps} for t, ps in _by_topic(tps).items()]
        return {"group_id": self.group_id, "topics": topics, "require_stable": require_stable,
                "groups": [{"group_id": self.group_id, "topics": topics}]}

    @staticmethod
    def on_fetch(response: Any) -> tuple[dict[TopicPartitionTuple, int], bool, bool]:
        """``(tp -> committed offset or -1, retry?, coordinator lost?)``."""
        groups = getattr(response, "groups", None)
        answer = groups[0] if groups else response  # v8+ answers in ``groups`` (ours is the only one)
        top = getattr(answer, "error_code", 0)
        codes = {p.error_code for t in answer.topics for p in t.partitions} | {top}
        lost = bool(codes & COORDINATOR_ERRORS)
        retry = lost or bool(codes & {ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.UNSTABLE_OFFSET_COMMIT})
        result = {(t.name, p.partition_index): (p.committed_offset if p.error_code == 0 else -1)
                  for t in answer.topics for p in t.partitions}
        return result, retry, lost

    def leave_request(self) -> dict[str, Any] | None:
        """LeaveGroup for a dynamic member that joined; None for a static one (its session
        keeps its assignment across a restart: KIP-345) or one that never joined."""
        if not self.member_id or self.instance_id is not None:
            return None
        # v0–2 name the member; v3+ list it in ``members`` (KIP-345's batch).
        return {"group_id": self.group_id, "member_id": self.member_id,
                "members": [{"member_id": self.member_id, "group_instance_id": None}]}

    def left(self) -> None:
        """After leaving: a dynamic member forgets its id; both rejoin from scratch."""
        if self.instance_id is None:
            self.member_id = ""
        self.generation = -1
        self.need_rejoin = True
