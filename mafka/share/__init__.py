"""The share coordinator (KIP-932): durable share-partition state in ``__share_group_state``.

Plain Python, no I/O, time passed in:

* :mod:`mafka.share.state_types` — what callers send and get back per
  share-partition (Kafka's persister parameters and results): the same values
  whether the share coordinator answers locally or over the wire.
* :mod:`mafka.share.coordinator` — :class:`~mafka.share.coordinator.ShareCoordinator`,
  Kafka's ``ShareCoordinatorService`` + ``ShareCoordinatorShard`` over the
  ``__share_group_state`` partitions this broker leads: ownership and loads,
  InitializeShareGroupState / ReadShareGroupState / WriteShareGroupState /
  DeleteShareGroupState / ReadShareGroupStateSummary with Kafka's per-partition
  errors, each answered only once its record is appended; the partition of a
  share-partition (:func:`~mafka.share.coordinator.share_partition_for`).

The broker's edges are :mod:`mafka.broker.share_coordinator_service` (the
topic, loads on leadership), :mod:`mafka.broker.handlers.share_state` (the
RPCs) and :mod:`mafka.broker.share_persister` (the client side: Kafka's
``Persister`` for the share-partition leaders and the group coordinator).
"""
