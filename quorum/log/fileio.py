"""Durable file writes and Kafka's plain-text checkpoint format.

A checkpoint file is Kafka's ``CheckpointFile`` text: a version line (``0``),
a count line, then one line per entry of space-separated integers.  It is
replaced atomically: written to ``<name>.tmp``, fsynced, renamed over the old
file, and the directory fsynced so the rename itself survives a crash.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Final

__all__ = [
    "CHECKPOINT_VERSION",
    "atomic_write",
    "format_checkpoint",
    "fsync_dir",
    "parse_checkpoint",
    "read_checkpoint",
    "write_checkpoint",
]

CHECKPOINT_VERSION: Final = 0


def fsync_dir(directory: Path) -> None:
    """Make creations, renames and deletions inside ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(
    path: Path, data: bytes | memoryview | Sequence[bytes], *, tmp_suffix: str = ".tmp"
) -> None:
    """Replace ``path`` with ``data`` (bytes, or parts written one after the other, never
    joined: a large snapshot is not copied once more) so that a crash leaves the old or
    the new file."""
    tmp = path.with_name(path.name + tmp_suffix)
    parts = [data] if isinstance(data, bytes | memoryview) else data
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for part in parts:
            view = memoryview(part)
            while view:
                written = os.write(fd, view)
                view = view[written:]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)


def format_checkpoint(rows: list[tuple[int, ...]]) -> str:
    lines = [str(CHECKPOINT_VERSION), str(len(rows))]
    lines.extend(" ".join(str(value) for value in row) for row in rows)
    return "\n".join(lines) + "\n"


def parse_checkpoint(text: str, *, width: int) -> list[tuple[int, ...]]:
    """Rows of ``width`` integers; raises ValueError saying which line is bad."""
    lines = text.splitlines()
    if len(lines) < 2:
        raise ValueError(f"expected a version line and a count line, found {len(lines)} lines")
    if lines[0].strip() != str(CHECKPOINT_VERSION):
        raise ValueError(f"unsupported version {lines[0].strip()!r} (expected 0)")
    try:
        count = int(lines[1])
    except ValueError:
        raise ValueError(f"line 2: count {lines[1]!r} is not an integer") from None
    body = lines[2:]
    if count != len(body):
        raise ValueError(f"line 2 says {count} entries but {len(body)} follow")
    rows: list[tuple[int, ...]] = []
    for number, line in enumerate(body, start=3):
        parts = line.split()
        try:
            row = tuple(int(part) for part in parts)
        except ValueError:
            raise ValueError(f"line {number}: {line!r} is not {width} integers") from None
        if len(row) != width:
            raise ValueError(f"line {number}: {line!r} is not {width} integers")
        rows.append(row)
    return rows


def write_checkpoint(path: Path, rows: list[tuple[int, ...]]) -> None:
    atomic_write(path, format_checkpoint(rows).encode("ascii"))


def read_checkpoint(path: Path, *, width: int) -> list[tuple[int, ...]] | None:
    """The rows of ``path``, None if it does not exist; ValueError if it is malformed."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        raise ValueError("the file is not ASCII text") from None
    return parse_checkpoint(text, width=width)
