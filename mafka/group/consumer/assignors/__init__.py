"""The server-side assignors of the consumer group protocol (KIP-848), by name.

``group.consumer.assignors`` names the assignors a broker offers (Kafka 4's default
``uniform,range``); the first is the default, used when a member names none in
``group.remote.assignor``.

* :class:`~.uniform.UniformAssignor` (``uniform``): balanced, then sticky;
* :class:`~.range.RangeAssignor` (``range``): contiguous per-topic ranges, co-partitioned.

Both are plain, deterministic functions of an :class:`~..assignor_api.AssignmentSpec` (no
I/O, no randomness, no dependence on dict order) and stateless, so one instance each serves
every group.
"""

from __future__ import annotations

from collections.abc import Mapping

from mafka.group.consumer.assignor_api import PartitionAssignor
from mafka.group.consumer.assignors.range import RangeAssignor
from mafka.group.consumer.assignors.uniform import UniformAssignor

__all__ = ["ASSIGNORS", "DEFAULT_ASSIGNOR", "RangeAssignor", "UniformAssignor"]

#: name → assignor, in the order of Kafka 4's ``group.consumer.assignors`` default
ASSIGNORS: Mapping[str, PartitionAssignor] = {
    UniformAssignor.name: UniformAssignor(),
    RangeAssignor.name: RangeAssignor(),
}

#: the first of ``group.consumer.assignors``' default ``uniform,range``
DEFAULT_ASSIGNOR = "uniform"
