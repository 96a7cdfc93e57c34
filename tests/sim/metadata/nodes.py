"""Simulated nodes that run the production metadata state machines.

A ``MetadataNode`` is a simulated Raft node (``tests.sim.driver.SimNode``:
the real ``RaftCore`` and the real ``ReadyPlan``) whose state machine is the
one that ships: a ``ControllerMachine`` on a voter, a
``BrokerMetadataMachine`` on an observer. As the trio driver does, it hands
every Ready to the machine (``observe``) and, between inputs, lets it work
one slice at a time (``work``), proposing the records a slice returns with
the driver's own ``propose_machine_records``.

A slice costs simulated CPU time in proportion to its units
(``UNIT_COST_US``): while it runs the node takes no input, so a slice that
ignored its bound would delay fetches and heartbeats, and the seeds would see
the elections and fencing that follow. Every slice's units are checked
against ``MAX_UNITS_PER_SLICE``; every image a machine publishes is handed to
the world's checks (``MetadataChecks``).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from broker.metadata_machine import BrokerMetadataMachine
from quorum.controller.controller import QuorumController
from quorum.controller.image import MetadataImage
from quorum.controller.operations import Operation
from quorum.controller.results import ControllerConfig
from quorum.controller.slicing import MAX_UNITS_PER_SLICE
from quorum.node.controller_machine import ControllerMachine
from quorum.node.driver import propose_machine_records
from quorum.node.state_machine import Work
from quorum.raft.config import RaftConfig
from quorum.raft.output import Ready
from quorum.wire.messages.metadata_records import (
    AbortTransactionRecord,
    BeginTransactionRecord,
    EndTransactionRecord,
)
from quorum.wire.metadata_serde import MetadataRecord

from ..committed import InvariantViolation
from ..driver import SimNode

if TYPE_CHECKING:
    from .world import MetadataSimulation

__all__ = ["UNIT_COST_US", "MetadataNode", "RecordingController", "RecordingMachine"]

# what one unit of work (a record decoded or generated, a partition examined) costs
UNIT_COST_US = 10


_MARKERS: Final = (BeginTransactionRecord, EndTransactionRecord, AbortTransactionRecord)


class RecordingController(QuorumController):
    """The production controller, noting the records each request's operation wrote, so the
    simulation can check that a refused request wrote none (the machine does not say)."""

    def __init__(self, config: ControllerConfig, *, rng: random.Random) -> None:
        super().__init__(config, rng=rng)
        # id(request) -> (request, records written, transaction markers left out)
        self.written: dict[int, tuple[Any, list[MetadataRecord]]] = {}

    def start(self, request: Any, version: int, **kwargs: Any) -> Operation[Any]:
        operation = super().start(request, version, **kwargs)
        written: list[MetadataRecord] = []
        self.written[id(request)] = (request, written)
        step = operation.step

        def recorded() -> list[MetadataRecord]:
            out = step()
            written.extend(r for r in out if not isinstance(r, _MARKERS))
            return out

        operation.step = recorded  # type: ignore[method-assign]
        return operation

    def records_of(self, request: Any) -> list[MetadataRecord] | None:
        """What ``request``'s operation wrote (None: it ran no operation here)."""
        entry = self.written.pop(id(request), None)
        return None if entry is None or entry[0] is not request else entry[1]


class RecordingMachine(ControllerMachine):
    """The production machine, telling the checks which operation's step wrote the records
    it stages (a transaction's records must all be its own operation's)."""

    def __init__(self, controller: QuorumController, node: MetadataNode, **kwargs: Any) -> None:
        super().__init__(controller, **kwargs)
        self._node = node
        self._tokens: dict[int, int] = {}  # id(operation) -> its token on this node

    def _stage(self, records: Sequence[MetadataRecord], next_offset: int) -> list[bytes]:
        running = self._running
        if records and running is not None:
            operation = running.operation
            token = self._tokens.setdefault(id(operation), next(_TOKENS))
            epoch = self.controller.epoch
            assert epoch is not None
            self._node.sim.checks.note_written(
                epoch, next_offset, len(records), (operation.name, token)
            )
        return super()._stage(records, next_offset)


_TOKENS: Final = itertools.count(1)


