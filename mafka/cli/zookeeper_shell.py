"""``mafka zookeeper-shell``: Kafka's ``zookeeper-shell.sh`` (ZooKeeper 3.8's ``zkCli``), read-only.

``zookeeper-shell.sh HOST:PORT[,HOST:PORT…][/chroot] [-timeout MS] [-r] [command args…]`` runs the
command and exits with its status; without one it reads commands from stdin, one a line
(``echo "ls /brokers/ids" | zookeeper-shell.sh localhost:2181``), until EOF or ``quit``, and exits
with the last command's status.  Lines split as zkCli splits them (blanks; ``"…"`` and ``'…'``
quote; blank lines are skipped).

Commands, with zkCli 3.8's options and output:

* ``ls [-s] [-w] [-R] path`` — the children, sorted: ``[0, 1, 2]``; ``-s`` adds the stat
  block; ``-R`` prints the subtree's paths instead (zkCli's order: a node, its children,
  then each child's subtree);
* ``get [-s] [-w] path`` — the data as UTF-8 text (``null`` for none), ``-s`` the stat block;
* ``stat [-w] path`` — the stat block: ``cZxid = 0x…``, ``ctime = <Java Date>``, ``mZxid``,
  ``mtime``, ``pZxid``, ``cversion``, ``dataVersion``, ``aclVersion``, ``ephemeralOwner``,
  ``dataLength``, ``numChildren``;
* ``help`` — the commands (on stdout, status 0: zkCli has no ``help``, it prints its usage on
  stderr as for any unknown command); ``quit``.

``-w`` leaves a watch whose firing prints zkCli's ``WATCHER::`` lines.  zkCli's writing and
session commands (``create``, ``set``, ``delete``, ``setAcl``, ``addauth`` …) are refused with
a line saying the shell is read-only (status 1); other words get zkCli's usage and ``Command
not found: …`` (status 127).  Errors are zkCli's lines on stderr with status 1 (``Node does not
exist: /x``, ``Path must start with / character``, ``KeeperErrorCode = ConnectionLoss for /x``
when no server answers, ``ls [-s] [-w] [-R] path`` for a missing path …).

What is printed around the commands follows zkCli as Kafka runs it: ``Connecting to
HOST:PORT`` first; then, interactive, ``Welcome to ZooKeeper!`` and ``JLine support is
disabled`` (stdin not a terminal: no prompt, as zkCli without JLine) or ``JLine support is
enabled`` with the ``[zk: HOST(CONNECTED) N]`` prompt (a terminal, with line editing); and,
once the session is up, the watcher's ``WATCHER::`` / ``WatchedEvent state:SyncConnected
type:None path:null`` lines (later Disconnected / Expired / SyncConnected ones as they
happen, ``Closed`` after ``quit``).  zkCli prints the first of these from its event thread
whenever the session comes up; here the session is opened just before the first command
that needs it (at once when interactive), so the lines come before that command's output —
where zkCli's usually land too — and a command refused before reaching ZooKeeper (a bad
path, a usage error) prints none, as with zkCli.

ZooKeeper is reached with kazoo directly, blocking (a short-lived CLI process; Mafka's
:class:`~mafka.coordination.store.ClusterStore` has no ``pZxid``/``cversion``/``aclVersion``
/``dataLength`` to print).  ``-zk-tls-config-file`` and ``-client-configuration`` (TLS or
SASL to ZooKeeper) are not supported.
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import sys
import threading
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import IO, Any, NamedTuple, Protocol

__all__ = [
    "add_parser", "run", "Shell", "ZkStat", "ZkReader", "ZkError", "KazooReader", "validate_path", "java_date",
    "stat_lines", "format_children", "split_line", "parse_options",
]

DEFAULT_TIMEOUT_MS = 30000
USAGE_HEADER = "ZooKeeper -server host:port [-zk-tls-config-file <file>] cmd args"
READ_ONLY_NOTE = "Mafka's zookeeper-shell is read-only: ls, get, stat, help and quit."
#: zkCli 3.8's commands that this shell does not offer (they write, or manage the session)
UNSUPPORTED = frozenset({
    "addWatch", "addauth", "close", "config", "connect", "create", "delete", "deleteall", "delquota", "getAcl",
    "getAllChildrenNumber", "getEphemerals", "history", "listquota", "printwatches", "reconfig", "redo",
    "removewatches", "set", "setAcl", "setquota", "sync", "version", "whoami",
})
#: zkCli's ``ARGS_PATTERN``: a word, or a double- or single-quoted string
_ARGS = re.compile(r"""\s*([^"']\S*|"[^"]*"|'[^']*')\s*""")
_QUOTED = re.compile(r"""^(['"])(.*)(\1)$""", re.S)
_EVENT_TYPES = {"CREATED": "NodeCreated", "DELETED": "NodeDeleted", "CHANGED": "NodeDataChanged",
                "CHILD": "NodeChildrenChanged", "NONE": "None"}
_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "zookeeper-shell", help="browse ZooKeeper's znodes, read-only (zookeeper-shell / zkCli)",
        usage="%(prog)s zookeeper_host:port[/path] [-timeout MS] [-r] [command [args...]]",
        description="ZooKeeper's command-line client (zkCli) as Kafka's zookeeper-shell.sh runs it, read-only: "
                    "ls [-s] [-w] [-R] path, get [-s] [-w] path, stat [-w] path, help, quit. Without a command, "
                    "commands are read from stdin, one a line.")
    p.add_argument("server", nargs="?", metavar="zookeeper_host:port[/path]")
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="command [args...]")
    p.set_defaults(func=run)


