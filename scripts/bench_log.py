#!/usr/bin/env python3
"""Benchmark of the log's two hot paths beside the raw system calls under them, in one run.

* append: ``--mb`` MB of 16 KiB record batches (20,480 batches for the
  default 320 MiB) appended one by one with ``Log.append_as_leader`` to a fresh
  log (default ``segment.bytes``, 1 GiB), beside a plain loop of ``os.write``
  of the same batch bytes to a file in the same directory;
* read: that log read back in 1 MiB fetches, ``Log.read(offset, 1 MiB)`` then
  ``os.sendfile`` of the returned region into a local socket pair whose other
  end a thread drains, the next fetch offset taken from the last whole batch
  of the region (batch lengths and one header read through an ``mmap`` of the
  segment, mapped once with ``MAP_POPULATE`` before timing so the walk costs
  no page faults); beside raw ``os.sendfile`` of the same ``.log`` file in
  1 MiB chunks to the same socket pair.  The per-fetch costs of ``Log.read``
  and of that offset walk are also timed on their own and printed.

Nothing is fsynced on either side (the page cache, as Kafka by default).  The
two sides of each figure alternate round by round (and which one goes first
alternates too), so machine noise hits both alike; the medians over
``--rounds`` rounds and their ratios are printed.  MB = 10^6 bytes; read
throughput counts the log's bytes once (a fetch that ends inside a batch
sends that batch's head again with the next fetch, as Kafka does).

Targets: append >= 0.7 x raw write, read >= 0.9 x raw sendfile.

Usage: ``.venv/bin/python scripts/bench_log.py [--mb 320] [--rounds 5] [--dir DIR] [--chart PATH.png]``
(``--chart`` also draws the medians: the log beside the raw call, the ratio above).
"""

from __future__ import annotations

import argparse
import mmap
import os
import shutil
import socket
import statistics
import struct
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench_chart import Panel, add_chart_argument, draw

from mafka.log.config import LogConfig
from mafka.log.log import Log
from mafka.wire.batch import BATCH_HEADER_SIZE, LOG_OVERHEAD, BatchHeader
from mafka.wire.records import Record, build_batch

KiB = 1024
MiB = 1024 * KiB
BATCH_SIZE = 16 * KiB
FETCH_BYTES = 1 * MiB
SOCKET_BUFFER = 4 * MiB
_LENGTH = struct.Struct(">i")


def clock() -> int:
    return time.time_ns() // 1_000_000


def make_batch(size: int = BATCH_SIZE, records: int = 16) -> bytes:
    """An uncompressed v2 batch of *records* records, exactly *size* bytes long."""
    now = clock()
    common = size // records - 32

    def build(last: int) -> bytes:
        recs = [Record(i, now, b"key-%d" % i, b"v" * common) for i in range(records - 1)]
        return build_batch(recs + [Record(records - 1, now, b"key-last", b"v" * last)])

    guess = size - len(build(0))
    for last in range(max(0, guess - 8), guess + 8):
        batch = build(last)
        if len(batch) == size:
            return batch
    raise AssertionError(f"cannot build a {size}-byte batch")


# ================================================================ append


def append_mafka(directory: Path, batch: bytes, count: int) -> tuple[float, Log]:
    """Seconds to append *count* copies of *batch*; the log is returned open."""
    log = Log.open(directory, LogConfig(), clock)
    append = log.append_as_leader
    start = time.perf_counter()
    for _ in range(count):
        append(batch, 0)
    elapsed = time.perf_counter() - start
    return elapsed, log


def append_raw(path: Path, batch: bytes, count: int) -> float:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
    try:
        write = os.write
        start = time.perf_counter()
        for _ in range(count):
            write(fd, batch)
        return time.perf_counter() - start
    finally:
        os.close(fd)


# ================================================================ read


class Drain:
    """A socket pair whose receiving end a thread empties, counting bytes."""

    def __init__(self) -> None:
        self.send_sock, self.recv_sock = socket.socketpair()
        for sock in (self.send_sock, self.recv_sock):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SOCKET_BUFFER)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SOCKET_BUFFER)
        self.out_fd = self.send_sock.fileno()

    def start(self, expected: int) -> threading.Thread:
        """Starts a thread that reads exactly *expected* bytes (join it to wait for them)."""

        def run() -> None:
            buf = bytearray(FETCH_BYTES)
            view = memoryview(buf)
            left = expected
            recv_into = self.recv_sock.recv_into
            while left:
                n = recv_into(view[: min(left, FETCH_BYTES)])
                if not n:
                    raise EOFError("socket closed")
                left -= n

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        return thread

    def close(self) -> None:
        self.send_sock.close()
        self.recv_sock.close()


