"""The active controller reduced to its commands, each committed at once.

It runs the production commands on a ``MetadataImage``: BrokerRegistration
(``register_broker``: a new incarnation is refused while the old one is
unfenced with a live session, and leaves every ISR when it registers),
BrokerHeartbeat (``broker_heartbeat``: unfences a caught-up broker and elects
it where partitions have no leader), session expiry (``fence_stale_brokers``:
out of every ISR, leaders elected from the ISR by ``build_partition_change``),
CreateTopics and AlterPartition. What it leaves out is Raft: a command's
records are folded into the image as soon as it runs (no uncommitted tail,
no failover of the controller itself), and brokers learn images through
``MetadataFeed`` with a delay.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, TypeVar

from quorum.controller.alter_partition import alter_partition
from quorum.controller.broker_sessions import BrokerSessions
from quorum.controller.cluster_control import (
    broker_heartbeat,
    fence_stale_brokers,
    next_fence_deadline_ms,
    register_broker,
)
from quorum.controller.delta import fold_records
from quorum.controller.image import EMPTY_IMAGE, MetadataImage, Provenance
from quorum.controller.replication_control import create_topics
from quorum.controller.results import ControllerConfig, ControllerContext, ControllerResult
from quorum.wire.messages import (
    AlterPartitionRequest,
    AlterPartitionResponse,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
)
from quorum.wire.messages.metadata_records import BrokerRegistrationChangeRecord
from quorum.wire.metadata_serde import MetadataRecord

__all__ = ["CONTROLLER_ID", "ControllerStandIn"]


def _is_fence(record: MetadataRecord) -> bool:
    return isinstance(record, BrokerRegistrationChangeRecord) and record.fenced == 1


CONTROLLER_ID = 0
R = TypeVar("R")


class ControllerStandIn:
    def __init__(
        self, config: ControllerConfig, rng: random.Random, *, fence_apart: bool = False
    ) -> None:
        self.config = config
        self.rng = rng
        self.image = EMPTY_IMAGE
        self.offset = 0
        self.sessions = BrokerSessions()
        self.on_change: list[Callable[[MetadataImage], None]] = []
        # ``fence_apart``: an expired broker's fence record is committed at the next tick
        # after its partition changes, as the production controller writes it after the last
        # part of its departure job: images between show it out of every ISR, unfenced
        self.fence_apart = fence_apart
        self._fence_pending: tuple[MetadataRecord, ...] = ()

    def _context(self, now_ms: int) -> ControllerContext:
        return ControllerContext(
            config=self.config, now_ms=now_ms, next_offset=self.offset, rng=self.rng
        )

    def _commit(self, result: ControllerResult[R]) -> R:
        if result.records:
            self.offset += len(result.records)
            self.image = fold_records(
                self.image, list(result.records), Provenance(self.offset, 1)
            )
            for listener in self.on_change:
                listener(self.image)
        return result.response

    def _run(self, command: Callable[..., ControllerResult[R]], *args: Any) -> R:
        return self._commit(command(*args))

    def register(self, request: BrokerRegistrationRequest, now_ms: int) -> BrokerRegistrationResponse:
        return self._run(register_broker, self.image, request, 4, self._context(now_ms),
                         self.sessions)

    def heartbeat(self, request: BrokerHeartbeatRequest, now_ms: int) -> BrokerHeartbeatResponse:
        return self._run(broker_heartbeat, self.image, request, 1, self._context(now_ms),
                         self.sessions)

    def alter_partition(self, request: AlterPartitionRequest, now_ms: int) -> AlterPartitionResponse:
        return self._run(alter_partition, self.image, request, 3, self._context(now_ms))

    def create_topics(self, request: CreateTopicsRequest, now_ms: int) -> CreateTopicsResponse:
        return self._run(create_topics, self.image, request, 5, self._context(now_ms))

    def fence_expired(self, now_ms: int) -> None:
        """Fence every broker whose session expired (one command each, as Kafka)."""
        if self._fence_pending:
            records, self._fence_pending = self._fence_pending, ()
            self._commit(ControllerResult(records, None))
        while True:
            before = self.offset
            result = fence_stale_brokers(self.image, self._context(now_ms), self.sessions)
            fences = tuple(r for r in result.records if _is_fence(r))
            if self.fence_apart and fences and len(fences) < len(result.records):
                self._commit(ControllerResult(
                    tuple(r for r in result.records if not _is_fence(r)), None
                ))
                self._fence_pending = fences
                return
            self._commit(result)
            if self.offset == before:
                return

    def next_fence_deadline_ms(self) -> int | None:
        return next_fence_deadline_ms(
            self.image, self.sessions, self.config.broker_session_timeout_ms
        )
