"""Test support shared by the integration tests and ``scripts/`` (no tests here; nothing named ``test_*``).

* :mod:`.cluster`: :class:`~.cluster.LocalCluster`, a real local cluster (``mafka cluster up``), and
  :class:`~.cluster.ClusterSpec` / :class:`~.cluster.ClusterFactory` behind the integration tests'
  shared and per-module clusters;
* :mod:`.waits`: the bounded waits (``wait_until``, ``wait_dead``, ``process_state``);
* :mod:`.raw_client`: a blocking Kafka-protocol client for probing brokers;
* :mod:`.raw_connection`: one connection sending exact requests, with SASL (the security tests' attacks);
* :mod:`.client_round_trips`: produce/consume/commit round trips of the real clients over any listener;
* :mod:`.certs`: a test PKI (CA, broker, clients, expired and untrusted certificates);
* :mod:`.checker`: the delivery checker (lost, duplicated, reordered, diverged);
* :mod:`.chaos`: fault injection and the continuous producer and drain;
* :mod:`.group_clients` + ``group_member.py`` (the member process): consumer-group members;
* :mod:`.group_chaos`: a consumer group under faults, and its checks;
* :mod:`.txn_chaos`: the exactly-once run (``python -m tests.harness.txn_chaos member …`` its members);
* :mod:`.docker`: the docker-compose cluster and its real-network fault table.

Tests import these from ``tests.harness``; they never import the tests.
"""
