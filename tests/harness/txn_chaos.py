"""The exactly-once chaos run: a transactional consume-transform-produce app under broker and member faults.

What runs (:func:`run_eos`, over a :class:`~tests.harness.cluster.LocalCluster`):

* **input** — topic A (RF 3, ``min.insync.replicas=2``, unclean election off),
  filled during the whole run by an idempotent acks=all producer
  (:class:`~tests.harness.chaos.ContinuousProducer`, unique values
  ``<tag>-<n>`` on partition ``n % partitions``);
* **the app** — ``members`` member processes (this module run as
  ``python -m tests.harness.txn_chaos member …``, :func:`member_main`), each
  a confluent-kafka consumer of A in one group (``isolation.level=read_committed``,
  auto-commit off) and a transactional producer with one ``transactional.id``
  per member slot (KIP-447: ``<app>-m0``, ``<app>-m1``, …; stable across
  restarts so a new instance fences its predecessor and completes or aborts its
  open transaction).  Loop: consume a batch → ``begin_transaction`` → produce
  each record to B, same partition number, value ``<partition>:<offset>:<A value>``
  → ``send_offsets_to_transaction`` (the batch's next offsets with the
  ``consumer_group_metadata()`` read right after the batch was consumed, so the
  offsets carry the generation the batch belongs to) → ``commit_transaction``.
  Abortable errors:
  ``abort_transaction`` and rewind every assigned partition to its committed
  offset (``committed()``: OffsetFetch with ``require_stable``); retriable
  errors on commit: commit again (bounded); fatal errors (fenced …) or anything
  unexpected: the process exits and the supervisor (:class:`EosApp`) starts it
  again; so does a client call blocked far past its timeout (a watchdog thread
  dumps the stacks into the member's log and exits: librdkafka's
  ``send_offsets_to_transaction`` waits for its background operation without a
  bound, and since librdkafka 2.10 hangs when the group coordinator's broker
  dropped out of the metadata — its ZooKeeper registration expired — and was
  decommissioned while cached as the coordinator: librdkafka issue #5511).  Every ``abort_every``-th transaction of a process is aborted on
  purpose after its records were flushed to B — the abort path is exercised
  all the time, and B holds aborted records that a read_uncommitted read must
  show as duplicates (the integration-level negative control);
* **faults** (:data:`FAULTS`), one at a time, healed before the next:
  SIGKILL + restart of the transaction coordinator of a member's transactional
  id (the leader of its ``__transaction_state`` partition), of the group
  coordinator (the leader of the group's ``__consumer_offsets`` partition), of
  a leader of A or B, of the controller; SIGSTOP past the ZooKeeper session
  timeout (a zombie broker: a coordinator, or any broker) and short pauses;
  SIGKILL of a member process; SIGSTOP of a member process past the group
  session timeout, at a random moment (``pause-member``) or — ``zombie-member``,
  alternately at each stage — by the member itself in the middle of a
  transaction whose records are already in B's log: before its offsets are sent
  (when it resumes its generation is over: the offsets must be refused, the
  transaction aborted) or after (the partitions' new owner must not read the
  committed offsets until that transaction is over: KIP-447's
  ``require_stable``).

At the end the faults are healed, the input producer stops, the app catches up
(its commits reach A's end offsets), the members stop, and the checker runs:

* :func:`check_exactly_once` (pure): every record of A (read to its high
  watermark) appears in B (read with read_committed to its end, once the last
  stable offset equals the high watermark) **exactly once**, B partition p holds
  A partition p's records **in A's order**, each carrying A's value.  Figures:
  lost, duplicated (extra copies), reordered, misplaced (another partition),
  corrupt (another value), unexpected (not from A);
* the same check on B read with **read_uncommitted** must report duplicates
  (the aborted records) — if it does not, the run proves nothing;
* A itself: every acknowledged write of the input producer is in A
  (:func:`~tests.harness.checker.check_delivery`); the group's committed
  offsets read back (OffsetFetch) equal A's end offsets; the replicas of A and
  B are byte-identical.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import os
import random
import signal
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent.parent

__all__ = [
    "FAULTS",
    "EosApp",
    "EosReport",
    "EosResult",
    "EosSettings",
    "check_exactly_once",
    "cluster_settings",
    "encode_output",
    "member_main",
    "parse_output",
    "read_topic",
    "run_eos",
]

TXN_TOPIC = "__transaction_state"
OFFSETS_TOPIC = "__consumer_offsets"

FAULTS = (
    "kill-txn-coordinator", "pause-txn-coordinator",
    "kill-group-coordinator", "pause-group-coordinator",
    "kill-leader-source", "kill-leader-sink", "kill-controller",
    "pause-short", "pause-long",
    "kill-member", "pause-member", "zombie-member",
)


# ==============================================================================================
# The checker (pure)


def encode_output(partition: int, offset: int, value: bytes) -> bytes:
    """The value the app writes to B for A's record ``(partition, offset, value)``."""
    return b"%d:%d:" % (partition, offset) + value


def parse_output(value: bytes | None) -> tuple[int, int, bytes] | None:
    """``(source partition, source offset, source value)`` from a B value; None if malformed."""
    if value is None:
        return None
    parts = value.split(b":", 2)
    if len(parts) != 3:
        return None
    try:
        return int(parts[0]), int(parts[1]), parts[2]
    except ValueError:
        return None


@dataclass
class EosReport:
    """What :func:`check_exactly_once` found; ``ok`` when there is no violation."""

    source_records: int = 0
    output_records: int = 0
    #: (partition, offset) of A records not in B
    lost: list[tuple[int, int]] = field(default_factory=list)
    #: (partition, offset) of A records in B more than once -> how many times
    duplicated: dict[tuple[int, int], int] = field(default_factory=dict)
    #: (B partition, B offset, source offset, highest source offset read before it on that partition)
    reordered: list[tuple[int, int, int, int]] = field(default_factory=list)
    #: (B partition, B offset, source partition, source offset): an A record in another partition of B
    misplaced: list[tuple[int, int, int, int]] = field(default_factory=list)
    #: (B partition, B offset, source partition, source offset): the value is not A's value there
    corrupt: list[tuple[int, int, int, int]] = field(default_factory=list)
    #: (B partition, B offset): not a copy of any A record (malformed, or no such A offset)
    unexpected: list[tuple[int, int]] = field(default_factory=list)

    @property
    def extra_copies(self) -> int:
        """Records in B beyond the first copy of each A record."""
        return sum(n - 1 for n in self.duplicated.values())

    @property
    def ok(self) -> bool:
        return self.source_records > 0 and not (self.lost or self.duplicated or self.reordered or self.misplaced
                                                or self.corrupt or self.unexpected)

    def summary(self, examples: int = 5) -> str:
        def ex(items: Sequence[Any] | Mapping[Any, Any]) -> str:
            if not items:
                return ""
            sample = list(items.items())[:examples] if isinstance(items, Mapping) else list(items)[:examples]
            return f" (e.g. {sample})"

        return "\n".join([
            f"{self.source_records} records in A, {self.output_records} in B",
            f"lost: {len(self.lost)} A records not in B{ex(self.lost)}",
            f"duplicated: {len(self.duplicated)} A records in B more than once, {self.extra_copies} extra copies"
            f"{ex(self.duplicated)}",
            f"reordered: {len(self.reordered)} B records after a later A record of their partition "
            f"(B partition, B offset, A offset, higher A offset before it){ex(self.reordered)}",
            f"misplaced: {len(self.misplaced)}{ex(self.misplaced)}; corrupt: {len(self.corrupt)}{ex(self.corrupt)}; "
            f"unexpected: {len(self.unexpected)}{ex(self.unexpected)}",
            f"{len(self.lost)} lost, {len(self.duplicated)} duplicated, {len(self.reordered)} reordered",
        ])


