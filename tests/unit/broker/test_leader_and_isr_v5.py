"""LeaderAndIsr v3–v5 on the broker: the reassignment state a partition keeps, answers by topic id."""

from __future__ import annotations

from mafka.errors import ErrorCode

from .test_replica_manager import call, env  # noqa: F401 (env is a fixture)

TOPIC_ID = bytes(range(16))


def lai_v5(*, adding=(), removing=(), replicas=(1, 2, 3), isr=(1, 2), leader=1, epoch=0, partitions=(0,)):
    return {
        "controller_id": 1, "controller_epoch": 1, "broker_epoch": -1, "type": 0,
        "topic_states": [{"topic_name": "t", "topic_id": TOPIC_ID, "partition_states": [
            {"partition_index": p, "controller_epoch": 1, "leader": leader, "leader_epoch": epoch, "isr": list(isr),
             "zk_version": 0, "replicas": list(replicas), "adding_replicas": list(adding),
             "removing_replicas": list(removing), "is_new": True}
            for p in partitions]}],
        "live_leaders": [{"broker_id": 1, "host_name": "h1", "port": 9092}],
    }


def test_v5_answers_by_topic_id(env):  # noqa: F811
    body, _ = call(env, 4, 5, lai_v5(partitions=(0, 1)))
    assert body.error_code == 0
    assert [(t.topic_id, [(p.partition_index, p.error_code) for p in t.partition_errors]) for t in body.topics] == [
        (TOPIC_ID, [(0, 0), (1, 0)])
    ]


def test_a_replica_being_added_does_not_make_the_partition_under_replicated(env):  # noqa: F811
    # Moving from (1, 2) to (1, 2, 3): replica 3 is being added and not yet in the ISR.
    call(env, 4, 5, lai_v5(replicas=(1, 2, 3), adding=(3,), isr=(1, 2)))
    p = env.rm.partitions["t", 0]
    assert p.is_reassigning and p.is_adding_replica(3) and not p.is_adding_replica(2)
    assert not p.is_under_replicated
    # Reassignment done (adding cleared): now 3 missing from the ISR counts.
    call(env, 4, 5, lai_v5(replicas=(1, 2, 3), isr=(1, 2), epoch=1))
    assert not p.is_reassigning and p.is_under_replicated


def test_v4_answers_by_topic_name_and_v2_still_applies(env):  # noqa: F811
    body, _ = call(env, 4, 4, lai_v5(adding=(3,)))
    assert [(e.topic_name, e.partition_index, e.error_code) for e in body.partition_errors] == [("t", 0, ErrorCode.NONE)]
    assert env.rm.partitions["t", 0].is_adding_replica(3)
    v2 = lai_v5(epoch=1)
    for ps in v2["topic_states"][0]["partition_states"]:
        del ps["adding_replicas"], ps["removing_replicas"]
    del v2["type"], v2["topic_states"][0]["topic_id"]
    body, _ = call(env, 4, 2, v2)
    assert body.partition_errors[0].error_code == 0
    assert not env.rm.partitions["t", 0].is_reassigning
