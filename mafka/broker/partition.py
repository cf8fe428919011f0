"""A partition replica on this broker: its log, its role, its high watermark.

Plain Python (Kafka's ``cluster/Partition.scala``): no network, no
ZooKeeper.  The controller's LeaderAndIsr makes it leader or follower; as
leader it appends producers' batches (assigning offsets, de-duplicating
idempotent producers) and serves reads up to the high watermark.

High watermark = the minimum log end offset over the leader and the ISR's
followers, never decreasing.  With an ISR of one (single-replica partitions
in this issue) that is the leader's log end offset after every append; the
replication issue feeds follower offsets through :meth:`update_follower`.
"""

from __future__ import annotations

from dataclasses import dataclass

from mafka.errors import (
    ErrorCode,
    FencedLeaderEpochError,
    KafkaError,
    NotLeaderOrFollowerError,
    UnknownLeaderEpochError,
)
from mafka.log.log import FetchDataInfo, Log, LogAppendInfo
from mafka.wire.batch import BatchHeader, iter_batches

from .producer_state import ProducerStateManager

__all__ = ["Partition", "LeaderState", "ReadResult"]


@dataclass(frozen=True, slots=True)
class LeaderState:
    """What a LeaderAndIsr said about a partition."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    zk_version: int
    controller_epoch: int


@dataclass(frozen=True, slots=True)
class ReadResult:
    """A read's data and the offsets a Fetch response reports."""

    data: FetchDataInfo
    high_watermark: int
    log_start_offset: int
    log_end_offset: int


