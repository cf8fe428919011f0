"""Kafka's names for partition log directories: ``topic-partition`` and its ``-delete`` / ``-future`` forms.

Shared by the parts of :mod:`mafka.log.manager` (which re-exports them).
"""

from __future__ import annotations

import re
import uuid
from typing import Final

from mafka.topics import TopicPartitionTuple

__all__ = ["DELETE_DIR_SUFFIX", "FUTURE_DIR_SUFFIX", "InvalidLogDirectoryError",
           "log_delete_dir_name", "log_dir_name", "log_future_dir_name", "parse_log_dir_name"]

#: Kafka's directory suffixes.
DELETE_DIR_SUFFIX: Final = "-delete"
FUTURE_DIR_SUFFIX: Final = "-future"

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
#: the longest file name a log dir takes (Kafka caps -delete names to fit)
MAX_DIR_NAME = 255
# Log.DeleteDirPattern / FutureDirPattern (Java's \S is ASCII non-whitespace).
_DELETE_DIR = re.compile(r"(\S+)-(\S+)\.(\S+)-delete\Z", re.ASCII)
_FUTURE_DIR = re.compile(r"(\S+)-(\S+)\.(\S+)-future\Z", re.ASCII)
_JAVA_INT = re.compile(r"[+-]?[0-9]+\Z")


class InvalidLogDirectoryError(RuntimeError):
    """A log dir holds something Kafka refuses to start with.

    A child directory that is not ``topic-partition`` (or its ``-delete`` /
    ``-future`` form), or one partition in two directories.
    """


def log_dir_name(topic: str, partition: int) -> str:
    """``<topic>-<partition>`` (Kafka's ``Log.logDirName``)."""
    return f"{topic}-{partition}"


def log_delete_dir_name(topic: str, partition: int) -> str:
    """``<topic>-<partition>.<uuid hex>-delete``, the topic cut so the name fits 255 characters.

    Kafka's ``Log.logDeleteDirName`` (``logDirNameWithSuffixCappedLength``).
    """
    suffix = f"-{partition}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}"
    return topic[: max(0, min(len(topic), MAX_DIR_NAME - len(suffix)))] + suffix


def log_future_dir_name(topic: str, partition: int) -> str:
    """``<topic>-<partition>.<uuid hex>-future`` (Kafka's ``Log.logFutureDirName``).

    Never shortened, since startup reads the partition from it: Kafka refuses
    to move a replica whose name would exceed 255 characters.
    """
    return f"{topic}-{partition}.{uuid.uuid4().hex}{FUTURE_DIR_SUFFIX}"


def parse_log_dir_name(name: str) -> TopicPartitionTuple:
    """The (topic, partition) of a log directory name (Kafka's ``Log.parseTopicPartitionName``).

    Accepts ``topic-partition`` and the ``topic-partition.<id>-delete`` /
    ``topic-partition.<id>-future`` forms; the partition follows the *last*
    ``-`` and must be a Java int.

    Raises:
        InvalidLogDirectoryError: the name is not in one of those forms.
    """

    def invalid() -> InvalidLogDirectoryError:
        return InvalidLogDirectoryError(
            f"found directory {name!r}, which is not in the form of topic-partition or "
            "topic-partition.uniqueId-delete (if marked for deletion); Kafka's log directories "
            "(and children) should only contain Kafka topic data"
        )

    if not name or "-" not in name:
        raise invalid()
    stem = name
    if name.endswith(DELETE_DIR_SUFFIX) or name.endswith(FUTURE_DIR_SUFFIX):
        pattern = _DELETE_DIR if name.endswith(DELETE_DIR_SUFFIX) else _FUTURE_DIR
        if not pattern.match(name):
            raise invalid()
        stem = name[: name.rindex(".")]
    topic, _, partition_text = stem.rpartition("-")
    if not topic or not _JAVA_INT.match(partition_text):
        raise invalid()
    partition = int(partition_text)
    if not _INT32_MIN <= partition <= _INT32_MAX:
        raise invalid()
    return topic, partition
