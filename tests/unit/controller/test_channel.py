"""mafka.controller.channel: request bodies, the per-state-change batch, and the per-broker queues."""

from __future__ import annotations

from typing import Any

import pytest
from twisted.internet import defer
from twisted.internet.defer import Deferred
from twisted.internet.task import Clock

from mafka.controller.channel import (
    LEADER_AND_ISR,
    STOP_REPLICA,
    UPDATE_METADATA,
    ControllerBrokerRequestBatch,
    ControllerChannelManager,
    broker_endpoint,
    update_metadata_partition_state,
)
from mafka.controller.context import ControllerContext
from mafka.coordination.znodes import BrokerRegistration, LeaderIsrAndControllerEpoch
from mafka.errors import ErrorCode
from mafka.interbroker.connection import ConnectionLostError
from mafka.wire.codec import decode_body, encode_body
from mafka.wire.registry import spec_for

VERSIONS = {LEADER_AND_ISR: 5, STOP_REPLICA: 1, UPDATE_METADATA: 7}


def wire(api_key: int, body: Any, version: int | None = None) -> Any:
    """The body as a broker decodes it (fails if it does not encode)."""
    version = VERSIONS[api_key] if version is None else version
    spec = spec_for(api_key, version)
    return decode_body(spec.request, version, encode_body(spec.request, version, body))


def registration(b: int, rack: str | None = None) -> BrokerRegistration:
    return BrokerRegistration(
        b,
        {"PLAINTEXT": ("PLAINTEXT", f"h{b}", 9092), "SECURE": ("SSL", f"s{b}", 9093)},
        rack=rack,
    )


def context(*brokers: int, epochs: dict[int, int] | None = None) -> ControllerContext:
    ctx = ControllerContext()
    ctx.epoch = 7
    ctx.set_live_brokers(
        {
            b: (registration(b, rack=f"r{b}" if b % 2 else None), (epochs or {}).get(b, 100 + b))
            for b in brokers
        }
    )
    return ctx


class Recorder:
    """Connections that record what each broker receives and answer with a canned response."""

    def __init__(self) -> None:
        self.sent: dict[int, list[tuple[int, Any]]] = {}
        self.versions: dict[int, list[tuple[int, int]]] = {}
        self.responses: dict[int, Any] = {}
        self.closed: set[int] = set()
        self.opened: dict[int, tuple[str, int]] = {}

    def factory(self, broker_id: int, host: str, port: int) -> Any:
        self.opened[broker_id] = (host, port)
        recorder = self

        class Conn:
            def request(self, api_key: int, version: int, body: Any) -> Deferred[Any]:
                # LeaderAndIsr drops to v4 (topics by name) when a topic in it has no topic id
                assert version == VERSIONS[api_key] or (api_key == LEADER_AND_ISR and version == 4)
                recorder.versions.setdefault(broker_id, []).append((api_key, version))
                recorder.sent.setdefault(broker_id, []).append((api_key, wire(api_key, body, version)))
                return defer.succeed(
                    recorder.responses.get(api_key, {"error_code": 0, "partition_errors": []})
                )

            def close(self) -> None:
                recorder.closed.add(broker_id)

        return Conn()


def setup(
    *brokers: int, **kwargs: Any
) -> tuple[ControllerContext, Recorder, ControllerChannelManager, ControllerBrokerRequestBatch]:
    ctx = context(*brokers)
    rec = Recorder()
    channel = ControllerChannelManager(Clock(), 1, connection_factory=rec.factory)
    channel.startup(ctx.live_brokers)
    batch = ControllerBrokerRequestBatch(1, ctx, channel, **kwargs)
    return ctx, rec, channel, batch


STATE = LeaderIsrAndControllerEpoch(2, 4, (2, 3), 6, zk_version=9)


