"""JoinGroup: new, pending, known and static members (Kafka's classicGroupJoin*).

The request is checked (group id, coordinator, session timeout bounds, group
size, protocols), then the member is added, updated or told to come back
with an id (KIP-394, JoinGroup v4+: MEMBER_ID_REQUIRED with a generated id);
a known static member (``group.instance.id``) without a member id takes its
old member's place and fences the old id (FENCED_INSTANCE_ID).  What happens
next, the join phase, is ``broker.group.rebalance``.
"""

from __future__ import annotations

from broker.group.context import Context, map_append_error
from broker.group.group import ClassicGroup, Member, Waiter
from broker.group.rebalance import (
    generation_answer,
    join_error,
    join_response,
    maybe_complete_join_phase,
    maybe_prepare_rebalance_or_complete_join,
    metadata_record,
    prepare_rebalance,
    remove_member_and_update,
    reschedule_heartbeat,
)
from broker.group.states import CompletingRebalance, Dead, Empty, PreparingRebalance, Stable
from broker.group.timers import HeartbeatTimer
from broker.group.writes import StaticMemberWrite
from quorum.wire.error_codes import Errors
from quorum.wire.messages import JoinGroupRequest, SyncGroupResponse

__all__ = ["handle_join", "on_static_member_write"]

# KIP-394: from JoinGroup v4 a member without an id is given one and must rejoin with it
MEMBER_ID_REQUIRED_VERSION = 4
# KIP-814: from v9 the leader of an unchanged Stable group may skip the assignment
SKIP_ASSIGNMENT_VERSION = 9


# -- JoinGroup ----------------------------------------------------------------


def handle_join(
    ctx: Context,
    request: JoinGroupRequest,
    waiter: Waiter,
    *,
    client_id: str,
    client_host: str,
    now_ms: int,
) -> None:
    group_id, member_id = request.group_id, request.member_id
    if not group_id:
        ctx.answer(waiter, join_error(waiter, Errors.INVALID_GROUP_ID, member_id))
        return
    refusal = ctx.coordinator_error(group_id)
    if refusal != Errors.NONE:
        ctx.answer(waiter, join_error(waiter, refusal, member_id))
        return
    cfg = ctx.config
    if not cfg.min_session_timeout_ms <= request.session_timeout_ms <= cfg.max_session_timeout_ms:
        ctx.answer(waiter, join_error(waiter, Errors.INVALID_SESSION_TIMEOUT, member_id))
        return
    group = ctx.groups.get(group_id)
    if group is None:
        if member_id:
            # a member id for a group this coordinator does not know
            ctx.answer(waiter, join_error(waiter, Errors.UNKNOWN_MEMBER_ID, member_id))
            return
        group = ctx.get_or_create_group(group_id, now_ms)
    join = _Join(ctx, group, request, waiter, client_id, client_host, now_ms)
    if not join.accepted():
        # Kafka drops a member it refuses for size, then answers as to a stranger
        if member_id in group.members:
            remove_member_and_update(ctx, group, member_id, now_ms)
        group.pending_members.discard(member_id)
        ctx.answer(waiter, join_error(waiter, Errors.GROUP_MAX_SIZE_REACHED, ""))
    elif not member_id:
        join.new_member()
    else:
        join.existing_member()


