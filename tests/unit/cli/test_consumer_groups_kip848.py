"""``mafka consumer-groups`` with Kafka 4's group types (KIP-848), against a fake cluster (no sockets).

Expected tables are written with the format strings of Kafka 4.x's
``ConsumerGroupCommand`` (``printGroupInfo``, ``printMembers``, ``printStates``),
so each assertion checks the exact layout: column widths, padding and trailing
spaces.  Classic groups in the same cluster keep Kafka 2.8's tables
(:mod:`tests.unit.cli.test_consumer_groups`).
"""

from __future__ import annotations

import pytest

from mafka.cli import consumer_groups as cg
from tests.unit.cli.kip848_fake import CONSUMER_GROUP_DESCRIBE, Kip848Cluster, consumer_member
from tests.unit.cli.test_consumer_groups import member, parse

DESCRIBE_GROUPS, LIST_GROUPS, OFFSET_COMMIT = 15, 16, 8


def run(cluster: Kip848Cluster, *argv: str) -> int:
    with pytest.MonkeyPatch.context() as mp:
        cluster.install(mp)
        return cg.run(parse(*argv))


@pytest.fixture
def cluster() -> Kip848Cluster:
    c = Kip848Cluster()
    c.group("g", "Stable", [member("consumer-1-aaa", "consumer-1", "/10.0.0.1", {"t": [1]})])
    c.group("idle", "Empty")
    c.consumer_group("kip848", "Stable", [
        consumer_member("m-a", "ca", "/10.0.0.1", {"t": [2, 0]}, epoch=7),
        consumer_member("m-b", "cb", "/10.0.0.2", {"u": [0], "t": [1]}, epoch=7),
    ], group_epoch=7, assignment_epoch=7, assignor="uniform")
    c.offsets["kip848"] = {("t", 0): 95, ("t", 1): 50, ("u", 0): 7}
    return c


def lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return capsys.readouterr().out.split("\n")


# --------------------------------------------------------------------------- --list


