"""Client quotas (mafka.security.quotas): Kafka 2.8's Rate, precedence, throttle times, expiry, throttled channels.

Every expected value is worked out by hand from Kafka 2.8's ``SampledStat`` /
``Rate`` / ``ClientQuotaManager`` (11 samples of 1 s unless stated), with an
injected millisecond clock.
"""

from __future__ import annotations

import math

import pytest

from mafka.security.quota_entities import DEFAULT, ClientQuotaEntity
from mafka.security.quotas import (
    ClientQuotaManager,
    ClientQuotaManagers,
    ClientRequestQuotaManager,
    QuotaType,
    Rate,
    nanos_to_percentage,
    throttle_time_ms,
)

HOUR_MS = 3600 * 1000


def E(user: object = None, client: object = None) -> ClientQuotaEntity:  # noqa: N802  # reads as a constructor
    return ClientQuotaEntity(user, client)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- Rate


def test_a_first_record_is_measured_over_the_minimum_window_of_ten_whole_windows() -> None:
    rate = Rate()
    rate.record(500, 0)
    assert rate.window_size_ms(0) == 10_000  # 0 ms elapsed, padded to (11 - 1) windows
    assert rate.measure(0) == 50.0
    assert rate.measure(400) == 500 / 10.4  # 400 ms elapsed: 0 full windows, +10 windows


def test_samples_start_at_the_first_record_after_the_previous_window_ended() -> None:
    rate = Rate()
    rate.record(100, 0)
    rate.record(100, 999)  # same sample (started at 0)
    rate.record(100, 1000)  # new sample starting at 1000
    rate.record(100, 2999)  # 1999 ms after 1000: another sample, starting at 2999 (not aligned to 2000)
    assert [(s.last_window_ms, s.value) for s in rate._samples] == [(0, 200.0), (1000, 100.0), (2999, 100.0)]
    # elapsed 2999: 2 full windows, padded with 8 → 10999 ms
    assert rate.window_size_ms(2999) == 10_999
    assert rate.measure(2999) == 400 / 10.999


def test_windows_beyond_the_padding_count_as_elapsed_time() -> None:
    rate = Rate()
    for t in range(0, 10_001, 1000):  # 11 samples, 0 … 10000
        rate.record(100, t)
    # At 10500: oldest started at 0, 10 full windows ≥ 10: no padding.
    assert rate.window_size_ms(10_500) == 10_500
    assert rate.measure(10_500) == 1100 / 10.5


def test_obsolete_samples_are_reset_and_the_ring_is_reused() -> None:
    rate = Rate()
    rate.record(500, 0)
    rate.record(500, 2500)
    assert rate.measure(2500) == 1000 / 10.5  # 2500 ms: 2 full windows + 8
    # At 11000 the sample of 0 is 11 windows old: reset to start at 11000, its 500 gone.
    assert rate.total(11_000) == 500
    # The oldest is now the one of 2500: 8500 ms = 8 full windows, padded by 2.
    assert rate.window_size_ms(11_000) == 10_500
    assert rate.measure(11_000) == 500 / 10.5
    # 11 samples at most: a 12th record reuses the first slot.
    ring = Rate()
    for i in range(12):
        ring.record(1, i * 1000)
    assert len(ring._samples) == 11
    assert ring._samples[0].last_window_ms == 11_000 and ring._samples[0].value == 1


def test_after_a_long_silence_every_sample_is_reset_and_the_rate_is_zero() -> None:
    rate = Rate()
    rate.record(10_000, 0)
    assert rate.measure(100_000) == 0.0
    assert rate.window_size_ms(100_000) == 10_000


def test_a_rate_with_other_window_settings() -> None:
    rate = Rate(samples=3, window_ms=2000)
    rate.record(600, 0)
    assert rate.window_size_ms(0) == 4000  # (3 - 1) windows of 2 s
    assert rate.measure(0) == 150.0
    with pytest.raises(ValueError):
        Rate(samples=0)


# --------------------------------------------------------------------------- throttle time


def test_throttle_time_is_kafkas_formula_with_javas_rounding() -> None:
    # X = (O - T) / T * W
    assert throttle_time_ms(200.0, 100.0, 10_000) == 10_000
    assert throttle_time_ms(200.0, 150.0, 10_000) == 3333  # 3333.33…
    assert throttle_time_ms(3.0, 2.0, 1) == 1  # 0.5 rounds up (Math.round)
    assert throttle_time_ms(1.0, 2.0, 1) == 0  # -0.5 rounds up to 0, not away from zero
    assert throttle_time_ms(5.0, 0.0, 1000) == 2**63 - 1  # Infinity saturates as Math.round does


