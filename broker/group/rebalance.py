"""The join phase: rebalances, generations, leaders, and the timers that end them.

Kafka's GroupMetadataManager (prepareRebalance, completeClassicGroupJoin,
the heartbeat, join and sync timers), as functions over ``Context``.  A
JoinGroup (``broker.group.joining``) is parked in its member's
``join_waiter`` until the join phase ends; the phase ends when every member
has rejoined, or at the rebalance timeout (members that did not rejoin are
dropped, static ones kept), or for a new group after
``group.initial.rebalance.delay.ms`` (extended while members keep arriving,
up to the rebalance timeout).
"""

from __future__ import annotations

from broker.group import transitions
from broker.group.context import Context
from broker.group.group import ClassicGroup, Member, Waiter
from broker.group.records import OffsetsRecord, StoredMember, group_metadata_record
from broker.group.states import CompletingRebalance, Dead, Empty, PreparingRebalance, Stable
from broker.group.timers import HeartbeatTimer, JoinTimer, SyncTimer
from broker.group.writes import GroupMetadataWrite
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    JoinGroupResponse,
    JoinGroupResponseMember,
    SyncGroupResponse,
)

__all__ = [
    "complete_join",
    "generation_answer",
    "join_error",
    "join_response",
    "maybe_complete_join_phase",
    "maybe_prepare_rebalance_or_complete_join",
    "metadata_record",
    "on_heartbeat_expired",
    "on_join_timer",
    "on_sync_timer",
    "prepare_rebalance",
    "remove_member_and_update",
    "reschedule_heartbeat",
    "reset_assignment_with_error",
]


def join_response(version: int, **fields: object) -> JoinGroupResponse:
    """A JoinGroupResponse with Kafka's protocol name rule (``JoinGroupResponse``'s
    constructor): before v7 it is not nullable and an absent one is written ""; from v7 an
    empty one is written null (a refusal, which has no generation, names no protocol)."""
    name = fields.get("protocol_name")
    if version < 7 and name is None:
        fields["protocol_name"] = ""
    elif version >= 7 and not name:
        fields["protocol_name"] = None
    return JoinGroupResponse(**fields)  # type: ignore[arg-type]


def join_error(waiter: Waiter, error: Errors, member_id: str) -> JoinGroupResponse:
    return join_response(waiter.version, error_code=error, member_id=member_id)


def _member_list(group: ClassicGroup) -> tuple[JoinGroupResponseMember, ...]:
    protocol = group.protocol_name
    assert protocol is not None
    return tuple(
        JoinGroupResponseMember(
            member_id=m.member_id, group_instance_id=m.group_instance_id, metadata=m.metadata(protocol)
        )
        for m in group.members.values()
    )


def generation_answer(
    group: ClassicGroup,
    member_id: str,
    version: int,
    *,
    leader_view: bool,
    skip_assignment: bool = False,
    leader: str | None = None,
) -> JoinGroupResponse:
    return join_response(
        version,
        members=_member_list(group) if leader_view else (),
        member_id=member_id,
        generation_id=group.generation_id,
        protocol_name=group.protocol_name,
        protocol_type=group.protocol_type,
        leader=(group.leader_id if leader is None else leader) or "",
        skip_assignment=skip_assignment,
    )


def reschedule_heartbeat(
    ctx: Context, group: ClassicGroup, member: Member, now_ms: int, timeout_ms: int | None = None
) -> None:
    timeout = member.session_timeout_ms if timeout_ms is None else timeout_ms
    ctx.timers.schedule(HeartbeatTimer(group.group_id, member.member_id), now_ms + timeout)


def metadata_record(group: ClassicGroup, assignment: dict[str, bytes]) -> OffsetsRecord:
    """The group as Kafka stores it: generation, protocol, leader, members with assignments."""
    protocol = group.protocol_name
    members = tuple(
        StoredMember(
            member_id=m.member_id,
            group_instance_id=m.group_instance_id,
            client_id=m.client_id,
            client_host=m.client_host,
            rebalance_timeout_ms=m.rebalance_timeout_ms,
            session_timeout_ms=m.session_timeout_ms,
            subscription=m.metadata(protocol) if protocol is not None else b"",
            assignment=assignment.get(m.member_id, b""),
        )
        for m in group.members.values()
    )
    return group_metadata_record(
        group_id=group.group_id,
        protocol_type=group.protocol_type,
        generation_id=group.generation_id,
        protocol_name=protocol,
        leader_id=group.leader_id,
        current_state_timestamp_ms=group.state.since_ms,
        members=members,
    )


# -- the join phase -----------------------------------------------------------


def maybe_prepare_rebalance_or_complete_join(ctx: Context, group: ClassicGroup, now_ms: int) -> None:
    if group.is_in(Empty, CompletingRebalance, Stable):
        prepare_rebalance(ctx, group, now_ms)
    else:
        maybe_complete_join_phase(ctx, group, now_ms)


def maybe_complete_join_phase(ctx: Context, group: ClassicGroup, now_ms: int) -> None:
    state = group.state
    if isinstance(state, PreparingRebalance) and not state.initial and group.has_all_members_joined():
        complete_join(ctx, group, now_ms)


def reset_assignment_with_error(ctx: Context, group: ClassicGroup, error: Errors) -> None:
    """Answer every parked SyncGroup with ``error`` (the assignment will not come)."""
    assert group.is_in(CompletingRebalance), group.state
    for member in group.members.values():
        member.assignment = b""
        if member.sync_waiter is not None:
            ctx.answer(member.sync_waiter, SyncGroupResponse(error_code=error))
            member.sync_waiter = None


