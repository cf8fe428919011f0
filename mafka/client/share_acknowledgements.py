"""A share consumer's acknowledgement bookkeeping (KIP-932), as plain state: no I/O.

:class:`AcknowledgementBook` knows which records the application holds (handed out by ``poll``,
not yet acknowledged) and which acknowledgements wait to be sent, per partition and per broker:
an acknowledgement goes to the broker whose share session acquired the record, in the next
ShareFetch to it or in a ShareAcknowledge (``commit_sync`` / ``commit_async``).

Contract (Kafka's ``KafkaShareConsumer``):

* ``implicit`` mode: the records one ``poll`` returned are ACCEPTed by the next ``poll`` or
  commit (:meth:`AcknowledgementBook.accept_held`); ``acknowledge`` is refused.
* ``explicit`` mode: each record is acknowledged with :meth:`acknowledge` (ACCEPT, RELEASE or
  REJECT, the last one given before it is sent wins); a ``poll`` while records of the previous one
  are unacknowledged is refused (:meth:`check_poll`).
* Offsets the broker acquired that hold no record for the application (a compacted-away offset)
  are acknowledged as GAP (0) without the application seeing them.
* :func:`acknowledgement_batches` turns offsets and types into the wire's
  ``AcknowledgementBatches``: runs of consecutive offsets, ascending, never overlapping; a run of
  one type carries that type once, a mixed run one type per offset.

Errors are :class:`IllegalStateError` (confluent-kafka's ``IllegalStateException``: a
``RuntimeError``).
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Iterable, Mapping

from mafka.topics import TopicPartitionTuple

__all__ = [
    "AcknowledgeType",
    "AcknowledgementBook",
    "GAP",
    "IllegalStateError",
    "IllegalStateException",
    "PendingAcknowledgements",
    "acknowledgement_batches",
]

#: Kafka's ``AcknowledgeType`` id for an offset that holds no record (never given by applications).
GAP = 0


class AcknowledgeType(enum.IntEnum):
    """How the broker should treat an acknowledged record (Kafka's and confluent-kafka's ids)."""

    ACCEPT = 1
    RELEASE = 2
    REJECT = 3


class IllegalStateError(RuntimeError):
    """A call the consumer's state does not allow (confluent-kafka's ``IllegalStateException``)."""


#: confluent-kafka's name for it.
IllegalStateException = IllegalStateError


#: Acknowledgements waiting to be sent: partition -> offset -> type.
PendingAcknowledgements = dict[TopicPartitionTuple, dict[int, int]]


def acknowledgement_batches(acks: Mapping[int, int]) -> list[dict[str, object]]:
    """``offset -> type`` as ShareFetch/ShareAcknowledge ``AcknowledgementBatches``."""
    out: list[dict[str, object]] = []
    run: list[tuple[int, int]] = []

    def close_run() -> None:
        types = [t for _, t in run]
        uniform = all(t == types[0] for t in types)
        out.append({"first_offset": run[0][0], "last_offset": run[-1][0],
                    "acknowledge_types": [types[0]] if uniform else types})

    for offset in sorted(acks):
        if run and offset != run[-1][0] + 1:
            close_run()
            run = []
        run.append((offset, acks[offset]))
    if run:
        close_run()
    return out


class AcknowledgementBook:
    """Held records and pending acknowledgements of one share consumer.

    Thread-safe: the application's thread acknowledges while the client's loop sends.

    Args:
        explicit: ``share.acknowledgement.mode=explicit``.
    """

    def __init__(self, explicit: bool) -> None:
        self.explicit = explicit
        self._lock = threading.Lock()
        #: records the application holds: partition -> offset -> the broker that acquired it
        self._held: dict[TopicPartitionTuple, dict[int, int]] = {}
        #: acknowledgements to send: broker -> partition -> offset -> type
        self._pending: dict[int, PendingAcknowledgements] = {}

    # -- records handed out ----------------------------------------------------------------

    def delivered(self, node: int, tp: TopicPartitionTuple, offsets: Iterable[int]) -> None:
        """The application was given these records of ``tp``, acquired through ``node``."""
        with self._lock:
            held = self._held.setdefault(tp, {})
            for offset in offsets:
                held[offset] = node

    def gaps(self, node: int, tp: TopicPartitionTuple, offsets: Iterable[int]) -> None:
        """Acquired offsets without a record for the application: acknowledged as GAP."""
        with self._lock:
            pending = self._pending.setdefault(node, {}).setdefault(tp, {})
            for offset in offsets:
                pending[offset] = GAP

    def held_count(self, node: int | None = None) -> int:
        """Records the application holds unacknowledged (through ``node``, or any)."""
        with self._lock:
            if node is None:
                return sum(len(h) for h in self._held.values())
            return sum(1 for h in self._held.values() for n in h.values() if n == node)

    def holds(self, tp: TopicPartitionTuple, offset: int) -> bool:
        with self._lock:
            return offset in self._held.get(tp, {})

    # -- acknowledging ---------------------------------------------------------------------

    def check_poll(self) -> None:
        """Before a poll: implicit mode accepts what the last poll returned; explicit mode refuses
        to poll while any of it is unacknowledged.

        Raises:
            IllegalStateError: explicit mode with records unacknowledged.
        """
        with self._lock:
            if not self.explicit:
                self._accept_held()
            elif any(self._held.values()):
                n = sum(len(h) for h in self._held.values())
                raise IllegalStateError(f"All records must be acknowledged in explicit acknowledgement mode "
                                        f"before the next poll: {n} are not")

    def accept_held(self) -> None:
        """Every held record ACCEPTed (implicit mode, before a poll, a commit or close)."""
        with self._lock:
            self._accept_held()

    def _accept_held(self) -> None:
        for tp, held in self._held.items():
            for offset, node in held.items():
                self._pending.setdefault(node, {}).setdefault(tp, {})[offset] = AcknowledgeType.ACCEPT
        self._held.clear()

    def acknowledge(self, tp: TopicPartitionTuple, offset: int, ack_type: int) -> int:
        """Explicit mode: ``tp``'s record at ``offset`` acknowledged with ``ack_type``; returns the
        broker it goes to.

        Raises:
            IllegalStateError: implicit mode, or the record is not held (never delivered, already
                acknowledged and sent, or its partition was dropped).
            ValueError: ``ack_type`` is not ACCEPT, RELEASE or REJECT.
        """
        with self._lock:
            if not self.explicit:
                raise IllegalStateError("acknowledge() is only for share.acknowledgement.mode=explicit")
            if ack_type not in (1, 2, 3):
                raise ValueError(f"invalid acknowledge type {ack_type}: ACCEPT (1), RELEASE (2) or REJECT (3)")
            held = self._held.get(tp)
            node = None if held is None else held.pop(offset, None)
            if node is None:
                raise IllegalStateError(f"{tp[0]}-{tp[1]} offset {offset} is not in flight: it was not delivered "
                                        f"by the last poll, or is acknowledged already")
            if not held:
                self._held.pop(tp, None)
            self._pending.setdefault(node, {}).setdefault(tp, {})[offset] = int(ack_type)
            return node

    # -- sending ---------------------------------------------------------------------------

    def pending_nodes(self) -> list[int]:
        with self._lock:
            return [n for n, acks in self._pending.items() if any(acks.values())]

    def has_pending(self, node: int) -> bool:
        with self._lock:
            return any(self._pending.get(node, {}).values())

    def take(self, node: int, tps: Iterable[TopicPartitionTuple] | None = None) -> PendingAcknowledgements:
        """Removes and returns ``node``'s pending acknowledgements (of ``tps`` only, if given)."""
        with self._lock:
            pending = self._pending.get(node)
            if not pending:
                return {}
            if tps is None:
                self._pending.pop(node, None)
                return {tp: acks for tp, acks in pending.items() if acks}
            out = {tp: pending.pop(tp) for tp in list(tps) if pending.get(tp)}
            if not pending:
                self._pending.pop(node, None)
            return out
