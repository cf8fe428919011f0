"""``mafka acls`` / ``kafka-acls.sh`` against a real 3-broker cluster with Kafka's AclAuthorizer.

The cluster is ``test_acls.py``'s (same spec, so shared): PLAIN users ``admin``
(a super user), ``alice`` and ``bob`` on a SASL_PLAINTEXT listener.  The tool
runs as its own process, authenticating as the admin through
``--command-config`` (the Java client's ``sasl.jaas.config`` properties, as a
Kafka user would write them); what it adds and removes is judged by
confluent-kafka clients of the principals concerned.  Every name carries this
run's uuid, so the shared cluster's other modules never see them.
"""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.harness.cluster import ClusterSpec, LocalCluster

pytestmark = pytest.mark.integration

JAAS = (
    'org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret" '
    'user_alice="alice-secret" user_bob="bob-secret";'
)
#: test_acls.py's spec, on purpose: the two modules share one cluster
CLUSTER = ClusterSpec(
    settings={
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:ANONYMOUS;User:admin",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
    },
    listeners=("SASL_PLAINTEXT",),
)
PASSWORDS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
RUN = uuid.uuid4().hex[:6]
READS = f"cli-reads-{RUN}"  # alice gets --consumer rights here (group GROUP)
WRITES = f"cli-writes-{RUN}"  # bob gets --producer --idempotent rights here
GROUP = f"cli-group-{RUN}"
WRAPPER = f"cli-wrapper-{RUN}"
BIN = Path(sys.executable).parent
TOPIC_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED = 29, 30


def sasl(cluster: LocalCluster, user: str) -> dict[str, Any]:
    return {"bootstrap.servers": cluster.bootstrap_for("SASL_PLAINTEXT"), "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN", "sasl.username": user, "sasl.password": PASSWORDS[user]}


def command_config(directory: Path, user: str) -> Path:
    """A Java admin client's properties file authenticating as ``user``."""
    path = directory / f"{user}.properties"
    path.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="{user}" password="{PASSWORDS[user]}";\n')
    return path


