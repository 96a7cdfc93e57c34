"""The idempotent producer's bookkeeping (sans-I/O): producer id, epoch and sequences.

The idempotent (not transactional) part of Kafka's ``TransactionManager``,
``TxnPartitionMap`` and ``TxnPartitionEntry`` (apache/kafka,
clients/.../producer/internals), with the same rules:

* **Producer id.** Before its first batch goes out the producer asks any
  broker for an id (InitProducerId, transactional id null);
  ``handle_init_producer_id`` reads the answer: NONE sets the id and epoch,
  retriable errors and a broken connection are tried again after a backoff,
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED / CLUSTER_AUTHORIZATION_FAILED fail
  the waiting batches (the next batch asks again), anything else is fatal.
* **Sequences.** A batch gets its partition's next sequence, with the id and
  epoch, when it is first drained (``drained``) and keeps them through every
  retry, so a broker that appended an earlier attempt answers the retry as a
  duplicate. Halves of a batch the broker found too large take over its
  sequence range (nothing of it was appended). Sequences wrap at 2**31 - 1.
* **In flight.** Per partition, the batches that have a sequence and are not
  completed or failed yet (on the wire or queued for a retry), ordered by id,
  epoch and sequence. ``holds`` is Kafka's ``shouldStopDrainBatchesForPartition``:
  nothing goes without a producer id; a batch that has a sequence goes only
  when it is the lowest in flight (so after a retry a partition's batches are
  re-sent in sequence order, one at a time); a new batch waits while batches of
  an older id or epoch are in flight, or while the partition's sequence is
  unresolved.
* **Answers** (``can_retry``, Kafka's ``canRetry``): UNKNOWN_PRODUCER_ID is
  retried, and unless the answer has no log start offset or the batch's
  sequence was already rewritten, the partition asks for an epoch bump.
  OUT_OF_ORDER_SEQUENCE_NUMBER for a batch that is not the next after the
  last acknowledged one (an earlier batch failed) is retried as it is; for
  the next one it is a real gap: retried after an epoch bump.
  DUPLICATE_SEQUENCE_NUMBER is a success without an offset (``produce_core``).
* **Failures** (``failed``, ``handleFailedBatch``): a batch that fails with
  OUT_OF_ORDER_SEQUENCE_NUMBER or UNKNOWN_PRODUCER_ID, or that the broker
  refused for good while it still had retries left (so its sequences are
  known to be free and the later batches' must move down), makes its
  partition ask for an epoch bump, which restarts them from 0. A batch out
  of retries or time is not known to be refused: nothing moves (Kafka's
  ``adjustSequenceNumbers``). CLUSTER_AUTHORIZATION_FAILED,
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED, PRODUCER_FENCED and
  UNSUPPORTED_VERSION are fatal: ``fatal_error`` is set and the producer
  sends nothing more.
* **Expiry** (``expired``, ``resolve_sequences``): a batch that expires in the
  queue after having been sent leaves its partition's sequence unresolved:
  new batches wait until the partition has nothing in flight; if the last
  acknowledged sequence then meets the next one the partition carries on,
  else it asks for an epoch bump.
* **Epoch bump** (``bump_epoch_if_needed``, KIP-360's client side): the
  producer raises its own epoch by one and restarts the sequences of the
  partitions that asked for it at 0, rewriting the sequences of their
  batches in flight in order; other partitions restart at 0 with the new
  epoch once their own batches in flight are done. A broker takes a higher
  epoch from a known producer only at sequence 0. At epoch 32767 the
  producer drops its id and asks for a new one, and the partitions'
  sequences are rewritten when it arrives (Kafka rewrites them at once with
  the empty id, under which nothing is sent either).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Final

import attrs

from broker.client.accumulator import ProducerBatch, ProducerIdAndEpoch, increment_sequence
from broker.client.types import TopicPartition
from quorum.wire.error_codes import Errors

__all__ = [
    "NO_PRODUCER_ID",
    "IdempotenceManager",
    "InitOutcome",
    "increment_sequence",
]

NO_PRODUCER_ID: Final = ProducerIdAndEpoch()
_MAX_EPOCH: Final = 2**15 - 1
_NO_LAST_ACKED: Final = -1
# errors that put the producer in Kafka's fatal state (maybeTransitionToErrorState)
_FATAL: Final = frozenset({
    Errors.CLUSTER_AUTHORIZATION_FAILED,
    Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    Errors.PRODUCER_FENCED,
    Errors.UNSUPPORTED_VERSION,
})
# InitProducerId answers that fail the waiting batches but let a later batch try again
_AUTHORIZATION: Final = frozenset({
    Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    Errors.CLUSTER_AUTHORIZATION_FAILED,
})
# UnknownProducerIdException extends OutOfOrderSequenceException in Kafka
_SEQUENCE_GAP: Final = frozenset({
    Errors.OUT_OF_ORDER_SEQUENCE_NUMBER,
    Errors.UNKNOWN_PRODUCER_ID,
})


def _in_flight_order(batch: ProducerBatch) -> tuple[int, int, int]:
    return (batch.producer_id, batch.producer_epoch, batch.base_sequence)


@attrs.define
class _Partition:
    """One partition's sequences (Kafka's ``TxnPartitionEntry``)."""

    id_and_epoch: ProducerIdAndEpoch = NO_PRODUCER_ID
    # the base sequence of the next batch drained for the partition
    next_sequence: int = 0
    # the last sequence of the last acknowledged batch
    last_acked_sequence: int = _NO_LAST_ACKED
    last_acked_offset: int = -1
    # sorted by (producer id, epoch, base sequence)
    in_flight: list[ProducerBatch] = attrs.field(factory=list)

    def add(self, batch: ProducerBatch) -> None:
        self.in_flight.append(batch)
        self.in_flight.sort(key=_in_flight_order)

    def remove(self, batch: ProducerBatch) -> None:
        if batch in self.in_flight:
            self.in_flight.remove(batch)

    def start_at_beginning(self, id_and_epoch: ProducerIdAndEpoch) -> None:
        """Rewrite the batches in flight from sequence 0 under ``id_and_epoch``, in order."""
        sequence = 0
        for batch in self.in_flight:
            batch.reset_producer_state(id_and_epoch, sequence)
            sequence += batch.record_count
        self.in_flight.sort(key=_in_flight_order)
        self.id_and_epoch = id_and_epoch
        self.next_sequence = sequence
        self.last_acked_sequence = _NO_LAST_ACKED


class InitOutcome(enum.Enum):
    """What the producer does after an InitProducerId answer."""

    DONE = "done"
    RETRY = "retry"  # after a backoff
    FAIL_BATCHES = "fail_batches"  # the waiting batches fail; a later batch asks again
    FATAL = "fatal"  # ``fatal_error`` is set


class IdempotenceManager:
    def __init__(self) -> None:
        self.id_and_epoch = NO_PRODUCER_ID
        self.fatal_error: Errors | None = None
        self._partitions: dict[TopicPartition, _Partition] = {}
        # partition -> the sequence the next batch would have if the expired ones were lost
        self._unresolved: dict[TopicPartition, int] = {}
        self._to_rewrite: set[TopicPartition] = set()
        # partitions to rewrite once a new producer id arrives (the epoch ran out)
        self._rewrite_after_init: set[TopicPartition] = set()
        self.epoch_bump_required = False

    # -- the producer id -----------------------------------------------------------------

    @property
    def needs_producer_id(self) -> bool:
        return self.fatal_error is None and not self.id_and_epoch.is_valid

    def handle_init_producer_id(
        self, error: Errors, producer_id: int = -1, epoch: int = -1
    ) -> InitOutcome:
        """An InitProducerId answer (a broken connection is NETWORK_EXCEPTION)."""
        if error is Errors.NONE:
            self.id_and_epoch = ProducerIdAndEpoch(producer_id, epoch)
            for tp in self._rewrite_after_init:
                self._partition(tp).start_at_beginning(self.id_and_epoch)
                self._unresolved.pop(tp, None)
            self._rewrite_after_init.clear()
            return InitOutcome.DONE
        if error.retriable:
            return InitOutcome.RETRY
        if error in _AUTHORIZATION:
            return InitOutcome.FAIL_BATCHES
        # Kafka: INVALID_PRODUCER_EPOCH and PRODUCER_FENCED become PRODUCER_FENCED, the rest
        # "Unexpected error in InitProducerIdResponse": all fatal
        self.fatal_error = (
            Errors.PRODUCER_FENCED if error is Errors.INVALID_PRODUCER_EPOCH else error
        )
        return InitOutcome.FATAL

    # -- draining ------------------------------------------------------------------------

    def holds(self, batch: ProducerBatch) -> bool:
        """Whether ``batch`` (its partition's queue head) must wait before it is drained."""
        if not self.id_and_epoch.is_valid or self.fatal_error is not None:
            return True
        tp = batch.tp
        entry = self._partitions.get(tp)
        if entry is None:
            return False
        if not batch.has_sequence:
            if entry.in_flight and entry.id_and_epoch != self.id_and_epoch:
                # a new batch at the new epoch (sequence 0) could land before older ones
                return True
            if tp in self._unresolved:
                return True
        if not batch.has_sequence or not entry.in_flight:
            return False
        # a retried batch goes only as the lowest in flight: later ones wait their turn
        return entry.in_flight[0].base_sequence != batch.base_sequence

    def drained(self, batch: ProducerBatch) -> None:
        """``batch`` leaves its queue: a first send takes the partition's next sequence."""
        if batch.has_sequence:
            return  # a retry keeps its id, epoch and sequence: the broker may hold it
        entry = self._partition(batch.tp)
        if entry.id_and_epoch != self.id_and_epoch and not entry.in_flight:
            # the id or epoch changed and the partition's older batches are done
            entry.start_at_beginning(self.id_and_epoch)
        batch.set_producer_state(self.id_and_epoch, entry.next_sequence)
        entry.next_sequence = increment_sequence(entry.next_sequence, batch.record_count)
        entry.add(batch)

    def split(self, batch: ProducerBatch, parts: Iterable[ProducerBatch]) -> None:
        """``batch`` was split into ``parts``, which carry its sequence range."""
        entry = self._partitions.get(batch.tp)
        if entry is None or not batch.has_sequence:
            return
        entry.remove(batch)
        for part in parts:
            assert part.has_sequence, "the accumulator gives split parts their sequences"
            entry.add(part)

    # -- answers -------------------------------------------------------------------------

    def completed(self, batch: ProducerBatch, base_offset: int) -> None:
        """``batch`` was appended (``base_offset`` -1: not known)."""
        entry = self._partition(batch.tp)
        entry.last_acked_sequence = max(entry.last_acked_sequence, batch.last_sequence)
        if base_offset >= 0:
            entry.last_acked_offset = max(
                entry.last_acked_offset, base_offset + batch.record_count - 1
            )
        entry.remove(batch)

    def can_retry(
        self, error: Errors, batch: ProducerBatch, log_start_offset: int, *, otherwise: bool
    ) -> bool:
        """Whether a batch with retries and time left is retried after ``error``.

        ``otherwise`` is the answer for errors without a sequence meaning.
        """
        tp = batch.tp
        if error is Errors.UNKNOWN_PRODUCER_ID:
            # -1: the broker did not know its log start offset yet: ask again as we are
            if log_start_offset != -1 and not batch.sequence_reset:
                # the log's head went (retention) or the broker lost the producer's
                # state: both ways, Kafka's idempotent producer bumps its epoch
                self._request_epoch_bump(tp)
            return True
        if error is Errors.OUT_OF_ORDER_SEQUENCE_NUMBER:
            unresolved = tp in self._unresolved
            if not unresolved and (
                batch.sequence_reset or not self._is_next_sequence(tp, batch.base_sequence)
            ):
                return True  # an earlier batch failed: this one follows it in order
            if not unresolved or self._unresolved[tp] == batch.base_sequence:
                self._request_epoch_bump(tp)  # a real gap at the head of the partition
            return True
        return otherwise

    def failed(self, batch: ProducerBatch, error: Errors, *, adjust_sequences: bool) -> None:
        """``batch`` will not be delivered; ``adjust_sequences``: it had retries left."""
        if error in _FATAL:
            self.fatal_error = error
        entry = self._partitions.get(batch.tp)
        if entry is not None:
            entry.remove(batch)
        if self.fatal_error is not None:
            return
        if error in _SEQUENCE_GAP or adjust_sequences:
            # the later batches' sequences must move down: a new epoch restarts them at 0
            self._request_epoch_bump(batch.tp)

    def expired(self, batch: ProducerBatch) -> None:
        """``batch`` expired in the queue (failed with a timeout, sequences not adjusted)."""
        self.failed(batch, Errors.REQUEST_TIMED_OUT, adjust_sequences=False)
        if batch.attempts > 0 and batch.has_sequence:
            # it was sent before: whether the broker has it is unknown
            following = batch.last_sequence + 1
            self._unresolved[batch.tp] = max(self._unresolved.get(batch.tp, following), following)

    def resolve_sequences(self) -> None:
        """Kafka's ``maybeResolveSequences``: settle partitions whose batches all finished."""
        for tp in list(self._unresolved):
            if self.in_flight(tp):
                continue
            if not self._is_next_sequence(tp, self.next_sequence(tp)):
                # every batch in flight expired: whether the broker has them is unknown
                self._request_epoch_bump(tp)
            del self._unresolved[tp]

    def bump_epoch_if_needed(self) -> None:
        """Kafka's ``bumpIdempotentEpochAndResetIdIfNeeded`` (the InitProducerId part is
        ``needs_producer_id``)."""
        if not self.epoch_bump_required or self.fatal_error is not None:
            return
        self.epoch_bump_required = False
        current = self.id_and_epoch
        rewrite, self._to_rewrite = self._to_rewrite, set()
        if not current.is_valid or current.epoch >= _MAX_EPOCH:
            self.id_and_epoch = NO_PRODUCER_ID
            self._rewrite_after_init |= rewrite
            return
        self.id_and_epoch = ProducerIdAndEpoch(current.producer_id, current.epoch + 1)
        for tp in rewrite:
            self._partition(tp).start_at_beginning(self.id_and_epoch)
            self._unresolved.pop(tp, None)

    # -- reading -------------------------------------------------------------------------

    def next_sequence(self, tp: TopicPartition) -> int:
        entry = self._partitions.get(tp)
        return 0 if entry is None else entry.next_sequence

    def in_flight(self, tp: TopicPartition) -> list[ProducerBatch]:
        entry = self._partitions.get(tp)
        return [] if entry is None else list(entry.in_flight)

    def is_unresolved(self, tp: TopicPartition) -> bool:
        return tp in self._unresolved

    # -- internals -----------------------------------------------------------------------

    def _partition(self, tp: TopicPartition) -> _Partition:
        entry = self._partitions.get(tp)
        if entry is None:
            entry = self._partitions[tp] = _Partition()
        return entry

    def _request_epoch_bump(self, tp: TopicPartition) -> None:
        self.epoch_bump_required = True
        self._to_rewrite.add(tp)

    def _is_next_sequence(self, tp: TopicPartition, sequence: int) -> bool:
        entry = self._partitions.get(tp)
        last = _NO_LAST_ACKED if entry is None else entry.last_acked_sequence
        return sequence - last == 1
