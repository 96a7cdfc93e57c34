"""The idempotent producer's sequence bookkeeping, with the accumulator that drains by it."""

from __future__ import annotations

import pytest

from broker.client import (
    ClusterView,
    Decision,
    IdempotenceManager,
    InitOutcome,
    KafkaError,
    ProducerBatch,
    RecordAccumulator,
    TopicPartition,
    cluster_view_from_metadata,
    decide,
)
from broker.client.idempotence import increment_sequence
from quorum.wire.batch import BATCH_HEADER_SIZE, BatchHeader, iter_batch_headers
from quorum.wire.error_codes import Errors

from .metadata_helpers import metadata

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)
VIEW: ClusterView = cluster_view_from_metadata(metadata({"t": [(1, 0), (2, 0)]}))
RETRIES = 10


def started(producer_id: int = 7, epoch: int = 0) -> tuple[RecordAccumulator, IdempotenceManager]:
    manager = IdempotenceManager()
    assert manager.handle_init_producer_id(Errors.NONE, producer_id, epoch) is InitOutcome.DONE
    accumulator = RecordAccumulator(
        # one record of up to 5 bytes per batch: every record is a batch of its own
        batch_size=BATCH_HEADER_SIZE + 12, linger_ms=0, max_request_size=1 << 20,
        delivery_timeout_ms=1_000, gate=manager,
    )
    return accumulator, manager


def add(acc: RecordAccumulator, tp: TopicPartition, *values: bytes, now_ms: float = 0) -> None:
    for value in values:
        acc.append(tp, None, value, (), 1_000, None, now_ms)


def drain(acc: RecordAccumulator, now_ms: float = 0) -> list[ProducerBatch]:
    return [batch for batches in acc.drain(VIEW, [1, 2], now_ms).values() for batch in batches]


def drain_one(acc: RecordAccumulator, now_ms: float = 0) -> ProducerBatch:
    [batch] = drain(acc, now_ms)
    return batch


def header(batch: ProducerBatch) -> BatchHeader:
    assert batch.payload is not None
    [(_, parsed)] = list(iter_batch_headers(batch.payload))
    return parsed


def answer(
    manager: IdempotenceManager, acc: RecordAccumulator, batch: ProducerBatch, error: Errors,
    *, log_start_offset: int = -1,
) -> Decision:
    """What the producer's _finish does with one answer."""
    decision = decide(error, batch, retries=RETRIES, delivery_expired=False,
                      idempotence=manager, log_start_offset=log_start_offset)
    if decision is Decision.DELIVERED:
        manager.completed(batch, 100)
        acc.complete(batch, 100)
    elif decision is Decision.RETRY:
        acc.reenqueue(batch, 0, 0)
    elif decision is Decision.FAIL:
        manager.failed(batch, error, adjust_sequences=batch.attempts < RETRIES)
        acc.fail(batch, KafkaError(error))
    return decision


def test_nothing_is_drained_before_the_producer_id_arrives() -> None:
    manager = IdempotenceManager()
    acc = RecordAccumulator(batch_size=16384, linger_ms=0, max_request_size=1 << 20,
                            delivery_timeout_ms=1_000, gate=manager)
    add(acc, T0, b"a")
    assert manager.needs_producer_id
    assert acc.ready(VIEW, 0).nodes == frozenset() and drain(acc) == []
    manager.handle_init_producer_id(Errors.NONE, 42, 3)
    assert acc.ready(VIEW, 0).nodes == {1}
    sent = header(drain_one(acc))
    assert (sent.producer_id, sent.producer_epoch, sent.base_sequence) == (42, 3, 0)


def test_the_first_drain_gives_each_partition_its_own_run_of_sequences() -> None:
    acc, _ = started(producer_id=7, epoch=2)
    add(acc, T0, b"a", b"b", b"c")
    add(acc, T1, b"x")
    first = drain(acc)
    second, third = drain_one(acc), drain_one(acc)
    got = sorted((b.tp.partition, header(b).base_sequence) for b in [*first, second, third])
    assert got == [(0, 0), (0, 1), (0, 2), (1, 0)]
    assert {(header(b).producer_id, header(b).producer_epoch) for b in first} == {(7, 2)}