def prepare_rebalance(ctx: Context, group: ClassicGroup, now_ms: int) -> None:
    if group.is_in(CompletingRebalance):
        reset_assignment_with_error(ctx, group, Errors.REBALANCE_IN_PROGRESS)
    group.pending_sync.clear()
    ctx.timers.cancel(SyncTimer(group.group_id, group.generation_id))
    initial = group.is_in(Empty)
    group.transition(transitions.transition_to_preparing_rebalance, now_ms)
    if initial:
        delay = ctx.config.initial_rebalance_delay_ms
        group.initial_delay_ms = delay
        group.initial_remaining_ms = max(group.rebalance_timeout_ms() - delay, 0)
        group.new_member_added = False
        ctx.timers.schedule(JoinTimer(group.group_id), now_ms + delay)
    elif group.has_all_members_joined():
        complete_join(ctx, group, now_ms)
    else:
        ctx.timers.schedule(JoinTimer(group.group_id), now_ms + group.rebalance_timeout_ms())


def on_join_timer(ctx: Context, group: ClassicGroup, now_ms: int) -> None:
    state = group.state
    initial = isinstance(state, PreparingRebalance) and state.initial
    # the initial delay: extended while members keep arriving
    if initial and group.new_member_added and group.initial_remaining_ms != 0:
        group.new_member_added = False
        delay = min(ctx.config.initial_rebalance_delay_ms, group.initial_remaining_ms)
        group.initial_remaining_ms = max(group.initial_remaining_ms - group.initial_delay_ms, 0)
        group.initial_delay_ms = delay
        ctx.timers.schedule(JoinTimer(group.group_id), now_ms + delay)
        return
    complete_join(ctx, group, now_ms)


def complete_join(ctx: Context, group: ClassicGroup, now_ms: int) -> None:
    ctx.timers.cancel(JoinTimer(group.group_id))
    if not group.is_in(PreparingRebalance):
        return
    for member in list(group.members.values()):
        if member.join_waiter is None and member.group_instance_id is None:
            group.remove(member.member_id)
            ctx.timers.cancel(HeartbeatTimer(group.group_id, member.member_id))
    if group.members and not group.maybe_elect_new_joined_leader():
        # nobody rejoined: wait until sessions expire the silent members
        ctx.timers.schedule(JoinTimer(group.group_id), now_ms + group.rebalance_timeout_ms())
        return
    group.init_next_generation(now_ms)
    if group.is_in(Empty):
        write = GroupMetadataWrite(group_id=group.group_id)
        ctx.append(ctx.partition_for(group.group_id), [metadata_record(group, {})], write)
        return
    for member in group.members.values():
        if member.join_waiter is not None:
            is_leader = member.member_id == group.leader_id
            answer = generation_answer(
                group, member.member_id, member.join_waiter.version, leader_view=is_leader
            )
            ctx.answer(member.join_waiter, answer)
            member.join_waiter = None
        reschedule_heartbeat(ctx, group, member, now_ms)
        member.is_new = False
        group.pending_sync.add(member.member_id)
    sync_deadline = now_ms + group.rebalance_timeout_ms()
    ctx.timers.schedule(SyncTimer(group.group_id, group.generation_id), sync_deadline)


def remove_member_and_update(ctx: Context, group: ClassicGroup, member_id: str, now_ms: int) -> None:
    """Drop a member (expired, left, fenced for size) and move the group on."""
    member = group.members.get(member_id)
    if member is not None and member.join_waiter is not None:
        ctx.answer(member.join_waiter, join_error(member.join_waiter, Errors.UNKNOWN_MEMBER_ID, ""))
        member.join_waiter = None
    if member is not None and member.sync_waiter is not None:
        ctx.answer(member.sync_waiter, SyncGroupResponse(error_code=Errors.UNKNOWN_MEMBER_ID))
        member.sync_waiter = None
    group.remove(member_id)
    ctx.timers.cancel(HeartbeatTimer(group.group_id, member_id))
    if group.is_in(Stable, CompletingRebalance):
        maybe_prepare_rebalance_or_complete_join(ctx, group, now_ms)
    elif group.is_in(PreparingRebalance) and group.has_all_members_joined():
        complete_join(ctx, group, now_ms)


def on_heartbeat_expired(ctx: Context, group: ClassicGroup, member_id: str, now_ms: int) -> None:
    if group.is_in(Dead):
        return
    if member_id in group.pending_members:
        group.pending_members.discard(member_id)
        if group.is_in(PreparingRebalance) and group.has_all_members_joined():
            complete_join(ctx, group, now_ms)
        return
    member = group.members.get(member_id)
    if member is None:
        return
    # members parked in a rebalance keep their session, unless they never had an id
    parked = member.join_waiter is not None or member.sync_waiter is not None
    if member.is_new or not parked:
        remove_member_and_update(ctx, group, member_id, now_ms)


def on_sync_timer(ctx: Context, group: ClassicGroup, generation_id: int, now_ms: int) -> None:
    if generation_id != group.generation_id or not group.is_in(CompletingRebalance, Stable):
        return
    if not group.pending_sync:
        return
    for member_id in list(group.pending_sync):
        member = group.members.get(member_id)
        if member is not None and member.sync_waiter is not None:
            ctx.answer(member.sync_waiter, SyncGroupResponse(error_code=Errors.UNKNOWN_MEMBER_ID))
            member.sync_waiter = None
        group.remove(member_id)
        ctx.timers.cancel(HeartbeatTimer(group.group_id, member_id))
    prepare_rebalance(ctx, group, now_ms)
