"""``mafka.cli.progress``: plain lines at a bounded rate, rich on a terminal, the env override, never stdout."""

from __future__ import annotations

import io
import re
import sys

import pytest

from mafka.cli.progress import ENV, choose_mode, progress


class Clock:
    """Seconds that move only when the test moves them."""

    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class Tty(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def no_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")


def test_plain_lines_are_kafka_tool_shaped_at_most_one_a_second(capsys: pytest.CaptureFixture[str]) -> None:
    clock, err = Clock(), io.StringIO()
    with progress("reassign-partitions", total=40, unit="partitions moved", stream=err, clock=clock) as bar:
        assert bar.mode == "plain", "a stream that is no terminal"
        bar.update(1)
        clock.now = 100.5
        bar.update(5)
        assert err.getvalue() == "", "nothing in the first second: work that ends sooner shows only its summary"
        clock.now = 101.0
        bar.update(12)
        for _ in range(1000):  # a flood of updates within the same second: no line
            bar.advance(0)
        clock.now = 101.5
        bar.advance()
        clock.now = 102.0
        bar.advance(0)  # 13 now, a second after the last line
        clock.now = 104.0
        bar.update(13)  # the same figure again: no line however long since the last
        clock.now = 104.5
        bar.update(40)
        clock.now = 105.25
    assert err.getvalue().splitlines() == [
        "reassign-partitions: 12/40 partitions moved (30%)",
        "reassign-partitions: 13/40 partitions moved (32%)",
        "reassign-partitions: 40/40 partitions moved (100%)",
        "reassign-partitions: 40/40 partitions moved (100%) in 5.2 s",
    ]
    assert capsys.readouterr() == ("", ""), "nothing on stdout (nor on the real stderr: the stream was given)"


def test_plain_total_unknown_then_known_and_the_interval_is_a_parameter() -> None:
    clock, err = Clock(), io.StringIO()
    with progress("spark-etl", unit="Spark tasks done", stream=err, mode="plain", clock=clock,
                  interval=5.0) as bar:
        clock.now = 103.0
        bar.update(3)
        clock.now = 105.0
        bar.update(3)
        clock.now = 107.0
        bar.update(7, total=20)
        clock.now = 110.0
        bar.update(20)
    assert err.getvalue().splitlines() == [
        "spark-etl: 3 Spark tasks done",
        "spark-etl: 20/20 Spark tasks done (100%)",
        "spark-etl: 20/20 Spark tasks done (100%) in 10.0 s",
    ]


def test_the_summary_says_when_the_work_stopped_half_way() -> None:
    clock, err = Clock(), io.StringIO()
    with pytest.raises(KeyboardInterrupt), progress("delete-records", total=4, unit="partitions done",
                                                     stream=err, mode="plain", clock=clock) as bar:
        bar.advance()
        clock.now = 100.75
        raise KeyboardInterrupt
    assert err.getvalue() == "delete-records: 1/4 partitions done (25%), stopped after 0.8 s\n"


def test_default_stream_is_stderr_and_stdout_stays_empty(capsys: pytest.CaptureFixture[str]) -> None:
    with progress("delete-records", total=2, unit="partitions done") as bar:
        bar.advance(2)
    out, err = capsys.readouterr()
    assert out == ""
    assert re.fullmatch(r"delete-records: 2/2 partitions done \(100%\) in \d+\.\d s\n", err), err


def test_off_says_nothing_and_still_counts(monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(ENV, "off")
    err = Tty()
    with progress("rebalance", total=3, unit="moves finished", stream=err) as bar:
        bar.advance(3)
        assert (bar.mode, bar.completed) == ("off", 3)
    assert err.getvalue() == "" and capsys.readouterr() == ("", "")


@pytest.mark.parametrize(("env", "tty", "mode"), [
    (None, True, "rich"),
    (None, False, "plain"),
    ("plain", True, "plain"),
    ("OFF", True, "off"),
    ("rich", False, "rich"),
    ("sparkly", False, "plain"),  # not a mode: decided as if unset
    ("", True, "rich"),
])
def test_mode_from_the_env_override_else_from_the_terminal(env: str | None, tty: bool, mode: str) -> None:
    environ = {} if env is None else {ENV: env}
    assert choose_mode(Tty() if tty else io.StringIO(), environ) == mode


def test_rich_bar_on_a_terminal_then_the_summary(capsys: pytest.CaptureFixture[str]) -> None:
    clock, err = Clock(), Tty()
    with progress("producer-perf-test", total=3, unit="records sent", stream=err, clock=clock) as bar:
        assert bar.mode == "rich"
        bar.advance()
        clock.now = 102.0
        bar.advance(2)
    text = err.getvalue()
    assert "\x1b[" in text, "terminal control codes: a live bar"
    assert re.search(r"producer-perf-test .*3/3.* records sent", text), text
    assert text.endswith("producer-perf-test: 3/3 records sent (100%) in 2.0 s\n"), text
    assert capsys.readouterr().out == ""


def test_rich_forced_by_the_env_on_a_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "rich")
    err = io.StringIO()
    with progress("rebalance", total=2, unit="moves finished", stream=err, clock=Clock()) as bar:
        assert bar.mode == "rich"
        bar.advance(2)
    assert "\x1b[" in err.getvalue() and err.getvalue().endswith("rebalance: 2/2 moves finished (100%) in 0.0 s\n")


def test_stdout_lines_stay_on_stdout_byte_for_byte_while_a_bar_shows(monkeypatch: pytest.MonkeyPatch) -> None:
    out, err = Tty(), Tty()
    monkeypatch.setattr(sys, "stdout", out)
    line = "5000 records sent, 999.8 records/sec (0.10 MB/sec), 1.2 ms avg latency, 9.0 ms max latency."
    with progress("producer-perf-test", total=2, unit="records sent", stream=err, clock=Clock()) as bar:
        assert sys.stdout is not out, "a terminal stdout is wrapped while the bar shows"
        print(line, flush=True)
        sys.stdout.write("partial ")
        bar.advance(2)
        sys.stdout.write("line\n")
        print("no newline yet", end="")
    assert sys.stdout is out, "given back on leaving"
    assert out.getvalue() == line + "\npartial line\nno newline yet", "exactly what was printed, and nothing else"
    assert "records sent" in err.getvalue() and line not in err.getvalue()
