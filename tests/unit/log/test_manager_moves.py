"""LogManager replica moves between log dirs: future logs, catching up, the swap, and startup
after a crash at any point of a move (leftover ``-future`` / ``-delete`` directories)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from mafka.errors import KafkaStorageError, UnknownTopicOrPartitionError
from mafka.log.config import LogConfig
from mafka.log.log import Log
from mafka.log.manager import (
    FUTURE_COMPLETE_MARKER,
    LogManager,
    log_delete_dir_name,
    log_future_dir_name,
    parse_log_dir_name,
)
from mafka.wire.batch import iter_batches
from mafka.wire.records import Record, build_batch, decode_batch

NOW = 1_700_000_000_000
CONFIG = LogConfig(segment_bytes=1024, index_interval_bytes=100)


def batch(first: int, n: int = 3) -> bytes:
    return build_batch([Record(i, NOW, b"k", b"value-%d" % (first + i), ()) for i in range(n)])


def values_of(log: Log) -> list[tuple[int, bytes]]:
    out: list[tuple[int, bytes]] = []
    offset = log.log_start_offset
    while (region := log.read(offset, 1 << 20).region) is not None:
        data = region.read()
        for pos, h in iter_batches(data):
            out += [(r.offset, r.value) for r in decode_batch(data[pos : pos + h.size]).records]
            offset = h.last_offset + 1
    return out


@dataclass
class Env:
    root: Path
    now: list[int] = field(default_factory=lambda: [NOW])

    @property
    def dirs(self) -> list[Path]:
        return [self.root / f"data{i}" for i in range(2)]

    def manager(self, config: LogConfig = CONFIG) -> LogManager:
        m = LogManager(self.dirs, config, lambda: self.now[0], broker_id=1, cluster_id="cid")
        m.startup()
        return m


@pytest.fixture
def env(tmp_path: Path) -> Env:
    return Env(tmp_path)


def fill(log: Log, batches: int, start: int = 0) -> None:
    for i in range(batches):
        log.append_as_leader(batch(start + 3 * i), 0)


def children(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir() if p.is_dir())


def test_future_dir_names_follow_kafka() -> None:
    name = log_future_dir_name("my-topic", 3)
    assert re.fullmatch(r"my-topic-3\.[0-9a-f]{32}-future", name)
    assert parse_log_dir_name(name) == ("my-topic", 3)
    assert len(log_future_dir_name("t" * 249, 7)) == 249 + 2 + 1 + 32 + 7  # never shortened


def test_future_log_is_created_in_the_destination_dir(env: Env) -> None:
    m = env.manager()
    current = m.get_or_create_log("t", 0)  # data0
    fill(current, 2)
    src, dst = env.dirs
    m.maybe_update_preferred_log_dir(("t", 0), dst)
    future, created = m.get_or_create_future_log(("t", 0), dst)
    assert created and m.get_future_log(("t", 0)) is future and m.future_log_dir_of(("t", 0)) == dst
    assert future.directory.parent == dst and re.fullmatch(
        r"t-0\.[0-9a-f]{32}-future", future.directory.name
    )
    assert future.next_offset == 0 and m.preferred_log_dir(("t", 0)) is None
    assert m.get_or_create_future_log(("t", 0), dst) == (future, False)
    with pytest.raises(ValueError, match="already in"):
        m.get_or_create_future_log(("t", 0), src)
    with pytest.raises(UnknownTopicOrPartitionError):
        m.get_or_create_future_log(("u", 0), dst)
    by_dir = m.replicas_by_dir()
    assert [(tp, f) for tp, _, f in by_dir[src]] == [(("t", 0), False)]
    assert [(tp, f) for tp, _, f in by_dir[dst]] == [(("t", 0), True)]
    m.shutdown()


def test_catch_up_copies_every_batch_and_follows_the_log_start(env: Env) -> None:
    m = env.manager()
    current = m.get_or_create_log("t", 0)
    fill(current, 40)  # several 1 KiB segments
    future, _ = m.get_or_create_future_log(("t", 0), env.dirs[1])
    assert m.future_lag(("t", 0)) == 120
    rounds = 0
    while (copied := m.catch_up_future_log(("t", 0), 500)) > 0:
        rounds += 1
    assert copied == 0 and rounds > 3 and m.future_lag(("t", 0)) == 0
    assert values_of(future) == values_of(current)
    fill(current, 1, start=120)
    current.increment_log_start_offset(30)  # DeleteRecords on the current log
    assert m.catch_up_future_log(("t", 0)) > 0
    assert future.log_start_offset == 30 and values_of(future) == values_of(current)
    # A truncation of the current log truncates the future log too.
    assert m.truncate_to(("t", 0), 60)
    assert current.next_offset == future.next_offset == 60
    assert m.catch_up_future_log(("t", 0)) == 0
    assert m.catch_up_future_log(("u", 0)) == -1
    m.shutdown()


def test_swap_makes_the_future_log_current_and_forwards_stale_holders(env: Env) -> None:
    m = env.manager(LogConfig(segment_bytes=1024, index_interval_bytes=100, file_delete_delay_ms=0))
    src, dst = env.dirs
    current = m.get_or_create_log("t", 0)
    fill(current, 10)
    current.epoch_cache.assign(3, 30)  # a leader epoch that started without batches
    future, _ = m.get_or_create_future_log(("t", 0), dst)
    m.catch_up_future_log(("t", 0))
    fill(current, 2, start=30)  # arrives after the last catch-up: the swap copies it
    swapped = []
    assert m.replace_current_with_future(("t", 0), lambda old, new: swapped.append((old, new)))
    assert swapped == [(current, future)]
    assert (
        m.get_log("t", 0) is future
        and m.log_dir_of(("t", 0)) == dst
        and m.get_future_log(("t", 0)) is None
    )
    assert future.directory == dst / "t-0" and (dst / "t-0").is_dir()
    assert not (dst / "t-0" / FUTURE_COMPLETE_MARKER).exists()
    assert "t-0" not in children(src) and any(n.endswith("-delete") for n in children(src))
    assert values_of(future) == [(i, b"value-%d" % i) for i in range(36)]
    assert future.epoch_cache.entries == current.epoch_cache.entries
    # Whoever still holds the old log writes and reads through to the new one.
    info = current.append_as_leader(batch(36), 3)
    assert info.first_offset == 36 and future.next_offset == 39
    assert current.read(36, 1 << 20).region is not None
    # The moved log keeps working, and survives a clean restart in its new dir.
    future.append_as_leader(batch(39), 3)
    assert m.delete_pending_logs() == 1 and children(src) == []
    m.shutdown()
    m = env.manager()
    assert m.log_dir_of(("t", 0)) == dst
    assert values_of(m.get_log("t", 0)) == [(i, b"value-%d" % i) for i in range(42)]
    m.shutdown()


def test_abort_and_delete_remove_the_future_log(env: Env) -> None:
    m = env.manager(LogConfig(segment_bytes=1024, file_delete_delay_ms=0))
    fill(m.get_or_create_log("t", 0), 2)
    m.get_or_create_future_log(("t", 0), env.dirs[1])
    assert m.abort_future_log(("t", 0)) and not m.abort_future_log(("t", 0))
    assert m.get_future_log(("t", 0)) is None and m.log_dir_of(("t", 0)) == env.dirs[0]
    m.get_or_create_future_log(("t", 0), env.dirs[1])
    assert m.delete_log("t", 0)
    assert m.future_logs == {} and m.get_log("t", 0) is None
    assert m.delete_pending_logs() == 3
    assert children(env.dirs[0]) == [] and children(env.dirs[1]) == []
    m.shutdown()


def test_preferred_dir_places_the_next_log(env: Env) -> None:
    m = env.manager()
    m.get_or_create_log("a", 0)  # data0; data1 would be next
    m.maybe_update_preferred_log_dir(("t", 0), env.dirs[0])
    assert m.get_or_create_log("t", 0).directory.parent == env.dirs[0]
    assert m.preferred_log_dir(("t", 0)) is None
    m.maybe_update_preferred_log_dir(("t", 0), env.dirs[0])  # already there: not remembered
    assert m.preferred_log_dir(("t", 0)) is None
    m.shutdown()


def test_destination_dir_failure_drops_the_future_log_only(env: Env) -> None:
    m = env.manager()
    current = m.get_or_create_log("t", 0)
    fill(current, 2)
    m.get_or_create_future_log(("t", 0), env.dirs[1])
    m.handle_dir_failure(env.dirs[1], OSError("disk gone"))
    assert m.future_logs == {} and m.get_log("t", 0) is current
    assert m.catch_up_future_log(("t", 0)) == -1
    with pytest.raises(KafkaStorageError, match="offline"):
        m.get_or_create_future_log(("t", 0), env.dirs[1])
    m.shutdown()


# ====================================================================== startup after a crash


def test_leftover_delete_dir_is_removed_at_startup(env: Env) -> None:
    m = env.manager()
    fill(m.get_or_create_log("t", 0), 2)
    fill(m.get_or_create_log("u", 0), 2)
    m.abort()
    leftover = env.dirs[0] / log_delete_dir_name("t", 0)
    (env.dirs[0] / "t-0").rename(leftover)
    m = env.manager()
    assert not leftover.exists() and m.get_log("t", 0) is None and m.get_log("u", 0) is not None
    m.shutdown()


def test_a_move_interrupted_by_a_crash_resumes_and_completes(env: Env) -> None:
    m = env.manager()
    current = m.get_or_create_log("t", 0)
    fill(current, 20)
    m.get_or_create_future_log(("t", 0), env.dirs[1])
    m.catch_up_future_log(("t", 0), 300)  # part of it
    m.abort()  # crash
    m = env.manager()
    future = m.get_future_log(("t", 0))
    assert future is not None and m.future_log_dir_of(("t", 0)) == env.dirs[1]
    assert 0 < future.next_offset < 60
    while m.catch_up_future_log(("t", 0)) > 0:
        pass
    assert m.replace_current_with_future(("t", 0))
    assert m.log_dir_of(("t", 0)) == env.dirs[1]
    assert values_of(m.get_log("t", 0)) == [(i, b"value-%d" % i) for i in range(60)]
    m.shutdown()


class Crash(BaseException):
    pass


def test_a_crash_between_the_two_renames_promotes_the_complete_future_log(
    env: Env, monkeypatch
) -> None:
    m = env.manager()
    fill(m.get_or_create_log("t", 0), 20)
    m.get_or_create_future_log(("t", 0), env.dirs[1])

    def crash(self, directory):
        raise Crash()

    monkeypatch.setattr(Log, "rename_dir", crash)
    with pytest.raises(Crash):
        m.replace_current_with_future(("t", 0))
    monkeypatch.undo()
    m.abort()
    assert "t-0" not in children(env.dirs[0])  # the current log was renamed to -delete
    assert any(n.endswith("-future") for n in children(env.dirs[1]))
    m = env.manager()
    assert children(env.dirs[0]) == [] and children(env.dirs[1]) == ["t-0"]
    assert m.log_dir_of(("t", 0)) == env.dirs[1] and m.future_logs == {}
    assert values_of(m.get_log("t", 0)) == [(i, b"value-%d" % i) for i in range(60)]
    assert not (env.dirs[1] / "t-0" / FUTURE_COMPLETE_MARKER).exists()
    m.shutdown()


def test_an_incomplete_future_log_without_its_current_log_is_removed(env: Env) -> None:
    m = env.manager()
    fill(m.get_or_create_log("t", 0), 5)
    m.get_or_create_future_log(("t", 0), env.dirs[1])
    m.catch_up_future_log(("t", 0), 100)
    m.abort()
    (env.dirs[0] / "t-0").rename(env.dirs[0] / log_delete_dir_name("t", 0))
    m = env.manager()
    assert children(env.dirs[0]) == [] and children(env.dirs[1]) == []
    assert m.logs == {} and m.future_logs == {}
    m.shutdown()


def test_a_future_log_is_left_alone_while_a_dir_is_offline(env: Env) -> None:
    m = env.manager()
    fill(m.get_or_create_log("t", 0), 5)
    m.get_or_create_future_log(("t", 0), env.dirs[1])
    m.abort()
    moved = env.root / "data0-moved"
    env.dirs[0].rename(moved)
    env.dirs[0].write_bytes(b"not a directory")  # data0 cannot be used: offline at startup
    m = env.manager()
    assert m.offline_dirs == [env.dirs[0]]
    assert m.logs == {} and m.future_logs == {}
    assert any(n.endswith("-future") for n in children(env.dirs[1]))  # left alone
    m.shutdown()
    env.dirs[0].unlink()
    moved.rename(env.dirs[0])
    m = env.manager()  # data0 is back: the move resumes
    assert m.future_log_dir_of(("t", 0)) == env.dirs[1] and m.log_dir_of(("t", 0)) == env.dirs[0]
    m.shutdown()
