"""KIP-664's transaction admin APIs: DescribeTransactions (65, v0) and ListTransactions (66, v0).

As Kafka 3.0's ``KafkaApis.handleDescribeTransactionsRequest`` /
``handleListTransactionsRequest``, both answered from this broker's
transaction coordinator alone:

* DescribeTransactions answers each requested id in request order (repeats
  included): NOT_COORDINATOR when this broker does not lead the id's
  ``__transaction_state`` partition, COORDINATOR_LOAD_IN_PROGRESS while it
  loads it, TRANSACTIONAL_ID_NOT_FOUND for an id it does not hold (or one
  being expired), INVALID_REQUEST for the empty id, COORDINATOR_NOT_AVAILABLE
  before the coordinator starts; otherwise the state, producer id and epoch,
  timeout, start time (-1 before the first transaction) and the partitions of
  the transaction, one entry per topic.  A failed entry carries only its id
  and error, the other fields at the schema's defaults ("", 0), as Kafka's
  ``TransactionState()`` does.
* ListTransactions answers the transactions of the partitions this broker
  leads (admin clients ask every broker), filtered by producer id and state
  name; the filters are sets, as Kafka's ``toSet``, and state names the
  coordinator does not know are echoed in ``unknown_state_filters``.  Dead
  (expiring) ids are never listed; COORDINATOR_LOAD_IN_PROGRESS while any
  partition loads, COORDINATOR_NOT_AVAILABLE before startup.

Authorization, as Kafka 3.0 (KIP-664 came after 2.8): DescribeTransactions
answers an id the principal may not Describe (TransactionalId) with
TRANSACTIONAL_ID_AUTHORIZATION_FAILED, without asking the coordinator, and
leaves out of each description the topics it may not Describe;
ListTransactions lists only the ids it may Describe.  The broker provides
``transaction_service.checked_coordinator()`` and optionally ``authorizer``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from mafka.errors import ErrorCode
from mafka.transaction.coordinator import TransactionDescription

from ..handler_authz import DESCRIBE, TOPIC, TRANSACTIONAL_ID, allowed_names

DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS = 65, 66


def _transaction_state(d: TransactionDescription) -> dict[str, Any]:
    if d.error != ErrorCode.NONE:
        # Kafka sets only the id and the error code on a failed entry; the rest go out
        # at the generated defaults, which clients ignore.
        return {
            "error_code": d.error, "transactional_id": d.transactional_id, "transaction_state": "",
            "transaction_timeout_ms": 0, "transaction_start_time_ms": 0, "producer_id": 0,
            "producer_epoch": 0, "topics": [],
        }
    return {
        "error_code": ErrorCode.NONE,
        "transactional_id": d.transactional_id,
        "transaction_state": d.state,
        "transaction_timeout_ms": d.transaction_timeout_ms,
        "transaction_start_time_ms": d.transaction_start_time_ms,
        "producer_id": d.producer_id,
        "producer_epoch": d.producer_epoch,
        "topics": [{"topic": topic, "partitions": parts} for topic, parts in (d.topics or {}).items()],
    }


def handlers(broker: Any) -> dict[int, Any]:
    def coordinator() -> Any:
        return broker.transaction_service.checked_coordinator()

    def describe_transactions(request: Any, connection: Any) -> dict[str, Any]:
        asked = list(request.body.transactional_ids)
        describable = allowed_names(broker, connection, DESCRIBE, TRANSACTIONAL_ID, asked)
        allowed_ids = [tid for tid in asked if tid in describable]
        described = iter(coordinator().describe_transactions(allowed_ids) if allowed_ids else ())
        states = []
        for tid in asked:
            if tid not in describable:
                states.append(_transaction_state(
                    TransactionDescription(tid, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)))
                continue
            states.append(_transaction_state(_visible_topics(next(described), connection)))
        return {"throttle_time_ms": 0, "transaction_states": states}

    def _visible_topics(d: TransactionDescription, connection: Any) -> TransactionDescription:
        """*d* without the topics the principal may not Describe (Kafka 3.0 removes them)."""
        if not d.topics:
            return d
        visible = allowed_names(broker, connection, DESCRIBE, TOPIC, d.topics)
        return dataclasses.replace(d, topics={t: p for t, p in d.topics.items() if t in visible})

    def list_transactions(request: Any, connection: Any) -> dict[str, Any]:
        body = request.body
        # Kafka reads both filters into sets: a repeated state name is reported unknown once.
        states = list(dict.fromkeys(body.state_filters))
        producer_ids = list(dict.fromkeys(body.producer_id_filters))
        result = coordinator().list_transactions(states, producer_ids)
        describable = allowed_names(broker, connection, DESCRIBE, TRANSACTIONAL_ID,
                                    (t.transactional_id for t in result.transaction_states))
        return {
            "throttle_time_ms": 0,
            "error_code": result.error,
            "unknown_state_filters": list(result.unknown_state_filters),
            "transaction_states": [
                {"transactional_id": t.transactional_id, "producer_id": t.producer_id, "transaction_state": t.state}
                for t in result.transaction_states
                if t.transactional_id in describable
            ],
        }

    return {DESCRIBE_TRANSACTIONS: describe_transactions, LIST_TRANSACTIONS: list_transactions}
