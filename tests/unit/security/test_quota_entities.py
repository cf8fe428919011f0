"""Quota entities in ZooKeeper and the quota admin APIs' rules (mafka.security.quota_entities), as Kafka 2.8."""

from __future__ import annotations

import math

import pytest

from mafka.errors import (
    ConfigError,
    ErrorCode,
    InvalidRequestError,
    KafkaError,
    UnsupportedVersionError,
)
from mafka.security.quota_entities import (
    DEFAULT,
    ClientQuotaEntity,
    MatchType,
    alter_response_entity,
    api_error,
    apply_alteration,
    change_notification_entity_path,
    config_location,
    describe_client_quotas,
    encode_change_notification,
    entity_from_config_location,
    entity_to_wire,
    entity_znode_path,
    is_client_or_user_quota_config,
    java_double_to_string,
    java_parse_double,
    java_parse_long,
    parse_alteration_entity,
    parse_entity_path,
    parse_filter,
    quota_values,
    validate_entity_config,
)


def E(user: object = None, client: object = None) -> ClientQuotaEntity:  # noqa: N802  # reads as a constructor
    return ClientQuotaEntity(user, client)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- znodes


@pytest.mark.parametrize(
    ("entity", "path", "notification"),
    [
        (E("alice", None), "/config/users/alice", "users/alice"),
        (E("alice", "app"), "/config/users/alice/clients/app", "users/alice/clients/app"),
        (E("alice", DEFAULT), "/config/users/alice/clients/<default>", "users/alice/clients/<default>"),
        (E(DEFAULT, DEFAULT), "/config/users/<default>/clients/<default>", "users/<default>/clients/<default>"),
        (E(DEFAULT, None), "/config/users/<default>", "users/<default>"),
        (E(None, "app"), "/config/clients/app", "clients/app"),
        (E(None, DEFAULT), "/config/clients/<default>", "clients/<default>"),
        # Sanitizer: URL-encoding, a space as %20, '*' as %2A; a user really called <default> is not the default
        (E("CN=a b,O=x", "c*/d"), "/config/users/CN%3Da%20b%2CO%3Dx/clients/c%2A%2Fd",
         "users/CN%3Da%20b%2CO%3Dx/clients/c%2A%2Fd"),
        (E("<default>", None), "/config/users/%3Cdefault%3E", "users/%3Cdefault%3E"),
    ],
)
def test_entity_paths_and_notifications(entity: ClientQuotaEntity, path: str, notification: str) -> None:
    assert entity_znode_path(entity) == path
    assert change_notification_entity_path(entity) == notification
    assert "/config/" + "/".join(config_location(entity)) == path
    # The notification names the entity back, and so does its znode location.
    assert parse_entity_path(notification) == entity
    assert entity_from_config_location(*config_location(entity)) == entity


def test_the_change_notification_is_kafkas_v2_json() -> None:
    assert encode_change_notification(E("alice", "app")) == b'{"version":2,"entity_path":"users/alice/clients/app"}'
    assert encode_change_notification(E(None, DEFAULT)) == b'{"version":2,"entity_path":"clients/<default>"}'


def test_notifications_of_other_entities_are_not_quota_changes() -> None:
    assert parse_entity_path("topics/t") is None
    assert parse_entity_path("brokers/<default>") is None
    assert parse_entity_path("ips/1.2.3.4") is None
    for bad in ("users/a/clients", "users/a/b/c/d", "users/", "clients/", "users/a/other/c"):
        with pytest.raises(ValueError, match="Invalid quota entity path"):
            parse_entity_path(bad)


def test_an_entity_needs_a_part() -> None:
    with pytest.raises(ValueError):
        ClientQuotaEntity()
    assert str(E("alice", DEFAULT)) == "user alice default client-id"


# --------------------------------------------------------------------------- configs


