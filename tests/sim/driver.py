"""One simulated node: the Raft core, its disk, and the production ``ReadyPlan``.

The node runs the plan the trio driver runs (``quorum.node.ready_plan``):
for each input it calls the core and performs every effect the plan asks
for, with simulated time instead of real I/O. A send goes out at once; a
quorum-state write and a waited log flush are fsyncs that take simulated
time, during which the node is busy and its inputs wait in an inbox, as they
would in a memory channel; a leader's flush beside the core is an fsync
event too, but the leader goes on handling inputs meanwhile (those the plan
calls safe beside a flush), and it reports the flush between two inputs. A
flush claims only what was written when it started, as the file log's does.

When the state machine (``tests.sim.machine``) has applied enough records it
takes a snapshot of its state; the node writes it (``RaftCore.create_snapshot``)
in a later event of its own, as an input of the core, so the checker has seen
the committed records before the log start may move past them.

A kill drops the inbox, the unflushed log tail and any quorum-state write not
yet complete; a restart builds a new ``RaftCore`` from what the disk holds.
Every event scheduled by an earlier life of the node is ignored.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from quorum.node.ready_plan import (
    AwaitFlushBeside,
    Effects,
    Flush,
    FsyncPlacement,
    Observe,
    Persist,
    ReadyPlan,
    Send,
    StartFlushBeside,
    safe_beside_a_flush,
)
from quorum.raft import ElectionState
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
        self.plan: ReadyPlan | None = None
        self.incarnation = 0
        self.busy = False  # the plan waits for a write or a flush
        self.paused = False  # SIGSTOP: inputs wait, timers do not fire
        self.inbox: deque[tuple[str, CoreCall, object]] = deque()
        self._poll_token = 0
        self._poll_at: int | None = None  # when the live poll event is due
        self._draining = False
        # the flush running beside the core: None, or what it made durable once it ended
        self._beside_flushed: int | None = None
        self._beside_waiter: Effects | None = None  # a plan waiting for that flush to end
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

    @property
    def _plan(self) -> ReadyPlan:
        assert self.plan is not None, f"node {self.node_id} is down"
        return self.plan

    # -- life and death --------------------------------------------------------------------

    def start(self, config: RaftConfig, rng: random.Random) -> None:
        assert self.core is None, f"node {self.node_id} is already running"
        self.incarnation += 1
        self.applied_end = 0
        self.machine = SimMachine(self.node_id, self.sim.world.snapshot_every)
        self._first_ready = True
        self._poll_at = None
        self._beside_flushed = None
        self._beside_waiter = None
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
        self.plan = ReadyPlan(
            self.core, self.disk.log, now_ms=lambda: self.sim.now_ms,
            fsync=FsyncPlacement.WORKER_THREAD,
        )
        self.feed("start", lambda core, t: core.poll(t))

    def kill(self) -> None:
        """kill -9: the inbox, pending writes and the unflushed log tail are gone."""
        self.core = None
        self.plan = None
        self.incarnation += 1
        self.busy = False
        self.paused = False
        self._poll_at = None
        self._beside_flushed = None
        self._beside_waiter = None
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

    def feed(self, label: str, call: CoreCall, item: object = None) -> None:
        """Give the core one input now, or queue it while the node cannot take it.

        ``item`` is the inbound envelope, if any: the plan says which inputs a
        leader may handle while its flush runs beside the core.
        """
        if self.core is None:
            return
        if self._must_wait(item):
            self.inbox.append((label, call, item))
            return
        self._run(label, call)

    def _must_wait(self, item: object) -> bool:
        if self.busy or self.paused:
            return True
        return self._plan.flush_beside_running and not safe_beside_a_flush(item)  # type: ignore[arg-type]

    def _run(self, label: str, call: CoreCall) -> None:
        try:
            ready = call(self.raft, self.sim.now_ms)
        except NotLeaderError:
            return  # a proposal that reached a node no longer leading: the client retries
        self._perform(label, self._plan.apply(ready))

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

    # -- the plan's effects ------------------------------------------------------------------

    def _perform(self, label: str, effects: Effects, result: object = None) -> None:
        """Carry out the plan's effects until it ends or waits for the disk."""
        life = self.incarnation
        while True:
            try:
                effect = effects.send(result)
            except StopIteration:
                self._finish()
                return
            result = None
            if isinstance(effect, Send):
                self.sim.send(self, effect.messages)
            elif isinstance(effect, Observe):
                self.sim.observe_ready(self, label, effect.ready)
                self._hand_committed(effect.ready)
            elif isinstance(effect, Persist):
                self._wait_for_disk(life, label, effects, lambda e=effect: self._persist(e.state))
                return
            elif isinstance(effect, Flush):
                log = self.disk.log
                if log.flushed_offset >= log.log_end_offset:
                    result = log.flush()  # nothing to write: no fsync wait
                    continue
                self._wait_for_disk(life, label, effects, log.flush)
                return
            elif isinstance(effect, StartFlushBeside):
                self._start_flush_beside(life)
            else:
                assert isinstance(effect, AwaitFlushBeside), effect
                if self._beside_flushed is None:
                    self.busy = True
                    self._beside_waiter = effects
                    return

    def _persist(self, state: ElectionState) -> None:
        self.disk.election = state

    def _wait_for_disk(
        self, life: int, label: str, effects: Effects, write: Callable[[], object]
    ) -> None:
        self.busy = True

        def done() -> None:
            if life != self.incarnation:
                return  # killed before the write completed
            self._perform(label, effects, write())

        self.sim.queue.after(self.sim.fsync_ms(), f"fsync {self.node_id}", done)

    def _start_flush_beside(self, life: int) -> None:
        self._beside_flushed = None
        target = self.disk.log.log_end_offset  # a flush claims what was written before it

        def done() -> None:
            if life != self.incarnation:
                return
            self._beside_flushed = self.disk.log.flush_up_to(target)
            waiter, self._beside_waiter = self._beside_waiter, None
            if waiter is not None:
                self._perform("flushed beside", waiter)  # the busy plan goes on
            elif not self.busy and not self.paused:
                self._report_flush_beside()

        self.sim.queue.after(self.sim.fsync_ms(), f"fsync beside {self.node_id}", done)

    def _report_flush_beside(self) -> None:
        flushed, self._beside_flushed = self._beside_flushed, None
        assert flushed is not None
        self._perform("flushed", self._plan.flush_beside_ended(flushed))

    def _finish(self) -> None:
        self.busy = False
        if self._beside_flushed is not None and not self.paused:
            self._report_flush_beside()  # between inputs: the flush beside ended meanwhile
            return
        self.schedule_poll(self._plan.deadline_ms)
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
            while self.inbox and self.core is not None:
                label, call, item = self.inbox[0]
                if self._must_wait(item):
                    break
                self.inbox.popleft()
                self._run(label, call)
        finally:
            self._draining = False