def test_leader_and_isr_goes_to_its_brokers_and_update_metadata_to_all() -> None:
    ctx, rec, _, batch = setup(1, 2, 3)
    ctx.update_assignment(("t", 0), (2, 3))
    ctx.put_leadership(("t", 0), STATE)
    batch.new_batch()
    batch.add_leader_and_isr([2, 3], ("t", 0), STATE, (2, 3), is_new=False)
    batch.add_leader_and_isr([3], ("t", 0), STATE, (2, 3), is_new=True)
    batch.send_requests(ctx.epoch)
    assert batch.is_empty

    assert [key for key, _ in rec.sent[1]] == [UPDATE_METADATA]
    assert [key for key, _ in rec.sent[2]] == [LEADER_AND_ISR, UPDATE_METADATA]
    for b in (2, 3):
        lai = rec.sent[b][0][1]
        assert (lai.controller_id, lai.controller_epoch, lai.broker_epoch) == (1, 7, 100 + b)
        ps = lai.topic_states[0].partition_states[0]
        assert (lai.topic_states[0].topic_name, ps.partition_index) == ("t", 0)
        assert (
            ps.leader,
            ps.leader_epoch,
            list(ps.isr),
            ps.zk_version,
            list(ps.replicas),
            ps.controller_epoch,
        ) == (2, 4, [2, 3], 9, [2, 3], 6)
        assert ps.is_new == (b == 3)
        assert [(ll.broker_id, ll.host_name, ll.port) for ll in lai.live_leaders] == [
            (2, "h2", 9092)
        ]
    for b in (1, 2, 3):
        umr = rec.sent[b][-1][1]
        assert umr.broker_epoch == 100 + b and umr.controller_epoch == 7
        ps = umr.topic_states[0].partition_states[0]
        assert (ps.leader, list(ps.isr), list(ps.offline_replicas)) == (2, [2, 3], [])


def test_update_metadata_lists_every_listener_rack_and_offline_replicas() -> None:
    ctx, rec, _, batch = setup(1, 2)
    ctx.update_assignment(("t", 0), (2, 5))
    ctx.put_leadership(("t", 0), STATE)
    batch.add_update_metadata([1, 2, 9], [("t", 0), ("t", 1)])
    batch.send_requests(ctx.epoch)
    assert sorted(rec.sent) == [1, 2], "broker 9 is not live"
    umr = rec.sent[1][0][1]
    brokers = {b.id: b for b in umr.live_brokers}
    assert sorted(brokers) == [1, 2]
    assert brokers[1].rack == "r1" and brokers[2].rack is None
    assert {(e.listener, e.host, e.port, e.security_protocol) for e in brokers[2].endpoints} == {
        ("PLAINTEXT", "h2", 9092, 0),
        ("SECURE", "s2", 9093, 1),
    }
    [ts] = umr.topic_states
    assert [ps.partition_index for ps in ts.partition_states] == [0], "t-1 has no leader yet"
    assert list(ts.partition_states[0].offline_replicas) == [5]


def test_partition_state_during_deletion_has_leader_minus_two() -> None:
    ctx = context(1, 2)
    ctx.update_assignment(("t", 0), (1, 2))
    ctx.put_leadership(("t", 0), STATE)
    assert update_metadata_partition_state(("t", 0), ctx)["leader"] == 2
    ctx.queue_topic_deletion(["t"])
    state = update_metadata_partition_state(("t", 0), ctx)
    assert (state["leader"], state["leader_epoch"], state["isr"]) == (-2, 0, [2, 3])
    assert update_metadata_partition_state(("t", 1), ctx) is None


def test_stop_replica_is_split_by_delete_flag_and_feeds_deletion() -> None:
    seen: list[tuple[int, ErrorCode, dict[Any, ErrorCode]]] = []
    ctx, rec, _, batch = setup(1, 2, on_stop_replica_response=lambda *args: seen.append(args))
    rec.responses[STOP_REPLICA] = {
        "error_code": 0,
        "partition_errors": [
            {"topic_name": "d", "partition_index": 0, "error_code": 0},
            {"topic_name": "d", "partition_index": 1, "error_code": ErrorCode.KAFKA_STORAGE_ERROR},
        ],
    }
    batch.add_stop_replica([2], ("s", 0), delete=False)
    batch.add_stop_replica([2], ("d", 0), delete=True)
    batch.add_stop_replica([2], ("d", 1), delete=False)
    batch.add_stop_replica([2], ("d", 1), delete=True)
    batch.add_stop_replica([7], ("d", 0), delete=True)
    batch.send_requests(ctx.epoch)
    bodies = [body for key, body in rec.sent[2] if key == STOP_REPLICA]
    assert [
        (b.delete_partitions, [(t.name, list(t.partition_indexes)) for t in b.topics])
        for b in bodies
    ] == [
        (False, [("s", [0])]),
        (True, [("d", [0, 1])]),
    ]
    assert all(b.broker_epoch == 102 and b.controller_epoch == 7 for b in bodies)
    assert 7 not in rec.sent
    assert seen == [
        (2, ErrorCode.NONE, {("d", 0): ErrorCode.NONE, ("d", 1): ErrorCode.KAFKA_STORAGE_ERROR})
    ]

    # A request-level error fails every partition of the request.
    seen.clear()
    rec.responses[STOP_REPLICA] = {
        "error_code": ErrorCode.STALE_BROKER_EPOCH,
        "partition_errors": [],
    }
    batch.add_stop_replica([1], ("d", 3), delete=True)
    batch.send_requests(ctx.epoch)
    assert seen == [(1, ErrorCode.STALE_BROKER_EPOCH, {("d", 3): ErrorCode.STALE_BROKER_EPOCH})]


