"""The broker's client quotas: the service fed from a fake ZooKeeper, its throttle decisions, the
dispatcher's use of it, and KIP-219 muting at the network edge (``task.Clock``, ``StringTransport``).

Expected throttle times are worked out by hand from Kafka's formula (``QuotaUtils.throttleTime``):
with the default 11 one-second windows a first burst is measured over 10 s (``Rate.windowSize``
pads to ``quota.window.num - 1`` whole windows), so *B* bytes against a quota of *Q* bytes/s
observe ``B / 10`` and throttle ``(B/10 - Q) / Q * 10000`` ms.
"""

from __future__ import annotations

import struct
from types import SimpleNamespace
from typing import Any

import pytest
from twisted.internet import defer, task
from twisted.internet.testing import StringTransport

from mafka.broker.client_quotas import ClientQuotaService, quota_settings
from mafka.broker.dispatcher import Dispatcher
from mafka.broker.network import Connection, KafkaProtocol
from mafka.errors import ConfigError
from mafka.security.principal import KafkaPrincipal
from mafka.security.quota_entities import DEFAULT, ClientQuotaEntity
from mafka.wire.codec import Request, decode_request, decode_response, encode_request

# --------------------------------------------------------------------------- fakes


class FakeZk:
    """``/config/<type>/<name>`` znodes in a dict; answers with fired Deferreds, as KafkaZkClient's."""

    def __init__(self, configs: dict[tuple[str, str], dict[str, str]] | None = None) -> None:
        self.configs = dict(configs or {})
        self.reads: list[tuple[str, str]] = []

    def get_all_entities_with_config(self, entity_type: str) -> defer.Deferred:
        root, _, below = entity_type.partition("/")
        prefix = f"{below}/" if below else ""
        names = {n[len(prefix):].split("/")[0] for t, n in self.configs if t == root and n.startswith(prefix)}
        return defer.succeed(sorted(names))

    def get_entity_config(self, entity_type: str, name: str) -> defer.Deferred:
        self.reads.append((entity_type, name))
        return defer.succeed(dict(self.configs.get((entity_type, name), {})))


def run(coro: Any) -> Any:
    """Runs a coroutine awaiting only fired Deferreds to its end."""
    d = defer.ensureDeferred(coro)
    out: list[Any] = []
    d.addBoth(out.append)
    assert out, "the coroutine waited on something that never fired"
    if isinstance(out[0], BaseException) or hasattr(out[0], "raiseException"):
        out[0].raiseException()
    return out[0]


class Clock:
    def __init__(self) -> None:
        self.ms = 1_000_000

    def __call__(self) -> int:
        return self.ms


def service(configs: dict[tuple[str, str], dict[str, str]] | None = None, settings: dict[str, str] | None = None,
            clock: Clock | None = None) -> ClientQuotaService:
    svc = ClientQuotaService(FakeZk(configs), SimpleNamespace(unknown=settings or {}), now_ms=clock or Clock(),
                             thread_ns=lambda: 0)
    run(svc.load())
    return svc


def request(api_key: int, version: int, body: dict[str, Any], client_id: str = "app") -> Request:
    return decode_request(encode_request(api_key, version, 7, client_id, body)[4:])


def connection(user: str = "alice", size: int = 0) -> Connection:
    conn = Connection("peer:1", "PLAINTEXT", lambda: None, principal=KafkaPrincipal("User", user))
    conn.request_size = size
    return conn


def produce_body(acks: int = 1, records: bytes = b"r" * 100) -> dict[str, Any]:
    return {"transactional_id": None, "acks": acks, "timeout_ms": 1000,
            "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": records}]}]}


def produce_response() -> dict[str, Any]:
    return {"throttle_time_ms": 0, "responses": [{"name": "t", "partition_responses": [
        {"index": 0, "error_code": 0, "base_offset": 0, "record_errors": [], "error_message": None}]}]}


def decoded(api_key: int, version: int, chunks: list[Any]) -> Any:
    frame = b"".join(bytes(c) for c in chunks)
    return decode_response(api_key, version, frame[4:])[1]


# --------------------------------------------------------------------------- static settings


