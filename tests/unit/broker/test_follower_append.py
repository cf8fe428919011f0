"""A follower appends the whole batches of a Fetch response and leaves a trailing partial one."""

from __future__ import annotations

from mafka.broker.partition import LeaderState, Partition
from mafka.log.config import LogConfig
from mafka.log.log import Log
from mafka.wire.records import Record, build_batch


def _batches(n: int, first_offset: int = 0) -> bytes:
    out = b""
    for i in range(n):
        out += build_batch([Record(first_offset + i, 1000 + i, b"k", b"v" * 100)], base_offset=first_offset + i, partition_leader_epoch=0)
    return out


def test_a_trailing_partial_batch_is_left_for_the_next_fetch(tmp_path) -> None:
    log = Log.open(tmp_path / "t-0", LogConfig(), lambda: 0)
    p = Partition("t", 0, 2, log)
    p.make_follower(LeaderState(1, 0, (1, 2), (1, 2), 0, 1))
    data = _batches(3)
    one = len(_batches(1))
    info = p.append_as_follower(data[: 2 * one + one // 2])
    assert info is not None and info.last_offset == 1
    assert log.next_offset == 2
    assert p.append_as_follower(data[2 * one : 2 * one + 10]) is None
    assert log.next_offset == 2
    p.append_as_follower(data[2 * one :])
    assert log.next_offset == 3
    log.close()
