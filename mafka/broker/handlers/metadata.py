"""Metadata (3): brokers, controller, cluster id and topic layout, from the metadata cache.

* v0: an empty topic list means every topic; v1+: null means every topic.
* Unknown topics are auto-created when ``auto.create.topics.enable`` is on
  and the request allows it (v4 ``allow_auto_topic_creation``, always before
  v4): the answer is LEADER_NOT_AVAILABLE until the controller has elected
  leaders, as Kafka answers; otherwise UNKNOWN_TOPIC_OR_PARTITION.
  Illegal names get INVALID_TOPIC_EXCEPTION.
* Brokers are the live brokers with an endpoint on the listener the request
  came in on, so each client sees the addresses of its own listener.
* v7+ carries leader epochs (clients fence stale metadata with them, KIP-320),
  v10+ topic ids.  v10+ may ask by topic id (a null name): an unknown id gets
  UNKNOWN_TOPIC_ID.
* Authorization, as Kafka 2.8's ``handleTopicMetadataRequest`` (with
  Kafka 3.1's rules for topics named by id): a topic the principal may not
  Describe is left out of an all-topics answer, and answered
  TOPIC_AUTHORIZATION_FAILED when named — before its existence is looked at,
  so existence is not revealed (named by id, the answer carries the id and
  no name: ids are not secret).  A missing topic that would be auto-created
  needs Create on the cluster or on the topic, else it is
  TOPIC_AUTHORIZATION_FAILED and not created.  Internal topics follow the
  same rules.
* Authorized operations, when asked: each answered topic's (v8+) and the
  cluster's (v8–10; 0 without Describe on the cluster) from the authorizer —
  everything the resource supports without one.  Refused topics and
  unknown ids carry Kafka's "not provided".

Answers are encoded here, not by the codec: each existing topic's entry
comes from :class:`~mafka.broker.metadata_answers.MetadataAnswers` (kept
encoded per listener and version layout, rebuilt only for topics that
changed — see that module for what is cached and why no answer can reach a
principal who may not Describe its topics), the rest of the body is written
per request, and the handler returns an
:class:`~mafka.broker.encoded_body.EncodedBody` (or a Deferred of one, when
many entries are being encoded in a worker thread).  Authorization,
auto-creation and every error entry are decided per request, before any
cached bytes are looked at.

The broker passed to :func:`handlers` provides ``metadata_cache``,
``auto_create_topics`` (bool), ``auto_create_topic(name)`` (fire and
forget; it logs its own failures) and optionally ``authorizer``,
``run_blocking(fn, *args) -> Deferred`` (a worker thread; without it all
encoding is inline) and ``peer_liveness`` (an answer
waits while a peer that just died, or may have, is judged and failed over:
:mod:`mafka.broker.peer_liveness`).
"""

from __future__ import annotations

from typing import Any

from mafka.broker.authorized_operations import NOT_PROVIDED
from mafka.errors import ErrorCode
from mafka.topics import INTERNAL_TOPICS, is_valid_topic_name
from mafka.wire.apis.metadata import SPEC

from ..encoded_body import EncodedBody
from ..handler_authz import (
    CREATE,
    DESCRIBE,
    TOPIC,
    allowed_names,
    cluster_allowed,
    cluster_operations,
    enforcing,
    topic_operations,
)
from ..metadata_answers import MetadataAnswers, then
from ..metadata_encoding import (
    THROTTLE_OFFSET,
    TopicLayout,
    encode_error_topic,
    encode_head,
    encode_tail,
    has_throttle_time,
    with_operations,
)

METADATA = 3


