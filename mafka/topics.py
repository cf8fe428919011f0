"""Kafka's topic-name rules and internal topics (``org.apache.kafka.common.internals.Topic``)."""

from __future__ import annotations

import re

from mafka.errors import InvalidTopicError

__all__ = ["INTERNAL_TOPICS", "GROUP_METADATA_TOPIC", "TRANSACTION_STATE_TOPIC", "validate_topic_name", "is_valid_topic_name"]

GROUP_METADATA_TOPIC = "__consumer_offsets"
TRANSACTION_STATE_TOPIC = "__transaction_state"
INTERNAL_TOPICS = frozenset({GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC})

_LEGAL = re.compile(r"[a-zA-Z0-9._-]{1,249}\Z")


def is_valid_topic_name(name: str) -> bool:
    """Legal characters ``[a-zA-Z0-9._-]``, 1 to 249 of them, and not ``.`` or ``..``."""
    return name not in (".", "..") and bool(_LEGAL.match(name))


def validate_topic_name(name: str) -> None:
    """Raises InvalidTopicError (INVALID_TOPIC_EXCEPTION) for an illegal name."""
    if not is_valid_topic_name(name):
        raise InvalidTopicError(f"topic name {name!r} is illegal (Kafka: [a-zA-Z0-9._-], 1 to 249 characters, not . or ..)")
