"""A cluster in plain Python for the console's unit tests: a fake AdminClient, Wire and Consumer.

:class:`FakeCluster` holds the state (brokers, topics with partitions and records,
groups, configs, transactions, delayed messages); :class:`FakeAdmin` answers the
AdminClient calls the console makes with ``concurrent.futures.Future`` objects, as the
real one does, and :class:`FakeWire` the raw requests.  Every call that would change the
cluster is appended to ``FakeCluster.changes``, so a test can assert that a GET changed
nothing.  :func:`build_app` wires them into the console's Flask app.
"""

from __future__ import annotations

import concurrent.futures
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from mafka.client.admin import (
    ConfigEntry,
    ConfigSource,
    ConsumerGroupListing,
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    ConsumerGroupType,
    GroupMember,
    GroupMetadata,
    ListConsumerGroupsResult,
    ListOffsetsResultInfo,
    PartitionReassignment,
)
from mafka.client.kafka_error import KafkaError, KafkaException
from mafka.client.message import TIMESTAMP_CREATE_TIME, Message, TopicPartition
from mafka.client.metadata import BrokerInfo
from mafka.client.metadata_view import ClusterMetadataView, PartitionMetadataView, TopicMetadataView
from mafka.console.actions import Actions
from mafka.console.browse import Browser
from mafka.console.cluster import ClusterReader
from mafka.console.sampler import Sampler
from mafka.console.service import Backend, Console
from mafka.console.web import create_app
from mafka.console.wire import (
    DESCRIBE_LOG_DIRS,
    DESCRIBE_TRANSACTIONS,
    LIST_TRANSACTIONS,
    MAFKA_DESCRIBE_DELAYED,
    MAFKA_END_HALF,
    METADATA,
    Call,
)
from mafka.errors import ErrorCode
from mafka.group.consumer_protocol import Assignment, encode_assignment


def done(value: Any) -> concurrent.futures.Future[Any]:
    f: concurrent.futures.Future[Any] = concurrent.futures.Future()
    f.set_result(value)
    return f


def failed(code: int) -> concurrent.futures.Future[Any]:
    f: concurrent.futures.Future[Any] = concurrent.futures.Future()
    f.set_exception(KafkaException(KafkaError(code)))
    return f


@dataclass
class Group:
    state: str = "Empty"
    members: list[tuple[str, str, str, dict[str, list[int]]]] = field(default_factory=list)
    committed: dict[tuple[str, int], int] = field(default_factory=dict)
    type: ConsumerGroupType = ConsumerGroupType.CLASSIC


@dataclass
class FakeCluster:
    brokers: dict[int, tuple[str, int]] = field(default_factory=lambda: {1: ("h1", 9092), 2: ("h2", 9093),
                                                                          3: ("h3", 9094)})
    controller: int = 1
    #: brokers that do not answer (the wire fails their requests)
    down: set[int] = field(default_factory=set)
    #: topic → partition → (leader, replicas, isr)
    topics: dict[str, dict[int, tuple[int, list[int], list[int]]]] = field(default_factory=dict)
    #: (topic, partition) → records as (key, value, headers, timestamp ms)
    records: dict[tuple[str, int], list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]], int]]] = \
        field(default_factory=dict)
    log_start: dict[tuple[str, int], int] = field(default_factory=dict)
    configs: dict[str, dict[str, str]] = field(default_factory=dict)
    groups: dict[str, Group] = field(default_factory=dict)
    delayed: dict[tuple[str, int], int] = field(default_factory=dict)
    transactions: list[tuple[str, int, int, str, int]] = field(default_factory=list)  # id, coord, pid, state, start
    #: brokers without Mafka's own APIs (Apache Kafka)
    no_mafka_apis: set[int] = field(default_factory=set)
    changes: list[tuple[Any, ...]] = field(default_factory=list)

    def topic(self, name: str, partitions: int = 1, rf: int = 3) -> None:
        ids = sorted(self.brokers)
        self.topics[name] = {p: (ids[p % len(ids)], [ids[(p + i) % len(ids)] for i in range(rf)],
                                 [ids[(p + i) % len(ids)] for i in range(rf)]) for p in range(partitions)}

    def end(self, tp: tuple[str, int]) -> int:
        return self.log_start.get(tp, 0) + len(self.records.get(tp, []))


