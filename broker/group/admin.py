"""ListGroups, DescribeGroups and DeleteGroups, and the removal of dead groups."""

from __future__ import annotations

from broker.group import transitions
from broker.group.context import Context, map_append_error
from broker.group.group import ClassicGroup, Waiter
from broker.group.offsets import tombstones_for_group
from broker.group.records import group_tombstone, offset_tombstone
from broker.group.states import Dead, Empty, GroupState, Stable
from broker.group.writes import DeleteGroupsGather, DeleteGroupsWrite
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DeleteGroupsResponseDeletableGroupResult,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    DescribeGroupsResponseDescribedGroup,
    DescribeGroupsResponseDescribedGroupMember,
    ListGroupsRequest,
    ListGroupsResponse,
    ListGroupsResponseListedGroup,
)

__all__ = ["handle_delete_groups", "handle_describe_groups", "handle_list_groups", "on_delete_write"]

CLASSIC_GROUP_TYPE = "classic"
# DescribeGroups v6 (KIP-1043): an unknown group is GROUP_ID_NOT_FOUND, not a Dead group
GROUP_ID_NOT_FOUND_DESCRIBE_VERSION = 6
# Kafka answers a group whose authorized operations were not asked for with this
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)


def handle_list_groups(ctx: Context, request: ListGroupsRequest, waiter: Waiter) -> None:
    states = {s.lower() for s in request.states_filter}
    types = {t.lower() for t in request.types_filter}
    error = Errors.COORDINATOR_LOAD_IN_PROGRESS if ctx.loading else Errors.NONE
    listed = []
    if not types or CLASSIC_GROUP_TYPE in types:
        for group in sorted(ctx.groups.values(), key=lambda g: g.group_id):
            name = group.state.NAME
            if group.is_in(Dead) or (states and name.lower() not in states):
                continue
            listed.append(ListGroupsResponseListedGroup(
                group_id=group.group_id,
                protocol_type=group.protocol_type or "",
                group_state=name,
                group_type=CLASSIC_GROUP_TYPE,
            ))
    ctx.answer(waiter, ListGroupsResponse(error_code=error, groups=tuple(listed)))


def _described(group: ClassicGroup) -> DescribeGroupsResponseDescribedGroup:
    stable = group.is_in(Stable)
    protocol = group.protocol_name if stable else None
    members = tuple(
        DescribeGroupsResponseDescribedGroupMember(
            member_id=m.member_id,
            group_instance_id=m.group_instance_id,
            client_id=m.client_id,
            client_host=m.client_host,
            member_metadata=m.metadata(protocol) if protocol is not None else b"",
            member_assignment=m.assignment if stable else b"",
        )
        for m in group.members.values()
    )
    return DescribeGroupsResponseDescribedGroup(
        group_id=group.group_id,
        group_state=group.state.NAME,
        protocol_type=group.protocol_type or "",
        protocol_data=protocol or "",
        members=members,
        authorized_operations=AUTHORIZED_OPERATIONS_OMITTED,
    )


def handle_describe_groups(ctx: Context, request: DescribeGroupsRequest, waiter: Waiter) -> None:
    described = []
    for group_id in request.groups:
        error = Errors.INVALID_GROUP_ID if not group_id else ctx.coordinator_error(group_id)
        group = ctx.groups.get(group_id)
        if error != Errors.NONE:
            described.append(DescribeGroupsResponseDescribedGroup(group_id=group_id, error_code=error))
        elif group is not None and not group.is_in(Dead):
            described.append(_described(group))
        elif waiter.version >= GROUP_ID_NOT_FOUND_DESCRIBE_VERSION:
            described.append(DescribeGroupsResponseDescribedGroup(
                group_id=group_id,
                group_state=Dead.NAME,
                error_code=Errors.GROUP_ID_NOT_FOUND,
                error_message=f"Group {group_id} not found.",
            ))
        else:
            described.append(DescribeGroupsResponseDescribedGroup(
                group_id=group_id, group_state=Dead.NAME
            ))
    ctx.answer(waiter, DescribeGroupsResponse(groups=tuple(described)))


def _delete_error(ctx: Context, group_id: str) -> Errors:
    if not group_id:
        return Errors.INVALID_GROUP_ID
    refusal = ctx.coordinator_error(group_id)
    if refusal != Errors.NONE:
        return refusal
    group = ctx.groups.get(group_id)
    if group is None or group.is_in(Dead):
        return Errors.GROUP_ID_NOT_FOUND
    if not group.is_in(Empty):
        return Errors.NON_EMPTY_GROUP
    return Errors.NONE


def handle_delete_groups(
    ctx: Context, request: DeleteGroupsRequest, waiter: Waiter, now_ms: int
) -> None:
    """Delete Empty groups: tombstones for their offsets and metadata, answered once committed.

    The groups leave memory at once (a JoinGroup meanwhile starts a new
    group, whose records follow the tombstones in the log); their offsets
    go when the tombstones commit.  Groups on several partitions make one
    append per partition, and the answer waits for all of them.
    """
    results: list[tuple[str, int]] = []
    removed: dict[int, list[tuple[ClassicGroup, GroupState]]] = {}
    for group_id in request.groups_names:
        error = _delete_error(ctx, group_id)
        results.append((group_id, error))
        if error == Errors.NONE:
            group = ctx.groups.pop(group_id)
            before = group.state
            group.transition(transitions.transition_to_dead, now_ms)
            removed.setdefault(ctx.partition_for(group_id), []).append((group, before))
    if not removed:
        ctx.answer(waiter, _delete_answer(results))
        return
    gather = DeleteGroupsGather(waiter=waiter, results=results, outstanding=len(removed))
    for partition, groups in sorted(removed.items()):
        keys = [k for g, _ in groups for k in tombstones_for_group(ctx, g.group_id)]
        records = [offset_tombstone(*k) for k in keys]
        records += [group_tombstone(g.group_id) for g, _ in groups]
        write = DeleteGroupsWrite(gather=gather, removed=tuple(groups), keys=tuple(keys))
        ctx.append(partition, records, write)


def _delete_answer(results: list[tuple[str, int]]) -> DeleteGroupsResponse:
    return DeleteGroupsResponse(results=tuple(
        DeleteGroupsResponseDeletableGroupResult(group_id=g, error_code=e) for g, e in results
    ))


def on_delete_write(ctx: Context, write: DeleteGroupsWrite, error: Errors | None, now_ms: int) -> None:
    gather = write.gather
    if error is None:
        for key in write.keys:
            if ctx.partition_for(key[0]) in ctx.owned:
                ctx.apply_offset(key, None)
    else:
        # the tombstones did not commit: undo the removal (Kafka reverts its
        # timeline snapshot), unless a new group of that id was started meanwhile
        for group, before in write.removed:
            if group.group_id not in ctx.groups and ctx.partition_for(group.group_id) in ctx.owned:
                group.state = before
                ctx.groups[group.group_id] = group
        failed = {g.group_id for g, _ in write.removed}
        mapped = map_append_error(error)
        gather.results = [(g, mapped if g in failed and e == 0 else e) for g, e in gather.results]
    gather.outstanding -= 1
    if gather.outstanding == 0:
        ctx.answer(gather.waiter, _delete_answer(gather.results))
