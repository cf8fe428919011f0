"""Which topics a consumer group subscribes to: its members' topic names and regular expressions.

Kafka 4 resolves a member's ``SubscribedTopicRegex`` (RE2/J) against the cluster's topics;
here Python's ``re`` does, matching whole topic names (Java's ``Matcher.matches``), and never
an internal topic (``__consumer_offsets``, ``__transaction_state``).  A regular expression
this coordinator cannot compile (written by another one into a record) matches nothing.
Topics without an id (all zero bytes) cannot be subscribed to: the records name topics by id.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping

from mafka.group.consumer.member import ConsumerGroupMember, TopicInfo
from mafka.topics import INTERNAL_TOPICS

__all__ = ["compute_subscription_metadata", "subscribed_topics"]

_NO_TOPIC_ID = bytes(16)


@functools.lru_cache(maxsize=256)
def _pattern(regex: str) -> re.Pattern[str] | None:
    """The compiled regex; None for one this coordinator cannot compile (it matches nothing)."""
    try:
        return re.compile(regex)
    except re.error:
        return None


def subscribed_topics(member: ConsumerGroupMember, universe: Iterable[str]) -> frozenset[str]:
    """The member's topic names, plus the names of *universe* its regex matches."""
    regex = member.subscribed_topic_regex
    if not regex:
        return member.subscribed_topic_names
    pattern = _pattern(regex)
    if pattern is None:
        return member.subscribed_topic_names
    matched = {t for t in universe if t not in INTERNAL_TOPICS and pattern.fullmatch(t)}
    return member.subscribed_topic_names | matched


def compute_subscription_metadata(
    members: Iterable[ConsumerGroupMember], topics: Mapping[str, TopicInfo]
) -> dict[str, TopicInfo]:
    """Kafka's ``computeSubscriptionMetadata``: the subscribed topics that exist (and have an id)."""
    names: set[str] = set()
    patterns: list[re.Pattern[str]] = []
    for member in members:
        names |= member.subscribed_topic_names
        if member.subscribed_topic_regex:
            pattern = _pattern(member.subscribed_topic_regex)
            if pattern is not None:
                patterns.append(pattern)
    out: dict[str, TopicInfo] = {}
    for name in names:
        info = topics.get(name)
        if info is not None and info.topic_id != _NO_TOPIC_ID:
            out[name] = info
    if patterns:
        for name, info in topics.items():
            if (
                name not in out
                and name not in INTERNAL_TOPICS
                and info.topic_id != _NO_TOPIC_ID
                and any(p.fullmatch(name) for p in patterns)
            ):
                out[name] = info
    return out
