"""The async heart shared by every client: connections, metadata, coordinator lookup.

A :class:`Kernel` belongs to one client (producer, consumer or admin) and
runs on one asyncio loop — the application's loop for the ``aio`` face, a
private :class:`~mafka.client.loop_thread.LoopThread` for the synchronous
face.  It owns:

* connections, keyed by ``(node id, channel)``.  Channels keep traffic
  that must not queue behind other traffic apart, since a broker answers
  one connection's requests in order: a fetch long poll on ``"fetch"`` must
  not delay a heartbeat on ``"group"`` nor a produce on ``"produce"``.
  Bootstrap addresses are nodes ``-1, -2, …`` until metadata names them.
* the :class:`~mafka.client.metadata.ClusterMetadata`, refreshed on demand
  (one refresh at a time; callers wait on the same one) and every
  ``topic.metadata.refresh.interval.ms``.

Every connection is opened with the client's
:class:`~mafka.client.security.ClientSecurity` (TLS, SASL), built once from
the configuration when the kernel is created.

Failures surface as exceptions from :mod:`mafka.errors` (broker codes) or
``ConnectionError`` / ``asyncio.TimeoutError``; retry policy is the
callers'.

Authentication and TLS failures are not transient: the same credentials or
certificates fail again.  As librdkafka does (it reports ``_AUTHENTICATION``
through ``error_cb`` and keeps reconnecting with backoff while requests time
out), the kernel reports each such failure through :attr:`Kernel.on_error`
— by default the configuration's ``error_cb``, else an ERROR log line — as a
non-retriable :class:`~mafka.client.kafka_error.KafkaError` with librdkafka's
code (``_AUTHENTICATION``, -169, for a refused SASL exchange, with the broker's
message; UNSUPPORTED_SASL_MECHANISM as the broker sent it; ``_SSL``, -181, for
a failed TLS handshake) and waits
``reconnect.backoff.max.ms`` before trying that broker again, so a wrong
password neither spins nor hammers the broker.  Callers see the
:class:`~mafka.client.security.AuthenticationFailed` itself (a
``ConnectionError``, so their retry loops keep working) from
:meth:`Kernel.connection`, :meth:`Kernel.send` and :meth:`Kernel.send_any`.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import ssl
import time
from collections.abc import Callable, Coroutine, Iterable
from typing import Any

from mafka.client.config import ClientConfig
from mafka.client.kafka_error import KafkaError
from mafka.client.metadata import ClusterMetadata
from mafka.client.security import SSL_ERROR, AuthenticationFailed, client_security
from mafka.client.transport import BrokerConnection
from mafka.errors import ErrorCode, raise_for_code

__all__ = ["Kernel", "parse_bootstrap", "METADATA", "FIND_COORDINATOR"]

log = logging.getLogger("mafka.client")

METADATA = 3
FIND_COORDINATOR = 10


_SCHEMES = ("PLAINTEXT://", "SSL://", "SASL_PLAINTEXT://", "SASL_SSL://")


def parse_bootstrap(bootstrap: str) -> list[tuple[str, int]]:
    """``"h1:9092,h2:9093"`` → ``[("h1", 9092), ("h2", 9093)]``; a protocol prefix
    (``SASL_SSL://h1:9093``, as librdkafka takes) is dropped: ``security.protocol`` rules.

    Raises:
        ValueError: an entry without a valid ``host:port``, or none at all.
    """
    out = []
    for entry in str(bootstrap).split(","):
        entry = entry.strip()
        for scheme in _SCHEMES:
            if entry.upper().startswith(scheme):
                entry = entry[len(scheme):]
                break
        if not entry:
            continue
        host, sep, port = entry.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ValueError(f"Invalid url in bootstrap.servers: {entry}")
        out.append((host.strip("[]"), int(port)))
    if not out:
        raise ValueError("No resolvable bootstrap urls given in bootstrap.servers")
    return out


class Kernel:
    """Connections and metadata for one client.  Create and use on one asyncio loop.

    Attributes:
        security: the connections' TLS/SASL settings (None: plaintext).
        on_error: called on the loop with a non-retriable KafkaError for each failed
            authentication or TLS handshake; a client may replace it (a consumer that
            serves errors from ``poll()``, say).  Default: :meth:`report_error`.
        auth_error: the last authentication failure, None once a connection succeeds.

    Raises:
        ValueError: (constructor) a bad ``bootstrap.servers``.
        ConfigError: (constructor) a TLS file that cannot be loaded.
    """

    def __init__(self, config: ClientConfig) -> None:
        self.config = config
        self.client_id = config["client.id"]
        self.bootstrap = parse_bootstrap(config["bootstrap.servers"])
        self.security = client_security(config)
        self.on_error: Callable[[KafkaError], None] = self.report_error
        self.auth_error: AuthenticationFailed | None = None
        self.metadata = ClusterMetadata()
        self._conns: dict[tuple[int, str], BrokerConnection] = {}
        self._opening: dict[tuple[int, str], asyncio.Task[BrokerConnection]] = {}
        self._retry_at: dict[int, float] = {}
        self._failures: dict[int, int] = {}
        self._refresh: asyncio.Task[None] | None = None
        self._refresh_all = False
        self._closed = False
        self._next_bootstrap = 0
        self._socket_timeout = config["socket.timeout.ms"] / 1000.0
        self._request_timeout = config["request.timeout.ms"] / 1000.0
        self._setup_timeout = config["socket.connection.setup.timeout.ms"] / 1000.0
        self._background: set[asyncio.Task[Any]] = set()

    # -- connections ---------------------------------------------------------------------

    def _address(self, node_id: int) -> tuple[str, int]:
        if node_id < 0:
            return self.bootstrap[(-node_id - 1) % len(self.bootstrap)]
        broker = self.metadata.broker(node_id)
        if broker is None:
            raise ConnectionError(f"broker {node_id} is not in the cluster metadata")
        return broker.host, broker.port

    async def connection(self, node_id: int, channel: str = "default") -> BrokerConnection:
        """An open connection to ``node_id`` on ``channel``, opening one if needed.

        Concurrent callers share one connect attempt; cancelling one caller does
        not cancel the attempt for the others.

        Raises:
            ConnectionError: the node is unknown, in reconnect backoff, or refused.
        """
        key = (node_id, channel)
        while True:
            if self._closed:
                raise ConnectionError("client closed")
            conn = self._conns.get(key)
            if conn is not None and conn.connected:
                return conn
            task = self._opening.get(key)
            if task is None:
                wait = self._retry_at.get(node_id, 0.0) - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                    continue  # the world may have changed while sleeping: look again
                host, port = self._address(node_id)
                task = asyncio.ensure_future(
                    BrokerConnection.open(node_id, host, port, self.client_id, self._setup_timeout,
                                          self.security)
                )
                self._opening[key] = task
                # Registered before any waiter's, so the connection is stored before they resume.
                task.add_done_callback(functools.partial(self._opened, key))
            try:
                return await asyncio.shield(task)
            except AuthenticationFailed:
                raise  # its own type and the broker's message: callers and admin errors need both
            except (OSError, TimeoutError, ConnectionError) as exc:
                raise ConnectionError(f"broker {node_id}: connect failed: {exc!r}") from exc

    def _opened(self, key: tuple[int, str], task: asyncio.Task[BrokerConnection]) -> None:
        self._opening.pop(key, None)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            fatal = self._security_failure(exc)
            self._note_failure(key[0], at_cap=fatal is not None)
            if fatal is not None and not self._closed:
                self.on_error(fatal)
            return
        conn = task.result()
        if self._closed:
            conn.close()
            return
        self._failures.pop(key[0], None)
        self.auth_error = None
        self._conns[key] = conn

    def _security_failure(self, exc: BaseException) -> KafkaError | None:
        """The error to report for a failed connect that retrying will not fix, else None."""
        if isinstance(exc, AuthenticationFailed):
            self.auth_error = exc
            return exc.error
        if isinstance(exc, ssl.SSLError):
            return KafkaError(SSL_ERROR, f"SSL handshake failed: {exc}", retriable=False)
        return None

    def report_error(self, error: KafkaError) -> None:
        """The default :attr:`on_error`: the ``error_cb`` of the configuration (called on the
        loop; an exception it raises is logged), else an ERROR log line."""
        callback = self.config.get("error_cb")
        if callback is None:
            log.error("%s: %s", error.name(), error.str())
            return
        try:
            callback(error)
        except Exception:  # the application's code must not break the connection machinery
            log.exception("error_cb raised")

    def _note_failure(self, node_id: int, at_cap: bool = False) -> None:
        """Backs ``node_id`` off: exponentially, or at once to the cap (``at_cap``, for a
        failure the same attempt would repeat)."""
        n = self._failures.get(node_id, 0) + 1
        self._failures[node_id] = n
        base = self.config["reconnect.backoff.ms"] / 1000.0
        cap = self.config["reconnect.backoff.max.ms"] / 1000.0
        wait = cap if at_cap else min(cap, base * (2 ** (n - 1)))
        self._retry_at[node_id] = time.monotonic() + wait

    def disconnect(self, node_id: int, channel: str | None = None) -> None:
        """Drops connections to ``node_id`` (one channel or all); their requests fail."""
        for key in [k for k in self._conns if k[0] == node_id and (channel is None or k[1] == channel)]:
            self._conns.pop(key).close()

    def ready_connection(self, node_id: int, channel: str,
                         on_ready: Callable[[], None] | None = None) -> BrokerConnection | None:
        """The open connection to ``node_id`` on ``channel`` now, or None while one is opened
        in the background (``on_ready`` is called when that attempt ends, either way).

        For senders whose requests must reach the broker in the order they were
        built (an idempotent producer's sequences): they write synchronously on
        a ready connection instead of awaiting :meth:`connection` in a task,
        where a later task could write first.
        """
        conn = self._conns.get((node_id, channel))
        if conn is not None and conn.connected:
            return conn
        if (node_id, channel) not in self._opening and not self._closed:
            async def open_then_notify() -> None:
                try:
                    await self.connection(node_id, channel)
                except (ConnectionError, TimeoutError) as exc:
                    log.debug("connect to %d: %s", node_id, exc)
                finally:
                    if on_ready is not None:
                        on_ready()

            self.spawn(open_then_notify())
        return None

    def is_ready(self, node_id: int, channel: str = "default") -> bool:
        conn = self._conns.get((node_id, channel))
        return conn is not None and conn.connected

    async def send(self, node_id: int, api_key: int, body: Any, channel: str = "default",
                   timeout: float | None = None, expect_response: bool = True,
                   version: int | None = None) -> Any:
        """Sends one request to ``node_id`` and returns the decoded response body.

        Raises:
            ConnectionError: could not connect, or the connection dropped.
            asyncio.TimeoutError: no answer within ``timeout`` (default
                ``request.timeout.ms``); the connection is then closed, as
                its answers can no longer be matched safely.
        """
        conn = await self.connection(node_id, channel)
        fut = conn.request(api_key, body, version=version, expect_response=expect_response)
        try:
            # asyncio.timeout, not wait_for: CPython 3.11's wait_for returns the answer instead of
            # raising when the task is cancelled just as the answer arrives (the caller's loop then
            # runs on through a close; see close()).
            async with asyncio.timeout(self._request_timeout if timeout is None else timeout):
                return await fut
        except TimeoutError:
            conn.close()
            raise

    def version(self, node_id: int, api_key: int, channel: str = "default") -> int | None:
        conn = self._conns.get((node_id, channel))
        return None if conn is None else conn.versions.get(api_key)

    def known_nodes(self) -> list[int]:
        """Broker ids from metadata, or bootstrap pseudo-ids before any metadata."""
        ids = list(self.metadata.brokers)
        return ids if ids else [-(i + 1) for i in range(len(self.bootstrap))]

    async def send_any(self, api_key: int, body: Any, timeout: float | None = None) -> Any:
        """Sends to any reachable broker (connected ones first), trying each once."""
        nodes = self.known_nodes()
        connected = [n for n in nodes if self.is_ready(n)]
        rest = [n for n in nodes if n not in connected]
        start = self._next_bootstrap % max(1, len(rest))
        self._next_bootstrap += 1
        order = connected + rest[start:] + rest[:start]
        if self.metadata.brokers:
            order += [-(i + 1) for i in range(len(self.bootstrap))]
        last: Exception | None = None
        for node in order:
            try:
                return await self.send(node, api_key, body, timeout=timeout)
            except (TimeoutError, ConnectionError) as exc:
                last = exc
        if isinstance(last, AuthenticationFailed):
            raise last
        raise ConnectionError(f"no broker reachable: {last}")

    # -- metadata ------------------------------------------------------------------------

    async def refresh_metadata(self, all_topics: bool = False) -> ClusterMetadata:
        """Refreshes metadata for the wanted topics (or all); concurrent callers share one refresh."""
        if all_topics:
            self._refresh_all = True
        if self._refresh is None or self._refresh.done():
            self._refresh = asyncio.ensure_future(self._do_refresh())
        await asyncio.shield(self._refresh)
        return self.metadata

    async def _do_refresh(self) -> None:
        all_topics = self._refresh_all
        self._refresh_all = False
        topics = None if all_topics else [{"name": t} for t in sorted(self.metadata.wanted)]
        body = {
            "topics": topics,
            "allow_auto_topic_creation": bool(self.config.get("allow.auto.create.topics", False)),
        }
        response = await self.send_any(METADATA, body)
        self.metadata.update(response, time.monotonic(), all_topics=all_topics)

    async def metadata_for(self, topics: Iterable[str], timeout: float) -> ClusterMetadata:
        """Metadata refreshed once if any of ``topics`` is unknown or in error (e.g. a topic
        being created still has no leader); the caller checks the result."""
        topics = set(topics)
        self.metadata.want(topics)
        md = self.metadata
        if md.need_update or any(md.partition_count(t) is None for t in topics):
            async with asyncio.timeout(timeout):
                await self.refresh_metadata()
        return self.metadata

    async def find_coordinator(self, key: str, key_type: int = 0) -> int:
        """The node id of the group (0) or transaction (1) coordinator for ``key``.

        Raises:
            KafkaError subclasses: the broker's error (e.g. COORDINATOR_NOT_AVAILABLE).
        """
        response = await self.send_any(FIND_COORDINATOR, {"key": key, "key_type": key_type})
        raise_for_code(response.error_code, response.error_message if hasattr(response, "error_message") else None)
        if response.node_id not in self.metadata.brokers:
            await self.refresh_metadata()
        if response.node_id not in self.metadata.brokers:
            raise_for_code(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        node_id: int = response.node_id
        return node_id

    # -- lifecycle -----------------------------------------------------------------------

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Runs a background task owned by this kernel (cancelled by :meth:`close`)."""
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    async def close(self) -> None:
        """Cancels background tasks (until they end) and closes every connection."""
        self._closed = True
        tasks = list(self._background)
        while tasks:
            # Cancelled again until it ends: CPython 3.11's asyncio.wait_for returns the inner
            # result instead of raising when a cancellation arrives just as the inner future
            # completes (send() no longer uses it; other awaits still may), and a loop that
            # swallowed one cancellation went on — the close then waited out its 5 s timeout.
            for task in tasks:
                task.cancel()
            _, pending = await asyncio.wait(tasks, timeout=0.05)
            tasks = list(pending)
        for task in list(self._opening.values()):
            task.cancel()
        for conn in self._conns.values():
            conn.close()
        self._conns.clear()
