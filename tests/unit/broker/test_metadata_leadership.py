"""A broker's Metadata follows the LeaderAndIsr it applied, before the UpdateMetadata arrives."""

from __future__ import annotations

from types import SimpleNamespace

from twisted.internet import task

from mafka.broker.metadata_cache import MetadataCache, PartitionInfo
from mafka.controller.channel import ControllerChannelManager, _BrokerQueue


def _ps(index: int, leader: int, epoch: int) -> SimpleNamespace:
    return SimpleNamespace(partition_index=index, leader=leader, leader_epoch=epoch, isr=[leader], replicas=[1, 2],
                           zk_version=3, controller_epoch=1)


def test_a_newer_leader_and_isr_state_replaces_the_cached_one() -> None:
    cache = MetadataCache(1)
    cache.partitions["t"] = {0: PartitionInfo(1, 4, (1, 2), (1, 2), (), 2, 1)}
    assert cache.note_leadership("t", _ps(0, 2, 5)) is True
    assert cache.partition("t", 0).leader == 2 and cache.partition("t", 0).leader_epoch == 5
    assert cache.note_leadership("t", _ps(0, 1, 5)) is False  # not newer
    assert cache.partition("t", 0).leader == 2
    assert cache.note_leadership("u", _ps(0, 1, 9)) is False  # unknown topics wait for UpdateMetadata
    assert cache.partition("u", 0) is None


def test_the_channel_reports_when_every_queued_request_was_answered() -> None:
    clock = task.Clock()
    answers: list = []

    class Conn:
        def request(self, api_key, version, body):
            from twisted.internet import defer

            d = defer.Deferred()
            answers.append(d)
            return d

        def close(self):
            pass

    channel = ControllerChannelManager(clock, 1, connection_factory=lambda b, h, p: Conn())
    channel._brokers[2] = _BrokerQueue(channel, 2, Conn())
    assert channel.send(2, 6, 5, {"x": 1})
    got: list = []
    channel.drained(1.0).addCallback(got.append)
    assert got == [] and not channel.idle
    answers[-1].callback({"error_code": 0})
    clock.advance(0.02)
    assert got == [True]
    channel.send(2, 6, 5, {"x": 2})
    late: list = []
    channel.drained(0.05).addCallback(late.append)
    clock.advance(0.1)
    assert late == [False]  # never answered: give up after the timeout
