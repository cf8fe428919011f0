"""Share sessions (KIP-932): what ShareFetch (78) and ShareAcknowledge (79) remember between
requests, as Kafka 4.2's ``ShareSessionCache`` / ``ShareSession`` and the session half of
``SharePartitionManager`` keep it.  Plain Python: no sockets, no locks, no clock.

A share consumer keeps one *share session* with each broker it fetches from, keyed by
(group id, member id).  The session holds the share-partitions the member is fetching, so a
request need only name what changed, and an epoch that orders the requests.

Contract (every refusal is a :class:`~mafka.errors.KafkaError` of Kafka's code, raised before
anything changes):

* ``ShareSessionEpoch`` 0 (:data:`INITIAL_EPOCH`) opens a session holding exactly the request's
  partitions, replacing (removing first) any session the member has; the next request must
  carry epoch 1.  Acknowledgements in that request are INVALID_REQUEST (there is nothing to
  acknowledge yet).  When ``group.share.max.share.sessions`` sessions exist (the member's own
  old one not counted), SHARE_SESSION_LIMIT_REACHED.
* Any other epoch >= 1 must equal the session's next expected epoch, else
  INVALID_SHARE_SESSION_EPOCH; no session for the member is SHARE_SESSION_NOT_FOUND.  A
  ShareFetch adds its partitions (``Topics``) and removes ``ForgottenTopicsData`` from the
  session, and fetches from every partition the session then holds.  The expected epoch then
  moves on (wrapping from 2**31-1 to 1, as Kafka's ``nextEpoch``).
* Epoch -1 (:data:`FINAL_EPOCH`) is the member's last request: the session must exist
  (SHARE_SESSION_NOT_FOUND); a ShareFetch fetches nothing; its acknowledgements are applied,
  then the caller closes the session with :meth:`ShareSessionCache.release_session`, which
  returns the partitions whose records the member still holds, to be released.
* ShareAcknowledge (:meth:`ShareSessionCache.acknowledge_session_update`) never opens a
  session: epoch 0 is INVALID_SHARE_SESSION_EPOCH; otherwise the same epoch rules, without
  changing the partitions.
* A session goes when its member leaves or is fenced from the group
  (:meth:`ShareSessionCache.remove_member`; Kafka removes it only on disconnect or final
  epoch, Mafka's broker also calls this), when its connection closes
  (:meth:`ShareSessionCache.on_disconnect`, Kafka's ``ClientConnectionDisconnectListener``: a
  connection whose session was already replaced from another connection removes nothing), or
  on a final epoch.
* Partitions are ``(topic id, partition)`` pairs, kept in the order they were added (Kafka's
  ``ImplicitLinkedHashCollection``).
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Iterable
from dataclasses import dataclass

from mafka.errors import (
    ConfigError,
    InvalidRequestError,
    InvalidShareSessionEpochError,
    ShareSessionLimitReachedError,
    ShareSessionNotFoundError,
)

__all__ = [
    "DEFAULT_MAX_SHARE_SESSIONS",
    "FINAL_EPOCH",
    "INITIAL_EPOCH",
    "ShareFetchContext",
    "ShareFetchContextKind",
    "ShareSession",
    "ShareSessionCache",
    "ShareSessionKey",
    "TopicIdPartition",
    "next_epoch",
]

log = logging.getLogger("mafka.group.share.sessions")

#: ``ShareSessionEpoch`` that opens a session
INITIAL_EPOCH = 0
#: ``ShareSessionEpoch`` that closes one
FINAL_EPOCH = -1
#: ``group.share.max.share.sessions`` (Kafka's default)
DEFAULT_MAX_SHARE_SESSIONS = 2000

_MAX_INT32 = 2**31 - 1

#: a share-partition as ShareFetch names it: (topic id, partition index)
TopicIdPartition = tuple[bytes, int]


def next_epoch(epoch: int) -> int:
    """Kafka's ``ShareRequestMetadata.nextEpoch``: +1, wrapping to 1; a final epoch stays final."""
    if epoch < 0:
        return FINAL_EPOCH
    if epoch == _MAX_INT32:
        return 1
    return epoch + 1


@dataclass(frozen=True)
class ShareSessionKey:
    group_id: str
    member_id: str