def test_a_retry_keeps_its_sequence_and_its_bytes() -> None:
    acc, manager = started()
    add(acc, T0, b"a", b"b")
    first = drain_one(acc)
    sent = first.payload
    assert answer(manager, acc, first, Errors.NOT_LEADER_OR_FOLLOWER) is Decision.RETRY
    again = drain_one(acc)
    assert again is first and again.payload == sent and header(again).base_sequence == 0
    assert header(drain_one(acc)).base_sequence == 1


def test_after_a_retry_the_partition_resends_in_sequence_order_one_at_a_time() -> None:
    acc, manager = started()
    add(acc, T0, b"a", b"b", b"c", b"d")
    b0, b1, b2 = drain_one(acc), drain_one(acc), drain_one(acc)
    # the first failed; the broker refused the later ones as out of order
    assert answer(manager, acc, b2, Errors.OUT_OF_ORDER_SEQUENCE_NUMBER) is Decision.RETRY
    assert answer(manager, acc, b0, Errors.NOT_ENOUGH_REPLICAS) is Decision.RETRY
    assert answer(manager, acc, b1, Errors.OUT_OF_ORDER_SEQUENCE_NUMBER) is Decision.RETRY
    assert not manager.epoch_bump_required  # an earlier batch failed: no real gap
    assert list(acc.queued_batches())[:3] == [b0, b1, b2]
    assert drain_one(acc) is b0
    assert drain(acc) == []  # b1 waits while b0 is the lowest in flight
    answer(manager, acc, b0, Errors.NONE)
    assert drain_one(acc) is b1
    answer(manager, acc, b1, Errors.NONE)
    assert drain_one(acc) is b2
    answer(manager, acc, b2, Errors.NONE)
    assert header(drain_one(acc)).base_sequence == 3  # the new batch, after them


def test_out_of_order_at_the_head_bumps_the_epoch_and_rewrites_the_batches_in_flight() -> None:
    acc, manager = started(producer_id=7, epoch=4)
    add(acc, T0, b"a", b"b")
    add(acc, T1, b"x")
    b0, other = sorted(drain(acc), key=lambda b: b.tp.partition)
    b1 = drain_one(acc)
    answer(manager, acc, other, Errors.NONE)
    # b0 follows the last acknowledged sequence: the broker lost something
    assert answer(manager, acc, b0, Errors.OUT_OF_ORDER_SEQUENCE_NUMBER) is Decision.RETRY
    assert manager.epoch_bump_required
    manager.bump_epoch_if_needed()
    assert (manager.id_and_epoch.producer_id, manager.id_and_epoch.epoch) == (7, 5)
    assert [(b.producer_epoch, b.base_sequence) for b in manager.in_flight(T0)] == [(5, 0), (5, 1)]
    assert b1.sequence_reset and b1.payload is None
    # b1's answer to its old sequence: retried as it is, no second bump
    assert answer(manager, acc, b1, Errors.OUT_OF_ORDER_SEQUENCE_NUMBER) is Decision.RETRY
    assert not manager.epoch_bump_required
    again = drain_one(acc)
    assert again is b0 and (header(again).producer_epoch, header(again).base_sequence) == (5, 0)
    # the partition that asked for nothing moves to the new epoch from 0 on its next batch
    add(acc, T1, b"y")
    answer(manager, acc, b0, Errors.NONE)
    later = sorted(drain(acc), key=lambda b: b.tp.partition)
    assert [(b.tp.partition, header(b).producer_epoch, header(b).base_sequence)
            for b in later] == [(0, 5, 1), (1, 5, 0)]