def test_static_settings_as_kafkas_configdef() -> None:
    assert quota_settings(SimpleNamespace()) == quota_settings(SimpleNamespace(unknown={}))
    defaults = quota_settings(SimpleNamespace(unknown={}))
    assert (defaults.num_samples, defaults.window_size_s, defaults.producer_default, defaults.consumer_default) == (
        11, 1, None, None)
    s = quota_settings(SimpleNamespace(unknown={"quota.window.num": " 3 ", "quota.window.size.seconds": "2",
                                                "quota.producer.default": "5000",
                                                "quota.consumer.default": str(2**63 - 1)}))
    assert (s.num_samples, s.window_size_s, s.producer_default, s.consumer_default) == (3, 2, 5000, None)
    with pytest.raises(ConfigError, match="Invalid value 0 for configuration quota.window.num: Value must be at least 1"):
        quota_settings(SimpleNamespace(unknown={"quota.window.num": "0"}))
    with pytest.raises(ConfigError, match="quota.window.size.seconds: Not a number of type INT"):
        quota_settings(SimpleNamespace(unknown={"quota.window.size.seconds": "1.5"}))
    with pytest.raises(ConfigError, match="quota.producer.default: Not a number of type LONG"):
        quota_settings(SimpleNamespace(unknown={"quota.producer.default": str(2**63)}))


def test_static_producer_default_applies_to_client_ids_and_enables_recording() -> None:
    svc = service(settings={"quota.producer.default": "1000"})
    assert svc.enabled
    assert svc.managers.produce.quota_for("anyone", "any-client") == 1000.0
    assert svc.managers.fetch.quota_for("anyone", "any-client") is None


# --------------------------------------------------------------------------- configs from ZooKeeper


ZK_CONFIGS = {
    ("users", "alice"): {"producer_byte_rate": "1000", "SCRAM-SHA-256": "salt=x,stored_key=y,server_key=z,iterations=4096"},
    ("users", "<default>"): {"consumer_byte_rate": "2000"},
    ("users", "alice/clients/app"): {"request_percentage": "50.0"},
    ("users", "<default>/clients/<default>"): {"producer_byte_rate": "3000"},
    ("clients", "app"): {"consumer_byte_rate": "4000"},
    ("clients", "<default>"): {"producer_byte_rate": "5000"},
    ("topics", "t"): {"retention.ms": "1"},
}


def test_load_reads_every_user_client_and_pair_entity_defaults_included() -> None:
    svc = service(ZK_CONFIGS)
    m = svc.managers
    assert m.produce.overrides() == {
        ClientQuotaEntity("alice"): 1000.0,
        ClientQuotaEntity(DEFAULT, DEFAULT): 3000.0,
        ClientQuotaEntity(None, DEFAULT): 5000.0,
    }
    assert m.fetch.overrides() == {ClientQuotaEntity(DEFAULT): 2000.0, ClientQuotaEntity(None, "app"): 4000.0}
    assert m.request.overrides() == {ClientQuotaEntity("alice", "app"): 50.0}
    assert svc.enabled
    assert ("topics", "t") not in svc.zk.reads
    # Kafka's precedence: /config/users/alice/clients/app has no produce quota, /config/users/alice
    # comes before /config/users/<default>/clients/<default>, which comes before /config/clients/app.
    assert m.produce.quota_for("alice", "app") == 1000.0
    assert m.produce.quota_for("bob", "app") == 3000.0
    assert m.fetch.quota_for("bob", "app") == 2000.0  # /config/users/<default> before /config/clients/app


def test_no_quota_entity_leaves_quotas_disabled() -> None:
    svc = service({("topics", "t"): {"retention.ms": "1"}})
    assert not svc.enabled
    assert svc.respond(request(0, 7, produce_body()), connection(size=10**9), produce_response(), 10**12)[1] == 0
    assert svc.managers.produce.sensor_count == 0


def test_a_scram_only_user_enables_recording_as_in_kafka() -> None:
    # Kafka's UserConfigHandler updates every quota type for any user config read, which marks user
    # quotas as configured: from then on every request records (none is throttled without a bound).
    svc = service({("users", "bob"): {"SCRAM-SHA-512": "salt=x,stored_key=y,server_key=z,iterations=4096"}})
    assert svc.enabled
    svc.respond(request(0, 7, produce_body()), connection("bob", 100), produce_response(), 0)
    assert svc.managers.produce.sensor_count == 1


