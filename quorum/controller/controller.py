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
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final

from quorum.controller.alter_partition import alter_partition_steps
from quorum.controller.bootstrap import bootstrap_records
from quorum.controller.broker_sessions import BrokerSessions
from quorum.controller.cluster_control import (
    broker_heartbeat_steps,
    fence_stale_brokers_steps,
    next_fence_deadline_ms,
    register_broker_steps,
    steady_heartbeat,
    unregister_broker_steps,
)
from quorum.controller.config_control import (
    describe_configs_steps,
    incremental_alter_configs_steps,
)
from quorum.controller.delta import MetadataReplayError, fold_records
from quorum.controller.elections import (
    elect_leaders_steps,
    preferred_leader_examiner,
    unclean_leader_examiner,
)
from quorum.controller.error_responses import error_response
from quorum.controller.image import EMPTY_IMAGE, MetadataImage, Provenance
from quorum.controller.operations import (
    Operation,
    Steps,
    emit_in_slices,
    from_result,
    scan_in_slices,
)
from quorum.controller.partition_change import PartitionEntry, PartitionExaminer
from quorum.controller.partition_index import PartitionIndex, PartitionKey
from quorum.controller.partition_map import EMPTY_PARTITIONS, PartitionMap
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
)
from quorum.wire.messages.configs import DescribeConfigsRequest, IncrementalAlterConfigsRequest
from quorum.wire.messages.create_partitions import CreatePartitionsRequest
from quorum.wire.messages.elect_leaders import ElectLeadersRequest
from quorum.wire.messages.metadata_records import AbortTransactionRecord
from quorum.wire.messages.partition_reassignments import (
    AlterPartitionReassignmentsRequest,
    ListPartitionReassignmentsRequest,
)
from quorum.wire.messages.topics import CreateTopicsRequest, DeleteTopicsRequest
from quorum.wire.messages.unregister_broker import UnregisterBrokerRequest
from quorum.wire.metadata_serde import MetadataRecord

__all__ = ["QuorumController", "note_every_change"]

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
        self.sessions = BrokerSessions()
        # the committed image's leaderless and imbalanced partitions, kept by whoever publishes
        self.partitions = PartitionIndex()
        self._epoch: int | None = None  # the leader epoch while active
        self._pending: deque[int] = deque()  # end offsets of uncommitted records
        self._next_rebalance_ms = 0
        self._next_unclean_ms = 0
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
        """Renounce: forget every uncommitted record and every session."""
        self._epoch = None
        self.working = self.committed
        self._pending.clear()
        self.sessions.clear()

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
            response = error_response(request, Errors.NOT_CONTROLLER, text)
            return Operation(name, from_result(lambda: ControllerResult.answer(response)))
        command = self._commands.get(type(request))
        if command is None:
            raise TypeError(f"{type(request).__name__} is not a controller request")
        ctx = self._context(now_ms, next_offset, next_append_offset)
        return Operation(name, command(self.working, request, version, ctx))

    def heartbeat_arrived(
        self, request: BrokerHeartbeatRequest, now_ms: int
    ) -> BrokerHeartbeatResponse | None:
        """A heartbeat as it arrives: its answer now if it changes nothing
        (``steady_heartbeat``), else None and it waits for its turn; either way it keeps
        its broker's session alive, so no broker is fenced because operations are long."""
        if not self.is_active:
            return None
        answer = steady_heartbeat(self.committed, self.working, request, now_ms, self.sessions)
        if answer is not None:
            return answer
        broker = self.working.broker(request.broker_id)
        if broker is not None and broker.epoch == request.broker_epoch:
            self.sessions.touch(broker.broker_id, now_ms, request.current_metadata_offset)
        return None

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
        stale = [b for b in sessions.expired(now_ms, config.broker_session_timeout_ms)
                 if (broker := image.broker(b)) is not None and not broker.fenced]
        if stale:
            return Operation("FenceBroker", fence_stale_brokers_steps(image, ctx, sessions))
        index = self.partitions
        if config.auto_leader_rebalance_enable and now_ms >= self._next_rebalance_ms:
            self._next_rebalance_ms = now_ms + config.leader_imbalance_check_interval_ms
            if index.imbalanced:
                return Operation("PreferredLeaderRebalance", _candidate_steps(
                    image, index.imbalanced, preferred_leader_examiner(image)
                ))
        if now_ms >= self._next_unclean_ms:
            self._next_unclean_ms = now_ms + config.unclean_leader_election_check_interval_ms
            if index.leaderless:
                examine = unclean_leader_examiner(
                    image, unclean_default=config.unclean_leader_election_enable
                )
                return Operation(
                    "UncleanLeaderElection", _candidate_steps(image, index.leaderless, examine)
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
        while not operation.done:
            written = operation.step()
            records += written
            if self.is_active:
                self.appended(written, append_offset())
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
            next_append_offset=next_append_offset,
        )


def _in_one_slice(command: Command) -> SlicedCommand:
    """A command small by nature (O(1) whatever its request) as one slice."""

    def steps(image: MetadataImage, request: Any, version: int, ctx: ControllerContext) -> Steps[Any]:
        return from_result(lambda: command(image, request, version, ctx))

    return steps


def _candidate_steps(
    image: MetadataImage, candidates: set[PartitionKey], examine: PartitionExaminer
) -> Steps[None]:
    """Examine the candidate partitions (an index of the committed image) in slices, against
    ``image``, then write what was found."""
    def entries() -> Iterator[PartitionEntry]:
        for topic_id, index in sorted(candidates):
            topic = image.topics_by_id.get(topic_id)
            partition = None if topic is None else topic.partitions.get(index)
            if topic is not None and partition is not None:
                yield topic, index, partition

    found = yield from scan_in_slices(entries(), examine)
    yield from emit_in_slices(found)
    return None


def note_every_change(index: PartitionIndex, old: MetadataImage, new: MetadataImage) -> None:
    """Tell ``index`` of every partition ``new`` changed since ``old``, at once."""
    for topic_id in old.topics_by_id.keys() | new.topics_by_id.keys():
        before, after = old.topics_by_id.get(topic_id), new.topics_by_id.get(topic_id)
        if before is after:
            continue
        old_parts = EMPTY_PARTITIONS if before is None else before.partitions
        new_parts = EMPTY_PARTITIONS if after is None else after.partitions
        for number, _, partition in PartitionMap.of(new_parts).changed_against(old_parts):
            index.note(topic_id, number, partition)
