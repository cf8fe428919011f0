"""The slow-node monitor's report format (``/mafka/monitor/<broker-id>``), below its writer and its readers.

* :mod:`.report`: reading a report back (:func:`~.report.parse_report`).

The broker writes the reports (:mod:`mafka.broker.monitor`); the rebalancer
(:mod:`mafka.rebalancer.service`) and ``mafka cluster-status``
(:mod:`mafka.cli.cluster_status`) read them through this package, never
through the broker.
"""