def test_notifications_reread_the_entity_named() -> None:
    clock = Clock()
    svc = service(clock=clock)
    assert not svc.enabled
    zk = svc.zk
    zk.configs[("users", "alice/clients/app")] = {"producer_byte_rate": "100"}
    run(svc.changed("users/alice/clients/app"))
    assert svc.enabled
    assert svc.managers.produce.quota_for("alice", "app") == 100.0
    zk.configs[("users", "alice/clients/app")] = {}
    run(svc.changed("users/alice/clients/app"))
    assert svc.managers.produce.quota_for("alice", "app") is None
    zk.configs[("clients", "my%20app")] = {"consumer_byte_rate": "7"}
    run(svc.changed("clients/my%20app"))
    assert svc.managers.fetch.overrides() == {ClientQuotaEntity(None, "my app"): 7.0}
    reads = len(zk.reads)
    run(svc.changed("topics/t"))
    run(svc.changed("users/a/b"))  # malformed: logged, nothing read
    assert len(zk.reads) == reads


def test_a_value_that_does_not_parse_leaves_the_entity_as_it_was(caplog: pytest.LogCaptureFixture) -> None:
    svc = service({("clients", "app"): {"producer_byte_rate": "100"}})
    svc.zk.configs[("clients", "app")] = {"producer_byte_rate": "1.5"}
    run(svc.changed("clients/app"))
    assert svc.managers.produce.quota_for("", "app") == 100.0
    assert "ignoring the quota config of client-id app" in caplog.text


def test_expire_drops_idle_sensors() -> None:
    clock = Clock()
    svc = service({("clients", "app"): {"producer_byte_rate": "100"}}, clock=clock)
    svc.respond(request(0, 7, produce_body()), connection(size=10), produce_response(), 0)
    assert svc.managers.produce.sensor_count == 1
    clock.ms += 3600 * 1000
    assert svc.expire() == 0
    clock.ms += 1
    assert svc.expire() >= 1 and svc.managers.produce.sensor_count == 0


# --------------------------------------------------------------------------- throttle decisions


def test_produce_records_the_request_size_and_throttles_as_kafka() -> None:
    clock = Clock()
    svc = service({("clients", "app"): {"producer_byte_rate": "1000"}}, clock=clock)
    conn = connection(size=10_000)  # 10,000 B over a padded 10 s window: exactly the quota
    chunks, throttle = svc.respond(request(0, 7, produce_body()), conn, produce_response(), 0)
    assert throttle == 0 and decoded(0, 7, chunks).throttle_time_ms == 0
    conn.request_size = 20_000  # 30,000 B / 10 s = 3,000 B/s: (3000 - 1000) / 1000 * 10,000 ms
    body = produce_response()
    chunks, throttle = svc.respond(request(0, 7, produce_body()), conn, body, 0)
    assert throttle == 20_000
    assert decoded(0, 7, chunks).throttle_time_ms == 20_000
    # Produce v0 has no throttle_time_ms: the throttle is returned (to mute) all the same.
    chunks, throttle = svc.respond(request(0, 0, produce_body()), conn, produce_response(), 0)
    assert throttle > 20_000 and decoded(0, 0, chunks).throttle_time_ms == 0  # the field's default: not sent
    # Another client id is not throttled: the quota is per client-id sensor.
    other = svc.respond(request(0, 7, produce_body(), client_id="other"), connection(size=10**6),
                        produce_response(), 0)
    assert other[1] == 0


def test_produce_acks_0_throttles_its_bandwidth_but_not_its_request_time() -> None:
    quotas = {("clients", "app"): {"producer_byte_rate": "1000", "request_percentage": "1"}}
    svc = service(quotas)
    chunks, throttle = svc.respond(request(0, 7, produce_body(acks=0)), connection(size=30_000), None, 10**9)
    assert chunks is None and throttle == 20_000
    assert svc.managers.request.sensor_count == 0  # exempt: nothing recorded
    svc = service(quotas)
    _, throttle = svc.respond(request(0, 7, produce_body(acks=1)), connection(size=1), produce_response(), 10**9)
    assert throttle == 1000  # a second of handler time (10% over 10 s) against 1%: capped at one window


