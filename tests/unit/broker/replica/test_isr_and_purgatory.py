"""ISR state transitions (one change in flight) and the purgatory's bookkeeping."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.replica import isr
from broker.replica.errors import IllegalIsrTransitionError
from broker.replica.purgatory import Purgatory
from quorum.wire.error_codes import Errors

COMMITTED = isr.CommittedIsr(frozenset({1, 2}))


def test_an_expansion_counts_the_new_replica_in_the_maximal_isr_only() -> None:
    pending = isr.prepare_expand(COMMITTED, 3, leader_epoch=4, partition_epoch=7)
    assert pending.sent == isr.IsrChange(leader_epoch=4, partition_epoch=7, isr=(1, 2, 3))
    assert pending.isr == {1, 2} and pending.maximal_isr == {1, 2, 3}


def test_a_shrink_keeps_the_removed_replicas_in_the_maximal_isr() -> None:
    pending = isr.prepare_shrink(COMMITTED, frozenset({2}), leader_epoch=4, partition_epoch=7)
    assert pending.sent.isr == (1,)
    assert pending.isr == {1, 2} and pending.maximal_isr == {1, 2}


def test_moves_the_table_does_not_list_are_refused() -> None:
    pending = isr.prepare_expand(COMMITTED, 3, leader_epoch=1, partition_epoch=1)
    with pytest.raises(IllegalIsrTransitionError, match="already in flight"):
        isr.prepare_expand(pending, 4, leader_epoch=1, partition_epoch=1)
    with pytest.raises(IllegalIsrTransitionError, match="in the ISR already"):
        isr.prepare_expand(COMMITTED, 2, leader_epoch=1, partition_epoch=1)
    with pytest.raises(IllegalIsrTransitionError, match="proper non-empty subset"):
        isr.prepare_shrink(COMMITTED, frozenset({1, 2}), leader_epoch=1, partition_epoch=1)
    with pytest.raises(IllegalIsrTransitionError, match="no AlterPartition change"):
        isr.after_alter_partition_accepted(COMMITTED, (1, 2))


@pytest.mark.parametrize("error", list(Errors))
def test_every_alter_partition_error_has_a_defined_outcome(error: Errors) -> None:
    pending = isr.prepare_expand(COMMITTED, 3, leader_epoch=1, partition_epoch=1)
    state, retry = isr.after_alter_partition_error(pending, error)
    if error in isr.RESET_ERRORS:
        assert (state, retry) == (COMMITTED, False)
    else:
        assert state is pending and retry == (error not in isr.RETRY_UNLESS)


def test_a_parked_operation_completes_once_and_never_expires_after() -> None:
    purgatory: Purgatory[str] = Purgatory()
    first = purgatory.watch("a", ["p0", "p1"], deadline_ms=100)
    purgatory.watch("b", ["p1"], deadline_ms=50)
    assert [op for _, op in purgatory.watchers("p1")] == ["a", "b"]
    assert purgatory.next_deadline_ms() == 50
    assert purgatory.complete(first) == "a"
    assert purgatory.watchers("p0") == []
    assert purgatory.expire(49) == [] and purgatory.expire(100) == ["b"]
    assert purgatory.next_deadline_ms() is None and len(purgatory) == 0


@given(st.lists(st.tuples(st.integers(0, 100), st.booleans()), max_size=30),
       st.integers(0, 100))
def test_expiry_hands_back_exactly_the_uncompleted_operations_due(
    ops: list[tuple[int, bool]], now_ms: int
) -> None:
    purgatory: Purgatory[int] = Purgatory()
    ids = [purgatory.watch(n, [n % 3], deadline) for n, (deadline, _) in enumerate(ops)]
    for op_id, (_, done) in zip(ids, ops, strict=True):
        if done:
            purgatory.complete(op_id)
    expected = sorted(n for n, (deadline, done) in enumerate(ops)
                      if not done and deadline <= now_ms)
    assert sorted(purgatory.expire(now_ms)) == expected
    left = [d for n, (d, done) in enumerate(ops) if not done and d > now_ms]
    assert purgatory.next_deadline_ms() == (min(left) if left else None)


def test_partitions_with_the_same_committed_isr_share_one_state() -> None:
    first = isr.after_new_assignment((1, 2, 3))
    assert isr.after_new_assignment((1, 2, 3)) is first
    pending = isr.prepare_shrink(first, frozenset({3}), leader_epoch=1, partition_epoch=1)
    accepted = isr.after_alter_partition_accepted(pending, (1, 2))
    assert accepted is isr.after_new_assignment((1, 2))
    assert accepted.isr == frozenset({1, 2}) and first.isr == frozenset({1, 2, 3})
