"""Cold reads: bytes read in the pool equal the region, figures are kept, the page-cache probe answers."""

from __future__ import annotations

import os

from mafka.broker.cold_reads import ColdReader, PageCacheProbe, page_cache_miss
from mafka.broker.handlers.fetch import _cold_regions
from mafka.broker.replica_manager import FetchedPartition
from mafka.errors import ErrorCode
from mafka.log.segment import FileRegion


def region_of(tmp_path, data: bytes, cold: bool) -> FileRegion:
    path = tmp_path / "seg.log"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    return FileRegion(fd, 3, len(data) - 5, cold)


def test_a_cold_read_returns_the_region_and_counts_it(tmp_path):
    data = os.urandom(100_000)
    region = region_of(tmp_path, data, cold=True)
    reader = ColdReader(reactor=None, threads_=1, delay_ms=5)
    assert reader.latency_ms() == (None, None)
    assert reader._read(("t", 0), region) == (data[3:-2], None)
    assert (reader.reads, reader.bytes) == (1, len(data) - 5)
    p50, p99 = reader.latency_ms()
    assert p50 >= 5 and p99 >= 5  # the slow-device hook is paid by the reading thread
    assert reader.resolve_here([("k", region)]) == {"k": (region, None)}
    assert reader.reads == 2


def test_the_page_cache_probe_sees_cached_pages():
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "f")
        with open(path, "wb") as f:
            f.write(b"x" * 8192)
        fd = os.open(path, os.O_RDONLY)
        try:
            os.pread(fd, 8192, 0)
            region = FileRegion(fd, 0, 8192)
            assert page_cache_miss(region) in (False, None)  # just read: cached (None: kernel cannot tell)
            probe = PageCacheProbe()
            probe.probe(region)
            assert probe.misses == 0 and probe.probes in (0, 1)
        finally:
            os.close(fd)


def test_only_answers_with_cold_regions_are_read_in_the_pool(tmp_path):
    class Data:
        def __init__(self, region):
            self.region = region

    class Result:
        def __init__(self, region):
            self.data = Data(region)

    hot = FileRegion(1, 0, 10, False)
    cold = FileRegion(1, 0, 10, True)
    chosen = [FetchedPartition("t", 0, ErrorCode.NONE, Result(hot)),
              FetchedPartition("t", 1, ErrorCode.NONE, Result(cold)),
              FetchedPartition("t", 2, ErrorCode.NONE, Result(None)),
              FetchedPartition("t", 3, ErrorCode.NOT_LEADER_OR_FOLLOWER, None)]
    assert _cold_regions(chosen) == [(("t", 1), cold)]


def test_a_read_starting_in_a_cold_segment_is_deferred_and_resolves_to_the_same_bytes(tmp_path):
    from mafka.log import tiering
    from mafka.log.config import LogConfig
    from mafka.log.log import ColdRead, Log
    from mafka.wire.records import Record, build_batch

    log = Log.open(tmp_path / "hot" / "t-0", LogConfig(segment_bytes=300), lambda: 1_000, cold_directory=tmp_path / "c")
    for i in range(10):
        log.append_as_leader(build_batch([Record(0, 1_000, b"k", b"v%02d" % i + b"x" * 60)]), 0)
    log.flush()
    tiering.move_segment(log, log.segments[0], tmp_path / "c")
    lazy = log.read(1, 10_000, defer_cold=True, include_aborted_txns=True)
    assert isinstance(lazy.region, ColdRead) and lazy.aborted_transactions == [] and lazy.size >= 1
    hot_read = log.read(log.segments[1].base_offset, 10_000, defer_cold=True)
    assert not isinstance(hot_read.region, ColdRead)  # reads starting hot stay file regions
    reader = ColdReader(reactor=None, threads_=1)
    data, aborted = reader._read(("t", 0), lazy.region)
    assert data == log.read(1, 10_000).read() and aborted == []
