"""The producer's record accumulator: batching, linger, size limits, draining, outcomes."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from broker.client import (
    ClusterView,
    KafkaError,
    ProducerBatch,
    RecordAccumulator,
    RecordMetadata,
    TopicPartition,
    cluster_view_from_metadata,
)
from quorum.wire.batch import BATCH_HEADER_SIZE
from quorum.wire.error_codes import Errors
from quorum.wire.records import iter_batches

from .metadata_helpers import metadata

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)
# partition 0 led by broker 1, partition 1 by broker 2, partition 2 by broker 1
VIEW: ClusterView = cluster_view_from_metadata(metadata({"t": [(1, 0), (2, 0), (1, 0)]}))


def accumulator(**overrides: int | bool) -> RecordAccumulator:
    settings: dict[str, int | bool] = {
        "batch_size": 16384, "linger_ms": 0, "max_request_size": 1 << 20,
        "delivery_timeout_ms": 120_000,
    }
    settings.update(overrides)
    return RecordAccumulator(**settings)  # type: ignore[arg-type]


def add(acc: RecordAccumulator, tp: TopicPartition, value: bytes, now_ms: float = 0,
        ticket: object = None) -> None:
    acc.append(tp, None, value, (), 1_000, ticket, now_ms)


def test_records_of_a_partition_join_one_batch_until_batch_size_closes_it() -> None:
    acc = accumulator(batch_size=BATCH_HEADER_SIZE + 3 * 12)
    for _ in range(4):
        add(acc, T0, b"x" * 5)
    batches = list(acc.queued_batches())
    assert [b.record_count for b in batches] == [3, 1]
    assert batches[0].closed and not batches[1].closed


def test_a_record_larger_than_batch_size_gets_a_batch_of_its_own() -> None:
    acc = accumulator(batch_size=100)
    add(acc, T0, b"small")
    add(acc, T0, b"x" * 500)
    add(acc, T0, b"after")
    assert [b.record_count for b in acc.queued_batches()] == [1, 1, 1]


def test_a_batch_waits_linger_ms_unless_full_flushing_or_closing() -> None:
    acc = accumulator(linger_ms=50)
    add(acc, T0, b"v", now_ms=100)
    check = acc.ready(VIEW, 120)
    assert check.nodes == frozenset() and check.next_check_ms == 30
    assert acc.ready(VIEW, 150).nodes == {1}
    acc.begin_flush()
    assert acc.ready(VIEW, 120).nodes == {1}
    acc.end_flush()
    acc.closing = True
    assert acc.ready(VIEW, 100).nodes == {1}


def test_a_partition_without_a_known_leader_is_reported_not_sent() -> None:
    view = cluster_view_from_metadata(metadata({"t": [(-1, 0)]}))
    acc = accumulator()
    add(acc, T0, b"v")
    check = acc.ready(view, 0)
    assert check.nodes == frozenset() and check.unknown_leader_topics == {"t"}


def test_drain_groups_batches_by_leader_one_per_partition_encoded_once() -> None:
    acc = accumulator()
    for tp in (T0, T1, TopicPartition("t", 2)):
        add(acc, tp, b"v")
    drained = acc.drain(VIEW, sorted(acc.ready(VIEW, 0).nodes), 0)
    assert {node: sorted(b.tp.partition for b in batches) for node, batches in drained.items()} \
        == {1: [0, 2], 2: [1]}
    batch = drained[2][0]
    assert batch.in_flight and batch.payload is not None
    [decoded] = list(iter_batches(batch.payload))
    assert decoded.header.base_offset == 0 and decoded.header.producer_id == -1
    assert [r.value for r in decoded.records] == [b"v"]
    assert len(batch.payload) == batch.size_bytes  # the size estimate is exact uncompressed


def test_drain_stops_before_a_batch_would_pass_max_request_size_but_one_always_goes() -> None:
    acc = accumulator(max_request_size=150, batch_size=1000)
    add(acc, T0, b"x" * 100)
    add(acc, TopicPartition("t", 2), b"y" * 100)
    first = acc.drain(VIEW, [1], 0)[1]
    second = acc.drain(VIEW, [1], 0)[1]
    assert len(first) == len(second) == 1
    assert {first[0].tp, second[0].tp} == {T0, TopicPartition("t", 2)}


def test_with_guaranteed_order_a_partition_sends_nothing_while_a_batch_is_in_flight() -> None:
    acc = accumulator(guarantee_order=True, batch_size=BATCH_HEADER_SIZE + 10)
    add(acc, T0, b"a")
    add(acc, T0, b"b")
    [first] = acc.drain(VIEW, [1], 0)[1]
    assert acc.ready(VIEW, 0).nodes == frozenset()
    acc.complete(first, 0)
    assert acc.ready(VIEW, 0).nodes == {1}


def test_a_retried_batch_goes_back_to_the_front_after_its_backoff() -> None:
    acc = accumulator(guarantee_order=True, batch_size=BATCH_HEADER_SIZE + 10)
    add(acc, T0, b"a")
    add(acc, T0, b"b")
    [first] = acc.drain(VIEW, [1], 0)[1]
    acc.reenqueue(first, 10, 100)
    check = acc.ready(VIEW, 50)
    assert check.nodes == frozenset() and check.next_check_ms == 60
    [again] = acc.drain(VIEW, [1], 110)[1]
    assert again is first and first.attempts == 1 and first.values == [b"a"]


def test_completion_gives_each_record_its_offset_and_timestamp() -> None:
    acc = accumulator()
    for i in range(3):
        acc.append(T1, b"k" if i else None, b"v%d" % i, (), 1_000 + i, f"ticket-{i}", 0)
    [batch] = acc.drain(VIEW, [2], 0)[2]
    outcomes = acc.complete(batch, 40)
    assert [ticket for ticket, _ in outcomes] == ["ticket-0", "ticket-1", "ticket-2"]
    results = [r for _, r in outcomes]
    assert all(isinstance(r, RecordMetadata) for r in results)
    assert [(r.offset, r.timestamp) for r in results] == [(40, 1000), (41, 1001), (42, 1002)]  # type: ignore[union-attr]
    assert results[0].serialized_key_size == -1  # type: ignore[union-attr]
    assert acc.complete(_one_batch(acc), -1)[0][1].offset == -1  # type: ignore[union-attr]


def _one_batch(acc: RecordAccumulator) -> ProducerBatch:
    add(acc, T1, b"acks0")
    [batch] = acc.drain(VIEW, [2], 0)[2]
    return batch


def test_a_split_batch_keeps_its_records_in_order_at_the_front_of_its_partition() -> None:
    acc = accumulator()
    for i in range(5):
        add(acc, T0, b"%d" % i, ticket=i)
    [batch] = acc.drain(VIEW, [1], 0)[1]
    first, second = acc.split(batch, 0)
    assert (first.values, second.values) == ([b"0", b"1"], [b"2", b"3", b"4"])
    assert list(acc.queued_batches()) == [first, second]
    assert first.tickets == [0, 1] and not acc.is_incomplete(batch)
    assert len(first.encode(acc.compression)) == first.size_bytes


def test_queued_batches_expire_after_delivery_timeout_ms() -> None:
    acc = accumulator(delivery_timeout_ms=1_000, linger_ms=5_000)
    add(acc, T0, b"v", now_ms=0)
    assert acc.next_expiry_ms(400) == 600
    assert acc.expire(999) == []
    [expired] = acc.expire(1_000)
    assert expired.values == [b"v"] and not acc.has_queued()
    outcomes = acc.fail(expired, KafkaError(Errors.REQUEST_TIMED_OUT))
    assert isinstance(outcomes[0][1], KafkaError) and acc.incomplete() == []


records = st.lists(
    st.tuples(
        st.sampled_from([T0, T1]),
        st.one_of(st.none(), st.binary(max_size=40)),
        st.one_of(st.none(), st.binary(max_size=300)),
        st.lists(st.tuples(st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=5))),
                 max_size=2),
        st.integers(min_value=0, max_value=10_000),
    ),
    max_size=60,
)


@given(records, st.integers(min_value=BATCH_HEADER_SIZE, max_value=2_000))
def test_batches_hold_every_record_in_order_with_exact_sizes(
    appended: list[tuple[TopicPartition, bytes | None, bytes | None, list[tuple[str, bytes | None]], int]],
    batch_size: int,
) -> None:
    acc = accumulator(batch_size=batch_size)
    for n, (tp, key, value, headers, stamp) in enumerate(appended):
        acc.append(tp, key, value, tuple(headers), 1_700_000_000_000 + stamp, n, 0)
    seen: dict[TopicPartition, list[int]] = {T0: [], T1: []}
    for batch in list(acc.queued_batches()):
        # a batch passes batch.size only when it holds a single record
        assert batch.size_bytes <= batch_size or batch.record_count == 1
        payload = batch.encode(acc.compression)
        assert len(payload) == batch.size_bytes
        [decoded] = list(iter_batches(payload))
        assert [r.value for r in decoded.records] == batch.values
        seen[batch.tp] += batch.tickets
    for tp in (T0, T1):
        assert seen[tp] == [n for n, record in enumerate(appended) if record[0] == tp]
    for batch in list(acc.queued_batches()):
        acc.fail(batch, KafkaError(Errors.UNKNOWN_SERVER_ERROR))
    assert acc.buffered_bytes == 0
