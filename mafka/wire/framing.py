"""Sans-IO framing: Kafka's int32 size prefix, then that many bytes.

Feed bytes as they arrive; take whole frames out.  The size prefix is
checked the moment it is complete, before anything is buffered for the
frame, so a peer announcing 2 GiB costs nothing (Kafka's
``socket.request.max.bytes``, 100 MiB by default).  Used by the broker's
Twisted protocol and by the client library (mafka.client) alike.
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Iterator

from .errors import FrameTooLarge

__all__ = ["FrameBuffer", "DEFAULT_MAX_FRAME", "frame"]

#: Kafka's default ``socket.request.max.bytes``.
DEFAULT_MAX_FRAME = 104_857_600

_SIZE = struct.Struct(">i")


class FrameBuffer:
    """Accumulates a byte stream and yields complete frames.

    Arriving chunks are kept as they are and joined once, when a frame is
    complete: a 1 MiB produce request read in pieces is copied once (into
    the frame), not once per piece as a growing buffer would.

    Args:
        max_size: the largest frame accepted; a larger or negative size
            prefix raises :class:`~mafka.wire.errors.FrameTooLarge` from
            :meth:`feed` (the connection is then beyond repair).
    """

    __slots__ = ("_parts", "_off", "_size", "_max", "_need")

    def __init__(self, max_size: int = DEFAULT_MAX_FRAME) -> None:
        self._parts: deque[bytes] = deque()
        self._off = 0  # bytes of _parts[0] already taken
        self._size = 0  # bytes held, not yet taken
        self._max = max_size
        self._need = -1  # size of the frame in progress, once its prefix is known

    @property
    def max_size(self) -> int:
        """The largest frame accepted from now on (a connection raises it once authenticated)."""
        return self._max

    @max_size.setter
    def max_size(self, value: int) -> None:
        self._max = value

    def feed(self, data: bytes) -> None:
        """Appends *data*.

        Raises:
            FrameTooLarge: the size prefix of the frame in progress is bad.
                A bad prefix behind complete frames is raised by
                :meth:`next_frame` once the frames before it are taken.
        """
        if not data:
            return
        self._parts.append(data if type(data) is bytes else bytes(data))
        self._size += len(data)
        if self._need < 0 and self._size >= 4:
            self._check_prefix()

    def _peek_size(self) -> int:
        """The int32 at the read position (the next frame's prefix); 4 bytes must be buffered."""
        first = self._parts[0]
        if len(first) - self._off >= 4:
            return int(_SIZE.unpack_from(first, self._off)[0])
        head = bytearray()
        off = self._off
        for part in self._parts:  # the prefix spans parts (rare): gather its 4 bytes only
            head += part[off : off + 4 - len(head)]
            off = 0
            if len(head) == 4:
                break
        return int(_SIZE.unpack(bytes(head))[0])

    def _check_prefix(self) -> None:
        size = self._peek_size()
        if size < 0 or size > self._max:
            self._parts.clear()
            self._off = self._size = 0
            raise FrameTooLarge(size, self._max)
        self._need = size

    def next_frame(self) -> bytes | None:
        """The next complete frame (without its prefix), or None if more bytes are needed.

        The frame's bytes are copied once, from however many chunks hold them.
        """
        if self._need < 0:
            if self._size < 4:
                return None
            self._check_prefix()
        end = 4 + self._need
        if self._size < end:
            return None
        parts = self._parts
        first = parts[0]
        start = self._off
        if len(first) - start >= end:
            out = first[start + 4 : start + end]
            self._off = start + end
            if self._off == len(first):
                parts.popleft()
                self._off = 0
        else:
            pieces: list[memoryview] = []
            skip, left = 4, self._need
            while skip or left:
                part = parts[0]
                off = self._off
                step = min(skip, len(part) - off)
                off += step
                skip -= step
                take = min(left, len(part) - off)
                if take:
                    pieces.append(memoryview(part)[off : off + take])
                    off += take
                    left -= take
                if off == len(part):
                    parts.popleft()
                    off = 0
                self._off = off
            out = b"".join(pieces)
        self._size -= end
        self._need = -1
        if self._size >= 4:
            self._check_prefix()
        return out

    def frames(self) -> Iterator[bytes]:
        """Every complete frame currently buffered."""
        while (f := self.next_frame()) is not None:
            yield f

    @property
    def buffered(self) -> int:
        """Bytes held, including a partial frame."""
        return self._size


def frame(payload: bytes) -> bytes:
    """Prefixes *payload* with its int32 size."""
    return _SIZE.pack(len(payload)) + payload
