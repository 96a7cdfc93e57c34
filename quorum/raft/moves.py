"""Applying transitions: timers, persistence and what each new state does first.

``quorum.raft.transitions`` decides whether a move is legal; this module
computes the new state's deadlines, records the election state to persist,
forgets requests sent in the old state, answers the parked fetches of a
leader that steps down, and performs the first actions of the new state (a
new leader appends its LeaderChange record).
"""

from __future__ import annotations

from quorum.raft import adapters
from quorum.raft.context import CoreContext
from quorum.raft.leadership import Leadership
from quorum.raft.rpc import ErrorCode, FetchAnswer
from quorum.raft.states import (
    Candidate,
    Follower,
    Leader,
    Prospective,
    Resigned,
    State,
    Unattached,
)
from quorum.raft.transitions import (
    enter_prospective,
    enter_resigned,
    transition_to_candidate,
    transition_to_follower,
    transition_to_leader,
    transition_to_unattached,
)
from quorum.wire.control import build_leader_change_batch

__all__ = [
    "become_candidate",
    "become_follower",
    "become_leader",
    "become_prospective",
    "become_resigned",
    "become_unattached",
    "maybe_transition",
]


def _enter(ctx: CoreContext, state: State) -> None:
    old = ctx.state
    ctx.state = state
    ctx.requests.reset()
    if isinstance(old, Leader) and old is not state:
        _fail_parked_fetches(ctx, old)


def _fail_parked_fetches(ctx: CoreContext, old: Leader) -> None:
    parked = list(old.leadership.parked.values())
    old.leadership.parked.clear()
    for fetch in parked:
        answer = FetchAnswer(
            partition_error=ErrorCode.NOT_LEADER_OR_FOLLOWER,
            leader_id=-1 if ctx.leader_id is None else ctx.leader_id,
            leader_epoch=ctx.epoch,
        )
        ctx.reply(fetch.handle, adapters.fetch_response(answer))


def become_unattached(
    ctx: CoreContext,
    now_ms: int,
    *,
    epoch: int,
    leader_id: int | None = None,
    voted_id: int | None = None,
) -> None:
    current = ctx.state
    # Casting a vote restarts the election timer; a lost pre-vote or a higher
    # epoch draws a fresh one too (Kafka keeps a candidate's remaining time,
    # a detail that only shifts when the next pre-vote starts).
    move = transition_to_unattached(
        current,
        members=ctx.members,
        epoch=epoch,
        leader_id=leader_id,
        voted_id=voted_id,
        election_deadline_ms=ctx.election_deadline(now_ms),
    )
    _enter(ctx, move.state)
    ctx.persist(move.persist)


def become_follower(ctx: CoreContext, now_ms: int, *, epoch: int, leader_id: int) -> None:
    move = transition_to_follower(
        ctx.state,
        members=ctx.members,
        epoch=epoch,
        leader_id=leader_id,
        fetch_deadline_ms=ctx.fetch_deadline(now_ms),
    )
    _enter(ctx, move.state)
    ctx.persist(move.persist)


def become_prospective(ctx: CoreContext, now_ms: int) -> None:
    state = enter_prospective(
        ctx.state, members=ctx.members, election_deadline_ms=ctx.election_deadline(now_ms)
    )
    _enter(ctx, state)
    if state.tally.is_won:  # the only voter: no one to ask
        become_candidate(ctx, now_ms)


def become_candidate(ctx: CoreContext, now_ms: int) -> None:
    move = transition_to_candidate(
        ctx.state, members=ctx.members, election_deadline_ms=ctx.election_deadline(now_ms)
    )
    _enter(ctx, move.state)
    ctx.persist(move.persist)
    if move.state.tally.is_won:
        become_leader(ctx, now_ms)


def become_leader(ctx: CoreContext, now_ms: int) -> None:
    candidate = ctx.state
    assert isinstance(candidate, Candidate)
    epoch_start = ctx.log.log_end_offset
    leadership = Leadership(
        local_id=ctx.local_id,
        voters=ctx.members.voters,
        epoch_start_offset=epoch_start,
        now_ms=now_ms,
        config=ctx.config,
    )
    leadership.local_flushed_offset = ctx.log.flushed_offset
    move = transition_to_leader(
        candidate, members=ctx.members, epoch_start_offset=epoch_start, leadership=leadership
    )
    _enter(ctx, move.state)
    ctx.persist(move.persist)
    # The first record of every epoch: nothing is committed in this epoch
    # (and no high watermark exposed) until a majority has it.
    batch = build_leader_change_batch(
        ctx.local_id,
        sorted(ctx.members.voters),
        sorted(candidate.tally.granted),
        move.state.epoch,
        epoch_start,
        now_ms,
    )
    ctx.log.append(batch, epoch=move.state.epoch)
    ctx.outbox.flush_log = True


def become_resigned(ctx: CoreContext, now_ms: int) -> None:
    leader = ctx.state
    assert isinstance(leader, Leader)
    state = enter_resigned(
        leader,
        members=ctx.members,
        election_deadline_ms=ctx.election_deadline(now_ms),
        preferred_successors=leader.leadership.successors(),
    )
    _enter(ctx, state)


def _epoch_leader(ctx: CoreContext) -> int | None:
    """Who leads the current epoch as far as this node knows (itself if it led)."""
    state = ctx.state
    if isinstance(state, Leader | Resigned):
        return ctx.local_id
    return state.leader_id if isinstance(state, Unattached | Prospective | Follower) else None


def maybe_transition(ctx: CoreContext, now_ms: int, *, leader_id: int, epoch: int) -> None:
    """Follow what a peer says about ``epoch`` and its leader (-1: unknown)."""
    followable = leader_id >= 0 and leader_id != ctx.local_id and leader_id in ctx.members.voters
    if epoch > ctx.epoch:
        if followable:
            become_follower(ctx, now_ms, epoch=epoch, leader_id=leader_id)
        else:
            become_unattached(ctx, now_ms, epoch=epoch)
        return
    if epoch < ctx.epoch or leader_id < 0:
        return
    known = _epoch_leader(ctx)
    assert known in (None, leader_id), (
        f"node {leader_id} and node {known} both lead epoch {epoch}: an epoch has one leader"
    )
    if known is None and followable:
        become_follower(ctx, now_ms, epoch=epoch, leader_id=leader_id)
