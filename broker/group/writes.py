"""What an append to ``__consumer_offsets`` means once it commits or fails.

Each append the coordinator asks for is remembered as one of these values,
keyed by append id; ``GroupCoordinator.append_committed`` /
``append_failed`` hand it to its handler (a table in ``coordinator``).
"""

from __future__ import annotations

import attrs

from broker.group.context import OffsetKey
from broker.group.group import ClassicGroup, Waiter
from broker.group.records import CommittedOffset
from broker.group.states import GroupState

__all__ = [
    "CommitWrite",
    "DeleteGroupsGather",
    "DeleteGroupsWrite",
    "GroupMetadataWrite",
    "StaticMemberWrite",
    "SyncWrite",
    "TombstoneWrite",
]


@attrs.frozen(kw_only=True)
class CommitWrite:
    """OffsetCommit: apply the offsets and answer ``response`` once committed."""

    waiter: Waiter
    response: object
    offsets: tuple[tuple[OffsetKey, CommittedOffset], ...]


@attrs.frozen(kw_only=True)
class TombstoneWrite:
    """Offsets deleted (OffsetDelete, expiry): drop them once committed."""

    waiter: Waiter | None
    response: object | None
    keys: tuple[OffsetKey, ...]


@attrs.frozen(kw_only=True)
class SyncWrite:
    """The leader's assignment: Stable and every SyncGroup answered once committed."""

    group_id: str
    generation_id: int
    assignment: dict[str, bytes]


@attrs.frozen(kw_only=True)
class StaticMemberWrite:
    """A known static member rejoined with a new member id while Stable."""

    group_id: str
    instance_id: str
    old_member_id: str
    new_member_id: str
    old_protocols: tuple[tuple[str, bytes], ...]
    old_rebalance_timeout_ms: int
    old_session_timeout_ms: int
    leader_before: str | None
    waiter: Waiter


@attrs.frozen(kw_only=True)
class GroupMetadataWrite:
    """Group metadata written for failover only (a generation left empty)."""

    group_id: str


@attrs.define(kw_only=True)
class DeleteGroupsGather:
    """One DeleteGroups request over several partitions: answered when all are done."""

    waiter: Waiter
    results: list[tuple[str, int]]  # (group id, error code) in request order
    outstanding: int


@attrs.frozen(kw_only=True)
class DeleteGroupsWrite:
    """DeleteGroups on one partition: drop the offsets once committed; restore on failure."""

    gather: DeleteGroupsGather
    removed: tuple[tuple[ClassicGroup, GroupState], ...]  # with the state before deletion
    keys: tuple[OffsetKey, ...]
