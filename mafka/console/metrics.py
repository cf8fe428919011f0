"""The brokers' Prometheus endpoints, as the console reads them.

Where the endpoints are comes from ``--metrics [BROKER_ID=]URL`` (repeatable) and from a
``mafka cluster up`` ``cluster.json`` (``brokers[i].metrics``, when present).  A URL given
without a broker id is scraped all the same — the series the console wants carry their own
labels (``kafka_consumergroup_lag{consumergroup,topic,partition}``,
``kafka_server_brokertopicmetrics_messagesin_total{topic}``) — but a per-broker value
(``mafka_broker_slow``, ``mafka_cold_dir_unusable``) can be shown against a broker only
when the endpoint's broker is known; otherwise it is listed by URL.

:func:`scrape_all` fetches every endpoint at once, each bounded by a timeout, and parses
the text with ``prometheus_client.parser.text_string_to_metric_families``; a failed
endpoint is a :class:`Scrape` with ``error`` set, never an exception.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from prometheus_client.parser import text_string_to_metric_families

__all__ = [
    "Sample",
    "Scrape",
    "Target",
    "parse_samples",
    "parse_target",
    "scrape",
    "scrape_all",
    "targets_from_cluster_json",
    "lag_from",
    "messages_in_from",
    "summary",
    "LAG",
    "MESSAGES_IN",
    "SLOW",
    "COLD_DIR",
]

#: kafka_exporter's consumer lag (danielqsj/kafka_exporter names)
LAG = "kafka_consumergroup_lag"
#: jmx_exporter's BrokerTopicMetrics MessagesInPerSec, per topic
MESSAGES_IN = "kafka_server_brokertopicmetrics_messagesin_total"
SLOW = "mafka_broker_slow"
COLD_DIR = "mafka_cold_dir_unusable"

#: the most of an endpoint's answer read (a broker with 100,000 partitions answers a few MB)
MAX_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class Target:
    """One endpoint: its URL and, when known, the broker it belongs to."""

    url: str
    broker: int | None = None


@dataclass(frozen=True)
class Sample:
    name: str
    labels: dict[str, str] = field(hash=False)
    value: float


@dataclass
class Scrape:
    """One endpoint's answer at ``at`` (epoch seconds): its samples, or why there are none."""

    target: Target
    at: float
    samples: list[Sample] = field(default_factory=list)
    error: str | None = None

    def named(self, name: str) -> list[Sample]:
        return [s for s in self.samples if s.name == name]

    def value(self, name: str) -> float | None:
        """The first sample called ``name`` (a series without labels), None if there is none."""
        for s in self.samples:
            if s.name == name:
                return s.value
        return None


def parse_target(text: str) -> Target:
    """``--metrics`` value: ``URL`` or ``BROKER_ID=URL``.

    Raises:
        ValueError: not an http(s) URL, or a broker id that is not an integer.
    """
    broker: int | None = None
    head, sep, rest = text.partition("=")
    if sep and "://" not in head:
        try:
            broker = int(head)
        except ValueError:
            raise ValueError(f"bad --metrics value {text!r}: expected URL or BROKER_ID=URL") from None
        text = rest
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"bad --metrics URL {text!r}: expected http://HOST:PORT/metrics")
    return Target(text, broker)


def targets_from_cluster_json(path: str) -> list[Target]:
    """``brokers[i].metrics`` of a ``mafka cluster up`` ``cluster.json`` (brokers without one are skipped).

    Raises:
        OSError: the file cannot be read.
        ValueError: it is not such a file, or a metrics URL in it is not an http(s) URL.
    """
    with open(path, encoding="utf-8") as f:
        try:
            data = json.load(f)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path} is not JSON: {exc}") from None
    brokers = data.get("brokers") if isinstance(data, dict) else None
    if not isinstance(brokers, list):
        raise ValueError(f"{path} has no brokers list (not a cluster.json of mafka cluster up)")
    out = []
    for b in brokers:
        url = b.get("metrics") if isinstance(b, dict) else None
        if isinstance(url, str) and url:
            target = parse_target(url)
            out.append(Target(target.url, b.get("id") if isinstance(b.get("id"), int) else None))
    return out


def parse_samples(text: str) -> list[Sample]:
    """Every sample of a Prometheus text exposition.

    Raises:
        ValueError: the text does not parse.
    """
    return [Sample(s.name, dict(s.labels), float(s.value))
            for family in text_string_to_metric_families(text) for s in family.samples]


def _fetch(url: str, timeout: float) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - http(s) only, see parse_target
        body: bytes = response.read(MAX_BYTES)
    return body.decode("utf-8", "replace")


def scrape(target: Target, timeout: float, fetch: Callable[[str, float], str] = _fetch) -> Scrape:
    """One endpoint, bounded by ``timeout``; failures are reported in :attr:`Scrape.error`."""
    at = time.time()
    try:
        return Scrape(target, at, parse_samples(fetch(target.url, timeout)))
    except (OSError, urllib.error.URLError, TimeoutError) as exc:
        return Scrape(target, at, error=f"unreachable: {exc}")
    except ValueError as exc:
        return Scrape(target, at, error=f"not Prometheus text: {exc}")


def scrape_all(targets: Sequence[Target], timeout: float,
               fetch: Callable[[str, float], str] = _fetch) -> list[Scrape]:
    """Every endpoint at once (see :func:`scrape`), in the order given."""
    if not targets:
        return []
    with ThreadPoolExecutor(max_workers=min(16, len(targets)), thread_name_prefix="console-scrape") as pool:
        return list(pool.map(lambda t: scrape(t, timeout, fetch), targets))


def lag_from(scrapes: Iterable[Scrape]) -> dict[str, dict[tuple[str, int], int]]:
    """``kafka_consumergroup_lag`` of every scrape: {group: {(topic, partition): lag}}.

    A partition reported by several brokers takes the largest value (each reports what it
    knows; none reports less than the truth by more than a scrape interval).
    """
    out: dict[str, dict[tuple[str, int], int]] = {}
    for s in scrapes:
        for sample in s.named(LAG):
            labels = sample.labels
            try:
                key = (labels["topic"], int(labels["partition"]))
                group = labels["consumergroup"]
            except (KeyError, ValueError):
                continue
            lags = out.setdefault(group, {})
            lags[key] = max(lags.get(key, 0), int(sample.value))
    return out


def messages_in_from(scrapes: Iterable[Scrape]) -> dict[str, float] | None:
    """The per-topic ``messagesin`` counters summed over the brokers; None if no scrape has them."""
    found = False
    out: dict[str, float] = {}
    for s in scrapes:
        for sample in s.named(MESSAGES_IN):
            topic = sample.labels.get("topic")
            if topic is None:
                continue
            found = True
            out[topic] = out.get(topic, 0.0) + sample.value
    return out if found else None


def summary(scrape: Scrape) -> dict[str, Any]:
    """What the brokers page shows of one endpoint: slow flag and unusable cold dirs."""
    slow = scrape.value(SLOW)
    return {
        "url": scrape.target.url,
        "broker": scrape.target.broker,
        "error": scrape.error,
        "slow": None if slow is None else slow >= 1,
        "cold_dirs": [(s.labels.get("dir", ""), s.labels.get("reason", "") if s.value >= 1 else "")
                      for s in scrape.named(COLD_DIR)],
    }
