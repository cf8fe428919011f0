"""A small blocking Kafka-protocol client (plain sockets) for tests that need exact requests.

Test infrastructure: chaos and durability tests send raw requests to one chosen
broker (a zombie probe, a metadata snapshot of one broker) that no client library
offers.  Applications and the CLI use :mod:`mafka.client`.

:class:`BlockingClient` keeps one socket per broker, sends one request at a
time and waits for its answer.  :meth:`BlockingClient.call` goes to any
bootstrap broker (or a broker by id, from the last metadata) and retries
connection errors with backoff; :meth:`BlockingClient.retrying` repeats an
operation while it reports a retriable error (NOT_CONTROLLER,
LEADER_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER, …), refreshing metadata between
attempts.  Every wait is bounded by ``timeout_s``.

API versions used: Metadata 4, CreateTopics 4, DeleteTopics 3,
CreatePartitions 1, Produce 7, Fetch 11, ListOffsets 2.
"""

from __future__ import annotations

import itertools
import socket
import struct
import time
from collections.abc import Callable
from typing import Any, TypeVar

from mafka.client.kernel import parse_bootstrap
from mafka.errors import ErrorCode
from mafka.wire.codec import decode_response, encode_request

__all__ = [
    "BlockingClient",
    "ClientTimeout",
    "METADATA",
    "CREATE_TOPICS",
    "DELETE_TOPICS",
    "CREATE_PARTITIONS",
    "PRODUCE",
    "FETCH",
    "LIST_OFFSETS",
    "VERSIONS",
    "RETRIABLE",
    "parse_bootstrap",
]

PRODUCE, FETCH, LIST_OFFSETS, METADATA = 0, 1, 2, 3
CREATE_TOPICS, DELETE_TOPICS, CREATE_PARTITIONS = 19, 20, 37
DESCRIBE_CONFIGS = 32

#: The version the CLI speaks for each api key.
VERSIONS = {
    METADATA: 4,
    CREATE_TOPICS: 4,
    DELETE_TOPICS: 3,
    CREATE_PARTITIONS: 1,
    PRODUCE: 7,
    FETCH: 11,
    LIST_OFFSETS: 2,
    DESCRIBE_CONFIGS: 1,
}

#: Error codes after which the operation is retried (after a metadata refresh).
RETRIABLE = frozenset(
    {
        ErrorCode.NOT_CONTROLLER,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.REPLICA_NOT_AVAILABLE,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        ErrorCode.BROKER_NOT_AVAILABLE,
    }
)

_SIZE = struct.Struct(">i")
T = TypeVar("T")


class ClientTimeout(Exception):
    """The operation did not succeed within the client's timeout."""