def test_request_quota_throttles_any_api_capped_at_one_window() -> None:
    svc = service({("users", "alice"): {"request_percentage": "10"}})
    metadata = request(3, 9, {"topics": [], "allow_auto_topic_creation": False,
                              "include_cluster_authorized_operations": False,
                              "include_topic_authorized_operations": False})
    body = {"throttle_time_ms": 0, "brokers": [], "cluster_id": "c", "controller_id": 1, "topics": [],
            "cluster_authorized_operations": 0}
    # 0.5 s of handler time = 50% of a thread over a padded 10 s window = 5%: within 10%.
    assert svc.respond(metadata, connection(), body, 500_000_000)[1] == 0
    # 1.5 s more: 200 / 10 = 20% of a thread, (20 - 10) / 10 * 10 s = 10 s, capped at the 1 s window.
    chunks, throttle = svc.respond(metadata, connection(), dict(body), 1_500_000_000)
    assert throttle == 1000 and decoded(3, 9, chunks).throttle_time_ms == 1000
    # bob has no request quota (user quotas only: the sensor is bob's own).
    assert svc.respond(metadata, connection("bob"), dict(body), 10**10)[1] == 0


def test_cluster_actions_and_follower_fetches_are_exempt() -> None:
    svc = service({("users", "<default>"): {"request_percentage": "1", "consumer_byte_rate": "1"}})
    update_metadata = request(6, 6, {"controller_id": 1, "controller_epoch": 1, "broker_epoch": 1,
                                     "topic_states": [], "live_brokers": []})
    chunks, throttle = svc.respond(update_metadata, connection(), {"error_code": 0}, 10**10)
    assert throttle == 0 and chunks
    follower = request(1, 11, fetch_body(replica_id=2))
    _, throttle = svc.respond(follower, connection(), fetch_response(b"x" * 100_000), 10**10)
    assert throttle == 0
    assert svc.managers.request.sensor_count == 0 and svc.managers.fetch.sensor_count == 0


def fetch_body(replica_id: int = -1, max_bytes: int = 52428800, min_bytes: int = 1) -> dict[str, Any]:
    return {"replica_id": replica_id, "max_wait_ms": 500, "min_bytes": min_bytes, "max_bytes": max_bytes,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": "t", "partitions": [{"partition": 0, "current_leader_epoch": -1, "fetch_offset": 0,
                                                      "log_start_offset": -1, "partition_max_bytes": 1048576}]}],
            "forgotten_topics_data": [], "rack_id": ""}


def fetch_response(records: bytes, session_id: int = 0) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": 0, "session_id": session_id, "responses": [
        {"topic": "t", "partitions": [{"partition_index": 0, "error_code": 0, "high_watermark": 10,
                                       "last_stable_offset": 10, "log_start_offset": 0,
                                       "aborted_transactions": None, "preferred_read_replica": -1,
                                       "records": records}]}]}


def test_consumer_fetch_records_its_response_and_a_throttled_fetch_returns_nothing() -> None:
    clock = Clock()
    svc = service({("clients", "app"): {"consumer_byte_rate": "1000"}}, clock=clock)
    fetch = request(1, 11, fetch_body())
    chunks, throttle = svc.respond(fetch, connection(), fetch_response(b"x" * 5_000, session_id=9), 0)
    size = sum(map(len, chunks)) - 4  # FetchResponse.sizeOf: the body and 4 bytes; here the header's 4
    assert throttle == 0 and len(decoded(1, 11, chunks).responses) == 1
    assert svc.managers.fetch.observed_rate("alice", "app", clock.ms) == pytest.approx(size / 10)
    chunks, throttle = svc.respond(fetch, connection(), fetch_response(b"x" * 20_000, session_id=9), 0)
    # (size + size2) / 10 s against 1,000 B/s
    assert throttle > 10_000
    answer = decoded(1, 11, chunks)
    assert (answer.throttle_time_ms, answer.error_code, answer.session_id, answer.responses) == (throttle, 0, 9, [])
    # "Unrecorded": the bytes not sent do not count.
    assert svc.managers.fetch.observed_rate("alice", "app", clock.ms) == pytest.approx(size / 10)


def test_a_request_quota_throttle_also_empties_a_fetch() -> None:
    svc = service({("clients", "app"): {"request_percentage": "1"}})
    chunks, throttle = svc.respond(request(1, 11, fetch_body()), connection(), fetch_response(b"x" * 10), 10**9)
    assert throttle == 1000 and decoded(1, 11, chunks).responses == []


