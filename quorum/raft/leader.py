"""The leader side: serving fetches (with long-poll parking), the high
watermark, appends, BeginQuorumEpoch, check quorum, resignation and
DescribeQuorum.

A fetch with nothing to return is parked for up to its max wait and
completed as soon as the log grows past its offset or it expires; parked
fetches are answered by the core itself, in the ``send`` of the ``Ready``
where that happens. A replica that was last told an older high watermark
is answered within ``high_watermark_notice_ms`` (at once if 0, as Kafka
does), which gives v17 fetchers the prompt commit notice KIP-1166 added to
v18; the short wait lets the news ride on the next records, so a lone
writer's commits cost each follower one fetch instead of two.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import attrs

from quorum.log.protocol import OffsetAndEpoch, metadata_end_offset_for_epoch
from quorum.raft import adapters
from quorum.raft.common import handle_common_response, leader_only_error
from quorum.raft.context import CoreContext
from quorum.raft.errors import NotLeaderError
from quorum.raft.leadership import Leadership, ParkedFetch
from quorum.raft.moves import become_resigned
from quorum.raft.output import OffsetRange
from quorum.raft.rpc import (
    BeginEpochAsk,
    DescribeQuorumAnswer,
    EndEpochAsk,
    EpochAnswer,
    ErrorCode,
    FetchAnswer,
    FetchAsk,
)
from quorum.raft.states import Leader, Resigned
from quorum.wire.records import build_batch_from_values

__all__ = [
    "describe_quorum",
    "expire_parked_fetches",
    "handle_end_epoch_response",
    "handle_fetch_request",
    "leader_flushed",
    "maybe_check_quorum",
    "maybe_drain",
    "propose",
    "send_begin_quorum_epoch",
    "send_end_quorum_epoch",
]


def _leadership(ctx: CoreContext) -> Leadership | None:
    state = ctx.state
    return state.leadership if isinstance(state, Leader) else None


def _invalid(ask: FetchAsk) -> bool:
    return (
        ask.max_wait_ms < 0
        or ask.fetch_offset < 0
        or ask.last_fetched_epoch < 0
        or ask.last_fetched_epoch > ask.current_leader_epoch
    )


def _error_answer(ctx: CoreContext, error: ErrorCode) -> FetchAnswer:
    leader = ctx.leader_id
    return FetchAnswer(
        partition_error=error, leader_id=-1 if leader is None else leader, leader_epoch=ctx.epoch
    )


def handle_fetch_request(
    ctx: CoreContext, handle: Hashable, ask: FetchAsk, now_ms: int
) -> FetchAnswer | None:
    """The answer to send now, or None when the fetch is parked."""
    if not ctx.cluster_id_ok(ask.cluster_id):
        return FetchAnswer(error=ErrorCode.INCONSISTENT_CLUSTER_ID)
    if _invalid(ask):
        return _error_answer(ctx, ErrorCode.INVALID_REQUEST)
    error = leader_only_error(ctx, ask.current_leader_epoch)
    lead = _leadership(ctx)
    if error is not None or lead is None:
        return _error_answer(ctx, error or ErrorCode.NOT_LEADER_OR_FOLLOWER)
    lead.note_voter_fetch(ask.replica_id, now_ms)
    mismatch = _validate_offset_and_epoch(ctx, ask)
    if mismatch is not None:
        return mismatch
    if lead.record_fetch(ask.replica_id, ask.fetch_offset, ctx.log.log_end_offset, now_ms):
        on_high_watermark_advanced(ctx, now_ms)
    answer = _read_answer(ctx, lead, ask)
    notice_ms = ctx.config.high_watermark_notice_ms
    owed = lead.owes_high_watermark(ask.replica_id)
    if len(answer.records) > 0 or ask.max_wait_ms == 0 or (owed and notice_ms == 0):
        lead.sent_high_watermark(ask.replica_id)
        return answer
    _park(ctx, lead, handle, ask, now_ms)  # answers an older fetch of the replica, if any
    if lead.owes_high_watermark(ask.replica_id):
        _answer_within(lead, handle, now_ms + notice_ms)
    return None


def _validate_offset_and_epoch(ctx: CoreContext, ask: FetchAsk) -> FetchAnswer | None:
    """A DivergingEpoch or SnapshotId answer if the fetcher's log is not a prefix of ours."""
    log = ctx.log
    offset, epoch = ask.fetch_offset, ask.last_fetched_epoch
    latest = log.latest_snapshot_id
    if offset == 0 and latest is not None and latest != OffsetAndEpoch(0, 0):
        return _snapshot_answer(ctx, latest)
    if log.log_start_offset == 0 and offset == 0:
        return None
    earliest = log.earliest_snapshot_id
    if earliest is not None and latest is not None and (
        offset < log.log_start_offset
        or (offset == log.log_start_offset and epoch != earliest.epoch)
        or epoch < earliest.epoch
    ):
        return _snapshot_answer(ctx, latest)
    end = metadata_end_offset_for_epoch(log, epoch)
    if end.epoch != epoch or end.offset < offset:
        answer = _base_answer(ctx)
        return FetchAnswer(
            high_watermark=answer.high_watermark,
            log_start_offset=answer.log_start_offset,
            leader_id=answer.leader_id,
            leader_epoch=answer.leader_epoch,
            diverging_epoch=end,
        )
    return None


