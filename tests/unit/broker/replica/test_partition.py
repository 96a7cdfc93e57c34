"""A partition leader's rules: high watermark over the maximal ISR, ISR changes, acks=all."""

from __future__ import annotations

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from broker.replica.isr import CommittedIsr, PendingExpandIsr, PendingShrinkIsr
from broker.replica.partition import AcceptedIsr, AssignmentOutcome, Partition
from quorum.log import MemoryLog
from quorum.wire.error_codes import Errors

from .helpers import LAG_MS, append, assignment, batch, fetch, leader, new_partition


def test_the_high_watermark_waits_for_every_isr_member() -> None:
    partition = leader()
    append(partition, 3)
    fetch(partition, 2, 3, now_ms=10)
    assert partition.high_watermark == 0  # replica 3 has not fetched in this epoch
    moved, _ = fetch(partition, 3, 2, now_ms=10)
    assert moved and partition.high_watermark == 2
    moved, _ = fetch(partition, 3, 3, now_ms=11)
    assert moved and partition.high_watermark == 3


def test_a_replica_being_removed_holds_the_high_watermark_until_the_removal_is_committed() -> None:
    partition = leader()
    append(partition, 4)
    fetch(partition, 2, 4, now_ms=10)
    fetch(partition, 3, 1, now_ms=10)
    assert partition.high_watermark == 1
    change = partition.maybe_shrink_isr(now_ms=10 + LAG_MS + 1)
    assert change is not None and change.isr == (1, 2)
    assert isinstance(partition.isr_state, PendingShrinkIsr)
    # replica 2 fetches again: still held back by 3, which the controller may still elect
    fetch(partition, 2, 4, now_ms=LAG_MS + 20)
    assert partition.high_watermark == 1
    assert 3 in partition.maximal_isr
    moved, resend = partition.handle_alter_partition_result(
        change, AcceptedIsr(leader_id=1, leader_epoch=1, isr=(1, 2), partition_epoch=2),
        now_ms=LAG_MS + 30,
    )
    assert (moved, resend) == (True, False)
    assert partition.high_watermark == 4 and partition.partition_epoch == 2
    assert partition.isr_state == CommittedIsr(frozenset({1, 2}))


def test_a_replica_being_added_counts_at_once() -> None:
    partition = leader(isr=(1, 2))
    append(partition, 2)
    fetch(partition, 2, 2, now_ms=5)
    assert partition.high_watermark == 2
    append(partition, 1)
    _, change = fetch(partition, 3, 2, now_ms=6)
    assert change is not None and change.isr == (1, 2, 3)
    assert isinstance(partition.isr_state, PendingExpandIsr)
    assert partition.maximal_isr == {1, 2, 3} and partition.isr_state.isr == {1, 2}
    fetch(partition, 2, 3, now_ms=7)
    assert partition.high_watermark == 2  # replica 3 (pending) is still at 2


def test_a_follower_below_the_epoch_start_offset_does_not_join_the_isr() -> None:
    partition = new_partition()
    for _ in range(3):  # written in an older epoch: this leader's epoch starts at 3
        partition.log.append(batch(b"old"), epoch=0)
    partition.apply_assignment(assignment(isr=(1, 2), leader_epoch=2), now_ms=0)
    assert partition.epoch_start_offset == 3
    fetch(partition, 2, 3, now_ms=1)
    assert partition.high_watermark == 3
    _, change = fetch(partition, 3, 3, now_ms=2)
    assert change is not None  # at the HW and at the epoch start
    partition = new_partition()
    for _ in range(3):
        partition.log.append(batch(b"old"), epoch=0)
    partition.apply_assignment(assignment(isr=(1,), leader_epoch=2), now_ms=0)
    _, change = fetch(partition, 3, 2, now_ms=1)
    assert change is None and partition.isr_state == CommittedIsr(frozenset({1}))


def test_an_ineligible_replica_is_not_proposed_for_the_isr() -> None:
    partition = new_partition(eligible=(1, 2))
    partition.apply_assignment(assignment(isr=(1, 2)), now_ms=0)
    _, change = fetch(partition, 3, 0, now_ms=1)
    assert change is None


