"""The transition table: legal moves succeed, illegal ones say from, to and why."""

from __future__ import annotations

import pytest

from quorum.raft import transitions
from quorum.raft.config import RaftConfig
from quorum.raft.errors import IllegalTransitionError
from quorum.raft.leadership import Leadership
from quorum.raft.states import (
    Candidate,
    ElectionState,
    Follower,
    Leader,
    Prospective,
    Resigned,
    Unattached,
)
from quorum.raft.tally import VoteTally
from quorum.raft.transitions import (
    Durable,
    Membership,
    enter_prospective,
    enter_resigned,
    initial_state,
    transition_to_candidate,
    transition_to_follower,
    transition_to_leader,
    transition_to_unattached,
)

VOTER = Membership(1, frozenset({1, 2, 3}))
OBSERVER = Membership(9, frozenset({1, 2, 3}))


def unattached(epoch: int = 3, **kw: object) -> Unattached:
    return Unattached(epoch=epoch, election_deadline_ms=100, **kw)  # type: ignore[arg-type]


def prospective(epoch: int = 3, *, won: bool = False, leader_id: int | None = None) -> Prospective:
    tally = VoteTally.start(VOTER.voters, 1)
    if won:
        tally.record(2, True)
    return Prospective(epoch=epoch, tally=tally, election_deadline_ms=100, leader_id=leader_id)


def candidate(epoch: int = 4, *, won: bool = False) -> Candidate:
    tally = VoteTally.start(VOTER.voters, 1)
    if won:
        tally.record(3, True)
    return Candidate(epoch=epoch, local_id=1, tally=tally, election_deadline_ms=100)


def leader(epoch: int = 4) -> Leader:
    leadership = Leadership(
        local_id=1, voters=VOTER.voters, epoch_start_offset=0, now_ms=0, config=RaftConfig()
    )
    return Leader(epoch=epoch, local_id=1, epoch_start_offset=0, leadership=leadership)


def follower(epoch: int = 3, leader_id: int = 2) -> Follower:
    return Follower(epoch=epoch, leader_id=leader_id, fetch_deadline_ms=100)


def resigned(epoch: int = 4) -> Resigned:
    return Resigned(epoch=epoch, local_id=1, election_deadline_ms=100)


STATES = ("Unattached", "Prospective", "Candidate", "Leader", "Follower", "Resigned")


def documented_moves() -> set[tuple[str, str]]:
    """(from, to) pairs of the table in the transitions module's docstring."""
    moves = set()
    source = None
    for line in (transitions.__doc__ or "").splitlines():
        if line[:15].strip() in STATES:
            source = line[:15].strip()
        words = line[15:].split()
        if source and words and words[0] in STATES:
            moves.add((source, words[0]))
    return moves


def samples() -> dict[str, object]:
    return {
        "Unattached": unattached(4),
        "Prospective": prospective(4, won=True),
        "Candidate": candidate(4, won=True),
        "Leader": leader(4),
        "Follower": follower(4),
        "Resigned": resigned(4),
    }


def attempt(source: object, target: str) -> bool:
    """Try the most favourable move of ``source`` to ``target``; True if allowed."""
    moves = {
        "Unattached": lambda s: transition_to_unattached(
            s, members=VOTER, epoch=s.epoch + 1, election_deadline_ms=1
        ),
        "Prospective": lambda s: enter_prospective(s, members=VOTER, election_deadline_ms=1),
        "Candidate": lambda s: transition_to_candidate(s, members=VOTER, election_deadline_ms=1),
        "Leader": lambda s: transition_to_leader(
            s, members=VOTER, epoch_start_offset=0, leadership=leader().leadership
        ),
        "Follower": lambda s: transition_to_follower(
            s, members=VOTER, epoch=s.epoch + 1, leader_id=2, fetch_deadline_ms=1
        ),
        "Resigned": lambda s: enter_resigned(
            s, members=VOTER, election_deadline_ms=1, preferred_successors=()
        ),
    }
    try:
        moves[target](source)
    except IllegalTransitionError:
        return False
    return True