class ManualConnection:
    def __init__(self) -> None:
        self.calls: list[tuple[int, Any, Deferred[Any]]] = []
        self.closed = False

    def request(self, api_key: int, version: int, body: Any) -> Deferred[Any]:
        d: Deferred[Any] = Deferred()
        self.calls.append((api_key, body, d))
        return d

    def close(self) -> None:
        self.closed = True


def test_one_request_in_flight_per_broker_in_order_with_retry() -> None:
    clock = Clock()
    conn = ManualConnection()
    channel = ControllerChannelManager(
        clock, 1, connection_factory=lambda b, h, p: conn, retry_backoff_s=0.5
    )
    channel.add_broker(2, registration(2))
    answers: list[Any] = []
    assert channel.send(2, UPDATE_METADATA, 5, {"n": 1}, lambda b, r: answers.append((b, r)))
    assert channel.send(2, LEADER_AND_ISR, 2, {"n": 2}, lambda b, r: answers.append((b, r)))
    assert [body["n"] for _, body, _ in conn.calls] == [1], "the second waits for the first"

    conn.calls[0][2].errback(ConnectionLostError("dropped"))
    assert len(conn.calls) == 1
    clock.advance(0.5)
    assert [body["n"] for _, body, _ in conn.calls] == [1, 1], "resent after the backoff"
    conn.calls[1][2].callback({"error_code": 0})
    assert answers == [(2, {"error_code": 0})]
    assert [body["n"] for _, body, _ in conn.calls] == [1, 1, 2]
    conn.calls[2][2].callback({"error_code": 0, "partition_errors": []})
    assert len(answers) == 2


def test_removed_broker_drops_its_requests_and_connection() -> None:
    clock = Clock()
    conn = ManualConnection()
    channel = ControllerChannelManager(clock, 1, connection_factory=lambda b, h, p: conn)
    channel.add_broker(2, registration(2))
    answers: list[Any] = []
    channel.send(2, UPDATE_METADATA, 5, {"n": 1}, lambda b, r: answers.append(r))
    channel.send(2, UPDATE_METADATA, 5, {"n": 2}, lambda b, r: answers.append(r))
    channel.remove_broker(2)
    assert conn.closed and channel.broker_ids == set()
    conn.calls[0][2].callback({"error_code": 0})
    assert answers == [] and len(conn.calls) == 1
    assert not channel.send(2, UPDATE_METADATA, 5, {"n": 3})


def test_connections_use_the_inter_broker_listener() -> None:
    rec = Recorder()
    ControllerChannelManager(Clock(), 1, connection_factory=rec.factory).startup(
        {2: registration(2)}
    )
    assert rec.opened == {2: ("h2", 9092)}
    rec = Recorder()
    ControllerChannelManager(
        Clock(), 1, connection_factory=rec.factory, listener_name="SECURE"
    ).startup({2: registration(2)})
    assert rec.opened == {2: ("s2", 9093)}
    only_ssl = BrokerRegistration(4, {"INTERNAL": ("SSL", None, 9500)})
    assert broker_endpoint(only_ssl) == ("localhost", 9500)
    with pytest.raises(KeyError):
        broker_endpoint(only_ssl, "PLAINTEXT")


