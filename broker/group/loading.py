"""Taking over and giving up ``__consumer_offsets`` partitions.

A new leader of an offsets partition replays the partition's records (every
record in its log, up to its log end offset: records the old leader
appended will commit under the new one) before it answers for the
partition's groups; until ``finish_load`` their requests get
COORDINATOR_LOAD_IN_PROGRESS.  Replay folds the records in log order:
offsets by (group, topic, partition), groups by id, a tombstone deletes.
A loaded group with members comes back Stable with fresh sessions (Kafka's
``onLoaded``); one with more members than ``group.max.size`` rebalances.
"""

from __future__ import annotations

from collections.abc import Iterable

from broker.group import transitions
from broker.group.context import Context
from broker.group.group import ClassicGroup, Member
from broker.group.offsets import expire_offsets
from broker.group.rebalance import join_response, prepare_rebalance, reschedule_heartbeat
from broker.group.records import (
    GroupMetadataReplay,
    OffsetCommitReplay,
    decode_offsets_record,
    group_tombstone,
    offset_tombstone,
)
from broker.group.states import Empty, Stable
from broker.group.timers import RetentionTimer
from broker.group.writes import TombstoneWrite
from quorum.wire.error_codes import Errors
from quorum.wire.messages import SyncGroupResponse

__all__ = ["begin_load", "finish_load", "on_retention_timer", "replay_records", "unload"]

RecordBytes = tuple[bytes | memoryview, bytes | memoryview | None]


def _groups_of(ctx: Context, partition: int) -> list[ClassicGroup]:
    return [g for g in ctx.groups.values() if ctx.partition_for(g.group_id) == partition]


def begin_load(ctx: Context, partition: int, now_ms: int) -> None:
    unload(ctx, partition, now_ms)
    ctx.loading.add(partition)


def replay_records(ctx: Context, partition: int, records: Iterable[RecordBytes], now_ms: int) -> None:
    assert partition in ctx.loading, f"replay into partition {partition}, which is not loading"
    for key, value in records:
        replayed = decode_offsets_record(key, value)
        if isinstance(replayed, OffsetCommitReplay):
            okey = (replayed.group_id, replayed.topic, replayed.partition)
            ctx.apply_offset(okey, replayed.offset)
            if replayed.offset is not None:
                ctx.get_or_create_group(replayed.group_id, now_ms)  # a simple group at least
        elif replayed.deleted:
            ctx.groups.pop(replayed.group_id, None)
        else:
            ctx.groups[replayed.group_id] = _loaded_group(replayed, now_ms)


def _loaded_group(replayed: GroupMetadataReplay, now_ms: int) -> ClassicGroup:
    since = replayed.current_state_timestamp_ms if replayed.current_state_timestamp_ms >= 0 else now_ms
    group = ClassicGroup(
        group_id=replayed.group_id,
        state=Stable(since) if replayed.members else Empty(since),
        generation_id=replayed.generation_id,
        protocol_type=replayed.protocol_type or None,
        protocol_name=replayed.protocol_name,
    )
    protocol = replayed.protocol_name or ""
    for stored in replayed.members:
        group.add(Member(
            member_id=stored.member_id,
            group_instance_id=stored.group_instance_id,
            client_id=stored.client_id,
            client_host=stored.client_host,
            rebalance_timeout_ms=stored.rebalance_timeout_ms,
            session_timeout_ms=stored.session_timeout_ms,
            protocol_type=replayed.protocol_type,
            protocols=((protocol, stored.subscription),),
            assignment=stored.assignment,
        ))
    group.leader_id = replayed.leader_id if replayed.leader_id in group.members else group.leader_id
    group.protocol_type = replayed.protocol_type or None
    group.subscribed_topics = group.compute_subscribed_topics()
    return group


def finish_load(ctx: Context, partition: int, now_ms: int) -> None:
    ctx.loading.discard(partition)
    ctx.owned.add(partition)
    for group in _groups_of(ctx, partition):
        for member in group.members.values():
            reschedule_heartbeat(ctx, group, member, now_ms)
        if len(group.members) > ctx.config.max_size:
            prepare_rebalance(ctx, group, now_ms)
    interval = ctx.config.offsets_retention_check_interval_ms
    ctx.timers.schedule(RetentionTimer(partition), now_ms + interval)


def unload(ctx: Context, partition: int, now_ms: int) -> None:
    """Forget the partition's groups and offsets; parked requests get NOT_COORDINATOR."""
    for group in _groups_of(ctx, partition):
        for member in group.members.values():
            if member.join_waiter is not None:
                answer = join_response(
                    member.join_waiter.version, error_code=Errors.NOT_COORDINATOR,
                    member_id=member.member_id,
                )
                ctx.answer(member.join_waiter, answer)
                member.join_waiter = None
            if member.sync_waiter is not None:
                ctx.answer(member.sync_waiter, SyncGroupResponse(error_code=Errors.NOT_COORDINATOR))
                member.sync_waiter = None
        group.transition(transitions.transition_to_dead, now_ms)
        del ctx.groups[group.group_id]
    for group_id in [g for g in ctx.offsets if ctx.partition_for(g) == partition]:
        del ctx.offsets[group_id]
    ctx.owned.discard(partition)
    ctx.loading.discard(partition)
    ctx.timers.cancel(RetentionTimer(partition))


def on_retention_timer(ctx: Context, partition: int, now_ms: int) -> None:
    """Kafka's cleanupGroupMetadata: expire offsets, then delete Empty groups left with none."""
    if partition not in ctx.owned:
        return
    records, keys = [], []
    for group in _groups_of(ctx, partition):
        expired, none_left = expire_offsets(ctx, group, now_ms)
        keys += expired
        records += [offset_tombstone(*k) for k in expired]
        if none_left and group.is_in(Empty):
            group.transition(transitions.transition_to_dead, now_ms)
            del ctx.groups[group.group_id]
            records.append(group_tombstone(group.group_id))
    if records:
        ctx.append(partition, records, TombstoneWrite(waiter=None, response=None, keys=tuple(keys)))
    interval = ctx.config.offsets_retention_check_interval_ms
    ctx.timers.schedule(RetentionTimer(partition), now_ms + interval)