def test_recording_over_the_quota_returns_kafkas_throttle_time() -> None:
    m = ClientQuotaManager(QuotaType.PRODUCE)
    m.set_quota(E(None, "app"), 100)
    # 2000 bytes at t=0: rate 2000 / 10 s = 200 B/s; (200 - 100) / 100 * 10000 ms
    assert m.record_and_get_throttle_time_ms("alice", "app", 2000, 0) == 10_000
    m2 = ClientQuotaManager(QuotaType.PRODUCE)
    m2.set_quota(E(None, "app"), 150)
    assert m2.record_and_get_throttle_time_ms("alice", "app", 2000, 0) == 3333


def test_a_rate_exactly_at_the_quota_is_not_throttled() -> None:
    m = ClientQuotaManager(QuotaType.PRODUCE)
    m.set_quota(E(None, "app"), 100)
    assert m.record_and_get_throttle_time_ms("u", "app", 1000, 0) == 0  # exactly 100 B/s
    # 1001 / 10 s = 100.1 B/s: (100.1 - 100) / 100 * 10000 ms = 9.99999… → 10
    assert m.record_and_get_throttle_time_ms("u", "app", 1, 0) == 10


def test_a_first_burst_stays_over_the_quota_until_its_sample_ages_out() -> None:
    m = ClientQuotaManager(QuotaType.PRODUCE)
    m.set_quota(E(None, "app"), 100)
    assert m.record_and_get_throttle_time_ms("u", "app", 2000, 0) == 10_000
    # Kafka's formula assumes the 10 s window grows to 20 s while the client
    # waits; a window padded to 10 s does not grow until 10 s have really
    # passed, so at 10 s the rate is still 2000 B / 10 s …
    assert m.observed_rate("u", "app", 10_000) == 200.0
    assert m.record_and_get_throttle_time_ms("u", "app", 0, 10_000) == 10_000
    # … until the sample of t=0 is 11 windows old and reset.
    assert m.observed_rate("u", "app", 11_000) == 0.0
    assert m.record_and_get_throttle_time_ms("u", "app", 0, 11_000) == 0


def test_a_zero_or_negative_quota_does_not_throttle_produce_or_fetch_as_in_kafka() -> None:
    # (O - 0) / 0 = Infinity → Long.MaxValue → .toInt = -1: "not throttled" everywhere in Kafka 2.8.
    for bound in (0.0, -10.0):
        m = ClientQuotaManager(QuotaType.PRODUCE)
        m.set_quota(E(None, "app"), bound)
        assert m.record_and_get_throttle_time_ms("u", "app", 1000, 0) == 0
    # The request quota caps first (min(Long.MaxValue, 1000)): 1 s.
    r = ClientRequestQuotaManager()
    r.set_quota(E(None, "app"), 0.0)
    assert r.record_request_time("u", "app", 1_000_000, 0) == 1000


def test_request_time_is_a_percentage_of_one_thread_and_its_throttle_is_capped_at_one_window() -> None:
    assert nanos_to_percentage(1_000_000_000) == 100.0
    r = ClientRequestQuotaManager()
    r.set_quota(E(None, "app"), 50.0)
    # 2 s of thread time at once: 200 % over 10 s = 20 %/s, within 50 %.
    assert r.record_request_time("u", "app", 2_000_000_000, 0) == 0
    assert r.observed_rate("u", "app", 0) == 20.0
    # 5 s more: 700 / 10 = 70 %/s → (70 - 50) / 50 * 10000 = 4000 ms, capped at 1000.
    assert r.record_request_time("u", "app", 5_000_000_000, 0) == 1000
    # Network-thread time is recorded without a check and counts for the next request.
    r2 = ClientRequestQuotaManager()
    r2.set_quota(E(None, "app"), 50.0)
    r2.record_network_thread_time("u", "app", 5_000_000_000, 0)
    assert r2.record_request_time("u", "app", 1_000_000_000, 0) == 1000  # 60 %/s → 2000 capped


def test_fetch_unrecord_takes_back_the_bytes_of_a_throttled_fetch() -> None:
    m = ClientQuotaManager(QuotaType.FETCH)
    m.set_quota(E(None, "app"), 100)
    assert m.record_and_get_throttle_time_ms("u", "app", 900, 0) == 0
    assert m.record_and_get_throttle_time_ms("u", "app", 500, 0) == 4000  # 140 B/s
    m.unrecord("u", "app", 500, 0)  # the throttled fetch returned nothing
    assert m.observed_rate("u", "app", 0) == 90.0
    assert m.record_and_get_throttle_time_ms("u", "app", 100, 0) == 0  # exactly 100


