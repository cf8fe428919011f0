"""Kafka's ACL model: enum codes and names, filter matching, validation of new ACLs."""

from __future__ import annotations

import pytest

from mafka.errors import ErrorCode, InvalidRequestError, UnknownServerError
from mafka.security.acl import (
    CLUSTER_NAME,
    CONCRETE_OPERATIONS,
    CONCRETE_RESOURCE_TYPES,
    IMPLIED_BY,
    WILDCARD_RESOURCE,
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
    authorization_error,
    filter_to_resources,
    granting_operations,
    has_unknown_code,
    parse_acl_principal,
    supported_operations,
    validate_new_binding,
)
from mafka.security.principal import KafkaPrincipal

LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED
TOPIC, GROUP = ResourceType.TOPIC, ResourceType.GROUP
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
READ = AclOperation.READ


def test_wire_codes_are_kafkas() -> None:
    assert {t.name: int(t) for t in ResourceType} == {
        "UNKNOWN": 0, "ANY": 1, "TOPIC": 2, "GROUP": 3, "CLUSTER": 4,
        "TRANSACTIONAL_ID": 5, "DELEGATION_TOKEN": 6,
    }
    assert {t.name: int(t) for t in PatternType} == {
        "UNKNOWN": 0, "ANY": 1, "MATCH": 2, "LITERAL": 3, "PREFIXED": 4,
    }
    assert {t.name: int(t) for t in AclOperation} == {
        "UNKNOWN": 0, "ANY": 1, "ALL": 2, "READ": 3, "WRITE": 4, "CREATE": 5, "DELETE": 6,
        "ALTER": 7, "DESCRIBE": 8, "CLUSTER_ACTION": 9, "DESCRIBE_CONFIGS": 10,
        "ALTER_CONFIGS": 11, "IDEMPOTENT_WRITE": 12,
    }
    assert {t.name: int(t) for t in AclPermissionType} == {"UNKNOWN": 0, "ANY": 1, "DENY": 2, "ALLOW": 3}


def test_from_code_maps_undefined_numbers_to_unknown() -> None:
    assert ResourceType.from_code(2) is ResourceType.TOPIC
    assert ResourceType.from_code(99) is ResourceType.UNKNOWN
    assert PatternType.from_code(-1) is PatternType.UNKNOWN
    assert AclOperation.from_code(12) is AclOperation.IDEMPOTENT_WRITE
    assert AclOperation.from_code(13) is AclOperation.UNKNOWN  # CREATE_TOKENS came after 2.8
    assert AclPermissionType.from_code(3) is AclPermissionType.ALLOW


def test_kafka_names_are_pascal_case() -> None:
    assert AclOperation.IDEMPOTENT_WRITE.kafka_name == "IdempotentWrite"
    assert AclOperation.DESCRIBE_CONFIGS.kafka_name == "DescribeConfigs"
    assert AclOperation.READ.kafka_name == "Read"
    assert ResourceType.TRANSACTIONAL_ID.kafka_name == "TransactionalId"
    assert ResourceType.DELEGATION_TOKEN.kafka_name == "DelegationToken"
    assert AclPermissionType.ALLOW.kafka_name == "Allow"
    assert PatternType.PREFIXED.kafka_name == "Prefixed"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("TransactionalId", ResourceType.TRANSACTIONAL_ID),
        ("TRANSACTIONALID", ResourceType.TRANSACTIONAL_ID),
        ("transactionalid", ResourceType.TRANSACTIONAL_ID),
        ("TRANSACTIONAL_ID", ResourceType.TRANSACTIONAL_ID),
        ("transactional-id", ResourceType.TRANSACTIONAL_ID),
        ("Topic", ResourceType.TOPIC),
        ("topic", ResourceType.TOPIC),
        ("Any", ResourceType.ANY),
        ("Broker", ResourceType.UNKNOWN),
        ("", ResourceType.UNKNOWN),
    ],
)
def test_resource_type_names_parse_leniently(text: str, expected: ResourceType) -> None:
    assert ResourceType.parse(text) is expected


