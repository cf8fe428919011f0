"""console-producer / console-consumer: parsing, line reading and Kafka's message formatter."""

from __future__ import annotations

import argparse
import io
import os
import random
from pathlib import Path
from typing import Any

import pytest

from mafka.cli import console_consumer, console_producer
from mafka.cli.console_consumer import EARLIEST, LATEST, Formatter, parse_offset
from mafka.cli.console_producer import parse_line, read_lines
from mafka.client.kafka_error import KafkaError
from mafka.client.message import (
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    TIMESTAMP_NOT_AVAILABLE,
    Message,
)


def parse(module: object, *argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    module.add_parser(parser.add_subparsers(dest="command"))  # type: ignore[attr-defined]
    name = "console-producer" if module is console_producer else "console-consumer"
    return parser.parse_args([name, "--bootstrap-server", "localhost:9092", "--topic", "t", *argv])


# -- producer ----------------------------------------------------------------------


def test_producer_arguments() -> None:
    args = parse(console_producer, "--property", "parse.key=true", "--property", "key.separator=:",
                 "--compression-codec", "zstd", "--request-required-acks", "all")
    assert args.property == ["parse.key=true", "key.separator=:"]
    assert args.compression_codec == "zstd"
    assert args.request_required_acks == "all"
    assert parse(console_producer).compression_codec == "none"
    assert parse(console_producer, "--compression-codec").compression_codec == "gzip"  # Kafka's bare flag
    with pytest.raises(SystemExit):
        parse(console_producer, "--compression-codec", "brotli")


def test_parse_line() -> None:
    assert parse_line("hello", 1, False, "\t") == (None, b"hello")
    assert parse_line("k\tv\tw", 1, True, "\t") == (b"k", b"v\tw")
    assert parse_line("k::v", 1, True, "::") == (b"k", b"v")
    assert parse_line("k:", 1, True, ":") == (b"k", b"")
    with pytest.raises(ValueError, match="No key found on line 3: novalue"):
        parse_line("novalue", 3, True, ":")
    assert parse_line("novalue", 3, True, ":", ignore_error=True) == (None, b"novalue")


def test_read_lines_from_a_pipe_and_a_text_stream() -> None:
    r, w = os.pipe()
    os.write(w, b"a\nb\r\nc")
    os.close(w)
    with os.fdopen(r) as stream:
        assert [x for x in read_lines(stream, linger=0.01) if x is not None] == ["a", "b", "c"]
    assert list(read_lines(io.StringIO("x\ny\n"))) == ["x", "y"]


class FakeProducer:
    def __init__(self) -> None:
        self.records: list[tuple[bytes | None, bytes]] = []
        self.flushes = 0

    def add(self, key: bytes | None, value: bytes) -> None:
        self.records.append((key, value))

    def flush(self) -> None:
        self.flushes += 1


def test_produce_lines_flushes_on_pause_and_at_end() -> None:
    fake = FakeProducer()
    console_producer.produce_lines(fake, ["k1:v1", None, "k2:v2"], {"parse.key": "true", "key.separator": ":"})  # type: ignore[arg-type]
    assert fake.records == [(b"k1", b"v1"), (b"k2", b"v2")]
    assert fake.flushes == 2


def test_produce_lines_flushes_what_it_has_before_a_bad_line() -> None:
    fake = FakeProducer()
    with pytest.raises(ValueError):
        console_producer.produce_lines(fake, ["k1:v1", "bad"], {"parse.key": "true", "key.separator": ":"})  # type: ignore[arg-type]
    assert fake.records == [(b"k1", b"v1")] and fake.flushes == 1


# -- consumer ----------------------------------------------------------------------


def test_consumer_arguments() -> None:
    args = parse(console_consumer, "--from-beginning", "--max-messages", "10", "--timeout-ms", "500",
                 "--property", "print.key=true")
    assert args.from_beginning and args.max_messages == 10 and args.timeout_ms == 500
    assert console_consumer.check_args(args) == EARLIEST
    assert console_consumer.check_args(parse(console_consumer)) == LATEST
    assert console_consumer.check_args(parse(console_consumer, "--partition", "1", "--offset", "42")) == 42


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--offset", "5"), "The partition is required when offset is specified."),
        (("--partition", "0", "--offset", "5", "--from-beginning"), "cannot be specified together"),
        (("--partition", "0", "--offset", "x"), "The provided offset value 'x' is incorrect"),
    ],
)
def test_consumer_argument_errors(argv: tuple[str, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        console_consumer.check_args(parse(console_consumer, *argv))


def test_parse_offset() -> None:
    assert parse_offset("earliest", False) == EARLIEST
    assert parse_offset("LATEST", True) == LATEST
    assert parse_offset(None, True) == EARLIEST
    assert parse_offset(None, False) == LATEST
    assert parse_offset("0", False) == 0


def test_consumer_argument_error_exit(capsys: pytest.CaptureFixture[str]) -> None:
    from mafka.cli.main import main

    assert main(["console-consumer", "--bootstrap-server", "localhost:1", "--topic", "t", "--offset", "1"]) == 1
    assert "The partition is required when offset is specified." in capsys.readouterr().err


def message(offset: int, timestamp: int, key: bytes | None, value: bytes | None,
            headers: list[tuple[str, bytes | None]] | None = None, partition: int = 0,
            ts_type: int = TIMESTAMP_CREATE_TIME) -> Message:
    return Message("t", partition, offset, key, value, headers, ts_type, timestamp)


REC = message(7, 1700000000000, b"k", b"v", [("h1", b"x"), ("h2", None)], partition=2)


def test_formatter_defaults_print_values_only() -> None:
    assert Formatter({}).format(REC) == b"v\n"
    assert Formatter({}).format(message(0, 0, None, None)) == b"null\n"


def test_formatter_key_and_separator() -> None:
    assert Formatter({"print.key": "true"}).format(REC) == b"k\tv\n"
    assert Formatter({"print.key": "true", "key.separator": ":"}).format(REC) == b"k:v\n"
    assert Formatter({"print.key": "true"}).format(message(0, 0, None, b"v")) == b"null\tv\n"
    assert Formatter({"print.key": "true", "null.literal": "NULL"}).format(message(0, 0, None, b"v")) == b"NULL\tv\n"


def test_formatter_all_columns_in_kafkas_order() -> None:
    props = {p: "true" for p in ("print.timestamp", "print.partition", "print.offset", "print.headers", "print.key")}
    assert (
        Formatter(props).format(REC)
        == b"CreateTime:1700000000000\tPartition:2\tOffset:7\th1:x,h2:null\tk\tv\n"
    )
    assert (Formatter({"print.timestamp": "true"}).format(
        message(7, 1700000000000, None, b"v", ts_type=TIMESTAMP_LOG_APPEND_TIME)) == b"LogAppendTime:1700000000000\tv\n")
    assert Formatter({"print.timestamp": "true"}).format(
        message(7, -1, None, b"v", ts_type=TIMESTAMP_NOT_AVAILABLE)) == b"NO_TIMESTAMP\tv\n"
    assert Formatter({"print.headers": "true"}).format(message(0, 0, None, b"v")) == b"NO_HEADERS\tv\n"
    assert Formatter({"print.headers": "true"}).format(message(0, 0, None, b"v", [])) == b"NO_HEADERS\tv\n"
    assert Formatter({"line.separator": "\\r\\n"}).format(REC) == b"v\r\n"
    assert Formatter({"print.key": "true", "print.value": "false"}).format(REC) == b"k\n"
    assert Formatter({"print.value": "false"}).format(REC) == b""


# -- console-consumer: groups and the consume loop -------------------------------------------------


def test_consumer_config_subscribes_in_a_group_or_a_generated_one() -> None:
    conf = console_consumer.consumer_config(parse(console_consumer, "--group", "g", "--from-beginning"))
    assert (conf["group.id"], conf["auto.offset.reset"], conf["client.id"]) == ("g", "earliest", "console-consumer")
    assert conf["bootstrap.servers"] == "localhost:9092" and "enable.auto.commit" not in conf
    assert conf["isolation.level"] == "read_uncommitted", "Kafka's console consumer default"
    conf = console_consumer.consumer_config(parse(console_consumer), rng=random.Random(3))
    assert conf["group.id"] == f"console-consumer-{random.Random(3).randrange(100000)}"
    assert conf["enable.auto.commit"] is False and conf["auto.offset.reset"] == "latest"
    conf = console_consumer.consumer_config(parse(console_consumer, "--consumer-property", "group.id=h",
                                                  "--consumer-property", "enable.auto.commit=true"))
    assert (conf["group.id"], conf["enable.auto.commit"]) == ("h", "true")
    conf = console_consumer.consumer_config(parse(console_consumer, "--partition", "1"))
    assert "group.id" not in conf, "assigned: no group"


def test_consumer_config_reads_the_file_and_the_properties_win(tmp_path: Path) -> None:
    cfg = tmp_path / "consumer.properties"
    cfg.write_text("group.id=g\nfetch.min.bytes=10\nauto.offset.reset=earliest\n")
    conf = console_consumer.consumer_config(parse(console_consumer, "--consumer.config", str(cfg),
                                                  "--consumer-property", "fetch.min.bytes=20"))
    assert (conf["group.id"], conf["fetch.min.bytes"], conf["auto.offset.reset"]) == ("g", "20", "earliest")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--group", "g", "--consumer-property", "group.id=h"),
         "The group ids provided in different places (directly using '--group', via '--consumer-property', or via "
         "'--consumer.config') do not match. Detected group ids: 'g', 'h'"),
        (("--group", "g", "--partition", "0"), "Options group and partition cannot be specified together."),
        (("--from-beginning", "--consumer-property", "auto.offset.reset=latest"),
         "Can't simultaneously specify --from-beginning and 'auto.offset.reset=latest', please remove one option"),
    ],
)
def test_consumer_config_errors(argv: tuple[str, ...], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ValueError) as err:
        console_consumer.consumer_config(parse(console_consumer, *argv))
    assert str(err.value) == message
    from mafka.cli.main import main

    assert main(["console-consumer", "--bootstrap-server", "localhost:1", "--topic", "t", *argv]) == 1
    assert capsys.readouterr().err == message + "\n"


