"""MafkaEndHalf (10001), MafkaTxnChecks (10002), MafkaListHalf (10003): Mafka's local-transaction messages.

MafkaEndHalf commits or rolls back a half message at its partition's leader
and answers once the outcome is replicated (:meth:`DelayedDelivery.end_half`).
MafkaTxnChecks hands a producer group up to ``max_checks`` of the check-backs
queued on this broker (the partitions it leads); MafkaListHalf lists the
queued ones without taking them (``mafka transactions --list-half``).

Authorization, by each API's Kafka relative:

* MafkaEndHalf publishes (or discards) records on the topic, as Produce /
  EndTxn do for a transactional producer: Write on the topic, else
  TOPIC_AUTHORIZATION_FAILED and the message is left as it is.
* MafkaTxnChecks hands out unresolved records (key, value, headers) for their
  producer to decide, and each check handed out counts towards
  ``mafka.txn.check.max.times``: as AddPartitionsToTxn, the checks it would
  hand out need Write on each of their transactional ids (else
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and on each of their topics (else
  TOPIC_AUTHORIZATION_FAILED), and one refusal fails the whole request
  before anything is taken — a principal that may not write them can neither
  read them nor use up their check-backs.
* MafkaListHalf is an admin listing like ListTransactions: it lists only the
  entries whose topic the principal may Describe and, when they have one,
  whose transactional id it may Describe.
"""

from __future__ import annotations

from itertools import islice
from typing import Any

from mafka.errors import ErrorCode

from ..handler_authz import (
    DESCRIBE,
    TOPIC,
    TRANSACTIONAL_ID,
    WRITE,
    allowed,
    allowed_names,
    enforcing,
)

MAFKA_END_HALF, MAFKA_TXN_CHECKS, MAFKA_LIST_HALF = 10001, 10002, 10003


def handlers(broker: Any) -> dict[int, Any]:
    def end_half(request: Any, connection: Any) -> Any:
        b = request.body
        if not allowed(broker, connection, WRITE, TOPIC, b.topic):
            return {"throttle_time_ms": 0, "error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED}
        d = broker.delayed_delivery.end_half(b.topic, b.partition, b.offset, bool(b.commit),
                                             max(1, b.timeout_ms or 30000))
        return d.addCallback(lambda code: {"throttle_time_ms": 0, "error_code": code})

    def txn_checks(request: Any, connection: Any) -> dict[str, Any]:
        b = request.body
        most = max(0, min(b.max_checks, 1000))
        refusal = checks_refusal(connection, b.producer_group, most)
        if refusal is not None:
            return {"throttle_time_ms": 0, "error_code": refusal, "checks": []}
        checks = broker.delayed_delivery.take_checks(b.producer_group, most)
        return {
            "throttle_time_ms": 0,
            "error_code": ErrorCode.NONE,
            "checks": [{"topic": c.topic, "partition": c.partition, "offset": c.offset,
                        "transactional_id": c.transactional_id, "key": c.key, "value": c.value,
                        "headers": [{"key": k, "value": v} for k, v in c.headers],
                        "times_checked": c.times_checked} for c in checks],
        }

    def checks_refusal(connection: Any, group: str, most: int) -> ErrorCode | None:
        """Why the principal may not take the next *most* checks of *group*, or None when it may."""
        if not enforcing(broker):
            return None
        # The group's queue in take order: exactly the checks take_checks(group, most) would hand out.
        due = list(islice((c for g, c in broker.delayed_delivery.checks.queued() if g == group), most))
        txn_ids = {c.transactional_id for c in due if c.transactional_id}
        if allowed_names(broker, connection, WRITE, TRANSACTIONAL_ID, txn_ids) != txn_ids:
            return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        topics = {c.topic for c in due}
        if allowed_names(broker, connection, WRITE, TOPIC, topics) != topics:
            return ErrorCode.TOPIC_AUTHORIZATION_FAILED
        return None

    def list_half(request: Any, connection: Any) -> dict[str, Any]:
        queued = broker.delayed_delivery.checks.queued()
        topics = allowed_names(broker, connection, DESCRIBE, TOPIC, (c.topic for _, c in queued))
        txn_ids = allowed_names(broker, connection, DESCRIBE, TRANSACTIONAL_ID,
                                (c.transactional_id for _, c in queued if c.transactional_id))
        return {
            "throttle_time_ms": 0,
            "halves": [{"producer_group": g, "topic": c.topic, "partition": c.partition, "offset": c.offset,
                        "transactional_id": c.transactional_id, "times_checked": c.times_checked}
                       for g, c in queued
                       if c.topic in topics and (not c.transactional_id or c.transactional_id in txn_ids)],
        }

    return {MAFKA_END_HALF: end_half, MAFKA_TXN_CHECKS: txn_checks, MAFKA_LIST_HALF: list_half}
