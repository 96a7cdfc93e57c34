"""The idempotent producer (the default) against the fake data plane on loopback sockets."""

from __future__ import annotations

import pytest
import trio

from broker.client import KafkaError, Producer
from quorum.wire.error_codes import Errors
from quorum.wire.records import iter_batches

from . import fake_broker
from .fake_broker import INIT_PRODUCER_ID, PRODUCE, FakeCluster
from .test_producer import DEADLINE_S, settings, started, values_in_log


def producer_fields(cluster: FakeCluster) -> list[tuple[int, int, int]]:
    """(producer id, epoch, base sequence) of every batch in every Produce request, in order."""
    return [
        (batch.header.producer_id, batch.header.producer_epoch, batch.header.base_sequence)
        for request in cluster.seen(PRODUCE)
        for topic in request.topic_data
        for part in topic.partition_data
        for batch in iter_batches(part.records or b"")
    ]


async def test_the_producer_asks_for_an_id_first_and_numbers_its_batches(
    nursery: trio.Nursery,
) -> None:
    cluster = await started(nursery, {"t": 1})
    with trio.fail_after(DEADLINE_S):
        async with Producer(settings(cluster)) as producer:
            for value in (b"a", b"b", b"c"):
                await producer.send_and_wait("t", value)
    [init] = cluster.seen(INIT_PRODUCER_ID)
    assert init.transactional_id is None
    keys = [key for _, key, _, _ in cluster.requests if key in (INIT_PRODUCER_ID, PRODUCE)]
    assert keys[0] == INIT_PRODUCER_ID
    assert producer_fields(cluster) == [(1001, 0, 0), (1001, 0, 1), (1001, 0, 2)]


async def test_a_retry_after_a_lost_answer_is_deduplicated(nursery: trio.Nursery) -> None:
    cluster = await started(nursery, {"t": 1})
    cluster.lose_answer.add(PRODUCE)
    with trio.fail_after(DEADLINE_S):
        async with Producer(settings(cluster)) as producer:
            first = await producer.send_and_wait("t", b"once")
            second = await producer.send_and_wait("t", b"next")
    assert values_in_log(cluster, "t", 0) == [b"once", b"next"]
    assert (first.offset, second.offset) == (0, 1)
    assert producer_fields(cluster) == [(1001, 0, 0), (1001, 0, 0), (1001, 0, 1)]


async def test_retriable_init_producer_id_errors_are_retried(nursery: trio.Nursery) -> None:
    cluster = await started(nursery, {"t": 1})
    cluster.inject(INIT_PRODUCER_ID, Errors.COORDINATOR_LOAD_IN_PROGRESS,
                   Errors.NOT_COORDINATOR, Errors.COORDINATOR_NOT_AVAILABLE)
    cluster.hang_up.add(INIT_PRODUCER_ID)
    with trio.fail_after(DEADLINE_S):
        async with Producer(settings(cluster)) as producer:
            result = await producer.send_and_wait("t", b"v")
    assert result.offset == 0
    assert len(cluster.seen(INIT_PRODUCER_ID)) == 5


async def test_an_authorization_failure_fails_the_waiting_records_and_a_later_send_retries(
    nursery: trio.Nursery,
) -> None:
    cluster = await started(nursery, {"t": 1})
    cluster.inject(INIT_PRODUCER_ID, Errors.CLUSTER_AUTHORIZATION_FAILED)
    with trio.fail_after(DEADLINE_S):
        async with Producer(settings(cluster)) as producer:
            with pytest.raises(KafkaError, match="CLUSTER_AUTHORIZATION_FAILED"):
                await producer.send_and_wait("t", b"refused")
            result = await producer.send_and_wait("t", b"later")
    assert result.offset == 0 and values_in_log(cluster, "t", 0) == [b"later"]


async def test_a_broker_without_init_producer_id_stops_the_producer(
    nursery: trio.Nursery, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delitem(fake_broker.TABLE, INIT_PRODUCER_ID)  # not in its ApiVersions
    cluster = await started(nursery, {"t": 1})
    with trio.fail_after(DEADLINE_S):
        async with Producer(settings(cluster)) as producer:
            with pytest.raises(KafkaError, match="UNSUPPORTED_VERSION"):
                await producer.send_and_wait("t", b"v")
            with pytest.raises(KafkaError, match="cannot go on"):
                await producer.send("t", b"w")
    assert cluster.seen(PRODUCE) == []


async def test_records_land_once_and_in_order_across_retries_with_five_in_flight(
    nursery: trio.Nursery,
) -> None:
    cluster = await started(nursery, {"t": 1})
    cluster.produce_delay_s = 0.02  # so that requests pile up in flight
    # the 2nd and 9th requests are refused: the ones in flight behind them come back
    # out of order and go again, in sequence order
    cluster.inject(PRODUCE, Errors.NONE, Errors.NOT_ENOUGH_REPLICAS, *[Errors.NONE] * 6,
                   Errors.NOT_ENOUGH_REPLICAS)
    with trio.fail_after(DEADLINE_S):
        async with Producer(settings(cluster, batch_size=100, linger_ms=0)) as producer:
            futures = [await producer.send("t", b"%03d" % i) for i in range(60)]
            await producer.flush()
    assert [f.result().offset for f in futures] == list(range(60))
    assert values_in_log(cluster, "t", 0) == [b"%03d" % i for i in range(60)]
    assert Errors.OUT_OF_ORDER_SEQUENCE_NUMBER in cluster.produce_answers


async def test_a_gap_at_the_head_bumps_the_epoch_and_restarts_the_sequence(
    nursery: trio.Nursery,
) -> None:
    cluster = await started(nursery, {"t": 1})
    with trio.fail_after(DEADLINE_S):
        async with Producer(settings(cluster)) as producer:
            await producer.send_and_wait("t", b"a")
            cluster.inject(PRODUCE, Errors.OUT_OF_ORDER_SEQUENCE_NUMBER)
            result = await producer.send_and_wait("t", b"b")
    assert result.offset == 1 and values_in_log(cluster, "t", 0) == [b"a", b"b"]
    assert producer_fields(cluster) == [(1001, 0, 0), (1001, 0, 1), (1001, 1, 0)]
    assert len(cluster.seen(INIT_PRODUCER_ID)) == 1  # the client bumped the epoch itself


@pytest.mark.parametrize(
    "overrides",
    [{"enable_idempotence": "false"}, {"acks": "1"}, {"retries": "0"},
     {"max_in_flight_requests_per_connection": "6", "enable_idempotence": "false"}],
)
async def test_without_idempotence_no_producer_id_is_asked_for(
    nursery: trio.Nursery, overrides: dict[str, str]
) -> None:
    cluster = await started(nursery, {"t": 1})
    with trio.fail_after(DEADLINE_S):
        async with Producer(settings(cluster, **overrides)) as producer:
            await producer.send_and_wait("t", b"v")
    assert cluster.seen(INIT_PRODUCER_ID) == []
    assert producer_fields(cluster) == [(-1, -1, -1)]
