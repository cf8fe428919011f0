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

Authorization, checked before anything else, as Kafka 2.8:

* every API needs Write on the transactional id, else
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED (for every partition of an
  AddPartitionsToTxn);
* AddPartitionsToTxn also needs Write on each topic: a refused topic's
  partitions are TOPIC_AUTHORIZATION_FAILED — internal topics always, even
  without an authorizer, as Kafka leaves them out of its check — and the
  whole request fails as for an unknown partition (OPERATION_NOT_ATTEMPTED
  for the rest, nothing added);
* AddOffsetsToTxn also needs Read on the group, else GROUP_AUTHORIZATION_FAILED.

The broker provides ``transaction_service.checked_coordinator()``,
``group_service.coordinator.partition_for``, ``metadata_cache`` and
optionally ``authorizer``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from twisted.internet import defer

from mafka.errors import ErrorCode
from mafka.topics import INTERNAL_TOPICS
from mafka.transaction.coordinator import error_for_version

from ..handler_authz import GROUP, READ, TOPIC, TRANSACTIONAL_ID, WRITE, allowed, allowed_names

ADD_PARTITIONS_TO_TXN, ADD_OFFSETS_TO_TXN, END_TXN = 24, 25, 26


def _topic_results(errors: Mapping[tuple[str, int], int]) -> list[dict[str, Any]]:
    by_topic: dict[str, list[dict[str, int]]] = {}
    for (topic, index), error in errors.items():
        by_topic.setdefault(topic, []).append({"partition_index": index, "partition_error_code": error})
    return [{"name": name, "results_by_partition": parts} for name, parts in by_topic.items()]


def handlers(broker: Any) -> dict[int, Any]:
    def coordinator() -> Any:
        return broker.transaction_service.checked_coordinator()

    def txn_id_writable(connection: Any, transactional_id: str) -> bool:
        return allowed(broker, connection, WRITE, TRANSACTIONAL_ID, transactional_id)

    def add_partitions_to_txn(request: Any, connection: Any) -> Any:
        body = request.body
        version = request.header.api_version
        requested = [(t.name, index) for t in body.v3_and_below_topics for index in t.partitions]
        if not txn_id_writable(connection, body.v3_and_below_transactional_id):
            denied = {tp: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED for tp in requested}
            return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": _topic_results(denied)}
        writable = allowed_names(broker, connection, WRITE, TOPIC,
                                 (topic for topic, _ in requested if topic not in INTERNAL_TOPICS))
        cache = broker.metadata_cache
        failed: dict[tuple[str, int], int] = {}
        for tp in requested:
            if tp[0] not in writable:
                failed[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif cache.partition(*tp) is None:
                failed[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if failed:
            errors = {tp: failed.get(tp, ErrorCode.OPERATION_NOT_ATTEMPTED) for tp in requested}
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

        if not txn_id_writable(connection, body.transactional_id):
            return {"throttle_time_ms": 0, "error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
        if not allowed(broker, connection, READ, GROUP, body.group_id):
            return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED}
        partition = broker.group_service.coordinator.partition_for(body.group_id)
        coordinator().handle_add_offsets_to_txn(body.transactional_id, body.producer_id, body.producer_epoch, partition, respond)
        return d

    def end_txn(request: Any, connection: Any) -> Any:
        body = request.body
        version = request.header.api_version
        if not txn_id_writable(connection, body.transactional_id):
            return {"throttle_time_ms": 0, "error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
        d: defer.Deferred = defer.Deferred()

        def respond(error: int) -> None:
            d.callback({"throttle_time_ms": 0, "error_code": error_for_version(END_TXN, version, error)})

        coordinator().handle_end_transaction(body.transactional_id, body.producer_id, body.producer_epoch, body.committed, respond)
        return d

    return {ADD_PARTITIONS_TO_TXN: add_partitions_to_txn, ADD_OFFSETS_TO_TXN: add_offsets_to_txn, END_TXN: end_txn}