def test_a_barrier_is_delivered_once_every_broker_answered_what_was_queued_before_it() -> None:
    clock = Clock()
    conns = {2: ManualConnection(), 3: ManualConnection()}
    channel = ControllerChannelManager(clock, 1, connection_factory=lambda b, h, p: conns[b])
    channel.add_broker(2, registration(2))
    channel.add_broker(3, registration(3))
    channel.send(2, UPDATE_METADATA, 5, {"n": 1})
    channel.send(3, UPDATE_METADATA, 5, {"n": 1})
    mark = channel.barrier()
    channel.send(2, UPDATE_METADATA, 5, {"n": 2})  # after the mark: not waited for
    assert not channel.delivered(mark)
    conns[2].calls[0][2].callback({"error_code": 0})
    assert not channel.delivered(mark), "broker 3 has not answered yet"
    conns[3].calls[0][2].callback({"error_code": 0})
    assert channel.delivered(mark)
    # A broker that goes away no longer holds a barrier up.
    channel.send(3, UPDATE_METADATA, 5, {"n": 3})
    mark = channel.barrier()
    assert not channel.delivered(mark)
    channel.remove_broker(3)
    conns[2].calls[1][2].callback({"error_code": 0})
    assert channel.delivered(mark)


def test_leader_and_isr_v5_carries_the_topic_id_and_the_reassignment_state() -> None:
    from mafka.coordination.znodes import uuid_bytes

    ctx, rec, _, batch = setup(1, 2, 3)
    topic_id = "AAAAAAAAAAAAAAAAAAAAAQ"
    # t-0 moves from (2, 3) to (3, 1): full set (3, 1, 2), adding 1, removing 2.
    ctx.set_topic("t", {0: (3, 1, 2)}, topic_id, adding={0: (1,)}, removing={0: (2,)})
    ctx.put_leadership(("t", 0), STATE)
    batch.new_batch()
    batch.add_leader_and_isr([1, 2, 3], ("t", 0), STATE, (3, 1, 2), is_new=False)
    batch.send_requests(ctx.epoch)
    for b in (1, 2, 3):
        lai = rec.sent[b][0][1]
        assert lai.type == 0
        ts = lai.topic_states[0]
        assert (ts.topic_name, ts.topic_id) == ("t", uuid_bytes(topic_id))
        ps = ts.partition_states[0]
        assert (list(ps.replicas), list(ps.adding_replicas), list(ps.removing_replicas)) == ([3, 1, 2], [1], [2])
        assert rec.versions[b][0] == (LEADER_AND_ISR, 5)


def test_leader_and_isr_names_topics_without_an_id_with_v4_and_its_errors_map_back_to_them() -> None:
    from mafka.controller.channel import leader_and_isr_partition_errors

    ctx, rec, _, batch = setup(1, 2, 3)
    ctx.update_assignment(("t", 0), (2, 3))
    ctx.put_leadership(("t", 0), STATE)
    batch.new_batch()
    batch.add_leader_and_isr([2], ("t", 0), STATE, (2, 3), is_new=False)
    batch.send_requests(ctx.epoch)
    assert rec.versions[2][0] == (LEADER_AND_ISR, 4)
    v4 = {"error_code": 0, "partition_errors": [{"topic_name": "t", "partition_index": 0, "error_code": 56}]}
    assert leader_and_isr_partition_errors(v4, ctx.topic_ids) == {("t", 0): 56}
    ctx.set_topic("u", {0: (2,)}, "AAAAAAAAAAAAAAAAAAAAAQ")
    from mafka.coordination.znodes import uuid_bytes

    v5 = {"error_code": 0, "topics": [{"topic_id": uuid_bytes("AAAAAAAAAAAAAAAAAAAAAQ"),
                                       "partition_errors": [{"partition_index": 0, "error_code": 0}]}]}
    assert leader_and_isr_partition_errors(v5, ctx.topic_ids) == {("u", 0): 0}
    assert leader_and_isr_partition_errors({"error_code": 41, "partition_errors": []}, ctx.topic_ids) == {}


# --------------------------------------------------------------------------- merged batches

OTHER = LeaderIsrAndControllerEpoch(3, 5, (3,), 7, zk_version=10)