class FakeAdmin:
    """The AdminClient methods the console calls, over a :class:`FakeCluster`."""

    def __init__(self, cluster: FakeCluster) -> None:
        self.c = cluster
        self.closed = False

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> ClusterMetadataView:
        c = self.c
        view = ClusterMetadataView("fake-cluster", c.controller,
                                   {b: BrokerInfo(b, h, p) for b, (h, p) in c.brokers.items()})
        for name in [topic] if topic is not None else list(c.topics):
            if name not in c.topics:
                view.topics[name] = TopicMetadataView(name, error=KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                continue
            tv = TopicMetadataView(name)
            for p, (leader, replicas, isr) in c.topics[name].items():
                tv.partitions[p] = PartitionMetadataView(p, leader, list(replicas), list(isr))
            view.topics[name] = tv
        return view

    def describe_configs(self, resources: list[Any], request_timeout: float | None = None) -> dict[Any, Any]:
        out = {}
        for r in resources:
            if r.restype.name == "TOPIC" and r.name not in self.c.topics:
                out[r] = failed(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                continue
            own = self.c.configs.get(r.name, {}) if r.restype.name == "TOPIC" else {}
            entries = {"retention.ms": ConfigEntry("retention.ms", "604800000", ConfigSource.DEFAULT_CONFIG,
                                                   is_default=True),
                       "cleanup.policy": ConfigEntry("cleanup.policy", "delete", ConfigSource.DEFAULT_CONFIG,
                                                     is_default=True)}
            for k, v in own.items():
                entries[k] = ConfigEntry(k, v, ConfigSource.DYNAMIC_TOPIC_CONFIG)
            out[r] = done(entries)
        return out

    def list_offsets(self, specs: dict[TopicPartition, Any], isolation_level: Any = None,
                     request_timeout: float | None = None) -> dict[TopicPartition, Any]:
        out = {}
        for tp, spec in specs.items():
            key = (tp.topic, tp.partition)
            if tp.topic not in self.c.topics or tp.partition not in self.c.topics[tp.topic]:
                out[tp] = failed(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                continue
            start = self.c.log_start.get(key, 0)
            if spec._value == -2:
                offset = start
            elif spec._value == -1:
                offset = self.c.end(key)
            else:
                offset = next((start + i for i, r in enumerate(self.c.records.get(key, [])) if r[3] >= spec._value), -1)
            out[tp] = done(ListOffsetsResultInfo(offset, -1, 0))
        return out

    def list_consumer_groups(self, states: Any = None, request_timeout: float | None = None) -> Any:
        valid = [ConsumerGroupListing(g, False, ConsumerGroupState.from_broker(grp.state), grp.type)
                 for g, grp in self.c.groups.items()]
        return done(ListConsumerGroupsResult(valid, []))

    def describe_groups(self, ids: list[str], request_timeout: float | None = None) -> dict[str, Any]:
        out = {}
        for gid in ids:
            grp = self.c.groups.get(gid)
            md = GroupMetadata()
            md.id = gid
            md.broker = BrokerInfo(self.c.controller, *self.c.brokers[self.c.controller])
            md.state = grp.state if grp is not None else "Dead"
            md.protocol_type = "consumer"
            md.protocol = "range"
            for member_id, client_id, host, assigned in (grp.members if grp else []):
                m = GroupMember()
                m.id, m.client_id, m.client_host = member_id, client_id, host
                m.assignment = encode_assignment(Assignment(assigned))
                md.members.append(m)
            out[gid] = done(md)
        return out

    def list_consumer_group_offsets(self, requests: list[ConsumerGroupTopicPartitions],
                                    request_timeout: float | None = None) -> dict[str, Any]:
        out = {}
        for r in requests:
            grp = self.c.groups.get(r.group_id)
            tps = [TopicPartition(t, p, off) for (t, p), off in sorted((grp.committed if grp else {}).items())]
            out[r.group_id] = done(ConsumerGroupTopicPartitions(r.group_id, tps))
        return out

    def list_partition_reassignments(self, partitions: Any = None, request_timeout: float | None = None) -> Any:
        return done({TopicPartition("moving", 0): PartitionReassignment([1, 2, 3], [3], [1])})

    # -- changes -----------------------------------------------------------------------------

    def create_topics(self, new_topics: list[Any], operation_timeout: float | None = None,
                      request_timeout: float | None = None, validate_only: bool = False) -> dict[str, Any]:
        out = {}
        for t in new_topics:
            if t.topic in self.c.topics:
                out[t.topic] = failed(ErrorCode.TOPIC_ALREADY_EXISTS)
                continue
            if not validate_only:
                self.c.changes.append(("create_topics", t.topic, t.num_partitions, t.replication_factor))
                self.c.topic(t.topic, max(1, t.num_partitions))
            out[t.topic] = done(None)
        return out

    def create_partitions(self, new_partitions: list[Any], operation_timeout: float | None = None,
                          request_timeout: float | None = None, validate_only: bool = False) -> dict[str, Any]:
        out = {}
        for n in new_partitions:
            self.c.changes.append(("create_partitions", n.topic, n.new_total_count))
            out[n.topic] = done(None)
        return out

    def incremental_alter_configs(self, resources: list[Any], request_timeout: float | None = None,
                                  validate_only: bool = False) -> dict[Any, Any]:
        out = {}
        for r in resources:
            entry = r.incremental_configs[0]
            if entry.value is not None and entry.name.endswith(".ms") and not entry.value.isdigit():
                out[r] = failed(ErrorCode.INVALID_CONFIG)
                continue
            if not validate_only:
                self.c.changes.append(("alter_configs", r.name, entry.name, entry.value))
            out[r] = done(None)
        return out

    def alter_consumer_group_offsets(self, requests: list[ConsumerGroupTopicPartitions],
                                     request_timeout: float | None = None) -> dict[str, Any]:
        out = {}
        for r in requests:
            self.c.changes.append(("alter_offsets", r.group_id,
                                   [(tp.topic, tp.partition, tp.offset) for tp in r.topic_partitions or []]))
            out[r.group_id] = done(ConsumerGroupTopicPartitions(r.group_id, list(r.topic_partitions or [])))
        return out

    def elect_leaders(self, election_type: Any, partitions: list[TopicPartition] | None = None,
                      request_timeout: float | None = None, operation_timeout: float | None = None) -> Any:
        self.c.changes.append(("elect_leaders", [(tp.topic, tp.partition) for tp in partitions or []]))
        return done({tp: None for tp in partitions or []})

    def close(self, timeout: float = 5.0) -> None:
        self.closed = True


class FakeWire:
    """The raw requests, over a :class:`FakeCluster`; a down broker fails with ConnectionError."""

    def __init__(self, cluster: FakeCluster) -> None:
        self.c = cluster
        self.sent: list[Call] = []

    def send_each(self, calls: list[Call], timeout: float) -> list[Any]:
        self.sent += calls
        return [self._one(call) for call in calls]

    def find_coordinator(self, key: str, key_type: int, timeout: float) -> int:
        return self.c.controller

    def _one(self, call: Call) -> Any:
        c = self.c
        if call.node in c.down:
            return ConnectionError(f"broker {call.node}: connect failed: refused")
        if call.api_key >= 10000 and call.node in c.no_mafka_apis:
            return ConnectionError(f"broker {call.node}: connection closed")
        if call.api_key == METADATA:
            return SimpleNamespace(brokers=[], topics=[])
        if call.api_key == DESCRIBE_LOG_DIRS:
            topics = [SimpleNamespace(name=t, partitions=[
                SimpleNamespace(partition_index=p, partition_size=100 * len(c.records.get((t, p), [])),
                                offset_lag=0, is_future_key=False)
                for p, (_, replicas, _) in parts.items() if call.node in replicas])
                for t, parts in c.topics.items()]
            return SimpleNamespace(error_code=0, results=[SimpleNamespace(
                error_code=0, log_dir=f"/data/broker-{call.node}", topics=topics,
                total_bytes=1000_000, usable_bytes=400_000)])
        if call.api_key == MAFKA_DESCRIBE_DELAYED:
            topic = call.body["topics"][0]["name"]
            return SimpleNamespace(topics=[SimpleNamespace(name=topic, partitions=[
                SimpleNamespace(partition_index=p, error_code=0, pending_records=c.delayed.get((topic, p), 0))
                for p in call.body["topics"][0]["partition_indexes"]])])
        if call.api_key == MAFKA_END_HALF:
            b = call.body
            key = (b["topic"], b["partition"])
            c.changes.append(("cancel_delayed", b["topic"], b["partition"], b["offset"]))
            if c.delayed.get(key, 0) <= 0:
                return SimpleNamespace(error_code=ErrorCode.INVALID_TXN_STATE)
            c.delayed[key] -= 1
            return SimpleNamespace(error_code=0)
        if call.api_key == LIST_TRANSACTIONS:
            return SimpleNamespace(error_code=0, transaction_states=[
                SimpleNamespace(transactional_id=t, producer_id=pid, transaction_state=state)
                for t, coord, pid, state, _ in c.transactions if coord == call.node])
        if call.api_key == DESCRIBE_TRANSACTIONS:
            wanted = call.body["transactional_ids"]
            return SimpleNamespace(transaction_states=[
                SimpleNamespace(error_code=0, transactional_id=t, transaction_state=state, transaction_timeout_ms=60000,
                                transaction_start_time_ms=start, producer_id=pid, producer_epoch=0,
                                topics=[SimpleNamespace(topic="orders", partitions=[0])])
                for t, _, pid, state, start in c.transactions if t in wanted])
        raise AssertionError(f"unexpected request {call}")


class FakeConsumer:
    """A consumer reading the cluster's records from the assigned offset."""

    instances: list[FakeConsumer] = []

    def __init__(self, cluster: FakeCluster, settings: dict[str, Any]) -> None:
        self.c = cluster
        self.settings = settings
        self.position: tuple[str, int, int] | None = None
        self.closed = False
        FakeConsumer.instances.append(self)

    def assign(self, partitions: list[TopicPartition]) -> None:
        (tp,) = partitions
        self.position = (tp.topic, tp.partition, tp.offset)

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Message]:
        assert self.position is not None
        topic, partition, offset = self.position
        key = (topic, partition)
        start = self.c.log_start.get(key, 0)
        rows = self.c.records.get(key, [])[offset - start:offset - start + num_messages]
        self.position = (topic, partition, offset + len(rows))
        return [Message(topic, partition, offset + i, k, v, list(h) or None, TIMESTAMP_CREATE_TIME, ts)
                for i, (k, v, h, ts) in enumerate(rows)]

    def close(self) -> None:
        self.closed = True


@dataclass
class Built:
    app: Any
    admin: FakeAdmin
    wire: FakeWire
    sampler: Sampler | None


def build(cluster: FakeCluster, sampler: bool = True, trusted_hosts: list[str] | None = None,
          **console: Any) -> Built:
    """The console's Flask app over the fake cluster, and its fakes."""
    admin = FakeAdmin(cluster)
    wire = FakeWire(cluster)
    the_sampler = Sampler(None, [], interval=1.0) if sampler else None
    reader = ClusterReader(admin, wire, timeout=1.0, probe_timeout=0.5,  # type: ignore[arg-type]
                           scrapes=the_sampler.scrapes if the_sampler else list,
                           rates=the_sampler.rates if the_sampler else dict)
    if the_sampler is not None:
        the_sampler.reader = reader
    backend = Backend(reader, Actions(reader),
                      Browser(admin, lambda extra: FakeConsumer(cluster, extra), timeout=1.0))  # type: ignore[arg-type]
    # Not TESTING: errors must take the production path (an error page, never a traceback).
    app = create_app(Console(backend, the_sampler, **console), trusted_hosts=trusted_hosts)
    return Built(app, admin, wire, the_sampler)
