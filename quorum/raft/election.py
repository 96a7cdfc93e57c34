"""Elections: answering Vote requests, asking for (pre-)votes, counting answers.

Grant rules for a request in our epoch (kraft-facts 2.5):

==============================  ==========================  =========================
local state                     standard vote               pre-vote
==============================  ==========================  =========================
Unattached/Prospective, free    log up to date (persisted)  log up to date
Unattached/Prospective, voted   same candidate again        log up to date
Unattached/Prospective, leader  reject                      log up to date
Follower                        reject                      not fetched yet, up to date
Candidate                       reject                      log up to date
Leader                          reject                      reject
Resigned                        reject                      log up to date
==============================  ==========================  =========================

A request from a higher epoch first moves this node to Unattached in that
epoch. An observer grants pre-votes by the same rule (its answer is not
counted) and never casts a standard vote. A follower that knows its leader
is gone and refuses a pre-vote because its own log is longer stands at once
(pykraft's addition to the ranked fast failover; docs/design.md).
"""

from __future__ import annotations

from quorum.raft import adapters
from quorum.raft.common import handle_common_response
from quorum.raft.context import CoreContext
from quorum.raft.moves import (
    become_candidate,
    become_follower,
    become_leader,
    become_unattached,
)
from quorum.raft.quorum_math import majority_size
from quorum.raft.rpc import ErrorCode, VoteAnswer, VoteAsk
from quorum.raft.states import Candidate, Follower, Leader, Prospective, Unattached

__all__ = [
    "handle_vote_request",
    "handle_vote_response",
    "lose_pre_vote",
    "send_vote_requests",
]


def _log_is_up_to_date(ctx: CoreContext, ask: VoteAsk) -> bool:
    ours = (ctx.log.last_fetched_epoch, ctx.log.log_end_offset)
    return (ask.last_offset_epoch, ask.last_offset) >= ours


def _may_grant(ctx: CoreContext, ask: VoteAsk) -> bool:
    state = ctx.state
    if isinstance(state, Leader):
        return False
    if ask.pre_vote:
        if isinstance(state, Follower) and state.has_fetched:
            return False
        return _log_is_up_to_date(ctx, ask)
    if not ctx.members.is_voter or not isinstance(state, Unattached | Prospective):
        return False
    if state.leader_id is not None:
        return False
    if state.voted_id is not None:
        return state.voted_id == ask.replica_id
    return _log_is_up_to_date(ctx, ask)


def _invalid(ask: VoteAsk) -> bool:
    if ask.last_offset < 0 or ask.last_offset_epoch < 0:
        return True
    # a candidate's log cannot hold its own new epoch; a pre-vote's may reach it
    if ask.pre_vote:
        return ask.last_offset_epoch > ask.replica_epoch
    return ask.last_offset_epoch >= ask.replica_epoch


def handle_vote_request(ctx: CoreContext, ask: VoteAsk, now_ms: int) -> VoteAnswer:
    if not ctx.cluster_id_ok(ask.cluster_id):
        return VoteAnswer(error=ErrorCode.INCONSISTENT_CLUSTER_ID)
    if _invalid(ask) or ask.replica_id < 0:
        return _answer(ctx, ErrorCode.INVALID_REQUEST)
    if ask.replica_epoch < ctx.epoch:
        return _answer(ctx, ErrorCode.FENCED_LEADER_EPOCH)
    if ask.replica_epoch > ctx.epoch:
        become_unattached(ctx, now_ms, epoch=ask.replica_epoch)
    if ask.voter_id >= 0 and ask.voter_id != ctx.local_id:
        return _answer(ctx, ErrorCode.INVALID_VOTER_KEY)
    granted = _may_grant(ctx, ask)
    state = ctx.state
    if ask.pre_vote and not granted:
        _stand_if_longer_log_and_leader_gone(ctx, ask, now_ms)
    if granted and not ask.pre_vote:
        assert isinstance(state, Unattached | Prospective)
        if state.voted_id is None:
            # fsync before the vote response: a vote must survive a crash
            become_unattached(ctx, now_ms, epoch=ctx.epoch, voted_id=ask.replica_id)
        elif isinstance(state, Unattached):
            state.election_deadline_ms = ctx.election_deadline(now_ms)
    return _answer(ctx, ErrorCode.NONE, granted=granted)


