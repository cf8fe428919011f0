"""AclAuthorizer 2.8's decisions: the matrix, the KIP-679 by-type check, and the index against a scan."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mafka.broker.authorized_operations import bitfield
from mafka.security.acl import (
    IMPLIED_BY,
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
    parse_acl_principal,
    supported_operations,
)
from mafka.security.authorizer import AclAuthorizer, parse_super_users
from mafka.security.principal import WILDCARD_PRINCIPAL, KafkaPrincipal
from tests.hypothesis_budget import examples

Op = AclOperation
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED
TOPIC, GROUP, CLUSTER, TXN = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER, ResourceType.TRANSACTIONAL_ID
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY


def user(name: str) -> KafkaPrincipal:
    return KafkaPrincipal("User", name)


ALICE, BOB, CAROL, MALLORY, ADMIN, ROOT = (user(n) for n in ("alice", "bob", "carol", "mallory", "admin", "root"))


def acl(rt: ResourceType, name: str, pt: PatternType, principal: str, op: AclOperation,
        perm: AclPermissionType = ALLOW, host: str = "*") -> AclBinding:
    return AclBinding(ResourcePattern(rt, name, pt), AccessControlEntry(principal, host, op, perm))


def load(authorizer: AclAuthorizer, bindings: Iterable[AclBinding]) -> AclAuthorizer:
    grouped: dict[ResourcePattern, set[AccessControlEntry]] = defaultdict(set)
    for b in bindings:
        grouped[b.pattern].add(b.entry)
    for pattern, entries in grouped.items():
        authorizer.update(pattern, entries)
    return authorizer


ACLS = [
    acl(TOPIC, "orders", LIT, "User:alice", Op.READ),
    acl(TOPIC, "orders", LIT, "User:bob", Op.WRITE, host="10.0.0.2"),
    acl(TOPIC, "orders", LIT, "User:mallory", Op.ALL, DENY),
    acl(TOPIC, "*", LIT, "User:*", Op.DESCRIBE),
    acl(TOPIC, "pay-", PRE, "User:carol", Op.ALL),
    acl(TOPIC, "pay-", PRE, "User:carol", Op.WRITE, DENY, host="10.0.0.66"),
    acl(TOPIC, "pay-secret", LIT, "User:carol", Op.READ, DENY),
    acl(GROUP, "g1", LIT, "User:alice", Op.READ),
    acl(CLUSTER, "kafka-cluster", LIT, "User:admin", Op.ALTER),
]


def make(allow_everyone: bool = False) -> AclAuthorizer:
    return load(AclAuthorizer(parse_super_users("User:root"), allow_everyone), ACLS)


H = "1.1.1.1"

MATRIX = [
    # principal, host, operation, resource type, name, allowed
    (ALICE, H, Op.READ, TOPIC, "orders", True),  # literal allow
    (ALICE, H, Op.WRITE, TOPIC, "orders", False),  # no allow for the operation
    (ALICE, H, Op.DESCRIBE, TOPIC, "orders", True),  # implied by READ (and the wildcard)
    (ALICE, H, Op.READ, TOPIC, "other", False),  # the wildcard's ACLs apply: not allow-everyone
    (ALICE, H, Op.DESCRIBE, TOPIC, "other", True),  # wildcard resource, wildcard principal
    (ALICE, H, Op.DELETE, TOPIC, "other", False),
    (BOB, "10.0.0.2", Op.WRITE, TOPIC, "orders", True),  # host matches
    (BOB, "10.0.0.3", Op.WRITE, TOPIC, "orders", False),  # host does not
    (BOB, "10.0.0.20", Op.WRITE, TOPIC, "orders", False),  # hosts are compared whole
    (BOB, "10.0.0.3", Op.DESCRIBE, TOPIC, "orders", True),  # the wildcard Describe
    (BOB, "10.0.0.2", Op.READ, TOPIC, "orders", False),  # WRITE does not imply READ
    (MALLORY, H, Op.DESCRIBE, TOPIC, "orders", False),  # DENY ALL beats the wildcard allow
    (MALLORY, H, Op.DESCRIBE, TOPIC, "other", True),
    (CAROL, H, Op.WRITE, TOPIC, "pay-1", True),  # prefixed ALLOW ALL
    (CAROL, H, Op.ALTER_CONFIGS, TOPIC, "pay-", True),  # a prefix matches itself
    (CAROL, "10.0.0.66", Op.WRITE, TOPIC, "pay-1", False),  # prefixed DENY from that host
    (CAROL, "10.0.0.66", Op.READ, TOPIC, "pay-1", True),  # ...for WRITE only
    (CAROL, H, Op.READ, TOPIC, "pay-secret", False),  # literal DENY beats prefixed ALLOW
    (CAROL, H, Op.WRITE, TOPIC, "pay-secret", True),
    (CAROL, H, Op.READ, TOPIC, "pa", False),  # shorter than the prefix
    (CAROL, H, Op.READ, TOPIC, "xpay-1", False),  # prefixes match at the start only
    (ALICE, H, Op.READ, TOPIC, "pay-1", False),  # prefix ACLs are carol's
    (CAROL, H, Op.READ, GROUP, "pay-1", False),  # ...and for topics (no group ACLs: closed)
    (ALICE, H, Op.READ, GROUP, "g1", True),
    (ALICE, H, Op.DESCRIBE, GROUP, "g1", True),  # implied by READ
    (ALICE, H, Op.DELETE, GROUP, "g1", False),
    (BOB, H, Op.READ, GROUP, "g1", False),
    (ADMIN, H, Op.ALTER, CLUSTER, "kafka-cluster", True),
    (ADMIN, H, Op.DESCRIBE, CLUSTER, "kafka-cluster", True),  # implied by ALTER
    (ADMIN, H, Op.ALTER_CONFIGS, CLUSTER, "kafka-cluster", False),  # ALTER is not ALTER_CONFIGS
    (ADMIN, H, Op.DESCRIBE_CONFIGS, CLUSTER, "kafka-cluster", False),
    (ALICE, H, Op.CLUSTER_ACTION, CLUSTER, "kafka-cluster", False),
    (ROOT, H, Op.READ, TOPIC, "orders", True),  # super user
    (ROOT, H, Op.ALTER_CONFIGS, CLUSTER, "kafka-cluster", True),
    (KafkaPrincipal("Group", "root"), H, Op.READ, TOPIC, "orders", False),  # the type counts
]


@pytest.mark.parametrize(("principal", "host", "op", "rt", "name", "allowed"), MATRIX)
def test_matrix(principal: KafkaPrincipal, host: str, op: AclOperation, rt: ResourceType, name: str, allowed: bool) -> None:
    assert make().authorize(principal, host, op, rt, name) is allowed
    # allow.everyone.if.no.acl.found opens only the resources no ACL applies to.
    applicable = AclBindingFilter(ResourcePatternFilter(rt, name, PatternType.MATCH), AccessControlEntryFilter.ANY)
    has_acls = bool(make().acls(applicable))
    assert make(allow_everyone=True).authorize(principal, host, op, rt, name) is (allowed or not has_acls)


@pytest.mark.parametrize(("rt", "name"), [(GROUP, "g2"), (TXN, "tx-1"), (ResourceType.DELEGATION_TOKEN, "tok")])
def test_no_acl_found_follows_allow_everyone(rt: ResourceType, name: str) -> None:
    assert make(allow_everyone=False).authorize(ALICE, H, Op.DESCRIBE, rt, name) is False
    assert make(allow_everyone=True).authorize(ALICE, H, Op.DESCRIBE, rt, name) is True
    assert make(allow_everyone=False).authorize(ROOT, H, Op.DESCRIBE, rt, name) is True


def test_an_empty_authorizer() -> None:
    assert AclAuthorizer().authorize(ALICE, H, Op.WRITE, TOPIC, "t") is False
    assert AclAuthorizer(allow_everyone_if_no_acl_found=True).authorize(ALICE, H, Op.WRITE, TOPIC, "t") is True


def test_unknown_entries_still_count_as_acls_but_grant_nothing() -> None:
    authorizer = AclAuthorizer(allow_everyone_if_no_acl_found=True)
    authorizer.update(ResourcePattern(TOPIC, "t", LIT), [AccessControlEntry("User:alice", "*", Op.UNKNOWN, ALLOW)])
    assert authorizer.authorize(ALICE, H, Op.READ, TOPIC, "t") is False


def test_deny_beats_allow_on_the_same_resource() -> None:
    authorizer = load(AclAuthorizer(), [
        acl(TOPIC, "t", LIT, "User:alice", Op.ALL),
        acl(TOPIC, "t", LIT, "User:alice", Op.READ, DENY),
    ])
    assert authorizer.authorize(ALICE, H, Op.READ, TOPIC, "t") is False
    assert authorizer.authorize(ALICE, H, Op.WRITE, TOPIC, "t") is True


def test_deny_is_not_implied() -> None:
    # A DENY READ does not deny DESCRIBE; an ALLOW READ still implies it.
    authorizer = load(AclAuthorizer(), [
        acl(TOPIC, "t", LIT, "User:alice", Op.READ),
        acl(TOPIC, "t", LIT, "User:alice", Op.READ, DENY, host="6.6.6.6"),
    ])
    assert authorizer.authorize(ALICE, "6.6.6.6", Op.READ, TOPIC, "t") is False
    assert authorizer.authorize(ALICE, "6.6.6.6", Op.DESCRIBE, TOPIC, "t") is True


def test_implied_describe_configs() -> None:
    authorizer = load(AclAuthorizer(), [acl(TOPIC, "t", LIT, "User:alice", Op.ALTER_CONFIGS)])
    assert authorizer.authorize(ALICE, H, Op.DESCRIBE_CONFIGS, TOPIC, "t") is True
    assert authorizer.authorize(ALICE, H, Op.DESCRIBE, TOPIC, "t") is False
    for implying in (Op.READ, Op.WRITE, Op.DELETE, Op.ALTER):
        one = load(AclAuthorizer(), [acl(TOPIC, "t", LIT, "User:alice", implying)])
        assert one.authorize(ALICE, H, Op.DESCRIBE, TOPIC, "t") is True
        assert one.authorize(ALICE, H, Op.DESCRIBE_CONFIGS, TOPIC, "t") is False


def test_wildcard_principal_applies_to_every_principal_type_and_wildcard_deny_beats_all() -> None:
    authorizer = load(AclAuthorizer(["User:root"]), [
        acl(TOPIC, "t", LIT, "User:*", Op.READ),
        acl(TOPIC, "t", LIT, "User:*", Op.WRITE, DENY),
        acl(TOPIC, "t", LIT, "User:alice", Op.WRITE),
        acl(TOPIC, "u", LIT, "Group:*", Op.READ),
    ])
    devs = KafkaPrincipal("Group", "devs")
    assert authorizer.authorize(devs, H, Op.READ, TOPIC, "t") is True  # Kafka's User:* is any principal
    assert authorizer.authorize(ALICE, H, Op.WRITE, TOPIC, "t") is False
    assert authorizer.authorize(ROOT, H, Op.WRITE, TOPIC, "t") is True
    assert authorizer.authorize(devs, H, Op.READ, TOPIC, "u") is False  # Group:* is just a name


def test_wildcard_resource_deny_covers_every_name() -> None:
    authorizer = load(AclAuthorizer(), [
        acl(TOPIC, "t", LIT, "User:alice", Op.READ),
        acl(TOPIC, "x-", PRE, "User:alice", Op.READ),
        acl(TOPIC, "*", LIT, "User:alice", Op.READ, DENY),
    ])
    assert authorizer.authorize(ALICE, H, Op.READ, TOPIC, "t") is False
    assert authorizer.authorize(ALICE, H, Op.READ, TOPIC, "x-1") is False


def test_nested_prefixes_all_apply() -> None:
    authorizer = load(AclAuthorizer(), [
        acl(TOPIC, "a", PRE, "User:alice", Op.READ),
        acl(TOPIC, "ab", PRE, "User:alice", Op.WRITE),
        acl(TOPIC, "abc", PRE, "User:alice", Op.READ, DENY),
    ])
    assert authorizer.authorize(ALICE, H, Op.READ, TOPIC, "ab-1") is True
    assert authorizer.authorize(ALICE, H, Op.WRITE, TOPIC, "ab-1") is True
    assert authorizer.authorize(ALICE, H, Op.WRITE, TOPIC, "a-1") is False
    assert authorizer.authorize(ALICE, H, Op.READ, TOPIC, "abcd") is False
    assert authorizer.authorize(ALICE, H, Op.WRITE, TOPIC, "abcd") is True


def test_a_star_name_is_only_literal_wildcard_when_literal() -> None:
    # A PREFIXED "*" is a prefix like any other: names starting with "*".
    authorizer = load(AclAuthorizer(), [acl(TOPIC, "*", PRE, "User:alice", Op.READ)])
    assert authorizer.authorize(ALICE, H, Op.READ, TOPIC, "orders") is False
    assert authorizer.authorize(ALICE, H, Op.READ, TOPIC, "*orders") is True


def test_updates_and_removals_change_the_answers() -> None:
    authorizer = AclAuthorizer()
    pattern = ResourcePattern(TOPIC, "pay-", PRE)
    authorizer.update(pattern, [AccessControlEntry("User:alice", "*", Op.READ, ALLOW)])
    assert authorizer.authorize(ALICE, H, Op.READ, TOPIC, "pay-1")
    authorizer.update(pattern, [AccessControlEntry("User:alice", "*", Op.WRITE, ALLOW)])
    assert not authorizer.authorize(ALICE, H, Op.READ, TOPIC, "pay-1")
    assert authorizer.authorize(ALICE, H, Op.WRITE, TOPIC, "pay-1")
    authorizer.update(pattern, [])
    assert authorizer.patterns() == [] and len(authorizer) == 0
    assert not authorizer.authorize(ALICE, H, Op.WRITE, TOPIC, "pay-1")
    authorizer.update(pattern, [AccessControlEntry("User:alice", "*", Op.WRITE, ALLOW)])
    authorizer.remove(pattern)
    authorizer.remove(pattern)  # idempotent
    assert not authorizer.authorize(ALICE, H, Op.WRITE, TOPIC, "pay-1")
    assert not authorizer.authorize_by_resource_type(ALICE, H, Op.WRITE, TOPIC)


def test_update_refuses_bad_input_without_changing_anything() -> None:
    authorizer = make()
    before = sorted(map(str, authorizer.acls()))
    with pytest.raises(ValueError):
        authorizer.update(ResourcePattern(TOPIC, "orders", LIT), [AccessControlEntry("alice", "*", Op.READ, ALLOW)])
    with pytest.raises(ValueError):
        authorizer.update(ResourcePattern(TOPIC, "orders", PatternType.UNKNOWN), [])
    assert sorted(map(str, authorizer.acls())) == before
    assert authorizer.authorize(ALICE, H, Op.READ, TOPIC, "orders")


def test_super_users_config() -> None:
    assert parse_super_users("User:root; User:admin ;Group:ops") == {ROOT, ADMIN, KafkaPrincipal("Group", "ops")}
    assert parse_super_users("") == frozenset() and parse_super_users(None) == frozenset()
    assert parse_super_users("User:root;") == {ROOT}  # Java's split drops trailing empties
    with pytest.raises(ValueError):
        parse_super_users("User:root;;User:admin")
    with pytest.raises(ValueError):
        parse_super_users("User:root;admin")
    authorizer = AclAuthorizer(["User:root", ADMIN])
    assert authorizer.is_super_user(ROOT) and authorizer.is_super_user(ADMIN) and not authorizer.is_super_user(ALICE)


def test_authorized_operations() -> None:
    authorizer = make()
    assert authorizer.authorized_operations(ALICE, H, TOPIC, "orders") == {Op.READ, Op.DESCRIBE}
    assert authorizer.authorized_operations(CAROL, H, TOPIC, "pay-1") == supported_operations(TOPIC)
    assert authorizer.authorized_operations(CAROL, H, TOPIC, "pay-secret") == supported_operations(TOPIC) - {Op.READ}
    assert authorizer.authorized_operations(ADMIN, H, CLUSTER, "kafka-cluster") == {Op.ALTER, Op.DESCRIBE}
    assert authorizer.authorized_operations(ROOT, H, GROUP, "g9") == supported_operations(GROUP)
    assert authorizer.authorized_operations(ALICE, H, GROUP, "g9") == set()
    assert bitfield(authorizer.authorized_operations(ALICE, H, GROUP, "g1")) == (1 << 3) | (1 << 8)


def test_acls_filters_bindings() -> None:
    authorizer = make()
    assert len(authorizer.acls()) == len(ACLS) == len(authorizer)
    assert set(authorizer.acls()) == set(ACLS)
    match_pay = AclBindingFilter(ResourcePatternFilter(TOPIC, "pay-secret", PatternType.MATCH), AccessControlEntryFilter.ANY)
    assert set(authorizer.acls(match_pay)) == {
        acl(TOPIC, "*", LIT, "User:*", Op.DESCRIBE),
        acl(TOPIC, "pay-", PRE, "User:carol", Op.ALL),
        acl(TOPIC, "pay-", PRE, "User:carol", Op.WRITE, DENY, host="10.0.0.66"),
        acl(TOPIC, "pay-secret", LIT, "User:carol", Op.READ, DENY),
    }
    carol_denies = AclBindingFilter(ResourcePatternFilter.ANY, AccessControlEntryFilter("User:carol", None, Op.ANY, DENY))
    assert {b.pattern.name for b in authorizer.acls(carol_denies)} == {"pay-", "pay-secret"}
    assert authorizer.entries(ResourcePattern(GROUP, "g1", LIT)) == {AccessControlEntry("User:alice", "*", Op.READ, ALLOW)}


# -- authorize_by_resource_type (KIP-679) -----------------------------------------------------------


def by_type(bindings: list[AclBinding], principal: KafkaPrincipal = ALICE, op: AclOperation = Op.WRITE,
            allow_everyone: bool = False) -> bool:
    return load(AclAuthorizer(["User:root"], allow_everyone), bindings).authorize_by_resource_type(principal, H, op, TOPIC)


def test_by_type_literal_and_prefix_allows() -> None:
    assert by_type([acl(TOPIC, "t", LIT, "User:alice", Op.WRITE)]) is True
    assert by_type([acl(TOPIC, "t-", PRE, "User:alice", Op.WRITE)]) is True
    assert by_type([acl(TOPIC, "t", LIT, "User:*", Op.ALL)]) is True
    assert by_type([acl(TOPIC, "t", LIT, "User:bob", Op.WRITE)]) is False
    assert by_type([acl(TOPIC, "t", LIT, "User:alice", Op.READ)]) is False
    assert by_type([acl(GROUP, "t", LIT, "User:alice", Op.WRITE)]) is False
    assert by_type([acl(TOPIC, "t", LIT, "User:alice", Op.WRITE, host="9.9.9.9")]) is False
    # No implication here: READ allows DESCRIBE on a topic but not "DESCRIBE on some topic".
    assert by_type([acl(TOPIC, "t", LIT, "User:alice", Op.READ)], op=Op.DESCRIBE) is False


def test_by_type_denies() -> None:
    allow_t = acl(TOPIC, "t", LIT, "User:alice", Op.WRITE)
    assert by_type([allow_t, acl(TOPIC, "t", LIT, "User:alice", Op.WRITE, DENY)]) is False
    assert by_type([allow_t, acl(TOPIC, "t", PRE, "User:alice", Op.WRITE, DENY)]) is False
    assert by_type([allow_t, acl(TOPIC, "", PRE, "User:alice", Op.WRITE, DENY)]) is True  # no empty prefix
    assert by_type([allow_t, acl(TOPIC, "tt", PRE, "User:alice", Op.WRITE, DENY)]) is True
    assert by_type([allow_t, acl(TOPIC, "u", LIT, "User:alice", Op.WRITE, DENY)]) is True
    assert by_type([allow_t, acl(TOPIC, "*", LIT, "User:*", Op.ALL, DENY)]) is False
    allow_p = acl(TOPIC, "pay-", PRE, "User:alice", Op.WRITE)
    assert by_type([allow_p, acl(TOPIC, "pay", PRE, "User:alice", Op.WRITE, DENY)]) is False
    assert by_type([allow_p, acl(TOPIC, "pay-", LIT, "User:alice", Op.WRITE, DENY)]) is True  # a literal deny does not dominate a prefix
    # A literal wildcard allow wins over any non-wildcard deny.
    assert by_type([acl(TOPIC, "*", LIT, "User:alice", Op.WRITE), acl(TOPIC, "p", PRE, "User:alice", Op.WRITE, DENY)]) is True


def test_by_type_super_user_and_allow_everyone() -> None:
    deny_all = [acl(TOPIC, "*", LIT, "User:alice", Op.WRITE, DENY)]
    assert by_type([], principal=ROOT) is True
    assert by_type(deny_all, principal=ROOT) is True
    assert by_type([], allow_everyone=True) is True
    assert by_type(deny_all, allow_everyone=True) is False
    # Kafka 2.8 says yes here, whatever non-wildcard ACLs exist.
    assert by_type([acl(TOPIC, "t", LIT, "User:alice", Op.WRITE, DENY)], allow_everyone=True) is True
    assert by_type([]) is False


def test_by_type_refuses_filter_values() -> None:
    authorizer = AclAuthorizer()
    for op, rt, message in [
        (Op.WRITE, ResourceType.ANY, "non-filter resource type"),
        (Op.WRITE, ResourceType.UNKNOWN, "Unknown resource type"),
        (Op.ANY, TOPIC, "non-filter operation type"),
        (Op.UNKNOWN, TOPIC, "Unknown operation type"),
    ]:
        with pytest.raises(ValueError, match=message):
            authorizer.authorize_by_resource_type(ALICE, H, op, rt)


# -- the index against a linear scan ------------------------------------------------------------------


def scan_authorize(bindings: list[AclBinding], supers: frozenset[KafkaPrincipal], allow_everyone: bool,
                   principal: KafkaPrincipal, host: str, op: AclOperation, rt: ResourceType, name: str) -> bool:
    """aclsAllowAccess as a linear scan, with the pattern matching of a MATCH filter."""
    if principal in supers:
        return True
    applicable = ResourcePatternFilter(rt, name, PatternType.MATCH)
    entries = [b.entry for b in bindings if applicable.matches(b.pattern)]
    if not entries:
        return allow_everyone

    def hit(e: AccessControlEntry, ops: set[AclOperation], perm: AclPermissionType) -> bool:
        p = parse_acl_principal(e.principal)
        return (e.permission_type == perm and p in (principal, WILDCARD_PRINCIPAL)
                and e.host in (host, "*") and (e.operation in ops or e.operation == Op.ALL))

    if any(hit(e, {op}, DENY) for e in entries):
        return False
    return any(hit(e, {op} | IMPLIED_BY.get(op, set()), ALLOW) for e in entries)


def scan_by_type(bindings: list[AclBinding], supers: frozenset[KafkaPrincipal], allow_everyone: bool,
                 principal: KafkaPrincipal, host: str, op: AclOperation, rt: ResourceType) -> bool:
    """AclAuthorizer 2.8's authorizeByResourceType over a linear scan of every binding."""
    if principal in supers:
        return True
    relevant = [
        b for b in bindings
        if b.pattern.resource_type == rt and parse_acl_principal(b.entry.principal) in (principal, WILDCARD_PRINCIPAL)
        and b.entry.host in (host, "*") and b.entry.operation in (op, Op.ALL)
    ]

    def names(perm: AclPermissionType, pt: PatternType) -> set[str]:
        return {b.pattern.name for b in relevant if b.entry.permission_type == perm and b.pattern.pattern_type == pt}

    deny_lit, deny_pre = names(DENY, LIT), names(DENY, PRE)
    allow_lit, allow_pre = names(ALLOW, LIT), names(ALLOW, PRE)
    if "*" in deny_lit:
        return False
    if allow_everyone:
        return True
    if not deny_lit and not deny_pre:
        return bool(allow_lit or allow_pre)

    def dominated(n: str) -> bool:
        return any(n.startswith(d) for d in deny_pre if d)

    return (any(not dominated(p) for p in allow_pre)
            or any(n == "*" or (n not in deny_lit and not dominated(n)) for n in allow_lit))


