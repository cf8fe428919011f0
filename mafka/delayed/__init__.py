"""Mafka's delayed messages: records accepted now, made visible to consumers at a due time.

Design (``docs/delayed-messages.md`` tells it whole):

* a produced batch that asks for delay (a record header ``mafka.delay.ms`` /
  ``mafka.deliver.at``, or the topic's ``mafka.delay.ms``) is stored in the
  target partition's own log inside an *envelope*: a control batch that every
  Kafka client skips, carrying the producer's id, epoch and sequences and
  the original batch bytes (:mod:`.envelope`).  It is replicated, acknowledged
  and retained by the partition's ordinary rules, and the producer gets the
  offsets it would have got;
* every replica indexes the envelopes it appends by due time — a hierarchical
  timing wheel for the near future, on-disk time buckets for the rest
  (:mod:`.wheel`, :mod:`.buckets`);
* at due time the partition's leader appends the records as an ordinary batch,
  each with ``mafka.delayed.offset`` (the offset it was acknowledged at) and
  ``mafka.original.timestamp``.  Whether an envelope's records were delivered is
  read from the log itself, so a new leader neither loses nor repeats one.

Local-transaction **half messages** ride the same machinery: a half envelope
(``mafka.txn.half`` header) is delivered when its producer commits
(MafkaEndHalf) and never when it rolls back (a cancel marker in the log);
unresolved, it is checked back through its producer group (:mod:`.checks`).
"""
