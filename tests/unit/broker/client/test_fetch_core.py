"""The consumer's fetch core: requests per leader, reading answers, resets and KIP-320."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.client import (
    FetchCore,
    FetchState,
    LogTruncationError,
    NoOffsetForPartitionError,
    OffsetOutOfRangeError,
    OffsetResetStrategy,
    TopicPartition,
    cluster_view_from_metadata,
    consumer_settings,
)
from broker.client.fetch_core import EpochEndOffset
from quorum.wire.compression import Compression
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    FetchResponse,
    FetchResponsePartition,
    FetchResponseTopic,
    ListOffsetsResponse,
    ListOffsetsResponsePartition,
    ListOffsetsResponseTopic,
)
from quorum.wire.records import Record, build_batch, build_batch_from_values

from .metadata_helpers import metadata

T0, T1, T2 = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("t", 2)
# t-0 and t-2 led by broker 1 (epochs 4 and 6), t-1 by broker 2 (epoch 5)
VIEW = cluster_view_from_metadata(metadata({"t": [(1, 4), (2, 5), (1, 6)]}))


def core(reset: str = "earliest") -> FetchCore:
    return FetchCore(consumer_settings({
        "bootstrap.servers": "x:1", "auto.offset.reset": reset, "retry.backoff.ms": "100",
    }))


def batch(base: int, count: int, epoch: int = 4, compression: int = Compression.NONE) -> bytes:
    return build_batch_from_values(
        [b"%d" % (base + i) for i in range(count)], base_offset=base,
        partition_leader_epoch=epoch, compression=compression, timestamp=1_000,
    )


def control_batch(base: int) -> bytes:
    # an end-transaction marker: key version 0, type 0 (abort)
    marker = Record(offset_delta=0, key=b"\x00\x00\x00\x00", value=b"\x00\x00\x00\x00\x00\x00")
    return build_batch([marker], base_offset=base, is_control=True, is_transactional=True,
                       producer_id=7, base_timestamp=1_000)


def answer(tp: TopicPartition, records: bytes | None = None, error: Errors = Errors.NONE,
           high_watermark: int = 100) -> FetchResponse:
    return FetchResponse(responses=(FetchResponseTopic(topic=tp.topic, partitions=(
        FetchResponsePartition(partition_index=tp.partition, error_code=error,
                               high_watermark=high_watermark, log_start_offset=0,
                               last_stable_offset=high_watermark, records=records),
    )),))


def fetching(at: dict[TopicPartition, int], reset: str = "earliest") -> FetchCore:
    made = core(reset)
    made.assign(at)
    for tp, offset in at.items():
        made.seek(tp, offset)
    return made


def test_one_fetch_request_per_leader_covers_its_partitions_with_the_leader_epoch() -> None:
    fc = fetching({T0: 3, T1: 0, T2: 9})
    plans, leaderless = fc.fetch_plans(VIEW)
    assert not leaderless
    by_node = {plan.node: plan for plan in plans}
    assert set(by_node) == {1, 2}
    request = by_node[1].request
    assert request.replica_id == -1 and request.session_id == 0 and request.isolation_level == 0
    parts = {(p.partition, p.fetch_offset, p.current_leader_epoch)
             for t in request.topics for p in t.partitions}
    assert parts == {(0, 3, 4), (2, 9, 6)}
    # no second request to a broker while one is in flight
    assert fc.fetch_plans(VIEW) == ([], False)


def test_records_below_the_position_in_a_returned_batch_are_skipped() -> None:
    fc = fetching({T0: 13})
    [plan], _ = fc.fetch_plans(VIEW)
    fc.handle_fetch_response(plan, answer(T0, batch(10, 5) + batch(15, 2)))
    records = fc.poll_records(100)
    assert [r.offset for r in records] == [13, 14, 15, 16]
    assert [r.value for r in records] == [b"13", b"14", b"15", b"16"]
    assert records[0].leader_epoch == 4 and records[0].timestamp == 1_000
    assert fc.positions.position(T0).offset == 17  # type: ignore[union-attr]


def test_max_records_splits_a_batch_across_polls_without_loss() -> None:
    fc = fetching({T0: 0})
    [plan], _ = fc.fetch_plans(VIEW)
    fc.handle_fetch_response(plan, answer(T0, batch(0, 5, compression=Compression.GZIP)))
    assert [r.offset for r in fc.poll_records(2)] == [0, 1]
    assert fc.positions.position(T0).offset == 2  # type: ignore[union-attr]
    assert [r.offset for r in fc.poll_records(10)] == [2, 3, 4]
    assert not fc.has_buffered()


def test_control_batches_are_skipped_and_the_position_moves_past_them() -> None:
    fc = fetching({T0: 0})
    [plan], _ = fc.fetch_plans(VIEW)
    fc.handle_fetch_response(plan, answer(T0, batch(0, 2) + control_batch(2) + batch(3, 1)))
    assert [r.offset for r in fc.poll_records(10)] == [0, 1, 3]
    fc2 = fetching({T0: 2})
    [plan], _ = fc2.fetch_plans(VIEW)
    fc2.handle_fetch_response(plan, answer(T0, control_batch(2)))
    assert fc2.poll_records(10) == []
    assert fc2.positions.position(T0).offset == 3  # type: ignore[union-attr]


def test_whole_batches_and_columns_skip_what_was_read_before() -> None:
    fc = fetching({T0: 12})
    [plan], _ = fc.fetch_plans(VIEW)
    fc.handle_fetch_response(plan, answer(T0, batch(10, 5) + batch(15, 3)))
    first, second = fc.poll_batches(100)
    columns = first.columns()
    assert first.offsets(columns) == [12, 13, 14] and columns.values == [b"12", b"13", b"14"]
    assert second.offsets(second.columns()) == [15, 16, 17]
    assert fc.positions.position(T0).offset == 18  # type: ignore[union-attr]


def test_an_answer_for_a_position_that_moved_meanwhile_is_dropped() -> None:
    fc = fetching({T0: 0})
    [plan], _ = fc.fetch_plans(VIEW)
    fc.seek(T0, 50)
    fc.handle_fetch_response(plan, answer(T0, batch(0, 3)))
    assert fc.poll_records(10) == [] and not fc.has_buffered()


@pytest.mark.parametrize("error", [
    Errors.NOT_LEADER_OR_FOLLOWER, Errors.FENCED_LEADER_EPOCH, Errors.UNKNOWN_TOPIC_OR_PARTITION,
])
def test_leadership_errors_ask_for_fresh_metadata(error: Errors) -> None:
    fc = fetching({T0: 0})
    [plan], _ = fc.fetch_plans(VIEW)
    fc.handle_fetch_response(plan, answer(T0, error=error))
    assert fc.metadata_errors == [(error, T0)]
    fc.raise_pending_error()  # nothing for the caller
    [again], _ = fc.fetch_plans(VIEW)
    assert again.node == 1


def reset_answer(tp: TopicPartition, offset: int, epoch: int = 4) -> ListOffsetsResponse:
    return ListOffsetsResponse(topics=(ListOffsetsResponseTopic(name=tp.topic, partitions=(
        ListOffsetsResponsePartition(partition_index=tp.partition, offset=offset,
                                     leader_epoch=epoch, timestamp=-1),
    )),))


@pytest.mark.parametrize(("reset", "timestamp", "offset"), [("earliest", -2, 5), ("latest", -1, 80)])
def test_offset_out_of_range_resets_by_auto_offset_reset(
    reset: str, timestamp: int, offset: int
) -> None:
    fc = fetching({T0: 1_000}, reset=reset)
    [plan], _ = fc.fetch_plans(VIEW)
    fc.handle_fetch_response(plan, answer(T0, error=Errors.OFFSET_OUT_OF_RANGE))
    assert fc.positions.state_of(T0).state is FetchState.AWAIT_RESET
    [reset_plan], _ = fc.reset_plans(VIEW, 0)
    [part] = reset_plan.request.topics[0].partitions
    assert (part.timestamp, part.current_leader_epoch) == (timestamp, 4)
    assert fc.reset_plans(VIEW, 0) == ([], False)  # in flight: not asked twice
    fc.handle_reset_response(reset_plan, reset_answer(T0, offset), VIEW, 0)
    assert fc.positions.position(T0).offset == offset  # type: ignore[union-attr]


def test_offset_out_of_range_with_reset_none_is_an_error_for_the_caller() -> None:
    fc = fetching({T0: 1_000}, reset="none")
    [plan], _ = fc.fetch_plans(VIEW)
    fc.handle_fetch_response(plan, answer(T0, error=Errors.OFFSET_OUT_OF_RANGE))
    with pytest.raises(OffsetOutOfRangeError, match="t-0=1000"):
        fc.raise_pending_error()


def test_an_assigned_partition_without_position_and_reset_none_is_an_error() -> None:
    fc = core("none")
    fc.assign([T0])
    with pytest.raises(NoOffsetForPartitionError):
        fc.raise_pending_error()


def test_a_failed_reset_is_retried_after_the_backoff() -> None:
    fc = core()
    fc.assign([T0])
    [plan], _ = fc.reset_plans(VIEW, 0)
    fc.handle_reset_response(plan, ListOffsetsResponse(topics=(ListOffsetsResponseTopic(
        name="t", partitions=(ListOffsetsResponsePartition(
            partition_index=0, error_code=Errors.NOT_LEADER_OR_FOLLOWER),)),)), VIEW, 0)
    assert fc.metadata_errors == [(Errors.NOT_LEADER_OR_FOLLOWER, T0)]
    assert fc.reset_plans(VIEW, 99)[0] == []
    assert len(fc.reset_plans(VIEW, 100)[0]) == 1


def consumed_at_epoch_4(reset: str = "earliest") -> FetchCore:
    """A consumer that read t-0 up to offset 10 from leader 1 at epoch 4."""
    fc = core(reset)
    fc.assign([T0])
    [plan], _ = fc.reset_plans(VIEW, 0)
    fc.handle_reset_response(plan, reset_answer(T0, 0), VIEW, 0)
    [fetch], _ = fc.fetch_plans(VIEW)
    fc.handle_fetch_response(fetch, answer(T0, batch(0, 10, epoch=4)))
    assert len(fc.poll_records(100)) == 10
    return fc


NEW_LEADER = cluster_view_from_metadata(metadata({"t": [(2, 7), (2, 5), (1, 6)]}))


def test_after_a_leader_change_the_position_is_validated_and_kept_if_the_log_agrees() -> None:
    fc = consumed_at_epoch_4()
    fc.on_metadata(NEW_LEADER, can_validate=lambda node: True)
    assert fc.positions.state_of(T0).state is FetchState.AWAIT_VALIDATION
    assert fc.fetch_plans(NEW_LEADER) == ([], False)
    [plan] = fc.validation_plans(NEW_LEADER, 0)
    assert plan.node == 2 and plan.positions[T0].offset_epoch == 4
    fc.handle_validation_results(plan, {T0: EpochEndOffset(Errors.NONE, 4, 25)}, 0)
    assert fc.positions.position(T0).offset == 10  # type: ignore[union-attr]


def test_a_diverged_log_truncates_the_position_to_the_leaders_end_offset() -> None:
    fc = consumed_at_epoch_4()
    fc.on_metadata(NEW_LEADER, can_validate=lambda node: True)
    [plan] = fc.validation_plans(NEW_LEADER, 0)
    fc.handle_validation_results(plan, {T0: EpochEndOffset(Errors.NONE, 4, 7)}, 0)
    position = fc.positions.position(T0)
    assert position is not None and (position.offset, position.offset_epoch) == (7, 4)
    fc.raise_pending_error()


def test_a_diverged_log_with_reset_none_is_a_log_truncation_error() -> None:
    fc = consumed_at_epoch_4()
    fc.positions.default_reset = OffsetResetStrategy.NONE
    fc.on_metadata(NEW_LEADER, can_validate=lambda node: True)
    [plan] = fc.validation_plans(NEW_LEADER, 0)
    fc.handle_validation_results(plan, {T0: EpochEndOffset(Errors.NONE, 4, 7)}, 0)
    with pytest.raises(LogTruncationError):
        fc.raise_pending_error()


def test_a_leader_without_offset_for_leader_epoch_takes_the_position_as_it_is() -> None:
    fc = consumed_at_epoch_4()
    fc.on_metadata(NEW_LEADER, can_validate=lambda node: False)
    assert fc.positions.position(T0).offset == 10  # type: ignore[union-attr]
    [plan], _ = fc.fetch_plans(NEW_LEADER)
    assert plan.node == 2


@given(
    sizes=st.lists(st.integers(min_value=1, max_value=6), min_size=1, max_size=8),
    start=st.integers(min_value=0, max_value=40),
    max_records=st.integers(min_value=1, max_value=7),
    whole=st.booleans(),
)
def test_polling_hands_out_each_offset_from_the_position_once_in_order(
    sizes: list[int], start: int, max_records: int, whole: bool
) -> None:
    data, base = b"", 0
    for size in sizes:
        data += batch(base, size)
        base += size
    start = min(start, base - 1)
    fc = fetching({T0: start})
    [plan], _ = fc.fetch_plans(VIEW)
    fc.handle_fetch_response(plan, answer(T0, data))
    offsets: list[int] = []
    while fc.has_buffered():
        if whole:
            for fetched in fc.poll_batches(max_records):
                offsets += fetched.offsets(fetched.columns())
        else:
            offsets += [r.offset for r in fc.poll_records(max_records)]
    assert offsets == list(range(start, base))
    assert fc.positions.position(T0).offset == base  # type: ignore[union-attr]
