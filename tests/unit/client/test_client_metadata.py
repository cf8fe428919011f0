"""ClusterMetadata: the client's cluster view from decoded Metadata (v4-shaped) responses."""

from __future__ import annotations

from types import SimpleNamespace as NS

from mafka.client.metadata import BrokerInfo, ClusterMetadata, PartitionInfo
from mafka.errors import ErrorCode


def broker(node_id: int, rack: str | None = None) -> NS:
    return NS(node_id=node_id, host=f"h{node_id}", port=9090 + node_id, rack=rack)


def part(index: int, leader: int, replicas: list[int] | None = None, error: int = 0) -> NS:
    replicas = [leader] if replicas is None else replicas
    return NS(error_code=error, partition_index=index, leader_id=leader,
              replica_nodes=replicas, isr_nodes=[r for r in replicas if r >= 0])


def topic(name: str, partitions: list[NS], error: int = 0, internal: bool = False) -> NS:
    return NS(error_code=error, name=name, is_internal=internal, partitions=partitions)


def response(brokers: list[NS], topics: list[NS], controller: int = 1,
             cluster: str | None = "cid") -> NS:
    return NS(throttle_time_ms=0, brokers=brokers, cluster_id=cluster, controller_id=controller,
              topics=topics)


def cluster() -> NS:
    return response(
        [broker(1, "r1"), broker(2), broker(3)],
        [
            topic("orders", [part(0, 1, [1, 2]), part(1, 2, [2, 3]), part(2, 3, [3, 1])]),
            topic("__consumer_offsets", [part(0, 2)], internal=True),
            topic("gone", [], error=int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)),
            topic("leaderless", [part(0, -1, [4]), part(1, 4, [4]), part(2, 1, [1])]),
        ],
    )


def test_initial_state() -> None:
    md = ClusterMetadata()
    assert md.brokers == {} and md.topics == {}
    assert (md.controller_id, md.cluster_id, md.need_update, md.version) == (-1, None, False, 0)
    assert md.leader("orders", 0) == -1
    assert md.partition_count("orders") is None
    assert md.available_partitions("orders") == []
    assert md.topic_error("orders") == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_update_brokers_controller_cluster() -> None:
    md = ClusterMetadata()
    md.request_update()
    md.update(cluster(), now=50.0)
    assert md.brokers == {
        1: BrokerInfo(1, "h1", 9091, "r1"),
        2: BrokerInfo(2, "h2", 9092, None),
        3: BrokerInfo(3, "h3", 9093, None),
    }
    assert str(md.broker(2)) == "h2:9092/2"
    assert md.broker(9) is None
    assert (md.controller_id, md.cluster_id) == (1, "cid")
    assert md.need_update is False
    assert md.updated_at == 50.0 and md.version == 1


def test_update_without_v1_fields() -> None:
    """A v0-shaped response: no rack, controller, cluster id or is_internal."""
    md = ClusterMetadata()
    v0 = NS(brokers=[NS(node_id=1, host="h", port=1)],
            topics=[NS(error_code=0, name="t", partitions=[part(0, 1)])])
    md.update(v0, now=1.0)
    assert md.broker(1) == BrokerInfo(1, "h", 1, None)
    assert (md.controller_id, md.cluster_id) == (-1, None)
    assert md.topics["t"].is_internal is False
    assert md.leader("t", 0) == 1


def test_leader_and_partition_info() -> None:
    md = ClusterMetadata()
    md.update(cluster(), now=0.0)
    assert [md.leader("orders", p) for p in range(4)] == [1, 2, 3, -1]
    assert md.leader("leaderless", 0) == -1
    assert md.leader("nope", 0) == -1
    assert md.topics["orders"].partitions[1] == PartitionInfo(1, 2, (2, 3), (2, 3), 0)
    assert md.topics["__consumer_offsets"].is_internal is True


def test_partition_count() -> None:
    md = ClusterMetadata()
    md.update(cluster(), now=0.0)
    assert md.partition_count("orders") == 3
    assert md.partition_count("leaderless") == 3
    assert md.partition_count("gone") is None  # errored
    assert md.partition_count("unknown") is None
    assert md.topic_error("gone") == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert md.topic_error("orders") == 0


def test_partition_count_none_for_topic_with_no_partitions() -> None:
    md = ClusterMetadata()
    md.update(response([broker(1)], [topic("empty", [])]), now=0.0)
    assert md.partition_count("empty") is None


