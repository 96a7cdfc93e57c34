"""OffsetCommit, OffsetFetch, OffsetDelete and offset expiry (Kafka's OffsetMetadataManager).

A commit's records are appended and its answer waits for them to commit;
its offsets enter ``Context.offsets`` only then (see ``context``).  A commit
with generation -1 and no member id is a simple consumer's (assign() with a
group.id) or an admin tool's: accepted while the group is Empty, creating
the group if needed, as Kafka does.
"""

from __future__ import annotations

from collections.abc import Iterable

from broker.group.context import Context, OffsetKey, map_append_error
from broker.group.group import ClassicGroup, Waiter
from broker.group.rebalance import reschedule_heartbeat
from broker.group.records import CommittedOffset, offset_commit_record, offset_tombstone
from broker.group.states import CompletingRebalance, Dead, Empty, PreparingRebalance, Stable
from broker.group.writes import CommitWrite, TombstoneWrite
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartition,
    OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic,
    OffsetFetchResponseTopics,
)

__all__ = [
    "expire_offsets",
    "handle_commit",
    "handle_fetch",
    "handle_offset_delete",
    "on_commit_write",
    "on_tombstone_write",
    "tombstones_for_group",
]

# OffsetCommit v9+: GROUP_ID_NOT_FOUND for an unknown group (ILLEGAL_GENERATION before)
GROUP_ID_NOT_FOUND_COMMIT_VERSION = 9
# OffsetCommit v2-4 carry a retention time; -1 means the broker's
RETENTION_VERSIONS = range(2, 5)
# OffsetFetch v8+ ask for several groups; v2+ have a top-level error code
BATCHED_FETCH_VERSION = 8
TOP_LEVEL_ERROR_FETCH_VERSION = 2


# -- OffsetCommit -------------------------------------------------------------


def _commit_answer(request: OffsetCommitRequest, error: Errors) -> OffsetCommitResponse:
    return OffsetCommitResponse(
        topics=tuple(
            OffsetCommitResponseTopic(
                name=t.name,
                partitions=tuple(
                    OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=error)
                    for p in t.partitions
                ),
            )
            for t in request.topics
        )
    )


def _validate_commit(group: ClassicGroup, request: OffsetCommitRequest) -> Errors:
    """Kafka's ClassicGroup.validateOffsetCommit (non-transactional)."""
    generation = request.generation_id_or_member_epoch
    if group.is_in(Dead):
        return Errors.COORDINATOR_NOT_AVAILABLE
    if generation < 0 and group.is_in(Empty):
        return Errors.NONE  # a simple consumer or an admin tool
    if generation >= 0 or request.member_id or request.group_instance_id is not None:
        error = group.validate_member(request.member_id, request.group_instance_id)
        if error != Errors.NONE:
            return error
        if generation != group.generation_id:
            return Errors.ILLEGAL_GENERATION
    elif not group.is_in(Empty):
        return Errors.UNKNOWN_MEMBER_ID
    if group.is_in(CompletingRebalance):
        return Errors.REBALANCE_IN_PROGRESS
    return Errors.NONE


def _commit_group(
    ctx: Context, request: OffsetCommitRequest, version: int, now_ms: int
) -> tuple[ClassicGroup | None, Errors]:
    group_id = request.group_id
    if not group_id:
        return None, Errors.INVALID_GROUP_ID
    refusal = ctx.coordinator_error(group_id)
    if refusal != Errors.NONE:
        return None, refusal
    group = ctx.groups.get(group_id)
    if group is None:
        if request.generation_id_or_member_epoch >= 0:
            if version >= GROUP_ID_NOT_FOUND_COMMIT_VERSION:
                return None, Errors.GROUP_ID_NOT_FOUND
            return None, Errors.ILLEGAL_GENERATION
        group = ctx.get_or_create_group(group_id, now_ms)
    return group, _validate_commit(group, request)


def handle_commit(ctx: Context, request: OffsetCommitRequest, waiter: Waiter, now_ms: int) -> None:
    group, error = _commit_group(ctx, request, waiter.version, now_ms)
    if group is None or error != Errors.NONE:
        ctx.answer(waiter, _commit_answer(request, error))
        return
    if group.is_in(Stable, PreparingRebalance):
        # a commit keeps a member's session alive, as a heartbeat does
        reschedule_heartbeat(ctx, group, group.members[request.member_id], now_ms)
    expire_ms = None
    if waiter.version in RETENTION_VERSIONS and request.retention_time_ms != -1:
        expire_ms = now_ms + request.retention_time_ms
    limit = ctx.config.offset_metadata_max_bytes
    topics, records, offsets = [], [], []
    for topic in request.topics:
        partitions = []
        for p in topic.partitions:
            if p.committed_metadata is not None and len(p.committed_metadata) > limit:
                partitions.append(OffsetCommitResponsePartition(
                    partition_index=p.partition_index, error_code=Errors.OFFSET_METADATA_TOO_LARGE
                ))
                continue
            committed = CommittedOffset(
                offset=p.committed_offset,
                leader_epoch=p.committed_leader_epoch,
                metadata=p.committed_metadata or "",
                commit_timestamp_ms=now_ms,
                expire_timestamp_ms=expire_ms,
            )
            key = (group.group_id, topic.name, p.partition_index)
            records.append(offset_commit_record(*key, committed))
            offsets.append((key, committed))
            partitions.append(OffsetCommitResponsePartition(partition_index=p.partition_index))
        topics.append(OffsetCommitResponseTopic(name=topic.name, partitions=tuple(partitions)))
    response = OffsetCommitResponse(topics=tuple(topics))
    if not records:
        ctx.answer(waiter, response)
        return
    for key, _ in offsets:
        ctx.pending_offset_writes[key] += 1
    write = CommitWrite(waiter=waiter, response=response, offsets=tuple(offsets))
    ctx.append(ctx.partition_for(group.group_id), records, write)


