"""A group member's link to its group coordinator: found, used on the ``"group"`` connection, forgotten.

:class:`GroupCoordinatorLink` is a mixin for the three kinds of group member
(:class:`~mafka.client.group_member.GroupMember`, classic;
:class:`~mafka.client.consumer_group_member.ConsumerGroupMember`, KIP-848;
:class:`~mafka.client.share_group_member.ShareGroupMember`, KIP-932).  The class using it sets
``kernel``, ``group_id``, ``backoff`` (seconds) and ``coordinator`` (the node id, -1 while not
known).  Group traffic goes on its own ``"group"`` connection so a heartbeat never queues behind
a fetch long poll.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from mafka.client.kernel import Kernel

__all__ = ["GroupCoordinatorLink"]

log = logging.getLogger("mafka.client.group")


class GroupCoordinatorLink:
    """Mixin: finding the group's coordinator, losing it, and sending to it."""

    kernel: Kernel
    group_id: str
    backoff: float
    coordinator: int

    async def _ensure_coordinator(self, deadline: float | None = None) -> None:
        """Finds the coordinator, retrying; ConnectionError once ``deadline`` (monotonic) passes."""
        while self.coordinator < 0:
            if deadline is not None and time.monotonic() > deadline:
                raise ConnectionError(f"no coordinator found for group {self.group_id}")
            try:
                self.coordinator = await self.kernel.find_coordinator(self.group_id)
            except Exception as exc:  # noqa: BLE001 - any lookup failure: back off and retry
                log.debug("find coordinator for %s: %r", self.group_id, exc)
                await asyncio.sleep(self.backoff)

    def _coordinator_lost(self) -> None:
        """Forgets the coordinator and drops the connection to it (its answers may be stale)."""
        if self.coordinator >= 0:
            self.kernel.disconnect(self.coordinator, "group")
        self.coordinator = -1

    async def _send(self, api_key: int, body: dict[str, Any], timeout: float | None = None) -> Any:
        return await self.kernel.send(self.coordinator, api_key, body, channel="group", timeout=timeout)
