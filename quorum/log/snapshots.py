"""Snapshot files of one log (KIP-630), in the partition directory.

A snapshot with id ``(end offset, epoch)`` is the file
``<20-digit end offset>-<10-digit epoch>.checkpoint``.  It is written whole to
``<same name>.checkpoint.part``, fsynced, renamed into place and the directory
fsynced, so a crash leaves either no snapshot or the complete one; leftover
``.part`` files (and Kafka's ``.checkpoint.deleted``) are removed on open.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from pathlib import Path
from typing import Final

from quorum.log.errors import OffsetOutOfRangeError, SnapshotNotFoundError
from quorum.log.fileio import atomic_write, fsync_dir
from quorum.log.protocol import OffsetAndEpoch, SnapshotData

__all__ = [
    "PARTIAL_SUFFIX",
    "SNAPSHOT_SUFFIX",
    "SnapshotStore",
    "snapshot_file_name",
]

SNAPSHOT_SUFFIX: Final = ".checkpoint"
PARTIAL_SUFFIX: Final = ".checkpoint.part"
DELETED_SUFFIX: Final = ".checkpoint.deleted"
_NAME: Final = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
# one lock for every store's changes (they are rare; a broker holds a store per partition,
# and a lock each would cost memory per replica)
_CHANGE: Final = threading.Lock()

logger = logging.getLogger("quorum.log")


def snapshot_file_name(snapshot_id: OffsetAndEpoch) -> str:
    return f"{snapshot_id.offset:020d}-{snapshot_id.epoch:010d}{SNAPSHOT_SUFFIX}"


class SnapshotStore:
    """The snapshots held in ``directory``: create, read, list, delete."""

    def __init__(self, directory: Path) -> None:
        self._directory = directory
        # replaced whole, never changed in place: a worker thread adds a snapshot
        # (``create``) while the owner reads the set (``max`` of a set that grows while
        # it is walked raises); changes take the lock, readers take the set as it is
        self._ids: frozenset[OffsetAndEpoch] = frozenset()
        # the log's start offset (``refuse_below``): a snapshot below it is refused, and one
        # a worker thread finishes after the start passed it is dropped (Kafka refuses a
        # snapshot below the log start too); kept, it would stop every later cleaning
        self._floor = 0
        found = set()
        for path in directory.iterdir():
            name = path.name
            if name.endswith((PARTIAL_SUFFIX, DELETED_SUFFIX)):
                logger.info("removing unfinished or deleted snapshot file %s", path)
                path.unlink()
                continue
            match = _NAME.match(name)
            if match:
                found.add(OffsetAndEpoch(int(match[1]), int(match[2])))
        self._ids = frozenset(found)

    def ids(self) -> list[OffsetAndEpoch]:
        return sorted(self._ids)

    @property
    def latest(self) -> OffsetAndEpoch | None:
        ids = self._ids
        return max(ids) if ids else None

    @property
    def earliest(self) -> OffsetAndEpoch | None:
        ids = self._ids
        return min(ids) if ids else None

    def refuse_below(self, offset: int) -> None:
        """The log starts at ``offset`` now: snapshots below it are refused from here on."""
        with _CHANGE:
            self._floor = offset

    def _add(self, snapshot_id: OffsetAndEpoch) -> bool:
        """The id joins the set; False if it is below the log start (the caller drops it)."""
        with _CHANGE:
            if snapshot_id.offset < self._floor:
                return False
            self._ids = self._ids | {snapshot_id}
            return True

    def path_of(self, snapshot_id: OffsetAndEpoch) -> Path:
        return self._directory / snapshot_file_name(snapshot_id)

    def create(self, snapshot_id: OffsetAndEpoch, data: SnapshotData) -> bool:
        """Write a snapshot atomically; False (and no write) if the id exists or lies below
        the log start, False (the file written, then dropped) if the start passed it
        meanwhile.

        Safe in a worker thread while the owner reads snapshots: the id joins the
        set only once the file is complete and in place."""
        if snapshot_id.offset < 0 or snapshot_id.epoch < 0:
            raise ValueError(f"snapshot id {snapshot_id} has a negative offset or epoch")
        if snapshot_id in self._ids or snapshot_id.offset < self._floor:
            return False
        path = self.path_of(snapshot_id)
        atomic_write(path, data, tmp_suffix=".part")
        if not self._add(snapshot_id):
            logger.info("dropping snapshot %s: the log starts past it now", path.name)
            path.unlink(missing_ok=True)
            fsync_dir(self._directory)
            return False
        return True

    def write_partial(self, snapshot_id: OffsetAndEpoch, position: int, data: bytes) -> None:
        """A downloaded chunk into ``<name>.checkpoint.part`` at ``position``, synced (a
        chunk at a time: the last one leaves nothing large to sync on the owner's thread)."""
        path = self._partial_path(snapshot_id)
        flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if position == 0 else 0)
        fd = os.open(path, flags, 0o644)
        try:
            view = memoryview(data)
            while view:
                written = os.pwrite(fd, view, position)
                view, position = view[written:], position + written
            os.fdatasync(fd)
        finally:
            os.close(fd)

    def store_partial(self, snapshot_id: OffsetAndEpoch) -> bool:
        """The partial file renamed into place (its chunks are synced already)."""
        partial = self._partial_path(snapshot_id)
        if snapshot_id in self._ids:
            partial.unlink(missing_ok=True)
            return False
        path = self.path_of(snapshot_id)
        os.replace(partial, path)
        fsync_dir(path.parent)
        if not self._add(snapshot_id):
            path.unlink(missing_ok=True)
            fsync_dir(self._directory)
            return False
        return True

    def _partial_path(self, snapshot_id: OffsetAndEpoch) -> Path:
        return self._directory / (snapshot_file_name(snapshot_id) + ".part")

    def _existing(self, snapshot_id: OffsetAndEpoch) -> Path:
        if snapshot_id not in self._ids:
            raise SnapshotNotFoundError(
                f"no snapshot {snapshot_id} in {self._directory} "
                f"(held: {[(i.offset, i.epoch) for i in self.ids()]})"
            )
        return self.path_of(snapshot_id)

    def size(self, snapshot_id: OffsetAndEpoch) -> int:
        return self._existing(snapshot_id).stat().st_size

    def read(
        self, snapshot_id: OffsetAndEpoch, position: int = 0, max_bytes: int | None = None
    ) -> bytes:
        path = self._existing(snapshot_id)
        with open(path, "rb") as file:
            size = os.fstat(file.fileno()).st_size
            if not 0 <= position <= size:
                raise OffsetOutOfRangeError(
                    f"snapshot {path.name} has {size} bytes; position {position} is outside it"
                )
            length = size - position if max_bytes is None else min(size - position, max_bytes)
            return os.pread(file.fileno(), length, position)

    def delete_before(self, snapshot_id: OffsetAndEpoch) -> int:
        """Delete every snapshot older than ``snapshot_id``; returns how many."""
        old = [i for i in self._ids if i < snapshot_id]
        for item in old:
            self.path_of(item).unlink(missing_ok=True)
            with _CHANGE:
                self._ids = self._ids - {item}
        if old:
            fsync_dir(self._directory)
        return len(old)