def _done_pending(ctx: Context, keys: Iterable[OffsetKey]) -> None:
    for key in keys:
        ctx.pending_offset_writes[key] -= 1
        if ctx.pending_offset_writes[key] <= 0:
            del ctx.pending_offset_writes[key]


def _still_owned(ctx: Context, group_id: str) -> bool:
    return ctx.partition_for(group_id) in ctx.owned


def on_commit_write(ctx: Context, write: CommitWrite, error: Errors | None, now_ms: int) -> None:
    _done_pending(ctx, (key for key, _ in write.offsets))
    response = write.response
    assert isinstance(response, OffsetCommitResponse)
    if error is None:
        for key, committed in write.offsets:
            if _still_owned(ctx, key[0]):
                ctx.apply_offset(key, committed)
        ctx.answer(write.waiter, response)
        return
    mapped = map_append_error(error, commit=True)
    failed = OffsetCommitResponse(
        topics=tuple(
            OffsetCommitResponseTopic(
                name=t.name,
                partitions=tuple(
                    OffsetCommitResponsePartition(
                        partition_index=p.partition_index,
                        error_code=p.error_code if p.error_code != Errors.NONE else mapped,
                    )
                    for p in t.partitions
                ),
            )
            for t in response.topics
        )
    )
    ctx.answer(write.waiter, failed)


# -- OffsetFetch --------------------------------------------------------------


def _fetch_group_error(ctx: Context, group_id: str) -> Errors:
    if not group_id:
        return Errors.INVALID_GROUP_ID
    return ctx.coordinator_error(group_id)


def _fetched(
    ctx: Context, group_id: str, asked: Iterable[tuple[str, Iterable[int]]] | None
) -> list[tuple[str, list[tuple[int, CommittedOffset | None]]]]:
    """(topic, [(partition, offset or None)]) for the asked topics, or for every offset."""
    group = ctx.groups.get(group_id)
    stored = {} if group is not None and group.is_in(Dead) else ctx.offsets.get(group_id, {})
    if asked is None:
        by_topic: dict[str, list[tuple[int, CommittedOffset | None]]] = {}
        for (topic, partition), committed in sorted(stored.items()):
            by_topic.setdefault(topic, []).append((partition, committed))
        return list(by_topic.items())
    return [(topic, [(p, stored.get((topic, p))) for p in partitions]) for topic, partitions in asked]


def handle_fetch(ctx: Context, request: OffsetFetchRequest, waiter: Waiter, now_ms: int) -> None:
    del now_ms
    if waiter.version >= BATCHED_FETCH_VERSION:
        groups = []
        for g in request.groups:
            error = _fetch_group_error(ctx, g.group_id)
            asked = None if g.topics is None else [(t.name, t.partition_indexes) for t in g.topics]
            found = [] if error != Errors.NONE else _fetched(ctx, g.group_id, asked)
            batched = tuple(
                OffsetFetchResponseTopics(
                    name=topic,
                    partitions=tuple(
                        OffsetFetchResponsePartitions(
                            partition_index=p,
                            committed_offset=-1 if c is None else c.offset,
                            committed_leader_epoch=-1 if c is None else c.leader_epoch,
                            metadata="" if c is None else c.metadata,
                        )
                        for p, c in partitions
                    ),
                )
                for topic, partitions in found
            )
            groups.append(
                OffsetFetchResponseGroup(group_id=g.group_id, topics=batched, error_code=error)
            )
        ctx.answer(waiter, OffsetFetchResponse(groups=tuple(groups)))
        return
    error = _fetch_group_error(ctx, request.group_id)
    asked = None if request.topics is None else [(t.name, t.partition_indexes) for t in request.topics]
    # v0-1 have no top-level error: each asked partition carries it
    per_partition = error if waiter.version < TOP_LEVEL_ERROR_FETCH_VERSION else Errors.NONE
    if error == Errors.NONE:
        found = _fetched(ctx, request.group_id, asked)
    elif per_partition != Errors.NONE and asked is not None:
        found = [(topic, [(p, None) for p in partitions]) for topic, partitions in asked]
    else:
        found = []
    topics = tuple(
        OffsetFetchResponseTopic(
            name=topic,
            partitions=tuple(
                OffsetFetchResponsePartition(
                    partition_index=p,
                    committed_offset=-1 if c is None else c.offset,
                    committed_leader_epoch=-1 if c is None else c.leader_epoch,
                    metadata="" if c is None else c.metadata,
                    error_code=per_partition,
                )
                for p, c in partitions
            ),
        )
        for topic, partitions in found
    )
    ctx.answer(waiter, OffsetFetchResponse(topics=topics, error_code=error))


