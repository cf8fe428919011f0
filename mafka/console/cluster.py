"""Reading the cluster for the console's pages: one :class:`ClusterReader` per admin client.

Every read goes through an :class:`~mafka.client.AdminClient` (``admin``: any object with
its methods, so unit tests pass a plain fake) or, for the requests it has no method for,
the :class:`~mafka.console.wire.Wire` over that same client; so the console works against
Apache Kafka as against Mafka.  Each call is bounded by ``timeout`` seconds, and the
per-broker probes (DescribeLogDirs) by ``probe_timeout``: a broker that does not answer
within it is shown as down, with Kafka's name for why (``_TRANSPORT``, ``_TIMED_OUT``).

Failures of a whole read raise :class:`~mafka.console.errors.ConsoleError` (the page shows
its name); failures of a part (one broker's log dirs, a topic's configs) are kept in the
result's ``error`` fields and notices, and the rest is still shown.

Brokers that Metadata listed once and no longer lists (a broker whose ZooKeeper session
expired) are remembered and shown as down, "not registered", so an operator still sees them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from mafka.client.admin import (
    AdminClient,
    ConfigResource,
    ConfigSource,
    ConsumerGroupTopicPartitions,
    OffsetSpec,
    ResourceType,
)
from mafka.client.message import TopicPartition
from mafka.client.metadata import BrokerInfo
from mafka.client.metadata_view import ClusterMetadataView
from mafka.group.consumer_protocol import decode_assignment

from . import metrics as prom
from .errors import ConsoleError, code_name, console_error, error_name
from .model import (
    Broker,
    BrokerDisk,
    ConfigRow,
    GroupDetail,
    GroupPartitionRow,
    GroupRow,
    LogDir,
    MemberRow,
    Notice,
    PartitionRow,
    ReassignmentRow,
    TopicDetail,
    TopicRow,
    TransactionRow,
)
from .wire import (
    DESCRIBE_LOG_DIRS,
    DESCRIBE_TRANSACTIONS,
    LIST_TRANSACTIONS,
    MAFKA_CHANNEL,
    MAFKA_DESCRIBE_DELAYED,
    METADATA,
    Call,
    Wire,
)

__all__ = ["ClusterReader", "OPEN_TRANSACTION_STATES", "DEFAULT_TRANSACTION_MAX_TIMEOUT_MS"]

#: a transaction in these states has begun and not yet been completed
OPEN_TRANSACTION_STATES = ("Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence")
#: Kafka's default ``transaction.max.timeout.ms`` (15 minutes)
DEFAULT_TRANSACTION_MAX_TIMEOUT_MS = 900_000

_THROTTLES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
_REBALANCER_PREFIX = "mafka.rebalancer."


def answer_error(answer: Any) -> str | None:
    """Kafka's name for what went wrong with one broker's answer: the exception the request
    failed with, or the response's top-level error code; None for a good answer."""
    if isinstance(answer, BaseException):
        return error_name(answer)
    code = int(getattr(answer, "error_code", 0))
    return code_name(code) if code else None


def broker_text(b: Any) -> str | None:
    """A coordinator or broker as the pages name it: ``id (host:port)``."""
    if b is None:
        return None
    return f"{b.id} ({b.host}:{b.port})"


