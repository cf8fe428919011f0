"""The admin client's share-group calls (:mod:`mafka.client.admin_share_groups`) on the real
:class:`~mafka.client.admin.AdminClient` over a wire fake (no sockets) whose group coordinator is
the real one, answered by the broker's own handlers (ShareGroupDescribe 77, offsets APIs 90–92)
with a fake share-group state persister."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from twisted.internet import defer

from mafka.broker.handlers import share_group_offsets, share_groups
from mafka.client.admin import AdminClient
from mafka.client.kafka_error import KafkaException
from mafka.client.message import TopicPartition
from mafka.errors import ErrorCode
from mafka.group.coordinator import CoordinatorConfig, GroupCoordinator
from mafka.group.share.group_types import HeartbeatRequest
from mafka.share.state_types import SummaryResult
from tests.unit.broker.test_share_group_offsets import FOO, TOPICS, Persister, Replicas
from tests.unit.cli.fake_wire import WireFake
from tests.unit.group.fakes import Clock, FakeLog, Timers

WAIT = 10
GROUP = "sg"


class ShareCluster(WireFake):
    """Two brokers; broker 1 coordinates every group and leads foo-0 (foo-1 is led by broker 2)."""

    def __init__(self) -> None:
        super().__init__({1: ("b1", 9092), 2: ("b2", 9093)})
        clock = Clock()
        log = FakeLog()
        self.coordinator = GroupCoordinator(CoordinatorConfig(offsets_partitions=1), clock, Timers(clock), log,
                                            lambda: TOPICS)
        self.coordinator.share_groups.initializer = lambda request, done: done(True)
        assert self.coordinator.on_elected(0, 1) and self.coordinator.complete_load(0, 1, log.durable[0])
        self.persister = Persister()
        broker = SimpleNamespace(
            group_service=SimpleNamespace(checked_coordinator=lambda: self.coordinator,
                                          topics_for_groups=lambda: TOPICS),
            metadata_cache=SimpleNamespace(topic_ids={"foo": FOO}, partitions={"foo": {0: None, 1: None}}),
            replica_manager=Replicas(),
            share_persister=self.persister,
            authorizer=None,
        )
        self.handlers = {**share_groups.handlers(broker), **share_group_offsets.handlers(broker)}

    def join(self, member_id: str, client_id: str) -> None:
        out: list = []
        self.coordinator.share_group_heartbeat(
            HeartbeatRequest(GROUP, member_id, 0, subscribed_topic_names=["foo"], client_id=client_id,
                             client_host="/10.0.0.1"), out.append)
        assert out[0].error_code == ErrorCode.NONE
        # the join asked for the partitions' initialization: the next heartbeat assigns them
        self.coordinator.share_group_heartbeat(HeartbeatRequest(GROUP, member_id, out[0].member_epoch, client_id=client_id,
                                                                   client_host="/10.0.0.1"), out.append)
        assert out[1].error_code == ErrorCode.NONE and out[1].assignment

    def leave(self, member_id: str) -> None:
        out: list = []
        self.coordinator.share_group_heartbeat(HeartbeatRequest(GROUP, member_id, -1), out.append)

    def _serve(self, api_key: int, req: Any) -> Any:
        answers: list = []
        result = self.handlers[api_key](SimpleNamespace(body=req, header=SimpleNamespace(client_id="admin")), None)
        defer.maybeDeferred(lambda: result).addCallback(answers.append)
        return answers[0]

    def _Metadata(self, req: Any, broker: int) -> dict[str, Any]:
        return {"brokers": [{"node_id": n, "host": h, "port": p, "rack": None} for n, (h, p) in self.brokers.items()],
                "cluster_id": "c", "controller_id": 1,
                "topics": [{"error_code": 0, "name": "foo", "topic_id": FOO, "is_internal": False,
                            "partitions": [{"error_code": 0, "partition_index": p, "leader_id": p + 1,
                                            "replica_nodes": [p + 1], "isr_nodes": [p + 1], "offline_replicas": []}
                                           for p in range(2)]}]}

    def _FindCoordinator(self, req: Any, broker: int) -> dict[str, Any]:
        return {"error_code": 0, "error_message": None, "node_id": 1, "host": "b1", "port": 9092}

    def _ListGroups(self, req: Any, broker: int) -> dict[str, Any]:
        groups = [] if broker != 1 else self.coordinator.list_groups()[1]
        return {"error_code": 0, "groups": [
            {"group_id": g.group_id, "protocol_type": g.protocol_type, "group_state": g.state,
             "group_type": g.group_type} for g in groups
            if not req.types_filter or g.group_type in req.types_filter]}

    def _ShareGroupDescribe(self, req: Any, broker: int) -> Any:
        return self._serve(77, req)

    def _DescribeShareGroupOffsets(self, req: Any, broker: int) -> Any:
        return self._serve(90, req)

    def _AlterShareGroupOffsets(self, req: Any, broker: int) -> Any:
        return self._serve(91, req)

    def _DeleteShareGroupOffsets(self, req: Any, broker: int) -> Any:
        return self._serve(92, req)


@pytest.fixture
def cluster() -> ShareCluster:
    return ShareCluster()


@pytest.fixture
def admin(cluster: ShareCluster, monkeypatch: pytest.MonkeyPatch) -> Iterator[AdminClient]:
    cluster.install(monkeypatch)
    client = AdminClient({"bootstrap.servers": "b1:9092"})
    try:
        yield client
    finally:
        client.close()


def test_list_and_describe_share_groups(cluster: ShareCluster, admin: AdminClient) -> None:
    cluster.join("m" * 22, "c1")
    listed = admin.list_share_groups().result(WAIT)
    assert [(g.group_id, g.state) for g in listed.valid] == [(GROUP, "Stable")] and listed.errors == []
    d = admin.describe_share_groups([GROUP])[GROUP].result(WAIT)
    assert (d.group_id, d.state, d.coordinator.id, d.partition_assignor) == (GROUP, "Stable", 1, "simple")
    (m,) = d.members
    assert (m.member_id, m.client_id, m.host) == ("m" * 22, "c1", "/10.0.0.1")
    assert sorted(m.assignment) == [TopicPartition("foo", 0), TopicPartition("foo", 1)]
    with pytest.raises(KafkaException) as missing:
        admin.describe_share_groups(["nope"])["nope"].result(WAIT)
    assert missing.value.args[0].code() == ErrorCode.GROUP_ID_NOT_FOUND


def test_list_share_group_offsets_with_lag_where_known(cluster: ShareCluster, admin: AdminClient) -> None:
    cluster.join("m" * 22, "c1")
    cluster.persister.summary[(FOO, 0)] = SummaryResult(leader_epoch=4, start_offset=60, delivery_complete_count=5)
    cluster.persister.summary[(FOO, 1)] = SummaryResult(leader_epoch=2, start_offset=-1)
    got = admin.list_share_group_offsets({GROUP: None})[GROUP].result(WAIT)
    assert {(tp.topic, tp.partition): (i.start_offset, i.leader_epoch, i.lag) for tp, i in got.items()} == {
        ("foo", 0): (60, 4, 35), ("foo", 1): (None, 2, None)}


def test_alter_and_delete_share_group_offsets(cluster: ShareCluster, admin: AdminClient) -> None:
    cluster.join("m" * 22, "c1")
    with pytest.raises(KafkaException) as busy:
        admin.alter_share_group_offsets(GROUP, {TopicPartition("foo", 0): 3}).result(WAIT)
    assert busy.value.args[0].code() == ErrorCode.NON_EMPTY_GROUP
    cluster.leave("m" * 22)
    altered = admin.alter_share_group_offsets(GROUP, {TopicPartition("foo", 0): 3,
                                                      TopicPartition("foo", 9): 1}).result(WAIT)
    assert [(tp.partition, tp.offset, tp.error and tp.error.code()) for tp in altered] == [
        (0, 3, None), (9, 1, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    assert cluster.persister.calls[-1][0] == "initialize"
    deleted = admin.delete_share_group_offsets(GROUP, ["foo", "bar"]).result(WAIT)
    assert deleted["foo"] is None and deleted["bar"] is not None
    assert deleted["bar"].code() == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_bad_arguments_are_refused_at_once(admin: AdminClient) -> None:
    with pytest.raises(ValueError):
        admin.alter_share_group_offsets(GROUP, {TopicPartition("foo", 0): -1})
    with pytest.raises(ValueError):
        admin.delete_share_group_offsets("", ["foo"])
    with pytest.raises(ValueError):
        admin.list_share_group_offsets({})
