"""``mafka acls`` (``kafka-acls.sh``): Kafka 2.8's argument checks, the ACLs its flags stand for,
and its output and errors (no sockets).

The ``--bootstrap-server`` runs go through the real admin client over
:class:`~tests.unit.cli.fake_wire.AclWireFake`, which keeps the ACLs and
matches filters as a 2.8 broker with an authorizer does.
"""

from __future__ import annotations

import argparse
import io

import pytest

from mafka.cli import acls
from mafka.cli.kafka_scripts import SCRIPTS, kafka_acls
from mafka.cli.main import main
from mafka.client.admin_types import ResourceType as ClientResourceType
from mafka.errors import ErrorCode
from mafka.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
    supported_operations,
)
from tests.unit.cli.fake_wire import AclWireFake

BOOTSTRAP = ("--bootstrap-server", "b1:9092")
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
Op = AclOperation


def parse(*argv: str, connect: tuple[str, ...] = BOOTSTRAP) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    acls.add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["acls", *connect, *argv])


def run(capsys: pytest.CaptureFixture[str], *argv: str, connect: tuple[str, ...] = BOOTSTRAP) -> tuple[int, str, str]:
    rc = main(["acls", *connect, *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def topic(name: str, pattern: PatternType = PatternType.LITERAL) -> ResourcePatternFilter:
    return ResourcePatternFilter(ResourceType.TOPIC, name, pattern)


def group(name: str, pattern: PatternType = PatternType.LITERAL) -> ResourcePatternFilter:
    return ResourcePatternFilter(ResourceType.GROUP, name, pattern)


def txn(name: str) -> ResourcePatternFilter:
    return ResourcePatternFilter(ResourceType.TRANSACTIONAL_ID, name, PatternType.LITERAL)


def entry(principal: str, op: AclOperation, permission: AclPermissionType = ALLOW,
          host: str = "*") -> AccessControlEntry:
    return AccessControlEntry(principal, host, op, permission)


def stored(resource_type: ResourceType, name: str, principal: str, op: AclOperation,
           pattern: PatternType = PatternType.LITERAL, permission: AclPermissionType = ALLOW) -> AclBinding:
    return AclBinding(ResourcePattern(resource_type, name, pattern), AccessControlEntry(principal, "*", op, permission))


# -- arguments ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "connect", "message"),
    [
        (("--list",), ("--bootstrap-server", "b:1", "--authorizer", "x.Y"),
         "Only one of --bootstrap-server or --authorizer must be specified"),
        (("--list",), (), 'Missing required argument "[authorizer-properties]"'),
        (("--list", "--command-config", "f"), ("--authorizer-properties", "zookeeper.connect=z:2181"),
         "The --command-config option can only be used with --bootstrap-server option"),
        (("--list", "--authorizer-properties", "a=b"), BOOTSTRAP,
         "The --authorizer-properties option can only be used with --authorizer option"),
        (("--topic", "t"), BOOTSTRAP, "Command must include exactly one action: --list, --add, --remove. "),
        (("--add", "--list", "--topic", "t"), BOOTSTRAP,
         "Command must include exactly one action: --list, --add, --remove. "),
        (("--list", "--producer", "--topic", "t"), BOOTSTRAP, 'Option "[list]" can\'t be used with option "[producer]"'),
        (("--list", "--allow-principal", "User:a"), BOOTSTRAP,
         'Option "[list]" can\'t be used with option "[allow-principal]"'),
        (("--add", "--producer", "--topic", "t", "--allow-principal", "User:a", "--operation", "Read"), BOOTSTRAP,
         'Option "[producer]" can\'t be used with option "[operation]"'),
        (("--add", "--consumer", "--topic", "t", "--group", "g", "--deny-principal", "User:a"), BOOTSTRAP,
         'Option "[consumer]" can\'t be used with option "[deny-principal]"'),
        (("--add", "--principal", "User:a", "--topic", "t"), BOOTSTRAP,
         "The --principal option is only available if --list is set"),
        (("--add", "--producer", "--allow-principal", "User:a"), BOOTSTRAP, "With --producer you must specify a --topic"),
        (("--add", "--idempotent", "--topic", "t", "--allow-principal", "User:a"), BOOTSTRAP,
         "The --idempotent option is only available if --producer is set"),
        (("--add", "--consumer", "--topic", "t", "--allow-principal", "User:a"), BOOTSTRAP,
         "With --consumer you must specify a --topic and a --group and no --cluster or --transactional-id option "
         "should be specified."),
        (("--add", "--consumer", "--topic", "t", "--group", "g", "--cluster", "--allow-principal", "User:a"),
         BOOTSTRAP,
         "With --consumer you must specify a --topic and a --group and no --cluster or --transactional-id option "
         "should be specified."),
    ],
)
def test_kafkas_argument_checks(capsys: pytest.CaptureFixture[str], argv: tuple[str, ...],
                                connect: tuple[str, ...], message: str) -> None:
    rc, out, err = run(capsys, *argv, connect=connect)
    assert rc == 1 and out == ""
    assert err.splitlines()[0] == message
    assert "usage: " in err  # printUsageAndDie: the usage follows the message


def test_no_arguments_print_the_usage(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(capsys, connect=())
    assert (rc, out) == (1, "")
    assert err.startswith("This tool helps to manage acls on kafka.\nusage: ")


def test_consumer_with_producer_may_name_a_cluster_and_transactional_id() -> None:
    acls.check_args(parse("--add", "--producer", "--consumer", "--topic", "t", "--group", "g",
                          "--transactional-id", "x", "--allow-principal", "User:a"))


@pytest.mark.parametrize(("text", "expected"), [
    (None, PatternType.LITERAL), ("literal", PatternType.LITERAL), ("PREFIXED", PatternType.PREFIXED),
    ("Any", PatternType.ANY), ("match", PatternType.MATCH),
])
def test_resource_pattern_types(text: str | None, expected: PatternType) -> None:
    assert acls.parse_pattern_type(text) is expected


@pytest.mark.parametrize("text", ["unknown", "sideways"])
def test_bad_resource_pattern_type_is_joptsimples_error(capsys: pytest.CaptureFixture[str], text: str) -> None:
    rc, out, err = run(capsys, "--list", "--resource-pattern-type", text)
    assert (rc, out) == (1, "")
    assert err == (f"joptsimple.OptionArgumentConversionException: Cannot parse argument '{text}' of option "
                   "resource-pattern-type\n")


@pytest.mark.parametrize(("text", "op"), [
    ("Read", Op.READ), ("read", Op.READ), ("IdempotentWrite", Op.IDEMPOTENT_WRITE),
    ("IDEMPOTENTWRITE", Op.IDEMPOTENT_WRITE), ("idempotentwrite", Op.IDEMPOTENT_WRITE),
    ("DescribeConfigs", Op.DESCRIBE_CONFIGS), ("All", Op.ALL), ("Any", Op.ANY),
    # Kafka's lookup knows the Pascal-case names only, with or without case: not the Java names
    ("IDEMPOTENT_WRITE", Op.UNKNOWN), ("frobnicate", Op.UNKNOWN),
])
def test_operation_names_as_kafkas_security_utils(text: str, op: AclOperation) -> None:
    assert acls.parse_operation(text) is op


@pytest.mark.parametrize("resource_type", [t for t in ResourceType if t not in (ResourceType.ANY,
                                                                                   ResourceType.UNKNOWN)])
def test_valid_operations_are_the_supported_ones_and_all(resource_type: ResourceType) -> None:
    assert set(acls.valid_operations(resource_type)) == supported_operations(resource_type) | {Op.ALL}


# -- what the flags stand for ---------------------------------------------------------------------


def test_entries_are_every_principal_operation_and_host() -> None:
    args = parse("--add", "--topic", "t", "--allow-principal", "User:a", "--allow-principal", " User:b ",
                 "--operation", "Read", "--operation", " write", "--allow-host", "10.0.0.1",
                 "--deny-principal", "User:c")
    assert acls.filter_to_acls(args, PatternType.LITERAL) == {topic("t"): [
        entry("User:a", Op.READ, host="10.0.0.1"), entry("User:a", Op.WRITE, host="10.0.0.1"),
        entry("User:b", Op.READ, host="10.0.0.1"), entry("User:b", Op.WRITE, host="10.0.0.1"),
        entry("User:c", Op.READ, DENY), entry("User:c", Op.WRITE, DENY),  # deny host: * by default
    ]}


def test_operation_defaults_to_all_and_resources_come_in_kafkas_order() -> None:
    args = parse("--add", "--group", "g", "--topic", "t", "--cluster", "--transactional-id", " x ",
                 "--topic", "t", "--allow-principal", "User:a")
    result = acls.filter_to_acls(args, PatternType.LITERAL)
    assert list(result) == [topic("t"), acls.CLUSTER_FILTER, group("g"), txn(" x ")]  # ids are not trimmed
    assert all(v == [entry("User:a", Op.ALL)] for v in result.values())


def test_cluster_counts_only_with_the_literal_pattern_type() -> None:
    args = parse("--remove", "--cluster", "--topic", "t", "--resource-pattern-type", "prefixed")
    assert acls.resource_filters(args, PatternType.PREFIXED) == [topic("t", PatternType.PREFIXED)]
    with pytest.raises(acls.AclCommandError, match="You must provide at least one resource: --topic <topic> or "
                                                   "--cluster or --group <group> or --delegation-token"):
        acls.resource_filters(parse("--remove", "--cluster"), PatternType.PREFIXED)


def test_producer_expansion() -> None:
    args = parse("--add", "--producer", "--topic", "t", "--transactional-id", "x", "--idempotent",
                 "--allow-principal", "User:p")
    assert acls.filter_to_acls(args, PatternType.LITERAL) == {
        topic("t"): [entry("User:p", Op.WRITE), entry("User:p", Op.DESCRIBE), entry("User:p", Op.CREATE)],
        txn("x"): [entry("User:p", Op.WRITE), entry("User:p", Op.DESCRIBE)],
        acls.CLUSTER_FILTER: [entry("User:p", Op.IDEMPOTENT_WRITE)],
    }
    without = parse("--add", "--producer", "--topic", "t", "--allow-principal", "User:p")
    assert list(acls.filter_to_acls(without, PatternType.LITERAL)) == [topic("t")]


def test_consumer_expansion_and_both_roles_together() -> None:
    args = parse("--add", "--consumer", "--topic", "t", "--group", "g", "--allow-principal", "User:c")
    assert acls.filter_to_acls(args, PatternType.PREFIXED) == {
        topic("t", PatternType.PREFIXED): [entry("User:c", Op.READ), entry("User:c", Op.DESCRIBE)],
        group("g", PatternType.PREFIXED): [entry("User:c", Op.READ)],
    }
    both = parse("--add", "--consumer", "--producer", "--topic", "t", "--group", "g", "--allow-principal", "User:c")
    assert acls.filter_to_acls(both, PatternType.LITERAL) == {
        topic("t"): [entry("User:c", Op.READ), entry("User:c", Op.DESCRIBE), entry("User:c", Op.WRITE),
                     entry("User:c", Op.CREATE)],
        group("g"): [entry("User:c", Op.READ)],
    }


@pytest.mark.parametrize(("argv", "message"), [
    (("--cluster", "--operation", "Read"),
     "ResourceType CLUSTER only supports operations CREATE,CLUSTER_ACTION,DESCRIBE_CONFIGS,ALTER_CONFIGS,"
     "IDEMPOTENT_WRITE,ALTER,DESCRIBE,ALL"),
    (("--group", "g", "--operation", "Write"), "ResourceType GROUP only supports operations READ,DESCRIBE,DELETE,ALL"),
    (("--topic", "t", "--operation", "Frobnicate"),
     "ResourceType TOPIC only supports operations READ,WRITE,CREATE,DESCRIBE,DELETE,ALTER,DESCRIBE_CONFIGS,"
     "ALTER_CONFIGS,ALL"),
    (("--transactional-id", "x", "--operation", "Read"),
     "ResourceType TRANSACTIONAL_ID only supports operations DESCRIBE,WRITE,ALL"),
])
def test_operations_a_resource_type_does_not_support_are_refused(
        capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], message: str) -> None:
    rc, out, err = run(capsys, "--add", "--allow-principal", "User:a", *argv)
    assert (rc, out) == (1, "")
    assert err.splitlines()[0] == message


@pytest.mark.parametrize(("argv", "message"), [
    (("--resource-pattern-type", "match"), "A '--resource-pattern-type' value of 'MATCH' is not valid when adding acls."),
    (("--resource-pattern-type", "any"), "A '--resource-pattern-type' value of 'ANY' is not valid when adding acls."),
    ((), "You must specify one of: --allow-principal, --deny-principal when trying to add ACLs."),
])
def test_add_needs_a_specific_pattern_type_and_a_principal(
        capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], message: str) -> None:
    rc, out, err = run(capsys, "--add", "--topic", "t", *argv)
    assert (rc, out) == (1, "")
    assert err.splitlines()[0] == message


