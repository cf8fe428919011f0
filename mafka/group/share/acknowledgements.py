"""The acknowledgement batches ShareFetch (78) and ShareAcknowledge (79) carry: checking them
as Kafka's ``KafkaApis.validateAcknowledgementBatches`` does, and applying the valid ones to a
share-partition (:class:`~mafka.group.share.partition_state.SharePartitionState`).

On the wire each partition of a request carries a list of ``AcknowledgementBatch``
(``FirstOffset``, ``LastOffset``, ``AcknowledgeTypes``); here each is a
:class:`~mafka.group.share.partition_state.AcknowledgementBatch`.  ``AcknowledgeTypes`` is
either one type for the whole range or one type per offset of it; the types are Kafka's
``AcknowledgeType`` ids: 0 GAP, 1 ACCEPT, 2 RELEASE, 3 REJECT, and 4 RENEW (KIP-1222: only in
version 2 of both APIs, and only when the request sets ``IsRenewAck``).

Contract:

* Validation is per partition: the first bad batch makes the whole partition
  ``INVALID_REQUEST`` and none of its batches is applied; other partitions of the request are
  unaffected.  A batch is bad when its range is reversed, it starts at or before the end of
  the batch before it (unsorted or overlapping; Kafka 4.2 lets a batch start *at* the previous
  batch's last offset, sharing one offset — Mafka refuses that too, as the share-partition
  itself does), it has no types, it has several types but not one per offset, or a type is
  outside 0..3 (0..4 from version 2), or is RENEW without ``IsRenewAck``.
* A partition with an empty list of batches is answered NONE and nothing is touched (Kafka's
  ``emptyAcknowledgements``), even where the broker has no share-partition for it.
* A valid list is applied with one call of ``SharePartitionState.acknowledge`` (which walks
  each batch offset by offset in runs of equal type, :func:`typed_ranges`); the partition's
  answer is the first error of its batches: ``INVALID_RECORD_STATE`` when the member does
  not hold one of the records (never acquired, another member's, already acknowledged, or
  its lock expired by ``now_ms``) — that batch changes nothing.
* A partition the broker has no share-partition for is ``UNKNOWN_TOPIC_OR_PARTITION``
  (Kafka's ``SharePartitionManager.acknowledge``).
* ShareFetch v2 with ``IsRenewAck`` must set ``MaxBytes``, ``MinBytes``, ``MaxRecords`` and
  ``MaxWaitMs`` to 0 (:func:`renew_fetch_error`; the whole request is INVALID_REQUEST), and
  fetches nothing.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from mafka.errors import ErrorCode
from mafka.group.share.partition_state import (
    AcknowledgementBatch,
    AcknowledgeType,
    SharePartitionState,
)

__all__ = [
    "RENEW_MIN_VERSION",
    "PartitionAcknowledgement",
    "acknowledge_partition",
    "acknowledge_partitions",
    "count_by_type",
    "renew_fetch_error",
    "typed_ranges",
    "validate_batches",
]

#: the first ShareFetch / ShareAcknowledge version that has RENEW and ``IsRenewAck`` (KIP-1222)
RENEW_MIN_VERSION = 2

_MAX_TYPE_V1 = int(AcknowledgeType.REJECT)
_MAX_TYPE_V2 = int(AcknowledgeType.RENEW)


@dataclass(frozen=True)
class PartitionAcknowledgement:
    """One partition's answer (ShareAcknowledge's ``ErrorCode``, or ShareFetch's ``AcknowledgeErrorCode``)."""

    error_code: ErrorCode = ErrorCode.NONE
    error_message: str | None = None

    @property
    def ok(self) -> bool:
        return self.error_code == ErrorCode.NONE


def validate_batches(batches: Sequence[AcknowledgementBatch], *, api_version: int, is_renew_ack: bool = False) -> ErrorCode:
    """Kafka's ``validateAcknowledgementBatches`` for one partition: NONE or INVALID_REQUEST."""
    max_type = _MAX_TYPE_V2 if api_version >= RENEW_MIN_VERSION else _MAX_TYPE_V1
    prev_last: int | None = None
    for batch in batches:
        first, last, types = batch.first_offset, batch.last_offset, batch.acknowledge_types
        if first > last:
            return ErrorCode.INVALID_REQUEST
        if prev_last is not None and first <= prev_last:
            return ErrorCode.INVALID_REQUEST
        if not types:
            return ErrorCode.INVALID_REQUEST
        if len(types) > 1 and last - first + 1 != len(types):
            return ErrorCode.INVALID_REQUEST
        if any(isinstance(t, bool) or not isinstance(t, int) or t < 0 or t > max_type for t in types):
            return ErrorCode.INVALID_REQUEST
        if not is_renew_ack and any(t == AcknowledgeType.RENEW for t in types):
            return ErrorCode.INVALID_REQUEST
        prev_last = last
    return ErrorCode.NONE


