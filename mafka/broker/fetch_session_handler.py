"""The fetcher's side of an incremental fetch session (KIP-227), as Kafka's ``FetchSessionHandler``.

One handler per leader a fetcher talks to.  Each round the fetcher says
which partitions it wants and from where (:meth:`FetchSessionHandler.build`);
the handler answers what to put in the request: the session id and epoch,
the partitions to send (all of them on a full fetch; only new or changed
ones on an incremental fetch) and the partitions to forget.  The response
goes back through :meth:`handle_response`, which moves the session on, or
:meth:`handle_error` when the request failed.  Partitions absent from an
incremental response simply had nothing new.

Plain Python; the caller owns the I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mafka.errors import ErrorCode
from mafka.topics import TopicPartitionTuple

from .fetch_session import FINAL_EPOCH, INITIAL_EPOCH, INVALID_SESSION_ID, next_epoch

__all__ = ["PartitionFetchState", "FetchRequestData", "FetchSessionHandler"]


@dataclass(frozen=True, slots=True)
class PartitionFetchState:
    """What a fetch asks of one partition; a change of any field is sent again."""

    fetch_offset: int
    log_start_offset: int
    max_bytes: int
    current_leader_epoch: int


@dataclass(frozen=True, slots=True)
class FetchRequestData:
    session_id: int
    session_epoch: int
    to_send: dict[TopicPartitionTuple, PartitionFetchState]
    to_forget: list[TopicPartitionTuple]

    @property
    def is_full(self) -> bool:
        return self.session_epoch in (INITIAL_EPOCH, FINAL_EPOCH)


class FetchSessionHandler:
    """Tracks one session with one leader.  See the module docstring."""

    def __init__(self) -> None:
        self.session_id = INVALID_SESSION_ID
        self.epoch = INITIAL_EPOCH
        self.partitions: dict[TopicPartitionTuple, PartitionFetchState] = {}
        self._last: FetchRequestData | None = None

    def build(self, wanted: Mapping[TopicPartitionTuple, PartitionFetchState]) -> FetchRequestData:
        """The request for fetching *wanted* (insertion order is kept)."""
        if self.epoch == INITIAL_EPOCH:
            self.partitions = dict(wanted)
            data = FetchRequestData(self.session_id, INITIAL_EPOCH, dict(wanted), [])
        else:
            known = self.partitions
            # ``is`` first: the fetcher hands back the same state object while nothing changed.
            to_send = {tp: s for tp, s in wanted.items() if (k := known.get(tp)) is not s and k != s}
            to_forget = [tp for tp in self.partitions if tp not in wanted]
            self.partitions = dict(wanted)
            data = FetchRequestData(self.session_id, self.epoch, to_send, to_forget)
        self._last = data
        return data

    @property
    def incremental(self) -> bool:
        """The next request is incremental: a session is open and its partitions are known."""
        return self.epoch not in (INITIAL_EPOCH, FINAL_EPOCH) and self.session_id != INVALID_SESSION_ID

    def build_update(self, changed: Mapping[TopicPartitionTuple, PartitionFetchState]) -> FetchRequestData:
        """An incremental request for the session's partitions with only *changed* states moved.

        For a fetcher that wants exactly the partitions of the last request again: the cost is that of
        *changed*, not of the session (at 30,000 followed partitions, diffing every one on every idle
        fetch was most of a follower's idle work).  Only while :attr:`incremental`.
        """
        if not self.incremental:
            raise ValueError("build_update needs an open session")
        known = self.partitions
        to_send = {tp: s for tp, s in changed.items() if known.get(tp) != s}
        known.update(to_send)
        data = FetchRequestData(self.session_id, self.epoch, to_send, [])
        self._last = data
        return data

    def handle_response(self, error_code: int, session_id: int) -> bool:
        """Moves the session on after a response; False if the response's partitions are not to be used."""
        last = self._last
        self._last = None
        if error_code != ErrorCode.NONE:
            if error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND:
                self.session_id = INVALID_SESSION_ID
            self.epoch = INITIAL_EPOCH  # next: a full fetch (closing the old session if any)
            return False
        if session_id == INVALID_SESSION_ID:
            self.session_id, self.epoch = INVALID_SESSION_ID, INITIAL_EPOCH
        elif last is not None and last.is_full:
            self.session_id, self.epoch = session_id, next_epoch(INITIAL_EPOCH)
        else:
            self.epoch = next_epoch(self.epoch)
        return True

    def handle_error(self) -> None:
        """The request failed (timeout, lost connection): start over with a full fetch."""
        self._last = None
        self.epoch = INITIAL_EPOCH