@pytest.fixture(scope="module")
def configs(cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The module's topics (made by the admin, with a record each) and a command-config file per user."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(sasl(cluster, "admin"))
    for future in admin.create_topics([NewTopic(t, 3, 3) for t in (READS, WRITES, WRAPPER)]).values():
        future.result(30)
    producer = Producer(sasl(cluster, "admin"))
    for partition in range(3):
        producer.produce(READS, b"for alice", partition=partition)
    assert producer.flush(30) == 0
    directory = tmp_path_factory.mktemp("acls-cli")
    return {user: command_config(directory, user) for user in PASSWORDS}


def acls_tool(cluster: LocalCluster, config: Path, *argv: str, command: tuple[str, ...] | None = None,
              timeout: float = 90) -> subprocess.CompletedProcess[str]:
    """``mafka acls`` (or ``command``) on the SASL listener with ``--command-config config``; stdin is not a terminal."""
    prefix = list(command) if command is not None else [sys.executable, "-m", "mafka.cli.main", "acls"]
    return subprocess.run(
        [*prefix, "--bootstrap-server", cluster.bootstrap_for("SASL_PLAINTEXT"), "--command-config", str(config),
         "--timeout", "60", *argv],
        capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert (result.returncode, result.stderr) == (0, ""), result
    return result.stdout


def block(head: str, *entries: str) -> str:
    """Kafka's ``head: \\n \\t…\\n\\t… \\n`` and println's newline."""
    return f"{head}: \n " + "\n".join(f"\t{e}" for e in entries) + " \n\n"


def pattern(resource_type: str, name: str, pattern_type: str = "LITERAL") -> str:
    return f"ResourcePattern(resourceType={resource_type}, name={name}, patternType={pattern_type})"


def entry(principal: str, operation: str, permission: str = "ALLOW") -> str:
    return f"(principal={principal}, host=*, operation={operation}, permissionType={permission})"


def first_read(cluster: LocalCluster, user: str, topic: str, group: str, timeout: float = 30.0) -> int | None:
    """What one confluent-kafka consumer of ``user`` meets first: None once a record arrives, else the
    authorization error code it is refused with."""
    from confluent_kafka import Consumer

    consumer = Consumer({**sasl(cluster, user), "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    consumer.subscribe([topic])
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error() is None:
                return None
            if msg.error().code() in (TOPIC_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED):
                return int(msg.error().code())
        raise AssertionError(f"{user} read nothing and was refused nothing on {topic}")
    finally:
        consumer.close()


def eventually_reads(cluster: LocalCluster, user: str, topic: str, group: str, allowed: bool,
                     timeout: float = 30.0) -> None:
    """Until ``user`` can (``allowed``) or cannot read: every broker applies an ACL change within a
    second or so, and until then a consumer may meet the old decision."""
    deadline = time.monotonic() + timeout
    while True:
        outcome = first_read(cluster, user, topic, group)
        if (outcome is None) == allowed:
            return
        assert time.monotonic() < deadline, f"{user} on {topic}: still {outcome} after {timeout}s"
        time.sleep(0.5)


def described(cluster: LocalCluster, topic: str) -> set[tuple[str, str, str]]:
    """(principal, operation, permission) of every ACL on ``topic``'s literal pattern, by confluent-kafka."""
    from confluent_kafka.admin import (
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )

    admin = AdminClient(sasl(cluster, "admin"))
    found = admin.describe_acls(AclBindingFilter(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, None, None,
                                                 AclOperation.ANY, AclPermissionType.ANY)).result(30)
    return {(b.principal, b.operation.name, b.permission_type.name) for b in found}


def described_soon(cluster: LocalCluster, topic: str, expected: set[tuple[str, str, str]],
                   timeout: float = 10.0) -> None:
    """Until confluent-kafka describes ``expected`` on ``topic``: it may ask a broker other than the one
    the tool changed, which follows within a second or so."""
    deadline = time.monotonic() + timeout
    while (found := described(cluster, topic)) != expected:
        assert time.monotonic() < deadline, f"ACLs on {topic}: {found}, expected {expected}"
        time.sleep(0.2)


@pytest.fixture(scope="module")
def alice_consumes(cluster: LocalCluster, configs: dict[str, Path]) -> Iterator[str]:
    """``--add --consumer`` for alice on READS and GROUP; the tool's output."""
    out = ok(acls_tool(cluster, configs["admin"], "--add", "--consumer", "--allow-principal", "User:alice",
                       "--topic", READS, "--group", GROUP))
    yield out
    acls_tool(cluster, configs["admin"], "--remove", "--force", "--topic", READS)
    acls_tool(cluster, configs["admin"], "--remove", "--force", "--group", GROUP)


def test_add_consumer_prints_kafkas_text_and_lets_only_alice_read(
        cluster: LocalCluster, alice_consumes: str) -> None:
    read, describe = entry("User:alice", "READ"), entry("User:alice", "DESCRIBE")
    topic, group = pattern("TOPIC", READS), pattern("GROUP", GROUP)
    assert alice_consumes == (
        block(f"Adding ACLs for resource `{topic}`", read, describe)
        + block(f"Adding ACLs for resource `{group}`", read)
        # the broker lists a resource's entries by principal, host, operation code
        + block(f"Current ACLs for resource `{topic}`", read, describe)
        + block(f"Current ACLs for resource `{group}`", read))
    described_soon(cluster, READS, {("User:alice", "READ", "ALLOW"), ("User:alice", "DESCRIBE", "ALLOW")})
    eventually_reads(cluster, "alice", READS, GROUP, allowed=True)
    # bob, without the consumer rights, is refused at his first step: joining the group
    assert first_read(cluster, "bob", READS, GROUP) == GROUP_AUTHORIZATION_FAILED
    # the group ACL is literal: alice may read the topic, but in no other group
    assert first_read(cluster, "alice", READS, f"{GROUP}-other") == GROUP_AUTHORIZATION_FAILED


def test_list_with_filters_and_principals(cluster: LocalCluster, configs: dict[str, Path],
                                          alice_consumes: str) -> None:
    read, describe = entry("User:alice", "READ"), entry("User:alice", "DESCRIBE")
    out = ok(acls_tool(cluster, configs["admin"], "--list", "--topic", READS))
    assert out == block(f"Current ACLs for resource `{pattern('TOPIC', READS)}`", read, describe)
    out = ok(acls_tool(cluster, configs["admin"], "--list", "--topic", READS, "--group", GROUP,
                       "--principal", "User:alice", "--principal", "User:bob"))
    assert out == ("ACLs for principal `User:alice`\n"
                   + block(f"Current ACLs for resource `{pattern('TOPIC', READS)}`", read, describe)
                   + block(f"Current ACLs for resource `{pattern('GROUP', GROUP)}`", read)
                   + "ACLs for principal `User:bob`\n")
    # prefixed patterns only: there are none for these names
    assert ok(acls_tool(cluster, configs["admin"], "--list", "--topic", READS,
                        "--resource-pattern-type", "prefixed")) == ""


def test_producer_idempotent_lets_bob_write(cluster: LocalCluster, configs: dict[str, Path]) -> None:
    from confluent_kafka import KafkaException, Producer

    def produce_error() -> int | None:
        result: dict[str, Any] = {}
        producer = Producer({**sasl(cluster, "bob"), "enable.idempotence": True, "message.timeout.ms": 10000})
        try:
            producer.produce(WRITES, b"from bob", on_delivery=lambda err, msg: result.setdefault("err", err))
        except KafkaException as exc:
            # librdkafka refuses at once when its metadata already says the topic is not
            # authorized (a race with the producer's first metadata answer), else in the report.
            return int(exc.args[0].code())
        producer.flush(15)
        err = result.get("err")
        return None if err is None else int(err.code())

    assert produce_error() is not None  # no rights yet
    out = ok(acls_tool(cluster, configs["admin"], "--add", "--producer", "--idempotent",
                       "--allow-principal", "User:bob", "--topic", WRITES))
    cluster_pattern = pattern("CLUSTER", "kafka-cluster")
    assert block(f"Adding ACLs for resource `{cluster_pattern}`", entry("User:bob", "IDEMPOTENT_WRITE")) in out
    described_soon(cluster, WRITES, {("User:bob", op, "ALLOW") for op in ("WRITE", "DESCRIBE", "CREATE")})
    try:
        deadline = time.monotonic() + 30
        while (error := produce_error()) is not None:
            assert time.monotonic() < deadline, f"bob still cannot write: {error}"
            time.sleep(0.5)
    finally:
        ok(acls_tool(cluster, configs["admin"], "--remove", "--force", "--producer", "--idempotent",
                     "--allow-principal", "User:bob", "--topic", WRITES))
    described_soon(cluster, WRITES, set())


def test_remove_needs_force_without_a_terminal_then_takes_the_rights_away(
        cluster: LocalCluster, configs: dict[str, Path], alice_consumes: str) -> None:
    consumer_argv = ("--consumer", "--allow-principal", "User:alice", "--topic", READS, "--group", GROUP)
    refused = acls_tool(cluster, configs["admin"], "--remove", *consumer_argv)
    assert (refused.returncode, refused.stdout) == (1, "")
    assert "Use --force" in refused.stderr
    described_soon(cluster, READS, {("User:alice", "READ", "ALLOW"), ("User:alice", "DESCRIBE", "ALLOW")})

    out = ok(acls_tool(cluster, configs["admin"], "--remove", "--force", *consumer_argv))
    assert out == ""  # and nothing is left on the resources to list
    described_soon(cluster, READS, set())
    eventually_reads(cluster, "alice", READS, GROUP, allowed=False)
    # put them back for the tests that follow (the fixture removes them at the end)
    ok(acls_tool(cluster, configs["admin"], "--add", *consumer_argv))


def test_a_user_without_rights_on_the_cluster_gets_kafkas_error(cluster: LocalCluster,
                                                                configs: dict[str, Path]) -> None:
    for argv in (("--list", "--topic", READS),
                 ("--add", "--topic", READS, "--allow-principal", "User:alice", "--operation", "Write")):
        result = acls_tool(cluster, configs["alice"], *argv)
        assert (result.returncode, result.stderr) == (1, ""), result
        error = "org.apache.kafka.common.errors.ClusterAuthorizationException: Cluster authorization failed."
        assert result.stdout.splitlines()[-2:] == [f"Error while executing ACL command: {error}",
                                                   f"java.util.concurrent.ExecutionException: {error}"]
    assert ("User:alice", "WRITE", "ALLOW") not in described(cluster, READS)


def test_kafka_acls_sh_runs_the_same_tool(cluster: LocalCluster, configs: dict[str, Path]) -> None:
    installed = BIN / "kafka-acls.sh"
    # The console script exists once the package is (re)installed with its setup.cfg entry; until
    # then the same entry point is run the way the script runs it.
    wrapper = (str(installed),) if installed.exists() else (
        sys.executable, "-c", "import sys; sys.argv[0] = 'kafka-acls.sh'; "
                              "from mafka.cli.kafka_scripts import kafka_acls; kafka_acls()")
    argv = ("--allow-principal", "User:bob", "--operation", "Describe", "--topic", WRAPPER,
            "--resource-pattern-type", "PREFIXED")
    out = ok(acls_tool(cluster, configs["admin"], "--add", *argv, command=wrapper))
    prefixed = pattern("TOPIC", WRAPPER, "PREFIXED")
    assert out == (block(f"Adding ACLs for resource `{prefixed}`", entry("User:bob", "DESCRIBE"))
                   + block(f"Current ACLs for resource `{prefixed}`", entry("User:bob", "DESCRIBE")))
    listed = ("--list", "--topic", WRAPPER + "-anything", "--resource-pattern-type", "match")
    assert ok(acls_tool(cluster, configs["admin"], *listed, command=wrapper)) == \
        ok(acls_tool(cluster, configs["admin"], *listed)) == \
        block(f"Current ACLs for resource `{prefixed}`", entry("User:bob", "DESCRIBE"))
    assert ok(acls_tool(cluster, configs["admin"], "--remove", "--force", *argv, command=wrapper)) == ""
    assert ok(acls_tool(cluster, configs["admin"], *listed)) == ""