def check_exactly_once(source: Mapping[int, Iterable[tuple[int, bytes]]],
                       output: Mapping[int, Iterable[tuple[int, bytes]]]) -> EosReport:
    """Checks that ``output`` (B) holds every record of ``source`` (A) exactly once, in order.

    Both map a partition to its records ``(offset, value)`` in log order.  A B
    value is :func:`encode_output` of the A record it copies.  Per B partition p,
    the first copies of A records must come in increasing A offset order; a
    record read after one with a higher A offset is *reordered* (each counted
    once; a second copy counts as *duplicated*, not reordered).
    """
    a: dict[tuple[int, int], bytes] = {}
    for p, records in source.items():
        for o, v in records:
            a[(p, o)] = v
    r = EosReport(source_records=len(a))
    seen: Counter[tuple[int, int]] = Counter()
    for bp in sorted(output):
        highest = -1
        for bo, value in output[bp]:
            r.output_records += 1
            parsed = parse_output(value)
            if parsed is None or (parsed[0], parsed[1]) not in a:
                r.unexpected.append((bp, bo))
                continue
            sp, so, sv = parsed
            seen[(sp, so)] += 1
            if sv != a[(sp, so)]:
                r.corrupt.append((bp, bo, sp, so))
            if sp != bp:
                r.misplaced.append((bp, bo, sp, so))
                continue
            if seen[(sp, so)] > 1:
                continue
            if so < highest:
                r.reordered.append((bp, bo, so, highest))
            highest = max(highest, so)
    r.lost = sorted(k for k in a if seen[k] == 0)
    r.duplicated = {k: n for k, n in sorted(seen.items()) if n > 1}
    return r


# ==============================================================================================
# Reading a topic back


def read_topic(bootstrap: str, topic: str, partitions: int, isolation: str = "read_committed",
               timeout: float = 120.0, stable: bool = True) -> dict[int, list[tuple[int, bytes]]]:
    """Every record of ``topic`` from offset 0 to its end, per partition ``[(offset, value)]``.

    With ``stable`` it first waits (within ``timeout``) until no transaction is
    open on any partition (the read_committed end, the last stable offset, equals
    the high watermark), so a read_committed read is the final one.  Reads until
    every partition reported end-of-partition at an end it asked for first.
    """
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    deadline = time.monotonic() + timeout

    def consumer(iso: str) -> Any:
        return Consumer({
            "bootstrap.servers": bootstrap, "group.id": f"eos-read-{uuid.uuid4().hex[:6]}",
            "isolation.level": iso, "enable.auto.commit": False, "enable.partition.eof": True,
            "auto.offset.reset": "earliest", "fetch.wait.max.ms": 100,
            "topic.metadata.refresh.interval.ms": 2000,
        })

    def ends(c: Any) -> dict[int, int]:
        out = {}
        for p in range(partitions):
            while True:
                try:
                    out[p] = c.get_watermark_offsets(TopicPartition(topic, p), timeout=5.0, cached=False)[1]
                    break
                except KafkaException:
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"no end offset for {topic}-{p}") from None
                    time.sleep(0.5)
        return out

    rc, ru = consumer("read_committed"), consumer("read_uncommitted")
    try:
        while stable:
            lso, hw = ends(rc), ends(ru)
            if lso == hw:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"{topic}: transactions still open (last stable offsets {lso}, "
                                   f"high watermarks {hw})")
            time.sleep(0.5)
        want = ends(rc if isolation == "read_committed" else ru)
    finally:
        ru.close()
        rc.close()
    c = consumer(isolation)
    records: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(partitions)}
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        at_end = {p for p, end in want.items() if end == 0}
        while len(at_end) < partitions:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{topic} ({isolation}): did not reach the end {want}; at the end: "
                                   f"{sorted(at_end)}, read {({p: len(r) for p, r in records.items()})}")
            for m in c.consume(1000, 0.5):
                if m.error() is not None:
                    if m.error().code() == -191 and m.offset() >= want[m.partition()]:  # _PARTITION_EOF
                        at_end.add(m.partition())
                    continue
                records[m.partition()].append((m.offset(), m.value()))
    finally:
        c.close()
    return records


# ==============================================================================================
# One member of the app (a process of its own)

_stop = False
#: (stage, when asked): freeze (SIGSTOP itself) at that stage of the next transaction — a zombie
_freeze: tuple[str, float] | None = None
#: a freeze request older than this is dropped (the runner has given up waiting for it)
FREEZE_REQUEST_TTL = 10.0
#: SIGUSR1: freeze once the transaction's records are produced (before its offsets are sent);
#: SIGUSR2: freeze once its offsets are sent (before the commit)
FREEZE_SIGNALS = {"produced": signal.SIGUSR1, "offsets-sent": signal.SIGUSR2}


def _on_signal(signum: int, frame: Any) -> None:
    global _stop
    _stop = True


def _on_freeze_request(signum: int, frame: Any) -> None:
    global _freeze
    stage = next(k for k, v in FREEZE_SIGNALS.items() if v == signum)
    _freeze = (stage, time.monotonic())


_emit_lock = threading.Lock()


def emit(event: str, **fields: Any) -> None:
    line = json.dumps({"event": event, **fields, "t": time.monotonic()}) + "\n"
    with _emit_lock:
        sys.stdout.write(line)
        sys.stdout.flush()


#: member exit codes
EXIT_FATAL, EXIT_REWIND, EXIT_GAVE_UP, EXIT_WATCHDOG = 3, 4, 5, 6


class _Watchdog:
    """Ends the member process when one client call blocks far past its own timeout (e.g. librdkafka's
    ``send_offsets_to_transaction`` waits for its background operation without a bound), after dumping
    every thread's stack to stderr: the supervisor starts it again, as a liveness probe would."""

    def __init__(self, limit: float) -> None:
        self.limit = limit
        self.call: tuple[str, float] | None = None
        threading.Thread(target=self._run, name="watchdog", daemon=True).start()

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        self.call = (name, time.monotonic())
        try:
            yield
        finally:
            self.call = None

    def _run(self) -> None:
        while True:
            time.sleep(1.0)
            call = self.call
            if call is not None and time.monotonic() - call[1] > self.limit:
                emit("exiting", code=EXIT_WATCHDOG, why=f"watchdog: {call[0]} blocked for "
                                                        f"{time.monotonic() - call[1]:.0f} s", error=None)
                sys.stderr.write(f"watchdog: {call[0]} blocked for {time.monotonic() - call[1]:.0f} s\n")
                faulthandler.dump_traceback(all_threads=True)
                os._exit(EXIT_WATCHDOG)


