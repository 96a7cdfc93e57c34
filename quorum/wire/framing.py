"""Kafka's framing: a 4-byte big-endian size, then that many bytes. Sans-I/O.

``FrameDecoder`` keeps the chunks it is fed in a queue and never grows one
buffer by appending (no quadratic copying).  A frame that lies inside one
received chunk comes back as a zero-copy ``memoryview`` of that chunk; a frame
spread over several chunks is joined once into a new ``bytes``.  Either way
the frame is a read-only byte view over immutable memory, so messages decoded
from it may keep slices of it.  (A returned frame keeps its whole chunk alive.)
"""

from __future__ import annotations

import struct
from collections import deque
from typing import Final

from quorum.wire.errors import FrameTooLargeError
from quorum.wire.primitives import Buffer

__all__ = ["DEFAULT_MAX_FRAME_BYTES", "FrameDecoder", "encode_frame"]

# Kafka's socket.request.max.bytes default (100 MiB).
DEFAULT_MAX_FRAME_BYTES: Final = 104857600
_SIZE: Final = struct.Struct(">i")


def encode_frame(payload: Buffer) -> bytes:
    """Prefix ``payload`` with its 4-byte size."""
    size = payload.nbytes if isinstance(payload, memoryview) else len(payload)
    return b"".join((_SIZE.pack(size), payload))


class FrameDecoder:
    """Splits a byte stream into frames: ``feed(data)``, then ``next_frame()`` until None."""

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        self.max_frame_bytes = max_frame_bytes
        self._chunks: deque[bytes] = deque()
        self._offset = 0  # bytes of _chunks[0] already consumed
        self._buffered = 0  # unconsumed bytes across all chunks
        self._frame_size: int | None = None  # size of the frame being assembled
        self._failure: str | None = None  # set once the stream is unusable

    @property
    def buffered_bytes(self) -> int:
        """Bytes fed but not yet returned as frames (including a partial size prefix)."""
        return self._buffered

    def feed(self, data: Buffer) -> None:
        """Add received bytes. ``bytes`` are kept as they are; other buffers are copied
        because the caller may reuse them."""
        chunk = data if type(data) is bytes else bytes(data)
        if chunk:
            self._chunks.append(chunk)
            self._buffered += len(chunk)

    def next_frame(self) -> memoryview | bytes | None:
        """The next complete frame's payload, or None if more bytes are needed.

        Raises ``FrameTooLargeError`` for a negative size or one above the limit;
        the stream cannot be resynchronised after that, so close the connection.
        """
        if self._failure is not None:
            raise FrameTooLargeError(self._failure)
        size = self._frame_size
        if size is None:
            if self._buffered < 4:
                return None
            (size,) = _SIZE.unpack(self._take(4))
            if size < 0 or size > self.max_frame_bytes:
                self._failure = (
                    f"frame size {size} is outside 0..{self.max_frame_bytes} "
                    f"(socket.request.max.bytes); the stream cannot be resynchronised"
                )
                raise FrameTooLargeError(self._failure)
            self._frame_size = size
        if self._buffered < size:
            return None
        self._frame_size = None
        return self._take(size)

    def _take(self, n: int) -> memoryview | bytes:
        """Remove and return the next ``n`` buffered bytes (caller checked they exist)."""
        if n == 0:
            return b""
        self._buffered -= n
        first = self._chunks[0]
        start = self._offset
        if start + n <= len(first):
            self._advance_first(first, start + n)
            return memoryview(first)[start : start + n]
        pieces = []
        while n > 0:
            first = self._chunks[0]
            start = self._offset
            piece = min(n, len(first) - start)
            pieces.append(memoryview(first)[start : start + piece])
            self._advance_first(first, start + piece)
            n -= piece
        return b"".join(pieces)

    def _advance_first(self, first: bytes, new_offset: int) -> None:
        if new_offset == len(first):
            self._chunks.popleft()
            self._offset = 0
        else:
            self._offset = new_offset
