"""Driving a state machine hook in a unit test as the node's driver does."""

from __future__ import annotations

from quorum.node.state_machine import ReadyObserver
from quorum.raft import RaftCore, Ready

__all__ = ["observe_and_work"]


def observe_and_work(machine: ReadyObserver, ready: Ready, core: RaftCore, now_ms: int) -> None:
    """Hand ``ready`` over, then let the machine work every slice it has; the snapshots
    it builds are stored at once (the driver stores them in a worker thread)."""
    machine.observe(ready, core, now_ms)
    while machine.has_work(now_ms):
        for snapshot in machine.work(core, now_ms).snapshots:
            core.create_snapshot(snapshot.snapshot_id, snapshot.parts)
