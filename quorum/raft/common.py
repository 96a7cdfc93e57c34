"""Rules shared by every RPC: response handling (kraft-facts 1.1) and epoch checks."""

from __future__ import annotations

from quorum.raft.context import CoreContext
from quorum.raft.moves import maybe_transition
from quorum.raft.rpc import ErrorCode
from quorum.raft.states import Leader

__all__ = ["handle_common_response", "leader_only_error"]

_IGNORED = frozenset({ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.INVALID_VOTER_KEY})
_BACK_OFF = frozenset(
    {ErrorCode.BROKER_NOT_AVAILABLE, ErrorCode.INCONSISTENT_CLUSTER_ID, ErrorCode.UNKNOWN_SERVER_ERROR}
)


def handle_common_response(
    ctx: CoreContext,
    source: int,
    now_ms: int,
    *,
    error: int,
    leader_id: int,
    epoch: int,
) -> bool:
    """Apply what any response says about epochs and leaders; True if nothing is left to do.

    ``error`` is the top-level error if set, else the partition error.
    """
    assert error != ErrorCode.INVALID_REQUEST, (
        f"node {source} called our request invalid: a bug in how this node builds requests"
    )
    assert error != ErrorCode.CLUSTER_AUTHORIZATION_FAILED, (
        f"node {source} refuses this node's requests: it is not authorized on the cluster"
    )
    if error in _BACK_OFF or epoch < 0:
        # a top-level error carries no epoch: try again later
        ctx.requests.back_off(source, now_ms)
        return True
    if error in _IGNORED or epoch < ctx.epoch:
        return True  # an answer from an older epoch says nothing new
    before = ctx.state
    if epoch > ctx.epoch:
        maybe_transition(ctx, now_ms, leader_id=leader_id, epoch=epoch)
        return True
    if error != ErrorCode.NONE:
        if error in (ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.NOT_LEADER_OR_FOLLOWER):
            maybe_transition(ctx, now_ms, leader_id=leader_id, epoch=epoch)
        ctx.requests.back_off(source, now_ms)
        return True
    maybe_transition(ctx, now_ms, leader_id=leader_id, epoch=epoch)
    return ctx.state is not before


def leader_only_error(ctx: CoreContext, request_epoch: int) -> ErrorCode | None:
    """Kafka's checks for a request only the leader serves (Fetch, FetchSnapshot)."""
    if request_epoch < ctx.epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    if request_epoch > ctx.epoch:
        return ErrorCode.UNKNOWN_LEADER_EPOCH
    if not isinstance(ctx.state, Leader):
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    return None
