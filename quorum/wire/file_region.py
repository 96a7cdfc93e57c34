"""``FileRegion``: record batches still in a log file, sent from the page cache.

A Fetch response carries its records as a region of a segment file instead of
bytes read into the process: ``quorum.node.gather_send`` hands it to the kernel
with ``sendfile`` (what Kafka does with ``FileChannel.transferTo``), so serving a
consumer copies each byte once, page cache to socket, where a read and a send
copied it twice through the process. The region holds its own duplicate of the
file's descriptor: the log may close its descriptor (its open-files bound), roll,
clean or delete the segment while the response waits to be sent, and the region
still reads the bytes it promised. A file cut shorter under it (a truncation)
fails the send, which closes the connection: the frame's size is already out.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any, TypeAlias

__all__ = ["FileRegion", "Part", "joined"]


class FileRegion:
    """``length`` bytes of an open file from byte ``position`` (``len`` is ``length``)."""

    __slots__ = ("_fd", "length", "position")

    def __init__(self, fd: int, position: int, length: int) -> None:
        self._fd = -1  # what __del__ sees if the checks below refuse the region
        if position < 0 or length <= 0:
            raise ValueError(f"a file region needs a position >= 0 and a length > 0, "
                             f"got {position} and {length}")
        self._fd = os.dup(fd)
        self.position = position
        self.length = length

    def __len__(self) -> int:
        return self.length

    def fileno(self) -> int:
        if self._fd < 0:
            raise ValueError("the file region was closed")
        return self._fd

    def read(self) -> bytes:
        """The region's bytes, read into the process (for a stream that is not a socket)."""
        data = os.pread(self.fileno(), self.length, self.position)
        if len(data) != self.length:
            raise OSError(f"the file ends {self.length - len(data)} bytes before the region "
                          f"[{self.position}, {self.position + self.length}) does")
        return data

    def close(self) -> None:
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)

    def __del__(self) -> None:
        # a response dropped unsent (its client left) still gives its descriptor back
        self.close()

    def __repr__(self) -> str:
        return f"FileRegion(fd={self._fd}, position={self.position}, length={self.length})"


# one piece of an encoded frame: a buffer, or records still in their file
Part: TypeAlias = "bytes | bytearray | memoryview | FileRegion"


def joined(parts: Iterable[Any]) -> bytes:
    """``b"".join(parts)``, reading any ``FileRegion`` among them."""
    parts = list(parts)
    try:
        return b"".join(parts)
    except TypeError:
        return b"".join(
            part.read() if isinstance(part, FileRegion) else part for part in parts
        )
