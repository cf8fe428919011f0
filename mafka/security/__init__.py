"""Kafka's security model: who a connection is, what it may do, and how much of the broker it may use.

Plain Python, no I/O, time injected — the broker's network edge
(:mod:`mafka.broker.network`) and its handlers call into it:

* :mod:`.principal` — ``KafkaPrincipal`` (``User:alice``, ``User:ANONYMOUS``).
* SASL: :mod:`.jaas` (``sasl.jaas.config``), :mod:`.sasl` (the server contract,
  errors), :mod:`.sasl_plain`, :mod:`.sasl_scram` (RFC 5802/7677, both sides).
* TLS: :mod:`.tls` (contexts from ``ssl.*`` configs, PEM),
  :mod:`.ssl_principal_mapper` (``ssl.principal.mapping.rules``).
* Authorization: :mod:`.acl` (resources, patterns, bindings, filters),
  :mod:`.acl_znodes` (Kafka's ``/kafka-acl`` layout), :mod:`.authorizer`
  (``AclAuthorizer``'s decisions).
* Quotas: :mod:`.quotas` (windowed rates, throttle times), :mod:`.quota_entities`.
"""
