"""The coordination layer: ZooKeeper behind the ClusterStore seam; Kafka 2.8's znodes.

* :mod:`mafka.coordination.store` — the :class:`~mafka.coordination.store.ClusterStore`
  protocol (Deferred-returning, reactor-thread callbacks, translated errors);
* :mod:`mafka.coordination.kazoo_store` — the real implementation over kazoo (the only
  module importing kazoo);
* :mod:`mafka.coordination.memory_store` — an in-memory ZooKeeper for unit tests;
* :mod:`mafka.coordination.zookeeper` — launches a real ZooKeeper server (single node
  or ensemble) from the templates in ``zk/``;
* :mod:`mafka.coordination.znodes` and :mod:`mafka.coordination.kafka_zk` — Kafka 2.8's
  znodes (paths and exact bytes) and its ZooKeeper operations over a ClusterStore.
"""
