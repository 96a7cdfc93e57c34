"""``CoreDriver``: the one task that owns the Raft core, executing its ``ReadyPlan``.

Every other task talks to it through one memory channel of inputs
(``quorum.node.inputs``). For each input it calls the core and performs
every effect ``ReadyPlan.apply`` asks for (``quorum.node.ready_plan``: the
Ready contract's order, where fsyncs run, what a leader serves beside its
own flush) before it takes the next input; the plan is sans-I/O and the
simulator runs it too. The core is polled at ``next_deadline_ms``.

Between inputs the state machine (``quorum.node.state_machine``) works one
bounded slice: replay, a snapshot part, a slice of a controller operation
(whose records are proposed at once). The inputs queued meanwhile (up to
``INPUTS_BETWEEN_SLICES``) and then one slice alternate, with a checkpoint
after each, so a node busy with 100,000 partitions still answers fetches,
votes and heartbeats within a slice's time; each slice's duration and units
go to the node's ``NodeActivity``.

Waited fsyncs run on the trio thread or in a worker thread as the plan says
(``FsyncPlacement``); a leader's flush beside the core runs in a worker
thread while the core goes on serving fetches and appends, and is reported
to the plan between inputs. Time given to the core is wall-clock
milliseconds advanced by trio's monotonic clock (DescribeQuorum reports
timestamps; deadlines need a clock that never steps back).
"""

from __future__ import annotations

import gc
import logging
import math
import time
from collections.abc import Callable, Iterable
from typing import Any, Final, TypeVar

import attrs
import trio

from quorum.controller.error_responses import error_response
from quorum.log import FileLog
from quorum.metrics.activity import NodeActivity
from quorum.metrics.step_work import STEP_WORK
from quorum.node.appends import PendingAppends, not_leader_outcome
from quorum.node.connection import ResponseSlot
from quorum.node.inputs import (
    Append,
    AppendOutcome,
    BrokerConnectionLost,
    ConnectionFailed,
    ControllerCall,
    Input,
    Resign,
)
from quorum.node.metadata_follower import SnapshotFile
from quorum.node.quorum_state import QuorumStateFile
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
from quorum.node.state_machine import StateMachineHook
from quorum.raft import (
    InboundRequest,
    InboundResponse,
    LeaderAndEpoch,
    NotLeaderError,
    OffsetRange,
    Outbound,
    OutboundRequest,
    RaftCore,
    Ready,
)
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    DescribeQuorumResponse,
    DescribeQuorumResponseNode,
)
from quorum.wire.metadata_serde import wrap_payload

__all__ = ["INBOX_SIZE", "INPUTS_BETWEEN_SLICES", "CoreDriver", "FsyncPlacement", "NodeClock", "propose_machine_records"]

logger = logging.getLogger(__name__)

# inputs queued for the core before senders wait (backpressure on listeners)
INBOX_SIZE: Final = 4096
# inputs handled between two slices of the state machine's work, at most: each input is
# cheap (a request is only queued by the machine), a slice may take tens of milliseconds
INPUTS_BETWEEN_SLICES: Final = 64
# slices whose results (image parts) outlive them
_LONG_LIVED_KINDS: Final = frozenset({"replay", "snapshot-load", "controller-op"})
_MAX_APPENDS_PER_PROPOSAL: Final = 1024
# DescribeQuorum names the voters' endpoints (Nodes) from v2 on
_DESCRIBE_QUORUM_NODES_VERSION: Final = 2
T = TypeVar("T")


@attrs.define(eq=False)
class _BackgroundFlush:
    """One flush of a leader's log in a worker thread.

    The thread itself records the result, so the driver can count it before
    trio gets round to resuming the task that waited for the thread (with
    four processes on two cores that can be half a millisecond later).
    """

    ended: trio.Event = attrs.Factory(trio.Event)
    flushed: int | None = None

    def run(self, log: FileLog) -> None:
        self.flushed = log.flush()


class NodeClock:
    """Wall-clock milliseconds at start, advanced by trio's monotonic clock."""

    def __init__(self) -> None:
        self._offset_ms = time.time() * 1000 - trio.current_time() * 1000

    def now_ms(self) -> int:
        return int(trio.current_time() * 1000 + self._offset_ms)

    def trio_time(self, ms: int | None) -> float:
        return math.inf if ms is None else (ms - self._offset_ms) / 1000


