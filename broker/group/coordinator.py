"""The classic group coordinator of one broker: a sans-I/O state machine.

Inputs are method calls with ``now_ms``: a decoded request with its version
and an opaque ``token`` (``handle``), the fate of an append to
``__consumer_offsets`` (``append_committed`` / ``append_failed``), the
partitions this broker gains or loses (``begin_load`` + ``load_records`` +
``finish_load``, ``unload``) and the clock (``poll``).  Every call returns a
``CoordinatorOutput`` (``broker.group.output`` states the contract): answers
to send, records to append, the next deadline.

The shell (one trio task owning this object) must:

1. pass every group request of this broker here with a unique ``token``,
   and send each answer to its token's connection (answers may come in a
   later output: a JoinGroup is a long poll);
2. append each ``Append`` to its partition with acks=all, in order, and
   report back every ``append_id`` exactly once, committed or failed;
3. on gaining leadership of an offsets partition: ``begin_load``, feed it
   every record of the partition's log from the log start to the log end
   offset (``load_records``, in slices as it likes), then ``finish_load``;
   on losing it: ``unload`` (the coordinator fails that partition's
   pending appends itself and ignores their later reports);
4. call ``poll(now_ms)`` at ``next_deadline_ms``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Iterable
from typing import Any, Final

import attrs

from broker.group import admin, joining, loading, membership, offsets, rebalance
from broker.group.config import GroupCoordinatorConfig
from broker.group.context import Context
from broker.group.errors import GroupCoordinatorError
from broker.group.group import Waiter
from broker.group.output import CoordinatorOutput
from broker.group.records import CommittedOffset
from broker.group.timers import HeartbeatTimer, JoinTimer, RetentionTimer, SyncTimer, TimerKey
from broker.group.writes import (
    CommitWrite,
    DeleteGroupsWrite,
    GroupMetadataWrite,
    StaticMemberWrite,
    SyncWrite,
    TombstoneWrite,
)
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)

__all__ = ["GroupCoordinator", "RequestInfo"]


@attrs.frozen
class RequestInfo:
    """Who sent a request: what JoinGroup stores for DescribeGroups."""

    client_id: str = ""
    client_host: str = ""  # Kafka's form: "/" + the client's IP address


_Handler = Callable[[Context, Any, Waiter, RequestInfo, int], None]

HANDLERS: Final[dict[type, _Handler]] = {
    JoinGroupRequest: lambda ctx, r, w, info, now: joining.handle_join(
        ctx, r, w, client_id=info.client_id, client_host=info.client_host, now_ms=now
    ),
    SyncGroupRequest: lambda ctx, r, w, info, now: membership.handle_sync(ctx, r, w, now),
    HeartbeatRequest: lambda ctx, r, w, info, now: membership.handle_heartbeat(ctx, r, w, now),
    LeaveGroupRequest: lambda ctx, r, w, info, now: membership.handle_leave(ctx, r, w, now),
    OffsetCommitRequest: lambda ctx, r, w, info, now: offsets.handle_commit(ctx, r, w, now),
    OffsetFetchRequest: lambda ctx, r, w, info, now: offsets.handle_fetch(ctx, r, w, now),
    OffsetDeleteRequest: lambda ctx, r, w, info, now: offsets.handle_offset_delete(ctx, r, w, now),
    ListGroupsRequest: lambda ctx, r, w, info, now: admin.handle_list_groups(ctx, r, w),
    DescribeGroupsRequest: lambda ctx, r, w, info, now: admin.handle_describe_groups(ctx, r, w),
    DeleteGroupsRequest: lambda ctx, r, w, info, now: admin.handle_delete_groups(ctx, r, w, now),
}

_WriteHandler = Callable[[Context, Any, Errors | None, int], None]

WRITE_HANDLERS: Final[dict[type, _WriteHandler]] = {
    CommitWrite: offsets.on_commit_write,
    TombstoneWrite: offsets.on_tombstone_write,
    SyncWrite: membership.on_sync_write,
    StaticMemberWrite: joining.on_static_member_write,
    GroupMetadataWrite: lambda ctx, write, error, now: None,  # written for failover only
    DeleteGroupsWrite: admin.on_delete_write,
}


def _fire(ctx: Context, key: TimerKey, now_ms: int) -> None:
    if isinstance(key, RetentionTimer):
        loading.on_retention_timer(ctx, key.partition, now_ms)
        return
    group = ctx.groups.get(key.group_id)
    if group is None:
        return  # the group is gone; so is what the timer was for
    if isinstance(key, HeartbeatTimer):
        rebalance.on_heartbeat_expired(ctx, group, key.member_id, now_ms)
    elif isinstance(key, JoinTimer):
        rebalance.on_join_timer(ctx, group, now_ms)
    elif isinstance(key, SyncTimer):
        rebalance.on_sync_timer(ctx, group, key.generation_id, now_ms)


class GroupCoordinator:
    """Classic consumer groups and their committed offsets, for the partitions this broker leads."""

    def __init__(self, config: GroupCoordinatorConfig, *, rng: random.Random | None = None) -> None:
        self._ctx = Context(config=config, rng=rng if rng is not None else random.Random())

    # -- inputs ------------------------------------------------------------

    def handle(
        self,
        request: object,
        *,
        version: int,
        token: Hashable,
        now_ms: int,
        client_id: str = "",
        client_host: str = "",
    ) -> CoordinatorOutput:
        """One group request (JoinGroup ... DeleteGroups) at ``version``; answered to ``token``."""
        handler = HANDLERS.get(type(request))
        if handler is None:
            raise GroupCoordinatorError(
                f"{type(request).__name__} is not a group request; the coordinator serves "
                + ", ".join(sorted(cls.__name__ for cls in HANDLERS))
            )
        handler(self._ctx, request, Waiter(token, version), RequestInfo(client_id, client_host), now_ms)
        return self._drain()

    def append_committed(self, append_id: int, *, now_ms: int) -> CoordinatorOutput:
        self._settle(append_id, None, now_ms)
        return self._drain()

    def append_failed(self, append_id: int, error: Errors, *, now_ms: int) -> CoordinatorOutput:
        if error == Errors.NONE:
            raise GroupCoordinatorError(f"append {append_id} failed with error NONE: report an error")
        self._settle(append_id, error, now_ms)
        return self._drain()

    def begin_load(self, partition: int, *, now_ms: int) -> CoordinatorOutput:
        self._fail_appends_of(partition, now_ms)
        loading.begin_load(self._ctx, partition, now_ms)
        return self._drain()

    def load_records(
        self,
        partition: int,
        records: Iterable[tuple[bytes | memoryview, bytes | memoryview | None]],
        *,
        now_ms: int,
    ) -> CoordinatorOutput:
        if partition not in self._ctx.loading:
            raise GroupCoordinatorError(f"load_records({partition}) before begin_load({partition})")
        loading.replay_records(self._ctx, partition, records, now_ms)
        return self._drain()

    def finish_load(self, partition: int, *, now_ms: int) -> CoordinatorOutput:
        if partition not in self._ctx.loading:
            raise GroupCoordinatorError(f"finish_load({partition}) before begin_load({partition})")
        loading.finish_load(self._ctx, partition, now_ms)
        return self._drain()

    def unload(self, partition: int, *, now_ms: int) -> CoordinatorOutput:
        self._fail_appends_of(partition, now_ms)
        loading.unload(self._ctx, partition, now_ms)
        return self._drain()

    def poll(self, now_ms: int) -> CoordinatorOutput:
        while (key := self._ctx.timers.pop_due(now_ms)) is not None:
            _fire(self._ctx, key, now_ms)
        return self._drain()

    # -- views ---------------------------------------------------------------

    @property
    def config(self) -> GroupCoordinatorConfig:
        return self._ctx.config

    def partition_for(self, group_id: str) -> int:
        return self._ctx.partition_for(group_id)

    def committed_offsets(self, group_id: str) -> dict[tuple[str, int], CommittedOffset]:
        return dict(self._ctx.offsets.get(group_id, {}))

    def group_state(self, group_id: str) -> str | None:
        group = self._ctx.groups.get(group_id)
        return None if group is None else group.state.NAME

    def group_ids(self) -> list[str]:
        return sorted(self._ctx.groups)

    def next_deadline_ms(self) -> int | None:
        return self._ctx.timers.next_deadline_ms()

    # -- internals -------------------------------------------------------------

    def _settle(self, append_id: int, error: Errors | None, now_ms: int) -> None:
        ctx = self._ctx
        write = ctx.writes.pop(append_id, None)
        ctx.write_partitions.pop(append_id, None)
        if write is not None:
            WRITE_HANDLERS[type(write)](ctx, write, error, now_ms)

    def _fail_appends_of(self, partition: int, now_ms: int) -> None:
        ids = [a for a, p in self._ctx.write_partitions.items() if p == partition]
        for append_id in ids:
            self._settle(append_id, Errors.NOT_LEADER_OR_FOLLOWER, now_ms)

    def _drain(self) -> CoordinatorOutput:
        ctx = self._ctx
        out = CoordinatorOutput(
            answers=tuple(ctx.answers),
            appends=tuple(ctx.appends),
            next_deadline_ms=ctx.timers.next_deadline_ms(),
        )
        ctx.answers.clear()
        ctx.appends.clear()
        return out
