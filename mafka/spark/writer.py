"""Writing rows to topics: the Kafka sink's columns and options, with mafka.client's idempotent producer.

No Spark import here: the data source's writer and the ETL job call it with
any iterable of rows (``pyspark.sql.Row`` or mappings).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from mafka.spark.offset_ranges import ReadOptionsError, java_client_security

__all__ = ["check_sink", "write_rows", "produce_rows", "SinkOptions", "WriteError"]

_SINK_OPTIONS = {"topic", "includeheaders", "path"}
_COLUMNS = {"key", "value", "topic", "partition", "headers"}


class WriteError(RuntimeError):
    """Some records were not acknowledged; the task fails (and Spark retries it)."""


class SinkOptions:
    def __init__(self, bootstrap: str, topic: str | None, client: dict[str, str]) -> None:
        self.bootstrap_servers = bootstrap
        self.topic = topic
        self.client_config = client


def check_sink(options: Mapping[str, str], columns: Iterable[str]) -> tuple[SinkOptions, list[str]]:
    """Validates the sink's options and the DataFrame's columns (on the driver, before any task).

    Raises:
        ReadOptionsError: naming the option or column.
    """
    opts = {str(k).lower(): str(v) for k, v in options.items()}
    client: dict[str, str] = {}
    for key, value in opts.items():
        if key.startswith(("kafka.", "mafka.")):
            client[key.split(".", 1)[1]] = value
        elif key not in _SINK_OPTIONS:
            raise ReadOptionsError(f"unknown option '{key}' for writing")
    bootstrap = client.pop("bootstrap.servers", "").strip()
    if not bootstrap:
        raise ReadOptionsError("option 'kafka.bootstrap.servers' is required")
    client = java_client_security(client)
    columns = [c.lower() for c in columns]
    if "value" not in columns:
        raise ReadOptionsError("a 'value' column is required to write to a topic")
    topic = opts.get("topic")
    if topic is None and "topic" not in columns:
        raise ReadOptionsError("a 'topic' column or the 'topic' option is required to write to a topic")
    # Other columns are ignored, as Spark's Kafka sink ignores them: a DataFrame read from a topic
    # (offset, timestamp, ...) can be written back as it is.
    return SinkOptions(bootstrap, topic, client), [c for c in columns if c in _COLUMNS]


def _bytes(value: Any, column: str) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise WriteError(f"column '{column}' must be string or binary, not {type(value).__name__}")


def write_rows(options: SinkOptions, rows: Iterable[Any]) -> int:
    """Produces every row (idempotent, acks=all) and waits for all acknowledgements; returns the count.

    Raises:
        WriteError: a record failed or was not acknowledged in time.
    """
    from mafka.client import Producer

    conf = {**options.client_config, "bootstrap.servers": options.bootstrap_servers,
            "enable.idempotence": True, "acks": "all"}
    producer = Producer(conf)
    failures: list[str] = []

    try:
        count = produce_rows(producer, options, rows, failures)
        left = producer.flush(300)
        if left:
            raise WriteError(f"{left} records were not acknowledged within 300 s")
        if failures:
            raise WriteError("records failed: " + "; ".join(failures))
    finally:
        producer.close()
    return count


def produce_rows(producer: Any, options: SinkOptions, rows: Iterable[Any], failures: list[str]) -> int:
    """Produces every row with ``producer`` (no flush); delivery failures (the first 5) go to ``failures``.

    Raises:
        WriteError: a row without a topic, or a column of the wrong type.
    """
    def report(err: Any, msg: Any) -> None:
        if err is not None and len(failures) < 5:
            failures.append(f"{msg.topic()}-{msg.partition()}: {err}")

    count = 0
    for row in rows:
        get = row.asDict() if hasattr(row, "asDict") else row
        topic = options.topic or get.get("topic")
        if not topic:
            raise WriteError("a row has no topic (null 'topic' column and no 'topic' option)")
        partition = get.get("partition")
        headers = get.get("headers")
        if headers is not None:
            headers = [(h["key"], _bytes(h["value"], "headers")) if isinstance(h, Mapping)
                       else (h[0], _bytes(h[1], "headers")) for h in headers]
        kwargs = {"value": _bytes(get.get("value"), "value"), "key": _bytes(get.get("key"), "key"),
                  "headers": headers, "on_delivery": report}
        if partition is not None:
            kwargs["partition"] = int(partition)
        while True:
            try:
                producer.produce(topic, **kwargs)
                break
            except BufferError:
                producer.poll(0.1)
        count += 1
        if count % 10_000 == 0:
            producer.poll(0)
    return count
