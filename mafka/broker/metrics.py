"""The broker's Prometheus endpoint: ``/metrics`` and ``/health`` on ``mafka.metrics.port`` (Twisted edge).

Off unless ``mafka.metrics.port`` is set (``-1``, the default, serves
nothing; ``mafka cluster up --set mafka.metrics.port=1990${broker.id}`` gives
each local broker its own).  Names follow jmx_exporter's ``kafka-2_0_0.yml``
rules where Kafka has the metric, so existing dashboards and alerts work;
Mafka's own start with ``mafka_``.  Values are read from the broker's state
when scraped, on the reactor (one pass over the partitions):

* ``kafka_server_replicamanager_partitioncount``, ``…_leadercount``,
  ``…_underreplicatedpartitions``, ``…_underminisrpartitioncount``;
* ``kafka_controller_kafkacontroller_activecontrollercount`` (1 on the controller);
* ``mafka_delayed_pending_messages{topic,partition}`` — delayed records held
  by the partitions this broker leads; ``mafka_delayed_delivered_total``;
  ``mafka_delayed_delivery_lag_ms{quantile}`` — due time → appended, over
  the recent deliveries;
* ``mafka_txn_half_waiting_checks{producer_group}`` — check-backs queued for
  a producer group and not yet taken;
* ``kafka_network_requestmetrics_totaltimems{request,quantile}`` (0.5, 0.99 over
  the last minute) and ``kafka_network_requestmetrics_requests_total{request}``;
* ``mafka_broker_slow`` — 1 while the Produce TP99 over the last minute (100
  requests at least) is above ``mafka.slow.node.threshold.ms`` (Meituan's rule);
* with ``mafka.cold.log.dirs``: ``mafka_cold_segments_moved_total``,
  ``mafka_cold_dir_unusable{dir,reason}`` (1 while the mover stops using a
  cold dir: ``full`` or ``io_error``) and ``mafka_cold_reads_total``;
* ``mafka_background_pass_failures_total{pass}`` — failed runs of each
  periodic background pass of the broker, its controller and coordinators
  (:mod:`mafka.background`; the pass ran again at its next interval).

``/health`` answers 200 ``ok`` once the broker serves clients, 503 before.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from twisted.web.resource import Resource
from twisted.web.server import Site

from .request_latency import is_slow

__all__ = ["BrokerCollector", "metrics_site"]


class BrokerCollector:
    """A prometheus_client collector over one broker's live state."""

    def __init__(self, broker: Any) -> None:
        self.broker = broker

    def collect(self) -> Iterator[Metric]:
        b = self.broker
        rm = b.replica_manager
        partitions = list(rm.partitions.items()) if rm is not None else []
        leaders = [(tp, p) for tp, p in partitions if p.is_leader]
        under_min = sum(1 for (topic, _), p in leaders if len(p.isr) < rm.min_insync_replicas(topic))
        for name, value, text in (
            ("partitioncount", len(partitions), "Partitions hosted here"),
            ("leadercount", len(leaders), "Partitions led here"),
            ("underreplicatedpartitions", sum(1 for _, p in leaders if p.is_under_replicated),
             "Partitions led here whose ISR is smaller than their replica set"),
            ("underminisrpartitioncount", under_min, "Partitions led here with fewer in sync than min.insync.replicas"),
        ):
            yield GaugeMetricFamily(f"kafka_server_replicamanager_{name}", text, value=value)
        active = 1 if getattr(b.controller, "is_active", False) else 0
        yield GaugeMetricFamily("kafka_controller_kafkacontroller_activecontrollercount",
                                "1 on the active controller", value=active)
        pending = GaugeMetricFamily("mafka_delayed_pending_messages",
                                    "Delayed records held until due by the partitions led here",
                                    labels=["topic", "partition"])
        for (topic, index), p in leaders:
            if p.delays is not None:
                pending.add_metric([topic, str(index)], p.delays.index.pending_records())
        yield pending
        delivery = b.delayed_delivery
        yield CounterMetricFamily("mafka_delayed_delivered", "Delayed records delivered by this broker",
                                  value=delivery.delivered_records)
        lag = GaugeMetricFamily("mafka_delayed_delivery_lag_ms",
                                "Due time to append, over the recent deliveries", labels=["quantile"])
        for q, v in zip(("0.5", "0.99"), delivery.lateness_percentiles(0.5, 0.99), strict=True):
            if v is not None:
                lag.add_metric([q], v)
        yield lag
        waiting = GaugeMetricFamily("mafka_txn_half_waiting_checks",
                                    "Half-message check-backs queued for a producer group", labels=["producer_group"])
        for group, n in delivery.checks.waiting().items():
            waiting.add_metric([group], n)
        yield waiting
        yield from self._requests()

    def _requests(self) -> Iterator[Metric]:
        b = self.broker
        latencies = b.request_latencies
        now = int(b.reactor.seconds() * 1000)
        total = GaugeMetricFamily("kafka_network_requestmetrics_totaltimems",
                                  "Request total time (ms), over the last minute", labels=["request", "quantile"])
        count = CounterMetricFamily("kafka_network_requestmetrics_requests", "Requests answered",
                                    labels=["request"])
        for name, window in sorted(latencies.windows.items()):
            for q, v in zip(("0.5", "0.99"), window.percentiles(now, 0.5, 0.99), strict=True):
                if v is not None:
                    total.add_metric([name, q], v)
            count.add_metric([name], window.count)
        yield total
        yield count
        p99 = latencies.percentiles("Produce", now, 0.99)[0]
        slow = is_slow(p99, latencies.samples("Produce", now), b.config.mafka_slow_node_threshold_ms)
        yield GaugeMetricFamily("mafka_broker_slow", "1 while the Produce TP99 is above mafka.slow.node.threshold.ms",
                                value=1 if slow else 0)
        lm = getattr(b, "log_manager", None)
        if lm is not None and lm.cold_dirs:
            yield CounterMetricFamily("mafka_cold_segments_moved", "segments moved to the cold tier since startup",
                                      value=lm.segments_moved_cold)
            problems = GaugeMetricFamily("mafka_cold_dir_unusable",
                                         "1 for a cold log dir the mover stopped using (full, or an I/O error)",
                                         labels=["dir", "reason"])
            for d in lm.cold_dirs:
                why = lm.cold_dir_problems.get(d)
                problems.add_metric([str(d), "" if why is None else ("full" if why == "full" else "io_error")],
                                    0 if why is None else 1)
            yield problems
        reader = getattr(b, "cold_reads", None)
        if reader is not None:
            yield CounterMetricFamily("mafka_cold_reads", "fetch reads served from the cold tier", value=reader.reads)


