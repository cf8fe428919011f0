"""Share groups (KIP-932): the plain-Python core, with no I/O and time passed in.

* :mod:`mafka.group.share.partition_state` — one share-partition's in-flight
  records (Kafka 4.x's ``SharePartition``): the share-partition start and end
  offsets, each record AVAILABLE / ACQUIRED / ACKNOWLEDGED / ARCHIVED with its
  delivery count and, while acquired, its member and lock expiry; acquisition,
  acknowledgement (ACCEPT / RELEASE / REJECT / RENEW), lock expiry, members
  leaving, ``share.auto.offset.reset``, read_committed and AlterShareGroupOffsets.
* :mod:`mafka.group.share.state_records` — the durable side: the
  ``__share_group_state`` records (ShareSnapshotKey/Value, ShareUpdateKey/Value)
  byte for byte as Kafka writes them, the share coordinator's choice of a
  snapshot or an update for each state write, and the replay that rebuilds a
  share-partition's durable state after a failover.

Nothing here is wired into the broker yet.
"""
