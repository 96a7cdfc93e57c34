"""``QuorumController``: the controller state machine, sans-I/O.

Driven by the task that owns the Raft core (``quorum.node.controller_machine``):

- ``replay_committed`` folds committed records into ``committed``, on every
  controller. A standby's ``working`` image is its committed image.
- ``activate`` (this node leads and has replayed everything before its epoch)
  starts every registered broker on a full session and returns the bootstrap
  records; ``deactivate`` (leadership moved) drops everything uncommitted:
  ``working`` is the committed image again and the sessions are gone (Kafka's
  renounce).
- ``handle`` runs one request's command against ``working`` at the offset its
  records will get, folds those records into ``working`` and returns them with
  the response; the caller appends them and answers once they are committed.
  A standby answers NOT_CONTROLLER.
- ``tick`` runs the timers (session expiry: one broker per tick; preferred
  leader rebalance; unclean elections); ``next_deadline_ms`` says when.

Invariant: ``working`` = ``committed`` + this controller's records not yet
committed (``_pending`` holds their end offsets). Every record the controller
returns has already replayed onto ``working``: one that would not is a bug
here, and stops the process (AssertionError) before it reaches the log.
"""

from __future__ import annotations

import functools
import random
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Final

from quorum.controller.alter_partition import alter_partition
from quorum.controller.bootstrap import bootstrap_records
from quorum.controller.broker_sessions import BrokerSessions
from quorum.controller.cluster_control import (
    broker_heartbeat,
    fence_stale_brokers,
    next_fence_deadline_ms,
    register_broker,
    unregister_broker,
)
from quorum.controller.config_control import describe_configs, incremental_alter_configs
from quorum.controller.delta import MetadataReplayError, fold_records
from quorum.controller.elections import (
    elect_leaders,
    preferred_leader_changes,
    unclean_leader_changes,
)
from quorum.controller.error_responses import error_response
from quorum.controller.image import EMPTY_IMAGE, MetadataImage, Provenance
from quorum.controller.producer_ids_control import allocate_producer_ids
from quorum.controller.reassignments import (
    alter_partition_reassignments,
    list_partition_reassignments,
)
from quorum.controller.replication_control import (
    create_partitions,
    create_topics,
    delete_topics,
)
from quorum.controller.results import ControllerConfig, ControllerContext, ControllerResult
from quorum.wire.error_codes import Errors
from quorum.wire.messages.allocate_producer_ids import AllocateProducerIdsRequest
from quorum.wire.messages.alter_partition import AlterPartitionRequest
from quorum.wire.messages.broker_lifecycle import (
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
)
from quorum.wire.messages.configs import DescribeConfigsRequest, IncrementalAlterConfigsRequest
from quorum.wire.messages.create_partitions import CreatePartitionsRequest
from quorum.wire.messages.elect_leaders import ElectLeadersRequest
from quorum.wire.messages.partition_reassignments import (
    AlterPartitionReassignmentsRequest,
    ListPartitionReassignmentsRequest,
)
from quorum.wire.messages.topics import CreateTopicsRequest, DeleteTopicsRequest
from quorum.wire.messages.unregister_broker import UnregisterBrokerRequest
from quorum.wire.metadata_serde import MetadataRecord

__all__ = ["QuorumController"]

Command = Callable[[MetadataImage, Any, int, ControllerContext], ControllerResult[Any]]

# commands that read only the image (the broker lifecycle ones also use sessions)
_IMAGE_COMMANDS: Final[dict[type, Command]] = {
    CreateTopicsRequest: create_topics,
    DeleteTopicsRequest: delete_topics,
    CreatePartitionsRequest: create_partitions,
    AlterPartitionRequest: alter_partition,
    ElectLeadersRequest: elect_leaders,
    AlterPartitionReassignmentsRequest: alter_partition_reassignments,
    ListPartitionReassignmentsRequest: list_partition_reassignments,
    IncrementalAlterConfigsRequest: incremental_alter_configs,
    DescribeConfigsRequest: describe_configs,
    AllocateProducerIdsRequest: allocate_producer_ids,
}


