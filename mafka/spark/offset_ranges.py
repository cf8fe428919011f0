"""Offset ranges and the planner that turns a read request into them.  Pure: no I/O, no Spark.

A batch read is planned once, on the driver: the request (Spark's Kafka
source options, see :func:`parse_read_options`) is resolved against the
cluster's offsets into a fixed list of :class:`OffsetRange` — so a job reads
a repeatable slice even while producers keep writing — and each range
becomes one Spark partition.  The cluster is asked through the small
:class:`OffsetSource` interface (the I/O layer implements it with
``mafka.client``; unit tests with a dict).

Rules, as Spark's Kafka source applies them to batch queries:

* starting offsets default to earliest, ending offsets to latest; a JSON
  spec (``{"t": {"0": 23, "1": -2}}``, −2 earliest, −1 latest) must name
  every partition of the topics read; a batch cannot start at latest nor
  end at earliest;
* a global timestamp (``startingTimestamp``) wins over per-partition
  timestamps (``startingOffsetsByTimestamp``), which win over offsets; a
  timestamp with no record at or after it is an error, or the latest offset
  with ``startingOffsetsByTimestampStrategy=latest``;
* ranges are clipped to the high watermark; a start below the log start
  offset fails the plan (``failOnDataLoss=true``, the default) or moves to
  the log start with a warning; a start after the end is an error;
* empty ranges are left out; ``maxRecordsPerPartition`` splits a range into
  parts of at most that many records, and ``minPartitions`` splits large
  ranges in proportion to their size until there are about that many
  (Spark's ``KafkaOffsetRangeCalculator``: a hint, rounded).
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from mafka.errors import ConfigError
from mafka.topics import TopicPartitionTuple
from mafka.wire.apis.list_offsets import EARLIEST_TIMESTAMP as EARLIEST
from mafka.wire.apis.list_offsets import LATEST_TIMESTAMP as LATEST

__all__ = [
    "OffsetRange",
    "ReadOptions",
    "ReadOptionsError",
    "OffsetSource",
    "EARLIEST",
    "LATEST",
    "parse_read_options",
    "plan_ranges",
    "split_ranges",
]

log = logging.getLogger("mafka.spark")


@dataclass(frozen=True, slots=True, order=True)
class OffsetRange:
    """Records ``from_offset`` (inclusive) to ``until_offset`` (exclusive) of one topic-partition."""

    topic: str
    partition: int
    from_offset: int
    until_offset: int

    def count(self) -> int:
        """How many offsets the range spans (compacted or transactional logs may hold fewer records)."""
        return self.until_offset - self.from_offset

    @property
    def topic_partition(self) -> TopicPartitionTuple:
        return (self.topic, self.partition)


class ReadOptionsError(ValueError):
    """A read request that cannot be planned; the message names the option."""


@dataclass(frozen=True)
class _Spec:
    """Where ranges start or end: a keyword, offsets per partition, or timestamps."""

    keyword: int | None = None  # EARLIEST / LATEST for every partition
    offsets: dict[str, dict[int, int]] | None = None
    timestamp: int | None = None  # one timestamp for every partition
    timestamps: dict[str, dict[int, int]] | None = None


@dataclass(frozen=True)
class ReadOptions:
    """A validated read request (see :func:`parse_read_options`)."""

    bootstrap_servers: str
    subscribe: tuple[str, ...] | None = None
    subscribe_pattern: str | None = None
    assign: dict[str, tuple[int, ...]] | None = None
    starting: _Spec = field(default_factory=lambda: _Spec(keyword=EARLIEST))
    ending: _Spec = field(default_factory=lambda: _Spec(keyword=LATEST))
    by_timestamp_strategy: str = "error"
    fail_on_data_loss: bool = True
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    include_headers: bool = False
    client_config: dict[str, str] = field(default_factory=dict)


#: Options read by the planner and the reader (lower case: Spark passes them case-insensitively).
_KNOWN = {
    "subscribe", "subscribepattern", "assign", "startingoffsets", "endingoffsets",
    "startingtimestamp", "endingtimestamp", "startingoffsetsbytimestamp", "endingoffsetsbytimestamp",
    "startingoffsetsbytimestampstrategy", "failondataloss", "minpartitions", "maxrecordsperpartition",
    "includeheaders", "fetchoffset.numretries", "fetchoffset.retryintervalms", "kafkaconsumer.polltimeoutms",
    "groupidprefix", "path",
    # streaming only (a batch read ignores them, as Spark's Kafka source does)
    "maxoffsetspertrigger", "minoffsetspertrigger", "maxtriggerdelay",
}
#: Client settings Spark's Kafka source refuses: the reader owns them.
_REFUSED_CLIENT = {
    "auto.offset.reset": "use startingOffsets instead",
    "enable.auto.commit": "the reader never commits offsets",
    "key.deserializer": "keys are always returned as bytes",
    "value.deserializer": "values are always returned as bytes",
    "interceptor.classes": "not supported",
}


def java_client_security(client: dict[str, str]) -> dict[str, str]:
    """The Java client's security keys among *client* as mafka.client's (spark-sql-kafka's ``kafka.*`` options).

    Raises:
        ReadOptionsError: a key that cannot be translated (a JKS store, a Kerberos login …).
    """
    from mafka.client.java_security import translate_java_security  # noqa: PLC0415 (only with security keys)

    if not any(k.startswith(("ssl.", "sasl.")) for k in client):
        return client
    try:
        return {k: str(v) for k, v in translate_java_security(client).items()}
    except ConfigError as exc:
        raise ReadOptionsError(f"option 'kafka.{exc.key}': {exc}" if getattr(exc, "key", None) else str(exc)) from None


def parse_read_options(options: Mapping[str, str], *, streaming: bool = False) -> ReadOptions:
    """Validates Spark-Kafka-source options (keys case-insensitive).

    ``streaming=True`` validates them for a streaming read instead:
    starting offsets default to latest (and may be latest), and the
    ``ending*`` options are refused.

    ``kafka.bootstrap.servers`` (or ``mafka.bootstrap.servers``) is required,
    and exactly one of ``subscribe`` (comma-separated), ``subscribePattern``
    (a regex) and ``assign`` (JSON ``{"t": [0, 1]}``).  Other ``kafka.`` /
    ``mafka.`` options are client settings passed through with the prefix
    stripped; the Java client's security keys spark-sql-kafka users write
    (``kafka.security.protocol``, ``kafka.sasl.jaas.config``,
    ``kafka.ssl.truststore.location`` …) become mafka.client's
    (:func:`java_client_security`).

    Raises:
        ReadOptionsError: naming the offending option.
    """
    opts = {str(k).lower(): str(v) for k, v in options.items()}
    client: dict[str, str] = {}
    for key, value in opts.items():
        for prefix in ("kafka.", "mafka."):
            if key.startswith(prefix):
                name = key[len(prefix):]
                if name in _REFUSED_CLIENT:
                    raise ReadOptionsError(f"option '{key}' is not supported: {_REFUSED_CLIENT[name]}")
                client[name] = value
                break
        else:
            if key not in _KNOWN:
                raise ReadOptionsError(f"unknown option '{key}'")
    bootstrap = client.pop("bootstrap.servers", "").strip()
    if not bootstrap:
        raise ReadOptionsError("option 'kafka.bootstrap.servers' is required")
    client = java_client_security(client)

    chosen = [k for k in ("subscribe", "subscribepattern", "assign") if k in opts]
    if len(chosen) != 1:
        raise ReadOptionsError(
            "exactly one of the options 'subscribe', 'subscribePattern' or 'assign' is required"
            + (f" (got {', '.join(chosen)})" if chosen else ""))
    subscribe = pattern = assign = None
    if "subscribe" in opts:
        subscribe = tuple(t.strip() for t in opts["subscribe"].split(",") if t.strip())
        if not subscribe:
            raise ReadOptionsError("option 'subscribe' names no topic")
    elif "subscribepattern" in opts:
        pattern = opts["subscribepattern"]
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ReadOptionsError(f"option 'subscribePattern' is not a valid regex: {exc}") from None
    else:
        assign = _assign_json(opts["assign"])

    if streaming:
        for key in ("endingoffsets", "endingtimestamp", "endingoffsetsbytimestamp"):
            if key in opts:
                raise ReadOptionsError(f"option '{_name(key)}' is not valid in streaming queries")
    starting = _spec(opts, "starting", LATEST if streaming else EARLIEST)
    ending = _spec(opts, "ending")
    if not streaming and (starting.keyword == LATEST or _any_value(starting.offsets, LATEST)):
        raise ReadOptionsError("option 'startingOffsets' cannot be latest (-1) for a batch read")
    if ending.keyword == EARLIEST or _any_value(ending.offsets, EARLIEST):
        raise ReadOptionsError("option 'endingOffsets' cannot be earliest (-2) for a batch read")
    strategy = opts.get("startingoffsetsbytimestampstrategy", "error").lower()
    if strategy not in ("error", "latest"):
        raise ReadOptionsError("option 'startingOffsetsByTimestampStrategy' must be 'error' or 'latest'")
    return ReadOptions(
        bootstrap_servers=bootstrap,
        subscribe=subscribe,
        subscribe_pattern=pattern,
        assign=assign,
        starting=starting,
        ending=ending,
        by_timestamp_strategy=strategy,
        fail_on_data_loss=_bool(opts, "failondataloss", True),
        min_partitions=_positive(opts, "minpartitions"),
        max_records_per_partition=_positive(opts, "maxrecordsperpartition"),
        include_headers=_bool(opts, "includeheaders", False),
        client_config=client,
    )


_OPTION_NAMES = {
    "startingoffsets": "startingOffsets", "endingoffsets": "endingOffsets",
    "startingtimestamp": "startingTimestamp", "endingtimestamp": "endingTimestamp",
    "startingoffsetsbytimestamp": "startingOffsetsByTimestamp", "endingoffsetsbytimestamp": "endingOffsetsByTimestamp",
    "failondataloss": "failOnDataLoss", "includeheaders": "includeHeaders",
    "minpartitions": "minPartitions", "maxrecordsperpartition": "maxRecordsPerPartition",
    "maxoffsetspertrigger": "maxOffsetsPerTrigger", "minoffsetspertrigger": "minOffsetsPerTrigger",
    "maxtriggerdelay": "maxTriggerDelay", "fetchoffset.numretries": "fetchOffset.numRetries",
    "fetchoffset.retryintervalms": "fetchOffset.retryIntervalMs",
}


def _name(key: str) -> str:
    return _OPTION_NAMES.get(key, key)


def _spec(opts: dict[str, str], side: str, default: int | None = None) -> _Spec:
    ts_key, by_ts_key, off_key = f"{side}timestamp", f"{side}offsetsbytimestamp", f"{side}offsets"
    if ts_key in opts:
        return _Spec(timestamp=_int(opts[ts_key], _name(ts_key), minimum=0))
    if by_ts_key in opts:
        return _Spec(timestamps=_per_partition_json(opts[by_ts_key], _name(by_ts_key), minimum=0))
    if off_key not in opts:
        if default is not None:
            return _Spec(keyword=default)
        return _Spec(keyword=EARLIEST if side == "starting" else LATEST)
    raw = opts[off_key].strip()
    if raw.lower() == "earliest":
        return _Spec(keyword=EARLIEST)
    if raw.lower() == "latest":
        return _Spec(keyword=LATEST)
    return _Spec(offsets=_per_partition_json(raw, _name(off_key), minimum=EARLIEST))


def _per_partition_json(raw: str, option: str, minimum: int) -> dict[str, dict[int, int]]:
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise ReadOptionsError(f"option '{option}' is not valid JSON ({exc}): {raw!r}") from None
    if not isinstance(value, dict) or not value:
        raise ReadOptionsError(f"option '{option}' must be a JSON object like {{\"topic\": {{\"0\": 23}}}}")
    out: dict[str, dict[int, int]] = {}
    for topic, parts in value.items():
        if not isinstance(parts, dict):
            raise ReadOptionsError(f"option '{option}': topic {topic!r} must map partitions to numbers")
        out[topic] = {}
        for p, v in parts.items():
            partition = _int(p, option, minimum=0)
            if isinstance(v, bool) or not isinstance(v, int) or v < minimum:
                raise ReadOptionsError(f"option '{option}': {topic}-{partition} has an invalid value {v!r}")
            out[topic][partition] = v
    return out


def _assign_json(raw: str) -> dict[str, tuple[int, ...]]:
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise ReadOptionsError(f"option 'assign' is not valid JSON ({exc}): {raw!r}") from None
    if not isinstance(value, dict) or not value:
        raise ReadOptionsError("option 'assign' must be a JSON object like {\"topic\": [0, 1]}")
    out = {}
    for topic, parts in value.items():
        if not isinstance(parts, list) or not parts or not all(
                isinstance(p, int) and not isinstance(p, bool) and p >= 0 for p in parts):
            raise ReadOptionsError(f"option 'assign': topic {topic!r} must list partition numbers")
        out[topic] = tuple(sorted(set(parts)))
    return out


def _any_value(spec: dict[str, dict[int, int]] | None, value: int) -> bool:
    return spec is not None and any(v == value for parts in spec.values() for v in parts.values())


def _int(raw: object, option: str, minimum: int | None = None) -> int:
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise ReadOptionsError(f"option '{option}' must be an integer, not {raw!r}") from None
    if minimum is not None and value < minimum:
        raise ReadOptionsError(f"option '{option}' must be at least {minimum}, not {value}")
    return value


def _positive(opts: dict[str, str], key: str) -> int | None:
    return None if key not in opts else _int(opts[key], _name(key), minimum=1)


def _bool(opts: dict[str, str], key: str, default: bool) -> bool:
    if key not in opts:
        return default
    raw = opts[key].strip().lower()
    if raw not in ("true", "false"):
        raise ReadOptionsError(f"option '{_name(key)}' must be true or false, not {opts[key]!r}")
    return raw == "true"


# -- planning ---------------------------------------------------------------------------------


class OffsetSource(Protocol):
    """What the planner asks the cluster (implemented with ``mafka.client`` by the reader)."""

    def partition_counts(self) -> dict[str, int]:
        """Every topic and its partition count."""

    def earliest(self, tps: Iterable[TopicPartitionTuple]) -> dict[TopicPartitionTuple, int]:
        """Log start offsets."""

    def latest(self, tps: Iterable[TopicPartitionTuple]) -> dict[TopicPartitionTuple, int]:
        """High watermarks."""

    def offsets_for_times(self, timestamps: Mapping[TopicPartitionTuple, int]) -> dict[TopicPartitionTuple, int | None]:
        """The first offset with a timestamp at or after each one (None: there is none)."""


def plan_ranges(options: ReadOptions, source: OffsetSource) -> list[OffsetRange]:
    """The offset ranges the read covers, split as asked (see the module docstring).

    Raises:
        ReadOptionsError: missing topics or partitions, offsets the spec
            cannot resolve, a start past the end, or (``failOnDataLoss``) a
            start below the log start.
    """
    tps = _partitions(options, source.partition_counts())
    earliest = source.earliest(tps)
    latest = source.latest(tps)
    start = _resolve(options.starting, "starting", tps, earliest, latest, source, options.by_timestamp_strategy)
    end = _resolve(options.ending, "ending", tps, earliest, latest, source, "latest")
    ranges = []
    for tp in tps:
        lo, hi = start[tp], min(end[tp], latest[tp])
        if lo < earliest[tp]:
            message = (f"{tp[0]}-{tp[1]}: offsets {lo} to {earliest[tp]} are no longer in the log "
                       f"(log start offset {earliest[tp]})")
            if options.fail_on_data_loss:
                raise ReadOptionsError(message + "; set failOnDataLoss=false to skip them")
            log.warning("%s; skipped (failOnDataLoss=false)", message)
            lo = earliest[tp]
        if lo > hi:
            if end[tp] < start[tp]:
                raise ReadOptionsError(f"{tp[0]}-{tp[1]}: the starting offset {lo} is after the ending offset {end[tp]}")
            lo = hi  # starts past the high watermark: nothing there yet
        if hi > lo:
            ranges.append(OffsetRange(tp[0], tp[1], lo, hi))
    return split_ranges(ranges, options.min_partitions, options.max_records_per_partition)


def _partitions(options: ReadOptions, counts: dict[str, int]) -> list[TopicPartitionTuple]:
    if options.assign is not None:
        tps = []
        for topic, parts in options.assign.items():
            if topic not in counts:
                raise ReadOptionsError(f"option 'assign': topic '{topic}' does not exist")
            missing = [p for p in parts if p >= counts[topic]]
            if missing:
                raise ReadOptionsError(f"option 'assign': topic '{topic}' has no partition {missing[0]} "
                                       f"({counts[topic]} partitions)")
            tps += [(topic, p) for p in parts]
        return sorted(tps)
    if options.subscribe is not None:
        for topic in options.subscribe:
            if topic not in counts:
                raise ReadOptionsError(f"option 'subscribe': topic '{topic}' does not exist")
        topics = sorted(set(options.subscribe))
    else:
        regex = re.compile(options.subscribe_pattern or "")
        topics = sorted(t for t in counts if regex.fullmatch(t) and not t.startswith("__"))
    return [(t, p) for t in topics for p in range(counts[t])]


def _resolve(spec: _Spec, side: str, tps: list[TopicPartitionTuple], earliest: dict[TopicPartitionTuple, int], latest: dict[TopicPartitionTuple, int],
             source: OffsetSource, strategy: str) -> dict[TopicPartitionTuple, int]:
    if spec.keyword is not None:
        return dict(earliest if spec.keyword == EARLIEST else latest)
    if spec.offsets is not None:
        wanted = _complete(spec.offsets, tps, f"{side}Offsets")
        return {tp: earliest[tp] if v == EARLIEST else latest[tp] if v == LATEST else v
                for tp, v in wanted.items()}
    if spec.timestamp is not None:
        timestamps = {tp: spec.timestamp for tp in tps}
        option = f"{side}Timestamp"
    else:
        timestamps = _complete(spec.timestamps or {}, tps, f"{side}OffsetsByTimestamp")
        option = f"{side}OffsetsByTimestamp"
    found = source.offsets_for_times(timestamps)
    out = {}
    for tp, ts in timestamps.items():
        offset = found.get(tp)
        if offset is None:
            if strategy == "error":
                raise ReadOptionsError(f"option '{option}': {tp[0]}-{tp[1]} has no record at or after "
                                       f"timestamp {ts} (startingOffsetsByTimestampStrategy=latest "
                                       f"starts at the end instead)")
            offset = latest[tp]
        out[tp] = offset
    return out


def _complete(spec: dict[str, dict[int, int]], tps: list[TopicPartitionTuple], option: str) -> dict[TopicPartitionTuple, int]:
    """The spec's value for every partition read; Spark requires them all to be named."""
    named = {(t, p): v for t, parts in spec.items() for p, v in parts.items()}
    extra = sorted(set(named) - set(tps))
    if extra:
        raise ReadOptionsError(f"option '{option}' names {extra[0][0]}-{extra[0][1]}, which is not read")
    missing = sorted(set(tps) - set(named))
    if missing:
        raise ReadOptionsError(f"option '{option}' must name every partition read; {missing[0][0]}-{missing[0][1]} "
                               f"is missing (use -2 for earliest, -1 for latest)")
    return named


def split_ranges(ranges: list[OffsetRange], min_partitions: int | None = None,
                 max_records: int | None = None) -> list[OffsetRange]:
    """Splits ranges: into parts of at most ``max_records``, then (a hint) toward ``min_partitions``.

    Parts of one range are contiguous and as equal as possible; the result
    keeps the input's order with each range's parts in offset order.
    """
    out = ranges
    if max_records is not None:
        out = [part for r in out for part in _divide(r, math.ceil(r.count() / max_records))]
    if min_partitions is not None and len(out) < min_partitions:
        total = sum(r.count() for r in out)
        if total > 0:
            out = [part for r in out
                   for part in _divide(r, max(round(r.count() / total * min_partitions), 1))]
    return out


def _divide(r: OffsetRange, parts: int) -> list[OffsetRange]:
    parts = max(1, min(parts, r.count()))
    size = r.count()
    bounds = [r.from_offset + size * i // parts for i in range(parts + 1)]
    return [OffsetRange(r.topic, r.partition, lo, hi) for lo, hi in zip(bounds, bounds[1:], strict=False)]
