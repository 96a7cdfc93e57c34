"""The ISR state of a partition leader, and every change of it.

Kafka's ``PartitionState`` (``Partition.scala``): the ISR the controller
committed, or a change sent to it in an AlterPartition request and not yet
answered. One change is in flight at a time. The maximal ISR (KIP-497) is
what the high watermark and acks=all count: a replica being added counts at
once (a stricter rule, harmless if the change fails), a replica being
removed keeps counting until the controller committed its removal (the
controller may still elect it until then).

==============  =====================================================================
from            to (when)
==============  =====================================================================
Committed       PendingExpand  - a caught-up follower is sent for addition
                PendingShrink  - followers behind for replica.lag.time.max.ms are
                                 sent for removal
                Committed      - a new assignment from the metadata image
PendingExpand   Committed      - the controller accepted a change (its ISR); or
                                 rejected it with INELIGIBLE_REPLICA or
                                 OPERATION_NOT_ATTEMPTED (nothing applied: the last
                                 committed ISR); or a new assignment arrives
                PendingExpand  - any other answer: kept until new metadata
                                 (FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION,
                                 INVALID_REQUEST, NEW_LEADER_ELECTED, unknown topic)
                                 or sent again (NOT_CONTROLLER and other errors)
PendingShrink   (as PendingExpand)
==============  =====================================================================

Transitions are functions of (state, event) returning the new state; a move
the table does not list raises ``IllegalIsrTransitionError``.
"""

from __future__ import annotations

import enum
from typing import ClassVar, Final, TypeAlias

import attrs

from broker.replica.errors import IllegalIsrTransitionError
from quorum.wire.error_codes import Errors

__all__ = [
    "NO_ISR",
    "RESET_ERRORS",
    "RETRY_UNLESS",
    "CommittedIsr",
    "IsrChange",
    "IsrState",
    "IsrStateKind",
    "PendingExpandIsr",
    "PendingShrinkIsr",
    "after_alter_partition_accepted",
    "after_alter_partition_error",
    "after_new_assignment",
    "committed_isr",
    "prepare_expand",
    "prepare_shrink",
]


class IsrStateKind(enum.Enum):
    COMMITTED = "Committed"
    PENDING_EXPAND = "PendingExpand"
    PENDING_SHRINK = "PendingShrink"


@attrs.frozen(kw_only=True)
class IsrChange:
    """What the leader asks the controller for (one AlterPartition partition entry)."""

    leader_epoch: int
    partition_epoch: int
    isr: tuple[int, ...]  # sorted
    leader_recovery_state: int = 0  # RECOVERED


@attrs.frozen
class CommittedIsr:
    isr: frozenset[int]
    kind: ClassVar[IsrStateKind] = IsrStateKind.COMMITTED

    @property
    def maximal_isr(self) -> frozenset[int]:
        return self.isr

    @property
    def in_flight(self) -> bool:
        return False


@attrs.frozen(kw_only=True)
class PendingExpandIsr:
    new_replica: int
    sent: IsrChange
    last_committed: CommittedIsr
    kind: ClassVar[IsrStateKind] = IsrStateKind.PENDING_EXPAND

    @property
    def isr(self) -> frozenset[int]:
        return self.last_committed.isr

    @property
    def maximal_isr(self) -> frozenset[int]:
        return self.last_committed.isr | {self.new_replica}

    @property
    def in_flight(self) -> bool:
        return True


@attrs.frozen(kw_only=True)
class PendingShrinkIsr:
    out_of_sync: frozenset[int]
    sent: IsrChange
    last_committed: CommittedIsr
    kind: ClassVar[IsrStateKind] = IsrStateKind.PENDING_SHRINK

    @property
    def isr(self) -> frozenset[int]:
        return self.last_committed.isr

    @property
    def maximal_isr(self) -> frozenset[int]:
        # the removal is not committed: the controller may still elect these replicas
        return self.last_committed.isr

    @property
    def in_flight(self) -> bool:
        return True


IsrState: TypeAlias = CommittedIsr | PendingExpandIsr | PendingShrinkIsr

