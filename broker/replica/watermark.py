"""The high-watermark rule of a partition leader: pure arithmetic, no state.

Kafka's ``Partition.maybeIncrementLeaderHW`` and ``isFollowerInSync``:

* a follower counts toward the high watermark when it is in the maximal ISR
  (KIP-497: the committed ISR plus a replica being added; a replica being
  removed stays until the removal is committed), or when it is caught up and
  eligible to join the ISR (so a caught-up follower is not left behind while
  its addition is decided);
* the high watermark bound is the smallest log end offset among the leader
  and the followers that count; an unknown follower end offset (-1, no fetch
  in this leader epoch yet) holds it where it is;
* the leader never moves it back (``next_high_watermark``), and never moves
  it while the committed ISR is smaller than the effective min ISR;
* a follower may join the ISR once its end offset is at least the high
  watermark and at least the start offset of the leader's epoch (so that a
  follower elected later holds every record the leader committed).

invariant: the high watermark is at most the leader's log end offset.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

__all__ = [
    "FollowerProgress",
    "high_watermark_bound",
    "is_caught_up",
    "is_isr_candidate",
    "next_high_watermark",
]


@attrs.frozen(kw_only=True)
class FollowerProgress:
    """What the HW rule needs to know of one follower."""

    replica_id: int
    log_end_offset: int  # -1: unknown
    caught_up: bool
    eligible: bool  # registered, unfenced, not shutting down


def is_caught_up(
    *,
    replica_end_offset: int,
    leader_end_offset: int,
    last_caught_up_ms: int,
    now_ms: int,
    max_lag_ms: int,
) -> bool:
    """Kafka's ReplicaState.isCaughtUp: at the leader's end now, or lately enough."""
    return replica_end_offset == leader_end_offset or now_ms - last_caught_up_ms <= max_lag_ms


def is_isr_candidate(
    *, replica_end_offset: int, high_watermark: int, epoch_start_offset: int
) -> bool:
    """Kafka's isFollowerInSync: at the HW and inside the leader's epoch."""
    return replica_end_offset >= high_watermark and replica_end_offset >= epoch_start_offset


def high_watermark_bound(
    leader_end_offset: int,
    followers: Iterable[FollowerProgress],
    maximal_isr: frozenset[int],
) -> int:
    """The smallest end offset among the leader and the followers that count."""
    bound = leader_end_offset
    for follower in followers:
        counts = follower.replica_id in maximal_isr or (follower.caught_up and follower.eligible)
        if counts and follower.log_end_offset < bound:
            bound = follower.log_end_offset
    return bound


def next_high_watermark(
    current: int, bound: int, *, isr_size: int, effective_min_isr: int
) -> int | None:
    """The new high watermark, or None when it stays (never back, never under min ISR)."""
    if isr_size < effective_min_isr or bound <= current:
        return None
    return bound
