"""``mafka zookeeper-shell``: zkCli 3.8's commands and output over a fake ZooKeeper (compared with the
real zkCli by hand: the same bytes on stdout and stderr, and the same status, for these cases)."""

from __future__ import annotations

import io
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from mafka.cli import zookeeper_shell as zs
from mafka.cli.main import main

EPOCH_2023 = 1700000000123  # Tue Nov 14 22:13:20 UTC 2023


@pytest.fixture
def utc(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def stat(czxid: int = 2, children: int = 0, data: int = 0, owner: int = 0) -> zs.ZkStat:
    return zs.ZkStat(czxid=czxid, mzxid=czxid + 1, ctime=EPOCH_2023, mtime=EPOCH_2023 + 86_400_000, version=1,
                     cversion=children, aversion=0, ephemeralOwner=owner, dataLength=data, numChildren=children,
                     pzxid=czxid + 5)


class FakeReader:
    """A znode tree: path → (data, stat); children from the paths."""

    def __init__(self, nodes: dict[str, bytes | None]) -> None:
        self.nodes = {"/": b"", **nodes}
        self.watches: list[tuple[str, Callable[[str], None]]] = []
        self.closed = False

    def _stat(self, path: str) -> zs.ZkStat:
        data = self.nodes[path]
        return stat(czxid=len(path), children=len(self._children(path)), data=len(data or b""),
                    owner=0x1000004ED400010 if path.startswith("/brokers/ids/") else 0)

    def _children(self, path: str) -> list[str]:
        prefix = path.rstrip("/") + "/"
        return [p[len(prefix):] for p in self.nodes if p.startswith(prefix) and "/" not in p[len(prefix):] and p != "/"]

    def _need(self, path: str, watch: Callable[[str], None] | None) -> None:
        if path not in self.nodes:
            raise zs.ZkError(f"Node does not exist: {path}")
        if watch is not None:
            self.watches.append((path, watch))

    def children(self, path: str, with_stat: bool = False,
                 watch: Callable[[str], None] | None = None) -> tuple[list[str], Any]:
        self._need(path, watch)
        # ZooKeeper's order is not sorted: the shell sorts
        return list(reversed(self._children(path))), self._stat(path) if with_stat else None

    def data(self, path: str, watch: Callable[[str], None] | None = None) -> tuple[bytes | None, Any]:
        self._need(path, watch)
        return self.nodes[path], self._stat(path)

    def stat(self, path: str, watch: Callable[[str], None] | None = None) -> Any:
        return self._stat(path) if path in self.nodes else None

    def close(self) -> None:
        self.closed = True


TREE: dict[str, bytes | None] = {
    "/brokers": b"", "/brokers/ids": None, "/brokers/ids/1": b"{}", "/brokers/ids/2": b"{}", "/brokers/ids/10": b"{}",
    "/brokers/topics": b"", "/controller": b'{"version":1,"brokerid":2,"timestamp":"1700000000000"}',
    "/zookeeper": b"",
}
CONNECTED = ["", "WATCHER::", "", "WatchedEvent state:SyncConnected type:None path:null"]


class Run:
    def __init__(self, reader: FakeReader | None = None, refuse: bool = False) -> None:
        self.reader = reader or FakeReader(TREE)
        self.out, self.err = io.StringIO(), io.StringIO()
        self.connects: list[str] = []

        def connect(on_event: Callable[[str], None], path: str) -> zs.ZkReader:
            self.connects.append(path)
            if refuse:
                raise zs.ZkError(f"KeeperErrorCode = ConnectionLoss for {path}")
            return self.reader

        self.shell = zs.Shell("127.0.0.1:2181", connect, self.out, self.err)

    def __call__(self, *words: str) -> tuple[list[str], list[str], int]:
        self.shell.execute(list(words))
        out, err = self.out.getvalue().splitlines(), self.err.getvalue().splitlines()
        self.out.seek(0), self.out.truncate(), self.err.seek(0), self.err.truncate()
        return out, err, self.shell.exit_code


def test_stat_block_as_zkcli_prints_it(utc: None) -> None:
    assert zs.stat_lines(stat(czxid=0x1F, children=3, data=54, owner=-2)) == [
        "cZxid = 0x1f",
        "ctime = Tue Nov 14 22:13:20 UTC 2023",
        "mZxid = 0x20",
        "mtime = Wed Nov 15 22:13:20 UTC 2023",
        "pZxid = 0x24",
        "cversion = 3",
        "dataVersion = 1",
        "aclVersion = 0",
        "ephemeralOwner = 0xfffffffffffffffe",  # Long.toHexString of a negative long
        "dataLength = 54",
        "numChildren = 3",
    ]


def test_java_date_uses_the_local_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "Europe/Berlin")
    time.tzset()
    try:
        assert zs.java_date(EPOCH_2023) == "Tue Nov 14 23:13:20 CET 2023"
        assert zs.java_date(1690000000000) == "Sat Jul 22 06:26:40 CEST 2023"
    finally:
        monkeypatch.undo()
        time.tzset()