def test_prepare_caps_a_consumer_fetch_at_its_quota_window() -> None:
    svc = service({("clients", "app"): {"consumer_byte_rate": "1000"}},
                  settings={"quota.window.num": "3", "quota.window.size.seconds": "2"})
    fetch = request(1, 11, fetch_body(min_bytes=10**6))
    svc.prepare(fetch, connection())
    assert (fetch.body.max_bytes, fetch.body.min_bytes) == (1000 * 2 * 2, 1000 * 2 * 2)
    uncapped = request(1, 11, fetch_body(), client_id="other")
    svc.prepare(uncapped, connection())
    assert uncapped.body.max_bytes == 52428800
    follower = request(1, 11, fetch_body(replica_id=1))
    svc.prepare(follower, connection())
    assert follower.body.max_bytes == 52428800


# --------------------------------------------------------------------------- the dispatcher


class SpyQuotas:
    def __init__(self, enabled: bool, throttle: int) -> None:
        self.enabled = enabled
        self.throttle = throttle
        self.calls: list[tuple[str, int]] = []

    def prepare(self, request: Request, connection: Any) -> None:
        self.calls.append(("prepare", 0))

    def respond(self, request: Request, connection: Any, body: Any, handler_ns: int) -> tuple[Any, int]:
        self.calls.append(("respond", handler_ns))
        return [b"answer"], self.throttle


def test_the_dispatcher_skips_quotas_until_one_is_enabled() -> None:
    quotas = SpyQuotas(enabled=False, throttle=0)
    dispatcher = Dispatcher({0: lambda req, conn: produce_response()}, quotas=quotas)  # type: ignore[arg-type]
    chunks = dispatcher.dispatch(request(0, 7, produce_body()), connection())
    assert quotas.calls == [] and b"".join(chunks)[4:8] == struct.pack(">i", 7)


def test_the_dispatcher_times_the_handler_and_mutes_the_connection() -> None:
    ticks = iter([100, 350, 10**6])
    quotas = SpyQuotas(enabled=True, throttle=250)
    observed: list[float] = []
    dispatcher = Dispatcher({0: lambda req, conn: produce_response()}, quotas=quotas,  # type: ignore[arg-type]
                            thread_clock_ns=lambda: next(ticks), observe=lambda req, s: observed.append(s))
    muted: list[int] = []
    conn = Connection("p", "PLAINTEXT", lambda: None, throttle=muted.append)
    assert dispatcher.dispatch(request(0, 7, produce_body()), conn) == [b"answer"]
    assert quotas.calls == [("prepare", 0), ("respond", 250)]
    assert muted == [250] and len(observed) == 1
    # A deferred answer: timed up to the handler's return, decided when it fires.
    later: defer.Deferred = defer.Deferred()
    ticks = iter([0, 40])
    dispatcher.thread_clock_ns = lambda: next(ticks)
    dispatcher.handlers[0] = lambda req, conn: later
    d = dispatcher.dispatch(request(0, 7, produce_body()), conn)
    assert quotas.calls[-1] == ("prepare", 0)
    later.callback(produce_response())
    assert quotas.calls[-1] == ("respond", 40) and muted == [250, 250]
    assert d.result == [b"answer"]


# --------------------------------------------------------------------------- muting at the network edge


def protocol(svc: ClientQuotaService, handled: list[int]) -> tuple[KafkaProtocol, StringTransport, task.Clock]:
    def produce(req: Request, conn: Any) -> dict[str, Any]:
        handled.append(req.header.correlation_id)
        return produce_response()

    clock = task.Clock()
    proto = KafkaProtocol(Dispatcher({0: produce}, quotas=svc), max_request_size=1 << 20, idle_ms=0, clock=clock)
    transport = StringTransport()
    proto.makeConnection(transport)
    return proto, transport, clock


def produce_frame(correlation_id: int, records: bytes) -> bytes:
    return encode_request(0, 7, correlation_id, "app", produce_body(records=records))


def responses(transport: StringTransport) -> list[int]:
    data, out = transport.value(), []
    while data:
        (size,) = struct.unpack(">i", data[:4])
        out.append(decode_response(0, 7, data[4:4 + size])[1].throttle_time_ms)
        data = data[4 + size:]
    return out