def test_only_one_isr_change_is_in_flight() -> None:
    partition = leader(isr=(1,), min_isr=1)
    _, first = fetch(partition, 2, 0, now_ms=1)
    _, second = fetch(partition, 3, 0, now_ms=1)
    assert first is not None and second is None
    assert partition.maybe_shrink_isr(now_ms=10 * LAG_MS) is None


def test_errors_that_applied_nothing_return_to_the_committed_isr() -> None:
    for error in (Errors.INELIGIBLE_REPLICA, Errors.OPERATION_NOT_ATTEMPTED):
        partition = leader(isr=(1, 2))
        _, change = fetch(partition, 3, 0, now_ms=1)
        assert change is not None
        assert partition.handle_alter_partition_result(change, error, 2) == (False, False)
        assert partition.isr_state == CommittedIsr(frozenset({1, 2}))


def test_fencing_errors_keep_the_change_pending_until_new_metadata() -> None:
    for error in (Errors.FENCED_LEADER_EPOCH, Errors.INVALID_UPDATE_VERSION,
                  Errors.NEW_LEADER_ELECTED):
        partition = leader(isr=(1, 2))
        _, change = fetch(partition, 3, 0, now_ms=1)
        assert change is not None
        assert partition.handle_alter_partition_result(change, error, 2) == (False, False)
        assert isinstance(partition.isr_state, PendingExpandIsr)
        # the image brings the truth, and replaces the stale change
        partition.apply_assignment(assignment(isr=(1, 2), partition_epoch=3), now_ms=3)
        assert partition.isr_state == CommittedIsr(frozenset({1, 2}))


def test_retriable_errors_send_the_change_again() -> None:
    for error in (Errors.NOT_CONTROLLER, Errors.STALE_BROKER_EPOCH, Errors.UNKNOWN_SERVER_ERROR):
        partition = leader(isr=(1, 2))
        _, change = fetch(partition, 3, 0, now_ms=1)
        assert change is not None
        assert partition.handle_alter_partition_result(change, error, 2) == (False, True)
        assert isinstance(partition.isr_state, PendingExpandIsr)


def test_an_answer_to_a_change_the_image_replaced_is_ignored() -> None:
    partition = leader(isr=(1, 2))
    _, change = fetch(partition, 3, 0, now_ms=1)
    assert change is not None
    partition.apply_assignment(assignment(isr=(1, 2), partition_epoch=2), now_ms=2)
    accepted = AcceptedIsr(leader_id=1, leader_epoch=1, isr=(1, 2, 3), partition_epoch=2)
    assert partition.handle_alter_partition_result(change, accepted, 3) == (False, False)
    assert partition.isr_state == CommittedIsr(frozenset({1, 2}))


def test_an_assignment_older_than_the_partition_epoch_is_skipped() -> None:
    partition = leader()
    partition.apply_assignment(assignment(partition_epoch=5), now_ms=0)
    older = assignment(isr=(1,), partition_epoch=4)
    assert partition.apply_assignment(older, now_ms=1) is AssignmentOutcome.SKIPPED
    assert partition.isr_state == CommittedIsr(frozenset({1, 2, 3}))


def test_a_new_leader_epoch_starts_where_the_log_ends_and_forgets_follower_ends() -> None:
    partition = new_partition(broker_id=2)
    partition.apply_assignment(assignment(broker_id=2, leader=1), now_ms=0)
    assert not partition.is_leader
    append(partition, 2)
    outcome = partition.apply_assignment(
        assignment(broker_id=2, leader=2, leader_epoch=2, partition_epoch=2), now_ms=5
    )
    assert outcome is AssignmentOutcome.NEW_LEADER_EPOCH
    assert partition.is_leader and partition.epoch_start_offset == 2
    assert {r: s.log_end_offset for r, s in partition.followers.items()} == {1: -1, 3: -1}


