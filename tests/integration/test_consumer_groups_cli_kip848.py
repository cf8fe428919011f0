"""``mafka consumer-groups`` over both group types of Kafka 4 (KIP-848) on a real 3-broker cluster.

Two confluent-kafka 2.16 members with ``group.protocol=consumer`` (processes of
:mod:`tests.harness.group_member`) share a 4-partition topic in one group, and one
classic member (``range``) consumes it in another; every member commits each record.
The tool (``python -m mafka.cli.main consumer-groups``, as a user runs it) must then
show them as Kafka 4.x's ``kafka-consumer-groups.sh`` does:

* ``--list --type`` / ``--list --type consumer`` / ``--list --type classic --state``:
  Kafka 4's GROUP / TYPE / STATE table (``printGroupInfo``), filtered by type;
* ``--describe --members --verbose``: Kafka 4's members table for the consumer group
  (epochs, current and target assignments) and Kafka 2.8's, as before, for the classic one;
* ``--describe --state [--verbose]``: Kafka 4's state table for the consumer group, the
  classic one unchanged;
* ``--describe --offsets``: committed offsets, log-end offsets and lag of both.

What the tool prints is checked against what librdkafka's own admin client
(confluent-kafka ``describe_consumer_groups``) and the producer report.  The
cluster is shared (same settings as ``test_client_consumer_protocol``): only this
module's uuid-named groups are looked at.
"""

from __future__ import annotations

import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.harness.chaos import create_topic
from tests.harness.cluster import ClusterSpec, LocalCluster
from tests.harness.group_clients import Group, Member
from tests.harness.waits import wait_until

pytestmark = pytest.mark.integration

PARTITIONS = 4
RECORDS = 40  # 10 per partition
SETTINGS = {
    "group.consumer.heartbeat.interval.ms": "500",
    "group.consumer.min.heartbeat.interval.ms": "500",
}
#: shared with test_client_consumer_protocol (same settings); topics and groups are uuid-named
CLUSTER = ClusterSpec(settings=SETTINGS)

OFFSETS_HEADER = ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST",
                  "CLIENT-ID"]


def cli(cluster: LocalCluster, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mafka.cli.main", "consumer-groups", "--bootstrap-server", cluster.bootstrap, *argv],
        capture_output=True, text=True, timeout=60,
    )


def table(r: subprocess.CompletedProcess[str]) -> list[str]:
    """The table's lines (header first) of a successful run: Kafka prints an empty line before it."""
    assert r.returncode == 0, r
    lines = r.stdout.split("\n")
    assert lines[0] == "" and lines[-1] == "", r.stdout
    return lines[1:-1]


def padded(values: list[str], widths: list[int]) -> str:
    """Java's ``%-Ns`` per column, space-separated (width 0: ``%s``)."""
    return " ".join(f"{v:<{w}}" if w else v for v, w in zip(values, widths, strict=True))