def test_the_docstring_table_is_exactly_what_the_functions_allow() -> None:
    table = documented_moves()
    assert len(table) >= 15
    allowed = {
        (name, target)
        for name, state in samples().items()
        for target in STATES
        if attempt(state, target)
    }
    assert allowed == table


def test_durable_transitions_return_the_election_state_to_persist() -> None:
    move = transition_to_follower(
        unattached(3, voted_id=2), members=VOTER, epoch=3, leader_id=2, fetch_deadline_ms=5
    )
    assert isinstance(move, Durable)
    assert move.persist == ElectionState(3, leader_id=2, voted_id=2)
    assert move.state.fetch_deadline_ms == 5


def test_memory_only_transitions_return_a_bare_state() -> None:
    state = enter_prospective(follower(), members=VOTER, election_deadline_ms=7)
    assert isinstance(state, Prospective)
    assert (state.epoch, state.leader_id) == (3, 2)
    assert enter_resigned(leader(), members=VOTER, election_deadline_ms=7, preferred_successors=(3, 2)).unacked_voters == {2, 3}


def test_a_higher_epoch_leads_every_state_to_unattached() -> None:
    for state in (unattached(), prospective(), candidate(), leader(), follower(), resigned()):
        move = transition_to_unattached(
            state, members=VOTER, epoch=state.epoch + 1, election_deadline_ms=9
        )
        assert move.persist == ElectionState(state.epoch + 1)


def test_epochs_never_decrease() -> None:
    with pytest.raises(IllegalTransitionError, match="epochs never decrease"):
        transition_to_unattached(follower(5), members=VOTER, epoch=4, election_deadline_ms=1)
    with pytest.raises(IllegalTransitionError, match="epochs never decrease"):
        transition_to_follower(unattached(5), members=VOTER, epoch=4, leader_id=2, fetch_deadline_ms=1)


def test_casting_a_vote_is_the_only_same_epoch_move_to_unattached() -> None:
    move = transition_to_unattached(
        unattached(3), members=VOTER, epoch=3, voted_id=2, election_deadline_ms=1
    )
    assert move.persist == ElectionState(3, voted_id=2)
    with pytest.raises(IllegalTransitionError) as info:
        transition_to_unattached(follower(3), members=VOTER, epoch=3, election_deadline_ms=1)
    message = str(info.value)
    assert "Follower" in message and "Unattached(epoch=3)" in message and "same epoch" in message


def test_a_lost_pre_vote_returns_to_unattached_keeping_epoch_and_vote() -> None:
    state = prospective(3)
    state.voted_id = 3
    move = transition_to_unattached(state, members=VOTER, epoch=3, voted_id=3, election_deadline_ms=1)
    assert move.persist == ElectionState(3, voted_id=3)


def test_only_a_prospective_with_a_majority_becomes_candidate() -> None:
    move = transition_to_candidate(prospective(3, won=True), members=VOTER, election_deadline_ms=1)
    assert move.state.epoch == 4
    assert move.persist == ElectionState(4, voted_id=1)
    with pytest.raises(IllegalTransitionError, match="majority of pre-votes"):
        transition_to_candidate(prospective(3), members=VOTER, election_deadline_ms=1)
    with pytest.raises(IllegalTransitionError, match="only a Prospective"):
        transition_to_candidate(unattached(3), members=VOTER, election_deadline_ms=1)


def test_only_a_candidate_with_a_majority_becomes_leader() -> None:
    lead = leader().leadership
    move = transition_to_leader(candidate(won=True), members=VOTER, epoch_start_offset=0, leadership=lead)
    assert move.persist == ElectionState(4, leader_id=1, voted_id=1)
    assert move.state.high_watermark is None
    with pytest.raises(IllegalTransitionError, match="majority of votes"):
        transition_to_leader(candidate(), members=VOTER, epoch_start_offset=0, leadership=lead)
    with pytest.raises(IllegalTransitionError, match="Candidate"):
        transition_to_leader(prospective(won=True), members=VOTER, epoch_start_offset=0, leadership=lead)


