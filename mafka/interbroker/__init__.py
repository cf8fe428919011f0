"""What brokers use to talk to each other: the reactor-side Kafka-protocol connection.

The controller's channel, the replica fetchers, the transaction coordinators' marker
channel and a stopping broker's controlled shutdown all send through
:class:`mafka.interbroker.connection.InterBrokerConnection`.  (Applications use
:mod:`mafka.client`, whose own connection, :class:`mafka.client.transport.BrokerConnection`,
runs on the client's asyncio loop.)
"""
