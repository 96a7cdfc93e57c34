"""The five states of a classic group, one class each (Kafka's ClassicGroupState).

A state is a value: it records when the group entered it (Kafka's
``currentStateTimestamp``, which offset expiry of an Empty group counts
from) and what only that state needs.  Moves between states go through
``broker.group.transitions`` and nowhere else.
"""

from __future__ import annotations

from typing import ClassVar

import attrs

__all__ = [
    "CompletingRebalance",
    "Dead",
    "Empty",
    "GroupState",
    "PreparingRebalance",
    "Stable",
]


@attrs.frozen
class Empty:
    """No members; offsets may still be committed (simple consumers, admin tools)."""

    NAME: ClassVar[str] = "Empty"
    since_ms: int


@attrs.frozen
class PreparingRebalance:
    """Members are (re)joining; JoinGroup answers wait for the join phase to end.

    ``initial``: entered from Empty, so the join phase waits out
    ``group.initial.rebalance.delay.ms`` and never ends early.
    """

    NAME: ClassVar[str] = "PreparingRebalance"
    since_ms: int
    initial: bool = False


@attrs.frozen
class CompletingRebalance:
    """A generation is chosen; members wait in SyncGroup for the leader's assignment."""

    NAME: ClassVar[str] = "CompletingRebalance"
    since_ms: int


@attrs.frozen
class Stable:
    """Every member has its assignment for the current generation."""

    NAME: ClassVar[str] = "Stable"
    since_ms: int


@attrs.frozen
class Dead:
    """Deleted or unloaded: the group no longer lives on this coordinator."""

    NAME: ClassVar[str] = "Dead"
    since_ms: int


GroupState = Empty | PreparingRebalance | CompletingRebalance | Stable | Dead