def test_unknown_consumer_properties_are_warned_about_and_left_out(capsys: pytest.CaptureFixture[str]) -> None:
    conf = console_consumer.consumer_config(parse(console_consumer, "--consumer-property", "foo.bar=1",
                                                  "--consumer-property", "key.deserializer=x.Y"))
    assert "foo.bar" not in conf and "key.deserializer" not in conf
    err = capsys.readouterr().err
    assert err.endswith("WARN The configuration 'foo.bar' was supplied but isn't a known config. "
                        "(org.apache.kafka.clients.consumer.ConsumerConfig)\n")
    assert err.count("\n") == 1, "serializer classes are dropped silently"


class ScriptedConsumer:
    def __init__(self, batches: list[list[Message]]) -> None:
        self.batches = batches
        self.asked: list[int] = []

    def consume(self, n: int, timeout: float) -> list[Message]:
        self.asked.append(n)
        return self.batches.pop(0) if self.batches else []


def test_consume_asks_only_for_what_is_still_to_print() -> None:
    out = io.BytesIO()
    consumer = ScriptedConsumer([[message(0, 0, None, b"a"), message(1, 0, None, b"b")], [],
                                 [message(2, 0, None, b"c")]])
    assert console_consumer.consume(consumer, Formatter({}), out, 3, None) == (3, False)
    assert out.getvalue() == b"a\nb\nc\n"
    assert consumer.asked == [3, 1, 1]


