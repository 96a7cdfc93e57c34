"""A broker log directory: its data partitions, its checkpoints, its clean-shutdown marker.

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

import logging
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Final

from quorum.log.clock import Clock, wall_clock_ms
from quorum.log.config import LogConfig
from quorum.log.dir_checkpoints import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    CheckpointFileError,
    PartitionKey,
    read_clean_shutdown_marker,
    read_offsets,
    remove_clean_shutdown_marker,
    write_clean_shutdown_marker,
    write_offsets,
)
from quorum.log.file_cache import OpenFiles, default_open_files
from quorum.log.file_log import FileLog, partition_dir
from quorum.log.recovery import OpenMode

__all__ = ["METADATA_TOPIC", "LogDirectory", "parse_partition_dir_name"]

METADATA_TOPIC: Final = "__cluster_metadata"
_PARTITION_DIR: Final = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")

logger = logging.getLogger("quorum.log")


def parse_partition_dir_name(name: str) -> PartitionKey | None:
    """``(topic, partition)`` of ``<topic>-<partition>``; None for any other name (Kafka's
    ``-delete``, ``-future`` and ``-stray`` directories included)."""
    match = _PARTITION_DIR.match(name)
    if match is None:
        return None
    return match["topic"], int(match["partition"])


def _read_or_reset(path: Path, consequence: str) -> dict[PartitionKey, int]:
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
        self.logs: dict[PartitionKey, FileLog] = {}
        for entry in os.scandir(path):
            key = parse_partition_dir_name(entry.name)
            if key is None or key[0] == METADATA_TOPIC or not entry.is_dir():
                continue
            self.logs[key] = self._lazy_log(key, clean_shutdown=self.had_clean_shutdown)
        self._closed = False

    def config_of(self, topic: str) -> LogConfig:
        return self._topic_configs.get(topic, self._default_config)

    def _lazy_log(self, key: PartitionKey, *, clean_shutdown: bool) -> FileLog:
        topic, partition = key
        mode = OpenMode.for_data_partition(
            log_start_offset=self._log_starts.get(key),
            recovery_point=self._recovery_points.get(key, 0),
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
        """The partition's log, created (empty, lazily) if this directory has none."""
        key = (topic, partition)
        found = self.logs.get(key)
        if found is None:
            # a new partition has nothing to recover
            found = self.logs[key] = self._lazy_log(key, clean_shutdown=True)
        return found

    def __iter__(self) -> Iterator[PartitionKey]:
        return iter(self.logs)

    def needing_recovery(self) -> list[PartitionKey]:
        """Partitions opened after an unclean shutdown and not loaded yet."""
        return [key for key, log in self.logs.items() if log.needs_recovery]

    # -- checkpoints --------------------------------------------------------------

    def checkpoint_recovery_points(self) -> None:
        offsets = {key: log.offsets_to_checkpoint().recovery_point for key, log in self.logs.items()}
        write_offsets(self.path / RECOVERY_POINT_CHECKPOINT, offsets)

    def checkpoint_log_start_offsets(self) -> None:
        offsets: dict[PartitionKey, int] = {}
        for key, log in self.logs.items():
            start = log.offsets_to_checkpoint().log_start_offset
            if start is not None:
                offsets[key] = start
        write_offsets(self.path / LOG_START_OFFSET_CHECKPOINT, offsets)

    def checkpoint_high_watermarks(self, high_watermarks: Mapping[PartitionKey, int]) -> None:
        """Kafka's ``replication-offset-checkpoint`` (the replica manager owns the values)."""
        write_offsets(self.path / REPLICATION_OFFSET_CHECKPOINT, high_watermarks)
        self.high_watermarks = dict(high_watermarks)

    # -- closing ----------------------------------------------------------------------

    def close(
        self, *, broker_epoch: int = -1, high_watermarks: Mapping[PartitionKey, int] | None = None
    ) -> bool:
        """Flush and close every log, write the checkpoints, and the marker if every log is
        whole; returns whether the marker was written."""
        if self._closed:
            return False
        self._closed = True
        for log in self.logs.values():
            if log.is_loaded:
                log.close()
        clean = not self.needing_recovery()
        os.sync()
        self.checkpoint_recovery_points()
        self.checkpoint_log_start_offsets()
        if high_watermarks is not None:
            self.checkpoint_high_watermarks(high_watermarks)
        if clean:
            write_clean_shutdown_marker(self.path, broker_epoch)
        else:
            logger.warning(
                "%s: %d partitions were never recovered; no clean-shutdown marker",
                self.path,
                len(self.needing_recovery()),
            )
        return clean