class ClusterReader:
    """The pages' reads over one admin client (see the module docstring).

    ``scrapes`` gives the latest Prometheus scrapes and ``rates`` the topics' messages/s,
    both kept by the :class:`~mafka.console.sampler.Sampler` (empty when it does not run).
    """

    def __init__(self, admin: AdminClient, wire: Wire, timeout: float = 10.0, probe_timeout: float = 3.0,
                 scrapes: Callable[[], list[prom.Scrape]] = list,
                 rates: Callable[[], dict[str, float]] = dict) -> None:
        self.admin = admin
        self.wire = wire
        self.timeout = timeout
        self.probe_timeout = min(probe_timeout, timeout)
        self._scrapes = scrapes
        self._rates = rates
        self._seen: dict[int, BrokerInfo] = {}
        self._lock = threading.Lock()

    # -- plumbing ------------------------------------------------------------------------

    def result(self, future: Any, what: str) -> Any:
        """A future's result within the timeout; a failure as :class:`ConsoleError`."""
        try:
            return future.result(self.timeout + 1.0)
        except Exception as exc:  # noqa: BLE001 - every failure becomes Kafka's error name
            raise console_error(exc, what) from None

    def metadata(self, topic: str | None = None) -> ClusterMetadataView:
        """Metadata of the whole cluster (or one topic), remembering the brokers it lists."""
        try:
            md = self.admin.list_topics(topic, timeout=self.timeout)
        except Exception as exc:  # noqa: BLE001
            raise console_error(exc, "Metadata") from None
        with self._lock:
            self._seen.update(md.brokers)
        return md

    def check_login(self) -> None:
        """Asks a bootstrap broker for Metadata through the wire, so that refused credentials
        are named as the broker named them (SASL_AUTHENTICATION_FAILED), not as a lost
        connection; then reads the cluster's metadata.

        Raises:
            ConsoleError: either failed.
        """
        (answer,) = self.wire.send_each([Call(-1, METADATA, {"topics": [], "allow_auto_topic_creation": False})],
                                        self.timeout)
        if isinstance(answer, BaseException):
            raise console_error(answer, "login")
        self.metadata()

    def _log_dirs(self, brokers: Iterable[int]) -> dict[int, Any]:
        """DescribeLogDirs (all partitions) at each broker: {broker: response or exception}."""
        ids = list(brokers)
        answers = self.wire.send_each([Call(b, DESCRIBE_LOG_DIRS, {"topics": None}) for b in ids],
                                      self.probe_timeout)
        return dict(zip(ids, answers, strict=True))

    def offsets(self, tps: Iterable[tuple[str, int]], spec: OffsetSpec, what: str
                 ) -> tuple[dict[tuple[str, int], int], str | None]:
        """ListOffsets at the leaders: {partition: offset} of those that answered, and the
        first failure's name (None if none failed)."""
        wanted = sorted(set(tps))
        if not wanted:
            return {}, None
        try:
            futures = self.admin.list_offsets({TopicPartition(t, p): spec for t, p in wanted},
                                              request_timeout=self.timeout)
        except Exception as exc:  # noqa: BLE001
            return {}, error_name(exc)
        out: dict[tuple[str, int], int] = {}
        failed: str | None = None
        for tp, fut in futures.items():
            try:
                out[(tp.topic, tp.partition)] = fut.result(self.timeout + 1.0).offset
            except Exception as exc:  # noqa: BLE001
                failed = failed or f"{error_name(exc)} ({what} of {tp.topic}-{tp.partition})"
        return out, failed

    def _scrapes_by_broker(self) -> dict[int, prom.Scrape]:
        return {s.target.broker: s for s in self._scrapes() if s.target.broker is not None}

    # -- brokers -------------------------------------------------------------------------

    @staticmethod
    def _dirs(answer: Any) -> list[LogDir]:
        dirs = []
        for r in answer.results:
            used = sum(p.partition_size for t in r.topics for p in t.partitions)
            total = getattr(r, "total_bytes", -1)
            usable = getattr(r, "usable_bytes", -1)
            dirs.append(LogDir(r.log_dir, code_name(r.error_code) if r.error_code else None, used,
                               total if total >= 0 else None, usable if usable >= 0 else None))
        return dirs

    def brokers(self) -> tuple[list[Broker], list[dict[str, Any]], str | None]:
        """(every broker, the metrics endpoints not tied to a broker, the cluster id).

        Raises:
            ConsoleError: Metadata failed (no broker reachable).
        """
        md = self.metadata()
        answers = self._log_dirs(sorted(md.brokers))
        scraped = self._scrapes_by_broker()
        rows = []
        for bid in sorted(md.brokers):
            info = md.brokers[bid]
            row = Broker(bid, info.host, info.port, info.rack, bid == md.controller_id, up=True)
            answer = answers[bid]
            problem = answer_error(answer)
            if isinstance(answer, BaseException):
                row.up, row.down_reason = False, problem
            elif problem is not None:
                row.dirs = [LogDir("(not described)", problem)]
            else:
                row.dirs = self._dirs(answer)
            scrape = scraped.get(bid)
            if scrape is not None and scrape.error is None:
                summary = prom.summary(scrape)
                row.slow = summary["slow"]
                row.dirs += [LogDir(d, reason or None, cold=True) for d, reason in summary["cold_dirs"]]
            rows.append(row)
        with self._lock:
            gone = {b: info for b, info in self._seen.items() if b not in md.brokers}
        for bid, info in sorted(gone.items()):
            rows.append(Broker(bid, info.host, info.port, info.rack, False, up=False,
                               down_reason="not registered", registered=False))
        endpoints = [prom.summary(s) for s in self._scrapes() if s.target.broker is None or s.error]
        return rows, endpoints, md.cluster_id

    # -- topics --------------------------------------------------------------------------

    def topics(self) -> tuple[list[TopicRow], list[Notice]]:
        """Every topic with its partition count, RF, under-replicated partitions, size and rate."""
        md = self.metadata()
        answers = self._log_dirs(sorted(md.brokers))
        notices = []
        sizes: dict[tuple[str, int], int] = {}
        for bid, answer in sorted(answers.items()):
            problem = answer_error(answer)
            if problem is not None:
                notices.append(Notice(problem, f"broker {bid}: DescribeLogDirs failed; sizes may be short"))
                continue
            for r in answer.results:
                for t in r.topics:
                    for p in t.partitions:
                        if not p.is_future_key:
                            key = (t.name, p.partition_index)
                            sizes[key] = max(sizes.get(key, 0), p.partition_size)
        rates = self._rates()
        rows = []
        for name, t in sorted(md.topics.items()):
            parts = list(t.partitions.values())
            known = [sizes[(name, p.id)] for p in parts if (name, p.id) in sizes]
            rows.append(TopicRow(
                name=name, partitions=len(parts),
                replication_factor=max((len(p.replicas) for p in parts), default=0),
                under_replicated=sum(1 for p in parts if len(p.isrs) < len(p.replicas)),
                internal=name.startswith("__"),
                size_bytes=sum(known) if known else None,
                messages_per_s=rates.get(name),
                error=t.error.name() if t.error is not None else None,
            ))
        return rows, notices

    def topic(self, name: str) -> TopicDetail:
        """One topic: configs, and per partition leader, replicas, ISR, log start/end, delayed pending.

        Raises:
            ConsoleError: Metadata failed, or the topic does not exist (UNKNOWN_TOPIC_OR_PARTITION).
        """
        md = self.metadata(name)
        t = md.topics.get(name)
        if t is None:
            raise ConsoleError("UNKNOWN_TOPIC_OR_PARTITION", f"topic {name!r}")
        if t.error is not None:
            raise ConsoleError(t.error.name(), f"topic {name!r}")
        rows = [PartitionRow(p.id, p.leader, list(p.replicas), list(p.isrs),
                             error=p.error.name() if p.error is not None else None)
                for _, p in sorted(t.partitions.items())]
        detail = TopicDetail(name, rows, [])
        try:
            detail.configs = self.configs(ConfigResource(ResourceType.TOPIC, name))
        except ConsoleError as exc:
            detail.configs_error = exc.name
        tps = [(name, r.partition) for r in rows]
        starts, failed_start = self.offsets(tps, OffsetSpec.earliest(), "log start")
        ends, failed_end = self.offsets(tps, OffsetSpec.latest(), "log end")
        detail.offsets_error = failed_start or failed_end
        for r in rows:
            r.log_start = starts.get((name, r.partition))
            r.log_end = ends.get((name, r.partition))
        detail.delayed_note = self._delayed_pending(name, rows)
        return detail

    def configs(self, resource: ConfigResource) -> list[ConfigRow]:
        """DescribeConfigs of one resource, those set away from their defaults first, then by
        name; sensitive values hidden."""
        futures = self.admin.describe_configs([resource], request_timeout=self.timeout)
        entries = self.result(next(iter(futures.values())), "DescribeConfigs")
        rows = []
        for name, e in sorted(entries.items()):
            source = e.source.name if isinstance(e.source, ConfigSource) else str(e.source)
            default = e.is_default or e.source == ConfigSource.DEFAULT_CONFIG
            rows.append(ConfigRow(name, None if e.is_sensitive else e.value, source, default,
                                  e.is_sensitive, e.is_read_only))
        rows.sort(key=lambda r: (r.is_default, r.name))
        return rows

    def _delayed_pending(self, topic: str, rows: list[PartitionRow]) -> str | None:
        """Fills each row's delayed_pending from MafkaDescribeDelayed at its leader; a note
        naming the brokers that could not answer it (Apache Kafka has no such API)."""
        by_leader: dict[int, list[int]] = {}
        for r in rows:
            if r.leader >= 0:
                by_leader.setdefault(r.leader, []).append(r.partition)
        leaders = sorted(by_leader)
        calls = [Call(b, MAFKA_DESCRIBE_DELAYED, {"topics": [{"name": topic, "partition_indexes": by_leader[b]}]},
                      version=0, channel=MAFKA_CHANNEL) for b in leaders]
        answers = self.wire.send_each(calls, self.probe_timeout)
        pending: dict[int, int] = {}
        without = []
        for b, answer in zip(leaders, answers, strict=True):
            if isinstance(answer, BaseException):
                without.append(f"{b} ({error_name(answer)})")
                continue
            for t in answer.topics:
                for p in t.partitions:
                    if t.name == topic and p.error_code == 0:
                        pending[p.partition_index] = p.pending_records
        for r in rows:
            r.delayed_pending = pending.get(r.partition)
        if without:
            return "delayed messages not reported by broker(s) " + ", ".join(without)
        return None

    # -- groups --------------------------------------------------------------------------

    def groups(self) -> tuple[list[GroupRow], list[Notice]]:
        """Every consumer group: state, type, members and coordinator."""
        listed = self.result(self.admin.list_consumer_groups(request_timeout=self.timeout), "ListGroups")
        notices = [Notice(error_name(e), "a broker could not list its groups") for e in listed.errors]
        by_id: dict[str, Any] = {}
        for g in listed.valid:
            by_id.setdefault(g.group_id, g)
        rows = {gid: GroupRow(gid, _state_name(g.state), getattr(g.type, "name", "UNKNOWN"))
                for gid, g in sorted(by_id.items())}
        if rows:
            futures = self.admin.describe_groups(list(rows), request_timeout=self.timeout)
            for gid, fut in futures.items():
                row = rows[gid]
                try:
                    d = fut.result(self.timeout + 1.0)
                except Exception as exc:  # noqa: BLE001
                    row.error = error_name(exc)
                    continue
                row.state = d.state or row.state
                row.members = len(d.members)
                row.coordinator = broker_text(d.broker)
                row.protocol_type = d.protocol_type
        return list(rows.values()), notices

    def group(self, group_id: str) -> GroupDetail:
        """One group: members and their assignments, committed and end offsets, lag per partition.

        Raises:
            ConsoleError: the group could not be described.
        """
        futures = self.admin.describe_groups([group_id], request_timeout=self.timeout)
        d = self.result(futures[group_id], "DescribeGroups")
        protocol_type = d.protocol_type or ""
        members = []
        owner: dict[tuple[str, int], str] = {}
        for m in d.members:
            assigned: list[tuple[str, int]] = []
            if protocol_type == "consumer" and m.assignment:
                try:
                    decoded = decode_assignment(m.assignment)
                    assigned = sorted((t, p) for t, ps in decoded.assigned_partitions.items() for p in ps)
                except ValueError:
                    assigned = []
            for tp in assigned:
                owner[tp] = m.client_id or m.id or ""
            members.append(MemberRow(m.id or "", m.group_instance_id, m.client_id or "", m.client_host or "",
                                     assigned))
        detail = GroupDetail(group_id, d.state or "Unknown", protocol_type, d.protocol or "",
                             broker_text(d.broker), members, [])
        try:
            committed = self.committed([group_id])[group_id]
        except ConsoleError as exc:
            committed, detail.offsets_error = {}, exc.name
        partitions = sorted(set(committed) | set(owner))
        ends, failed = self.offsets(partitions, OffsetSpec.latest(), "log end")
        detail.offsets_error = detail.offsets_error or failed
        detail.partitions = [GroupPartitionRow(t, p, committed.get((t, p)), ends.get((t, p)), owner.get((t, p)))
                             for t, p in partitions]
        return detail

    def committed(self, group_ids: list[str]) -> dict[str, dict[tuple[str, int], int]]:
        """Every committed offset of each group (OffsetFetch at its coordinator).

        Raises:
            ConsoleError: a group's offsets could not be fetched.
        """
        if not group_ids:
            return {}
        futures = self.admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(g) for g in group_ids], request_timeout=self.timeout)
        out = {}
        for g, fut in futures.items():
            found = self.result(fut, "OffsetFetch")
            out[g] = {(tp.topic, tp.partition): tp.offset for tp in found.topic_partitions or []
                      if tp.error is None and tp.offset >= 0}
        return out

    def group_ids(self) -> list[str]:
        listed = self.result(self.admin.list_consumer_groups(request_timeout=self.timeout), "ListGroups")
        return sorted({g.group_id for g in listed.valid})

    def group_lags(self, group_ids: list[str]) -> dict[str, dict[tuple[str, int], int]]:
        """Lag per partition with a committed offset, of each group (committed vs log end).

        Groups whose offsets could not be fetched are left out.
        """
        committed: dict[str, dict[tuple[str, int], int]] = {}
        for g in group_ids:
            try:
                committed.update(self.committed([g]))
            except ConsoleError:
                continue
        ends, _ = self.offsets({tp for c in committed.values() for tp in c}, OffsetSpec.latest(), "log end")
        return {g: {tp: max(0, ends[tp] - off) for tp, off in c.items() if tp in ends}
                for g, c in committed.items()}

    def end_offsets(self) -> dict[str, int]:
        """Sum of the log end offsets of every topic (for messages/s between two samples)."""
        md = self.metadata()
        tps = [(name, p) for name, t in md.topics.items() for p in t.partitions]
        ends, _ = self.offsets(tps, OffsetSpec.latest(), "log end")
        out: dict[str, int] = {}
        for (topic, _), offset in ends.items():
            out[topic] = out.get(topic, 0) + offset
        return out

    # -- transactions --------------------------------------------------------------------

    def transaction_max_timeout_ms(self) -> int:
        """The brokers' ``transaction.max.timeout.ms`` (asked of the controller; Kafka's default if unknown)."""
        try:
            md = self.metadata()
            node = md.controller_id if md.controller_id in md.brokers else min(md.brokers)
            for row in self.configs(ConfigResource(ResourceType.BROKER, str(node))):
                if row.name == "transaction.max.timeout.ms" and row.value is not None:
                    return int(row.value)
        except (ConsoleError, ValueError):
            pass
        return DEFAULT_TRANSACTION_MAX_TIMEOUT_MS

    def transactions(self, hanging_after_ms: int | None) -> tuple[list[TransactionRow], list[Notice], int]:
        """Every transactional id the coordinators list (ListTransactions at each broker), the
        open ones described (DescribeTransactions at their coordinator), those open longer than
        ``hanging_after_ms`` (default: ``transaction.max.timeout.ms``) marked hanging.

        Returns: (rows, notices, the threshold used).
        """
        md = self.metadata()
        brokers = sorted(md.brokers)
        body: dict[str, Any] = {"state_filters": [], "producer_id_filters": []}
        answers = self.wire.send_each([Call(b, LIST_TRANSACTIONS, body) for b in brokers], self.timeout)
        notices = []
        rows: list[TransactionRow] = []
        for b, answer in zip(brokers, answers, strict=True):
            problem = answer_error(answer)
            if problem is not None:
                notices.append(Notice(problem, f"broker {b}: ListTransactions failed"))
                continue
            rows += [TransactionRow(s.transactional_id, b, s.producer_id, s.transaction_state)
                     for s in answer.transaction_states]
        threshold = hanging_after_ms if hanging_after_ms is not None else self.transaction_max_timeout_ms()
        open_rows = [r for r in rows if r.state in OPEN_TRANSACTION_STATES]
        by_coordinator: dict[int, list[TransactionRow]] = {}
        for r in open_rows:
            by_coordinator.setdefault(r.coordinator, []).append(r)
        coordinators = sorted(by_coordinator)
        described = self.wire.send_each(
            [Call(c, DESCRIBE_TRANSACTIONS, {"transactional_ids": [r.transactional_id for r in by_coordinator[c]]})
             for c in coordinators], self.timeout)
        now = int(time.time() * 1000)
        for c, answer in zip(coordinators, described, strict=True):
            if isinstance(answer, BaseException):
                for r in by_coordinator[c]:
                    r.error = error_name(answer)
                continue
            found = {s.transactional_id: s for s in answer.transaction_states}
            for r in by_coordinator[c]:
                s = found.get(r.transactional_id)
                if s is None or s.error_code:
                    r.error = code_name(s.error_code) if s is not None else "no answer"
                    continue
                r.state, r.producer_epoch, r.timeout_ms = s.transaction_state, s.producer_epoch, s.transaction_timeout_ms
                r.partitions = sorted((t.topic, p) for t in s.topics for p in t.partitions)
                if s.transaction_start_time_ms >= 0:
                    r.start_ms = s.transaction_start_time_ms
                    r.duration_ms = max(0, now - s.transaction_start_time_ms)
                    r.hanging = r.state in OPEN_TRANSACTION_STATES and r.duration_ms > threshold
        rows.sort(key=lambda r: (not r.hanging, r.state not in OPEN_TRANSACTION_STATES, r.transactional_id))
        return rows, notices, threshold

    # -- rebalancer ----------------------------------------------------------------------

    def reassignments(self) -> list[ReassignmentRow]:
        """The partition reassignments in flight (ListPartitionReassignments at the controller).

        Raises:
            ConsoleError: the controller refused or did not answer.
        """
        found = self.result(self.admin.list_partition_reassignments(request_timeout=self.timeout),
                            "ListPartitionReassignments")
        return [ReassignmentRow(tp.topic, tp.partition, r.replicas, r.adding_replicas, r.removing_replicas)
                for tp, r in sorted(found.items(), key=lambda kv: (kv[0].topic, kv[0].partition))]

    def disks(self) -> tuple[list[BrokerDisk], list[ConfigRow]]:
        """Each broker's log dirs and replication throttles, and the rebalancer's settings
        (``mafka.rebalancer.*`` of the controller's config; empty against Apache Kafka)."""
        md = self.metadata()
        answers = self._log_dirs(sorted(md.brokers))
        out = []
        for bid in sorted(md.brokers):
            answer = answers[bid]
            up = not isinstance(answer, BaseException)
            disk = BrokerDisk(bid, up, self._dirs(answer) if answer_error(answer) is None else [])
            if up:
                try:
                    for row in self.configs(ConfigResource(ResourceType.BROKER, str(bid))):
                        if row.name == _THROTTLES[0]:
                            disk.leader_throttle = row.value
                        elif row.name == _THROTTLES[1]:
                            disk.follower_throttle = row.value
                except ConsoleError:
                    pass
            out.append(disk)
        settings: list[ConfigRow] = []
        if md.controller_id in md.brokers:
            try:
                settings = [r for r in self.configs(ConfigResource(ResourceType.BROKER, str(md.controller_id)))
                            if r.name.startswith(_REBALANCER_PREFIX)]
            except ConsoleError:
                settings = []
        return out, settings


def _state_name(state: Any) -> str:
    """A listing's ConsumerGroupState as Kafka's state string."""
    return {
        "PREPARING_REBALANCING": "PreparingRebalance",
        "COMPLETING_REBALANCING": "CompletingRebalance",
        "STABLE": "Stable",
        "DEAD": "Dead",
        "EMPTY": "Empty",
    }.get(getattr(state, "name", ""), "Unknown")