@pytest.mark.parametrize(("path", "problem"), [
    ("/", None), ("/brokers/ids", None), ("/a.b/..c", None),
    ("", "Path length must be > 0"),
    ("brokers", "Path must start with / character"),
    ("/brokers/", "Path must not end with / character"),
    ("//x", 'Invalid path string "//x" caused by empty node name specified @1'),
    ("/a/./b", 'Invalid path string "/a/./b" caused by relative paths not allowed @3'),
    ("/a/..", 'Invalid path string "/a/.." caused by relative paths not allowed @4'),
    ("/a\x01", 'Invalid path string "/a\x01" caused by invalid character @2'),
    ("/a\0b", 'Invalid path string "/a\0b" caused by null character not allowed @2'),
])
def test_path_validation(path: str, problem: str | None) -> None:
    assert zs.validate_path(path) == problem


def test_line_splitting_and_options() -> None:
    assert zs.split_line('  get   "/a b"  \'c\'') == ["get", "/a b", "c"]
    assert zs.split_line("ls /a   ") == ["ls", "/a"]
    assert zs.split_line("   ") == [" "]  # as zkCli's pattern finds it
    assert zs.parse_options(["-server", "h:1/kafka", "-timeout", "500", "-r", "ls", "-s", "/"]) == (
        {"server": "h:1/kafka", "timeout": "500", "readonly": "true"}, ["ls", "-s", "/"])
    assert zs.parse_options(["-server", "h:1"]) == ({"server": "h:1", "timeout": "30000"}, [])
    with pytest.raises(ValueError, match="no argument found for option -timeout"):
        zs.parse_options(["-server", "h:1", "-timeout"])


def test_ls_get_stat(utc: None) -> None:
    run = Run()
    out, err, status = run("ls", "/brokers/ids")
    assert (out, err, status) == (CONNECTED + ["[1, 10, 2]"], [], 0)  # Java's string order
    out, err, status = run("get", "/controller")
    assert out == ['{"version":1,"brokerid":2,"timestamp":"1700000000000"}'] and status == 0  # connected once
    assert run("get", "/brokers/ids")[0] == ["null"]
    assert run("get", "/brokers")[0] == [""]
    out, _, _ = run("get", "-s", "/brokers/ids/1")
    assert out[0] == "{}" and out[1:3] == ["cZxid = 0xe", "ctime = Tue Nov 14 22:13:20 UTC 2023"]
    assert out[9:] == ["ephemeralOwner = 0x1000004ed400010", "dataLength = 2", "numChildren = 0"]
    out, _, _ = run("ls", "-s", "/brokers")
    assert out[0] == "[ids, topics]" and out[-1] == "numChildren = 2" and len(out) == 12
    out, _, _ = run("stat", "/brokers")
    assert out == zs.stat_lines(run.reader._stat("/brokers"))
    assert run.connects == ["/brokers/ids"]


def test_ls_recursive_in_zkclis_order() -> None:
    out, _, status = Run()("ls", "-R", "/")
    assert out[len(CONNECTED):] == ["/", "/brokers", "/controller", "/zookeeper", "/brokers/ids", "/brokers/topics",
                                    "/brokers/ids/1", "/brokers/ids/10", "/brokers/ids/2"]
    run = Run()
    run("ls", "-sR", "/brokers")  # bundled flags, as commons-cli takes them; -R wins over -s
    out, _, _ = run("ls", "-R", "/brokers")
    assert out == ["/brokers", "/brokers/ids", "/brokers/topics", "/brokers/ids/1", "/brokers/ids/10",
                   "/brokers/ids/2"]


@pytest.mark.parametrize(("words", "err", "status"), [
    (("get", "/nope"), ["Node does not exist: /nope"], 1),
    (("stat", "/nope"), ["Node does not exist: /nope"], 1),
    (("ls", "-R", "/nope"), ["Node does not exist: /nope"], 1),
])
def test_missing_nodes(words: tuple[str, ...], err: list[str], status: int) -> None:
    out, got, code = Run()(*words)
    assert (out, got, code) == (CONNECTED, err, status)