def test_a_new_batch_waits_while_batches_of_the_old_epoch_are_in_flight() -> None:
    acc, manager = started()
    add(acc, T0, b"a")
    add(acc, T1, b"x")
    old, failing = sorted(drain(acc), key=lambda b: b.tp.partition)
    assert answer(manager, acc, failing, Errors.CORRUPT_MESSAGE) is Decision.FAIL
    manager.bump_epoch_if_needed()  # the failure had retries left: the broker may hold it
    assert manager.id_and_epoch.epoch == 1
    add(acc, T0, b"b")
    assert drain(acc) == []  # sequence 0 at epoch 1 could land before `old`
    answer(manager, acc, old, Errors.NONE)
    fresh = drain_one(acc)
    assert (header(fresh).producer_epoch, header(fresh).base_sequence) == (1, 0)


def test_unknown_producer_id_is_retried_and_bumps_only_when_the_log_start_is_known() -> None:
    acc, manager = started()
    add(acc, T0, b"a")
    batch = drain_one(acc)
    assert answer(manager, acc, batch, Errors.UNKNOWN_PRODUCER_ID) is Decision.RETRY
    assert not manager.epoch_bump_required
    again = drain_one(acc)
    assert answer(manager, acc, again, Errors.UNKNOWN_PRODUCER_ID,
                  log_start_offset=50) is Decision.RETRY
    assert manager.epoch_bump_required


@pytest.mark.parametrize(
    ("error", "attempts", "bump"),
    [
        (Errors.INVALID_PRODUCER_EPOCH, 0, True),  # retries left: the sequences may be off
        (Errors.INVALID_RECORD, 0, True),
        (Errors.INVALID_RECORD, RETRIES, False),  # out of retries: not known, not adjusted
        (Errors.NOT_ENOUGH_REPLICAS, RETRIES, False),
    ],
)
def test_a_failed_batch_bumps_the_epoch_when_kafka_adjusts_sequences(
    error: Errors, attempts: int, bump: bool
) -> None:
    acc, manager = started()
    add(acc, T0, b"a")
    batch = drain_one(acc)
    batch.attempts = attempts
    assert answer(manager, acc, batch, error) is Decision.FAIL
    assert manager.epoch_bump_required is bump
    assert manager.in_flight(T0) == []


def test_a_fatal_error_stops_the_producer() -> None:
    acc, manager = started()
    add(acc, T0, b"a", b"b")
    answer(manager, acc, drain_one(acc), Errors.CLUSTER_AUTHORIZATION_FAILED)
    assert manager.fatal_error is Errors.CLUSTER_AUTHORIZATION_FAILED
    assert drain(acc) == [] and not manager.needs_producer_id


def test_duplicate_sequence_is_a_delivery() -> None:
    acc, manager = started()
    add(acc, T0, b"a")
    batch = drain_one(acc)
    assert answer(manager, acc, batch, Errors.DUPLICATE_SEQUENCE_NUMBER) is Decision.DELIVERED
    assert manager.in_flight(T0) == [] and not manager.epoch_bump_required


def test_split_halves_take_over_the_sequence_range() -> None:
    acc, manager = started()
    acc.batch_size = 16384
    add(acc, T0, b"a", b"b", b"c")
    whole = drain_one(acc)
    add(acc, T0, b"d")
    after = drain_one(acc)
    assert (header(whole).base_sequence, header(after).base_sequence) == (0, 3)
    first, second = acc.split(whole, 0)
    manager.split(whole, (first, second))
    assert [(b.base_sequence, b.record_count) for b in manager.in_flight(T0)] == [
        (0, 1), (1, 2), (3, 1)
    ]
    assert header(drain_one(acc)).base_sequence == 0
    assert drain(acc) == []  # the second half waits for the first