def member_main(argv: list[str] | None = None) -> int:
    """``python -m tests.harness.txn_chaos member --bootstrap … --group … --source A --sink B
    --transactional-id T`` — one member of the app; prints JSON events on stdout (see :class:`EosApp`)."""
    ap = argparse.ArgumentParser(prog="txn_chaos member")
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--sink", required=True)
    ap.add_argument("--transactional-id", required=True)
    ap.add_argument("--session-timeout-ms", type=int, default=6000)
    ap.add_argument("--transaction-timeout-ms", type=int, default=20000)
    ap.add_argument("--batch", type=int, default=200, help="records per transaction at most")
    ap.add_argument("--abort-every", type=int, default=0, help="abort every n-th transaction on purpose (0: never)")
    ap.add_argument("--debug", default="", help="librdkafka debug contexts (to stderr)")
    ap.add_argument("--watchdog", type=float, default=40.0,
                    help="exit when one client call blocks this long (their timeouts are 30 s)")
    args = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    faulthandler.register(signal.SIGQUIT, all_threads=True)  # the supervisor's stack dump of a stuck member
    for sig in FREEZE_SIGNALS.values():
        signal.signal(sig, _on_freeze_request)

    import confluent_kafka
    from confluent_kafka import (
        OFFSET_BEGINNING,
        OFFSET_STORED,
        Consumer,
        KafkaException,
        Producer,
        TopicPartition,
    )

    calling = _Watchdog(args.watchdog)
    emit("started", pid=os.getpid(), version=confluent_kafka.version()[0], librdkafka=confluent_kafka.libversion()[0],
         transactional_id=args.transactional_id)
    common: dict[str, Any] = {
        "bootstrap.servers": args.bootstrap,
        "reconnect.backoff.ms": 50,
        "reconnect.backoff.max.ms": 500,
        "topic.metadata.refresh.interval.ms": 2000,
        "error_cb": lambda err: emit("error", error=str(err), fatal=err.fatal()),
    }
    if args.debug:
        common["debug"] = args.debug
    consumer = Consumer({
        **common,
        "group.id": args.group,
        "isolation.level": "read_committed",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": args.session_timeout_ms,
        "heartbeat.interval.ms": max(200, args.session_timeout_ms // 6),
        "max.poll.interval.ms": 60000,
        "partition.assignment.strategy": "roundrobin",
        "fetch.wait.max.ms": 100,
    })
    producer = Producer({
        **common,
        "transactional.id": args.transactional_id,
        "transaction.timeout.ms": args.transaction_timeout_ms,
        "linger.ms": 5,
        "request.timeout.ms": 8000,
        "socket.timeout.ms": 12000,
        "retry.backoff.ms": 100,
        "retry.backoff.max.ms": 500,
    })

    #: partitions assigned (or rewound) whose first record since is still to be reported
    fresh: set[int] = set()

    def on_assign(c: Any, partitions: list[Any]) -> None:
        emit("assigned", partitions=sorted(p.partition for p in partitions))
        fresh.update(p.partition for p in partitions)
        # Start where the group committed, read with committed() (which waits while a transaction
        # holds the offsets) rather than leaving it to librdkafka's own fetch: that one starts a
        # partition at auto.offset.reset when the assignment changes while it waits (see
        # test_transactions.py::test_librdkafka_starts_a_reassigned_partition_at_the_reset_position_...).
        if partitions:
            c.assign(stable_positions(c, partitions))

    def stable_positions(c: Any, partitions: list[Any]) -> list[Any]:
        deadline = time.monotonic() + 30
        while True:
            try:
                committed = c.committed(partitions, timeout=10)
                if all(tp.error is None for tp in committed):
                    emit("positions", offsets={tp.partition: tp.offset for tp in committed})
                    return [TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else OFFSET_BEGINNING)
                            for tp in committed]
                why = [str(tp.error) for tp in committed if tp.error is not None][:1]
            except KafkaException as e:
                why = [str(kafka_error(e))]
            if time.monotonic() > deadline:  # let librdkafka fetch them after all
                emit("positions_failed", error=why)
                return [TopicPartition(p.topic, p.partition, OFFSET_STORED) for p in partitions]
            time.sleep(0.5)

    def on_revoke(c: Any, partitions: list[Any]) -> None:
        emit("revoked", partitions=sorted(p.partition for p in partitions))

    def on_lost(c: Any, partitions: list[Any]) -> None:
        emit("lost", partitions=sorted(p.partition for p in partitions))

    def kafka_error(exc: BaseException) -> Any:
        return exc.args[0] if isinstance(exc, KafkaException) and exc.args else None

    def describe(exc: BaseException) -> str:
        err = kafka_error(exc)
        return err.name() if err is not None and hasattr(err, "name") else repr(exc)[:200]

    def fatal(exc: BaseException) -> bool:
        err = kafka_error(exc)
        return err is None or err.fatal()

    def bail(code: int, why: str, exc: BaseException | None = None) -> int:
        emit("exiting", code=code, why=why, error=None if exc is None else str(kafka_error(exc) or exc))
        return code

    def rewind() -> None:
        """Seeks every assigned partition to its committed offset (raises on failure)."""
        assignment = consumer.assignment()
        if not assignment:
            return
        with calling("committed"):
            committed = consumer.committed(assignment, timeout=30)
        positions = {}
        for tp in committed:
            if tp.error is not None:
                raise KafkaException(tp.error)
            offset = tp.offset if tp.offset >= 0 else OFFSET_BEGINNING
            consumer.seek(TopicPartition(tp.topic, tp.partition, offset))
            positions[tp.partition] = tp.offset
            fresh.add(tp.partition)
        emit("rewound", offsets=positions)

    def maybe_freeze(stage: str, offsets: dict[int, int], inject: bool) -> None:
        """A zombie on request: the transaction's records are flushed to B, then the process stops itself
        (the runner resumes it past the session timeout; meanwhile its partitions move).  Not in a
        transaction to be aborted on purpose (the request waits for the next one)."""
        global _freeze
        if _freeze is None or _freeze[0] != stage or inject:
            return
        asked = _freeze[1]
        _freeze = None
        if time.monotonic() - asked > FREEZE_REQUEST_TTL:
            return
        with calling("flush"):
            remaining = producer.flush(30)
        emit("freezing", stage=stage, offsets=offsets, undelivered=remaining)
        os.kill(os.getpid(), signal.SIGSTOP)
        emit("thawed", stage=stage)

    def abort_and_rewind(why: str, exc: BaseException | None, records: int) -> int | None:
        """Aborts the open transaction and rewinds; returns an exit code if the process must exit."""
        deadline = time.monotonic() + 60
        while True:
            try:
                with calling("abort_transaction"):
                    producer.abort_transaction(30)
                break
            except KafkaException as e:
                if fatal(e) or time.monotonic() > deadline:
                    return bail(EXIT_FATAL if fatal(e) else EXIT_GAVE_UP, "abort_transaction failed", e)
                emit("abort_retry", error=describe(e))
                time.sleep(0.5)
        emit("aborted", why=why, error=None if exc is None else describe(exc), records=records)
        deadline = time.monotonic() + 60  # e.g. while the group coordinator moves
        attempt = 0
        while True:
            try:
                rewind()
                return None
            except KafkaException as e:
                emit("rewind_failed", error=str(kafka_error(e)), attempt=attempt)
                if time.monotonic() > deadline:
                    return bail(EXIT_REWIND, "could not rewind to the committed offsets", e)
                attempt += 1
                time.sleep(1.0)

    # init_transactions: fences an earlier instance with this transactional id and completes its
    # open transaction; retried while the coordinator is unavailable
    deadline = time.monotonic() + 120
    while True:
        try:
            with calling("init_transactions"):
                producer.init_transactions(30)
            break
        except KafkaException as e:
            if fatal(e) or time.monotonic() > deadline:
                return bail(EXIT_FATAL, "init_transactions failed", e)
            emit("init_retry", error=describe(e))
            time.sleep(0.5)
    emit("ready")
    consumer.subscribe([args.source], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
    txns = 0
    code = 0
    try:
        while not _stop:
            with calling("consume"):
                batch = [m for m in consumer.consume(args.batch, 0.2) if _keep(m, emit)]
            if not batch:
                continue
            for m in batch:
                if m.partition() in fresh:  # where consumption (re)started: the committed offset, or a reset
                    fresh.discard(m.partition())
                    emit("first-read", partition=m.partition(), offset=m.offset())
            # the group generation the batch was consumed in: the offsets are sent with it, so a member
            # fenced meanwhile (its generation is over) cannot commit them
            group_metadata = consumer.consumer_group_metadata()
            txns += 1
            inject = args.abort_every > 0 and txns % args.abort_every == 0
            offsets: dict[int, int] = {}
            first: dict[int, int] = {}
            try:
                with calling("begin_transaction"):
                    producer.begin_transaction()
            except KafkaException as e:
                code = bail(EXIT_FATAL, "begin_transaction failed", e)
                break
            try:
                with calling("produce"):
                    for m in batch:
                        value = encode_output(m.partition(), m.offset(), m.value() or b"")
                        while True:
                            try:
                                producer.produce(args.sink, value=value, partition=m.partition())
                                break
                            except BufferError:
                                producer.poll(0.05)
                        first.setdefault(m.partition(), m.offset())
                        offsets[m.partition()] = m.offset() + 1
                maybe_freeze("produced", offsets, inject)
                with calling("send_offsets_to_transaction"):
                    producer.send_offsets_to_transaction(
                        [TopicPartition(args.source, p, o) for p, o in sorted(offsets.items())], group_metadata, 30)
                maybe_freeze("offsets-sent", offsets, inject)
                if inject:
                    with calling("flush"):
                        remaining = producer.flush(30)  # the records are in B's log before the abort
                    raise _InjectedAbort(remaining)
            except _InjectedAbort as e:
                exit_code = abort_and_rewind("injected", None, len(batch) - e.remaining)
                if exit_code is not None:
                    code = exit_code
                    break
                continue
            except KafkaException as e:
                if fatal(e):
                    code = bail(EXIT_FATAL, "fatal error in the transaction", e)
                    break
                exit_code = abort_and_rewind("error", e, len(batch))
                if exit_code is not None:
                    code = exit_code
                    break
                continue
            # commit; retriable errors (e.g. a timeout) may be retried, abortable ones abort
            deadline = time.monotonic() + 90
            while True:
                try:
                    with calling("commit_transaction"):
                        producer.commit_transaction(30)
                    emit("committed", offsets=offsets, first=first, records=len(batch), txn=txns)
                    break
                except KafkaException as e:
                    err = kafka_error(e)
                    if fatal(e):
                        code = bail(EXIT_FATAL, "commit_transaction: fatal", e)
                        break
                    if err.txn_requires_abort():
                        exit_code = abort_and_rewind("commit failed", e, len(batch))
                        if exit_code is not None:
                            code = exit_code
                        break
                    if time.monotonic() > deadline:
                        code = bail(EXIT_GAVE_UP, "commit_transaction kept failing", e)
                        break
                    emit("commit_retry", error=describe(e))
                    time.sleep(0.2)
            if code:
                break
    finally:
        emit("closing")
        if code == 0:
            try:
                consumer.close()
            except Exception as exc:  # noqa: BLE001 - reported
                emit("error", error=f"close: {exc!r}")
        emit("closed", code=code)
    return code


class _InjectedAbort(Exception):
    def __init__(self, remaining: int) -> None:
        super().__init__(f"injected abort ({remaining} records not delivered)")
        self.remaining = remaining


def _keep(m: Any, report: Callable[..., None]) -> bool:
    err = m.error()
    if err is None:
        return True
    if err.code() != -191:  # not _PARTITION_EOF
        report("error", error=str(err))
    return False


# ==============================================================================================
# The app: member processes, supervised


@dataclass
class Restart:
    t: float
    name: str
    reason: str


class EosApp:
    """``members`` member processes of the app, started again whenever one exits.

    Events each member prints (JSON lines; ``t`` = ``time.monotonic()``):
    ``started``, ``ready`` (after ``init_transactions``), ``assigned`` /
    ``revoked`` / ``lost``, ``committed`` (``offsets``: partition -> next
    offset, ``first``, ``records``), ``aborted`` (``why``: injected / error /
    commit failed, ``error``, ``records``), ``rewound``, ``commit_retry``,
    ``init_retry``, ``abort_retry``, ``rewind_failed``, ``error`` (client
    errors), ``exiting`` (code, why), ``closing``, ``closed``; ``exited``
    (return code) is added when the process is gone.

    A supervisor thread restarts a member whose process exited (each restart
    recorded with its reason), and a *stuck* one: when a partition with input
    acknowledged more than ``stuck_s`` ago has had no commit for ``stuck_s``,
    the member holding it (or, if none does, the one silent the longest) is
    restarted.  Stuck restarts are figures of the run, never hidden.
    """

    def __init__(self, bootstrap: str, source: str, sink: str, partitions: int, log_dir: Path, *,
                 members: int = 3, session_timeout_ms: int = 6000, transaction_timeout_ms: int = 20000,
                 abort_every: int = 10, stuck_s: float = 60.0,
                 acks: Callable[[], list[tuple[float, int, int]]] | None = None,
                 say: Callable[[str], None] = print, debug: str = "") -> None:
        from .group_clients import Member

        self._member_class = Member
        self.bootstrap = bootstrap
        self.source = source
        self.sink = sink
        self.partitions = partitions
        self.log_dir = log_dir
        self.app = f"eos-{uuid.uuid4().hex[:8]}"
        self.group = self.app
        self.names = [f"m{i}" for i in range(members)]
        self.session_timeout_ms = session_timeout_ms
        self.transaction_timeout_ms = transaction_timeout_ms
        self.abort_every = abort_every
        self.stuck_s = stuck_s
        self.acks = acks or (lambda: [])
        self.say = say
        self.members: dict[str, Any] = {}
        self.history: list[Any] = []
        self.restarts: list[Restart] = []
        self.paused: set[str] = set()
        #: (member, stage, when it froze) of every zombie episode
        self.zombies: list[tuple[str, str, float]] = []
        self.debug = debug
        self.started_at = 0.0
        self._stop = threading.Event()
        self._lock = threading.RLock()
        self._thread = threading.Thread(target=self._supervise, name="eos-supervisor", daemon=True)
        self._last_stuck_restart = 0.0

    def transactional_id(self, name: str) -> str:
        return f"{self.app}-{name}"

    # -- life cycle ---------------------------------------------------------------------------

    def _spawn(self, name: str) -> Any:
        argv = [sys.executable, "-m", "tests.harness.txn_chaos", "member", "--bootstrap", self.bootstrap,
                "--group", self.group, "--source", self.source, "--sink", self.sink,
                "--transactional-id", self.transactional_id(name),
                "--session-timeout-ms", str(self.session_timeout_ms),
                "--transaction-timeout-ms", str(self.transaction_timeout_ms),
                "--abort-every", str(self.abort_every)]
        if self.debug:
            argv += ["--debug", self.debug]
        env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        member = self._member_class(name, argv, self.log_dir / f"{name}.log", "confluent", env=env)
        self.members[name] = member
        self.history.append(member)
        return member.start()

    def start(self) -> EosApp:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.started_at = time.monotonic()
        for name in self.names:
            self._spawn(name)
        self._thread.start()
        return self

    def wait_ready(self, timeout: float) -> None:
        """Waits until every member initialized its transactions and the group assigned every partition."""
        from .waits import wait_until

        for m in self.members.values():
            m.wait_event("ready", timeout)
        wait_until(lambda: self.covered() >= set(range(self.partitions)), timeout,
                   lambda: f"partitions not all assigned: {self.assignments()}\n{self.explain()}")

    def stop(self, timeout: float = 30.0) -> None:
        """Stops supervising; SIGTERM to every member (which ends after its current transaction), SIGKILL
        after ``timeout``."""
        self._stop.set()
        self._thread.join(30)
        with self._lock:
            for name in list(self.paused):
                self.resume(name)
            for m in self.members.values():
                if m.alive():
                    m.proc.send_signal(signal.SIGTERM)
            for m in self.members.values():
                try:
                    m.wait_exit(timeout)
                except TimeoutError:
                    m.kill()

    def close(self) -> None:
        self._stop.set()
        for name in list(self.paused):
            self.resume(name)
        for m in self.history:
            m.close()

    # -- faults -------------------------------------------------------------------------------

    def kill(self, name: str) -> None:
        with self._lock:
            m = self.members[name]
            self.paused.discard(name)
            m.kill()

    def pause(self, name: str) -> None:
        with self._lock:
            m = self.members[name]
            if m.alive():
                os.kill(m.pid, signal.SIGSTOP)
                self.paused.add(name)

    def resume(self, name: str) -> None:
        with self._lock:
            m = self.members.get(name)
            self.paused.discard(name)
            if m is not None and m.alive():
                os.kill(m.pid, signal.SIGCONT)

    def busy(self, within: float = 5.0) -> list[str]:
        """Live members that committed a transaction in the last ``within`` seconds (else those holding
        partitions by their events: a member blocked in a call serves no rebalance callback, so its
        events may still show partitions it lost)."""
        now = time.monotonic()
        active = [n for n, m in self.members.items()
                  if m.alive() and any(t > now - within for t, _, _ in m.committed())]
        return active or [n for n, m in self.members.items() if m.alive() and m.assignment()]

    def zombie(self, name: str, stage: str, seconds: float,
               timeout: float = FREEZE_REQUEST_TTL + 2.0) -> dict[str, Any] | None:
        """Asks the member to stop itself at ``stage`` of its next transaction (see :func:`member_main`),
        waits until it did (up to ``timeout``: a request older than :data:`FREEZE_REQUEST_TTL` is dropped
        by the member, so it cannot stop itself later), keeps it stopped ``seconds``, resumes it; returns
        its ``freezing`` event, or None if it did not freeze in time (it is resumed either way)."""
        from .waits import process_state

        m = self.members[name]
        asked = time.monotonic()
        with self._lock:
            if not m.alive():
                return None
            self.paused.add(name)
            os.kill(m.pid, FREEZE_SIGNALS[stage])
        try:
            event = m.wait_event("freezing", timeout, after=asked)
        except TimeoutError:
            time.sleep(0.5)
            self.resume(name)
            return None
        deadline = time.monotonic() + 5
        while process_state(m.pid) != "T" and time.monotonic() < deadline:
            time.sleep(0.02)
        self.zombies.append((name, stage, event["t"]))
        time.sleep(seconds)
        self.resume(name)
        return event

    # -- supervision --------------------------------------------------------------------------

    def _restart(self, name: str, reason: str) -> None:
        with self._lock:
            old = self.members.get(name)
            if old is not None and old.alive():
                self.paused.discard(name)
                if reason.startswith("stuck"):  # where it is stuck: Python stacks into its log
                    os.kill(old.pid, signal.SIGQUIT)
                    time.sleep(1.0)
                old.kill()
            self.restarts.append(Restart(time.monotonic(), name, reason))
            self.say(f"app: restarting member {name} ({reason})")
            if not self._stop.is_set():
                self._spawn(name)

    def _supervise(self) -> None:
        while not self._stop.wait(0.5):
            try:
                self._supervise_once()
            except Exception as exc:  # noqa: BLE001 - keep supervising
                self.say(f"app supervisor error: {exc!r}")

    def _supervise_once(self) -> None:
        with self._lock:
            for name in self.names:
                m = self.members[name]
                if not m.alive() and not self._stop.is_set():
                    m.wait_exit(5)
                    exiting = m.snapshot("exiting")
                    why = f": {exiting[-1]['why']} ({exiting[-1].get('error')})" if exiting else ""
                    self._restart(name, f"exited with code {m.proc.poll()}{why}")
        now = time.monotonic()
        if now - max(self._last_stuck_restart, self.started_at) < self.stuck_s:
            return
        stuck = self.stuck_partitions(now)
        if not stuck:
            return
        with self._lock:
            holders = [n for n, m in self.members.items() if m.alive() and set(m.assignment() or []) & set(stuck)]
            if holders:
                for n in holders:
                    self._restart(n, f"stuck: partitions {sorted(stuck)} without a commit for {self.stuck_s:.0f} s")
            else:
                # a process started less than stuck_s ago is still joining: restarting it cannot help
                settled = [n for n in self.names if self.members[n].spawned_at < now - self.stuck_s]
                if not settled:
                    return
                silent = min(settled, key=lambda n: max((e["t"] for e in self.members[n].snapshot()), default=0.0))
                self._restart(silent, f"stuck: partitions {sorted(stuck)} held by no member for "
                                      f"{self.stuck_s:.0f} s; silent the longest")
        self._last_stuck_restart = time.monotonic()

    def stuck_partitions(self, now: float) -> list[int]:
        """Partitions with input acknowledged more than stuck_s ago above the last commit, and no commit
        for stuck_s."""
        old: dict[int, int] = {}
        for t, p, o in self.acks():
            if t < now - self.stuck_s:
                old[p] = max(old.get(p, -1), o)
        last = self.committed_offsets()
        last_at = self.last_commit_times()
        return sorted(p for p, o in old.items()
                      if o >= last.get(p, 0) and last_at.get(p, self.started_at) < now - self.stuck_s)

    # -- observations -------------------------------------------------------------------------

    def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        return sorted((dict(e, member=m.name) for m in self.history for e in m.snapshot(kind)), key=lambda e: e["t"])

    def committed_offsets(self) -> dict[int, int]:
        """Partition -> the highest next offset a member reported committed."""
        out: dict[int, int] = {}
        for m in self.history:
            for _, p, o in m.committed():
                out[p] = max(out.get(p, 0), o)
        return out

    def last_commit_times(self) -> dict[int, float]:
        out: dict[int, float] = {}
        for m in self.history:
            for t, p, _ in m.committed():
                out[p] = max(out.get(p, 0.0), t)
        return out

    def assignments(self) -> dict[str, list[int] | None]:
        return {n: m.assignment() for n, m in self.members.items() if m.alive()}

    def covered(self) -> set[int]:
        return {p for ps in self.assignments().values() for p in ps or []}

    def wait_progress(self, after: float, timeout: float) -> bool:
        """Waits until every partition had a commit after ``after``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            times = self.last_commit_times()
            if all(times.get(p, 0.0) > after for p in range(self.partitions)):
                return True
            time.sleep(0.2)
        return False

    def wait_caught_up(self, ends: Mapping[int, int], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            done = self.committed_offsets()
            if all(done.get(p, 0) >= end for p, end in ends.items()):
                return True
            time.sleep(0.5)
        return False

    def figures(self) -> dict[str, Any]:
        committed = self.events("committed")
        aborted = self.events("aborted")
        return {
            "processes": len(self.history),
            "transactions committed": len(committed),
            "records committed": sum(e.get("records", 0) for e in committed),
            "transactions aborted": dict(Counter(f"{e['why']}" + (f" ({e['error']})" if e.get("error") else "")
                                                 for e in aborted)),
            "records in injected aborts": sum(e.get("records", 0) for e in aborted if e["why"] == "injected"),
            "commit retries": dict(Counter(e["error"] for e in self.events("commit_retry"))),
            "init retries": len(self.events("init_retry")),
            "rewind failures": len(self.events("rewind_failed")),
            "restarts": dict(Counter(_reason(r.reason) for r in self.restarts)),
            "zombie members (stage: what the zombie's transaction did next)": dict(Counter(
                f"{stage}: {self.after_zombie(name, t)}" for name, stage, t in self.zombies)),
            "client errors": dict(Counter(_short(e["error"]) for e in self.events("error")).most_common(8)),
        }

    def after_zombie(self, name: str, frozen_at: float) -> str:
        """What the member's transaction did after it was resumed: committed, aborted (error), exited."""
        for e in self.events():
            if e["member"] != name or e["t"] <= frozen_at:
                continue
            if e["event"] == "committed":
                return "committed"
            if e["event"] == "aborted":
                return f"aborted ({e.get('error')})"
            if e["event"] in ("exiting", "exited"):
                return f"exited ({e.get('why') or e.get('code')})"
        return "nothing"

    def stuck_restarts(self) -> int:
        return sum(1 for r in self.restarts if r.reason.startswith("stuck"))

    def longest_without_commit(self, start: float, end: float) -> tuple[float, float]:
        """The longest time within [start, end] without any committed transaction, and when it began."""
        times = sorted(e["t"] for e in self.events("committed") if start <= e["t"] <= end)
        points = [start, *times, end]
        best, at = 0.0, start
        for a, b in zip(points, points[1:], strict=False):
            if b - a > best:
                best, at = b - a, a
        return best, at

    def explain(self) -> str:
        return "\n".join(m.tail() for m in self.history[-2 * len(self.names):])


def _reason(text: str) -> str:
    """A restart reason without its details (for counting)."""
    import re

    text = text.split(" (")[0]
    if text.startswith("stuck"):
        return "stuck"
    return re.sub(r" blocked for \d+ s", " blocked", text)


def _short(text: str) -> str:
    import re

    m = re.search(r"(_[A-Z_]+|[A-Z][A-Z_]{5,})", text)
    return m.group(1) if m else text[:60]


# ==============================================================================================
# The run


def cluster_settings(session_timeout_ms: int = 6000, replica_lag_time_max_ms: int = 10000) -> dict[str, str]:
    """Broker settings of the exactly-once run's cluster."""
    return {
        "zookeeper.session.timeout.ms": str(session_timeout_ms),
        "replica.lag.time.max.ms": str(replica_lag_time_max_ms),
        "min.insync.replicas": "2",
        "unclean.leader.election.enable": "false",
        "default.replication.factor": "3",
        "offsets.topic.num.partitions": "10",
        "transaction.state.log.num.partitions": "10",
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
        "group.initial.rebalance.delay.ms": "0",
    }


@dataclass
class EosSettings:
    duration: float = 180.0
    #: quiet seconds between a healed fault and the next one
    interval: tuple[float, float] = (3.0, 6.0)
    seed: int = 0
    faults: Sequence[str] = FAULTS
    #: "random": pick uniformly each time; "cycle": take ``faults`` in order, again and again (at least
    #: once each, even past ``duration``)
    schedule: str = "random"
    partitions: int = 3
    members: int = 3
    rate: float = 100.0
    abort_every: int = 10
    session_timeout_ms: int = 6000
    transaction_timeout_ms: int = 20000
    stuck_s: float = 60.0
    catch_up_timeout: float = 180.0
    #: librdkafka debug contexts for the members (to their logs), e.g. "eos,cgrp"
    debug: str = ""
    #: how often a killed broker is restarted only once its ZooKeeper registration expired (else 1-4 s
    #: after the kill, while its dead session may still hold the id)
    expiry: float = 0.5
    #: after healing a fault, wait (up to this many seconds) until the app committed a transaction on
    #: every partition again, so the next fault hits a working app (0: do not wait)
    settle: float = 0.0


@dataclass
class EosResult:
    settings: EosSettings
    source: str = ""
    sink: str = ""
    group: str = ""
    faults: Counter = field(default_factory=Counter)
    log: list[str] = field(default_factory=list)
    report: EosReport | None = None
    #: the negative control: B read with read_uncommitted (must show the aborted copies as duplicates)
    uncommitted: EosReport | None = None
    source_delivery: Any = None
    caught_up: bool = False
    ends: dict[int, int] = field(default_factory=dict)
    final_committed: dict[int, int] | None = None
    final_error: str | None = None
    replicas: dict[str, Any] = field(default_factory=dict)
    figures: dict[str, Any] = field(default_factory=dict)
    stuck_restarts: int = 0
    unhealed: list[str] = field(default_factory=list)
    producer_fatal: str | None = None
    longest_without_commit: tuple[float, float] = (0.0, 0.0)
    fault_seconds: float = 0.0
    total_seconds: float = 0.0
    error: str | None = None

    @property
    def control_ok(self) -> bool:
        """The negative control flagged the aborted copies (only expected when some were injected)."""
        injected = self.figures.get("records in injected aborts", 0)
        return self.uncommitted is not None and (injected == 0 or self.uncommitted.extra_copies > 0)

    @property
    def ok(self) -> bool:
        return (self.error is None and self.report is not None and self.report.ok and self.caught_up
                and self.final_committed == self.ends and self.control_ok
                and self.source_delivery is not None and self.source_delivery.ok and self.producer_fatal is None
                and all(r.identical for r in self.replicas.values()))

    def summary(self) -> str:
        s = self.settings
        lines = [
            "==== exactly-once run ====",
            f"seed {s.seed}; {self.fault_seconds:.0f} s of faults ({self.total_seconds:.0f} s in all); "
            f"faults: {', '.join(f'{k} ×{v}' for k, v in sorted(self.faults.items())) or 'none'}",
            f"A {self.source} → B {self.sink}, group {self.group}, {s.members} members, {s.partitions} partitions; "
            f"input {s.rate:.0f} msg/s",
        ]
        if self.error:
            lines.append(f"ERROR: {self.error}")
        for k, v in self.figures.items():
            lines.append(f"app: {k}: {v}")
        lines.append(f"app: longest time without a committed transaction: {self.longest_without_commit[0]:.1f} s "
                     f"(from {self.longest_without_commit[1]:.1f} s)")
        lines.append(f"app caught up with A's end offsets {self.ends}: {self.caught_up}; committed offsets read back "
                     f"{self.final_committed if self.final_error is None else self.final_error}"
                     f" — {'OK' if self.final_committed == self.ends else 'FAIL'}")
        if self.source_delivery is not None:
            lines.append("input A (acknowledged writes): " + self.source_delivery.summary().replace("\n", "; "))
        if self.producer_fatal:
            lines.append(f"input producer fatal error: {self.producer_fatal}")
        for name, r in self.replicas.items():
            lines.append(f"replicas of {name}: {r.summary()}")
        for line in self.unhealed:
            lines.append(f"not healed: {line}")
        if self.uncommitted is not None:
            lines.append(f"negative control, B read_uncommitted: {len(self.uncommitted.duplicated)} duplicated A records "
                         f"({self.uncommitted.extra_copies} extra copies) for "
                         f"{self.figures.get('records in injected aborts', 0)} records in injected aborts — "
                         f"{'flagged' if self.control_ok else 'NOT FLAGGED'}")
        if self.report is not None:
            lines.append("exactly-once check, B read_committed:")
            lines += [f"  {x}" for x in self.report.summary().splitlines()]
        r = self.report
        figures = (f"{len(r.lost)} lost, {len(r.duplicated)} duplicated, {len(r.reordered)} reordered of "
                   f"{r.source_records} records" if r is not None else "no check")
        lines.append(f"EOS: {'PASS' if self.ok else 'FAIL'} — {figures}")
        return "\n".join(lines)


class _Faults:
    def __init__(self, settings: EosSettings, chaos: Any, app: EosApp, source: str, sink: str,
                 offsets_partition: int, txn_partitions: int, say: Callable[[str], None]) -> None:
        self.s = settings
        self.chaos = chaos
        self.app = app
        self.source = source
        self.sink = sink
        self.offsets_partition = offsets_partition
        self.txn_partitions = txn_partitions
        self.say = say
        self.rng = random.Random(settings.seed)
        self._cycle = 0
        self._zombies = 0

    def next(self) -> str:
        if self.s.schedule == "cycle":
            name = self.s.faults[self._cycle % len(self.s.faults)]
            self._cycle += 1
            return name
        return self.rng.choice(list(self.s.faults))

    def pass_incomplete(self) -> bool:
        """With the "cycle" schedule: not every fault ran once yet (the run goes on past its duration)."""
        return self.s.schedule == "cycle" and self._cycle < len(self.s.faults)

    def txn_partition(self, member: str) -> int:
        from mafka.group.offsets_records import offsets_partition_for

        return offsets_partition_for(self.app.transactional_id(member), self.txn_partitions)

    def pick_broker(self) -> int:
        return self.rng.choice(self.chaos.broker_ids)

    def leader_or_any(self, topic: str, partition: int) -> int:
        leader = self.chaos.leader(topic, partition)
        return leader if leader > 0 else self.pick_broker()

    def kill_restart(self, broker: int, why: str) -> None:
        down = self.rng.uniform(1.0, 4.0)
        expiry = self.rng.random() < self.s.expiry
        self.say(f"{why}: SIGKILL broker {broker}, restart after {down:.1f} s"
                 + (" and its registration expired" if expiry else ""))
        self.chaos.kill(broker)
        self.chaos.restart(broker, min_down=down, timeout=90, wait_expiry=expiry)

    def pause_broker(self, broker: int, why: str, secs: float) -> None:
        self.say(f"{why}: SIGSTOP broker {broker} for {secs:.1f} s")
        self.chaos.pause(broker)
        time.sleep(secs)
        self.chaos.resume(broker)

    def inject(self, name: str) -> None:
        ch = self.chaos
        long_pause = ch.session_timeout_s + self.rng.uniform(2.0, 4.0)
        if name in ("kill-txn-coordinator", "pause-txn-coordinator"):
            member = self.rng.choice(self.app.names)
            p = self.txn_partition(member)
            b = self.leader_or_any(TXN_TOPIC, p)
            why = f"{name} (of {member}, {TXN_TOPIC}-{p})"
            if name.startswith("kill"):
                self.kill_restart(b, why)
            else:
                self.pause_broker(b, why + ", past the session timeout", long_pause)
        elif name in ("kill-group-coordinator", "pause-group-coordinator"):
            b = self.leader_or_any(OFFSETS_TOPIC, self.offsets_partition)
            why = f"{name} ({OFFSETS_TOPIC}-{self.offsets_partition})"
            if name.startswith("kill"):
                self.kill_restart(b, why)
            else:
                self.pause_broker(b, why + ", past the session timeout", long_pause)
        elif name == "kill-leader-source":
            p = self.rng.randrange(self.s.partitions)
            self.kill_restart(self.leader_or_any(self.source, p), f"{name} (A-{p})")
        elif name == "kill-leader-sink":
            p = self.rng.randrange(self.s.partitions)
            self.kill_restart(self.leader_or_any(self.sink, p), f"{name} (B-{p})")
        elif name == "kill-controller":
            c = ch.controller()
            self.kill_restart(c if c > 0 else self.pick_broker(), name)
        elif name == "pause-short":
            self.pause_broker(self.pick_broker(), name, self.rng.uniform(1.0, 3.0))
        elif name == "pause-long":
            topic = self.rng.choice([self.source, self.sink])
            b = self.leader_or_any(topic, self.rng.randrange(self.s.partitions)) if self.rng.random() < 0.5 \
                else self.pick_broker()
            self.pause_broker(b, name + " (past the session timeout)", long_pause)
        elif name == "kill-member":
            member = self.rng.choice(self.app.busy() or self.app.names)
            self.say(f"{name}: SIGKILL member {member} (holding {self.app.members[member].assignment()})")
            self.app.kill(member)
        elif name == "zombie-member":
            stage = ("produced", "offsets-sent")[self._zombies % 2]
            self._zombies += 1
            secs = self.s.session_timeout_ms / 1000.0 + self.rng.uniform(2.5, 3.5)
            event = None
            for _ in range(3):  # a member blocked in a client call does not get there: ask another one
                member = self.rng.choice(self.app.busy() or self.app.names)
                event = self.app.zombie(member, stage, secs)
                if event is not None:
                    break
                self.say(f"{name}: member {member} did not reach stage {stage!r} in time (not frozen)")
            if event is not None:
                self.say(f"{name}: member {member} stopped itself with its transaction's records in B "
                         f"({stage}; offsets {event['offsets']}), resumed after {secs:.1f} s "
                         f"(past the group session timeout)")
        elif name == "pause-member":
            member = self.rng.choice(self.app.busy() or self.app.names)
            secs = self.s.session_timeout_ms / 1000.0 + self.rng.uniform(2.0, 4.0)
            self.say(f"{name}: SIGSTOP member {member} for {secs:.1f} s (past the group session timeout)")
            self.app.pause(member)
            time.sleep(secs)
            self.app.resume(member)
        else:
            raise ValueError(f"unknown fault {name!r}")

    def heal(self, t0: float, unhealed: list[str]) -> None:
        try:
            for name in list(self.app.paused):
                self.app.resume(name)
            self.chaos.heal(timeout=90)
            self.chaos.wait_full_isr(self.source, range(self.s.partitions), timeout=90)
            self.chaos.wait_full_isr(self.sink, range(self.s.partitions), timeout=90)
            self.chaos.wait_full_isr(OFFSETS_TOPIC, [self.offsets_partition], timeout=90)
            self.chaos.wait_full_isr(TXN_TOPIC, sorted({self.txn_partition(n) for n in self.app.names}), timeout=90)
        except TimeoutError as exc:
            unhealed.append(f"{time.monotonic() - t0:.0f}s: {exc}")
            self.say(f"not healed in time: {exc}")
        if self.s.settle > 0:
            start = time.monotonic()
            if self.app.wait_progress(start, self.s.settle):
                self.say(f"app committed on every partition again after {time.monotonic() - start:.1f} s")
            else:
                unhealed.append(f"{time.monotonic() - t0:.0f}s: the app did not commit on every partition "
                                f"within {self.s.settle:.0f} s: last commits {self.app.last_commit_times()}")
                self.say(f"app not settled within {self.s.settle:.0f} s")


def run_eos(cluster: Any, settings: EosSettings, log_dir: Path, say: Callable[[str], None] | None = None,
            chaos: Any = None) -> EosResult:
    """The exactly-once chaos run on a running ``cluster`` (see the module docstring); never raises for a
    violation — the result says what happened (``result.ok``, ``result.summary()``)."""
    from mafka.group.offsets_records import offsets_partition_for

    from .chaos import Chaos, ContinuousProducer, create_topic, drain
    from .checker import check_delivery
    from .group_chaos import read_committed

    t0 = time.monotonic()
    result = EosResult(settings)
    own_chaos = chaos is None
    chaos = chaos or Chaos(cluster)

    def log(text: str) -> None:
        line = f"[{time.monotonic() - t0:7.1f}s] {text}"
        result.log.append(line)
        (say or print)(line)

    topic_configs = {"min.insync.replicas": "2", "unclean.leader.election.enable": "false"}
    producer: ContinuousProducer | None = None
    app: EosApp | None = None
    try:
        source = create_topic(cluster, partitions=settings.partitions, rf=3, chaos=chaos, configs=topic_configs,
                              name=f"eos-a-{uuid.uuid4().hex[:6]}")
        sink = create_topic(cluster, partitions=settings.partitions, rf=3, chaos=chaos, configs=topic_configs,
                            name=f"eos-b-{uuid.uuid4().hex[:6]}")
        result.source, result.sink = source, sink
        producer = ContinuousProducer(cluster.bootstrap, source, partitions=settings.partitions,
                                      rate=settings.rate).start()
        producer.wait_acks(min(50, int(settings.rate)), 60)
        app = EosApp(cluster.bootstrap, source, sink, settings.partitions, log_dir, members=settings.members,
                     session_timeout_ms=settings.session_timeout_ms,
                     transaction_timeout_ms=settings.transaction_timeout_ms, abort_every=settings.abort_every,
                     stuck_s=settings.stuck_s, acks=lambda: list(producer.acks), say=log, debug=settings.debug)
        result.group = app.group
        offsets_partition = offsets_partition_for(app.group, int(cluster.settings.get("offsets.topic.num.partitions", "50")))
        txn_partitions = int(cluster.settings.get("transaction.state.log.num.partitions", "50"))
        app.start()
        app.wait_ready(120)
        faults = _Faults(settings, chaos, app, source, sink, offsets_partition, txn_partitions, log)
        for p in [offsets_partition]:
            chaos.wait_full_isr(OFFSETS_TOPIC, [p], timeout=60)
        chaos.wait_full_isr(TXN_TOPIC, sorted({faults.txn_partition(n) for n in app.names}), timeout=60)
        log(f"A {source} at {settings.rate:.0f} msg/s → B {sink}; app {app.group}: members "
            f"{ {n: app.transactional_id(n) for n in app.names} }, group coordinator partition "
            f"{OFFSETS_TOPIC}-{offsets_partition} (broker {chaos.leader(OFFSETS_TOPIC, offsets_partition)}), "
            f"transaction coordinators "
            f"{ {n: (faults.txn_partition(n), chaos.leader(TXN_TOPIC, faults.txn_partition(n))) for n in app.names} }"
            f"; assignments {app.assignments()}")

        fault_start = time.monotonic()
        end = fault_start + settings.duration
        while time.monotonic() < end or faults.pass_incomplete():
            name = faults.next()
            result.faults[name] += 1
            try:
                faults.inject(name)
            except TimeoutError as exc:
                log(f"{name} did not complete: {exc}")
            faults.heal(t0, result.unhealed)
            log(f"healed; input acked {producer.acked()}, app committed {app.committed_offsets()}")
            quiet = faults.rng.uniform(*settings.interval)
            time.sleep(quiet if faults.pass_incomplete() else min(max(0.0, end - time.monotonic()), quiet))
        result.fault_seconds = time.monotonic() - fault_start
        faults.heal(t0, result.unhealed)
        producer.stop(flush_timeout=90)
        result.producer_fatal = producer.fatal
        got = drain(cluster.bootstrap, source, settings.partitions, timeout=120)
        result.source_delivery = check_delivery(producer.attempts, got.records)
        result.ends = dict(got.high_watermarks)
        log(f"input stopped: {producer.counts()}; A's end offsets {result.ends}; waiting (up to "
            f"{settings.catch_up_timeout:.0f} s) for the app to commit them")
        result.caught_up = app.wait_caught_up(result.ends, settings.catch_up_timeout)
        log(f"app {'caught up' if result.caught_up else 'did NOT catch up'}: committed {app.committed_offsets()}")
        app.stop()
        gap, at = app.longest_without_commit(fault_start, fault_start + result.fault_seconds)
        result.longest_without_commit = (gap, at - t0)
        result.figures = app.figures()
        result.stuck_restarts = app.stuck_restarts()
        try:
            result.final_committed = read_committed(cluster.bootstrap, app.group, source, settings.partitions, timeout=60)
        except TimeoutError as exc:
            result.final_error = str(exc)
        a = {p: [(c.offset, c.value) for c in got.records if c.partition == p] for p in range(settings.partitions)}
        b = read_topic(cluster.bootstrap, sink, settings.partitions, "read_committed",
                       timeout=settings.transaction_timeout_ms / 1000.0 + 90)
        result.report = check_exactly_once(a, b)
        b_all = read_topic(cluster.bootstrap, sink, settings.partitions, "read_uncommitted", timeout=60)
        result.uncommitted = check_exactly_once(a, b_all)
        for topic, short in ((source, "A"), (sink, "B")):
            for p in range(settings.partitions):
                result.replicas[f"{short} {topic}-{p}"] = chaos.wait_replicas_identical(topic, p, timeout=60)
    except Exception as exc:  # noqa: BLE001 - reported in the result
        import traceback

        result.error = f"{exc!r}\n{traceback.format_exc()}"
        log(f"run failed: {exc!r}")
        if app is not None:
            log(app.explain())
    finally:
        if producer is not None and producer.stopped_at is None:
            producer.stop(flush_timeout=10)
        if app is not None:
            if not result.figures:
                result.figures = app.figures()
            app.close()
        if own_chaos:
            chaos.close()
        result.total_seconds = time.monotonic() - t0
    return result


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "member":
        sys.exit(member_main(sys.argv[2:]))
    sys.exit("usage: python -m tests.harness.txn_chaos member --bootstrap … (see member_main)")
