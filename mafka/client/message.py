"""confluent-kafka-shaped value types: :class:`TopicPartition`, :class:`Message`, offset constants.

Same attribute and method names as confluent-kafka's (``msg.value()``,
``msg.timestamp()`` → ``(type, ms)``, ``tp.offset``), so application code
moves over with a change of import.  ``Message`` is built once per consumed
record, so it is a plain ``__slots__`` class with no validation.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "OFFSET_BEGINNING",
    "OFFSET_END",
    "OFFSET_STORED",
    "OFFSET_INVALID",
    "TIMESTAMP_NOT_AVAILABLE",
    "TIMESTAMP_CREATE_TIME",
    "TIMESTAMP_LOG_APPEND_TIME",
    "TopicPartition",
    "Message",
]

OFFSET_BEGINNING = -2
OFFSET_END = -1
OFFSET_STORED = -1000
OFFSET_INVALID = -1001

TIMESTAMP_NOT_AVAILABLE = 0
TIMESTAMP_CREATE_TIME = 1
TIMESTAMP_LOG_APPEND_TIME = 2


class TopicPartition:
    """A topic, a partition, and optionally an offset / metadata / error (confluent-kafka's)."""

    __slots__ = ("topic", "partition", "offset", "metadata", "leader_epoch", "error")

    def __init__(
        self,
        topic: str,
        partition: int = -1,
        offset: int = OFFSET_INVALID,
        metadata: str | None = None,
        leader_epoch: int | None = None,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.metadata = metadata
        self.leader_epoch = leader_epoch
        self.error: Any = None

    def __eq__(self, other: Any) -> bool:
        if not isinstance(other, TopicPartition):
            return NotImplemented
        return (self.topic, self.partition) == (other.topic, other.partition)

    def __lt__(self, other: TopicPartition) -> bool:
        return (self.topic, self.partition) < (other.topic, other.partition)

    def __hash__(self) -> int:
        return hash((self.topic, self.partition))

    def __repr__(self) -> str:
        err = "None" if self.error is None else repr(self.error)
        return (
            f"TopicPartition{{topic={self.topic},partition={self.partition},"
            f"offset={self.offset},leader_epoch={self.leader_epoch},error={err}}}"
        )

    __str__ = __repr__


class Message:
    """A consumed record, a delivery report, or an error event (``error()`` is not None).

    ``timestamp()`` is ``(TIMESTAMP_CREATE_TIME | TIMESTAMP_LOG_APPEND_TIME |
    TIMESTAMP_NOT_AVAILABLE, epoch ms)``; ``headers()`` is a list of
    ``(str, bytes | None)`` or None when the record has none.
    """

    __slots__ = (
        "_topic", "_partition", "_offset", "_key", "_value", "_headers",
        "_ts_type", "_timestamp", "_error", "_leader_epoch", "_latency", "_delivery_count",
    )

    def __init__(
        self,
        topic: str | None,
        partition: int | None,
        offset: int | None,
        key: bytes | None,
        value: bytes | None,
        headers: list[tuple[str, bytes | None]] | None = None,
        ts_type: int = TIMESTAMP_NOT_AVAILABLE,
        timestamp: int = -1,
        error: Any = None,
        leader_epoch: int | None = None,
    ) -> None:
        self._topic = topic
        self._partition = partition
        self._offset = offset
        self._key = key
        self._value = value
        self._headers = headers
        self._ts_type = ts_type
        self._timestamp = timestamp
        self._error = error
        self._leader_epoch = leader_epoch
        self._latency: float | None = None
        self._delivery_count: int | None = None

    def topic(self) -> str | None:
        return self._topic

    def partition(self) -> int | None:
        return self._partition

    def offset(self) -> int | None:
        return self._offset

    def key(self) -> bytes | None:
        return self._key

    def value(self) -> bytes | None:
        return self._value

    def headers(self) -> list[tuple[str, bytes | None]] | None:
        return self._headers

    def timestamp(self) -> tuple[int, int]:
        return self._ts_type, self._timestamp

    def error(self) -> Any:
        return self._error

    def leader_epoch(self) -> int | None:
        return self._leader_epoch

    def latency(self) -> float | None:
        return self._latency

    def delivery_count(self) -> int | None:
        """How many times a share group delivered this record (1 the first time); None outside share groups."""
        return self._delivery_count

    def set_key(self, key: bytes | None) -> None:
        self._key = key

    def set_value(self, value: bytes | None) -> None:
        self._value = value

    def set_headers(self, headers: list[tuple[str, bytes | None]] | None) -> None:
        self._headers = headers

    def __len__(self) -> int:
        return 0 if self._value is None else len(self._value)

    def __repr__(self) -> str:
        return (
            f"Message(topic={self._topic!r}, partition={self._partition}, offset={self._offset}, "
            f"key={self._key!r}, error={self._error!r})"
        )
