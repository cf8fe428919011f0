"""``mafka topics``: argument checks and Kafka's output formats."""

from __future__ import annotations

import argparse
import re
from typing import Any

import pytest

from mafka.cli import topics
from mafka.cli.main import main
from mafka.cli.topics_common import TopicCommandError, parse_replica_assignment, select_topics
from mafka.errors import ErrorCode
from tests.unit.cli.fake_wire import WireFake


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    topics.add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["topics", "--bootstrap-server", "localhost:9092", *argv])


def test_create_arguments() -> None:
    args = parse("--create", "--topic", "t", "--partitions", "6", "--replication-factor", "3",
                 "--config", "retention.ms=1000", "--config", "cleanup.policy=compact")
    assert topics.check_args(args) == "create"
    assert (args.topic, args.partitions, args.replication_factor) == ("t", 6, 3)
    assert args.config == ["retention.ms=1000", "cleanup.policy=compact"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ((), "Command must include exactly one action"),
        (("--list", "--describe"), "Command must include exactly one action"),
        (("--create",), 'Missing required argument "[topic]"'),
        (("--delete",), 'Missing required argument "[topic]"'),
        (("--alter", "--topic", "t"), "Only --partitions can be altered"),
        (("--create", "--topic", "t", "--config", "novalue"), "Invalid topic config"),
        (("--describe", "--replication-factor", "2"), "can only be used with --create"),
    ],
)
def test_argument_errors(argv: tuple[str, ...], message: str) -> None:
    with pytest.raises(topics.TopicCommandError, match=message.replace("[", r"\[").replace("]", r"\]")):
        topics.check_args(parse(*argv))


def test_argument_error_exit_code_and_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["topics", "--bootstrap-server", "localhost:1", "--create"]) == 1
    out, err = capsys.readouterr()
    assert out == 'Error while executing topic command : Missing required argument "[topic]"\n'
    assert "ERROR java.lang.IllegalArgumentException" in err
    assert err.rstrip().endswith("(kafka.admin.TopicCommand$)")


def test_bad_bootstrap_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["topics", "--bootstrap-server", "nonsense", "--list"]) == 1
    assert "Error while executing topic command : Invalid url in bootstrap.servers: nonsense" in capsys.readouterr().out


def test_describe_lines() -> None:
    assert topics.format_topic_line("t", 6, 1, {}) == "Topic: t\tPartitionCount: 6\tReplicationFactor: 1\tConfigs: "
    assert (
        topics.format_topic_line("t", 6, 1, {}, "3Gd0H9ZWQn2uX4bQ8gXf2A")
        == "Topic: t\tTopicId: 3Gd0H9ZWQn2uX4bQ8gXf2A\tPartitionCount: 6\tReplicationFactor: 1\tConfigs: "
    )
    assert (
        topics.format_topic_line("t", 3, 3, {"retention.ms": "1000", "cleanup.policy": "compact"})
        == "Topic: t\tPartitionCount: 3\tReplicationFactor: 3\tConfigs: retention.ms=1000,cleanup.policy=compact"
    )
    assert (
        topics.format_partition_line("t", 0, 1, [1, 2, 3], [1, 3])
        == "\tTopic: t\tPartition: 0\tLeader: 1\tReplicas: 1,2,3\tIsr: 1,3"
    )
    assert "\tLeader: none\t" in topics.format_partition_line("t", 0, -1, [2], [])


def test_java_exception_names() -> None:
    from mafka.errors import ErrorCode

    assert topics._java_name(ErrorCode.TOPIC_ALREADY_EXISTS) == "org.apache.kafka.common.errors.TopicExistsException"
    assert topics._java_name(ErrorCode.INVALID_PARTITIONS) == "org.apache.kafka.common.errors.InvalidPartitionsException"


# -- against a fake cluster (AdminClient on the wire) ----------------------------------------------


