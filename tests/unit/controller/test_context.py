"""mafka.controller.context: forgetting a topic finds its replica states through the per-topic index."""

from __future__ import annotations

from mafka.controller.context import ControllerContext
from mafka.controller.states import ReplicaState


def test_remove_topic_forgets_every_replica_state_of_the_topic_and_only_those() -> None:
    ctx = ControllerContext()
    ctx.set_topic("a", {0: (1, 2), 1: (2, 3)})
    ctx.set_topic("b", {0: (1, 3)})
    for topic in ("a", "b"):
        for tp, replica in ctx.replicas_for_topic(topic):
            ctx.replica_states.put((tp, replica), ReplicaState.OnlineReplica)
    # a replica a reassignment dropped from the assignment before its state went
    ctx.replica_states.put((("a", 0), 9), ReplicaState.OfflineReplica)
    # one registered by a batch transition (check_replica_transition registers unknown replicas)
    ctx.check_replica_transition([(("a", 1), 7)], ReplicaState.NewReplica)
    assert len(ctx.replica_states.keys_of_topic("a")) == 6

    ctx.remove_topic("a")
    assert ctx.replica_states.keys_of_topic("a") == []
    assert sorted(ctx.replica_states) == [(("b", 0), 1), (("b", 0), 3)]
    ctx.replica_states.remove((("b", 0), 1))
    ctx.replica_states.remove((("b", 0), 3))
    assert ctx.replica_states.keys_of_topic("b") == [] and len(ctx.replica_states) == 0
