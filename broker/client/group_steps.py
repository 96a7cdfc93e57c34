"""What ``GroupCore`` asks its shell to do, and what it tells it (values, no behaviour).

``next_step`` gives a ``FindCoordinator``, ``PrepareJoin``, ``JoinPlan`` or
``SyncPlan``; ``heartbeat_target`` a ``HeartbeatTarget`` (the generation a
pacer beats for); ``take_changes`` the ``AssignmentChange`` of each
completed rebalance.
"""

from __future__ import annotations

import attrs

from broker.client.types import TopicPartition
from quorum.wire.messages import JoinGroupRequest, SyncGroupRequest

__all__ = [
    "AssignmentChange",
    "FindCoordinator",
    "HeartbeatTarget",
    "JoinPlan",
    "PrepareJoin",
    "Step",
    "SyncPlan",
]


@attrs.frozen
class FindCoordinator:
    """Look the group's coordinator up (FindCoordinator to any broker)."""


@attrs.frozen
class PrepareJoin:
    """Before JoinGroup: commit (if ``commit``), report the partitions given up, then
    call ``join_prepared``."""

    revoked: tuple[TopicPartition, ...]
    lost: tuple[TopicPartition, ...]
    commit: bool


@attrs.frozen
class JoinPlan:
    node: int
    request: JoinGroupRequest


@attrs.frozen
class SyncPlan:
    node: int
    request: SyncGroupRequest
    generation: int


@attrs.frozen(kw_only=True)
class HeartbeatTarget:
    node: int
    group_id: str
    generation: int
    member_id: str
    instance_id: str | None


@attrs.frozen(kw_only=True)
class AssignmentChange:
    """A completed rebalance: the new assignment and what changed for the listener."""

    assigned: tuple[TopicPartition, ...]
    added: tuple[TopicPartition, ...]
    revoked: tuple[TopicPartition, ...]


Step = FindCoordinator | PrepareJoin | JoinPlan | SyncPlan
