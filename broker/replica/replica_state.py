"""A follower as its leader sees it: end offset and timing, from its fetches.

Kafka's ``ReplicaState`` (``core/.../cluster/Replica.scala``). The follower's
log end offset is its fetch offset: a fetch at offset N (that did not
diverge) says its log matches the leader's below N.

``last_caught_up_ms`` is the latest time at which the follower had everything
the leader had: the time of this fetch when it asked from the leader's end
offset, else the time of its previous fetch when it asked from the end
offset the leader had then (so a follower that always trails a busy leader by
one fetch still counts as caught up).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping, Sequence

import attrs

__all__ = [
    "NEVER_MS",
    "UNKNOWN_OFFSET",
    "FollowerStates",
    "ReplicaState",
    "follower_states",
    "reset_replica_state",
    "shared_state",
    "update_fetch_state",
]

UNKNOWN_OFFSET = -1
# "never", as a time: Kafka writes 0, which is long ago on a wall clock but not on a
# monotonic clock that starts near 0 (a follower outside the ISR would count as caught
# up, and hold the high watermark back, for the first replica.lag.time.max.ms)
NEVER_MS = -(2**62)


@attrs.frozen(kw_only=True)
class ReplicaState:
    log_start_offset: int = UNKNOWN_OFFSET
    log_end_offset: int = UNKNOWN_OFFSET
    # the leader's end offset when this follower last fetched
    last_fetch_leader_end_offset: int = 0
    last_fetch_ms: int = NEVER_MS
    last_caught_up_ms: int = NEVER_MS


def update_fetch_state(
    state: ReplicaState,
    *,
    fetch_offset: int,
    log_start_offset: int,
    fetch_ms: int,
    leader_end_offset: int,
) -> ReplicaState:
    """After a follower fetch that read (no diverging epoch)."""
    if fetch_offset >= leader_end_offset:
        caught_up = max(state.last_caught_up_ms, fetch_ms)
    elif fetch_offset >= state.last_fetch_leader_end_offset:
        caught_up = max(state.last_caught_up_ms, state.last_fetch_ms)
    else:
        caught_up = state.last_caught_up_ms
    return shared_state(
        log_start_offset,
        fetch_offset,
        max(leader_end_offset, state.last_fetch_leader_end_offset),
        fetch_ms,
        caught_up,
    )


# States repeat: every idle partition that joins a follower's session in one fetch gets
# the same one (offsets 0, that fetch's time). One object per distinct state recently made
# instead of one per follower of each partition (80 B each, two per led partition at RF 3).
@functools.lru_cache(maxsize=4096)
def shared_state(
    log_start_offset: int,
    log_end_offset: int,
    last_fetch_leader_end_offset: int,
    last_fetch_ms: int,
    last_caught_up_ms: int,
) -> ReplicaState:
    """A ``ReplicaState`` of these values, the same object as a recent equal one."""
    return ReplicaState(
        log_start_offset=log_start_offset,
        log_end_offset=log_end_offset,
        last_fetch_leader_end_offset=last_fetch_leader_end_offset,
        last_fetch_ms=last_fetch_ms,
        last_caught_up_ms=last_caught_up_ms,
    )


def reset_replica_state(
    state: ReplicaState,
    *,
    now_ms: int,
    leader_end_offset: int,
    is_new_leader: bool,
    in_isr: bool,
) -> ReplicaState:
    """When this broker starts a leader epoch (Kafka's resetReplicaState).

    An ISR member counts as caught up now, others as never, so an out-of-sync
    follower does not hold the new leader's high watermark back. A broker that
    was not leading forgets what it knew of the follower's end offset: only a
    fetch in this epoch tells it.
    """
    caught_up = now_ms if in_isr else NEVER_MS
    if is_new_leader:
        return shared_state(UNKNOWN_OFFSET, UNKNOWN_OFFSET, UNKNOWN_OFFSET, NEVER_MS, caught_up)
    return shared_state(
        state.log_start_offset,
        state.log_end_offset,
        leader_end_offset,
        now_ms if in_isr else NEVER_MS,
        caught_up,
    )


class FollowerStates(Mapping[int, ReplicaState]):
    """A leader's followers (replica id -> state): the ids and a list of states.

    A dict of two entries costs 224 B; this costs about 100, and the ids tuple is
    shared by every partition with the same followers. A state may be replaced
    (``followers[r] = ...``) but no follower added or removed: a new replica set
    makes a new ``FollowerStates``.
    """

    __slots__ = ("_ids", "_states")

    def __init__(self, ids: tuple[int, ...], states: Sequence[ReplicaState]) -> None:
        assert len(ids) == len(states)
        self._ids = ids
        # a tuple, replaced on a write: one allocation (a list is two)
        self._states = tuple(states)

    def __getitem__(self, replica_id: int) -> ReplicaState:
        try:
            return self._states[self._ids.index(replica_id)]
        except ValueError:
            raise KeyError(replica_id) from None

    def __setitem__(self, replica_id: int, state: ReplicaState) -> None:
        try:
            position = self._ids.index(replica_id)
        except ValueError:
            raise KeyError(replica_id) from None
        states = self._states
        self._states = (*states[:position], state, *states[position + 1:])

    def get(self, replica_id: int, default: ReplicaState | None = None) -> ReplicaState | None:  # type: ignore[override]
        ids = self._ids
        return self._states[ids.index(replica_id)] if replica_id in ids else default

    def __contains__(self, replica_id: object) -> bool:
        return replica_id in self._ids

    def __iter__(self) -> Iterator[int]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)

    def __repr__(self) -> str:
        return f"FollowerStates({dict(zip(self._ids, self._states, strict=True))!r})"


NO_FOLLOWERS = FollowerStates((), ())


def follower_states(ids: tuple[int, ...], states: Sequence[ReplicaState]) -> FollowerStates:
    """``FollowerStates(ids, states)``; the shared empty one when there are no followers."""
    return FollowerStates(ids, states) if ids else NO_FOLLOWERS
