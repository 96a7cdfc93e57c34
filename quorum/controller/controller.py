"""``QuorumController``: the controller state machine, sans-I/O.

Driven by the task that owns the Raft core (``quorum.node.controller_machine``):

- ``publish`` takes each committed image the metadata log follower publishes
  (``quorum.node.metadata_follower``), on every controller. A standby's
  ``working`` image is its committed image.
- ``activate`` (this node leads and has replayed everything before its epoch)
  starts every registered broker on a full session and returns the records a
  new active controller writes first: the abort of a metadata transaction its
  predecessor left open, and the bootstrap records. ``deactivate``
  (leadership moved) drops everything uncommitted: ``working`` is the
  committed image again and the sessions are gone (Kafka's renounce).
- ``start`` turns one request into an ``Operation`` (``quorum.controller.
  operations``): a generator of bounded slices of records, framed as a
  metadata transaction when they span several slices. The caller steps it,
  appends each slice and reports it with ``appended``, which folds the records
  into ``working``; it answers once the response's records are committed and
  published. ``due_operation`` does the same for the timers (session expiry:
  one broker per operation; preferred leader rebalance; unclean elections);
  ``next_deadline_ms`` says when one is due. ``handle`` and ``tick`` run
  operations to the end at once (tests, tools).

Invariant: ``working`` = ``committed`` + this controller's records not yet
committed (``_pending`` holds their end offsets). Every record the controller
appends has already replayed onto ``working``: one that would not is a bug
here, and stops the process (AssertionError) before it reaches the log.
"""

from __future__ import annotations

import functools
import random
from collections import deque
from collections.abc import Callable, Generator, Hashable, Sequence
from typing import Any, Final

from quorum.controller.alter_partition import alter_partition_steps
from quorum.controller.bootstrap import bootstrap_records
from quorum.controller.broker_sessions import BrokerSessions
from quorum.controller.cluster_control import (
    broker_heartbeat_steps,
    fence_key,
    fence_stale_brokers_steps,
    lost_connection_grace_ms,
    next_fence_deadline_ms,
    register_broker_steps,
    same_registration,
    stale_broker,
    steady_heartbeat,
    unregister_broker_steps,
)
from quorum.controller.config_control import (
    describe_configs_steps,
    incremental_alter_configs_steps,
)
from quorum.controller.delta import MetadataReplayError, fold_records
from quorum.controller.elections import elect_leaders_steps
from quorum.controller.error_responses import error_response
from quorum.controller.image import EMPTY_IMAGE, MetadataImage, Provenance
from quorum.controller.operations import Operation, Steps, from_result
from quorum.controller.partition_index import PartitionIndex, note_every_change
from quorum.controller.partition_jobs import preferred_leader_job, unclean_leader_job
from quorum.controller.producer_ids_control import allocate_producer_ids
from quorum.controller.reassignments import (
    alter_partition_reassignments_steps,
    list_partition_reassignments_steps,
)
from quorum.controller.replication_control import (
    create_partitions_steps,
    create_topics_steps,
    delete_topics_steps,
)
from quorum.controller.results import ControllerConfig, ControllerContext, ControllerResult
from quorum.wire.error_codes import Errors
from quorum.wire.messages.allocate_producer_ids import AllocateProducerIdsRequest
from quorum.wire.messages.alter_partition import AlterPartitionRequest
from quorum.wire.messages.broker_lifecycle import (
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
)
from quorum.wire.messages.configs import DescribeConfigsRequest, IncrementalAlterConfigsRequest
from quorum.wire.messages.create_partitions import CreatePartitionsRequest
from quorum.wire.messages.elect_leaders import ElectLeadersRequest
from quorum.wire.messages.metadata_records import (
    AbortTransactionRecord,
    PartitionChangeRecord,
    PartitionRecord,
)
from quorum.wire.messages.partition_reassignments import (
    AlterPartitionReassignmentsRequest,
    ListPartitionReassignmentsRequest,
)
from quorum.wire.messages.topics import CreateTopicsRequest, DeleteTopicsRequest
from quorum.wire.messages.unregister_broker import UnregisterBrokerRequest
from quorum.wire.metadata_serde import MetadataRecord

