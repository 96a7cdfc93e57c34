"""``ControllerMachine``: the controller state machine in the task that owns the core.

It keeps ``QuorumController``'s committed image in step with the log through
the shared ``MetadataLogFollower`` (replay in bounded slices, snapshots
loaded and written, images published whole at batch and transaction
boundaries), makes the controller active once this node leads and has
replayed everything before its epoch (Kafka's rule: claim only after
catching up to the epoch start), and renounces when leadership moves.

Requests and timers become operations (``quorum.controller.operations``)
that run one at a time, one bounded slice per ``work`` call, so the node
serves fetches and timers between two slices of a 100,000-partition
CreateTopics. Each slice is evaluated against the working image at the exact
offsets its records will get. An answer waits until the committed image the
follower published holds everything the request wrote or saw (the last
stable offset: a transaction counts once it ended), so no client ever learns
of uncommitted metadata. Heartbeats that wait behind a long operation still
refresh their broker's session on arrival (no fencing by load).

Which operation runs next (``Lane``): whenever the running one ends, or
reaches a boundary between two of its parts (``partition_jobs``; never
inside a transaction), a broker's registration or heartbeat goes first
(small and urgent: a broker waits for it, and its session for the
heartbeat), then requests (an admin's, a broker's AlterPartition) and jobs
(a fencing, a departure's removals, the elections after an unfence) take
turns, so neither starves the other; maintenance (the preferred-leader
rebalance, the unclean-election scan) only when nothing else waits, as
Kafka's periodic tasks run when its event queue is idle. A heartbeat or a registration retry that writes nothing
is answered at once, without a turn; a broker's later heartbeat takes the
place of its queued one, and a retried registration of the same incarnation
joins the one queued or running (the work is not redone).
"""

from __future__ import annotations

import enum
import logging
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from quorum.controller.controller import QuorumController
from quorum.controller.error_responses import error_response
from quorum.controller.operations import Operation
from quorum.controller.slicing import SliceReport
from quorum.node.inputs import ControllerCall
from quorum.node.metadata_follower import ChangedPartition, MetadataLogFollower, Publication
from quorum.node.offline_report import OfflineReport
from quorum.node.snapshot_policy import MIN_RECORDS_BETWEEN_SNAPSHOTS
from quorum.node.state_machine import Work
from quorum.raft import Leader, OffsetRange, RaftCore, Ready
from quorum.wire.error_codes import Errors
from quorum.wire.messages.broker_lifecycle import (
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
)
from quorum.wire.metadata_serde import MetadataRecord, encode_metadata_record

__all__ = ["ControllerMachine"]

logger = logging.getLogger(__name__)


@attrs.frozen
class _Answer:
    wait_until: int  # the published offset that makes the answer true
    request: Any
    response: Any
    reply: Callable[[object], None]
    version: int  # the request's, for an error answer in its shape


@attrs.define
class _Queued:
    """A request waiting for its turn; a broker's later heartbeat takes the place of
    its earlier one (``superseded`` get the same answer)."""

    call: ControllerCall
    queued_ms: int
    superseded: list[Callable[[object], None]] = attrs.Factory(list)

    def reply(self, response: object) -> None:
        self.call.reply(response)
        for reply in self.superseded:
            reply(response)


@attrs.define
class _Running:
    """The operation in progress and the request it answers (None for a job)."""

    operation: Operation[Any]
    queued: _Queued | None
    started_ms: int


class Lane(enum.Enum):
    """Where an operation waits for its turn (the module docstring says the order)."""

    LIFECYCLE = "lifecycle"
    REQUESTS = "requests"
    JOBS = "jobs"
    MAINTENANCE = "maintenance"