def test_a_throttled_connection_reads_nothing_until_the_throttle_has_passed() -> None:
    svc = service({("clients", "app"): {"producer_byte_rate": "1000"}})
    handled: list[int] = []
    proto, transport, clock = protocol(svc, handled)
    first = produce_frame(1, b"r" * 20_000)  # ~20 kB / 10 s against 1 kB/s: ~10 s
    proto.dataReceived(first + produce_frame(2, b"r" * 10))
    [throttle] = responses(transport)
    expected = round((len(first) - 4) / 10 / 1000 * 10_000 - 10_000)  # (observed - quota) / quota * window
    assert handled == [1] and throttle == expected
    assert proto.muted and transport.producerState == "paused"
    proto.dataReceived(produce_frame(3, b"r"))  # arrives anyway (already read): waits in the buffer
    clock.advance(throttle / 1000 - 0.001)
    assert handled == [1] and proto.muted
    clock.advance(0.001)
    # Unmuted: the requests read meanwhile are served in order (each over quota again: muted again).
    assert handled == [1, 2]
    assert proto.muted and responses(transport)[1] > 0
    clock.advance(60)
    assert handled == [1, 2, 3]


def test_an_unthrottled_connection_is_never_paused() -> None:
    svc = service({("clients", "app"): {"producer_byte_rate": "1000000"}})
    handled: list[int] = []
    proto, transport, clock = protocol(svc, handled)
    proto.dataReceived(produce_frame(1, b"r" * 100) + produce_frame(2, b"r" * 100))
    assert handled == [1, 2] and responses(transport) == [0, 0]
    assert not proto.muted and transport.producerState == "producing" and clock.getDelayedCalls() == []


def test_closing_a_muted_connection_cancels_its_unmute_timer() -> None:
    svc = service({("clients", "app"): {"producer_byte_rate": "1000"}})
    handled: list[int] = []
    proto, transport, clock = protocol(svc, handled)
    proto.dataReceived(produce_frame(1, b"r" * 20_000) + produce_frame(2, b"r"))
    assert proto.muted and len(clock.getDelayedCalls()) == 1
    proto.close()
    assert clock.getDelayedCalls() == []
    proto.connectionLost(None)
    clock.advance(60)
    assert handled == [1]


def test_the_throttle_counts_from_the_decision_not_from_the_end_of_the_write() -> None:
    clock = task.Clock()
    proto = KafkaProtocol(Dispatcher({}), max_request_size=1 << 20, idle_ms=0, clock=clock)
    transport = StringTransport()
    proto.makeConnection(transport)
    assert proto.connection is not None
    proto.connection.throttle(1000)
    proto.connection.throttle(400)  # an earlier end does not shorten it
    proto.busy = True
    clock.advance(0.7)  # the response took 0.7 s to go out
    proto._done(None)
    assert proto.muted
    clock.advance(0.3)
    assert not proto.muted and transport.producerState == "producing"


# --------------------------------------------------------------------------- DescribeClientQuotas / AlterClientQuotas


class WritableZk(FakeZk):
    def __init__(self, configs: dict[tuple[str, str], dict[str, str]] | None = None) -> None:
        super().__init__(configs)
        self.notifications: list[str] = []

    def set_entity_config(self, entity_type: str, name: str, config: dict[str, str]) -> defer.Deferred:
        self.configs[(entity_type, name)] = dict(config)
        self.notifications.append(f"{entity_type}/{name}")
        return defer.succeed(f"/config/changes/config_change_{len(self.notifications):010d}")


def quota_handlers(zk: WritableZk, allowed: bool = True, asked: list[Any] | None = None) -> dict[int, Any]:
    """The handlers of a broker whose authorizer answers *allowed* to every cluster check (noted in *asked*)."""
    from mafka.broker.handlers import client_quotas

    def authorize_cluster(conn: Any, operation: Any) -> bool:
        if asked is not None:
            asked.append(operation)
        return allowed

    authorizer = SimpleNamespace(enabled=True, authorize_cluster=authorize_cluster,
                                 authorize=lambda conn, op, rtype, name: allowed)
    return client_quotas.handlers(SimpleNamespace(zk=zk, authorizer=authorizer))


def answer(handler: Any, req: Request) -> Any:
    out: list[Any] = []
    handler(req, connection()).addBoth(out.append)
    assert out, "the handler did not answer"
    return out[0]


def describe_request(*components: tuple[str, int, str | None], strict: bool = False) -> Request:
    return request(48, 1, {"components": [{"entity_type": t, "match_type": m, "match": n} for t, m, n in components],
                           "strict": strict})


