"""The admin client's ACL API (``create_acls``, ``describe_acls``, ``delete_acls``) and its types.

The types are checked against confluent-kafka's own (installed for the tests):
same names, codes, constructor conversions and refusals.  The operations run
the real :class:`~mafka.client.admin.AdminClient` over
:class:`~tests.unit.cli.fake_wire.AclWireFake`, which answers as a Kafka 2.8
broker with an authorizer (no sockets).
"""

from __future__ import annotations

from collections.abc import Iterator

import confluent_kafka.admin as ck
import pytest

from mafka.client.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)
from mafka.client.kafka_error import KafkaException
from mafka.errors import ErrorCode
from mafka.security import acl
from tests.unit.cli.fake_wire import AclWireFake

TOPIC, GROUP, LITERAL, PREFIXED = ResourceType.TOPIC, ResourceType.GROUP, ResourcePatternType.LITERAL, \
    ResourcePatternType.PREFIXED
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY


def binding(name: str = "t", principal: str = "User:alice", op: AclOperation = AclOperation.READ,
            restype: ResourceType = TOPIC, pattern: ResourcePatternType = LITERAL,
            permission: AclPermissionType = ALLOW) -> AclBinding:
    return AclBinding(restype, name, pattern, principal, "*", op, permission)


def any_filter(**kwargs: object) -> AclBindingFilter:
    args: dict[str, object] = {"restype": ResourceType.ANY, "name": None,
                               "resource_pattern_type": ResourcePatternType.ANY, "principal": None, "host": None,
                               "operation": AclOperation.ANY, "permission_type": AclPermissionType.ANY}
    args.update(kwargs)
    return AclBindingFilter(**args)  # type: ignore[arg-type]


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> AclWireFake:
    cluster = AclWireFake()
    cluster.install(monkeypatch)
    return cluster


@pytest.fixture
def admin(fake: AclWireFake) -> Iterator[AdminClient]:
    client = AdminClient({"bootstrap.servers": "b1:9092"})
    try:
        yield client
    finally:
        client.close()


# -- the types ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("ours", "theirs"), [
    (ResourcePatternType, ck.ResourcePatternType), (AclOperation, ck.AclOperation),
    (AclPermissionType, ck.AclPermissionType), (ResourceType, ck.ResourceType),
])
def test_enums_have_confluent_kafkas_names_and_codes(ours: type, theirs: type) -> None:
    mine = [(m.name, m.value) for m in ours]  # type: ignore[attr-defined]
    confluents = [(m.name, m.value) for m in theirs]  # type: ignore[attr-defined]
    assert mine[:len(confluents)] == confluents
    # the one widening allowed: Kafka's DELEGATION_TOKEN resource type, which librdkafka lacks
    assert set(mine[len(confluents):]) <= {("DELEGATION_TOKEN", 6)}


@pytest.mark.parametrize(("ours", "kafkas"), [
    (ResourcePatternType, acl.PatternType), (AclOperation, acl.AclOperation),
    (AclPermissionType, acl.AclPermissionType),
])
def test_enum_codes_are_the_brokers(ours: type, kafkas: type) -> None:
    assert {m.name: m.value for m in ours} == {m.name: int(m) for m in kafkas}  # type: ignore[attr-defined]


def test_binding_converts_names_and_codes_as_confluent_kafka() -> None:
    b = AclBinding("topic", "t", "prefixed", "User:alice", "*", "read", 3)
    assert (b.restype, b.resource_pattern_type, b.operation, b.permission_type) == (
        TOPIC, PREFIXED, AclOperation.READ, ALLOW)
    assert (b.restype_int, b.resource_pattern_type_int, b.operation_int, b.permission_type_int) == (2, 4, 3, 3)
    theirs = ck.AclBinding("topic", "t", "prefixed", "User:alice", "*", "read", 3)
    assert repr(b) == repr(theirs) == \
        "AclBinding(ResourceType.TOPIC,t,ResourcePatternType.PREFIXED,User:alice,*,AclOperation.READ," \
        "AclPermissionType.ALLOW)"
    # Kafka's own IntEnums convert by code
    assert AclBinding(acl.ResourceType.GROUP, "g", acl.PatternType.LITERAL, "User:a", "*", acl.AclOperation.DELETE,
                      acl.AclPermissionType.DENY) == binding("g", "User:a", AclOperation.DELETE, GROUP, LITERAL, DENY)


