"""The broker's client quotas: what each request records, the throttle time it gets, and the quota configs kept fresh.

Kafka 2.8's ``QuotaManagers`` (produce, fetch, request) as ``KafkaApis``,
``RequestHandlerHelper`` and the dynamic-config handlers drive them, for one
broker.  This module owns:

* :func:`quota_settings` — the static settings read from the broker's
  config: ``quota.window.num`` (11), ``quota.window.size.seconds`` (1), and the
  deprecated ``quota.producer.default`` / ``quota.consumer.default``
  (``Long.MAX_VALUE``: none), checked as Kafka's ``ConfigDef`` checks them.
* :class:`ClientQuotaService` — a :class:`~mafka.security.quotas.ClientQuotaManagers`
  fed from ZooKeeper: every ``/config/users/<u>``, ``/config/users/<u>/clients/<c>``
  and ``/config/clients/<c>`` entity at start-up (``<default>`` ones included,
  as Kafka's ``DynamicConfigManager.startup``), then the entity of each
  ``users/…`` / ``clients/…`` change notification (:meth:`~ClientQuotaService.changed`);
  the expiry of idle sensors (:meth:`~ClientQuotaService.expire`, every 30 s
  as Kafka's ``ExpireSensorTask``); and, per request, Kafka's recording and
  throttle decision (:meth:`~ClientQuotaService.prepare`,
  :meth:`~ClientQuotaService.respond`).

What a request records (Kafka 2.8's ``KafkaApis``):

* Produce: the request's size (``request.sizeInBytes``: header and body, the
  frame without its length prefix) into the produce quota, then its handler
  time into the request quota — not for ``acks=0``, whose request time is
  exempt (its bandwidth is not).
* Fetch from a consumer: its handler time into the request quota first, then
  the size of the response it would send (``FetchResponse.sizeOf``: the body
  plus 4 bytes) into the fetch quota.  If either throttles, the bytes are
  "unrecorded" and the response carries no partitions (Kafka's
  ``getThrottledResponse``).  Before the handler runs, the fetch's
  ``max_bytes`` is capped at what the consumer's quota window can hold
  (``getMaxValueInQuotaWindow``) and ``min_bytes`` at ``max_bytes``, so a
  fetch is never bigger than its quota can ever let through.
* Fetch from a follower, and the cluster actions (LeaderAndIsr, StopReplica,
  UpdateMetadata, ControlledShutdown, WriteTxnMarkers, AlterIsr): exempt,
  as Kafka's ``sendResponseExemptThrottle``.  (Kafka throttles a cluster
  action refused with CLUSTER_AUTHORIZATION_FAILED; Mafka exempts by API
  alone.)
* Every other request: its handler time into the request quota
  (``sendResponseMaybeThrottle``).

The throttle time returned is the larger of the bandwidth and the request
throttle; it goes into the response's ``throttle_time_ms`` where the
response version has the field, and the caller mutes the connection that
long from now, whatever the version (Kafka 2.8 sends every throttled
response at once and mutes the channel, KIP-219; clients of the newer
versions also back off by themselves).

"Handler time" is the reactor time the handler's synchronous part took
(Kafka's ``requestThreadTimeNanos``: the I/O thread's time, not the time a
delayed operation waits in purgatory), plus, unchecked, the time spent
encoding the response (Kafka's network-thread time,
``recordNetworkThreadTimeCallback``).

Plain Python: no Twisted (ZooKeeper's Deferreds are awaited), the time is
injected (``now_ms``).  Deviation from Kafka: a throttled fetch keeps the
session id its handler answered with (Kafka answers an unthrottled full
fetch's new session only once unthrottled), because Mafka's handler has
created the session by then; and the session's cached partition state has
been updated as if the partitions were sent, so a throttled incremental
fetch may leave a consumer unaware of a high-watermark change until the
partition has news again (its records are sent anyway: the consumer fetches
the same offsets again).
"""

from __future__ import annotations

import logging
import math
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from mafka.errors import ConfigError
from mafka.security.quota_entities import (
    ClientQuotaEntity,
    config_location,
    entity_from_config_location,
    parse_entity_path,
)
from mafka.security.quotas import (
    DEFAULT_NUM_QUOTA_SAMPLES,
    DEFAULT_QUOTA_WINDOW_SIZE_SECONDS,
    ClientQuotaManagers,
)
from mafka.wire.codec import Request, encode_response_chunks

from .encoded_body import response_chunks

