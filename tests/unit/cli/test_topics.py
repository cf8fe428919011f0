"""``mafka topics``: argument checks and Kafka's output formats."""

from __future__ import annotations

import argparse

import pytest

from mafka.cli import topics
from mafka.cli.main import main


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
