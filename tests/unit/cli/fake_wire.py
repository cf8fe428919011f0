"""A fake cluster under :mod:`mafka.client`'s connections, for the CLI tools' unit tests (no sockets).

:meth:`WireFake.install` replaces the ``BrokerConnection`` that
:class:`mafka.client.kernel.Kernel` opens with one that hands every request
to the fake: the real clients (``AdminClient`` …) run unchanged above it.
Each request is encoded and decoded with Mafka's own wire schema at the
version the real connection would negotiate with a Mafka broker (the highest
both advertise and decode), so field names and versions are those on the
wire; the handler's answer goes through the schema too, so the client reads
real response bodies.  A handler named ``_<ApiName>`` answers each API; it
gets the decoded request and the broker id the request went to.

A handler that raises :class:`~mafka.wire.errors.ProtocolError` stands for an
answer the client cannot read: the connection closes, as the real transport
closes it.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mafka.client import kernel as kernel_module
from mafka.wire.codec import decode_body, encode_body, spec_for
from mafka.wire.errors import ProtocolError
from mafka.wire.registry import API_SPECS


def negotiated_versions() -> dict[int, int]:
    """api key → the version a Mafka client and a Mafka broker agree on."""
    out = {}
    for key, spec in API_SPECS.items():
        if spec.advertised is None:
            continue
        low, high = max(spec.advertised[0], spec.decode[0]), min(spec.advertised[1], spec.decode[1])
        if low <= high:
            out[key] = high
    return out


class FakeConnection:
    """What :class:`mafka.client.transport.BrokerConnection` offers the kernel, answered by the fake."""

    def __init__(self, cluster: WireFake, node_id: int, broker_id: int) -> None:
        self.cluster = cluster
        self.node_id = node_id
        self.broker_id = broker_id
        self.versions = negotiated_versions()
        self.connected = True
        self.in_flight = 0
        self._loop = asyncio.get_running_loop()

    def version(self, api_key: int) -> int:
        return self.versions[api_key]

    def request(self, api_key: int, body: Any, version: int | None = None,
                expect_response: bool = True) -> asyncio.Future[Any]:
        fut: asyncio.Future[Any] = self._loop.create_future()
        if not self.connected:
            fut.set_exception(ConnectionError("fake: not connected"))
            return fut
        try:
            answer = self.cluster.handle(self.broker_id, api_key, self.versions[api_key] if version is None else version,
                                         body)
        except ProtocolError as exc:
            self.close()
            fut.set_exception(ConnectionError(f"fake broker {self.broker_id}: bad response: {exc}"))
        except ConnectionError as exc:
            self.close()
            fut.set_exception(exc)
        else:
            fut.set_result(answer if expect_response else None)
        return fut

    def close(self, reason: Exception | None = None) -> None:
        self.connected = False


class _Connector:
    """Stands in for the ``BrokerConnection`` class: ``open()`` connects to the fake."""

    def __init__(self, cluster: WireFake) -> None:
        self.cluster = cluster

    async def open(self, node_id: int, host: str, port: int, client_id: str | None,
                   timeout: float, security: Any = None) -> FakeConnection:
        broker = self.cluster.broker_at(host, port)
        if broker is None:
            raise ConnectionRefusedError(f"fake: nothing listens on {host}:{port}")
        return FakeConnection(self.cluster, node_id, broker)


class WireFake:
    """Brokers by id (``brokers``: id → (host, port)), every request logged in ``calls``."""

    def __init__(self, brokers: dict[int, tuple[str, int]]) -> None:
        self.brokers = dict(brokers)
        self.down: set[int] = set()
        self.calls: list[tuple[int, int, Any, int]] = []

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(kernel_module, "BrokerConnection", _Connector(self))

    def broker_at(self, host: str, port: int) -> int | None:
        for b, addr in self.brokers.items():
            if addr == (host, port) and b not in self.down:
                return b
        return None

    def handle(self, broker: int, api_key: int, version: int, body: Any) -> Any:
        spec = spec_for(api_key, version)
        assert spec.advertised is not None
        assert spec.advertised[0] <= version <= spec.advertised[1], (spec.name, version)
        assert spec.decode[0] <= version <= spec.decode[1], (spec.name, version)
        request = decode_body(spec.request, version, encode_body(spec.request, version, body))
        assert set(body) <= set(request), f"{spec.name} v{version}: body keys {set(body)} vs schema {set(request)}"
        self.calls.append((api_key, version, request, broker))
        handler = getattr(self, f"_{spec.name}")
        answer = handler(request, broker)
        return decode_body(spec.response, version, encode_body(spec.response, version, answer))

    def api_calls(self, api_key: int) -> list[tuple[Any, int]]:
        """(decoded request, broker id) of every request of ``api_key``, in order."""
        return [(body, broker) for key, _, body, broker in self.calls if key == api_key]
