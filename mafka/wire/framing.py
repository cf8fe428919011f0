"""Sans-IO framing: Kafka's int32 size prefix, then that many bytes.

Feed bytes as they arrive; take whole frames out.  The size prefix is
checked the moment it is complete, before anything is buffered for the
frame, so a peer announcing 2 GiB costs nothing (Kafka's
``socket.request.max.bytes``, 100 MiB by default).  Used by the broker's
Twisted protocol and by the blocking client alike.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from .errors import FrameTooLarge

__all__ = ["FrameBuffer", "DEFAULT_MAX_FRAME", "frame"]

#: Kafka's default ``socket.request.max.bytes``.
DEFAULT_MAX_FRAME = 104_857_600

_SIZE = struct.Struct(">i")


class FrameBuffer:
    """Accumulates a byte stream and yields complete frames.

    Args:
        max_size: the largest frame accepted; a larger or negative size
            prefix raises :class:`~mafka.wire.errors.FrameTooLarge` from
            :meth:`feed` (the connection is then beyond repair).
    """

    __slots__ = ("_buf", "_max", "_need")

    def __init__(self, max_size: int = DEFAULT_MAX_FRAME) -> None:
        self._buf = bytearray()
        self._max = max_size
        self._need = -1  # size of the frame in progress, once its prefix is known

    def feed(self, data: bytes) -> None:
        """Appends *data*.

        Raises:
            FrameTooLarge: the size prefix of the frame in progress is bad.
                A bad prefix behind complete frames is raised by
                :meth:`next_frame` once the frames before it are taken.
        """
        self._buf += data
        if self._need < 0 and len(self._buf) >= 4:
            self._check_prefix()

    def _check_prefix(self) -> None:
        size = _SIZE.unpack_from(self._buf, 0)[0]
        if size < 0 or size > self._max:
            self._buf.clear()
            raise FrameTooLarge(size, self._max)
        self._need = size

    def next_frame(self) -> bytes | None:
        """The next complete frame (without its prefix), or None if more bytes are needed."""
        if self._need < 0:
            if len(self._buf) < 4:
                return None
            self._check_prefix()
        end = 4 + self._need
        if len(self._buf) < end:
            return None
        out = bytes(self._buf[4:end])
        del self._buf[:end]  # bytearray deletes from the front in O(1) amortised
        self._need = -1
        if len(self._buf) >= 4:
            self._check_prefix()
        return out

    def frames(self) -> Iterator[bytes]:
        """Every complete frame currently buffered."""
        while (f := self.next_frame()) is not None:
            yield f

    @property
    def buffered(self) -> int:
        """Bytes held, including a partial frame."""
        return len(self._buf)


def frame(payload: bytes) -> bytes:
    """Prefixes *payload* with its int32 size."""
    return _SIZE.pack(len(payload)) + payload
