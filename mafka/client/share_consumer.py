"""The synchronous share consumer (KIP-932), shaped like confluent-kafka's ``ShareConsumer``.

``ShareConsumer(conf)`` runs an :class:`~mafka.client.aio_share_consumer.AIOShareConsumer` on a
private loop thread; each call waits for it there.  The acknowledgement commit callback is
called on the application's thread, from ``poll``, ``commit_sync``, ``commit_async`` or
``close``, as confluent-kafka promises.  ``acknowledge`` only records the acknowledgement (no
round trip to the loop thread; the book it writes is thread-safe): it is sent with the next
``poll`` or commit.

Example::

    from mafka.client import AcknowledgeType, ShareConsumer

    c = ShareConsumer({"bootstrap.servers": "127.0.0.1:9092", "group.id": "workers",
                       "share.acknowledgement.mode": "explicit"})
    c.subscribe(["jobs"])
    while True:
        for msg in c.poll(1.0):
            if msg.error():
                continue
            c.acknowledge(msg, AcknowledgeType.ACCEPT if handle(msg) else AcknowledgeType.RELEASE)
        c.commit_async()
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mafka.client.aio_share_consumer import CLOSE_TIMEOUT, AIOShareConsumer, CommitCallback
from mafka.client.kafka_error import KafkaException
from mafka.client.loop_thread import LoopThread
from mafka.client.message import Message, TopicPartition
from mafka.client.share_acknowledgements import AcknowledgeType, IllegalStateError

__all__ = ["ShareConsumer", "AcknowledgeType", "IllegalStateError"]


class ShareConsumer:
    """confluent-kafka's ``ShareConsumer`` API over Mafka's pure-Python client.

    Raises:
        ConfigError (a ValueError): a bad configuration.  KafkaException: no ``group.id``.
    """

    def __init__(self, conf: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        settings = dict(conf or {})
        settings.update(kwargs)
        self._closed = False
        self._thread = LoopThread("mafka-share-consumer")
        try:
            self._core = AIOShareConsumer(settings, dispatch_callbacks=False)
            self._thread.run(self._core.start(), timeout=10)
        except BaseException:
            self._thread.stop(1.0)
            raise

    def _run(self, coro: Any, timeout: float | None = None) -> Any:
        if self._closed:
            coro.close()
            raise IllegalStateError("Share consumer is closed")
        try:
            return self._thread.run(coro, timeout=timeout)
        finally:
            self._core.dispatch_results(self._core.take_results())

    def subscribe(self, topics: list[str]) -> None:
        """Replaces the subscription (not incremental; an empty list unsubscribes)."""
        if not topics and not isinstance(topics, str):
            self.unsubscribe()
            return
        self._run(_call(self._core.subscribe, list(topics)))

    def subscription(self) -> list[str]:
        return self._core.subscription()

    def unsubscribe(self) -> None:
        self._run(self._core.unsubscribe(), timeout=CLOSE_TIMEOUT * 2)

    def poll(self, timeout: float | None = -1) -> list[Message]:
        """The next records (and error events), waiting up to ``timeout`` seconds (-1: forever)."""
        return self._run(self._core.poll(timeout))  # type: ignore[no-any-return]

    def acknowledge(self, message: Message, ack_type: int = AcknowledgeType.ACCEPT) -> None:
        self._core.acknowledge(message, ack_type)

    def acknowledge_offset(self, topic: str, partition: int, offset: int,
                           ack_type: int = AcknowledgeType.ACCEPT) -> None:
        self._core.acknowledge_offset(topic, partition, offset, ack_type)

    def commit_sync(self, timeout: float | None = 60.0) -> dict[TopicPartition, KafkaException | None]:
        """Sends pending acknowledgements and waits; per partition None (done) or the KafkaException."""
        wait = None if timeout is None or timeout < 0 else timeout + 5.0
        return self._run(self._core.commit_sync(timeout), timeout=wait)  # type: ignore[no-any-return]

    def commit_async(self) -> None:
        self._run(self._core.commit_async(), timeout=10.0)

    def set_acknowledgement_commit_callback(self, callback: CommitCallback | None) -> None:
        self._core.set_acknowledgement_commit_callback(callback)

    def close(self) -> None:
        """Commits pending acknowledgements, closes the share sessions, leaves the group."""
        if self._closed:
            return
        try:
            self._run(self._core.close(), timeout=CLOSE_TIMEOUT * 3)
        except (TimeoutError, KafkaException):
            pass
        finally:
            self._closed = True
            self._thread.stop(5.0)

    def __enter__(self) -> ShareConsumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            if not self._closed:
                self._thread.stop(1.0)
        except Exception:  # noqa: BLE001 - interpreter teardown
            pass


async def _call(fn: Any, *args: Any) -> Any:
    return fn(*args)