class TopicsCluster(WireFake):
    def __init__(self) -> None:
        super().__init__({1: ("b1", 9092), 2: ("b2", 9093)})
        self.topics: dict[str, list[tuple[int, list[int], list[int]]]] = {
            "b": [(0, [1, 2], [1, 2]), (1, [2, 1], [2])],
            "a": [(0, [2], [])],
            "__consumer_offsets": [(0, [1], [1])],
        }
        self.overrides = {"b": {"retention.ms": "1000"}}

    def _Metadata(self, req: Any, broker: int) -> dict[str, Any]:
        names = sorted(self.topics) if req.topics is None else [t.name for t in req.topics]
        return {
            "brokers": [{"node_id": n, "host": h, "port": p, "rack": None} for n, (h, p) in self.brokers.items()],
            "cluster_id": "c", "controller_id": 2,
            "topics": [{"error_code": 0 if t in self.topics else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "name": t,
                        "is_internal": t.startswith("__"),
                        "partitions": [{"error_code": 0, "partition_index": p, "leader_id": r[0] if isr else -1,
                                        "replica_nodes": r, "isr_nodes": isr, "offline_replicas": []}
                                       for p, r, isr in self.topics.get(t, [])]} for t in names],
        }

    def _DescribeConfigs(self, req: Any, broker: int) -> dict[str, Any]:
        results = []
        for r in req.resources:
            configs = [{"name": "segment.bytes", "value": "1073741824", "read_only": False, "config_source": 5,
                        "is_sensitive": False, "synonyms": []}]
            configs += [{"name": k, "value": v, "read_only": False, "config_source": 1, "is_sensitive": False,
                         "synonyms": []} for k, v in self.overrides.get(r.resource_name, {}).items()]
            results.append({"error_code": 0, "error_message": None, "resource_type": r.resource_type,
                            "resource_name": r.resource_name, "configs": configs})
        return {"results": results}

    def _CreateTopics(self, req: Any, broker: int) -> dict[str, Any]:
        assert broker == 2, "to the controller"
        out = []
        for t in req.topics:
            if t.name in self.topics:
                out.append({"name": t.name, "error_code": ErrorCode.TOPIC_ALREADY_EXISTS,
                            "error_message": f"Topic '{t.name}' already exists."})
                continue
            self.topics[t.name] = [(p, [1], [1]) for p in range(max(1, t.num_partitions))]
            self.overrides[t.name] = {c.name: c.value for c in t.configs}
            out.append({"name": t.name, "error_code": 0, "error_message": None})
        return {"topics": out}


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> TopicsCluster:
    cluster = TopicsCluster()
    cluster.install(monkeypatch)
    return cluster


def topics_cmd(*argv: str) -> int:
    return main(["topics", "--bootstrap-server", "b1:9092", *argv])


def test_list_and_describe(fake: TopicsCluster, capsys: pytest.CaptureFixture[str]) -> None:
    assert topics_cmd("--list") == 0
    assert capsys.readouterr().out == "__consumer_offsets\na\nb\n"
    assert topics_cmd("--list", "--exclude-internal") == 0
    assert capsys.readouterr().out == "a\nb\n"
    assert topics_cmd("--describe", "--exclude-internal") == 0
    assert capsys.readouterr().out.splitlines() == [
        "Topic: a\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: ",
        "\tTopic: a\tPartition: 0\tLeader: none\tReplicas: 2\tIsr: ",
        "Topic: b\tPartitionCount: 2\tReplicationFactor: 2\tConfigs: retention.ms=1000",
        "\tTopic: b\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 1,2",
        "\tTopic: b\tPartition: 1\tLeader: 2\tReplicas: 2,1\tIsr: 2",
    ]
    assert topics_cmd("--describe", "--under-replicated-partitions") == 0
    assert capsys.readouterr().out.splitlines() == [
        "\tTopic: a\tPartition: 0\tLeader: none\tReplicas: 2\tIsr: ",
        "\tTopic: b\tPartition: 1\tLeader: 2\tReplicas: 2,1\tIsr: 2",
    ]
    assert topics_cmd("--describe", "--unavailable-partitions") == 0
    assert capsys.readouterr().out == "\tTopic: a\tPartition: 0\tLeader: none\tReplicas: 2\tIsr: \n"


