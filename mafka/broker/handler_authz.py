"""The authorization checks of the request handlers, each a one-liner at its call site.

Kafka 2.8's ``AuthHelper`` (``authorize``, ``filterByAuthorized``,
``partitionSeqByAuthorized``, ``authorizedOperations``,
``authorizeByResourceType``) over the broker's
:class:`~mafka.broker.authorization.BrokerAuthorizer`: module-level functions
(the data-path handlers call them with their ``broker``) and
:class:`AdminAuthz`, the same checks bound to one broker (the group, admin
and inter-broker handlers build one in ``handlers(broker)``).  Refusals are
answered in the response (the ``*_AUTHORIZATION_FAILED`` codes), never by
closing the connection; which code goes where is each handler's business.

Every function takes the ``broker`` a handler module received and the
request's :class:`~mafka.broker.network.Connection`.  A broker without an
``authorizer`` attribute, or with ``None`` there (unit tests' fakes), allows
everything — as Kafka without an authorizer — and so does a
:class:`BrokerAuthorizer` that is not enabled.  The authorizer is looked up on
every call, not when the handlers are built, so a broker that sets it up
later is obeyed at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from mafka.security.acl import CLUSTER_NAME, AclOperation, ResourceType

from .authorized_operations import CLUSTER_OPERATIONS, TOPIC_OPERATIONS

__all__ = [
    "AdminAuthz",
    "allowed",
    "allowed_names",
    "allowed_by_resource_type",
    "cluster_allowed",
    "cluster_operations",
    "enforcing",
    "split_allowed",
    "topic_operations",
]

T = TypeVar("T")

READ, WRITE, DESCRIBE, DELETE, CREATE = (
    AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.DELETE, AclOperation.CREATE,
)
CLUSTER_ACTION, IDEMPOTENT_WRITE = AclOperation.CLUSTER_ACTION, AclOperation.IDEMPOTENT_WRITE
TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID = (
    ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER, ResourceType.TRANSACTIONAL_ID,
)


def _authorizer(broker: Any) -> Any:
    """The broker's authorizer when it decides anything; None means "allow everything"."""
    authorizer = getattr(broker, "authorizer", None)
    if authorizer is None or not authorizer.enabled:
        return None
    return authorizer


def enforcing(broker: Any) -> bool:
    """Whether any check can refuse: the broker has an enabled authorizer (lets callers skip costly set-up)."""
    return _authorizer(broker) is not None


def allowed(broker: Any, connection: Any, operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
    """Kafka's ``authorize``: *operation* on the literal resource ``resource_type:name``."""
    authorizer = _authorizer(broker)
    return authorizer is None or authorizer.authorize(connection, operation, resource_type, name)


def cluster_allowed(broker: Any, connection: Any, operation: AclOperation) -> bool:
    """*operation* on the cluster resource (``kafka-cluster``)."""
    authorizer = _authorizer(broker)
    return authorizer is None or authorizer.authorize_cluster(connection, operation)


def allowed_by_resource_type(broker: Any, connection: Any, operation: AclOperation, resource_type: ResourceType) -> bool:
    """Kafka's ``authorizeByResourceType`` (KIP-679): *operation* allowed on some resource of the type."""
    authorizer = _authorizer(broker)
    return authorizer is None or authorizer.authorize_by_resource_type(connection, operation, resource_type)


def allowed_names(
    broker: Any, connection: Any, operation: AclOperation, resource_type: ResourceType, names: Iterable[str],
) -> set[str]:
    """Kafka's ``filterByAuthorized``: the distinct names among *names* the principal may *operation*.

    Each distinct name is asked once, however often the request repeats it
    (one check per topic, not per partition).
    """
    distinct = set(names)
    authorizer = _authorizer(broker)
    if authorizer is None:
        return distinct
    return {n for n in distinct if authorizer.authorize(connection, operation, resource_type, n)}


def split_allowed(
    broker: Any, connection: Any, operation: AclOperation, resource_type: ResourceType, items: Iterable[T],
    name_of: Callable[[T], str],
) -> tuple[list[T], list[T]]:
    """Kafka's ``partitionSeqByAuthorized``: *items* split into (allowed, refused), each keeping its order."""
    items = list(items)
    names = allowed_names(broker, connection, operation, resource_type, (name_of(i) for i in items))
    return [i for i in items if name_of(i) in names], [i for i in items if name_of(i) not in names]


def topic_operations(broker: Any, connection: Any, topic: str) -> int:
    """Kafka's ``authorizedOperations`` on a topic: the bitfield of what the principal may do to it."""
    authorizer = getattr(broker, "authorizer", None)
    if authorizer is None:
        return TOPIC_OPERATIONS
    return int(authorizer.authorized_operations(connection, TOPIC, topic))


def cluster_operations(broker: Any, connection: Any) -> int:
    """The ``cluster_authorized_operations`` of Metadata (v8–10) and DescribeCluster, when asked.

    As Kafka: the bitfield of what the principal may do to the cluster if it
    may Describe it, else 0 (nothing revealed).
    """
    authorizer = getattr(broker, "authorizer", None)
    if authorizer is None:
        return CLUSTER_OPERATIONS
    if not authorizer.authorize_cluster(connection, DESCRIBE):
        return 0
    return int(authorizer.authorized_operations(connection, CLUSTER, CLUSTER_NAME))


class AdminAuthz:
    """The checks above bound to one broker (its ``authorizer`` attribute may be missing or None)."""

    def __init__(self, broker: Any) -> None:
        self._broker = broker

    def allows(self, connection: Any, operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
        """Kafka's ``authorize``: may the connection's principal do *operation* on ``resource_type:name``?"""
        return allowed(self._broker, connection, operation, resource_type, name)

    def allows_cluster(self, connection: Any, operation: AclOperation) -> bool:
        """*operation* on the cluster resource (``kafka-cluster``)."""
        return cluster_allowed(self._broker, connection, operation)

    def allowed_names(
        self, connection: Any, operation: AclOperation, resource_type: ResourceType, names: Iterable[str]
    ) -> set[str]:
        """Kafka's ``filterByAuthorized``: the names allowed, each distinct name asked once."""
        return allowed_names(self._broker, connection, operation, resource_type, names)

    def split(
        self, connection: Any, operation: AclOperation, resource_type: ResourceType, items: Iterable[T],
        name_of: Callable[[T], str] = str,
    ) -> tuple[list[T], list[T]]:
        """Kafka's ``partitionSeqByAuthorized``: *items* as (allowed, refused), each in the given order."""
        return split_allowed(self._broker, connection, operation, resource_type, items, name_of)

    def operations(self, connection: Any, resource_type: ResourceType, name: str, fixed: int) -> int:
        """An ``authorized_operations`` bitfield: the authorizer's answer, or *fixed* for a broker without one."""
        authorizer = getattr(self._broker, "authorizer", None)
        if authorizer is None:
            return fixed
        return int(authorizer.authorized_operations(connection, resource_type, name))
