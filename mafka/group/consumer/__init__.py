"""Kafka 4's consumer group protocol (KIP-848), beside the classic one in :mod:`mafka.group`.

A ``consumer`` group is driven by one heartbeat per member (ConsumerGroupHeartbeat): the
coordinator computes each member's target assignment with a server-side assignor and
reconciles every member towards it incrementally, a partition revoked from its owner before
it is given to another, so members that keep their partitions never stop.

* :mod:`.assignor_api`: what a server-side assignor is given and returns;
* :mod:`.assignors`: ``uniform`` and ``range`` (``group.consumer.assignors``);
* :mod:`.member`: a member and its state; :mod:`.reconciliation`: Kafka's
  ``CurrentAssignmentBuilder`` (revoke first, then assign what nobody still owns);
* :mod:`.target_assignment`: the group's target assignment from the assignor;
* :mod:`.group` (with :mod:`.group_types`, :mod:`.subscriptions`): the group and its
  heartbeat, timers and record replay;
* :mod:`.records`: Kafka 4's ``__consumer_offsets`` record types for these groups;
* :mod:`.manager`: the groups a coordinator holds: heartbeats written before they are
  answered, timers, loading and the member-epoch checks of offset commits and fetches.
"""
