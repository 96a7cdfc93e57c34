"""The tally of one election (pre-vote or standard): who granted, who refused.

Kafka's ``EpochElection``: every voter starts unrecorded; the local node's own
vote is recorded as granted when the tally is made. Only voters are counted,
so an observer's answer is ignored by construction.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from quorum.raft.quorum_math import majority_size

__all__ = ["VoteTally"]


@attrs.define
class VoteTally:
    voters: frozenset[int]
    granted: set[int] = attrs.field(factory=set)
    rejected: set[int] = attrs.field(factory=set)

    @classmethod
    def start(cls, voters: Iterable[int], local_id: int) -> VoteTally:
        voter_set = frozenset(voters)
        assert local_id in voter_set, "only a voter holds an election"
        return cls(voter_set, {local_id}, set())

    def record(self, voter_id: int, granted: bool) -> bool:
        """Record one answer; False if ``voter_id`` is not a voter or already answered."""
        if voter_id not in self.voters or voter_id in self.granted | self.rejected:
            return False
        (self.granted if granted else self.rejected).add(voter_id)
        return True

    @property
    def unrecorded(self) -> frozenset[int]:
        return self.voters - self.granted - self.rejected

    @property
    def is_won(self) -> bool:
        return len(self.granted) >= majority_size(len(self.voters))

    @property
    def is_lost(self) -> bool:
        """No majority is possible any more, whatever the unrecorded voters say."""
        return len(self.granted) + len(self.unrecorded) < majority_size(len(self.voters))
