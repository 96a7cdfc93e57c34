"""Where the consumer is in each assigned partition, and what it waits for (sans-I/O).

Kafka's ``SubscriptionState`` for manual assignment. Each assigned partition
is in one fetch state; the table is the whole of the transitions
(``Positions`` is the only code that moves a partition)::

    from              event                                   to
    ---------------   -------------------------------------   ----------------
    (assign)          assign()                                INITIALIZING
    any               seek(offset)                            FETCHING
    any               request_reset(strategy)                 AWAIT_RESET
    INITIALIZING      needs a position: auto.offset.reset     AWAIT_RESET
                      (not while held: a group member first
                      asks its coordinator for committed offsets)
    AWAIT_RESET       ListOffsets answered                    FETCHING
    FETCHING          a newer leader epoch (KIP-320) and      AWAIT_VALIDATION
                      the position knows its own epoch
    AWAIT_VALIDATION  OffsetForLeaderEpoch: no divergence     FETCHING
    AWAIT_VALIDATION  diverged: end offset below position     FETCHING (at the end offset)
    AWAIT_VALIDATION  the leader knows no such epoch          AWAIT_RESET
    FETCHING          OFFSET_OUT_OF_RANGE at the position     AWAIT_RESET

A ``FetchPosition`` is the next offset to read, the leader epoch of the
record before it (``offset_epoch``, what validation asks about) and the
leader it was last confirmed with. Answers to requests are applied only if
the position is still the one the request was built from: a seek in the
meantime wins. Where ``auto.offset.reset`` is ``none`` a reset or a
divergence is an error for the caller instead (Kafka's
NoOffsetForPartitionException, OffsetOutOfRangeException and
LogTruncationException).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator

import attrs

from broker.client.settings import OffsetResetStrategy
from broker.client.types import TopicPartition

__all__ = ["FetchPosition", "FetchState", "PartitionState", "Positions", "Truncation"]

UNKNOWN = -1


class FetchState(enum.Enum):
    INITIALIZING = "initializing"
    AWAIT_RESET = "await_reset"
    AWAIT_VALIDATION = "await_validation"
    FETCHING = "fetching"


@attrs.frozen
class FetchPosition:
    offset: int
    offset_epoch: int = UNKNOWN
    leader: int = UNKNOWN
    leader_epoch: int = UNKNOWN


@attrs.define
class PartitionState:
    state: FetchState = FetchState.INITIALIZING
    position: FetchPosition | None = None
    # the strategy an AWAIT_RESET partition resets by
    reset_strategy: OffsetResetStrategy | None = None
    # a request about this partition failed: not before this time
    retry_at_ms: float = 0.0
    # what the last fetch answer said about the log
    high_watermark: int = UNKNOWN
    log_start_offset: int = UNKNOWN
    last_stable_offset: int = UNKNOWN


@attrs.frozen
class Truncation:
    """A detected divergence (KIP-320) that the reset policy could not absorb."""

    tp: TopicPartition
    position: FetchPosition
    # the first offset known to diverge; None when the leader knows no end offset
    divergent_offset: int | None


class Positions:
    def __init__(self, default_reset: OffsetResetStrategy) -> None:
        self.default_reset = default_reset
        self._states: dict[TopicPartition, PartitionState] = {}
        # INITIALIZING partitions whose committed offset is being looked up: no reset yet
        self._held: set[TopicPartition] = set()

    # -- assignment and seeks ------------------------------------------------------------

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        wanted = list(dict.fromkeys(partitions))
        self._states = {tp: self._states.get(tp) or PartitionState() for tp in wanted}
        self._held.intersection_update(self._states)

    def hold(self, tps: Iterable[TopicPartition]) -> None:
        """Keep these INITIALIZING partitions from the reset policy until ``release``."""
        self._held.update(tp for tp in tps if tp in self._states)

    def release(self, tps: Iterable[TopicPartition]) -> None:
        self._held.difference_update(tps)

    def initializing(self) -> list[TopicPartition]:
        """Partitions without a position that nothing is finding one for yet."""
        return [tp for tp, state in self._states.items()
                if state.state is FetchState.INITIALIZING and tp not in self._held]

    @property
    def assigned(self) -> list[TopicPartition]:
        return list(self._states)

    def state_of(self, tp: TopicPartition) -> PartitionState:
        state = self._states.get(tp)
        if state is None:
            raise KeyError(f"{tp} is not assigned to this consumer")
        return state

    def is_assigned(self, tp: TopicPartition) -> bool:
        return tp in self._states

    def seek(self, tp: TopicPartition, offset: int, *, offset_epoch: int = UNKNOWN) -> None:
        state = self.state_of(tp)
        old = state.position
        state.position = FetchPosition(
            offset, offset_epoch,
            UNKNOWN if old is None else old.leader, UNKNOWN if old is None else old.leader_epoch,
        )
        state.state = FetchState.FETCHING
        state.reset_strategy = None
        state.retry_at_ms = 0.0

    def request_reset(self, tps: Iterable[TopicPartition], strategy: OffsetResetStrategy) -> None:
        for tp in tps:
            state = self.state_of(tp)
            state.state = FetchState.AWAIT_RESET
            state.reset_strategy = strategy
            state.retry_at_ms = 0.0

    def position(self, tp: TopicPartition) -> FetchPosition | None:
        state = self.state_of(tp)
        return state.position if state.state is FetchState.FETCHING else None

    # -- resets --------------------------------------------------------------------------

    def missing_positions(self) -> list[TopicPartition]:
        """INITIALIZING partitions; moved to AWAIT_RESET by the default strategy.

        With ``auto.offset.reset=none`` they stay and are returned: the caller
        raises NoOffsetForPartitionError.
        """
        missing = []
        for tp, state in self._states.items():
            if state.state is FetchState.INITIALIZING and tp not in self._held:
                if self.default_reset is OffsetResetStrategy.NONE:
                    missing.append(tp)
                else:
                    state.state = FetchState.AWAIT_RESET
                    state.reset_strategy = self.default_reset
        return missing

    def awaiting_reset(self, now_ms: float) -> dict[TopicPartition, OffsetResetStrategy]:
        return {
            tp: state.reset_strategy
            for tp, state in self._states.items()
            if state.state is FetchState.AWAIT_RESET
            and state.reset_strategy is not None
            and state.retry_at_ms <= now_ms
        }

    def complete_reset(
        self,
        tp: TopicPartition,
        strategy: OffsetResetStrategy,
        offset: int,
        *,
        offset_epoch: int = UNKNOWN,
        leader: int = UNKNOWN,
        leader_epoch: int = UNKNOWN,
    ) -> bool:
        """A ListOffsets answer for a reset; applied only if it is still wanted.

        ``offset_epoch`` is the epoch ListOffsets gives for the offset, ``leader``
        and ``leader_epoch`` the leader the metadata names now.
        """
        state = self._states.get(tp)
        if state is None or state.state is not FetchState.AWAIT_RESET:
            return False
        if state.reset_strategy is not strategy:
            return False
        state.position = FetchPosition(offset, offset_epoch, leader, leader_epoch)
        state.state = FetchState.FETCHING
        state.reset_strategy = None
        return True

    def out_of_range(self, tp: TopicPartition, fetch_offset: int) -> bool:
        """OFFSET_OUT_OF_RANGE for a fetch at ``fetch_offset``; True if the caller must raise.

        Applied only if the position is still ``fetch_offset``.
        """
        state = self._states.get(tp)
        if state is None or state.position is None or state.position.offset != fetch_offset:
            return False
        if state.state is not FetchState.FETCHING:
            return False
        if self.default_reset is OffsetResetStrategy.NONE:
            return True
        self.request_reset([tp], self.default_reset)
        return False

    # -- validation (KIP-320) ------------------------------------------------------------

    def leader_changed(
        self, tp: TopicPartition, leader: int, leader_epoch: int, *, can_validate: bool
    ) -> bool:
        """Metadata names ``leader`` at ``leader_epoch``; True if validation is now due.

        Kafka's ``maybeValidatePositionForCurrentLeader``: a position
        confirmed with another leader is validated against the new one,
        unless it knows no epoch of its own or the broker cannot answer
        OffsetForLeaderEpoch (then it is taken as it is).
        """
        state = self._states.get(tp)
        if state is None or state.position is None or leader == UNKNOWN:
            return False
        if state.state not in (FetchState.FETCHING, FetchState.AWAIT_VALIDATION):
            return False
        old = state.position
        if (old.leader, old.leader_epoch) == (leader, leader_epoch):
            return state.state is FetchState.AWAIT_VALIDATION
        state.position = attrs.evolve(old, leader=leader, leader_epoch=leader_epoch)
        if can_validate and old.offset_epoch != UNKNOWN and leader_epoch != UNKNOWN:
            state.state = FetchState.AWAIT_VALIDATION
            state.retry_at_ms = 0.0
            return True
        state.state = FetchState.FETCHING
        return False

    def awaiting_validation(self, now_ms: float) -> dict[TopicPartition, FetchPosition]:
        return {
            tp: state.position
            for tp, state in self._states.items()
            if state.state is FetchState.AWAIT_VALIDATION
            and state.position is not None
            and state.retry_at_ms <= now_ms
        }

    def complete_validation(
        self,
        tp: TopicPartition,
        requested: FetchPosition,
        end_offset: int,
        end_epoch: int,
    ) -> Truncation | None:
        """Kafka's ``maybeCompleteValidation``; a Truncation when the policy is ``none``."""
        state = self._states.get(tp)
        if state is None or state.state is not FetchState.AWAIT_VALIDATION:
            return None
        current = state.position
        if current != requested or current is None:
            return None  # a seek or another leader change won
        has_policy = self.default_reset is not OffsetResetStrategy.NONE
        if end_offset == UNKNOWN or end_epoch == UNKNOWN:
            if has_policy:
                self.request_reset([tp], self.default_reset)
                return None
            return Truncation(tp, current, None)
        if end_offset < current.offset:
            if has_policy:
                state.position = attrs.evolve(current, offset=end_offset, offset_epoch=end_epoch)
                state.state = FetchState.FETCHING
                return None
            return Truncation(tp, current, end_offset)
        state.state = FetchState.FETCHING
        return None

    # -- fetching ------------------------------------------------------------------------

    def fetchable(self) -> Iterator[tuple[TopicPartition, FetchPosition]]:
        for tp, state in self._states.items():
            if state.state is FetchState.FETCHING and state.position is not None:
                yield tp, state.position

    def advance(self, tp: TopicPartition, offset: int, offset_epoch: int) -> None:
        """Records up to ``offset`` were handed out; the last came from ``offset_epoch``."""
        state = self._states[tp]
        assert state.position is not None, "only a partition with a position advances"
        epoch = offset_epoch if offset_epoch != UNKNOWN else state.position.offset_epoch
        state.position = attrs.evolve(state.position, offset=offset, offset_epoch=epoch)

    def skip_validation(self, tp: TopicPartition, requested: FetchPosition) -> None:
        """The leader cannot answer OffsetForLeaderEpoch: take the position as it is."""
        state = self._states.get(tp)
        awaiting = state is not None and state.state is FetchState.AWAIT_VALIDATION
        if awaiting and state is not None and state.position == requested:
            state.state = FetchState.FETCHING

    def next_retry_ms(self, now_ms: float) -> float | None:
        """How long until a reset or validation in backoff may be tried again."""
        waits = [
            state.retry_at_ms - now_ms for state in self._states.values()
            if state.state in (FetchState.AWAIT_RESET, FetchState.AWAIT_VALIDATION)
            and now_ms < state.retry_at_ms < float("inf")
        ]
        return min(waits, default=None)

    def backoff(self, tps: Iterable[TopicPartition], until_ms: float) -> None:
        """A request about these partitions failed: not again before ``until_ms``."""
        for tp in tps:
            state = self._states.get(tp)
            if state is not None:
                state.retry_at_ms = until_ms

    def update_log_bounds(
        self, tp: TopicPartition, high_watermark: int, log_start_offset: int,
        last_stable_offset: int,
    ) -> None:
        state = self._states.get(tp)
        if state is not None:
            state.high_watermark = high_watermark
            state.log_start_offset = log_start_offset
            state.last_stable_offset = last_stable_offset