def propose_machine_records(
    core: RaftCore, machine: StateMachineHook, payloads: list[bytes], now_ms: int
) -> Ready:
    """Propose what the state machine computed for the offsets the leader gave it.

    The core runs its timers before it takes a proposal, so the leadership
    may end right there (check quorum at ``now_ms``): then nothing is
    appended, ``Ready.accepted`` is None, and the machine learns of the lost
    leadership when it observes that Ready (it renounces its uncommitted
    records and answers NOT_CONTROLLER). The node goes on.
    """
    try:
        ready = core.propose(payloads, now_ms)
    except NotLeaderError as exc:
        logger.info("%d record(s) not proposed: %s", len(payloads), exc)
        return core.poll(now_ms)
    assert ready.accepted is not None, "a proposal the core took has offsets"
    machine.proposed(ready.accepted)
    return ready


class CoreDriver:
    def __init__(
        self,
        *,
        core: RaftCore,
        log: FileLog,
        clock: NodeClock,
        state_file: QuorumStateFile,
        send_request: Callable[[OutboundRequest], None],
        voter_nodes: tuple[DescribeQuorumResponseNode, ...] = (),
        fsync: FsyncPlacement = FsyncPlacement.WORKER_THREAD,
        machine: StateMachineHook | None = None,
        activity: NodeActivity | None = None,
    ) -> None:
        self.core = core
        self._log = log
        self._state_file = state_file
        self._send_request = send_request
        self._voter_nodes = voter_nodes
        self._plan = ReadyPlan(core, log, now_ms=clock.now_ms, fsync=fsync)
        self._machine = machine
        self.activity = activity
        self._inbox_send, self._inbox = trio.open_memory_channel[Input](INBOX_SIZE)
        self._appends = PendingAppends(core.node_id)
        self._held: Input | None = None  # taken from the inbox, not handled yet
        self._closed = False
        self._clock = clock
        # the leader's log flush running beside the core, if any
        self._flush: _BackgroundFlush | None = None
        self._waiting_for_input: trio.CancelScope | None = None
        self._nursery: trio.Nursery | None = None
        self.leader = LeaderAndEpoch(core.leader_id, core.epoch)
        self.role = core.role
        self.high_watermark: int | None = core.high_watermark
        self.changed = trio.Event()  # set (and replaced) after every Ready

    # -- the public side (other tasks) ------------------------------------------------------

    async def submit(self, item: Input) -> None:
        if self._closed:
            _refuse(item)
            return
        try:
            # no checkpoint while there is room: a listener routes a whole read at once
            self._inbox_send.send_nowait(item)
        except trio.WouldBlock:
            await self._inbox_send.send(item)

    def submit_nowait(self, item: Input) -> None:
        """``item`` if the inbox has room, else dropped (for notices that only speed
        something up, such as a broker's closed connections: the session still expires)."""
        if self._closed:
            return
        try:
            self._inbox_send.send_nowait(item)
        except (trio.WouldBlock, trio.ClosedResourceError, trio.BrokenResourceError):
            logger.debug("inbox full: %r dropped", item)

    def close(self) -> None:
        """The node stops: appends still waiting, or queued, fail (nothing is sent)."""
        self._closed = True
        self._appends.fail_all(
            self.leader, "the node is shutting down", error=Errors.BROKER_NOT_AVAILABLE
        )
        while (item := self._take_nowait()) is not None:
            _refuse(item)
        if self._machine is not None:
            self._machine.close()

    def now_ms(self) -> int:
        return self._clock.now_ms()

    @property
    def handed_over(self) -> bool:
        """Shutting down, this node may stop: another voter leads, or there is none."""
        return self.core.handed_over

    # -- the owner task -------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            await self._apply(self.core.poll(self.now_ms()))
            task_status.started()
            while True:
                await self._report_background_flush()
                item = self._take_nowait()
                if item is None and not self._machine_has_work():
                    with trio.move_on_at(
                        self._clock.trio_time(self._next_wakeup_ms())
                    ) as self._waiting_for_input:
                        item = await self._inbox.receive()
                    self._waiting_for_input = None
                    if item is None and self._background_flush_ended():
                        continue
                if item is not None or self._core_due():
                    await self._handle(item)
                    # what queued meanwhile first (fetches must not wait behind a pile of
                    # requests, one slice each), then the next slice
                    for _ in range(INPUTS_BETWEEN_SLICES - 1):
                        if (item := self._take_nowait()) is None:
                            break
                        await self._handle(item)
                await self._machine_slice()
                await trio.lowlevel.checkpoint()

    async def _handle(self, item: Input | None) -> None:
        """One input (None: the core's timers) and its Ready."""
        if not safe_beside_a_flush(item):
            await self._wait_background_flush()
        # the flush may have ended before trio resumed its task: count it first
        await self._report_background_flush()
        started = time.perf_counter()
        ready = self._step(item, self.now_ms())
        STEP_WORK.note("input", item, time.perf_counter() - started)
        await self._apply(ready)
        # let the writers send what this step answered before the next input or slice
        await trio.lowlevel.checkpoint()

    # -- the leader's flush beside the core --------------------------------------------------

    def _start_flush_beside(self) -> None:
        assert self._nursery is not None and self._flush is None, "one flush beside at a time"
        job = self._flush = _BackgroundFlush()
        self._nursery.start_soon(self._background_flush_task, job)

    async def _background_flush_task(self, job: _BackgroundFlush) -> None:
        try:
            await trio.to_thread.run_sync(job.run, self._log)
        finally:
            job.ended.set()
            if self._waiting_for_input is not None:
                self._waiting_for_input.cancel()

    def _background_flush_ended(self) -> bool:
        return self._flush is not None and self._flush.flushed is not None

    async def _wait_background_flush(self) -> None:
        """Let the background flush end (the core hears of it between inputs)."""
        if self._flush is not None:
            await self._flush.ended.wait()

    async def _report_background_flush(self) -> None:
        """Tell the plan what an ended background flush made durable (between inputs only)."""
        if not self._background_flush_ended():
            return
        assert self._flush is not None and self._flush.flushed is not None
        flushed, self._flush = self._flush.flushed, None
        await self._perform(self._plan.flush_beside_ended(flushed))

    def _next_wakeup_ms(self) -> int | None:
        machine_ms = None if self._machine is None else self._machine.deadline_ms()
        core_ms = self._plan.deadline_ms
        if machine_ms is None or core_ms is None:
            return core_ms if machine_ms is None else machine_ms
        return min(machine_ms, core_ms)

    def _core_due(self) -> bool:
        deadline = self._plan.deadline_ms
        return deadline is not None and self.now_ms() >= deadline

    def _machine_has_work(self) -> bool:
        return self._machine is not None and self._machine.has_work(self.now_ms())

    async def _machine_slice(self) -> None:
        """One bounded slice of the state machine's work; its records are proposed at once."""
        machine = self._machine
        now_ms = self.now_ms()
        if machine is None or not machine.has_work(now_ms):
            return
        started = time.perf_counter()
        work = machine.work(self.core, now_ms)
        if any(report.kind in _LONG_LIVED_KINDS for report in work.slices):
            # what a replay built lives as long as its image: out of the collector's
            # generations, or each full collection walks every partition (tens of ms
            # per 100,000 partitions; the images are acyclic, so refcounts free them)
            gc.freeze()
        elapsed = time.perf_counter() - started
        STEP_WORK.note(
            "/".join(report.kind for report in work.slices) or "state machine",
            " ".join(report.detail for report in work.slices if report.detail), elapsed,
        )
        if self.activity is not None:
            now_s = trio.current_time()
            for report in work.slices:
                self.activity.record_slice(report.kind, report.units, elapsed, now_s)
                if report.kind == "replay":
                    self.activity.record_applied(report.units, now_s)
            for queue_ms, processing_ms in work.finished_operations:
                self.activity.record_controller_event(queue_ms, processing_ms, now_s)
        for snapshot in work.snapshots:
            self._store_snapshot(snapshot)
        if work.payloads:
            await self._apply(propose_machine_records(self.core, machine, work.payloads, now_ms))

    def _store_snapshot(self, snapshot: SnapshotFile) -> None:
        """Write a built snapshot beside the core: a 1,000,000-partition one is 74 MB to
        write and sync, which would hold the trio thread for most of a second."""
        if not self.core.accepts_snapshot(snapshot.snapshot_id):
            return
        assert self._nursery is not None, "the driver is not running"
        self._nursery.start_soon(self._snapshot_task, snapshot)

    async def _snapshot_task(self, snapshot: SnapshotFile) -> None:
        size = sum(len(part) for part in snapshot.parts)
        stored = await trio.to_thread.run_sync(
            self._log.create_snapshot, snapshot.snapshot_id, snapshot.parts
        )
        if stored:
            sid = snapshot.snapshot_id
            logger.info(
                "wrote metadata snapshot %d-%d (%d bytes, %s)", sid.offset, sid.epoch, size,
                snapshot.why,
            )

    def _take_nowait(self) -> Input | None:
        item, self._held = self._held, None
        if item is not None:
            return item
        try:
            return self._inbox.receive_nowait()
        except trio.WouldBlock:
            return None

    def _step(self, item: Input | None, now_ms: int) -> Ready:
        core = self.core
        if item is None:
            return core.poll(now_ms)
        if isinstance(item, InboundRequest | InboundResponse):
            return core.handle(item, now_ms)
        if isinstance(item, Append):
            return self._propose(self._gather(item), now_ms)
        if isinstance(item, ConnectionFailed):
            return core.connection_failed(item.node_id, now_ms)
        if isinstance(item, ControllerCall):
            machine = self._machine
            assert machine is not None, "a controller request reached a node without a controller"
            machine.call(item, core, now_ms)
            return core.poll(now_ms)
        if isinstance(item, BrokerConnectionLost):
            if self._machine is not None:
                self._machine.broker_connection_lost(item.broker_id, now_ms)
            return core.poll(now_ms)
        assert isinstance(item, Resign), item
        logger.info("resigning (epoch %d, %s)", core.epoch, core.role)
        return core.resign(now_ms)

    def _gather(self, first: Append) -> list[Append]:
        """``first`` and the appends queued right behind it: one proposal for all."""
        group = [first]
        while len(group) < _MAX_APPENDS_PER_PROPOSAL:
            item = self._take_nowait()
            if not isinstance(item, Append):
                self._held = item
                break
            group.append(item)
        return group

    def _propose(self, group: list[Append], now_ms: int) -> Ready:
        core = self.core
        # the metadata log holds metadata records only: raw values travel wrapped
        payloads = [wrap_payload(payload) for append in group for payload in append.payloads]
        try:
            ready = core.propose(payloads, now_ms)
        except NotLeaderError as exc:
            outcome = not_leader_outcome(self.leader, str(exc))
            for append in group:
                append.reply.finish(outcome)
            return core.poll(now_ms)
        assert ready.accepted is not None, "a proposal the core took has offsets"
        start = ready.accepted.start
        for append in group:
            end = start + len(append.payloads)
            self._appends.add(core.epoch, OffsetRange(start, end), append.reply)
            start = end
        assert start == ready.accepted.end
        return ready

    async def _apply(self, ready: Ready) -> None:
        await self._perform(self._plan.apply(ready))

    async def _perform(self, effects: Effects) -> None:
        """Carry out what the plan asks for, sending back each result."""
        result: Any = None
        while True:
            try:
                effect = effects.send(result)
            except StopIteration:
                return
            result = None
            if isinstance(effect, Send):
                self._send(effect.messages)
            elif isinstance(effect, Observe):
                await self._observe(effect.ready)
            elif isinstance(effect, Flush):
                result = await self._durably(effect.on_thread, self._log.flush)
            elif isinstance(effect, Persist):
                await self._durably(effect.on_thread, self._state_file.write, effect.state)
            elif isinstance(effect, StartFlushBeside):
                self._start_flush_beside()
            else:
                assert isinstance(effect, AwaitFlushBeside), effect
                await self._wait_background_flush()

    async def _durably(self, on_thread: bool, fn: Callable[..., T], *args: Any) -> T:
        if on_thread:
            return await trio.to_thread.run_sync(fn, *args)
        return fn(*args)

    def _send(self, messages: Iterable[Outbound]) -> None:
        for out in messages:
            if isinstance(out, OutboundRequest):
                self._send_request(out)
                continue
            slot = out.reply_to
            assert isinstance(slot, ResponseSlot), f"unknown reply handle {slot!r}"
            message = out.message
            if isinstance(message, DescribeQuorumResponse) and self._voter_nodes and (
                slot.version >= _DESCRIBE_QUORUM_NODES_VERSION
            ):
                message = attrs.evolve(message, nodes=self._voter_nodes)
            slot.complete(message)

    async def _observe(self, ready: Ready) -> None:
        if ready.leader != self.leader or ready.role != self.role:
            leader = ready.leader.leader_id
            logger.info(
                "%s in epoch %d, leader %s", ready.role, ready.leader.epoch,
                "unknown" if leader is None else leader,
            )
        self.leader, self.role = ready.leader, ready.role
        if ready.high_watermark is not None:
            self.high_watermark = ready.high_watermark
        self._appends.settle(
            ready.leader, leads=ready.role == "Leader", high_watermark=ready.high_watermark
        )
        if self._machine is not None:
            # cheap: the replay of what it committed happens in the machine's slices, after
            # what this Ready sends has gone out
            started = time.perf_counter()
            self._machine.observe(ready, self.core, self.now_ms())
            STEP_WORK.note("observe", "a Ready", time.perf_counter() - started)
        self.changed.set()
        self.changed = trio.Event()


def _refuse(item: Input) -> None:
    """An input that arrives after the node stopped: an append or a call learns why."""
    if isinstance(item, Append):
        item.reply.finish(
            AppendOutcome(error=Errors.BROKER_NOT_AVAILABLE, message="the node is shutting down")
        )
    elif isinstance(item, ControllerCall):
        item.reply(
            error_response(item.request, Errors.NOT_CONTROLLER, "the node is shutting down",
                           version=item.version)
        )
