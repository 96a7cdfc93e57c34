"""A broker log directory: its data partitions, its checkpoints, its clean-shutdown marker.

The broker's replica core uses four calls, keyed by topic id
(``PartitionKey(topic_id, partition)``, or any object with those two
attributes): ``open_log(key, topic, index)`` (the partition's ``FileLog``,
created empty if absent), ``checkpointed_high_watermark(key)`` (0 if none),
``delete_log(key)`` (the broker stops hosting it) and
``write_high_watermarks(mapping)`` (Kafka's ``replication-offset-checkpoint``).
Directories and checkpoints are named by topic name, as in Kafka; each
partition directory holds a ``partition.metadata`` file with its topic id
(``quorum.log.partition_metadata``), written when the log is created and
checked when it is first opened: a directory of the same name whose id
differs belongs to a deleted topic, and is moved aside and deleted instead
of being served.

Each partition's log follows its topic's config: ``configure_topic`` (called
by the replica core whenever the broker's metadata image changes a topic's
effective log config) applies it to the topic's open logs and to the logs
made later; a topic never configured uses the broker's default.

Deleting renames the directory to Kafka's ``<topic>-<partition>.<uuid>-delete``
(one rename, durable with one directory fsync) and queues it; the files go
in ``remove_deleted_logs()``, which the broker runs in a worker thread (Kafka
waits ``file.delete.delay.ms``).  Renamed directories found when the
directory is opened are queued too: a crash between rename and removal
leaves nothing behind for good.

Kafka's ``LogManager`` for one directory of ``log.dirs``.  Opening reads the
marker (and removes it: a crash from now on must not look clean), the
recovery-point and log-start checkpoints, and lists the partition
directories; each partition's ``FileLog`` is created lazily, so opening costs
a directory listing and three small files however many partitions there are,
and no segment file is opened until a log is first used.  A log opened after
a clean shutdown reads nothing but its last segment's tail; after an unclean
one it is recovered from its recovery point when first used (call
``FileLog.load()`` in a worker thread to do it up front, as Kafka's recovery
threads do).

A checkpoint that cannot be read is reported and treated as empty (Kafka's
choice): the recovery points then start at 0 (everything is checked), the log
start offsets at each log's first segment.

Closing flushes and closes every opened log, syncs the file system once (the
index files written at close must be on disk before the marker says the
directory is clean; one sync instead of two fsyncs per partition), writes the
checkpoints and, if no log still needs recovery, the marker.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import shutil
import uuid
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Final, Protocol

from quorum.log.clock import Clock, wall_clock_ms
from quorum.log.config import LogConfig
from quorum.log.dir_checkpoints import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    CheckpointFileError,
    TopicPartition,
    read_clean_shutdown_marker,
    read_offsets,
    remove_clean_shutdown_marker,
    write_clean_shutdown_marker,
    write_offsets,
)
from quorum.log.file_cache import OpenFiles, default_open_files
from quorum.log.file_log import FileLog, partition_dir
from quorum.log.fileio import fsync_dir
from quorum.log.partition_metadata import read_partition_metadata, write_partition_metadata
from quorum.log.recovery import OpenMode

__all__ = [
    "DELETE_DIR_SUFFIX",
    "METADATA_TOPIC",
    "LogDirectory",
    "PartitionId",
    "PartitionKey",
    "delete_dir_name",
    "parse_partition_dir_name",
]

METADATA_TOPIC: Final = "__cluster_metadata"
DELETE_DIR_SUFFIX: Final = "-delete"
_PARTITION_DIR: Final = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")
_DELETE_DIR: Final = re.compile(r"^.+-\d+\.[0-9a-f]{32}-delete$")

logger = logging.getLogger("quorum.log")


class PartitionId(Protocol):
    """A partition named by topic id (the broker's key; ``PartitionKey`` is one)."""

    @property
    def topic_id(self) -> uuid.UUID: ...

    @property
    def partition(self) -> int: ...


@functools.total_ordering
class PartitionKey:
    """A partition by topic id: a topic deleted and created again is another partition.

    The broker's replica core keys its partitions by this same class (one object per
    partition, shared by the core and this directory). The hash is computed once (a
    UUID hashes in Python: ten times a dict lookup) and kept to 30 bits, so the int
    holding it is the smallest Python makes (a broker keeps 100,000 of these)."""

    __slots__ = ("_hash", "partition", "topic_id")

    def __init__(self, topic_id: uuid.UUID, partition: int) -> None:
        self.topic_id = topic_id
        self.partition = partition
        self._hash = hash((topic_id.int, partition)) & _HASH_MASK

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PartitionKey):
            return NotImplemented
        return self.partition == other.partition and self.topic_id == other.topic_id

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, PartitionKey):
            return NotImplemented
        return (self.topic_id, self.partition) < (other.topic_id, other.partition)

    def __repr__(self) -> str:
        return f"PartitionKey(topic_id={self.topic_id!r}, partition={self.partition!r})"