def _base_answer(ctx: CoreContext) -> FetchAnswer:
    hw = ctx.state.high_watermark
    return FetchAnswer(
        high_watermark=-1 if hw is None else hw,
        log_start_offset=ctx.log.log_start_offset,
        leader_id=ctx.local_id,
        leader_epoch=ctx.epoch,
    )


def _snapshot_answer(ctx: CoreContext, snapshot: OffsetAndEpoch) -> FetchAnswer:
    base = _base_answer(ctx)
    return FetchAnswer(
        high_watermark=base.high_watermark,
        log_start_offset=base.log_start_offset,
        leader_id=base.leader_id,
        leader_epoch=base.leader_epoch,
        snapshot_id=snapshot,
    )


def _read_answer(ctx: CoreContext, lead: Leadership, ask: FetchAsk) -> FetchAnswer:
    base = _base_answer(ctx)
    records: bytes | memoryview = b""
    if ask.fetch_offset < ctx.log.log_end_offset:
        records = ctx.log.read(ask.fetch_offset, ask.max_bytes).records
    return FetchAnswer(
        high_watermark=base.high_watermark,
        log_start_offset=base.log_start_offset,
        leader_id=base.leader_id,
        leader_epoch=base.leader_epoch,
        records=records,
    )


def _park(ctx: CoreContext, lead: Leadership, handle: Hashable, ask: FetchAsk, now_ms: int) -> None:
    # One parked fetch per replica: an older one (from a dropped connection) is answered empty.
    if ask.replica_id >= 0:
        for older in [p for p in lead.parked.values() if p.ask.replica_id == ask.replica_id]:
            _complete(ctx, lead, older)
    lead.parked[handle] = ParkedFetch(handle=handle, ask=ask, deadline_ms=now_ms + ask.max_wait_ms)


def _answer_within(lead: Leadership, handle: Hashable, deadline_ms: int) -> None:
    """The parked fetch goes out by ``deadline_ms`` (sooner if records come)."""
    parked = lead.parked[handle]
    if deadline_ms < parked.deadline_ms:
        lead.parked[handle] = attrs.evolve(parked, deadline_ms=deadline_ms)


def _complete(ctx: CoreContext, lead: Leadership, parked: ParkedFetch) -> None:
    del lead.parked[parked.handle]
    lead.sent_high_watermark(parked.ask.replica_id)
    # the log start may have moved past the fetch offset while it waited (cleaning)
    answer = _validate_offset_and_epoch(ctx, parked.ask) or _read_answer(ctx, lead, parked.ask)
    ctx.reply(parked.handle, adapters.fetch_response(answer))


def on_high_watermark_advanced(ctx: CoreContext, now_ms: int) -> None:
    lead = _leadership(ctx)
    assert lead is not None
    notice_ms = ctx.config.high_watermark_notice_ms
    for parked in list(lead.parked.values()):
        if notice_ms == 0:
            _complete(ctx, lead, parked)
        else:  # the news waits a moment for records to ride along (RaftConfig)
            _answer_within(lead, parked.handle, now_ms + notice_ms)
    maybe_drain(ctx, now_ms)


def _on_append(ctx: CoreContext) -> None:
    lead = _leadership(ctx)
    assert lead is not None
    end = ctx.log.log_end_offset
    for parked in [p for p in lead.parked.values() if p.ask.fetch_offset < end]:
        _complete(ctx, lead, parked)


def expire_parked_fetches(ctx: CoreContext, now_ms: int) -> None:
    lead = _leadership(ctx)
    if lead is None:
        return
    for parked in [p for p in lead.parked.values() if p.deadline_ms <= now_ms]:
        _complete(ctx, lead, parked)


