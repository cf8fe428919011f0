"""``mafka consumer-groups``: Kafka 2.8's ConsumerGroupCommand against a fake cluster (no sockets).

The command runs on a real :class:`mafka.client.AdminClient` whose connections
lead to the fake (:mod:`tests.unit.cli.fake_wire`): every request body is
decoded with Mafka's own wire schema (so field names and versions are those
Mafka advertises) and answered through the schema too, so the command reads
real response bodies.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import pytest

from mafka.cli import consumer_groups as cg
from mafka.cli.main import main
from mafka.client.admin import AdminClient
from mafka.errors import ErrorCode
from mafka.group.consumer_protocol import Assignment, encode_assignment
from tests.unit.cli.fake_wire import WireFake

OK = ErrorCode.NONE
LIST_OFFSETS, METADATA, OFFSET_COMMIT, FIND_COORDINATOR = 2, 3, 8, 10
DESCRIBE_GROUPS, LIST_GROUPS, DELETE_GROUPS = 15, 16, 42


def member(mid: str, client: str, host: str, assignment: dict[str, list[int]] | None,
           instance: str | None = None) -> dict[str, Any]:
    raw = b"" if assignment is None else encode_assignment(Assignment(assignment))
    return {"member_id": mid, "group_instance_id": instance, "client_id": client, "client_host": host,
            "member_metadata": b"", "member_assignment": raw}


class FakeCluster(WireFake):
    """Two brokers; broker 1 coordinates every consumer group, broker 2 one Connect group."""

    def __init__(self) -> None:
        super().__init__({1: ("b1", 9092), 2: ("b2", 9093)})
        self.topics: dict[str, dict[int, int]] = {"t": {0: 1, 1: 2, 2: 1}, "u": {0: 2}}
        self.log: dict[tuple[str, int], tuple[int, int]] = {
            ("t", 0): (0, 100), ("t", 1): (10, 50), ("t", 2): (0, 0), ("u", 0): (5, 7),
        }
        self.times: dict[tuple[str, int], list[tuple[int, int]]] = {}
        self.groups: dict[str, dict[str, Any]] = {}
        self.offsets: dict[str, dict[tuple[str, int], int]] = {}
        self.coordinator = 1
        self.find_errors: list[int] = []
        self.describe_errors: list[int] = []
        self.delete_errors: dict[str, int] = {}
        self.metadata_hook: Any = None

    def group(self, gid: str, state: str, members: list[dict[str, Any]] | None = None,
              protocol: str = "range", protocol_type: str = "consumer") -> None:
        self.groups[gid] = {"state": state, "members": members or [], "protocol": protocol,
                            "protocol_type": protocol_type}

    # -- handlers --------------------------------------------------------------

    def _Metadata(self, req: Any, broker: int) -> dict[str, Any]:
        names = sorted(self.topics) if req.topics is None else [t.name for t in req.topics]
        body = {
            "brokers": [{"node_id": n, "host": h, "port": p, "rack": None} for n, (h, p) in self.brokers.items()],
            "cluster_id": "c", "controller_id": 1,
            "topics": [
                {"error_code": OK if t in self.topics else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "name": t,
                 "is_internal": False,
                 "partitions": [{"error_code": OK, "partition_index": p, "leader_id": leader,
                                 "replica_nodes": [leader], "isr_nodes": [leader], "offline_replicas": []}
                                for p, leader in sorted(self.topics.get(t, {}).items())]}
                for t in names
            ],
        }
        if self.metadata_hook is not None:
            self.metadata_hook()
        return body

    def _FindCoordinator(self, req: Any, broker: int) -> dict[str, Any]:
        assert req.key_type == 0
        if self.find_errors:
            return {"error_code": self.find_errors.pop(0), "error_message": None, "node_id": -1, "host": "",
                    "port": -1}
        host, port = self.brokers[self.coordinator]
        return {"error_code": OK, "error_message": None, "node_id": self.coordinator, "host": host, "port": port}

    def _ListGroups(self, req: Any, broker: int | None) -> dict[str, Any]:
        if broker != self.coordinator:  # another broker coordinates one non-consumer group
            return {"error_code": OK, "groups": [{"group_id": "connect-x", "protocol_type": "connect"}]}
        return {"error_code": OK,
                "groups": [{"group_id": g, "protocol_type": v["protocol_type"]} for g, v in self.groups.items()]}

    def _DescribeGroups(self, req: Any, broker: int | None) -> dict[str, Any]:
        if broker != self.coordinator:  # only the group it lists (listing goes to every broker)
            assert list(req.groups) == ["connect-x"]
            return {"groups": [{"error_code": OK, "group_id": "connect-x", "group_state": "Stable",
                                "protocol_type": "connect", "protocol_data": "sessioned", "members": []}]}
        return {"groups": [self._describe(gid) for gid in req.groups]}

    def _describe(self, gid: str) -> dict[str, Any]:
        if self.describe_errors:
            return {"error_code": self.describe_errors.pop(0), "group_id": gid, "group_state": "",
                    "protocol_type": "", "protocol_data": "", "members": []}
        g = self.groups.get(gid)
        if g is None:
            return {"error_code": OK, "group_id": gid, "group_state": "Dead", "protocol_type": "",
                    "protocol_data": "", "members": []}
        return {"error_code": OK, "group_id": gid, "group_state": g["state"], "protocol_type": g["protocol_type"],
                "protocol_data": g["protocol"] if g["members"] else "", "members": g["members"]}

    def _ConsumerGroupDescribe(self, req: Any, broker: int | None) -> dict[str, Any]:
        # Kafka 4's answer for a group that is not a consumer group (KIP-848): these are all classic.
        return {"groups": [{"error_code": ErrorCode.GROUP_ID_NOT_FOUND, "error_message": f"Group {gid} is not a "
                            "consumer group.", "group_id": gid, "group_state": "", "group_epoch": -1,
                            "assignment_epoch": -1, "assignor_name": "", "members": []} for gid in req.group_ids]}

    def _OffsetFetch(self, req: Any, broker: int | None) -> dict[str, Any]:
        # v8 (what a Mafka client and broker agree on): one entry of ``groups`` per group.
        assert broker == self.coordinator and len(req.groups) == 1 and req.groups[0].topics is None
        group = req.groups[0].group_id
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for (t, p), off in sorted(self.offsets.get(group, {}).items()):
            by_topic.setdefault(t, []).append({"partition_index": p, "committed_offset": off, "metadata": "",
                                               "error_code": OK})
        topics = [{"name": t, "partitions": ps} for t, ps in by_topic.items()]
        return {"groups": [{"group_id": group, "error_code": OK, "topics": topics}]}

    def _ListOffsets(self, req: Any, broker: int | None) -> dict[str, Any]:
        assert req.replica_id == -1
        topics = []
        for t in req.topics:
            parts = []
            for p in t.partitions:
                assert self.topics[t.name][p.partition_index] == broker, "ListOffsets goes to the leader"
                start, end = self.log[(t.name, p.partition_index)]
                if p.timestamp == cg.LATEST:
                    offset = end
                elif p.timestamp == cg.EARLIEST:
                    offset = start
                else:
                    offset = next((o for ts, o in self.times.get((t.name, p.partition_index), [])
                                   if ts >= p.timestamp), -1)
                parts.append({"partition_index": p.partition_index, "error_code": OK, "timestamp": -1,
                              "offset": offset})
            topics.append({"name": t.name, "partitions": parts})
        return {"topics": topics}

    def _OffsetCommit(self, req: Any, broker: int | None) -> dict[str, Any]:
        assert broker == self.coordinator
        store = self.offsets.setdefault(req.group_id, {})
        for t in req.topics:
            for p in t.partitions:
                store[(t.name, p.partition_index)] = p.committed_offset
        return {"topics": [{"name": t.name, "partitions": [{"partition_index": p.partition_index, "error_code": OK}
                                                            for p in t.partitions]} for t in req.topics]}

    def _DeleteGroups(self, req: Any, broker: int | None) -> dict[str, Any]:
        assert broker == self.coordinator
        results = []
        for g in req.groups_names:
            code = self.delete_errors.get(g, OK if g in self.groups else ErrorCode.GROUP_ID_NOT_FOUND)
            if code == OK:
                del self.groups[g]
            results.append({"group_id": g, "error_code": code})
        return {"results": results}


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    cg.add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["consumer-groups", "--bootstrap-server", "b1:9092", *argv])


def run(cluster: FakeCluster, *argv: str) -> int:
    with pytest.MonkeyPatch.context() as mp:
        cluster.install(mp)
        return cg.run(parse(*argv))


@pytest.fixture
def cluster() -> FakeCluster:
    c = FakeCluster()
    c.group("g", "Stable", [
        member("consumer-1-aaa", "consumer-1", "/10.0.0.1", {"t": [2]}),
        member("consumer-2-bbb", "consumer-2", "/10.0.0.2", {"u": [0], "t": [1, 0]}),
        member("consumer-3-ccc", "consumer-3", "/10.0.0.3", {}),
    ])
    c.offsets["g"] = {("t", 0): 90, ("t", 1): 50, ("u", 0): 6}
    c.group("idle", "Empty")
    c.offsets["idle"] = {("t", 0): 40, ("t", 1): 20}
    return c


# --------------------------------------------------------------------------- list


def test_list_is_the_union_of_consumer_groups_of_every_broker(cluster: FakeCluster,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert run(cluster, "--list") == 0
    assert capsys.readouterr().out == "g\nidle\n"
    assert sorted(b for _, b in cluster.api_calls(LIST_GROUPS)) == [1, 2]


def test_list_with_state(cluster: FakeCluster, capsys: pytest.CaptureFixture[str]) -> None:
    # Kafka 4's printGroupInfo: GROUP 10 wider than the longest id (at least 15), STATE 20, both padded.
    fmt = "%-25s %-20s"
    assert run(cluster, "--list", "--state") == 0
    assert capsys.readouterr().out.split("\n") == [
        fmt % ("GROUP", "STATE"), fmt % ("g", "Stable"), fmt % ("idle", "Empty"), ""]
    assert run(cluster, "--list", "--state", "empty") == 0
    assert capsys.readouterr().out.split("\n") == [fmt % ("GROUP", "STATE"), fmt % ("idle", "Empty"), ""]


# --------------------------------------------------------------------------- describe --offsets


def test_describe_offsets_rows_lag_and_dashes(cluster: FakeCluster, capsys: pytest.CaptureFixture[str]) -> None:
    cluster.offsets["g"][("t", 5)] = 3  # committed, no member, not in the log: end unknown
    cluster.topics["t"][5] = 1
    cluster.log[("t", 5)] = (0, 8)
    del cluster.offsets["g"][("t", 1)]  # assigned but never committed
    assert run(cluster, "--describe", "--group", "g") == 0
    out, err = capsys.readouterr()
    assert err == ""
    fmt = "%-15s %-15s %-10s %-15s %-15s %-15s %-15s %-15s %s"
    expected = [
        "",
        fmt % ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST",
               "CLIENT-ID"),
        # members with more partitions first; within a member by topic, partition
        fmt % ("g", "t", 0, 90, 100, 10, "consumer-2-bbb", "/10.0.0.2", "consumer-2"),
        fmt % ("g", "t", 1, "-", 50, "-", "consumer-2-bbb", "/10.0.0.2", "consumer-2"),
        fmt % ("g", "u", 0, 6, 7, 1, "consumer-2-bbb", "/10.0.0.2", "consumer-2"),
        fmt % ("g", "t", 2, "-", 0, "-", "consumer-1-aaa", "/10.0.0.1", "consumer-1"),
        fmt % ("g", "t", 5, 3, 8, 5, "-", "-", "-"),
    ]
    assert out.split("\n") == [*expected, ""]
    # each ListOffsets went to the partition's leader (asserted by the fake), at the latest offset
    for body, _ in cluster.api_calls(LIST_OFFSETS):
        assert {p.timestamp for t in body.topics for p in t.partitions} == {-1}


def test_describe_offsets_widths_grow_with_the_data(capsys: pytest.CaptureFixture[str]) -> None:
    c = FakeCluster()
    long_topic = "a-rather-long-topic-name"
    c.topics[long_topic] = {0: 1}
    c.log[(long_topic, 0)] = (0, 3)
    long_id = "consumer-with-a-long-id-0123456789"
    c.group("a-consumer-group-name", "Stable",
            [member(long_id, "cli", "/127.0.0.1", {long_topic: [0]})])
    assert run(c, "--describe", "--group", "a-consumer-group-name", "--offsets") == 0
    lines = capsys.readouterr().out.split("\n")
    assert lines[1] == ("GROUP                 TOPIC                    PARTITION  CURRENT-OFFSET  "
                        "LOG-END-OFFSET  LAG             CONSUMER-ID                        HOST            "
                        "CLIENT-ID")
    assert lines[2] == ("a-consumer-group-name a-rather-long-topic-name 0          -               "
                        "3               -               consumer-with-a-long-id-0123456789 /127.0.0.1      cli")


def test_describe_empty_group_with_offsets(cluster: FakeCluster, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(cluster, "--describe", "--group", "idle") == 0
    out, err = capsys.readouterr()
    assert err == "\nConsumer group 'idle' has no active members.\n"
    assert out.split("\n")[2:4] == [
        "idle            t               0          40              100             60              -               -               -",  # noqa: E501
        "idle            t               1          20              50              30              -               -               -",  # noqa: E501
    ]


def test_describe_empty_group_without_offsets_prints_no_table(cluster: FakeCluster,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    cluster.offsets["idle"] = {}
    assert run(cluster, "--describe", "--group", "idle") == 0
    assert capsys.readouterr() == ("", "\nConsumer group 'idle' has no active members.\n")


def test_describe_missing_group(cluster: FakeCluster, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(cluster, "--describe", "--group", "nope") == 1
    assert capsys.readouterr() == ("\nError: Consumer group 'nope' does not exist.\n", "")


def test_describe_rebalancing_warns(cluster: FakeCluster, capsys: pytest.CaptureFixture[str]) -> None:
    cluster.groups["g"]["state"] = "PreparingRebalance"
    assert run(cluster, "--describe", "--group", "g") == 0
    out, err = capsys.readouterr()
    assert err == "\nWarning: Consumer group 'g' is rebalancing.\n"
    assert "GROUP" in out


def test_describe_all_groups_sorted(cluster: FakeCluster, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(cluster, "--describe", "--all-groups") == 0
    out = capsys.readouterr().out
    assert out.index("\ng ") < out.index("\nidle ")
    assert "connect-x" not in out


def test_describe_a_non_consumer_group_fails(cluster: FakeCluster, capsys: pytest.CaptureFixture[str]) -> None:
    cluster.group("c", "Stable", [member("m", "c", "/h", None)], protocol_type="connect")
    assert run(cluster, "--describe", "--group", "c") == 1
    assert capsys.readouterr().out == ("\nError: Executing consumer group command failed due to "
                                       "java.lang.IllegalArgumentException: GroupId c is not a consumer group "
                                       "(connect).\n")


# --------------------------------------------------------------------------- describe --members / --state


def test_describe_members(cluster: FakeCluster, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(cluster, "--describe", "--group", "g", "--members") == 0
    fmt = "%-15s %-15s %-15s %-15s %-15s "
    assert capsys.readouterr().out.split("\n") == [
        "",
        fmt % ("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"),
        fmt % ("g", "consumer-1-aaa", "/10.0.0.1", "consumer-1", 1),
        fmt % ("g", "consumer-2-bbb", "/10.0.0.2", "consumer-2", 3),
        fmt % ("g", "consumer-3-ccc", "/10.0.0.3", "consumer-3", 0),
        "",
    ]


def test_describe_members_verbose_with_instance_ids(cluster: FakeCluster,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    cluster.groups["g"]["members"][0]["group_instance_id"] = "static-1"
    assert run(cluster, "--describe", "--group", "g", "--members", "--verbose") == 0
    fmt = "%-15s %-15s %-17s %-15s %-15s %-15s %s"
    assert capsys.readouterr().out.split("\n") == [
        "",
        fmt % ("GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT"),
        fmt % ("g", "consumer-1-aaa", "static-1", "/10.0.0.1", "consumer-1", 1, "t(2)"),
        fmt % ("g", "consumer-2-bbb", "", "/10.0.0.2", "consumer-2", 3, "t(0,1), u(0)"),
        fmt % ("g", "consumer-3-ccc", "", "/10.0.0.3", "consumer-3", 0, "-"),
        "",
    ]


def test_describe_state(cluster: FakeCluster, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(cluster, "--describe", "--group", "g", "--state") == 0
    fmt = "%-25s %-25s %-20s %-15s %s"
    assert capsys.readouterr().out.split("\n") == [
        "",
        fmt % ("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"),
        fmt % ("g", "b1:9092 (1)", "range", "Stable", 3),
        "",
    ]


def test_describe_state_of_an_empty_group(cluster: FakeCluster, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(cluster, "--describe", "--group", "idle", "--state") == 0
    out, err = capsys.readouterr()
    assert err == "\nConsumer group 'idle' has no active members.\n"
    assert out.split("\n")[2] == "%-25s %-25s %-20s %-15s %s" % ("idle", "b1:9092 (1)", "", "Empty", 0)  # noqa: UP031 (Java's format string, verbatim)


# --------------------------------------------------------------------------- coordinator lookup


def test_coordinator_errors_are_retried(cluster: FakeCluster, capsys: pytest.CaptureFixture[str]) -> None:
    cluster.find_errors = [ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS]
    cluster.describe_errors = [ErrorCode.NOT_COORDINATOR]
    assert run(cluster, "--describe", "--group", "g", "--state") == 0
    assert len(cluster.api_calls(FIND_COORDINATOR)) == 4
    assert len(cluster.api_calls(DESCRIBE_GROUPS)) == 2
    assert "Stable" in capsys.readouterr().out


def test_coordinator_never_available_times_out(cluster: FakeCluster, capsys: pytest.CaptureFixture[str]) -> None:
    cluster.find_errors = [ErrorCode.COORDINATOR_NOT_AVAILABLE] * 1000
    started = time.monotonic()
    assert run(cluster, "--describe", "--group", "g", "--timeout", "600") == 1
    elapsed = time.monotonic() - started
    assert capsys.readouterr().out == (
        "\nError: Executing consumer group command failed due to org.apache.kafka.common.errors.TimeoutException: "
        "Call(callName=describeConsumerGroups) timed out after 600 ms\n"
    )
    assert 0.5 < elapsed < 3.0, "bounded by --timeout"
    assert len(cluster.api_calls(FIND_COORDINATOR)) > 2, "the lookup was retried meanwhile"
    assert cluster.api_calls(DESCRIBE_GROUPS) == []


def test_a_non_retriable_coordinator_error_fails(cluster: FakeCluster, capsys: pytest.CaptureFixture[str]) -> None:
    cluster.find_errors = [ErrorCode.GROUP_AUTHORIZATION_FAILED]
    assert run(cluster, "--describe", "--group", "g") == 1
    assert "GroupAuthorizationException: Group authorization failed." in capsys.readouterr().out


# --------------------------------------------------------------------------- reset-offsets


RESET_FMT = "%-30s %-30s %-10s %-15s"


def reset_table(*rows: tuple[str, str, int, int]) -> list[str]:
    return ["", RESET_FMT % ("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"), *(RESET_FMT % r for r in rows), ""]


def test_reset_refused_for_an_active_group(cluster: FakeCluster, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(cluster, "--reset-offsets", "--group", "g", "--all-topics", "--to-earliest", "--execute") == 1
    out, _ = capsys.readouterr()
    assert out.split("\n") == [
        "",
        "Error: Assignments can only be reset if the group 'g' is inactive, but the current state is Stable.",
        *reset_table(),
    ]
    assert cluster.api_calls(OFFSET_COMMIT) == []


def test_reset_dry_run_by_default_with_kafkas_warning(cluster: FakeCluster,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert run(cluster, "--reset-offsets", "--group", "idle", "--topic", "t", "--to-earliest") == 0
    out, err = capsys.readouterr()
    assert err == cg.NO_EXECUTE_WARNING + "\n"
    assert out.split("\n") == reset_table(("idle", "t", 0, 0), ("idle", "t", 1, 10), ("idle", "t", 2, 0))
    assert cluster.api_calls(OFFSET_COMMIT) == []
    assert cluster.offsets["idle"] == {("t", 0): 40, ("t", 1): 20}


def test_reset_execute_commits_with_generation_minus_one(cluster: FakeCluster,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert run(cluster, "--reset-offsets", "--group", "idle", "--topic", "t:0,1", "--to-latest", "--execute") == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert out.split("\n") == reset_table(("idle", "t", 0, 100), ("idle", "t", 1, 50))
    ((body, broker),) = cluster.api_calls(OFFSET_COMMIT)
    assert broker == cluster.coordinator
    assert (body.group_id, body.generation_id_or_member_epoch, body.member_id) == ("idle", -1, "")
    assert cluster.offsets["idle"] == {("t", 0): 100, ("t", 1): 50}


def test_reset_dry_run_flag_does_not_commit(cluster: FakeCluster, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(cluster, "--reset-offsets", "--group", "idle", "--all-topics", "--to-latest", "--dry-run") == 0
    assert capsys.readouterr().err == ""
    assert cluster.api_calls(OFFSET_COMMIT) == []


def test_reset_a_group_that_does_not_exist_is_allowed(cluster: FakeCluster,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert run(cluster, "--reset-offsets", "--group", "new", "--topic", "u", "--to-offset", "6", "--execute") == 0
    assert capsys.readouterr().out.split("\n") == reset_table(("new", "u", 0, 6))
    assert cluster.offsets["new"] == {("u", 0): 6}


def test_reset_to_offset_and_shift_are_clamped(cluster: FakeCluster, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(cluster, "--reset-offsets", "--group", "idle", "--topic", "t:0,1", "--to-offset", "75",
               "--dry-run") == 0
    out, err = capsys.readouterr()
    assert out.split("\n") == reset_table(("idle", "t", 0, 75), ("idle", "t", 1, 50))
    assert ("WARN New offset (75) is higher than latest offset for topic partition t-1. Value will be set to 50 "
            "(kafka.admin.ConsumerGroupCommand$)") in err
    assert run(cluster, "--reset-offsets", "--group", "idle", "--topic", "t:1", "--to-offset", "51", "--dry-run") == 0
    out, err = capsys.readouterr()
    assert out.split("\n") == reset_table(("idle", "t", 1, 50))
    assert "New offset (51) is higher than latest offset" in err
    assert run(cluster, "--reset-offsets", "--group", "idle", "--topic", "t:1", "--to-offset", "10", "--dry-run") == 0
    out, err = capsys.readouterr()
    assert (out.split("\n"), err) == (reset_table(("idle", "t", 1, 10)), ""), "the bounds themselves are kept"
    assert run(cluster, "--reset-offsets", "--group", "idle", "--all-topics", "--shift-by", "-15", "--dry-run") == 0
    out, err = capsys.readouterr()
    # t-0: 40-15 = 25; t-1: 20-15 = 5 < log start 10
    assert out.split("\n") == reset_table(("idle", "t", 0, 25), ("idle", "t", 1, 10))
    assert "New offset (5) is lower than earliest offset for topic partition t-1. Value will be set to 10" in err


def test_reset_shift_without_a_commit_is_a_usage_error(cluster: FakeCluster,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert run(cluster, "--reset-offsets", "--group", "idle", "--topic", "u", "--shift-by", "1", "--dry-run") == 1
    assert capsys.readouterr().err == (
        "Cannot shift offset for partition u-0 since there is no current committed offset\n"
    )


def test_reset_to_current_and_to_datetime(cluster: FakeCluster, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(cluster, "--reset-offsets", "--group", "idle", "--topic", "t", "--to-current", "--dry-run") == 0
    # t-2 has no commit: the log end
    assert capsys.readouterr().out.split("\n") == reset_table(("idle", "t", 0, 40), ("idle", "t", 1, 20),
                                                              ("idle", "t", 2, 0))
    ts = cg.parse_datetime("2024-01-02T03:04:05.006")
    cluster.times[("t", 0)] = [(ts - 1, 3), (ts + 1, 7)]
    assert run(cluster, "--reset-offsets", "--group", "idle", "--topic", "t:0,1", "--to-datetime",
               "2024-01-02T03:04:05.006", "--dry-run") == 0
    # t-1 has no record at or after the time: the log end
    assert capsys.readouterr().out.split("\n") == reset_table(("idle", "t", 0, 7), ("idle", "t", 1, 50))
    ts_body = [b for b, _ in cluster.api_calls(LIST_OFFSETS)
               if {p.timestamp for t in b.topics for p in t.partitions} == {ts}]
    assert ts_body, "ListOffsets was asked for the timestamp"


def test_reset_export_csv(cluster: FakeCluster, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(cluster, "--reset-offsets", "--group", "idle", "--topic", "t:1", "--to-earliest", "--export") == 0
    assert capsys.readouterr().out == "t,1,10\n\n"


def test_reset_scope_and_scenario_are_required(cluster: FakeCluster, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(cluster, "--reset-offsets", "--group", "idle", "--to-earliest", "--dry-run") == 1
    assert capsys.readouterr().err == "One of the reset scopes should be defined: --all-topics, --topic.\n"
    assert run(cluster, "--reset-offsets", "--group", "idle", "--all-topics", "--dry-run") == 1
    assert "requires one of the following scenarios" in capsys.readouterr().err


def test_reset_unknown_topic(cluster: FakeCluster, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(cluster, "--reset-offsets", "--group", "idle", "--topic", "nope", "--to-earliest", "--dry-run") == 1
    assert capsys.readouterr().out == (
        "\nError: Executing consumer group command failed due to "
        "org.apache.kafka.common.errors.UnknownTopicOrPartitionException: "
        "This server does not host this topic-partition.\n"
    )


# --------------------------------------------------------------------------- delete


def test_delete_success(cluster: FakeCluster, capsys: pytest.CaptureFixture[str]) -> None:
    cluster.group("idle2", "Empty")
    assert run(cluster, "--delete", "--group", "idle", "--group", "idle2") == 0
    assert capsys.readouterr().out == "Deletion of requested consumer groups ('idle', 'idle2') was successful.\n"
    assert "idle" not in cluster.groups and "idle2" not in cluster.groups
    assert all(broker == 1 for _, broker in cluster.api_calls(DELETE_GROUPS))


def test_delete_failures(cluster: FakeCluster, capsys: pytest.CaptureFixture[str]) -> None:
    cluster.delete_errors["g"] = ErrorCode.NON_EMPTY_GROUP
    assert run(cluster, "--delete", "--group", "g", "--group", "missing", "--group", "idle") == 1
    assert capsys.readouterr().out.split("\n") == [
        "",
        "Error: Deletion of some consumer groups failed:",
        "* Group 'g' could not be deleted due to: java.util.concurrent.ExecutionException: "
        "org.apache.kafka.common.errors.GroupNotEmptyException: The group is not empty.",
        "* Group 'missing' could not be deleted due to: java.util.concurrent.ExecutionException: "
        "org.apache.kafka.common.errors.GroupIdNotFoundException: The group id does not exist.",
        "",
        "These consumer groups were deleted successfully: 'idle'",
        "",
    ]


# --------------------------------------------------------------------------- arguments and helpers


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ((), "Command must include exactly one action"),
        (("--list", "--describe", "--group", "g"), 'Option "[group]" can\'t be used with option "[list]"'),
        (("--describe",), "Option [describe] takes one of these options: [group], [all-groups]"),
        (("--describe", "--group", "g", "--members", "--state"), "takes at most one of these options"),
        (("--describe", "--group", "g", "--state", "Stable"), "Option [describe] does not take a value for [state]"),
        (("--delete", "--group", "g", "--topic", "t"), "does not support topic-specific offset deletion"),
        (("--reset-offsets", "--group", "g", "--dry-run", "--execute"), "only accepts one of [execute] and [dry-run]"),
        (("--reset-offsets", "--group", "g", "--to-earliest", "--to-latest", "--dry-run"),
         'Option "[to-earliest]" can\'t be used with option "[to-latest]"'),
        (("--describe", "--group", "g", "--all-groups"), 'Option "[group]" can\'t be used with option "[all-groups]"'),
        (("--list", "--state", "bogus"), "Invalid state list 'bogus'. Valid states are: PreparingRebalance"),
    ],
)
def test_argument_errors(argv: tuple[str, ...], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = FakeCluster()
    assert run(cluster, *argv) == 1
    assert message in capsys.readouterr().err
    assert cluster.calls == [], "arguments are checked before any request"


def test_registered_in_main_and_timeout_is_reported(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["consumer-groups", "--bootstrap-server", "127.0.0.1:1", "--list", "--timeout", "200"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("\nError: Executing consumer group command failed due to "
                          "org.apache.kafka.common.errors.TimeoutException")


def test_parse_datetime_like_kafka() -> None:
    assert cg.parse_datetime("1970-01-01T00:00:01.500") == 1500
    assert cg.parse_datetime("1970-01-01T00:00:01.500Z") == 1500
    assert cg.parse_datetime("1970-01-01T01:00:00.000+01:00") == 0
    assert cg.parse_datetime("1970-01-01T00:00:00.000-0130") == 90 * 60_000
    with pytest.raises(cg.CommandFailed, match="does not contain a 'T'"):
        cg.parse_datetime("1970-01-01")
    with pytest.raises(cg.CommandFailed, match="Unparseable date"):
        cg.parse_datetime("1970-13-01T00:00:00.000")


def test_parse_duration_like_java() -> None:
    assert cg.parse_duration("PT1H") == 3_600_000
    assert cg.parse_duration("P1DT2M3.5S") == 86_400_000 + 120_000 + 3_500
    assert cg.parse_duration("-PT1S") == -1000
    with pytest.raises(cg.CommandFailed, match="cannot be parsed to a Duration"):
        cg.parse_duration("1H")


def test_through_main_verbose_is_not_mafkas_timing_flag(cluster: FakeCluster, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    cluster.install(monkeypatch)
    assert main(["consumer-groups", "--bootstrap-server", "b1:9092", "--describe", "--group", "g", "--members",
                 "--verbose"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert "ASSIGNMENT" in out


def test_an_unreadable_answer_is_an_error_not_a_traceback(cluster: FakeCluster,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    from mafka.wire.errors import ProtocolError

    def broken(req: Any, broker: int | None) -> dict[str, Any]:
        raise ProtocolError("OffsetFetch v3 response: truncated array length")

    # The client drops a connection whose answer it cannot read and asks again, until --timeout.
    cluster._OffsetFetch = broken  # type: ignore[method-assign]
    assert run(cluster, "--describe", "--group", "g", "--timeout", "500") == 1
    out, err = capsys.readouterr()
    assert out == ("\nError: Executing consumer group command failed due to org.apache.kafka.common.errors."
                   "TimeoutException: Call(callName=listConsumerGroupOffsets) timed out after 500 ms\n")
    assert "Traceback" not in err
    assert len(cluster.api_calls(9)) > 1, "OffsetFetch was sent again on a new connection"


def test_member_assignment_is_decoded_only_for_the_consumer_protocol_type(
        cluster: FakeCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster.install(monkeypatch)
    with AdminClient({"bootstrap.servers": "b1:9092"}) as client:
        admin = cg.GroupAdmin(client, 5.0)
        d = admin.describe_group("g")
        assert [m.assignment for m in d.members] == [[("t", 2)], [("u", 0), ("t", 1), ("t", 0)], []]
        assert (d.coordinator, d.state, d.assignor) == (cg.Node(1, "b1", 9092), "Stable", "range")
        cluster.group("e", "Stable", [member("m", "c", "/h", {"t": [0]})], protocol_type="")
        assert [m.assignment for m in admin.describe_group("e").members] == [[]]
        cluster.groups["g"]["members"][0]["member_assignment"] = b"\x00\x01\x00"
        with pytest.raises(cg.CommandFailed, match="SchemaException: Buffer underflow"):
            admin.describe_group("g")


def test_log_end_offsets_of_missing_partitions_are_unknown_without_waiting(
        cluster: FakeCluster, capsys: pytest.CaptureFixture[str]) -> None:
    cluster.offsets["idle"] = {("t", 9): 4, ("gone", 0): 2}
    started = time.monotonic()
    assert run(cluster, "--describe", "--group", "idle") == 0
    assert time.monotonic() - started < 2.0, "no retries until the 5 s --timeout"
    rows = capsys.readouterr().out.split("\n")[2:4]
    assert [r.split()[:6] for r in rows] == [["idle", "gone", "0", "2", "-", "-"], ["idle", "t", "9", "4", "-", "-"]]
    assert cluster.api_calls(LIST_OFFSETS) == [], "no leader to ask: nothing was sent"


def test_a_partition_without_leader_is_retried(cluster: FakeCluster, capsys: pytest.CaptureFixture[str]) -> None:
    cluster.topics["t"][0] = -1
    answered: list[int] = []

    def elect() -> None:
        answered.append(cluster.topics["t"][0])
        cluster.topics["t"][0] = 1  # elected once the first answer (no leader) is out

    cluster.metadata_hook = elect
    assert run(cluster, "--describe", "--group", "idle") == 0
    assert capsys.readouterr().out.split("\n")[2].split()[:6] == ["idle", "t", "0", "40", "100", "60"]
    assert answered[0] == -1 and len(answered) >= 2, "metadata was asked again after the leaderless answer"
    asked = [(p.partition_index, broker) for body, broker in cluster.api_calls(LIST_OFFSETS)
             for t in body.topics if t.name == "t" for p in t.partitions]
    assert asked.count((0, 1)) == 1 and all(b >= 0 for _, b in asked)
