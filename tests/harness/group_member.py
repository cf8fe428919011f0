"""One consumer-group member driven through a real third-party client, as a standalone process.

    python tests/harness/group_member.py --client {confluent,kafka-python,aiokafka,mafka} \\
        --bootstrap HOST:PORT --group G --topic T [--group-instance-id X] \\
        [--session-timeout-ms N] [--heartbeat-interval-ms N] [--assignor roundrobin] [--commit] [--debug]
        [--group-protocol consumer [--remote-assignor uniform]]

It subscribes to one topic and prints one JSON object per line on stdout, flushed
at once; ``t`` is ``time.monotonic()`` (CLOCK_MONOTONIC, comparable between
processes on one host):

* ``{"event": "started", "client", "version", "pid", "t"}``
* ``{"event": "subscribing", "t"}`` — just before the call that starts the group work
* ``{"event": "assigned", "partitions": [...], "generation", "member_id", "t"}`` (confluent and
  mafka also print ``added``: with an incremental protocol ``partitions`` is every partition held,
  ``added`` what this assignment gave)
* ``{"event": "revoked", "partitions": [...], "t"}`` and ``{"event": "lost", ...}``
* ``{"event": "generation", "generation", "member_id", "t"}`` — whenever the
  (generation id, member id) the client holds changes, read from the client:
  confluent-kafka: ``consumer_group_metadata()`` (librdkafka's serialized
  ``CGMDv2`` blob: group id, int32 generation id, member id, instance id);
  kafka-python: ``consumer._coordinator._generation``;
  aiokafka: ``consumer._coordinator.generation`` / ``.member_id``;
  mafka (``mafka.client``, driven by the confluent-kafka loop since its API is the same):
  ``consumer._member.generation`` / ``.member_id``
* ``{"event": "consumed", "partition", "offset", "value", "t"}``
* ``{"event": "committed", "offsets": {partition: offset}, "t"}`` after a
  successful synchronous commit (``--commit``: offset + 1 of each message,
  committed right after the message was printed: at-least-once), or
  ``{"event": "commit_failed", "offsets", "error", "t"}``
* ``{"event": "error", "error", "t"}`` for client errors reported asynchronously
* ``{"event": "closing", "t"}`` on SIGTERM/SIGINT, then ``{"event": "closed", "t"}``
  once the consumer is closed (a dynamic member sends LeaveGroup on close;
  a static one, with ``--group-instance-id``, does not: KIP-345).

Without ``--commit`` nothing is committed (auto-commit is off for every client).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import struct
import sys
import time
from typing import Any

_stop = False


def _on_signal(signum: int, frame: Any) -> None:
    global _stop
    _stop = True


def emit(event: str, **fields: Any) -> None:
    fields = {"event": event, **fields, "t": time.monotonic()}
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def decode(value: bytes | None) -> str | None:
    return None if value is None else value.decode("utf-8", "replace")


# --------------------------------------------------------------------------------------- confluent


def parse_cgmd(blob: bytes) -> tuple[int, str | None]:
    """(generation id, member id) from librdkafka's serialized consumer group metadata.

    Layout (``rd_kafka_consumer_group_metadata_write``, checked against librdkafka 2.16):
    ``"CGMDv2:"`` (7 bytes), int32 generation id (host order), group id
    NUL-terminated, member id NUL-terminated, int8 instance-id-is-null, then
    the instance id NUL-terminated.
    """
    magic = b"CGMDv2:"
    if not blob.startswith(magic) or len(blob) < len(magic) + 4:
        return -1, None
    (generation,) = struct.unpack("=i", blob[len(magic):len(magic) + 4])
    rest = blob[len(magic) + 4:]
    rest = rest[rest.index(b"\0") + 1:]  # the group id
    return generation, rest[:rest.index(b"\0")].decode() or None


def run_confluent(args: argparse.Namespace) -> None:
    import confluent_kafka
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    emit("started", client="confluent", version=confluent_kafka.version()[0],
         librdkafka=confluent_kafka.libversion()[0], pid=os.getpid())
    consumer = Consumer(_confluent_conf(args, debug={"debug": "cgrp"}))  # librdkafka logs to stderr

    def generation() -> tuple[int, str | None]:
        try:
            return parse_cgmd(consumer.consumer_group_metadata())
        except Exception:  # noqa: BLE001 - not in a group yet
            return -1, None

    _run_confluent_shaped(args, consumer, generation, KafkaException, TopicPartition, leave_before_close=True)


def run_mafka(args: argparse.Namespace) -> None:
    """mafka.client's Consumer: confluent-kafka's API, so the same loop drives it."""
    import mafka
    from mafka.client import Consumer, KafkaException, TopicPartition

    emit("started", client="mafka", version=getattr(mafka, "__version__", "dev"), pid=os.getpid())
    consumer = Consumer(_confluent_conf(args, debug={}))

    def generation() -> tuple[int, str | None]:
        member = consumer._member  # the generation is not part of confluent-kafka's public API
        return (member.generation, member.member_id or None) if member is not None else (-1, None)

    _run_confluent_shaped(args, consumer, generation, KafkaException, TopicPartition)


def _confluent_conf(args: argparse.Namespace, debug: dict[str, str]) -> dict[str, Any]:
    conf: dict[str, Any] = {
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "session.timeout.ms": args.session_timeout_ms,
        "heartbeat.interval.ms": args.heartbeat_interval_ms,
        "partition.assignment.strategy": args.assignor,
        "fetch.wait.max.ms": 100,
        "topic.metadata.refresh.interval.ms": 2000,
        "reconnect.backoff.ms": 50,
        "reconnect.backoff.max.ms": 500,
        "error_cb": lambda err: emit("error", error=str(err)),
    }
    if args.group_instance_id:
        conf["group.instance.id"] = args.group_instance_id
    if args.group_protocol == "consumer":
        # KIP-848: the broker owns session, heartbeat and assignment; clients refuse those configs.
        for key in ("session.timeout.ms", "heartbeat.interval.ms", "partition.assignment.strategy"):
            del conf[key]
        conf["group.protocol"] = "consumer"
        if args.remote_assignor:
            conf["group.remote.assignor"] = args.remote_assignor
    if args.debug:
        conf.update(debug)
    return conf


def _run_confluent_shaped(args: argparse.Namespace, consumer: Any, generation: Any,
                          KafkaException: Any, TopicPartition: Any,  # noqa: N803 - the client's classes
                          leave_before_close: bool = False) -> None:
    """The member loop; ``leave_before_close`` unsubscribes and serves the revoke through poll()
    before close(), for librdkafka: a rebalance still pending when close() runs (another member's
    LeaveGroup as this one is told to stop) is served inside close() and can hang in
    rd_kafka_assign forever (librdkafka #4884)."""
    # Incremental protocols (cooperative-sticky, KIP-848) hand over only the partitions added or
    # revoked; eager ones revoke everything before each assignment.  Either way the partitions
    # held are the union of the assigned ones minus the revoked or lost ones: "assigned" prints
    # that whole set (and "added" what this callback gave).
    held: set[int] = set()

    def on_assign(c: Any, partitions: list[Any]) -> None:
        added = {p.partition for p in partitions}
        held.update(added)
        gen, member = generation()
        emit("assigned", partitions=sorted(held), added=sorted(added), generation=gen, member_id=member)

    def on_revoke(c: Any, partitions: list[Any]) -> None:
        held.difference_update(p.partition for p in partitions)
        emit("revoked", partitions=sorted(p.partition for p in partitions))

    def on_lost(c: Any, partitions: list[Any]) -> None:
        held.difference_update(p.partition for p in partitions)
        emit("lost", partitions=sorted(p.partition for p in partitions))

    emit("subscribing")
    consumer.subscribe([args.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
    last = (-1, None)
    try:
        while not _stop:
            msg = consumer.poll(0.1)
            now = generation()
            if now != last:
                last = now
                emit("generation", generation=now[0], member_id=now[1])
            if msg is None:
                continue
            if msg.error() is not None:
                emit("error", error=str(msg.error()))
                continue
            if args.work_ms:
                time.sleep(args.work_ms / 1000)  # the application's work on the record
            emit("consumed", partition=msg.partition(), offset=msg.offset(), value=decode(msg.value()))
            if args.commit:
                offsets = {msg.partition(): msg.offset() + 1}
                try:
                    result = consumer.commit(offsets=[TopicPartition(args.topic, msg.partition(), msg.offset() + 1)],
                                             asynchronous=False)
                except KafkaException as exc:
                    emit("commit_failed", offsets=offsets, error=str(exc.args[0]))
                    continue
                errors = [str(tp.error) for tp in result or [] if tp.error is not None]
                if errors:
                    emit("commit_failed", offsets=offsets, error="; ".join(errors))
                else:
                    emit("committed", offsets=offsets)
    finally:
        emit("closing")
        if leave_before_close:
            consumer.unsubscribe()
            deadline = time.monotonic() + 10.0
            while consumer.assignment() and time.monotonic() < deadline:
                consumer.poll(0.1)  # records polled now are not processed: the member is stopping
            consumer.poll(0.2)
        consumer.close()
        emit("closed")


# ------------------------------------------------------------------------------------ kafka-python


def run_kafka_python(args: argparse.Namespace) -> None:
    import kafka
    from kafka import ConsumerRebalanceListener, KafkaConsumer, OffsetAndMetadata, TopicPartition
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    emit("started", client="kafka-python", version=kafka.__version__, pid=os.getpid())
    assignors = {"roundrobin": RoundRobinPartitionAssignor, "range": RangePartitionAssignor}
    consumer = KafkaConsumer(
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        group_instance_id=args.group_instance_id or None,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=args.session_timeout_ms,
        heartbeat_interval_ms=args.heartbeat_interval_ms,
        partition_assignment_strategy=[assignors[args.assignor]],
        fetch_max_wait_ms=100,
        # kafka-python serves a rebalance (revoke, JoinGroup, SyncGroup) only inside poll(), and the
        # loop below commits each record synchronously: with the default 500 records a poll, a
        # member behind by a few hundred records on a loaded machine (commits at tens of ms each)
        # stayed out of poll() for 13 s, and the whole group's JoinGroup waited on it.  An
        # application committing per record bounds its batch in the same way.
        max_poll_records=10,
        metadata_max_age_ms=5000,
        reconnect_backoff_ms=50,
        reconnect_backoff_max_ms=500,
    )

    def generation() -> tuple[int, str | None]:
        gen = consumer._coordinator._generation
        return gen.generation_id, gen.member_id or None

    # The partitions this member holds as its listener was told. aiokafka's assignment() keeps a
    # revoked partition until the next assignment arrives, and getmany() can still return its
    # prefetched records in between; an application honouring its revoke callback drops them.
    held: set[Any] = set()

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked: Any) -> None:
            held.difference_update(revoked)
            emit("revoked", partitions=sorted(tp.partition for tp in revoked))

        def on_partitions_assigned(self, assigned: Any) -> None:
            held.clear()
            held.update(assigned)
            gen, member = generation()
            emit("assigned", partitions=sorted(tp.partition for tp in assigned), generation=gen, member_id=member)

        def on_partitions_lost(self, lost: Any) -> None:
            emit("lost", partitions=sorted(tp.partition for tp in lost))

    emit("subscribing")
    consumer.subscribe([args.topic], listener=Listener())
    last = (-1, None)
    try:
        while not _stop:
            batches = consumer.poll(timeout_ms=100)
            now = generation()
            if now != last:
                last = now
                emit("generation", generation=now[0], member_id=now[1])
            for tp, records in batches.items():
                for r in records:
                    emit("consumed", partition=tp.partition, offset=r.offset, value=decode(r.value))
                    if args.commit:
                        offsets = {tp.partition: r.offset + 1}
                        try:
                            consumer.commit({TopicPartition(args.topic, tp.partition): OffsetAndMetadata(r.offset + 1, "", -1)})
                        except Exception as exc:  # noqa: BLE001 - reported, the loop goes on
                            emit("commit_failed", offsets=offsets, error=repr(exc))
                        else:
                            emit("committed", offsets=offsets)
    finally:
        emit("closing")
        consumer.close(autocommit=False)
        emit("closed")


# ---------------------------------------------------------------------------------------- aiokafka


def run_aiokafka(args: argparse.Namespace) -> None:
    import asyncio

    asyncio.run(_aiokafka(args))


async def _aiokafka(args: argparse.Namespace) -> None:
    import asyncio

    import aiokafka
    from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
    from aiokafka.coordinator.assignors.range import RangePartitionAssignor
    from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor

    emit("started", client="aiokafka", version=aiokafka.__version__, pid=os.getpid())
    assignors = {"roundrobin": RoundRobinPartitionAssignor, "range": RangePartitionAssignor}
    consumer = AIOKafkaConsumer(
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        group_instance_id=args.group_instance_id or None,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=args.session_timeout_ms,
        heartbeat_interval_ms=args.heartbeat_interval_ms,
        partition_assignment_strategy=(assignors[args.assignor],),
        fetch_max_wait_ms=100,
        metadata_max_age_ms=5000,
        retry_backoff_ms=50,
    )

    def generation() -> tuple[int, str | None]:
        coordinator = consumer._coordinator
        if coordinator is None:
            return -1, None
        return coordinator.generation, coordinator.member_id or None

    # The partitions this member holds as its listener was told. aiokafka's assignment() keeps a
    # revoked partition until the next assignment arrives, and getmany() can still return its
    # prefetched records in between; an application honouring its revoke callback drops them.
    held: set[Any] = set()

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked: Any) -> None:
            held.difference_update(revoked)
            emit("revoked", partitions=sorted(tp.partition for tp in revoked))

        def on_partitions_assigned(self, assigned: Any) -> None:
            held.clear()
            held.update(assigned)
            gen, member = generation()
            emit("assigned", partitions=sorted(tp.partition for tp in assigned), generation=gen, member_id=member)

    emit("subscribing")
    consumer.subscribe([args.topic], listener=Listener())
    await consumer.start()
    last = (-1, None)
    try:
        while not _stop:
            batches = await consumer.getmany(timeout_ms=100)
            now = generation()
            if now != last:
                last = now
                emit("generation", generation=now[0], member_id=now[1])
            for tp, records in batches.items():
                for r in records:
                    # aiokafka rebalances in a background task: one can start or complete during
                    # `getmany` or the `await commit` below, and the rest of a revoked partition's
                    # batch must then be dropped, as an application would (its new owner reads it
                    # from the commit).
                    if tp not in held or tp not in consumer.assignment():
                        break
                    emit("consumed", partition=tp.partition, offset=r.offset, value=decode(r.value))
                    if args.commit:
                        offsets = {tp.partition: r.offset + 1}
                        try:
                            await consumer.commit({TopicPartition(args.topic, tp.partition): r.offset + 1})
                        except Exception as exc:  # noqa: BLE001 - reported, the loop goes on
                            emit("commit_failed", offsets=offsets, error=repr(exc))
                        else:
                            emit("committed", offsets=offsets)
            await asyncio.sleep(0)
    finally:
        emit("closing")
        await consumer.stop()
        emit("closed")


CLIENTS = {"confluent": run_confluent, "kafka-python": run_kafka_python, "aiokafka": run_aiokafka, "mafka": run_mafka}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--client", choices=sorted(CLIENTS), required=True)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group-instance-id", default="")
    parser.add_argument("--session-timeout-ms", type=int, default=10000)
    parser.add_argument("--heartbeat-interval-ms", type=int, default=1000)
    parser.add_argument("--assignor", choices=["roundrobin", "range", "cooperative-sticky"], default="roundrobin",
                        help="cooperative-sticky: confluent and mafka only")
    parser.add_argument("--work-ms", type=float, default=0.0, help="confluent, mafka: sleep this long per record")
    parser.add_argument("--group-protocol", choices=["classic", "consumer"], default="classic",
                        help="group.protocol (confluent, mafka): consumer is KIP-848's")
    parser.add_argument("--remote-assignor", default="", help="group.remote.assignor with --group-protocol consumer")
    parser.add_argument("--commit", action="store_true", help="commit offset+1 synchronously after each message")
    parser.add_argument("--debug", action="store_true",
                        help="the client's group protocol log on stderr (librdkafka debug=cgrp; INFO logging)")
    args = parser.parse_args(argv)
    if args.debug:
        import logging

        logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                            format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    try:
        CLIENTS[args.client](args)
    except Exception as exc:
        emit("crashed", error=repr(exc))
        raise
    return 0


if __name__ == "__main__":
    sys.exit(main())
