"""The requests the console sends that :class:`~mafka.client.AdminClient` has no method for.

confluent-kafka's admin API (which ``AdminClient`` mirrors) has no DescribeLogDirs, no
ListTransactions / DescribeTransactions, and of course none of Mafka's own APIs
(MafkaDescribeDelayed, MafkaEndHalf).  The CLI tools send those through a
:class:`~mafka.client.kernel.Kernel` of their own; the console sends them through its one
cached ``AdminClient``'s kernel, on that client's loop thread (:class:`AdminWire`), so the
same connections, metadata and security settings serve every call.

:class:`Wire` is the seam: pages ask it for a batch of requests and get, per request,
the decoded response or the exception, each bounded by the timeout given — a broker that
is down answers with its exception within that bound, never by hanging the page.

Mafka's own APIs go on their own connection (``channel="mafka"``): a broker that does not
know them (Apache Kafka) closes the connection it received one on, and the requests
in flight on the default connection must not fail with it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from mafka.client.admin import AdminClient

__all__ = [
    "Call",
    "Wire",
    "AdminWire",
    "METADATA",
    "DESCRIBE_LOG_DIRS",
    "LIST_TRANSACTIONS",
    "DESCRIBE_TRANSACTIONS",
    "MAFKA_DESCRIBE_DELAYED",
    "MAFKA_END_HALF",
    "MAFKA_CHANNEL",
]

METADATA = 3
DESCRIBE_LOG_DIRS = 35
DESCRIBE_TRANSACTIONS = 65
LIST_TRANSACTIONS = 66
MAFKA_DESCRIBE_DELAYED = 10000
MAFKA_END_HALF = 10001
#: the connection Mafka's own APIs travel on (see the module docstring)
MAFKA_CHANNEL = "mafka"


@dataclass(frozen=True)
class Call:
    """One request: ``body`` (a dict of the API's fields) for broker ``node`` (negative: the
    first, second … bootstrap server, before metadata names the brokers)."""

    node: int
    api_key: int
    body: dict[str, Any] = field(hash=False)
    version: int | None = None
    channel: str = "default"


class Wire(Protocol):
    """Raw requests to brokers (see the module docstring)."""

    def send_each(self, calls: Sequence[Call], timeout: float) -> list[Any]:
        """Sends every call at once; per call, its decoded response body or the exception
        it failed with (``TimeoutError`` when it took longer than ``timeout`` seconds)."""
        ...

    def find_coordinator(self, key: str, key_type: int, timeout: float) -> int:
        """The node id of the group (``key_type`` 0) or transaction (1) coordinator of ``key``.

        Raises:
            TimeoutError, ConnectionError, mafka.errors.KafkaError: as the lookup failed.
        """
        ...


class AdminWire:
    """:class:`Wire` over an :class:`AdminClient`'s own kernel and loop thread."""

    def __init__(self, admin: AdminClient) -> None:
        # AdminClient keeps its kernel and loop private; the console is the one place that
        # borrows them (see the module docstring), and does so only here.
        core = admin._core
        self._kernel = core.kernel
        self._thread = core.thread

    async def _one(self, call: Call, timeout: float) -> Any:
        kernel = self._kernel
        if call.node >= 0 and kernel.metadata.broker(call.node) is None:
            await kernel.refresh_metadata()
        return await kernel.send(call.node, call.api_key, call.body, channel=call.channel,
                                 timeout=timeout, version=call.version)

    def send_each(self, calls: Sequence[Call], timeout: float) -> list[Any]:
        if not calls:
            return []

        async def everything() -> list[Any]:
            return await asyncio.gather(*(asyncio.wait_for(self._one(c, timeout), timeout) for c in calls),
                                        return_exceptions=True)

        try:
            return self._thread.run(everything(), timeout + 1.0)
        except TimeoutError as exc:
            return [exc] * len(calls)

    def find_coordinator(self, key: str, key_type: int, timeout: float) -> int:
        async def lookup() -> int:
            return await asyncio.wait_for(self._kernel.find_coordinator(key, key_type), timeout)

        return self._thread.run(lookup(), timeout + 1.0)
