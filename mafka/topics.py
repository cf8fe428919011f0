"""Topic-level things broker, controller, tools and client share.

* Kafka's topic-name rules and internal topics (``org.apache.kafka.common.internals.Topic``).
* :data:`TopicPartitionTuple`: a partition named by ``(topic, partition index)``, the
  hashable key every broker, controller and client module uses for a partition.  It is
  deliberately not called ``TopicPartition``: that is the public client class
  :class:`mafka.client.TopicPartition` (confluent-kafka's, which also carries an offset,
  metadata, a leader epoch and an error), and several modules use both.
"""

from __future__ import annotations

import re

from mafka.errors import InvalidTopicError

__all__ = [
    "GROUP_METADATA_TOPIC",
    "INTERNAL_TOPICS",
    "SHARE_GROUP_STATE_TOPIC",
    "TRANSACTION_STATE_TOPIC",
    "TopicPartitionTuple",
    "is_valid_topic_name",
    "validate_topic_name",
]

#: A partition as ``(topic, partition index)`` (Kafka's ``TopicPartition`` as a plain tuple).
TopicPartitionTuple = tuple[str, int]

GROUP_METADATA_TOPIC = "__consumer_offsets"
TRANSACTION_STATE_TOPIC = "__transaction_state"
#: KIP-932's share-partition state, kept by the share coordinator (Kafka's ``Topic.SHARE_GROUP_STATE_TOPIC_NAME``)
SHARE_GROUP_STATE_TOPIC = "__share_group_state"
INTERNAL_TOPICS = frozenset({GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC, SHARE_GROUP_STATE_TOPIC})

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
