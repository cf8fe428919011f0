"""``mafka delayed --describe | --cancel``: the delayed messages a topic holds; cancelling one.

``--describe --topic T --bootstrap-server H:P``:

Asks each partition's leader (MafkaDescribeDelayed, Mafka's api key 10000)
and prints, per partition, the records held until due, then per due-time
bucket (one minute, UTC) how many are pending and how many were delivered::

    Topic: orders  Partition: 0  Leader: 2  Pending: 1500
        Due from 2026-11-26T14:05:00Z  pending 1000  delivered 0
        Due from 2026-11-26T14:06:00Z  pending 500   delivered 0
    Delivered by the leaders asked: 7300; lateness p50 3 ms, p99 41 ms

``--cancel --topic T --partition P --offset O --bootstrap-server H:P`` cancels
the delayed message its producer was acknowledged with at offset ``O``
(MafkaEndHalf with commit false, at the partition's leader): it will never be
delivered.  A message already delivered cannot be cancelled (INVALID_TXN_STATE).

Exit status 1 on a usage error, an unknown topic, a refused cancel, or a broker that does not answer.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from typing import Any, TextIO

from mafka.cli.clients import admin_config
from mafka.client.config import parse_config
from mafka.client.kernel import Kernel
from mafka.errors import ErrorCode

__all__ = ["add_parser", "describe_delayed", "run"]

MAFKA_DESCRIBE_DELAYED = 10000
MAFKA_END_HALF = 10001


def add_parser(sub: Any) -> None:
    p = sub.add_parser("delayed", help="describe the delayed messages a topic holds until due; cancel one")
    p.add_argument("--bootstrap-server", metavar="HOST:PORT", required=True)
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument("--describe", action="store_true", help="describe pending delayed messages")
    action.add_argument("--cancel", action="store_true", help="cancel the delayed message at --partition/--offset")
    p.add_argument("--topic", required=True)
    p.add_argument("--partition", type=int, help="with --cancel: the message's partition")
    p.add_argument("--offset", type=int, help="with --cancel: the offset its producer was acknowledged with")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for the cluster")
    p.set_defaults(func=run)


async def describe_delayed(bootstrap: str, topic: str, timeout_s: float) -> tuple[dict[int, int], dict[int, Any]]:
    """({partition: leader}, {leader: response}) for ``topic``.

    Raises:
        LookupError: the topic does not exist.
        ConnectionError / TimeoutError: the cluster or a leader did not answer.
    """
    kernel = Kernel(parse_config("admin", admin_config(bootstrap, "delayed-tool", timeout_s)))
    try:
        async with asyncio.timeout(timeout_s):
            md = await kernel.metadata_for([topic], timeout_s)
            count = md.partition_count(topic)
            if not count:
                raise LookupError(f"Topic '{topic}' does not exist as expected")
            leaders = {p: md.leader(topic, p) for p in range(count)}
            by_leader: dict[int, list[int]] = {}
            for p, leader in leaders.items():
                by_leader.setdefault(leader, []).append(p)
            if -1 in by_leader:
                raise ConnectionError(f"partitions {by_leader[-1]} of {topic} have no leader")
            answers = await asyncio.gather(*(
                kernel.send(b, MAFKA_DESCRIBE_DELAYED, {"topics": [{"name": topic, "partition_indexes": ps}]},
                            version=0)
                for b, ps in by_leader.items()))
        return leaders, dict(zip(by_leader, answers, strict=True))
    finally:
        await kernel.close()


def _utc(ms: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ms / 1000))


def print_description(topic: str, leaders: dict[int, int], answers: dict[int, Any], out: TextIO) -> None:
    partitions = {}
    for response in answers.values():
        for t in response.topics:
            for p in t.partitions:
                partitions[p.partition_index] = p
    for index in sorted(leaders):
        p = partitions.get(index)
        if p is None or p.error_code != ErrorCode.NONE:
            error = "no answer" if p is None else ErrorCode(p.error_code).name
            out.write(f"Topic: {topic}\tPartition: {index}\tLeader: {leaders[index]}\tError: {error}\n")
            continue
        out.write(f"Topic: {topic}\tPartition: {index}\tLeader: {leaders[index]}\tPending: {p.pending_records}\n")
        for b in p.buckets:
            out.write(f"\tDue from {_utc(b.start_ms)}\tpending {b.pending_records}\tdelivered {b.delivered_records}\n")
    delivered = sum(r.delivered_records for r in answers.values())
    late = [(r.lateness_p50_ms, r.lateness_p99_ms) for r in answers.values() if r.lateness_p99_ms >= 0]
    figures = "; lateness " + ", ".join(f"broker p50 {a} ms, p99 {b} ms" for a, b in late) if late else ""
    out.write(f"Delivered by the leaders asked: {delivered}{figures}\n")


async def cancel_delayed(bootstrap: str, topic: str, partition: int, offset: int, timeout_s: float) -> ErrorCode:
    """MafkaEndHalf (commit false) at the partition's leader: the broker's answer."""
    kernel = Kernel(parse_config("admin", admin_config(bootstrap, "delayed-tool", timeout_s)))
    try:
        async with asyncio.timeout(timeout_s):
            md = await kernel.metadata_for([topic], timeout_s)
            if not md.partition_count(topic):
                raise LookupError(f"Topic '{topic}' does not exist as expected")
            leader = md.leader(topic, partition)
            if leader < 0:
                raise ConnectionError(f"{topic}-{partition} has no leader")
            response = await kernel.send(leader, MAFKA_END_HALF, {
                "topic": topic, "partition": partition, "offset": offset, "commit": False,
                "timeout_ms": int(timeout_s * 1000)}, version=0)
            return ErrorCode(response.error_code)
    finally:
        await kernel.close()


class _Failed(Exception):
    """Printed as ``Error: …`` on stderr; exit status 1."""


def _ask(coro: Any) -> Any:
    """Runs one admin coroutine; a missing topic or a silent cluster becomes :class:`_Failed`."""
    try:
        return asyncio.run(coro)
    except LookupError as exc:
        raise _Failed(str(exc)) from None
    except (ConnectionError, TimeoutError, OSError) as exc:
        raise _Failed(f"the cluster did not answer: {exc or type(exc).__name__}") from None


def _run(args: argparse.Namespace, out: TextIO) -> None:
    if not args.cancel:
        leaders, answers = _ask(describe_delayed(args.bootstrap_server, args.topic, args.timeout))
        print_description(args.topic, leaders, answers, out)
        return
    if args.partition is None or args.offset is None:
        raise _Failed("--cancel needs --partition and --offset")
    code = _ask(cancel_delayed(args.bootstrap_server, args.topic, args.partition, args.offset, args.timeout))
    if code != ErrorCode.NONE:
        raise _Failed(f"cancelling {args.topic}-{args.partition} at offset {args.offset} failed: {code.name} "
                      f"(already delivered, or no delayed message there)")
    out.write(f"Cancelled the delayed message at offset {args.offset} of {args.topic}-{args.partition}\n")


def run(args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    try:
        _run(args, out)
    except _Failed as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    return 0
