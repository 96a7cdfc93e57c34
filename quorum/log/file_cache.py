"""A bound on the segment files a process holds open, shared by all of its logs.

A broker with 100,000 partitions has at least 100,000 segment files; holding
each open would need as many file descriptors.  Segments instead name their
file with a ``CachedFile`` and use it as ``with segment_file as fd:``: the
file is opened on first use, stays open while it is used again soon, and the
least recently used unpinned file is closed when more than ``max_open`` are
open.  A file in use is pinned (it is never closed under its user), so the
bound can be passed for a moment when more files than the bound are in use
at once; it comes back at the next open.

Thread-safe: a worker thread may fsync a file while the owner of the log
appends to another (one lock around the bookkeeping, never around I/O).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from pathlib import Path
from types import TracebackType
from typing import Final

__all__ = ["DEFAULT_MAX_OPEN_FILES", "CachedFile", "OpenFiles", "default_open_files"]

DEFAULT_MAX_OPEN_FILES: Final = 1000


class OpenFiles:
    """The set of open segment files of a process, at most ``max_open`` when unpinned."""

    def __init__(self, max_open: int = DEFAULT_MAX_OPEN_FILES) -> None:
        if max_open < 1:
            raise ValueError(f"max_open must be at least 1, got {max_open}")
        self._max_open = max_open
        self._lock = threading.Lock()
        # open files, least recently used first
        self._open: OrderedDict[CachedFile, None] = OrderedDict()
        self.opened_total = 0  # opens since creation (to measure cache misses)

    @property
    def max_open(self) -> int:
        return self._max_open

    def set_max_open(self, max_open: int) -> None:
        if max_open < 1:
            raise ValueError(f"max_open must be at least 1, got {max_open}")
        with self._lock:
            self._max_open = max_open
            self._evict()

    @property
    def open_count(self) -> int:
        return len(self._open)

    def acquire(self, file: CachedFile) -> int:
        """Pin ``file`` and return its descriptor, opening it (and closing another) if needed."""
        with self._lock:
            assert not file.closed, f"{file.path} is closed"
            file.pins += 1
            if file.fd >= 0:
                self._open.move_to_end(file)
                return file.fd
            try:
                file.fd = os.open(file.path, file.flags, 0o644)
            except BaseException:
                file.pins -= 1
                raise
            file.flags &= ~(os.O_CREAT | os.O_EXCL)  # reopen, never recreate
            self.opened_total += 1
            self._open[file] = None
            self._evict()
            return file.fd

    def release(self, file: CachedFile) -> None:
        with self._lock:
            file.pins -= 1
            assert file.pins >= 0, f"{file.path} released more often than acquired"
            if file.pins == 0 and (file.closed or len(self._open) > self._max_open):
                self._close(file)

    def close(self, file: CachedFile) -> None:
        """Close ``file`` for good (now, or when its last user releases it)."""
        with self._lock:
            file.closed = True
            if file.pins == 0:
                self._close(file)

    def _close(self, file: CachedFile) -> None:
        if file.fd >= 0:
            os.close(file.fd)
            file.fd = -1
            del self._open[file]

    def _evict(self) -> None:
        """Close least recently used unpinned files while more than the bound are open."""
        excess = len(self._open) - self._max_open
        if excess <= 0:
            return
        victims = []
        for candidate in self._open:
            if candidate.pins == 0:
                victims.append(candidate)
                if len(victims) == excess:
                    break
        for victim in victims:
            self._close(victim)


class CachedFile:
    """A file of one segment whose descriptor ``OpenFiles`` opens and closes.

    ``with file as fd:`` pins the descriptor for the block.  ``create=True``
    makes the first open create the file (and fail if it exists).
    """

    __slots__ = ("closed", "fd", "files", "flags", "path", "pins")

    def __init__(self, files: OpenFiles, path: Path, *, create: bool = False) -> None:
        self.files = files
        self.path = path
        self.flags = os.O_RDWR | (os.O_CREAT | os.O_EXCL if create else 0)
        self.fd = -1
        self.pins = 0
        self.closed = False

    def __enter__(self) -> int:
        return self.files.acquire(self)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.files.release(self)

    @property
    def is_open(self) -> bool:
        return self.fd >= 0

    def close(self) -> None:
        self.files.close(self)

    def __repr__(self) -> str:
        return f"CachedFile({self.path.name}, fd={self.fd}, pins={self.pins})"


_DEFAULT = OpenFiles()


def default_open_files() -> OpenFiles:
    """The process's shared set, used by logs not given one (its bound is adjustable)."""
    return _DEFAULT