def test_a_leader_follows_only_a_higher_epoch() -> None:
    move = transition_to_follower(leader(4), members=VOTER, epoch=5, leader_id=2, fetch_deadline_ms=1)
    assert move.persist == ElectionState(5, leader_id=2)
    with pytest.raises(IllegalTransitionError, match="higher epoch"):
        transition_to_follower(leader(4), members=VOTER, epoch=4, leader_id=2, fetch_deadline_ms=1)


def test_a_candidate_follows_the_winner_of_its_epoch_and_keeps_its_vote() -> None:
    move = transition_to_follower(candidate(4), members=VOTER, epoch=4, leader_id=3, fetch_deadline_ms=1)
    assert move.persist == ElectionState(4, leader_id=3, voted_id=1)


def test_an_epoch_has_one_leader() -> None:
    with pytest.raises(IllegalTransitionError, match="already leads epoch 3"):
        transition_to_follower(
            unattached(3, leader_id=2), members=VOTER, epoch=3, leader_id=3, fetch_deadline_ms=1
        )


def test_a_node_never_follows_itself_or_a_non_voter() -> None:
    with pytest.raises(IllegalTransitionError, match="never follows itself"):
        transition_to_follower(unattached(), members=VOTER, epoch=4, leader_id=1, fetch_deadline_ms=1)
    with pytest.raises(IllegalTransitionError, match="only a voter can lead"):
        transition_to_follower(unattached(), members=VOTER, epoch=4, leader_id=7, fetch_deadline_ms=1)


def test_only_a_leader_resigns() -> None:
    with pytest.raises(IllegalTransitionError, match="only a Leader resigns"):
        enter_resigned(candidate(), members=VOTER, election_deadline_ms=1, preferred_successors=())


def test_leaders_and_resigned_nodes_never_start_a_pre_vote() -> None:
    for state in (leader(), resigned(), prospective()):
        with pytest.raises(IllegalTransitionError, match="pre-vote"):
            enter_prospective(state, members=VOTER, election_deadline_ms=1)


def test_observers_only_move_between_unattached_and_follower() -> None:
    observed = Unattached(epoch=3)
    with pytest.raises(IllegalTransitionError, match="observer never stands"):
        enter_prospective(observed, members=OBSERVER, election_deadline_ms=1)
    with pytest.raises(IllegalTransitionError, match="observer never votes"):
        transition_to_unattached(observed, members=OBSERVER, epoch=3, voted_id=2, election_deadline_ms=1)
    move = transition_to_follower(observed, members=OBSERVER, epoch=3, leader_id=2, fetch_deadline_ms=1)
    timed_out = transition_to_unattached(move.state, members=OBSERVER, epoch=3, election_deadline_ms=1)
    assert timed_out.state.leader_id == 2
    assert timed_out.state.election_deadline_ms is None


def test_a_former_leader_restarts_resigned_in_its_epoch() -> None:
    state = initial_state(
        ElectionState(7, leader_id=1, voted_id=1),
        members=VOTER,
        log_last_epoch=7,
        election_deadline_ms=10,
        fetch_deadline_ms=20,
    )
    assert isinstance(state, Resigned)
    assert state.epoch == 7
    assert state.election_state == ElectionState(7, leader_id=1, voted_id=1)


@pytest.mark.parametrize(
    ("stored", "log_epoch", "expected"),
    [
        (None, 0, Unattached(epoch=0, election_deadline_ms=10)),
        (ElectionState(3, voted_id=1), 2, Candidate),
        (ElectionState(3, leader_id=2), 3, Follower),
        (ElectionState(3, voted_id=2), 3, Unattached(epoch=3, voted_id=2, election_deadline_ms=10)),
        (ElectionState(3, leader_id=2), 5, Unattached(epoch=5, election_deadline_ms=10)),
    ],
)
def test_start_up_state_follows_the_persisted_election_state(
    stored: ElectionState | None, log_epoch: int, expected: object
) -> None:
    state = initial_state(
        stored, members=VOTER, log_last_epoch=log_epoch, election_deadline_ms=10, fetch_deadline_ms=20
    )
    if isinstance(expected, type):
        assert isinstance(state, expected)
        assert state.epoch == 3
    else:
        assert state == expected