class MetadataNode(SimNode):
    sim: MetadataSimulation

    def __init__(self, sim: MetadataSimulation, node_id: int, *, is_voter: bool) -> None:
        super().__init__(sim, node_id, is_voter=is_voter)
        self.hook: ControllerMachine | BrokerMetadataMachine | None = None
        self.cpu_busy = False  # a slice is running: inputs wait
        self._work_token = 0
        self._work_at: int | None = None
        self.max_slice_units = 0
        self.slices = 0

    # -- life -------------------------------------------------------------------------------

    def start(self, config: RaftConfig, rng: random.Random) -> None:
        if self.is_voter:
            controller = RecordingController(
                self.sim.controller_config(self.node_id), rng=random.Random(rng.getrandbits(64))
            )
            self.hook = RecordingMachine(
                controller, self, snapshot_max_bytes=self.sim.snapshot_bytes,
                snapshot_min_records=self.sim.snapshot_min_records,
            )
        else:
            self.hook = BrokerMetadataMachine(
                broker_id=self.node_id, snapshot_max_bytes=self.sim.snapshot_bytes,
                snapshot_min_records=self.sim.snapshot_min_records,
            )
        self.cpu_busy = False
        self._work_at = None
        super().start(config, rng)

    def kill(self) -> None:
        if self.hook is not None:
            self.hook.close()
        self.hook = None
        self.cpu_busy = False
        self._work_at = None
        super().kill()

    @property
    def controller(self) -> ControllerMachine | None:
        return self.hook if isinstance(self.hook, ControllerMachine) else None

    @property
    def published(self) -> MetadataImage | None:
        """The newest image this node's machine published (None: down)."""
        return None if self.hook is None else self.hook.follower.image

    # -- the driver's loop: inputs, then one slice ---------------------------------------------

    def _must_wait(self, item: object) -> bool:
        return self.cpu_busy or super()._must_wait(item)

    def _hand_committed(self, ready: Ready) -> None:
        """The production machine sees the Ready (the raft scenarios' counter does not)."""
        if ready.loaded_snapshot is not None:
            self.applied_end = ready.loaded_snapshot.offset
            self.sim.stats["snapshot loaded"] += 1
        committed = ready.committed
        if committed is not None:
            assert committed.start == self.applied_end, (
                f"node {self.node_id} hands committed {committed} after {self.applied_end}"
            )
            self.applied_end = committed.end
        assert self.hook is not None
        self.hook.observe(ready, self.raft, self.sim.now_ms)

    def _finish(self) -> None:
        super()._finish()
        self.schedule_work()

    def schedule_work(self) -> None:
        """A work event now if the machine has work, else at its next timer."""
        hook = self.hook
        if hook is None or self.core is None:
            return
        now = self.sim.now_ms
        when = now if hook.has_work(now) else hook.deadline_ms()
        if when is None or (self._work_at is not None and self._work_at <= when):
            return
        self._work_token += 1
        self._work_at = when
        token, life = self._work_token, self.incarnation

        def work() -> None:
            if life != self.incarnation or token != self._work_token:
                return
            self._work_at = None
            self._work()

        self.sim.queue.at(max(when, now), f"work {self.node_id}", work)

    def _work(self) -> None:
        hook = self.hook
        now = self.sim.now_ms
        if hook is None or self.busy or self.paused or self.cpu_busy or not hook.has_work(now):
            return  # the end of that wait schedules work again
        before = hook.follower.image
        done = hook.work(self.raft, now)
        self._check_slices(done)
        for snapshot in done.snapshots:  # (the driver writes it beside the core)
            if self.raft.create_snapshot(snapshot.snapshot_id, snapshot.parts):
                self.sim.stats["snapshot written"] += 1
        if hook.follower.image is not before:
            self.sim.checks.published(self, hook.follower.image)
        ready = None
        if done.payloads:
            ready = propose_machine_records(self.raft, hook, done.payloads, now)
        # the slice held the thread for its time: what it proposes goes out after it
        cost_ms = sum(s.units for s in done.slices) * UNIT_COST_US // 1000
        self.cpu_busy = True
        life = self.incarnation

        def end() -> None:
            if life != self.incarnation:
                return
            self.cpu_busy = False
            if ready is not None:
                self._perform("proposed", self._plan.apply(ready))
            else:
                self._finish()

        self.sim.queue.after(cost_ms, f"slice end {self.node_id}", end)

    def _check_slices(self, done: Work) -> None:
        for report in done.slices:
            self.slices += 1
            self.max_slice_units = max(self.max_slice_units, report.units)
            if report.units > MAX_UNITS_PER_SLICE:
                raise InvariantViolation(
                    f"node {self.node_id}: a {report.kind} slice of {report.units} units "
                    f"(bound {MAX_UNITS_PER_SLICE})"
                )