def test_the_largest_fetch_is_the_quota_over_the_retained_whole_windows() -> None:
    m = ClientQuotaManager(QuotaType.FETCH)
    assert m.max_value_in_quota_window("u", "app") == math.inf  # no quotas at all
    m.set_quota(E(None, "app"), 1000)
    assert m.max_value_in_quota_window("u", "app") == 1000 * 10 * 1
    assert m.max_value_in_quota_window("u", "other") == math.inf
    m3 = ClientQuotaManager(QuotaType.FETCH, num_samples=5, window_size_s=2)
    m3.set_quota(E(None, DEFAULT), 1000)
    assert m3.max_value_in_quota_window("u", "any") == 1000 * 4 * 2


# --------------------------------------------------------------------------- a producer at 3× its quota


def _simulate(quota: float, batch: int, interval_ms: int, until_ms: int) -> tuple[list[tuple[int, int]], int]:
    """A producer wanting batch/interval (3× the quota), waiting out each throttle (KIP-219)."""
    m = ClientQuotaManager(QuotaType.PRODUCE)
    m.set_quota(E("alice", None), quota)
    sends: list[tuple[int, int]] = []
    throttles = 0
    t = 0
    while t < until_ms:
        throttle = m.record_and_get_throttle_time_ms("alice", "producer-1", batch, t)
        sends.append((t, batch))
        throttles += throttle > 0
        t += max(interval_ms, throttle)
    return sends, throttles


def _rate(sends: list[tuple[int, int]], start_ms: int, end_ms: int) -> float:
    return sum(size for t, size in sends if start_ms <= t < end_ms) / ((end_ms - start_ms) / 1000)


def test_a_producer_at_three_times_its_quota_is_held_to_it() -> None:
    quota = 1000.0
    sends, throttles = _simulate(quota, batch=30, interval_ms=10, until_ms=330_000)  # wants 3000 B/s
    assert throttles > 100
    # First 30 s: within 10 % of the quota once Kafka's head start is counted — a
    # new sensor's rate is divided by at least (11 - 1) windows, so the first
    # burst may reach 10 s × quota before any throttle.
    head_start = quota * 10
    first = sum(size for t, size in sends if t < 30_000)
    assert 0.9 * quota * 30 <= first <= 1.1 * quota * 30 + head_start
    assert first - quota * 30 <= head_start
    # Once the windows are full, ten consecutive 30 s spans average within 2 % of the quota …
    assert _rate(sends, 30_000, 330_000) == pytest.approx(quota, rel=0.02)
    # … while single spans swing (Kafka 2.8's Rate resets whole samples as they age out,
    # the "rate metric spikes" fixed only in Kafka 3.8, apache/kafka#15889).
    spans = [_rate(sends, a, a + 30_000) for a in range(30_000, 300_001, 30_000)]
    assert all(0.75 * quota <= r <= 1.15 * quota for r in spans), spans


def test_an_unthrottled_producer_would_have_sent_three_times_the_quota() -> None:
    # The control for the test above: the same producer without a quota.
    m = ClientQuotaManager(QuotaType.PRODUCE)
    m.set_quota(E("someone-else", None), 1.0)  # quotas enabled, none for alice
    t, sent = 0, 0
    while t < 30_000:
        assert m.record_and_get_throttle_time_ms("alice", "producer-1", 30, t) == 0
        sent += 30
        t += 10
    assert sent / 30 == 3000.0


# --------------------------------------------------------------------------- precedence


ALL_LEVELS = [
    (E("alice", "app"), 1.0),  # /config/users/alice/clients/app
    (E("alice", DEFAULT), 2.0),  # /config/users/alice/clients/<default>
    (E("alice", None), 3.0),  # /config/users/alice
    (E(DEFAULT, "app"), 4.0),  # /config/users/<default>/clients/app
    (E(DEFAULT, DEFAULT), 5.0),  # /config/users/<default>/clients/<default>
    (E(DEFAULT, None), 6.0),  # /config/users/<default>
    (E(None, "app"), 7.0),  # /config/clients/app
    (E(None, DEFAULT), 8.0),  # /config/clients/<default>
]


def test_the_most_specific_quota_applies_in_kafkas_order() -> None:
    m = ClientQuotaManager(QuotaType.PRODUCE, static_default=9)
    for entity, bound in ALL_LEVELS:
        m.set_quota(entity, bound)
    # Remove the levels one by one from the top: the next one applies.
    expected_tags = [("alice", "app"), ("alice", "app"), ("alice", ""), ("alice", "app"),
                     ("alice", "app"), ("alice", ""), ("", "app"), ("", "app")]
    for (entity, bound), tags in zip(ALL_LEVELS, expected_tags, strict=True):
        assert m.quota_for("alice", "app") == bound, entity
        assert m.metric_tags("alice", "app") == tags, entity
        m.set_quota(entity, None)
    assert m.quota_for("alice", "app") == 9.0  # quota.producer.default, still honoured by 2.8
    assert m.metric_tags("alice", "app") == ("", "app")