def _stand_if_longer_log_and_leader_gone(ctx: CoreContext, ask: VoteAsk, now_ms: int) -> None:
    """A survivor of a lost leader refused a pre-vote for a log shorter than its own.

    If the candidate needs this survivor's vote (three or four voters), it
    cannot win; the survivors that refused it take its place in the ranked
    order: the first of the others stands now, the next one step later, and so
    on, so that they still do not all stand at once and split the vote. With
    five or more voters the other survivors may hold logs as short and elect
    it; standing now would race that election and could split the vote, so
    the order starts half a step later, which leaves it time to win.
    """
    state = ctx.state
    if not (isinstance(state, Follower) and state.leader_gone):
        return
    if _log_is_up_to_date(ctx, ask):
        return
    voters = ctx.members.voters
    others = sorted(voters - {state.leader_id, ask.replica_id})
    if ctx.local_id not in others:
        return
    step = ctx.config.fast_failover_step_ms
    turn_ms = now_ms + others.index(ctx.local_id) * step
    if len(voters - {state.leader_id, ctx.local_id}) >= majority_size(len(voters)):
        turn_ms += step // 2  # it may still win without us: give it time to, or the vote could split
    state.fetch_deadline_ms = min(state.fetch_deadline_ms, turn_ms)


def _answer(ctx: CoreContext, error: ErrorCode, *, granted: bool = False) -> VoteAnswer:
    leader = ctx.leader_id
    return VoteAnswer(
        partition_error=error,
        leader_id=-1 if leader is None else leader,
        leader_epoch=ctx.epoch,
        vote_granted=granted,
    )


def send_vote_requests(ctx: CoreContext, now_ms: int) -> None:
    """Ask every voter that has not answered and has no request in flight."""
    state = ctx.state
    if not isinstance(state, Prospective | Candidate):
        return
    pre_vote = isinstance(state, Prospective)
    for voter in sorted(state.tally.unrecorded):
        if not ctx.requests.can_send(voter, now_ms):
            continue
        ask = VoteAsk(
            cluster_id=ctx.cluster_id,
            voter_id=voter,
            replica_id=ctx.local_id,
            replica_epoch=state.epoch,
            last_offset_epoch=ctx.log.last_fetched_epoch,
            last_offset=ctx.log.log_end_offset,
            pre_vote=pre_vote,
        )
        ctx.send_request(voter, adapters.vote_request(ask), now_ms)


def handle_vote_response(ctx: CoreContext, source: int, answer: VoteAnswer, now_ms: int) -> None:
    error = answer.error or answer.partition_error
    if handle_common_response(
        ctx, source, now_ms, error=error, leader_id=answer.leader_id, epoch=answer.leader_epoch
    ):
        return
    state = ctx.state
    if not isinstance(state, Prospective | Candidate) or answer.leader_epoch != state.epoch:
        return
    state.tally.record(source, answer.vote_granted)
    if state.tally.is_won:
        if isinstance(state, Prospective):
            become_candidate(ctx, now_ms)
        else:
            become_leader(ctx, now_ms)
    elif state.tally.is_lost and isinstance(state, Prospective):
        lose_pre_vote(ctx, now_ms)
    # A Candidate that lost waits out its election timeout, then pre-votes again.


def lose_pre_vote(ctx: CoreContext, now_ms: int) -> None:
    """A pre-vote lost or timed out: back to the known leader, else Unattached."""
    state = ctx.state
    assert isinstance(state, Prospective)
    if state.leader_id is not None and state.leader_id in ctx.members.voters:
        become_follower(ctx, now_ms, epoch=state.epoch, leader_id=state.leader_id)
    else:
        become_unattached(ctx, now_ms, epoch=state.epoch, voted_id=state.voted_id)
