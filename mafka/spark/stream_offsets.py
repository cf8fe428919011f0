"""Offset planning for streaming reads: where a query starts, and what each micro-batch covers.  Pure: no Spark.

The streaming twin of :mod:`mafka.spark.offset_ranges`, mirroring Spark's Kafka
source (``KafkaMicroBatchStream`` with its offset reader and range calculator).
A :class:`StreamPlanner` asks the cluster through the same
:class:`~mafka.spark.offset_ranges.OffsetSource` interface, with an injected
clock and sleep, so every rule below is unit-tested against a fake cluster:

* **Offsets** are ``{"topic": {"0": 23, "1": 40}}``: per partition, the next
  offset to read (Spark's ``KafkaSourceOffset`` / ``JsonUtils``, sorted by
  topic and partition).  They are what Spark writes to the checkpoint's
  offset log, so a restarted query resumes exactly where it committed.
* **Start** (only for a query with an empty checkpoint): ``startingOffsets``
  ``latest`` (the default), ``earliest`` or JSON naming every partition
  (−2 earliest, −1 latest); ``startingTimestamp`` wins over
  ``startingOffsetsByTimestamp``, which wins over ``startingOffsets``.
* **Each trigger** reads up to the latest offsets (the last stable offsets
  with ``kafka.isolation.level=read_committed``), fetched again — up to
  ``fetchOffset.numRetries`` times, ``fetchOffset.retryIntervalMs`` apart —
  while some partition's latest offset is below where the query already is
  (a stale answer).  Partitions of new topics matching ``subscribePattern``,
  of subscribed topics created later, and partitions added to a topic are
  read from their earliest offset.
* **Rate limits** (Spark's default read limit; ignored when the engine asks
  for everything): ``maxOffsetsPerTrigger`` caps the offsets of a batch,
  shared among the partitions in proportion to what each has available
  (rounded down, but at least one offset for a partition with any);
  ``minOffsetsPerTrigger`` skips the trigger while fewer offsets are
  available, unless ``maxTriggerDelay`` (default 15m) has passed since the
  last batch.  ``Trigger.AvailableNow`` fixes the latest offsets at the
  query's start and never waits for ``minOffsetsPerTrigger``.
* **Data loss** (``failOnDataLoss``, default true: fail with Spark's
  message; false: log it and go on): a partition or topic gone, a new
  partition whose earliest offset is not 0 or that vanished before it was
  read, and a partition whose latest offset went below where the query is
  (the topic was recreated or truncated).  Offsets deleted from below a
  range are found by the task that reads it (:mod:`mafka.spark.range_reader`).
* **A first batch re-run** after a restart (logged, never committed) starts
  from ``initialOffset()`` resolved again: where ``latest`` has moved past the
  batch's logged end, the batch reads nothing there instead of failing
  (Spark's Kafka source keeps its first offsets in a file of its own in the
  checkpoint; a Python source is not told where the checkpoint is).
* **Ranges** with nothing in them are left out; ``minPartitions`` and
  ``maxRecordsPerPartition`` split the rest as a batch read does
  (:func:`~mafka.spark.offset_ranges.split_ranges`).
"""

from __future__ import annotations

import logging
import math
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from mafka.spark.offset_ranges import (
    OffsetRange,
    OffsetSource,
    ReadOptions,
    ReadOptionsError,
    _resolve,
    parse_read_options,
    split_ranges,
)
from mafka.topics import TopicPartitionTuple

__all__ = [
    "PartitionOffsets",
    "StreamOptions",
    "StreamPlanner",
    "StreamDataLossError",
    "parse_stream_options",
    "offsets_to_json",
    "offsets_from_json",
    "time_string_ms",
    "INSTRUCTION_FOR_FAIL_ON_DATA_LOSS_TRUE",
    "INSTRUCTION_FOR_FAIL_ON_DATA_LOSS_FALSE",
]

