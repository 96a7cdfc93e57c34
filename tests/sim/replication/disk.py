"""A broker's disk: partition logs with a page cache, and high-watermark checkpoints.

Each log is a ``MemoryLog`` whose unflushed tail is the page cache: the OS
writes it back now and then (``write_back``), a process kill leaves it
there, a machine crash loses it (``crash``, which drops the producer
snapshots above what survives, as the file log's recovery does). Checkpoints of high watermarks
are written durably (Kafka writes and fsyncs its checkpoint files). ``SimLog``
remembers the lowest offset it was cut to since the checks last looked, so
they can re-verify what a truncation or crash changed.
"""

from __future__ import annotations

from broker.replica.manager import PartitionKey
from quorum.log import LogConfig, MemoryLog, ReplicatedLog

__all__ = ["BrokerDisk", "SimLog"]


# small segments: a partition rolls every few dozen batches, so the replica core writes
# producer snapshots at its rolls and crashes cut below some of them
SEGMENT_BYTES = 4_096


class SimLog(MemoryLog):
    def __init__(self) -> None:
        super().__init__(LogConfig(segment_bytes=SEGMENT_BYTES))
        self.cut_to: int | None = None

    def _cut(self) -> None:
        end = self.log_end_offset
        self.cut_to = end if self.cut_to is None else min(self.cut_to, end)

    def truncate_to(self, offset: int) -> None:
        super().truncate_to(offset)
        self._cut()

    def truncate_fully_and_start_at(self, offset: int) -> None:
        super().truncate_fully_and_start_at(offset)
        self.cut_to = 0  # everything is new

    def crash(self) -> None:
        super().crash()
        self._cut()

    def take_cut(self) -> int | None:
        cut, self.cut_to = self.cut_to, None
        return cut


class BrokerDisk:
    """What survives a broker process: its logs and its checkpoint file."""

    def __init__(self) -> None:
        self.logs: dict[PartitionKey, SimLog] = {}
        self.checkpoint: dict[PartitionKey, int] = {}

    # -- LogDirectory ----------------------------------------------------------------------

    def open_log(self, key: PartitionKey, name: tuple[str, int]) -> ReplicatedLog:
        if key not in self.logs:
            self.logs[key] = SimLog()
        return self.logs[key]

    def create_log(self, key: PartitionKey, name: tuple[str, int]) -> ReplicatedLog:
        return self.open_log(key, name)

    def checkpointed_high_watermark(self, key: PartitionKey) -> int:
        return self.checkpoint.get(key, 0)

    def delete_log(self, key: PartitionKey) -> None:
        self.logs.pop(key, None)
        self.checkpoint.pop(key, None)

    # -- the machine -----------------------------------------------------------------------

    def write_back(self) -> None:
        for log in self.logs.values():
            log.flush()

    def crash(self) -> None:
        """The machine lost power: every unflushed tail is gone."""
        for log in self.logs.values():
            log.crash()
