"""The broker-to-controller notification znodes: ISR changes and log dir failures.

Owns :class:`IsrChangeNotificationZNode` (``/isr_change_notification/isr_change_<seq>``),
:class:`LogDirEventNotificationZNode` (``/log_dir_event_notification/log_dir_event_<seq>``)
and :func:`sequence_number` (the ``<seq>`` of a sequential node's name),
byte for byte as Kafka 2.8.
"""

from __future__ import annotations

from collections.abc import Iterable

from mafka.coordination.znodes.decoding import _get_int, _load_object, _topic_partitions
from mafka.coordination.znodes.encoding import _encode_partitions, _scala_immutable_map, encode_json
from mafka.topics import TopicPartitionTuple

__all__ = [
    "IsrChangeNotificationZNode",
    "LogDirEventNotificationZNode",
    "sequence_number",
]


def sequence_number(child_name: str, prefix: str) -> str:
    """The sequence suffix of a sequential znode's name (``isr_change_0000000042`` → ``0000000042``)."""
    index = child_name.rfind(prefix)
    if index < 0:
        raise ValueError(f"{child_name!r} is not a {prefix!r} sequential node")
    return child_name[index + len(prefix) :]


class IsrChangeNotificationZNode:
    """``/isr_change_notification/isr_change_<seq>`` (persistent sequential): partitions whose ISR changed."""

    PATH = "/isr_change_notification"
    PREFIX = "isr_change_"
    CREATE_PATH = f"{PATH}/{PREFIX}"
    VERSION = 1

    @staticmethod
    def path(seq: str) -> str:
        """``/isr_change_notification/isr_change_<seq>``."""
        return f"{IsrChangeNotificationZNode.CREATE_PATH}{seq}"

    @staticmethod
    def encode(partitions: Iterable[TopicPartitionTuple]) -> bytes:
        """``{"version":1,"partitions":[{"topic":t,"partition":p},…]}`` (caller's order)."""
        return _encode_partitions(IsrChangeNotificationZNode.VERSION, partitions)

    @staticmethod
    def decode(data: bytes) -> tuple[TopicPartitionTuple, ...]:
        """The partitions (duplicates dropped). Raises ValueError on garbage."""
        return _topic_partitions(
            _load_object(data, IsrChangeNotificationZNode.PATH), IsrChangeNotificationZNode.PATH
        )


class LogDirEventNotificationZNode:
    """``/log_dir_event_notification/log_dir_event_<seq>`` (persistent sequential): a broker's log dir failed."""

    PATH = "/log_dir_event_notification"
    PREFIX = "log_dir_event_"
    CREATE_PATH = f"{PATH}/{PREFIX}"
    LOG_DIR_FAILURE = 1

    @staticmethod
    def path(seq: str) -> str:
        """``/log_dir_event_notification/log_dir_event_<seq>``."""
        return f"{LogDirEventNotificationZNode.CREATE_PATH}{seq}"

    @staticmethod
    def encode(broker_id: int) -> bytes:
        """``{"version":1,"broker":B,"event":1}``."""
        return encode_json(
            _scala_immutable_map(
                [
                    ("version", 1),
                    ("broker", int(broker_id)),
                    ("event", LogDirEventNotificationZNode.LOG_DIR_FAILURE),
                ]
            )
        )

    @staticmethod
    def decode(data: bytes) -> int:
        """The broker id. Raises ValueError on garbage."""
        return _get_int(
            _load_object(data, LogDirEventNotificationZNode.PATH),
            "broker",
            LogDirEventNotificationZNode.PATH,
        )