def test_merged_state_changes_send_one_request_per_broker_with_the_final_states() -> None:
    ctx, rec, _, batch = setup(1, 2, 3)
    for p in (0, 1):
        ctx.update_assignment(("t", p), (2, 3))
    with batch.merged():
        assert batch.is_merging
        for step, state in enumerate((STATE, OTHER)):  # two state changes, as two state machines do
            batch.new_batch()
            ctx.put_leadership(("t", 0), state)
            batch.add_leader_and_isr([2, 3], ("t", 0), state, (2, 3), is_new=step == 0)
            if step:
                ctx.put_leadership(("t", 1), state)
                batch.add_leader_and_isr([3], ("t", 1), state, (2, 3), is_new=False)
            batch.send_requests(ctx.epoch)
            assert rec.sent == {}  # nothing sent inside the block
    assert not batch.is_merging and batch.is_empty
    assert [key for key, _ in rec.sent[2]] == [LEADER_AND_ISR, UPDATE_METADATA]
    assert [key for key, _ in rec.sent[3]] == [LEADER_AND_ISR, UPDATE_METADATA]
    to_3 = {ps.partition_index: ps for ts in rec.sent[3][0][1].topic_states for ps in ts.partition_states}
    assert (to_3[0].leader, to_3[0].leader_epoch, to_3[0].is_new) == (3, 5, True)  # final state, still new
    assert to_3[1].leader == 3
    um = rec.sent[1][0][1]
    assert {ps.partition_index: ps.leader for ts in um.topic_states for ps in ts.partition_states} == {0: 3, 1: 3}


def test_merged_batch_keeps_the_order_of_requests_about_one_partition() -> None:
    ctx, rec, _, batch = setup(1, 2, 3)
    ctx.update_assignment(("t", 0), (2, 3))
    ctx.put_leadership(("t", 0), STATE)
    with batch.merged():
        batch.add_stop_replica([2], ("t", 0), delete=False)
        batch.add_leader_and_isr([3], ("t", 0), STATE, (2, 3), is_new=False)  # another broker: merged
        assert rec.sent == {}
        batch.add_leader_and_isr([2], ("t", 0), STATE, (2, 3), is_new=False)  # after its StopReplica:
        assert [key for key, _ in rec.sent[2]] == [UPDATE_METADATA, STOP_REPLICA]  # what was merged went
        batch.add_stop_replica([3], ("t", 0), delete=False)  # its LeaderAndIsr went already: merged
        batch.add_stop_replica([2], ("t", 0), delete=False)  # after the LeaderAndIsr just merged
        assert [key for key, _ in rec.sent[2]] == [UPDATE_METADATA, STOP_REPLICA, LEADER_AND_ISR, UPDATE_METADATA]
    assert [key for key, _ in rec.sent[2]] == [
        UPDATE_METADATA, STOP_REPLICA, LEADER_AND_ISR, UPDATE_METADATA, STOP_REPLICA
    ]
    assert [key for key, _ in rec.sent[3]] == [LEADER_AND_ISR, UPDATE_METADATA, UPDATE_METADATA, STOP_REPLICA]


def test_merged_batch_is_dropped_when_the_block_raises_and_kept_when_a_step_is_abandoned() -> None:
    ctx, rec, _, batch = setup(1, 2, 3)
    ctx.update_assignment(("t", 0), (2, 3))
    ctx.put_leadership(("t", 0), STATE)
    with pytest.raises(RuntimeError), batch.merged():
        batch.add_leader_and_isr([2], ("t", 0), STATE, (2, 3), is_new=False)
        raise RuntimeError("fenced")
    assert rec.sent == {} and batch.is_empty and not batch.is_merging
    with batch.merged():
        batch.add_leader_and_isr([2], ("t", 0), STATE, (2, 3), is_new=False)
        batch.new_batch()
        batch.abandon()  # a later step failed: what earlier steps wrote to ZooKeeper is still told
    assert [key for key, _ in rec.sent[2]] == [LEADER_AND_ISR, UPDATE_METADATA]
    batch.add_leader_and_isr([2], ("t", 0), STATE, (2, 3), is_new=False)
    batch.abandon()  # outside a merged block: dropped
    assert batch.is_empty


def test_update_metadata_is_built_once_for_every_recipient() -> None:
    ctx, rec, _, batch = setup(1, 2, 3)
    ctx.update_assignment(("t", 0), (2, 3))
    ctx.put_leadership(("t", 0), STATE)
    batch.add_update_metadata([1, 2, 3], [("t", 0)])
    bodies: list[Any] = []

    def send(broker_id: int, api_key: int, version: int, body: Any, callback: Any = None) -> bool:
        bodies.append(body)
        return True

    batch.channel.send = send  # type: ignore[method-assign]
    batch.send_requests(ctx.epoch)
    assert [body["broker_epoch"] for body in bodies] == [101, 102, 103]
    assert all(body["topic_states"] is bodies[0]["topic_states"] for body in bodies)
