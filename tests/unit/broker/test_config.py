"""BrokerConfig: Kafka 2.8 server.properties names/defaults, Java properties syntax, cp-kafka env rule."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import pytest

from mafka.broker.config import (
    CONFIG_KEYS,
    LOG_CONFIG_SYNONYMS,
    BrokerConfig,
    env_overrides,
    env_var_to_key,
    key_to_env_var,
    load_properties,
    parse_override,
    parse_properties,
)
from mafka.endpoint import Endpoint
from mafka.errors import ConfigError
from mafka.log.config import LONG_MAX, TOPIC_CONFIG_NAMES, LogConfig

ZK = {"zookeeper.connect": "zk1:2181,zk2:2181/kafka"}


def cfg(**props: str) -> BrokerConfig:
    """A config from Kafka-named properties given as keyword arguments with ``_`` for ``.``."""
    return BrokerConfig.from_properties({**ZK, **{k.replace("_", "."): v for k, v in props.items()}})


# ============================================================ defaults


def test_kafka_28_defaults():
    c = BrokerConfig.from_properties(ZK)
    assert c.broker_id == -1 and c.reserved_broker_max_id == 1000
    assert c.zookeeper_session_timeout_ms == 18000
    assert c.zookeeper_connection_timeout_ms is None and c.effective_zookeeper_connection_timeout_ms == 18000
    assert c.listeners is None and c.advertised_listeners is None
    assert c.listener_endpoints == (Endpoint("PLAINTEXT", "PLAINTEXT", None, 9092),)
    assert c.listener_security_protocol_map == "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"
    assert c.effective_log_dirs == ("/tmp/kafka-logs",)
    assert (c.num_partitions, c.default_replication_factor, c.min_insync_replicas) == (1, 1, 1)
    assert c.auto_create_topics_enable is True and c.delete_topic_enable is True
    assert c.unclean_leader_election_enable is False
    assert (c.offsets_topic_replication_factor, c.offsets_topic_num_partitions, c.offsets_retention_minutes) == (3, 50, 10080)
    assert (c.transaction_state_log_replication_factor, c.transaction_state_log_num_partitions) == (3, 50)
    assert (c.transaction_state_log_min_isr, c.transaction_state_log_segment_bytes) == (2, 104857600)
    assert c.transactional_id_expiration_ms == 604800000 and c.transaction_max_timeout_ms == 900000
    assert (c.group_initial_rebalance_delay_ms, c.group_min_session_timeout_ms, c.group_max_session_timeout_ms) == (3000, 6000, 1800000)
    assert (c.socket_request_max_bytes, c.connections_max_idle_ms, c.message_max_bytes) == (104857600, 600000, 1048588)
    assert (c.socket_send_buffer_bytes, c.socket_receive_buffer_bytes) == (102400, 102400)
    assert (c.num_network_threads, c.num_io_threads, c.queued_max_requests) == (3, 8, 500)
    assert (c.replica_lag_time_max_ms, c.replica_fetch_max_bytes, c.replica_fetch_wait_max_ms) == (30000, 1048576, 500)
    assert (c.replica_fetch_min_bytes, c.replica_fetch_response_max_bytes, c.replica_fetch_backoff_ms) == (1, 10485760, 1000)
    assert (c.num_replica_fetchers, c.request_timeout_ms) == (1, 30000)
    assert (c.controlled_shutdown_enable, c.controlled_shutdown_max_retries, c.controlled_shutdown_retry_backoff_ms) == (True, 3, 5000)
    assert c.auto_leader_rebalance_enable is True
    assert (c.leader_imbalance_per_broker_percentage, c.leader_imbalance_check_interval_seconds) == (10, 300)
    assert (c.log_retention_hours, c.effective_log_retention_ms, c.log_retention_bytes) == (168, 604800000, -1)
    assert (c.log_segment_bytes, c.log_roll_hours, c.effective_log_roll_ms) == (1073741824, 168, 604800000)
    assert (c.log_index_interval_bytes, c.log_index_size_max_bytes) == (4096, 10485760)
    assert (c.log_cleanup_policy, c.log_retention_check_interval_ms) == (("delete",), 300000)
    assert (c.log_flush_interval_messages, c.effective_log_flush_interval_ms) == (LONG_MAX, LONG_MAX)
    assert (c.log_cleaner_enable, c.log_cleaner_threads, c.log_cleaner_dedupe_buffer_size) == (True, 1, 134217728)
    assert (c.log_cleaner_min_cleanable_ratio, c.log_cleaner_delete_retention_ms) == (0.5, 86400000)
    assert (c.log_message_timestamp_type, c.compression_type, c.broker_rack) == ("CreateTime", "producer", None)


def test_attribute_is_the_kafka_key_with_dots_as_underscores():
    assert len(CONFIG_KEYS) > 120
    for name, spec in CONFIG_KEYS.items():
        if name == "zookeeper.clientCnxnSocket":
            assert spec.attr == "zookeeper_client_cnxn_socket"
        else:
            assert spec.attr == name.replace(".", "_"), name
        assert spec.type in {"SHORT", "INT", "LONG", "DOUBLE", "BOOLEAN", "STRING", "LIST"}


def test_direct_construction_needs_no_zookeeper_but_loading_does():
    assert BrokerConfig(broker_id=3).broker_id == 3
    with pytest.raises(ConfigError, match='Missing required configuration "zookeeper.connect"') as e:
        BrokerConfig.from_properties({"broker.id": "1"})
    assert e.value.key == "zookeeper.connect"
    assert BrokerConfig.from_properties({}, require_zookeeper=False).zookeeper_connect is None


# ============================================================ Java properties syntax


def test_properties_separators_comments_and_blanks():
    text = (
        "# a comment\n"
        "   ! another, indented\n"
        "\n"
        "   \t\n"
        "a=1\n"
        "b : 2\n"
        "c 3\n"
        "  d\t=\t4  \n"  # leading blanks skipped, trailing ones kept in the value
        "e=\n"
        "f\n"
        "g==5\n"
        "h:=6\n"
        "i = x = y\n"
    )
    assert parse_properties(text) == {
        "a": "1", "b": "2", "c": "3", "d": "4  ", "e": "", "f": "", "g": "=5", "h": "=6", "i": "x = y",
    }


def test_properties_continuations():
    text = (
        "listeners=PLAINTEXT://a:9092,\\\n"
        "          PLAINTEXT_HOST://b:9093\n"  # the continuation's leading blanks go
        "x = one \\\n"
        "#two\n"  # a continuation line is never a comment
        "# c=\\\n"
        "y=3\n"  # a comment's trailing backslash does not continue it
        "even=ends with \\\\\n"
        "z=4\n"
        "last=eof \\"  # a continuation at end of file
    )
    assert parse_properties(text) == {
        "listeners": "PLAINTEXT://a:9092,PLAINTEXT_HOST://b:9093",
        "x": "one #two",
        "y": "3",
        "even": "ends with \\",
        "z": "4",
        "last": "eof ",
    }


def test_properties_escapes_and_line_ends():
    text = "k\\=ey\\:x\\ y=v\\tw\\nz\r\nuni=caf\\u00e9 \\uD83D\\uDE00\rplain\\q=a\\qb\rdup=1\ndup=2"
    assert parse_properties(text) == {
        "k=ey:x y": "v\tw\nz",
        "uni": "café \U0001f600",
        "plainq": "aqb",
        "dup": "2",
    }


def test_properties_continuation_across_crlf():
    assert parse_properties("a=1,\\\r\n   2\r\nb=3") == {"a": "1,2", "b": "3"}


def test_malformed_unicode_escape_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="Malformed"):
        parse_properties("a=\\u12g4\n")
    p = tmp_path / "server.properties"
    p.write_bytes(b"a=\\u12\n")
    with pytest.raises(ConfigError, match="server.properties"):
        load_properties(p)


def test_file_is_iso_8859_1(tmp_path):
    p = tmp_path / "server.properties"
    p.write_bytes(b"broker.rack=r\xe9gion\n")
    assert load_properties(p) == {"broker.rack": "r\u00e9gion"}


# ============================================================ environment rule


@pytest.mark.parametrize(
    "var, key",
    [
        ("KAFKA_ADVERTISED_LISTENERS", "advertised.listeners"),
        ("KAFKA_BROKER_ID", "broker.id"),
        ("KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR", "offsets.topic.replication.factor"),
        ("KAFKA_WITH__UNDERSCORE", "with_underscore"),
        ("KAFKA_WITH__UNDERSCORE_AND_MORE", "with_underscore.and.more"),
        ("KAFKA_WITH___DASH", "with-dash"),
        ("KAFKA_WITH___DASH_AND_MORE", "with-dash.and.more"),
        ("KAFKA_LISTENER_NAME_INTERNAL_SSL_KEY___PASSWORD", "listener.name.internal.ssl.key-password"),
        ("KAFKA_FOO", "foo"),
    ],
)
def test_env_rule_examples(var, key):
    # The examples of confluent-docker-utils' own test_env_to_props, plus Kafka keys.
    assert env_var_to_key(var) == key


@pytest.mark.parametrize(
    "var",
    ["KAFKA_HEAP_OPTS", "KAFKA_OPTS", "KAFKA_JVM_PERFORMANCE_OPTS", "KAFKA_LOG4J_OPTS", "KAFKA_GC_LOG_OPTS",
     "KAFKA_JMX_OPTS", "KAFKA_JMX_PORT", "KAFKA_JMX_HOSTNAME", "KAFKA_LOG4J_ROOT_LOGLEVEL", "KAFKA_VERSION",
     "KAFKA_", "ZOOKEEPER_CLIENT_PORT", "kafka_broker_id"],
)
def test_launcher_and_foreign_variables_are_not_configs(var):
    assert env_var_to_key(var) is None


@pytest.mark.parametrize("key", ["advertised.listeners", "log.dirs", "a_b.c", "x-y.z", "listener.name.sasl_ssl.plain.sasl-jaas"])
def test_key_to_env_var_round_trips(key):
    assert env_var_to_key(key_to_env_var(key)) == key


def test_key_to_env_var_examples():
    assert key_to_env_var("inter.broker.listener.name") == "KAFKA_INTER_BROKER_LISTENER_NAME"
    assert key_to_env_var("a_b") == "KAFKA_A__B" and key_to_env_var("a-b") == "KAFKA_A___B"


def test_cp_kafka_compose_environment():
    env = {
        "KAFKA_BROKER_ID": "2",
        "KAFKA_ZOOKEEPER_CONNECT": "zk1:2181",
        "KAFKA_LISTENERS": "PLAINTEXT://:19092,PLAINTEXT_HOST://:9092",
        "KAFKA_ADVERTISED_LISTENERS": "PLAINTEXT://kafka1:19092,PLAINTEXT_HOST://localhost:9092",
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "PLAINTEXT:PLAINTEXT,PLAINTEXT_HOST:PLAINTEXT",
        "KAFKA_INTER_BROKER_LISTENER_NAME": "PLAINTEXT",
        "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
        "KAFKA_HEAP_OPTS": "-Xmx1G",
        "KAFKA_JMX_PORT": "9101",
        "PATH": "/usr/bin",
    }
    c = BrokerConfig.from_file(None, env=env)
    assert (c.broker_id, c.zookeeper_connect, c.offsets_topic_replication_factor) == (2, "zk1:2181", 1)
    assert c.listener_endpoints == (
        Endpoint("PLAINTEXT", "PLAINTEXT", None, 19092),
        Endpoint("PLAINTEXT_HOST", "PLAINTEXT", None, 9092),
    )
    assert [e.connection_string for e in c.advertised_endpoints] == [
        "PLAINTEXT://kafka1:19092",
        "PLAINTEXT_HOST://localhost:9092",
    ]
    assert c.inter_broker_endpoint == Endpoint("PLAINTEXT", "PLAINTEXT", "kafka1", 19092)
    assert c.unknown == {}  # KAFKA_HEAP_OPTS / KAFKA_JMX_PORT were not taken as configs
    assert c.sources["broker.id"] == "environment variable KAFKA_BROKER_ID"


def test_env_overrides_are_deterministic_when_two_variables_name_one_key():
    # Names are lower-cased, so these two set the same key; the later in sorted order wins.
    for env in ({"KAFKA_LOG_DIRS": "/upper", "KAFKA_LOG_dirs": "/lower"}, {"KAFKA_LOG_dirs": "/lower", "KAFKA_LOG_DIRS": "/upper"}):
        assert env_overrides(env) == {"log.dirs": ("/lower", "KAFKA_LOG_dirs")}


# ============================================================ precedence and sources


def test_precedence_file_then_env_then_overrides(tmp_path):
    p = tmp_path / "server.properties"
    p.write_text("zookeeper.connect=zk:2181\nbroker.id=1\nnum.partitions=2\nlog.dirs=/from/file\n")
    env = {"KAFKA_NUM_PARTITIONS": "3", "KAFKA_LOG_DIRS": "/from/env"}
    c = BrokerConfig.from_file(p, env=env, overrides=["log.dirs=/from/set", "broker.rack=r=1"])
    assert c.broker_id == 1  # file only
    assert c.num_partitions == 3  # env beats file
    assert c.effective_log_dirs == ("/from/set",)  # override beats env
    assert c.broker_rack == "r=1"  # split at the first '='
    assert c.sources == {
        "zookeeper.connect": str(p),
        "broker.id": str(p),
        "num.partitions": "environment variable KAFKA_NUM_PARTITIONS",
        "log.dirs": "--set override",
        "broker.rack": "--set override",
    }
    assert BrokerConfig.from_file(p, env={}, overrides={"num.partitions": 7}).num_partitions == 7
    assert BrokerConfig.from_file(p, env=None).num_partitions == 2


def test_parse_override_requires_key_value():
    assert parse_override("a.b= c ") == ("a.b", " c ")
    for bad in ("novalue", "=x"):
        with pytest.raises(ConfigError, match="key=value"):
            parse_override(bad)


def test_error_names_key_value_and_source(tmp_path):
    p = tmp_path / "server.properties"
    p.write_text("zookeeper.connect=zk:2181\nnum.partitions=many\n")
    with pytest.raises(ConfigError) as e:
        BrokerConfig.from_file(p, env={})
    assert e.value.key == "num.partitions"
    assert str(e.value) == f"Invalid value many for configuration num.partitions: Not a number of type INT (set by {p})"
    with pytest.raises(ConfigError, match="set by environment variable KAFKA_NUM_PARTITIONS") as e:
        BrokerConfig.from_file(None, env={**{"KAFKA_ZOOKEEPER_CONNECT": "zk"}, "KAFKA_NUM_PARTITIONS": "0"})
    assert "Value must be at least 1" in str(e.value)


# ============================================================ unknown keys


def test_unknown_key_warns_and_is_kept(caplog):
    with caplog.at_level(logging.WARNING, logger="mafka.broker.config"):
        c = BrokerConfig.from_properties({**ZK, "no.such.config": "x", "ssl.keystore.password": "secret"})
    warnings = [r.getMessage() for r in caplog.records]
    assert warnings == ["The configuration 'no.such.config' was supplied but isn't a known config."]
    assert c.unknown == {"no.such.config": "x", "ssl.keystore.password": "secret"}
    assert c.get("no.such.config") == "x" and c.get("num.partitions") == 1
    shown = c.to_properties()
    assert shown["no.such.config"] == "x" and shown["ssl.keystore.password"] == "[hidden]"
    with pytest.raises(KeyError):
        c.get("never.supplied")


def test_unknown_key_from_env_names_its_variable(caplog):
    with caplog.at_level(logging.WARNING, logger="mafka.broker.config"):
        BrokerConfig.from_file(None, env={"KAFKA_ZOOKEEPER_CONNECT": "zk", "KAFKA_CLUSTERS_0_NAME": "local"})
    assert "'clusters.0.name'" in caplog.text and "KAFKA_CLUSTERS_0_NAME" in caplog.text


# ============================================================ type conversion and validation


@pytest.mark.parametrize(
    "props, key",
    [
        ({"num.partitions": "1_000"}, "num.partitions"),
        ({"num.partitions": "2147483648"}, "num.partitions"),
        ({"num.partitions": "0"}, "num.partitions"),
        ({"offsets.topic.replication.factor": "40000"}, "offsets.topic.replication.factor"),
        ({"auto.create.topics.enable": "yes"}, "auto.create.topics.enable"),
        ({"log.cleaner.min.cleanable.ratio": "half"}, "log.cleaner.min.cleanable.ratio"),
        ({"log.cleanup.policy": "delete,shred"}, "log.cleanup.policy"),
        ({"log.cleanup.policy": ""}, "log.cleanup.policy"),
        ({"log.message.timestamp.type": "createtime"}, "log.message.timestamp.type"),
        ({"compression.type": "brotli"}, "compression.type"),
        ({"security.inter.broker.protocol": "TLS"}, "security.inter.broker.protocol"),
        ({"broker.id": "1001"}, "broker.id"),
        ({"broker.id": "-2"}, "broker.id"),
        ({"broker.id.generation.enable": "false"}, "broker.id"),  # then broker.id -1 is not allowed
        ({"log.dirs": " , "}, "log.dirs"),
        ({"log.retention.ms": "0"}, "log.retention.ms"),
        ({"log.retention.minutes": "0"}, "log.retention.minutes"),
        ({"log.roll.ms": "0"}, "log.roll.ms"),
        ({"replica.fetch.wait.max.ms": "40000"}, "replica.fetch.wait.max.ms"),
        ({"offsets.commit.required.acks": "5"}, "offsets.commit.required.acks"),
        ({"log.cleaner.dedupe.buffer.size": "1048576"}, "log.cleaner.dedupe.buffer.size"),
        ({"max.connections.per.ip": "0"}, "max.connections.per.ip"),
        ({"queued.max.request.bytes": "10"}, "queued.max.request.bytes"),
        ({"connections.max.idle.ms": "50"}, "connection.failed.authentication.delay.ms"),
    ],
)
def test_invalid_values_raise_naming_the_key(props, key):
    with pytest.raises(ConfigError) as e:
        BrokerConfig.from_properties({**ZK, **props})
    assert e.value.key == key
    assert key in str(e.value)


def test_values_are_trimmed_and_converted_like_configdef():
    c = cfg(
        num_partitions="  +4 ",
        auto_create_topics_enable="FALSE",
        log_cleaner_min_cleanable_ratio=" 0.25 ",
        log_cleaner_io_max_bytes_per_second="1e6",
        log_cleanup_policy=" compact ,  delete ",
        compression_type="LZ4",
        metric_reporters="",
        broker_rack=" rack-1 ",
    )
    assert c.num_partitions == 4 and c.auto_create_topics_enable is False
    assert c.log_cleaner_min_cleanable_ratio == 0.25 and c.log_cleaner_io_max_bytes_per_second == 1e6
    assert c.log_cleanup_policy == ("compact", "delete")
    assert c.compression_type == "lz4" and c.metric_reporters == () and c.broker_rack == "rack-1"


def test_python_values_are_accepted_for_overrides():
    c = BrokerConfig.from_properties({**ZK, "num.partitions": 6, "log.preallocate": True, "log.cleanup.policy": ["compact"]})
    assert (c.num_partitions, c.log_preallocate, c.log_cleanup_policy) == (6, True, ("compact",))


def test_replace_revalidates():
    c = BrokerConfig.from_properties(ZK)
    assert replace(c, num_partitions=4).num_partitions == 4
    with pytest.raises(ConfigError, match="num.partitions"):
        replace(c, num_partitions=0)


def test_fallbacks():
    c = cfg(zookeeper_connection_timeout_ms="6000", log_dir="/one", log_roll_jitter_hours="1", log_flush_interval_ms="1000")
    assert c.effective_zookeeper_connection_timeout_ms == 6000
    assert c.effective_log_dirs == ("/one",)
    assert cfg(log_dir="/one", log_dirs="/a, /b ,/c").effective_log_dirs == ("/a", "/b", "/c")
    assert c.effective_log_roll_jitter_ms == 3_600_000 and cfg(log_roll_jitter_ms="5").effective_log_roll_jitter_ms == 5
    assert c.effective_log_flush_interval_ms == 1000
    assert cfg(log_roll_hours="2").effective_log_roll_ms == 7_200_000
    assert cfg(log_roll_hours="2", log_roll_ms="1234").effective_log_roll_ms == 1234


@pytest.mark.parametrize(
    "props, expected",
    [
        ({}, 168 * 3_600_000),
        ({"log.retention.hours": "1"}, 3_600_000),
        ({"log.retention.hours": "1", "log.retention.minutes": "5"}, 300_000),
        ({"log.retention.hours": "1", "log.retention.minutes": "5", "log.retention.ms": "42"}, 42),
        ({"log.retention.ms": "42", "log.retention.hours": "1"}, 42),
        ({"log.retention.hours": "-1"}, -1),
        ({"log.retention.minutes": "-5", "log.retention.hours": "1"}, -1),
        ({"log.retention.ms": "-1", "log.retention.minutes": "5"}, -1),
    ],
)
def test_retention_precedence_ms_minutes_hours(props, expected):
    assert BrokerConfig.from_properties({**ZK, **props}).effective_log_retention_ms == expected


# ============================================================ listeners


def test_listeners_with_protocol_map_ipv6_and_empty_host():
    c = cfg(
        listeners="internal://:9092, external://[::1]:9093,ssl://host.example:9094",
        listener_security_protocol_map="INTERNAL:PLAINTEXT,EXTERNAL:SASL_PLAINTEXT,SSL:SSL",
        inter_broker_listener_name="internal",
    )
    assert c.listener_endpoints == (
        Endpoint("INTERNAL", "PLAINTEXT", None, 9092),
        Endpoint("EXTERNAL", "SASL_PLAINTEXT", "::1", 9093),
        Endpoint("SSL", "SSL", "host.example", 9094),
    )
    assert c.listener_endpoints[1].connection_string == "EXTERNAL://[::1]:9093"
    # advertised defaults to listeners; an empty host is advertised as localhost
    assert [e.host for e in c.advertised_endpoints] == ["localhost", "::1", "host.example"]
    assert c.inter_broker_listener == "INTERNAL"
    assert c.inter_broker_endpoint.port == 9092


def test_deprecated_host_name_port_and_advertised_host_name():
    c = cfg(port="9999", host_name="0.0.0.0", advertised_host_name="broker1")
    assert c.listener_endpoints == (Endpoint("PLAINTEXT", "PLAINTEXT", "0.0.0.0", 9999),)
    assert c.advertised_endpoints == (Endpoint("PLAINTEXT", "PLAINTEXT", "broker1", 9999),)


@pytest.mark.parametrize(
    "props, key, message",
    [
        ({"listeners": "PLAINTEXT://:9092,PLAINTEXT://:9093"}, "listeners", "different name"),
        ({"listeners": "PLAINTEXT://:9092,SSL://:9092"}, "listeners", "different port"),
        ({"listeners": "PLAINTEXT:9092"}, "listeners", "Unable to parse"),
        ({"listeners": "PLAINTEXT://:99999"}, "listeners", "0..65535"),
        ({"listeners": "CLIENT://:9092"}, "listeners", "No security protocol defined for listener CLIENT"),
        ({"listeners": "PLAINTEXT://0.0.0.0:9092"}, "advertised.listeners", "0.0.0.0"),
        ({"listeners": "SSL://:9093"}, "security.inter.broker.protocol", "must be a listener name"),
        (
            {"listeners": "PLAINTEXT://:9092", "advertised.listeners": "PLAINTEXT://a:9092,SSL://a:9093"},
            "advertised.listeners",
            "subset",
        ),
        ({"inter.broker.listener.name": "OTHER"}, "inter.broker.listener.name", "not found"),
        (
            {"inter.broker.listener.name": "PLAINTEXT", "security.inter.broker.protocol": "PLAINTEXT"},
            "inter.broker.listener.name",
            "Only one of",
        ),
        ({"listener.security.protocol.map": "PLAINTEXT"}, "listener.security.protocol.map", "key:value"),
        ({"listener.security.protocol.map": "PLAINTEXT:TLS"}, "listener.security.protocol.map", "TLS"),
        ({"control.plane.listener.name": "PLAINTEXT"}, "control.plane.listener.name", "different value"),
    ],
)
def test_listener_errors(props, key, message):
    with pytest.raises(ConfigError, match=message) as e:
        BrokerConfig.from_properties({**ZK, **props})
    assert e.value.key == key


def test_advertised_listeners_may_share_ports_and_name_a_subset():
    c = cfg(
        listeners="PLAINTEXT://:9092,PLAINTEXT_HOST://:9093",
        advertised_listeners="PLAINTEXT://kafka:9092",
        listener_security_protocol_map="PLAINTEXT:PLAINTEXT,PLAINTEXT_HOST:PLAINTEXT",
    )
    assert c.advertised_endpoints == (Endpoint("PLAINTEXT", "PLAINTEXT", "kafka", 9092),)


# ============================================================ log config and display


def test_log_config_maps_broker_log_keys():
    c = cfg(
        log_segment_bytes="1048576",
        log_roll_hours="1",
        log_roll_jitter_ms="7",
        log_retention_minutes="10",
        log_retention_bytes="5000",
        log_cleanup_policy="compact,delete",
        log_index_interval_bytes="100",
        log_index_size_max_bytes="8192",
        log_flush_interval_messages="10",
        log_flush_scheduler_interval_ms="2000",
        message_max_bytes="2000000",
        log_cleaner_delete_retention_ms="11",
        log_cleaner_min_compaction_lag_ms="12",
        log_cleaner_max_compaction_lag_ms="13",
        log_cleaner_min_cleanable_ratio="0.75",
        log_segment_delete_delay_ms="14",
        log_message_timestamp_type="LogAppendTime",
        log_message_timestamp_difference_max_ms="15",
        log_preallocate="true",
    )
    lc = c.log_config()
    assert isinstance(lc, LogConfig)
    assert (lc.segment_bytes, lc.segment_ms, lc.segment_jitter_ms) == (1048576, 3_600_000, 7)
    assert (lc.retention_ms, lc.retention_bytes, lc.cleanup_policy) == (600_000, 5000, ("compact", "delete"))
    assert (lc.index_interval_bytes, lc.segment_index_bytes) == (100, 8192)
    assert (lc.flush_messages, lc.flush_ms, lc.max_message_bytes) == (10, 2000, 2000000)
    assert (lc.delete_retention_ms, lc.min_compaction_lag_ms, lc.max_compaction_lag_ms) == (11, 12, 13)
    assert (lc.min_cleanable_dirty_ratio, lc.file_delete_delay_ms) == (0.75, 14)
    assert (lc.message_timestamp_type, lc.message_timestamp_difference_max_ms, lc.preallocate) == ("LogAppendTime", 15, True)
    # topic overrides go on top
    topic = LogConfig.from_properties({"retention.ms": "99"}, base=lc)
    assert topic.retention_ms == 99 and topic.segment_bytes == 1048576


def test_default_log_config_is_kafkas():
    assert BrokerConfig().log_config() == LogConfig()


def test_every_log_config_field_has_a_broker_synonym():
    assert set(TOPIC_CONFIG_NAMES) <= set(LOG_CONFIG_SYNONYMS)
    assert set(LOG_CONFIG_SYNONYMS.values()) <= set(CONFIG_KEYS)


def test_to_properties(tmp_path):
    c = cfg(broker_id="4", log_cleanup_policy="compact,delete", unclean_leader_election_enable="true")
    full = c.to_properties()
    assert full["broker.id"] == "4" and full["num.partitions"] == "1"
    assert full["log.cleanup.policy"] == "compact,delete" and full["unclean.leader.election.enable"] == "true"
    assert "log.retention.ms" not in full  # null
    assert list(full) == sorted(full)
    assert c.to_properties(include_defaults=False) == {
        "broker.id": "4",
        "log.cleanup.policy": "compact,delete",
        "unclean.leader.election.enable": "true",
        "zookeeper.connect": ZK["zookeeper.connect"],
    }
    assert repr(c).startswith("BrokerConfig(broker.id='4'")
    # the rendered properties load back to an equal config
    p = tmp_path / "round.properties"
    p.write_text("".join(f"{k}={v}\n" for k, v in full.items()))
    assert BrokerConfig.from_file(p, env={}) == c


def test_shipped_server_properties_sample(tmp_path):
    p = tmp_path / "server.properties"
    p.write_text(
        "############################# Server Basics #############################\n"
        "broker.id=0\n"
        "#listeners=PLAINTEXT://:9092\n"
        "num.network.threads=3\nnum.io.threads=8\n"
        "socket.send.buffer.bytes=102400\nsocket.receive.buffer.bytes=102400\nsocket.request.max.bytes=104857600\n"
        "log.dirs=/tmp/kafka-logs\nnum.partitions=1\nnum.recovery.threads.per.data.dir=1\n"
        "offsets.topic.replication.factor=1\ntransaction.state.log.replication.factor=1\n"
        "transaction.state.log.min.isr=1\n"
        "log.retention.hours=168\nlog.segment.bytes=1073741824\nlog.retention.check.interval.ms=300000\n"
        "zookeeper.connect=localhost:2181\nzookeeper.connection.timeout.ms=18000\n"
        "group.initial.rebalance.delay.ms=0\n"
    )
    c = BrokerConfig.from_file(p, env={})
    assert (c.broker_id, c.offsets_topic_replication_factor, c.group_initial_rebalance_delay_ms) == (0, 1, 0)
    assert c.unknown == {} and Path(c.effective_log_dirs[0]) == Path("/tmp/kafka-logs")