def test_an_expired_retry_holds_new_batches_and_a_gap_after_it_bumps_the_epoch() -> None:
    acc, manager = started()
    add(acc, T0, b"a", b"b")
    b0, b1 = drain_one(acc), drain_one(acc)
    answer(manager, acc, b0, Errors.NOT_ENOUGH_REPLICAS)
    assert acc.expire(5_000) == [b0]
    manager.expired(b0)
    acc.fail(b0, KafkaError(Errors.REQUEST_TIMED_OUT))
    assert manager.is_unresolved(T0)
    add(acc, T0, b"c", now_ms=5_000)
    manager.resolve_sequences()
    assert manager.is_unresolved(T0) and drain(acc, 5_000) == []  # b1 is still out
    # b1 comes right after the expired b0: the broker never got b0
    assert answer(manager, acc, b1, Errors.OUT_OF_ORDER_SEQUENCE_NUMBER) is Decision.RETRY
    assert manager.epoch_bump_required
    manager.bump_epoch_if_needed()
    assert not manager.is_unresolved(T0)
    assert [(b.producer_epoch, b.base_sequence) for b in manager.in_flight(T0)] == [(1, 0)]


def test_an_expired_retry_with_nothing_acknowledged_after_it_bumps_the_epoch() -> None:
    acc, manager = started()
    add(acc, T0, b"a", b"b")
    b0, b1 = drain_one(acc), drain_one(acc)
    answer(manager, acc, b0, Errors.NOT_ENOUGH_REPLICAS)
    manager.expired(b0)
    manager.failed(b1, Errors.REQUEST_TIMED_OUT, adjust_sequences=False)
    assert not manager.epoch_bump_required
    manager.resolve_sequences()
    # whether the broker holds b0 and b1 is unknown: a new epoch starts clean
    assert not manager.is_unresolved(T0) and manager.epoch_bump_required


def test_an_expired_retry_resolves_when_a_later_batch_was_acknowledged() -> None:
    acc, manager = started()
    add(acc, T0, b"a", b"b")
    b0, b1 = drain_one(acc), drain_one(acc)
    answer(manager, acc, b0, Errors.NOT_ENOUGH_REPLICAS)
    manager.expired(b0)
    acc.fail(b0, KafkaError(Errors.REQUEST_TIMED_OUT))
    answer(manager, acc, b1, Errors.NONE)  # so b0 was appended too
    manager.resolve_sequences()
    assert not manager.is_unresolved(T0) and not manager.epoch_bump_required


@pytest.mark.parametrize(
    ("error", "outcome", "fatal"),
    [
        (Errors.COORDINATOR_LOAD_IN_PROGRESS, InitOutcome.RETRY, None),
        (Errors.COORDINATOR_NOT_AVAILABLE, InitOutcome.RETRY, None),
        (Errors.NOT_COORDINATOR, InitOutcome.RETRY, None),
        (Errors.NETWORK_EXCEPTION, InitOutcome.RETRY, None),
        (Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, InitOutcome.FAIL_BATCHES, None),
        (Errors.CLUSTER_AUTHORIZATION_FAILED, InitOutcome.FAIL_BATCHES, None),
        (Errors.INVALID_PRODUCER_EPOCH, InitOutcome.FATAL, Errors.PRODUCER_FENCED),
        (Errors.UNSUPPORTED_VERSION, InitOutcome.FATAL, Errors.UNSUPPORTED_VERSION),
    ],
)
def test_init_producer_id_answers(error: Errors, outcome: InitOutcome, fatal: Errors | None) -> None:
    manager = IdempotenceManager()
    assert manager.handle_init_producer_id(error) is outcome
    assert manager.fatal_error is fatal
    assert manager.needs_producer_id is (fatal is None)


def test_an_exhausted_epoch_asks_for_a_new_producer_id() -> None:
    acc, manager = started(producer_id=7, epoch=32767)
    add(acc, T0, b"a")
    batch = drain_one(acc)
    answer(manager, acc, batch, Errors.OUT_OF_ORDER_SEQUENCE_NUMBER)
    manager.bump_epoch_if_needed()
    assert manager.needs_producer_id and drain(acc) == []
    manager.handle_init_producer_id(Errors.NONE, 8, 0)
    again = drain_one(acc)
    assert (header(again).producer_id, header(again).producer_epoch,
            header(again).base_sequence) == (8, 0, 0)


def test_sequences_wrap_past_the_largest_int32() -> None:
    assert increment_sequence(5, 3) == 8
    assert increment_sequence(2**31 - 1, 1) == 0
    assert increment_sequence(2**31 - 2, 5) == 3
