"""Due times from the delay headers and the topic's default (mafka.delayed.headers)."""

from __future__ import annotations

import pytest

from mafka.delayed.headers import (
    DELAY_HEADER,
    DELIVER_AT_HEADER,
    DelayHeaderError,
    due_times,
    may_ask_for_delay,
    strip_delay_headers,
)
from mafka.wire.records import Record, build_batch

NOW = 1_800_000_000_000
HOUR = 3_600_000


def rec(*headers: tuple[str, bytes | None], offset: int = 0) -> Record:
    return Record(offset, NOW - 5, b"k", b"v", tuple(headers))


def test_relative_absolute_and_default_delays():
    records = [rec((DELAY_HEADER, b"30000")), rec((DELIVER_AT_HEADER, str(NOW + 5000).encode())), rec(),
               rec((DELIVER_AT_HEADER, str(NOW - 99).encode()))]
    assert due_times(records, now_ms=NOW, default_delay_ms=0, max_delay_ms=HOUR) == [
        NOW + 30000, NOW + 5000, NOW, NOW]  # a past deliver.at is due now
    assert due_times([rec()], now_ms=NOW, default_delay_ms=1500, max_delay_ms=HOUR) == [NOW + 1500]
    # a header overrides the topic's default, even asking for none
    assert due_times([rec((DELAY_HEADER, b"0"))], now_ms=NOW, default_delay_ms=1500, max_delay_ms=HOUR) == [NOW]


@pytest.mark.parametrize("headers, fragment", [
    (((DELAY_HEADER, b"soon"),), "mafka.delay.ms is not an integer"),
    (((DELAY_HEADER, b"-5"),), "mafka.delay.ms is negative"),
    (((DELAY_HEADER, None),), "mafka.delay.ms has no value"),
    (((DELIVER_AT_HEADER, b"12.5"),), "mafka.deliver.at is not an integer"),
    (((DELAY_HEADER, str(HOUR + 1).encode()),), "beyond mafka.delay.max.ms=3600000"),
    (((DELAY_HEADER, b"1"), (DELIVER_AT_HEADER, b"2")), "not 2 of them"),
])
def test_bad_headers_name_the_record_and_the_header(headers, fragment):
    records = [rec(), rec(*headers), rec()]
    with pytest.raises(DelayHeaderError) as info:
        due_times(records, now_ms=NOW, default_delay_ms=0, max_delay_ms=HOUR)
    assert [i for i, _ in info.value.errors] == [1]
    assert fragment in info.value.errors[0][1]


def test_every_bad_record_is_reported():
    records = [rec((DELAY_HEADER, b"x")), rec(), rec((DELAY_HEADER, b"-1"))]
    with pytest.raises(DelayHeaderError) as info:
        due_times(records, now_ms=NOW, default_delay_ms=0, max_delay_ms=HOUR)
    assert [i for i, _ in info.value.errors] == [0, 2]


def test_the_prefix_search_finds_the_headers_in_a_batch_and_nothing_in_plain_ones():
    plain = build_batch([Record(0, NOW, b"k", b"v", (("trace", b"1"),))])
    delayed = build_batch([Record(0, NOW, b"k", b"v", ((DELAY_HEADER, b"10"),))])
    assert not may_ask_for_delay(plain[61:])
    assert may_ask_for_delay(memoryview(delayed)[61:])


def test_strip_keeps_other_headers_in_order():
    kept = strip_delay_headers([("a", b"1"), (DELAY_HEADER, b"5"), ("b", None), (DELIVER_AT_HEADER, b"9")])
    assert kept == (("a", b"1"), ("b", None))
