"""Fault injection and workload for the replication chaos tests (over :class:`LocalCluster`).

* :class:`Chaos` — the fault injector and observer of one running cluster:

  - faults: :meth:`~Chaos.kill` (SIGKILL, or any signal), :meth:`~Chaos.pause`
    (SIGSTOP, optionally resumed by a timer), :meth:`~Chaos.resume`
    (SIGCONT), :meth:`~Chaos.terminate` (SIGTERM: a controlled shutdown),
    :meth:`~Chaos.restart` (waits until the old process is gone, optionally
    until its ``/brokers/ids`` registration has expired as Kafka's system
    tests do, and then until a new session holds the id), and
    :meth:`~Chaos.heal` (resume every paused broker, restart every dead one,
    wait until all are registered);
  - state, read from ZooKeeper with a kazoo client of its own: the partition
    state znode ``/brokers/topics/<t>/partitions/<p>/state`` (leader, leader
    epoch, ISR), the assignment, ``/controller``, ``/brokers/ids``; and the
    leader as a broker's Metadata answer reports it;
  - bounded waits on any of these (:meth:`~Chaos.wait_until` and friends);
  - replica logs: the concatenated ``*.log`` segment files of a partition on
    each broker (``<log.dirs>/<topic>-<p>/``, log dirs from ``cluster.json``),
    and :meth:`~Chaos.wait_replicas_identical`, which polls until every
    replica's bytes are equal (after the producers stopped) and otherwise
    returns the checker's divergence report;
  - an event log (``events``: monotonic time, what, broker) for printing.

* :class:`ContinuousProducer` — an idempotent confluent-kafka producer
  (``acks=all``, ``enable.idempotence=true``) in a background thread,
  producing unique values round-robin over explicit partitions at a fixed
  rate.  Every value becomes a :class:`~tests.harness.checker.Attempt`
  whose status the delivery report sets (acknowledged with partition and
  offset, or failed with the error); acknowledgement times are kept for
  availability figures (:meth:`~ContinuousProducer.max_gap`,
  :meth:`~ContinuousProducer.first_ack_after`).

* :func:`drain` — reads every partition from offset 0 up to the high
  watermark it asked for first (read-to-HW: a consumer never sees data above
  the HW, so everything acknowledged before the call is below it).

* :func:`raw_produce` — one Produce v7 request to one broker, by address, with
  no client-side retry or metadata: how a producer pinned to a stale leader
  behaves.  :func:`create_topic` creates a topic with kafka-python's admin
  client and waits until ZooKeeper shows a leader and a full ISR for every
  partition.

* the chaos tests' steps and verdicts (they fail the pytest test that calls them):
  :func:`running` (a :class:`ContinuousProducer` for a ``with`` block),
  :func:`kill_leader` (SIGKILL a partition's leader, restart it, wait for the
  full ISR; returns the failover figures), :func:`final_check` (drain, check
  delivery, require byte-identical replicas), :func:`explained` / :func:`explain`
  (the fault timeline and ZooKeeper's view attached to a failure).

Every wait is bounded and raises :class:`TimeoutError` with a description.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from .checker import (
    ACKED,
    FAILED,
    Attempt,
    Consumed,
    DeliveryReport,
    ReplicaReport,
    check_delivery,
    replica_divergence,
)
from .cluster import LocalCluster
from .waits import process_state, wait_dead, wait_until

__all__ = [
    "Chaos",
    "ContinuousProducer",
    "Drain",
    "create_topic",
    "drain",
    "explain",
    "explained",
    "final_check",
    "kill_leader",
    "process_state",
    "raw_produce",
    "running",
    "wait_until",
]

T = TypeVar("T")


@dataclass
class Event:
    at: float
    what: str
    broker: int
    detail: str = ""


class Chaos:
    """Faults and observations on one :class:`LocalCluster`; :meth:`close` resumes what it paused."""

    def __init__(self, cluster: LocalCluster) -> None:
        from kazoo.client import KazooClient

        self.cluster = cluster
        self.events: list[Event] = []
        self.paused: set[int] = set()
        self._timers: list[threading.Timer] = []
        self._lock = threading.Lock()
        self.zk = KazooClient(hosts=cluster.info["zookeeper"]["connect"], timeout=10)
        self.zk.start(timeout=20)
        self.session_timeout_s = int(cluster.settings.get("zookeeper.session.timeout.ms", "6000")) / 1000.0

    def close(self) -> None:
        for t in self._timers:
            t.cancel()
        for broker_id in sorted(self.paused):
            self.resume(broker_id)
        try:
            self.zk.stop()
            self.zk.close()
        except Exception:  # noqa: BLE001 - best effort at teardown
            pass

    # -- bookkeeping ----------------------------------------------------------------------

    @property
    def broker_ids(self) -> list[int]:
        return [b["id"] for b in self.cluster.info["brokers"]]

    def pid(self, broker_id: int) -> int:
        return self.cluster.broker(broker_id)["pid"]

    def note(self, what: str, broker: int = -1, detail: str = "") -> float:
        now = time.monotonic()
        with self._lock:
            self.events.append(Event(now, what, broker, detail))
        return now

    def alive(self, broker_id: int) -> bool:
        """The broker's process exists (running or stopped, not a zombie)."""
        return process_state(self.pid(broker_id)) not in (None, "Z", "X")

    def log_file(self, broker_id: int) -> str:
        return self.cluster.broker(broker_id)["log_file"]

    # -- ZooKeeper state --------------------------------------------------------------------

    def _json(self, path: str) -> Any:
        from kazoo.exceptions import NoNodeError

        try:
            data, _ = self.zk.get(path)
        except NoNodeError:
            return None
        return json.loads(data) if data else None

    def partition_state(self, topic: str, partition: int) -> dict[str, Any] | None:
        """The state znode: ``{"leader", "leader_epoch", "isr", "controller_epoch", "version"}``."""
        return self._json(f"/brokers/topics/{topic}/partitions/{partition}/state")

    def leader(self, topic: str, partition: int) -> int:
        """The leader per ZooKeeper (-1: none)."""
        state = self.partition_state(topic, partition)
        return -1 if state is None else int(state["leader"])

    def leader_epoch(self, topic: str, partition: int) -> int:
        state = self.partition_state(topic, partition)
        return -1 if state is None else int(state["leader_epoch"])

    def isr(self, topic: str, partition: int) -> list[int]:
        state = self.partition_state(topic, partition)
        return [] if state is None else [int(r) for r in state["isr"]]

    def replicas(self, topic: str, partition: int) -> list[int]:
        """The assigned replicas, in assignment order."""
        assignment = self._json(f"/brokers/topics/{topic}")
        if assignment is None:
            return []
        return [int(r) for r in assignment["partitions"][str(partition)]]

    def controller(self) -> int:
        """The controller per ``/controller`` (-1: none)."""
        node = self._json("/controller")
        return -1 if node is None else int(node["brokerid"])

    def registered(self) -> set[int]:
        from kazoo.exceptions import NoNodeError

        try:
            return {int(c) for c in self.zk.get_children("/brokers/ids")}
        except NoNodeError:
            return set()

    def metadata_leader(self, topic: str, partition: int, via: int | None = None, timeout: float = 5.0) -> int:
        """The leader as a live, running broker's Metadata answer reports it (-1: none)."""
        from .raw_client import BlockingClient

        candidates = [via] if via is not None else [b for b in self.broker_ids if self.alive(b) and b not in self.paused]
        for b in candidates:
            info = self.cluster.broker(b)
            try:
                with BlockingClient(f"{info['host']}:{info['port']}", client_id="chaos", timeout_s=timeout) as client:
                    md = client.metadata([topic], timeout=timeout)
            except Exception:  # noqa: BLE001 - try the next broker
                continue
            for t in md.topics:
                if t.name == topic:
                    for p in t.partitions:
                        if p.partition_index == partition:
                            return p.leader_id
        return -1

    # -- waits ------------------------------------------------------------------------------

    def wait_until(self, predicate: Callable[[], T], timeout: float, what: str, interval: float = 0.1) -> T:
        return wait_until(predicate, timeout, what, interval)

    def wait_leader(self, topic: str, partition: int, timeout: float = 30.0,
                    not_in: Iterable[int] = ()) -> int:
        """Waits until the partition has a leader (outside ``not_in``); returns it."""
        excluded = set(not_in)

        def ok() -> int:
            leader = self.leader(topic, partition)
            return leader if leader >= 0 and leader not in excluded else 0

        return self.wait_until(ok, timeout, f"{topic}-{partition} has no leader outside {sorted(excluded)}")

    def wait_isr(self, topic: str, partition: int, want: Callable[[set[int]], bool] | Iterable[int],
                 timeout: float = 30.0, what: str = "") -> list[int]:
        """Waits until the ISR satisfies ``want`` (a predicate, or exactly this set); returns it."""
        if not callable(want):
            wanted = set(want)

            def want_fn(isr: set[int]) -> bool:
                return isr == wanted

            desc = what or f"ISR of {topic}-{partition} == {sorted(wanted)}"
        else:
            want_fn = want
            desc = what or f"ISR of {topic}-{partition} as wanted"
        last: list[list[int]] = [[]]

        def ok() -> list[int] | None:
            last[0] = self.isr(topic, partition)
            return last[0] if last[0] and want_fn(set(last[0])) else None

        try:
            return self.wait_until(ok, timeout, desc)
        except TimeoutError as exc:
            raise TimeoutError(f"{exc}; last ISR {last[0]}") from None

    def wait_full_isr(self, topic: str, partitions: Iterable[int], timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        for p in partitions:
            replicas = set(self.replicas(topic, p))
            self.wait_isr(topic, p, replicas, timeout=max(0.5, deadline - time.monotonic()),
                          what=f"ISR of {topic}-{p} is all of {sorted(replicas)}")

    def wait_registered(self, broker_id: int, timeout: float = 60.0) -> None:
        self.wait_until(lambda: broker_id in self.registered(), timeout, f"broker {broker_id} registered")

    def wait_unregistered(self, broker_id: int, timeout: float | None = None) -> float:
        """Waits until ``/brokers/ids/<id>`` is gone (its session expired); returns when."""
        timeout = self.session_timeout_s * 2 + 10 if timeout is None else timeout
        self.wait_until(lambda: broker_id not in self.registered(), timeout,
                        f"broker {broker_id}'s registration expired", interval=0.05)
        return self.note("unregistered", broker_id)

    def wait_dead(self, broker_id: int, timeout: float = 60.0) -> float:
        return wait_dead(self.pid(broker_id), timeout, interval=0.02)

    # -- faults -----------------------------------------------------------------------------

    def kill(self, broker_id: int, sig: int = signal.SIGKILL) -> float:
        """Sends ``sig`` to the broker's process; returns the monotonic time it was sent."""
        if getattr(self.cluster, "shared", False):
            self.cluster.refuse_if_shared(f"{signal.Signals(sig).name} to broker {broker_id}")
        at = self.note(signal.Signals(sig).name, broker_id)
        os.kill(self.pid(broker_id), sig)
        if sig == signal.SIGKILL:
            self.paused.discard(broker_id)
        return at

    def terminate(self, broker_id: int) -> float:
        """SIGTERM: a controlled shutdown."""
        return self.kill(broker_id, signal.SIGTERM)

    def pause(self, broker_id: int, seconds: float | None = None) -> float:
        """SIGSTOP; with ``seconds``, a timer sends SIGCONT that much later."""
        at = self.kill(broker_id, signal.SIGSTOP)
        self.paused.add(broker_id)
        if seconds is not None:
            timer = threading.Timer(seconds, self.resume, args=(broker_id,))
            timer.daemon = True
            self._timers.append(timer)
            timer.start()
        return at

    def resume(self, broker_id: int) -> float:
        """SIGCONT (harmless if the broker is not stopped)."""
        at = self.note("SIGCONT", broker_id)
        try:
            os.kill(self.pid(broker_id), signal.SIGCONT)
        except ProcessLookupError:
            pass
        self.paused.discard(broker_id)
        return at

    def registration_owner(self, broker_id: int) -> int | None:
        """The ZooKeeper session holding ``/brokers/ids/<id>`` (None: not registered)."""
        stat = self.zk.exists(f"/brokers/ids/{broker_id}")
        return None if stat is None else stat.ephemeralOwner

    def restart(self, broker_id: int, timeout: float = 60.0, min_down: float = 0.0,
                wait_registered: bool = True, wait_expiry: bool = True) -> float:
        """Restarts a dead broker ``min_down`` seconds after it died at the earliest; returns the
        time of the restart.

        With ``wait_expiry`` (Kafka's system tests do this after a hard kill) the restart also
        waits until the old ``/brokers/ids`` registration has expired; without it the new
        process starts while the dead session still holds the id (the broker must wait for it).
        With ``wait_registered`` it then waits until a new session holds the id.
        """
        died = self.wait_dead(broker_id, timeout)
        old_owner = self.registration_owner(broker_id)
        if wait_expiry:
            self.wait_unregistered(broker_id)
        rest = min_down - (time.monotonic() - died)
        if rest > 0:
            time.sleep(rest)
        at = self.note("restart", broker_id)
        self.cluster.restart(broker_id)
        if wait_registered:
            def registered_anew() -> bool:
                owner = self.registration_owner(broker_id)
                return owner is not None and owner != old_owner

            self.wait_until(registered_anew, timeout + (0 if wait_expiry else 2 * self.session_timeout_s),
                            f"broker {broker_id} registered again")
            self.note("registered", broker_id)
        return at

    def restart_soon(self, broker_id: int, after: float, timeout: float = 60.0) -> Callable[[float], None]:
        """Restarts the broker in the background ``after`` seconds after it died, without waiting for
        its old registration to expire; returns ``join(timeout)``, which waits until it registered
        again (re-raising what went wrong)."""
        failure: list[BaseException] = []

        def run() -> None:
            try:
                self.restart(broker_id, timeout=timeout, min_down=after, wait_expiry=False)
            except BaseException as exc:  # noqa: BLE001 - handed to join()
                failure.append(exc)

        thread = threading.Thread(target=run, name=f"restart-{broker_id}", daemon=True)
        thread.start()

        def join(wait: float) -> None:
            thread.join(wait)
            if thread.is_alive():
                raise TimeoutError(f"broker {broker_id} was not restarted and registered within {wait:.0f} s")
            if failure:
                raise failure[0]

        return join

    def kill_and_restart(self, broker_id: int, down_for: float = 3.0, timeout: float = 60.0,
                         wait_expiry: bool = False) -> float:
        """SIGKILL, then a restart ``down_for`` seconds later (see :meth:`restart`)."""
        at = self.kill(broker_id)
        self.restart(broker_id, timeout=timeout, min_down=down_for, wait_expiry=wait_expiry)
        return at

    def heal(self, timeout: float = 90.0) -> None:
        """Resumes paused brokers, restarts dead ones, waits until every broker is registered."""
        for t in self._timers:
            t.cancel()
        for b in list(self.paused):
            self.resume(b)
        for b in self.broker_ids:
            if not self.alive(b):
                self.restart(b, timeout=timeout, wait_registered=False)
        deadline = time.monotonic() + timeout
        for b in self.broker_ids:
            self.wait_registered(b, max(1.0, deadline - time.monotonic()))

    # -- replica logs -----------------------------------------------------------------------

    def partition_dir(self, broker_id: int, topic: str, partition: int) -> Path | None:
        for d in self.cluster.broker(broker_id)["log_dirs"]:
            path = Path(d) / f"{topic}-{partition}"
            if path.is_dir():
                return path
        return None

    def segment_bytes(self, broker_id: int, topic: str, partition: int) -> bytes:
        """The partition's ``*.log`` segments on one broker, concatenated in offset order."""
        path = self.partition_dir(broker_id, topic, partition)
        if path is None:
            return b""
        out = bytearray()
        for seg in sorted(path.glob("*.log")):
            try:
                out += seg.read_bytes()
            except FileNotFoundError:  # rolled away or deleted while we listed
                continue
        return bytes(out)

    def replica_logs(self, topic: str, partition: int) -> dict[int, bytes]:
        return {r: self.segment_bytes(r, topic, partition) for r in self.replicas(topic, partition)}

    def wait_replicas_identical(self, topic: str, partition: int, timeout: float = 30.0,
                                upto: int | None = None) -> ReplicaReport:
        """Polls until the replicas' bytes are identical; returns the last report either way."""
        deadline = time.monotonic() + timeout
        while True:
            report = replica_divergence(self.replica_logs(topic, partition), upto=upto)
            if report.identical or time.monotonic() >= deadline:
                return report
            time.sleep(0.5)


# ----------------------------------------------------------------------------------------------
# Topics


def create_topic(cluster: LocalCluster, partitions: int = 3, rf: int = 3, configs: dict[str, str] | None = None,
                 name: str | None = None, chaos: Chaos | None = None, timeout: float = 60.0) -> str:
    """Creates a topic (kafka-python admin) and waits for a leader and a full ISR everywhere."""
    from kafka.admin import KafkaAdminClient, NewTopic

    name = name or f"chaos-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30000)
    try:
        admin.create_topics([NewTopic(name, partitions, rf, topic_configs=configs or {})], timeout_ms=30000)
    finally:
        admin.close()
    own = chaos is None
    chaos = chaos or Chaos(cluster)
    try:
        deadline = time.monotonic() + timeout
        for p in range(partitions):
            chaos.wait_leader(name, p, timeout=max(0.5, deadline - time.monotonic()))
        chaos.wait_full_isr(name, range(partitions), timeout=max(0.5, deadline - time.monotonic()))
        # Every broker must know the leaders before clients start (metadata propagation).
        for p in range(partitions):
            leader = chaos.leader(name, p)
            for b in chaos.broker_ids:
                chaos.wait_until(lambda b=b, p=p, leader=leader: chaos.metadata_leader(name, p, via=b) == leader,
                                 max(0.5, deadline - time.monotonic()), f"broker {b} knows the leader of {name}-{p}",
                                 interval=0.2)
    finally:
        if own:
            chaos.close()
    return name


# ----------------------------------------------------------------------------------------------
# Workload


@dataclass
class ContinuousProducer:
    """An idempotent acks=all confluent-kafka producer in a background thread; see the module docstring.

    Values are ``<tag>-<n>`` (unique), sent to partition ``n % partitions``
    at ``rate`` messages per second (at most ``max_outstanding`` unanswered).
    """

    bootstrap: str
    topic: str
    partitions: int = 3
    rate: float = 200.0
    tag: str = field(default_factory=lambda: uuid.uuid4().hex[:6])
    config: dict[str, Any] = field(default_factory=dict)
    max_outstanding: int = 20000
    #: the producer class: confluent-kafka's, or one with its API (``mafka.client.Producer``)
    factory: Any = None
    #: the headers of message ``n`` (None: no headers), e.g. a delayed-message header
    headers_for: Callable[[int], list[tuple[str, bytes]] | None] | None = None
    attempts: list[Attempt] = field(default_factory=list)
    #: (monotonic time, partition, offset) of each acknowledgement, in arrival order
    acks: list[tuple[float, int, int]] = field(default_factory=list)
    #: (monotonic time, error text) from delivery reports and the error callback
    errors: list[tuple[float, str]] = field(default_factory=list)
    fatal: str | None = None
    #: monotonic time the producer stopped sending (None while it runs)
    stopped_at: float | None = None

    def __post_init__(self) -> None:
        self._by_value: dict[bytes, Attempt] = {}
        self._stop = threading.Event()
        self._stopped = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._outstanding = 0

    # -- life cycle ---------------------------------------------------------------------------

    def start(self) -> ContinuousProducer:
        self._thread = threading.Thread(target=self._run, name=f"producer-{self.tag}", daemon=True)
        self._thread.start()
        return self

    def stop(self, flush_timeout: float = 60.0) -> list[Attempt]:
        """Stops producing, waits up to ``flush_timeout`` for outstanding reports; returns the attempts."""
        self._flush_timeout = flush_timeout
        self.stopped_at = time.monotonic()
        self._stop.set()
        if self._thread is not None:
            self._thread.join(flush_timeout + 30)
        return self.attempts

    def __enter__(self) -> ContinuousProducer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        if not self._stop.is_set():
            self.stop()

    def _run(self) -> None:
        if self.factory is not None:
            Producer = self.factory  # noqa: N806 - a class
        else:
            from confluent_kafka import Producer

        conf = {
            "bootstrap.servers": self.bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            "message.timeout.ms": 120000,
            # Broker-side acks=all wait, and the client-side bound on a request (librdkafka's
            # default, 60 s, keeps an idempotent producer waiting that long on a frozen leader
            # before it may move the partition to the new one).
            "request.timeout.ms": 8000,
            "socket.timeout.ms": 12000,
            "retry.backoff.ms": 100,
            "retry.backoff.max.ms": 500,
            "reconnect.backoff.ms": 50,
            "reconnect.backoff.max.ms": 500,
            "topic.metadata.refresh.interval.ms": 5000,
            "error_cb": self._on_error,
            "logger": logging.getLogger("chaos.producer"),
        }
        conf.update(self.config)
        try:
            producer = Producer(conf)
        except Exception as exc:  # noqa: BLE001 - reported through `fatal`
            self.fatal = f"Producer() raised {exc!r}"
            self._stopped.set()
            return
        interval = 1.0 / self.rate
        n = 0
        next_at = time.monotonic()
        try:
            while not self._stop.is_set():
                now = time.monotonic()
                if now < next_at:
                    producer.poll(min(next_at - now, 0.02))
                    continue
                if self._outstanding >= self.max_outstanding:
                    producer.poll(0.02)
                    next_at = time.monotonic()
                    continue
                value = f"{self.tag}-{n}".encode()
                partition = n % self.partitions
                attempt = Attempt(value, partition, sent_at=time.monotonic())
                try:
                    headers = self.headers_for(n) if self.headers_for is not None else None
                    producer.produce(self.topic, value=value, partition=partition, on_delivery=self._on_delivery,
                                     **({"headers": headers} if headers else {}))
                except BufferError:
                    producer.poll(0.05)
                    continue
                except Exception as exc:  # noqa: BLE001 - a fatal producer error ends the workload
                    self.fatal = f"produce raised {exc!r}"
                    break
                with self._lock:
                    self.attempts.append(attempt)
                    self._by_value[value] = attempt
                    self._outstanding += 1
                n += 1
                next_at += interval
                if next_at < now - 1.0:  # fell behind (e.g. a GC pause): do not burst
                    next_at = now
                producer.poll(0)
            remaining = producer.flush(getattr(self, "_flush_timeout", 60.0))
            if remaining:
                producer.purge(in_queue=True, in_flight=True)
                producer.poll(1.0)
        finally:
            close = getattr(producer, "close", None)  # mafka.client's producer stops its thread
            if close is not None:
                close()
            del producer
            self._stopped.set()

    def _on_error(self, err: Any) -> None:
        with self._lock:
            self.errors.append((time.monotonic(), f"error_cb: {err}"))
            if err.fatal():
                self.fatal = str(err)

    def _on_delivery(self, err: Any, msg: Any) -> None:
        now = time.monotonic()
        with self._lock:
            attempt = self._by_value.get(msg.value())
            if attempt is None:
                return
            self._outstanding -= 1
            if err is None:
                attempt.status = ACKED
                attempt.partition = msg.partition()
                # librdkafka reports no offset (None) for a message it cannot place, e.g. one
                # retried under a bumped idempotent epoch; the checker then skips its position.
                offset = msg.offset()
                attempt.offset = -1 if offset is None else offset
                attempt.acked_at = now
                self.acks.append((now, msg.partition(), attempt.offset))
            else:
                attempt.status = FAILED
                attempt.error = err.name() if hasattr(err, "name") else str(err)
                self.errors.append((now, f"delivery of {msg.value()!r}: {err}"))
                if err.fatal():
                    self.fatal = str(err)

    # -- observations -----------------------------------------------------------------------

    def acked(self) -> int:
        with self._lock:
            return len(self.acks)

    def ack_times(self, partition: int | None = None) -> list[float]:
        with self._lock:
            return [t for t, p, _ in self.acks if partition is None or p == partition]

    def wait_acks(self, n: int, timeout: float, after: float | None = None, partition: int | None = None) -> float:
        """Waits until ``n`` acknowledgements arrived (after ``after``, on ``partition``); returns the last one's time."""
        def enough() -> float:
            times = [t for t in self.ack_times(partition) if after is None or t > after]
            return times[n - 1] if len(times) >= n else 0.0

        where = "" if partition is None else f" on partition {partition}"
        return wait_until(enough, timeout, f"{n} acknowledgements{where} (fatal: {self.fatal}; "
                                      f"last errors: {self.errors[-3:]})", interval=0.05)

    def first_ack_after(self, t: float, partition: int | None = None) -> float | None:
        times = [x for x in self.ack_times(partition) if x > t]
        return min(times) if times else None

    def max_gap(self, start: float, end: float, partition: int | None = None) -> tuple[float, float]:
        """The longest time without an acknowledgement within [start, end], and when it began.

        ``end`` is cut at the moment the producer was stopped (no acks are expected after it).
        """
        if self.stopped_at is not None:
            end = min(end, self.stopped_at)
        times = sorted(x for x in self.ack_times(partition) if start <= x <= end)
        points = [start] + times + [end]
        best, at = 0.0, start
        for a, b in zip(points, points[1:], strict=False):
            if b - a > best:
                best, at = b - a, a
        return best, at

    def counts(self) -> dict[str, int]:
        with self._lock:
            out = {"attempted": len(self.attempts), "acked": len(self.acks)}
            out["failed"] = sum(1 for a in self.attempts if a.status == FAILED)
            return out


@dataclass
class Drain:
    records: list[Consumed]
    high_watermarks: dict[int, int]
    complete: bool

    def __len__(self) -> int:
        return len(self.records)


def drain(bootstrap: str, topic: str, partitions: int, timeout: float = 60.0) -> Drain:
    """Reads every partition from offset 0 up to its high watermark (asked for first)."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": f"chaos-drain-{uuid.uuid4().hex[:6]}",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "isolation.level": "read_uncommitted",
        "fetch.wait.max.ms": 100,
        "topic.metadata.refresh.interval.ms": 2000,
    })
    deadline = time.monotonic() + timeout
    records: list[Consumed] = []
    hw: dict[int, int] = {}
    try:
        for p in range(partitions):
            while True:
                try:
                    hw[p] = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=5.0, cached=False)[1]
                    break
                except KafkaException:
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"no high watermark for {topic}-{p}") from None
                    time.sleep(0.5)
        position = dict.fromkeys(range(partitions), 0)
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        while any(position[p] < hw[p] for p in range(partitions)) and time.monotonic() < deadline:
            for m in consumer.consume(1000, timeout=0.5):
                if m.error() is not None:
                    continue
                records.append(Consumed(m.partition(), m.offset(), m.value()))
                position[m.partition()] = max(position[m.partition()], m.offset() + 1)
        complete = all(position[p] >= hw[p] for p in range(partitions))
    finally:
        consumer.close()
    return Drain(records, hw, complete)


def raw_produce(host: str, port: int, topic: str, partition: int, values: list[bytes], acks: int = -1,
                timeout_ms: int = 5000, socket_timeout: float = 30.0) -> tuple[int, int]:
    """One Produce v7 request straight to ``host:port``: ``(error code, base offset)``.

    Raises OSError when the broker does not answer within ``socket_timeout``.
    """
    from mafka.wire.records import Record, build_batch

    from .raw_client import BlockingClient

    now = int(time.time() * 1000)
    batch = build_batch([Record(i, now, None, v) for i, v in enumerate(values)])
    body = {"acks": acks, "timeout_ms": timeout_ms,
            "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": batch}]}]}
    with BlockingClient(f"{host}:{port}", client_id="chaos-raw", timeout_s=socket_timeout) as client:
        response = client.send_once((host, port), 0, 7, body, socket_timeout)
    part = response.responses[0].partition_responses[0]
    return part.error_code, part.base_offset


@contextmanager
def healed(cluster: Any) -> Iterator[Chaos]:
    """A :class:`Chaos` for ``cluster`` with every broker running and registered on entry and on exit."""
    ch = Chaos(cluster)
    try:
        ch.heal()
        yield ch
    finally:
        try:
            ch.heal()
        finally:
            ch.close()


# ----------------------------------------------------------------------------------------------
# The chaos tests' verdicts and steps (failing the pytest test that calls them)


def explain(chaos: Chaos, topic: str, partitions: int = 1, producer: ContinuousProducer | None = None) -> str:
    """What a failing assertion should show: the fault timeline, ZooKeeper's view, where the logs are."""
    t0 = chaos.events[0].at if chaos.events else time.monotonic()
    lines = [f"cluster dir {chaos.cluster.directory} (broker logs: broker-N/server.log)"]
    lines += [f"  +{e.at - t0:7.2f}s {e.what} broker {e.broker} {e.detail}" for e in chaos.events]
    for p in range(partitions):
        lines.append(f"  {topic}-{p}: state {chaos.partition_state(topic, p)} replicas {chaos.replicas(topic, p)}")
    lines.append(f"  registered {sorted(chaos.registered())}, controller {chaos.controller()}")
    if producer is not None:
        lines.append(f"  producer {producer.counts()} fatal {producer.fatal}; last errors {producer.errors[-3:]}")
    return "\n".join(lines)


def final_check(cluster: LocalCluster, chaos: Chaos, topic: str, partitions: int, attempts: Iterable[Attempt],
                producer: ContinuousProducer | None = None) -> DeliveryReport:
    """Drain to the HW, check delivery, require byte-identical replicas; returns the delivery report."""
    with explained(chaos, topic, partitions, producer):
        chaos.wait_full_isr(topic, range(partitions), timeout=60)
    got = drain(cluster.bootstrap, topic, partitions, timeout=60)
    report = check_delivery(attempts, got.records)
    why = explain(chaos, topic, partitions, producer)
    assert got.complete, f"the drain did not reach the high watermarks {got.high_watermarks}\n{why}"
    assert report.ok, f"{report.summary()}\n{why}"
    for p in range(partitions):
        replicas = chaos.wait_replicas_identical(topic, p, timeout=30)
        assert replicas.identical, f"{topic}-{p} replicas differ: {replicas.summary()}\n{why}"
    return report


@contextmanager
def explained(chaos: Chaos, topic: str, partitions: int = 1, producer: ContinuousProducer | None = None) -> Iterator[None]:
    """A wait that times out fails the test with the fault timeline and ZooKeeper's view attached."""
    try:
        yield
    except TimeoutError as exc:
        import pytest

        pytest.fail(f"{exc}\n{explain(chaos, topic, partitions, producer)}")


@contextmanager
def running(producer: ContinuousProducer, chaos: Chaos) -> Iterator[ContinuousProducer]:
    """Starts the producer; stops it at the end (waiting for its outstanding acks only on success).
    A wait that times out inside fails the test with :func:`explain`'s account attached."""
    producer.start()
    ok = False
    try:
        yield producer
        ok = True
    except TimeoutError as exc:
        import pytest

        producer.stop(flush_timeout=5)
        pytest.fail(f"{exc}\n{explain(chaos, producer.topic, producer.partitions, producer)}")
    finally:
        if not producer.stopped_at:
            producer.stop(flush_timeout=60 if ok else 5)


def kill_leader(chaos: Chaos, producer: ContinuousProducer, topic: str, partition: int) -> dict[str, float]:
    """SIGKILL the partition's leader, restart it 3 s later (its dead session still holds its id
    then), wait until it is back in every ISR; returns the failover figures.

    A leader that is also the controller is restarted only once its successor is elected: its
    restarted process registers the moment its old session expires, which is also when the
    next controller takes over — and a controller that finds the leader registered (again)
    rightly leaves the partition where it is, so no failover would be seen (Kafka alike)."""
    victim = chaos.leader(topic, partition)
    is_controller = victim == chaos.controller()
    killed = chaos.kill(victim)
    restarted = None if is_controller else chaos.restart_soon(victim, after=3.0)
    new = chaos.wait_leader(topic, partition, timeout=chaos.session_timeout_s + 20, not_in=[victim])
    elected = time.monotonic()
    if restarted is None:
        restarted = chaos.restart_soon(victim, after=0.0)
    # An ack that arrives 0.5 s after the SIGKILL cannot come from the killed process.
    first = producer.wait_acks(1, 30, after=killed + 0.5, partition=partition)
    restarted(60)
    chaos.wait_full_isr(topic, range(producer.partitions), timeout=60)
    figures = {"victim": victim, "successor": new, "elected": elected - killed, "first_ack": first - killed}
    print(f"SIGKILL leader {victim} of {topic}-{partition}: broker {new} elected after {figures['elected']:.2f} s, "
          f"first acks=all ack on the successor {figures['first_ack']:.2f} s after the SIGKILL")
    return figures