@pytest.mark.parametrize(("args", "error", "message"), [
    (("any", "t", "literal", "User:a", "*", "read", "allow"), ValueError,
     "Cannot use enum restype, value ANY in this class"),
    (("topic", "t", "match", "User:a", "*", "read", "allow"), ValueError,
     "Cannot use enum resource_pattern_type, value MATCH in this class"),
    (("topic", "t", "literal", "User:a", "*", "any", "allow"), ValueError,
     "Cannot use enum operation, value ANY in this class"),
    (("topic", "t", "literal", "User:a", "*", "read", "any"), ValueError,
     "Cannot use enum permission_type, value ANY in this class"),
    (("topic", None, "literal", "User:a", "*", "read", "allow"), ValueError, "Expected name to be not None"),
    (("topic", 5, "literal", "User:a", "*", "read", "allow"), TypeError, "Expected name to be a string"),
    (("topic", "t", "sideways", "User:a", "*", "read", "allow"), ValueError,
     'Unknown value "sideways": should be a ResourcePatternType'),
    (("topic", "t", "literal", "User:a", "*", 4.0, "allow"), TypeError,
     'Unknown value "4.0": should be a AclOperation'),
])
def test_binding_refuses_what_confluent_kafka_refuses(args: tuple[object, ...], error: type[Exception],
                                                     message: str) -> None:
    with pytest.raises(error, match=message):
        AclBinding(*args)  # type: ignore[arg-type]
    with pytest.raises(error, match=message):
        ck.AclBinding(*args)


def test_filter_takes_any_and_none_but_not_unknown() -> None:
    f = any_filter(resource_pattern_type="match", name="t")
    assert (f.restype, f.name, f.principal, f.host) == (ResourceType.ANY, "t", None, None)
    assert f.resource_pattern_type_int == 2
    with pytest.raises(ValueError, match="Cannot use enum operation, value UNKNOWN in this class"):
        any_filter(operation=AclOperation.UNKNOWN)
    with pytest.raises(ValueError, match="Expected restype to be not None"):
        any_filter(restype=None)


def test_bindings_are_equal_hashed_and_ordered_by_every_field() -> None:
    a, b = binding("a"), binding("b")
    assert a == binding("a") and hash(a) == hash(binding("a")) and a != b
    assert sorted([b, a]) == [a, b]
    assert binding(permission=DENY) < binding(permission=ALLOW)  # DENY 2 < ALLOW 3
    assert {a: 1}[binding("a")] == 1


# -- the operations -------------------------------------------------------------------------------


def test_create_acls_sends_each_binding_and_resolves_each(fake: AclWireFake, admin: AdminClient) -> None:
    wanted = [binding(), binding("pre-", "User:bob", AclOperation.WRITE, pattern=PREFIXED),
              binding("kafka-cluster", "User:bob", AclOperation.IDEMPOTENT_WRITE, restype=ResourceType.BROKER)]
    futures = admin.create_acls(wanted)
    assert list(futures) == wanted
    assert [f.result(10) for f in futures.values()] == [None, None, None]
    (request, _), = fake.api_calls(30)
    assert [(c.resource_type, c.resource_name, c.resource_pattern_type, c.principal, c.host, c.operation,
             c.permission_type) for c in request.creations] == [
        (2, "t", 3, "User:alice", "*", 3, 3), (2, "pre-", 4, "User:bob", "*", 4, 3),
        (4, "kafka-cluster", 3, "User:bob", "*", 12, 3)]
    assert [str(b) for b in fake.acls] == [
        "(pattern=ResourcePattern(resourceType=TOPIC, name=t, patternType=LITERAL), entry=(principal=User:alice, "
        "host=*, operation=READ, permissionType=ALLOW))",
        "(pattern=ResourcePattern(resourceType=TOPIC, name=pre-, patternType=PREFIXED), entry=(principal=User:bob, "
        "host=*, operation=WRITE, permissionType=ALLOW))",
        "(pattern=ResourcePattern(resourceType=CLUSTER, name=kafka-cluster, patternType=LITERAL), "
        "entry=(principal=User:bob, host=*, operation=IDEMPOTENT_WRITE, permissionType=ALLOW))"]


def test_create_acls_fails_only_the_bindings_the_broker_refuses(fake: AclWireFake, admin: AdminClient) -> None:
    good, bad = binding(), binding("not-the-cluster", restype=ResourceType.BROKER, op=AclOperation.ALTER)
    futures = admin.create_acls([good, bad])
    assert futures[good].result(10) is None
    with pytest.raises(KafkaException) as refused:
        futures[bad].result(10)
    assert refused.value.error.code() == ErrorCode.INVALID_REQUEST
    assert "The only valid name for the CLUSTER resource is kafka-cluster" in refused.value.error.str()


def test_create_acls_checks_its_arguments(admin: AdminClient) -> None:
    with pytest.raises(TypeError, match="Expected list of AclBinding objects"):
        admin.create_acls(binding())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="AclBindingFilter"):
        admin.create_acls([any_filter()])
    with pytest.raises(ValueError, match="duplicate ACL bindings not allowed"):
        admin.create_acls([binding(), binding()])
    with pytest.raises(ValueError, match="non-empty"):
        admin.create_acls([])


