"""The admin client's group listing and describing with Kafka 4's group types (KIP-848).

``list_consumer_groups`` (ListGroups v5: state and type per group, ``states`` /
``types`` filters) and ``describe_consumer_groups`` (ConsumerGroupDescribe first,
DescribeGroups for classic groups, as Java's ``DescribeConsumerGroupsHandler``), run on
the real :class:`~mafka.client.admin.AdminClient` over
:class:`~tests.unit.cli.kip848_fake.Kip848Cluster` (no sockets; every request goes
through Mafka's wire schema at the version a Mafka client and broker agree on, or at
the versions a test narrows the broker to).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import confluent_kafka
import pytest

from mafka.client.admin import (
    AdminClient,
    ConsumerGroupDescription,
    ConsumerGroupState,
    ConsumerGroupType,
)
from mafka.client.kafka_error import KafkaException
from mafka.client.transport import UnsupportedByBroker
from mafka.errors import ErrorCode
from tests.unit.cli import fake_wire
from tests.unit.cli.kip848_fake import Kip848Cluster, consumer_member
from tests.unit.cli.test_consumer_groups import member

DESCRIBE_GROUPS, LIST_GROUPS, CONSUMER_GROUP_DESCRIBE = 15, 16, 69
WAIT = 10


@pytest.fixture
def cluster() -> Kip848Cluster:
    c = Kip848Cluster()
    c.group("classic", "Stable", [member("c-1", "cc", "/10.0.0.9", {"t": [0, 1]}, instance="static-c")])
    c.group("idle", "Empty")
    c.consumer_group("kip848", "Reconciling", [
        consumer_member("m-a", "ca", "/10.0.0.1", {"t": [0]}, target={"t": [0, 2]}, epoch=7, instance="static-a"),
        consumer_member("m-b", "cb", "/10.0.0.2", {"t": [1], "u": [0]}, epoch=6, member_type=0),
    ], group_epoch=8, assignment_epoch=7, assignor="range")
    return c


@pytest.fixture
def admin(cluster: Kip848Cluster, monkeypatch: pytest.MonkeyPatch) -> Iterator[AdminClient]:
    cluster.install(monkeypatch)
    client = AdminClient({"bootstrap.servers": "b1:9092"})
    try:
        yield client
    finally:
        client.close()


def broker_versions(monkeypatch: pytest.MonkeyPatch, **changes: int | None) -> None:
    """Narrows what the fake brokers speak: ``api_<key>=version`` (None: not at all, and a
    request for it raises UnsupportedByBroker, as the real connection does)."""
    versions = fake_wire.negotiated_versions()
    for name, version in changes.items():
        key = int(name.removeprefix("api_"))
        if version is None:
            versions.pop(key)
        else:
            versions[key] = version
    monkeypatch.setattr(fake_wire, "negotiated_versions", lambda: dict(versions))
    original = fake_wire.FakeConnection.request

    def request(self: fake_wire.FakeConnection, api_key: int, body: Any, version: int | None = None,
                expect_response: bool = True) -> Any:
        if version is None and api_key not in self.versions:
            raise UnsupportedByBroker(f"fake broker {self.broker_id} speaks no version of {api_key}")
        return original(self, api_key, body, version, expect_response)

    monkeypatch.setattr(fake_wire.FakeConnection, "request", request)


def listed(admin: AdminClient, **kwargs: Any) -> dict[str, tuple[ConsumerGroupState, ConsumerGroupType, bool]]:
    result = admin.list_consumer_groups(**kwargs).result(WAIT)
    assert result.errors == []
    return {g.group_id: (g.state, g.type, g.is_simple_consumer_group) for g in result.valid}


# --------------------------------------------------------------------------- types


def test_state_and_type_enums_extend_confluent_kafkas() -> None:
    ck = confluent_kafka.ConsumerGroupState
    for s in ck:
        assert ConsumerGroupState[s.name].value == s.value
    for t in confluent_kafka.ConsumerGroupType:
        assert ConsumerGroupType[t.name].value == t.value
    # Kafka 4's consumer-group states, parsed as Java's GroupState.parse (any case).
    assert ConsumerGroupState.from_broker("Assigning") is ConsumerGroupState.ASSIGNING
    assert ConsumerGroupState.from_broker("reconciling") is ConsumerGroupState.RECONCILING
    assert ConsumerGroupState.from_broker("STABLE") is ConsumerGroupState.STABLE
    assert ConsumerGroupState.from_broker("NotReady") is ConsumerGroupState.UNKNOWN
    assert ConsumerGroupState.from_broker("") is ConsumerGroupState.UNKNOWN
    assert [s.broker_name for s in ConsumerGroupState] == [
        "Unknown", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty", "Assigning", "Reconciling"]
    assert ConsumerGroupType.from_broker("consumer") is ConsumerGroupType.CONSUMER
    assert ConsumerGroupType.from_broker("Classic") is ConsumerGroupType.CLASSIC
    assert ConsumerGroupType.from_broker("share") is ConsumerGroupType.UNKNOWN
    assert [t.broker_name for t in ConsumerGroupType] == ["Unknown", "Consumer", "Classic"]


# --------------------------------------------------------------------------- list


def test_list_gives_each_groups_state_and_type_from_list_groups_v5(admin: AdminClient,
                                                                 cluster: Kip848Cluster) -> None:
    assert listed(admin) == {
        "classic": (ConsumerGroupState.STABLE, ConsumerGroupType.CLASSIC, False),
        "idle": (ConsumerGroupState.EMPTY, ConsumerGroupType.CLASSIC, False),
        "kip848": (ConsumerGroupState.RECONCILING, ConsumerGroupType.CONSUMER, False),
    }
    bodies = cluster.api_calls(LIST_GROUPS)
    assert sorted(b for _, b in bodies) == [1, 2]
    assert all(list(body.states_filter) == [] and list(body.types_filter) == [] for body, _ in bodies)
    assert cluster.api_calls(DESCRIBE_GROUPS) == [], "v5 answers the states: nothing else is asked"
    assert [v for k, v, _, _ in cluster.calls if k == LIST_GROUPS] == [5, 5]


def test_list_filters_travel_to_the_broker(admin: AdminClient, cluster: Kip848Cluster) -> None:
    assert listed(admin, types={ConsumerGroupType.CONSUMER}) == {
        "kip848": (ConsumerGroupState.RECONCILING, ConsumerGroupType.CONSUMER, False)}
    assert {tuple(body.types_filter) for body, _ in cluster.api_calls(LIST_GROUPS)} == {("Consumer",)}
    cluster.calls.clear()
    assert listed(admin, states={ConsumerGroupState.EMPTY, ConsumerGroupState.RECONCILING},
                  types={ConsumerGroupType.CLASSIC, ConsumerGroupType.CONSUMER}) == {
        "idle": (ConsumerGroupState.EMPTY, ConsumerGroupType.CLASSIC, False),
        "kip848": (ConsumerGroupState.RECONCILING, ConsumerGroupType.CONSUMER, False)}
    ((body, _), _) = cluster.api_calls(LIST_GROUPS)
    assert (list(body.states_filter), list(body.types_filter)) == (["Empty", "Reconciling"], ["Classic", "Consumer"])


def test_list_against_a_broker_without_v4_asks_describe_groups_and_filters_here(
        cluster: Kip848Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster.consumer_groups.clear()  # a broker that speaks ListGroups v3 has only classic groups
    broker_versions(monkeypatch, api_16=3)
    cluster.install(monkeypatch)
    with AdminClient({"bootstrap.servers": "b1:9092"}) as admin:
        assert listed(admin) == {"classic": (ConsumerGroupState.STABLE, ConsumerGroupType.CLASSIC, False),
                                 "idle": (ConsumerGroupState.EMPTY, ConsumerGroupType.CLASSIC, False)}
        ((body, broker),) = cluster.api_calls(DESCRIBE_GROUPS)
        assert (sorted(body.groups), broker) == (["classic", "idle"], 1), "only consumer-protocol groups"
        assert listed(admin, states={ConsumerGroupState.EMPTY}) == {
            "idle": (ConsumerGroupState.EMPTY, ConsumerGroupType.CLASSIC, False)}
        assert listed(admin, types={ConsumerGroupType.CONSUMER}) == {}
        assert {v for k, v, _, _ in cluster.calls if k == LIST_GROUPS} == {3}


def test_list_argument_checks_are_confluent_kafkas(admin: AdminClient) -> None:
    with pytest.raises(TypeError, match="'types' must be a set"):
        admin.list_consumer_groups(types=[ConsumerGroupType.CLASSIC])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="All elements of types must be of type ConsumerGroupType"):
        admin.list_consumer_groups(types={"classic"})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="UNKNOWN type is not allowed"):
        admin.list_consumer_groups(types={ConsumerGroupType.UNKNOWN})
    with pytest.raises(TypeError, match="All elements of states must be of type ConsumerGroupState"):
        admin.list_consumer_groups(states={"Stable"})  # type: ignore[arg-type]


# --------------------------------------------------------------------------- describe


def describe(admin: AdminClient, group: str) -> ConsumerGroupDescription:
    result: ConsumerGroupDescription = admin.describe_consumer_groups([group])[group].result(WAIT)
    return result


def test_a_consumer_group_is_described_by_consumer_group_describe(admin: AdminClient,
                                                                   cluster: Kip848Cluster) -> None:
    d = describe(admin, "kip848")
    assert (d.group_id, d.type, d.state, d.partition_assignor) == (
        "kip848", ConsumerGroupType.CONSUMER, ConsumerGroupState.RECONCILING, "range")
    assert (d.group_epoch, d.target_assignment_epoch, d.is_simple_consumer_group) == (8, 7, False)
    assert (d.coordinator.id, d.coordinator.host, d.coordinator.port) == (1, "b1", 9092)
    a, b = d.members
    assert (a.member_id, a.group_instance_id, a.client_id, a.host, a.member_epoch, a.upgraded) == (
        "m-a", "static-a", "ca", "/10.0.0.1", 7, True)
    assert [(tp.topic, tp.partition) for tp in a.assignment.topic_partitions] == [("t", 0)]
    assert a.target_assignment is not None
    assert [(tp.topic, tp.partition) for tp in a.target_assignment.topic_partitions] == [("t", 0), ("t", 2)]
    assert (b.member_id, b.group_instance_id, b.member_epoch, b.upgraded) == ("m-b", None, 6, False)
    assert [(tp.topic, tp.partition) for tp in b.assignment.topic_partitions] == [("t", 1), ("u", 0)]
    ((body, broker),) = cluster.api_calls(CONSUMER_GROUP_DESCRIBE)
    assert (list(body.group_ids), body.include_authorized_operations, broker) == (["kip848"], False, 1)
    assert cluster.api_calls(DESCRIBE_GROUPS) == []


def test_a_classic_group_falls_back_to_describe_groups_as_before(admin: AdminClient,
                                                                 cluster: Kip848Cluster) -> None:
    d = describe(admin, "classic")
    assert (d.type, d.state, d.partition_assignor, d.group_epoch, d.target_assignment_epoch) == (
        ConsumerGroupType.CLASSIC, ConsumerGroupState.STABLE, "range", None, None)
    (m,) = d.members
    assert (m.member_id, m.group_instance_id, m.client_id, m.host, m.member_epoch, m.upgraded,
            m.target_assignment) == ("c-1", "static-c", "cc", "/10.0.0.9", None, None, None)
    assert sorted((tp.topic, tp.partition) for tp in m.assignment.topic_partitions) == [("t", 0), ("t", 1)]
    assert [k for k, _, _, _ in cluster.calls if k in (DESCRIBE_GROUPS, CONSUMER_GROUP_DESCRIBE)] == [
        CONSUMER_GROUP_DESCRIBE, DESCRIBE_GROUPS]
    gone = describe(admin, "nope")
    assert (gone.type, gone.state, gone.members) == (ConsumerGroupType.CLASSIC, ConsumerGroupState.DEAD, [])


def test_the_fallback_sticks_through_coordinator_retries(admin: AdminClient, cluster: Kip848Cluster) -> None:
    cluster.describe_errors = [ErrorCode.NOT_COORDINATOR]
    assert describe(admin, "classic").state == ConsumerGroupState.STABLE
    assert len(cluster.api_calls(CONSUMER_GROUP_DESCRIBE)) == 1, "the retry went straight to DescribeGroups"
    assert len(cluster.api_calls(DESCRIBE_GROUPS)) == 2


def test_consumer_group_describe_coordinator_errors_are_retried(admin: AdminClient,
                                                                cluster: Kip848Cluster) -> None:
    cluster.cgd_errors = [ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NOT_COORDINATOR]
    assert describe(admin, "kip848").type == ConsumerGroupType.CONSUMER
    assert len(cluster.api_calls(CONSUMER_GROUP_DESCRIBE)) == 3
    assert cluster.api_calls(DESCRIBE_GROUPS) == []


def test_other_consumer_group_describe_errors_fail_the_group(admin: AdminClient, cluster: Kip848Cluster) -> None:
    cluster.cgd_errors = [ErrorCode.GROUP_AUTHORIZATION_FAILED]
    futures = admin.describe_consumer_groups(["kip848", "classic"])
    with pytest.raises(KafkaException) as failed:
        futures["kip848"].result(WAIT)
    assert failed.value.args[0].code() == ErrorCode.GROUP_AUTHORIZATION_FAILED
    assert cluster.api_calls(DESCRIBE_GROUPS) != [] and futures["classic"].result(WAIT).state == \
        ConsumerGroupState.STABLE, "the other group is described regardless"


def test_a_coordinator_without_consumer_group_describe_is_asked_describe_groups(
        cluster: Kip848Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    broker_versions(monkeypatch, api_69=None)
    cluster.install(monkeypatch)
    with AdminClient({"bootstrap.servers": "b1:9092"}) as admin:
        d = describe(admin, "classic")
    assert (d.type, d.state) == (ConsumerGroupType.CLASSIC, ConsumerGroupState.STABLE)
    assert cluster.api_calls(CONSUMER_GROUP_DESCRIBE) == [], "never sent at a version the broker lacks"


def test_consumer_group_describe_v0_does_not_tell_the_member_type(cluster: Kip848Cluster,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    broker_versions(monkeypatch, api_69=0)
    cluster.install(monkeypatch)
    with AdminClient({"bootstrap.servers": "b1:9092"}) as admin:
        d = describe(admin, "kip848")
    assert [m.upgraded for m in d.members] == [None, None]
    assert [v for k, v, _, _ in cluster.calls if k == CONSUMER_GROUP_DESCRIBE] == [0]