__all__ = ["QuorumController", "note_every_change"]

_REBALANCE: Final = "PreferredLeaderRebalance"
_UNCLEAN: Final = "UncleanLeaderElection"

Command = Callable[[MetadataImage, Any, int, ControllerContext], ControllerResult[Any]]
SlicedCommand = Callable[[MetadataImage, Any, int, ControllerContext], Steps[Any]]

# commands whose work does not grow with their request: one slice
_IMAGE_COMMANDS: Final[dict[type, Command]] = {
    AllocateProducerIdsRequest: allocate_producer_ids,
}


class QuorumController:
    def __init__(self, config: ControllerConfig, *, rng: random.Random) -> None:
        self.config = config
        self._rng = rng
        self.committed: MetadataImage = EMPTY_IMAGE
        self.working: MetadataImage = EMPTY_IMAGE
        self.sessions = BrokerSessions(lost_grace_ms=lost_connection_grace_ms(config))
        # the committed image's leaderless and imbalanced partitions, kept by whoever publishes
        self.partitions = PartitionIndex()
        self._epoch: int | None = None  # the leader epoch while active
        self._pending: deque[int] = deque()  # end offsets of uncommitted records
        self._next_rebalance_ms = 0
        self._next_unclean_ms = 0
        # jobs (operations in parts) queued or running, by key, and those not yet handed out
        self._job_keys: set[Hashable] = set()
        self._spawned: deque[Operation[Any]] = deque()
        # (end offset, brokers given a leadership or a shared ISR place) of this
        # controller's records the partition index has not seen yet
        self._pending_holders: deque[tuple[int, frozenset[int]]] = deque()
        self._activated_at = 0  # the committed image's offset when this controller activated
        sessions = self.sessions
        self._commands: dict[type, SlicedCommand] = {
            **{kind: _in_one_slice(command) for kind, command in _IMAGE_COMMANDS.items()},
            CreateTopicsRequest: create_topics_steps,
            CreatePartitionsRequest: create_partitions_steps,
            DeleteTopicsRequest: delete_topics_steps,
            AlterPartitionRequest: alter_partition_steps,
            AlterPartitionReassignmentsRequest: alter_partition_reassignments_steps,
            IncrementalAlterConfigsRequest: incremental_alter_configs_steps,
            DescribeConfigsRequest: describe_configs_steps,
            ElectLeadersRequest: elect_leaders_steps,
            ListPartitionReassignmentsRequest: list_partition_reassignments_steps,
            BrokerRegistrationRequest: functools.partial(register_broker_steps, sessions=sessions),
            BrokerHeartbeatRequest: functools.partial(broker_heartbeat_steps, sessions=sessions),
            UnregisterBrokerRequest: functools.partial(unregister_broker_steps, sessions=sessions),
        }

    @property
    def is_active(self) -> bool:
        return self._epoch is not None

    @property
    def epoch(self) -> int | None:
        """The leader epoch this controller is active in (None: standby)."""
        return self._epoch

    @property
    def request_types(self) -> frozenset[type]:
        """The request classes ``start`` dispatches."""
        return frozenset(self._commands)

    # -- committed state -------------------------------------------------------------------

    def publish(self, image: MetadataImage) -> None:
        """A newer committed image (everything before its offset, transactions whole)."""
        self.committed = image
        if not self.is_active:
            self.working = image
            return
        # the working image already holds our own records: only forget that they were pending
        while self._pending and self._pending[0] <= image.provenance.offset:
            self._pending.popleft()
        if not self._pending:
            self.working = image

    def replay_committed(
        self, records: Sequence[MetadataRecord], end_offset: int, epoch: int
    ) -> None:
        """Fold committed records (everything before ``end_offset``) and publish, keeping the
        partition index at once (tests and tools; a node's follower walks changes in slices)."""
        before = self.committed
        self.publish(fold_records(before, list(records), Provenance(end_offset, epoch)))
        note_every_change(self.partitions, before, self.committed)

    def load_snapshot(self, image: MetadataImage) -> None:
        """A snapshot replaces the committed image (tests and tools: the index at once)."""
        assert not self.is_active, "the active controller never loads a snapshot"
        before = self.committed
        self.publish(image)
        note_every_change(self.partitions, before, image)

    # -- leadership ------------------------------------------------------------------------

    def activate(
        self, now_ms: int, *, next_offset: int, epoch: int, open_transaction: int | None = None
    ) -> ControllerResult[None]:
        """Become the active controller at ``next_offset`` in ``epoch``.

        ``open_transaction``: the offset of a BeginTransactionRecord whose end
        never came (the leader that wrote it lost its leadership): aborted first.
        """
        assert not self.is_active, f"activated twice (active in epoch {self._epoch})"
        self._epoch = epoch
        self.working = self.committed
        self._pending.clear()
        self._pending_holders.clear()
        # the partition index must have seen every change up to the image it starts from
        self._activated_at = self.committed.provenance.offset
        # every registered broker gets a full session with the new controller (Kafka)
        self.sessions.reset(self.committed.brokers, now_ms)
        self._next_rebalance_ms = now_ms + self.config.leader_imbalance_check_interval_ms
        self._next_unclean_ms = now_ms + self.config.unclean_leader_election_check_interval_ms
        records: list[MetadataRecord] = []
        if open_transaction is not None:
            reason = (
                f"the active controller of an earlier epoch began it at offset "
                f"{open_transaction} and lost its leadership before the end"
            )
            records.append(AbortTransactionRecord(reason=reason))
        records += bootstrap_records(self.working, self._context(now_ms, next_offset))
        self.appended(records, next_offset + len(records))
        return ControllerResult(tuple(records), None)

    def deactivate(self) -> None:
        """Renounce: forget every uncommitted record, every session and every job."""
        self._epoch = None
        self.working = self.committed
        self._pending.clear()
        self.sessions.clear()
        self._spawned.clear()
        self._job_keys.clear()
        self._pending_holders.clear()

    # -- jobs (Background) -------------------------------------------------------------------

    def spawn(self, key: Hashable, name: str, steps: Generator[Any, None, None]) -> None:
        """Queue a job; it runs after the operation that spawned it (``take_spawned``)."""
        if key in self._job_keys:
            steps.close()
            return
        self._spawned.append(self._job(key, name, steps))

    def running(self, key: Hashable) -> bool:
        return key in self._job_keys

    def take_spawned(self) -> list[Operation[Any]]:
        """The jobs spawned since the last call, for the owner to run."""
        spawned = list(self._spawned)
        self._spawned.clear()
        return spawned

    def _job(
        self,
        key: Hashable,
        name: str,
        steps: Generator[Any, None, None],
        *,
        maintenance: bool = False,
    ) -> Operation[None]:
        self._job_keys.add(key)
        return Operation(name, self._tracked(key, steps), maintenance=maintenance)

    def _tracked(self, key: Hashable, steps: Generator[Any, None, None]) -> Steps[None]:
        try:
            yield from steps
        finally:
            # done, or dropped (leadership lost): a later job of the same key may run
            self._job_keys.discard(key)

    # -- requests and timers -----------------------------------------------------------------

    def start(
        self,
        request: Any,
        version: int,
        *,
        now_ms: int,
        next_offset: int,
        next_append_offset: Callable[[], int] | None = None,
    ) -> Operation[Any]:
        """``request``'s command as an operation; its first record lands at ``next_offset``."""
        name = type(request).__name__.removesuffix("Request")
        if not self.is_active:
            text = f"node {self.config.node_id} is not the active controller"
            response = error_response(request, Errors.NOT_CONTROLLER, text, version=version)
            return Operation(name, from_result(lambda: ControllerResult.answer(response)))
        command = self._commands.get(type(request))
        if command is None:
            raise TypeError(f"{type(request).__name__} is not a controller request")
        ctx = self._context(now_ms, next_offset, next_append_offset)
        return Operation(name, command(self.working, request, version, ctx))

    def broker_connection_lost(self, broker_id: int, now_ms: int) -> None:
        """Every connection ``broker_id`` heartbeat on to this node has closed: while active,
        its session now ends one grace (two heartbeat intervals) later unless it is heard
        from again (``BrokerSessions.connection_lost``)."""
        if self.is_active:
            self.sessions.connection_lost(broker_id, now_ms)

    def heartbeat_arrived(
        self, request: BrokerHeartbeatRequest, now_ms: int
    ) -> BrokerHeartbeatResponse | None:
        """A heartbeat as it arrives: its answer now if it changes nothing
        (``steady_heartbeat``), else None and it waits for its turn; either way it keeps
        its broker's session alive, so no broker is fenced because operations are long."""
        if not self.is_active:
            return None
        ctx = self._context(now_ms, self.working.provenance.offset)
        answer = steady_heartbeat(self.committed, self.working, request, ctx, self.sessions)
        if answer is not None:
            return answer
        broker = self.working.broker(request.broker_id)
        if broker is not None and broker.epoch == request.broker_epoch:
            self.sessions.touch(broker.broker_id, now_ms, request.current_metadata_offset)
        return None

    def registration_arrived(
        self, request: BrokerRegistrationRequest, now_ms: int
    ) -> BrokerRegistrationResponse | None:
        """A registration as it arrives: the same incarnation's retry, once the committed
        image holds its registration, is answered now with that epoch (nothing written,
        nothing redone); None: it waits for its turn."""
        if not self.is_active:
            return None
        epoch = same_registration(self.committed, self.working, request)
        if epoch is None:
            return None
        broker_id = request.broker_id
        self.sessions.touch(broker_id, now_ms, self.sessions.metadata_offset(broker_id))
        return BrokerRegistrationResponse(broker_epoch=epoch)

    def heartbeat_in_hand(self, request: BrokerHeartbeatRequest, now_ms: int) -> None:
        """A broker's heartbeat is still unanswered at ``now_ms``: its session is kept alive
        as on arrival (if the broker's epoch still matches)."""
        broker = self.working.broker(request.broker_id)
        if broker is not None and broker.epoch == request.broker_epoch:
            self.sessions.touch(broker.broker_id, now_ms, request.current_metadata_offset)

    def due_operation(
        self, now_ms: int, *, next_offset: int, next_append_offset: Callable[[], int] | None = None
    ) -> Operation[None] | None:
        """The timer work due at ``now_ms``, one operation at a time (None: nothing due)."""
        assert self.is_active, "timers run only on the active controller"
        config = self.config
        ctx = self._context(now_ms, next_offset, next_append_offset)
        image, sessions = self.working, self.sessions
        fencing = any(isinstance(key, tuple) and key[0] == "fence" for key in self._job_keys)
        stale = None if fencing else stale_broker(image, ctx, sessions)
        if stale is not None:
            return self._job(
                fence_key(stale), "FenceBroker", fence_stale_brokers_steps(image, ctx, sessions)
            )
        index = self.partitions
        if config.auto_leader_rebalance_enable and now_ms >= self._next_rebalance_ms:
            self._next_rebalance_ms = now_ms + config.leader_imbalance_check_interval_ms
            if index.imbalanced and not self.running(_REBALANCE):
                return self._job(
                    _REBALANCE, _REBALANCE, preferred_leader_job(ctx, index.imbalanced),
                    maintenance=True,
                )
        if now_ms >= self._next_unclean_ms:
            self._next_unclean_ms = now_ms + config.unclean_leader_election_check_interval_ms
            if index.leaderless and not self.running(_UNCLEAN):
                return self._job(
                    _UNCLEAN, _UNCLEAN, unclean_leader_job(ctx, index.leaderless),
                    maintenance=True,
                )
        return None

    def appended(self, records: Sequence[MetadataRecord], end_offset: int) -> None:
        """An operation's records were appended, ending before ``end_offset``: fold them."""
        if not records:
            return
        assert self._epoch is not None, "only the active controller appends"
        start = end_offset - len(records)
        assert start >= self.working.provenance.offset, (
            f"records for offset {start} behind the working image "
            f"({self.working.provenance.offset})"
        )
        try:
            self.working = fold_records(
                self.working, list(records), Provenance(end_offset, self._epoch)
            )
        except MetadataReplayError as exc:
            raise AssertionError(f"the controller wrote records that do not replay: {exc}") from exc
        self._pending.append(end_offset)
        holders = partition_holders(records)
        if holders:
            self._pending_holders.append((end_offset, holders))

    def may_hold(self, broker_id: int) -> bool | None:
        """Whether ``broker_id`` may lead a partition or share an ISR in the working image:
        the committed image's index, plus what this controller's records gave it since.
        None while the index has not caught up with what was written before this
        controller's epoch (it knows nothing of that)."""
        index = self.partitions
        seen = index.image.provenance.offset
        if seen < self._activated_at:
            return None
        pending = self._pending_holders
        while pending and pending[0][0] <= seen:
            pending.popleft()
        return index.holds_partitions(broker_id) or any(broker_id in b for _, b in pending)

    def handle(
        self, request: Any, version: int, *, now_ms: int, next_offset: int
    ) -> ControllerResult[Any]:
        """``start`` run to the end at once: every record (markers included) and the response."""
        return self._run(lambda append: self.start(
            request, version, now_ms=now_ms, next_offset=next_offset, next_append_offset=append
        ), next_offset)

    def tick(self, now_ms: int, *, next_offset: int) -> ControllerResult[None]:
        """Every timer operation due at ``now_ms`` run to the end (often nothing)."""
        assert self.is_active, "timers run only on the active controller"
        records: list[MetadataRecord] = []
        for _ in range(3):  # each timer at most once
            offset = next_offset + len(records)

            def due(append: Callable[[], int], offset: int = offset) -> Operation[None] | None:
                return self.due_operation(now_ms, next_offset=offset, next_append_offset=append)

            records += self._run(due, offset).records
        return ControllerResult(tuple(records), None)

    def _run(
        self, start: Callable[[Callable[[], int]], Operation[Any] | None], next_offset: int
    ) -> ControllerResult[Any]:
        records: list[MetadataRecord] = []

        def append_offset() -> int:
            return next_offset + len(records)

        operation = start(append_offset)
        if operation is None:
            return ControllerResult((), None)
        # the operation to the end, then every job it spawned (and theirs), in order
        queue = deque([operation])
        while queue:
            current = queue.popleft()
            while not current.done:
                written = current.step()
                records += written
                if self.is_active:
                    self.appended(written, append_offset())
            if self.is_active:
                queue.extend(self.take_spawned())
        return ControllerResult(tuple(records), operation.response)

    def next_deadline_ms(self) -> int | None:
        """When ``due_operation`` has work next (None: standby)."""
        if not self.is_active:
            return None
        config = self.config
        deadlines = [self._next_unclean_ms]
        if config.auto_leader_rebalance_enable:
            deadlines.append(self._next_rebalance_ms)
        fence = next_fence_deadline_ms(
            self.working, self.sessions, config.broker_session_timeout_ms
        )
        if fence is not None:
            deadlines.append(fence)
        return min(deadlines)

    # -- internals ---------------------------------------------------------------------------

    def _context(
        self, now_ms: int, next_offset: int, next_append_offset: Callable[[], int] | None = None
    ) -> ControllerContext:
        return ControllerContext(
            config=self.config, now_ms=now_ms, next_offset=next_offset, rng=self._rng,
            next_append_offset=next_append_offset, working_image=self._working_image,
            partitions=self.partitions, background=self, may_hold=self.may_hold,
        )

    def _working_image(self) -> MetadataImage:
        return self.working


def _in_one_slice(command: Command) -> SlicedCommand:
    """A command small by nature (O(1) whatever its request) as one slice."""

    def steps(image: MetadataImage, request: Any, version: int, ctx: ControllerContext) -> Steps[Any]:
        return from_result(lambda: command(image, request, version, ctx))

    return steps


def partition_holders(records: Sequence[MetadataRecord]) -> frozenset[int]:
    """The brokers these records make a leader or put in an ISR beside another replica."""
    holders: set[int] = set()
    for record in records:
        if isinstance(record, PartitionRecord | PartitionChangeRecord):
            if record.leader >= 0:
                holders.add(record.leader)
            isr = record.isr
            if isr is not None and len(isr) > 1:
                holders.update(isr)
    return frozenset(holders)