def test_create_at_the_controller(fake: TopicsCluster, capsys: pytest.CaptureFixture[str]) -> None:
    assert topics_cmd("--create", "--topic", "c.d", "--partitions", "3", "--replication-factor", "1",
                      "--config", "cleanup.policy=compact") == 0
    assert capsys.readouterr().out == (
        "WARNING: Due to limitations in metric names, topics with a period ('.') or underscore ('_') could collide. "
        "To avoid issues it is best to use either, but not both.\nCreated topic c.d.\n")
    (body, broker), = fake.api_calls(19)
    (t,) = body.topics
    assert (broker, t.name, t.num_partitions, t.replication_factor) == (2, "c.d", 3, 1)
    assert [(c.name, c.value) for c in t.configs] == [("cleanup.policy", "compact")]
    assert topics_cmd("--create", "--topic", "a") == 1
    out, err = capsys.readouterr()
    assert out == "Error while executing topic command : Topic 'a' already exists.\n"
    assert "ERROR org.apache.kafka.common.errors.TopicExistsException: Topic 'a' already exists." in err
    assert topics_cmd("--create", "--topic", "a", "--if-not-exists") == 0
    assert capsys.readouterr().out == ""
    assert topics_cmd("--delete", "--topic", "nope") == 1
    assert capsys.readouterr().out == "Error while executing topic command : Topic 'nope' does not exist as expected\n"


def test_an_unreachable_cluster_times_out(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["topics", "--bootstrap-server", "127.0.0.1:1", "--list", "--timeout", "0.5"]) == 1
    out, err = capsys.readouterr()
    assert out.startswith("Error while executing topic command : Timed out waiting for a node assignment.")
    assert "ERROR org.apache.kafka.common.errors.TimeoutException" in err


def parse_zk(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    topics.add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["topics", "--zookeeper", "localhost:2181", *argv])


def test_zookeeper_form_allows_config_changes_on_alter() -> None:
    args = parse_zk("--alter", "--topic", "t", "--config", "retention.ms=1", "--delete-config", "segment.ms")
    assert topics.check_args(args) == "alter"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--bootstrap-server", "x:1", "--list"), "Only one of --bootstrap-server or --zookeeper"),
        (("--alter", "--topic", "t"), "--alter needs --partitions, --config or --delete-config"),
        (("--describe", "--delete-config", "a"), "can only be used with --zookeeper --alter"),
        (("--create", "--topic", "t", "--partitions", "1", "--replica-assignment", "1:2"), "can't be used with"),
    ],
)
def test_zookeeper_argument_errors(argv: tuple[str, ...], message: str) -> None:
    with pytest.raises(topics.TopicCommandError, match=re.escape(message)):
        topics.check_args(parse_zk(*argv))


def test_neither_bootstrap_nor_zookeeper_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["topics", "--list"]) == 1
    assert "Only one of --bootstrap-server or --zookeeper must be specified" in capsys.readouterr().out


def test_topic_is_kafkas_include_list() -> None:
    names = ["a.b", "axb", "orders", "orders-eu", "__consumer_offsets"]
    assert select_topics(names, None) == sorted(names)
    assert select_topics(names, "orders") == ["orders"]
    assert select_topics(names, "orders.*") == ["orders", "orders-eu"]
    assert select_topics(names, "orders, axb") == ["axb", "orders"]
    assert select_topics(names, "'a.b'") == ["a.b", "axb"]  # a Java regex: '.' matches any character
    assert select_topics(names, None, exclude_internal=True) == ["a.b", "axb", "orders", "orders-eu"]
    assert select_topics(names, "[bad") == []


def test_replica_assignment_parsing() -> None:
    assert parse_replica_assignment("1:2,2:3, 3:1") == {0: [1, 2], 1: [2, 3], 2: [3, 1]}
    with pytest.raises(TopicCommandError, match="duplicate entries: 1"):
        parse_replica_assignment("1:1")
    with pytest.raises(TopicCommandError, match="different replication factor"):
        parse_replica_assignment("1:2,3")
    with pytest.raises(TopicCommandError, match="Invalid replica assignment"):
        parse_replica_assignment("a:b")