class ShareSession:
    """One member's share session: its partitions (in the order added) and its next epoch."""

    __slots__ = ("_partitions", "connection_id", "epoch", "key")

    def __init__(self, key: ShareSessionKey, partitions: Iterable[TopicIdPartition], epoch: int, connection_id: str) -> None:
        self.key = key
        self._partitions: dict[TopicIdPartition, None] = dict.fromkeys(partitions)
        #: the epoch the member's next request must carry
        self.epoch = epoch
        self.connection_id = connection_id

    @property
    def partitions(self) -> tuple[TopicIdPartition, ...]:
        return tuple(self._partitions)

    def __len__(self) -> int:
        return len(self._partitions)

    def update(
        self, fetch: Iterable[TopicIdPartition], forget: Iterable[TopicIdPartition]
    ) -> tuple[tuple[TopicIdPartition, ...], tuple[TopicIdPartition, ...], tuple[TopicIdPartition, ...]]:
        """Kafka's ``ShareSession.update``: add *fetch*, remove *forget*; returns (added,
        updated — already there —, removed)."""
        added: list[TopicIdPartition] = []
        updated: list[TopicIdPartition] = []
        removed: list[TopicIdPartition] = []
        for tp in fetch:
            if tp in self._partitions:
                updated.append(tp)
            else:
                self._partitions[tp] = None
                added.append(tp)
        for tp in forget:
            if self._partitions.pop(tp, False) is None:
                removed.append(tp)
        return tuple(added), tuple(updated), tuple(removed)

    def __repr__(self) -> str:
        return f"ShareSession(key={self.key}, partitions={len(self)}, epoch={self.epoch}, connection={self.connection_id!r})"


@dataclass
class _Connection:
    """Kafka's ``SessionKeyAndState``: the session a connection opened, and whether that
    session was removed (or replaced) before the connection closed."""

    key: ShareSessionKey
    stale: bool = False


class ShareFetchContextKind(enum.Enum):
    """Which of Kafka's ``ShareFetchContext`` a ShareFetch got."""

    #: epoch 0: a new session (Kafka's ``ShareSessionContext``, not subsequent)
    NEW_SESSION = "new"
    #: an epoch >= 1 of an existing session (``ShareSessionContext``, subsequent)
    SUBSEQUENT = "subsequent"
    #: epoch -1: the member's last request, nothing is fetched (``FinalContext``)
    FINAL = "final"


@dataclass(frozen=True)
class ShareFetchContext:
    """What :meth:`ShareSessionCache.new_context` decided for one ShareFetch.

    Attributes:
        kind: new session, subsequent request, or final request.
        key: the session's key.
        request_epoch: the request's ``ShareSessionEpoch``.
        partitions: the share-partitions to fetch from: the request's for a new session, all
            the session holds (after the update) for a subsequent request, none for a final one.
        added, updated, removed: what a subsequent request changed in the session.
    """

    kind: ShareFetchContextKind
    key: ShareSessionKey
    request_epoch: int
    partitions: tuple[TopicIdPartition, ...] = ()
    added: tuple[TopicIdPartition, ...] = ()
    updated: tuple[TopicIdPartition, ...] = ()
    removed: tuple[TopicIdPartition, ...] = ()


