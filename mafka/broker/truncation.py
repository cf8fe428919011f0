"""Where a new follower truncates its log: by leader epoch (KIP-101, KIP-279), never by HW alone.

Plain Python: the replica fetcher asks the leader OffsetForLeaderEpoch for
the follower's latest epoch and feeds the answer here (Kafka 2.8's
``AbstractFetcherThread.getOffsetTruncationState``).

Worked examples (``shared/reference/zk-controller-replication.md`` §4.6):

* the leader answers with the epoch the follower asked for → truncate to
  min(leader's end offset, own end of that epoch, own LEO); done;
* the follower does not know the leader's answering epoch (it has a smaller
  one) → truncate to the end of its largest epoch below that, and ask again;
* the follower knows no epoch at or below it → min(leader's end, own LEO);
* the leader knows no such epoch (−1, −1) → truncate to the HW.
"""

from __future__ import annotations

from dataclasses import dataclass

from mafka.log.epoch_cache import LeaderEpochCache

__all__ = ["TruncationState", "truncation_for"]

UNDEFINED = -1


@dataclass(frozen=True, slots=True)
class TruncationState:
    """Truncate to :attr:`offset`; ask the leader again unless :attr:`complete`."""

    offset: int
    complete: bool


def truncation_for(
    cache: LeaderEpochCache, log_end_offset: int, high_watermark: int, leader_epoch: int, leader_end_offset: int
) -> TruncationState:
    """The truncation a follower makes for the leader's answer (*leader_epoch*, *leader_end_offset*).

    Args:
        cache: the follower's own leader-epoch cache.
        log_end_offset: the follower's log end offset.
        high_watermark: the follower's high watermark.
        leader_epoch, leader_end_offset: the leader's OffsetForLeaderEpoch answer.
    """
    if leader_end_offset == UNDEFINED:
        return TruncationState(min(high_watermark, log_end_offset), True)
    if leader_epoch == UNDEFINED:
        return TruncationState(min(leader_end_offset, log_end_offset), True)
    own_epoch, own_end = cache.end_offset_for(leader_epoch, log_end_offset)
    if own_end == UNDEFINED:
        return TruncationState(min(leader_end_offset, log_end_offset), True)
    if own_epoch != leader_epoch:
        return TruncationState(min(own_end, log_end_offset), False)
    return TruncationState(min(own_end, leader_end_offset, log_end_offset), True)
