"""MafkaEndHalf (10001), MafkaTxnChecks (10002), MafkaListHalf (10003): Mafka's local-transaction messages.

MafkaEndHalf commits or rolls back a half message at its partition's leader
and answers once the outcome is replicated (:meth:`DelayedDelivery.end_half`).
MafkaTxnChecks hands a producer group up to ``max_checks`` of the check-backs
queued on this broker (the partitions it leads); MafkaListHalf lists the
queued ones without taking them (``mafka transactions --list-half``).
"""

from __future__ import annotations

from typing import Any

from mafka.errors import ErrorCode

MAFKA_END_HALF, MAFKA_TXN_CHECKS, MAFKA_LIST_HALF = 10001, 10002, 10003


def handlers(broker: Any) -> dict[int, Any]:
    def end_half(request: Any, connection: Any) -> Any:
        b = request.body
        d = broker.delayed_delivery.end_half(b.topic, b.partition, b.offset, bool(b.commit),
                                             max(1, b.timeout_ms or 30000))
        return d.addCallback(lambda code: {"throttle_time_ms": 0, "error_code": code})

    def txn_checks(request: Any, connection: Any) -> dict[str, Any]:
        b = request.body
        checks = broker.delayed_delivery.take_checks(b.producer_group, max(0, min(b.max_checks, 1000)))
        return {
            "throttle_time_ms": 0,
            "error_code": ErrorCode.NONE,
            "checks": [{"topic": c.topic, "partition": c.partition, "offset": c.offset,
                        "transactional_id": c.transactional_id, "key": c.key, "value": c.value,
                        "headers": [{"key": k, "value": v} for k, v in c.headers],
                        "times_checked": c.times_checked} for c in checks],
        }

    def list_half(request: Any, connection: Any) -> dict[str, Any]:
        return {
            "throttle_time_ms": 0,
            "halves": [{"producer_group": g, "topic": c.topic, "partition": c.partition, "offset": c.offset,
                        "transactional_id": c.transactional_id, "times_checked": c.times_checked}
                       for g, c in broker.delayed_delivery.checks.queued()],
        }

    return {MAFKA_END_HALF: end_half, MAFKA_TXN_CHECKS: txn_checks, MAFKA_LIST_HALF: list_half}
