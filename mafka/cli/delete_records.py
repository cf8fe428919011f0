"""``mafka delete-records``: Kafka 2.8's ``kafka-delete-records.sh`` for Mafka.

``--bootstrap-server H:P --offset-json-file F`` where F is::

    {"partitions": [{"topic": "foo", "partition": 1, "offset": 1}], "version": 1}

(offset -1: everything up to the high watermark).  Sends DeleteRecords to each
partition's leader (:meth:`mafka.client.AdminClient.delete_records`) and prints
2.8's ``DeleteRecordsCommand`` lines::

    Executing records delete operation
    Records delete operation completed:
    partition: foo-1<TAB>low_watermark: 1
    partition: foo-2<TAB>error: org.apache.kafka.common.errors.OffsetOutOfRangeException: The requested …

A partition's error does not change the exit status (Kafka's does not
either); a usage or input error does (stderr, status 1).  The partitions are
listed sorted (Kafka's order is a HashMap's).  While the leaders answer, the
partitions done so far show on stderr (:mod:`mafka.cli.progress`), ending with
``delete-records: 2/2 partitions done (100%) in 0.1 s``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from mafka.cli.clients import KafkaToolError as CommandError
from mafka.cli.clients import admin_config, error_text, java_exception
from mafka.cli.progress import Progress, progress
from mafka.client.admin import AdminClient
from mafka.client.kafka_error import KafkaError as ClientError
from mafka.client.kafka_error import KafkaException
from mafka.client.message import TopicPartition
from mafka.errors import ErrorCode

__all__ = ["add_parser", "run", "parse_offset_json", "format_results"]

EARLIEST_VERSION = 1


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "delete-records",
        help="delete the records of partitions below an offset (kafka-delete-records)",
    )
    p.add_argument("--bootstrap-server", metavar="HOST:PORT", help="REQUIRED: The server to connect to.")
    p.add_argument("--offset-json-file", metavar="FILE",
                   help='REQUIRED: {"partitions":[{"topic":"foo","partition":1,"offset":1}],"version":1}')
    p.add_argument("--command-config", metavar="FILE",
                   help="A property file containing configs to be passed to Admin Client.")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for the cluster")
    p.set_defaults(func=run)


def parse_offset_json(text: str) -> list[tuple[tuple[str, int], int]]:
    """Kafka's ``parseOffsetJsonStringWithoutDedup`` followed by its duplicate check."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        raise CommandError("The input string is not a valid JSON") from None
    if not isinstance(data, dict):
        raise CommandError("The input string is not a valid JSON")
    version = data.get("version", EARLIEST_VERSION)
    if version != 1:
        raise CommandError(f"Not supported version field value {version}")
    if not isinstance(data.get("partitions"), list):
        raise CommandError("Missing partitions field")
    out: list[tuple[tuple[str, int], int]] = []
    for entry in data["partitions"]:
        if not isinstance(entry, dict):
            raise CommandError(f"Invalid partition entry {json.dumps(entry)}")
        for field in ("topic", "partition", "offset"):
            if field not in entry:
                raise CommandError(f"No such field exists: `{field}`",
                                   "com.fasterxml.jackson.databind.JsonMappingException")
        try:
            out.append(((str(entry["topic"]), int(entry["partition"])), int(entry["offset"])))
        except (TypeError, ValueError):
            raise CommandError(f"Invalid partition entry {json.dumps(entry)}") from None
    parts = [tp for tp, _ in out]
    duplicates = sorted({tp for tp in parts if parts.count(tp) > 1})
    if duplicates:
        raise CommandError(
            "Offset json file contains duplicate topic partitions: "
            + ",".join(f"{t}-{p}" for t, p in duplicates),
            "kafka.common.AdminCommandFailedException",
        )
    return out


def format_results(results: dict[tuple[str, int], int | str]) -> list[str]:
    """Kafka's result lines: a low watermark (int) or an error text (str) per partition, sorted."""
    lines = []
    for (topic, partition), result in sorted(results.items()):
        if isinstance(result, int):
            lines.append(f"partition: {topic}-{partition}\tlow_watermark: {result}")
        else:
            lines.append(f"partition: {topic}-{partition}\terror: {result}")
    return lines


def delete_records(admin: AdminClient, offsets: list[tuple[tuple[str, int], int]],
                   timeout_s: float, bar: Progress | None = None) -> dict[tuple[str, int], int | str]:
    """DeleteRecords at the leaders: partition → low watermark, or the Java client's error text.

    ``bar`` advances by one as each partition's answer (or error) is in.
    """
    futures = admin.delete_records([TopicPartition(t, p, offset) for (t, p), offset in offsets],
                                   request_timeout=timeout_s, operation_timeout=timeout_s)
    out: dict[tuple[str, int], int | str] = {}
    for tp, future in futures.items():
        key = (tp.topic, tp.partition)
        try:
            out[key] = future.result(timeout_s + 5.0).low_watermark
        except KafkaException as exc:
            if exc.error.code() in (ClientError._UNKNOWN_PARTITION, ClientError._UNKNOWN_TOPIC):
                # Kafka's admin client: no leader for the partition in the metadata.
                out[key] = java_exception(ErrorCode.LEADER_NOT_AVAILABLE)
            else:
                out[key] = java_exception(exc.error.code(), error_text(exc.error))
        except TimeoutError:
            out[key] = java_exception(ClientError._TIMED_OUT, "Timed out waiting for a node assignment.")
        if bar is not None:
            bar.advance()
    return out


def run(args: argparse.Namespace) -> int:
    for option, value in (("bootstrap-server", args.bootstrap_server), ("offset-json-file", args.offset_json_file)):
        if not value:
            print(f'Missing required argument "[{option}]"', file=sys.stderr)
            return 1
    try:
        config = admin_config(args.bootstrap_server, "mafka-delete-records", args.timeout, args.command_config)
        with open(args.offset_json_file, encoding="utf-8") as f:
            offsets = parse_offset_json(f.read())
        with AdminClient(config) as admin:
            print("Executing records delete operation", flush=True)
            with progress("delete-records", total=len(offsets), unit="partitions done") as bar:
                results = delete_records(admin, offsets, args.timeout, bar)
            print("Records delete operation completed:")
    except CommandError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    except FileNotFoundError as exc:
        print(f"java.nio.file.NoSuchFileException: {exc.filename}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"java.io.IOException: {exc}", file=sys.stderr)
        return 1
    except ValueError as exc:  # a bad bootstrap list
        print(f"org.apache.kafka.common.config.ConfigException: {exc}", file=sys.stderr)
        return 1
    for line in format_results(results):
        print(line)
    sys.stdout.flush()
    return 0
