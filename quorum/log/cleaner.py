"""The log cleaner of a broker's data partitions (``cleanup.policy=compact``).

Kafka's ``LogCleaner``, in three parts:

* ``quorum.log.cleaner_plan``: which log to clean and which offsets
  (``judge_log``, ``choose_log``, ``group_segments``, the ``OffsetMap``);
* ``quorum.log.cleaner_batches``: what becomes of each batch (bytes in, bytes
  out) and ``quorum.log.cleaner_swap``: the crash-safe swap of cleaned segments
  and its completion at start-up;
* ``quorum.log.cleaner_job``: one round over one log as a generator of bounded
  slices, which the broker's log-maintenance task runs
  (``broker.replica.log_cleaning``).

``LogCleaner`` ties them to the log directories: it keeps each directory's
``cleaner-offset-checkpoint`` (Kafka's name and format: version ``0``, a
count, then ``<topic> <partition> <offset>`` lines), the offset below which a
partition is clean (its first dirty offset).  A checkpoint is written after a
round has swapped in all it cleaned; a crash before that only makes the next
round clean the same offsets again.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from quorum.log.cleaner_job import (
    DEFAULT_SLICE_BATCHES,
    DEFAULT_SLICE_BYTES,
    CleaningJob,
    CleaningResult,
)
from quorum.log.cleaner_plan import CleanerConfig, CleaningCandidate, judge_log
from quorum.log.cleaner_swap import SwapHook
from quorum.log.config import LogConfig
from quorum.log.dir_checkpoints import (
    CheckpointFileError,
    TopicPartition,
    read_offsets,
    write_offsets,
)
from quorum.log.file_log import FileLog
from quorum.log.log_dir import parse_partition_dir_name

__all__ = ["CLEANER_OFFSET_CHECKPOINT", "LogCleaner", "cleaner_config_of"]

CLEANER_OFFSET_CHECKPOINT: Final = "cleaner-offset-checkpoint"

logger = logging.getLogger("quorum.log")


def _name_of(log: FileLog) -> tuple[Path, TopicPartition]:
    name = parse_partition_dir_name(log.directory.name)
    assert name is not None, f"{log.directory} is not a partition directory"
    return log.directory.parent, name


class LogCleaner:
    """Cleaner checkpoints of the log directories, and cleaning jobs over their logs.

    One task uses it (the broker's log cleaning task); ``write_checkpoint`` does
    blocking file work and may run in a worker thread.
    """

    def __init__(
        self,
        *,
        slice_batches: int = DEFAULT_SLICE_BATCHES,
        slice_bytes: int = DEFAULT_SLICE_BYTES,
    ) -> None:
        self._slice_batches = slice_batches
        self._slice_bytes = slice_bytes
        self._checkpoints: dict[Path, dict[TopicPartition, int]] = {}
        # partition directories whose cleaning failed (Kafka's uncleanable partitions):
        # left alone until the broker restarts
        self._uncleanable: set[Path] = set()

    def mark_uncleanable(self, log: FileLog) -> None:
        self._uncleanable.add(log.directory)

    def is_uncleanable(self, log: FileLog) -> bool:
        return log.directory in self._uncleanable

    def _offsets_of(self, log_dir: Path) -> dict[TopicPartition, int]:
        offsets = self._checkpoints.get(log_dir)
        if offsets is None:
            try:
                offsets = read_offsets(log_dir / CLEANER_OFFSET_CHECKPOINT)
            except CheckpointFileError as exc:
                # Kafka's choice too: the logs are then cleaned from their start again
                logger.warning("%s; cleaning every compacted log from its start", exc)
                offsets = {}
            self._checkpoints[log_dir] = offsets
        return offsets

    def checkpoint_of(self, log: FileLog) -> int | None:
        """The partition's first dirty offset as checkpointed; None if it has none."""
        log_dir, name = _name_of(log)
        return self._offsets_of(log_dir).get(name)

    def judge(
        self, log: FileLog, *, high_watermark: int, now_ms: int, config: CleanerConfig
    ) -> CleaningCandidate:
        return judge_log(
            log.segments,
            checkpoint=self.checkpoint_of(log),
            log_start_offset=log.log_start_offset,
            log_end_offset=log.log_end_offset,
            high_watermark=high_watermark,
            now_ms=now_ms,
            config=config,
        )

    def job(
        self,
        log: FileLog,
        candidate: CleaningCandidate,
        *,
        config: CleanerConfig,
        now_ms: int,
        producer_last_offsets: Mapping[int, int] | None = None,
        swap_hook: SwapHook | None = None,
    ) -> CleaningJob:
        """A round over ``log``; a checkpoint found invalid is reset first (in memory:
        ``finish`` or ``write_checkpoint`` stores it)."""
        if candidate.reset_checkpoint:
            log_dir, name = _name_of(log)
            self._offsets_of(log_dir)[name] = candidate.first_dirty_offset
        return CleaningJob(
            log,
            first_dirty_offset=candidate.first_dirty_offset,
            first_uncleanable_offset=candidate.first_uncleanable_offset,
            config=config,
            now_ms=now_ms,
            producer_last_offsets=producer_last_offsets,
            slice_batches=self._slice_batches,
            slice_bytes=self._slice_bytes,
            swap_hook=swap_hook,
        )

    def finish(self, log: FileLog, result: CleaningResult) -> Path | None:
        """Record a round's end offset; returns the log directory whose checkpoint must be
        written (``write_checkpoint``), None if nothing changed."""
        if result.aborted is not None:
            logger.info("cleaning %s stopped: %s", log.directory.name, result.aborted)
        if result.end_offset is None:
            return None
        log_dir, name = _name_of(log)
        self._offsets_of(log_dir)[name] = result.end_offset
        return log_dir

    def forget(self, log_dir: Path, name: TopicPartition) -> None:
        """The partition left the directory (deleted): drop its checkpoint entry."""
        self._offsets_of(log_dir).pop(name, None)

    def write_checkpoint(self, log_dir: Path) -> None:
        """Replace ``log_dir``'s ``cleaner-offset-checkpoint`` (atomically, blocking)."""
        # partitions whose directory went (deleted topics) leave the file
        offsets = {
            name: offset
            for name, offset in list(self._offsets_of(log_dir).items())
            if (log_dir / f"{name[0]}-{name[1]}").is_dir()
        }
        write_offsets(log_dir / CLEANER_OFFSET_CHECKPOINT, offsets)


def cleaner_config_of(config: LogConfig) -> CleanerConfig | None:
    """The cleaner's settings from a log's effective config; None unless ``cleanup.policy``
    compacts it."""
    if not config.compact:
        return None
    return CleanerConfig(
        delete_retention_ms=config.delete_retention_ms,
        min_cleanable_dirty_ratio=config.min_cleanable_dirty_ratio,
        min_compaction_lag_ms=config.min_compaction_lag_ms,
        max_compaction_lag_ms=config.max_compaction_lag_ms,
        segment_bytes=config.segment_bytes,
    )