# --------------------------------------------------------------------------- formatting


class ZkStat(NamedTuple):
    """A znode's stat, every field zkCli prints (kazoo's ``ZnodeStat`` has the same fields)."""

    czxid: int
    mzxid: int
    ctime: int
    mtime: int
    version: int
    cversion: int
    aversion: int
    ephemeralOwner: int  # noqa: N815 - ZooKeeper's (and kazoo's) name
    dataLength: int  # noqa: N815
    numChildren: int  # noqa: N815
    pzxid: int


def java_date(ms: int) -> str:
    """``new Date(ms).toString()``: ``Thu Jan 01 00:00:00 UTC 1970`` in the local time zone."""
    t = time.localtime(ms // 1000)
    return (f"{_DAYS[t.tm_wday]} {_MONTHS[t.tm_mon - 1]} {t.tm_mday:02d} {t.tm_hour:02d}:{t.tm_min:02d}:"
            f"{t.tm_sec:02d} {t.tm_zone} {t.tm_year}")


def _hex(value: int) -> str:
    """``Long.toHexString``: two's complement for negative values."""
    return format(value & 0xFFFF_FFFF_FFFF_FFFF, "x")


def stat_lines(stat: Any) -> list[str]:
    """zkCli's ``StatPrinter``."""
    return [
        f"cZxid = 0x{_hex(stat.czxid)}",
        f"ctime = {java_date(stat.ctime)}",
        f"mZxid = 0x{_hex(stat.mzxid)}",
        f"mtime = {java_date(stat.mtime)}",
        f"pZxid = 0x{_hex(stat.pzxid)}",
        f"cversion = {stat.cversion}",
        f"dataVersion = {stat.version}",
        f"aclVersion = {stat.aversion}",
        f"ephemeralOwner = 0x{_hex(stat.ephemeralOwner)}",
        f"dataLength = {stat.dataLength}",
        f"numChildren = {stat.numChildren}",
    ]


def _java_sorted(names: Sequence[str]) -> list[str]:
    """``Collections.sort`` of Java strings: by UTF-16 code units."""
    return sorted(names, key=lambda s: s.encode("utf-16-be"))


def format_children(children: Sequence[str]) -> str:
    """``ls``'s line: ``[a, b, c]``, sorted."""
    return "[" + ", ".join(_java_sorted(children)) + "]"


def validate_path(path: str) -> str | None:
    """ZooKeeper's ``PathUtils.validatePath``: None for a valid path, else its message."""
    if len(path) == 0:
        return "Path length must be > 0"
    if path[0] != "/":
        return "Path must start with / character"
    if path == "/":
        return None
    if path[-1] == "/":
        return "Path must not end with / character"
    reason = None
    last = "/"
    for i in range(1, len(path)):
        c = path[i]
        if c == "\0":
            reason = f"null character not allowed @{i}"
        elif c == "/" and last == "/":
            reason = f"empty node name specified @{i}"
        elif c == "." and last == "." and path[i - 2] == "/" and (i + 1 == len(path) or path[i + 1] == "/"):
            reason = f"relative paths not allowed @{i}"
        elif c == "." and last != "." and path[i - 1] == "/" and (i + 1 == len(path) or path[i + 1] == "/"):
            reason = f"relative paths not allowed @{i}"
        elif "\x00" < c <= "\x1f" or "\x7f" <= c <= "\x9f" or "\ud800" <= c <= "\uf8ff" or "\ufff0" <= c:
            reason = f"invalid character @{i}"
        if reason is not None:
            return f'Invalid path string "{path}" caused by {reason}'
        last = c
    return None


def split_line(line: str) -> list[str]:
    """zkCli's ``parseCommand``: words and quoted strings, the quotes taken off."""
    out = []
    for match in _ARGS.finditer(line):
        word = match.group(1)
        quoted = _QUOTED.match(word)
        out.append(quoted.group(2) if quoted else word)
    return out


def parse_options(argv: Sequence[str]) -> tuple[dict[str, str], list[str]]:
    """zkCli's ``parseOptions`` (Kafka's script puts ``-server`` before its first argument):
    the options (``server``, ``timeout``, ``readonly`` …) and the command with its arguments.

    Raises:
        ValueError: an option without its value (zkCli's ``Error: no argument found for option``).
    """
    options = {"server": "localhost:2181", "timeout": str(DEFAULT_TIMEOUT_MS)}
    with_value = {"-server": "server", "-timeout": "timeout", "-client-configuration": "client-configuration",
                  "-zk-tls-config-file": "zk-tls-config-file"}
    flags = {"-r": "readonly", "-waitforconnection": "waitforconnection"}
    args = list(argv)
    i = 0
    while i < len(args):
        opt = args[i]
        if opt in with_value:
            if i + 1 >= len(args):
                raise ValueError(f"Error: no argument found for option {opt}")
            options[with_value[opt]] = args[i + 1]
            i += 2
            continue
        if opt in flags:
            options[flags[opt]] = "true"
        elif not opt.startswith("-"):
            return options, args[i:]
        i += 1
    return options, []


# --------------------------------------------------------------------------- ZooKeeper


class ZkError(Exception):
    """A ZooKeeper call failed; the message is zkCli's line for it."""


class ZkReader(Protocol):
    """What the shell reads ZooKeeper through (kazoo's calls; a fake in the unit tests).

    Each call raises :class:`ZkError` with zkCli's message.  ``watch``, when given, is called
    with zkCli's ``WatchedEvent …`` text when the watch fires.
    """

    def children(self, path: str, with_stat: bool = False,
                 watch: Callable[[str], None] | None = None) -> tuple[list[str], Any]: ...

    def data(self, path: str, watch: Callable[[str], None] | None = None) -> tuple[bytes | None, Any]: ...

    def stat(self, path: str, watch: Callable[[str], None] | None = None) -> Any: ...

    def close(self) -> None: ...


def _hosts(server: str) -> list[tuple[str, int]]:
    """The (host, port) pairs of a connect string (port 2181 where none is given)."""
    out = []
    for entry in server.split("/", 1)[0].split(","):
        host, sep, port = entry.strip().rpartition(":")
        if not sep:
            host, port = port, "2181"
        out.append((host.strip("[]"), int(port) if port.isdigit() else 2181))
    return out


class KazooReader:
    """:class:`ZkReader` on a kazoo session (blocking calls, each bounded by ``timeout_s``).

    Args:
        server: the connect string, ``host:port[,host:port][/chroot]``.
        timeout_s: the session timeout asked for, and the bound on connecting and on each call.
        read_only: connect to a read-only server too (zkCli's ``-r``).
        on_event: called with zkCli's ``WatchedEvent …`` text for each session state change after
            the session first came up (Disconnected, SyncConnected, Expired).

    Raises (from the constructor):
        ZkError: no server accepted a connection, or no session within ``timeout_s``
            (the message names ``path``).
    """

    def __init__(self, server: str, timeout_s: float, read_only: bool, on_event: Callable[[str], None],
                 path: str) -> None:
        from kazoo.client import KazooClient
        from kazoo.handlers.threading import KazooTimeoutError
        from kazoo.retry import KazooRetry

        self._timeout = timeout_s
        self._connected_once = False
        self._on_event = on_event
        # zkCli fails a command at once when no server takes the connection; kazoo would keep trying.
        if not any(_reachable(host, port, min(timeout_s, 5.0)) for host, port in _hosts(server)):
            raise ZkError(_keeper_message("ConnectionLoss", path))
        self._client = KazooClient(
            hosts=server, timeout=timeout_s, read_only=read_only,
            connection_retry=KazooRetry(max_tries=-1, delay=0.1, backoff=2, max_delay=1.0),
        )
        self._client.add_listener(self._on_state)
        try:
            with warnings.catch_warnings():
                # kazoo warns of a chroot that does not exist; zkCli says nothing (its calls then fail)
                warnings.simplefilter("ignore")
                self._client.start(timeout=timeout_s)
        except KazooTimeoutError:
            self._client.close()
            raise ZkError(_keeper_message("ConnectionLoss", path)) from None
        self._connected_once = True

    def _on_state(self, state: str) -> None:
        if not self._connected_once:
            return
        java = {"SUSPENDED": "Disconnected", "LOST": "Expired", "CONNECTED": "SyncConnected"}.get(state)
        if java is not None:
            self._on_event(f"WatchedEvent state:{java} type:None path:null")

    def _call(self, path: str, start: Callable[[], Any]) -> Any:
        from kazoo import exceptions as kz
        from kazoo.handlers.threading import KazooTimeoutError

        try:
            return start().get(timeout=self._timeout)
        except KazooTimeoutError:
            raise ZkError(_keeper_message("ConnectionLoss", path)) from None
        except kz.NoNodeError:
            raise ZkError(f"Node does not exist: {path}") from None
        except kz.NoAuthError:
            raise ZkError(f"Insufficient permission : {path}") from None
        except (kz.ConnectionLoss, kz.ConnectionClosedError):
            raise ZkError(_keeper_message("ConnectionLoss", path)) from None
        except kz.SessionExpiredError:
            raise ZkError(_keeper_message("Session expired", path)) from None
        except kz.KazooException as exc:
            raise ZkError(_keeper_message(type(exc).__name__.removesuffix("Error"), path)) from None

    def _watcher(self, watch: Callable[[str], None] | None) -> Callable[[Any], None] | None:
        if watch is None:
            return None

        def fired(event: Any) -> None:
            kind = _EVENT_TYPES.get(str(event.type), str(event.type))
            path = event.path if event.path else "null"
            watch(f"WatchedEvent state:SyncConnected type:{kind} path:{path}")
        return fired

    def children(self, path: str, with_stat: bool = False,
                 watch: Callable[[str], None] | None = None) -> tuple[list[str], Any]:
        got = self._call(path, lambda: self._client.get_children_async(path, self._watcher(watch),
                                                                         include_data=with_stat))
        if with_stat:
            return list(got[0]), got[1]
        return list(got), None

    def data(self, path: str, watch: Callable[[str], None] | None = None) -> tuple[bytes | None, Any]:
        value, stat = self._call(path, lambda: self._client.get_async(path, self._watcher(watch)))
        return value, stat

    def stat(self, path: str, watch: Callable[[str], None] | None = None) -> Any:
        return self._call(path, lambda: self._client.exists_async(path, self._watcher(watch)))

    def close(self) -> None:
        self._connected_once = False
        try:
            self._client.stop()
        finally:
            self._client.close()


def _reachable(host: str, port: int, timeout: float) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _keeper_message(code: str, path: str) -> str:
    """``KeeperException.getMessage()``: ``KeeperErrorCode = ConnectionLoss for /x``."""
    return f"KeeperErrorCode = {code} for {path}"


# --------------------------------------------------------------------------- commands


@dataclass(frozen=True)
class _Command:
    name: str
    options: str  # zkCli's option string (its usage)
    flags: str  # the one-letter flags commons-cli accepts


_COMMANDS = {
    "ls": _Command("ls", "[-s] [-w] [-R] path", "swR?"),
    "get": _Command("get", "[-s] [-w] path", "sw"),
    "stat": _Command("stat", "[-w] path", "w"),
    "help": _Command("help", "", ""),
    "quit": _Command("quit", "", ""),
}


class _UsageError(Exception):
    """A command refused before it reaches ZooKeeper (zkCli's CliException): stderr, the status."""

    def __init__(self, message: str, status: int = 1, usage: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.usage = usage


def _parse_flags(cmd: _Command, raw: list[str]) -> tuple[set[str], list[str]]:
    """commons-cli's DefaultParser for one command: its flags (bundles like ``-sR`` too) and the
    other words (the command name first)."""
    flags: set[str] = set()
    words: list[str] = []
    only_words = False
    for token in raw:
        if only_words or not token.startswith("-") or token == "-":
            words.append(token)
        elif token == "--":
            only_words = True
        elif len(token) >= 2 and all(c in cmd.flags for c in token[1:]):
            flags.update(token[1:])
        else:
            raise _UsageError(f"org.apache.commons.cli.UnrecognizedOptionException: Unrecognized option: {token}")
    return flags, words


class Shell:
    """zkCli's command processing over a :class:`ZkReader` opened on first need.

    Args:
        server: the connect string as given (printed in the prompt).
        connect: opens the reader: ``connect(on_event, path)`` (``path`` names the command's
            znode in a connection error); raises :class:`ZkError`.
        out, err: where zkCli's stdout and stderr lines go.
    """

    def __init__(self, server: str, connect: Callable[[Callable[[str], None], str], ZkReader],
                 out: IO[str], err: IO[str]) -> None:
        self.server = server
        self._connect = connect
        self.out = out
        self.err = err
        self.reader: ZkReader | None = None
        self.exit_code = 0
        self.count = 0
        self._lock = threading.Lock()

    # -- printing ------------------------------------------------------------------------

    def print_out(self, *lines: str) -> None:
        with self._lock:
            for line in lines:
                self.out.write(line + "\n")
            self.out.flush()

    def print_err(self, *lines: str) -> None:
        with self._lock:
            self.out.flush()
            for line in lines:
                self.err.write(line + "\n")
            self.err.flush()

    def watcher_event(self, text: str) -> None:
        """zkCli's watcher: ``printMessage("WATCHER::")`` and ``printMessage(event)``."""
        self.print_out("", "WATCHER::", "", text)

    def usage(self, on_stderr: bool = False) -> None:
        """The usage header and the commands: on stderr as zkCli prints them before an error, or on
        stdout with the read-only note (``help``)."""
        lines = [USAGE_HEADER] + [f"\t{c.name} {c.options}" for c in sorted(_COMMANDS.values(), key=lambda c: c.name)]
        if on_stderr:
            self.print_err(*lines)
        else:
            self.print_out(*lines, READ_ONLY_NOTE)

    @property
    def state(self) -> str:
        return "CONNECTED" if self.reader is not None else "CONNECTING"

    def prompt(self) -> str:
        return f"[zk: {self.server}({self.state}) {self.count}] "

    # -- the session ---------------------------------------------------------------------

    def connect(self, path: str) -> ZkReader:
        """The reader, opened now if it is not yet (then zkCli's SyncConnected watcher lines)."""
        if self.reader is None:
            self.reader = self._connect(self.watcher_event, path)
            self.watcher_event("WatchedEvent state:SyncConnected type:None path:null")
        return self.reader

    def close(self, announce: bool = False) -> None:
        if self.reader is not None:
            reader, self.reader = self.reader, None
            reader.close()
            if announce:
                self.watcher_event("WatchedEvent state:Closed type:None path:null")

    # -- running commands ----------------------------------------------------------------

    def execute(self, argv: list[str]) -> bool:
        """Runs one command (its words); sets :attr:`exit_code`.  False after ``quit``."""
        try:
            keep_going = self._execute(argv)
            self.exit_code = 0
            return keep_going
        except _UsageError as exc:
            if exc.usage:
                self.usage(on_stderr=True)
            self.print_err(str(exc))
            self.exit_code = exc.status
        except ZkError as exc:
            self.print_err(str(exc))
            self.exit_code = 1
        return True

    def _execute(self, argv: list[str]) -> bool:
        if not argv:
            raise _UsageError("No command entered", usage=True)
        name = argv[0]
        cmd = _COMMANDS.get(name)
        if cmd is None:
            if name in UNSUPPORTED:
                raise _UsageError(f"{READ_ONLY_NOTE[:-1]}; {name} is not available.")
            raise _UsageError(f"Command not found: Command not found {name}", status=127, usage=True)
        if name == "help":
            self.usage()
            return True
        if name == "quit":
            self.close(announce=True)
            return False
        flags, words = _parse_flags(cmd, list(argv))
        usage = f"{cmd.name} {cmd.options}"
        if len(words) > 2:
            # zkCli's compatibility rewrite: "ls path watch" → "ls -w path" (the raw third word)
            self.print_err(f"'{name} path [watch]' has been deprecated. Please use '{name} "
                           f"{'[-s] ' if name == 'get' else ''}[-w] path' instead.")
            raw = list(argv)
            raw[2] = "-w"
            flags, words = _parse_flags(cmd, raw)
        if "?" in flags:
            self.print_out(f"usage: {cmd.name} [options] path", " -? help", " -R recurse", " -s stat",
                           " -w watch")
        if len(words) < 2:
            raise _UsageError(usage)
        path = words[1]
        problem = validate_path(path)
        if problem is not None:
            raise _UsageError(problem)
        reader = self.connect(path)
        watch = self.watcher_event if "w" in flags else None
        if name == "ls" and "R" in flags:
            self._ls_recursive(reader, path, watch)
        elif name == "ls":
            children, stat = reader.children(path, with_stat="s" in flags, watch=watch)
            self.print_out(format_children(children), *(stat_lines(stat) if "s" in flags else ()))
        elif name == "get":
            data, stat = reader.data(path, watch=watch)
            text = "null" if data is None else data.decode("utf-8", errors="replace")
            self.print_out(text, *(stat_lines(stat) if "s" in flags else ()))
        else:
            stat = reader.stat(path, watch=watch)
            if stat is None:
                raise ZkError(f"Node does not exist: {path}")
            self.print_out(*stat_lines(stat))
        return True

    def _ls_recursive(self, reader: ZkReader, path: str, watch: Callable[[str], None] | None) -> None:
        """ZooKeeper's ``ZKUtil.visitSubTreeDFS``: the node, then its children, then each child's
        subtree (a node deleted meanwhile is skipped)."""
        reader.data(path, watch=watch)
        self.print_out(path)
        pending = [path]
        while pending:
            node = pending.pop()
            try:
                children, _ = reader.children(node, watch=watch)
            except ZkError as exc:
                if str(exc).startswith("Node does not exist"):
                    continue
                raise
            paths = [(node if node != "/" else "") + "/" + child for child in _java_sorted(children)]
            if paths:
                self.print_out(*paths)
            pending.extend(reversed(paths))

    # -- the modes -------------------------------------------------------------------------

    def interactive(self, lines: Any, tty: bool) -> int:
        """zkCli without a command: a banner, then each line of ``lines`` (an iterator of lines,
        or for a terminal a callable taking the prompt), until EOF or ``quit``."""
        self.print_out("Welcome to ZooKeeper!", f"JLine support is {'enabled' if tty else 'disabled'}")
        try:
            self.connect("/")
        except ZkError:
            pass  # each command will say so (and try again)
        while True:
            try:
                line = lines(self.prompt()) if tty else next(lines)
            except (EOFError, StopIteration):
                break
            if not line.strip():
                continue  # (zkCli answers a line of blanks with "Command not found")
            keep_going = self.execute(split_line(line.rstrip("\r\n")))
            self.count += 1
            if not keep_going:
                break
        return self.exit_code


def _open_kazoo(server: str, timeout_ms: int, read_only: bool) -> Callable[[Callable[[str], None], str], ZkReader]:
    def connect(on_event: Callable[[str], None], path: str) -> ZkReader:
        return KazooReader(server, max(timeout_ms, 1) / 1000.0, read_only, on_event, path)
    return connect


def _script_name() -> str:
    name = os.path.basename(sys.argv[0]) if sys.argv else ""
    return sys.argv[0] if name == "zookeeper-shell.sh" else "mafka zookeeper-shell"


def run(args: argparse.Namespace) -> int:
    if not args.server:
        print(f"USAGE: {_script_name()} zookeeper_host:port[/path] [-zk-tls-config-file file] [args...]")
        return 1
    try:
        options, command = parse_options(["-server", args.server, *args.command])
    except ValueError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    for unsupported in ("zk-tls-config-file", "client-configuration"):
        if unsupported in options:
            print(f"Mafka's zookeeper-shell does not support -{unsupported} (TLS or SASL to ZooKeeper).",
                  file=sys.stderr)
            return 1
    if not options["timeout"].isdigit():
        print(f'Exception in thread "main" java.lang.NumberFormatException: For input string: "{options["timeout"]}"',
              file=sys.stderr)
        return 1
    server = options["server"]
    print(f"Connecting to {server}", flush=True)
    shell = Shell(server, _open_kazoo(server, int(options["timeout"]), "readonly" in options), sys.stdout,
                  sys.stderr)
    try:
        if command:
            shell.execute(command)
            return shell.exit_code
        if sys.stdin.isatty():
            try:
                import readline  # noqa: F401 - line editing and history for input(), as JLine gives zkCli
            except ImportError:
                pass
            return shell.interactive(input, tty=True)
        return shell.interactive(iter(sys.stdin), tty=False)
    except KeyboardInterrupt:
        return 130
    finally:
        shell.close()