PRINCIPALS = [ALICE, BOB, KafkaPrincipal("Group", "alice"), WILDCARD_PRINCIPAL]
OPS = [Op.READ, Op.WRITE, Op.DESCRIBE, Op.ALTER, Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS, Op.DELETE]
_names = st.text("ab*", max_size=3)
_bindings = st.builds(
    acl,
    st.sampled_from([TOPIC, GROUP]),
    _names,
    st.sampled_from([LIT, PRE]),
    st.sampled_from(["User:alice", "User:bob", "User:*", "Group:alice"]),
    st.sampled_from([*OPS, Op.ALL]),
    st.sampled_from([ALLOW, DENY]),
    st.sampled_from(["*", "h1", "h2"]),
)
_queries = st.tuples(
    st.sampled_from(PRINCIPALS), st.sampled_from(["h1", "h2"]), st.sampled_from(OPS),
    st.sampled_from([TOPIC, GROUP]), _names,
)


@settings(max_examples=examples(300), deadline=None)
@given(
    bindings=st.lists(_bindings, max_size=25),
    removed=st.lists(_bindings, max_size=5),
    supers=st.frozensets(st.sampled_from(PRINCIPALS), max_size=1),
    allow_everyone=st.booleans(),
    queries=st.lists(_queries, min_size=1, max_size=20),
)
def test_index_answers_as_a_linear_scan(
    bindings: list[AclBinding], removed: list[AclBinding], supers: frozenset[KafkaPrincipal],
    allow_everyone: bool, queries: list[tuple[KafkaPrincipal, str, AclOperation, ResourceType, str]],
) -> None:
    # Load everything, then take some patterns away again and some entries off others: the
    # index must follow removals as well as additions.
    authorizer = load(AclAuthorizer(supers, allow_everyone), bindings + removed)
    for b in removed:
        authorizer.remove(b.pattern)
    gone = {b.pattern for b in removed}
    kept = list(dict.fromkeys(b for b in bindings if b.pattern not in gone))
    if kept:
        dropped = kept.pop()
        authorizer.update(dropped.pattern, [b.entry for b in kept if b.pattern == dropped.pattern])
    assert set(authorizer.acls()) == set(kept)
    for principal, host, op, rt, name in queries:
        assert authorizer.authorize(principal, host, op, rt, name) == scan_authorize(
            kept, supers, allow_everyone, principal, host, op, rt, name
        ), (principal, host, op, rt, name)
        assert authorizer.authorize_by_resource_type(principal, host, op, rt) == scan_by_type(
            kept, supers, allow_everyone, principal, host, op, rt
        ), (principal, host, op, rt)


