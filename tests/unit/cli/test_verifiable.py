"""``mafka verifiable-producer`` / ``verifiable-consumer``: Kafka's flags and JSON events (fake clients)."""

from __future__ import annotations

import argparse
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from mafka.cli import verifiable_consumer as vc
from mafka.cli import verifiable_producer as vp
from mafka.cli.verifiable_events import event_line, java_double
from mafka.client.kafka_error import KafkaError, KafkaException
from mafka.client.message import Message, TopicPartition
from mafka.errors import ErrorCode


def parse(module: Any, *argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="mafka")
    module.add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args([module.__name__.rsplit(".", 1)[1].replace("_", "-"), *argv])


class Events:
    """Collects (name, fields) as the tools emit them."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, name: str, fields: dict[str, Any] | None = None) -> None:
        self.seen.append((name, dict(fields or {})))

    def names(self) -> list[str]:
        return [name for name, _ in self.seen]

    def lines(self) -> list[str]:
        """Each event as Kafka's Jackson line would print it at timestamp 1."""
        return [event_line(name, fields, timestamp=1) for name, fields in self.seen]


# --------------------------------------------------------------------------- the JSON


@pytest.mark.parametrize(("value", "text"), [
    (32.15434083601286, "32.15434083601286"), (100.0, "100.0"), (0.5, "0.5"), (0.001, "0.001"),
    (1e-4, "1.0E-4"), (1.5e-5, "1.5E-5"), (9999999.0, "9999999.0"), (1e7, "1.0E7"), (12345678.9, "1.23456789E7"),
    (134952.7665, "134952.7665"), (0.0, "0.0"), (-2.5, "-2.5"), (float("nan"), "NaN"), (float("inf"), "Infinity"),
])
def test_doubles_as_java_prints_them(value: float, text: str) -> None:
    assert java_double(value) == text


def test_event_lines_are_jacksons() -> None:
    assert event_line("startup_complete", timestamp=1545776540601) == \
        '{"timestamp":1545776540601,"name":"startup_complete"}'
    assert event_line("tool_data", {"sent": 10, "acked": 10, "target_throughput": -1,
                                    "avg_throughput": 32.15434083601286}, timestamp=1) == \
        '{"timestamp":1,"name":"tool_data","sent":10,"acked":10,"target_throughput":-1,' \
        '"avg_throughput":32.15434083601286}'
    assert event_line("tool_data", {"avg_throughput": float("nan")}, timestamp=1) == \
        '{"timestamp":1,"name":"tool_data","avg_throughput":"NaN"}'
    assert event_line("record_data", {"key": None, "value": 'é"\n'}, timestamp=2) == \
        '{"timestamp":2,"name":"record_data","key":null,"value":"é\\"\\n"}'


# --------------------------------------------------------------------------- the producer


class FakeProducer:
    """Acknowledges every record at the next poll/flush: partition = its number mod 2, offsets counting up.

    ``refuse`` maps a value to an error raised by ``produce``; ``fail`` one reported in its callback.
    """

    def __init__(self, acks: int = -1) -> None:
        self.pending: list[tuple[Any, Message]] = []
        self.produced: list[dict[str, Any]] = []
        self.refuse: dict[str, KafkaError] = {}
        self.fail: dict[str, KafkaError] = {}
        self.acks = acks
        self.after_produce: Any = None

    def produce(self, topic: str, value: str, key: str | None, timestamp: int, on_delivery: Any) -> None:
        if value in self.refuse:
            raise KafkaException(self.refuse[value])
        n = len(self.produced)
        self.produced.append({"topic": topic, "value": value, "key": key, "timestamp": timestamp})
        offset = -1001 if self.acks == 0 else 100 + n
        msg = Message(topic, n % 2, offset, key.encode() if key else None, value.encode(),
                      error=self.fail.get(value))
        self.pending.append((on_delivery, msg))
        if self.after_produce is not None:
            self.after_produce(n + 1)

    def poll(self, timeout: float | None = None) -> int:
        served, self.pending = self.pending, []
        for callback, msg in served:
            callback(msg.error(), msg)
        return len(served)

    def flush(self, timeout: float | None = None) -> int:
        self.poll()
        return 0


