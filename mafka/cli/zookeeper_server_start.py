"""``mafka zookeeper-server-start [zookeeper.properties]`` (Kafka's zookeeper-server-start.sh).

Runs one ZooKeeper server (Debian's ``zookeeper`` jars, or ``$ZOOKEEPER_HOME``)
in the foreground: the process execs Java, so signals reach ZooKeeper itself.
It is what the ``zookeeper`` containers of ``docker/docker-compose.yml`` run.

Configuration, lowest precedence first:

1. built-in defaults for a server in a container: ``dataDir=/var/lib/zookeeper/data``,
   ``clientPort=2181``, ``tickTime=2000``, ``initLimit=10``, ``syncLimit=5``,
   ``admin.enableServer=false``, ``4lw.commands.whitelist=*`` (health checks
   use ``ruok`` / ``srvr``), ``quorumListenOnAllIPs=true`` (a member's own
   ``server.N`` host may resolve to one interface of several);
2. the properties file (ZooKeeper's own ``zoo.cfg`` syntax, as Kafka's
   ``config/zookeeper.properties``): Java properties read as ISO-8859-1 by
   :mod:`mafka.properties`, keys and values trimmed as ZooKeeper trims them, and a
   line holding a bare key refused;
3. the cp-zookeeper image's environment variables (:data:`ENV_KEYS`):
   ``ZOOKEEPER_CLIENT_PORT``, ``ZOOKEEPER_TICK_TIME``, ``ZOOKEEPER_INIT_LIMIT``,
   ``ZOOKEEPER_SYNC_LIMIT``, ``ZOOKEEPER_DATA_DIR`` …, plus
   ``ZOOKEEPER_SERVER_ID`` (written to ``<dataDir>/myid``) and
   ``ZOOKEEPER_SERVERS`` (``host:quorumPort:electionPort`` entries separated by
   ``;`` or ``,``, the first being ``server.1``).  Any other ``ZOOKEEPER_*``
   variable is an error naming it: a typo must not silently start a
   standalone server.

An ensemble (``server.N`` lines) needs ``myid``: ``ZOOKEEPER_SERVER_ID`` or an
existing ``<dataDir>/myid``.  The JVM gets ``KAFKA_HEAP_OPTS`` (default
``-Xms32m -Xmx256m``) and ``KAFKA_OPTS``, as Kafka's script passes them.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mafka import properties as javaprops

__all__ = ["ENV_KEYS", "ZooKeeperConfigError", "add_parser", "render", "zookeeper_config", "run"]

#: cp-zookeeper's variables and the zoo.cfg keys they set.
ENV_KEYS: dict[str, str] = {
    "ZOOKEEPER_CLIENT_PORT": "clientPort",
    "ZOOKEEPER_CLIENT_PORT_ADDRESS": "clientPortAddress",
    "ZOOKEEPER_TICK_TIME": "tickTime",
    "ZOOKEEPER_INIT_LIMIT": "initLimit",
    "ZOOKEEPER_SYNC_LIMIT": "syncLimit",
    "ZOOKEEPER_DATA_DIR": "dataDir",
    "ZOOKEEPER_DATA_LOG_DIR": "dataLogDir",
    "ZOOKEEPER_MAX_CLIENT_CNXNS": "maxClientCnxns",
    "ZOOKEEPER_MIN_SESSION_TIMEOUT": "minSessionTimeout",
    "ZOOKEEPER_MAX_SESSION_TIMEOUT": "maxSessionTimeout",
    "ZOOKEEPER_AUTOPURGE_SNAP_RETAIN_COUNT": "autopurge.snapRetainCount",
    "ZOOKEEPER_AUTOPURGE_PURGE_INTERVAL": "autopurge.purgeInterval",
    "ZOOKEEPER_4LW_COMMANDS_WHITELIST": "4lw.commands.whitelist",
}
#: Variables that are not zoo.cfg keys (handled apart, or the image's own).
_SPECIAL = {"ZOOKEEPER_SERVER_ID", "ZOOKEEPER_SERVERS", "ZOOKEEPER_HOME", "ZOOKEEPER_VERSION"}

DEFAULTS: dict[str, str] = {
    "dataDir": "/var/lib/zookeeper/data",
    "clientPort": "2181",
    "tickTime": "2000",
    "initLimit": "10",
    "syncLimit": "5",
    "admin.enableServer": "false",
    "4lw.commands.whitelist": "*",
    "quorumListenOnAllIPs": "true",
}

_INT_KEYS = ("clientPort", "tickTime", "initLimit", "syncLimit")


class ZooKeeperConfigError(ValueError):
    """The configuration cannot start a server; the message says which setting and why."""


def _java_trim(text: str) -> str:
    """Java's ``String.trim``: strip every character up to U+0020 from both ends."""
    return text.strip("".join(map(chr, range(0x21))))


def _parse_properties(text: str) -> dict[str, str]:
    """zoo.cfg as ZooKeeper's ``QuorumPeerConfig`` reads it: ``Properties.load``
    (:mod:`mafka.properties`), then keys and values trimmed as ``parseProperties`` does.

    A line holding only a key (no ``=``, ``:`` or value) is refused: ZooKeeper would
    quietly make it a ``zookeeper.<key>`` system property, which is never what was meant.
    """
    out: dict[str, str] = {}
    try:
        for prop in javaprops.entries(text):
            if not prop.has_separator and not prop.value:
                raise ZooKeeperConfigError(f"line {prop.line}: expected key=value, got {prop.key!r}")
            out[_java_trim(prop.key)] = _java_trim(prop.value)
    except javaprops.MalformedEscapeError as exc:
        raise ZooKeeperConfigError(f"line {exc.line}: {exc}") from None
    return out


