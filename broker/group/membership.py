"""SyncGroup, Heartbeat and LeaveGroup (Kafka's classicGroupSync/Heartbeat/Leave).

The leader's SyncGroup carries every member's assignment; the coordinator
writes the group (with the assignments) to ``__consumer_offsets`` and moves
the group to Stable and answers the parked SyncGroups only when that record
is committed, so a member never holds an assignment a failover could forget.
"""

from __future__ import annotations

from broker.group import transitions
from broker.group.context import Context, map_append_error
from broker.group.group import ClassicGroup, Waiter
from broker.group.rebalance import (
    join_response,
    maybe_complete_join_phase,
    maybe_prepare_rebalance_or_complete_join,
    metadata_record,
    reschedule_heartbeat,
    reset_assignment_with_error,
)
from broker.group.states import CompletingRebalance, Dead, Empty, PreparingRebalance, Stable
from broker.group.timers import HeartbeatTimer, SyncTimer
from broker.group.writes import SyncWrite
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    LeaveGroupResponseMember,
    SyncGroupRequest,
    SyncGroupResponse,
)

__all__ = ["handle_heartbeat", "handle_leave", "handle_sync", "on_sync_write"]

# LeaveGroup v3 (KIP-345) carries a list of members; v0-2 one member id
BATCHED_LEAVE_VERSION = 3


def _group_or_error(ctx: Context, group_id: str) -> tuple[ClassicGroup | None, Errors]:
    if not group_id:
        return None, Errors.INVALID_GROUP_ID
    refusal = ctx.coordinator_error(group_id)
    if refusal != Errors.NONE:
        return None, refusal
    group = ctx.groups.get(group_id)
    if group is None or group.is_in(Dead):
        # an unknown group: the member is unknown; a dead one lives elsewhere now
        return None, Errors.UNKNOWN_MEMBER_ID if group is None else Errors.COORDINATOR_NOT_AVAILABLE
    return group, Errors.NONE


def _inconsistent(asked: str | None, actual: str | None) -> bool:
    return asked is not None and asked != actual


def handle_sync(ctx: Context, request: SyncGroupRequest, waiter: Waiter, now_ms: int) -> None:
    group, error = _group_or_error(ctx, request.group_id)
    if group is not None and group.is_empty:
        group, error = None, Errors.UNKNOWN_MEMBER_ID
    if group is not None:
        error = group.validate_member(request.member_id, request.group_instance_id)
        if error == Errors.NONE and request.generation_id != group.generation_id:
            error = Errors.ILLEGAL_GENERATION
        elif error == Errors.NONE and (
            _inconsistent(request.protocol_type, group.protocol_type)
            or _inconsistent(request.protocol_name, group.protocol_name)
        ):
            error = Errors.INCONSISTENT_GROUP_PROTOCOL
        elif error == Errors.NONE and group.is_in(PreparingRebalance):
            error = Errors.REBALANCE_IN_PROGRESS
    if group is None or error != Errors.NONE:
        ctx.answer(waiter, SyncGroupResponse(error_code=error))
        return
    member = group.members[request.member_id]
    _received_sync(ctx, group, request.member_id)
    if group.is_in(Stable):
        ctx.answer(waiter, _assignment_answer(group, member.assignment))
        return
    assert group.is_in(CompletingRebalance), group.state
    if member.sync_waiter is not None:
        # a retried SyncGroup replaces the parked one
        ctx.answer(member.sync_waiter, SyncGroupResponse(error_code=Errors.REBALANCE_IN_PROGRESS))
    member.sync_waiter = waiter
    if group.leader_id == request.member_id:
        given = {a.member_id: bytes(a.assignment) for a in request.assignments}
        assignment = {m: given.get(m, b"") for m in group.members}
        write = SyncWrite(
            group_id=group.group_id, generation_id=group.generation_id, assignment=assignment
        )
        ctx.append(ctx.partition_for(group.group_id), [metadata_record(group, assignment)], write)


def _assignment_answer(group: ClassicGroup, assignment: bytes) -> SyncGroupResponse:
    return SyncGroupResponse(
        protocol_type=group.protocol_type, protocol_name=group.protocol_name, assignment=assignment
    )


def _received_sync(ctx: Context, group: ClassicGroup, member_id: str) -> None:
    group.pending_sync.discard(member_id)
    if not group.pending_sync:
        ctx.timers.cancel(SyncTimer(group.group_id, group.generation_id))


