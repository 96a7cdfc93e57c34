"""The producer state's rules for an idempotent producer's batch, alone (Kafka's
ProducerStateManager / ProducerAppendInfo without transactions)."""

from __future__ import annotations

from broker.replica.producer_state import (
    INT32_MAX,
    ProducerRefusal,
    ProducerStateManager,
    batch_of,
    increment_sequence,
)
from quorum.log import ProducerBatch
from quorum.wire.batch import BatchHeader
from quorum.wire.error_codes import Errors
from quorum.wire.records import Record, build_batch

PID = 42


def header(seq: int, *, count: int = 1, epoch: int = 0, pid: int = PID) -> BatchHeader:
    records = [Record(offset_delta=i, value=b"v") for i in range(count)]
    data = build_batch(records, producer_id=pid, producer_epoch=epoch, base_sequence=seq)
    return BatchHeader.parse(data)


def appended(state: ProducerStateManager, seq: int, offset: int, *, count: int = 1,
             epoch: int = 0, timestamp: int = 0) -> None:
    """A batch the leader checked and appended at ``offset``."""
    batch = header(seq, count=count, epoch=epoch)
    assert state.check_leader_append(batch) is None
    state.update(batch_of(batch, first_offset=offset, timestamp=timestamp))


def refusal(state: ProducerStateManager, batch: BatchHeader) -> Errors:
    verdict = state.check_leader_append(batch)
    assert isinstance(verdict, ProducerRefusal), verdict
    return verdict.error


def test_a_retry_of_any_of_the_last_five_batches_is_the_original() -> None:
    state = ProducerStateManager()
    for n in range(7):
        appended(state, seq=2 * n, offset=100 + 2 * n, count=2)
    for n in range(2, 7):
        original = state.check_leader_append(header(2 * n, count=2))
        assert original == ProducerBatch(first_seq=2 * n, last_seq=2 * n + 1,
                                         first_offset=100 + 2 * n, last_offset=101 + 2 * n,
                                         timestamp=0)
    # older than the five kept: Kafka cannot tell it from a gap
    assert refusal(state, header(2, count=2)) == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    # the same first sequence with another length is no duplicate either
    assert refusal(state, header(12, count=1)) == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_a_gap_in_the_sequence_is_out_of_order() -> None:
    state = ProducerStateManager()
    appended(state, seq=0, offset=0, count=3)
    assert refusal(state, header(4)) == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert state.check_leader_append(header(3)) is None


def test_an_older_epoch_is_fenced() -> None:
    state = ProducerStateManager()
    appended(state, seq=0, offset=0, epoch=3)
    assert refusal(state, header(1, epoch=2)) == Errors.INVALID_PRODUCER_EPOCH
    # a retry with the old epoch of a batch it did write is no duplicate of the new epoch
    assert refusal(state, header(0, epoch=2)) == Errors.INVALID_PRODUCER_EPOCH


def test_a_new_epoch_of_a_known_producer_starts_at_sequence_zero() -> None:
    state = ProducerStateManager()
    appended(state, seq=0, offset=0, count=5)
    assert refusal(state, header(5, epoch=1)) == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    appended(state, seq=0, offset=5, epoch=1)
    assert state.epoch_of(PID) == 1
    # the old epoch's batches are no duplicates any more
    assert refusal(state, header(0, count=5)) == Errors.INVALID_PRODUCER_EPOCH


def test_an_unknown_producer_is_admitted_at_any_sequence() -> None:
    state = ProducerStateManager()
    assert state.check_leader_append(header(1234, epoch=7)) is None


def test_the_sequence_wraps_at_int32_max() -> None:
    assert increment_sequence(INT32_MAX - 1, 3) == 1
    state = ProducerStateManager()
    appended(state, seq=INT32_MAX - 1, offset=0, count=2)
    last = state.last_batch(PID)
    assert last is not None and last.last_seq == INT32_MAX
    assert refusal(state, header(1)) == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    appended(state, seq=0, offset=2, count=2)
    assert state.check_leader_append(header(INT32_MAX - 1, count=2)) is not None


def test_a_follower_update_checks_nothing_and_an_epoch_change_restarts_the_history() -> None:
    state = ProducerStateManager()
    state.update(batch_of(header(9, epoch=2), first_offset=0, timestamp=0))
    state.update(batch_of(header(0, epoch=1), first_offset=1, timestamp=0))
    assert state.epoch_of(PID) == 1
    assert state.check_leader_append(header(0, epoch=1)) is not None


def test_a_new_log_start_drops_producers_whose_last_batch_lies_wholly_below_it() -> None:
    state = ProducerStateManager()
    appended(state, seq=0, offset=0, count=3)
    other = header(0, pid=7)
    state.update(batch_of(other, first_offset=3, timestamp=0))
    state.truncate_head(3)
    assert PID not in state and 7 in state
    state.truncate_head(4)  # inside producer 7's batch [3, 3]: wholly below 4
    assert 7 not in state and len(state) == 0


def test_a_producer_idle_for_the_expiration_is_forgotten() -> None:
    state = ProducerStateManager(expiration_ms=1_000)
    appended(state, seq=0, offset=0, timestamp=5_000)
    assert state.remove_expired(5_999) == 0
    assert state.remove_expired(6_000) == 1
    assert PID not in state