@pytest.mark.parametrize(("words", "err", "status"), [
    (("ls", "nope"), ["Path must start with / character"], 1),
    (("ls",), ["ls [-s] [-w] [-R] path"], 1),
    (("get",), ["get [-s] [-w] path"], 1),
    (("stat", "-s", "/"), ["org.apache.commons.cli.UnrecognizedOptionException: Unrecognized option: -s"], 1),
    (("ls", "-x", "/"), ["org.apache.commons.cli.UnrecognizedOptionException: Unrecognized option: -x"], 1),
    (("ls", "//x"), ['Invalid path string "//x" caused by empty node name specified @1'], 1),
])
def test_refused_before_reaching_zookeeper(words: tuple[str, ...], err: list[str], status: int) -> None:
    run = Run()
    assert run(*words) == ([], err, status)
    assert run.connects == []  # as zkCli: no session, so no WATCHER lines


def test_deprecated_watch_word_and_watches() -> None:
    run = Run()
    out, err, status = run("ls", "/brokers/ids", "watch")
    assert (out[-1], err, status) == ("[1, 10, 2]", [
        "'ls path [watch]' has been deprecated. Please use 'ls [-w] path' instead."], 0)
    assert [path for path, _ in run.reader.watches] == ["/brokers/ids"]
    run.reader.watches[0][1]("WatchedEvent state:SyncConnected type:NodeChildrenChanged path:/brokers/ids")
    assert run.out.getvalue().splitlines() == [
        "", "WATCHER::", "", "WatchedEvent state:SyncConnected type:NodeChildrenChanged path:/brokers/ids"]
    _, err, _ = run("get", "/controller", "1")
    assert err == ["'get path [watch]' has been deprecated. Please use 'get [-s] [-w] path' instead."]


def test_commands_outside_the_read_only_set() -> None:
    run = Run()
    out, err, status = run("create", "/x", "data")
    assert (out, err, status) == ([], [zs.READ_ONLY_NOTE[:-1] + "; create is not available."], 1)
    out, err, status = run("frobnicate")
    assert out == [] and status == 127
    assert err[0] == zs.USAGE_HEADER and err[-1] == "Command not found: Command not found frobnicate"
    assert "\tls [-s] [-w] [-R] path" in err
    out, err, status = run("help")
    assert (err, status) == ([], 0)
    assert out[0] == zs.USAGE_HEADER and out[-1] == zs.READ_ONLY_NOTE
    assert out[1:-1] == ["\tget [-s] [-w] path", "\thelp ", "\tls [-s] [-w] [-R] path", "\tquit ", "\tstat [-w] path"]
    assert run.connects == []


def test_interactive_from_a_pipe() -> None:
    run = Run()
    lines = iter(["ls /brokers/ids\n", "\n", "get /nope\n", "   \n"])
    assert run.shell.interactive(lines, tty=False) == 1  # the last command's status
    assert run.out.getvalue().splitlines() == ["Welcome to ZooKeeper!", "JLine support is disabled", *CONNECTED,
                                               "[1, 10, 2]"]
    assert run.err.getvalue() == "Node does not exist: /nope\n"
    assert run.shell.count == 2


def test_interactive_quit_and_prompt() -> None:
    run = Run()
    prompts: list[str] = []
    answers = iter(["get /controller", "quit", "ls /"])

    def read(prompt: str) -> str:
        prompts.append(prompt)
        return next(answers)

    assert run.shell.interactive(read, tty=True) == 0
    assert prompts == ["[zk: 127.0.0.1:2181(CONNECTED) 0] ", "[zk: 127.0.0.1:2181(CONNECTED) 1] "]
    out = run.out.getvalue().splitlines()
    assert out[:2] == ["Welcome to ZooKeeper!", "JLine support is enabled"]
    assert out[-4:] == ["", "WATCHER::", "", "WatchedEvent state:Closed type:None path:null"]
    assert run.reader.closed


def test_no_server() -> None:
    run = Run(refuse=True)
    assert run("ls", "/brokers") == ([], ["KeeperErrorCode = ConnectionLoss for /brokers"], 1)
    assert run.shell.interactive(iter(["stat /\n"]), tty=False) == 1
    assert run.err.getvalue() == "KeeperErrorCode = ConnectionLoss for /\n"
    assert run.connects == ["/brokers", "/", "/"]  # each command tries again


def test_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["zookeeper-shell"]) == 1
    assert "zookeeper_host:port[/path] [-zk-tls-config-file file] [args...]" in capsys.readouterr().out
    assert main(["zookeeper-shell", "h:1", "-zk-tls-config-file", "tls.properties", "ls", "/"]) == 1
    assert "does not support -zk-tls-config-file" in capsys.readouterr().err
    assert main(["zookeeper-shell", "h:1", "-timeout"]) == 1
    assert capsys.readouterr().err == "Error: no argument found for option -timeout\n"
    assert main(["zookeeper-shell", "h:1", "ls"]) == 1
    assert capsys.readouterr() == ("Connecting to h:1\n", "ls [-s] [-w] [-R] path\n")
