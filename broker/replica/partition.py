"""One hosted replica of a partition: role, epochs, ISR, high watermark, followers.

Kafka's ``Partition`` (``core/.../cluster/Partition.scala``) without locks:
one task owns every ``Partition`` of a broker (``broker.replica.core``).

* ``apply_assignment`` is ``makeLeader`` / ``makeFollower``: an assignment
  whose partition epoch is older than ours is skipped (an AlterPartition
  answer may have told us a newer one first); a new leader epoch on the
  leader records the epoch's start offset (the log end offset) and resets
  what it knows of its followers; any assignment replaces the ISR state
  (a change in flight is dropped: its answer will be ignored).
* The leader's high watermark follows ``broker.replica.watermark``; it never
  moves back. A follower's is ``min(leader's HW, own log end offset)``.
* The leader proposes ISR changes (``maybe_expand_isr`` after a follower
  fetch, ``maybe_shrink_isr`` on a timer) as ``IsrChange``s for the
  AlterPartition queue, and takes the controller's answer with
  ``handle_alter_partition_result``.

invariant: log_start_offset <= high_watermark <= log_end_offset.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable, Iterable
from typing import cast

import attrs

from broker.replica import isr as isr_rules
from broker.replica.config import TopicConfig
from broker.replica.epochs import leader_end_offset_for_epoch
from broker.replica.isr import CommittedIsr, IsrChange, IsrState
from broker.replica.manager import PartitionAssignment, PartitionKey, PartitionRole
from broker.replica.producer_state import (
    DEFAULT_PRODUCER_ID_EXPIRATION_MS,
    AppendedBatch,
    ProducerStateManager,
    current_producer_state,
    track_appended,
)
from broker.replica.replica_state import (
    NO_FOLLOWERS,
    ReplicaState,
    follower_states,
    reset_replica_state,
    update_fetch_state,
)
from broker.replica.unwritten_log import UnwrittenLog
from broker.replica.watermark import (
    FollowerProgress,
    high_watermark_bound,
    is_caught_up,
    is_isr_candidate,
    next_high_watermark,
)
from quorum.log import OffsetAndEpoch, ReplicatedLog
from quorum.wire.error_codes import Errors

__all__ = ["AcceptedIsr", "AssignmentOutcome", "Partition", "PartitionContext"]

NO_LEADER = -1
# a follower not heard from: one immutable state shared by all of them
_NEVER_FETCHED = ReplicaState()
@functools.lru_cache(maxsize=4096)
def _followers_of(replicas: tuple[int, ...], broker_id: int) -> tuple[int, ...]:
    """One tuple of follower ids per replica set and broker, shared by its partitions."""
    return tuple(r for r in replicas if r != broker_id)


class AssignmentOutcome(enum.Enum):
    SKIPPED = "skipped"  # an older partition epoch than ours
    UNCHANGED_EPOCH = "unchanged-epoch"  # same leader epoch: ISR or replicas moved
    NEW_LEADER_EPOCH = "new-leader-epoch"


@attrs.frozen(kw_only=True)
class AcceptedIsr:
    """A successful AlterPartition answer for one partition."""

    leader_id: int
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int


@attrs.frozen
class PartitionContext:
    """What every partition of one broker shares (one object, not three slots each)."""

    broker_id: int
    replica_lag_time_max_ms: int
    # whether a replica may be in the ISR (registered, unfenced, not shutting down)
    is_isr_eligible: Callable[[int], bool]
    # a new partition's log, made at its first write (key, name)
    create_log: Callable[[PartitionKey, tuple[str, int]], ReplicatedLog]
    producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS


class Partition:
    # slots: a broker may host 100,000 of these, most idle (a __dict__ each costs ~100 B)
    __slots__ = (
        "_log",
        "config",
        "context",
        "epoch_start_offset",
        "followers",
        "high_watermark",
        "isr_state",
        "key",
        "leader_epoch",
        "leader_id",
        "name",
        "partition_epoch",
        "producers",
    )

    def __init__(
        self,
        *,
        key: PartitionKey,
        name: tuple[str, int],
        log: ReplicatedLog | None,
        config: TopicConfig,
        context: PartitionContext,
        high_watermark: int = 0,
    ) -> None:
        self.key = key
        # (topic, index): one tuple per partition, shared by every table keyed by name
        # (and by its log's directory)
        self.name = name
        # None: no log yet (``UnwrittenLog``; made at the first write)
        self._log = log
        self.config = config
        self.context = context
        self.leader_id = NO_LEADER
        self.leader_epoch = -1
        self.partition_epoch = -1
        self.isr_state: IsrState = isr_rules.NO_ISR
        # where this broker's current leader epoch starts (None: not leading)
        self.epoch_start_offset: int | None = None
        self.followers = NO_FOLLOWERS
        self.high_watermark = max(
            self.log.log_start_offset, min(high_watermark, self.log.log_end_offset)
        )
        # the idempotent producers below the log end; None: not built yet (it is, from the
        # log and its producer snapshots, at the first need: see ``producer_state``)
        self.producers: ProducerStateManager | None = None

    def __repr__(self) -> str:
        return (
            f"Partition({self.topic}-{self.index} on {self.broker_id}: {self.role.value} "
            f"e{self.leader_epoch} pe{self.partition_epoch} leader {self.leader_id} "
            f"isr {self.isr_state} hw {self.high_watermark} leo {self.log_end_offset})"
        )

    # -- views ---------------------------------------------------------------------------

    @property
    def broker_id(self) -> int:
        return self.context.broker_id

    @property
    def log(self) -> ReplicatedLog:
        log = self._log
        return cast(ReplicatedLog, UnwrittenLog(self)) if log is None else log

    @property
    def has_log(self) -> bool:
        """Whether the partition's log exists (was ever written or found on disk)."""
        return self._log is not None

    def create_log(self) -> ReplicatedLog:
        """The partition's log, made now if it has none (its first write)."""
        if self._log is None:
            self._log = self.context.create_log(self.key, self.name)
        return self._log

    @property
    def topic(self) -> str:
        return self.name[0]

    @property
    def index(self) -> int:
        return self.name[1]

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.context.broker_id

    @property
    def role(self) -> PartitionRole:
        # a slot less per partition: a leader is the broker its assignment names as leader
        return PartitionRole.LEADER if self.is_leader else PartitionRole.FOLLOWER

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def maximal_isr(self) -> frozenset[int]:
        return self.isr_state.maximal_isr

    @property
    def effective_min_isr(self) -> int:
        """min.insync.replicas, capped by the replication factor (Kafka's effectiveMinIsr)."""
        return min(self.config.min_insync_replicas, len(self.followers) + 1)

    @property
    def is_under_min_isr(self) -> bool:
        return self.is_leader and len(self.isr_state.isr) < self.effective_min_isr

    def low_watermark(self) -> int:
        """The smallest log start offset among this leader and its followers on live
        brokers, as their fetches reported them (Kafka's lowWatermarkIfLeader)."""
        low = self.log_start_offset
        for replica, state in self.followers.items():
            if state.log_start_offset < low and self.context.is_isr_eligible(replica):
                low = state.log_start_offset
        return low

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        """Where ``epoch`` ends in this log, as the leader answers DivergingEpoch."""
        if self.is_leader:
            assert self.epoch_start_offset is not None
            return leader_end_offset_for_epoch(
                self.log,
                epoch,
                leader_epoch=self.leader_epoch,
                epoch_start_offset=self.epoch_start_offset,
            )
        return self.log.end_offset_for_epoch(epoch)

    # -- assignments from the metadata image ---------------------------------------------

    def apply_assignment(self, assignment: PartitionAssignment, now_ms: int) -> AssignmentOutcome:
        """Take a (newer) assignment: become leader or follower of its epoch."""
        assert assignment.key == self.key, (assignment, self.key)
        if assignment.partition_epoch < self.partition_epoch:
            return AssignmentOutcome.SKIPPED
        new_epoch = assignment.leader_epoch > self.leader_epoch
        if assignment.role is PartitionRole.LEADER:
            self._make_leader(assignment, new_epoch, now_ms)
        else:
            self._make_follower(assignment)
        self.partition_epoch = assignment.partition_epoch
        return AssignmentOutcome.NEW_LEADER_EPOCH if new_epoch else AssignmentOutcome.UNCHANGED_EPOCH

    def _make_leader(self, assignment: PartitionAssignment, new_epoch: bool, now_ms: int) -> None:
        is_new_leader = not self.is_leader
        ids = _followers_of(assignment.replicas, self.broker_id)
        self.followers = follower_states(
            ids, [self.followers.get(r) or _NEVER_FETCHED for r in ids]
        )
        self.isr_state = isr_rules.after_new_assignment(assignment.isr)
        if new_epoch:
            start = self.log_end_offset
            self.followers = follower_states(ids, [
                reset_replica_state(
                    state,
                    now_ms=now_ms,
                    leader_end_offset=start,
                    is_new_leader=is_new_leader,
                    in_isr=replica in assignment.isr,
                )
                for replica, state in self.followers.items()
            ])
            self.leader_epoch = assignment.leader_epoch
            self.epoch_start_offset = start
        self.leader_id = self.broker_id

    def _make_follower(self, assignment: PartitionAssignment) -> None:
        self.leader_id = assignment.leader
        self.leader_epoch = assignment.leader_epoch
        self.epoch_start_offset = None
        self.followers = NO_FOLLOWERS
        self.isr_state = isr_rules.NO_ISR

    # -- the high watermark -------------------------------------------------------------

    def _progress(self, now_ms: int) -> list[FollowerProgress]:
        leader_end = self.log_end_offset
        return [
            FollowerProgress(
                replica_id=replica,
                log_end_offset=state.log_end_offset,
                caught_up=is_caught_up(
                    replica_end_offset=state.log_end_offset,
                    leader_end_offset=leader_end,
                    last_caught_up_ms=state.last_caught_up_ms,
                    now_ms=now_ms,
                    max_lag_ms=self.context.replica_lag_time_max_ms,
                ),
                eligible=self.context.is_isr_eligible(replica),
            )
            for replica, state in self.followers.items()
        ]

    def maybe_increment_high_watermark(self, now_ms: int) -> bool:
        """Advance the leader's high watermark if its followers allow; True if it moved."""
        if not self.is_leader:
            return False
        bound = high_watermark_bound(
            self.log_end_offset, self._progress(now_ms), self.isr_state.maximal_isr
        )
        new = next_high_watermark(
            self.high_watermark,
            bound,
            isr_size=len(self.isr_state.isr),
            effective_min_isr=self.effective_min_isr,
        )
        if new is None:
            return False
        assert new <= self.log_end_offset, (new, self.log_end_offset)
        self.high_watermark = new
        return True

    def learn_high_watermark(self, leader_high_watermark: int) -> bool:
        """A follower's high watermark: the leader's, capped by its own log end."""
        assert not self.is_leader
        new = max(self.log_start_offset, min(leader_high_watermark, self.log_end_offset))
        changed = new != self.high_watermark
        self.high_watermark = new
        return changed

    def after_truncation(self) -> None:
        """Keep the high watermark inside the log after it was cut; the producer state is
        rebuilt to the new log end at its next need (the log dropped the snapshots above)."""
        self.high_watermark = max(
            self.log_start_offset, min(self.high_watermark, self.log_end_offset)
        )
        self.producers = None

    # -- idempotent producers ------------------------------------------------------------

    def producer_state(self, now_ms: int) -> ProducerStateManager:
        """The producers below the log end, rebuilt from the log at the first need."""
        self.producers = current_producer_state(
            self.log, self.producers, now_ms=now_ms,
            expiration_ms=self.context.producer_id_expiration_ms,
        )
        return self.producers

    def log_position(self) -> tuple[int, int]:
        """The active segment's base offset and the log end offset (before an append)."""
        log = self.log
        return log.active_segment_base_offset, log.log_end_offset

    def track_appended(
        self, before: tuple[int, int], appended: Iterable[AppendedBatch], now_ms: int
    ) -> None:
        """After an append (``before``: ``log_position()`` before it): the producer state
        takes its batches, a roll snapshots it (``producer_state.track_appended``)."""
        self.producers = track_appended(
            self.log, self.producers, before, appended, now_ms=now_ms,
            expiration_ms=self.context.producer_id_expiration_ms,
        )

    # -- follower fetches (leader side) --------------------------------------------------

    def update_follower_fetch_state(
        self,
        replica_id: int,
        *,
        fetch_offset: int,
        log_start_offset: int,
        now_ms: int,
        leader_end_offset: int,
    ) -> tuple[bool, IsrChange | None]:
        """After a follower's fetch read records: (HW moved, ISR change to send)."""
        state = self.followers[replica_id]
        self.followers[replica_id] = update_fetch_state(
            state,
            fetch_offset=fetch_offset,
            log_start_offset=log_start_offset,
            fetch_ms=now_ms,
            leader_end_offset=leader_end_offset,
        )
        change = self.maybe_expand_isr(replica_id)
        moved = False
        if state.log_end_offset != fetch_offset:
            moved = self.maybe_increment_high_watermark(now_ms)
        return moved, change

    def note_idle_fetch(self, replica_id: int, fetch_ms: int) -> None:
        """A fetch at ``fetch_ms`` of a session that holds this partition idle: the follower,
        in the ISR, was at this leader's log end then, and reading the partition would have
        recorded that (``Serving`` skips the read and tells it here, before the partition
        changes)."""
        state = self.followers.get(replica_id)
        if (
            state is None
            or state.log_end_offset < 0
            or state.last_fetch_ms >= fetch_ms
            or replica_id not in self.isr_state.isr
        ):
            return
        self.followers[replica_id] = update_fetch_state(
            state,
            fetch_offset=state.log_end_offset,
            log_start_offset=state.log_start_offset,
            fetch_ms=fetch_ms,
            leader_end_offset=state.log_end_offset,
        )

    def maybe_expand_isr(self, replica_id: int) -> IsrChange | None:
        state = self.isr_state
        if not self.is_leader or state.in_flight or replica_id in state.isr:
            return None
        follower = self.followers.get(replica_id)
        assert self.epoch_start_offset is not None
        if follower is None or not self.context.is_isr_eligible(replica_id):
            return None
        if not is_isr_candidate(
            replica_end_offset=follower.log_end_offset,
            high_watermark=self.high_watermark,
            epoch_start_offset=self.epoch_start_offset,
        ):
            return None
        pending = isr_rules.prepare_expand(
            state,
            replica_id,
            leader_epoch=self.leader_epoch,
            partition_epoch=self.partition_epoch,
        )
        self.isr_state = pending
        return pending.sent

    def out_of_sync_replicas(self, now_ms: int) -> frozenset[int]:
        """ISR followers not caught up for replica.lag.time.max.ms (Kafka's getOutOfSyncReplicas)."""
        if not self.is_leader or self.isr_state.in_flight:
            return frozenset()
        leader_end = self.log_end_offset
        lagging = set()
        for replica in self.isr_state.isr - {self.broker_id}:
            follower = self.followers.get(replica)
            if follower is None or not is_caught_up(
                replica_end_offset=follower.log_end_offset,
                leader_end_offset=leader_end,
                last_caught_up_ms=follower.last_caught_up_ms,
                now_ms=now_ms,
                max_lag_ms=self.context.replica_lag_time_max_ms,
            ):
                lagging.add(replica)
        return frozenset(lagging)

    def isr_in_sync(self) -> bool:
        """Every ISR follower has the log end and no change is in flight: none can fall out
        of sync before the log or the ISR changes."""
        if self.isr_state.in_flight:
            return False
        end = self.log_end_offset
        followers = self.followers
        for replica in self.isr_state.isr:
            if replica != self.broker_id:
                state = followers.get(replica)
                if state is None or state.log_end_offset != end:
                    return False
        return True

    def high_watermark_held(self) -> bool:
        """The high watermark is under the log end though the ISR is large enough to move
        it: a follower outside the ISR that is caught up and eligible may hold it back
        (``high_watermark_bound``), and it lets go with time (replica.lag.time.max.ms) or
        its fencing, which no fetch or append reports (the controller takes a dead broker
        out of the ISR before it writes its fence)."""
        return (
            self.high_watermark < self.log_end_offset
            and len(self.isr_state.isr) >= self.effective_min_isr
        )

    def maybe_shrink_isr(self, now_ms: int) -> IsrChange | None:
        out_of_sync = self.out_of_sync_replicas(now_ms)
        if not out_of_sync:
            return None
        pending = isr_rules.prepare_shrink(
            self.isr_state,
            out_of_sync,
            leader_epoch=self.leader_epoch,
            partition_epoch=self.partition_epoch,
        )
        self.isr_state = pending
        return pending.sent

    # -- AlterPartition answers ---------------------------------------------------------

    def handle_alter_partition_result(
        self, sent: IsrChange, result: AcceptedIsr | Errors, now_ms: int
    ) -> tuple[bool, bool]:
        """The controller's answer to ``sent``: (HW moved, send ``sent`` again)."""
        state = self.isr_state
        if isinstance(state, CommittedIsr) or state.sent != sent:
            return False, False  # new metadata replaced the change: the answer is stale
        if isinstance(result, Errors):
            self.isr_state, retry = isr_rules.after_alter_partition_error(state, result)
            return False, retry
        if result.leader_epoch != self.leader_epoch or result.partition_epoch < self.partition_epoch:
            return False, False  # stale: wait for the metadata image
        self.isr_state = isr_rules.after_alter_partition_accepted(state, result.isr)
        self.partition_epoch = result.partition_epoch
        return self.maybe_increment_high_watermark(now_ms), False

    def abandon_isr_change(self) -> None:
        """The change could not be queued (one for this partition still is): nothing applied."""
        state = self.isr_state
        self.isr_state, _ = isr_rules.after_alter_partition_error(
            state, Errors.OPERATION_NOT_ATTEMPTED
        )

    # -- acks=all ------------------------------------------------------------------------

    def check_enough_replicas_reach_offset(self, required_offset: int) -> tuple[bool, Errors]:
        """Kafka's checkEnoughReplicasReachOffset: (done, error) for an acks=all produce."""
        if not self.is_leader:
            return False, Errors.NOT_LEADER_OR_FOLLOWER
        if self.high_watermark < required_offset:
            return False, Errors.NONE
        if self.effective_min_isr <= len(self.isr_state.maximal_isr):
            return True, Errors.NONE
        return True, Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND
