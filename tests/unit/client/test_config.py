"""Client configuration: confluent-kafka/librdkafka names, aliases, types, defaults, rules."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from mafka.client import config as config_module
from mafka.client.config import (
    INERT_KEYS,
    PROPERTIES,
    ClientConfig,
    ConfigError,
    parse_config,
)

BOOT = {"bootstrap.servers": "127.0.0.1:9092"}


def producer(**conf: Any) -> ClientConfig:
    return parse_config("producer", {**BOOT, **conf})


def consumer(**conf: Any) -> ClientConfig:
    return parse_config("consumer", {**BOOT, **conf})


def refused(role: str, conf: dict[str, Any]) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_config(role, {**BOOT, **conf})
    return info.value


# -- defaults ----------------------------------------------------------------------------------

COMMON_DEFAULTS = {
    "client.id": "mafka-python",
    "socket.timeout.ms": 60000,
    "socket.connection.setup.timeout.ms": 30000,
    "metadata.max.age.ms": 900000,
    "topic.metadata.refresh.interval.ms": 300000,
    "reconnect.backoff.ms": 100,
    "reconnect.backoff.max.ms": 10000,
    "retry.backoff.ms": 100,
    "retry.backoff.max.ms": 1000,
    "request.timeout.ms": 30000,
    "api.version.request": True,
    "security.protocol": "plaintext",
    "message.max.bytes": 1000000,
    "debug": None,
    "log_level": 6,
    "statistics.interval.ms": 0,
    "client.rack": None,
    "error_cb": None,
    "stats_cb": None,
    "throttle_cb": None,
    "oauth_cb": None,
    "logger": None,
}

PRODUCER_DEFAULTS = {
    "acks": -1,
    "enable.idempotence": True,
    "compression.type": "none",
    "batch.size": 1000000,
    "batch.num.messages": 10000,
    "linger.ms": 5.0,
    "queue.buffering.max.messages": 100000,
    "queue.buffering.max.kbytes": 1048576,
    "message.max.bytes": 1000000,
    "delivery.timeout.ms": 300000,
    "retries": 2147483647,
    "max.in.flight.requests.per.connection": 5,  # idempotence on: min(1000000, 5)
    "partitioner": "murmur2_random",
    "on_delivery": None,
    "delivery.report.only.error": False,
    "transactional.id": None,
    "allow.auto.create.topics": True,
    "sticky.partitioning.linger.ms": 10,
}

CONSUMER_DEFAULTS = {
    "group.id": None,
    "group.instance.id": None,
    "session.timeout.ms": 45000,
    "heartbeat.interval.ms": 3000,
    "max.poll.interval.ms": 300000,
    "partition.assignment.strategy": ("range", "roundrobin"),
    "enable.auto.commit": True,
    "auto.commit.interval.ms": 5000,
    "enable.auto.offset.store": True,
    "auto.offset.reset": "latest",
    "isolation.level": "read_committed",
    "fetch.wait.max.ms": 500,
    "fetch.min.bytes": 1,
    "fetch.max.bytes": 52428800,
    "max.partition.fetch.bytes": 1048576,
    "queued.max.messages.kbytes": 65536,
    "queued.min.messages": 100000,
    "check.crcs": False,
    "enable.partition.eof": False,
    "on_commit": None,
    "allow.auto.create.topics": False,
    "max.in.flight.requests.per.connection": 1000000,
}


@pytest.mark.parametrize("role", ["producer", "consumer", "admin"])
def test_common_defaults(role: str) -> None:
    cfg = parse_config(role, BOOT)
    for key, value in COMMON_DEFAULTS.items():
        assert cfg[key] == value, key
        assert key in cfg.as_dict()
        assert not cfg.user_set(key)
    assert cfg["bootstrap.servers"] == "127.0.0.1:9092"
    assert cfg.role == role
    assert cfg.warnings == ()


def test_producer_defaults() -> None:
    cfg = parse_config("producer", BOOT)
    for key, value in PRODUCER_DEFAULTS.items():
        assert cfg[key] == value, key
    assert type(cfg["linger.ms"]) is float
    assert "group.id" not in cfg.as_dict()


def test_consumer_defaults() -> None:
    cfg = parse_config("consumer", BOOT)
    for key, value in CONSUMER_DEFAULTS.items():
        assert cfg[key] == value, key
    assert "acks" not in cfg.as_dict()


def test_admin_has_only_the_common_keys() -> None:
    keys = set(parse_config("admin", BOOT).as_dict())
    common = {p.name for p in PROPERTIES if "admin" in p.roles}
    assert keys == common
    assert {"acks", "group.id", "linger.ms", "on_delivery", "on_commit"}.isdisjoint(keys)
    assert parse_config("admin", BOOT)["allow.auto.create.topics"] is False


def test_group_id_is_not_required_to_construct_a_consumer() -> None:
    assert consumer()["group.id"] is None
    assert consumer(**{"group.id": "g"})["group.id"] == "g"


# -- bootstrap.servers -------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["producer", "consumer", "admin"])
def test_bootstrap_servers_is_required(role: str) -> None:
    with pytest.raises(ConfigError, match='"bootstrap.servers"') as info:
        parse_config(role, {"client.id": "x"})
    assert info.value.key == "bootstrap.servers"
    with pytest.raises(ConfigError, match="bootstrap.servers"):
        parse_config(role, {"bootstrap.servers": None})
    with pytest.raises(ConfigError, match="bootstrap.servers"):
        parse_config(role, None)


@pytest.mark.parametrize("bad", ["", " , ", [], 9092, ["a:1", 2]])
def test_bootstrap_servers_must_name_a_broker(bad: Any) -> None:
    err = refused("producer", {"bootstrap.servers": bad})
    assert '"bootstrap.servers"' in str(err)


def test_bootstrap_servers_as_list_or_alias_is_one_string() -> None:
    assert producer(**{"bootstrap.servers": ["a:1", " b:2 "]})["bootstrap.servers"] == "a:1,b:2"
    assert producer(**{"bootstrap.servers": "a:1, b:2,"})["bootstrap.servers"] == "a:1,b:2"
    cfg = parse_config("consumer", {"metadata.broker.list": "h:9"})
    assert cfg["bootstrap.servers"] == cfg["metadata.broker.list"] == "h:9"
    assert parse_config("admin", {"bootstrap_servers": ["h:9"]})["bootstrap.servers"] == "h:9"


# -- unknown keys ------------------------------------------------------------------------------


def test_unknown_key_is_named_with_confluents_text() -> None:
    err = refused("producer", {"foo": 1})
    assert str(err) == 'No such configuration property: "foo"'
    assert err.key == "foo"
    assert isinstance(err, ValueError)


@pytest.mark.parametrize("key", ["foo.bar", "lingerms", "value.serializer", "max_poll_records_x"])
def test_other_unknown_keys(key: str) -> None:
    assert f'"{key}"' in str(refused("consumer", {key: "1"}))


def test_python_only_callbacks_are_unknown_outside_their_role() -> None:
    # confluent-kafka handles these itself, only for their client type.
    assert str(refused("consumer", {"on_delivery": print})) == (
        'No such configuration property: "on_delivery"'
    )
    assert str(refused("producer", {"on_commit": print})) == (
        'No such configuration property: "on_commit"'
    )
    assert "on_commit" in str(refused("admin", {"on_commit": print}))


def test_non_mapping_and_bad_role() -> None:
    with pytest.raises(TypeError):
        parse_config("producer", ["bootstrap.servers"])  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        parse_config("producer", {**BOOT, 5: "x"})
    with pytest.raises(ValueError, match="role"):
        parse_config("streams", BOOT)


# -- spellings and aliases ---------------------------------------------------------------------

ALIASES = [
    ("producer", "linger.ms", "queue.buffering.max.ms", 20, 20.0),
    ("producer", "acks", "request.required.acks", 1, 1),
    ("producer", "retries", "message.send.max.retries", 3, 3),
    ("producer", "delivery.timeout.ms", "message.timeout.ms", 1000, 1000),
    ("producer", "compression.type", "compression.codec", "lz4", "lz4"),
    ("producer", "max.in.flight.requests.per.connection", "max.in.flight", 3, 3),
    ("producer", "message.max.bytes", "max.request.size", 2000000, 2000000),
    ("consumer", "max.partition.fetch.bytes", "fetch.message.max.bytes", 4096, 4096),
    ("consumer", "fetch.wait.max.ms", "fetch.max.wait.ms", 100, 100),
    ("consumer", "socket.send.buffer.bytes", "send.buffer.bytes", 65536, 65536),
    ("consumer", "socket.receive.buffer.bytes", "receive.buffer.bytes", 65536, 65536),
    ("admin", "bootstrap.servers", "metadata.broker.list", "x:1", "x:1"),
]


@pytest.mark.parametrize(("role", "canonical", "alias", "given", "stored"), ALIASES)
def test_aliases_resolve_to_one_canonical_key(
    role: str, canonical: str, alias: str, given: Any, stored: Any
) -> None:
    cfg = parse_config(role, {**BOOT, alias: given})
    assert cfg[canonical] == cfg[alias] == stored
    assert cfg.user_set(canonical) and cfg.user_set(alias)
    assert cfg.as_dict()[canonical] == stored
    assert alias not in cfg.as_dict()


def test_last_spelling_wins_as_in_librdkafka() -> None:
    cfg = producer(**{"linger.ms": 1, "queue.buffering.max.ms": 2})
    assert cfg["linger.ms"] == 2.0


@pytest.mark.parametrize(
    ("key", "value", "canonical", "stored"),
    [
        ("bootstrap_servers", "h:1", "bootstrap.servers", "h:1"),
        ("client_id", "me", "client.id", "me"),
        ("linger_ms", 7, "linger.ms", 7.0),
        ("max_in_flight_requests_per_connection", 2, "max.in.flight.requests.per.connection", 2),
        ("compression_type", "gzip", "compression.type", "gzip"),
        ("request_timeout_ms", 5000, "request.timeout.ms", 5000),
        ("max_request_size", 2000000, "message.max.bytes", 2000000),
        ("buffer_memory", 33554432, "queue.buffering.max.kbytes", 32768),
        ("security_protocol", "PLAINTEXT", "security.protocol", "plaintext"),
    ],
)
def test_kafka_python_underscore_spellings(key: str, value: Any, canonical: str, stored: Any) -> None:
    cfg = parse_config("producer", {**BOOT, key: value})
    assert cfg[canonical] == stored
    assert cfg.user_set(key) and cfg.user_set(canonical)
    assert canonical in cfg.as_dict() and key not in cfg.as_dict()


def test_underscore_spellings_for_the_consumer() -> None:
    cfg = parse_config("consumer", {
        "bootstrap_servers": "h:1", "group_id": "g", "auto_offset_reset": "earliest",
        "enable_auto_commit": False, "fetch_max_wait_ms": 50, "session_timeout_ms": 10000,
    })
    assert cfg["group.id"] == "g"
    assert cfg["auto.offset.reset"] == "earliest"
    assert cfg["enable.auto.commit"] is False
    assert cfg["fetch.wait.max.ms"] == 50
    assert cfg["session.timeout.ms"] == 10000


def test_keys_with_real_underscores_match_as_written() -> None:
    cb = lambda *a: None  # noqa: E731
    cfg = producer(log_level=3, error_cb=cb, stats_cb=cb, throttle_cb=cb, oauth_cb=cb,
                   on_delivery=cb)
    assert cfg["log_level"] == 3
    assert cfg["error_cb"] is cfg["stats_cb"] is cfg["on_delivery"] is cb


def test_buffer_memory_is_bytes_for_the_kbytes_limit() -> None:
    cfg = producer(**{"buffer.memory": 33554432})
    assert cfg["queue.buffering.max.kbytes"] == 32768
    assert cfg["buffer.memory"] == 33554432
    assert producer(**{"buffer.memory": 1000})["queue.buffering.max.kbytes"] == 1  # rounded up
    assert producer()["buffer.memory"] == 1048576 * 1024
    err = refused("producer", {"buffer.memory": 0})
    assert '"buffer.memory"' in str(err) and '"0"' in str(err)


def test_default_topic_config_is_merged_and_wins() -> None:
    cfg = producer(**{"acks": 0, "default.topic.config": {"acks": "all", "message.timeout.ms": 9}})
    assert cfg["acks"] == -1
    assert cfg["delivery.timeout.ms"] == 9
    assert "default.topic.config" not in cfg.as_dict()
    assert "default.topic.config" in str(refused("producer", {"default.topic.config": "acks=1"}))
    assert "nope" in str(refused("producer", {"default.topic.config": {"nope": 1}}))


def test_none_means_unset() -> None:
    cfg = producer(**{"client.id": None, "linger.ms": None, "on_delivery": None})
    assert cfg["client.id"] == "mafka-python"
    assert cfg["linger.ms"] == 5.0
    assert not cfg.user_set("linger.ms")
    assert not cfg.user_set("on_delivery")


# -- types -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "expected"),
    [(True, True), (False, False), ("true", True), ("false", False), ("TRUE", True),
     ("False", False), ("t", True), ("f", False), ("1", True), ("0", False), (1, True),
     (0, False), (" true ", True)],
)
def test_booleans_as_librdkafka_parses_them(given: Any, expected: bool) -> None:
    cfg = consumer(**{"enable.auto.commit": given, "check.crcs": given})
    assert cfg["enable.auto.commit"] is expected
    assert cfg["check.crcs"] is expected
    assert cfg.user_set("enable.auto.commit")


@pytest.mark.parametrize("bad", ["yes", "no", "", 2, -1, 1.0, object(), [True]])
def test_bad_booleans_name_key_and_value(bad: Any) -> None:
    err = refused("consumer", {"enable.partition.eof": bad})
    assert '"enable.partition.eof"' in str(err)
    assert err.key == "enable.partition.eof" and err.value is bad


@pytest.mark.parametrize(("given", "expected"), [(5000, 5000), ("5000", 5000), (" 7 ", 7),
                                                 (5000.0, 5000), ("1e3", 1000)])
def test_integers(given: Any, expected: int) -> None:
    assert consumer(**{"auto.commit.interval.ms": given})["auto.commit.interval.ms"] == expected


@pytest.mark.parametrize("bad", ["abc", "", 12.5, "12.5", True, [1], object()])
def test_bad_integers(bad: Any) -> None:
    err = refused("consumer", {"session.timeout.ms": bad})
    assert '"session.timeout.ms"' in str(err)


@pytest.mark.parametrize(
    ("role", "key", "bad", "limits"),
    [
        ("consumer", "session.timeout.ms", 0, "1..3600000"),
        ("consumer", "session.timeout.ms", 3600001, "1..3600000"),
        ("producer", "socket.timeout.ms", 9, "10..300000"),
        ("admin", "log_level", 8, "0..7"),
        ("producer", "batch.num.messages", 0, "1..1000000"),
        ("producer", "retries", -1, "0..2147483647"),
        ("consumer", "fetch.min.bytes", 0, "1..100000000"),
        ("consumer", "queued.max.messages.kbytes", 2097152, "1..2097151"),
        ("producer", "message.max.bytes", 999, "1000..1000000000"),
        ("admin", "topic.metadata.refresh.interval.ms", -2, "-1..3600000"),
    ],
)
def test_ranges(role: str, key: str, bad: int, limits: str) -> None:
    err = refused(role, {key: bad})
    assert f'"{key}"' in str(err) and f'"{bad}"' in str(err) and limits in str(err)


def test_floats() -> None:
    assert producer(**{"linger.ms": 0.5})["linger.ms"] == 0.5
    assert producer(**{"linger.ms": "0.25"})["linger.ms"] == 0.25
    assert producer(**{"linger.ms": 0})["linger.ms"] == 0.0
    for bad in (-1, 900001, "nan", "inf", "soon", True):
        assert '"linger.ms"' in str(refused("producer", {"linger.ms": bad}))


def test_strings() -> None:
    cfg = consumer(**{"group.id": 42, "client.rack": "r1", "debug": "cgrp,fetch"})
    assert cfg["group.id"] == "42"  # confluent-kafka passes str(value)
    assert cfg["client.rack"] == "r1"
    assert cfg["debug"] == "cgrp,fetch"
    for bad in (True, ["g"], 1.5):
        assert '"group.id"' in str(refused("consumer", {"group.id": bad}))


# -- acks --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("given", "expected"), [("all", -1), ("ALL", -1), (-1, -1), ("-1", -1),
                                                 (0, 0), ("0", 0), (1, 1), ("1", 1)])
def test_acks_values(given: Any, expected: int) -> None:
    cfg = producer(acks=given, **{"enable.idempotence": False})
    assert cfg["acks"] == cfg["request.required.acks"] == expected


@pytest.mark.parametrize("bad", [2, "2", -2, 1000, "none", True])
def test_acks_outside_minus_one_zero_one_all_is_refused(bad: Any) -> None:
    err = refused("producer", {"acks": bad})
    assert '"acks"' in str(err) and f'"{bad}"' in str(err)
    assert err.key == "acks"


def test_acks_error_names_the_alias_used() -> None:
    err = refused("producer", {"request.required.acks": 2})
    assert '"request.required.acks"' in str(err)


# -- enums and lists ---------------------------------------------------------------------------


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_compression_codecs(codec: str) -> None:
    assert producer(**{"compression.type": codec.upper()})["compression.type"] == codec
    assert producer(**{"compression.codec": codec})["compression.type"] == codec


def test_bad_enum_lists_the_choices() -> None:
    err = refused("producer", {"compression.type": "brotli"})
    assert '"compression.type"' in str(err) and '"brotli"' in str(err)
    assert "gzip" in str(err) and "zstd" in str(err)
    assert '"partitioner"' in str(refused("producer", {"partitioner": "java"}))
    assert '"isolation.level"' in str(refused("consumer", {"isolation.level": "dirty"}))
    assert '"compression.type"' in str(refused("producer", {"compression.type": 1}))


@pytest.mark.parametrize(
    ("given", "stored"),
    [("smallest", "earliest"), ("earliest", "earliest"), ("beginning", "earliest"),
     ("largest", "latest"), ("latest", "latest"), ("end", "latest"), ("error", "error"),
     ("EARLIEST", "earliest")],
)
def test_auto_offset_reset_spellings(given: str, stored: str) -> None:
    assert consumer(**{"auto.offset.reset": given})["auto.offset.reset"] == stored


def test_auto_offset_reset_refuses_others() -> None:
    err = refused("consumer", {"auto.offset.reset": "none"})
    assert '"auto.offset.reset"' in str(err) and '"none"' in str(err)


@pytest.mark.parametrize("name", ["random", "consistent", "consistent_random", "murmur2",
                                  "murmur2_random", "fnv1a", "fnv1a_random"])
def test_partitioner_choices(name: str) -> None:
    assert producer(partitioner=name)["partitioner"] == name


def test_isolation_level() -> None:
    assert consumer(**{"isolation.level": "read_uncommitted"})["isolation.level"] == "read_uncommitted"


def test_partition_assignment_strategy_lists() -> None:
    key = "partition.assignment.strategy"
    assert consumer(**{key: "roundrobin, range"})[key] == ("roundrobin", "range")
    assert consumer(**{key: ["range"]})[key] == ("range",)
    assert consumer(**{key: "cooperative-sticky"})[key] == ("cooperative-sticky",)
    for bad in ("sticky", "range,cooperative-sticky", "", ",", 5):
        err = refused("consumer", {key: bad})
        assert f'"{key}"' in str(err)
    assert "mixed" in str(refused("consumer", {key: "range,cooperative-sticky"}))


# -- callables ---------------------------------------------------------------------------------


def test_callbacks() -> None:
    def cb(*args: Any) -> None:
        pass

    cfg = consumer(error_cb=cb, stats_cb=cb, throttle_cb=cb, on_commit=cb,
                   logger=logging.getLogger("x"))
    assert cfg["error_cb"] is cb and cfg["on_commit"] is cb
    assert cfg["logger"] is logging.getLogger("x")
    assert producer(on_delivery=cb)["on_delivery"] is cb
    for key in ("error_cb", "stats_cb", "throttle_cb", "oauth_cb"):
        err = refused("admin", {key: "print"})
        assert f'"{key}"' in str(err) and "callable" in str(err)
    assert '"on_delivery"' in str(refused("producer", {"on_delivery": 1}))
    assert '"logger"' in str(refused("producer", {"logger": "root"}))


# -- security ----------------------------------------------------------------------------------


# (The TLS and SASL keys in detail: tests/unit/client/test_client_security_config.py.)


def test_security_protocol_values() -> None:
    assert producer(**{"security.protocol": "PLAINTEXT"})["security.protocol"] == "plaintext"
    assert producer(**{"security.protocol": "SSL"})["security.protocol"] == "ssl"
    assert '"security.protocol"' in str(refused("admin", {"security.protocol": "tls"}))


@pytest.mark.parametrize("key", ["ssl.keystore.location", "sasl.kerberos.service.name", "sasl.oauthbearer.config"])
def test_unimplemented_ssl_and_sasl_keys_are_not_supported(key: str) -> None:
    err = refused("consumer", {key: "x"})
    assert f'"{key}"' in str(err) and "not supported" in str(err)


# -- idempotence and transactions --------------------------------------------------------------


def test_idempotence_on_by_default_caps_in_flight_at_five() -> None:
    cfg = producer()
    assert cfg["enable.idempotence"] is True
    assert cfg["max.in.flight.requests.per.connection"] == 5
    assert cfg["acks"] == -1
    assert not cfg.user_set("enable.idempotence")


@pytest.mark.parametrize("key", ["max.in.flight.requests.per.connection", "max.in.flight"])
def test_explicit_idempotence_with_more_than_five_in_flight_is_refused(key: str) -> None:
    err = refused("producer", {"enable.idempotence": True, key: 6})
    assert f'"{key}"' in str(err) and '"6"' in str(err) and "enable.idempotence" in str(err)
    cfg = producer(**{"enable.idempotence": "true", key: 5})
    assert cfg["max.in.flight.requests.per.connection"] == 5


@pytest.mark.parametrize(("key", "value"), [("acks", 1), ("acks", 0), ("retries", 0)])
def test_explicit_idempotence_refuses_conflicts(key: str, value: int) -> None:
    err = refused("producer", {"enable.idempotence": True, key: value})
    assert f'"{key}"' in str(err) and "enable.idempotence" in str(err)


@pytest.mark.parametrize(("key", "value"), [("max.in.flight", 100), ("acks", 1), ("retries", 0)])
def test_default_idempotence_yields_to_a_conflicting_setting(key: str, value: int) -> None:
    cfg = producer(**{key: value})
    assert cfg["enable.idempotence"] is False
    assert cfg[key] == value


def test_idempotence_off_keeps_librdkafkas_in_flight_default() -> None:
    cfg = producer(**{"enable.idempotence": False})
    assert cfg["max.in.flight.requests.per.connection"] == 1000000


def test_transactional_id_requires_idempotence() -> None:
    cfg = producer(**{"transactional.id": "tx-1"})
    assert cfg["transactional.id"] == "tx-1" and cfg["enable.idempotence"] is True
    for extra in ({"enable.idempotence": False}, {"acks": 1}):
        err = refused("producer", {"transactional.id": "tx-1", **extra})
        assert '"transactional.id"' in str(err) and "enable.idempotence" in str(err)
    assert '"transactional.id"' in str(refused("producer", {"transactional.id": ""}))


# -- roles -------------------------------------------------------------------------------------


def test_keys_of_another_role_are_kept_with_a_warning() -> None:
    cfg = producer(**{"group.id": "g", "enable.auto.commit": "false"})
    assert cfg["group.id"] == "g" and cfg["enable.auto.commit"] is False
    assert cfg.warnings == (
        "Configuration property group.id is a consumer property and will be ignored by "
        "this producer instance",
        "Configuration property enable.auto.commit is a consumer property and will be "
        "ignored by this producer instance",
    )
    assert "acks" in consumer(acks="all").warnings[0]
    assert parse_config("admin", {**BOOT, "linger.ms": 1}).warnings


def test_keys_of_another_role_are_still_validated() -> None:
    assert '"acks"' in str(refused("consumer", {"acks": 2}))
    assert '"session.timeout.ms"' in str(refused("producer", {"session.timeout.ms": "x"}))


def test_allow_auto_create_topics_default_depends_on_role() -> None:
    assert producer()["allow.auto.create.topics"] is True
    assert consumer()["allow.auto.create.topics"] is False
    assert consumer(**{"allow.auto.create.topics": "true"})["allow.auto.create.topics"] is True


# -- derived defaults --------------------------------------------------------------------------


def test_metadata_max_age_follows_the_refresh_interval() -> None:
    assert producer(**{"topic.metadata.refresh.interval.ms": 1000})["metadata.max.age.ms"] == 3000
    cfg = producer(**{"topic.metadata.refresh.interval.ms": 1000, "metadata.max.age.ms": 50})
    assert cfg["metadata.max.age.ms"] == 50
    assert producer(**{"topic.metadata.refresh.interval.ms": -1})["metadata.max.age.ms"] == 900000


def test_sticky_linger_follows_linger() -> None:
    assert producer(**{"linger.ms": 100})["sticky.partitioning.linger.ms"] == 200
    assert producer(**{"linger.ms": 900000})["sticky.partitioning.linger.ms"] == 900000
    cfg = producer(**{"linger.ms": 100, "sticky.partitioning.linger.ms": 0})
    assert cfg["sticky.partitioning.linger.ms"] == 0


def test_fetch_max_bytes_against_message_max_bytes() -> None:
    err = refused("consumer", {"fetch.max.bytes": 1000, "message.max.bytes": 2000})
    assert '"fetch.max.bytes"' in str(err) and '"1000"' in str(err)
    cfg = consumer(**{"queued.max.messages.kbytes": 1024})
    assert cfg["fetch.max.bytes"] == 1024 * 1024
    cfg = consumer(**{"queued.max.messages.kbytes": 1, "message.max.bytes": 5000})
    assert cfg["fetch.max.bytes"] == 5000
    assert consumer(**{"fetch.max.bytes": 2000000})["fetch.max.bytes"] == 2000000


# -- inert keys --------------------------------------------------------------------------------


INERT = {
    "socket.keepalive.enable": True,
    "socket.nagle.disable": False,
    "socket.send.buffer.bytes": 131072,
    "socket.receive.buffer.bytes": 131072,
    "socket.max.fails": 3,
    "broker.address.family": "v4",
    "broker.address.ttl": 5000,
    "connections.max.idle.ms": 540000,
    "enable.metrics.push": False,
    "topic.metadata.propagation.max.ms": 60000,
    "topic.metadata.refresh.sparse": False,
    "api.version.request.timeout.ms": 5000,
    "log.connection.close": False,
    "queue.buffering.backpressure.threshold": 10,
    "sticky.partitioning.linger.ms": 25,
    "compression.level": 6,
    "fetch.error.backoff.ms": 100,
    "fetch.queue.backoff.ms": 100,
}


def test_inert_keys_are_exactly_the_documented_list() -> None:
    assert set(INERT) == INERT_KEYS
    doc = config_module.__doc__ or ""
    for key in INERT_KEYS:
        assert f"``{key}``" in doc, key


def test_inert_keys_are_accepted_and_stored() -> None:
    producer_keys = {k: v for k, v in INERT.items() if not k.startswith("fetch.")}
    cfg = producer(**{k: str(v).lower() if isinstance(v, bool) else v
                      for k, v in producer_keys.items()})
    for key, value in producer_keys.items():
        assert cfg[key] == value, key
    assert consumer(**{"fetch.error.backoff.ms": 1})["fetch.error.backoff.ms"] == 1
    assert '"broker.address.family"' in str(refused("admin", {"broker.address.family": "v5"}))


# -- ClientConfig ------------------------------------------------------------------------------


def test_client_config_access() -> None:
    cfg = producer(**{"linger.ms": 10})
    assert cfg.get("linger.ms") == 10.0
    assert cfg.get("no.such.key", "dflt") == "dflt"
    assert cfg.get("group.id", "x") is None  # known, default None
    with pytest.raises(KeyError):
        cfg["no.such.key"]
    with pytest.raises(KeyError):
        cfg.user_set("no.such.key")
    assert "linger.ms" in cfg and "queue.buffering.max.ms" in cfg and "nope" not in cfg
    assert cfg.user_set("linger.ms") and cfg.user_set("queue.buffering.max.ms")
    assert not cfg.user_set("acks")
    snapshot = cfg.as_dict()
    snapshot["linger.ms"] = 99
    assert cfg["linger.ms"] == 10.0
    assert "ClientConfig('producer'" in repr(cfg)


# -- the table itself --------------------------------------------------------------------------


def test_every_spelling_is_unique() -> None:
    names = [p.name for p in PROPERTIES] + [a.name for p in PROPERTIES for a in p.aliases]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("prop", PROPERTIES, ids=lambda p: p.name)
def test_every_default_is_a_valid_value(prop: config_module.Prop) -> None:
    for role in prop.roles:
        default = prop.default_for(role)
        if default is None:
            continue
        parsed = config_module._PARSERS[prop.kind](prop, default, 1)
        assert parsed == default
        assert prop.check is None or prop.check(parsed) is None