@pytest.mark.parametrize(
    ("configured", "user", "client", "quota"),
    [
        # other users and clients fall through to the defaults
        ([(E("alice", "app"), 1.0), (E(DEFAULT, None), 6.0)], "bob", "app", 6.0),
        ([(E("alice", "app"), 1.0), (E(None, DEFAULT), 8.0)], "bob", "app", 8.0),
        ([(E("alice", "app"), 1.0), (E(None, DEFAULT), 8.0)], "alice", "other", 8.0),
        # a user quota beats a client-id quota of the same client
        ([(E("alice", None), 3.0), (E(None, "app"), 7.0)], "alice", "app", 3.0),
        ([(E("alice", None), 3.0), (E(None, "app"), 7.0)], "bob", "app", 7.0),
        # <default> user beats a specific client-id
        ([(E(DEFAULT, None), 6.0), (E(None, "app"), 7.0)], "bob", "app", 6.0),
        # (user, <default>) beats (<default>, client-id)
        ([(E("alice", DEFAULT), 2.0), (E(DEFAULT, "app"), 4.0)], "alice", "app", 2.0),
        ([(E("alice", DEFAULT), 2.0), (E(DEFAULT, "app"), 4.0)], "bob", "app", 4.0),
        # nothing matches
        ([(E("alice", None), 3.0)], "bob", "app", None),
        # a user called "<default>" is not the default user
        ([(E("<default>", None), 3.0)], "bob", "app", None),
        ([(E("<default>", None), 3.0)], "<default>", "app", 3.0),
    ],
)
def test_precedence_cases(configured: list[tuple[ClientQuotaEntity, float]], user: str, client: str,
                          quota: float | None) -> None:
    m = ClientQuotaManager(QuotaType.FETCH)
    for entity, bound in configured:
        m.set_quota(entity, bound)
    assert m.quota_for(user, client) == quota


def test_with_client_id_quotas_only_all_users_of_a_client_id_share_one_sensor() -> None:
    m = ClientQuotaManager(QuotaType.PRODUCE)
    m.set_quota(E(None, "app"), 100)
    assert m.metric_tags("alice", "app") == m.metric_tags("bob", "app") == ("", "app")
    assert m.record_and_get_throttle_time_ms("alice", "app", 1000, 0) == 0
    assert m.record_and_get_throttle_time_ms("bob", "app", 1000, 0) == 10_000  # 200 B/s together
    assert m.sensor_count == 1


def test_with_user_quotas_only_all_clients_of_a_user_share_one_sensor() -> None:
    m = ClientQuotaManager(QuotaType.PRODUCE)
    m.set_quota(E("alice", None), 100)
    assert m.metric_tags("alice", "a") == m.metric_tags("alice", "b") == ("alice", "")
    assert m.record_and_get_throttle_time_ms("alice", "a", 1000, 0) == 0
    assert m.record_and_get_throttle_time_ms("alice", "b", 1000, 0) == 10_000
    # bob has no quota but records into his own sensor (quotas are enabled)
    assert m.record_and_get_throttle_time_ms("bob", "a", 10**9, 0) == 0
    assert m.sensor_count == 2


def test_user_client_quotas_keep_clients_of_a_user_apart() -> None:
    m = ClientQuotaManager(QuotaType.PRODUCE)
    m.set_quota(E("alice", DEFAULT), 100)
    assert m.metric_tags("alice", "a") == ("alice", "a")
    assert m.record_and_get_throttle_time_ms("alice", "a", 1000, 0) == 0
    assert m.record_and_get_throttle_time_ms("alice", "b", 1000, 0) == 0


def test_the_kinds_of_quota_ever_configured_stay_in_force_after_removal() -> None:
    m = ClientQuotaManager(QuotaType.PRODUCE)
    assert not m.quotas_enabled
    assert m.record_and_get_throttle_time_ms("u", "c", 10**9, 0) == 0
    assert m.sensor_count == 0  # nothing recorded while no quota was ever set
    m.set_quota(E("u", None), 5)
    m.set_quota(E("u", None), None)
    assert m.quotas_enabled and m.metric_tags("u", "c") == ("u", "")
    m.set_quota(E(None, "c"), 5)
    m.set_quota(E(None, "c"), None)
    # user and client-id kinds both configured once: the multi-level tags, nothing matches → client-id
    assert m.metric_tags("u", "c") == ("", "c")


