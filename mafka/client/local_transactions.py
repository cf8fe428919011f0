"""Mafka's local-transaction messages: a local task (a database transaction) and a message, atomically.

``TransactionalMessageProducer(conf, check_local_state)``:

* :meth:`~TransactionalMessageProducer.send_in_transaction` writes a **half
  message** (acknowledged by RF/ISR rules, invisible to consumers), runs
  ``local_task(half)``, then commits the message if the task returned and rolls
  it back if it raised (MafkaEndHalf at the partition's leader);
* if the producer dies between the two, or the commit/rollback is lost, the
  partition's leader **checks back**: after ``mafka.txn.check.interval.ms``
  (a topic config, default 60 s) it queues the message for its *producer
  group*; a background thread of every live producer of the group pulls the
  checks (MafkaTxnChecks, every ``mafka.txn.check.poll.ms``) and answers what
  ``check_local_state(half)`` returns: :data:`COMMIT`, :data:`ROLLBACK` or
  :data:`UNKNOWN` (asked again an interval later; after
  ``mafka.txn.check.max.times`` the topic's ``mafka.txn.check.default.action``
  applies).  A check the callback raises on, or answers with anything else,
  counts as UNKNOWN.

Configuration: the :class:`~mafka.client.Producer` settings, plus
``mafka.txn.producer.group`` (required: which producers may answer for each
other) and ``mafka.txn.check.poll.ms`` (default 1000).  The producer is
idempotent with acks=all.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mafka.client.config import parse_config
from mafka.client.kafka_error import KafkaError, KafkaException
from mafka.client.kernel import Kernel
from mafka.client.loop_thread import LoopThread
from mafka.client.producer import Producer
from mafka.errors import ErrorCode

__all__ = ["COMMIT", "ROLLBACK", "UNKNOWN", "HalfMessage", "TransactionalMessageProducer"]

log = logging.getLogger(__name__)

COMMIT, ROLLBACK, UNKNOWN = "COMMIT", "ROLLBACK", "UNKNOWN"
MAFKA_END_HALF, MAFKA_TXN_CHECKS = 10001, 10002
HALF_HEADER, TXN_ID_HEADER = "mafka.txn.half", "mafka.txn.id"
_RETRIABLE = {ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.REQUEST_TIMED_OUT,
              ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
              ErrorCode.KAFKA_STORAGE_ERROR}


@dataclass(frozen=True)
class HalfMessage:
    """A half message, as ``local_task`` and ``check_local_state`` see it."""

    topic: str
    partition: int
    offset: int
    transactional_id: str
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    times_checked: int = 0


class TransactionalMessageProducer:
    """See the module docstring."""

    def __init__(self, conf: dict[str, Any], check_local_state: Callable[[HalfMessage], str]) -> None:
        conf = dict(conf)
        group = conf.pop("mafka.txn.producer.group", None)
        if not group:
            raise ValueError("mafka.txn.producer.group is required")
        self.group = str(group)
        self._poll_s = int(conf.pop("mafka.txn.check.poll.ms", 1000)) / 1000.0
        self.check_local_state = check_local_state
        self._producer = Producer({**conf, "acks": "all", "enable.idempotence": True})
        admin = {k: v for k, v in conf.items() if k in ("bootstrap.servers", "client.id", "security.protocol",
                                                        "request.timeout.ms", "socket.timeout.ms")}
        self._loop = LoopThread("mafka-txn-messages")
        self._kernel = Kernel(parse_config("admin", admin))
        self._stop = threading.Event()
        self._checker = threading.Thread(target=self._check_loop, name=f"mafka-txn-checks-{self.group}",
                                         daemon=True)
        self._checker.start()

    # -- the transaction -----------------------------------------------------------------------

    def send_in_transaction(self, topic: str, value: Any = None, key: Any = None, *,
                            local_task: Callable[[HalfMessage], Any], partition: int = -1,
                            headers: list[tuple[str, Any]] | None = None, timeout: float = 30.0) -> Any:
        """Writes the half message, runs ``local_task(half)``, commits the message if it returned.

        Returns what ``local_task`` returned.  If it raises, the message is rolled
        back and the exception propagates.  If the commit cannot be confirmed
        (the leader is unreachable), it is left to the check-back and
        :class:`KafkaException` is raised: the local task *did* happen.

        Raises:
            KafkaException: the half message could not be written (nothing happened),
                or the commit could not be confirmed (see above).
        """
        txn_id = uuid.uuid4().hex
        half = self.send_half(topic, value, key, partition=partition, headers=headers, txn_id=txn_id,
                              timeout=timeout)
        try:
            result = local_task(half)
        except BaseException:
            try:
                self.end(half, commit=False, timeout=timeout)
            except KafkaException as exc:  # the check-back will ask check_local_state
                log.warning("rollback of %s-%d@%d not confirmed: %s", half.topic, half.partition, half.offset, exc)
            raise
        self.end(half, commit=True, timeout=timeout)
        return result

    def send_half(self, topic: str, value: Any = None, key: Any = None, *, partition: int = -1,
                  headers: list[tuple[str, Any]] | None = None, txn_id: str | None = None,
                  timeout: float = 30.0) -> HalfMessage:
        """Writes a half message and waits for its acknowledgement (the first step, exposed for tests)."""
        txn_id = txn_id or uuid.uuid4().hex
        done: dict[str, Any] = {}

        def report(err: Any, msg: Any) -> None:
            done["err"], done["msg"] = err, msg

        all_headers = [*(headers or ()), (HALF_HEADER, self.group.encode()), (TXN_ID_HEADER, txn_id.encode())]
        self._producer.produce(topic, value, key, partition=partition, headers=all_headers, on_delivery=report)
        self._producer.flush(timeout)
        if "msg" not in done:
            raise KafkaException(KafkaError(KafkaError._MSG_TIMED_OUT, "the half message was not acknowledged"))
        if done["err"] is not None:
            raise KafkaException(done["err"])
        msg = done["msg"]
        return HalfMessage(topic, msg.partition(), msg.offset(), txn_id, msg.key(), msg.value(),
                           tuple(all_headers))

    def end(self, half: HalfMessage, *, commit: bool, timeout: float = 30.0) -> None:
        """Commits or rolls back ``half`` at its partition's leader (retried until ``timeout``).

        Raises:
            KafkaException: not confirmed within ``timeout``, or refused (INVALID_TXN_STATE).
        """
        self._loop.run(self._end(half.topic, half.partition, half.offset, commit, timeout), timeout + 5)

    async def _end(self, topic: str, partition: int, offset: int, commit: bool, timeout: float) -> None:
        deadline = asyncio.get_running_loop().time() + timeout
        code: Any = ErrorCode.REQUEST_TIMED_OUT
        while asyncio.get_running_loop().time() < deadline:
            try:
                md = await self._kernel.metadata_for([topic], 10)
                leader = md.leader(topic, partition)
                if leader < 0:
                    raise ConnectionError("no leader")
                response = await self._kernel.send(leader, MAFKA_END_HALF, {
                    "topic": topic, "partition": partition, "offset": offset, "commit": commit,
                    "timeout_ms": 10000}, version=0)
                code = ErrorCode(response.error_code)
                if code == ErrorCode.NONE:
                    return
                if code not in _RETRIABLE:
                    break
            except (ConnectionError, TimeoutError, OSError):
                code = ErrorCode.NETWORK_EXCEPTION
            self._kernel.metadata.request_update()
            await asyncio.sleep(0.2)
        raise KafkaException(KafkaError(int(code), f"{'commit' if commit else 'rollback'} of {topic}-{partition}"
                                                    f"@{offset}: {code.name}"))

    # -- check-backs ---------------------------------------------------------------------------

    def _check_loop(self) -> None:
        while not self._stop.wait(self._poll_s):
            try:
                checks = self._loop.run(self._pull_checks(), 30)
            except Exception as exc:  # noqa: BLE001 - the next round tries again
                log.debug("pulling check-backs failed: %s", exc)
                continue
            for half in checks:
                self._answer(half)

    async def _pull_checks(self) -> list[HalfMessage]:
        md = await self._kernel.refresh_metadata()
        out: list[HalfMessage] = []
        for node in list(md.brokers):
            try:
                response = await self._kernel.send(node, MAFKA_TXN_CHECKS, {"producer_group": self.group,
                                                                            "max_checks": 100}, version=0)
            except (ConnectionError, TimeoutError, OSError):
                continue
            for c in response.checks:
                out.append(HalfMessage(c.topic, c.partition, c.offset, c.transactional_id, c.key, c.value,
                                       tuple((h.key, h.value) for h in c.headers), c.times_checked))
        return out

    def _answer(self, half: HalfMessage) -> None:
        try:
            answer = self.check_local_state(half)
        except Exception as exc:  # noqa: BLE001 - counts as UNKNOWN
            log.warning("check_local_state raised for %s-%d@%d: %s", half.topic, half.partition, half.offset, exc)
            return
        if answer not in (COMMIT, ROLLBACK):
            return  # UNKNOWN (or anything else): asked again later
        try:
            self.end(half, commit=answer == COMMIT)
        except KafkaException as exc:
            log.warning("answering the check-back of %s-%d@%d failed: %s", half.topic, half.partition,
                        half.offset, exc)

    # -- life cycle ----------------------------------------------------------------------------

    def close(self) -> None:
        """Stops answering check-backs and closes the producer."""
        self._stop.set()
        self._checker.join(max(5.0, self._poll_s + 5))
        try:
            self._loop.run(self._kernel.close(), 10)
        finally:
            self._loop.stop()
            self._producer.close()

    def __enter__(self) -> TransactionalMessageProducer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
