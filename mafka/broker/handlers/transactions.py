"""The transactional producer's APIs, answered by this broker's transaction coordinator.

AddPartitionsToTxn (24), AddOffsetsToTxn (25) and EndTxn (26), v0–3, as
Kafka 2.8's ``KafkaApis``:

* AddPartitionsToTxn: a partition the metadata does not know makes the whole
  request fail — UNKNOWN_TOPIC_OR_PARTITION for it, OPERATION_NOT_ATTEMPTED
  for the others; otherwise the coordinator answers every partition with one
  error (CONCURRENT_TRANSACTIONS while a commit/abort is completing, which
  clients retry);
* AddOffsetsToTxn adds the group's ``__consumer_offsets`` partition to the
  transaction (TxnOffsetCommit then goes to the group coordinator);
* EndTxn answers once PrepareCommit / PrepareAbort is durable in
  ``__transaction_state``; markers are written in the background.

PRODUCER_FENCED is answered as INVALID_PRODUCER_EPOCH below v2.
Authorization is the security work's (no ACLs yet).

The broker provides ``transaction_service.checked_coordinator()``,
``group_service.coordinator.partition_for`` and ``metadata_cache``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from twisted.internet import defer

from mafka.errors import ErrorCode
from mafka.transaction.coordinator import error_for_version

ADD_PARTITIONS_TO_TXN, ADD_OFFSETS_TO_TXN, END_TXN = 24, 25, 26


def _topic_results(errors: Mapping[tuple[str, int], int]) -> list[dict[str, Any]]:
    by_topic: dict[str, list[dict[str, int]]] = {}
    for (topic, index), error in errors.items():
        by_topic.setdefault(topic, []).append({"partition_index": index, "partition_error_code": error})
    return [{"name": name, "results_by_partition": parts} for name, parts in by_topic.items()]


def handlers(broker: Any) -> dict[int, Any]:
    def coordinator() -> Any:
        return broker.transaction_service.checked_coordinator()

    def add_partitions_to_txn(request: Any, connection: Any) -> Any:
        body = request.body
        version = request.header.api_version
        requested = [(t.name, index) for t in body.v3_and_below_topics for index in t.partitions]
        cache = broker.metadata_cache
        unknown = {tp for tp in requested if cache.partition(*tp) is None}
        if unknown:
            errors = {
                tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if tp in unknown else ErrorCode.OPERATION_NOT_ATTEMPTED
                for tp in requested
            }
            return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": _topic_results(errors)}
        d: defer.Deferred = defer.Deferred()

        def respond(errors: dict[tuple[str, int], int]) -> None:
            answered = {tp: error_for_version(ADD_PARTITIONS_TO_TXN, version, errors.get(tp, ErrorCode.NONE)) for tp in requested}
            d.callback({"throttle_time_ms": 0, "results_by_topic_v3_and_below": _topic_results(answered)})

        coordinator().handle_add_partitions(
            body.v3_and_below_transactional_id, body.v3_and_below_producer_id, body.v3_and_below_producer_epoch,
            set(requested), respond,
        )
        return d

    def add_offsets_to_txn(request: Any, connection: Any) -> Any:
        body = request.body
        version = request.header.api_version
        d: defer.Deferred = defer.Deferred()

        def respond(error: int) -> None:
            d.callback({"throttle_time_ms": 0, "error_code": error_for_version(ADD_OFFSETS_TO_TXN, version, error)})

        partition = broker.group_service.coordinator.partition_for(body.group_id)
        coordinator().handle_add_offsets_to_txn(body.transactional_id, body.producer_id, body.producer_epoch, partition, respond)
        return d

    def end_txn(request: Any, connection: Any) -> Any:
        body = request.body
        version = request.header.api_version
        d: defer.Deferred = defer.Deferred()

        def respond(error: int) -> None:
            d.callback({"throttle_time_ms": 0, "error_code": error_for_version(END_TXN, version, error)})

        coordinator().handle_end_transaction(body.transactional_id, body.producer_id, body.producer_epoch, body.committed, respond)
        return d

    return {ADD_PARTITIONS_TO_TXN: add_partitions_to_txn, ADD_OFFSETS_TO_TXN: add_offsets_to_txn, END_TXN: end_txn}