class _Join:
    """One JoinGroup request against one group (Kafka's classicGroupJoin* methods)."""

    def __init__(
        self,
        ctx: Context,
        group: ClassicGroup,
        request: JoinGroupRequest,
        waiter: Waiter,
        client_id: str,
        client_host: str,
        now_ms: int,
    ) -> None:
        self.ctx, self.group, self.request, self.waiter = ctx, group, request, waiter
        self.client_id, self.client_host, self.now_ms = client_id, client_host, now_ms
        # one entry per protocol name, the first kept: support is counted per member
        by_name: dict[str, bytes] = {}
        for p in request.protocols:
            by_name.setdefault(p.name, bytes(p.metadata))
        self.protocols = tuple(by_name.items())
        # JoinGroup v0 has no rebalance timeout: the session timeout serves
        timeout = request.rebalance_timeout_ms
        self.rebalance_timeout_ms = timeout if timeout >= 0 else request.session_timeout_ms

    def accepted(self) -> bool:
        group, member_id, size = self.group, self.request.member_id, self.ctx.config.max_size
        if group.is_in(Empty, Dead):
            return True
        if group.is_in(PreparingRebalance):
            member = group.members.get(member_id)
            awaiting = member is not None and member.join_waiter is not None
            return awaiting or group.awaiting_join_count() < size
        return member_id in group.members or len(group.members) < size

    def _supported(self) -> bool:
        names = [name for name, _ in self.protocols]
        return self.group.supports_protocols(self.request.protocol_type, names)

    def new_member(self) -> None:
        group, waiter, instance_id = self.group, self.waiter, self.request.group_instance_id
        if group.is_in(Dead):
            self.ctx.answer(waiter, join_error(waiter, Errors.COORDINATOR_NOT_AVAILABLE, ""))
        elif not self._supported():
            self.ctx.answer(waiter, join_error(waiter, Errors.INCONSISTENT_GROUP_PROTOCOL, ""))
        elif instance_id is not None:
            new_id = self.ctx.new_member_id(instance_id)
            existing = group.static_members.get(instance_id)
            if existing is not None:
                self.replace_static_member(existing, new_id)
            else:
                self.add_member(new_id)
        elif waiter.version >= MEMBER_ID_REQUIRED_VERSION:
            new_id = self.ctx.new_member_id(self.client_id)
            group.pending_members.add(new_id)
            timer = HeartbeatTimer(group.group_id, new_id)
            self.ctx.timers.schedule(timer, self.now_ms + self.request.session_timeout_ms)
            self.ctx.answer(waiter, join_error(waiter, Errors.MEMBER_ID_REQUIRED, new_id))
        else:
            self.add_member(self.ctx.new_member_id(self.client_id))

    def existing_member(self) -> None:
        group, waiter, member_id = self.group, self.waiter, self.request.member_id
        if group.is_in(Dead):
            self.ctx.answer(waiter, join_error(waiter, Errors.COORDINATOR_NOT_AVAILABLE, member_id))
        elif not self._supported():
            self.ctx.answer(waiter, join_error(waiter, Errors.INCONSISTENT_GROUP_PROTOCOL, member_id))
        elif member_id in group.pending_members:
            self.add_member(member_id)
        else:
            error = group.validate_member(member_id, self.request.group_instance_id)
            if error != Errors.NONE:
                self.ctx.answer(waiter, join_error(waiter, error, member_id))
            else:
                self.known_member(group.members[member_id])

    def known_member(self, member: Member) -> None:
        group, waiter = self.group, self.waiter
        if group.is_in(PreparingRebalance):
            self.update_member(member)
        elif group.is_in(CompletingRebalance, Stable):
            unchanged = member.matches(self.protocols)
            is_leader = group.leader_id == member.member_id
            if unchanged and (group.is_in(CompletingRebalance) or not is_leader):
                # a lost JoinGroup answer, asked again: the current generation
                answer = generation_answer(
                    group, member.member_id, waiter.version,
                    leader_view=group.is_in(CompletingRebalance) and is_leader,
                )
                self.ctx.answer(waiter, answer)
            else:
                self.update_member(member)
        else:
            # Empty: the member's generation is gone; it resets and rejoins
            error = Errors.UNKNOWN_MEMBER_ID
            self.ctx.answer(waiter, join_error(waiter, error, member.member_id))

    def update_member(self, member: Member) -> None:
        request = self.request
        self.group.update_member(
            member, self.protocols, self.rebalance_timeout_ms, request.session_timeout_ms, self.waiter
        )
        maybe_prepare_rebalance_or_complete_join(self.ctx, self.group, self.now_ms)

    def add_member(self, member_id: str) -> None:
        group, request = self.group, self.request
        member = Member(
            member_id=member_id,
            group_instance_id=request.group_instance_id,
            client_id=self.client_id,
            client_host=self.client_host,
            rebalance_timeout_ms=self.rebalance_timeout_ms,
            session_timeout_ms=request.session_timeout_ms,
            protocol_type=request.protocol_type,
            protocols=self.protocols,
            join_waiter=self.waiter,
            is_new=True,
        )
        state = group.state
        if isinstance(state, PreparingRebalance) and state.initial:
            group.new_member_added = True
        group.add(member)
        # a parked JoinGroup cannot heartbeat: a new member gets the join timeout instead
        timeout = self.ctx.config.new_member_join_timeout_ms
        reschedule_heartbeat(self.ctx, group, member, self.now_ms, timeout)
        maybe_prepare_rebalance_or_complete_join(self.ctx, group, self.now_ms)

    def replace_static_member(self, old_id: str, new_id: str) -> None:
        """A known static member without a member id: it takes the old member's place."""
        ctx, group, request, now_ms = self.ctx, self.group, self.request, self.now_ms
        instance_id = request.group_instance_id
        assert instance_id is not None
        leader_before = group.leader_id
        old = group.members[old_id]
        old_protocols = old.protocols
        old_timeouts = (old.rebalance_timeout_ms, old.session_timeout_ms)
        if old.join_waiter is not None:
            # the fenced instance's parked JoinGroup
            ctx.answer(old.join_waiter, join_error(old.join_waiter, Errors.FENCED_INSTANCE_ID, old_id))
        if old.sync_waiter is not None:
            ctx.answer(old.sync_waiter, SyncGroupResponse(error_code=Errors.FENCED_INSTANCE_ID))
            old.sync_waiter = None
        member = group.replace_static_member(instance_id, old_id, new_id)
        ctx.timers.cancel(HeartbeatTimer(group.group_id, old_id))
        reschedule_heartbeat(ctx, group, member, now_ms)
        group.update_member(
            member, self.protocols, self.rebalance_timeout_ms, request.session_timeout_ms, self.waiter
        )
        if group.is_in(Stable):
            if group.protocol_name == group.select_protocol():
                # same protocol: persist the new member id, no rebalance
                assignment = {m.member_id: m.assignment for m in group.members.values()}
                write = StaticMemberWrite(
                    group_id=group.group_id,
                    instance_id=instance_id,
                    old_member_id=old_id,
                    new_member_id=new_id,
                    old_protocols=old_protocols,
                    old_rebalance_timeout_ms=old_timeouts[0],
                    old_session_timeout_ms=old_timeouts[1],
                    leader_before=leader_before,
                    waiter=self.waiter,
                )
                record = metadata_record(group, assignment)
                ctx.append(ctx.partition_for(group.group_id), [record], write)
            else:
                maybe_prepare_rebalance_or_complete_join(ctx, group, now_ms)
        elif group.is_in(CompletingRebalance):
            # the leader may already hold the old member id: assign again
            prepare_rebalance(ctx, group, now_ms)
        else:
            maybe_complete_join_phase(ctx, group, now_ms)


