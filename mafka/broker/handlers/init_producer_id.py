"""InitProducerId (22, v0–1): a fresh producer id with epoch 0 for idempotent producers.

Transactional ids need the transaction coordinator, which arrives with a
later issue; until then they are answered COORDINATOR_NOT_AVAILABLE.

The broker provides ``producer_ids`` (a :class:`~mafka.broker.producer_ids.ProducerIdManager`).
"""

from __future__ import annotations

from typing import Any

from mafka.errors import ErrorCode

INIT_PRODUCER_ID = 22


def handlers(broker: Any) -> dict[int, Any]:
    def init_producer_id(request: Any, connection: Any) -> Any:
        if request.body.transactional_id is not None:
            return {"throttle_time_ms": 0, "error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE, "producer_id": -1, "producer_epoch": -1}

        def answer(pid: int) -> dict[str, Any]:
            return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "producer_id": pid, "producer_epoch": 0}

        def failed(failure: Any) -> dict[str, Any]:
            return {"throttle_time_ms": 0, "error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE, "producer_id": -1, "producer_epoch": -1}

        return broker.producer_ids.generate().addCallbacks(answer, failed)

    return {INIT_PRODUCER_ID: init_producer_id}