def test_quota_keys_and_their_types() -> None:
    assert all(is_client_or_user_quota_config(k) for k in (
        "producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate"))
    assert not is_client_or_user_quota_config("SCRAM-SHA-256")
    assert not is_client_or_user_quota_config("connection_creation_rate")
    assert quota_values({"producer_byte_rate": "1024", "request_percentage": "12.5", "SCRAM-SHA-256": "x"}) == {
        "producer_byte_rate": 1024.0, "consumer_byte_rate": None,
        "request_percentage": 12.5, "controller_mutation_rate": None}
    with pytest.raises(ValueError):
        quota_values({"producer_byte_rate": "1024.0"})  # Long.parseLong
    with pytest.raises(ValueError):
        quota_values({"consumer_byte_rate": " 10"})  # no trimming in toLong


def test_validation_of_an_entity_config_before_it_is_written() -> None:
    validate_entity_config(E("alice", None), {"SCRAM-SHA-256": "salt=x", "producer_byte_rate": " 10 "})
    validate_entity_config(E(None, "app"), {"request_percentage": "1e2", "controller_mutation_rate": "NaN"})
    with pytest.raises(ValueError, match=r"^requirement failed: Unknown Dynamic Configuration: Set\(SCRAM-SHA-256\)\.$"):
        validate_entity_config(E(None, "app"), {"SCRAM-SHA-256": "salt=x"})
    # Kafka validates users/<default> and users/<u>/clients/<c> with the client-id keys.
    for entity in (E(DEFAULT, None), E("alice", "app")):
        with pytest.raises(ValueError, match="Unknown Dynamic Configuration"):
            validate_entity_config(entity, {"SCRAM-SHA-512": "salt=x"})
    with pytest.raises(ConfigError) as info:
        validate_entity_config(E(None, "app"), {"producer_byte_rate": "1.5"})
    assert str(info.value) == "Invalid value 1.5 for configuration producer_byte_rate: Not a number of type LONG"
    with pytest.raises(ConfigError, match="request_percentage: Not a number of type DOUBLE"):
        validate_entity_config(E(None, "app"), {"request_percentage": "lots"})


def test_java_number_forms() -> None:
    assert java_parse_long("-42") == -42 and java_parse_long("+7") == 7
    for bad in ("1_000", " 1", "1.0", "9223372036854775808", "", "0x10"):
        with pytest.raises(ValueError):
            java_parse_long(bad)
    assert java_parse_double(" 2.5d ") == 2.5 and java_parse_double("1e3") == 1000.0
    assert java_parse_double("-Infinity") == -math.inf and math.isnan(java_parse_double("NaN"))
    assert java_parse_double("0x1.8p1") == 3.0 and java_parse_double(".5") == 0.5 and java_parse_double("1.") == 1.0
    for bad in ("inf", "nan", "1_0", "", "1e", "Infinityd"):
        with pytest.raises(ValueError):
            java_parse_double(bad)
    cases = {50.0: "50.0", 1e7: "1.0E7", 9999999.0: "9999999.0", 12345678.9: "1.23456789E7", 0.001: "0.001",
             0.0001: "1.0E-4", 123.456: "123.456", -2.5: "-2.5", 1e21: "1.0E21", -0.0: "-0.0",
             math.inf: "Infinity", math.nan: "NaN", 100.5: "100.5", 1.5e-10: "1.5E-10"}
    for value, text in cases.items():
        assert java_double_to_string(value) == text, value


# --------------------------------------------------------------------------- AlterClientQuotas


def test_alteration_entities() -> None:
    assert parse_alteration_entity([("user", "alice")]) == E("alice", None)
    assert parse_alteration_entity([("client-id", None), ("user", "alice")]) == E("alice", DEFAULT)
    assert parse_alteration_entity([("user", None), ("user", "bob")]) == E("bob", None)  # a map: the last wins
    for entity, message in [
        ([], "Invalid empty client quota entity"),
        ([("group", "g")], "Unhandled client quota entity type: group"),
        ([("user", "")], "Empty user not supported"),
        ([("client-id", "")], "Empty client-id not supported"),
        ([("user", "a"), ("ip", "1.2.3.4")],
         "Invalid quota entity combination, IP entity should not be used with user/client ID entity."),
    ]:
        with pytest.raises(InvalidRequestError) as info:
            parse_alteration_entity(entity)
        assert info.value.message == message
    with pytest.raises(InvalidRequestError, match="not supported by Mafka"):
        parse_alteration_entity([("ip", "1.2.3.4")])