def test_producer_events_in_kafkas_order_and_fields() -> None:
    fake, events = FakeProducer(), Events()
    tool = vp.VerifiableProducer(fake, "t", -1, 3, value_prefix=7, create_time=None, repeating_keys=2, emit=events)
    tool.run()
    tool.close()
    assert [p["value"] for p in fake.produced] == ["7.0", "7.1", "7.2"]
    assert [p["key"] for p in fake.produced] == ["0", "1", "0"]
    lines = events.lines()
    assert lines[:4] == [
        '{"timestamp":1,"name":"startup_complete"}',
        '{"timestamp":1,"name":"producer_send_success","key":"0","value":"7.0","topic":"t","partition":0,"offset":100}',
        '{"timestamp":1,"name":"producer_send_success","key":"1","value":"7.1","topic":"t","partition":1,"offset":101}',
        '{"timestamp":1,"name":"producer_send_success","key":"0","value":"7.2","topic":"t","partition":0,"offset":102}',
    ]
    assert lines[4] == '{"timestamp":1,"name":"shutdown_complete"}'
    tool_data = json.loads(lines[5])
    assert list(tool_data) == ["timestamp", "name", "sent", "acked", "target_throughput", "avg_throughput"]
    assert (tool_data["sent"], tool_data["acked"], tool_data["target_throughput"]) == (3, 3, -1)


def test_producer_failures_are_kafkas_producer_send_error() -> None:
    fake, events = FakeProducer(), Events()
    fake.fail["1"] = KafkaError(ErrorCode.NOT_ENOUGH_REPLICAS)
    fake.refuse["2"] = KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    tool = vp.VerifiableProducer(fake, "t", -1, 4, None, None, None, events)
    tool.run()
    tool.close()
    assert events.lines()[1:5] == [
        '{"timestamp":1,"name":"producer_send_success","key":null,"value":"0","topic":"t","partition":0,"offset":100}',
        '{"timestamp":1,"name":"producer_send_error","topic":"t","key":null,"value":"1",'
        '"exception":"class org.apache.kafka.common.errors.NotEnoughReplicasException",'
        '"message":"Messages are rejected since there are fewer in-sync replicas than required."}',
        '{"timestamp":1,"name":"producer_send_error","topic":"t","key":null,"value":"2",'
        '"exception":"class org.apache.kafka.common.errors.UnknownTopicOrPartitionException",'
        '"message":"This server does not host this topic-partition."}',
        '{"timestamp":1,"name":"producer_send_success","key":null,"value":"3","topic":"t","partition":0,"offset":102}',
    ]
    assert (tool.num_sent, tool.num_acked) == (4, 2)
    assert events.seen[-1][1]["sent"] == 4 and events.seen[-1][1]["acked"] == 2


