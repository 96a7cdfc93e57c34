"""The transition table: every change of election state goes through this module.

Voters (KIP-595 with KIP-996 pre-vote, as Kafka 4.0+):

=============  ===========================================================================
from           to (when)
=============  ===========================================================================
Unattached     Unattached  - a higher epoch is learned; or a vote is cast in this epoch
               Prospective - the election timeout expires
               Follower    - a leader of this or a higher epoch is discovered
Prospective    Unattached  - a higher epoch is learned; or the pre-vote is lost or times
                             out and no followable leader is known (epoch and vote kept);
                             or a vote is cast in this epoch
               Candidate   - a majority of voters granted the pre-vote
               Follower    - a leader of this or a higher epoch is discovered; or the
                             pre-vote is lost or times out and a leader is known
Candidate      Unattached  - a higher epoch is learned
               Prospective - the election timeout expires
               Leader      - a majority of voters granted the vote
               Follower    - a leader of this or a higher epoch is discovered
Leader         Unattached  - a higher epoch is learned
               Resigned    - graceful shutdown, ``resign`` or check-quorum expiry
               Follower    - a leader of a higher epoch is discovered
Follower       Unattached  - a higher epoch is learned without a leader
               Prospective - the fetch timeout expires (or the leader's connection failed)
               Follower    - a leader of a higher epoch is discovered
Resigned       Unattached  - a higher epoch is learned; or the election timeout expires
                             (then at epoch + 1, so it never follows itself)
               Follower    - a leader of a higher epoch is discovered
=============  ===========================================================================

Observers only move between Unattached and Follower, never stand or vote; an
observer Follower whose fetch times out becomes Unattached in the same epoch
and keeps the leader id.

Epochs never decrease. Durable transitions (``transition_to_*``) return a
``Durable`` carrying the ``ElectionState`` the driver must persist before
sending anything that depends on it; memory-only transitions
(``enter_prospective``, ``enter_resigned``) return the bare state. An illegal
move raises ``IllegalTransitionError`` naming from, to and why.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Generic, TypeVar

import attrs

from quorum.raft.errors import IllegalTransitionError
from quorum.raft.states import (
    Candidate,
    ElectionState,
    Follower,
    Leader,
    Prospective,
    Resigned,
    State,
    Unattached,
)
from quorum.raft.tally import VoteTally

if TYPE_CHECKING:
    from quorum.raft.leadership import Leadership

__all__ = [
    "Durable",
    "Membership",
    "enter_prospective",
    "enter_resigned",
    "initial_state",
    "transition_to_candidate",
    "transition_to_follower",
    "transition_to_leader",
    "transition_to_unattached",
]

S = TypeVar("S", Unattached, Candidate, Follower, Leader)


@attrs.frozen
class Membership:
    """Who this node is among the voters (static voter set)."""

    local_id: int
    voters: frozenset[int]

    @property
    def is_voter(self) -> bool:
        return self.local_id in self.voters


@attrs.frozen
class Durable(Generic[S]):
    """A new durable state and the election state to persist before acting on it."""

    state: S
    persist: ElectionState


def _durable(state: S) -> Durable[S]:
    return Durable(state, state.election_state)


def _require(ok: bool, current: State, target: str, why: str) -> None:
    if not ok:
        raise IllegalTransitionError(current, target, why)


def _same_epoch_vote(current: State, voted_id: int | None) -> bool:
    """Recording a first vote in the current epoch without other changes."""
    return (
        isinstance(current, Unattached | Prospective)
        and current.voted_id is None
        and voted_id is not None
    )


def transition_to_unattached(
    current: State,
    *,
    members: Membership,
    epoch: int,
    leader_id: int | None = None,
    voted_id: int | None = None,
    election_deadline_ms: int | None,
) -> Durable[Unattached]:
    target = f"Unattached(epoch={epoch})"
    _require(epoch >= current.epoch, current, target, "epochs never decrease")
    if epoch == current.epoch:
        kept = isinstance(current, Prospective) and voted_id == current.voted_id
        observer_timeout = isinstance(current, Follower) and not members.is_voter
        _require(
            _same_epoch_vote(current, voted_id) or kept or observer_timeout,
            current,
            target,
            "in the same epoch only a vote being cast, a lost pre-vote or an observer's "
            "fetch timeout leads to Unattached",
        )
        if leader_id is None and isinstance(current, Prospective | Follower | Unattached):
            leader_id = current.leader_id
    _require(voted_id is None or members.is_voter, current, target, "an observer never votes")
    return _durable(
        Unattached(
            epoch=epoch,
            leader_id=leader_id,
            voted_id=voted_id,
            election_deadline_ms=election_deadline_ms if members.is_voter else None,
            high_watermark=current.high_watermark,
        )
    )


def enter_prospective(
    current: State, *, members: Membership, election_deadline_ms: int
) -> Prospective:
    target = "Prospective"
    _require(members.is_voter, current, target, "an observer never stands for election")
    _require(
        isinstance(current, Unattached | Follower | Candidate),
        current,
        target,
        "only an Unattached, Follower or Candidate voter whose timer expired starts a pre-vote",
    )
    assert isinstance(current, Unattached | Follower | Candidate)
    leader_id: int | None = None
    voted_id: int | None = members.local_id
    if not isinstance(current, Candidate):
        leader_id, voted_id = current.leader_id, current.voted_id
    return Prospective(
        epoch=current.epoch,
        leader_id=leader_id,
        voted_id=voted_id,
        tally=VoteTally.start(members.voters, members.local_id),
        election_deadline_ms=election_deadline_ms,
        high_watermark=current.high_watermark,
    )


def transition_to_candidate(
    current: State, *, members: Membership, election_deadline_ms: int
) -> Durable[Candidate]:
    target = f"Candidate(epoch={current.epoch + 1})"
    _require(members.is_voter, current, target, "an observer never stands for election")
    _require(
        isinstance(current, Prospective) and current.tally.is_won,
        current,
        target,
        "only a Prospective with a majority of pre-votes may become a Candidate",
    )
    return _durable(
        Candidate(
            epoch=current.epoch + 1,
            local_id=members.local_id,
            tally=VoteTally.start(members.voters, members.local_id),
            election_deadline_ms=election_deadline_ms,
            high_watermark=current.high_watermark,
        )
    )


def transition_to_leader(
    current: State, *, members: Membership, epoch_start_offset: int, leadership: Leadership
) -> Durable[Leader]:
    target = f"Leader(epoch={current.epoch})"
    _require(
        isinstance(current, Candidate) and current.tally.is_won,
        current,
        target,
        "only a Candidate with a majority of votes may become Leader",
    )
    # The leader does not keep the high watermark it knew before: it exposes
    # one only once its own epoch has a committed record.
    return _durable(
        Leader(
            epoch=current.epoch,
            local_id=members.local_id,
            epoch_start_offset=epoch_start_offset,
            leadership=leadership,
        )
    )


def transition_to_follower(
    current: State, *, members: Membership, epoch: int, leader_id: int, fetch_deadline_ms: int
) -> Durable[Follower]:
    target = f"Follower(epoch={epoch}, leader={leader_id})"
    _require(epoch >= current.epoch, current, target, "epochs never decrease")
    _require(leader_id != members.local_id, current, target, "a node never follows itself")
    _require(leader_id in members.voters, current, target, "only a voter can lead")
    if epoch == current.epoch:
        _require(
            isinstance(current, Unattached | Prospective | Candidate),
            current,
            target,
            "a Leader, Follower or Resigned node only follows a leader of a higher epoch",
        )
        known = getattr(current, "leader_id", None)
        _require(
            known is None or known == leader_id,
            current,
            target,
            f"node {known} already leads epoch {epoch}; an epoch has one leader",
        )
    voted_id = current.election_state.voted_id if epoch == current.epoch else None
    return _durable(
        Follower(
            epoch=epoch,
            leader_id=leader_id,
            voted_id=voted_id,
            fetch_deadline_ms=fetch_deadline_ms,
            high_watermark=current.high_watermark,
        )
    )


def enter_resigned(
    current: State,
    *,
    members: Membership,
    election_deadline_ms: int,
    preferred_successors: tuple[int, ...],
) -> Resigned:
    _require(
        isinstance(current, Leader),
        current,
        "Resigned",
        "only a Leader resigns",
    )
    return Resigned(
        epoch=current.epoch,
        local_id=members.local_id,
        election_deadline_ms=election_deadline_ms,
        unacked_voters=set(members.voters - {members.local_id}),
        preferred_successors=preferred_successors,
        high_watermark=current.high_watermark,
    )


def initial_state(
    stored: ElectionState | None,
    *,
    members: Membership,
    log_last_epoch: int,
    election_deadline_ms: int,
    fetch_deadline_ms: int,
) -> State:
    """The state a node starts in, from its persisted election state and its log.

    A node that was leader restarts Resigned in the same epoch: it must not vote
    again in that epoch, and records it lost with its unflushed tail must not
    be re-created with the same (offset, epoch).
    """
    election = stored or ElectionState(0)
    stand = election_deadline_ms if members.is_voter else None
    local = members.local_id
    if election.epoch < log_last_epoch:
        return Unattached(epoch=log_last_epoch, election_deadline_ms=stand)
    if election.leader_id == local and members.is_voter:
        return Resigned(
            epoch=election.epoch,
            local_id=local,
            election_deadline_ms=election_deadline_ms,
            unacked_voters=set(members.voters - {local}),
        )
    if election.voted_id == local and members.is_voter and election.leader_id is None:
        return Candidate(
            epoch=election.epoch,
            local_id=local,
            tally=VoteTally.start(members.voters, local),
            election_deadline_ms=election_deadline_ms,
        )
    leader = election.leader_id
    if leader is not None and leader != local and leader in members.voters:
        return Follower(
            epoch=election.epoch,
            leader_id=leader,
            voted_id=election.voted_id if members.is_voter else None,
            fetch_deadline_ms=fetch_deadline_ms,
        )
    return Unattached(
        epoch=election.epoch,
        leader_id=leader,
        voted_id=election.voted_id if members.is_voter else None,
        election_deadline_ms=stand,
    )