def on_sync_write(ctx: Context, write: SyncWrite, error: Errors | None, now_ms: int) -> None:
    group = ctx.groups.get(write.group_id)
    if group is None or not group.is_in(CompletingRebalance):
        return
    if group.generation_id != write.generation_id:
        return
    if error is not None:
        reset_assignment_with_error(ctx, group, map_append_error(error))
        maybe_prepare_rebalance_or_complete_join(ctx, group, now_ms)
        return
    for member in group.members.values():
        member.assignment = write.assignment.get(member.member_id, b"")
    group.transition(transitions.transition_to_stable, now_ms)
    for member in group.members.values():
        if member.sync_waiter is not None:
            ctx.answer(member.sync_waiter, _assignment_answer(group, member.assignment))
            member.sync_waiter = None
            reschedule_heartbeat(ctx, group, member, now_ms)


def handle_heartbeat(ctx: Context, request: HeartbeatRequest, waiter: Waiter, now_ms: int) -> None:
    group, error = _group_or_error(ctx, request.group_id)
    if group is not None:
        error = group.validate_member(request.member_id, request.group_instance_id)
        if error == Errors.NONE and request.generation_id != group.generation_id:
            error = Errors.ILLEGAL_GENERATION
    if group is None or error != Errors.NONE:
        ctx.answer(waiter, HeartbeatResponse(error_code=error))
        return
    if group.is_in(Empty):
        ctx.answer(waiter, HeartbeatResponse(error_code=Errors.UNKNOWN_MEMBER_ID))
        return
    reschedule_heartbeat(ctx, group, group.members[request.member_id], now_ms)
    busy = group.is_in(PreparingRebalance)
    ctx.answer(waiter, HeartbeatResponse(error_code=Errors.REBALANCE_IN_PROGRESS if busy else 0))


def handle_leave(ctx: Context, request: LeaveGroupRequest, waiter: Waiter, now_ms: int) -> None:
    batched = waiter.version >= BATCHED_LEAVE_VERSION
    identities = (
        [(m.member_id, m.group_instance_id) for m in request.members]
        if batched
        else [(request.member_id, None)]
    )
    group, error = _group_or_error(ctx, request.group_id)
    if group is None and batched and error == Errors.UNKNOWN_MEMBER_ID:
        # an unknown group: Kafka's GroupCoordinatorService.leaveGroup answers each member
        # UNKNOWN_MEMBER_ID and the request no error
        ctx.answer(waiter, LeaveGroupResponse(members=tuple(
            LeaveGroupResponseMember(
                member_id=member_id, group_instance_id=instance_id, error_code=error
            )
            for member_id, instance_id in identities
        )))
        return
    if group is None:
        ctx.answer(waiter, LeaveGroupResponse(error_code=error))
        return
    results = [_leave_one(ctx, group, member_id, instance_id) for member_id, instance_id in identities]
    left = [r for r in results if r.error_code == Errors.NONE]
    if left:
        if group.is_in(Stable, CompletingRebalance):
            maybe_prepare_rebalance_or_complete_join(ctx, group, now_ms)
        elif group.is_in(PreparingRebalance):
            maybe_complete_join_phase(ctx, group, now_ms)
    if batched:
        ctx.answer(waiter, LeaveGroupResponse(members=tuple(results)))
    else:
        ctx.answer(waiter, LeaveGroupResponse(error_code=results[0].error_code))


def _leave_one(
    ctx: Context, group: ClassicGroup, member_id: str, instance_id: str | None
) -> LeaveGroupResponseMember:
    def result(error: Errors = Errors.NONE) -> LeaveGroupResponseMember:
        return LeaveGroupResponseMember(
            member_id=member_id, group_instance_id=instance_id, error_code=error
        )

    if not member_id:
        # an admin removes a static member by instance id alone
        target = group.static_members.get(instance_id) if instance_id is not None else None
        if target is None:
            return result(Errors.UNKNOWN_MEMBER_ID)
        _remove(ctx, group, target)
        return result()
    if member_id in group.pending_members:
        group.pending_members.discard(member_id)
        ctx.timers.cancel(HeartbeatTimer(group.group_id, member_id))
        return result()
    error = group.validate_member(member_id, instance_id)
    if error != Errors.NONE:
        return result(error)
    _remove(ctx, group, member_id)
    return result()


def _remove(ctx: Context, group: ClassicGroup, member_id: str) -> None:
    """Remove without the follow-up: LeaveGroup moves the group once for all members."""
    member = group.members[member_id]
    if member.join_waiter is not None:
        ctx.answer(member.join_waiter, _join_unknown(member.join_waiter))
        member.join_waiter = None
    if member.sync_waiter is not None:
        ctx.answer(member.sync_waiter, SyncGroupResponse(error_code=Errors.UNKNOWN_MEMBER_ID))
        member.sync_waiter = None
    group.remove(member_id)
    ctx.timers.cancel(HeartbeatTimer(group.group_id, member_id))


def _join_unknown(waiter: Waiter) -> object:
    return join_response(waiter.version, error_code=Errors.UNKNOWN_MEMBER_ID, member_id="")
