"""The message browser: formats, truncation of large values, delayed-message due times, bad queries."""

from __future__ import annotations

import json
import re

import pytest

from mafka.console.browse import parse_request, parse_timestamp
from mafka.console.records import SHOW_LIMIT, delay_info, hexdump, show

from .fake_cluster import FakeCluster, build

TEN_MB = 10 * 1024 * 1024


@pytest.fixture
def cluster() -> FakeCluster:
    c = FakeCluster()
    c.topic("big", partitions=1)
    c.records[("big", 0)] = [(b"small", b"hello", [], 1_700_000_000_000),
                             (b"large", b"A" * TEN_MB, [("h", b"B" * (SHOW_LIMIT * 3))], 1_700_000_001_000)]
    return c


@pytest.mark.parametrize("fmt", ["utf8", "json", "hex"])
def test_a_10_mb_value_is_truncated_with_its_full_size(cluster: FakeCluster, fmt: str) -> None:
    r = build(cluster).app.test_client().get(f"/messages?topic=big&partition=0&offset=0&format={fmt}")
    assert r.status_code == 200
    body = r.get_data(as_text=True)
    assert len(r.data) < 200_000, len(r.data)  # nowhere near the 10 MB
    assert f"showing the first {SHOW_LIMIT:,} of {TEN_MB:,} bytes" in body
    assert f'<span class="size">{TEN_MB} B</span>' in body
    assert "hello" in body or fmt == "hex"
    assert body.count('class="record"') == 2


def test_show_keeps_small_values_whole_and_cuts_large_ones() -> None:
    assert show(b"hi", "utf8").text == "hi" and not show(b"hi", "utf8").truncated
    big = show(b"x" * (SHOW_LIMIT + 1), "utf8")
    assert big.truncated and big.text == "x" * SHOW_LIMIT and big.size == SHOW_LIMIT + 1
    assert show(None, "json").text is None
    assert show(b'{"a":[1,2]}', "json").text == '{\n  "a": [\n    1,\n    2\n  ]\n}'
    not_json = show(b"{nope", "json")
    assert not_json.text == "{nope" and not_json.note == "not JSON; shown as UTF-8"
    cut = show(json.dumps({"k": "v" * SHOW_LIMIT}).encode(), "json")
    assert cut.truncated and cut.note is not None and "too large to format as JSON" in cut.note
    assert show(b"\xff\xfeA", "utf8").text == "\ufffd\ufffdA"
    assert hexdump(b"ABC\x00") == "00000000  41 42 43 00" + " " * 36 + "  ABC."
    assert show(b"\x01" * (SHOW_LIMIT * 2), "hex").text.count("\n") == SHOW_LIMIT // 16 - 1  # type: ignore[union-attr]


def test_formats_on_the_page(cluster: FakeCluster) -> None:
    cluster.records[("big", 0)] = [(b"k", b'{"name": "<b>x</b>"}', [("trace", b"t-1")], 1_700_000_000_000)]
    client = build(cluster).app.test_client()
    as_json = client.get("/messages?topic=big&partition=0&offset=0&format=json").get_data(as_text=True)
    assert "{\n  &#34;name&#34;: &#34;&lt;b&gt;x&lt;/b&gt;&#34;\n}" in as_json
    as_hex = client.get("/messages?topic=big&partition=0&offset=0&format=hex").get_data(as_text=True)
    assert "7b 22 6e 61 6d 65 22 3a" in as_hex
    assert "2023-11-14T22:13:20.000Z CreateTime" in as_hex
    assert '<td class="header-name">trace</td>' in as_hex


def test_newest_records_by_default_and_offsets_by_timestamp(cluster: FakeCluster) -> None:
    cluster.records[("big", 0)] = [(None, f"v{i}".encode(), [], 1_000 * i) for i in range(50)]
    client = build(cluster).app.test_client()
    newest = client.get("/messages?topic=big&partition=0&count=5").get_data(as_text=True)
    assert re.findall(r'data-offset="(\d+)"', newest) == ["45", "46", "47", "48", "49"]
    by_time = client.get("/messages?topic=big&partition=0&timestamp=10000&count=2").get_data(as_text=True)
    assert re.findall(r'data-offset="(\d+)"', by_time) == ["10", "11"]
    past_end = client.get("/messages?topic=big&partition=0&offset=999").get_data(as_text=True)
    assert 'class="record"' not in past_end and "reading from offset 50: 0 record(s)" in past_end


def test_bad_queries_are_explained_not_crashed(cluster: FakeCluster) -> None:
    client = build(cluster).app.test_client()
    for query, text in (("partition=-1", "partition must be &gt;= 0"), ("count=501", "count must be between 1 and 500"),
                        ("offset=1&timestamp=1", "not both"), ("format=xml", "format must be one of"),
                        ("timestamp=yesterday", "timestamp")):
        r = client.get(f"/messages?topic=big&{query}")
        assert r.status_code == 400, query
        assert text in r.get_data(as_text=True), query
    missing = client.get("/messages?topic=nope&partition=0")
    assert missing.status_code == 200 and "UNKNOWN_TOPIC_OR_PARTITION" in missing.get_data(as_text=True)


def test_delayed_message_headers() -> None:
    assert delay_info([("mafka.delay.ms", b"60000")], 1_700_000_000_000) == \
        "due 2023-11-14T22:14:20.000Z (mafka.delay.ms=60000)"
    assert delay_info([("mafka.deliver.at", b"1700000000000")], 5) == "due 2023-11-14T22:13:20.000Z (mafka.deliver.at)"
    assert delay_info([("mafka.delayed.offset", b"7"), ("mafka.original.timestamp", b"1700000000000")], 9) == \
        "delivered delayed message, acknowledged at offset 7; produced 2023-11-14T22:13:20.000Z"
    assert delay_info([("mafka.delay.ms", b"soon")], 1) == "mafka.delay.ms not usable"
    assert delay_info([("other", b"1")], 1) is None


def test_a_record_with_a_delay_header_shows_its_due_time_and_a_cancel_link(cluster: FakeCluster) -> None:
    cluster.records[("big", 0)] = [(None, b"v", [("mafka.delay.ms", b"1000")], 1_700_000_000_000)]
    body = build(cluster).app.test_client().get("/messages?topic=big&partition=0&offset=0").get_data(as_text=True)
    assert '<span class="delay">due 2023-11-14T22:13:21.000Z (mafka.delay.ms=1000)</span>' in body
    assert 'href="/actions?topic=big&amp;partition=0&amp;offset=0#cancel-delayed"' in body


def test_parse_request_and_timestamps() -> None:
    assert parse_request({}) is None
    req = parse_request({"topic": "t", "partition": "2", "offset": "5", "count": "7", "format": "hex"})
    assert req is not None and (req.partition, req.offset, req.count, req.fmt) == (2, 5, 7, "hex")
    assert parse_timestamp("1700000000000") == 1_700_000_000_000
    assert parse_timestamp("2023-11-14T22:13:20") == 1_700_000_000_000
    assert parse_timestamp("2023-11-14T22:13") == 1_699_999_980_000
    assert parse_timestamp("2023-11-14T23:13:20.000+01:00") == 1_700_000_000_000