class _Metrics(Resource):
    isLeaf = True

    def __init__(self, registry: CollectorRegistry) -> None:
        super().__init__()
        self.registry = registry

    def render_GET(self, request: Any) -> bytes:  # noqa: N802 - Twisted's name
        request.setHeader(b"Content-Type", CONTENT_TYPE_LATEST.encode())
        return generate_latest(self.registry)


class _Health(Resource):
    isLeaf = True

    def __init__(self, broker: Any) -> None:
        super().__init__()
        self.broker = broker

    def render_GET(self, request: Any) -> bytes:  # noqa: N802 - Twisted's name
        dispatcher = getattr(self.broker, "_dispatcher", None)
        ready = dispatcher is not None and getattr(dispatcher, "is_open", True)
        request.setResponseCode(200 if ready else 503)
        return b"ok\n" if ready else b"starting\n"


def metrics_site(broker: Any) -> Site:
    """The HTTP site serving ``/metrics`` and ``/health`` for ``broker``."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(BrokerCollector(broker))
    background = getattr(broker, "background", None)
    if background is not None:
        # the broker's own Counter, in the broker's own registry: no clash between brokers of one process
        registry.register(background.failures)
    root = Resource()
    root.putChild(b"metrics", _Metrics(registry))
    root.putChild(b"health", _Health(broker))
    return Site(root)
