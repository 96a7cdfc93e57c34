"""The six election states of a node, one class each, and the state to persist.

A state holds what is true of the node in one epoch: who leads or was voted
for, the election tally, and its timers as absolute deadlines (milliseconds of
the caller's clock; None means "never"). The leader's replication bookkeeping
is in ``quorum.raft.leadership``. States are created only by
``quorum.raft.transitions``.

Durable states (written to the quorum-state file before anything that depends
on them is sent): Unattached, Candidate, Follower, Leader. Memory-only:
Prospective (a pre-vote changes nothing durable) and Resigned (its persisted
form is the Leader's, which is why a restarted leader comes back Resigned).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from quorum.log.protocol import OffsetAndEpoch
from quorum.raft.tally import VoteTally

if TYPE_CHECKING:
    from quorum.raft.leadership import Leadership

__all__ = [
    "Candidate",
    "ElectionState",
    "Follower",
    "Leader",
    "Prospective",
    "Resigned",
    "SnapshotDownload",
    "State",
    "Unattached",
]


@attrs.frozen
class ElectionState:
    """What the quorum-state file holds: epoch, known leader, vote cast in that epoch."""

    epoch: int
    leader_id: int | None = None
    voted_id: int | None = None

    def __attrs_post_init__(self) -> None:
        assert self.epoch >= 0, f"epoch {self.epoch} is negative"


@attrs.define(kw_only=True)
class Unattached:
    """No followable leader in ``epoch``; maybe a vote cast, maybe a leader id heard of."""

    epoch: int
    leader_id: int | None = None
    voted_id: int | None = None
    election_deadline_ms: int | None = None  # None: an observer never stands
    high_watermark: int | None = None

    @property
    def election_state(self) -> ElectionState:
        return ElectionState(self.epoch, self.leader_id, self.voted_id)


@attrs.define(kw_only=True)
class Prospective:
    """Asking for pre-votes in ``epoch`` (KIP-996); nothing about it is persisted."""

    epoch: int
    leader_id: int | None = None
    voted_id: int | None = None
    tally: VoteTally
    election_deadline_ms: int
    high_watermark: int | None = None

    @property
    def election_state(self) -> ElectionState:
        return ElectionState(self.epoch, self.leader_id, self.voted_id)


@attrs.define(kw_only=True)
class Candidate:
    """Standing in ``epoch`` with its own vote persisted."""

    epoch: int
    local_id: int
    tally: VoteTally
    election_deadline_ms: int
    high_watermark: int | None = None

    @property
    def election_state(self) -> ElectionState:
        return ElectionState(self.epoch, None, self.local_id)


@attrs.define(kw_only=True)
class Leader:
    """Elected in ``epoch``; the log from ``epoch_start_offset`` on is this leader's."""

    epoch: int
    local_id: int
    epoch_start_offset: int
    leadership: Leadership

    @property
    def election_state(self) -> ElectionState:
        return ElectionState(self.epoch, self.local_id, self.local_id)

    @property
    def high_watermark(self) -> int | None:
        return self.leadership.high_watermark


@attrs.define
class SnapshotDownload:
    """A snapshot a follower is fetching from its leader, and how many bytes it has.

    The chunks go to the log's partial copy as they arrive
    (``write_partial_snapshot``), each synced: a 1,000,000-partition snapshot is
    74 MB, which written and synced in one go at the end held the node's thread
    for 50-250 ms. A download that a crash or a new leader interrupts starts
    over at position 0.
    """

    snapshot_id: OffsetAndEpoch
    written: int = 0


@attrs.define(kw_only=True)
class Follower:
    """Fetching from ``leader_id`` in ``epoch``; a vote cast in this epoch is kept."""

    epoch: int
    leader_id: int
    voted_id: int | None = None
    fetch_deadline_ms: int
    # a follower that has fetched from its leader in this epoch refuses pre-votes
    has_fetched: bool = False
    # the leader is known gone (its connection failed, or it sent EndQuorumEpoch):
    # this follower is only waiting for its turn to stand
    leader_gone: bool = False
    # the leader sent EndQuorumEpoch: it never leads this epoch again, so a fetch
    # answer it sent before resigning, arriving late, is no sign of life
    leader_resigned: bool = False
    high_watermark: int | None = None
    # while set, the follower sends FetchSnapshot instead of Fetch
    snapshot_download: SnapshotDownload | None = None

    @property
    def election_state(self) -> ElectionState:
        return ElectionState(self.epoch, self.leader_id, self.voted_id)

    def heard_from_leader(self, fetch_deadline_ms: int) -> None:
        """A fetch answer from the leader: it is alive, defend it until ``fetch_deadline_ms``."""
        if self.leader_resigned:
            return
        self.has_fetched = True
        self.leader_gone = False
        self.fetch_deadline_ms = fetch_deadline_ms

    def lost_leader(self, *, resigned: bool = False) -> None:
        """The leader is gone: stop defending it against pre-votes."""
        self.has_fetched = False
        self.leader_gone = True
        self.leader_resigned = self.leader_resigned or resigned


@attrs.define(kw_only=True)
class Resigned:
    """A former leader of ``epoch`` that stepped down; it never leads or votes in it again."""

    epoch: int
    local_id: int
    election_deadline_ms: int
    unacked_voters: set[int] = attrs.field(factory=set)
    preferred_successors: tuple[int, ...] = ()
    high_watermark: int | None = None

    @property
    def election_state(self) -> ElectionState:
        return ElectionState(self.epoch, self.local_id, self.local_id)


State = Unattached | Prospective | Candidate | Leader | Follower | Resigned
