"""console-producer / console-consumer: parsing, line reading and Kafka's message formatter."""

from __future__ import annotations

import argparse
import io
import os

import pytest

from mafka.cli import console_consumer, console_producer
from mafka.cli.console_consumer import EARLIEST, LATEST, Formatter, parse_offset
from mafka.cli.console_producer import parse_line, read_lines
from mafka.wire.records import Record


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


REC = Record(offset=7, timestamp=1700000000000, key=b"k", value=b"v", headers=(("h1", b"x"), ("h2", None)))


def test_formatter_defaults_print_values_only() -> None:
    assert Formatter({}).format(REC, 2, 0) == b"v\n"
    assert Formatter({}).format(Record(0, 0, None, None), 0, 0) == b"null\n"


def test_formatter_key_and_separator() -> None:
    assert Formatter({"print.key": "true"}).format(REC, 2, 0) == b"k\tv\n"
    assert Formatter({"print.key": "true", "key.separator": ":"}).format(REC, 2, 0) == b"k:v\n"
    assert Formatter({"print.key": "true"}).format(Record(0, 0, None, b"v"), 0, 0) == b"null\tv\n"
    assert Formatter({"print.key": "true", "null.literal": "NULL"}).format(Record(0, 0, None, b"v"), 0, 0) == b"NULL\tv\n"


def test_formatter_all_columns_in_kafkas_order() -> None:
    props = {p: "true" for p in ("print.timestamp", "print.partition", "print.offset", "print.headers", "print.key")}
    assert (
        Formatter(props).format(REC, 2, 0)
        == b"CreateTime:1700000000000\tPartition:2\tOffset:7\th1:x,h2:null\tk\tv\n"
    )
    assert Formatter({"print.timestamp": "true"}).format(REC, 0, 1) == b"LogAppendTime:1700000000000\tv\n"
    assert Formatter({"print.headers": "true"}).format(Record(0, 0, None, b"v"), 0, 0) == b"NO_HEADERS\tv\n"
    assert Formatter({"line.separator": "\\r\\n"}).format(REC, 0, 0) == b"v\r\n"
    assert Formatter({"print.key": "true", "print.value": "false"}).format(REC, 0, 0) == b"k\n"