# -- OffsetDelete and expiry ------------------------------------------------------


def _offset_delete_error(ctx: Context, group_id: str) -> tuple[ClassicGroup | None, Errors]:
    if not group_id:
        return None, Errors.INVALID_GROUP_ID
    refusal = ctx.coordinator_error(group_id)
    if refusal != Errors.NONE:
        return None, refusal
    group = ctx.groups.get(group_id)
    if group is None or group.is_in(Dead):
        return None, Errors.GROUP_ID_NOT_FOUND
    if not group.is_in(Empty) and not group.uses_consumer_protocol():
        return None, Errors.NON_EMPTY_GROUP
    return group, Errors.NONE


def _known_keys(ctx: Context, group_id: str) -> set[tuple[str, int]]:
    """Offsets committed or on their way (a tombstone must cover both)."""
    keys = set(ctx.offsets.get(group_id, {}))
    keys |= {(t, p) for (g, t, p) in ctx.pending_offset_writes if g == group_id}
    return keys


def handle_offset_delete(
    ctx: Context, request: OffsetDeleteRequest, waiter: Waiter, now_ms: int
) -> None:
    del now_ms
    group, error = _offset_delete_error(ctx, request.group_id)
    if group is None:
        ctx.answer(waiter, OffsetDeleteResponse(error_code=error))
        return
    known = _known_keys(ctx, group.group_id)
    topics, keys = [], []
    for topic in request.topics:
        refused = Errors.GROUP_SUBSCRIBED_TO_TOPIC if group.is_subscribed_to(topic.name) else None
        partitions = []
        for p in topic.partitions:
            partitions.append(OffsetDeleteResponsePartition(
                partition_index=p.partition_index, error_code=refused or Errors.NONE
            ))
            if refused is None and (topic.name, p.partition_index) in known:
                keys.append((group.group_id, topic.name, p.partition_index))
        topics.append(OffsetDeleteResponseTopic(name=topic.name, partitions=tuple(partitions)))
    response = OffsetDeleteResponse(topics=tuple(topics))
    if not keys:
        ctx.answer(waiter, response)
        return
    write = TombstoneWrite(waiter=waiter, response=response, keys=tuple(keys))
    ctx.append(ctx.partition_for(group.group_id), [offset_tombstone(*k) for k in keys], write)


def on_tombstone_write(ctx: Context, write: TombstoneWrite, error: Errors | None, now_ms: int) -> None:
    del now_ms
    if error is None:
        for key in write.keys:
            if _still_owned(ctx, key[0]):
                ctx.apply_offset(key, None)
    if write.waiter is None:
        return
    if error is None:
        ctx.answer(write.waiter, write.response)
    else:
        ctx.answer(write.waiter, OffsetDeleteResponse(error_code=map_append_error(error)))


def tombstones_for_group(ctx: Context, group_id: str) -> list[OffsetKey]:
    return [(group_id, t, p) for t, p in sorted(_known_keys(ctx, group_id))]


def _expiry_base(group: ClassicGroup, committed: CommittedOffset) -> int | None:
    """Kafka's offsetExpirationCondition: when an offset's retention starts, or None."""
    if group.protocol_type is None:
        return committed.commit_timestamp_ms  # a simple consumer's group
    if group.is_in(Empty):
        return group.state.since_ms
    return None  # members exist: their offsets stay (unsubscribed-topic expiry is not done)


def expire_offsets(ctx: Context, group: ClassicGroup, now_ms: int) -> tuple[list[OffsetKey], bool]:
    """Offsets of ``group`` past retention, and whether none would be left."""
    retention = ctx.config.offsets_retention_ms
    expired, kept = [], False
    for (topic, partition), committed in ctx.offsets.get(group.group_id, {}).items():
        key = (group.group_id, topic, partition)
        base = _expiry_base(group, committed)
        if base is None or key in ctx.pending_offset_writes:
            kept = True
        elif _is_expired(committed, base, now_ms, retention):
            expired.append(key)
        else:
            kept = True
    pending = any(g == group.group_id for g, _, _ in ctx.pending_offset_writes)
    return expired, not kept and not pending


def _is_expired(committed: CommittedOffset, base_ms: int, now_ms: int, retention_ms: int) -> bool:
    if committed.expire_timestamp_ms is not None:
        return now_ms >= committed.expire_timestamp_ms
    return now_ms - base_ms >= retention_ms
