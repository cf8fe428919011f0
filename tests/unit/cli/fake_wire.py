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

:class:`AclWireFake` is a ready cluster for the ACL APIs (``mafka acls`` and the
admin client's ACL methods).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mafka.client import kernel as kernel_module
from mafka.errors import ErrorCode
from mafka.errors import KafkaError as BrokerError
from mafka.security import acl
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


class AclWireFake(WireFake):
    """Brokers serving DescribeAcls, CreateAcls and DeleteAcls over an in-memory ACL set, as a
    Kafka 2.8 broker with an ``AclAuthorizer`` answers them (:mod:`mafka.broker.handlers.acls`).

    ``acls`` holds :class:`mafka.security.acl.AclBinding` objects in creation order and is
    matched with Kafka's filter rules (:mod:`mafka.security.acl`); creations go through a
    2.8 broker's checks (:func:`~mafka.security.acl.validate_new_binding`).  Knobs:
    ``authorizer`` False answers SECURITY_DISABLED as a broker without one; ``refuse`` maps
    an api key to the error code every element of its requests gets (e.g.
    CLUSTER_AUTHORIZATION_FAILED for a principal without Alter on the cluster).
    """

    DISABLED = "No Authorizer is configured on the broker"

    def __init__(self, brokers: dict[int, tuple[str, int]] | None = None, authorizer: bool = True) -> None:
        super().__init__(brokers or {1: ("b1", 9092)})
        self.authorizer = authorizer
        self.refuse: dict[int, int] = {}
        self.acls: list[Any] = []

    def _Metadata(self, req: Any, broker: int) -> dict[str, Any]:
        return {
            "brokers": [{"node_id": n, "host": h, "port": p, "rack": None} for n, (h, p) in self.brokers.items()],
            "cluster_id": "c", "controller_id": min(self.brokers), "topics": [],
        }

    def _refusal(self, api_key: int) -> tuple[int, str | None] | None:
        if not self.authorizer:
            return ErrorCode.SECURITY_DISABLED, self.DISABLED
        if api_key in self.refuse:
            return self.refuse[api_key], None
        return None

    @staticmethod
    def _filter(f: Any) -> Any:
        return acl.AclBindingFilter(
            acl.ResourcePatternFilter(acl.ResourceType.from_code(f.resource_type_filter), f.resource_name_filter,
                                      acl.PatternType.from_code(f.pattern_type_filter)),
            acl.AccessControlEntryFilter(f.principal_filter, f.host_filter, acl.AclOperation.from_code(f.operation),
                                         acl.AclPermissionType.from_code(f.permission_type)),
        )

    def _DescribeAcls(self, req: Any, broker: int) -> dict[str, Any]:
        refused = self._refusal(29)
        if refused is not None:
            return {"error_code": refused[0], "error_message": refused[1], "resources": []}
        wanted = self._filter(req)
        grouped: dict[Any, list[Any]] = {}
        for binding in self.acls:
            if wanted.matches(binding):
                grouped.setdefault(binding.pattern, []).append(binding.entry)
        return {"error_code": 0, "error_message": None, "resources": [
            {"resource_type": int(p.resource_type), "resource_name": p.name, "pattern_type": int(p.pattern_type),
             "acls": [{"principal": e.principal, "host": e.host, "operation": int(e.operation),
                       "permission_type": int(e.permission_type)} for e in entries]}
            for p, entries in grouped.items()
        ]}

    def _CreateAcls(self, req: Any, broker: int) -> dict[str, Any]:
        refused = self._refusal(30)
        if refused is not None:
            return {"results": [{"error_code": refused[0], "error_message": refused[1]} for _ in req.creations]}
        results = []
        for c in req.creations:
            try:
                binding = acl.AclBinding(
                    acl.ResourcePattern(acl.ResourceType.from_code(c.resource_type), c.resource_name,
                                        acl.PatternType.from_code(c.resource_pattern_type)),
                    acl.AccessControlEntry(c.principal, c.host, acl.AclOperation.from_code(c.operation),
                                           acl.AclPermissionType.from_code(c.permission_type)))
                acl.validate_new_binding(binding)
            except BrokerError as exc:
                results.append({"error_code": int(exc.code), "error_message": exc.message})
                continue
            if binding not in self.acls:
                self.acls.append(binding)
            results.append({"error_code": 0, "error_message": None})
        return {"results": results}

    def _DeleteAcls(self, req: Any, broker: int) -> dict[str, Any]:
        refused = self._refusal(31)
        if refused is not None:
            return {"filter_results": [{"error_code": refused[0], "error_message": refused[1], "matching_acls": []}
                                       for _ in req.filters]}
        results = []
        for f in req.filters:
            wanted = self._filter(f)
            doomed = [b for b in self.acls if wanted.matches(b)]
            self.acls = [b for b in self.acls if b not in doomed]
            results.append({"error_code": 0, "error_message": None, "matching_acls": [
                {"error_code": 0, "error_message": None, "resource_type": int(b.pattern.resource_type),
                 "resource_name": b.pattern.name, "pattern_type": int(b.pattern.pattern_type),
                 "principal": b.entry.principal, "host": b.entry.host, "operation": int(b.entry.operation),
                 "permission_type": int(b.entry.permission_type)}
                for b in doomed
            ]})
        return {"filter_results": results}
