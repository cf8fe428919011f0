"""``mafka share-groups``' tables and argument checks, as Kafka 4.2's ``ShareGroupCommand`` prints them."""

from __future__ import annotations

import argparse

import pytest

from mafka.cli import share_groups as sg
from mafka.cli.consumer_groups import UsageError
from mafka.client.admin_share_groups import (
    ShareGroupDescription,
    ShareMemberDescription,
    SharePartitionOffsetInfo,
)
from mafka.client.message import TopicPartition
from mafka.client.metadata import BrokerInfo


def member(member_id: str, client_id: str, *tps: tuple[str, int]) -> ShareMemberDescription:
    return ShareMemberDescription(member_id, client_id, "/10.0.0.1", None, 7, ("t",),
                                  tuple(TopicPartition(t, p) for t, p in tps))


DESCRIPTION = ShareGroupDescription(
    "g", "Stable",
    (member("m-b", "c2", ("t", 2)), member("m-a", "client-one", ("t", 1), ("other", 0), ("t", 0))),
    BrokerInfo(1, "localhost", 9092), 5, 5, "simple",
)


def test_list_with_state_is_kafkas_group_state_table() -> None:
    assert sg.format_list([("a-very-long-group-name", "Stable"), ("g", "Empty")]) == [
        "GROUP                  STATE",
        "a-very-long-group-name Stable",
        "g                      Empty",
    ]


def test_members_are_sorted_by_id_with_kafkas_assignment_string() -> None:
    assert sg.format_members(DESCRIPTION, verbose=False) == [
        "",
        "GROUP           CONSUMER-ID     HOST            CLIENT-ID       #PARTITIONS  ASSIGNMENT",
        "g               m-a             /10.0.0.1       client-one      3            other:0;t:0,1",
        "g               m-b             /10.0.0.1       c2              1            t:2",
    ]
    verbose = sg.format_members(DESCRIPTION, verbose=True)
    assert verbose[1] == ("GROUP           CONSUMER-ID     HOST            CLIENT-ID       #PARTITIONS  "
                          "MEMBER-EPOCH  ASSIGNMENT")
    assert verbose[2] == "g               m-a             /10.0.0.1       client-one      3            7             other:0;t:0,1"


def test_state_names_the_coordinator_as_kafka_does() -> None:
    assert sg.format_state(DESCRIPTION, verbose=False) == [
        "",
        "GROUP           COORDINATOR (ID)          STATE           #MEMBERS",
        "g               localhost:9092  (1)       Stable          2",
    ]
    assert sg.format_state(DESCRIPTION, verbose=True)[1:] == [
        "GROUP           COORDINATOR (ID)          STATE           GROUP-EPOCH  ASSIGNMENT-EPOCH  #MEMBERS",
        "g               localhost:9092  (1)       Stable          5            5                 2",
    ]


def test_offsets_print_a_dash_for_what_is_not_known() -> None:
    rows = [("t", 1, SharePartitionOffsetInfo(40, 3, None)), ("t", 0, SharePartitionOffsetInfo(12, 3, 8)),
            ("t", 2, None)]
    assert sg.format_offsets("g", rows, verbose=False) == [
        "",
        "GROUP           TOPIC           PARTITION  START-OFFSET  LAG",
        "g               t               0          12            8",
        "g               t               1          40            -",
        "g               t               2          -             -",
    ]
    assert sg.format_offsets("g", rows, verbose=True)[1:3] == [
        "GROUP           TOPIC           PARTITION  LEADER-EPOCH  START-OFFSET  LAG",
        "g               t               0          3             12            8",
    ]
    assert sg.format_offsets("g", [], verbose=False) == ["", "Share group 'g' has no offset information."]


def test_reset_and_delete_offsets_tables() -> None:
    assert sg.format_reset("g", {("t", 1): 5, ("t", 0): 0}) == [
        "",
        "GROUP           TOPIC           PARTITION  NEW-OFFSET",
        "g               t               0          0",
        "g               t               1          5",
    ]
    assert sg.format_delete_offsets({"t": None, "bad": "The group is not empty."}) == [
        "",
        "TOPIC           STATUS",
        "bad             Error: The group is not empty.",
        "t               Successful",
    ]


def test_delete_report() -> None:
    assert sg.format_delete(["a", "b"], {}) == ["Deletion of requested share groups ('a', 'b') was successful."]
    assert sg.format_delete(["a"], {"c": "java.lang.IllegalArgumentException: Group 'c' is not a share group."}) == [
        "",
        "Error: Deletion of some share groups failed:",
        "* Group 'c' could not be deleted due to: java.lang.IllegalArgumentException: Group 'c' is not a share group.",
        "",
        "These share groups were deleted successfully: 'a'",
    ]


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    sg.add_parser(parser.add_subparsers())
    return parser.parse_args(["share-groups", "--bootstrap-server", "h:1", *argv])


@pytest.mark.parametrize(("argv", "message"), [
    ((), "Command must include exactly one action"),
    (("--list", "--describe"), "Command must include exactly one action"),
    (("--describe",), "Option [describe] takes one of these options: [all-groups], [group]"),
    (("--describe", "--group", "g", "--members", "--offsets"), "takes at most one of these options"),
    (("--reset-offsets", "--group", "g", "--topic", "t", "--to-earliest"),
     "Option [reset-offsets] takes the option: [execute] or [dry-run]"),
    (("--reset-offsets", "--group", "g", "--to-earliest", "--execute"),
     "Option [reset-offsets] takes one of these options: [all-topics], [topic]"),
    (("--reset-offsets", "--group", "g", "--topic", "t", "--execute"),
     "takes one of these options: [to-current], [to-earliest], [to-latest], [to-offset]"),
    (("--delete-offsets", "--group", "g"), "Option [delete-offsets] takes the following options: [group], [topic]"),
    (("--delete",), "Option [delete] takes one of these options: [all-groups], [group]"),
    (("--delete", "--group", "g", "--topic", "t"), 'Option "[topic]" can\'t be used with option "[delete]"'),
])
def test_bad_combinations_are_refused_with_kafkas_messages(argv: tuple[str, ...], message: str) -> None:
    with pytest.raises(UsageError, match=message.replace("[", r"\[").replace("]", r"\]")):
        sg.check_args(parse(*argv))


def test_good_combinations_name_their_action() -> None:
    assert sg.check_args(parse("--list")) == "list"
    assert sg.check_args(parse("--delete", "--group", "g", "--group", "h")) == "delete"
    assert sg.check_args(parse("--delete", "--all-groups")) == "delete"
    assert sg.check_args(parse("--describe", "--all-groups", "--state", "--verbose")) == "describe"
    assert sg.check_args(parse("--reset-offsets", "--group", "g", "--all-topics", "--to-offset", "3",
                               "--dry-run")) == "reset-offsets"
