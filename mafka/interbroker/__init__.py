"""What brokers use to talk to each other: the reactor-side Kafka-protocol connection.

The controller's channel, the replica fetchers, the transaction coordinators' marker
channel and a stopping broker's controlled shutdown all send through
:class:`mafka.interbroker.connection.BrokerConnection`.  (Applications use
:mod:`mafka.client`, which has its own, thread-based transport.)
"""