@settings(max_examples=examples(300), deadline=None)
@given(bindings=st.lists(_bindings, max_size=25), allow_everyone=st.booleans(), query=_queries)
def test_allowed_somewhere_implies_allowed_by_type(
    bindings: list[AclBinding], allow_everyone: bool,
    query: tuple[KafkaPrincipal, str, AclOperation, ResourceType, str],
) -> None:
    # KIP-679's promise: if the principal may do the operation on some resource of the type,
    # authorizeByResourceType says so.  (Only without implications, which it does not apply.)
    principal, host, op, rt, name = query
    if op in IMPLIED_BY or name == "":
        return
    authorizer = load(AclAuthorizer((), allow_everyone), bindings)
    if authorizer.authorize(principal, host, op, rt, name):
        assert authorizer.authorize_by_resource_type(principal, host, op, rt)


def test_many_acls_do_not_slow_each_check_down() -> None:
    # 20,000 literal and 20,000 prefixed ACLs, each for its own user, and 20,000 group ACLs
    # sharing one entry: a scan would touch all 60,000 per check.
    authorizer = AclAuthorizer()
    shared = [AccessControlEntry("User:*", "*", Op.READ, ALLOW)]
    start = time.perf_counter()
    for i in range(20_000):
        authorizer.update(ResourcePattern(TOPIC, f"topic-{i}", LIT), [AccessControlEntry(f"User:u{i}", "*", Op.READ, ALLOW)])
        authorizer.update(ResourcePattern(TOPIC, f"team-{i}-", PRE), [AccessControlEntry(f"User:u{i}", "*", Op.WRITE, ALLOW)])
        authorizer.update(ResourcePattern(GROUP, f"group-{i}", LIT), shared)
    assert len(authorizer) == 60_000
    checks = 0
    for i in range(5_000):
        assert authorizer.authorize(user(f"u{i}"), H, Op.READ, TOPIC, f"topic-{i}")
        assert authorizer.authorize(user(f"u{i}"), H, Op.WRITE, TOPIC, f"team-{i}-events")
        assert not authorizer.authorize(user(f"u{i}"), H, Op.WRITE, TOPIC, f"team-{i + 1}-events")
        assert authorizer.authorize(user(f"u{i}"), H, Op.DESCRIBE, GROUP, f"group-{i}")
        assert authorizer.authorize_by_resource_type(user(f"u{i}"), H, Op.WRITE, TOPIC)
        checks += 5
    for i in range(0, 20_000, 2):
        authorizer.remove(ResourcePattern(GROUP, f"group-{i}", LIT))
    elapsed = time.perf_counter() - start
    assert not authorizer.authorize(ALICE, H, Op.READ, GROUP, "group-0")
    assert authorizer.authorize(ALICE, H, Op.READ, GROUP, "group-1")
    # Loading 60,000 ACLs, 25,000 checks and 10,000 removals take about a second; a scan per
    # check, or a copy of the shared entry's name set per update, would take minutes.
    assert elapsed < 15.0, elapsed