def typed_ranges(batch: AcknowledgementBatch) -> Iterator[tuple[int, int, AcknowledgeType]]:
    """A valid batch as ``(first, last, type)`` runs of consecutive offsets with one type: what
    the share-partition applies offset by offset."""
    types = batch.acknowledge_types
    if len(types) == 1:
        yield batch.first_offset, batch.last_offset, AcknowledgeType(types[0])
        return
    start = 0
    for k in range(1, len(types) + 1):
        if k == len(types) or types[k] != types[start]:
            yield batch.first_offset + start, batch.first_offset + k - 1, AcknowledgeType(types[start])
            start = k


def count_by_type(batches: Sequence[AcknowledgementBatch]) -> dict[AcknowledgeType, int]:
    """How many offsets each type acknowledges (Kafka's ``recordAcknowledgement`` metrics)."""
    counts: dict[AcknowledgeType, int] = {}
    for batch in batches:
        for first, last, ack_type in typed_ranges(batch):
            counts[ack_type] = counts.get(ack_type, 0) + last - first + 1
    return counts


def acknowledge_partition(
    state: SharePartitionState | None,
    member_id: str,
    batches: Sequence[AcknowledgementBatch],
    now_ms: int,
    *,
    api_version: int,
    is_renew_ack: bool = False,
) -> PartitionAcknowledgement:
    """Validate *batches* and apply them to *state* for *member_id* (see the module docstring).

    Args:
        state: the share-partition, or None if the broker has none for it.
        api_version: the ShareFetch / ShareAcknowledge version (RENEW needs 2).
        is_renew_ack: the request's ``IsRenewAck`` (version 2).
    """
    if validate_batches(batches, api_version=api_version, is_renew_ack=is_renew_ack) != ErrorCode.NONE:
        return PartitionAcknowledgement(ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_REQUEST.description)
    if not batches:
        return PartitionAcknowledgement()
    if state is None:
        return PartitionAcknowledgement(
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION.description
        )
    normalized = [
        AcknowledgementBatch(b.first_offset, b.last_offset, tuple(int(t) for t in b.acknowledge_types)) for b in batches
    ]
    error = state.acknowledge(member_id, normalized, now_ms).error
    if error == ErrorCode.NONE:
        return PartitionAcknowledgement()
    return PartitionAcknowledgement(error, error.description)


def acknowledge_partitions(
    states: Mapping[tuple[bytes, int], SharePartitionState],
    member_id: str,
    acknowledgements: Mapping[tuple[bytes, int], Sequence[AcknowledgementBatch]],
    now_ms: int,
    *,
    api_version: int,
    is_renew_ack: bool = False,
) -> dict[tuple[bytes, int], PartitionAcknowledgement]:
    """:func:`acknowledge_partition` for each ``(topic id, partition)`` of a request;
    *states* holds the broker's share-partitions of the group."""
    return {
        tp: acknowledge_partition(
            states.get(tp), member_id, batches, now_ms, api_version=api_version, is_renew_ack=is_renew_ack
        )
        for tp, batches in acknowledgements.items()
    }


def renew_fetch_error(*, max_wait_ms: int, min_bytes: int, max_bytes: int, max_records: int) -> str | None:
    """ShareFetch v2 with ``IsRenewAck`` (KIP-1222): Kafka's INVALID_REQUEST message when a
    fetch limit is not 0, else None."""
    message = ""
    if max_bytes != 0:
        message += "maxBytes must be set to 0, "
    if min_bytes != 0:
        message += "minBytes must be set to 0, "
    if max_records != 0:
        message += "maxRecords must be set to 0, "
    if max_wait_ms != 0:
        message += "maxWaitMs must be set to 0, "
    return message + "if isRenewAck is true." if message else None