def alter_request(*entries: tuple[list[tuple[str, str | None]], list[tuple[str, float | None]]],
                  validate_only: bool = False) -> Request:
    return request(49, 1, {"entries": [
        {"entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
         "ops": [{"key": k, "value": v or 0.0, "remove": v is None} for k, v in ops]}
        for entity, ops in entries], "validate_only": validate_only})


def test_alter_writes_each_entity_through_a_change_notification() -> None:
    scram = "salt=x,stored_key=y,server_key=z,iterations=4096"
    zk = WritableZk({("users", "alice"): {"SCRAM-SHA-256": scram}})
    alter = quota_handlers(zk)[49]
    result = answer(alter, alter_request(
        ([("user", "alice")], [("producer_byte_rate", 1000.0), ("request_percentage", 12.5)]),
        ([("user", "alice"), ("client-id", None)], [("consumer_byte_rate", 300.0)]),
        ([("client-id", "a b")], [("producer_byte_rate", 2.5)]),  # not a LONG: refused, nothing written
    ))
    assert [(e["error_code"], e["error_message"]) for e in result["entries"]] == [
        (0, None), (0, None), (42, "Configuration producer_byte_rate must be a LONG value")]
    assert result["entries"][1]["entity"] == [{"entity_type": "client-id", "entity_name": None},
                                              {"entity_type": "user", "entity_name": "alice"}]
    assert zk.configs[("users", "alice")] == {"SCRAM-SHA-256": scram, "producer_byte_rate": "1000",
                                              "request_percentage": "12.5"}
    assert zk.configs[("users", "alice/clients/<default>")] == {"consumer_byte_rate": "300"}
    assert zk.notifications == ["users/alice", "users/alice/clients/<default>"]
    # validate_only: checked, not written; an entity given twice answers once.
    result = answer(alter, alter_request(([("user", "alice")], [("producer_byte_rate", None)]),
                                         ([("user", "alice")], [("producer_byte_rate", 5.0)]), validate_only=True))
    assert [(e["error_code"], e["entity"]) for e in result["entries"]] == [
        (0, [{"entity_type": "user", "entity_name": "alice"}])]
    assert zk.configs[("users", "alice")]["producer_byte_rate"] == "1000" and len(zk.notifications) == 2


def test_describe_answers_the_matching_quota_entities() -> None:
    zk = WritableZk({("users", "alice"): {"producer_byte_rate": "1000", "SCRAM-SHA-256": "x"},
                     ("users", "bob"): {"SCRAM-SHA-256": "x"},
                     ("users", "alice/clients/app"): {"request_percentage": "12.5"},
                     ("clients", "<default>"): {"consumer_byte_rate": "5"}})
    describe = quota_handlers(zk)[48]
    result = answer(describe, describe_request(("user", 0, "alice")))
    assert result["error_code"] == 0
    assert [(e["entity"], e["values"]) for e in result["entries"]] == [
        ([{"entity_type": "user", "entity_name": "alice"}], [{"key": "producer_byte_rate", "value": 1000.0}]),
        ([{"entity_type": "user", "entity_name": "alice"}, {"entity_type": "client-id", "entity_name": "app"}],
         [{"key": "request_percentage", "value": 12.5}]),
    ]
    result = answer(describe, describe_request(("client-id", 1, None), strict=True))
    assert [e["entity"] for e in result["entries"]] == [[{"entity_type": "client-id", "entity_name": None}]]
    result = answer(describe, describe_request(("ip", 2, None)))
    assert (result["error_code"], result["entries"]) == (35, None)
    assert result["error_message"].startswith("IP connection rate quotas")


def test_both_apis_need_the_cluster_configs_acls() -> None:
    from mafka.security.acl import AclOperation

    zk = WritableZk({("clients", "app"): {"producer_byte_rate": "1"}})
    asked: list[Any] = []
    handlers = quota_handlers(zk, allowed=False, asked=asked)
    result = answer(handlers[48], describe_request())
    assert (result["error_code"], result["error_message"], result["entries"]) == (31, None, None)
    result = answer(handlers[49], alter_request(([("client-id", "app")], [("producer_byte_rate", 5.0)]),
                                                ([("client-id", "app")], [("producer_byte_rate", 6.0)])))
    assert [(e["error_code"], e["error_message"]) for e in result["entries"]] == [
        (31, "Cluster authorization failed.")] * 2
    assert zk.notifications == [] and zk.configs[("clients", "app")] == {"producer_byte_rate": "1"}
    assert asked == [AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS]