def test_acks_all_completes_at_the_hw_and_fails_after_append_under_min_isr() -> None:
    partition = leader(isr=(1, 2), min_isr=2)
    append(partition, 2)
    assert partition.check_enough_replicas_reach_offset(2) == (False, Errors.NONE)
    fetch(partition, 2, 2, now_ms=1)
    assert partition.check_enough_replicas_reach_offset(2) == (True, Errors.NONE)
    # the ISR shrank to the leader alone after the append: Kafka's rule counts the maximal ISR
    partition.apply_assignment(assignment(isr=(1,), partition_epoch=2), now_ms=2)
    assert partition.check_enough_replicas_reach_offset(2) == (
        True, Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    )
    partition.apply_assignment(assignment(broker_id=1, leader=2, leader_epoch=2,
                                          partition_epoch=3), now_ms=3)
    assert partition.check_enough_replicas_reach_offset(2) == (
        False, Errors.NOT_LEADER_OR_FOLLOWER
    )


def test_the_high_watermark_does_not_move_while_the_isr_is_under_min_isr() -> None:
    partition = leader(isr=(1,), min_isr=2)
    append(partition, 2)
    assert not partition.maybe_increment_high_watermark(now_ms=1)
    assert partition.high_watermark == 0


def test_a_follower_learns_the_leaders_high_watermark_capped_by_its_own_end() -> None:
    partition = new_partition(broker_id=2)
    partition.apply_assignment(assignment(broker_id=2, leader=1), now_ms=0)
    append(partition, 3)
    assert partition.learn_high_watermark(10) and partition.high_watermark == 3
    assert partition.learn_high_watermark(1) and partition.high_watermark == 1


fetches = st.lists(
    st.tuples(st.sampled_from([2, 3]), st.integers(0, 12), st.integers(0, 3 * LAG_MS)),
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(fetches=fetches, appends=st.lists(st.integers(0, 2), min_size=40, max_size=40))
def test_the_leaders_high_watermark_never_moves_back_nor_past_a_maximal_isr_member(
    fetches: list[tuple[int, int, int]], appends: list[int]
) -> None:
    partition = leader()
    now = 0
    ends = {2: -1, 3: -1}
    for (replica, offset, step), count in zip(fetches, appends, strict=False):
        append(partition, count)
        now += step
        # a follower's end only moves forward (no truncation without a leader change)
        offset = max(min(offset, partition.log_end_offset), ends[replica], 0)
        before = partition.high_watermark
        fetch(partition, replica, offset, now)
        ends[replica] = offset
        change = partition.maybe_shrink_isr(now)
        if change is not None:
            partition.handle_alter_partition_result(
                change,
                AcceptedIsr(leader_id=1, leader_epoch=1, isr=change.isr,
                            partition_epoch=partition.partition_epoch + 1),
                now,
            )
        assert partition.high_watermark >= before
        assert partition.high_watermark <= partition.log_end_offset
        for member in partition.maximal_isr - {1}:
            assert partition.high_watermark <= max(ends[member], 0)


def test_a_partition_without_a_log_reads_empty_and_makes_its_log_at_the_first_write() -> None:
    made: list[tuple[str, int]] = []

    def create_log(_key: object, name: tuple[str, int]) -> MemoryLog:
        made.append(name)
        return MemoryLog()

    partition = new_partition()
    partition = Partition(
        key=partition.key, name=partition.name, log=None, config=partition.config,
        context=attrs.evolve(partition.context, create_log=create_log),
    )
    partition.apply_assignment(assignment(isr=(1, 2, 3)), 0)
    # reads (and retention) answer as the empty log: nothing made
    assert (partition.log_start_offset, partition.log_end_offset) == (0, 0)
    assert partition.log.read(0, 100).records == b""
    assert partition.log.delete_old_segments(0, high_watermark=0) == 0  # type: ignore[attr-defined]
    assert not partition.has_log and made == []
    append(partition, 2)
    assert partition.has_log and made == [partition.name]
    assert partition.log_end_offset == 2
    append(partition, 1)
    assert made == [partition.name], "made once"
