"""The leader's bookkeeping for one epoch: replica progress, high watermark,
check quorum, parked fetches and the append accumulator.

invariant: the high watermark only ever grows, and only to an offset that a
majority of voters (the leader counted up to its *flushed* offset) has, and
that lies past ``epoch_start_offset`` (a record of this epoch is committed).
Observers never count, neither for the high watermark nor for check quorum.
"""

from __future__ import annotations

from collections.abc import Hashable

import attrs

from quorum.raft.accumulator import Accumulator
from quorum.raft.config import OBSERVER_SESSION_TIMEOUT_MS, RaftConfig
from quorum.raft.quorum_math import majority_end_offset, majority_size
from quorum.raft.rpc import FetchAsk, ReplicaDescription

__all__ = ["Leadership", "ParkedFetch", "ReplicaProgress"]


@attrs.define
class ReplicaProgress:
    replica_id: int
    end_offset: int | None = None
    last_fetch_ms: int | None = None
    last_caught_up_ms: int | None = None
    leader_end_at_last_fetch: int | None = None
    # the high watermark in the last fetch response sent to this replica
    last_sent_high_watermark: int | None = None

    def describe(self) -> ReplicaDescription:
        return ReplicaDescription(
            replica_id=self.replica_id,
            log_end_offset=-1 if self.end_offset is None else self.end_offset,
            last_fetch_timestamp=-1 if self.last_fetch_ms is None else self.last_fetch_ms,
            last_caught_up_timestamp=(
                -1 if self.last_caught_up_ms is None else self.last_caught_up_ms
            ),
        )


@attrs.frozen(kw_only=True)
class ParkedFetch:
    """A fetch with nothing to return yet, held until data, a new HW, or its deadline."""

    handle: Hashable
    ask: FetchAsk
    deadline_ms: int