log = logging.getLogger("mafka.spark")

#: the next offset to read, per topic-partition
PartitionOffsets = dict[TopicPartitionTuple, int]

#: Spark's ``KafkaSourceProvider`` texts, appended to a data-loss message
INSTRUCTION_FOR_FAIL_ON_DATA_LOSS_TRUE = (
    "Some data may have been lost because they are not available in Kafka any more; either the "
    "data was aged out by Kafka or the topic may have been deleted before all the data in the "
    "topic was processed. If you don't want your streaming query to fail on such cases, set the "
    'source option "failOnDataLoss" to "false".')
INSTRUCTION_FOR_FAIL_ON_DATA_LOSS_FALSE = (
    "Some data may have been lost because they are not available in Kafka any more; either the "
    "data was aged out by Kafka or the topic may have been deleted before all the data in the "
    "topic was processed. If you want your streaming query to fail on such cases, set the source "
    'option "failOnDataLoss" to "true".')

DEFAULT_MAX_TRIGGER_DELAY = "15m"


class StreamDataLossError(RuntimeError):
    """Offsets the query should have read are gone (``failOnDataLoss=true``); Spark's IllegalStateException."""


@dataclass(frozen=True)
class StreamOptions:
    """A validated streaming read request (see :func:`parse_stream_options`)."""

    read: ReadOptions
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60 * 1000
    fetch_retries: int = 3
    fetch_retry_interval_ms: int = 1000
    poll_timeout: float = 120.0


def parse_stream_options(options: Mapping[str, str]) -> StreamOptions:
    """Validates Spark-Kafka-source options for a streaming read (keys case-insensitive).

    Raises:
        ReadOptionsError: naming the offending option.
    """
    opts = {str(k).lower(): str(v) for k, v in options.items()}
    read = parse_read_options(opts, streaming=True)

    def positive(key: str, name: str, minimum: int = 1) -> int | None:
        if key not in opts:
            return None
        try:
            value = int(opts[key].strip())
        except ValueError:
            raise ReadOptionsError(f"option '{name}' must be an integer, not {opts[key]!r}") from None
        if value < minimum:
            raise ReadOptionsError(f"option '{name}' must be at least {minimum}, not {value}")
        return value

    raw_delay = opts.get("maxtriggerdelay", DEFAULT_MAX_TRIGGER_DELAY)
    try:
        delay = time_string_ms(raw_delay)
    except ValueError as exc:
        raise ReadOptionsError(f"option 'maxTriggerDelay': {exc}") from None
    poll = positive("kafkaconsumer.polltimeoutms", "kafkaConsumer.pollTimeoutMs")
    retries = positive("fetchoffset.numretries", "fetchOffset.numRetries")
    interval = positive("fetchoffset.retryintervalms", "fetchOffset.retryIntervalMs", minimum=0)
    return StreamOptions(
        read=read,
        max_offsets_per_trigger=positive("maxoffsetspertrigger", "maxOffsetsPerTrigger"),
        min_offsets_per_trigger=positive("minoffsetspertrigger", "minOffsetsPerTrigger"),
        max_trigger_delay_ms=delay,
        fetch_retries=3 if retries is None else retries,
        fetch_retry_interval_ms=1000 if interval is None else interval,
        poll_timeout=120.0 if poll is None else poll / 1000.0,
    )