def on_static_member_write(ctx: Context, write: StaticMemberWrite, error: Errors | None,
                           now_ms: int) -> None:
    group = ctx.groups.get(write.group_id)
    member = group.members.get(write.new_member_id) if group is not None else None
    if group is None or member is None or member.join_waiter != write.waiter:
        return  # the group moved on; the waiter was answered on the way
    version = write.waiter.version
    member.join_waiter = None
    if error is not None:
        group.update_member(
            member, write.old_protocols, write.old_rebalance_timeout_ms,
            write.old_session_timeout_ms, None,
        )
        old = group.replace_static_member(write.instance_id, write.new_member_id, write.old_member_id)
        ctx.timers.cancel(HeartbeatTimer(group.group_id, write.new_member_id))
        reschedule_heartbeat(ctx, group, old, now_ms)
        answer = join_response(
            version,
            error_code=map_append_error(error),
            member_id="",
            generation_id=group.generation_id,
            protocol_name=group.protocol_name,
            protocol_type=group.protocol_type,
            leader=write.leader_before or "",
        )
    elif version >= SKIP_ASSIGNMENT_VERSION:
        is_leader = group.leader_id == member.member_id
        answer = generation_answer(
            group, member.member_id, version, leader_view=is_leader, skip_assignment=is_leader
        )
    else:
        answer = generation_answer(
            group, member.member_id, version, leader_view=False, leader=write.leader_before
        )
    ctx.answer(write.waiter, answer)
