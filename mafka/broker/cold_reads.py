"""Cold-tier reads kept away from tailing reads: Mafka's catch-up read isolation.

A fetch whose records lie in a cold segment (``mafka.cold.log.dirs``, see
:mod:`mafka.log.tiering`) would, sent with ``os.sendfile`` on the reactor as
hot records are, block the reactor on a slow device for every other
connection: one catch-up consumer slows every tailing consumer and producer
of the broker (the slow-node problem).  With ``mafka.cold.read.isolation``
(default true) such records are instead read by a separate pool of
``mafka.cold.read.threads`` worker threads into memory, and only then sent;
after each read the pages are dropped from the page cache
(``posix_fadvise(DONTNEED)``), so catch-up data does not evict the hot data
tailing reads are served from, and nothing read from the cold tier is ever
written back to the hot one.  Memory held is bounded by the fetch sizes of
the fetches in flight (``fetch.max.bytes`` each), as for down-conversion.

``mafka.cold.read.delay.ms`` (default 0) is a test and benchmark hook that
makes every cold read take that much longer, in whichever thread performs
it — a pool thread with isolation on; the reactor, before the response is
sent, with isolation off (that is where the read blocks in Kafka's design, a
network thread): it stands in for a slow HDD.

:func:`page_cache_miss` estimates page-cache misses of hot reads: a one-byte
``preadv(RWF_NOWAIT)`` at the start of the region fails with EAGAIN when
that page is not cached.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any, Literal, cast

from twisted.internet import threads
from twisted.python.threadpool import ThreadPool

from mafka.log.reads import ColdRead
from mafka.log.segment import FileRegion

__all__ = ["ColdReader", "PageCacheProbe", "page_cache_miss", "resolve"]

_NOWAIT = getattr(os, "RWF_NOWAIT", 0)

log = logging.getLogger(__name__)


def page_cache_miss(region: FileRegion) -> bool | None:
    """Whether the first page of *region* is out of the page cache; None if the kernel cannot tell."""
    if not _NOWAIT or region.length <= 0:
        return None
    try:
        os.preadv(region.fd, [bytearray(1)], region.position, _NOWAIT)
    except BlockingIOError:
        return True
    except OSError:
        return None
    return False


class PageCacheProbe:
    """Counts probed consumer reads and their page-cache misses (the monitor reports the ratio)."""

    def __init__(self) -> None:
        self.probes = 0
        self.misses = 0

    def probe(self, region: FileRegion) -> None:
        missed = page_cache_miss(region)
        if missed is not None:
            self.probes += 1
            self.misses += missed


class ColdReader:
    """Reads cold regions in its own thread pool (start with :meth:`start`, stop with :meth:`stop`)."""

    def __init__(self, reactor: Any, threads_: int = 2, delay_ms: int = 0, isolate: bool = True) -> None:
        self.reactor = reactor
        self.isolate = isolate
        self.delay_s = max(0, delay_ms) / 1000.0
        self.pool = ThreadPool(minthreads=1, maxthreads=max(1, threads_), name="mafka-cold-reads")
        self.reads = 0
        self.bytes = 0
        self._latencies: deque[float] = deque(maxlen=1024)  # ms, the last reads
        #: per cold dir read latencies (``read:<dir>``), a ``RequestLatencies`` the broker sets
        self.dir_latencies: Any = None
        #: called (in the pool) as ``(key, error)`` when a read fails: the broker takes the cold dir offline
        self.on_io_error: Callable[[Any, OSError], object] | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        self.pool.start()

    def stop(self) -> None:
        if self.pool.started:
            self.pool.stop()

    def _read(self, key: Any, region: FileRegion | ColdRead) -> tuple[bytes | None, list | None]:
        """The bytes of *region* (a :class:`ColdRead` is resolved first) and its aborted transactions.

        (None, None) on an I/O error (logged, and ``on_io_error`` told): the partition is answered
        KAFKA_STORAGE_ERROR.
        """
        try:
            return self._read_or_raise(region)
        except OSError as exc:
            log.error("cold read of %s failed: %s", key, exc)
            if self.on_io_error is not None:
                try:
                    self.on_io_error(key, exc)
                except Exception:
                    log.exception("on_io_error failed for %s", key)
            return None, None

    def _read_or_raise(self, region: FileRegion | ColdRead) -> tuple[bytes, list | None]:
        started = time.monotonic()
        if self.delay_s:
            time.sleep(self.delay_s)
        aborted = None
        where = None
        if isinstance(region, ColdRead):
            cold = region.log.cold_directory
            where = None if cold is None else f"read:{cold.parent}"
            info = region.resolve()
            aborted = info.aborted_transactions
            if info.region is None:
                self._record(0, started)
                return b"", aborted
            region = _resolved(info.region)
        data = os.pread(region.fd, region.length, region.position)
        try:
            os.posix_fadvise(region.fd, region.position, region.length, os.POSIX_FADV_DONTNEED)
        except OSError:
            pass
        self._record(len(data), started)
        if where is not None and self.dir_latencies is not None:
            self.dir_latencies.record(where, int(time.time() * 1000), (time.monotonic() - started) * 1000.0)
        return data, aborted

    def _record(self, size: int, started: float) -> None:
        with self._lock:
            self.reads += 1
            self.bytes += size
            self._latencies.append((time.monotonic() - started) * 1000.0)

    def read_all(self, regions: Iterable[tuple[Any, FileRegion | ColdRead]]) -> Any:
        """A Deferred of {key: (bytes, aborted transactions or None)} for the (key, region) pairs, read in the pool."""
        wanted = list(regions)

        def work() -> dict[Any, tuple[bytes | None, list | None]]:
            return {key: self._read(key, region) for key, region in wanted}

        return threads.deferToThreadPool(self.reactor, self.pool, work)

    def resolve_here(self, regions: Iterable[tuple[Any, FileRegion | ColdRead]]) -> dict[Any, tuple[Any, list | None]]:
        """Isolation off (Kafka's way): resolved on the calling thread, the reactor, which also pays
        the delay hook; the regions then go out by sendfile like hot ones."""
        out: dict[Any, tuple[Any, list | None]] = {}
        for key, region in regions:
            started = time.monotonic()
            if self.delay_s:
                time.sleep(self.delay_s)
            out[key] = resolve(region)
            self._record(region.length, started)
        return out

    def latency_ms(self) -> tuple[float | None, float | None]:
        """(p50, p99) of the recent cold reads, or Nones."""
        with self._lock:
            samples = sorted(self._latencies)
        if not samples:
            return None, None
        return samples[len(samples) // 2], samples[min(len(samples) - 1, int(len(samples) * 0.99))]


def resolve(region: FileRegion | ColdRead) -> tuple[FileRegion | Literal[b""], list | None]:
    """(the file region, or b"" when nothing is there; aborted transactions or None) of *region*,
    resolving a :class:`ColdRead` (blocking)."""
    if isinstance(region, ColdRead):
        info = region.resolve()
        return (_resolved(info.region) if info.region is not None else b""), info.aborted_transactions
    return region, None


def _resolved(region: FileRegion | ColdRead) -> FileRegion:
    """The region of a resolved :class:`ColdRead`: ``ColdRead.resolve`` reads with
    ``defer_cold=False``, so it is a file region (never another ColdRead)."""
    return cast(FileRegion, region)
