"""File helpers shared by the offset index and the time index.

An index lives in memory; its file is a copy that is appended to, cut and
rewritten, opened only for the moment of each operation (so index files
never count against the open-file budget of ``quorum.log.file_cache``).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

__all__ = [
    "read_index_file",
    "replace_index_file",
    "sync_index_file",
    "truncate_index_file",
    "write_index_tail",
]


def write_index_tail(path: Path, data: bytes, position: int) -> None:
    """Write ``data`` at byte ``position`` of the index file (created if missing)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        view = memoryview(data)
        while view:
            written = os.pwrite(fd, view, position)
            view = view[written:]
            position += written
    finally:
        os.close(fd)


def truncate_index_file(path: Path, size: int) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.truncate(path, size)


def replace_index_file(path: Path, wanted: bytes) -> bool:
    """Make the file hold exactly ``wanted``; True if it had to change."""
    current = read_index_file(path)
    if current != wanted:
        path.write_bytes(wanted)
        return True
    return False


def read_index_file(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def sync_index_file(path: Path) -> None:
    """fsync an index file: a closed segment below the recovery point is trusted with it."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
