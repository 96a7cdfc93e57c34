"""The group transition table: the docstring is exactly what the functions allow."""

from __future__ import annotations

import pytest

from broker.group import IllegalGroupTransitionError, transitions
from broker.group.states import (
    CompletingRebalance,
    Dead,
    Empty,
    GroupState,
    PreparingRebalance,
    Stable,
)
from broker.group.transitions import (
    transition_to_completing_rebalance,
    transition_to_dead,
    transition_to_empty,
    transition_to_preparing_rebalance,
    transition_to_stable,
)

STATES = ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead")
SAMPLES: dict[str, GroupState] = {
    "Empty": Empty(1),
    "PreparingRebalance": PreparingRebalance(1),
    "CompletingRebalance": CompletingRebalance(1),
    "Stable": Stable(1),
    "Dead": Dead(1),
}
MOVES = {
    "Empty": transition_to_empty,
    "PreparingRebalance": transition_to_preparing_rebalance,
    "CompletingRebalance": transition_to_completing_rebalance,
    "Stable": transition_to_stable,
    "Dead": transition_to_dead,
}


def documented_moves() -> set[tuple[str, str]]:
    """(from, to) pairs of the table in the transitions module's docstring."""
    moves = set()
    source = None
    for line in (transitions.__doc__ or "").splitlines():
        if line[:21].strip() in STATES:
            source = line[:21].strip()
        words = line[21:].split()
        if source and words and words[0] in STATES:
            moves.add((source, words[0]))
    return moves


def allowed(source: str, target: str) -> bool:
    try:
        MOVES[target]("g", SAMPLES[source], 5)
    except IllegalGroupTransitionError:
        return False
    return True


def test_the_docstring_table_is_exactly_what_the_functions_allow() -> None:
    table = documented_moves()
    assert len(table) == 11
    assert {(s, t) for s in STATES for t in STATES if allowed(s, t)} == table


def test_the_table_is_kafkas_valid_previous_states() -> None:
    # ClassicGroupState's static block, target <- sources
    kafka = {
        "Empty": {"PreparingRebalance"},
        "PreparingRebalance": {"Stable", "CompletingRebalance", "Empty"},
        "CompletingRebalance": {"PreparingRebalance"},
        "Stable": {"CompletingRebalance"},
        "Dead": {"Stable", "PreparingRebalance", "CompletingRebalance", "Empty", "Dead"},
    }
    assert {(s, t) for t, sources in kafka.items() for s in sources} == documented_moves()


def test_an_illegal_move_names_the_group_from_and_to() -> None:
    with pytest.raises(IllegalGroupTransitionError) as info:
        transition_to_stable("orders", Empty(3), 5)
    assert "'orders'" in str(info.value) and "from Empty to Stable" in str(info.value)


def test_a_rebalance_from_empty_is_the_initial_one_and_records_when_it_began() -> None:
    state = transition_to_preparing_rebalance("g", Empty(1), 40)
    assert state == PreparingRebalance(40, initial=True)
    assert transition_to_preparing_rebalance("g", Stable(1), 50) == PreparingRebalance(50)


def test_dead_stays_dead_with_its_first_timestamp() -> None:
    assert transition_to_dead("g", Dead(3), 9) == Dead(3)