# the controller says nothing was applied: back to the last committed ISR
RESET_ERRORS: Final = frozenset({Errors.INELIGIBLE_REPLICA, Errors.OPERATION_NOT_ATTEMPTED})
# answers after which the leader waits for new metadata instead of sending again
RETRY_UNLESS: Final = frozenset({
    Errors.UNKNOWN_TOPIC_OR_PARTITION,
    Errors.UNKNOWN_TOPIC_ID,
    Errors.FENCED_LEADER_EPOCH,
    Errors.INVALID_UPDATE_VERSION,
    Errors.INVALID_REQUEST,
    Errors.NEW_LEADER_ELECTED,
})


def _committed(state: IsrState, target: str) -> CommittedIsr:
    if not isinstance(state, CommittedIsr):
        raise IllegalIsrTransitionError(
            state, target, "an AlterPartition change is already in flight (one at a time)"
        )
    return state


def prepare_expand(
    state: IsrState, replica_id: int, *, leader_epoch: int, partition_epoch: int
) -> PendingExpandIsr:
    committed = _committed(state, IsrStateKind.PENDING_EXPAND.value)
    if replica_id in committed.isr:
        raise IllegalIsrTransitionError(
            state, IsrStateKind.PENDING_EXPAND.value, f"replica {replica_id} is in the ISR already"
        )
    change = IsrChange(
        leader_epoch=leader_epoch,
        partition_epoch=partition_epoch,
        isr=tuple(sorted(committed.isr | {replica_id})),
    )
    return PendingExpandIsr(new_replica=replica_id, sent=change, last_committed=committed)


def prepare_shrink(
    state: IsrState, out_of_sync: frozenset[int], *, leader_epoch: int, partition_epoch: int
) -> PendingShrinkIsr:
    committed = _committed(state, IsrStateKind.PENDING_SHRINK.value)
    if not out_of_sync or not out_of_sync < committed.isr:
        raise IllegalIsrTransitionError(
            state,
            IsrStateKind.PENDING_SHRINK.value,
            f"replicas {sorted(out_of_sync)} are not a proper non-empty subset of the ISR",
        )
    change = IsrChange(
        leader_epoch=leader_epoch,
        partition_epoch=partition_epoch,
        isr=tuple(sorted(committed.isr - out_of_sync)),
    )
    return PendingShrinkIsr(out_of_sync=out_of_sync, sent=change, last_committed=committed)


def _pending(state: IsrState, target: str) -> PendingExpandIsr | PendingShrinkIsr:
    if isinstance(state, CommittedIsr):
        raise IllegalIsrTransitionError(state, target, "no AlterPartition change is in flight")
    return state


def after_alter_partition_accepted(state: IsrState, isr: tuple[int, ...]) -> CommittedIsr:
    """The controller committed an ISR (ours, or the same one it already had)."""
    _pending(state, IsrStateKind.COMMITTED.value)
    return committed_isr(isr)


def after_alter_partition_error(state: IsrState, error: Errors) -> tuple[IsrState, bool]:
    """The state after a rejected change, and whether to send it again."""
    pending = _pending(state, "the state after an AlterPartition error")
    if error in RESET_ERRORS:
        return pending.last_committed, False
    return pending, error not in RETRY_UNLESS


# committed ISRs are immutable and few distinct ones exist (a broker's 100,000 partitions on
# three brokers have a handful): one object each, shared, instead of 264 B per partition
_COMMITTED: dict[tuple[int, ...], CommittedIsr] = {}
NO_ISR: Final = CommittedIsr(frozenset())


def committed_isr(isr: tuple[int, ...]) -> CommittedIsr:
    """The (shared) committed state of ``isr``."""
    found = _COMMITTED.get(isr)
    if found is None:
        if len(_COMMITTED) >= 10_000:
            _COMMITTED.clear()  # a bound for brokers that see very many distinct ISRs
        found = _COMMITTED[isr] = CommittedIsr(frozenset(isr))
    return found


def after_new_assignment(isr: tuple[int, ...]) -> CommittedIsr:
    """A new assignment from the metadata image replaces any change in flight."""
    return committed_isr(isr)
