"""Producer-id blocks from ZooKeeper (MemoryStore), handed out without overlap."""

from __future__ import annotations

from mafka.broker.producer_ids import ProducerIdManager
from mafka.coordination.kafka_zk import KafkaZkClient
from mafka.coordination.memory_store import MemoryStore, MemoryZooKeeper


def _ids(manager, n):
    out = []
    for _ in range(n):
        manager.generate().addCallback(out.append)
    return out


def test_two_brokers_never_share_an_id():
    tree = MemoryZooKeeper()
    zks = []
    for _ in range(2):
        store = MemoryStore(tree)
        store.start()
        zk = KafkaZkClient(store)
        zk.create_persistent_roots()
        zks.append(zk)
    a = ProducerIdManager(1, zks[0].claim_producer_id_block)
    b = ProducerIdManager(2, zks[1].claim_producer_id_block)
    got_a = _ids(a, 1500)
    got_b = _ids(b, 1500)
    assert len(got_a) == len(got_b) == 1500
    assert len(set(got_a) | set(got_b)) == 3000
    assert got_a[:3] == [0, 1, 2] and got_a[1000] == 1000 and got_b[0] == 2000
