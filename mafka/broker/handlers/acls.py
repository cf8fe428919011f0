"""DescribeAcls (29), CreateAcls (30), DeleteAcls (31), as Kafka 2.8's ``KafkaApis`` answers them.

Without an authorizer every one answers SECURITY_DISABLED ("No Authorizer is
configured on the broker").  Describing needs Describe on the cluster,
creating and deleting need Alter on the cluster (else
CLUSTER_AUTHORIZATION_FAILED).  Any broker answers: it writes ZooKeeper
itself (compare-and-set per resource pattern) and announces the change, so
every broker's cache follows.
"""

from __future__ import annotations

from typing import Any

from twisted.internet import defer

from mafka.errors import ErrorCode
from mafka.security.acl import (
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
    has_unknown_code,
)

DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = 29, 30, 31
_DISABLED = "No Authorizer is configured on the broker"


def _filter(body: Any) -> AclBindingFilter:
    """An AclBindingFilter from a request's filter fields.

    Raises:
        ValueError: a code Kafka cannot parse.
    """
    return AclBindingFilter(
        ResourcePatternFilter(
            ResourceType.from_code(body.resource_type_filter), body.resource_name_filter,
            PatternType.from_code(body.pattern_type_filter),
        ),
        AccessControlEntryFilter(
            body.principal_filter, body.host_filter, AclOperation.from_code(body.operation),
            AclPermissionType.from_code(body.permission_type),
        ),
    )


def _filter_error(binding_filter: AclBindingFilter) -> str | None:
    """Why a filter is invalid (Kafka's request validation), or None."""
    if binding_filter.is_unknown():
        return "Filter contain UNKNOWN elements"
    return None


def handlers(broker: Any) -> dict[int, Any]:
    def authorizer() -> Any:
        return getattr(broker, "authorizer", None)

    def enabled() -> bool:
        auth = authorizer()
        return auth is not None and auth.enabled

    def describe(request: Any, connection: Any) -> dict[str, Any]:
        body = request.body
        if not enabled():
            return {"error_code": ErrorCode.SECURITY_DISABLED, "error_message": _DISABLED, "resources": []}
        auth = authorizer()
        if not auth.authorize_cluster(connection, AclOperation.DESCRIBE):
            return {"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "error_message": None, "resources": []}
        binding_filter = _filter(body)
        problem = _filter_error(binding_filter)
        if problem is not None:
            return {"error_code": ErrorCode.INVALID_REQUEST, "error_message": problem, "resources": []}
        grouped: dict[ResourcePattern, list[AccessControlEntry]] = {}
        for binding in auth.acls.acls(binding_filter):
            grouped.setdefault(binding.pattern, []).append(binding.entry)
        resources = [
            {
                "resource_type": int(pattern.resource_type), "resource_name": pattern.name,
                "pattern_type": int(pattern.pattern_type),
                "acls": [
                    {"principal": e.principal, "host": e.host, "operation": int(e.operation),
                     "permission_type": int(e.permission_type)}
                    for e in sorted(entries, key=lambda e: (e.principal, e.host, int(e.operation), int(e.permission_type)))
                ],
            }
            for pattern, entries in sorted(grouped.items(), key=lambda kv: (int(kv[0].resource_type), kv[0].name))
        ]
        return {"error_code": ErrorCode.NONE, "error_message": None, "resources": resources}

    @defer.inlineCallbacks
    def create(request: Any, connection: Any) -> Any:
        creations = request.body.creations
        if not enabled():
            return {"results": [{"error_code": ErrorCode.SECURITY_DISABLED, "error_message": _DISABLED}
                                for _ in creations]}
        auth = authorizer()
        if not auth.authorize_cluster(connection, AclOperation.ALTER):
            return {"results": [{"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "error_message": None}
                                for _ in creations]}
        bindings: list[AclBinding | None] = []
        for c in creations:
            if has_unknown_code(c.resource_type, c.resource_pattern_type, c.operation, c.permission_type):
                bindings.append(None)
                continue
            try:
                bindings.append(AclBinding(
                    ResourcePattern(ResourceType.from_code(c.resource_type), c.resource_name,
                                    PatternType.from_code(c.resource_pattern_type)),
                    AccessControlEntry(c.principal, c.host, AclOperation.from_code(c.operation),
                                       AclPermissionType.from_code(c.permission_type)),
                ))
            except ValueError as exc:
                # Kafka fails the whole request when a binding cannot even be built (ANY/MATCH values)
                return {"results": [{"error_code": ErrorCode.UNKNOWN_SERVER_ERROR, "error_message": str(exc)}
                                    for _ in creations]}
        valid = [b for b in bindings if b is not None]
        errors = iter((yield auth.create_acls(valid)))
        results = []
        for binding in bindings:
            if binding is None:
                results.append({"error_code": ErrorCode.INVALID_REQUEST, "error_message": "Failed to create ACL"})
                continue
            error = next(errors)
            results.append(_error_entry(error))
        return {"results": results}

    @defer.inlineCallbacks
    def delete(request: Any, connection: Any) -> Any:
        filters = request.body.filters
        if not enabled():
            return {"filter_results": [{"error_code": ErrorCode.SECURITY_DISABLED, "error_message": _DISABLED,
                                        "matching_acls": []} for _ in filters]}
        auth = authorizer()
        if not auth.authorize_cluster(connection, AclOperation.ALTER):
            return {"filter_results": [{"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "error_message": None,
                                        "matching_acls": []} for _ in filters]}
        parsed = [_filter(f) for f in filters]
        problems = [_filter_error(f) for f in parsed]
        usable = [f for f, p in zip(parsed, problems, strict=True) if p is None]
        outcomes = iter((yield auth.delete_acls(usable)))
        results = []
        for problem in problems:
            if problem is not None:
                results.append({"error_code": ErrorCode.INVALID_REQUEST, "error_message": problem, "matching_acls": []})
                continue
            error, deleted = next(outcomes)
            entry = _error_entry(error)
            entry["matching_acls"] = [_matching(b) for b in deleted]
            results.append(entry)
        return {"filter_results": results}

    return {DESCRIBE_ACLS: describe, CREATE_ACLS: create, DELETE_ACLS: delete}


def _error_entry(error: Any) -> dict[str, Any]:
    if error is None:
        return {"error_code": ErrorCode.NONE, "error_message": None}
    code = int(error.code)
    return {"error_code": code, "error_message": None if code == ErrorCode.UNKNOWN_SERVER_ERROR else str(error)}


def _matching(binding: AclBinding) -> dict[str, Any]:
    p, e = binding.pattern, binding.entry
    return {
        "error_code": ErrorCode.NONE, "error_message": None,
        "resource_type": int(p.resource_type), "resource_name": p.name, "pattern_type": int(p.pattern_type),
        "principal": e.principal, "host": e.host, "operation": int(e.operation),
        "permission_type": int(e.permission_type),
    }