def test_describe_acls_returns_the_matching_bindings(fake: AclWireFake, admin: AdminClient) -> None:
    for f in admin.create_acls([binding(), binding("t", "User:bob", AclOperation.WRITE, permission=DENY),
                                binding("t", pattern=PREFIXED), binding("u"), binding("*")]).values():
        f.result(10)
    described = admin.describe_acls(any_filter(restype=TOPIC, name="t", resource_pattern_type="match")).result(10)
    assert sorted(described) == sorted([binding(), binding("t", "User:bob", AclOperation.WRITE, permission=DENY),
                                        binding("t", pattern=PREFIXED), binding("*")])
    assert all(type(b) is AclBinding for b in described)
    (request, _), = fake.api_calls(29)
    assert (request.resource_type_filter, request.resource_name_filter, request.pattern_type_filter,
            request.principal_filter, request.host_filter, request.operation, request.permission_type) == (
        2, "t", 2, None, None, 1, 1)
    assert admin.describe_acls(any_filter(principal="User:bob")).result(10) == [
        binding("t", "User:bob", AclOperation.WRITE, permission=DENY)]
    assert admin.describe_acls(any_filter(restype=GROUP)).result(10) == []


def test_describe_acls_reports_codes_it_does_not_know_as_unknown(fake: AclWireFake, admin: AdminClient) -> None:
    # a newer broker's operation code must not make the answer unreadable
    fake.acls.append(acl.AclBinding(acl.ResourcePattern(acl.ResourceType.TOPIC, "t", acl.PatternType.LITERAL),
                                    acl.AccessControlEntry("User:a", "*", acl.AclOperation.from_code(13),
                                                           acl.AclPermissionType.ALLOW)))
    fake._DescribeAcls = lambda req, broker: {  # type: ignore[method-assign]
        "error_code": 0, "error_message": None,
        "resources": [{"resource_type": 2, "resource_name": "t", "pattern_type": 3,
                       "acls": [{"principal": "User:a", "host": "*", "operation": 13, "permission_type": 3}]}]}
    (b,) = admin.describe_acls(any_filter()).result(10)
    assert (b.restype, b.operation, b.operation_int) == (TOPIC, AclOperation.UNKNOWN, 0)


def test_describe_acls_fails_with_the_brokers_error(fake: AclWireFake, admin: AdminClient) -> None:
    fake.authorizer = False
    with pytest.raises(KafkaException) as disabled:
        admin.describe_acls(any_filter()).result(10)
    assert disabled.value.error.code() == ErrorCode.SECURITY_DISABLED
    assert disabled.value.error.str() == "No Authorizer is configured on the broker"
    fake.authorizer = True
    fake.refuse[29] = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    with pytest.raises(KafkaException) as refused:
        admin.describe_acls(any_filter()).result(10)
    assert refused.value.error.code() == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    with pytest.raises(TypeError, match="AclBindingFilter"):
        admin.describe_acls(binding())  # type: ignore[arg-type]


def test_delete_acls_returns_what_each_filter_deleted(fake: AclWireFake, admin: AdminClient) -> None:
    for f in admin.create_acls([binding(), binding("t", "User:bob"), binding("u"), binding("g", restype=GROUP)
                                ]).values():
        f.result(10)
    only_bob = any_filter(restype=TOPIC, principal="User:bob")
    groups = any_filter(restype=GROUP)
    nothing = any_filter(name="nope")
    futures = admin.delete_acls([only_bob, groups, nothing])
    assert list(futures) == [only_bob, groups, nothing]
    assert futures[only_bob].result(10) == [binding("t", "User:bob")]
    assert futures[groups].result(10) == [binding("g", restype=GROUP)]
    assert futures[nothing].result(10) == []
    assert sorted(admin.describe_acls(any_filter()).result(10)) == sorted([binding(), binding("u")])


def test_delete_acls_fails_every_filter_the_broker_refuses(fake: AclWireFake, admin: AdminClient) -> None:
    fake.refuse[31] = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    filters = [any_filter(name="a"), any_filter(name="b")]
    for future in admin.delete_acls(filters).values():
        with pytest.raises(KafkaException) as refused:
            future.result(10)
        assert refused.value.error.code() == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    with pytest.raises(ValueError, match="duplicate ACL binding filters not allowed"):
        admin.delete_acls([any_filter(), any_filter()])
    with pytest.raises(TypeError, match="Expected list of AclBindingFilter objects"):
        admin.delete_acls([binding()])  # type: ignore[list-item]


def test_delete_acls_fails_a_filter_whose_matching_acl_failed(fake: AclWireFake, admin: AdminClient) -> None:
    fake._DeleteAcls = lambda req, broker: {"filter_results": [  # type: ignore[method-assign]
        {"error_code": 0, "error_message": None, "matching_acls": [
            {"error_code": ErrorCode.UNKNOWN_SERVER_ERROR, "error_message": "zk down", "resource_type": 2,
             "resource_name": "t", "pattern_type": 3, "principal": "User:a", "host": "*", "operation": 3,
             "permission_type": 3}]}]}
    f = any_filter()
    with pytest.raises(KafkaException) as failed:
        admin.delete_acls([f])[f].result(10)
    assert failed.value.error.code() == ErrorCode.UNKNOWN_SERVER_ERROR


def test_acl_calls_on_a_closed_client_raise(fake: AclWireFake) -> None:
    client = AdminClient({"bootstrap.servers": "b1:9092"})
    client.close()
    with pytest.raises(RuntimeError, match="closed"):
        client.describe_acls(any_filter())