def test_alterations_store_longs_as_integers_and_doubles_as_java_prints_them() -> None:
    stored = {"SCRAM-SHA-256": "salt=x", "consumer_byte_rate": "5"}
    new = apply_alteration(E("alice", None), stored, [
        ("producer_byte_rate", 1024.0), ("request_percentage", 50.0),
        ("controller_mutation_rate", 1e7), ("consumer_byte_rate", None)])
    assert new == {"SCRAM-SHA-256": "salt=x", "producer_byte_rate": "1024", "request_percentage": "50.0",
                   "controller_mutation_rate": "1.0E7"}
    assert stored == {"SCRAM-SHA-256": "salt=x", "consumer_byte_rate": "5"}  # not modified
    # within 1e-6 of an integer is that integer; NaN + 1e-6 → 0 passes Kafka's check
    assert apply_alteration(E(None, "app"), {}, [("producer_byte_rate", 1024.0000001)]) == {"producer_byte_rate": "1024"}
    assert apply_alteration(E(None, "app"), {}, [("producer_byte_rate", math.nan)]) == {"producer_byte_rate": "0"}
    # a negative double is fine; removing any key (even a SCRAM credential) is allowed
    assert apply_alteration(E("a", None), {"SCRAM-SHA-512": "s"}, [("request_percentage", -1.0),
                                                                    ("SCRAM-SHA-512", None)]) == {
        "request_percentage": "-1.0"}


def test_alteration_errors_are_kafkas() -> None:
    for value in (1024.5, -5.0, math.inf, 1e19):
        with pytest.raises(InvalidRequestError) as info:
            apply_alteration(E(None, "app"), {}, [("producer_byte_rate", value)])
        assert info.value.message == "Configuration producer_byte_rate must be a LONG value"
    with pytest.raises(InvalidRequestError) as info:
        apply_alteration(E(None, "app"), {}, [("connection_creation_rate", 5.0)])
    assert info.value.message == "Invalid configuration key connection_creation_rate"
    with pytest.raises(InvalidRequestError, match="Invalid configuration key SCRAM-SHA-256"):
        apply_alteration(E(None, "app"), {}, [("SCRAM-SHA-256", 1.0)])
    # A SCRAM key on a user is known but not a number: Kafka's IllegalStateException.
    with pytest.raises(KafkaError) as unknown:
        apply_alteration(E("alice", "app"), {}, [("SCRAM-SHA-256", 1.0)])
    assert unknown.value.code is ErrorCode.UNKNOWN_SERVER_ERROR
    assert api_error(unknown.value) == (ErrorCode.UNKNOWN_SERVER_ERROR, None)


def test_api_error_keeps_only_informative_messages() -> None:
    assert api_error(InvalidRequestError("Empty user not supported")) == (42, "Empty user not supported")
    assert api_error(InvalidRequestError()) == (42, None)
    assert api_error(UnsupportedVersionError("Custom entity type 'x' not supported")) == (
        35, "Custom entity type 'x' not supported")
    assert api_error(ValueError("requirement failed: …")) == (-1, None)


def test_the_alter_response_echoes_the_entity_in_java_hashmap_order() -> None:
    assert alter_response_entity([("user", "a"), ("client-id", None)]) == [
        {"entity_type": "client-id", "entity_name": None}, {"entity_type": "user", "entity_name": "a"}]
    assert alter_response_entity([("user", "a"), ("user", "b")]) == [{"entity_type": "user", "entity_name": "b"}]
    assert alter_response_entity([("ip", "x"), ("user", "a"), ("client-id", "c")]) == [
        {"entity_type": "client-id", "entity_name": "c"}, {"entity_type": "user", "entity_name": "a"},
        {"entity_type": "ip", "entity_name": "x"}]
    assert alter_response_entity([]) == []


# --------------------------------------------------------------------------- DescribeClientQuotas


STORED = {
    E("alice", None): {"producer_byte_rate": "100", "SCRAM-SHA-256": "salt=x"},
    E("bob", None): {"SCRAM-SHA-256": "salt=y"},  # no quota: never described
    E(DEFAULT, None): {"consumer_byte_rate": "200"},
    E(None, "app"): {"request_percentage": "12.5"},
    E(None, DEFAULT): {"producer_byte_rate": "300"},
    E("alice", "app"): {"producer_byte_rate": "400", "consumer_byte_rate": "401"},
    E("alice", DEFAULT): {"consumer_byte_rate": "500"},
    E(DEFAULT, DEFAULT): {"request_percentage": "60"},
}


