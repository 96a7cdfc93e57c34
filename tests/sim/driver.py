"""One simulated node: the Raft core, its disk, and a driver that follows the Ready contract.

The driver does what the trio driver will (``quorum.raft.output``): it handles
one ``Ready`` completely before the core sees its next input. For a Ready
that needs durability it

1. sends ``send`` at once,
2. writes the quorum-state file (``persist``; an fsync that takes simulated
   time) and then flushes the log (another fsync, when there is anything to
   flush),
3. only then sends ``send_after_durable``, hands ``loaded_snapshot`` and
   ``committed`` to the state machine (``tests.sim.machine``) and reports the
   flush to the core with ``flushed``.

When the state machine has applied enough records it takes a snapshot of its
state; the driver writes it (``RaftCore.create_snapshot``) in a later event of
its own, as an input of the core, so the checker has seen the committed
records before the log start may move past them.

Inputs that arrive meanwhile wait in an inbox, as they would in a memory
channel. A kill drops the inbox, the unflushed log tail and any quorum-state
write not yet complete; a restart builds a new ``RaftCore`` from what the disk
holds. Every event scheduled by an earlier life of the node is ignored.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from quorum.raft.config import RaftConfig
from quorum.raft.core import RaftCore
from quorum.raft.errors import NotLeaderError
from quorum.raft.output import Ready

from .disk import Disk
from .machine import SimMachine

if TYPE_CHECKING:
    from .simulator import Simulation

__all__ = ["CoreCall", "SimNode"]

CoreCall = Callable[[RaftCore, int], Ready]


class SimNode:
    def __init__(self, sim: Simulation, node_id: int, *, is_voter: bool) -> None:
        self.sim = sim
        self.node_id = node_id
        self.is_voter = is_voter
        self.disk = Disk()
        self.core: RaftCore | None = None
        self.incarnation = 0
        self.busy = False
        self.paused = False  # SIGSTOP: inputs wait, timers do not fire
        self.inbox: deque[tuple[str, CoreCall]] = deque()
        self._poll_token = 0
        self._poll_at: int | None = None  # when the live poll event is due
        self._draining = False
        # the offset up to which this life handed committed records to the state machine
        self.applied_end = 0
        self.machine = SimMachine(node_id, None)
        self._first_ready = True

    @property
    def alive(self) -> bool:
        return self.core is not None

    @property
    def raft(self) -> RaftCore:
        assert self.core is not None, f"node {self.node_id} is down"
        return self.core

    # -- life and death --------------------------------------------------------------------

    def start(self, config: RaftConfig, rng: random.Random) -> None:
        assert self.core is None, f"node {self.node_id} is already running"
        self.incarnation += 1
        self.applied_end = 0
        self.machine = SimMachine(self.node_id, self.sim.world.snapshot_every)
        self._first_ready = True
        self._poll_at = None
        now = self.sim.now_ms
        self.core = RaftCore(
            node_id=self.node_id,
            voters=self.sim.voters,
            log=self.disk.log,
            cluster_id=self.sim.cluster_id,
            rng=rng,
            now_ms=now,
            config=config,
            election_state=self.disk.election,
        )
        self.feed("start", lambda core, t: core.poll(t))

    def kill(self) -> None:
        """kill -9: the inbox, pending writes and the unflushed log tail are gone."""
        self.core = None
        self.incarnation += 1
        self.busy = False
        self.paused = False
        self._poll_at = None
        self.inbox.clear()
        self.disk.log.crash()

    def pause(self) -> None:
        """SIGSTOP between two inputs (the node must be idle)."""
        assert self.alive and not self.busy, f"node {self.node_id} can pause only when idle"
        self.paused = True

    def resume(self) -> None:
        """SIGCONT: overdue timers fire and the queued inputs are handled."""
        if not self.paused:
            return
        self.paused = False
        self.schedule_poll(self.sim.now_ms)
        self._drain()

    # -- inputs ----------------------------------------------------------------------------

    def feed(self, label: str, call: CoreCall) -> None:
        """Give the core one input now, or queue it while a Ready is being made durable."""
        if self.core is None:
            return
        if self.busy or self.paused:
            self.inbox.append((label, call))
            return
        self._run(label, call)

    def _run(self, label: str, call: CoreCall) -> None:
        try:
            ready = call(self.raft, self.sim.now_ms)
        except NotLeaderError:
            return  # a proposal that reached a node no longer leading: the client retries
        self._apply(label, ready)

    def schedule_poll(self, when_ms: int | None) -> None:
        if when_ms is not None and when_ms == self._poll_at:
            return  # that poll is already on its way
        self._poll_token += 1
        self._poll_at = when_ms
        if when_ms is None:
            return
        token, life = self._poll_token, self.incarnation

        def poll() -> None:
            if life != self.incarnation or token != self._poll_token:
                return
            self._poll_at = None
            if not (self.busy or self.paused):  # else the end of that wait polls
                self._run("poll", lambda core, t: core.poll(t))

        self.sim.queue.at(when_ms, f"poll {self.node_id}", poll)

    # -- the Ready contract ------------------------------------------------------------------

    def _apply(self, label: str, ready: Ready) -> None:
        self.sim.observe_ready(self, label, ready)
        self.sim.send(self, ready.send)
        if not ready.needs_durability:
            self._finish(ready)
            return
        self.busy = True
        life = self.incarnation
        if ready.persist is not None:
            self.sim.queue.after(
                self.sim.fsync_ms(),
                f"write quorum-state {self.node_id}",
                lambda: self._state_written(life, ready),
            )
        else:
            self._flush_log(life, ready)

    def _state_written(self, life: int, ready: Ready) -> None:
        if life != self.incarnation:
            return  # killed before the rename: the old file stays
        self.disk.election = ready.persist
        if ready.flush_log or ready.send_after_durable:
            self._flush_log(life, ready)
        else:
            self._finish(ready)

    def _flush_log(self, life: int, ready: Ready) -> None:
        log = self.disk.log
        if log.flushed_offset >= log.log_end_offset:
            self._log_flushed(life, ready)  # nothing to write: no fsync wait
            return
        self.sim.queue.after(
            self.sim.fsync_ms(), f"fsync log {self.node_id}", lambda: self._log_flushed(life, ready)
        )

    def _log_flushed(self, life: int, ready: Ready) -> None:
        if life != self.incarnation:
            return  # killed before the fsync completed
        flushed = self.disk.log.flush()
        self.sim.send(self, ready.send_after_durable)
        self._hand_committed(ready)
        after = self.raft.flushed(flushed, self.sim.now_ms)
        self.busy = False
        self._apply("flushed", after)

    def _finish(self, ready: Ready) -> None:
        self._hand_committed(ready)
        self.busy = False
        self.schedule_poll(ready.next_deadline_ms)
        self._drain()

    def _hand_committed(self, ready: Ready) -> None:
        first, self._first_ready = self._first_ready, False
        if ready.loaded_snapshot is not None:
            self.applied_end = ready.loaded_snapshot.offset
        committed = ready.committed
        if committed is not None:
            assert committed.start == self.applied_end, (
                f"node {self.node_id} hands committed {committed} to the state machine after "
                f"{self.applied_end}: committed ranges must be consecutive"
            )
            self.applied_end = committed.end
        self.machine.observe(ready, self.disk.log, first=first)
        if committed is not None:
            self.sim.on_committed(self, ready)
            if self.machine.snapshot_due:
                self._schedule_snapshot()

    def _schedule_snapshot(self) -> None:
        # taken now, written in a later event: the checker has seen these commits by then
        snapshot_id, data = self.machine.snapshot()
        life = self.incarnation

        def write(core: RaftCore, now_ms: int) -> Ready:
            core.create_snapshot(snapshot_id, data)
            return core.poll(now_ms)

        def snapshot() -> None:
            if life == self.incarnation:
                self.feed("snapshot", write)

        self.sim.queue.after(0, f"snapshot {self.node_id}", snapshot)

    def _drain(self) -> None:
        if self._draining:
            return
        self._draining = True
        try:
            while self.inbox and not (self.busy or self.paused) and self.core is not None:
                label, call = self.inbox.popleft()
                self._run(label, call)
        finally:
            self._draining = False
