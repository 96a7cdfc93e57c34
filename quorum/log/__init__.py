"""The durable log: record-batch segments, offset index, leader-epoch cache, snapshots.

``ReplicatedLog`` (``protocol``) is what the Raft core and the replica manager
use; ``FileLog`` implements it on Kafka's on-disk layout and ``MemoryLog`` in
memory for the simulator.
"""

from quorum.log.config import LogConfig
from quorum.log.epoch_cache import EpochCache, EpochEntry
from quorum.log.errors import (
    InvalidAppendError,
    LogCorruptionError,
    LogError,
    OffsetOutOfRangeError,
    SnapshotNotFoundError,
)
from quorum.log.file_log import FileLog, partition_dir
from quorum.log.memory_log import MemoryLog
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

__all__ = [
    "UNDEFINED_EPOCH",
    "UNDEFINED_OFFSET",
    "AppendInfo",
    "EpochCache",
    "EpochEntry",
    "FileLog",
    "InvalidAppendError",
    "LogConfig",
    "LogCorruptionError",
    "LogError",
    "MemoryLog",
    "OffsetAndEpoch",
    "OffsetOutOfRangeError",
    "ReadResult",
    "ReplicatedLog",
    "SnapshotData",
    "SnapshotNotFoundError",
    "metadata_end_offset_for_epoch",
    "partition_dir",
]
