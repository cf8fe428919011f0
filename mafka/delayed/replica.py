"""A partition replica's side of delayed messages: its :class:`~.index.DelayIndex`, fed from its log.

The :class:`~mafka.broker.partition.Partition` calls :meth:`DelayedReplica.note`
for every batch it appends, as leader or follower; :meth:`note` recognises
envelopes and deliveries from their headers (control and not transactional;
non-idempotent and uncompressed with the delivery header) and keeps the index.
The index lives in ``<partition dir>/delayed/``; a partition that never held
an envelope has none, and costs nothing but the header checks.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from mafka.wire.batch import BatchHeader, iter_batches
from mafka.wire.compression import CompressionType
from mafka.wire.errors import ProtocolError

from .envelope import (
    CANCEL_TYPE,
    Envelope,
    mafka_control_type,
    read_cancel,
    read_delivery,
    read_envelope,
)
from .index import DelayIndex

__all__ = ["DelayedReplica", "DIRECTORY"]

logger = logging.getLogger(__name__)

DIRECTORY = "delayed"


def _may_matter(h: BatchHeader) -> bool:
    if h.is_control:
        return not h.is_transactional
    return h.producer_id < 0 and h.compression == CompressionType.NONE


class DelayedReplica:
    """The delay index of one replica, kept from the batches it appends."""

    def __init__(self, log_directory: Path) -> None:
        self.index = DelayIndex(log_directory / DIRECTORY, now_ms=0)

    @classmethod
    def open_if_present(cls, log: Any) -> DelayedReplica | None:
        """The replica's index if its directory exists, brought up to the log's end; else None."""
        if not (log.directory / DIRECTORY).is_dir():
            return None
        replica = cls(log.directory)
        replica.recover(log)
        return replica

    def recover(self, log: Any) -> None:
        """Forgets what lies past the log's end, re-reads the log from the last index checkpoint, counts."""
        idx = self.index
        end = log.next_offset
        idx.truncate(end)
        start = max(idx.indexed_offset(), log.log_start_offset)
        fed = 0
        for seg, bp, h in log.headers_from(start):
            if _may_matter(h):
                fed += self.note(os.pread(seg.fd, bp.size, bp.position), 0, h, bp.base_offset)
        idx.open()
        if fed:
            logger.info("%s: delay index re-read %d envelopes and deliveries from offset %d", log.directory.name,
                        fed, start)

    def note(self, buf: bytes | memoryview, pos: int, header: BatchHeader, base_offset: int) -> int:
        """Indexes the batch at ``pos`` (now at ``base_offset`` in the log) if it is an envelope or a delivery."""
        if not _may_matter(header):
            return 0
        try:
            if header.is_control:
                kind = mafka_control_type(buf, pos, header)
                if kind is None:
                    return 0
                if kind == CANCEL_TYPE:  # a rolled-back half message: resolved, never delivered
                    cancel = read_cancel(buf, pos, header)
                    if cancel is not None:
                        self.index.delivery_appended(cancel.due_ms, cancel.original_offset, base_offset, cancel.count,
                                                     cancelled=True)
                    return 1
                env: Envelope = read_envelope(memoryview(buf)[pos:pos + header.size])
                self.index.envelope_appended(base_offset, [(g.due_ms, g.first_delta, len(g.deltas))
                                                           for g in env.groups()], half=env.half)
                return 1
            delivery = read_delivery(buf, pos, header)
            if delivery is None:
                return 0
            self.index.delivery_appended(delivery.due_ms, delivery.original_offset, base_offset, delivery.count)
            return 1
        except ProtocolError as exc:  # the log took it; an unreadable envelope cannot be delivered
            logger.error("%s: unreadable delayed-message batch at offset %d: %s", self.index.directory, base_offset,
                         exc)
            return 0

    def note_all(self, buf: bytes | memoryview, end: int | None = None) -> None:
        """Indexes every whole batch of a follower's append (offsets as the leader assigned them)."""
        view = memoryview(buf)
        for pos, h in iter_batches(view if end is None else view[:end]):
            if _may_matter(h):
                self.note(view, pos, h, h.base_offset)