def leader_flushed(ctx: CoreContext, flushed_offset: int, now_ms: int) -> None:
    """The driver flushed the log; the leader's own offset now counts up to there."""
    lead = _leadership(ctx)
    if lead is None:
        return
    if lead.update_local_flushed(min(flushed_offset, ctx.log.log_end_offset)):
        on_high_watermark_advanced(ctx, now_ms)


def propose(
    ctx: CoreContext, payloads: Sequence[bytes], now_ms: int, epoch: int | None
) -> OffsetRange:
    state = ctx.state
    if not isinstance(state, Leader) or (epoch is not None and epoch != state.epoch):
        leader = ctx.leader_id
        raise NotLeaderError(
            f"node {ctx.local_id} cannot append: it is {type(state).__name__} in epoch "
            f"{ctx.epoch} (asked for epoch {epoch}); the leader is "
            f"{'unknown' if leader is None else f'node {leader}'}"
        )
    acc = state.leadership.accumulator
    first = ctx.log.log_end_offset + acc.pending_count
    acc.add(payloads, now_ms)
    maybe_drain(ctx, now_ms)
    return OffsetRange(first, first + len(payloads))


def maybe_drain(ctx: CoreContext, now_ms: int) -> None:
    """Append gathered proposals when nothing is in flight or the linger is over."""
    state = ctx.state
    if not isinstance(state, Leader):
        return
    lead = state.leadership
    hw = lead.high_watermark
    in_flight = hw is None or hw < ctx.log.log_end_offset
    if not lead.accumulator.is_due(now_ms, in_flight=in_flight):
        return
    for chunk in lead.accumulator.drain():
        batch = build_batch_from_values(
            chunk, timestamp=now_ms, partition_leader_epoch=state.epoch
        )
        ctx.log.append(batch, epoch=state.epoch)
    ctx.outbox.flush_log = True
    _on_append(ctx)


def send_begin_quorum_epoch(ctx: CoreContext, now_ms: int) -> None:
    """On election to every voter, then every half fetch timeout to silent ones."""
    lead = _leadership(ctx)
    if lead is None or now_ms < lead.begin_quorum_deadline_ms:
        return
    lead.begin_quorum_deadline_ms = now_ms + ctx.config.begin_quorum_interval_ms
    for voter in lead.silent_voters(now_ms):
        if ctx.requests.can_send(voter, now_ms):
            ask = BeginEpochAsk(
                cluster_id=ctx.cluster_id,
                voter_id=voter,
                leader_id=ctx.local_id,
                leader_epoch=ctx.epoch,
            )
            ctx.send_request(voter, adapters.begin_epoch_request(ask), now_ms)


def maybe_check_quorum(ctx: CoreContext, now_ms: int) -> None:
    """A leader not fetched from by a majority for 1.5 x fetch timeout resigns."""
    lead = _leadership(ctx)
    deadline = None if lead is None else lead.check_quorum_deadline_ms
    if deadline is not None and now_ms >= deadline:
        become_resigned(ctx, now_ms)


def send_end_quorum_epoch(ctx: CoreContext, now_ms: int) -> None:
    state = ctx.state
    if not isinstance(state, Resigned):
        return
    for voter in sorted(state.unacked_voters):
        if ctx.requests.can_send(voter, now_ms):
            ask = EndEpochAsk(
                cluster_id=ctx.cluster_id,
                leader_id=ctx.local_id,
                leader_epoch=state.epoch,
                preferred_successors=state.preferred_successors,
            )
            ctx.send_request(voter, adapters.end_epoch_request(ask), now_ms)


def handle_end_epoch_response(ctx: CoreContext, source: int, answer: EpochAnswer, now_ms: int) -> None:
    error = answer.error or answer.partition_error
    if handle_common_response(
        ctx, source, now_ms, error=error, leader_id=answer.leader_id, epoch=answer.leader_epoch
    ):
        return
    state = ctx.state
    if isinstance(state, Resigned):
        state.unacked_voters.discard(source)


def describe_quorum(ctx: CoreContext, now_ms: int) -> DescribeQuorumAnswer:
    lead = _leadership(ctx)
    if lead is None:
        leader = ctx.leader_id
        return DescribeQuorumAnswer(
            partition_error=ErrorCode.NOT_LEADER_OR_FOLLOWER,
            leader_id=-1 if leader is None else leader,
            leader_epoch=ctx.epoch,
        )
    voters, observers = lead.describe(ctx.log.log_end_offset, now_ms)
    hw = lead.high_watermark
    return DescribeQuorumAnswer(
        leader_id=ctx.local_id,
        leader_epoch=ctx.epoch,
        high_watermark=-1 if hw is None else hw,
        voters=tuple(voters),
        observers=tuple(observers),
    )