def test_operation_and_permission_names_parse_leniently() -> None:
    assert AclOperation.parse("IdempotentWrite") is AclOperation.IDEMPOTENT_WRITE
    assert AclOperation.parse("idempotent-write") is AclOperation.IDEMPOTENT_WRITE
    assert AclOperation.parse("READ") is READ
    assert AclOperation.parse("Tickle") is AclOperation.UNKNOWN
    assert AclPermissionType.parse("allow") is ALLOW
    assert AclPermissionType.parse("Deny") is DENY
    assert PatternType.parse("prefixed") is PRE
    for op in AclOperation:
        assert AclOperation.parse(op.kafka_name) is op
        assert AclOperation.parse(op.name) is op


def test_resource_pattern_refuses_filter_only_values() -> None:
    with pytest.raises(ValueError, match="resourceType must not be ANY"):
        ResourcePattern(ResourceType.ANY, "t", LIT)
    with pytest.raises(ValueError, match="patternType must not be MATCH"):
        ResourcePattern(TOPIC, "t", PatternType.MATCH)
    with pytest.raises(ValueError, match="patternType must not be ANY"):
        ResourcePattern(TOPIC, "t", PatternType.ANY)
    # UNKNOWN is representable (a code this broker does not know) and says so.
    assert ResourcePattern(ResourceType.UNKNOWN, "t", LIT).is_unknown()
    assert not ResourcePattern(TOPIC, "t", PRE).is_unknown()


def test_access_control_entry_refuses_any() -> None:
    with pytest.raises(ValueError, match="operation must not be ANY"):
        AccessControlEntry("User:a", "*", AclOperation.ANY, ALLOW)
    with pytest.raises(ValueError, match="permissionType must not be ANY"):
        AccessControlEntry("User:a", "*", READ, AclPermissionType.ANY)
    assert AccessControlEntry("User:a", "*", AclOperation.UNKNOWN, ALLOW).is_unknown()


def test_bindings_are_values() -> None:
    a = AclBinding(ResourcePattern(TOPIC, "t", LIT), AccessControlEntry("User:a", "*", READ, ALLOW))
    b = AclBinding(ResourcePattern(TOPIC, "t", LIT), AccessControlEntry("User:a", "*", READ, ALLOW))
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert a.to_filter().matches(b)
    assert str(a.pattern) == "ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL)"


# -- ResourcePatternFilter.matches -----------------------------------------------------------------

LITERAL_FOO = ResourcePattern(TOPIC, "foo", LIT)
LITERAL_WILD = ResourcePattern(TOPIC, "*", LIT)
PREFIX_FO = ResourcePattern(TOPIC, "fo", PRE)
PREFIX_FOO = ResourcePattern(TOPIC, "foo", PRE)
PREFIX_BAR = ResourcePattern(TOPIC, "bar", PRE)
GROUP_FOO = ResourcePattern(GROUP, "foo", LIT)
ALL_PATTERNS = [LITERAL_FOO, LITERAL_WILD, PREFIX_FO, PREFIX_FOO, PREFIX_BAR, GROUP_FOO]


@pytest.mark.parametrize(
    ("pattern_filter", "expected"),
    [
        (ResourcePatternFilter.ANY, ALL_PATTERNS),
        (ResourcePatternFilter(TOPIC, None, PatternType.ANY), ALL_PATTERNS[:5]),
        (ResourcePatternFilter(ResourceType.ANY, "foo", PatternType.ANY), [LITERAL_FOO, PREFIX_FOO, GROUP_FOO]),
        (ResourcePatternFilter(TOPIC, "foo", LIT), [LITERAL_FOO]),
        (ResourcePatternFilter(TOPIC, "foo", PRE), [PREFIX_FOO]),
        (ResourcePatternFilter(TOPIC, None, PRE), [PREFIX_FO, PREFIX_FOO, PREFIX_BAR]),
        # MATCH: what would apply to a topic called foo.
        (ResourcePatternFilter(TOPIC, "foo", PatternType.MATCH), [LITERAL_FOO, LITERAL_WILD, PREFIX_FO, PREFIX_FOO]),
        (ResourcePatternFilter(TOPIC, "food", PatternType.MATCH), [LITERAL_WILD, PREFIX_FO, PREFIX_FOO]),
        (ResourcePatternFilter(TOPIC, "f", PatternType.MATCH), [LITERAL_WILD]),
        # A "*" name under ANY or LITERAL is only the wildcard pattern itself.
        (ResourcePatternFilter(TOPIC, "*", LIT), [LITERAL_WILD]),
        (ResourcePatternFilter(TOPIC, None, PatternType.MATCH), ALL_PATTERNS[:5]),
        (ResourcePatternFilter(ResourceType.UNKNOWN, None, PatternType.ANY), []),
        (ResourcePatternFilter(TOPIC, None, PatternType.UNKNOWN), []),
    ],
)
def test_resource_pattern_filter_matches(pattern_filter: ResourcePatternFilter, expected: list[ResourcePattern]) -> None:
    assert [p for p in ALL_PATTERNS if pattern_filter.matches(p)] == expected