def test_list_plain_lists_both_types(cluster: Kip848Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(cluster, "--list") == 0
    assert capsys.readouterr().out == "g\nidle\nkip848\n"


def test_list_type_prints_kafka4s_group_and_type_columns(cluster: Kip848Cluster,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert run(cluster, "--list", "--type") == 0
    fmt = "%-25s %-20s"  # GROUP: max(15, longest id) + 10
    assert lines(capsys) == [fmt % ("GROUP", "TYPE"), fmt % ("g", "Classic"), fmt % ("idle", "Classic"),
                             fmt % ("kip848", "Consumer"), ""]
    assert {tuple(body.types_filter) for body, _ in cluster.api_calls(LIST_GROUPS)} == {()}


def test_list_type_filter_and_state_column(cluster: Kip848Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(cluster, "--list", "--type", "Consumer", "--state") == 0
    fmt = "%-25s %-20s %-20s"
    assert lines(capsys) == [fmt % ("GROUP", "TYPE", "STATE"), fmt % ("kip848", "Consumer", "Stable"), ""]
    assert {tuple(body.types_filter) for body, _ in cluster.api_calls(LIST_GROUPS)} == {("Consumer",)}
    cluster.calls.clear()
    assert run(cluster, "--list", "--type", "classic,CONSUMER", "--state", "stable") == 0
    assert lines(capsys) == [fmt % ("GROUP", "TYPE", "STATE"), fmt % ("g", "Classic", "Stable"),
                             fmt % ("kip848", "Consumer", "Stable"), ""]
    ((body, _), _) = cluster.api_calls(LIST_GROUPS)
    assert (list(body.states_filter), list(body.types_filter)) == (["Stable"], ["Classic", "Consumer"])


def test_list_state_knows_the_consumer_groups_states(cluster: Kip848Cluster,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    cluster.consumer_groups["kip848"]["group_state"] = "Reconciling"
    cluster.consumer_group("a-consumer-group-with-a-long-name", "Assigning", [])
    assert run(cluster, "--list", "--state", "Assigning,reconciling") == 0
    fmt = "%-43s %-20s"  # the longest id is 33 characters
    assert lines(capsys) == [fmt % ("GROUP", "STATE"), fmt % ("kip848", "Reconciling"),
                             fmt % ("a-consumer-group-with-a-long-name", "Assigning"), ""]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--list", "--type", "share"), "Invalid types list 'share'. Valid types are: Classic, Consumer\n"),
        (("--list", "--type", "classic,bogus"), "Invalid types list 'classic,bogus'. Valid types are: Classic"),
        (("--describe", "--group", "g", "--type"),
         "Option(s) [type] are unavailable given other options on the command line\n"),
        (("--list", "--state", "bogus"), "Invalid state list 'bogus'. Valid states are: PreparingRebalance, "
                                         "CompletingRebalance, Stable, Dead, Empty, Assigning, Reconciling\n"),
    ],
)
def test_list_argument_errors(argv: tuple[str, ...], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = Kip848Cluster()
    assert run(cluster, *argv) == 1
    assert message in capsys.readouterr().err
    assert cluster.calls == [], "arguments are checked before any request"


# --------------------------------------------------------------------------- --describe --members


def test_describe_members_of_a_consumer_group(cluster: Kip848Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(cluster, "--describe", "--group", "kip848", "--members") == 0
    fmt = "%-15s %-15s %-15s %-15s %-15s "
    assert lines(capsys) == [
        "",
        fmt % ("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"),
        fmt % ("kip848", "m-a", "/10.0.0.1", "ca", 2),
        fmt % ("kip848", "m-b", "/10.0.0.2", "cb", 2),
        "",
    ]
    # DescribeGroups does not know it (Dead), ConsumerGroupDescribe does.
    assert [k for k, _, _, _ in cluster.calls if k in (DESCRIBE_GROUPS, CONSUMER_GROUP_DESCRIBE)] == [
        DESCRIBE_GROUPS, CONSUMER_GROUP_DESCRIBE]


def test_describe_members_verbose_has_kafka4s_epochs_and_assignments(cluster: Kip848Cluster,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    cluster.consumer_groups["kip848"]["members"][0] = consumer_member(
        "m-a", "ca", "/10.0.0.1", {"t": [2, 0]}, target={"t": [0]}, epoch=6)
    cluster.consumer_groups["kip848"]["assignment_epoch"] = 8
    assert run(cluster, "--describe", "--group", "kip848", "--members", "--verbose") == 0
    fmt = "%-15s %-15s %-15s %-15s %-15s " + "%-15s %-20s %-15s %-20s"
    assert lines(capsys) == [
        "",
        fmt % ("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "CURRENT-EPOCH", "CURRENT-ASSIGNMENT",
               "TARGET-EPOCH", "TARGET-ASSIGNMENT"),
        fmt % ("kip848", "m-a", "/10.0.0.1", "ca", 2, 6, "t:0,2", 8, "t:0"),
        fmt % ("kip848", "m-b", "/10.0.0.2", "cb", 2, 7, "t:1;u:0", 8, "t:1;u:0"),
        "",
    ]


def test_describe_members_verbose_of_a_group_being_upgraded(capsys: pytest.CaptureFixture[str]) -> None:
    c = Kip848Cluster()
    long_topic = "a-topic-with-a-long-name"
    c.consumer_group("mixed", "Reconciling", [
        consumer_member("new-member", "c-new", "/10.0.0.1", {long_topic: [0, 1, 2]}, epoch=9, instance="static-1"),
        consumer_member("old-member", "c-old", "/10.0.0.2", {}, target={"t": [3]}, epoch=8, member_type=0),
    ], group_epoch=9, assignment_epoch=9, assignor="range")
    assert run(c, "--describe", "--group", "mixed", "--members", "--verbose") == 0
    out, err = capsys.readouterr()
    assert err == "\nWarning: Consumer group 'mixed' is rebalancing.\n"
    wide = len(f"{long_topic}:0,1,2")  # the widest assignment (current and target) widens both columns
    fmt = "%-15s %-15s %-17s %-15s %-15s %-15s " + f"%-15s %-{wide}s %-15s %-{wide}s %s"
    assert out.split("\n") == [
        "",
        fmt % ("GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "CURRENT-EPOCH",
               "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT", "UPGRADED"),
        fmt % ("mixed", "new-member", "static-1", "/10.0.0.1", "c-new", 3, 9, f"{long_topic}:0,1,2", 9,
               f"{long_topic}:0,1,2", "true"),
        fmt % ("mixed", "old-member", "", "/10.0.0.2", "c-old", 0, 8, "-", 9, "t:3", "false"),
        "",
    ]


def test_an_empty_consumer_group_has_no_members_table(cluster: Kip848Cluster,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    cluster.consumer_group("gone-quiet", "Empty", [])
    assert run(cluster, "--describe", "--group", "gone-quiet", "--members") == 0
    assert capsys.readouterr() == ("", "\nConsumer group 'gone-quiet' has no active members.\n")


# --------------------------------------------------------------------------- --describe --state


def test_describe_state_of_a_consumer_group(cluster: Kip848Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(cluster, "--describe", "--group", "kip848", "--state") == 0
    fmt = "%-15s %-25s %-20s %-20s %s"  # Kafka 4: GROUP at least 15, the coordinator as "host:port  (id)"
    assert lines(capsys) == [
        "",
        fmt % ("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"),
        fmt % ("kip848", "b1:9092  (1)", "uniform", "Stable", 2),
        "",
    ]


def test_describe_state_verbose_has_the_group_epochs(cluster: Kip848Cluster,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    cluster.consumer_groups["kip848"].update(group_state="Assigning", group_epoch=12, assignment_epoch=11)
    assert run(cluster, "--describe", "--group", "kip848", "--state", "--verbose") == 0
    out, err = capsys.readouterr()
    assert err == "\nWarning: Consumer group 'kip848' is rebalancing.\n"
    fmt = "%-15s %-25s %-20s %-20s %-15s %-25s %s"
    assert out.split("\n") == [
        "",
        fmt % ("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH",
               "#MEMBERS"),
        fmt % ("kip848", "b1:9092  (1)", "uniform", "Assigning", 12, 11, 2),
        "",
    ]


def test_describe_all_groups_prints_each_type_its_own_way(cluster: Kip848Cluster,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert run(cluster, "--describe", "--all-groups", "--state") == 0
    out, err = capsys.readouterr()
    classic = "%-25s %-25s %-20s %-15s %s"  # Kafka 2.8's, as before
    consumer = "%-15s %-25s %-20s %-20s %s"
    assert out.split("\n") == [
        "", classic % ("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"),
        classic % ("g", "b1:9092 (1)", "range", "Stable", 1),
        "", classic % ("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"),
        classic % ("idle", "b1:9092 (1)", "", "Empty", 0),
        "", consumer % ("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"),
        consumer % ("kip848", "b1:9092  (1)", "uniform", "Stable", 2),
        "",
    ]
    assert err == "\nConsumer group 'idle' has no active members.\n"
    asked = [body.group_ids[0] for body, _ in cluster.api_calls(CONSUMER_GROUP_DESCRIBE)]
    assert asked == ["kip848"], "live classic groups are not asked ConsumerGroupDescribe"


# --------------------------------------------------------------------------- --describe --offsets, reset


def test_describe_offsets_of_a_consumer_group(cluster: Kip848Cluster, capsys: pytest.CaptureFixture[str]) -> None:
    cluster.offsets["kip848"][("t", 5)] = 3  # committed, assigned to nobody
    cluster.topics["t"][5] = 1
    cluster.log[("t", 5)] = (0, 8)
    assert run(cluster, "--describe", "--group", "kip848", "--offsets") == 0
    fmt = "%-15s %-15s %-10s %-15s %-15s %-15s %-15s %-15s %s"
    assert lines(capsys) == [
        "",
        fmt % ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST",
               "CLIENT-ID"),
        fmt % ("kip848", "t", 0, 95, 100, 5, "m-a", "/10.0.0.1", "ca"),
        fmt % ("kip848", "t", 2, "-", 0, "-", "m-a", "/10.0.0.1", "ca"),
        fmt % ("kip848", "t", 1, 50, 50, 0, "m-b", "/10.0.0.2", "cb"),
        fmt % ("kip848", "u", 0, 7, 7, 0, "m-b", "/10.0.0.2", "cb"),
        fmt % ("kip848", "t", 5, 3, 8, 5, "-", "-", "-"),
        "",
    ]


def test_reset_offsets_of_an_empty_consumer_group(cluster: Kip848Cluster,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    cluster.consumer_group("paused", "Empty", [])
    cluster.offsets["paused"] = {("t", 0): 40}
    assert run(cluster, "--reset-offsets", "--group", "paused", "--topic", "t:0", "--to-earliest", "--execute") == 0
    assert cluster.offsets["paused"] == {("t", 0): 0}
    assert run(cluster, "--reset-offsets", "--group", "kip848", "--all-topics", "--to-earliest", "--execute") == 1
    assert "inactive, but the current state is Stable." in capsys.readouterr().out
    assert len(cluster.api_calls(OFFSET_COMMIT)) == 1


# --------------------------------------------------------------------------- formatting helpers


def test_format_list_columns_follow_the_options() -> None:
    two, three, wide = "%-25s %-20s", "%-25s %-20s %-20s", "%-40s %-20s %-20s"
    groups = [cg.GroupListing("a", "Stable", "Consumer")]
    assert cg.format_list(groups, True, False) == [two % ("GROUP", "TYPE"), two % ("a", "Consumer")]
    assert cg.format_list(groups, True, True) == [three % ("GROUP", "TYPE", "STATE"), three % ("a", "Consumer", "Stable")]
    assert cg.format_list([], False, True) == [two % ("GROUP", "STATE")]
    long = cg.GroupListing("g" * 30, "Empty", "Classic")
    assert cg.format_list([long], True, True)[1] == wide % ("g" * 30, "Classic", "Empty")


def test_kafka4_assignment_strings() -> None:
    verbose_tail = "%-15s %-20s %-15s %-20s"
    rows = [cg.MemberRow("g", "m", "h", "c", "", 3, [("u", 1), ("t", 3), ("t", 1)], [("t", 1)], 4, 5)]
    (_, row) = cg.format_consumer_members(rows, verbose=True)
    assert row.endswith(verbose_tail % (4, "t:1,3;u:1", 5, "t:1"))
    no_epoch = [cg.MemberRow("g", "m", "h", "c", "", 0, [], [])]
    assert cg.format_consumer_members(no_epoch, verbose=True)[1].endswith(verbose_tail % ("-", "-", "-", "-"))
