"""The sans-IO frame buffer."""

from __future__ import annotations

import struct
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mafka.wire.errors import FrameTooLarge, ProtocolError
from mafka.wire.framing import DEFAULT_MAX_FRAME, FrameBuffer, frame
from tests.hypothesis_budget import examples


@settings(max_examples=examples(100), deadline=None)
@given(payloads=st.lists(st.binary(max_size=300), max_size=6), cuts=st.lists(st.integers(1, 50), max_size=40))
def test_frames_come_out_whole_however_the_stream_is_cut(payloads, cuts):
    stream = b"".join(frame(p) for p in payloads)
    buf = FrameBuffer()
    out = []
    pos = 0
    for cut in cuts + [len(stream)]:
        buf.feed(stream[pos : pos + cut])
        pos += cut
        out.extend(buf.frames())
    assert out == payloads
    assert buf.buffered == 0


def test_partial_frame_waits_for_more():
    buf = FrameBuffer()
    buf.feed(struct.pack(">i", 5) + b"abc")
    assert buf.next_frame() is None
    buf.feed(b"de")
    assert buf.next_frame() == b"abcde"
    assert buf.next_frame() is None


@pytest.mark.parametrize("size", [-1, -(2**31), DEFAULT_MAX_FRAME + 1, 2**31 - 1])
def test_bad_size_is_refused_before_anything_is_buffered(size):
    buf = FrameBuffer()
    tracemalloc.start()
    try:
        with pytest.raises(FrameTooLarge) as info:
            buf.feed(struct.pack(">i", size))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert isinstance(info.value, ProtocolError)
    assert info.value.size == size
    assert peak < 64 * 1024


def test_bad_size_behind_a_good_frame_is_refused():
    buf = FrameBuffer(max_size=10)
    buf.feed(frame(b"ok") + struct.pack(">i", 11))
    with pytest.raises(FrameTooLarge):
        list(buf.frames())


def test_configured_maximum_is_inclusive():
    buf = FrameBuffer(max_size=4)
    buf.feed(frame(b"1234"))
    assert buf.next_frame() == b"1234"
    with pytest.raises(FrameTooLarge):
        buf.feed(frame(b"12345"))