def test_entry_filter_matches_null_and_any_as_wildcards_and_strings_exactly() -> None:
    entry = AccessControlEntry("User:alice", "10.0.0.1", READ, ALLOW)
    assert AccessControlEntryFilter.ANY.matches(entry)
    assert AccessControlEntryFilter("User:alice", None, AclOperation.ANY, AclPermissionType.ANY).matches(entry)
    assert not AccessControlEntryFilter("User:bob", None, AclOperation.ANY, AclPermissionType.ANY).matches(entry)
    # A filter's User:* and * are literal strings, not wildcards.
    assert not AccessControlEntryFilter("User:*", None, AclOperation.ANY, AclPermissionType.ANY).matches(entry)
    assert not AccessControlEntryFilter(None, "*", AclOperation.ANY, AclPermissionType.ANY).matches(entry)
    assert not AccessControlEntryFilter(None, None, AclOperation.WRITE, AclPermissionType.ANY).matches(entry)
    # ALL in a filter matches only entries for ALL.
    assert not AccessControlEntryFilter(None, None, AclOperation.ALL, AclPermissionType.ANY).matches(entry)
    assert not AccessControlEntryFilter(None, None, AclOperation.ANY, DENY).matches(entry)
    assert AccessControlEntryFilter(None, "10.0.0.1", READ, ALLOW).matches(entry)


def test_binding_filter_needs_both_halves() -> None:
    binding = AclBinding(PREFIX_FO, AccessControlEntry("User:a", "*", READ, ALLOW))
    assert AclBindingFilter.ANY.matches(binding)
    assert AclBindingFilter(ResourcePatternFilter(TOPIC, "fox", PatternType.MATCH), AccessControlEntryFilter.ANY).matches(binding)
    assert not AclBindingFilter(
        ResourcePatternFilter(TOPIC, "fox", PatternType.MATCH),
        AccessControlEntryFilter("User:b", None, AclOperation.ANY, AclPermissionType.ANY),
    ).matches(binding)
    assert not AclBindingFilter(ResourcePatternFilter(TOPIC, "bar", PatternType.MATCH), AccessControlEntryFilter.ANY).matches(binding)


def test_find_indefinite_field_reports_kafkas_messages_in_order() -> None:
    definite_entry = AccessControlEntryFilter("User:a", "*", READ, ALLOW)
    definite_pattern = ResourcePatternFilter(TOPIC, "t", LIT)
    assert AclBindingFilter(definite_pattern, definite_entry).find_indefinite_field() is None
    assert AclBindingFilter(definite_pattern, definite_entry).matches_at_most_one()
    cases = [
        (ResourcePatternFilter(ResourceType.ANY, None, PatternType.MATCH), definite_entry, "Resource type is ANY."),
        (ResourcePatternFilter(ResourceType.UNKNOWN, "t", LIT), definite_entry, "Resource type is UNKNOWN."),
        (ResourcePatternFilter(TOPIC, None, LIT), definite_entry, "Resource name is NULL."),
        (ResourcePatternFilter(TOPIC, "t", PatternType.MATCH), definite_entry, "Resource pattern type is MATCH."),
        (ResourcePatternFilter(TOPIC, "t", PatternType.UNKNOWN), definite_entry, "Resource pattern type is UNKNOWN."),
        (definite_pattern, AccessControlEntryFilter(None, None, AclOperation.ANY, AclPermissionType.ANY), "Principal is NULL"),
        (definite_pattern, AccessControlEntryFilter("User:a", None, READ, ALLOW), "Host is NULL"),
        (definite_pattern, AccessControlEntryFilter("User:a", "*", AclOperation.ANY, ALLOW), "Operation is ANY"),
        (definite_pattern, AccessControlEntryFilter("User:a", "*", AclOperation.UNKNOWN, ALLOW), "Operation is UNKNOWN"),
        (definite_pattern, AccessControlEntryFilter("User:a", "*", READ, AclPermissionType.ANY), "Permission type is ANY"),
        (definite_pattern, AccessControlEntryFilter("User:a", "*", READ, AclPermissionType.UNKNOWN), "Permission type is UNKNOWN"),
    ]
    for pattern_filter, entry_filter, message in cases:
        binding_filter = AclBindingFilter(pattern_filter, entry_filter)
        assert binding_filter.find_indefinite_field() == message
        assert not binding_filter.matches_at_most_one()
    # ANY as the pattern type is definite: it names the literal and the prefixed pattern.
    assert ResourcePatternFilter(TOPIC, "t", PatternType.ANY).matches_at_most_one()


