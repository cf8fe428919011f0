"""ACL checks of the consumer-group, admin and inter-broker handlers (Kafka 2.8's ``AuthHelper`` as ``KafkaApis`` uses it).

One :class:`AdminAuthz` per handler module, built in its ``handlers(broker)``,
turns each check into a one-liner at the call site::

    if not authz.allows(connection, READ, GROUP, body.group_id):
        return {"error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, ...}

The broker's ``authorizer`` (a :class:`~mafka.broker.authorization.BrokerAuthorizer`)
is looked up at each check, not when the handlers are built: a broker
collects its handlers before it creates the authorizer, and unit-test brokers
may have none.  No authorizer, or one not enabled, allows everything — Kafka
without ``authorizer.class.name``.

Refusals are answered in the response (the ``*_AUTHORIZATION_FAILED`` codes),
never by closing the connection; which code goes where is each handler's
business, since Kafka shapes each API's refusal differently.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from mafka.security.acl import CLUSTER_NAME, AclOperation, ResourceType

__all__ = ["AdminAuthz"]

T = TypeVar("T")


class AdminAuthz:
    """The checks of one handler module, against its broker's authorizer.

    Args:
        broker: the object the handler module's ``handlers(broker)`` received;
            its ``authorizer`` attribute may be missing or None.
    """

    def __init__(self, broker: Any) -> None:
        self._broker = broker

    def _authorizer(self) -> Any:
        """The enabled authorizer, or None when every check passes."""
        authorizer = getattr(self._broker, "authorizer", None)
        return authorizer if authorizer is not None and authorizer.enabled else None

    def allows(self, connection: Any, operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
        """Kafka's ``authorize``: may the connection's principal do *operation* on ``resource_type:name``?"""
        authorizer = self._authorizer()
        return authorizer is None or authorizer.authorize(connection, operation, resource_type, name)

    def allows_cluster(self, connection: Any, operation: AclOperation) -> bool:
        """*operation* on the cluster resource (``kafka-cluster``)."""
        return self.allows(connection, operation, ResourceType.CLUSTER, CLUSTER_NAME)

    def allowed_names(
        self, connection: Any, operation: AclOperation, resource_type: ResourceType, names: Iterable[str]
    ) -> set[str]:
        """Kafka's ``filterByAuthorized``: the names allowed, each distinct name asked once.

        A request naming many partitions of one topic costs one check per topic.
        """
        distinct = set(names)
        authorizer = self._authorizer()
        if authorizer is None:
            return distinct
        return {name for name in distinct if authorizer.authorize(connection, operation, resource_type, name)}

    def split(
        self, connection: Any, operation: AclOperation, resource_type: ResourceType, items: Iterable[T],
        name_of: Callable[[T], str] = str,
    ) -> tuple[list[T], list[T]]:
        """Kafka's ``partitionSeqByAuthorized``: *items* as (allowed, refused), each in the given order."""
        items = list(items)
        allowed = self.allowed_names(connection, operation, resource_type, (name_of(i) for i in items))
        return [i for i in items if name_of(i) in allowed], [i for i in items if name_of(i) not in allowed]

    def operations(self, connection: Any, resource_type: ResourceType, name: str, fixed: int) -> int:
        """An ``authorized_operations`` bitfield: the authorizer's answer, or *fixed* for a broker without one.

        *fixed* is :mod:`mafka.broker.authorized_operations`' value for the
        resource type (every supported operation), what Kafka answers with
        no authorizer.
        """
        authorizer = getattr(self._broker, "authorizer", None)
        if authorizer is None:
            return fixed
        return int(authorizer.authorized_operations(connection, resource_type, name))
