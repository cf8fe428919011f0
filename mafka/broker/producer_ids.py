"""Producer ids for InitProducerId, handed out from blocks claimed in ZooKeeper.

Kafka 2.x's ``ProducerIdManager``: each broker claims a block of 1000 ids
from ``/latest_producer_id_block`` with a conditional write (so no two
brokers ever hold overlapping blocks) and hands them out one by one; a new
block is claimed when one runs out.  Concurrent requests while a claim is in
flight wait for it.
"""

from __future__ import annotations

from typing import Any

from twisted.internet import defer

__all__ = ["ProducerIdManager"]


class ProducerIdManager:
    """Allocates producer ids for one broker.

    Args:
        broker_id: this broker.
        claim_block: ``claim_block(broker_id) -> Deferred[ProducerIdBlock]``
            (``KafkaZkClient.claim_producer_id_block``).
    """

    def __init__(self, broker_id: int, claim_block: Any) -> None:
        self.broker_id = broker_id
        self.claim_block = claim_block
        self.next_id = 0
        self.block_end = -1  # inclusive; nothing claimed yet
        self._lock = defer.DeferredLock()

    def generate(self) -> defer.Deferred:
        """Fires with a producer id no other broker or call has been given."""
        return self._lock.run(self._generate)

    @defer.inlineCallbacks
    def _generate(self) -> Any:
        if self.next_id > self.block_end:
            block = yield self.claim_block(self.broker_id)
            self.next_id, self.block_end = block.block_start, block.block_end
        pid = self.next_id
        self.next_id += 1
        return pid