class BlockingClient:
    """Blocking requests to a Mafka (or Kafka) cluster.  Internal; see the module docstring.

    Args:
        bootstrap: ``host:port[,host:port…]``.
        client_id: put in every request header.
        timeout_s: the bound on every operation, retries included.
    """

    def __init__(self, bootstrap: str, client_id: str = "mafka-cli", timeout_s: float = 30.0) -> None:
        self.bootstrap = parse_bootstrap(bootstrap)
        self.client_id = client_id
        self.timeout_s = timeout_s
        self._sockets: dict[tuple[str, int], socket.socket] = {}
        self._correlation = itertools.count(1)
        self.brokers: dict[int, tuple[str, int]] = {}
        self.last_metadata: Any = None
        self._next_bootstrap = 0

    # -- plumbing -------------------------------------------------------------------

    def close(self) -> None:
        for sock in self._sockets.values():
            try:
                sock.close()
            except OSError:
                pass
        self._sockets.clear()

    def __enter__(self) -> BlockingClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _socket(self, addr: tuple[str, int], timeout: float) -> socket.socket:
        sock = self._sockets.get(addr)
        if sock is None:
            sock = socket.create_connection(addr, timeout=max(0.1, timeout))
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._sockets[addr] = sock
        sock.settimeout(max(0.1, timeout))
        return sock

    def _drop(self, addr: tuple[str, int]) -> None:
        sock = self._sockets.pop(addr, None)
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass

    def send_once(self, addr: tuple[str, int], api_key: int, version: int, body: Any, timeout: float) -> Any:
        """One request to ``addr`` and its decoded response body; OSError on any connection problem."""
        correlation_id = next(self._correlation) & 0x7FFFFFFF
        frame = encode_request(api_key, version, correlation_id, self.client_id, body)
        try:
            sock = self._socket(addr, timeout)
            sock.sendall(frame)
            size = _SIZE.unpack(_recv(sock, 4))[0]
            got, response = decode_response(api_key, version, _recv(sock, size))
        except (OSError, ValueError) as exc:
            self._drop(addr)
            raise OSError(f"{addr[0]}:{addr[1]}: {exc}") from exc
        if got != correlation_id:
            self._drop(addr)
            raise OSError(f"correlation id {got} does not match {correlation_id}")
        return response

    def _deadline(self, timeout: float | None) -> float:
        return time.monotonic() + (self.timeout_s if timeout is None else timeout)

    def call(
        self,
        api_key: int,
        version: int | None,
        body: Any,
        broker_id: int | None = None,
        timeout: float | None = None,
    ) -> Any:
        """Sends one request and returns the response body.

        Goes to a bootstrap broker (rotating on failure) or, with ``broker_id``,
        to that broker as the last metadata lists it.  Connection errors are
        retried with backoff until the timeout; error codes inside the response
        are the caller's (see :meth:`retrying`).

        Raises:
            ClientTimeout: no answer within the timeout.
        """
        version = VERSIONS[api_key] if version is None else version
        deadline = self._deadline(timeout)
        backoff = 0.05
        last: Exception | None = None
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ClientTimeout(f"no response within the timeout ({last})")
            try:
                addr = self._address(broker_id, deadline)
                return self.send_once(addr, api_key, version, body, left)
            except OSError as exc:
                last = exc
                if broker_id is not None:
                    self._try_refresh(deadline)
                else:
                    self._next_bootstrap += 1
            time.sleep(min(backoff, max(0.0, deadline - time.monotonic())))
            backoff = min(backoff * 2, 1.0)

    def _address(self, broker_id: int | None, deadline: float) -> tuple[str, int]:
        if broker_id is None:
            # Prefer brokers we already know (bootstrap may list only some).
            candidates = self.bootstrap
            return candidates[self._next_bootstrap % len(candidates)]
        if broker_id not in self.brokers:
            self.metadata(timeout=max(0.1, deadline - time.monotonic()))
        try:
            return self.brokers[broker_id]
        except KeyError:
            raise OSError(f"broker {broker_id} is not in the cluster metadata") from None

    def _try_refresh(self, deadline: float) -> None:
        try:
            self.metadata(timeout=max(0.1, deadline - time.monotonic()))
        except ClientTimeout:
            pass

    def retrying(self, attempt: Callable[[], tuple[bool, T]], timeout: float | None = None) -> T:
        """Runs ``attempt() -> (retry?, result)`` until it says done, refreshing metadata in between.

        On timeout the last result is returned (the caller reports its errors).
        """
        deadline = self._deadline(timeout)
        backoff = 0.05
        while True:
            retry, result = attempt()
            if not retry or time.monotonic() + backoff > deadline:
                return result
            time.sleep(backoff)
            backoff = min(backoff * 2, 1.0)
            self._try_refresh(deadline)

    # -- metadata ---------------------------------------------------------------------

    def metadata(self, topics: list[str] | None = None, allow_auto_topic_creation: bool = False,
                 timeout: float | None = None) -> Any:
        """A Metadata v4 response body (all topics for ``None``); remembers the brokers."""
        body = {
            "topics": None if topics is None else [{"name": t} for t in topics],
            "allow_auto_topic_creation": allow_auto_topic_creation,
        }
        response = self.call(METADATA, 4, body, timeout=timeout)
        self.brokers = {b.node_id: (b.host, b.port) for b in response.brokers}
        self.last_metadata = response
        return response

    def controller_id(self, timeout: float | None = None) -> int:
        """The controller's broker id, waiting (bounded) until the cluster has one."""
        deadline = self._deadline(timeout)

        def attempt() -> tuple[bool, int]:
            cid = self.metadata(topics=[], timeout=max(0.1, deadline - time.monotonic())).controller_id
            return cid < 0, cid

        cid = self.retrying(attempt, timeout=max(0.1, deadline - time.monotonic()))
        if cid < 0:
            raise ClientTimeout("no controller elected")
        return cid

    def leader_for(self, topic: str, partition: int, timeout: float | None = None) -> int:
        """The leader of ``topic``-``partition``, waiting (bounded) while it has none."""
        deadline = self._deadline(timeout)

        def attempt() -> tuple[bool, int]:
            md = self.metadata([topic], timeout=max(0.1, deadline - time.monotonic()))
            for t in md.topics:
                if t.name == topic:
                    for p in t.partitions:
                        if p.partition_index == partition:
                            return p.leader_id < 0, p.leader_id
            return True, -1

        leader = self.retrying(attempt, timeout=max(0.1, deadline - time.monotonic()))
        if leader < 0:
            raise ClientTimeout(f"no leader for {topic}-{partition}")
        return leader

    def partitions_for(self, topic: str, auto_create: bool = False,
                       timeout: float | None = None) -> dict[int, int] | None:
        """``{partition: leader id}`` for ``topic`` (waiting while leaders are missing), or None if it does not exist."""
        deadline = self._deadline(timeout)

        def attempt() -> tuple[bool, dict[int, int] | None]:
            md = self.metadata([topic], allow_auto_topic_creation=auto_create,
                               timeout=max(0.1, deadline - time.monotonic()))
            t = next((t for t in md.topics if t.name == topic), None)
            if t is None:
                return True, None
            if t.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and not auto_create:
                return False, None
            if t.error_code != ErrorCode.NONE or not t.partitions:
                return True, None
            leaders = {p.partition_index: p.leader_id for p in t.partitions}
            return any(v < 0 for v in leaders.values()), leaders

        return self.retrying(attempt, timeout=max(0.1, deadline - time.monotonic()))

    def call_controller(self, api_key: int, body: Any, errors: Callable[[Any], list[int]],
                        timeout: float | None = None) -> Any:
        """Sends an admin request to the controller, again while ``errors(response)`` holds NOT_CONTROLLER."""
        deadline = self._deadline(timeout)

        def attempt() -> tuple[bool, Any]:
            cid = self.controller_id(timeout=max(0.1, deadline - time.monotonic()))
            response = self.call(api_key, None, body, broker_id=cid, timeout=max(0.1, deadline - time.monotonic()))
            return ErrorCode.NOT_CONTROLLER in errors(response), response

        return self.retrying(attempt, timeout=max(0.1, deadline - time.monotonic()))


def _recv(sock: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise OSError("connection closed")
        out += chunk
    return bytes(out)