@pytest.fixture(scope="module")
def scene(cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A topic with 10 records per partition, a consumer group of two members and a classic group of one,
    each having consumed and committed everything."""
    from confluent_kafka import Producer

    topic = create_topic(cluster, partitions=PARTITIONS, rf=3, name=f"cgkip848-{uuid.uuid4().hex[:8]}")
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "enable.idempotence": True})
    values = [f"v{i}" for i in range(RECORDS)]
    for i, v in enumerate(values):
        producer.produce(topic, v.encode(), partition=i % PARTITIONS)
    assert producer.flush(30) == 0

    logs = tmp_path_factory.mktemp("cg-kip848")
    consumer = Group("confluent", cluster.bootstrap, f"cgkip848-consumer-{uuid.uuid4().hex[:8]}", topic, PARTITIONS,
                     logs, group_protocol="consumer")
    classic = Group("confluent", cluster.bootstrap, f"cgkip848-classic-{uuid.uuid4().hex[:8]}", topic, PARTITIONS,
                    logs, group_protocol="classic", assignor="range")
    try:
        a, b = consumer.add("a"), consumer.add("b")
        c = classic.add("c")
        wait_until(lambda: split_between([a, b]), 60,
                   lambda: f"the consumer group never shared the partitions: {consumer.explain()}")
        wait_until(lambda: sorted(c.assignment() or []) == list(range(PARTITIONS)), 60,
                   lambda: f"the classic member never got every partition: {classic.explain()}")
        consumer.wait_consumed(values, 60)
        classic.wait_consumed(values, 60)
        ends = {p: RECORDS // PARTITIONS for p in range(PARTITIONS)}
        for g in (consumer, classic):
            wait_until(lambda g=g: g.last_committed() == ends, 30,  # type: ignore[misc]
                       lambda g=g: f"{g.group} committed {g.last_committed()}, not {ends}")  # type: ignore[misc]
            # The members' assignments are acknowledged: the coordinator calls the group Stable.
            wait_until(lambda g=g: settled(cluster, g.group), 30,  # type: ignore[misc]
                       lambda g=g: f"{g.group} never settled: {librdkafka_view(cluster, g.group)}")  # type: ignore[misc]
        yield {"topic": topic, "consumer": consumer, "classic": classic, "members": [a, b], "classic_member": c}
    finally:
        consumer.close()
        classic.close()


def split_between(members: list[Member]) -> bool:
    held = [m.assignment() for m in members]
    if not all(held):
        return False
    parts = sorted(p for ps in held for p in ps or [])
    return parts == list(range(PARTITIONS)) and all(len(ps or []) == PARTITIONS // len(members) for ps in held)


def settled(cluster: LocalCluster, group: str) -> bool:
    """Stable, and (a consumer group) every member holding its target assignment."""
    view = librdkafka_view(cluster, group)
    if not str(view.state).endswith("STABLE"):
        return False
    return all(m.target_assignment is None or sorted(map(str, m.assignment.topic_partitions))
               == sorted(map(str, m.target_assignment.topic_partitions)) for m in view.members)


def librdkafka_view(cluster: LocalCluster, group: str) -> Any:
    """The group as confluent-kafka's admin client (librdkafka) describes it."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    return admin.describe_consumer_groups([group], request_timeout=15)[group].result(timeout=20)


# --------------------------------------------------------------------------- --list


def test_list_type_shows_each_groups_type(cluster: LocalCluster, scene: dict[str, Any]) -> None:
    consumer, classic = scene["consumer"].group, scene["classic"].group
    lines = table_without_blank(cli(cluster, "--list", "--type"))
    rows = {line.split()[0]: line.split()[1:] for line in lines[1:]}
    assert rows[consumer] == ["Consumer"] and rows[classic] == ["Classic"], lines
    # Kafka 4's layout: GROUP 10 wider than the longest id listed (at least 15), TYPE 20, all padded.
    width = max(15, *(len(g) for g in rows)) + 10
    assert lines[0] == padded(["GROUP", "TYPE"], [width, 20])
    assert padded([consumer, "Consumer"], [width, 20]) in lines

    only = table_without_blank(cli(cluster, "--list", "--type", "consumer"))
    listed = {line.split()[0] for line in only[1:]}
    assert consumer in listed and classic not in listed, only

    with_state = table_without_blank(cli(cluster, "--list", "--type", "classic", "--state"))
    rows = {line.split()[0]: line.split()[1:] for line in with_state[1:]}
    assert with_state[0].split() == ["GROUP", "TYPE", "STATE"]
    assert rows[classic] == ["Classic", "Stable"] and consumer not in rows, with_state

    plain = cli(cluster, "--list")
    assert plain.returncode == 0 and {consumer, classic} <= set(plain.stdout.split()), plain


def table_without_blank(r: subprocess.CompletedProcess[str]) -> list[str]:
    """``--list`` tables have no leading empty line."""
    assert r.returncode == 0 and r.stderr == "", r
    lines = r.stdout.split("\n")
    assert lines[-1] == "", r.stdout
    return lines[:-1]


# --------------------------------------------------------------------------- --describe --members


def test_describe_members_verbose_of_the_consumer_group(cluster: LocalCluster, scene: dict[str, Any]) -> None:
    group, topic = scene["consumer"].group, scene["topic"]
    view = librdkafka_view(cluster, group)
    assert str(view.type).endswith("CONSUMER")
    expected = {m.member_id: sorted(tp.partition for tp in m.assignment.topic_partitions) for m in view.members}
    lines = table(r := cli(cluster, "--describe", "--group", group, "--members", "--verbose"))
    assert r.stderr == ""
    assert lines[0].split() == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "CURRENT-EPOCH",
                                "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"]
    rows = [line.split() for line in lines[1:]]
    assert len(rows) == 2, lines
    seen = {}
    for g, member_id, host, client_id, count, epoch, current, target_epoch, target in rows:
        assert (g, host, client_id, count) == (group, "/127.0.0.1", "rdkafka", "2"), rows
        # KIP-1082: librdkafka makes up its member id (a base64 UUID), the broker keeps it.
        assert re.fullmatch(r"[A-Za-z0-9_+/=-]{22,24}", member_id), member_id
        assert int(epoch) >= 1 and int(target_epoch) >= 1
        assert current == target, "a stable group's members hold their targets"
        name, _, parts = current.partition(":")
        assert name == topic
        seen[member_id] = sorted(int(p) for p in parts.split(","))
    assert seen == expected, "the tool and librdkafka see the same members and assignments"
    assert rows[0][7] == rows[1][7], "TARGET-EPOCH is the group's target assignment epoch"
    # Kafka 4's widths: the verbose columns follow "#PARTITIONS" padded to 15 and one space.
    header = lines[0]
    assert header.index("CURRENT-EPOCH") == header.index("#PARTITIONS") + 16

    plain = table(cli(cluster, "--describe", "--group", group, "--members"))
    assert plain[0].split() == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"]
    assert sorted(line.split()[1] for line in plain[1:]) == sorted(expected)