def test_consume_stops_on_timeout_and_on_an_error() -> None:
    out = io.BytesIO()
    assert console_consumer.consume(ScriptedConsumer([]), Formatter({}), out, None, 0) == (0, True)
    error = Message("t", 0, 5, None, None, error=KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED))
    eof = Message("t", 0, 5, None, None, error=KafkaError(KafkaError._PARTITION_EOF))
    progress = console_consumer.Progress()
    with pytest.raises(console_consumer.ConsumeError) as err:
        console_consumer.consume(ScriptedConsumer([[message(0, 0, None, b"a"), eof, error]]), Formatter({}), out,
                                 None, None, progress)
    assert err.value.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED and progress.count == 1


# -- console-producer: configuration and failures ----------------------------------------------


def test_producer_config_flags_and_properties() -> None:
    conf = console_producer.producer_config(parse(console_producer), {})
    assert conf == {"client.id": "console-producer", "delivery.timeout.ms": 30000, "bootstrap.servers": "localhost:9092",
                    "acks": "1", "compression.type": "none", "request.timeout.ms": 30000}
    conf = console_producer.producer_config(
        parse(console_producer, "--compression-codec", "lz4", "--request-required-acks", "all"),
        {"acks": "0", "linger.ms": "50", "client.id": "me"})
    assert (conf["acks"], conf["compression.type"], conf["linger.ms"], conf["client.id"]) == ("0", "lz4", "50", "me")


class FakeClientProducer:
    """produce()/poll()/flush() of mafka.client.Producer, delivering with a scripted error."""

    def __init__(self, errors: dict[int, KafkaError]) -> None:
        self.errors = errors
        self.pending: list[tuple[Any, Message]] = []
        self.full = 1  # the first produce() finds the queue full

    def produce(self, topic: str, value: bytes, key: bytes | None, on_delivery: Any) -> None:
        if self.full:
            self.full -= 1
            raise BufferError("Local: Queue full")
        n = len(self.pending)
        self.pending.append((on_delivery, Message(topic, n % 2, n, key, value, error=self.errors.get(n))))

    def poll(self, timeout: float) -> int:
        return 0

    def flush(self, timeout: float) -> int:
        for cb, msg in self.pending:
            cb(msg.error(), msg)
        self.pending.clear()
        return 0


def test_line_sender_logs_each_failure_once_per_partition_and_error(capsys: pytest.CaptureFixture[str]) -> None:
    timed_out = KafkaError(KafkaError._MSG_TIMED_OUT)
    fake = FakeClientProducer({1: timed_out, 3: timed_out, 4: KafkaError(KafkaError.NOT_ENOUGH_REPLICAS)})
    sender = console_producer.LineSender(fake, "t", 5.0)
    console_producer.produce_lines(sender, [f"v{i}" for i in range(5)], {})
    assert sender.failed == 3
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2
    assert lines[0].endswith("ERROR Error when sending message to topic t partition 1 with error: _MSG_TIMED_OUT: "
                             "Local: Message timed out (org.apache.kafka.clients.producer.internals.ErrorLoggingCallback)")
    assert "partition 0 with error: NOT_ENOUGH_REPLICAS: Messages are rejected since there are fewer in-sync " \
        "replicas than required." in lines[1]
