#!/usr/bin/env python3
"""Micro-benchmark of the wire codec beside kafka-python's codec, in one run.

Prints microseconds per operation (median of several timing rounds, the two
codecs interleaved round by round so machine noise hits both alike) and the
ratio Mafka / kafka-python (below 1 means Mafka is faster):

* request header parse (v1 header, as every non-flexible request carries);
* Produce v7 request, 10 partitions × 16 KiB opaque batches, parse (whole frame);
* Fetch v11 response, 10 partitions × 16 KiB, build (whole frame);
* record-batch header view + CRC-32C check of a 16 KiB batch;
* request and response body parse of every API added for today's clients
  (issue 13), at the newest version Mafka decodes, with sample values
  (three elements per array), beside kafka-python's parse of the same bytes.

Usage: ``.venv/bin/python scripts/bench_wire.py [--rounds N] [--chart PATH.png]``
(``make bench-wire``); ``--chart`` also draws the table (µs per operation, both
codecs side by side on a log scale, the ratio beside each row).
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import timeit
from collections.abc import Callable
from pathlib import Path

from bench_chart import Panel, add_chart_argument, draw
from kafka.protocol.consumer import FetchResponse
from kafka.protocol.producer import ProduceRequest
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from mafka.wire.batch import validate_batch
from mafka.wire.codec import decode_body, decode_request, encode_body, encode_response
from mafka.wire.header import REQUEST_HEADERS, RequestHeader
from mafka.wire.primitives import FrameReader
from mafka.wire.records import Record, build_batch
from mafka.wire.registry import API_SPECS
from mafka.wire.schema import versions

KiB = 1024


def _batch_16k() -> bytes:
    """A 16 KiB uncompressed batch of 16 records, built by kafka-python."""
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                        producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                        batch_size=1 << 20)
    for i in range(16):
        builder.append(i, timestamp=1_700_000_000_000 + i, key=b"k%d" % i, value=b"v" * (1000), headers=[])
    data = bytes(builder.build())
    # Pad the last record's value so the batch is ~16 KiB; rebuild with mafka to keep it valid.
    return data


def _mafka_batch_16k() -> bytes:
    records = [Record(offset=i, timestamp=1_700_000_000_000 + i, key=b"k%d" % i, value=b"v" * 1000, headers=())
               for i in range(16)]
    return build_batch(records)


def _produce_values(batch: bytes) -> dict:
    return {
        "transactional_id": None,
        "acks": -1,
        "timeout_ms": 30000,
        "topic_data": [{"name": "bench", "partition_data": [{"index": p, "records": batch} for p in range(10)]}],
    }


def _fetch_values(batch: bytes) -> dict:
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "session_id": 0,
        "responses": [{
            "topic": "bench",
            "partitions": [{
                "partition_index": p, "error_code": 0, "high_watermark": 1000, "last_stable_offset": 1000,
                "log_start_offset": 0, "aborted_transactions": [], "preferred_read_replica": -1,
                "records": batch,
            } for p in range(10)],
        }],
    }


def _kp_fetch(batch: bytes):
    v = _fetch_values(batch)
    R = FetchResponse
    topic = R.FetchableTopicResponse
    part = topic.PartitionData
    return R(version=11, throttle_time_ms=0, error_code=0, session_id=0, responses=[
        topic(version=11, topic="bench", partitions=[
            part(version=11, **{k: val for k, val in p.items()}) for p in v["responses"][0]["partitions"]
        ])
    ])


#: The APIs whose versions were added for current clients (issue 13), benchmarked at their newest.
NEW_APIS = (
    "Metadata", "ListOffsets", "ListGroups", "DescribeGroups", "OffsetCommit", "OffsetFetch", "LeaveGroup",
    "OffsetDelete", "IncrementalAlterConfigs", "DescribeCluster", "DescribeProducers", "DescribeLogDirs",
    "AlterReplicaLogDirs", "DescribeUserScramCredentials", "AlterUserScramCredentials",
)

_SAMPLE = {"int8": 1, "int16": 1, "int32": 7, "int64": 1_234_567, "uint16": 1, "uint32": 7, "float64": 1.5,
           "bool": True, "bytes": b"x" * 16, "records": None, "uuid": bytes(range(16))}


def _in(f, version: int) -> bool:
    r = versions(f.versions)
    return r.lo <= version and (r.hi is None or version <= r.hi)


def _sample(fields, version: int, depth: int = 0) -> dict:
    """Plausible values for every field of *fields* present at *version* (arrays of three)."""
    out = {}
    for f in fields:
        if not _in(f, version):
            continue
        if f.is_struct:
            one = lambda i, sub=f.fields: _sample(sub, version, depth + 1)  # noqa: E731
        elif f.element_type == "string":
            one = lambda i, n=f.name: f"{n}-{i}"  # noqa: E731
        else:
            one = lambda i, t=f.element_type: _SAMPLE[t]  # noqa: E731
        out[f.name] = [one(i) for i in range(3)] if f.is_array else one(0)
    return out


def _kafka_python_class(name: str):
    import importlib
    import pkgutil

    import kafka.protocol
    from kafka.protocol.api_message import ApiMessage

    for info in pkgutil.walk_packages(kafka.protocol.__path__, "kafka.protocol."):
        if ".old" not in info.name and "generate" not in info.name:
            importlib.import_module(info.name)
    todo = list(ApiMessage.__subclasses__())
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        if cls.__name__ == name and getattr(cls, "_class_version", None) is None and cls._json is not None:
            return cls
    raise LookupError(name)


def _new_api_cases() -> list[tuple[str, Callable[[], object], Callable[[], object], int]]:
    cases = []
    for spec in API_SPECS.values():
        if spec.name not in NEW_APIS:
            continue
        version = spec.decode[1]
        for kind, message in (("request", spec.request), ("response", spec.response)):
            body = encode_body(message, version, _sample(message.fields, version))
            theirs = _kafka_python_class(message.name)
            cases.append((
                f"{spec.name} v{version} {kind} parse ({len(body)} B)",
                lambda m=message, v=version, b=body: decode_body(m, v, b),
                lambda c=theirs, v=version, b=body: c.decode(b, version=v),
                2000,
            ))
    return cases


def median_us(fn: Callable[[], object], rounds: int, number: int) -> list[float]:
    return [timeit.timeit(fn, number=number) / number * 1e6 for _ in range(rounds)]


def chart(path: Path, title: str, rows: list[tuple[str, float, float]]) -> Path:
    """The table as lying bars: rows of (operation, Mafka µs, kafka-python µs), Mafka ÷ kafka-python beside each."""
    names = [r[0] for r in rows]
    return draw(path, title, [
        Panel("µs per operation (log scale; shorter is faster)", names,
              {"mafka": [r[1] for r in rows], "kafka-python": [r[2] for r in rows]},
              kind="hbars", ratio=("mafka", "kafka-python"), log=True),
    ], note="mafka ÷ kafka-python at the right of each row (below 1: Mafka is faster)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    add_chart_argument(parser)
    args = parser.parse_args()

    batch = _mafka_batch_16k()
    header_bytes = bytes.fromhex("0000" "0007" "0000002a" "0007") + b"bench-c"

    # Produce v7 request frame (without size prefix), encoded by kafka-python.
    kp_produce = ProduceRequest(version=7, transactional_id=None, acks=-1, timeout_ms=30000, topic_data=[
        ProduceRequest.TopicProduceData(version=7, name="bench", partition_data=[
            ProduceRequest.TopicProduceData.PartitionProduceData(version=7, index=p, records=batch) for p in range(10)
        ])
    ])
    kp_produce.with_header(correlation_id=42, client_id="bench-c")
    produce_frame = kp_produce.encode(header=True, framed=False)
    assert decode_request(produce_frame).body.topic_data[0].partition_data[9].records == batch

    fetch_values = _fetch_values(batch)
    fetch_header = RequestHeader(1, 11, 42, "bench-c")
    kp_fetch = _kp_fetch(batch)
    kp_fetch.with_header(correlation_id=42)
    assert encode_response(fetch_header, fetch_values) == kp_fetch.encode(header=True, framed=True)

    kp_batch = _batch_16k()

    cases = [
        ("request header v1 parse",
         lambda: REQUEST_HEADERS[1].parse_stream(FrameReader(header_bytes)),
         lambda: ProduceRequest.parse_header(io.BytesIO(header_bytes), version=7),
         20000),
        (f"Produce v7 request parse (10 x {len(batch) // KiB} KiB)",
         lambda: decode_request(produce_frame),
         lambda: ProduceRequest.decode(produce_frame, version=7, header=True),
         2000),
        (f"Fetch v11 response build (10 x {len(batch) // KiB} KiB)",
         lambda: encode_response(fetch_header, fetch_values),
         lambda: kp_fetch.encode(header=True, framed=True),
         2000),
        (f"batch header view + CRC-32C ({len(batch) // KiB} KiB)",
         lambda: validate_batch(batch),
         lambda: DefaultRecordBatch(kp_batch).validate_crc(),
         20000),
        *_new_api_cases(),
    ]

    title = f"python {sys.version.split()[0]}; {args.rounds} interleaved rounds; median µs per operation"
    print(title)
    print(f"{'operation':<56}{'mafka':>10}{'kafka-python':>14}{'ratio':>8}")
    rows: list[tuple[str, float, float]] = []
    for name, ours, theirs, number in cases:
        ours_t: list[float] = []
        theirs_t: list[float] = []
        for _ in range(args.rounds):
            ours_t += median_us(ours, 1, number)
            theirs_t += median_us(theirs, 1, number)
        m, k = statistics.median(ours_t), statistics.median(theirs_t)
        print(f"{name:<56}{m:>10.2f}{k:>14.2f}{m / k:>8.2f}")
        rows.append((name, m, k))
    if args.chart:
        print(f"chart: {chart(args.chart, title, rows)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