__all__ = ["EXEMPT_APIS", "FETCH", "PRODUCE", "ClientQuotaService", "QuotaSettings", "quota_settings"]

log = logging.getLogger("mafka.broker.client_quotas")

PRODUCE: Final = 0
FETCH: Final = 1
#: The cluster actions Kafka answers with ``sendResponseExemptThrottle``: LeaderAndIsr,
#: StopReplica, UpdateMetadata, ControlledShutdown, WriteTxnMarkers, AlterIsr.
EXEMPT_APIS: Final = frozenset({4, 5, 6, 7, 27, 56})

_USERS: Final = "users"
_CLIENTS: Final = "clients"
_LONG_MAX: Final = 2**63 - 1
_INT_MAX: Final = 2**31 - 1
_JAVA_INTEGER = re.compile(r"[+-]?[0-9]+")


# --------------------------------------------------------------------------- static settings


@dataclass(frozen=True, slots=True)
class QuotaSettings:
    """The broker's static quota settings (Kafka's ``ClientQuotaManagerConfig``)."""

    num_samples: int = DEFAULT_NUM_QUOTA_SAMPLES
    window_size_s: int = DEFAULT_QUOTA_WINDOW_SIZE_SECONDS
    #: ``quota.producer.default``; None when unset (Kafka's ``Long.MAX_VALUE``)
    producer_default: int | None = None
    #: ``quota.consumer.default``; None when unset
    consumer_default: int | None = None


def _raw_setting(config: Any, key: str) -> str | None:
    """A key the broker config keeps verbatim (quota keys are a passthrough family), or None."""
    unknown = getattr(config, "unknown", None)
    if isinstance(unknown, Mapping):
        value = unknown.get(key)
        return None if value is None else str(value)
    return None


def _parse_number(config: Any, key: str, kind: str, default: int) -> int:
    """``ConfigDef.parse`` of an INT or LONG key with ``atLeast(1)``: trimmed, Java's syntax and range."""
    raw = _raw_setting(config, key)
    if raw is None:
        return default
    text = raw.strip()
    limit = _INT_MAX if kind == "INT" else _LONG_MAX
    if not _JAVA_INTEGER.fullmatch(text) or not -limit - 1 <= int(text) <= limit:
        raise ConfigError.for_key(key, f"Not a number of type {kind}", value=raw)
    value = int(text)
    if value < 1:
        raise ConfigError.for_key(key, "Value must be at least 1", value=value)
    return value


def quota_settings(config: Any) -> QuotaSettings:
    """The quota settings of a broker config (``BrokerConfig``; anything without them gives Kafka's defaults).

    Raises:
        ConfigError: a value that is not a number of its type, or below 1
            (Kafka's ``ConfigException``: the broker does not start).
    """
    producer = _parse_number(config, "quota.producer.default", "LONG", _LONG_MAX)
    consumer = _parse_number(config, "quota.consumer.default", "LONG", _LONG_MAX)
    return QuotaSettings(
        num_samples=_parse_number(config, "quota.window.num", "INT", DEFAULT_NUM_QUOTA_SAMPLES),
        window_size_s=_parse_number(config, "quota.window.size.seconds", "INT", DEFAULT_QUOTA_WINDOW_SIZE_SECONDS),
        producer_default=None if producer == _LONG_MAX else producer,
        consumer_default=None if consumer == _LONG_MAX else consumer,
    )


# --------------------------------------------------------------------------- the service


def _user(connection: Any) -> str:
    principal = getattr(connection, "principal", None)
    return "ANONYMOUS" if principal is None else principal.name


def _double_to_int(value: float) -> int:
    """Scala's ``Double.toInt``: truncates, saturates at the int range (NaN is 0)."""
    if math.isnan(value):
        return 0
    if value >= _INT_MAX:
        return _INT_MAX
    if value <= -_INT_MAX - 1:
        return -_INT_MAX - 1
    return int(value)