def test_acks_0_reports_offset_minus_one_and_create_times_advance(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter(range(1000, 2000, 10))
    monkeypatch.setattr(vp, "_now_ms", lambda: next(clock))
    fake, events = FakeProducer(acks=0), Events()
    tool = vp.VerifiableProducer(fake, "t", -1, 3, None, create_time=5000, repeating_keys=None, emit=events)
    tool.run()
    tool.close()
    assert {fields["offset"] for name, fields in events.seen if name == "producer_send_success"} == {-1}
    # Kafka adds the time since the tool's start to the create time after each record
    starts = [p["timestamp"] for p in fake.produced]
    assert starts[0] == 5000 and starts[1] > starts[0] and starts[2] - starts[1] > starts[1] - starts[0]


def test_stop_ends_the_run_with_the_shutdown_events() -> None:
    fake, events = FakeProducer(), Events()
    tool = vp.VerifiableProducer(fake, "t", -1, -1, None, None, None, events)
    fake.after_produce = lambda n: tool.stop.set() if n == 5 else None  # as SIGTERM would
    tool.run()
    tool.close()
    assert len(fake.produced) == 5
    assert events.names()[-2:] == ["shutdown_complete", "tool_data"]
    assert events.names().count("producer_send_success") == 5


def test_producer_flags_and_config(tmp_path: Path) -> None:
    args = parse(vp, "--topic", "t", "--broker-list", "b:1")
    assert (args.max_messages, args.throughput, args.acks, args.message_create_time, args.value_prefix) == \
        (-1, -1, -1, -1, None)
    assert vp.producer_config(args) == {"bootstrap.servers": "b:1", "acks": "-1", "retries": "0"}
    props = tmp_path / "p.properties"
    props.write_text("acks=1\nlinger.ms=5\nkey.serializer=org.apache.kafka.common.serialization.StringSerializer\n")
    args = parse(vp, "--topic", "t", "--bootstrap-server", "b:2", "--acks", "0", "--producer.config", str(props))
    assert vp.producer_config(args) == {"bootstrap.servers": "b:2", "acks": "1", "retries": "0", "linger.ms": "5"}
    args = parse(vp, "--topic", "t", "--bootstrap-server", "b:2", "--enable-idempotence", "--transactional-id", "x")
    assert vp.producer_config(args) == {"bootstrap.servers": "b:2", "acks": "-1", "enable.idempotence": "true",
                                        "transactional.id": "x"}


@pytest.mark.parametrize("argv", [
    ("--topic", "t"),  # no connection flag
    ("--bootstrap-server", "b:1"),  # no topic
    ("--topic", "t", "--bootstrap-server", "b:1", "--broker-list", "b:1"),
    ("--topic", "t", "--bootstrap-server", "b:1", "--acks", "2"),
    ("--topic", "t", "--bootstrap-server", "b:1", "--max-messages", "many"),
])
def test_producer_flag_errors(argv: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        parse(vp, *argv)
    assert caught.value.code == 2
    assert "error:" in capsys.readouterr().err


# --------------------------------------------------------------------------- the consumer


def record(topic: str, partition: int, offset: int, value: bytes | None = b"v", key: bytes | None = None) -> Message:
    return Message(topic, partition, offset, key, value)


def test_records_consumed_summary_verbose_and_limit() -> None:
    events = Events()
    tool = vc.VerifiableConsumer(None, "t", max_messages=4, auto_commit=False, verbose=True, emit=events)
    offsets = tool.records_received([record("t", 1, 7, b"a", b"k"), record("t", 0, 3), record("t", 1, 8),
                                     record("t", 0, 4), record("t", 0, 5)])
    assert [(tp.topic, tp.partition, tp.offset) for tp in offsets] == [("t", 1, 9), ("t", 0, 5)]
    assert events.lines() == [
        '{"timestamp":1,"name":"record_data","key":"k","value":"a","topic":"t","partition":1,"offset":7}',
        '{"timestamp":1,"name":"record_data","key":null,"value":"v","topic":"t","partition":1,"offset":8}',
        '{"timestamp":1,"name":"record_data","key":null,"value":"v","topic":"t","partition":0,"offset":3}',
        '{"timestamp":1,"name":"record_data","key":null,"value":"v","topic":"t","partition":0,"offset":4}',
        # count is the poll's, the partitions' counts what was consumed (--max-messages 4 cut it short)
        '{"timestamp":1,"name":"records_consumed","count":5,"partitions":['
        '{"topic":"t","partition":1,"count":2,"minOffset":7,"maxOffset":8},'
        '{"topic":"t","partition":0,"count":2,"minOffset":3,"maxOffset":4}]}',
    ]
    assert tool.finished()


class FakeConsumer:
    """Assigns t-0 at the first consume, then hands out ``batches``; ``commit_error`` fails commits."""

    def __init__(self, batches: list[list[Message]]) -> None:
        self.batches = list(batches)
        self.commits: list[list[tuple[str, int, int]]] = []
        self.commit_error: KafkaError | None = None
        self.callbacks: dict[str, Any] = {}
        self.closed = False
        self.assigned = False
        self.when_empty: Any = None

    def subscribe(self, topics: list[str], on_assign: Any, on_revoke: Any, on_lost: Any) -> None:
        self.topics = topics
        self.callbacks = {"assign": on_assign, "revoke": on_revoke}

    def consume(self, num: int, timeout: float) -> list[Message]:
        assert num == vc.MAX_POLL_RECORDS
        if not self.assigned:
            self.assigned = True
            self.callbacks["assign"](self, [TopicPartition("t", 0)])
        if not self.batches:
            if self.when_empty is not None:
                self.when_empty()
            return []
        return self.batches.pop(0)

    def commit(self, offsets: list[TopicPartition], asynchronous: bool) -> None:
        assert asynchronous is False
        self.commits.append([(tp.topic, tp.partition, tp.offset) for tp in offsets])
        if self.commit_error is not None:
            raise KafkaException(self.commit_error)

    def close(self) -> None:
        self.closed = True
        self.callbacks["revoke"](self, [TopicPartition("t", 0)])


def test_consumer_run_commits_and_shuts_down() -> None:
    fake, events = FakeConsumer([[record("t", 0, 0), record("t", 0, 1)], [record("t", 0, 2)]]), Events()
    tool = vc.VerifiableConsumer(fake, "t", max_messages=3, auto_commit=False, verbose=False, emit=events)
    tool.run()
    assert fake.topics == ["t"] and fake.closed
    assert fake.commits == [[("t", 0, 2)], [("t", 0, 3)]]
    assert events.lines() == [
        '{"timestamp":1,"name":"startup_complete"}',
        '{"timestamp":1,"name":"partitions_assigned","partitions":[{"topic":"t","partition":0}]}',
        '{"timestamp":1,"name":"records_consumed","count":2,"partitions":['
        '{"topic":"t","partition":0,"count":2,"minOffset":0,"maxOffset":1}]}',
        '{"timestamp":1,"name":"offsets_committed","offsets":[{"topic":"t","partition":0,"offset":2}],'
        '"success":true}',
        '{"timestamp":1,"name":"records_consumed","count":1,"partitions":['
        '{"topic":"t","partition":0,"count":1,"minOffset":2,"maxOffset":2}]}',
        '{"timestamp":1,"name":"offsets_committed","offsets":[{"topic":"t","partition":0,"offset":3}],'
        '"success":true}',
        '{"timestamp":1,"name":"partitions_revoked","partitions":[{"topic":"t","partition":0}]}',
        '{"timestamp":1,"name":"shutdown_complete"}',
    ]


def test_failed_commit_and_autocommit() -> None:
    fake, events = FakeConsumer([[record("t", 0, 0)]]), Events()
    fake.commit_error = KafkaError(ErrorCode.REBALANCE_IN_PROGRESS)
    tool = vc.VerifiableConsumer(fake, "t", max_messages=1, auto_commit=False, verbose=False, emit=events)
    tool.run()
    committed = [line for line in events.lines() if '"offsets_committed"' in line]
    assert committed == ['{"timestamp":1,"name":"offsets_committed","offsets":[{"topic":"t","partition":0,'
                         '"offset":1}],"error":"The group is rebalancing, so a rejoin is needed.","success":false}']

    fake, events = FakeConsumer([[record("t", 0, 0)]]), Events()
    tool = vc.VerifiableConsumer(fake, "t", max_messages=-1, auto_commit=True, verbose=False, emit=events)
    fake.when_empty = tool.stop.set  # as SIGTERM would, once the records are in
    tool.run()
    assert fake.commits == [] and "offsets_committed" not in events.names()
    assert events.names()[-1] == "shutdown_complete" and fake.closed


def test_a_consumer_error_ends_the_run(capsys: pytest.CaptureFixture[str]) -> None:
    failure = Message(None, None, None, None, None, error=KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR))
    fake, events = FakeConsumer([[failure]]), Events()
    vc.VerifiableConsumer(fake, "t", -1, False, False, events).run()
    assert events.names() == ["startup_complete", "partitions_assigned", "partitions_revoked", "shutdown_complete"]
    assert "ERROR Error during processing, terminating consumer process: " in capsys.readouterr().err


def test_consumer_flags_and_config(tmp_path: Path) -> None:
    args = parse(vc, "--bootstrap-server", "b:1", "--topic", "t", "--group-id", "g")
    assert (args.max_messages, args.session_timeout, args.reset_policy, args.enable_autocommit, args.verbose) == \
        (-1, 30000, "earliest", False, False)
    assert vc.consumer_config(args) == {
        "group.id": "g", "bootstrap.servers": "b:1", "enable.auto.commit": "false", "auto.offset.reset": "earliest",
        "session.timeout.ms": "30000", "partition.assignment.strategy": "range"}
    props = tmp_path / "c.properties"
    props.write_text("group.id=other\nfetch.max.bytes=1000\nsession.timeout.ms=1\n")
    args = parse(vc, "--broker-list", "b:2", "--topic", "t", "--group-id", "g", "--group-instance-id", "i",
                 "--enable-autocommit", "--reset-policy", "none", "--session-timeout", "10000",
                 "--assignment-strategy", "org.apache.kafka.clients.consumer.RoundRobinAssignor,range",
                 "--consumer.config", str(props))
    assert vc.consumer_config(args) == {
        "group.id": "g", "group.instance.id": "i", "bootstrap.servers": "b:2", "enable.auto.commit": "true",
        "auto.offset.reset": "error", "session.timeout.ms": "10000", "fetch.max.bytes": "1000",
        "partition.assignment.strategy": "roundrobin,range"}
    with pytest.raises(ValueError, match="StickyAssignor is not supported"):
        vc.assignment_strategy("org.apache.kafka.clients.consumer.StickyAssignor")
    with pytest.raises(ValueError, match="auto.offset.reset"):
        vc.consumer_config(parse(vc, "--bootstrap-server", "b:1", "--topic", "t", "--group-id", "g",
                                 "--reset-policy", "smallest"))


def test_consumer_requires_a_group(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse(vc, "--bootstrap-server", "b:1", "--topic", "t")
    assert "--group-id" in capsys.readouterr().err


def test_stop_signals_set_the_flag() -> None:
    import os
    import signal

    from mafka.cli.verifiable_events import stop_signals

    stop = threading.Event()
    before = signal.getsignal(signal.SIGTERM)
    with stop_signals(stop):
        os.kill(os.getpid(), signal.SIGTERM)
        assert stop.wait(5)
    assert signal.getsignal(signal.SIGTERM) is before