_HASH_MASK: Final = (1 << 30) - 1


def _key_of(key: PartitionId) -> PartitionKey:
    return key if isinstance(key, PartitionKey) else PartitionKey(key.topic_id, key.partition)


def parse_partition_dir_name(name: str) -> TopicPartition | None:
    """``(topic, partition)`` of ``<topic>-<partition>``; None for any other name (Kafka's
    ``-delete``, ``-future`` and ``-stray`` directories included)."""
    match = _PARTITION_DIR.match(name)
    if match is None:
        return None
    return match["topic"], int(match["partition"])


def delete_dir_name(topic: str, partition: int, unique: uuid.UUID) -> str:
    """Kafka's ``logDeleteDirName``: ``<topic>-<partition>.<uuid without dashes>-delete``."""
    return f"{topic}-{partition}.{unique.hex}{DELETE_DIR_SUFFIX}"


def _read_or_reset(path: Path, consequence: str) -> dict[TopicPartition, int]:
    try:
        return read_offsets(path)
    except CheckpointFileError as exc:
        logger.warning("%s; %s", exc, consequence)
        return {}


class LogDirectory:
    """The data partitions of one log directory (see the module docstring)."""

    def __init__(
        self,
        path: Path,
        default_config: LogConfig,
        *,
        topic_configs: Mapping[str, LogConfig] | None = None,
        files: OpenFiles | None = None,
        clock_ms: Clock = wall_clock_ms,
    ) -> None:
        self.path = path
        self._default_config = default_config
        self._topic_configs = dict(topic_configs or {})
        self._files = files or default_open_files()
        self._clock_ms = clock_ms
        path.mkdir(parents=True, exist_ok=True)
        # read, then removed at once: a crash from here on is an unclean shutdown
        self.previous_broker_epoch = read_clean_shutdown_marker(path)
        self.had_clean_shutdown = remove_clean_shutdown_marker(path)
        self._recovery_points = _read_or_reset(
            path / RECOVERY_POINT_CHECKPOINT, "recovering every partition from offset 0"
        )
        self._log_starts = _read_or_reset(
            path / LOG_START_OFFSET_CHECKPOINT,
            "each partition's log starts at its first segment",
        )
        self.high_watermarks = _read_or_reset(
            path / REPLICATION_OFFSET_CHECKPOINT, "the high watermarks are unknown"
        )
        self.logs: dict[TopicPartition, FileLog] = {}
        # what ``open_log`` or ``create_log`` returned, by name
        self._opened: dict[TopicPartition, FileLog] = {}
        # the topic-id keys opened so far, and the directory name each maps to
        self._names: dict[PartitionKey, TopicPartition] = {}
        self.pending_deletions: list[Path] = []
        for entry in os.scandir(path):
            if not entry.is_dir():
                continue
            if _DELETE_DIR.match(entry.name):
                self.pending_deletions.append(Path(entry.path))
                continue
            name = parse_partition_dir_name(entry.name)
            if name is None or name[0] == METADATA_TOPIC:
                continue
            self.logs[name] = self._lazy_log(name, clean_shutdown=self.had_clean_shutdown)
        self._closed = False

    def config_of(self, topic: str) -> LogConfig:
        return self._topic_configs.get(topic, self._default_config)

    def configure_topic(self, topic: str, config: LogConfig, partitions: Iterable[int]) -> None:
        """The topic's effective log config (its own configs over the broker's), from the
        broker's metadata image: logs made from now on use it, and the topic's existing
        logs among ``partitions`` switch to it at once (``FileLog.update_config``)."""
        if config == self._default_config:
            self._topic_configs.pop(topic, None)
        else:
            self._topic_configs[topic] = config
        for index in partitions:
            log = self.logs.get((topic, index))
            if log is not None:
                log.update_config(config)

    def _lazy_log(self, name: TopicPartition, *, clean_shutdown: bool) -> FileLog:
        topic, partition = name
        mode = OpenMode.for_data_partition(
            log_start_offset=self._log_starts.get(name),
            recovery_point=self._recovery_points.get(name, 0),
            clean_shutdown=clean_shutdown,
        )
        return FileLog(
            partition_dir(self.path, topic, partition),
            self.config_of(topic),
            mode=mode,
            files=self._files,
            clock_ms=self._clock_ms,
            lazy=True,
        )

    def log(self, topic: str, partition: int) -> FileLog:
        """The partition's log by name, created (empty, lazily, without a topic id) if this
        directory has none."""
        name = (topic, partition)
        found = self.logs.get(name)
        if found is None:
            # a new partition has nothing to recover
            found = self.logs[name] = self._lazy_log(name, clean_shutdown=True)
        return found

    def __iter__(self) -> Iterator[TopicPartition]:
        return iter(self.logs)

    def needing_recovery(self) -> list[TopicPartition]:
        """Partitions opened after an unclean shutdown and not loaded yet."""
        return [name for name, log in self.logs.items() if log.needs_recovery]

    # -- the broker's calls, by topic id ------------------------------------------------

    def open_log(self, key: PartitionId, name: TopicPartition) -> FileLog | None:
        """The partition's log; None if it has none (no directory: ``create_log`` makes it,
        with its ``partition.metadata``, at the partition's first write).

        A directory of that name that records another topic id belongs to a deleted
        topic: it is moved aside for deletion and a new empty log takes its place.
        Raises ``PartitionMetadataError`` if the directory's file cannot be read.
        """
        topic, index = name
        assert key.partition == index, f"key {key} opened as partition {index}"
        partition_key = _key_of(key)
        known = self._names.get(partition_key)
        if known is not None:
            assert known == name, f"{partition_key} was opened as {known}, now as {name}"
            return self._opened[name]
        if name in self.logs:
            # (a new partition's path is not made: pathlib interns each part, a string
            # kept for the life of the process per partition)
            directory = partition_dir(self.path, topic, index)
            recorded = read_partition_metadata(directory)
            if recorded is None:
                # created before topic ids were recorded, or a crash before the file
                directory.mkdir(parents=True, exist_ok=True)
                write_partition_metadata(directory, partition_key.topic_id)
            elif recorded != partition_key.topic_id:
                logger.warning(
                    "%s belongs to topic id %s, not %s: a deleted topic's log; deleting it",
                    directory,
                    recorded,
                    partition_key.topic_id,
                )
                self.delete(topic, index)
        if name not in self.logs:
            # a new partition: no directory until its first write, and no entry in this
            # directory's tables either (two entries cost about 90 B for each of 100,000
            # idle partitions)
            return None
        self._names[partition_key] = name
        opened = self._opened[name] = self.logs[name]
        return opened

    def create_log(self, key: PartitionId, name: TopicPartition) -> FileLog:
        """A new partition's log at its first write: its directory, ``partition.metadata``
        and an empty log (the one already there if it was made meanwhile)."""
        partition_key = _key_of(key)
        known = self.open_log(partition_key, name)
        if known is not None:
            return known
        directory = partition_dir(self.path, *name)
        directory.mkdir(parents=True, exist_ok=True)
        write_partition_metadata(directory, partition_key.topic_id)
        log = self.logs[name] = self._lazy_log(name, clean_shutdown=True)
        self._names[partition_key] = name
        self._opened[name] = log
        return log

    def checkpointed_high_watermark(self, key: PartitionId) -> int:
        """The high watermark last checkpointed for the partition; 0 if none (or if it was
        not opened with ``open_log``: the checkpoint is kept by topic name)."""
        name = self._names.get(_key_of(key))
        return 0 if name is None else self.high_watermarks.get(name, 0)

    def delete_log(self, key: PartitionId) -> None:
        """The broker no longer hosts the partition: its log is closed and moved aside for
        ``remove_deleted_logs``.  A key never opened is a no-op."""
        name = self._names.pop(_key_of(key), None)
        if name is not None:
            self.delete(*name)

    def write_high_watermarks(self, high_watermarks: Mapping[PartitionId, int]) -> None:
        """Kafka's ``replication-offset-checkpoint`` from the replica core's high watermarks.

        Partitions of this directory not in ``high_watermarks`` (not opened since the
        start, say) keep their last checkpointed value; keys never opened are skipped.
        """
        # runs in a worker thread (the replica driver's checkpoint) while the owner may
        # delete partitions, popping from this dict: a copy (dict.copy runs no Python code,
        # so no thread switch falls inside it) is walked instead
        known = self.high_watermarks.copy()
        merged = {name: hw for name, hw in known.items() if name in self.logs}
        for key, high_watermark in high_watermarks.items():
            name = self._names.get(_key_of(key))
            if name is not None:
                merged[name] = high_watermark
        self.checkpoint_high_watermarks(merged)

    # -- deletion ----------------------------------------------------------------------

    def delete(self, topic: str, partition: int) -> Path | None:
        """Close the partition's log and rename its directory to Kafka's ``-delete`` form
        (durably); returns the new path, queued for ``remove_deleted_logs``, or None if
        there was no such directory.  Its checkpoint entries go at the next checkpoint."""
        name = (topic, partition)
        log = self.logs.pop(name, None)
        self._opened.pop(name, None)
        for names in (self._recovery_points, self._log_starts, self.high_watermarks):
            names.pop(name, None)
        for partition_key in [k for k, n in self._names.items() if n == name]:
            del self._names[partition_key]
        if log is not None:
            # its data is going: nothing to flush
            log.abandon()
        source = partition_dir(self.path, topic, partition)
        if not source.exists():
            return None
        target = self.path / delete_dir_name(topic, partition, uuid.uuid4())
        os.rename(source, target)
        fsync_dir(self.path)
        self.pending_deletions.append(target)
        return target

    def remove_deleted_logs(self) -> int:
        """Remove the directories moved aside by ``delete`` (blocking file I/O: run it in a
        worker thread); returns how many were removed."""
        pending, self.pending_deletions = self.pending_deletions, []
        for directory in pending:
            shutil.rmtree(directory, ignore_errors=True)
        return len(pending)

    # -- checkpoints --------------------------------------------------------------

    def checkpoint_recovery_points(self) -> None:
        offsets = {name: log.offsets_to_checkpoint().recovery_point for name, log in self.logs.items()}
        write_offsets(self.path / RECOVERY_POINT_CHECKPOINT, offsets)

    def checkpoint_log_start_offsets(self) -> None:
        offsets: dict[TopicPartition, int] = {}
        for name, log in self.logs.items():
            start = log.offsets_to_checkpoint().log_start_offset
            if start is not None:
                offsets[name] = start
        write_offsets(self.path / LOG_START_OFFSET_CHECKPOINT, offsets)

    def checkpoint_high_watermarks(self, high_watermarks: Mapping[TopicPartition, int]) -> None:
        """Kafka's ``replication-offset-checkpoint`` by topic name (see
        ``write_high_watermarks`` for the replica core's keys)."""
        write_offsets(self.path / REPLICATION_OFFSET_CHECKPOINT, high_watermarks)
        self.high_watermarks = dict(high_watermarks)

    # -- closing ----------------------------------------------------------------------

    def close(
        self, *, broker_epoch: int = -1, high_watermarks: Mapping[PartitionId, int] | None = None
    ) -> bool:
        """Flush and close every log, write the checkpoints, and the marker if every log is
        whole; returns whether the marker was written."""
        if self._closed:
            return False
        self._closed = True
        for log in self.logs.values():
            if log.is_loaded:
                log.close()
        unrecovered = self.needing_recovery()
        os.sync()
        self.checkpoint_recovery_points()
        self.checkpoint_log_start_offsets()
        if high_watermarks is not None:
            self.write_high_watermarks(high_watermarks)
        if not unrecovered:
            write_clean_shutdown_marker(self.path, broker_epoch)
        else:
            logger.warning(
                "%s: %d partitions were never recovered; no clean-shutdown marker",
                self.path,
                len(unrecovered),
            )
        return not unrecovered
