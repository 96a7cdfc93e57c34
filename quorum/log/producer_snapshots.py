"""Producer-state snapshots beside a data partition's segments (Kafka's ``<offset>.snapshot``).

A snapshot at offset ``S`` holds what the idempotent producers of the
partition had written below ``S``: per producer id its epoch and its last
(up to five) batches' sequence and offset ranges and timestamps
(``ProducerEntry``). The broker's replica core (``broker.replica.producer_state``)
builds that state and writes a snapshot when a segment rolls and when it
shuts down; after a restart or a truncation it rebuilds the state from the
latest snapshot at or below the log end offset and the batches after it.

The file, ``<offset as 20 digits>.snapshot`` in the partition directory, is
written atomically (``<name>.tmp``, fsync, rename, directory fsync)::

    version        int16   100 (pykraft's layout; Kafka's version-1 files keep only
                           each producer's last batch, and Kafka rebuilds from the log
                           when it meets a version it does not know)
    crc            uint32  CRC-32C of every byte after this field
    entry_count    int32
    entries:  producer_id int64, producer_epoch int16, batch_count int16,
              batches: first_seq int32, last_seq int32, first_offset int64,
                       last_offset int64, timestamp int64

A file that fails its CRC or does not parse is logged, deleted and skipped:
the state is then rebuilt from an older snapshot or from the log start.

Which snapshots a log keeps (the log does this itself, in every keeper):

* a truncation to ``offset`` deletes those above the new log end (they
  describe batches that are gone); emptying the log deletes them all;
* moving the log start deletes those below it (every producer they hold
  lies wholly below the start, and would be dropped);
* opening a log after recovery deletes those above the recovered log end
  (a crash can lose an unflushed tail that a snapshot already covered).
"""

from __future__ import annotations

import abc
import logging
import os
import re
import struct
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Final

import attrs
import crc32c

from quorum.log.errors import LogCorruptionError
from quorum.log.fileio import atomic_write, fsync_dir

__all__ = [
    "MAX_BATCHES_PER_PRODUCER",
    "MemoryProducerSnapshots",
    "ProducerBatch",
    "ProducerEntry",
    "ProducerSnapshot",
    "ProducerSnapshotFiles",
    "decode_producer_snapshot",
    "encode_producer_snapshot",
    "producer_snapshot_name",
]

logger = logging.getLogger("quorum.log")

# Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN (the producer's max.in.flight bound)
MAX_BATCHES_PER_PRODUCER: Final = 5
SNAPSHOT_VERSION: Final = 100
_SUFFIX: Final = ".snapshot"
_NAME: Final = re.compile(r"^(\d{20})\.snapshot$")
_HEAD: Final = struct.Struct(">hI")
_COUNT: Final = struct.Struct(">i")
_ENTRY: Final = struct.Struct(">qhh")
_BATCH: Final = struct.Struct(">iiqqq")


@attrs.frozen(kw_only=True)
class ProducerBatch:
    """One appended batch of an idempotent producer (Kafka's ``BatchMetadata``)."""

    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int  # the batch's max timestamp (the append time under LogAppendTime)


@attrs.frozen(kw_only=True)
class ProducerEntry:
    """A producer id's epoch and its last batches, oldest first (at least one)."""

    producer_id: int
    producer_epoch: int
    batches: tuple[ProducerBatch, ...]


@attrs.frozen
class ProducerSnapshot:
    offset: int
    entries: tuple[ProducerEntry, ...]


def producer_snapshot_name(offset: int) -> str:
    return f"{offset:020d}{_SUFFIX}"


def encode_producer_snapshot(entries: Iterable[ProducerEntry]) -> bytes:
    body = bytearray(4)
    count = 0
    for entry in entries:
        count += 1
        body += _ENTRY.pack(entry.producer_id, entry.producer_epoch, len(entry.batches))
        for batch in entry.batches:
            body += _BATCH.pack(
                batch.first_seq, batch.last_seq, batch.first_offset, batch.last_offset,
                batch.timestamp,
            )
    _COUNT.pack_into(body, 0, count)
    return _HEAD.pack(SNAPSHOT_VERSION, crc32c.crc32c(body)) + bytes(body)