class ShareSessionCache:
    """Kafka's ``ShareSessionCache`` plus ``SharePartitionManager.newContext`` /
    ``acknowledgeSessionUpdate`` / ``releaseSession`` (see the module docstring).

    Args:
        max_entries: ``group.share.max.share.sessions``.
    """

    def __init__(self, max_entries: int = DEFAULT_MAX_SHARE_SESSIONS) -> None:
        if isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 1:
            raise ConfigError(
                f"Invalid value {max_entries} for configuration group.share.max.share.sessions: "
                "Value must be at least 1"
            )
        self._max_entries = max_entries
        self._sessions: dict[ShareSessionKey, ShareSession] = {}
        # connection id → [session key, stale]: a session removed (or replaced) before its
        # connection closed is stale, so that the close does not remove its successor.
        self._connections: dict[str, _Connection] = {}

    # ------------------------------------------------------------------ views

    def __len__(self) -> int:
        return len(self._sessions)

    @property
    def total_partitions(self) -> int:
        """Share-partitions held by all sessions (Kafka's ``SharePartitionsCount`` gauge)."""
        return sum(len(s) for s in self._sessions.values())

    def get(self, group_id: str, member_id: str) -> ShareSession | None:
        return self._sessions.get(ShareSessionKey(group_id, member_id))

    def members(self, group_id: str) -> int:
        """How many members of *group_id* have a session here."""
        return sum(1 for k in self._sessions if k.group_id == group_id)

    # ------------------------------------------------------------------ requests

    def new_context(
        self,
        group_id: str,
        member_id: str,
        share_session_epoch: int,
        fetch: Iterable[TopicIdPartition] = (),
        forget: Iterable[TopicIdPartition] = (),
        *,
        has_acknowledgements: bool = False,
        connection_id: str = "",
    ) -> ShareFetchContext:
        """Kafka's ``SharePartitionManager.newContext`` for one ShareFetch.

        Args:
            fetch: the partitions of the request's ``Topics``.
            forget: the partitions of its ``ForgottenTopicsData``.
            has_acknowledgements: whether any partition of the request carries acknowledgement batches.
            connection_id: the client connection (for :meth:`on_disconnect`).

        Raises:
            InvalidRequestError: acknowledgements in a request opening a session.
            ShareSessionNotFoundError: no session for the member (epoch -1 or >= 1).
            InvalidShareSessionEpochError: the epoch is not the one the session expects.
            ShareSessionLimitReachedError: ``group.share.max.share.sessions`` sessions exist.
        """
        key = ShareSessionKey(group_id, member_id)
        fetch = tuple(fetch)
        if share_session_epoch == FINAL_EPOCH:
            if key not in self._sessions:
                log.debug("Share session error for %s: no such share session found", key)
                raise ShareSessionNotFoundError("The share session was not found.")
            return ShareFetchContext(ShareFetchContextKind.FINAL, key, share_session_epoch)
        if share_session_epoch == INITIAL_EPOCH:
            if has_acknowledgements:
                raise InvalidRequestError(
                    f"Acknowledge data present in Initial Fetch Request for group {group_id} member {member_id}"
                )
            old = self._sessions.get(key)
            if old is not None:
                self._remove(old)
            if len(self._sessions) >= self._max_entries:
                raise ShareSessionLimitReachedError("The limit of share sessions has been reached.")
            session = ShareSession(key, fetch, next_epoch(INITIAL_EPOCH), connection_id)
            self._sessions[key] = session
            self._connections[connection_id] = _Connection(key)
            return ShareFetchContext(ShareFetchContextKind.NEW_SESSION, key, share_session_epoch, session.partitions)
        session = self._expect(key, share_session_epoch)
        added, updated, removed = session.update(fetch, forget)
        session.epoch = next_epoch(session.epoch)
        return ShareFetchContext(
            ShareFetchContextKind.SUBSEQUENT, key, share_session_epoch, session.partitions, added, updated, removed
        )

    def acknowledge_session_update(self, group_id: str, member_id: str, share_session_epoch: int) -> None:
        """Kafka's ``acknowledgeSessionUpdate`` for one ShareAcknowledge.

        Raises:
            InvalidShareSessionEpochError: epoch 0, or not the epoch the session expects.
            ShareSessionNotFoundError: no session for the member.
        """
        if share_session_epoch == INITIAL_EPOCH:
            raise InvalidShareSessionEpochError("The share session epoch is invalid.")
        key = ShareSessionKey(group_id, member_id)
        if share_session_epoch == FINAL_EPOCH:
            if key not in self._sessions:
                raise ShareSessionNotFoundError("The share session was not found.")
            return  # the caller releases the session once the acknowledgements are applied
        session = self._expect(key, share_session_epoch)
        session.epoch = next_epoch(session.epoch)

    def release_session(self, group_id: str, member_id: str) -> tuple[TopicIdPartition, ...]:
        """Kafka's ``releaseSession`` (after a final-epoch request): the session is removed;
        returns its partitions, whose records *member_id* holds are to be released.

        Raises:
            ShareSessionNotFoundError: no session for the member.
        """
        session = self._sessions.get(ShareSessionKey(group_id, member_id))
        if session is None:
            raise ShareSessionNotFoundError("The share session was not found.")
        self._remove(session)
        return session.partitions

    # ------------------------------------------------------------------ removal

    def remove_member(self, group_id: str, member_id: str) -> ShareSession | None:
        """The member left or was fenced: its session (returned, if it had one) goes."""
        session = self._sessions.get(ShareSessionKey(group_id, member_id))
        if session is not None:
            self._remove(session)
        return session

    def remove_group(self, group_id: str) -> list[ShareSession]:
        """Every session of *group_id* goes (the group was deleted)."""
        gone = [s for k, s in self._sessions.items() if k.group_id == group_id]
        for session in gone:
            self._remove(session)
        return gone

    def on_disconnect(self, connection_id: str) -> ShareSession | None:
        """Kafka's ``ClientConnectionDisconnectListener``: the connection closed; its session
        goes unless it was already removed or replaced.  Returns the removed session, whose
        member's records are to be released (Kafka's ``onMemberLeave``)."""
        entry = self._connections.pop(connection_id, None)
        if entry is None:
            return None
        if entry.stale:
            return None
        session = self._sessions.get(entry.key)
        if session is not None:
            self._remove(session)
        return session

    def remove_all(self) -> None:
        """Kafka's ``removeAllSessions`` (share groups were turned off)."""
        for session in list(self._sessions.values()):
            self._remove(session)

    # ------------------------------------------------------------------ internals

    def _expect(self, key: ShareSessionKey, epoch: int) -> ShareSession:
        session = self._sessions.get(key)
        if session is None:
            log.debug("Share session error for %s: no such share session found", key)
            raise ShareSessionNotFoundError("The share session was not found.")
        if session.epoch != epoch:
            log.debug("Share session error for %s: expected epoch %d, but got %d instead", key, session.epoch, epoch)
            raise InvalidShareSessionEpochError("The share session epoch is invalid.")
        return session

    def _remove(self, session: ShareSession) -> None:
        if self._sessions.get(session.key) is session:
            del self._sessions[session.key]
            entry = self._connections.get(session.connection_id)
            if entry is not None and entry.key == session.key:
                entry.stale = True  # its connection closing must not remove a successor