class ClientQuotaService:
    """This broker's client quotas, kept in step with ZooKeeper, and the per-request throttle decisions.

    Args:
        zk: the broker's :class:`~mafka.coordination.kafka_zk.client.KafkaZkClient`
            (``get_all_entities_with_config``, ``get_entity_config``; their
            Deferreds are awaited).
        config: the broker config (see :func:`quota_settings`).
        now_ms: a monotonic clock in milliseconds (the rates' time).
        thread_ns: the clock that times response encoding for the request
            quota (nanoseconds).

    Raises:
        ConfigError: bad static quota settings.

    Attributes:
        enabled: whether any quota type was ever configured (Kafka's
            ``quotasEnabled`` of any manager).  Only ever turns true; while it
            is false the dispatcher skips this service entirely.
        managers: the three quota managers.
        configs: the last config read of every entity (for inspection).
    """

    def __init__(
        self,
        zk: Any,
        config: Any,
        *,
        now_ms: Callable[[], int],
        thread_ns: Callable[[], int] = time.perf_counter_ns,
    ) -> None:
        settings = quota_settings(config)
        self.settings = settings
        self.zk = zk
        self.now_ms = now_ms
        self.thread_ns = thread_ns
        self.managers = ClientQuotaManagers(
            num_samples=settings.num_samples,
            window_size_s=settings.window_size_s,
            producer_default=settings.producer_default,
            consumer_default=settings.consumer_default,
        )
        self.configs: dict[ClientQuotaEntity, dict[str, str]] = {}
        self.enabled = False
        self._refresh_enabled()
        # (api key, version) -> whether the response has throttle_time_ms
        self._throttle_field: dict[tuple[int, int], bool] = {}

    def _refresh_enabled(self) -> None:
        m = self.managers
        self.enabled = m.produce.quotas_enabled or m.fetch.quotas_enabled or m.request.quotas_enabled

    # ----------------------------------------------------------------- configs

    def apply(self, entity: ClientQuotaEntity, config: Mapping[str, str]) -> None:
        """Applies *entity*'s whole stored config (Kafka's ``QuotaConfigHandler.updateQuotaConfig``).

        As Kafka, any user or client-id config read — quota keys or not (a
        user with only SCRAM credentials) — marks that kind of entity as
        configured, which enables recording.  A value that does not parse is
        logged and the entity left as it was (Kafka fails that notification).
        """
        try:
            self.managers.update_entity_config(entity, config)
        except ValueError as exc:
            log.warning("ignoring the quota config of %s: %s", entity, exc)
            return
        self.configs[entity] = dict(config)
        self._refresh_enabled()

    async def _read(self, entity_type: str, sanitized_name: str) -> None:
        config = await self.zk.get_entity_config(entity_type, sanitized_name)
        self.apply(entity_from_config_location(entity_type, sanitized_name), config)

    async def load(self) -> None:
        """Reads every user, (user, client-id) and client-id entity (``DynamicConfigManager.startup``)."""
        users = await self.zk.get_all_entities_with_config(_USERS)
        for user in users:
            await self._read(_USERS, user)
        for user in users:
            for client in await self.zk.get_all_entities_with_config(f"{_USERS}/{user}/{_CLIENTS}"):
                await self._read(_USERS, f"{user}/{_CLIENTS}/{client}")
        for client in await self.zk.get_all_entities_with_config(_CLIENTS):
            await self._read(_CLIENTS, client)

    async def changed(self, entity_path: str) -> None:
        """Re-reads the entity a ``/config/changes`` notification names (``users/…``, ``clients/…``).

        Other entity paths are not quota entities and are ignored; a
        malformed ``users/…`` path is logged (Kafka: ``Invalid quota entity path``).
        """
        try:
            entity = parse_entity_path(entity_path)
        except ValueError as exc:
            log.warning("config change notification %r: %s", entity_path, exc)
            return
        if entity is None:
            return
        await self._read(*config_location(entity))

    def expire(self) -> int:
        """Drops the sensors idle for an hour (Kafka's ``ExpireSensorTask``); returns how many."""
        return self.managers.expire(self.now_ms())

    # ----------------------------------------------------------------- requests

    def prepare(self, request: Request, connection: Any) -> None:
        """Before the handler: caps a consumer fetch's ``max_bytes`` at its quota window (``getMaxValueInQuotaWindow``).

        Kafka: ``fetchMaxBytes = min(maxBytes, fetch.max.bytes, maxQuotaWindowBytes)``
        and ``fetchMinBytes = min(minBytes, fetchMaxBytes)``; the handler
        applies ``fetch.max.bytes``.  A quota of 0 or below caps at 0.
        """
        if request.header.api_key != FETCH:
            return
        body = request.body
        if body is None or body.replica_id >= 0 or not self.managers.fetch.quotas_enabled:
            return
        window = self.managers.fetch.max_value_in_quota_window(_user(connection), request.header.client_id or "")
        cap = max(_double_to_int(window), 0)
        if cap < body.max_bytes:
            body["max_bytes"] = cap
        if body.min_bytes > body.max_bytes:
            body["min_bytes"] = body.max_bytes

    def _has_throttle_field(self, request: Request) -> bool:
        key = (request.header.api_key, request.header.api_version)
        found = self._throttle_field.get(key)
        if found is None:
            fields = request.spec.response.present_fields(request.header.api_version)
            found = self._throttle_field[key] = any(f.name == "throttle_time_ms" for f in fields)
        return found

    def respond(self, request: Request, connection: Any, body: Any, handler_ns: int) -> tuple[Any, int]:
        """Records the request, decides its throttle, and encodes its response.

        Args:
            request: the request answered.
            connection: its :class:`~mafka.broker.network.Connection`
                (``principal``, ``request_size``).
            body: the handler's response body, or None (no response: Produce ``acks=0``).
            handler_ns: the time the handler held the reactor.

        Returns:
            (the response's chunks, or None for no response; the throttle time
            in ms, 0 when not throttled).  A throttled response carries the
            time in ``throttle_time_ms`` where its version has the field; a
            throttled consumer fetch is answered with no partitions.
        """
        header = request.header
        api_key = header.api_key
        m = self.managers
        user, client_id = _user(connection), header.client_id or ""
        now = self.now_ms()
        if api_key == FETCH:
            if request.body is not None and request.body.replica_id >= 0:
                return self._encode(request, body), 0  # a follower: the leader's replication quota applies instead
            return self._fetch(request, connection, body, handler_ns, user, client_id, now)
        if api_key in EXEMPT_APIS:
            return self._encode(request, body), 0
        if api_key == PRODUCE:
            size = getattr(connection, "request_size", 0) or _records_size(request)
            bandwidth = m.produce.record_and_get_throttle_time_ms(user, client_id, size, now)
            exempt = request.body is not None and request.body.acks == 0
            requested = 0 if exempt else m.request.record_request_time(user, client_id, handler_ns, now)
        else:
            bandwidth, exempt = 0, False
            requested = m.request.record_request_time(user, client_id, handler_ns, now)
        throttle = max(bandwidth, requested)
        if throttle > 0 and body is not None and self._has_throttle_field(request):
            body["throttle_time_ms"] = throttle
        return self._encode_timed(request, body, user, client_id, exempt), throttle

    def _fetch(
        self, request: Request, connection: Any, body: Any, handler_ns: int, user: str, client_id: str, now: int
    ) -> tuple[Any, int]:
        m = self.managers
        if not (m.fetch.quotas_enabled or m.request.quotas_enabled):
            return self._encode(request, body), 0
        requested = m.request.record_request_time(user, client_id, handler_ns, now)
        started = self.thread_ns()
        chunks = encode_response_chunks(request.header, body)
        # FetchResponse.sizeOf: 4 + the body; the chunks also hold the size prefix and the response header.
        header_size = 4 if request.spec.response_header_version(request.header.api_version) == 0 else 5
        size = sum(map(len, chunks)) - header_size
        bandwidth = m.fetch.record_and_get_throttle_time_ms(user, client_id, size, now)
        throttle = max(bandwidth, requested)
        if throttle > 0:
            # Kafka unrecords even when only the request quota throttled: nothing is sent.
            m.fetch.unrecord(user, client_id, size, now)
            body = {
                "throttle_time_ms": throttle,
                "error_code": body.get("error_code", 0),
                "session_id": body.get("session_id", 0),
                "responses": [],
            }
            chunks = encode_response_chunks(request.header, body)
        m.request.record_network_thread_time(user, client_id, self.thread_ns() - started, now)
        return chunks, throttle

    @staticmethod
    def _encode(request: Request, body: Any) -> Any:
        return None if body is None else response_chunks(request.header, body)

    def _encode_timed(self, request: Request, body: Any, user: str, client_id: str, exempt: bool) -> Any:
        if body is None:
            return None
        request_quota = self.managers.request
        if exempt or not request_quota.quotas_enabled:
            return response_chunks(request.header, body)
        started = self.thread_ns()
        chunks = response_chunks(request.header, body)
        request_quota.record_network_thread_time(user, client_id, self.thread_ns() - started, self.now_ms())
        return chunks


def _records_size(request: Request) -> int:
    """The records of a Produce request, for a connection that does not know the request's size."""
    body = request.body
    if body is None:
        return 0
    return sum(len(p.records or b"") for t in body.topic_data for p in t.partition_data)

