"""Kafka 2.8's client quotas: windowed rates, which sensor a connection records into, and throttle times.

Plain Python, no I/O, every time passed in (``now_ms``, milliseconds of any
monotonic clock).  The broker's handlers record into these and put the
returned throttle time into the response's ``throttle_time_ms``; the network
layer keeps the connection muted that long (KIP-219, :meth:`mafka.broker.network.KafkaProtocol.throttle`);
the config-change listener feeds quota changes in (:meth:`ClientQuotaManagers.update_entity_config`).
Entities, znodes and the admin APIs are :mod:`mafka.security.quota_entities`.

This module owns:

* :class:`Rate` — Kafka's ``Rate`` over a ``WindowedSum`` (``SampledStat``):
  ``quota.window.num`` samples (11) of ``quota.window.size.seconds`` (1 s),
  a sample starting at the first record after the previous one completed,
  samples older than all the windows reset, and the rate's divisor
  ``Rate.windowSize``: the time since the oldest sample started, padded to at
  least ``num - 1`` whole windows.  The replication throttle
  (:class:`mafka.broker.replication_quota.ReplicationQuota`) is a different
  rate — windows are dropped rather than reset, the divisor is
  ``max(elapsed, num - 1 windows)`` instead of Kafka's padding of whole
  windows, and time is float seconds — so it is not reused: throttle times
  must come out as Kafka's.
* :class:`ClientQuotaManager` — one quota type (produce bytes, fetch bytes)
  as Kafka's ``ClientQuotaManager`` with its ``DefaultQuotaCallback``: the
  overrides by entity, the precedence of ``/config/users/<user>/clients/<client-id>``
  … ``/config/clients/<default>`` (then ``quota.producer.default`` /
  ``quota.consumer.default``), the metric tags that decide which connections
  share a sensor (:meth:`~ClientQuotaManager.metric_tags`), recording and
  Kafka's throttle time, fetch's "unrecord" and its cap on the bytes a fetch
  may return, and the expiry of idle sensors.
* :class:`ClientRequestQuotaManager` — ``request_percentage``: thread time as
  a percentage, throttle capped at one window.
* :class:`ClientQuotaManagers` — the three together, updated from an entity's config.

Kafka semantics kept on purpose:

* Nothing is recorded until some quota of the type has been configured (the
  static default, or any dynamic override, even one since removed):
  ``quotasEnabled``.  After that every connection records, quota or not.
* Which sensor a connection uses depends on which kinds of quota were ever
  configured (``quotaTypesEnabled``, only ever growing): with client-id
  quotas only, every user with the same client-id shares one; with user
  quotas only, every client of a user; with several kinds, the entity whose
  quota applies.  A quota change applies to existing sensors at once (the
  bound is looked up on each record, as Kafka rewrites the sensors' configs).
* The throttle time is ``QuotaUtils.throttleTime``: ``round((observed − quota) / quota × windowSize)``,
  converted to an int as Java's ``Long.toInt``; produce and fetch are not
  capped, request time is capped at one window (``ClientRequestQuotaManager``).
  A quota of 0 or below gives Kafka a throttle time ≤ 0 (0 divides to
  infinity, ``Long.MaxValue.toInt`` is −1) for produce and fetch, which every
  caller takes as "not throttled": returned as 0 here.  For request time it
  is the cap (1 s).
* A quota of exactly the observed rate is not violated (``Quota.acceptable``: ``value <= bound``).

Request quotas in a single-threaded broker: Kafka records each request's
handler-thread time (and, separately, its network-thread time) as a
percentage of one thread — ``nanos × 100 / 10⁹`` per second of window — and
compares that directly with ``request_percentage``; the broker's capacity is
``(num.io.threads + num.network.threads) × 100``.  Mafka keeps the unit: a
``request_percentage`` is a share of one thread (100 = a whole thread), and
since Mafka's reactor is its only thread, 100 is the whole broker.  The
handler passes the reactor time a request took (:meth:`ClientRequestQuotaManager.record_request_time`).

Not modelled: Kafka's metrics (``byte-rate``, ``throttle-time``,
``queue-size``, ``exempt-request-time``), custom ``client.quota.callback.class``
callbacks, and ``controller_mutation_rate`` (KIP-599's token bucket: the key
is stored and described but not enforced).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from mafka.security.quota_entities import (
    CONSUMER_BYTE_RATE,
    CONTROLLER_MUTATION_RATE,
    DEFAULT,
    PRODUCER_BYTE_RATE,
    REQUEST_PERCENTAGE,
    ClientQuotaEntity,
    quota_values,
)

__all__ = [
    "DEFAULT_NUM_QUOTA_SAMPLES",
    "DEFAULT_QUOTA_WINDOW_SIZE_SECONDS",
    "INACTIVE_SENSOR_EXPIRATION_TIME_SECONDS",
    "ClientQuotaManager",
    "ClientQuotaManagers",
    "ClientRequestQuotaManager",
    "QuotaType",
    "Rate",
    "nanos_to_percentage",
    "throttle_time_ms",
]

#: ``quota.window.num``'s default: 10 whole windows and the current one.
DEFAULT_NUM_QUOTA_SAMPLES: Final = 11
#: ``quota.window.size.seconds``'s default.
DEFAULT_QUOTA_WINDOW_SIZE_SECONDS: Final = 1
#: ``ClientQuotaManager.InactiveSensorExpirationTimeSeconds``: a sensor unused this long is dropped.
INACTIVE_SENSOR_EXPIRATION_TIME_SECONDS: Final = 3600

_LONG_MAX: Final = 2**63 - 1
_LONG_MIN: Final = -(2**63)
#: ``ClientRequestQuotaManager.NanosToPercentagePerSecond``.
_NANOS_TO_PERCENTAGE_PER_SECOND: Final = 100.0 / 1_000_000_000

# ``QuotaTypes``: which kinds of override have ever been configured (a bit set).
_NO_QUOTAS: Final = 0
_CLIENT_ID_QUOTA_ENABLED: Final = 1
_USER_QUOTA_ENABLED: Final = 2
_USER_CLIENT_ID_QUOTA_ENABLED: Final = 4


class QuotaType(enum.Enum):
    """A client quota type (Kafka's ``QuotaType`` / ``ClientQuotaType``) and the config key that sets it."""

    PRODUCE = ("Produce", PRODUCER_BYTE_RATE)
    FETCH = ("Fetch", CONSUMER_BYTE_RATE)
    REQUEST = ("Request", REQUEST_PERCENTAGE)

    @property
    def kafka_name(self) -> str:
        """``Produce``, ``Fetch``, ``Request`` (Kafka's metric group)."""
        return self.value[0]

    @property
    def config_key(self) -> str:
        """``producer_byte_rate``, ``consumer_byte_rate``, ``request_percentage``."""
        return self.value[1]


# --------------------------------------------------------------------------- Java arithmetic


def _java_div(a: float, b: float) -> float:
    """IEEE division as Java does it: x/0 is ±Infinity (NaN for 0/0) instead of an exception."""
    if b == 0:
        if a == 0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def _java_long_div(a: int, b: int) -> int:
    """Java's ``long / long``: truncates toward zero (Python's ``//`` floors)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _java_round(x: float) -> int:
    """``Math.round(double)``: the closest long, ties up; NaN is 0; saturates at the long range."""
    if math.isnan(x):
        return 0
    if x >= 2.0**63:
        return _LONG_MAX
    if x <= -(2.0**63):
        return _LONG_MIN
    floor = math.floor(x)
    return int(floor) + (1 if x - floor >= 0.5 else 0)


def _long_to_int(value: int) -> int:
    """Scala's ``Long.toInt``: keeps the low 32 bits, signed."""
    return ((value + 2**31) % 2**32) - 2**31


def throttle_time_ms(observed: float, bound: float, window_size_ms: int) -> int:
    """``QuotaUtils.throttleTime``: how long without recording brings *observed* back to *bound*.

    If O is the observed rate over a window W and T the quota, a delay X
    with O·W / (W + X) = T gives X = (O − T) / T · W.  Rounded as Java's
    ``Math.round``; a long (not yet cut to an int).
    """
    return _java_round(_java_div(observed - bound, bound) * window_size_ms)


# --------------------------------------------------------------------------- Rate


class _Sample:
    """``SampledStat.Sample``: the sum recorded in one window."""

    __slots__ = ("event_count", "last_window_ms", "value")

    def __init__(self, now_ms: int) -> None:
        self.value = 0.0
        self.event_count = 0
        self.last_window_ms = now_ms

    def reset(self, now_ms: int) -> None:
        self.value = 0.0
        self.event_count = 0
        self.last_window_ms = now_ms


class Rate:
    """Kafka's ``Rate`` (per second) over a ``WindowedSum``: the measure behind every client quota.

    Args:
        samples: ``quota.window.num`` (at least 1).
        window_ms: one window, ``quota.window.size.seconds`` × 1000 (at least 1).

    Raises:
        ValueError: *samples* or *window_ms* below 1.
    """

    __slots__ = ("_current", "_samples", "samples", "window_ms")

    def __init__(self, samples: int = DEFAULT_NUM_QUOTA_SAMPLES, window_ms: int = 1000) -> None:
        if samples < 1 or window_ms < 1:
            raise ValueError(f"a rate needs at least one sample and window of 1 ms, got {samples} × {window_ms} ms")
        self.samples = samples
        self.window_ms = window_ms
        self._samples: list[_Sample] = []
        self._current = 0

    def record(self, value: float, now_ms: int) -> None:
        """Adds *value* to the current sample, starting the next one if the current window is over.

        Samples are a ring of ``samples`` entries; the next one is reused (reset
        to start at *now_ms*) once the ring is full.  Nothing is purged here,
        as in Kafka.
        """
        sample = self._current_sample(now_ms)
        if now_ms - sample.last_window_ms >= self.window_ms:
            self._current = (self._current + 1) % self.samples
            if self._current >= len(self._samples):
                sample = _Sample(now_ms)
                self._samples.append(sample)
            else:
                sample = self._samples[self._current]
                sample.reset(now_ms)
        sample.value += value
        sample.event_count += 1

    def _current_sample(self, now_ms: int) -> _Sample:
        if not self._samples:
            self._samples.append(_Sample(now_ms))
        return self._samples[self._current]

    def purge_obsolete_samples(self, now_ms: int) -> None:
        """Resets every sample that started ``samples`` windows ago or earlier (it then starts at *now_ms*)."""
        expire_age = self.samples * self.window_ms
        for sample in self._samples:
            if now_ms - sample.last_window_ms >= expire_age:
                sample.reset(now_ms)

    def total(self, now_ms: int) -> float:
        """The sum over the retained samples (``WindowedSum.measure``), after purging."""
        self.purge_obsolete_samples(now_ms)
        return sum(s.value for s in self._samples)

    def window_size_ms(self, now_ms: int) -> int:
        """``Rate.windowSize``: the span the total is divided by.

        The time since the oldest sample started; if that holds fewer than
        ``samples − 1`` whole windows, the missing whole windows are added (so
        a new client's first burst is not measured over a few milliseconds).
        """
        self.purge_obsolete_samples(now_ms)
        if not self._samples:
            self._samples.append(_Sample(now_ms))
        oldest = min(self._samples, key=lambda s: s.last_window_ms)
        elapsed = now_ms - oldest.last_window_ms
        full_windows = _java_long_div(elapsed, self.window_ms)
        min_full_windows = self.samples - 1
        if full_windows < min_full_windows:
            elapsed += (min_full_windows - full_windows) * self.window_ms
        return elapsed

    def measure(self, now_ms: int) -> float:
        """The rate per second: :meth:`total` over :meth:`window_size_ms` in seconds."""
        value = self.total(now_ms)
        return _java_div(value, self.window_size_ms(now_ms) / 1000.0)


# --------------------------------------------------------------------------- ClientQuotaManager


@dataclass(slots=True)
class _Sensor:
    rate: Rate
    last_record_ms: int


#: A sensor's identity: Kafka's metric tags (sanitized user or "", client-id or "") — plain names here.
_Tags = tuple[str, str]


class ClientQuotaManager:
    """Kafka's ``ClientQuotaManager`` with the ``DefaultQuotaCallback``, for one quota type.

    Args:
        quota_type: what is measured (the value recorded: bytes produced, bytes fetched).
        num_samples: ``quota.window.num``.
        window_size_s: ``quota.window.size.seconds``.
        static_default: ``quota.producer.default`` / ``quota.consumer.default``
            (deprecated since 0.11 but still honoured by Kafka 2.8: the quota
            of a client-id with no dynamic quota).  None, or ``Long.MAX_VALUE``
            (the unset default), for none.
        inactive_sensor_expiration_s: how long an unused sensor is kept.

    Raises:
        ValueError: *num_samples* or *window_size_s* below 1 (Kafka's ``atLeast(1)``).
    """

    def __init__(
        self,
        quota_type: QuotaType,
        *,
        num_samples: int = DEFAULT_NUM_QUOTA_SAMPLES,
        window_size_s: int = DEFAULT_QUOTA_WINDOW_SIZE_SECONDS,
        static_default: float | None = None,
        inactive_sensor_expiration_s: int = INACTIVE_SENSOR_EXPIRATION_TIME_SECONDS,
    ) -> None:
        if num_samples < 1:
            raise ValueError(f"quota.window.num must be at least 1, got {num_samples}")
        if window_size_s < 1:
            raise ValueError(f"quota.window.size.seconds must be at least 1, got {window_size_s}")
        self.quota_type = quota_type
        self.num_samples = num_samples
        self.window_size_s = window_size_s
        self._window_ms = window_size_s * 1000
        self._expiration_ms = inactive_sensor_expiration_s * 1000
        if static_default is not None and static_default >= _LONG_MAX:
            static_default = None
        self._static_default = None if static_default is None else float(static_default)
        self._overrides: dict[ClientQuotaEntity, float] = {}
        self._sensors: dict[_Tags, _Sensor] = {}
        self._enabled = _NO_QUOTAS if self._static_default is None else _CLIENT_ID_QUOTA_ENABLED

    # ----------------------------------------------------------------- configuration

    @property
    def quotas_enabled(self) -> bool:
        """Whether a quota of this type was ever configured (then every connection records)."""
        return self._enabled != _NO_QUOTAS

    def set_quota(self, entity: ClientQuotaEntity, value: float | None) -> None:
        """Sets (or with None removes) *entity*'s quota (``updateQuota``); existing sensors follow at once.

        Marks the entity's kind (user, client-id, user and client-id) as
        configured for good, even on removal, as Kafka does: that decides the
        sensors' sharing from now on.
        """
        if entity.user is not None:
            self._enabled |= _USER_CLIENT_ID_QUOTA_ENABLED if entity.client_id is not None else _USER_QUOTA_ENABLED
        else:
            self._enabled |= _CLIENT_ID_QUOTA_ENABLED
        if value is None:
            self._overrides.pop(entity, None)
        else:
            self._overrides[entity] = float(value)

    def overrides(self) -> Mapping[ClientQuotaEntity, float]:
        """The dynamic quotas configured, by entity (a copy)."""
        return dict(self._overrides)

    def metric_tags(self, user: str, client_id: str) -> tuple[str, str]:
        """Which sensor a connection of *user* with *client_id* records into (``quotaMetricTags``).

        Returns:
            (user or ``""``, client-id or ``""``): connections with equal tags
            share one rate.  Depends on the kinds of quota ever configured; with
            several, on the entity whose quota applies, in Kafka's precedence.
        """
        enabled = self._enabled
        if enabled in (_NO_QUOTAS, _CLIENT_ID_QUOTA_ENABLED):
            return ("", client_id)
        if enabled == _USER_QUOTA_ENABLED:
            return (user, "")
        if enabled == _USER_CLIENT_ID_QUOTA_ENABLED:
            return (user, client_id)
        q = self._overrides
        for entity, tags in (
            (ClientQuotaEntity(user, client_id), (user, client_id)),  # /config/users/<user>/clients/<client-id>
            (ClientQuotaEntity(user, DEFAULT), (user, client_id)),  # /config/users/<user>/clients/<default>
            (ClientQuotaEntity(user, None), (user, "")),  # /config/users/<user>
            (ClientQuotaEntity(DEFAULT, client_id), (user, client_id)),  # /config/users/<default>/clients/<client-id>
            (ClientQuotaEntity(DEFAULT, DEFAULT), (user, client_id)),  # /config/users/<default>/clients/<default>
            (ClientQuotaEntity(DEFAULT, None), (user, "")),  # /config/users/<default>
        ):
            if entity in q:
                return tags
        # /config/clients/<client-id>, /config/clients/<default>, the static default
        return ("", client_id)

    def _quota_limit(self, tags: _Tags) -> float | None:
        """``DefaultQuotaCallback.quotaLimit``: the bound of the sensor with *tags* (None: unlimited)."""
        user, client_id = tags
        q = self._overrides
        if user and client_id:
            candidates: tuple[ClientQuotaEntity, ...] = (
                ClientQuotaEntity(user, client_id),
                ClientQuotaEntity(user, DEFAULT),
                ClientQuotaEntity(DEFAULT, client_id),
                ClientQuotaEntity(DEFAULT, DEFAULT),
            )
        elif user:
            candidates = (ClientQuotaEntity(user, None), ClientQuotaEntity(DEFAULT, None))
        elif client_id:
            candidates = (ClientQuotaEntity(None, client_id), ClientQuotaEntity(None, DEFAULT))
        else:
            # Kafka's tags for an empty client-id without user quotas: no quota applies.
            return None
        for entity in candidates:
            bound = q.get(entity)
            if bound is not None:
                return bound
        return self._static_default if not user else None

    def quota_for(self, user: str, client_id: str) -> float | None:
        """The quota that applies to *user* with *client_id* now (None: unlimited)."""
        return self._quota_limit(self.metric_tags(user, client_id))

    # ----------------------------------------------------------------- recording

    def _sensor(self, tags: _Tags, now_ms: int) -> _Sensor:
        sensor = self._sensors.get(tags)
        if sensor is None:
            sensor = _Sensor(Rate(self.num_samples, self._window_ms), now_ms)
            self._sensors[tags] = sensor
        return sensor

    def _record(self, user: str, client_id: str, value: float, now_ms: int) -> tuple[_Sensor, _Tags]:
        tags = self.metric_tags(user, client_id)
        sensor = self._sensor(tags, now_ms)
        sensor.rate.record(value, now_ms)
        sensor.last_record_ms = now_ms
        return sensor, tags

    def _bounded(self, throttle_ms: int) -> int:
        """Hook for :class:`ClientRequestQuotaManager`'s cap; produce and fetch are uncapped."""
        return throttle_ms

    def record_and_get_throttle_time_ms(self, user: str, client_id: str, value: float, now_ms: int) -> int:
        """Records *value* for the connection and returns how long to throttle it (``maybeRecordAndGetThrottleTimeMs``).

        Args:
            user: the principal's name (``ANONYMOUS`` on an unauthenticated listener).
            client_id: the request header's client id.
            value: what this quota type measures for the request.
            now_ms: the time of recording.

        Returns:
            0 while the rate is within the quota (or no quota of this type was
            ever configured: then nothing is recorded); else Kafka's throttle
            time in milliseconds (> 0).
        """
        if not self.quotas_enabled:
            return 0
        sensor, tags = self._record(user, client_id, value, now_ms)
        bound = self._quota_limit(tags)
        if bound is None:
            return 0
        observed = sensor.rate.measure(now_ms)
        if observed <= bound:
            return 0
        throttle = self._bounded(throttle_time_ms(observed, bound, sensor.rate.window_size_ms(now_ms)))
        return max(_long_to_int(throttle), 0)

    def record_no_throttle(self, user: str, client_id: str, value: float, now_ms: int) -> None:
        """Records without checking the quota (``recordNoThrottle``); the next checked record sees it."""
        self._record(user, client_id, value, now_ms)

    def unrecord(self, user: str, client_id: str, value: float, now_ms: int) -> None:
        """Takes back a recorded *value* (``unrecordQuotaSensor``): a throttled fetch returns no data.

        Kafka records ``-value`` into the current sample, so the sum comes back
        to what it was (if the window has moved on, the new sample goes negative).
        It does so whether or not this type has quotas (a fetch throttled by the
        request quota unrecords its bytes anyway), creating the sensor if needed.
        """
        self._record(user, client_id, -value, now_ms)

    def max_value_in_quota_window(self, user: str, client_id: str) -> float:
        """The most a single record can be without being throttled for sure (``getMaxValueInQuotaWindow``).

        ``quota × (quota.window.num − 1) × quota.window.size.seconds``: Kafka caps
        a consumer's fetch ``max_bytes`` with it.  ``math.inf`` when no quota
        applies (Kafka: ``Double.MaxValue``; the caller clamps to an int).
        """
        if not self.quotas_enabled:
            return math.inf
        bound = self.quota_for(user, client_id)
        if bound is None:
            return math.inf
        return bound * (self.num_samples - 1) * self.window_size_s

    def observed_rate(self, user: str, client_id: str, now_ms: int) -> float | None:
        """The connection's sensor's rate now (None: no sensor); for metrics and tests."""
        sensor = self._sensors.get(self.metric_tags(user, client_id))
        return None if sensor is None else sensor.rate.measure(now_ms)

    # ----------------------------------------------------------------- memory

    @property
    def sensor_count(self) -> int:
        """How many sensors are kept."""
        return len(self._sensors)

    def expire(self, now_ms: int) -> int:
        """Drops the sensors nothing recorded into for over an hour (Kafka's ``ExpireSensorTask``, every 30 s).

        Returns:
            How many were dropped.  A dropped sensor's connection starts afresh.
        """
        stale = [tags for tags, s in self._sensors.items() if now_ms - s.last_record_ms > self._expiration_ms]
        for tags in stale:
            del self._sensors[tags]
        return len(stale)


def nanos_to_percentage(nanos: int) -> float:
    """Thread time as recorded by request quotas: nanoseconds × 100 / 10⁹ (a rate of it is a % of one thread)."""
    return nanos * _NANOS_TO_PERCENTAGE_PER_SECOND


class ClientRequestQuotaManager(ClientQuotaManager):
    """``ClientRequestQuotaManager``: ``request_percentage`` of one thread's time; throttles capped at one window.

    Args:
        num_samples, window_size_s, inactive_sensor_expiration_s: as :class:`ClientQuotaManager`.
        (No static default: Kafka has none for request quotas.)
    """

    def __init__(
        self,
        *,
        num_samples: int = DEFAULT_NUM_QUOTA_SAMPLES,
        window_size_s: int = DEFAULT_QUOTA_WINDOW_SIZE_SECONDS,
        inactive_sensor_expiration_s: int = INACTIVE_SENSOR_EXPIRATION_TIME_SECONDS,
    ) -> None:
        super().__init__(
            QuotaType.REQUEST,
            num_samples=num_samples,
            window_size_s=window_size_s,
            inactive_sensor_expiration_s=inactive_sensor_expiration_s,
        )
        self.max_throttle_time_ms = window_size_s * 1000

    def _bounded(self, throttle_ms: int) -> int:
        # QuotaUtils.boundedThrottleTime: a request over its share waits at most one window.
        return min(throttle_ms, self.max_throttle_time_ms)

    def record_request_time(self, user: str, client_id: str, thread_time_ns: int, now_ms: int) -> int:
        """Records a request's handling time and returns its throttle time (``maybeRecordAndGetThrottleTimeMs(request)``).

        Args:
            thread_time_ns: the time the request held the broker's thread
                (Kafka: ``requestThreadTimeNanos``, the I/O thread's).
        """
        return self.record_and_get_throttle_time_ms(user, client_id, nanos_to_percentage(thread_time_ns), now_ms)

    def record_network_thread_time(self, user: str, client_id: str, thread_time_ns: int, now_ms: int) -> None:
        """Records the time spent sending the response, unchecked (Kafka's network-thread callback).

        Only while request quotas are enabled, as Kafka installs the callback only then.
        """
        if self.quotas_enabled:
            self.record_no_throttle(user, client_id, nanos_to_percentage(thread_time_ns), now_ms)


class ClientQuotaManagers:
    """The broker's client quotas (Kafka's ``QuotaManagers``' produce, fetch and request managers).

    Args:
        num_samples: ``quota.window.num``.
        window_size_s: ``quota.window.size.seconds``.
        producer_default: ``quota.producer.default`` (None: unset).
        consumer_default: ``quota.consumer.default`` (None: unset).

    Raises:
        ValueError: as :class:`ClientQuotaManager`.
    """

    def __init__(
        self,
        *,
        num_samples: int = DEFAULT_NUM_QUOTA_SAMPLES,
        window_size_s: int = DEFAULT_QUOTA_WINDOW_SIZE_SECONDS,
        producer_default: float | None = None,
        consumer_default: float | None = None,
    ) -> None:
        self.produce = ClientQuotaManager(
            QuotaType.PRODUCE, num_samples=num_samples, window_size_s=window_size_s, static_default=producer_default
        )
        self.fetch = ClientQuotaManager(
            QuotaType.FETCH, num_samples=num_samples, window_size_s=window_size_s, static_default=consumer_default
        )
        self.request = ClientRequestQuotaManager(num_samples=num_samples, window_size_s=window_size_s)
        self._by_key: dict[str, ClientQuotaManager] = {
            m.quota_type.config_key: m for m in (self.produce, self.fetch, self.request)
        }

    def set_quota(self, entity: ClientQuotaEntity, config_key: str, value: float | None) -> None:
        """Sets or removes (None) *entity*'s quota for *config_key*.

        ``controller_mutation_rate`` is accepted and ignored (not enforced by Mafka).

        Raises:
            KeyError: not a user/client quota key.
        """
        if config_key == CONTROLLER_MUTATION_RATE:
            return
        self._by_key[config_key].set_quota(entity, value)

    def update_entity_config(self, entity: ClientQuotaEntity, config: Mapping[str, str]) -> None:
        """Applies an entity's whole stored config (Kafka's ``QuotaConfigHandler.updateQuotaConfig``).

        A quota key present sets the quota, one absent removes it; other keys
        (SCRAM credentials) are not quotas.  Called for each config change
        notification and for every stored entity at start-up.

        Raises:
            ValueError: a quota value that does not parse; nothing is changed
                (Kafka may have applied the keys it read before the bad one).
        """
        values = quota_values(config)
        for key, value in values.items():
            self.set_quota(entity, key, value)

    def expire(self, now_ms: int) -> int:
        """Expires idle sensors of all three; returns how many were dropped."""
        return self.produce.expire(now_ms) + self.fetch.expire(now_ms) + self.request.expire(now_ms)
