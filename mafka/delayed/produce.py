"""The produce side of delayed messages: does this batch ask for delay, and if so, its envelope.

Per batch: the header says whether the batch can be delayed at all; one
substring search over its (decompressed) records says whether a record may
carry a delay header.  Only then are the records decoded (and the topic's
default delay makes every batch of the topic a candidate).
"""

from __future__ import annotations

from mafka.errors import ErrorCode
from mafka.log.validation import RecordValidationError
from mafka.wire.batch import BATCH_HEADER_SIZE, BatchHeader
from mafka.wire.compression import CompressionType, decompress
from mafka.wire.records import Record, decode_batch

from .envelope import envelope_batch
from .headers import DelayHeaderError, due_times, half_group, may_ask_for_delay

__all__ = ["DelaySettings", "envelope_if_delayed"]


class DelaySettings:
    """A topic's delay settings: ``mafka.delay.ms`` (default delay) and ``mafka.delay.max.ms``."""

    __slots__ = ("default_delay_ms", "max_delay_ms")

    def __init__(self, default_delay_ms: int = 0, max_delay_ms: int = 7 * 24 * 3_600_000) -> None:
        self.default_delay_ms = default_delay_ms
        self.max_delay_ms = max_delay_ms


def envelope_if_delayed(records: bytes | memoryview, header: BatchHeader, settings: DelaySettings, *,
                        now_ms: int) -> bytes | None:
    """The envelope holding this validated produce batch until due, or None to append it as it is.

    None when no record asks for delay (and the topic has none) or every
    record is already due.

    Raises:
        RecordValidationError: INVALID_RECORD naming each record whose delay
            header is unusable, or a transactional batch asking for delay.
    """
    if header.is_control:
        return None
    if settings.default_delay_ms <= 0:
        payload = memoryview(records)[BATCH_HEADER_SIZE:header.size]
        if header.compression != CompressionType.NONE:
            payload = memoryview(decompress(header.compression, payload))
        if not may_ask_for_delay(payload):
            return None
    decoded = decode_batch(records, verify_crc=False)
    if header.is_transactional:
        raise RecordValidationError(ErrorCode.INVALID_RECORD, "Delayed records cannot be produced in a transaction",
                                    [(0, "a transactional batch may not ask for delay")])
    plain = [r for r in decoded.records if isinstance(r, Record)]
    if half_group(plain) is not None:
        # A local-transaction half message: held until its producer (or a check-back) resolves it.
        return envelope_batch(records, [now_ms] * len(plain), half=True)
    try:
        due = due_times(plain, now_ms=now_ms,
                        default_delay_ms=settings.default_delay_ms, max_delay_ms=settings.max_delay_ms)
    except DelayHeaderError as exc:
        raise RecordValidationError(ErrorCode.INVALID_RECORD, "One or more records have been rejected",
                                    exc.errors) from None
    if all(d <= now_ms for d in due):
        return None
    return envelope_batch(records, due)