def zookeeper_config(env: Mapping[str, str], properties: str | None = None) -> tuple[dict[str, str], int | None]:
    """The zoo.cfg settings and this server's id (None: standalone, or ``myid`` already on disk).

    Raises:
        ZooKeeperConfigError: an unknown ``ZOOKEEPER_*`` variable, a bad
            number, a malformed ``ZOOKEEPER_SERVERS`` entry, or an id outside it.
    """
    config = dict(DEFAULTS)
    if properties is not None:
        config.update(_parse_properties(properties))
    for name, value in sorted(env.items()):
        if not name.startswith("ZOOKEEPER_") or name in _SPECIAL:
            continue
        key = ENV_KEYS.get(name)
        if key is None:
            known = ", ".join(sorted([*ENV_KEYS, "ZOOKEEPER_SERVER_ID", "ZOOKEEPER_SERVERS"]))
            raise ZooKeeperConfigError(f"unknown environment variable {name} (known: {known})")
        config[key] = value.strip()
    for key in _INT_KEYS:
        try:
            if int(config[key]) <= 0:
                raise ValueError
        except ValueError:
            raise ZooKeeperConfigError(f"{key} must be a positive integer, not {config[key]!r}") from None
    servers = env.get("ZOOKEEPER_SERVERS", "").strip()
    if servers:
        for key in [k for k in config if k.startswith("server.")]:
            del config[key]  # the environment names the whole ensemble
        entries = [e.strip() for e in servers.replace(",", ";").split(";") if e.strip()]
        for i, entry in enumerate(entries, start=1):
            parts = entry.split(":")
            if len(parts) != 3 or not parts[0] or not all(p.isdigit() for p in parts[1:]):
                raise ZooKeeperConfigError(
                    f"ZOOKEEPER_SERVERS entry {i} is {entry!r}; expected host:quorumPort:electionPort"
                )
            config[f"server.{i}"] = entry
    members = sorted(int(k.split(".", 1)[1]) for k in config if k.startswith("server.") and k[7:].isdigit())
    server_id: int | None = None
    raw_id = env.get("ZOOKEEPER_SERVER_ID", "").strip()
    if raw_id:
        if not raw_id.isdigit():
            raise ZooKeeperConfigError(f"ZOOKEEPER_SERVER_ID must be a number, not {raw_id!r}")
        server_id = int(raw_id)
        if members and server_id not in members:
            raise ZooKeeperConfigError(f"ZOOKEEPER_SERVER_ID {server_id} is not one of the servers {members}")
    return config, server_id


def render(config: Mapping[str, str]) -> str:
    """zoo.cfg text: every key but the ``server.N`` lines, sorted, then those in id order.

    Keys and values are escaped for ``Properties.load`` (:func:`mafka.properties.dumps`
    with ``minimal``: backslashes, line ends, leading blanks, non-ASCII as ``\\uXXXX``),
    so ZooKeeper reads back exactly ``config``; the text is ASCII.
    """
    plain = sorted(k for k in config if not k.startswith("server."))
    servers = sorted((k for k in config if k.startswith("server.")), key=lambda k: int(k.split(".", 1)[1]))
    return javaprops.dumps({k: config[k] for k in [*plain, *servers]}, minimal=True)


def add_parser(sub: Any) -> None:
    p = sub.add_parser("zookeeper-server-start", help="run one ZooKeeper server (zookeeper-server-start.sh)")
    p.add_argument("config", nargs="?", help="zookeeper.properties (zoo.cfg syntax); optional")
    p.add_argument("--config-out", default=None, help="where to write the effective zoo.cfg (default <dataDir>/../zoo.cfg)")
    p.add_argument("--print-config", action="store_true", help="print the effective zoo.cfg and exit")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from mafka.coordination.zookeeper import MAIN_CLASS, ZooKeeperError, find_classpath, find_java

    try:
        # ZooKeeper reads zoo.cfg with Properties.load(InputStream): ISO-8859-1.
        text = Path(args.config).read_bytes().decode("iso-8859-1") if args.config else None
        config, server_id = zookeeper_config(os.environ, text)
    except (ZooKeeperConfigError, OSError) as exc:
        print(f"mafka zookeeper-server-start: {exc}", file=sys.stderr)
        return 2
    cfg = render(config)
    if args.print_config:
        sys.stdout.write(cfg)
        return 0
    data_dir = Path(config["dataDir"])
    data_dir.mkdir(parents=True, exist_ok=True)
    myid = data_dir / "myid"
    if server_id is not None:
        myid.write_text(f"{server_id}\n")
    elif any(k.startswith("server.") for k in config) and not myid.exists():
        print("mafka zookeeper-server-start: an ensemble member needs ZOOKEEPER_SERVER_ID (or a myid file in "
              f"{data_dir})", file=sys.stderr)
        return 2
    out = Path(args.config_out) if args.config_out else data_dir.parent / "zoo.cfg"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(cfg)
    try:
        java, classpath = find_java(), find_classpath()
    except ZooKeeperError as exc:
        print(f"mafka zookeeper-server-start: {exc}", file=sys.stderr)
        return 1
    heap = shlex.split(os.environ.get("KAFKA_HEAP_OPTS", "-Xms32m -Xmx256m"))
    opts = shlex.split(os.environ.get("KAFKA_OPTS", ""))
    argv = [java, *heap, "-XX:+UseSerialGC", "-Djava.net.preferIPv4Stack=true", *opts,
            "-cp", classpath, MAIN_CLASS, str(out)]
    print(f"mafka zookeeper-server-start: {' '.join(argv)}", flush=True)
    os.execv(java, argv)
    return 1  # not reached
