"""A fake cluster that also has KIP-848 consumer groups, as a Kafka 4 (or Mafka) broker answers.

:class:`Kip848Cluster` extends the classic groups of
:class:`tests.unit.cli.test_consumer_groups.FakeCluster` with consumer groups:

* ListGroups (v5 with a Mafka client) lists every group with its state and
  type and honours ``states_filter`` (exact names) and ``types_filter``
  (case-insensitive), as :mod:`mafka.broker.handlers.groups` does;
* ConsumerGroupDescribe answers consumer groups and GROUP_ID_NOT_FOUND for any
  other id (Kafka 4's "Group g is not a consumer group.");
* DescribeGroups knows only classic groups: a consumer group is ``Dead`` there,
  as Kafka 4 answers DescribeGroups up to v5.

Every request still goes through Mafka's wire schema at the negotiated version
(:mod:`tests.unit.cli.fake_wire`), so a field a version lacks arrives empty.
"""

from __future__ import annotations

from typing import Any

from mafka.errors import ErrorCode
from tests.unit.cli.test_consumer_groups import FakeCluster

OK = ErrorCode.NONE
CONSUMER_GROUP_DESCRIBE = 69


def consumer_member(mid: str, client: str, host: str, assignment: dict[str, list[int]],
                    target: dict[str, list[int]] | None = None, epoch: int = 5, instance: str | None = None,
                    member_type: int = 1) -> dict[str, Any]:
    """A ConsumerGroupDescribe member (``member_type`` 1: consumer protocol, 0: a classic member)."""

    def parts(a: dict[str, list[int]]) -> dict[str, Any]:
        return {"topic_partitions": [{"topic_id": bytes(16), "topic_name": t, "partitions": ps}
                                     for t, ps in a.items()]}

    return {"member_id": mid, "instance_id": instance, "rack_id": None, "member_epoch": epoch, "client_id": client,
            "client_host": host, "subscribed_topic_names": sorted(assignment), "subscribed_topic_regex": None,
            "assignment": parts(assignment), "target_assignment": parts(assignment if target is None else target),
            "member_type": member_type}


class Kip848Cluster(FakeCluster):
    """:class:`FakeCluster` plus consumer groups (``consumer_groups``: id → ConsumerGroupDescribe entry)."""

    def __init__(self) -> None:
        super().__init__()
        self.consumer_groups: dict[str, dict[str, Any]] = {}
        #: ConsumerGroupDescribe errors to answer first, one per request
        self.cgd_errors: list[int] = []

    def consumer_group(self, gid: str, state: str, members: list[dict[str, Any]], group_epoch: int = 7,
                       assignment_epoch: int = 7, assignor: str = "uniform") -> None:
        self.consumer_groups[gid] = {"error_code": OK, "error_message": None, "group_id": gid, "group_state": state,
                                     "group_epoch": group_epoch, "assignment_epoch": assignment_epoch,
                                     "assignor_name": assignor, "members": members}

    def _ListGroups(self, req: Any, broker: int | None) -> dict[str, Any]:
        if broker != self.coordinator:
            listed = [{"group_id": "connect-x", "protocol_type": "connect", "group_state": "Stable",
                       "group_type": "classic"}]
        else:
            listed = [{"group_id": g, "protocol_type": v["protocol_type"], "group_state": v["state"],
                       "group_type": "classic"} for g, v in self.groups.items()]
            listed += [{"group_id": g, "protocol_type": "consumer", "group_state": v["group_state"],
                        "group_type": "consumer"} for g, v in self.consumer_groups.items()]
        states = set(req.states_filter or ())
        types = {t.lower() for t in req.types_filter or ()}
        listed = [g for g in listed if (not states or g["group_state"] in states)
                  and (not types or g["group_type"] in types)]
        return {"error_code": OK, "groups": listed}

    def _ConsumerGroupDescribe(self, req: Any, broker: int | None) -> dict[str, Any]:
        assert broker == self.coordinator
        out = []
        for gid in req.group_ids:
            if self.cgd_errors:
                code = self.cgd_errors.pop(0)
                out.append({"error_code": code, "error_message": None, "group_id": gid, "group_state": "",
                            "group_epoch": -1, "assignment_epoch": -1, "assignor_name": "", "members": []})
            elif gid in self.consumer_groups:
                out.append(self.consumer_groups[gid])
            else:
                out.append({"error_code": ErrorCode.GROUP_ID_NOT_FOUND,
                            "error_message": f"Group {gid} is not a consumer group.", "group_id": gid,
                            "group_state": "Dead", "group_epoch": -1, "assignment_epoch": -1, "assignor_name": "",
                            "members": []})
        return {"groups": out}