# -- against a cluster ----------------------------------------------------------------------------


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> AclWireFake:
    cluster = AclWireFake()
    cluster.install(monkeypatch)
    return cluster


def _block(head: str, *lines: str) -> str:
    return f"{head}: \n " + "\n".join(f"\t{line}" for line in lines) + " \n\n"


ALICE_READ = "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)"
ALICE_DESCRIBE = "(principal=User:alice, host=*, operation=DESCRIBE, permissionType=ALLOW)"
T_LITERAL = "ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL)"
G_LITERAL = "ResourcePattern(resourceType=GROUP, name=g, patternType=LITERAL)"


def test_add_prints_kafkas_text_creates_and_lists(capsys: pytest.CaptureFixture[str], fake: AclWireFake) -> None:
    rc, out, err = run(capsys, "--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "t")
    assert (rc, err) == (0, "")
    assert out == (_block(f"Adding ACLs for resource `{T_LITERAL}`", ALICE_READ)
                   + _block(f"Current ACLs for resource `{T_LITERAL}`", ALICE_READ))
    assert out.startswith("Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=t, "
                          "patternType=LITERAL)`: \n \t(principal=User:alice, host=*, operation=READ, "
                          "permissionType=ALLOW) \n")
    assert fake.acls == [stored(ResourceType.TOPIC, "t", "User:alice", Op.READ)]


def test_add_consumer_creates_the_expansion(capsys: pytest.CaptureFixture[str], fake: AclWireFake) -> None:
    rc, out, _ = run(capsys, "--add", "--consumer", "--allow-principal", "User:alice", "--topic", "t",
                     "--group", "g")
    assert rc == 0
    assert set(fake.acls) == {stored(ResourceType.TOPIC, "t", "User:alice", Op.READ),
                              stored(ResourceType.TOPIC, "t", "User:alice", Op.DESCRIBE),
                              stored(ResourceType.GROUP, "g", "User:alice", Op.READ)}
    assert out == (_block(f"Adding ACLs for resource `{T_LITERAL}`", ALICE_READ, ALICE_DESCRIBE)
                   + _block(f"Adding ACLs for resource `{G_LITERAL}`", ALICE_READ)
                   + _block(f"Current ACLs for resource `{T_LITERAL}`", ALICE_READ, ALICE_DESCRIBE)
                   + _block(f"Current ACLs for resource `{G_LITERAL}`", ALICE_READ))


def test_producer_idempotent_acl_is_on_the_cluster(capsys: pytest.CaptureFixture[str], fake: AclWireFake) -> None:
    rc, out, _ = run(capsys, "--add", "--producer", "--idempotent", "--allow-principal", "User:p", "--topic", "t")
    assert rc == 0
    assert stored(ResourceType.CLUSTER, "kafka-cluster", "User:p", Op.IDEMPOTENT_WRITE) in fake.acls
    (creation,) = [c for body, _ in fake.api_calls(30) for c in body.creations if c.resource_type != 2]
    assert (creation.resource_type, creation.resource_name, creation.operation) == (4, "kafka-cluster", 12)
    # listed in Kafka's names: CLUSTER (the admin client calls it BROKER, as librdkafka)
    assert ("Current ACLs for resource `ResourcePattern(resourceType=CLUSTER, name=kafka-cluster, "
            "patternType=LITERAL)`: \n \t(principal=User:p, host=*, operation=IDEMPOTENT_WRITE, "
            "permissionType=ALLOW) \n") in out


def test_list_defaults_to_the_literal_pattern_and_filters_by_principal(
        capsys: pytest.CaptureFixture[str], fake: AclWireFake) -> None:
    fake.acls += [stored(ResourceType.TOPIC, "t", "User:alice", Op.READ),
                  stored(ResourceType.TOPIC, "t", "User:bob", Op.WRITE, permission=DENY),
                  stored(ResourceType.TOPIC, "t", "User:bob", Op.READ, PatternType.PREFIXED),
                  stored(ResourceType.GROUP, "g", "User:alice", Op.READ)]
    rc, out, err = run(capsys, "--list", "--topic", "t")
    assert (rc, err) == (0, "")
    assert out == _block(f"Current ACLs for resource `{T_LITERAL}`", ALICE_READ,
                         "(principal=User:bob, host=*, operation=WRITE, permissionType=DENY)")
    (request, _), = fake.api_calls(29)
    assert (request.resource_type_filter, request.resource_name_filter, request.pattern_type_filter) == (2, "t", 3)

    rc, out, _ = run(capsys, "--list", "--topic", "t", "--resource-pattern-type", "any", "--principal", "User:bob")
    assert out == "ACLs for principal `User:bob`\n" + \
        _block(f"Current ACLs for resource `{T_LITERAL}`",
               "(principal=User:bob, host=*, operation=WRITE, permissionType=DENY)") + \
        _block("Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=t, patternType=PREFIXED)`",
               "(principal=User:bob, host=*, operation=READ, permissionType=ALLOW)")

    rc, out, _ = run(capsys, "--list")  # no resource: every ACL
    assert out.count("Current ACLs for resource") == 3 and G_LITERAL in out
    rc, out, _ = run(capsys, "--list", "--topic", "nothing-here")
    assert (rc, out) == (0, "")


def test_remove_force_deletes_the_entries_named(capsys: pytest.CaptureFixture[str], fake: AclWireFake) -> None:
    fake.acls += [stored(ResourceType.TOPIC, "t", "User:alice", Op.READ),
                  stored(ResourceType.TOPIC, "t", "User:alice", Op.DESCRIBE),
                  stored(ResourceType.TOPIC, "t", "User:bob", Op.READ),
                  stored(ResourceType.GROUP, "g", "User:alice", Op.READ)]
    rc, out, err = run(capsys, "--remove", "--force", "--allow-principal", "User:alice", "--consumer",
                       "--topic", "t", "--group", "g")
    assert (rc, err) == (0, "")
    assert fake.acls == [stored(ResourceType.TOPIC, "t", "User:bob", Op.READ)]
    assert out == _block(f"Current ACLs for resource `{T_LITERAL}`",
                         "(principal=User:bob, host=*, operation=READ, permissionType=ALLOW)")
    rc, out, _ = run(capsys, "--remove", "--force", "--topic", "t")  # no principal: every ACL of the resource
    assert (rc, out, fake.acls) == (0, "", [])


def test_remove_without_force_or_terminal_refuses(capsys: pytest.CaptureFixture[str], fake: AclWireFake,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    fake.acls.append(stored(ResourceType.TOPIC, "t", "User:alice", Op.READ))
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))  # not a terminal
    rc, out, err = run(capsys, "--remove", "--topic", "t")
    assert (rc, out) == (1, "")
    assert err == ("Refusing to remove ACLs without confirmation: standard input is not a terminal. "
                   "Use --force to remove them without a prompt.\n")
    assert len(fake.acls) == 1 and not fake.api_calls(31)


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_remove_asks_kafkas_question_on_a_terminal(capsys: pytest.CaptureFixture[str], fake: AclWireFake,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    fake.acls += [stored(ResourceType.TOPIC, "t", "User:alice", Op.READ),
                  stored(ResourceType.GROUP, "g", "User:alice", Op.READ)]
    monkeypatch.setattr("sys.stdin", Terminal("n\nY\n"))  # keep the topic's, remove the group's
    rc, out, _ = run(capsys, "--remove", "--allow-principal", "User:alice", "--operation", "Read",
                     "--topic", "t", "--group", "g")
    assert rc == 0
    assert fake.acls == [stored(ResourceType.TOPIC, "t", "User:alice", Op.READ)]
    assert out == (f"Are you sure you want to remove ACLs: \n \t{ALICE_READ} \n from resource filter `{T_LITERAL}`? (y/n)\n"
                   f"Are you sure you want to remove ACLs: \n \t{ALICE_READ} \n from resource filter `{G_LITERAL}`? (y/n)\n"
                   + _block(f"Current ACLs for resource `{T_LITERAL}`", ALICE_READ))
    monkeypatch.setattr("sys.stdin", Terminal("y\n"))
    rc, out, _ = run(capsys, "--remove", "--topic", "t")
    assert out == f"Are you sure you want to delete all ACLs for resource filter `{T_LITERAL}`? (y/n)\n"
    assert (rc, fake.acls) == (0, [])


@pytest.mark.parametrize(("setup", "line"), [
    ("disabled", "org.apache.kafka.common.errors.SecurityDisabledException: No Authorizer is configured on the broker"),
    ("refused", "org.apache.kafka.common.errors.ClusterAuthorizationException: Cluster authorization failed."),
])
def test_broker_errors_as_kafkas_tool_prints_them(capsys: pytest.CaptureFixture[str], fake: AclWireFake,
                                                  setup: str, line: str) -> None:
    if setup == "disabled":
        fake.authorizer = False
    else:
        fake.refuse.update({29: ErrorCode.CLUSTER_AUTHORIZATION_FAILED, 30: ErrorCode.CLUSTER_AUTHORIZATION_FAILED})
    for argv in (("--list",), ("--add", "--topic", "t", "--allow-principal", "User:a")):
        rc, out, err = run(capsys, *argv)
        assert (rc, err) == (1, "")
        assert out.splitlines()[-2:] == [f"Error while executing ACL command: {line}",
                                         f"java.util.concurrent.ExecutionException: {line}"]


def test_a_malformed_principal_fails_as_in_kafka(capsys: pytest.CaptureFixture[str], fake: AclWireFake) -> None:
    rc, out, err = run(capsys, "--add", "--topic", "t", "--allow-principal", "alice")
    assert (rc, err) == (1, "")
    assert out == ("Error while executing ACL command: expected a string in format principalType:principalName "
                   "but got alice\njava.lang.IllegalArgumentException: expected a string in format "
                   "principalType:principalName but got alice\n")
    rc, out, _ = run(capsys, "--add", "--topic", "t", "--allow-principal", "User:a", "--operation", "Any")
    assert out.startswith("Error while executing ACL command: operation must not be ANY\n")
    assert not fake.api_calls(30)


def test_command_config_is_read_and_missing_files_fail(capsys: pytest.CaptureFixture[str], fake: AclWireFake,
                                                       tmp_path: pytest.TempPathFactory) -> None:
    config = tmp_path / "admin.properties"  # type: ignore[operator]
    config.write_text("security.protocol=PLAINTEXT\nclient.id=from-file\n")
    rc, _, err = run(capsys, "--list", "--command-config", str(config))
    assert (rc, err) == (0, "")
    rc, out, _ = run(capsys, "--list", "--command-config", str(tmp_path / "missing"))  # type: ignore[operator]
    assert rc == 1
    assert out.startswith("Error while executing ACL command: org.apache.kafka.common.config.ConfigException: "
                          "Failed to load ")


def test_the_authorizer_form_is_refused_clearly(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(capsys, "--list", connect=("--authorizer-properties", "zookeeper.connect=z:2181"))
    assert (rc, out) == (1, "")
    assert "not supported by Mafka: use --bootstrap-server" in err


def test_delegation_token_acls(capsys: pytest.CaptureFixture[str], fake: AclWireFake) -> None:
    rc, out, err = run(capsys, "--add", "--delegation-token", "tok", "--allow-principal", "User:a",
                       "--operation", "Describe")
    if hasattr(ClientResourceType, "DELEGATION_TOKEN"):
        assert (rc, err) == (0, "")
        assert fake.acls == [stored(ResourceType.DELEGATION_TOKEN, "tok", "User:a", Op.DESCRIBE)]
    else:  # the admin client (confluent-kafka's ResourceType) has no member for code 6 yet
        assert (rc, out, fake.acls) == (1, "", [])
        assert err == "Mafka's admin client cannot manage ACLs of resource type DELEGATION_TOKEN\n"


def test_kafka_acls_sh_runs_the_tool(capsys: pytest.CaptureFixture[str], fake: AclWireFake,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    assert SCRIPTS["kafka-acls.sh"] == "acls"
    monkeypatch.setattr("sys.argv", ["kafka-acls.sh", *BOOTSTRAP, "--add", "--topic", "t",
                                     "--allow-principal", "User:alice", "--operation", "read"])
    with pytest.raises(SystemExit) as done:
        kafka_acls()
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith(f"Adding ACLs for resource `{T_LITERAL}`")
    assert fake.acls == [stored(ResourceType.TOPIC, "t", "User:alice", Op.READ)]