def test_available_partitions_need_live_leader_in_brokers() -> None:
    md = ClusterMetadata()
    md.update(cluster(), now=0.0)
    assert sorted(md.available_partitions("orders")) == [0, 1, 2]
    # partition 0: no leader; partition 1: leader 4 is not among the brokers
    assert md.available_partitions("leaderless") == [2]
    assert md.available_partitions("gone") == []
    # broker 3 disappears: its partition is no longer available
    md.update(response([broker(1), broker(2)], [topic("orders", [part(0, 1), part(1, 2), part(2, 3)])]), now=1.0)
    assert sorted(md.available_partitions("orders")) == [0, 1]
    assert md.leader("orders", 2) == 3  # still the leader Metadata named


def test_partial_update_keeps_other_topics() -> None:
    md = ClusterMetadata()
    md.update(cluster(), now=0.0)
    md.update(response([broker(1), broker(2), broker(3)], [topic("orders", [part(0, 3), part(1, 3)])]), now=2.0)
    assert md.partition_count("orders") == 2  # replaced
    assert md.leader("orders", 0) == 3
    assert md.leader("orders", 2) == -1
    assert "leaderless" in md.topics and "__consumer_offsets" in md.topics
    assert md.version == 2


def test_all_topics_update_forgets_topics_left_out() -> None:
    md = ClusterMetadata()
    md.update(cluster(), now=0.0)
    md.update(response([broker(1)], [topic("orders", [part(0, 1)])]), now=1.0, all_topics=True)
    assert set(md.topics) == {"orders"}
    assert md.partition_count("leaderless") is None
    assert md.leader("__consumer_offsets", 0) == -1


def test_errored_topic_replaces_known_partitions() -> None:
    md = ClusterMetadata()
    md.update(cluster(), now=0.0)
    md.update(response([broker(1)], [topic("orders", [], error=int(ErrorCode.LEADER_NOT_AVAILABLE))]), now=1.0)
    assert md.partition_count("orders") is None
    assert md.topic_error("orders") == ErrorCode.LEADER_NOT_AVAILABLE
    assert md.available_partitions("orders") == []


def test_want_only_new_topics_request_update() -> None:
    md = ClusterMetadata()
    assert md.want({"a", "b"}) is True
    assert md.need_update is True
    assert md.wanted == {"a", "b"}
    md.update(response([broker(1)], []), now=0.0)
    assert md.need_update is False
    assert md.want(["a"]) is False
    assert md.need_update is False
    assert md.want(["b", "c"]) is True
    assert md.need_update is True
    assert md.wanted == {"a", "b", "c"}
    assert md.want(set()) is False


def test_request_update_and_update_clears_it() -> None:
    md = ClusterMetadata()
    md.request_update()
    assert md.need_update
    md.update(response([], []), now=3.0)
    assert not md.need_update
    assert md.brokers == {} and md.updated_at == 3.0


def epoch_part(index: int, leader: int, epoch: int) -> NS:
    p = part(index, leader)
    p.leader_epoch = epoch
    return p


def test_an_answer_with_an_older_leader_epoch_keeps_the_newer_state_and_asks_again() -> None:
    """KIP-320: a lagging broker's Metadata must not move a partition back to its old leader."""
    md = ClusterMetadata()
    md.update(response([broker(1), broker(2)], [topic("t", [epoch_part(0, 2, 5), epoch_part(1, 1, 3)])]), now=0.0)
    assert (md.leader("t", 0), md.leader_epoch("t", 0)) == (2, 5)
    md.update(response([broker(1), broker(2)], [topic("t", [epoch_part(0, 1, 4), epoch_part(1, 2, 4)])]), now=1.0)
    assert (md.leader("t", 0), md.leader_epoch("t", 0)) == (2, 5)  # stale: kept
    assert (md.leader("t", 1), md.leader_epoch("t", 1)) == (2, 4)  # newer: taken
    assert md.need_update is True
    md.update(response([broker(1), broker(2)], [topic("t", [epoch_part(0, 1, 6), epoch_part(1, 2, 4)])]), now=2.0)
    assert (md.leader("t", 0), md.leader_epoch("t", 0)) == (1, 6)
    assert md.need_update is False


def test_a_topic_created_again_under_a_new_id_starts_its_epochs_over() -> None:
    md = ClusterMetadata()
    old = topic("t", [epoch_part(0, 2, 9)])
    old.topic_id = b"\x01" * 16
    md.update(response([broker(1), broker(2)], [old]), now=0.0)
    new = topic("t", [epoch_part(0, 1, 0)])
    new.topic_id = b"\x02" * 16
    md.update(response([broker(1), broker(2)], [new]), now=1.0)
    assert (md.leader("t", 0), md.leader_epoch("t", 0)) == (1, 0)
    assert md.topics["t"].topic_id == b"\x02" * 16
