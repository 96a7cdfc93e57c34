"""The simulated disk of one node: its log and its quorum-state file.

The log is a ``MemoryLog`` (``crash`` drops the unflushed tail) that also
remembers the lowest offset it lost since the checker last looked, so the
invariants can tell "never truncated" without rereading whole logs, and counts
changes to its snapshots, so they are checked only when they change. The
quorum-state file is one ``ElectionState`` that changes only when the driver's
write of it completes.
"""

from __future__ import annotations

import attrs

from quorum.log import MemoryLog, OffsetAndEpoch, SnapshotData
from quorum.raft.states import ElectionState

__all__ = ["Disk", "SimLog"]


class SimLog(MemoryLog):
    def __init__(self) -> None:
        super().__init__()
        self.lost_from: int | None = None
        self.snapshot_changes = 0

    def create_snapshot(self, snapshot_id: OffsetAndEpoch, data: SnapshotData) -> bool:
        self.snapshot_changes += 1
        return super().create_snapshot(snapshot_id, data)

    def delete_before(self, snapshot_id: OffsetAndEpoch) -> bool:
        self.snapshot_changes += 1
        return super().delete_before(snapshot_id)

    def truncate_to_latest_snapshot(self) -> bool:
        self.snapshot_changes += 1
        return super().truncate_to_latest_snapshot()

    def _lost(self) -> None:
        end = self.log_end_offset
        self.lost_from = end if self.lost_from is None else min(end, self.lost_from)

    def truncate_to(self, offset: int) -> None:
        super().truncate_to(offset)
        self._lost()

    def truncate_fully_and_start_at(self, offset: int) -> None:
        super().truncate_fully_and_start_at(offset)
        self._lost()

    def crash(self) -> None:
        super().crash()
        self._lost()

    def take_lost_from(self) -> int | None:
        lost, self.lost_from = self.lost_from, None
        return lost


@attrs.define
class Disk:
    log: SimLog = attrs.field(factory=SimLog)
    election: ElectionState | None = None  # None: no quorum-state file yet
    wipes: int = 0

    def wipe(self) -> None:
        """The disk is lost: a new empty log and no quorum-state file."""
        self.log = SimLog()
        self.election = None
        self.wipes += 1
