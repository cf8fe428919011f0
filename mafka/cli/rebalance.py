"""``mafka rebalance --zookeeper HOST:PORT --plan | --execute | --status | --cancel``: the rebalancer by hand.

* ``--plan``: the free-disk-first plan (:mod:`mafka.rebalancer.plan`) from the
  brokers' monitor reports and the assignments in ZooKeeper, with every
  decision's reason; nothing changes;
* ``--execute``: computes the same plan and hands it to the controller by
  writing ``/mafka/rebalancer/state``; the controller's rebalancer carries it
  out (pipelined, ``--max-concurrent`` moves at once, ``--batches`` for
  batches instead).  Refused while another plan runs;
* ``--status``: the plan being carried out (or the last one): each move's
  state and the decision log;
* ``--cancel``: running moves finish, no new ones start.

``--wait`` (with ``--execute`` or ``--status``) follows the plan until it has
finished: the moves finished so far of those planned show on stderr
(:mod:`mafka.cli.progress`: ``rebalance: 4/6 moves finished (66%)``), then the
plan's status prints as ``--status`` prints it.

Exit status 0 on success, 1 on an error (printed as ``Error: …``); after
``--wait``, also 1 when the plan ended cancelled or with a move not done.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any, TextIO

from mafka.cli.progress import progress
from mafka.cli.zk_session import ZkSession
from mafka.coordination.store import BadVersionError, NodeExistsError
from mafka.rebalancer.execution import Execution
from mafka.rebalancer.plan import Move, Plan
from mafka.rebalancer.service import plan_from_reports

__all__ = ["add_parser", "run", "wait_for_plan"]

#: Seconds between two reads of ``/mafka/rebalancer/state`` while ``--wait`` follows a plan.
WAIT_POLL_S = 0.5
#: Move states that are over (``pending`` and ``running`` are not).
_FINISHED_MOVES = ("done", "failed", "cancelled")


def add_parser(sub: Any) -> None:
    p = sub.add_parser("rebalance", help="plan, start, watch or cancel free-disk-first partition moves")
    p.add_argument("--zookeeper", required=True, metavar="HOST:PORT[/chroot]")
    action = p.add_mutually_exclusive_group(required=True)
    action.add_argument("--plan", action="store_true", help="print the plan and its reasons; change nothing")
    action.add_argument("--execute", action="store_true", help="hand the plan to the controller")
    action.add_argument("--status", action="store_true", help="the plan being carried out, or the last one")
    action.add_argument("--cancel", action="store_true", help="let running moves finish, start no more")
    p.add_argument("--threshold", type=float, default=0.85, help="disk usage fraction to get under (default 0.85)")
    p.add_argument("--max-concurrent", type=int, default=2, help="moves at once (default 2)")
    p.add_argument("--batches", action="store_true", help="start moves in batches, not pipelined")
    p.add_argument("--max-report-age-ms", type=int, default=60_000,
                   help="older monitor reports are ignored (default 60000)")
    p.add_argument("--wait", action="store_true",
                   help="with --execute or --status: follow the plan until it finishes, progress on stderr")
    p.add_argument("--timeout", type=float, default=30.0)
    p.set_defaults(func=run)


def format_plan(plan: Plan, ignored: list[str], out: TextIO) -> None:
    for line in ignored:
        out.write(f"Ignored: {line}\n")
    out.write("Disk usage before -> after:\n")
    for b in plan.usage_before:
        out.write(f"    broker {b}: {plan.usage_before[b]:.1%} -> {plan.usage_after[b]:.1%}\n")
    out.write(f"Moves: {len(plan.moves)} ({plan.bytes_moved} bytes)\n")
    for m in plan.moves:
        out.write(f"    {m.topic}-{m.partition}: {_where(m)}, {m.size} bytes"
                  f"{'' if m.between_dirs else f', replicas {list(m.replicas)}'}\n")
    out.write("Decisions:\n")
    for d in plan.decisions:
        out.write(f"    {d}\n")


def format_status(ex: Execution, out: TextIO) -> None:
    counts = ", ".join(f"{n} {state}" for state, n in sorted(ex.counts().items()))
    out.write(f"Plan {ex.id} ({ex.origin}, {'pipelined' if ex.pipelined else 'batches'} of {ex.max_concurrent}): "
              f"{ex.status}; {counts or 'no moves'}\n")
    for m in ex.moves:
        took = ""
        if m.started_ms is not None and m.finished_ms is not None:
            took = f" in {(m.finished_ms - m.started_ms) / 1000:.1f} s"
        out.write(f"    {m.move.topic}-{m.move.partition}: {_where(m.move)} "
                  f"({m.move.size} bytes): {m.state}{took}{(' - ' + m.note) if m.note else ''}\n")
    out.write("Log:\n")
    for ms, text in ex.log[-30:]:
        out.write(f"    {time.strftime('%H:%M:%S', time.localtime(ms / 1000))} {text}\n")


def _where(m: Move) -> str:
    if m.between_dirs:
        return f"broker {m.source} log dir {m.from_dir} -> {m.to_dir}"
    return f"broker {m.source} -> {m.target}"


def _plan(zk: Any, args: argparse.Namespace) -> tuple[Plan, list[str]]:
    c = zk.client
    assignment: dict[tuple[str, int], tuple[int, ...]] = {}
    busy: set[tuple[str, int]] = set(zk.call(c.get_partition_reassignment))
    for topic in zk.call(c.get_topics):
        got = zk.call(c.get_assignment, topic)
        if got is None:
            continue
        for p, replicas in got[0].partitions.items():
            assignment[(topic, p)] = tuple(replicas)
        busy |= {(topic, p) for p in got[0].adding_replicas}
    racks = {b: reg.rack for b, (reg, _) in zk.call(c.get_all_brokers).items()}
    return plan_from_reports(zk.call(c.monitor_reports), assignment, racks, busy, args.threshold,
                             int(time.time() * 1000), args.max_report_age_ms)


def _state(zk: Any) -> tuple[Execution | None, int | None]:
    got = zk.call(zk.client.rebalancer_state)
    if got is None:
        return None, None
    return Execution.from_json(json.loads(got[0])), got[1]


def wait_for_plan(zk: Any, plan_id: str, out: TextIO, *, poll_s: float = WAIT_POLL_S,
                  sleep: Callable[[float], None] = time.sleep) -> int:
    """Follows plan ``plan_id`` until it has finished, then prints its status; the exit status.

    The moves finished (done, failed or cancelled) of those planned show on stderr
    meanwhile.  Returns 0 when every move is done, 1 when the plan was cancelled or a
    move failed.

    Raises:
        RuntimeError: the plan was replaced by another one (or its znode removed).
    """
    with progress("rebalance", unit="moves finished") as bar:
        while True:
            current, _ = _state(zk)
            if current is None or current.id != plan_id:
                raise RuntimeError(f"plan {plan_id} is no longer the rebalancer's plan "
                                   f"({'now ' + current.id if current else 'no plan any more'})")
            counts = current.counts()
            bar.update(sum(counts.get(s, 0) for s in _FINISHED_MOVES), total=len(current.moves))
            if current.finished:
                break
            sleep(poll_s)
    format_status(current, out)
    return 0 if current.status == "done" and all(m.state == "done" for m in current.moves) else 1


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    out = sys.stdout if out is None else out  # as it is now (tests capture it), not at import
    if getattr(args, "wait", False) and not (args.execute or args.status):
        print("Error: --wait goes with --execute or --status", file=sys.stderr)
        return 1
    try:
        with ZkSession(args.zookeeper, timeout=args.timeout) as zk:
            if args.plan:
                format_plan(*_plan(zk, args), out)
                return 0
            current, version = _state(zk)
            if args.status:
                if current is None:
                    out.write("No plan has run.\n")
                elif args.wait:
                    return wait_for_plan(zk, current.id, out)
                else:
                    format_status(current, out)
                return 0
            if args.cancel:
                if current is None or current.finished:
                    raise RuntimeError("no plan is running")
                current.cancel(int(time.time() * 1000))
                zk.call(zk.client.write_rebalancer_state, json.dumps(current.to_json()).encode(), version)
                out.write(f"Cancelling plan {current.id}: running moves finish, no new ones start.\n")
                return 0
            if current is not None and not current.finished:
                raise RuntimeError(f"plan {current.id} is still {current.status}; see --status, or --cancel it")
            plan, ignored = _plan(zk, args)
            format_plan(plan, ignored, out)
            if not plan.moves:
                out.write("Nothing to execute.\n")
                return 0
            ex = Execution.start(f"manual-{uuid.uuid4().hex[:8]}", plan.moves, int(time.time() * 1000),
                                 max_concurrent=args.max_concurrent, pipelined=not args.batches, origin="manual",
                                 decisions=[*ignored, *plan.decisions])
            zk.call(zk.client.write_rebalancer_state, json.dumps(ex.to_json()).encode(), version)
            out.write(f"Started plan {ex.id}; the controller carries it out (mafka rebalance --status).\n")
            if args.wait:
                out.flush()
                return wait_for_plan(zk, ex.id, out)
            return 0
    except KeyboardInterrupt:  # Ctrl-C while --wait follows a plan: the plan itself goes on
        return 130
    except (BadVersionError, NodeExistsError):
        print("Error: the rebalancer state changed meanwhile; try again", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - a tool reports and exits
        print(f"Error: {exc}", file=sys.stderr)
        return 1