def _describe(components: list[tuple[str, int, str | None]], strict: bool) -> list[ClientQuotaEntity]:
    return [entity for entity, _ in describe_client_quotas(parse_filter(components, strict), STORED)]


@pytest.mark.parametrize(
    ("components", "strict", "expected"),
    [
        ([], False, [E("alice"), E(DEFAULT), E(None, "app"), E(None, DEFAULT),
                     E("alice", "app"), E("alice", DEFAULT), E(DEFAULT, DEFAULT)]),
        ([], True, []),
        ([("user", 0, "alice")], False, [E("alice"), E("alice", "app"), E("alice", DEFAULT)]),
        ([("user", 0, "alice")], True, [E("alice")]),
        ([("user", 1, None)], True, [E(DEFAULT)]),
        ([("user", 1, None)], False, [E(DEFAULT), E(DEFAULT, DEFAULT)]),
        # SPECIFIED matches the default entity too (Kafka 2.8 ZooKeeper mode: Some(null).isDefined)
        ([("user", 2, None)], True, [E("alice"), E(DEFAULT)]),
        ([("user", 2, None), ("client-id", 2, None)], True,
         [E("alice", "app"), E("alice", DEFAULT), E(DEFAULT, DEFAULT)]),
        ([("client-id", 0, "app"), ("user", 0, "alice")], True, [E("alice", "app")]),
        ([("client-id", 1, None)], False, [E(None, DEFAULT), E("alice", DEFAULT), E(DEFAULT, DEFAULT)]),
        ([("client-id", 0, "nobody")], False, []),
        ([("user", 0, "<default>")], False, []),  # a name, not the default
    ],
)
def test_describe_filters(components: list[tuple[str, int, str | None]], strict: bool,
                          expected: list[ClientQuotaEntity]) -> None:
    assert _describe(components, strict) == expected


def test_describe_values_are_the_quota_keys_as_doubles() -> None:
    result = dict(describe_client_quotas(parse_filter([("user", 0, "alice")], True), STORED))
    assert result == {E("alice"): {"producer_byte_rate": 100.0}}
    assert entity_to_wire(E("alice", DEFAULT)) == [
        {"entity_type": "user", "entity_name": "alice"}, {"entity_type": "client-id", "entity_name": None}]
    with pytest.raises(KafkaError) as info:
        describe_client_quotas(parse_filter([], False), {E(None, "x"): {"producer_byte_rate": "lots"}})
    assert info.value.message == "Unexpected client quota configuration value: producer_byte_rate -> lots"
    assert api_error(info.value) == (-1, None)


def test_describe_filter_errors() -> None:
    for components, error, message in [
        ([("user", 0, "a"), ("user", 1, None)], InvalidRequestError, "Duplicate user filter component entity type"),
        ([("client-id", 2, None), ("client-id", 2, None)], InvalidRequestError,
         "Duplicate client filter component entity type"),
        ([("", 2, None)], InvalidRequestError, "Unexpected empty filter component entity type"),
        ([("group", 2, None)], UnsupportedVersionError, "Custom entity type 'group' not supported"),
        ([("ip", 2, None)], UnsupportedVersionError,
         "IP connection rate quotas (entity type 'ip', connection_creation_rate, KIP-612) are not supported by Mafka"),
    ]:
        with pytest.raises(error) as info:
            parse_filter(components, False)
        assert info.value.message == message
    # Bad match types fail before the entity types are looked at (UNKNOWN_SERVER_ERROR, no message).
    for bad in ([("group", 2, None), ("user", 3, None)], [("user", 0, None)]):
        with pytest.raises(KafkaError) as unknown:
            parse_filter(bad, False)
        assert api_error(unknown.value) == (ErrorCode.UNKNOWN_SERVER_ERROR, None)
    assert parse_filter([("user", 1, "ignored")], True).components[0].match is None
    assert parse_filter([("user", 0, "a")], True).components[0].match_type is MatchType.EXACT
