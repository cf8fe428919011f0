"""Which topics a consumer group subscribes to: its members' topic names and regular expressions.

Kafka 4 resolves a member's ``SubscribedTopicRegex`` (RE2/J) against the cluster's topics;
here Python's ``re`` does, matching whole topic names (Java's ``Matcher.matches``), and never
an internal topic (``__consumer_offsets``, ``__transaction_state``).  A regular expression
this coordinator cannot compile (written by another one into a record) matches nothing.
Topics without an id (all zero bytes) cannot be subscribed to: the records name topics by id.

As in Kafka 4, a regular expression is resolved *asynchronously* (``refreshRegularExpressions``
runs after the heartbeat that brought it, see :meth:`.ConsumerGroup.refresh_regexes`): the group
keeps the topics each regex resolved to (:func:`resolve_regex`), and a member's subscription is
its topic names plus the *resolved* topics of its regex (none until the regex is resolved).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping

from mafka.group.consumer.member import ConsumerGroupMember, TopicInfo
from mafka.topics import INTERNAL_TOPICS

__all__ = ["compute_subscription_metadata", "resolve_regex", "subscribed_topics"]

_NO_TOPIC_ID = bytes(16)


@functools.lru_cache(maxsize=256)
def _pattern(regex: str) -> re.Pattern[str] | None:
    """The compiled regex; None for one this coordinator cannot compile (it matches nothing)."""
    try:
        return re.compile(regex)
    except re.error:
        return None


def resolve_regex(regex: str, universe: Iterable[str]) -> frozenset[str]:
    """The names of *universe* the regex matches (whole names, internal topics excluded)."""
    pattern = _pattern(regex)
    if pattern is None:
        return frozenset()
    return frozenset(t for t in universe if t not in INTERNAL_TOPICS and pattern.fullmatch(t))


def subscribed_topics(member: ConsumerGroupMember, resolved: Mapping[str, frozenset[str]]) -> frozenset[str]:
    """The member's topic names, plus the topics its regex resolved to (*resolved*: regex → topics;
    a regex missing from it is not resolved yet and adds nothing)."""
    regex = member.subscribed_topic_regex
    if not regex:
        return member.subscribed_topic_names
    return member.subscribed_topic_names | resolved.get(regex, frozenset())


def compute_subscription_metadata(
    members: Iterable[ConsumerGroupMember],
    topics: Mapping[str, TopicInfo],
    resolved: Mapping[str, frozenset[str]],
) -> dict[str, TopicInfo]:
    """Kafka's ``computeSubscriptionMetadata``: the subscribed topics (names, and the topics of
    the resolved regexes, *resolved*: regex → topics) that exist (and have an id)."""
    names: set[str] = set()
    for member in members:
        names |= subscribed_topics(member, resolved)
    out: dict[str, TopicInfo] = {}
    for name in names:
        info = topics.get(name)
        if info is not None and info.topic_id != _NO_TOPIC_ID:
            out[name] = info
    return out