def test_describe_members_of_the_classic_group_is_kafka_28s(cluster: LocalCluster, scene: dict[str, Any]) -> None:
    group, topic = scene["classic"].group, scene["topic"]
    lines = table(r := cli(cluster, "--describe", "--group", group, "--members", "--verbose"))
    assert r.stderr == ""
    assert lines[0].split() == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT"]
    ((g, member_id, host, client_id, count, assignment),) = [line.split() for line in lines[1:]]
    assert (g, host, client_id, count) == (group, "/127.0.0.1", "rdkafka", str(PARTITIONS))
    assert member_id.startswith("rdkafka-")
    assert assignment == f"{topic}({','.join(map(str, range(PARTITIONS)))})"


# --------------------------------------------------------------------------- --describe --state


def test_describe_state_of_the_consumer_group(cluster: LocalCluster, scene: dict[str, Any]) -> None:
    group = scene["consumer"].group
    view = librdkafka_view(cluster, group)
    coordinator = f"{view.coordinator.host}:{view.coordinator.port}  ({view.coordinator.id})"
    lines = table(r := cli(cluster, "--describe", "--group", group, "--state"))
    assert r.stderr == ""
    widths = [max(15, len(group)), max(25, len(coordinator)), 20, 20, 0]
    assert lines == [
        padded(["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"], widths),
        padded([group, coordinator, view.partition_assignor, "Stable", "2"], widths),
    ]
    assert view.partition_assignor == "uniform", "the broker's default server assignor"

    lines = table(cli(cluster, "--describe", "--group", group, "--state", "--verbose"))
    widths = [max(15, len(group)), max(25, len(coordinator)), 20, 20, 15, 25, 0]
    assert lines[0] == padded(["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "GROUP-EPOCH",
                               "TARGET-ASSIGNMENT-EPOCH", "#MEMBERS"], widths)
    group_epoch, target_epoch = lines[1].split()[-3:-1]
    assert lines[1] == padded([group, coordinator, "uniform", "Stable", group_epoch, target_epoch, "2"], widths)
    assert int(group_epoch) == int(target_epoch) >= 2, "a stable group's target caught up with its epoch"


def test_describe_state_of_the_classic_group_is_kafka_28s(cluster: LocalCluster, scene: dict[str, Any]) -> None:
    group = scene["classic"].group
    view = librdkafka_view(cluster, group)
    assert str(view.type).endswith("CLASSIC")
    coordinator = f"{view.coordinator.host}:{view.coordinator.port} ({view.coordinator.id})"
    lines = table(cli(cluster, "--describe", "--group", group, "--state"))
    widths = [max(25, len(coordinator)), 25, 20, 15, 0]
    assert lines == [
        padded(["GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"], widths),
        padded([group, coordinator, "range", "Stable", "1"], widths),
    ]


# --------------------------------------------------------------------------- --describe --offsets


@pytest.mark.parametrize("kind", ["consumer", "classic"])
def test_describe_offsets_of_both_types(cluster: LocalCluster, scene: dict[str, Any], kind: str) -> None:
    group, topic = scene[kind].group, scene["topic"]
    holders = {m.member_id: sorted(tp.partition for tp in m.assignment.topic_partitions)
               for m in librdkafka_view(cluster, group).members}
    lines = table(r := cli(cluster, "--describe", "--group", group, "--offsets"))
    assert r.stderr == ""
    assert lines[0].split() == OFFSETS_HEADER
    rows = [line.split() for line in lines[1:]]
    per_partition = RECORDS // PARTITIONS
    assert sorted(int(row[2]) for row in rows) == list(range(PARTITIONS))
    for g, t, p, current, end, lag, member_id, host, client_id in rows:
        assert (g, t, current, end, lag) == (group, topic, str(per_partition), str(per_partition), "0"), rows
        assert int(p) in holders[member_id] and (host, client_id) == ("/127.0.0.1", "rdkafka")
