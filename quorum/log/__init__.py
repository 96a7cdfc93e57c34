"""The durable log: record-batch segments, offset index, leader-epoch cache, snapshots.

``ReplicatedLog`` (``protocol``) is what the Raft core and the replica manager
use; ``FileLog`` implements it on Kafka's on-disk layout and ``MemoryLog`` in
memory for the simulator.
"""

from quorum.log.cleaner import CLEANER_OFFSET_CHECKPOINT, LogCleaner, cleaner_config_of
from quorum.log.cleaner_job import CleaningJob, CleaningResult, CleaningStats, Pause, SyncFile
from quorum.log.cleaner_plan import CleanerConfig, CleaningCandidate, choose_log
from quorum.log.clock import Clock, wall_clock_ms
from quorum.log.config import LogConfig, data_log_config
from quorum.log.dir_checkpoints import CheckpointFileError
from quorum.log.epoch_cache import EpochCache, EpochEntry
from quorum.log.errors import (
    InvalidAppendError,
    LogCorruptionError,
    LogError,
    OffsetOutOfRangeError,
    SnapshotNotFoundError,
)
from quorum.log.file_cache import DEFAULT_MAX_OPEN_FILES, OpenFiles, default_open_files
from quorum.log.file_log import CheckpointedOffsets, FileLog, partition_dir
from quorum.log.flush_policy import FlushReason
from quorum.log.log_dir import LogDirectory, PartitionId, PartitionKey
from quorum.log.memory_log import MemoryLog
from quorum.log.partition_metadata import PartitionMetadataError
from quorum.log.producer_snapshots import (
    MAX_BATCHES_PER_PRODUCER,
    ProducerBatch,
    ProducerEntry,
    ProducerSnapshot,
)
from quorum.log.protocol import (
    UNDEFINED_EPOCH,
    UNDEFINED_OFFSET,
    AppendInfo,
    OffsetAndEpoch,
    ReadResult,
    ReplicatedLog,
    SnapshotData,
    metadata_end_offset_for_epoch,
)
from quorum.log.recovery import OpenMode
from quorum.log.roll import RollReason
from quorum.log.timestamps import TimestampAndOffset

__all__ = [
    "CLEANER_OFFSET_CHECKPOINT",
    "DEFAULT_MAX_OPEN_FILES",
    "MAX_BATCHES_PER_PRODUCER",
    "UNDEFINED_EPOCH",
    "UNDEFINED_OFFSET",
    "AppendInfo",
    "CheckpointFileError",
    "CheckpointedOffsets",
    "CleanerConfig",
    "CleaningCandidate",
    "CleaningJob",
    "CleaningResult",
    "CleaningStats",
    "Clock",
    "EpochCache",
    "EpochEntry",
    "FileLog",
    "FlushReason",
    "InvalidAppendError",
    "LogCleaner",
    "LogConfig",
    "LogCorruptionError",
    "LogDirectory",
    "LogError",
    "MemoryLog",
    "OffsetAndEpoch",
    "OffsetOutOfRangeError",
    "OpenFiles",
    "OpenMode",
    "PartitionId",
    "PartitionKey",
    "PartitionMetadataError",
    "Pause",
    "ProducerBatch",
    "ProducerEntry",
    "ProducerSnapshot",
    "ReadResult",
    "ReplicatedLog",
    "RollReason",
    "SnapshotData",
    "SnapshotNotFoundError",
    "SyncFile",
    "TimestampAndOffset",
    "choose_log",
    "cleaner_config_of",
    "data_log_config",
    "default_open_files",
    "metadata_end_offset_for_epoch",
    "partition_dir",
    "wall_clock_ms",
]