def sendfile_all(out_fd: int, in_fd: int, position: int, length: int) -> None:
    sendfile = os.sendfile
    while length:
        n = sendfile(out_fd, in_fd, position, length)
        if n <= 0:
            raise EOFError("sendfile sent nothing")
        position += n
        length -= n


def map_segments(log: Log) -> dict[int, mmap.mmap]:
    """Read-only maps of the log's segment files by fd, page tables filled in advance."""
    flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
    return {seg.fd: mmap.mmap(seg.fd, seg.size, flags=flags, prot=mmap.PROT_READ) for seg in log.segments if seg.size}


def fetch_plan(log: Log, maps: dict[int, mmap.mmap]) -> tuple[int, int, float, float]:
    """(fetches, bytes sent, µs per Log.read, µs per offset walk) of a read-through, no sendfile."""
    fetches = sent = 0
    read_s = walk_s = 0.0
    offset = log.log_start_offset
    while offset < log.next_offset:
        t0 = time.perf_counter()
        region = log.read(offset, FETCH_BYTES).region
        t1 = time.perf_counter()
        assert region is not None
        offset = next_offset(maps, region.fd, region.position, region.length)
        walk_s += time.perf_counter() - t1
        read_s += t1 - t0
        fetches += 1
        sent += region.length
    return fetches, sent, 1e6 * read_s / fetches, 1e6 * walk_s / fetches


def next_offset(maps: dict[int, mmap.mmap], fd: int, position: int, length: int) -> int:
    """The offset after the last whole batch of the region: batch lengths, then one header."""
    mm = maps[fd]
    end = position + length
    last = position
    unpack = _LENGTH.unpack_from
    while position + BATCH_HEADER_SIZE <= end:
        size = unpack(mm, position + 8)[0] + LOG_OVERHEAD
        if position + size > end:
            break
        last = position
        position += size
    return BatchHeader(mm, last).next_offset


def read_mafka(log: Log, maps: dict[int, mmap.mmap], drain: Drain, expected_bytes: int) -> float:
    out_fd = drain.out_fd
    thread = drain.start(expected_bytes)
    read = log.read
    end = log.next_offset
    offset = log.log_start_offset
    start = time.perf_counter()
    while offset < end:
        region = read(offset, FETCH_BYTES).region
        sendfile_all(out_fd, region.fd, region.position, region.length)
        offset = next_offset(maps, region.fd, region.position, region.length)
    thread.join()
    return time.perf_counter() - start


def read_raw(path: Path, drain: Drain) -> float:
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        thread = drain.start(size)
        out_fd = drain.out_fd
        start = time.perf_counter()
        position = 0
        while position < size:
            n = min(FETCH_BYTES, size - position)
            sendfile_all(out_fd, fd, position, n)
            position += n
        thread.join()
        return time.perf_counter() - start
    finally:
        os.close(fd)


# ================================================================ main


def mbps(nbytes: int, seconds: float) -> float:
    return nbytes / seconds / 1e6


