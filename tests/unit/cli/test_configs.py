"""``mafka configs``: argument checks, the ``k=[a,b]`` parser, Kafka's output and errors (no sockets).

The ``--bootstrap-server`` form runs the real admin client over
:class:`~tests.unit.cli.fake_wire.WireFake`; the ``--zookeeper`` form runs
against an in-memory stand-in for :class:`~mafka.cli.zk_session.ZkSession`.
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
from typing import Any

import pytest

from mafka.broker.scram import credential_from_string
from mafka.cli import configs
from mafka.cli.main import main
from mafka.client.admin_types import ConfigEntry, ConfigSource
from mafka.errors import ErrorCode
from mafka.security.quota_entities import (
    DEFAULT,
    ClientQuotaEntity,
    alter_response_entity,
    api_error,
    apply_alteration,
    describe_client_quotas,
    entity_to_wire,
    parse_alteration_entity,
    parse_filter,
)
from tests.unit.cli.fake_wire import WireFake

BOOTSTRAP = "b1:9092"


def parse(*argv: str, connect: tuple[str, ...] = ("--bootstrap-server", BOOTSTRAP)) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    configs.add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["configs", *connect, *argv])


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = main(["configs", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


# -- arguments ------------------------------------------------------------------------------------


def test_entity_types_and_names_in_kafkas_order() -> None:
    args = parse("--describe", "--entity-type", "users", "--entity-default", "--entity-type", "clients",
                 "--entity-name", "c1")
    assert configs.entity_types(args) == ["users", "clients"]
    assert configs.entity_names(args) == ["", "c1"]
    args = parse("--alter", "--broker-defaults", "--add-config", "a=1")
    assert (configs.entity_types(args), configs.entity_names(args)) == (["brokers"], [""])
    args = parse("--describe", "--user", "alice", "--client", "app")
    assert (configs.entity_types(args), configs.entity_names(args)) == (["clients", "users"], ["app", "alice"])
    assert configs.check_args(parse("--alter", "--topic", "t", "--delete-config", "a,b")) == (["topics"], ["t"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--topic", "t"), "Command must include exactly one action: --describe, --alter"),
        (("--describe", "--alter", "--topic", "t"), "Command must include exactly one action: --describe, --alter"),
        (("--describe", "--topic", "t", "--add-config", "a=1"),
         'Option "[describe]" can\'t be used with option "[add-config]"'),
        (("--describe", "--topic", "t", "--delete-config", "a"),
         'Option "[describe]" can\'t be used with option "[delete-config]"'),
        (("--describe", "--entity-type", "topics", "--entity-type", "topics"),
         "Duplicate entity type(s) specified: topics"),
        (("--describe", "--entity-type", "groups"),
         "Invalid entity type groups, the entity type must be one of topics,clients,users,brokers,ips,"
         "broker-loggers with the --bootstrap-server argument"),
        (("--describe",), "At least one entity type must be specified"),
        (("--describe", "--entity-type", "topics", "--entity-type", "brokers"),
         "Only 'users' and 'clients' entity types may be specified together"),
        (("--describe", "--entity-type", "topics", "--topic", "t"), "Duplicate entity type(s) specified: topics"),
        (("--describe", "--entity-name", "t", "--topic", "t"),
         "--entity-{type,name,default} should not be used in conjunction with specific entity flags"),
        (("--describe", "--broker", "one"),
         "The entity name for brokers must be a valid integer broker id, but it is: one"),
        (("--describe", "--entity-type", "broker-loggers"),
         "an entity name must be specified with --describe of broker-loggers"),
        (("--alter", "--entity-type", "brokers", "--add-config", "a=1"),
         "an entity-name or default entity must be specified with --alter of users, clients, brokers or ips"),
        (("--alter", "--entity-type", "topics", "--add-config", "a=1"),
         "an entity name must be specified with --alter of topics"),
        (("--alter", "--topic", "t", "--add-config", "a=1", "--add-config-file", "f"),
         "Only one of --add-config or --add-config-file must be specified"),
        (("--alter", "--topic", "t"),
         "At least one of --add-config, --add-config-file, or --delete-config must be specified with --alter"),
    ],
)
def test_argument_errors(argv: tuple[str, ...], message: str) -> None:
    with pytest.raises(configs.ConfigCommandError) as caught:
        configs.check_args(parse(*argv))
    assert caught.value.message == message
    assert caught.value.exception is None


def test_connection_argument_errors() -> None:
    with pytest.raises(configs.ConfigCommandError, match="^One of the required --bootstrap-server or --zookeeper"):
        configs.check_args(parse("--describe", "--topic", "t", connect=()))
    with pytest.raises(configs.ConfigCommandError, match="^Only one of --bootstrap-server or --zookeeper must be"):
        configs.check_args(parse("--describe", "--topic", "t",
                                 connect=("--bootstrap-server", BOOTSTRAP, "--zookeeper", "zk:2181")))
    with pytest.raises(configs.ConfigCommandError, match="^--bootstrap-server must be specified for --all$"):
        configs.check_args(parse("--describe", "--all", "--topic", "t", connect=("--zookeeper", "zk:2181")))
    with pytest.raises(configs.ConfigCommandError) as caught:
        configs.check_args(parse("--describe", "--entity-type", "broker-loggers", "--entity-name", "1",
                                 connect=("--zookeeper", "zk:2181")))
    assert caught.value.message == ("Invalid entity type broker-loggers, the entity type must be one of "
                                    "topics,clients,users,brokers,ips with the --zookeeper argument")


def test_argument_errors_print_the_bare_message(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(capsys, "--bootstrap-server", BOOTSTRAP, "--describe")
    assert (rc, out, err) == (1, "", "At least one entity type must be specified\n")
    rc, out, err = run(capsys, "--bootstrap-server", BOOTSTRAP, "--topic", "t")
    assert rc == 1 and out == ""
    assert err.startswith("Command must include exactly one action: --describe, --alter\nusage: mafka configs")


# -- --add-config ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("retention.ms=1000", {"retention.ms": "1000"}),
        ("k1=v1,k2=[a,b,c],k3=v3", {"k1": "v1", "k2": "a,b,c", "k3": "v3"}),
        ("SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=alice-secret]",
         {"SCRAM-SHA-256": "iterations=8192,password=alice-secret", "SCRAM-SHA-512": "password=alice-secret"}),
        (" k1 = v1 , k2 = [ x , y ] ", {"k1": "v1", "k2": "x , y"}),
        ("ssl.endpoint.identification.algorithm=", {"ssl.endpoint.identification.algorithm": ""}),
        ("a=1,", {"a": "1"}),
        ("a=1,a=2", {"a": "2"}),
        ("cleanup.policy=[compact]", {"cleanup.policy": "compact"}),
    ],
)
def test_add_config_parser(text: str, parsed: dict[str, str]) -> None:
    assert configs.parse_add_config(text) == parsed


@pytest.mark.parametrize("text", ["", "novalue", "a=b=c", "a=1,,b=2", ",a=1", "k=v,x"])
def test_add_config_parser_refuses(text: str) -> None:
    with pytest.raises(configs.ConfigCommandError) as caught:
        configs.parse_add_config(text)
    assert caught.value.message == 'Invalid entity config: all configs to be added must be in the format "key=val".'


# -- output formats -------------------------------------------------------------------------------


def test_java_hash_order_matches_java() -> None:
    # Orders printed by OpenJDK 17 (HashMap.keySet() and Properties.entrySet()).
    assert configs._java_string_hash("hello") == 99162322
    assert configs._java_string_hash("Aa") == configs._java_string_hash("BB")
    keys = ["retention.ms", "max.message.bytes", "cleanup.policy", "segment.bytes", "min.insync.replicas"]
    assert configs.java_hash_order(keys) == [
        "cleanup.policy", "max.message.bytes", "min.insync.replicas", "retention.ms", "segment.bytes"]
    assert configs.java_hash_order(["SCRAM-SHA-256", "SCRAM-SHA-512", "producer_byte_rate"]) == [
        "SCRAM-SHA-512", "SCRAM-SHA-256", "producer_byte_rate"]
    twelve = [f"a{i}" for i in range(12)]
    assert configs.java_hash_order(twelve) == "a1,a11,a2,a10,a3,a4,a5,a6,a7,a8,a9,a0".split(",")
    assert configs.java_hash_order(twelve, concurrent=True) == "a11,a10,a0,a1,a2,a3,a4,a5,a6,a7,a8,a9".split(",")
    assert configs.java_hash_order([f"a{i}" for i in range(14)]) == (
        "a11,a10,a13,a12,a0,a1,a2,a3,a4,a5,a6,a7,a8,a9".split(","))


def test_config_entry_line() -> None:
    entry = ConfigEntry("retention.ms", "1000", source=ConfigSource.DYNAMIC_TOPIC_CONFIG, synonyms={
        "retention.ms": ConfigEntry("retention.ms", "1000", source=ConfigSource.DYNAMIC_TOPIC_CONFIG),
        "log.retention.hours": ConfigEntry("log.retention.hours", "168", source=ConfigSource.DEFAULT_CONFIG),
    })
    assert configs.format_config_entry(entry) == (
        "  retention.ms=1000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1000, "
        "DEFAULT_CONFIG:log.retention.hours=168}")
    secret = ConfigEntry("ssl.key.password", None, source=ConfigSource.STATIC_BROKER_CONFIG, is_sensitive=True)
    assert configs.format_config_entry(secret) == "  ssl.key.password=null sensitive=true synonyms={}"


def test_entity_strings() -> None:
    assert configs._entity_string("topics", "t") == "topic 't'"
    assert configs._entity_string("users", "alice%40example.com") == "user-principal 'alice@example.com'"
    assert configs._entity_string("brokers", "1") == "brokers '1'"
    assert configs._entity_string("brokers", "<default>") == "default brokers"
    assert configs._entity_string("users", "<default>") == "default user-principal"


# -- --bootstrap-server against a fake cluster ------------------------------------------------------


class ConfigsCluster(WireFake):
    """Brokers 1 and 2 (2 the controller), topic ``t``; DescribeConfigs, IncrementalAlterConfigs, SCRAM."""

    def __init__(self) -> None:
        super().__init__({1: ("b1", 9092), 2: ("b2", 9093)})
        self.topics = {"t": {"retention.ms": "1000", "cleanup.policy": "compact,delete"}, "u": {}}
        self.scram: dict[str, dict[int, int]] = {"alice": {1: 8192, 2: 4096}}
        self.alter_errors: dict[str, tuple[int, str]] = {}
        #: client quota entity configs, as the brokers keep them in ZooKeeper
        self.quotas: dict[ClientQuotaEntity, dict[str, str]] = {}

    def _DescribeClientQuotas(self, req: Any, broker: int) -> dict[str, Any]:
        try:
            found = describe_client_quotas(
                parse_filter([(c.entity_type, c.match_type, c.match) for c in req.components], req.strict),
                self.quotas)
        except Exception as exc:  # noqa: BLE001 - the broker's top-level error
            code, message = api_error(exc)
            return {"throttle_time_ms": 0, "error_code": code, "error_message": message, "entries": None}
        return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "entries": [
            {"entity": entity_to_wire(entity), "values": [{"key": k, "value": v} for k, v in values.items()]}
            for entity, values in found]}

    def _AlterClientQuotas(self, req: Any, broker: int) -> dict[str, Any]:
        entries = []
        for entry in req.entries:
            pairs = [(e.entity_type, e.entity_name) for e in entry.entity]
            try:
                entity = parse_alteration_entity(pairs)
                new = apply_alteration(entity, self.quotas.get(entity, {}),
                                       [(op.key, None if op.remove else op.value) for op in entry.ops])
                if not req.validate_only:
                    self.quotas[entity] = new
                code, message = 0, None
            except Exception as exc:  # noqa: BLE001 - this entry's error
                code, message = api_error(exc)
            entries.append({"error_code": code, "error_message": message, "entity": alter_response_entity(pairs)})
        return {"throttle_time_ms": 0, "entries": entries}

    def _Metadata(self, req: Any, broker: int) -> dict[str, Any]:
        names = sorted(self.topics) if req.topics is None else [t.name for t in req.topics]
        return {
            "brokers": [{"node_id": n, "host": h, "port": p, "rack": None} for n, (h, p) in self.brokers.items()],
            "cluster_id": "c", "controller_id": 2,
            "topics": [{"error_code": 0 if t in self.topics else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "name": t,
                        "is_internal": False,
                        "partitions": [{"error_code": 0, "partition_index": 0, "leader_id": 1, "replica_nodes": [1],
                                        "isr_nodes": [1], "offline_replicas": []}] if t in self.topics else []}
                       for t in names],
        }

    @staticmethod
    def _entry(name: str, value: str | None, source: int, synonyms: list[tuple[str, str, int]],
               sensitive: bool = False) -> dict[str, Any]:
        return {"name": name, "value": value, "read_only": False, "config_source": source, "is_sensitive": sensitive,
                "synonyms": [{"name": n, "value": v, "source": s} for n, v, s in synonyms]}

    def _DescribeConfigs(self, req: Any, broker: int) -> dict[str, Any]:
        results = []
        for r in req.resources:
            error, message, entries = 0, None, []
            if r.resource_type == 2:
                if r.resource_name not in self.topics:
                    error, message = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {r.resource_name} does not exist."
                else:
                    entries.append(self._entry("segment.bytes", "1073741824", 5,
                                               [("log.segment.bytes", "1073741824", 5)]))
                    entries += [self._entry(k, v, 1, [(k, v, 1)]) for k, v in self.topics[r.resource_name].items()]
            elif r.resource_name == "":  # the cluster default: its dynamic configs (as Kafka's brokers answer)
                entries.append(self._entry("leader.replication.throttled.rate", "50", 3,
                                           [("leader.replication.throttled.rate", "50", 3)]))
            else:
                assert r.resource_name == str(broker), "a broker's configs are asked of that broker"
                entries.append(self._entry("follower.replication.throttled.rate", "100", 2,
                                           [("follower.replication.throttled.rate", "100", 2)]))
                entries.append(self._entry("leader.replication.throttled.rate", "50", 3,
                                           [("leader.replication.throttled.rate", "50", 3)]))
                entries.append(self._entry("ssl.key.password", None, 4, [], sensitive=True))
            results.append({"error_code": error, "error_message": message, "resource_type": r.resource_type,
                            "resource_name": r.resource_name, "configs": entries})
        return {"results": results}

    def _IncrementalAlterConfigs(self, req: Any, broker: int) -> dict[str, Any]:
        responses = []
        for r in req.resources:
            error, message = self.alter_errors.get(r.resource_name, (0, None))
            if not error and r.resource_type == 2:
                for c in r.configs:
                    if c.config_operation == 0:
                        self.topics[r.resource_name][c.name] = c.value
                    else:
                        self.topics[r.resource_name].pop(c.name, None)
            responses.append({"error_code": error, "error_message": message, "resource_type": r.resource_type,
                              "resource_name": r.resource_name})
        return {"responses": responses}

    def _DescribeUserScramCredentials(self, req: Any, broker: int) -> dict[str, Any]:
        names = sorted(self.scram) if not req.users else [u.name for u in req.users]
        results = []
        for name in names:
            if name == "broken":
                results.append({"user": name, "error_code": ErrorCode.UNKNOWN_SERVER_ERROR,
                                "error_message": "boom", "credential_infos": []})
            elif name not in self.scram:
                results.append({"user": name, "error_code": ErrorCode.RESOURCE_NOT_FOUND,
                                "error_message": f"Attempt to describe a user credential that does not exist: {name}",
                                "credential_infos": []})
            else:
                results.append({"user": name, "error_code": 0, "error_message": None, "credential_infos": [
                    {"mechanism": m, "iterations": i} for m, i in sorted(self.scram[name].items())]})
        return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "results": results}

    def _AlterUserScramCredentials(self, req: Any, broker: int) -> dict[str, Any]:
        users = sorted({a.name for a in (*req.deletions, *req.upsertions)})
        if broker != 2:
            return {"results": [{"user": u, "error_code": ErrorCode.NOT_CONTROLLER, "error_message": None}
                                for u in users]}
        results = []
        for user in users:
            creds = self.scram.setdefault(user, {})
            missing = [d for d in req.deletions if d.mechanism not in creds]
            if missing:
                results.append({"user": user, "error_code": ErrorCode.RESOURCE_NOT_FOUND,
                                "error_message": "Attempt to delete a user credential that does not exist"})
                continue
            for d in req.deletions:
                del creds[d.mechanism]
            for u in req.upsertions:
                creds[u.mechanism] = u.iterations
            results.append({"user": user, "error_code": 0, "error_message": None})
        return {"results": results}


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> ConfigsCluster:
    cluster = ConfigsCluster()
    cluster.install(monkeypatch)
    return cluster


def boot(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    return run(capsys, "--bootstrap-server", BOOTSTRAP, "--timeout", "5", *argv)


def test_describe_topic_dynamic_and_all(fake: ConfigsCluster, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = boot(capsys, "--describe", "--topic", "t")
    assert (rc, err) == (0, "")
    assert out.splitlines() == [
        "Dynamic configs for topic t are:",
        "  cleanup.policy=compact,delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact,delete}",
        "  retention.ms=1000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1000}",
    ]
    rc, out, _ = boot(capsys, "--describe", "--entity-type", "topics", "--entity-name", "t", "--all")
    assert rc == 0
    assert out.splitlines()[0] == "All configs for topic t are:"
    assert "  segment.bytes=1073741824 sensitive=false synonyms={DEFAULT_CONFIG:log.segment.bytes=1073741824}" \
        in out.splitlines()
    rc, out, _ = boot(capsys, "--describe", "--entity-type", "topics")
    assert rc == 0
    assert [line for line in out.splitlines() if not line.startswith("  ")] == [
        "Dynamic configs for topic t are:", "Dynamic configs for topic u are:"]


def test_describe_unknown_topic(fake: ConfigsCluster, capsys: pytest.CaptureFixture[str],
                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.argv", ["mafka", "configs", "--describe", "--topic", "nope"])
    rc, out, err = boot(capsys, "--describe", "--topic", "nope")
    assert rc == 1
    assert out == "Dynamic configs for topic nope are:\n"  # Kafka prints the heading first
    assert err.splitlines() == [
        "Error while executing config command with args '--describe --topic nope'",
        "java.util.concurrent.ExecutionException: org.apache.kafka.common.errors.UnknownTopicOrPartitionException: "
        "Topic nope does not exist.",
    ]


def test_describe_brokers(fake: ConfigsCluster, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = boot(capsys, "--describe", "--broker", "1")
    assert (rc, out.splitlines()) == (0, [
        "Dynamic configs for broker 1 are:",
        "  follower.replication.throttled.rate=100 sensitive=false "
        "synonyms={DYNAMIC_BROKER_CONFIG:follower.replication.throttled.rate=100}",
    ])
    rc, out, _ = boot(capsys, "--describe", "--broker", "2", "--all")
    assert rc == 0
    assert out.splitlines()[0] == "All configs for broker 2 are:"
    assert "  ssl.key.password=null sensitive=true synonyms={}" in out.splitlines()
    assert ("  leader.replication.throttled.rate=50 sensitive=false "
            "synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:leader.replication.throttled.rate=50}") in out.splitlines()
    rc, out, _ = boot(capsys, "--describe", "--entity-type", "brokers")
    headings = [line for line in out.splitlines() if not line.startswith("  ")]
    assert (rc, headings) == (0, ["Dynamic configs for broker 1 are:", "Dynamic configs for broker 2 are:",
                                  "Default configs for brokers in the cluster are:"])
    rc, out, _ = boot(capsys, "--describe", "--broker-defaults")
    assert (rc, out.splitlines()) == (0, [
        "Default configs for brokers in the cluster are:",
        "  leader.replication.throttled.rate=50 sensitive=false "
        "synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:leader.replication.throttled.rate=50}",
    ])


def test_alter_topic(fake: ConfigsCluster, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = boot(capsys, "--alter", "--topic", "t", "--add-config", "max.message.bytes=2000,retention.ms=5",
                        "--delete-config", "cleanup.policy")
    assert (rc, out, err) == (0, "Completed updating config for topic t.\n", "")
    assert fake.topics["t"] == {"retention.ms": "5", "max.message.bytes": "2000"}
    [(request, _)] = fake.api_calls(44)
    ops = [(c.name, c.config_operation, c.value) for c in request.resources[0].configs]
    assert ops == [("max.message.bytes", 0, "2000"), ("retention.ms", 0, "5"), ("cleanup.policy", 1, None)]


def test_alter_topic_deleting_what_is_not_set(fake: ConfigsCluster, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = boot(capsys, "--alter", "--topic", "t", "--delete-config", "retention.ms,segment.bytes,nope")
    assert (rc, out, err) == (1, "", "Invalid config(s): segment.bytes,nope\n")
    assert fake.api_calls(44) == []


def test_alter_topic_refused_by_the_broker(fake: ConfigsCluster, capsys: pytest.CaptureFixture[str]) -> None:
    fake.alter_errors["t"] = (ErrorCode.INVALID_CONFIG, "Invalid value abc for configuration retention.ms")
    rc, out, err = boot(capsys, "--alter", "--topic", "t", "--add-config", "retention.ms=abc")
    assert (rc, out) == (1, "")
    assert err.splitlines()[0].startswith("Error while executing config command with args '")
    assert err.splitlines()[1] == ("java.util.concurrent.ExecutionException: org.apache.kafka.common.errors."
                                   "InvalidConfigurationException: Invalid value abc for configuration retention.ms")


def test_alter_broker_and_default(fake: ConfigsCluster, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = boot(capsys, "--alter", "--broker", "1", "--add-config", "leader.replication.throttled.rate=10")
    assert (rc, out) == (0, "Completed updating config for broker 1.\n")
    [(request, broker)] = fake.api_calls(44)
    assert broker == 1 and request.resources[0].resource_name == "1"
    rc, out, _ = boot(capsys, "--alter", "--entity-type", "brokers", "--entity-default",
                      "--add-config", "follower.replication.throttled.rate=10")
    assert (rc, out) == (0, "Completed updating default config for brokers in the cluster.\n")
    assert fake.api_calls(44)[-1][0].resources[0].resource_name == ""
    rc, out, _ = boot(capsys, "--alter", "--broker-defaults", "--delete-config", "leader.replication.throttled.rate")
    assert (rc, out) == (0, "Completed updating default config for brokers in the cluster.\n")
    rc, out, err = boot(capsys, "--alter", "--broker", "1", "--delete-config", "leader.replication.throttled.rate")
    assert (rc, out, err) == (1, "", "Invalid config(s): leader.replication.throttled.rate\n")


def test_message_format_version_warning(fake: ConfigsCluster, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = boot(capsys, "--alter", "--topic", "t", "--add-config", "message.format.version=0.10.0")
    assert rc == 0
    assert out.splitlines() == [
        "WARNING: The configuration message.format.version=0.10.0 is specified. This configuration will be ignored "
        "if the version is newer than the inter.broker.protocol.version specified in the broker.",
        "Completed updating config for topic t.",
    ]


def test_add_config_file(fake: ConfigsCluster, capsys: pytest.CaptureFixture[str], tmp_path: Any) -> None:
    path = tmp_path / "add.properties"
    path.write_text("# a comment\nretention.ms=42\ncleanup.policy: compact\n")
    rc, out, _ = boot(capsys, "--alter", "--topic", "u", "--add-config-file", str(path))
    assert (rc, out) == (0, "Completed updating config for topic u.\n")
    assert fake.topics["u"] == {"retention.ms": "42", "cleanup.policy": "compact"}


def _stored_key(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    digest = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}[mechanism]
    salted = hashlib.pbkdf2_hmac(digest, password.encode(), salt, iterations)
    return hashlib.new(digest, hmac.new(salted, b"Client Key", digest).digest()).digest()


def test_scram_alter_and_describe(fake: ConfigsCluster, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = boot(capsys, "--alter", "--entity-type", "users", "--entity-name", "bob", "--add-config",
                        "SCRAM-SHA-256=[iterations=8192,password=bob-secret],SCRAM-SHA-512=[password=bob-secret]")
    assert (rc, out, err) == (0, "Completed updating config for user bob.\n", "")
    calls = fake.api_calls(51)
    assert [broker for _, broker in calls][-1] == 2, "alterations end at the controller"
    request = calls[-1][0]
    assert [(u.name, u.mechanism, u.iterations) for u in request.upsertions] == [("bob", 1, 8192), ("bob", 2, 4096)]
    for u in request.upsertions:
        digest = "sha256" if u.mechanism == 1 else "sha512"
        assert u.salted_password == hashlib.pbkdf2_hmac(digest, b"bob-secret", u.salt, u.iterations)
        assert u.salt.isalnum() and 20 <= len(u.salt) <= 26  # Kafka's base-36 salt
    assert request.upsertions[0].salt != request.upsertions[1].salt

    rc, out, _ = boot(capsys, "--describe", "--user", "bob")
    assert (rc, out) == (0, "SCRAM credential configs for user-principal 'bob' are "
                            "SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096\n")
    rc, out, _ = boot(capsys, "--alter", "--user", "bob", "--delete-config", "SCRAM-SHA-256")
    assert (rc, out) == (0, "Completed updating config for user bob.\n")
    rc, out, _ = boot(capsys, "--describe", "--entity-type", "users")
    assert (rc, out.splitlines()) == (0, [
        "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192, "
        "SCRAM-SHA-512=iterations=4096",
        "SCRAM credential configs for user-principal 'bob' are SCRAM-SHA-512=iterations=4096",
    ])
    rc, out, _ = boot(capsys, "--describe", "--user", "nobody")
    assert (rc, out) == (0, "")
    rc, out, _ = boot(capsys, "--describe", "--user", "broken")
    assert (rc, out) == (0, "Error retrieving SCRAM credential configs for user-principal 'broken': "
                            "UnknownServerException: boom\n")


def test_scram_errors(fake: ConfigsCluster, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = boot(capsys, "--alter", "--user", "alice", "--delete-config", "SCRAM-SHA-512")
    assert (rc, out, err) == (0, "Completed updating config for user alice.\n", "")
    rc, out, err = boot(capsys, "--alter", "--user", "alice", "--delete-config", "SCRAM-SHA-512")
    assert (rc, out) == (1, "")
    assert err.splitlines()[1] == ("java.util.concurrent.ExecutionException: org.apache.kafka.common.errors."
                                   "ResourceNotFoundException: Attempt to delete a user credential that does not exist")
    for config, message in [
        ("SCRAM-SHA-256=[iterations=100,password=p]",
         "Iterations 100 is less than the minimum 4096 required for SCRAM-SHA-256"),
        ("SCRAM-SHA-256=p", "Invalid credential property SCRAM_SHA_256=p"),
        ("sasl.enabled=true", "Only quota and SCRAM credential configs can be added for 'users' using "
                              "--bootstrap-server. Unexpected config names: Set(sasl.enabled)"),
        ("SCRAM-SHA-256=[password=p],producer_byte_rate=10", "Cannot alter both quota and SCRAM credential configs "
                                                             "simultaneously for 'users' using --bootstrap-server."),
    ]:
        rc, out, err = boot(capsys, "--alter", "--user", "alice", "--add-config", config)
        assert (rc, out, err) == (1, "", message + "\n"), config
    rc, _, err = boot(capsys, "--alter", "--user-defaults", "--add-config", "SCRAM-SHA-256=[password=p]")
    assert (rc, err) == (1, "The use of --entity-default or --user-defaults is not allowed with User SCRAM "
                            "Credentials using --bootstrap-server.\n")


def test_client_quota_alter_and_describe(fake: ConfigsCluster, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = boot(capsys, "--alter", "--user", "alice", "--add-config",
                        "producer_byte_rate=1000,consumer_byte_rate=2000")
    assert (rc, out, err) == (0, "Completed updating config for user alice.\n", "")
    [(request, _)] = fake.api_calls(49)
    [entry] = request.entries
    assert [(e.entity_type, e.entity_name) for e in entry.entity] == [("user", "alice")]
    assert sorted((op.key, op.value, op.remove) for op in entry.ops) == [
        ("consumer_byte_rate", 2000.0, False), ("producer_byte_rate", 1000.0, False)]
    assert request.validate_only is False
    # Alter describes the entity first, exactly and strictly (Kafka's getClientQuotasConfig).
    [(describe, _)] = fake.api_calls(48)
    assert [(c.entity_type, c.match_type, c.match) for c in describe.components] == [("user", 0, "alice")]
    assert describe.strict is True
    assert fake.quotas == {ClientQuotaEntity("alice"): {"producer_byte_rate": "1000", "consumer_byte_rate": "2000"}}

    # Quotas first, then (a user without clients or defaults) the SCRAM credentials.
    rc, out, _ = boot(capsys, "--describe", "--user", "alice")
    assert (rc, out.splitlines()) == (0, [
        "Quota configs for user-principal 'alice' are consumer_byte_rate=2000.0, producer_byte_rate=1000.0",
        "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-256=iterations=8192, "
        "SCRAM-SHA-512=iterations=4096"])

    rc, out, _ = boot(capsys, "--alter", "--entity-type", "users", "--entity-name", "alice", "--entity-type",
                      "clients", "--entity-name", "app", "--add-config", "request_percentage=12.5")
    assert (rc, out) == (0, "Completed updating config for user alice.\n")
    assert [(e.entity_type, e.entity_name) for e in fake.api_calls(49)[-1][0].entries[0].entity] == [
        ("client-id", "app"), ("user", "alice")]  # a java.util.HashMap's order
    rc, out, _ = boot(capsys, "--alter", "--client-defaults", "--add-config", "producer_byte_rate=500")
    assert (rc, out) == (0, "Completed updating default config for clients in the cluster.\n")
    assert fake.quotas[ClientQuotaEntity(None, DEFAULT)] == {"producer_byte_rate": "500"}
    assert [(e.entity_type, e.entity_name) for e in fake.api_calls(49)[-1][0].entries[0].entity] == [
        ("client-id", None)]

    rc, out, _ = boot(capsys, "--describe", "--entity-type", "users", "--entity-name", "alice",
                      "--entity-type", "clients", "--entity-name", "app")
    assert (rc, out) == (0, "Quota configs for user-principal 'alice', client-id 'app' are request_percentage=12.5\n")
    rc, out, _ = boot(capsys, "--describe", "--entity-type", "clients")
    assert (rc, out) == (0, "Quota configs for the default client-id are producer_byte_rate=500.0\n")
    components = fake.api_calls(48)[-1][0].components
    assert [(c.entity_type, c.match_type, c.match) for c in components] == [("client-id", 2, None)]
    # A user name without a client: every client of that user (and no SCRAM lines: clients are named).
    rc, out, _ = boot(capsys, "--describe", "--entity-type", "users", "--entity-name", "alice",
                      "--entity-type", "clients")
    assert (rc, out) == (0, "Quota configs for user-principal 'alice', client-id 'app' are request_percentage=12.5\n")

    rc, out, _ = boot(capsys, "--alter", "--user", "alice", "--delete-config", "consumer_byte_rate")
    assert (rc, out) == (0, "Completed updating config for user alice.\n")
    assert fake.quotas[ClientQuotaEntity("alice")] == {"producer_byte_rate": "1000"}
    assert [(op.key, op.remove) for op in fake.api_calls(49)[-1][0].entries[0].ops] == [("consumer_byte_rate", True)]


def test_client_quota_errors(fake: ConfigsCluster, capsys: pytest.CaptureFixture[str]) -> None:
    calls = len(fake.calls)
    rc, out, err = boot(capsys, "--alter", "--client", "app", "--delete-config", "producer_byte_rate")
    assert (rc, out, err) == (1, "", "Invalid config(s): producer_byte_rate\n")
    assert fake.api_calls(49) == []
    rc, out, err = boot(capsys, "--alter", "--client", "app", "--add-config", "producer_byte_rate=fast")
    assert (rc, out, err) == (1, "", "Cannot parse quota configuration value for producer_byte_rate: fast\n")
    # The broker's refusal (a byte rate must be a whole number), as Kafka's ExecutionException.
    rc, out, err = boot(capsys, "--alter", "--client", "app", "--add-config", "producer_byte_rate=1.5")
    assert (rc, out) == (1, "")
    assert err.splitlines()[1] == ("java.util.concurrent.ExecutionException: org.apache.kafka.common.errors."
                                   "InvalidRequestException: Configuration producer_byte_rate must be a LONG value")
    # IP quotas are refused by Mafka's brokers, with their reason.
    rc, out, err = boot(capsys, "--describe", "--ip", "127.0.0.1")
    assert (rc, out) == (1, "")
    assert err.splitlines()[1].startswith("java.util.concurrent.ExecutionException: org.apache.kafka.common.errors."
                                          "UnsupportedVersionException: IP connection rate quotas")
    rc, _, err = boot(capsys, "--alter", "--client", "app", "--add-config", "SCRAM-SHA-256=[password=p]")
    assert (rc, err) == (1, "Only quota configs can be added for 'clients' using --bootstrap-server. "
                            "Unexpected config names: Set(SCRAM-SHA-256)\n")
    assert fake.quotas == {}
    assert {key for key, *_ in fake.calls[calls:]} <= {3, 48, 49}


def test_broker_loggers_are_not_implemented(fake: ConfigsCluster, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = boot(capsys, "--describe", "--broker-logger", "1")
    assert (rc, out) == (1, "")
    assert err.startswith("Broker logger configs (--entity-type broker-loggers) are not implemented in Mafka")
    assert [key for key, *_ in fake.calls if key not in (3,)] == []  # nothing but metadata was asked


# -- --zookeeper against an in-memory ZooKeeper -----------------------------------------------------


class FakeZkClient:
    """The KafkaZkClient calls ``mafka configs`` makes, over dicts (synchronous results)."""

    def __init__(self) -> None:
        self.configs: dict[tuple[str, str], dict[str, str]] = {("topics", "t"): {"retention.ms": "1000"},
                                                               ("topics", "u"): {}}
        self.topics = {"t", "u"}
        self.brokers = {1: object(), 2: object()}
        self.notifications: list[str] = []

    def topic_exists(self, topic: str) -> bool:
        return topic in self.topics

    def get_entity_config(self, entity_type: str, name: str) -> dict[str, str]:
        return dict(self.configs.get((entity_type, name), {}))

    def get_all_entities_with_config(self, entity_type: str) -> list[str]:
        """The children of ``/config/<entity_type>``: ``users/<u>/clients/<c>`` nodes have a parent ``users/<u>``."""
        root, _, below = entity_type.partition("/")
        prefix = f"{below}/" if below else ""
        return sorted({n[len(prefix):].split("/")[0] for t, n in self.configs if t == root and n.startswith(prefix)})

    def set_entity_config(self, entity_type: str, name: str, config: dict[str, str]) -> str:
        self.configs[(entity_type, name)] = dict(config)
        self.notifications.append(f"{entity_type}/{name}")
        return f"/config/changes/config_change_{len(self.notifications) - 1:010d}"

    def set_topic_config(self, topic: str, config: dict[str, str]) -> str:
        assert topic in self.topics
        return self.set_entity_config("topics", topic, config)

    def get_broker(self, broker_id: int) -> object | None:
        return self.brokers.get(broker_id)

    def get_all_brokers(self) -> dict[int, object]:
        return dict(self.brokers)


class FakeZkSession:
    client = FakeZkClient()
    connects: list[str] = []

    def __init__(self, connect: str, timeout: float = 30.0) -> None:
        FakeZkSession.connects.append(connect)

    def __enter__(self) -> FakeZkSession:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def call(self, fn: Any, *args: Any) -> Any:
        return fn(*args)


@pytest.fixture
def zk(monkeypatch: pytest.MonkeyPatch) -> FakeZkClient:
    import mafka.cli.zk_session

    FakeZkSession.client = FakeZkClient()
    monkeypatch.setattr(mafka.cli.zk_session, "ZkSession", FakeZkSession)
    return FakeZkSession.client


WARNING = ["Warning: --zookeeper is deprecated and will be removed in a future version of Kafka.",
           "Use --bootstrap-server instead to specify a broker to connect to."]


def zkrun(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str], str]:
    rc, out, err = run(capsys, "--zookeeper", "zk:2181", *argv)
    lines = out.splitlines()
    assert lines[:2] == WARNING
    return rc, lines[2:], err


def test_zookeeper_topic_alter_and_describe(zk: FakeZkClient, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = zkrun(capsys, "--alter", "--topic", "t", "--add-config", "max.message.bytes=2000,cleanup.policy=[compact,delete]")
    assert (rc, out, err) == (0, ["Completed updating config for entity: topic 't'."], "")
    assert zk.configs[("topics", "t")] == {"retention.ms": "1000", "max.message.bytes": "2000",
                                           "cleanup.policy": "compact,delete"}
    assert zk.notifications == ["topics/t"]
    rc, out, _ = zkrun(capsys, "--describe", "--topic", "t")
    assert (rc, out) == (0, ["Configs for topic 't' are cleanup.policy=compact,delete,max.message.bytes=2000,"
                             "retention.ms=1000"])
    rc, out, _ = zkrun(capsys, "--alter", "--entity-type", "topics", "--entity-name", "t",
                       "--delete-config", "retention.ms,max.message.bytes")
    assert rc == 0 and zk.configs[("topics", "t")] == {"cleanup.policy": "compact,delete"}
    rc, out, _ = zkrun(capsys, "--describe", "--entity-type", "topics")
    assert (rc, out) == (0, ["Configs for topic 't' are cleanup.policy=compact,delete", "Configs for topic 'u' are "])


def test_zookeeper_topic_errors(zk: FakeZkClient, capsys: pytest.CaptureFixture[str],
                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.argv", ["mafka", "configs", "--zookeeper", "zk:2181"])
    rc, out, err = zkrun(capsys, "--alter", "--topic", "nope", "--add-config", "retention.ms=5")
    assert (rc, out) == (1, [])
    assert err.splitlines() == ["Error while executing config command with args '--zookeeper zk:2181'",
                                "org.apache.kafka.common.errors.UnknownTopicOrPartitionException: "
                                "Topic 'nope' does not exist."]
    rc, out, err = zkrun(capsys, "--alter", "--topic", "t", "--add-config", "retention.ms=abc")
    assert (rc, out) == (1, [])
    assert err.splitlines()[1].startswith("org.apache.kafka.common.config.ConfigException: ")
    assert "retention.ms" in err.splitlines()[1]
    rc, _, err = zkrun(capsys, "--alter", "--topic", "t", "--add-config", "no.such.config=1")
    assert (rc, err) == (1, "Unknown topic config name: no.such.config\n")
    rc, _, err = zkrun(capsys, "--alter", "--topic", "t", "--delete-config", "retention.ms,segment.ms")
    assert (rc, err) == (1, "Invalid config(s): segment.ms\n")
    rc, _, err = zkrun(capsys, "--alter", "--topic", "bad name", "--add-config", "retention.ms=1")
    assert rc == 1 and err.splitlines()[1].startswith("org.apache.kafka.common.errors.InvalidTopicException: ")
    assert zk.configs[("topics", "t")] == {"retention.ms": "1000"} and zk.notifications == []


def test_zookeeper_brokers(zk: FakeZkClient, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = zkrun(capsys, "--alter", "--broker-defaults", "--add-config", "follower.replication.throttled.rate=100")
    assert (rc, out) == (0, ["Completed updating config for entity: default brokers."])
    assert zk.configs[("brokers", "<default>")] == {"follower.replication.throttled.rate": "100"}
    assert zk.notifications == ["brokers/<default>"]
    rc, out, _ = zkrun(capsys, "--alter", "--broker", "2", "--add-config", "leader.replication.throttled.rate=7")
    assert (rc, out) == (0, ["Completed updating config for entity: brokers '2'."])
    rc, out, _ = zkrun(capsys, "--describe", "--entity-type", "brokers")
    assert (rc, out) == (0, ["Configs for brokers '2' are leader.replication.throttled.rate=7",
                             "Configs for default brokers are follower.replication.throttled.rate=100"])
    rc, _, err = zkrun(capsys, "--alter", "--broker", "2", "--add-config", "log.retention.ms=5")
    assert (rc, err) == (1, "--bootstrap-server option must be specified to update broker configs "
                            "Set(log.retention.ms) when broker 2 is running. Broker configuration updates using "
                            "ZooKeeper are supported for bootstrapping before brokers are started to enable "
                            "encrypted password configs to be stored in ZooKeeper.\n")
    rc, _, err = zkrun(capsys, "--alter", "--broker-defaults", "--add-config", "log.retention.ms=5")
    assert rc == 1 and "for default cluster if any broker is running." in err
    rc, _, err = zkrun(capsys, "--alter", "--broker", "2", "--add-config", "leader.replication.throttled.rate=-1")
    assert rc == 1 and err.splitlines()[1] == ("org.apache.kafka.common.config.ConfigException: Invalid value -1 for "
                                               "configuration leader.replication.throttled.rate: Value must be at least 0")


def test_zookeeper_scram(zk: FakeZkClient, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = zkrun(capsys, "--alter", "--user", "bob@example.com", "--add-config",
                       "SCRAM-SHA-256=[iterations=5000,password=bob-secret]")
    assert (rc, out) == (0, ["Completed updating config for entity: user-principal 'bob@example.com'."])
    assert zk.notifications == ["users/bob%40example.com"]
    stored = zk.configs[("users", "bob%40example.com")]["SCRAM-SHA-256"]
    credential = credential_from_string(stored)
    assert credential.iterations == 5000 and credential.salt.isalnum()
    assert credential.stored_key == _stored_key("SCRAM-SHA-256", "bob-secret", credential.salt, 5000)
    rc, out, _ = zkrun(capsys, "--describe", "--entity-type", "users")
    assert rc == 0 and out == [f"Configs for user-principal 'bob@example.com' are SCRAM-SHA-256={stored}"]
    rc, _, err = zkrun(capsys, "--alter", "--user", "bob", "--add-config", "SCRAM-SHA-512=[iterations=10,password=p]")
    assert (rc, err) == (1, "Iterations 10 is less than the minimum 4096 required for SCRAM_SHA_512\n")
    # DynamicConfig.User.validate's require(): Scala prefixes the message.
    rc, _, err = zkrun(capsys, "--alter", "--user", "bob", "--add-config", "foo=1")
    assert (rc, err) == (1, "requirement failed: Unknown Dynamic Configuration: Set(foo).\n")


def test_zookeeper_client_quotas(zk: FakeZkClient, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = zkrun(capsys, "--alter", "--user", "bob", "--add-config", "producer_byte_rate=10")
    assert (rc, out) == (0, ["Completed updating config for entity: user-principal 'bob'."])
    rc, out, _ = zkrun(capsys, "--alter", "--entity-type", "clients", "--entity-name", "app", "--entity-type",
                       "users", "--entity-default", "--add-config", "consumer_byte_rate=20,request_percentage=5.5")
    assert (rc, out) == (0, ["Completed updating config for entity: default user-principal, client-id 'app'."])
    rc, out, _ = zkrun(capsys, "--alter", "--client", "my app", "--add-config", "producer_byte_rate=30")
    assert (rc, out) == (0, ["Completed updating config for entity: client-id 'my app'."])
    assert zk.notifications == ["users/bob", "users/<default>/clients/app", "clients/my%20app"]
    assert zk.configs[("users", "<default>/clients/app")] == {"consumer_byte_rate": "20", "request_percentage": "5.5"}

    rc, out, _ = zkrun(capsys, "--describe", "--entity-type", "users", "--entity-type", "clients")
    assert (rc, out) == (0, ["Configs for default user-principal, client-id 'app' are "
                             "request_percentage=5.5,consumer_byte_rate=20"])  # java.util.Properties' order
    rc, out, _ = zkrun(capsys, "--describe", "--entity-type", "clients")
    assert (rc, out) == (0, ["Configs for client-id 'my app' are producer_byte_rate=30"])
    rc, out, _ = zkrun(capsys, "--describe", "--entity-type", "users")
    assert (rc, out) == (0, ["Configs for user-principal 'bob' are producer_byte_rate=10"])
    rc, out, _ = zkrun(capsys, "--alter", "--user", "bob", "--delete-config", "producer_byte_rate")
    assert rc == 0 and zk.configs[("users", "bob")] == {}

    rc, _, err = zkrun(capsys, "--alter", "--client", "app", "--add-config", "producer_byte_rate=fast")
    assert rc == 1 and err.splitlines()[1] == ("org.apache.kafka.common.config.ConfigException: Invalid value fast "
                                               "for configuration producer_byte_rate: Not a number of type LONG")
    # A (user, client-id) pair holds client configs only (DynamicConfig.Client.validate).
    rc, _, err = zkrun(capsys, "--alter", "--user", "bob", "--client", "app", "--add-config",
                       "SCRAM-SHA-256=[password=p]")
    assert (rc, err) == (1, "requirement failed: Unknown Dynamic Configuration: Set(SCRAM-SHA-256).\n")
    rc, _, err = zkrun(capsys, "--describe", "--ip", "127.0.0.1")
    assert rc == 1 and err.startswith("IP connection rate quotas")
    assert len(zk.notifications) == 4