class Partition:
    """One topic-partition replica hosted here.

    Args:
        topic, index: the partition.
        broker_id: this broker.
        log: its log (opened by the log manager).
    """

    def __init__(self, topic: str, index: int, broker_id: int, log: Log) -> None:
        self.topic = topic
        self.index = index
        self.broker_id = broker_id
        self.log = log
        self.state: LeaderState | None = None
        self.high_watermark = 0
        self.follower_offsets: dict[int, int] = {}
        self.producers = ProducerStateManager(f"{topic}-{index}")
        self._load_producer_state()

    # ------------------------------------------------------------------ idempotent producers

    def _load_producer_state(self) -> None:
        """Latest snapshot, then the idempotent batches appended after it (Kafka's rebuild)."""
        log = self.log
        start = self.producers.load_latest_snapshot(log.directory, log.next_offset) or log.log_start_offset
        for seg in log.segments:
            if seg.next_offset <= start:
                continue
            for bp in seg.batches():
                if bp.last_offset < start:
                    continue
                h = seg.header_at(bp.position)
                if h is not None and h.producer_id >= 0 and not h.is_control:
                    self.producers.record_append(
                        h.producer_id, h.producer_epoch, h.base_sequence, h.last_sequence,
                        bp.base_offset, bp.last_offset, h.max_timestamp, is_transactional=h.is_transactional,
                    )

    def snapshot_producer_state(self) -> None:
        """Writes the producer-state snapshot at the log end (at shutdown, as Kafka)."""
        self.producers.write_snapshot(self.log.directory, self.log.next_offset)

    @property
    def tp(self) -> tuple[str, int]:
        return self.topic, self.index

    @property
    def is_leader(self) -> bool:
        return self.state is not None and self.state.leader == self.broker_id

    @property
    def leader_epoch(self) -> int:
        return self.state.leader_epoch if self.state else -1

    # ------------------------------------------------------------------ role changes

    def make_leader(self, state: LeaderState) -> None:
        """Becomes leader: the epoch starts at the log end offset (KIP-101)."""
        self.state = state
        log = self.log
        latest = log.epoch_cache.latest_epoch
        if latest is None or state.leader_epoch > latest:
            log.epoch_cache.assign(state.leader_epoch, log.next_offset)
        self.follower_offsets = {r: -1 for r in state.replicas if r != self.broker_id}
        self.high_watermark = max(min(self.high_watermark, log.next_offset), log.log_start_offset)
        self._maybe_advance_hw()

    def make_follower(self, state: LeaderState) -> None:
        self.state = state
        self.follower_offsets = {}

    def check_leader_epoch(self, current_leader_epoch: int) -> None:
        """KIP-320: −1 skips; older → FENCED_LEADER_EPOCH; newer → UNKNOWN_LEADER_EPOCH."""
        if current_leader_epoch < 0:
            return
        if current_leader_epoch < self.leader_epoch:
            raise FencedLeaderEpochError(f"{self.topic}-{self.index}: epoch {current_leader_epoch} < {self.leader_epoch}")
        if current_leader_epoch > self.leader_epoch:
            raise UnknownLeaderEpochError(f"{self.topic}-{self.index}: epoch {current_leader_epoch} > {self.leader_epoch}")

    def _require_leader(self) -> LeaderState:
        if not self.is_leader:
            raise NotLeaderOrFollowerError(f"broker {self.broker_id} does not lead {self.topic}-{self.index}")
        assert self.state is not None
        return self.state

    # ------------------------------------------------------------------ leader operations

    def append_as_leader(self, records: bytes | memoryview, header: BatchHeader | None = None) -> LogAppendInfo:
        """Appends a producer's (validated) batch with this leader's epoch; advances the HW if it may.

        An idempotent producer's batch is checked against its sequence
        state first: a retry of one of its last five batches is answered
        with the original offsets and not written again; a gap raises
        OUT_OF_ORDER_SEQUENCE_NUMBER, a stale epoch INVALID_PRODUCER_EPOCH.
        """
        state = self._require_leader()
        if header is None:
            header = next(iter_batches(memoryview(records)))[1]
        if header.producer_id >= 0:
            verdict = self.producers.check_and_prepare(
                header.producer_id, header.producer_epoch, header.base_sequence, header.last_sequence, header.is_transactional
            )
            if verdict.error != ErrorCode.NONE:
                raise KafkaError.for_code(verdict.error)(verdict.message or verdict.error.description)
            if verdict.duplicate is not None:
                dup = verdict.duplicate
                return LogAppendInfo(dup.first_offset, dup.last_offset, dup.max_timestamp, dup.last_offset, -1, 0, 0, 0, self.log.log_start_offset)
        info = self.log.append_as_leader(records, state.leader_epoch)
        if header.producer_id >= 0:
            self.producers.record_append(
                header.producer_id, header.producer_epoch, header.base_sequence, header.last_sequence,
                info.first_offset, info.last_offset, info.max_timestamp, is_transactional=header.is_transactional,
            )
        self._maybe_advance_hw()
        return info

    def update_follower(self, replica_id: int, fetch_offset: int) -> bool:
        """Records a follower's fetch position; returns whether the HW moved."""
        if replica_id in self.follower_offsets:
            self.follower_offsets[replica_id] = fetch_offset
        return self._maybe_advance_hw()

    def _maybe_advance_hw(self) -> bool:
        if not self.is_leader:
            return False
        assert self.state is not None
        leo = self.log.next_offset
        isr_offsets = [self.follower_offsets.get(r, -1) for r in self.state.isr if r != self.broker_id]
        candidate = min([leo, *isr_offsets])
        if candidate > self.high_watermark:
            self.high_watermark = candidate
            return True
        return False

    def read(self, offset: int, max_bytes: int, *, replica_id: int = -1, current_leader_epoch: int = -1, min_one_batch: bool = True) -> ReadResult:
        """Reads for a consumer (up to the HW) or a follower (up to the LEO).

        Raises:
            NotLeaderOrFollowerError, FencedLeaderEpochError, UnknownLeaderEpochError,
            OffsetOutOfRangeError.
        """
        self._require_leader()
        self.check_leader_epoch(current_leader_epoch)
        upper = None if replica_id >= 0 else self.high_watermark
        data = self.log.read(offset, max_bytes, upper, min_one_batch=min_one_batch)
        return ReadResult(data, self.high_watermark, self.log.log_start_offset, self.log.next_offset)

    def bytes_available(self, offset: int, replica_id: int = -1) -> int:
        """Readable bytes at *offset* (0 when none, or on any error): the long-poll test."""
        try:
            upper = self.log.next_offset if replica_id >= 0 else self.high_watermark
            if offset >= upper or not self.is_leader:
                return 0
            return self.log.read(offset, 1 << 30, upper, min_one_batch=True).size
        except KafkaError:
            return 1  # an error is worth answering at once
