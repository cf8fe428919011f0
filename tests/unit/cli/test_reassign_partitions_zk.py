"""``mafka reassign-partitions --zookeeper``: Kafka 2.8's deprecated form, on an in-memory ZooKeeper."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from mafka.cli import reassign_partitions_zk as rpz
from mafka.cli.main import main
from mafka.coordination.znodes import ReassignPartitionsZNode
from tests.unit.cli.fake_zk import FakeZk
from tests.unit.cli.test_reassign_partitions import ReassignCluster

DEPRECATED = "Warning: --zookeeper is deprecated, and will be removed in a future version of Kafka."
#: --verify's progress summary on stderr (plain: stderr is not a terminal under capsys)
VERIFY_PROGRESS = re.compile(r"reassign-partitions: (\d+)/(\d+) partitions moved \((\d+)%\) in \d+\.\d s\n")


@pytest.fixture
def zk(monkeypatch: pytest.MonkeyPatch) -> FakeZk:
    fake = FakeZk()
    for b in (1, 2, 3):
        fake.add_broker(b)
    fake.add_topic("t", {0: [1, 2], 1: [2, 3]}, {"retention.ms": "1000"})
    fake.install(monkeypatch, rpz)
    return fake


def reassign(*argv: str) -> int:
    return main(["reassign-partitions", "--zookeeper", "zk:2181/kafka", *argv])


def plan(tmp_path: Path, entries: dict[tuple[str, int], list[int]], **extra: object) -> str:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": t, "partition": p, "replicas": r, **extra} for (t, p), r in entries.items()]}))
    return str(path)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--verify",), 'Missing required argument "[reassignment-json-file]"'),
        (("--generate", "--topics-to-move-json-file", "f"), 'Missing required argument "[broker-list]"'),
        (("--list",), 'Option "[zookeeper]" can\'t be used with action "[list]"'),
        (("--cancel", "--reassignment-json-file", "f"), 'Option "[zookeeper]" can\'t be used with action "[cancel]"'),
        (("--verify", "--reassignment-json-file", "f", "--throttle", "5"),
         'Option "[throttle]" can\'t be used with action "[verify]"'),
        (("--generate", "--topics-to-move-json-file", "f", "--broker-list", "1", "--preserve-throttles"),
         'Option "[preserve-throttles]" can\'t be used with action "[generate]"'),
        (("--execute", "--reassignment-json-file", "f", "--additional"),
         'java.lang.RuntimeException: You must specify --bootstrap-server when using "[additional]"'),
        (("--execute", "--reassignment-json-file", "f", "--timeout", "5"),
         'java.lang.RuntimeException: You must specify --bootstrap-server when using "[timeout]"'),
        (("--execute", "--reassignment-json-file", "f", "--replica-alter-log-dirs-throttle", "5"),
         'java.lang.RuntimeException: You must specify --bootstrap-server when using '
         '"[replica-alter-log-dirs-throttle]"'),
    ],
)
def test_kafkas_argument_checks(zk: FakeZk, argv: tuple[str, ...], message: str,
                                capsys: pytest.CaptureFixture[str]) -> None:
    assert reassign(*argv) == 1
    out, err = capsys.readouterr()
    assert (out, err) == ("", message + "\n")
    assert zk.connects == [], "nothing is asked before the arguments are right"


def test_neither_bootstrap_server_nor_zookeeper(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reassign-partitions", "--verify", "--reassignment-json-file", "f"]) == 1
    assert capsys.readouterr() == ("", "Please specify --bootstrap-server\n")


def test_both_given_ignores_zookeeper_with_kafkas_warning(zk: FakeZk, monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = ReassignCluster()
    cluster.install(monkeypatch)
    f = plan(tmp_path, {("t", 0): [1, 2]})
    assert main(["reassign-partitions", "--bootstrap-server", "b1:9092", "--zookeeper", "zk:2181",
                 "--verify", "--reassignment-json-file", f]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:3] == [
        "Warning: ignoring deprecated --zookeeper option because --bootstrap-server was specified.  "
        "The --zookeeper option will be removed in a future version of Kafka.",
        "Status of partition reassignment:",
        "Reassignment of partition t-0 is complete.",
    ]
    assert zk.connects == [], "the znodes were not touched"


def test_generate_reads_brokers_and_assignment_from_zookeeper(zk: FakeZk, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    zk.add_topic("u", {0: [3], 1: [1], 2: [2]})
    topics = tmp_path / "topics.json"
    topics.write_text('{"topics":[{"topic":"t"},{"topic":"u"},{"topic":"gone"}],"version":1}')
    assert reassign("--generate", "--topics-to-move-json-file", str(topics), "--broker-list", "2,3,9") == 0
    lines = capsys.readouterr().out.splitlines()
    assert zk.connects == ["zk:2181/kafka"]
    assert lines[:3] == [
        DEPRECATED,
        "Current partition replica assignment",
        '{"version":1,"partitions":['
        '{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any","any"]},'
        '{"topic":"t","partition":1,"replicas":[2,3],"log_dirs":["any","any"]},'
        '{"topic":"u","partition":0,"replicas":[3],"log_dirs":["any"]},'
        '{"topic":"u","partition":1,"replicas":[1],"log_dirs":["any"]},'
        '{"topic":"u","partition":2,"replicas":[2],"log_dirs":["any"]}]}',
    ], "a topic missing from /brokers/topics is left out, as in 2.8"
    assert lines[3:5] == ["", "Proposed partition reassignment configuration"]
    proposed = json.loads(lines[5])["partitions"]
    assert [(p["topic"], p["partition"]) for p in proposed] == [("t", 0), ("t", 1), ("u", 0), ("u", 1), ("u", 2)]
    for p in proposed:
        assert set(p["replicas"]) <= {2, 3}, "only live brokers of --broker-list (9 is not registered)"
        assert len(p["replicas"]) == (2 if p["topic"] == "t" else 1) == len(set(p["replicas"]))
    assert {p["replicas"][0] for p in proposed if p["topic"] == "u"} == {2, 3}, "leaders spread round-robin"


def test_generate_with_some_racks(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    fake = FakeZk()
    fake.add_broker(1, rack="a")
    fake.add_broker(2)
    fake.add_topic("t", {0: [1]})
    fake.install(monkeypatch, rpz)
    topics = tmp_path / "topics.json"
    topics.write_text('{"topics":[{"topic":"t"}],"version":1}')
    assert reassign("--generate", "--topics-to-move-json-file", str(topics), "--broker-list", "1,2") == 1
    assert capsys.readouterr().out.splitlines()[-1] == (
        "Error: Not all brokers have rack information. Add --disable-rack-aware in command line to make "
        "replica assignment without rack information."
    )
    assert reassign("--generate", "--topics-to-move-json-file", str(topics), "--broker-list", "1,2",
                    "--disable-rack-aware") == 0


def test_execute_writes_the_legacy_znode_with_throttles(zk: FakeZk, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    f = plan(tmp_path, {("t", 1): [3, 1], ("t", 0): [1, 2]})
    assert reassign("--execute", "--reassignment-json-file", f, "--throttle", "1000") == 0
    assert capsys.readouterr().out.splitlines() == [
        DEPRECATED,
        "Current partition replica assignment",
        "",
        '{"version":1,"partitions":['
        '{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any","any"]},'
        '{"topic":"t","partition":1,"replicas":[2,3],"log_dirs":["any","any"]}]}',
        "",
        "Save this to use as the --reassignment-json-file option during rollback",
        "Warning: You must run --verify periodically, until the reassignment completes, to ensure the "
        "throttle is removed.",
        "The inter-broker throttle limit was set to 1000 B/s",
        "Successfully started partition reassignments for t-0,t-1",
    ]
    assert json.loads(zk.get(ReassignPartitionsZNode.PATH) or b"") == {"version": 1, "partitions": [
        {"topic": "t", "partition": 0, "replicas": [1, 2]},
        {"topic": "t", "partition": 1, "replicas": [3, 1]},
    ]}
    assert zk.call(zk.zk.get_topic_config, "t") == {
        "retention.ms": "1000",  # kept
        "leader.replication.throttled.replicas": "0:1,0:2,1:2,1:3",
        "follower.replication.throttled.replicas": "1:1",
    }
    for b in (1, 2, 3):
        assert zk.call(zk.zk.get_broker_config, b) == {
            "leader.replication.throttled.rate": "1000", "follower.replication.throttled.rate": "1000"}
    changes = [json.loads(v)["entity_path"] for k, v in zk.tree.dump("/config/changes").items() if v]
    assert changes == ["topics/t", "brokers/1", "brokers/2", "brokers/3"], "each change is announced"


def test_execute_refuses_while_a_reassignment_is_pending(zk: FakeZk, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    zk.call(zk.zk.create_partition_reassignment, {("t", 1): [1, 2]})
    before = zk.get(ReassignPartitionsZNode.PATH)
    assert reassign("--execute", "--reassignment-json-file", plan(tmp_path, {("t", 0): [2, 3]})) == 1
    assert capsys.readouterr().out.splitlines() == [DEPRECATED, (
        "Cannot execute because there is an existing partition assignment.  Use --additional to override "
        "this and create a new partition assignment in addition to the existing one. The --additional flag "
        "can also be used to change the throttle by resubmitting the current reassignment.")]
    assert zk.get(ReassignPartitionsZNode.PATH) == before


@pytest.mark.parametrize(
    ("entries", "extra", "message"),
    [
        ({("t", 0): [1], ("t", 5): [1], ("x", 0): [1]}, {},
         "Error: The proposed assignment contains non-existent partitions: List(t-5, x-0)"),
        ({("t", 0): [1, 7, 8]}, {}, "Error: The proposed assignment contains non-existent brokerIDs: 7,8"),
        ({("t", 0): [1]}, {"log_dirs": ["/data/a"]},
         "Error: bootstrap-server needs to be provided when replica reassignments are present."),
        ({("t", 0): [1, 1]}, {},
         "Error: Partition replica lists may not contain duplicate entries: t-0 contains multiple entries for 1"),
    ],
)
def test_execute_checks_partitions_and_brokers(zk: FakeZk, tmp_path: Path, entries: dict, extra: dict,
                                               message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert reassign("--execute", "--reassignment-json-file", plan(tmp_path, entries, **extra)) == 1
    assert capsys.readouterr().out.splitlines() == [DEPRECATED, message]
    assert zk.get(ReassignPartitionsZNode.PATH) is None


def test_verify_until_the_znode_is_gone_then_clears_throttles(zk: FakeZk, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    f = plan(tmp_path, {("t", 0): [1, 2], ("t", 1): [3, 1]})
    assert reassign("--execute", "--reassignment-json-file", f, "--throttle", "1000") == 0
    zk.call(zk.zk.set_broker_config, 2, {"leader.replication.throttled.rate": "1000", "log.cleaner.threads": "2"})
    capsys.readouterr()

    assert reassign("--verify", "--reassignment-json-file", f) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        DEPRECATED,
        "Warning: because you are using the deprecated --zookeeper option, the results may be incomplete.  "
        "Use --bootstrap-server instead for more accurate results.",
        "Status of partition reassignment:",
        "Reassignment of partition t-0 is still in progress.",
        "Reassignment of partition t-1 is still in progress.",
    ]
    assert (m := VERIFY_PROGRESS.fullmatch(err)) and m.groups() == ("0", "2", "0"), err
    assert "follower.replication.throttled.replicas" in zk.call(zk.zk.get_topic_config, "t")

    # The controller finished t-0 (dropped from the znode), then t-1 but to other replicas (someone else's move).
    zk.call(zk.zk.set_partition_reassignment, {("t", 1): [3, 1]})
    assert reassign("--verify", "--reassignment-json-file", f) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[3:] == [
        "Reassignment of partition t-0 is complete.",
        "Reassignment of partition t-1 is still in progress.",
    ]
    assert (m := VERIFY_PROGRESS.fullmatch(err)) and m.groups() == ("1", "2", "50"), err
    zk.call(zk.zk.delete_partition_reassignment)
    assert reassign("--verify", "--reassignment-json-file", f) == 0
    out, err = capsys.readouterr()
    assert (m := VERIFY_PROGRESS.fullmatch(err)) and m.groups() == ("1", "2", "50"), "t-1 is not on its target"
    assert out.splitlines()[3:] == [
        "Reassignment of partition t-0 is complete.",
        "There is no active reassignment of partition t-1, but replica set is 2,3 rather than 3,1.",
        "Clearing broker-level throttles on brokers 1,2,3",
        "Clearing topic-level throttles on topic t",
    ]
    assert zk.call(zk.zk.get_topic_config, "t") == {"retention.ms": "1000"}
    assert zk.call(zk.zk.get_broker_config, 1) == {}
    assert zk.call(zk.zk.get_broker_config, 2) == {"log.cleaner.threads": "2"}, "other settings stay"


def test_verify_preserve_throttles(zk: FakeZk, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    zk.call(zk.zk.set_topic_config, "t", {"leader.replication.throttled.replicas": "0:1"})
    f = plan(tmp_path, {("t", 0): [1, 2]})
    assert reassign("--verify", "--reassignment-json-file", f, "--preserve-throttles") == 0
    assert capsys.readouterr().out.splitlines()[-1] == "Reassignment of partition t-0 is complete."
    assert zk.call(zk.zk.get_topic_config, "t") == {"leader.replication.throttled.replicas": "0:1"}


def test_zookeeper_unreachable(zk: FakeZk, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    zk.unreachable = True
    assert reassign("--verify", "--reassignment-json-file", plan(tmp_path, {("t", 0): [1, 2]})) == 1
    assert capsys.readouterr().out.splitlines() == [
        DEPRECATED, "Error: Timed out waiting for connection while in state: CONNECTING"]
