"""Authorized-operation bitfields, as a broker without an authorizer reports them.

Kafka answers ``include_*_authorized_operations`` with one bit per
``AclOperation`` code (``1 << code``).  With no authorizer configured every
operation the resource type supports is allowed (Kafka's
``AclEntry.supportedOperations``); a request that did not ask gets
``Integer.MIN_VALUE``, Kafka's "not provided".
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["NOT_PROVIDED", "TOPIC_OPERATIONS", "CLUSTER_OPERATIONS", "GROUP_OPERATIONS", "bitfield"]

#: Kafka's ``AclOperation`` codes.
READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = 3, 4, 5, 6, 7, 8
CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE = 9, 10, 11, 12

#: The value of an authorized-operations field nobody asked for.
NOT_PROVIDED = -(2**31)


def bitfield(operations: Iterable[int]) -> int:
    """The int32 bitfield with one bit set per operation code."""
    value = 0
    for op in operations:
        value |= 1 << op
    return value


TOPIC_OPERATIONS = bitfield((READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS))
CLUSTER_OPERATIONS = bitfield((CREATE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, ALTER, DESCRIBE))
GROUP_OPERATIONS = bitfield((READ, DESCRIBE, DELETE))