class Leadership:
    def __init__(
        self,
        *,
        local_id: int,
        voters: frozenset[int],
        epoch_start_offset: int,
        now_ms: int,
        config: RaftConfig,
    ) -> None:
        self.local_id = local_id
        self.voters = voters
        self.epoch_start_offset = epoch_start_offset
        self.config = config
        self.high_watermark: int | None = None
        self.local_flushed_offset = 0
        self.replicas = {v: ReplicaProgress(v) for v in voters if v != local_id}
        self.observers: dict[int, ReplicaProgress] = {}
        self.fetched_voters: set[int] = set()
        self.check_quorum_deadline_ms: int | None = (
            None if len(voters) == 1 else now_ms + config.check_quorum_timeout_ms
        )
        # BeginQuorumEpoch goes to every voter at once, then to silent ones
        self.begin_quorum_deadline_ms = now_ms
        self.parked: dict[Hashable, ParkedFetch] = {}
        self.accumulator = Accumulator(
            linger_ms=config.append_linger_ms,
            max_batch_bytes=config.max_batch_size_bytes,
            max_batch_records=config.max_batch_records,
        )

    # -- high watermark ----------------------------------------------------------------

    def update_local_flushed(self, flushed_offset: int) -> bool:
        """The leader's own durable end moved; True if the high watermark advanced."""
        self.local_flushed_offset = max(self.local_flushed_offset, flushed_offset)
        return self.maybe_advance_high_watermark()

    def maybe_advance_high_watermark(self) -> bool:
        ends: dict[int, int | None] = {v: p.end_offset for v, p in self.replicas.items()}
        ends[self.local_id] = self.local_flushed_offset
        candidate = majority_end_offset(ends, self.voters)
        if candidate is None or candidate <= self.epoch_start_offset:
            return False
        if self.high_watermark is not None and candidate <= self.high_watermark:
            return False  # a lower value (a voter truncated) is ignored: HW never decreases
        self.high_watermark = candidate
        return True

    # -- fetches -------------------------------------------------------------------------

    def progress_of(self, replica_id: int, now_ms: int) -> ReplicaProgress | None:
        """The progress entry of a fetching replica; None for plain consumers (id < 0)."""
        if replica_id in self.replicas:
            return self.replicas[replica_id]
        if replica_id < 0 or replica_id == self.local_id:
            return None
        self._forget_idle_observers(now_ms)
        return self.observers.setdefault(replica_id, ReplicaProgress(replica_id))

    def record_fetch(self, replica_id: int, fetch_offset: int, leader_end: int, now_ms: int) -> bool:
        """A valid fetch proves the replica has ``fetch_offset``; True if the HW advanced."""
        progress = self.progress_of(replica_id, now_ms)
        if progress is None:
            return False
        if fetch_offset >= leader_end:
            progress.last_caught_up_ms = now_ms
        elif (
            progress.leader_end_at_last_fetch is not None
            and progress.last_fetch_ms is not None
            and fetch_offset >= progress.leader_end_at_last_fetch
        ):
            progress.last_caught_up_ms = progress.last_fetch_ms
        progress.end_offset = fetch_offset
        progress.last_fetch_ms = now_ms
        progress.leader_end_at_last_fetch = leader_end
        return replica_id in self.replicas and self.maybe_advance_high_watermark()

    def note_voter_fetch(self, replica_id: int, now_ms: int) -> None:
        """Check quorum: a majority of voters fetching resets the resign deadline."""
        if replica_id not in self.replicas or self.check_quorum_deadline_ms is None:
            return
        self.fetched_voters.add(replica_id)
        if len(self.fetched_voters) >= majority_size(len(self.voters)) - 1:
            self.fetched_voters.clear()
            self.check_quorum_deadline_ms = now_ms + self.config.check_quorum_timeout_ms

    def owes_high_watermark(self, replica_id: int) -> bool:
        """The replica was last told an older high watermark than the current one."""
        progress = self.replicas.get(replica_id) or self.observers.get(replica_id)
        if progress is None or self.high_watermark is None:
            return False
        sent = progress.last_sent_high_watermark
        return sent is None or sent < self.high_watermark

    def sent_high_watermark(self, replica_id: int) -> None:
        progress = self.replicas.get(replica_id) or self.observers.get(replica_id)
        if progress is not None:
            progress.last_sent_high_watermark = self.high_watermark

    def _forget_idle_observers(self, now_ms: int) -> None:
        horizon = now_ms - OBSERVER_SESSION_TIMEOUT_MS
        for observer_id in [
            o
            for o, p in self.observers.items()
            if p.last_fetch_ms is not None and p.last_fetch_ms < horizon
        ]:
            del self.observers[observer_id]

    # -- timers and views ------------------------------------------------------------------

    def silent_voters(self, now_ms: int) -> list[int]:
        """Voters without a fetch in the last half fetch timeout (BeginQuorumEpoch targets)."""
        horizon = now_ms - self.config.begin_quorum_interval_ms
        return sorted(
            v for v, p in self.replicas.items() if p.last_fetch_ms is None or p.last_fetch_ms <= horizon
        )

    def successors(self) -> tuple[int, ...]:
        """Other voters, most caught up first (unknown last, ties by id)."""

        def rank(voter: int) -> tuple[int, int]:
            end = self.replicas[voter].end_offset
            return (-(end if end is not None else -1), voter)

        return tuple(sorted(self.replicas, key=rank))

    def describe(self, leader_end: int, now_ms: int) -> tuple[list[ReplicaDescription], list[ReplicaDescription]]:
        self._forget_idle_observers(now_ms)
        own = ReplicaDescription(
            replica_id=self.local_id,
            log_end_offset=leader_end,
            last_fetch_timestamp=now_ms,
            last_caught_up_timestamp=now_ms,
        )
        voters = [own] + [self.replicas[v].describe() for v in sorted(self.replicas)]
        observers = [self.observers[o].describe() for o in sorted(self.observers)]
        return voters, observers

    def next_deadline_ms(self) -> int | None:
        deadlines = [self.begin_quorum_deadline_ms]
        if self.check_quorum_deadline_ms is not None:
            deadlines.append(self.check_quorum_deadline_ms)
        linger = self.accumulator.deadline_ms()
        if linger is not None:
            deadlines.append(linger)
        deadlines += [p.deadline_ms for p in self.parked.values()]
        return min(deadlines)