def decode_producer_snapshot(data: bytes) -> tuple[ProducerEntry, ...]:
    """The entries of a snapshot file; raises ``LogCorruptionError`` if it is not whole."""
    try:
        version, crc = _HEAD.unpack_from(data, 0)
        if version != SNAPSHOT_VERSION:
            raise LogCorruptionError(f"unknown producer snapshot version {version}")
        body = memoryview(data)[_HEAD.size :]
        if crc32c.crc32c(body) != crc:
            raise LogCorruptionError("the producer snapshot fails its CRC-32C check")
        (count,) = _COUNT.unpack_from(body, 0)
        position = _COUNT.size
        entries = []
        for _ in range(count):
            producer_id, epoch, batch_count = _ENTRY.unpack_from(body, position)
            position += _ENTRY.size
            batches = []
            for _ in range(batch_count):
                first_seq, last_seq, first_offset, last_offset, timestamp = _BATCH.unpack_from(
                    body, position
                )
                position += _BATCH.size
                batches.append(ProducerBatch(
                    first_seq=first_seq, last_seq=last_seq, first_offset=first_offset,
                    last_offset=last_offset, timestamp=timestamp,
                ))
            if not batches:
                raise LogCorruptionError(f"producer {producer_id} has no batch")
            entries.append(ProducerEntry(
                producer_id=producer_id, producer_epoch=epoch, batches=tuple(batches)
            ))
        if position != len(body):
            raise LogCorruptionError(f"{len(body) - position} bytes follow the last entry")
    except struct.error as exc:
        raise LogCorruptionError(f"the producer snapshot is truncated: {exc}") from exc
    return tuple(entries)


class _Snapshots(abc.ABC):
    """What both keepers share: which offsets exist, and how a corrupt one is skipped."""

    def __init__(self, offsets: Iterable[int]) -> None:
        self._offsets = set(offsets)

    @abc.abstractmethod
    def _read(self, offset: int) -> bytes: ...

    @abc.abstractmethod
    def _write(self, offset: int, data: bytes) -> None: ...

    @abc.abstractmethod
    def _remove(self, offset: int) -> None: ...

    def _where(self, offset: int) -> str:
        return producer_snapshot_name(offset)

    def offsets(self) -> list[int]:
        return sorted(self._offsets)

    def write(self, offset: int, entries: Sequence[ProducerEntry]) -> None:
        """Store the state below ``offset`` durably (replacing a snapshot at that offset)."""
        if offset < 0:
            raise ValueError(f"a producer snapshot at negative offset {offset}")
        self._write(offset, encode_producer_snapshot(entries))
        self._offsets.add(offset)

    def latest(self, at_or_below: int) -> ProducerSnapshot | None:
        """The latest readable snapshot at or below ``at_or_below``; a corrupt one is logged,
        deleted and skipped (the state is rebuilt from the log instead)."""
        for offset in sorted((o for o in self._offsets if o <= at_or_below), reverse=True):
            try:
                return ProducerSnapshot(offset, decode_producer_snapshot(self._read(offset)))
            except (LogCorruptionError, OSError) as exc:
                logger.warning(
                    "producer snapshot %s cannot be read (%s): deleting it; the producer "
                    "state is rebuilt from an older snapshot or the log", self._where(offset), exc,
                )
                self._delete([offset])
        return None

    def _delete(self, offsets: Iterable[int]) -> None:
        doomed = list(offsets)
        for offset in doomed:
            self._offsets.discard(offset)
            self._remove(offset)
        if doomed:
            self._removed()

    @abc.abstractmethod
    def _removed(self) -> None:
        """After deletions (the files make them durable: a snapshot above a truncation
        must not come back after a crash)."""

    def delete_above(self, offset: int) -> None:
        """A truncation to ``offset``: snapshots of batches that are gone go."""
        self._delete(o for o in self._offsets if o > offset)

    def delete_below(self, offset: int) -> None:
        """The log starts at ``offset``: the producers of older snapshots lie below it."""
        self._delete(o for o in self._offsets if o < offset)

    def delete_all(self) -> None:
        self._delete(self._offsets)


class ProducerSnapshotFiles(_Snapshots):
    """The ``<offset>.snapshot`` files of one partition directory."""

    def __init__(self, directory: Path) -> None:
        self._directory = directory
        found = []
        if directory.is_dir():
            for entry in os.scandir(directory):
                match = _NAME.match(entry.name)
                if match is not None:
                    found.append(int(match[1]))
        super().__init__(found)

    def _where(self, offset: int) -> str:
        return str(self._directory / producer_snapshot_name(offset))

    def _read(self, offset: int) -> bytes:
        return (self._directory / producer_snapshot_name(offset)).read_bytes()

    def _write(self, offset: int, data: bytes) -> None:
        atomic_write(self._directory / producer_snapshot_name(offset), data)

    def _remove(self, offset: int) -> None:
        (self._directory / producer_snapshot_name(offset)).unlink(missing_ok=True)

    def _removed(self) -> None:
        fsync_dir(self._directory)


class MemoryProducerSnapshots(_Snapshots):
    """The simulator's snapshots: durable at once, as the files are once written."""

    def __init__(self) -> None:
        super().__init__(())
        self.files: dict[int, bytes] = {}  # tests corrupt them here
        self.removals = 0

    def _read(self, offset: int) -> bytes:
        return self.files[offset]

    def _write(self, offset: int, data: bytes) -> None:
        self.files[offset] = data

    def _remove(self, offset: int) -> None:
        self.files.pop(offset, None)

    def _removed(self) -> None:
        self.removals += 1  # durable at once, as a deletion the files fsync
