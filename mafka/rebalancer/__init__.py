"""Mafka's rebalancer: free-disk-first partition migration from the brokers' monitor reports.

* :mod:`.plan`: the plan (plain Python);
* :mod:`.execution`: a plan's execution state, pipelined (plain Python, time injected);
* :mod:`.service`: the Twisted edge on the controller broker (reads reports and
  ``/mafka/rebalancer/state``, submits reassignments, sets throttles).
"""
