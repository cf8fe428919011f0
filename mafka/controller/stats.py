"""The controller's counters (Kafka's ``ControllerStats``).

Plain integers the active controller increments; the metrics layer exports
them under Kafka's MBean names (``kafka.controller:type=ControllerStats,
name=UncleanLeaderElectionsPerSec`` → Prometheus
``kafka_controller_controllerstats_uncleanleaderelections_total``).  They
live as long as the broker's controller object, across resignations, like
Kafka's meters.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mafka.latency import LatencyWindow

__all__ = ["ControllerStats"]


@dataclass(slots=True)
class ControllerStats:
    """Event counts since the broker started.

    Attributes:
        unclean_leader_elections: Leaders elected from outside the ISR
            (``UncleanLeaderElectionsPerSec``): an offline partition under
            ``unclean.leader.election.enable``, or an admin UNCLEAN election.
        preferred_leader_elections: Partitions moved back to their preferred
            replica (ElectLeaders PREFERRED, the ZooKeeper request, or auto rebalance).
        partition_reassignments_completed: Reassignments that reached TRS.
        leader_elections: Each leader election the controller ran (a batch of
            partitions, as Kafka's controller state ``LeaderElection``), timed:
            ``LeaderElectionRateAndTimeMs`` (count and the last minute's times).
    """

    unclean_leader_elections: int = 0
    preferred_leader_elections: int = 0
    partition_reassignments_completed: int = 0
    leader_elections: LatencyWindow = field(default_factory=lambda: LatencyWindow(60_000, 1028))