_TIME_UNITS = {"us": 0.001, "ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}


def time_string_ms(raw: str) -> int:
    """Milliseconds in a Spark time string: ``"15m"``, ``"30s"``, ``"500ms"``, ``"1h"``; a bare number is ms."""
    match = re.fullmatch(r"\s*(\d+)\s*([a-z]*)\s*", raw.lower())
    if match is None or match.group(2) not in ("", *_TIME_UNITS):
        raise ValueError(f"invalid time string {raw!r} (use e.g. 15m, 30s, 500ms)")
    return int(int(match.group(1)) * _TIME_UNITS.get(match.group(2) or "ms", 1))


# -- offsets as JSON (the checkpoint's form) ---------------------------------------------------


def offsets_to_json(offsets: Mapping[TopicPartitionTuple, int]) -> dict[str, dict[str, int]]:
    """``{"topic": {"0": 23}}``, topics and partitions in order (Spark's ``JsonUtils.partitionOffsets``)."""
    out: dict[str, dict[str, int]] = {}
    for topic, partition in sorted(offsets):
        out.setdefault(topic, {})[str(partition)] = int(offsets[(topic, partition)])
    return out


def offsets_from_json(value: Any) -> PartitionOffsets:
    """The offsets of :func:`offsets_to_json` (as a dict, or its JSON text) back as {(topic, partition): offset}.

    Raises:
        ValueError: Spark's "Expected e.g. ..." for anything else.
    """
    import json

    original = value
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            value = None
    out: PartitionOffsets = {}
    try:
        if not isinstance(value, dict):
            raise TypeError
        for topic, parts in value.items():
            if not isinstance(parts, dict):
                raise TypeError
            for p, offset in parts.items():
                if isinstance(offset, bool) or not isinstance(offset, int):
                    raise TypeError
                out[(str(topic), int(p))] = offset
    except (TypeError, ValueError):
        raise ValueError(f'Expected e.g. {{"topicA":{{"0":23,"1":-1}},"topicB":{{"0":-2}}}}, got {original}') from None
    return out


def _tp(tp: TopicPartitionTuple) -> str:
    return f"{tp[0]}-{tp[1]}"


def _tp_set(tps: Iterable[TopicPartitionTuple]) -> str:
    """A set of partitions as Spark prints one: ``Set(t-0, t-1)``."""
    return "Set(" + ", ".join(_tp(tp) for tp in sorted(tps)) + ")"


# -- the planner -------------------------------------------------------------------------------

T = TypeVar("T")


class StreamPlanner:
    """One streaming query's offset planning (Spark's ``KafkaMicroBatchStream``), kept for the query's life.

    Args:
        options: the validated request.
        source: the cluster's offsets.
        clock: milliseconds now (``maxTriggerDelay``).
        sleep: waits seconds between offset fetch attempts.
    """

    def __init__(self, options: StreamOptions, source: OffsetSource,
                 clock: Callable[[], float] = lambda: time.time() * 1000.0,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.options = options
        self.source = source
        self.clock = clock
        self.sleep = sleep
        #: the latest offsets seen by the last :meth:`latest_offsets` (reported in the query's progress)
        self.latest: PartitionOffsets | None = None
        self.available_now = False
        self._available_now_target: PartitionOffsets | None = None
        self._last_trigger_ms = 0.0
        self._initial: PartitionOffsets | None = None
        self._triggered = False

    # -- the partitions read ------------------------------------------------------------------

    def partitions(self) -> list[TopicPartitionTuple]:
        """The partitions read now: assigned ones that exist, every partition of the subscribed
        topics that exist, or of the topics matching the pattern (internal topics left out)."""
        counts = self._retrying(self.source.partition_counts)
        read = self.options.read
        if read.assign is not None:
            return sorted((t, p) for t, parts in read.assign.items() if t in counts for p in parts if p < counts[t])
        if read.subscribe is not None:
            topics = sorted(t for t in set(read.subscribe) if t in counts)
        else:
            regex = re.compile(read.subscribe_pattern or "")
            topics = sorted(t for t in counts if regex.fullmatch(t) and not t.startswith("__"))
        return [(t, p) for t in topics for p in range(counts[t])]

    # -- the start ----------------------------------------------------------------------------

    def initial_offsets(self) -> PartitionOffsets:
        """Where a query with an empty checkpoint starts (``startingOffsets`` / timestamps).

        Raises:
            ReadOptionsError: a JSON spec that does not name exactly the partitions read, or a
                timestamp no record is at or after (``startingOffsetsByTimestampStrategy=error``).
        """
        tps = self.partitions()
        if not tps:
            return {}
        earliest = self._retrying(lambda: self.source.earliest(tps))
        latest = self._retrying(lambda: self.source.latest(tps))
        read = self.options.read
        self._initial = _resolve(read.starting, "starting", tps, earliest, latest, self.source,
                                 read.by_timestamp_strategy)
        return dict(self._initial)

    # -- each trigger -------------------------------------------------------------------------

    def latest_offsets(self, start: Mapping[TopicPartitionTuple, int], read_all: bool = False) -> PartitionOffsets:
        """The end of the next batch starting at ``start``: the latest offsets, limited by the rate
        options unless ``read_all`` (the engine's ReadAllAvailable); ``start`` itself to skip it."""
        self._triggered = True
        if self.available_now and self._available_now_target is not None:
            latest = self._available_now_target
        else:
            latest = self._fetch_latest(start)
            if self.available_now:
                self._available_now_target = latest
        self.latest = dict(latest)
        if read_all:
            return dict(latest)
        opts = self.options
        if opts.min_offsets_per_trigger is not None and not self.available_now and self._delay_batch(
                opts.min_offsets_per_trigger, latest, start, opts.max_trigger_delay_ms):
            log.debug("delaying the batch: fewer than minOffsetsPerTrigger offsets available")
            return dict(start)
        if opts.max_offsets_per_trigger is not None:
            return self._rate_limit(opts.max_offsets_per_trigger, start, latest)
        return dict(latest)

    def plan_ranges(self, start: Mapping[TopicPartitionTuple, int],
                    end: Mapping[TopicPartitionTuple, int]) -> list[OffsetRange]:
        """The offset ranges of the batch ``start`` to ``end`` (Spark's ``getOffsetRangesFromResolvedOffsets``).

        Raises:
            StreamDataLossError: offsets lost, with ``failOnDataLoss=true``.
        """
        new = sorted(set(end) - set(start))
        new_initial = self._earliest_of(new)
        if set(new_initial) != set(new):
            self._report_data_loss(f"Cannot find earliest offsets of {_tp_set(set(new) - set(new_initial))}. "
                                   f"Some data may have been missed")
        if new_initial:
            log.info("Partitions added: %s", {_tp(tp): o for tp, o in sorted(new_initial.items())})
        for tp, offset in sorted(new_initial.items()):
            if offset != 0:
                self._report_data_loss(f"Added partition {_tp(tp)} starts from {offset} instead of 0. "
                                       f"Some data may have been missed")
        deleted = set(start) - set(end)
        if deleted:
            self._report_data_loss(f"{_tp_set(deleted)} are gone. Some data may have been missed.")
        # A restarted query whose first batch was logged but never committed: Spark re-runs it
        # from initialOffset(), asked again -- so ``latest`` may now be past the logged end.
        replay = not self._triggered and self._initial is not None and dict(start) == self._initial
        ranges = []
        for tp in sorted(end):
            if tp not in start and tp not in new_initial:
                continue  # gone before its earliest offset could be found
            lo = start[tp] if tp in start else new_initial[tp]
            hi = end[tp]
            if hi < lo and replay:
                log.warning("%s: the first batch is re-run from %d, past its logged end %d: nothing to read",
                            _tp(tp), lo, hi)
            elif hi < lo:
                self._report_data_loss(f"Partition {_tp(tp)}'s offset was changed from {lo} to {hi}, "
                                       f"some data may have been missed")
            if hi > lo:
                ranges.append(OffsetRange(tp[0], tp[1], lo, hi))
        read = self.options.read
        return split_ranges(ranges, read.min_partitions, read.max_records_per_partition)

    # -- Spark's helpers ----------------------------------------------------------------------

    def _fetch_latest(self, known: Mapping[TopicPartitionTuple, int]) -> PartitionOffsets:
        """The latest offsets, fetched again while some are below ``known`` (KafkaOffsetReaderAdmin)."""
        attempt = 0
        while True:
            latest = self._latest_of(self.partitions())
            attempt += 1
            behind = [(tp, known[tp], offset) for tp, offset in sorted(latest.items())
                      if tp in known and known[tp] > offset]
            if not behind or attempt >= self.options.fetch_retries:
                if behind:
                    log.warning("latest offsets below the query's (partition, previous, fetched): %s",
                                [(_tp(tp), k, o) for tp, k, o in behind])
                return latest
            log.warning("latest offsets below the query's, fetching them again: %s",
                        [(_tp(tp), k, o) for tp, k, o in behind])
            self.sleep(self.options.fetch_retry_interval_ms / 1000.0)

    def _latest_of(self, tps: list[TopicPartitionTuple]) -> PartitionOffsets:
        return self._retrying(lambda: self.source.latest(tps)) if tps else {}

    def _earliest_of(self, tps: list[TopicPartitionTuple]) -> PartitionOffsets:
        """Earliest offsets of those of ``tps`` that still exist."""
        if not tps:
            return {}
        present = set(self.partitions())
        wanted = [tp for tp in tps if tp in present]
        return self._retrying(lambda: self.source.earliest(wanted)) if wanted else {}

    def _delay_batch(self, min_rows: int, latest: Mapping[TopicPartitionTuple, int],
                     current: Mapping[TopicPartitionTuple, int], max_delay_ms: int) -> bool:
        now = self.clock()
        if now - self._last_trigger_ms >= max_delay_ms:
            log.debug("maxTriggerDelay has passed, triggering a batch")
            self._last_trigger_ms = now
            return False
        new_records = sum(offset - current.get(tp, 0) for tp, offset in latest.items())
        if new_records < min_rows:
            return True
        self._last_trigger_ms = now
        return False

    def _rate_limit(self, limit: int, start: Mapping[TopicPartitionTuple, int],
                    until: Mapping[TopicPartitionTuple, int]) -> PartitionOffsets:
        """``limit`` offsets shared among the partitions in proportion to their sizes (Spark's rateLimit)."""
        new = sorted(set(until) - set(start))
        from_new = self._earliest_of(new) if new else {}
        sizes = {}
        for tp, end in until.items():
            begin = start.get(tp, from_new.get(tp))
            if begin is not None and end - begin > 0:
                sizes[tp] = end - begin
        total = float(sum(sizes.values()))
        if total < 1:
            return dict(until)
        out = {}
        for tp, end in until.items():
            if tp not in sizes:
                out[tp] = end
                continue
            begin = start[tp] if tp in start else from_new[tp]
            prorate = limit * (sizes[tp] / total)
            share = math.ceil(prorate) if prorate < 1 else math.floor(prorate)  # never starve a partition
            out[tp] = min(end, begin + share)
        return out

    def _report_data_loss(self, message: str) -> None:
        if self.options.read.fail_on_data_loss:
            raise StreamDataLossError(f"{message}. {INSTRUCTION_FOR_FAIL_ON_DATA_LOSS_TRUE}")
        log.warning("%s. %s", message, INSTRUCTION_FOR_FAIL_ON_DATA_LOSS_FALSE)

    def _retrying(self, ask: Callable[[], T]) -> T:
        """``ask()``, tried up to ``fetchOffset.numRetries`` times (Spark's withRetries)."""
        attempt = 1
        while True:
            try:
                return ask()
            except Exception as exc:  # noqa: BLE001 - retried, then raised as it is
                if attempt >= self.options.fetch_retries:
                    raise
                log.warning("attempt %d getting Kafka offsets failed: %s", attempt, exc)
                attempt += 1
                self.sleep(self.options.fetch_retry_interval_ms / 1000.0)