class QuorumController:
    def __init__(self, config: ControllerConfig, *, rng: random.Random) -> None:
        self.config = config
        self._rng = rng
        self.committed: MetadataImage = EMPTY_IMAGE
        self.working: MetadataImage = EMPTY_IMAGE
        self.sessions = BrokerSessions()
        self._epoch: int | None = None  # the leader epoch while active
        self._pending: deque[int] = deque()  # end offsets of uncommitted results
        self._next_rebalance_ms = 0
        self._next_unclean_ms = 0
        sessions = self.sessions
        self._commands: dict[type, Command] = {
            **_IMAGE_COMMANDS,
            BrokerRegistrationRequest: functools.partial(register_broker, sessions=sessions),
            BrokerHeartbeatRequest: functools.partial(broker_heartbeat, sessions=sessions),
            UnregisterBrokerRequest: functools.partial(unregister_broker, sessions=sessions),
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
        """The request classes ``handle`` dispatches."""
        return frozenset(self._commands)

    # -- committed state -------------------------------------------------------------------

    def replay_committed(
        self, records: Sequence[MetadataRecord], end_offset: int, epoch: int
    ) -> None:
        """Fold committed records (everything before ``end_offset``) into ``committed``."""
        self.committed = fold_records(self.committed, list(records), Provenance(end_offset, epoch))
        if not self.is_active:
            self.working = self.committed
            return
        # the working image already holds our own records: only forget that they were pending
        while self._pending and self._pending[0] <= end_offset:
            self._pending.popleft()
        if not self._pending:
            self.working = self.committed

    def load_snapshot(self, image: MetadataImage) -> None:
        assert not self.is_active, "the active controller never loads a snapshot"
        self.committed = self.working = image

    # -- leadership ------------------------------------------------------------------------

    def activate(self, now_ms: int, *, next_offset: int, epoch: int) -> ControllerResult[None]:
        """Become the active controller at ``next_offset`` in ``epoch``."""
        assert not self.is_active, f"activated twice (active in epoch {self._epoch})"
        self._epoch = epoch
        self.working = self.committed
        self._pending.clear()
        # every registered broker gets a full session with the new controller (Kafka)
        self.sessions.reset(self.committed.brokers, now_ms)
        self._next_rebalance_ms = now_ms + self.config.leader_imbalance_check_interval_ms
        self._next_unclean_ms = now_ms + self.config.unclean_leader_election_check_interval_ms
        records = bootstrap_records(self.working, self._context(now_ms, next_offset))
        self._apply(records, next_offset)
        return ControllerResult(tuple(records), None)

    def deactivate(self) -> None:
        """Renounce: forget every uncommitted record and every session."""
        self._epoch = None
        self.working = self.committed
        self._pending.clear()
        self.sessions.clear()

    # -- requests and timers -----------------------------------------------------------------

    def handle(
        self, request: Any, version: int, *, now_ms: int, next_offset: int
    ) -> ControllerResult[Any]:
        """Run ``request``'s command; its records will be appended at ``next_offset``."""
        if not self.is_active:
            text = f"node {self.config.node_id} is not the active controller"
            return ControllerResult.answer(error_response(request, Errors.NOT_CONTROLLER, text))
        command = self._commands.get(type(request))
        if command is None:
            raise TypeError(f"{type(request).__name__} is not a controller request")
        result = command(self.working, request, version, self._context(now_ms, next_offset))
        self._apply(result.records, next_offset)
        return result

    def tick(self, now_ms: int, *, next_offset: int) -> ControllerResult[None]:
        """Whatever the timers ask for at ``now_ms`` (often nothing)."""
        assert self.is_active, "timers run only on the active controller"
        records: list[MetadataRecord] = []
        for step in (self._fence_step, self._rebalance_step, self._unclean_step):
            offset = next_offset + len(records)
            produced = step(self._context(now_ms, offset))
            self._apply(produced, offset)
            records.extend(produced)
        return ControllerResult(tuple(records), None)

    def next_deadline_ms(self) -> int | None:
        """When ``tick`` has work next (None: standby)."""
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

    def _context(self, now_ms: int, next_offset: int) -> ControllerContext:
        return ControllerContext(
            config=self.config, now_ms=now_ms, next_offset=next_offset, rng=self._rng
        )

    def _apply(self, records: Sequence[MetadataRecord], next_offset: int) -> None:
        if not records:
            return
        assert self._epoch is not None
        assert next_offset >= self.working.provenance.offset, (
            f"records for offset {next_offset} behind the working image "
            f"({self.working.provenance.offset})"
        )
        end = next_offset + len(records)
        try:
            self.working = fold_records(self.working, list(records), Provenance(end, self._epoch))
        except MetadataReplayError as exc:
            raise AssertionError(f"the controller wrote records that do not replay: {exc}") from exc
        self._pending.append(end)

    def _fence_step(self, ctx: ControllerContext) -> list[MetadataRecord]:
        return list(fence_stale_brokers(self.working, ctx, self.sessions).records)

    def _rebalance_step(self, ctx: ControllerContext) -> list[MetadataRecord]:
        config = self.config
        if not config.auto_leader_rebalance_enable or ctx.now_ms < self._next_rebalance_ms:
            return []
        self._next_rebalance_ms = ctx.now_ms + config.leader_imbalance_check_interval_ms
        return list(preferred_leader_changes(self.working))

    def _unclean_step(self, ctx: ControllerContext) -> list[MetadataRecord]:
        config = self.config
        if ctx.now_ms < self._next_unclean_ms:
            return []
        self._next_unclean_ms = ctx.now_ms + config.unclean_leader_election_check_interval_ms
        return list(
            unclean_leader_changes(
                self.working, unclean_default=config.unclean_leader_election_enable
            )
        )