def handlers(broker: Any) -> dict[int, Any]:
    answers = MetadataAnswers(getattr(broker, "run_blocking", None))

    def metadata(request: Any, connection: Any) -> EncodedBody | Any:
        peers = getattr(broker, "peer_liveness", None)
        gate = peers.gate() if peers is not None else None
        if gate is not None:  # a peer just died, or may have: answer with its successors
            return gate.addCallback(lambda _: _answer(request, connection))
        return _answer(request, connection)

    def _answer(request: Any, connection: Any) -> EncodedBody | Any:
        cache = broker.metadata_cache
        version = request.header.api_version
        body = request.body
        layout = TopicLayout.of(version)
        listener = connection.listener
        with_ops = bool(getattr(body, "include_topic_authorized_operations", False))
        extra: list[bytes] = []  # the entries after the existing topics', in Kafka's order
        all_topics = body.topics is None or (version == 0 and not body.topics)
        known: list[str] | None  # the existing topics answered, in order; None: every one, sorted
        if all_topics:
            known = None
            if enforcing(broker):
                requested = cache.topics()
                describable = allowed_names(broker, connection, DESCRIBE, TOPIC, requested)
                if len(describable) < len(requested):  # left out, not refused
                    known = [t for t in requested if t in describable]
        else:
            known = _named(request, connection, layout, extra)
        cluster_ops = NOT_PROVIDED
        if getattr(body, "include_cluster_authorized_operations", False):
            cluster_ops = cluster_operations(broker, connection)
        brokers = cache.alive_brokers(listener)
        cluster_id, controller_id = cache.cluster_id, cache.controller_id

        def answer(topics: tuple[int, bytes]) -> EncodedBody:
            count, entries = topics
            head = encode_head(version, brokers, cluster_id, controller_id, count + len(extra))
            parts = [head, entries, *extra, encode_tail(version, cluster_ops)]
            return EncodedBody(SPEC.response, version, parts, THROTTLE_OFFSET if has_throttle_time(version) else None)

        if not with_ops:
            return then(answers.topic_array(cache, listener, layout, known), answer)
        names = cache.topics() if known is None else known
        ops = [topic_operations(broker, connection, name) for name in names]

        def with_operations_of(fragments: list[bytes]) -> EncodedBody:
            entries = b"".join(with_operations(layout, f, o) for f, o in zip(fragments, ops, strict=True))
            return answer((len(fragments), entries))

        return then(answers.entries(cache, listener, layout, names), with_operations_of)

    def _named(request: Any, connection: Any, layout: TopicLayout, extra: list[bytes]) -> list[str]:
        """The existing topics a request naming topics is answered, in order; its other entries go to *extra*.

        Decides authorization and auto-creation (creating topics as a side
        effect) before looking at any encoded entry.
        """
        cache = broker.metadata_cache
        version = request.header.api_version
        body = request.body
        with_ops = bool(getattr(body, "include_topic_authorized_operations", False))
        unknown_ids: list[bytes] = []
        by_id: dict[str, bytes] = {}  # topics the request named by id
        names = []
        for t in body.topics:
            if t.name is not None:
                names.append(t.name)
                continue
            topic_id = bytes(t.topic_id or bytes(16))
            name = cache.topic_name(topic_id)
            if name is None:
                unknown_ids.append(topic_id)
            else:
                names.append(name)
                by_id[name] = topic_id
        requested = list(dict.fromkeys(names))
        describable = allowed_names(broker, connection, DESCRIBE, TOPIC, requested)
        hidden = [t for t in requested if t not in describable]
        requested = [t for t in requested if t in describable]
        allow_create = broker.auto_create_topics and (version < 4 or body.allow_auto_topic_creation)
        known = [t for t in requested if cache.has_topic(t)]
        missing = [t for t in requested if not cache.has_topic(t)]
        not_creatable = _not_creatable(connection, missing) if allow_create else []
        for name in missing:
            if name in not_creatable:
                continue
            if not is_valid_topic_name(name):
                error = ErrorCode.INVALID_TOPIC_EXCEPTION
            elif allow_create and name not in INTERNAL_TOPICS:
                broker.auto_create_topic(name)
                error = ErrorCode.LEADER_NOT_AVAILABLE
            else:
                error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            ops = topic_operations(broker, connection, name) if with_ops else NOT_PROVIDED
            extra.append(encode_error_topic(layout, error, name, is_internal=name in INTERNAL_TOPICS, operations=ops))
        refused = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        extra.extend(encode_error_topic(layout, refused, name, is_internal=name in INTERNAL_TOPICS)
                     for name in not_creatable)
        # Named topics the principal may not Describe: refused without looking them up.
        extra.extend(_undescribable(layout, name, by_id.get(name), version) for name in hidden)
        extra.extend(
            encode_error_topic(layout, ErrorCode.UNKNOWN_TOPIC_ID, None if version >= 12 else "", topic_id=topic_id)
            for topic_id in dict.fromkeys(unknown_ids)
        )
        return known

    def _not_creatable(connection: Any, missing: list[str]) -> list[str]:
        """The *missing* topics auto-creation may not create: without Create on the cluster, those without it on the topic."""
        if not missing or cluster_allowed(broker, connection, CREATE):
            return []
        creatable = allowed_names(broker, connection, CREATE, TOPIC, missing)
        return [t for t in missing if t not in creatable]

    return {METADATA: metadata}


def _undescribable(layout: TopicLayout, name: str, topic_id: bytes | None, version: int) -> bytes:
    """The entry of a named topic the principal may not Describe (Kafka 3.1: by id, the id and no name)."""
    refused = ErrorCode.TOPIC_AUTHORIZATION_FAILED
    if topic_id is None:
        return encode_error_topic(layout, refused, name)
    return encode_error_topic(layout, refused, None if version >= 12 else "", topic_id=topic_id)