def test_is_unknown_on_filters() -> None:
    assert ResourcePatternFilter(ResourceType.UNKNOWN, None, PatternType.ANY).is_unknown()
    assert AclBindingFilter(
        ResourcePatternFilter.ANY, AccessControlEntryFilter(None, None, AclOperation.UNKNOWN, AclPermissionType.ANY)
    ).is_unknown()
    assert not AclBindingFilter.ANY.is_unknown()


def test_supported_operations_per_resource_type() -> None:
    ops = AclOperation
    assert supported_operations(TOPIC) == {
        ops.READ, ops.WRITE, ops.CREATE, ops.DESCRIBE, ops.DELETE, ops.ALTER, ops.DESCRIBE_CONFIGS, ops.ALTER_CONFIGS,
    }
    assert supported_operations(GROUP) == {ops.READ, ops.DESCRIBE, ops.DELETE}
    assert supported_operations(ResourceType.CLUSTER) == {
        ops.CREATE, ops.CLUSTER_ACTION, ops.DESCRIBE_CONFIGS, ops.ALTER_CONFIGS, ops.IDEMPOTENT_WRITE, ops.ALTER, ops.DESCRIBE,
    }
    assert supported_operations(ResourceType.TRANSACTIONAL_ID) == {ops.DESCRIBE, ops.WRITE}
    assert supported_operations(ResourceType.DELEGATION_TOKEN) == {ops.DESCRIBE}
    with pytest.raises(ValueError, match="Not a concrete resource type"):
        supported_operations(ResourceType.ANY)
    assert ResourceType.ANY not in CONCRETE_RESOURCE_TYPES and len(CONCRETE_RESOURCE_TYPES) == 5
    assert AclOperation.ALL in CONCRETE_OPERATIONS and AclOperation.ANY not in CONCRETE_OPERATIONS


def test_supported_operations_agree_with_the_no_authorizer_bitfields() -> None:
    from mafka.broker import authorized_operations as bits

    def field(rt: ResourceType) -> int:
        return bits.bitfield(int(op) for op in supported_operations(rt))

    assert field(TOPIC) == bits.TOPIC_OPERATIONS
    assert field(GROUP) == bits.GROUP_OPERATIONS
    assert field(ResourceType.CLUSTER) == bits.CLUSTER_OPERATIONS


def test_implied_operations() -> None:
    ops = AclOperation
    assert IMPLIED_BY[ops.DESCRIBE] == {ops.READ, ops.WRITE, ops.DELETE, ops.ALTER}
    assert IMPLIED_BY[ops.DESCRIBE_CONFIGS] == {ops.ALTER_CONFIGS}
    assert granting_operations(ops.DESCRIBE) == {ops.DESCRIBE, ops.ALL, ops.READ, ops.WRITE, ops.DELETE, ops.ALTER}
    assert granting_operations(ops.READ) == {ops.READ, ops.ALL}
    # Implication goes one way: DESCRIBE does not grant READ, ALTER does not grant ALTER_CONFIGS.
    assert ops.DESCRIBE not in granting_operations(ops.READ)
    assert ops.ALTER not in granting_operations(ops.ALTER_CONFIGS)


def test_authorization_errors() -> None:
    assert authorization_error(TOPIC) is ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert authorization_error(GROUP) is ErrorCode.GROUP_AUTHORIZATION_FAILED
    assert authorization_error(ResourceType.CLUSTER) is ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert authorization_error(ResourceType.TRANSACTIONAL_ID) is ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    assert authorization_error(ResourceType.DELEGATION_TOKEN) is ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED
    with pytest.raises(ValueError):
        authorization_error(ResourceType.UNKNOWN)


