"""One mafka.client ShareConsumer in a process of its own, for the share-consumer integration tests.

``python -m tests.harness.share_member --bootstrap B --group G --topic T [--mode M]``
prints one JSON object per line: ``{"event": "subscribed"}``, then for every record
``{"event": "got", "p": partition, "o": offset, "dc": delivery count, "t": monotonic time}``, and
for every acknowledgement result ``{"event": "ack", "p": …, "offsets": […], "error": name or null}``.
Modes: ``accept`` (explicit ACCEPT of every record, then ``commit_async``), ``hold`` (take one
poll's records and never acknowledge them: the process keeps its membership and its locks until
killed).  SIGTERM closes the consumer.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from typing import Any

from mafka.client import AcknowledgeType, ShareConsumer


def _print(**event: Any) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--mode", choices=("accept", "hold"), default="accept")
    parser.add_argument("--max-poll-records", type=int, default=50)
    args = parser.parse_args()
    stop = False

    def on_term(*_: Any) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, on_term)
    consumer = ShareConsumer({"bootstrap.servers": args.bootstrap, "group.id": args.group,
                              "share.acknowledgement.mode": "explicit",
                              "max.poll.records": args.max_poll_records})

    def on_ack(offsets: Any, exc: Any) -> None:
        for tp, done in offsets.items():
            _print(event="ack", p=tp.partition, offsets=sorted(done),
                   error=None if exc is None else exc.args[0].name())

    consumer.set_acknowledgement_commit_callback(on_ack)
    consumer.subscribe([args.topic])
    _print(event="subscribed")
    held = False
    while not stop:
        if held:
            time.sleep(0.1)
            continue
        for msg in consumer.poll(0.5):
            if msg.error() is not None:
                _print(event="error", error=msg.error().name())
                continue
            _print(event="got", p=msg.partition(), o=msg.offset(), dc=msg.delivery_count(), t=time.monotonic())
            if args.mode == "accept":
                consumer.acknowledge(msg, AcknowledgeType.ACCEPT)
            else:
                held = True
        if args.mode == "accept":
            consumer.commit_async()
    consumer.close()
    _print(event="closed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