def chart(path: Path, title: str, append: tuple[float, float], read: tuple[float, float]) -> Path:
    """The medians side by side: (Mafka, raw) MB/s of the appends and of the reads."""
    return draw(path, title, [
        Panel("median MB/s", ["append (16 KiB batches)", "read (1 MiB fetches)"],
              {"Mafka log": [append[0], read[0]], "raw system call": [append[1], read[1]]},
              ratio=("Mafka log", "raw system call")),
    ], note="Log.append_as_leader ÷ os.write and Log.read + os.sendfile ÷ os.sendfile above each pair")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=320, help="MiB appended per round (default 320)")
    parser.add_argument("--rounds", type=int, default=5, help="timing rounds per figure (default 5)")
    parser.add_argument("--dir", type=Path, default=None, help="where to write (default: a temp dir)")
    parser.add_argument("--batch-kib", type=int, default=16, help="record batch size in KiB (default 16, the issue's figure)")
    add_chart_argument(parser)
    args = parser.parse_args(argv)

    batch = make_batch(args.batch_kib * KiB)
    count = max(1, args.mb * MiB // len(batch))
    total = count * len(batch)
    base = Path(tempfile.mkdtemp(prefix="bench-log-", dir=args.dir))
    print(
        f"mafka log benchmark: {count} batches x {len(batch)} bytes = {total / MiB:.0f} MiB per round, "
        f"{args.rounds} rounds, in {base}"
    )
    try:
        # ---------------------------------------------------------- append
        mafka_rates, raw_rates = [], []
        kept: Log | None = None
        for rnd in range(args.rounds):
            for side in ("mafka", "raw") if rnd % 2 == 0 else ("raw", "mafka"):
                if side == "mafka":
                    directory = base / f"append-{rnd}" / "bench-0"
                    seconds, log = append_mafka(directory, batch, count)
                    assert log.next_offset == count * 16 and log.size == total
                    mafka_rates.append(mbps(total, seconds))
                    if rnd == args.rounds - 1:
                        kept = log  # read back in the second part
                    else:
                        log.close()
                        shutil.rmtree(directory.parent)
                else:
                    path = base / f"raw-{rnd}.bin"
                    raw_rates.append(mbps(total, append_raw(path, batch, count)))
                    path.unlink()
        assert kept is not None
        append_mafka_mb, append_raw_mb = statistics.median(mafka_rates), statistics.median(raw_rates)

        # ---------------------------------------------------------- read
        log_files = [seg.log_path for seg in kept.segments if seg.size]
        assert len(log_files) == 1, "the read benchmark expects one segment (segment.bytes 1 GiB)"
        maps = map_segments(kept)
        fetches, sent, read_us, walk_us = fetch_plan(kept, maps)
        drain = Drain()
        read_mafka_rates, read_raw_rates = [], []
        try:
            read_raw(log_files[0], drain)  # warm both paths once
            read_mafka(kept, maps, drain, sent)
            for rnd in range(args.rounds):
                for side in ("mafka", "raw") if rnd % 2 == 0 else ("raw", "mafka"):
                    if side == "mafka":
                        read_mafka_rates.append(mbps(total, read_mafka(kept, maps, drain, sent)))
                    else:
                        read_raw_rates.append(mbps(total, read_raw(log_files[0], drain)))
        finally:
            drain.close()
            for m in maps.values():
                m.close()
            kept.close()
        read_mafka_mb, read_raw_mb = statistics.median(read_mafka_rates), statistics.median(read_raw_rates)
    finally:
        shutil.rmtree(base, ignore_errors=True)

    def rounds(rates: list[float]) -> str:
        return " ".join(f"{r:.0f}" for r in rates)

    append_ratio = append_mafka_mb / append_raw_mb
    read_ratio = read_mafka_mb / read_raw_mb
    print()
    print(f"{'':8}{'':34}{'median MB/s':>12}   rounds")
    print(f"{'append':8}{'Log.append_as_leader (16 KiB)':34}{append_mafka_mb:12.0f}   {rounds(mafka_rates)}")
    print(f"{'':8}{'os.write (16 KiB)':34}{append_raw_mb:12.0f}   {rounds(raw_rates)}")
    print(f"{'read':8}{'Log.read + os.sendfile (1 MiB)':34}{read_mafka_mb:12.0f}   {rounds(read_mafka_rates)}")
    print(f"{'':8}{'os.sendfile (1 MiB)':34}{read_raw_mb:12.0f}   {rounds(read_raw_rates)}")
    print()
    print(
        f"append / raw write    = {append_ratio:.2f}  (target >= 0.70: {'met' if append_ratio >= 0.7 else 'NOT met'}; "
        f"{len(batch) / append_mafka_mb:.1f} us per append vs {len(batch) / append_raw_mb:.1f} us per write)"
    )
    print(
        f"read / raw sendfile   = {read_ratio:.2f}  (target >= 0.90: {'met' if read_ratio >= 0.9 else 'NOT met'}; "
        f"{fetches} fetches, {sent / total - 1:+.2%} bytes re-sent for batches cut at a fetch's end)"
    )
    print(
        f"per 1 MiB fetch: Log.read {read_us:.1f} us, offset walk {walk_us:.1f} us, "
        f"raw sendfile {FETCH_BYTES / read_raw_mb:.1f} us"
    )
    if args.chart:
        title = f"log append and read, {total / MiB:.0f} MiB, medians of {args.rounds} rounds"
        path = chart(args.chart, title, (append_mafka_mb, append_raw_mb), (read_mafka_mb, read_raw_mb))
        print(f"chart: {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
