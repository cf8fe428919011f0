"""Mafka's own znodes, under ``/mafka`` (no Kafka tool reads them).

Owns their paths: every broker's slow-node report (ephemeral
``/mafka/monitor/<broker-id>``, written by :mod:`mafka.broker.monitor`, format in
:mod:`mafka.monitoring`) and the rebalancer's plan (persistent
``/mafka/rebalancer/state``, :mod:`mafka.rebalancer.execution`).  Their bytes
are their owners' business; this module only names the nodes.
"""

from __future__ import annotations

__all__ = [
    "MONITOR_PATH",
    "REBALANCER_PATH",
    "REBALANCER_STATE_PATH",
    "monitor_path",
]

#: Parent of the per-broker slow-node reports.
MONITOR_PATH = "/mafka/monitor"
#: Parent of the rebalancer's state.
REBALANCER_PATH = "/mafka/rebalancer"
#: Mafka's rebalancer: the plan being carried out, or the last one (``mafka.rebalancer.execution``)
REBALANCER_STATE_PATH = "/mafka/rebalancer/state"


def monitor_path(broker_id: int | str) -> str:
    """``/mafka/monitor/<broker_id>`` (ephemeral: one broker's slow-node report)."""
    return f"{MONITOR_PATH}/{broker_id}"
