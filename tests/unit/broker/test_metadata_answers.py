"""Encoded Metadata answers: the bytes the codec would write, kept until the cluster changes, never leaked.

The reference is the handler as it was before answers were kept encoded:
dicts built from the metadata cache, encoded by the codec.  Every answer
here is compared with it byte for byte.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from twisted.internet import defer

from mafka.broker import metadata_answers
from mafka.broker.authorized_operations import CLUSTER_OPERATIONS, NOT_PROVIDED, TOPIC_OPERATIONS
from mafka.broker.dispatcher import Dispatcher
from mafka.broker.encoded_body import EncodedBody, response_chunks
from mafka.broker.handlers import metadata as metadata_handler
from mafka.broker.metadata_answers import MetadataAnswers
from mafka.broker.metadata_cache import MetadataCache
from mafka.broker.metadata_encoding import (
    VERSIONS,
    TopicLayout,
    encode_error_topic,
    encode_head,
    encode_tail,
)
from mafka.errors import ErrorCode as E
from mafka.security.acl import AclOperation as Op
from mafka.security.acl import PatternType, ResourceType
from mafka.security.principal import KafkaPrincipal
from mafka.topics import INTERNAL_TOPICS
from mafka.wire.codec import (
    decode_body,
    decode_request,
    encode_body,
    encode_request,
    encode_response,
)
from mafka.wire.registry import API_SPECS

from .test_authz_data_path import authorizer, grant

RESPONSE = API_SPECS[3].response
TOPIC = ResourceType.TOPIC
ALICE, BOB = KafkaPrincipal("User", "alice"), KafkaPrincipal("User", "bob")


# ---------------------------------------------------------------------- a cluster


def _partition(index, leader, *, replicas=(1, 2, 3), isr=None, offline=(), epoch=5):
    return SimpleNamespace(partition_index=index, controller_epoch=1, leader=leader, leader_epoch=epoch,
                           isr=list(isr if isr is not None else replicas), zk_version=1, replicas=list(replicas),
                           offline_replicas=list(offline))


def _topic(name, partitions, topic_id=None):
    return SimpleNamespace(topic_name=name, topic_id=topic_id, partition_states=partitions)


def _broker(broker_id, *, listeners=("PLAINTEXT", "INTERNAL"), rack=None):
    return SimpleNamespace(id=broker_id, rack=rack, endpoints=[
        SimpleNamespace(listener=listener, host=f"{listener.lower()}-{broker_id}.example", port=9090 + broker_id)
        for listener in listeners
    ])


def _update(topics=(), brokers=None, controller_id=1, controller_epoch=1):
    if brokers is None:
        brokers = [_broker(1, rack="r1"), _broker(2, listeners=("PLAINTEXT",)), _broker(3, rack="r3")]
    return SimpleNamespace(controller_epoch=controller_epoch, controller_id=controller_id, live_brokers=brokers,
                           topic_states=list(topics))


def cluster() -> MetadataCache:
    """Three brokers (2 has no INTERNAL endpoint), five topics with every kind of partition."""
    cache = MetadataCache(1)
    cache.cluster_id = "cluster-ü"
    cache.update(_update([
        _topic("orders", [_partition(i, 1 + i % 3) for i in range(4)], bytes(range(16))),
        _topic("__consumer_offsets", [_partition(0, 2), _partition(1, 3)], bytes(range(1, 17))),
        _topic("offline", [_partition(0, -1, isr=(), offline=(2,)), _partition(1, 3, offline=(1,), epoch=9)]),
        _topic("héllo.wörld", [_partition(0, 3, replicas=(3,))], bytes(range(2, 18))),
        _topic("gone-leader", [_partition(0, 7, replicas=(7, 1))]),
    ]))
    return cache


def make_broker(cache, *, authz=None, run_blocking=None, auto=True):
    created: list = []
    b = SimpleNamespace(metadata_cache=cache, auto_create_topics=auto, auto_create_topic=created.append,
                        created=created)
    if authz is not None:
        b.authorizer = authz
    if run_blocking is not None:
        b.run_blocking = run_blocking
    return b


def connection(listener="PLAINTEXT", principal=ALICE):
    return SimpleNamespace(listener=listener, peer="127.0.0.1:5000", host="127.0.0.1", principal=principal)


def request(version, topics=None, *, by_id=(), allow=True, **flags):
    body = {"topics": None if topics is None and not by_id else
            [{"name": t} for t in topics or ()] + [{"name": None, "topic_id": i} for i in by_id],
            "allow_auto_topic_creation": allow, **flags}
    return decode_request(encode_request(3, version, 11, "client", body)[4:])


def answer_bytes(handle, req, conn) -> bytes:
    result = handle(req, conn)
    assert isinstance(result, EncodedBody), result
    return result.data()


# ---------------------------------------------------------------------- the reference


def reference(cache, version, listener, topics, *, errors=(), topic_ops=None, cluster_ops=NOT_PROVIDED):
    """The body the handler answered before: dicts from the cache, as the codec encodes them."""
    entries = []
    for topic in topics:
        parts = []
        for index in sorted(cache.partitions[topic]):
            info = cache.partitions[topic][index]
            alive = info.leader >= 0 and cache.endpoint(info.leader, listener) is not None
            parts.append({
                "error_code": E.NONE if alive else E.LEADER_NOT_AVAILABLE, "partition_index": index,
                "leader_id": info.leader if alive else -1, "leader_epoch": info.leader_epoch,
                "replica_nodes": list(info.replicas), "isr_nodes": list(info.isr),
                "offline_replicas": list(info.offline_replicas),
            })
        entries.append({"error_code": E.NONE, "name": topic, "topic_id": cache.topic_id(topic),
                        "is_internal": topic in INTERNAL_TOPICS, "partitions": parts,
                        "topic_authorized_operations": NOT_PROVIDED if topic_ops is None else topic_ops})
    entries.extend({"topic_authorized_operations": NOT_PROVIDED, "partitions": [], **e} for e in errors)
    body = {
        "throttle_time_ms": 0,
        "brokers": [{"node_id": b, "host": h, "port": p, "rack": r} for b, h, p, r in cache.alive_brokers(listener)],
        "cluster_id": cache.cluster_id, "controller_id": cache.controller_id, "topics": entries,
        "cluster_authorized_operations": cluster_ops,
    }
    return encode_body(RESPONSE, version, body)


# ---------------------------------------------------------------------- equal to the codec's bytes


@pytest.mark.parametrize("listener", ["PLAINTEXT", "INTERNAL", "NOWHERE"])
@pytest.mark.parametrize("version", list(VERSIONS))
def test_all_topics_answers_are_the_codecs_bytes_first_and_from_the_cache(version, listener):
    cache = cluster()
    handle = metadata_handler.handlers(make_broker(cache))[3]
    expected = reference(cache, version, listener, cache.topics())
    req = request(version, [] if version == 0 else None)
    assert answer_bytes(handle, req, connection(listener)) == expected
    assert answer_bytes(handle, req, connection(listener)) == expected  # the kept one


@pytest.mark.parametrize("version", list(VERSIONS))
def test_long_names_and_wide_topics_take_multi_byte_lengths_as_the_codec_writes_them(version):
    cache = MetadataCache(1)
    long_name = "t" * 200
    cache.update(_update([_topic(long_name, [_partition(i, 1 + i % 3) for i in range(300)]),
                          _topic("wide-isr", [_partition(0, 1, replicas=tuple(range(1, 140)))])]))
    handle = metadata_handler.handlers(make_broker(cache))[3]
    assert answer_bytes(handle, request(version, [] if version == 0 else None), connection()) == reference(
        cache, version, "PLAINTEXT", cache.topics())


@pytest.mark.parametrize("version", list(VERSIONS))
def test_named_topics_and_error_entries_are_the_codecs_bytes(version):
    cache = cluster()
    b = make_broker(cache)
    handle = metadata_handler.handlers(b)[3]
    handle(request(version, None if version else []), connection())  # keep every entry first
    unknown_id = bytes(15) + b"\x09"
    req = request(version, ["offline", "orders", "new-topic", "bad name!", "orders"],
                  by_id=[cache.topic_id("héllo.wörld"), unknown_id] if version >= 10 else ())
    named = ["offline", "orders"] + (["héllo.wörld"] if version >= 10 else [])
    errors = [
        {"error_code": E.LEADER_NOT_AVAILABLE, "name": "new-topic", "is_internal": False},
        {"error_code": E.INVALID_TOPIC_EXCEPTION, "name": "bad name!", "is_internal": False},
    ]
    if version >= 10:
        errors.append({"error_code": E.UNKNOWN_TOPIC_ID, "name": None if version >= 12 else "", "topic_id": unknown_id})
    assert answer_bytes(handle, req, connection()) == reference(cache, version, "PLAINTEXT", named, errors=errors)
    assert b.created == ["new-topic"]


@pytest.mark.parametrize("version", [8, 9, 10, 11, 12])
def test_authorized_operations_are_written_into_kept_entries_per_request(version):
    cache = cluster()
    handle = metadata_handler.handlers(make_broker(cache))[3]
    flags = {"include_topic_authorized_operations": True}
    if version <= 10:
        flags["include_cluster_authorized_operations"] = True
    plain = answer_bytes(handle, request(version), connection())
    with_ops = answer_bytes(handle, request(version, **flags), connection())
    cluster_ops = CLUSTER_OPERATIONS if version <= 10 else NOT_PROVIDED
    assert with_ops == reference(cache, version, "PLAINTEXT", cache.topics(), topic_ops=TOPIC_OPERATIONS,
                                 cluster_ops=cluster_ops)
    assert answer_bytes(handle, request(version), connection()) == plain  # the kept entries were not changed


def test_error_entries_and_the_envelope_alone_match_the_codec():
    for version in VERSIONS:
        layout = TopicLayout.of(version)
        brokers = [(1, "h", 1, None), (2, "host-2", 2, "rack-2")]
        for cluster_id in (None, "c"):
            entry = encode_error_topic(layout, E.UNKNOWN_TOPIC_ID, None if version >= 12 else "",
                                       topic_id=bytes(range(16)))
            data = encode_head(version, brokers, cluster_id, 3, 1) + entry + encode_tail(version, 12345)
            expected = encode_body(RESPONSE, version, {
                "brokers": [{"node_id": n, "host": h, "port": p, "rack": r} for n, h, p, r in brokers],
                "cluster_id": cluster_id, "controller_id": 3, "cluster_authorized_operations": 12345,
                "topics": [{"error_code": E.UNKNOWN_TOPIC_ID, "name": None if version >= 12 else "",
                            "topic_id": bytes(range(16)), "partitions": []}],
            })
            assert data == expected, version


# ---------------------------------------------------------------------- kept until the cluster changes


class Counting:
    """Counts the topic entries encoded (wraps the encoder the answers call)."""

    def __init__(self, monkeypatch):
        self.names: list[str] = []
        real = metadata_answers.encode_topic

        def encode_topic(layout, name, *args):
            self.names.append(name)
            return real(layout, name, *args)

        monkeypatch.setattr(metadata_answers, "encode_topic", encode_topic)

    def take(self) -> list[str]:
        names, self.names = self.names, []
        return sorted(names)


def test_a_kept_answer_encodes_nothing_and_versions_with_one_layout_share_entries(monkeypatch):
    counting = Counting(monkeypatch)
    cache = cluster()
    handle = metadata_handler.handlers(make_broker(cache))[3]
    handle(request(12), connection())
    assert counting.take() == cache.topics()
    handle(request(12), connection())
    handle(request(11), connection())  # v10-12 share a layout
    handle(request(12, ["orders"]), connection())
    assert counting.take() == []
    handle(request(12), connection("INTERNAL"))  # another listener: entries of its own
    assert counting.take() == cache.topics()


def test_a_change_re_encodes_only_the_topics_it_touched(monkeypatch):
    counting = Counting(monkeypatch)
    cache = cluster()
    handle = metadata_handler.handlers(make_broker(cache))[3]
    handle(request(12), connection())
    counting.take()

    def check():
        assert answer_bytes(handle, request(12), connection()) == reference(cache, 12, "PLAINTEXT", cache.topics())

    cache.update(_update([_topic("orders", [_partition(2, 3, epoch=6)])]))  # a leader moves
    check()
    assert counting.take() == ["orders"]
    cache.update(_update([_topic("new", [_partition(0, 1)])]))  # a new topic
    check()
    assert counting.take() == ["new"]
    cache.update(_update([_topic("new", [_partition(0, -2)])]))  # deleted
    check()
    assert counting.take() == []
    generation = cache.generation
    cache.update(_update([_topic("orders", [_partition(2, 3, epoch=6)])]))  # nothing new
    assert cache.generation == generation
    check()
    assert counting.take() == []


def test_brokers_going_and_coming_change_the_answers_of_the_topics_they_lead(monkeypatch):
    counting = Counting(monkeypatch)
    cache = cluster()
    handle = metadata_handler.handlers(make_broker(cache))[3]
    for listener in ("PLAINTEXT", "INTERNAL"):
        handle(request(9), connection(listener))
    counting.take()
    three_gone = [_broker(1, rack="r1"), _broker(2, listeners=("PLAINTEXT",))]
    cache.update(_update(brokers=three_gone))
    for listener in ("PLAINTEXT", "INTERNAL"):
        got = answer_bytes(handle, request(9), connection(listener))
        assert got == reference(cache, 9, listener, cache.topics())
    body = decode_body(RESPONSE, 9, got)
    assert [b.node_id for b in body.brokers] == [1]
    led_by_3 = ["__consumer_offsets", "héllo.wörld", "offline", "orders"]
    assert counting.take() == sorted(led_by_3 * 2)
    offline = {p.partition_index: p for t in body.topics if t.name == "héllo.wörld" for p in t.partitions}
    assert (offline[0].error_code, offline[0].leader_id) == (E.LEADER_NOT_AVAILABLE, -1)
    # Broker 2 gains an INTERNAL endpoint: only its topics change, and only on INTERNAL.
    cache.update(_update(brokers=[_broker(1, rack="r1"), _broker(2)]))
    assert answer_bytes(handle, request(9), connection("INTERNAL")) == reference(cache, 9, "INTERNAL", cache.topics())
    assert counting.take() == ["__consumer_offsets", "orders"]


def test_cluster_id_controller_and_rack_changes_are_answered_without_re_encoding_topics(monkeypatch):
    counting = Counting(monkeypatch)
    cache = cluster()
    handle = metadata_handler.handlers(make_broker(cache))[3]
    handle(request(12), connection())
    counting.take()
    cache.cluster_id = "another"
    cache.update(_update(controller_id=3, brokers=[_broker(1, rack="r9"), _broker(2, listeners=("PLAINTEXT",)),
                                                   _broker(3, rack="r3")]))
    body = decode_body(RESPONSE, 12, answer_bytes(handle, request(12), connection()))
    assert (body.cluster_id, body.controller_id, body.brokers[0].rack) == ("another", 3, "r9")
    assert counting.take() == []


def test_the_cache_counts_generations_and_stamps_topics():
    cache = MetadataCache(1)
    assert cache.generation == 0 and cache.topic_stamp("t") == -1
    cache.update(_update([_topic("t", [_partition(0, 1)]), _topic("u", [_partition(0, 2)])]))
    first = cache.generation
    assert first > 0 and cache.topic_stamp("t") == cache.topic_stamp("u") == first
    cache.update(_update([_topic("t", [_partition(0, 1)])]))  # a repeat
    assert cache.generation == first
    cache.note_leadership("u", SimpleNamespace(partition_index=0, leader=3, leader_epoch=6, isr=[3], replicas=[1, 2, 3],
                                               zk_version=2, controller_epoch=1))
    assert cache.generation == first + 1 and cache.topic_stamp("u") == first + 1 and cache.topic_stamp("t") == first
    cache.cluster_id = "x"
    cache.cluster_id = "x"
    assert cache.generation == first + 2
    cache.update(_update([_topic("t", [_partition(0, -2)])]))
    assert cache.topic_stamp("t") == -1 and cache.topics() == ["u"]


def test_a_snapshot_never_changes_though_the_cache_does():
    cache = MetadataCache(1)
    cache.update(_update([_topic("t", [_partition(0, 1), _partition(1, 2)])]))
    snapshot = cache.snapshot()
    assert cache.snapshot() is snapshot  # the same generation
    cache.update(_update([_topic("t", [_partition(0, 3, epoch=8), _partition(1, -2)]), _topic("u", [_partition(0, 1)])]))
    cache.note_leadership("t", SimpleNamespace(partition_index=0, leader=2, leader_epoch=9, isr=[2], replicas=[1, 2, 3],
                                               zk_version=2, controller_epoch=1))
    assert sorted(snapshot.partitions) == ["t"] and sorted(snapshot.partitions["t"]) == [0, 1]
    assert snapshot.partitions["t"][0].leader == 1
    assert cache.partition("t", 0).leader == 2 and cache.partition("t", 1) is None
    assert cache.snapshot().generation == cache.generation


# ---------------------------------------------------------------------- never leaked


def _secured_cache():
    cache = cluster()
    authz = authorizer()
    grant(authz, TOPIC, "*", Op.DESCRIBE, principal="User:alice")
    grant(authz, TOPIC, "orders", Op.DESCRIBE, principal="User:bob")
    return cache, authz


@pytest.mark.parametrize("order", ["alice first", "bob first"])
def test_a_principal_never_gets_from_the_cache_a_topic_it_may_not_describe(order):
    cache, authz = _secured_cache()
    handle = metadata_handler.handlers(make_broker(cache, authz=authz))[3]
    everyone = ["alice", "bob"] if order == "alice first" else ["bob", "alice"]
    for _ in range(2):
        for who in everyone:
            principal = ALICE if who == "alice" else BOB
            for version in (1, 9, 12):
                body = decode_body(RESPONSE, version, answer_bytes(handle, request(version), connection(principal=principal)))
                names = [t.name for t in body.topics]
                assert names == (cache.topics() if who == "alice" else ["orders"]), (who, version)
    # Named, bob is refused the others without their existence being revealed.
    body = decode_body(RESPONSE, 12, answer_bytes(handle, request(12, ["orders", "offline", "ghost"]), connection(principal=BOB)))
    assert [(t.name, t.error_code, len(t.partitions)) for t in body.topics] == [
        ("orders", E.NONE, 4), ("offline", E.TOPIC_AUTHORIZATION_FAILED, 0), ("ghost", E.TOPIC_AUTHORIZATION_FAILED, 0)]


def test_acls_changed_between_requests_apply_to_the_next_answer():
    cache, authz = _secured_cache()
    handle = metadata_handler.handlers(make_broker(cache, authz=authz))[3]
    assert [t.name for t in decode_body(RESPONSE, 12, answer_bytes(handle, request(12), connection(principal=BOB))).topics] == ["orders"]
    grant(authz, TOPIC, "off", Op.DESCRIBE, principal="User:bob", pattern=PatternType.PREFIXED)
    got = decode_body(RESPONSE, 12, answer_bytes(handle, request(12), connection(principal=BOB)))
    assert [t.name for t in got.topics] == ["offline", "orders"]
    grant(authz, TOPIC, "*", Op.DESCRIBE, principal="User:bob")
    got = answer_bytes(handle, request(12), connection(principal=BOB))
    assert got == reference(cache, 12, "PLAINTEXT", cache.topics())


def test_a_super_user_gets_every_topic_and_the_same_bytes():
    cache, _ = _secured_cache()
    authz = authorizer(super_users="User:root")
    handle = metadata_handler.handlers(make_broker(cache, authz=authz))[3]
    root = connection(principal=KafkaPrincipal("User", "root"))
    assert answer_bytes(handle, request(12), root) == reference(cache, 12, "PLAINTEXT", cache.topics())
    assert decode_body(RESPONSE, 12, answer_bytes(handle, request(12), connection(principal=BOB))).topics == []


# ---------------------------------------------------------------------- off the reactor


class Worker:
    """A ``run_blocking`` whose jobs the test runs when it likes."""

    def __init__(self):
        self.jobs: list = []

    def __call__(self, fn, *args):
        d = defer.Deferred()
        self.jobs.append((fn, args, d))
        return d

    def run(self):
        jobs, self.jobs = self.jobs, []
        for fn, args, d in jobs:
            d.callback(fn(*args))


def _resolved(result):
    out: list = []
    if isinstance(result, defer.Deferred):
        result.addBoth(out.append)
    else:
        out.append(result)
    return out


def test_big_builds_run_in_a_worker_and_concurrent_requests_share_one(monkeypatch):
    monkeypatch.setattr(metadata_answers, "INLINE_PARTITIONS", 3)
    counting = Counting(monkeypatch)
    cache = cluster()
    worker = Worker()
    handle = metadata_handler.handlers(make_broker(cache, run_blocking=worker))[3]
    pending = [handle(request(12), connection()) for _ in range(3)]
    assert all(isinstance(p, defer.Deferred) for p in pending) and len(worker.jobs) == 1
    results = [_resolved(p) for p in pending]
    assert results == [[], [], []] and counting.take() == []  # nothing encoded on the "reactor"
    cache.update(_update([_topic("orders", [_partition(0, 2, epoch=7)])]))  # meanwhile, a change
    worker.run()
    expected_before = results[0][0].data()
    assert all(r[0].data() == expected_before for r in results)
    assert counting.take() == cache.topics()
    # The next generation: the kept entries the worker made are reused, only the change is encoded.
    nxt = _resolved(handle(request(12), connection()))
    worker.run()
    assert nxt[0].data() == reference(cache, 12, "PLAINTEXT", cache.topics())
    assert counting.take() == ["orders"]
    assert _resolved(handle(request(12), connection()))[0].data() == nxt[0].data() and worker.jobs == []


def test_a_named_request_for_many_partitions_is_built_in_the_worker(monkeypatch):
    monkeypatch.setattr(metadata_answers, "INLINE_PARTITIONS", 3)
    cache = cluster()
    worker = Worker()
    handle = metadata_handler.handlers(make_broker(cache, run_blocking=worker))[3]
    small = handle(request(12, ["héllo.wörld"]), connection())
    assert isinstance(small, EncodedBody) and worker.jobs == []
    big = _resolved(handle(request(12, ["orders", "offline"], include_topic_authorized_operations=True), connection()))
    assert big == [] and len(worker.jobs) == 1
    worker.run()
    assert big[0].data() == reference(cache, 12, "PLAINTEXT", ["orders", "offline"], topic_ops=TOPIC_OPERATIONS)


def test_a_failed_build_fails_every_request_waiting_for_it(monkeypatch):
    monkeypatch.setattr(metadata_answers, "INLINE_PARTITIONS", 3)
    cache = cluster()
    worker = Worker()
    handle = metadata_handler.handlers(make_broker(cache, run_blocking=worker))[3]
    results = [_resolved(handle(request(12), connection())) for _ in range(2)]
    (_, _, d), = worker.jobs
    worker.jobs.clear()
    d.errback(RuntimeError("boom"))
    assert [r[0].check(RuntimeError) for r in results] == [RuntimeError, RuntimeError]
    again = _resolved(handle(request(12), connection()))  # not stuck on the failed build
    worker.run()
    assert again[0].data() == reference(cache, 12, "PLAINTEXT", cache.topics())


def test_answers_forget_a_replaced_cache():
    answers = MetadataAnswers()
    layout = TopicLayout.of(12)
    first, second = cluster(), MetadataCache(1)
    second.update(_update([_topic("orders", [_partition(0, 1)])]))
    assert answers.topic_array(first, "PLAINTEXT", layout)[0] == 5
    assert answers.topic_array(second, "PLAINTEXT", layout)[0] == 1


# ---------------------------------------------------------------------- on the wire


@pytest.mark.parametrize("version", [0, 2, 3, 8, 9, 12])
def test_an_encoded_body_is_framed_as_the_codec_frames_its_dict_and_takes_a_throttle_time(version):
    cache = cluster()
    handle = metadata_handler.handlers(make_broker(cache))[3]
    req = request(version, None if version else [])
    body = handle(req, connection())
    decoded = decode_body(RESPONSE, version, body.data())
    assert b"".join(response_chunks(req.header, body)) == encode_response(req.header, decoded)
    # The dispatcher of today encodes it as a mapping: the same bytes (the slow way).
    assert b"".join(Dispatcher({3: handle}).dispatch(req, connection())) == encode_response(req.header, decoded)
    if version >= 3:
        body["throttle_time_ms"] = 1234
        assert decode_body(RESPONSE, version, body.data()).throttle_time_ms == 1234
        assert body["throttle_time_ms"] == 1234
    else:
        with pytest.raises(KeyError):
            body["throttle_time_ms"] = 1234
    with pytest.raises(KeyError):
        body["brokers"] = []
