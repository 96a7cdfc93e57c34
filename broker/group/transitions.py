"""The transition table of a classic group: every state change goes through here.

===================  =====================================================================
from                 to (when)
===================  =====================================================================
Empty                PreparingRebalance  - a first member joins
                     Dead                - deleted, expired with no offsets, or unloaded
PreparingRebalance   CompletingRebalance - the join phase ends with members (new generation)
                     Empty               - the join phase ends with no member left
                     Dead                - unloaded
CompletingRebalance  PreparingRebalance  - a member joins, leaves, changes or expires, or
                                           storing the leader's assignment failed
                     Stable              - the leader's assignment is committed to the log
                     Dead                - unloaded
Stable               PreparingRebalance  - a member joins, leaves, changes or expires, or
                                           the leader rejoins
                     Dead                - unloaded
Dead                 Dead                - unloaded again (no-op)
===================  =====================================================================

These are Kafka's ``ClassicGroupState`` valid previous states.  A group is
created Empty (or, loaded from the log with members, Stable): that is its
initial state, not a transition.  An illegal move raises
``IllegalGroupTransitionError`` naming the group, from and to.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from broker.group.errors import IllegalGroupTransitionError
from broker.group.states import (
    CompletingRebalance,
    Dead,
    Empty,
    GroupState,
    PreparingRebalance,
    Stable,
)

__all__ = [
    "ALLOWED",
    "Move",
    "transition_to_completing_rebalance",
    "transition_to_dead",
    "transition_to_empty",
    "transition_to_preparing_rebalance",
    "transition_to_stable",
]

StateClass = (
    type[Empty] | type[PreparingRebalance] | type[CompletingRebalance] | type[Stable] | type[Dead]
)

# target -> the states it may be entered from
ALLOWED: Final[dict[StateClass, frozenset[StateClass]]] = {
    Empty: frozenset({PreparingRebalance}),
    PreparingRebalance: frozenset({Empty, CompletingRebalance, Stable}),
    CompletingRebalance: frozenset({PreparingRebalance}),
    Stable: frozenset({CompletingRebalance}),
    Dead: frozenset({Empty, PreparingRebalance, CompletingRebalance, Stable, Dead}),
}

# Every transition_to_* function: (group id, current state, now_ms) -> new state.
Move = Callable[[str, GroupState, int], GroupState]


def _require(group_id: str, current: GroupState, target: StateClass) -> None:
    if type(current) not in ALLOWED[target]:
        raise IllegalGroupTransitionError(group_id, current.NAME, target.NAME)


def transition_to_preparing_rebalance(
    group_id: str, current: GroupState, now_ms: int
) -> PreparingRebalance:
    _require(group_id, current, PreparingRebalance)
    return PreparingRebalance(now_ms, initial=isinstance(current, Empty))


def transition_to_completing_rebalance(
    group_id: str, current: GroupState, now_ms: int
) -> CompletingRebalance:
    _require(group_id, current, CompletingRebalance)
    return CompletingRebalance(now_ms)


def transition_to_stable(group_id: str, current: GroupState, now_ms: int) -> Stable:
    _require(group_id, current, Stable)
    return Stable(now_ms)


def transition_to_empty(group_id: str, current: GroupState, now_ms: int) -> Empty:
    _require(group_id, current, Empty)
    return Empty(now_ms)


def transition_to_dead(group_id: str, current: GroupState, now_ms: int) -> Dead:
    _require(group_id, current, Dead)
    return Dead(now_ms) if not isinstance(current, Dead) else current
