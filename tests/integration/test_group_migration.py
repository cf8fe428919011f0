"""KIP-848's online upgrade and downgrade on a real cluster, judged by librdkafka (confluent-kafka 2.16).

A classic group of three members (processes, :mod:`tests.harness.group_member`: eager
``roundrobin``, each record committed synchronously after it is printed: at-least-once)
consumes a 6-partition RF-3 topic while an idempotent acks=all producer writes.  Then the
members are restarted one by one with ``group.protocol=consumer`` (the brokers run with
``group.consumer.migration.policy=bidirectional``, Kafka 4's default):

* the first consumer-protocol member converts the group into a ``consumer`` group at once
  (AdminClient's describe shows the type), the two members still on the classic protocol stay
  in it, are told to rejoin, and get their partitions through JoinGroup/SyncGroup from the
  coordinator's server assignor; after each restart every live member holds partitions, no
  partition twice;
* once all three use the consumer protocol the group is a ``consumer`` group of three;
* then they are restarted one by one with ``group.protocol=classic``: the group stays a
  ``consumer`` group while a consumer-protocol member remains, and when the last one leaves it
  is downgraded to a ``classic`` group that rebalances its classic members.

Throughout: every acknowledged record is consumed (no gap), no member consumes a partition it
did not hold, committed offsets never go backwards, and the committed offsets end at the end of
every partition.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.chaos import ContinuousProducer, create_topic
from tests.harness.cluster import ClusterSpec, LocalCluster
from tests.harness.group_clients import Group, Member, wait_until
from tests.integration.test_consumer_group_protocol import (
    SETTINGS,
    commits_never_go_back,
    describe,
    wait_covered,
)
from tests.integration.test_groups import PARTITIONS, check_at_least_once, read_committed

pytestmark = pytest.mark.integration

#: test_consumer_group_protocol's brokers, with the migration policy spelled out
CLUSTER = ClusterSpec(settings={**SETTINGS, "group.consumer.migration.policy": "bidirectional"})


@pytest.fixture
def group(cluster: LocalCluster, tmp_path: Path) -> Iterator[Group]:
    topic = create_topic(cluster, partitions=PARTITIONS, rf=3)
    g = Group("confluent", cluster.bootstrap, f"mig-{uuid.uuid4().hex[:8]}", topic, PARTITIONS, tmp_path,
              group_protocol="classic", assignor="roundrobin")
    yield g
    g.close()


def group_type(bootstrap: str, group_id: str) -> str:
    """``CLASSIC`` or ``CONSUMER``, as AdminClient's describe_consumer_groups reports it."""
    return str(describe(bootstrap, group_id).type).rsplit(".", 1)[-1]


def restart(g: Group, name: str, protocol: str) -> Member:
    """Stop member *name* (it leaves the group cleanly) and start it again with *protocol*."""
    assert g.members[name].stop() == 0, g.members[name].tail()
    return g.add(name, group_protocol=protocol)


def member_ids(members: list[Member]) -> dict[str, str]:
    """Each member's member id, from its last assignment."""
    out = {}
    for m in members:
        last = m.last_assigned()
        assert last is not None, m.tail()
        out[m.name] = last["member_id"]
    return out


def kept_membership(bootstrap: str, group_id: str, ids: dict[str, str]) -> None:
    """The converted group lists the members under the member ids they had before the
    conversion (they were kept: a member dropped would have rejoined under a new id)."""
    listed = {m.member_id for m in describe(bootstrap, group_id).members}
    assert set(ids.values()) <= listed, f"members {ids} not all in the converted group's {sorted(listed)}"


def settle(g: Group, restarted: Member, timeout: float = 60) -> dict[str, list[int]]:
    """Every live member holds partitions (disjoint, covering, balanced) and the restarted one consumes."""
    live = g.live()
    layout = wait_covered(g, live, timeout)
    restarted.wait_event("consumed", 30, after=restarted.spawned_at)
    return layout


class TestOnlineMigration:
    def test_a_classic_group_upgrades_member_by_member_and_downgrades_back(self, cluster, group):
        g = group
        steps: list[str] = []
        with ContinuousProducer(cluster.bootstrap, g.topic, partitions=PARTITIONS, rate=60) as producer:
            producer.wait_acks(12, 30)
            for name in "abc":
                g.add(name)
            g.wait_balanced(timeout=45)
            for m in g.live():
                m.wait_event("consumed", 30)
            assert group_type(cluster.bootstrap, g.group) == "CLASSIC"

            # Online upgrade: one member at a time moves to the consumer protocol.
            for name in "abc":
                started = time.monotonic()
                others = [m for m in g.live() if m.name != name]
                ids = member_ids(others)
                member = restart(g, name, "consumer")
                layout = settle(g, member)
                if name == "a":  # the upgrade: b and c, still classic, stay members of the consumer group
                    kept_membership(cluster.bootstrap, g.group, ids)
                kind = group_type(cluster.bootstrap, g.group)
                steps.append(f"{name}->consumer: {kind} {layout} in {time.monotonic() - started:.1f} s")
                assert kind == "CONSUMER", steps  # the first consumer-protocol member converted it
            described = describe(cluster.bootstrap, g.group)
            assert len(described.members) == 3, described

            # Online downgrade: back to the classic protocol, one member at a time.
            for i, name in enumerate("abc"):
                started = time.monotonic()
                others = [m for m in g.live() if m.name != name]
                ids = member_ids(others)
                member = restart(g, name, "classic")
                layout = settle(g, member)
                if i == 2:  # the downgrade: a and b, classic, stay members of the classic group
                    kept_membership(cluster.bootstrap, g.group, ids)
                kind = group_type(cluster.bootstrap, g.group)
                steps.append(f"{name}->classic: {kind} {layout} in {time.monotonic() - started:.1f} s")
                # a consumer group while a consumer-protocol member remains; classic after the last left
                assert kind == ("CLASSIC" if i == 2 else "CONSUMER"), steps
            g.wait_balanced(timeout=45)
            producer.wait_acks(30, 30, after=time.monotonic())
        print("\n  " + "\n  ".join(steps))
        ends = check_at_least_once(g, producer)
        commits_never_go_back(g)
        wait_until(lambda: read_committed(cluster.bootstrap, g.group, g.topic) == ends, 30,
                   lambda: f"committed {read_committed(cluster.bootstrap, g.group, g.topic)} != ends {ends}")
        for m in g.live():
            assert m.stop() == 0, m.tail()