def test_parse_acl_principal_is_securityutils_split() -> None:
    assert parse_acl_principal("User:alice") == KafkaPrincipal("User", "alice")
    assert parse_acl_principal("User:CN=a,O=b:c") == KafkaPrincipal("User", "CN=a,O=b:c")
    assert parse_acl_principal("User:") == KafkaPrincipal("User", "")
    for bad in ("", "alice"):
        with pytest.raises(ValueError, match="principalType:principalName"):
            parse_acl_principal(bad)


# -- CreateAcls validation -------------------------------------------------------------------------


def _binding(rt: ResourceType = TOPIC, name: str = "t", pt: PatternType = LIT, principal: str = "User:a",
             op: AclOperation = READ, perm: AclPermissionType = ALLOW) -> AclBinding:
    return AclBinding(ResourcePattern(rt, name, pt), AccessControlEntry(principal, "*", op, perm))


def test_valid_new_bindings_pass() -> None:
    validate_new_binding(_binding())
    validate_new_binding(_binding(pt=PRE, name="pay-"))
    validate_new_binding(_binding(ResourceType.CLUSTER, CLUSTER_NAME, op=AclOperation.ALTER))
    validate_new_binding(_binding(name=WILDCARD_RESOURCE))
    # Kafka 2.8 checks neither the operation against the type nor a prefixed "*".
    validate_new_binding(_binding(GROUP, "g", op=AclOperation.WRITE))
    validate_new_binding(_binding(name="*", pt=PRE))


@pytest.mark.parametrize(
    ("binding", "error", "message"),
    [
        (_binding(ResourceType.CLUSTER, "my-cluster"), InvalidRequestError,
         "The only valid name for the CLUSTER resource is kafka-cluster"),
        (_binding(ResourceType.CLUSTER, ""), InvalidRequestError,
         "The only valid name for the CLUSTER resource is kafka-cluster"),
        (_binding(name=""), InvalidRequestError, "Invalid empty resource name"),
        (_binding(ResourceType.UNKNOWN), InvalidRequestError, "Failed to create ACL"),
        (_binding(pt=PatternType.UNKNOWN), InvalidRequestError, "Failed to create ACL"),
        (_binding(op=AclOperation.UNKNOWN), InvalidRequestError, "Failed to create ACL"),
        (_binding(perm=AclPermissionType.UNKNOWN), InvalidRequestError, "Failed to create ACL"),
        (_binding(principal="alice"), UnknownServerError, "principalType:principalName"),
    ],
)
def test_invalid_new_bindings_are_refused_with_kafkas_error(binding: AclBinding, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message) as info:
        validate_new_binding(binding)
    expected_code = ErrorCode.INVALID_REQUEST if error is InvalidRequestError else ErrorCode.UNKNOWN_SERVER_ERROR
    assert info.value.code is expected_code  # type: ignore[attr-defined]


def test_has_unknown_code_only_catches_zero() -> None:
    assert not has_unknown_code(2, 3, 3, 3)
    assert has_unknown_code(0, 3, 3, 3)
    assert has_unknown_code(2, 0, 3, 3)
    assert has_unknown_code(2, 3, 0, 3)
    assert has_unknown_code(2, 3, 3, 0)
    assert not has_unknown_code(99, 3, 3, 3)


def test_filter_to_resources() -> None:
    assert filter_to_resources(ResourcePatternFilter(TOPIC, "t", LIT)) == {ResourcePattern(TOPIC, "t", LIT)}
    assert filter_to_resources(ResourcePatternFilter(TOPIC, "t", PRE)) == {ResourcePattern(TOPIC, "t", PRE)}
    assert filter_to_resources(ResourcePatternFilter(TOPIC, "t", PatternType.ANY)) == {
        ResourcePattern(TOPIC, "t", LIT), ResourcePattern(TOPIC, "t", PRE),
    }
    for indefinite in (ResourcePatternFilter(TOPIC, "t", PatternType.MATCH), ResourcePatternFilter(TOPIC, None, LIT)):
        with pytest.raises(ValueError):
            filter_to_resources(indefinite)
