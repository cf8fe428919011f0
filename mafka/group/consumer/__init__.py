"""Kafka 4's consumer group protocol (KIP-848), beside the classic one in :mod:`mafka.group`.

A ``consumer`` group is driven by one heartbeat per member (ConsumerGroupHeartbeat): the
coordinator computes each member's target assignment with a server-side assignor and
reconciles every member towards it incrementally, a partition revoked from its owner before
it is given to another, so members that keep their partitions never stop.

* :mod:`.assignor_api`: what a server-side assignor is given and returns;
* :mod:`.assignors`: ``uniform`` and ``range`` (``group.consumer.assignors``).
"""
