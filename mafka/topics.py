"""Kafka's topic-name rules and internal topics (``org.apache.kafka.common.internals.Topic``)."""

from __future__ import annotations

import re

from mafka.errors import InvalidTopicError

__all__ = ["INTERNAL_TOPICS", "GROUP_METADATA_TOPIC", "TRANSACTION_STATE_TOPIC", "validate_topic_name", "is_valid_topic_name"]

GROUP_METADATA_TOPIC = "__consumer_offsets"
TRANSACTION_STATE_TOPIC = "__transaction_state"
INTERNAL_TOPICS = frozenset({GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC})

MAX_TOPIC_NAME_LENGTH = 249
_LEGAL = re.compile(r"[a-zA-Z0-9._-]{1,249}\Z")
_LEGAL_CHARS = re.compile(r"[a-zA-Z0-9._-]+")


def is_valid_topic_name(name: str) -> bool:
    """Legal characters ``[a-zA-Z0-9._-]``, 1 to 249 of them, and not ``.`` or ``..``."""
    return name not in (".", "..") and bool(_LEGAL.match(name))


def validate_topic_name(topic: str) -> None:
    """Kafka's ``Topic.validate``, with Kafka's messages.

    Raises:
        InvalidTopicError: empty, ``.``/``..``, longer than 249 characters, or
            characters other than ASCII letters, digits, ``.``, ``_``, ``-``.
    """
    if not topic:
        raise InvalidTopicError("Topic name is illegal, it can't be empty")
    if topic in (".", ".."):
        raise InvalidTopicError('Topic name cannot be "." or ".."')
    if len(topic) > MAX_TOPIC_NAME_LENGTH:
        raise InvalidTopicError(
            f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} characters, topic name: {topic}"
        )
    if not _LEGAL_CHARS.fullmatch(topic):
        raise InvalidTopicError(
            f'Topic name "{topic}" is illegal, it contains a character other than '
            "ASCII alphanumerics, '.', '_' and '-'"
        )