class ControllerMachine:
    def __init__(
        self,
        controller: QuorumController,
        *,
        snapshot_max_bytes: int = 20 * 1024 * 1024,
        snapshot_max_interval_ms: int = 3_600_000,
        snapshot_min_records: int | None = MIN_RECORDS_BETWEEN_SNAPSHOTS,
    ) -> None:
        self.controller = controller
        self.follower = MetadataLogFollower(
            snapshot_max_bytes=snapshot_max_bytes,
            snapshot_max_interval_ms=snapshot_max_interval_ms,
            snapshot_min_records=snapshot_min_records,
            on_publish=self._published,
            on_changes=self._partitions_changed,
        )
        self._answers: deque[_Answer] = deque()
        self._lifecycle: deque[_Queued] = deque()
        self._requests: deque[_Queued] = deque()
        self._jobs: deque[_Running] = deque()  # jobs not started, and jobs between parts
        self._maintenance: deque[_Running] = deque()  # the same, of maintenance
        self._jobs_turn = False  # whether a job goes before a request at the next turn
        # broker id -> its heartbeat waiting in ``_lifecycle`` (one at most: brokers resend
        # heartbeats that wait long, and a pile of them must not outgrow the fetches)
        self._heartbeats: dict[int, _Queued] = {}
        # broker id -> its registration queued or running (a retry joins it)
        self._registrations: dict[int, _Queued] = {}
        self._running: _Running | None = None
        self._follower_turn = False  # whose slice the last ``work`` call ran
        self._epoch = -1  # the epoch this node leads in while active
        # where the records just computed will land (checked when they are proposed)
        self._expected_offset: int | None = None
        self._claim = False  # leads; activate once replayed up to the epoch start
        self._epoch_start = 0
        self._offline = OfflineReport()
        self._now_ms = 0  # the time of the current ``observe`` or ``work`` call
        # (queue ms, processing ms) of operations finished since the last ``work``
        self._finished: list[tuple[float, float]] = []

    # -- the hook -------------------------------------------------------------------------

    def observe(self, ready: Ready, core: RaftCore, now_ms: int) -> None:
        self._now_ms = now_ms
        self.follower.observe(ready)
        self._follow_leadership(core, now_ms)

    def broker_connection_lost(self, broker_id: int, now_ms: int) -> None:
        self.controller.broker_connection_lost(broker_id, now_ms)

    def call(self, item: ControllerCall, core: RaftCore, now_ms: int) -> None:
        if not self.controller.is_active or core.next_append_offset is None:
            leader = core.leader_id
            text = f"node {core.node_id} is not the active controller" + (
                "" if leader is None else f"; node {leader} leads the quorum"
            )
            item.reply(error_response(item.request, Errors.NOT_CONTROLLER, text, version=item.version))
            return
        request = item.request
        if isinstance(request, BrokerHeartbeatRequest):
            self._heartbeat_call(item, request, now_ms)
        elif isinstance(request, BrokerRegistrationRequest):
            self._registration_call(item, request, now_ms)
        else:
            self._requests.append(_Queued(item, now_ms))

    def _heartbeat_call(
        self, item: ControllerCall, request: BrokerHeartbeatRequest, now_ms: int
    ) -> None:
        steady = self.controller.heartbeat_arrived(request, now_ms)
        self._take_spawned(now_ms)  # (a fenced broker that holds partitions starts a job)
        if steady is not None:
            item.reply(steady)  # nothing to write: no need to wait behind anything
            return
        waiting = self._heartbeats.get(request.broker_id)
        if waiting is not None:
            waiting.superseded.append(waiting.call.reply)
            waiting.call = item
            return
        queued = self._heartbeats[request.broker_id] = _Queued(item, now_ms)
        self._lifecycle.append(queued)

    def _registration_call(
        self, item: ControllerCall, request: BrokerRegistrationRequest, now_ms: int
    ) -> None:
        at_once = self.controller.registration_arrived(request, now_ms)
        if at_once is not None:
            item.reply(at_once)  # the same incarnation again: nothing to write or redo
            return
        waiting = self._registrations.get(request.broker_id)
        first = None if waiting is None else waiting.call.request
        assert first is None or isinstance(first, BrokerRegistrationRequest)
        if waiting is not None and first is not None and (
            first.incarnation_id == request.incarnation_id
        ):
            waiting.superseded.append(item.reply)  # joins the one queued or running
            return
        queued = _Queued(item, now_ms)
        self._registrations[request.broker_id] = queued
        self._lifecycle.append(queued)

    @property
    def running_operation(self) -> Operation[Any] | None:
        """The operation under way (between two of its slices), if any."""
        return None if self._running is None else self._running.operation

    def proposed(self, offsets: OffsetRange) -> None:
        assert offsets.start == self._expected_offset, (
            f"records computed for offset {self._expected_offset} landed at {offsets.start}"
        )
        self._expected_offset = None

    def has_work(self, now_ms: int) -> bool:
        if self.follower.has_work():
            return True
        if self._claim:
            return self._caught_up_to_epoch()
        if not self.controller.is_active:
            return False
        if self._running is not None or self._lifecycle or self._requests or self._jobs or (
            self._maintenance
        ):
            return True
        deadline = self.controller.next_deadline_ms()
        return deadline is not None and now_ms >= deadline

    def work(self, core: RaftCore, now_ms: int) -> Work:
        """One slice: the follower's (replay, a walk, a snapshot part) or an operation's,
        taking turns when both have work, so that no call does two slices' work."""
        self._now_ms = now_ms
        reports: list[SliceReport] = []
        payloads: list[bytes] = []
        next_offset = core.next_append_offset
        operation_due = next_offset is not None and self.controller.is_active and (
            self._running is not None or self._lifecycle or self._requests or self._jobs
            or self._maintenance or self._timer_due(now_ms)
        )
        self._follower_turn = not self._follower_turn or not operation_due
        report = self.follower.step(core, now_ms) if self._follower_turn else None
        if report is not None:
            reports.append(report)
        elif next_offset is not None:
            if self._claim and self._caught_up_to_epoch():
                payloads = self._activate(core, now_ms, next_offset)
            elif self.controller.is_active:
                payloads, report = self._operation_slice(core, now_ms, next_offset)
                if report is not None:
                    reports.append(report)
        finished, self._finished = tuple(self._finished), []
        built = self.follower.take_built_snapshot()
        return Work(payloads, tuple(reports), finished, () if built is None else (built,))

    def _timer_due(self, now_ms: int) -> bool:
        deadline = self.controller.next_deadline_ms()
        return deadline is not None and now_ms >= deadline

    def deadline_ms(self) -> int | None:
        if not self.controller.is_active:
            return None
        return self.controller.next_deadline_ms()

    def close(self) -> None:
        """The node stops: every queued, running or waiting request learns why."""
        text = "the node is shutting down"
        running, self._running = self._running, None
        if running is not None and running.queued is not None:
            queued = running.queued
            queued.reply(error_response(
                queued.call.request, Errors.NOT_CONTROLLER, text, version=queued.call.version
            ))
        self._calls_fail(text)
        self._fail_answers(text)

    # -- operations --------------------------------------------------------------------------

    def _operation_slice(
        self, core: RaftCore, now_ms: int, next_offset: int
    ) -> tuple[list[bytes], SliceReport | None]:
        running = self._running or self._start_next(core, now_ms, next_offset)
        if running is None:
            return [], None
        operation = running.operation
        records = operation.step()
        report = SliceReport("controller-op", operation.last_units, operation.name)
        payloads = self._stage(records, next_offset)
        self._take_spawned(now_ms)
        if operation.done:
            self._running = None
            self._finish(running, core, now_ms, next_offset + len(payloads))
        elif operation.at_boundary:
            # between two parts: whatever waits may go first (never inside a transaction)
            self._running = None
            self._queue_job(running)
        return payloads, report

    def _start_next(self, core: RaftCore, now_ms: int, next_offset: int) -> _Running | None:
        controller = self.controller

        def append_offset() -> int:
            offset = core.next_append_offset
            assert offset is not None, "an operation ran on a node that no longer leads"
            return offset

        due = controller.due_operation(
            now_ms, next_offset=next_offset, next_append_offset=append_offset
        )
        if due is not None:
            self._queue_job(_Running(due, None, now_ms))
        lane = self._next_lane()
        if lane is None:
            return None
        if lane in (Lane.JOBS, Lane.MAINTENANCE):
            self._running = (self._jobs if lane is Lane.JOBS else self._maintenance).popleft()
            return self._running
        queued = (self._lifecycle if lane is Lane.LIFECYCLE else self._requests).popleft()
        item = queued.call
        if isinstance(item.request, BrokerHeartbeatRequest):
            del self._heartbeats[item.request.broker_id]
        operation = controller.start(
            item.request, item.version, now_ms=now_ms, next_offset=next_offset,
            next_append_offset=append_offset,
        )
        self._running = _Running(operation, queued, now_ms)
        return self._running

    def _next_lane(self) -> Lane | None:
        """Lifecycle first; then requests and jobs take turns (the module docstring)."""
        if self._lifecycle:
            return Lane.LIFECYCLE
        if self._jobs and (self._jobs_turn or not self._requests):
            self._jobs_turn = False
            return Lane.JOBS
        if self._requests:
            self._jobs_turn = True
            return Lane.REQUESTS
        return Lane.MAINTENANCE if self._maintenance else None

    def _queue_job(self, running: _Running) -> None:
        (self._maintenance if running.operation.maintenance else self._jobs).append(running)

    def _take_spawned(self, now_ms: int) -> None:
        for job in self.controller.take_spawned():
            self._queue_job(_Running(job, None, now_ms))

    def _stage(self, records: Sequence[MetadataRecord], next_offset: int) -> list[bytes]:
        """Fold records into the working image at the offsets they will get; their bytes."""
        if not records:
            return []
        self.controller.appended(records, next_offset + len(records))
        self._expected_offset = next_offset
        return [encode_metadata_record(r) for r in records]

    def _finish(self, running: _Running, core: RaftCore, now_ms: int, end_offset: int) -> None:
        queued = running.queued
        queued_ms = running.started_ms if queued is None else queued.queued_ms
        self._finished.append(
            (float(running.started_ms - queued_ms), float(now_ms - running.started_ms))
        )
        if queued is None:
            return
        request = queued.call.request
        if isinstance(request, BrokerRegistrationRequest):
            self._registrations.pop(request.broker_id, None)
        if isinstance(request, BrokerHeartbeatRequest):
            # its broker waited for this answer all along: alive until now, however long
            # the operation ran (else the next timer could fence it at once)
            self.controller.heartbeat_in_hand(request, now_ms)
        # an answer without records still waits for everything proposed before it
        self._answers.append(
            _Answer(end_offset, queued.call.request, running.operation.response, queued.reply,
                    queued.call.version)
        )
        self._answer()

    # -- committed state ---------------------------------------------------------------------

    def _published(self, publication: Publication) -> None:
        self.controller.publish(publication.new)
        self._answer()

    def _partitions_changed(
        self, publication: Publication, changes: Sequence[ChangedPartition], last: bool
    ) -> None:
        """Keep the controller's partition index; log when the leaderless set changed."""
        index = self.controller.partitions
        for change in changes:
            index.note(change.topic_id, change.index, change.old, change.new)
        if last:
            index.noted_through(publication.new)
        if last:
            self._offline.changed(
                index.leaderless, index.leaderless_changes, publication.new, self._now_ms
            )

    # -- leadership ----------------------------------------------------------------------------

    def _follow_leadership(self, core: RaftCore, now_ms: int) -> None:
        controller = self.controller
        state = core.state
        leads = isinstance(state, Leader)
        if not leads:
            self._claim = False
        if controller.is_active and (not leads or core.epoch != self._epoch):
            controller.deactivate()
            # an open transaction stays open in the log: the next active controller aborts it
            running, self._running = self._running, None
            if running is not None and running.queued is not None:
                queued = running.queued
                queued.reply(error_response(
                    queued.call.request, Errors.NOT_CONTROLLER,
                    "leadership moved during the request", version=queued.call.version,
                ))
            self._expected_offset = None
            self._calls_fail("leadership moved before the request was handled")
            self._fail_answers("leadership moved before the request's records were committed")
            logger.info("controller renounced (epoch %d)", self._epoch)
        if leads and not controller.is_active and not self._claim:
            assert isinstance(state, Leader)
            self._claim = True
            self._epoch_start = state.epoch_start_offset

    def _caught_up_to_epoch(self) -> bool:
        """Everything before this epoch is replayed (Kafka's claim rule), and every image
        published so far walked into the partition index (a controller that claimed
        before would not know which brokers still hold partitions, and would scan).

        Replayed, not published: a transaction left open before the epoch is
        aborted by the activation, which needs to know of it.
        """
        return self.follower.replayed_offset > self._epoch_start and not self.follower.walking

    def _activate(self, core: RaftCore, now_ms: int, next_offset: int) -> list[bytes]:
        self._claim = False
        self._epoch = core.epoch
        result = self.controller.activate(
            now_ms, next_offset=next_offset, epoch=core.epoch,
            open_transaction=self.follower.transaction_start,
        )
        logger.info("controller active in epoch %d at offset %d", core.epoch, next_offset)
        if not result.records:
            return []
        self._expected_offset = next_offset
        return [encode_metadata_record(r) for r in result.records]

    # -- answers ---------------------------------------------------------------------------

    def _answer(self) -> None:
        published = self.follower.image.provenance.offset
        answers = self._answers
        while answers and answers[0].wait_until <= published:
            done = answers.popleft()
            done.reply(done.response)

    def _fail_answers(self, text: str) -> None:
        while self._answers:
            done = self._answers.popleft()
            done.reply(error_response(done.request, Errors.NOT_CONTROLLER, text, version=done.version))

    def _calls_fail(self, text: str) -> None:
        self._heartbeats.clear()
        self._registrations.clear()
        self._jobs.clear()  # the controller dropped their generators (renounce)
        self._maintenance.clear()
        for lane in (self._lifecycle, self._requests):
            while lane:
                queued = lane.popleft()
                queued.reply(error_response(
                    queued.call.request, Errors.NOT_CONTROLLER, text, version=queued.call.version
                ))