def test_the_static_default_enables_client_id_quotas() -> None:
    m = ClientQuotaManager(QuotaType.FETCH, static_default=100)
    assert m.quotas_enabled and m.quota_for("anyone", "any") == 100.0
    assert m.record_and_get_throttle_time_ms("anyone", "any", 2000, 0) == 10_000
    assert not ClientQuotaManager(QuotaType.FETCH, static_default=2**63 - 1).quotas_enabled
    # An empty client-id without user quotas gets no quota at all (Kafka's tags ("", "")).
    assert m.quota_for("anyone", "") is None


# --------------------------------------------------------------------------- updates and expiry


def test_quota_changes_apply_to_existing_sensors() -> None:
    m = ClientQuotaManager(QuotaType.PRODUCE)
    m.set_quota(E(None, "app"), 100)
    assert m.record_and_get_throttle_time_ms("u", "app", 2000, 0) == 10_000  # 200 B/s
    m.set_quota(E(None, "app"), 400)
    assert m.record_and_get_throttle_time_ms("u", "app", 0, 0) == 0
    m.set_quota(E(None, "app"), 50)
    assert m.record_and_get_throttle_time_ms("u", "app", 0, 0) == 30_000  # (200 - 50) / 50 * 10 s
    m.set_quota(E(None, DEFAULT), 150)  # a default does not override the specific quota
    assert m.record_and_get_throttle_time_ms("u", "app", 0, 0) == 30_000
    m.set_quota(E(None, "app"), None)  # the default now applies to the same sensor
    assert m.record_and_get_throttle_time_ms("u", "app", 0, 0) == 3333
    m.set_quota(E(None, DEFAULT), None)
    assert m.record_and_get_throttle_time_ms("u", "app", 0, 0) == 0
    assert m.sensor_count == 1


def test_idle_sensors_expire_after_an_hour() -> None:
    m = ClientQuotaManager(QuotaType.PRODUCE)
    m.set_quota(E(None, DEFAULT), 100)
    m.record_and_get_throttle_time_ms("u", "old", 10, 0)
    m.record_and_get_throttle_time_ms("u", "new", 10, 1_000_000)
    assert m.expire(HOUR_MS) == 0  # exactly an hour: not yet (Kafka: elapsed > expiry)
    assert m.expire(HOUR_MS + 1) == 1
    assert m.sensor_count == 1 and m.observed_rate("u", "old", HOUR_MS + 1) is None
    # A client coming back starts with a fresh rate.
    assert m.record_and_get_throttle_time_ms("u", "old", 1000, HOUR_MS + 2) == 0
    assert m.observed_rate("u", "old", HOUR_MS + 2) == 100.0


def test_quota_managers_apply_an_entity_config_from_zookeeper() -> None:
    q = ClientQuotaManagers()
    alice = E("alice", None)
    q.update_entity_config(alice, {"producer_byte_rate": "1024", "request_percentage": "50.5",
                                   "controller_mutation_rate": "10", "SCRAM-SHA-256": "salt=…"})
    assert (q.produce.quota_for("alice", "c"), q.fetch.quota_for("alice", "c"),
            q.request.quota_for("alice", "c")) == (1024.0, None, 50.5)
    with pytest.raises(ValueError):
        q.update_entity_config(alice, {"producer_byte_rate": "10.5", "consumer_byte_rate": "7"})
    assert q.produce.quota_for("alice", "c") == 1024.0 and q.fetch.quota_for("alice", "c") is None
    q.update_entity_config(alice, {"consumer_byte_rate": "7"})  # keys gone from the config are removed
    assert (q.produce.quota_for("alice", "c"), q.fetch.quota_for("alice", "c")) == (None, 7.0)
    q.set_quota(E(None, DEFAULT), "request_percentage", 20.0)
    assert q.request.quota_for("bob", "c") == 20.0
    with pytest.raises(KeyError):
        q.set_quota(alice, "SCRAM-SHA-256", 1.0)
    q.produce.record_and_get_throttle_time_ms("x", "y", 1, 0)
    assert q.expire(HOUR_MS + 1) == 1


def test_window_settings_are_checked_like_kafkas() -> None:
    with pytest.raises(ValueError, match="quota.window.num"):
        ClientQuotaManager(QuotaType.PRODUCE, num_samples=0)
    with pytest.raises(ValueError, match="quota.window.size.seconds"):
        ClientQuotaManagers(window_size_s=0)


# --------------------------------------------------------------------------- throttled channels
