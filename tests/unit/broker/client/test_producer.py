"""The trio producer against the fake data plane on loopback sockets (real time)."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from broker.client import (
    ClientClosedError,
    KafkaError,
    KafkaTimeoutError,
    Producer,
    RecordMetadata,
    partition_for_key,
)
from quorum.wire.error_codes import Errors
from quorum.wire.records import iter_batches

from .fake_broker import METADATA, PRODUCE, FakeCluster

DEADLINE_S = 10


def settings(cluster: FakeCluster, **overrides: Any) -> dict[str, str]:
    base = {
        "bootstrap.servers": cluster.bootstrap,
        "retry.backoff.ms": "10",
        "retry.backoff.max.ms": "20",
        "request.timeout.ms": "2000",
        "max.block.ms": "2000",
    }
    return base | {k.replace("_", "."): str(v) for k, v in overrides.items()}


def values_in_log(cluster: FakeCluster, topic: str, partition: int) -> list[bytes | None]:
    return [
        record.value
        for data in cluster.logs[(topic, partition)].batches
        for batch in iter_batches(bytes(data))
        for record in batch.records
    ]


async def started(nursery: trio.Nursery, topics: dict[str, int], brokers: int = 1) -> FakeCluster:
    cluster = FakeCluster(topics, brokers=brokers)
    await cluster.start(nursery)
    return cluster


async def test_a_keyed_record_is_delivered_to_its_murmur2_partition_with_its_offset(
    nursery: trio.Nursery,
) -> None:
    cluster = await started(nursery, {"orders": 3})
    with trio.fail_after(DEADLINE_S):
        async with Producer(settings(cluster)) as producer:
            first = await producer.send_and_wait("orders", b"v1", key=b"k")
            second = await (await producer.send("orders", b"v2", key=b"k", headers=[("h", b"x")]))
    partition = partition_for_key(b"k", 3)
    assert (first.topic, first.partition, first.offset) == ("orders", partition, 0)
    assert (second.partition, second.offset) == (partition, 1)
    assert values_in_log(cluster, "orders", partition) == [b"v1", b"v2"]
    produce = cluster.seen(PRODUCE)
    assert all(request.acks == -1 and request.transactional_id is None for request in produce)
    assert {version for _, key, version, _ in cluster.requests if key == PRODUCE} == {9}


async def test_records_sent_within_linger_ms_travel_in_one_batch(nursery: trio.Nursery) -> None:
    cluster = await started(nursery, {"t": 1})
    with trio.fail_after(DEADLINE_S):
        async with Producer(settings(cluster, linger_ms=200)) as producer:
            futures = [await producer.send("t", b"%d" % i) for i in range(10)]
            results = [await future for future in futures]
    assert [r.offset for r in results] == list(range(10))
    [request] = cluster.seen(PRODUCE)
    [topic] = request.topic_data
    [part] = topic.partition_data
    assert part.records is not None
    assert [len(batch.records) for batch in iter_batches(part.records)] == [10]


async def test_acks_zero_resolves_without_an_answer_and_reports_no_offset(
    nursery: trio.Nursery,
) -> None:
    cluster = await started(nursery, {"t": 1})
    with trio.fail_after(DEADLINE_S):
        async with Producer(settings(cluster, acks=0)) as producer:
            results = [await producer.send_and_wait("t", b"%d" % i) for i in range(3)]
            # the connection stays in step: later requests are answered
            assert await producer.partitions_for("t") == [0]
    assert [r.offset for r in results] == [-1, -1, -1]
    assert values_in_log(cluster, "t", 0) == [b"0", b"1", b"2"]


async def test_a_retriable_error_is_retried_after_a_metadata_refresh(nursery: trio.Nursery) -> None:
    cluster = await started(nursery, {"t": 1})
    cluster.inject(PRODUCE, Errors.NOT_LEADER_OR_FOLLOWER, Errors.NOT_ENOUGH_REPLICAS)
    with trio.fail_after(DEADLINE_S):
        async with Producer(settings(cluster)) as producer:
            metadata_before = len(cluster.seen(METADATA))
            result = await producer.send_and_wait("t", b"v")
    assert result.offset == 0
    assert len(cluster.seen(PRODUCE)) == 3
    assert len(cluster.seen(METADATA)) > metadata_before


async def test_records_follow_the_leader_to_another_broker(nursery: trio.Nursery) -> None:
    cluster = await started(nursery, {"t": 1}, brokers=2)
    with trio.fail_after(DEADLINE_S):
        async with Producer(settings(cluster)) as producer:
            first = await producer.send_and_wait("t", b"a")
            cluster.leader_id, cluster.leader_epoch = 2, cluster.leader_epoch + 1
            second = await producer.send_and_wait("t", b"b")
    assert (first.offset, second.offset) == (0, 1)
    produced_on = [broker for broker, key, _, _ in cluster.requests if key == PRODUCE]
    assert produced_on[0] == 1 and produced_on[-1] == 2


async def test_a_broken_connection_is_retried_on_a_new_one(nursery: trio.Nursery) -> None:
    cluster = await started(nursery, {"t": 1})
    cluster.hang_up.add(PRODUCE)
    with trio.fail_after(DEADLINE_S):
        async with Producer(settings(cluster)) as producer:
            result = await producer.send_and_wait("t", b"v")
    assert result.offset == 0
    assert values_in_log(cluster, "t", 0) == [b"v"]


async def test_a_non_retriable_error_fails_the_batch_with_kafkas_error_name(
    nursery: trio.Nursery,
) -> None:
    cluster = await started(nursery, {"t": 1})
    cluster.inject(PRODUCE, Errors.CORRUPT_MESSAGE)
    with trio.fail_after(DEADLINE_S):
        async with Producer(settings(cluster)) as producer:
            future = await producer.send("t", b"v")
            with pytest.raises(KafkaError) as raised:
                await future
    assert raised.value.name == "CORRUPT_MESSAGE" and raised.value.error is Errors.CORRUPT_MESSAGE
    assert "t-0" in str(raised.value)
    assert len(cluster.seen(PRODUCE)) == 1


async def test_records_that_keep_failing_expire_after_delivery_timeout_ms(
    nursery: trio.Nursery,
) -> None:
    cluster = await started(nursery, {"t": 1})
    cluster.inject(PRODUCE, *[Errors.NOT_ENOUGH_REPLICAS] * 1000)
    config = settings(cluster, request_timeout_ms=100, delivery_timeout_ms=300)
    with trio.fail_after(DEADLINE_S):
        async with Producer(config) as producer:
            future = await producer.send("t", b"v")
            with pytest.raises(KafkaTimeoutError, match="ms has passed since batch creation"):
                await future
    assert len(cluster.seen(PRODUCE)) > 1
    assert values_in_log(cluster, "t", 0) == []


async def test_message_too_large_splits_the_batch_and_fails_a_lone_record(
    nursery: trio.Nursery,
) -> None:
    cluster = await started(nursery, {"t": 1})
    # the whole batch, then its first half, then the lone first record
    cluster.inject(PRODUCE, Errors.MESSAGE_TOO_LARGE, Errors.MESSAGE_TOO_LARGE,
                   Errors.MESSAGE_TOO_LARGE)
    config = settings(cluster, linger_ms=100, max_in_flight_requests_per_connection=1)
    with trio.fail_after(DEADLINE_S):
        async with Producer(config) as producer:
            futures = [await producer.send("t", b"%d" % i) for i in range(4)]
            await producer.flush()
    with pytest.raises(KafkaError, match="MESSAGE_TOO_LARGE"):
        futures[0].result()
    assert [f.result().offset for f in futures[1:]] == [0, 1, 2]
    assert values_in_log(cluster, "t", 0) == [b"1", b"2", b"3"]


@pytest.mark.parametrize("idempotence", ["true", "false"])
async def test_order_within_a_partition_survives_retries_with_one_request_in_flight(
    nursery: trio.Nursery, idempotence: str
) -> None:
    cluster = await started(nursery, {"t": 1})
    config = settings(cluster, batch_size=200, max_in_flight_requests_per_connection=1,
                      enable_idempotence=idempotence)
    with trio.fail_after(DEADLINE_S):
        async with Producer(config) as producer:
            futures = []
            for i in range(60):
                if i % 15 == 7:
                    cluster.inject(PRODUCE, Errors.NOT_LEADER_OR_FOLLOWER)
                futures.append(await producer.send("t", b"%03d" % i))
            await producer.flush()
    assert [f.result().offset for f in futures] == list(range(60))
    assert values_in_log(cluster, "t", 0) == [b"%03d" % i for i in range(60)]


async def test_a_record_larger_than_max_request_size_is_refused_by_send(
    nursery: trio.Nursery,
) -> None:
    cluster = await started(nursery, {"t": 1})
    async with Producer(settings(cluster, max_request_size=1000)) as producer:
        with pytest.raises(KafkaError, match=r"larger than 1000, .* max\.request\.size"):
            await producer.send("t", b"x" * 1000)
        with pytest.raises(TypeError, match="must be bytes"):
            await producer.send("t", "text")  # type: ignore[arg-type]
        with pytest.raises(KafkaError, match="Partition 3 of topic t with partition count 1"):
            await producer.send("t", b"x", partition=3)


async def test_a_topic_missing_from_metadata_times_out_after_max_block_ms(
    nursery: trio.Nursery,
) -> None:
    cluster = await started(nursery, {"t": 1})
    with trio.fail_after(DEADLINE_S):
        async with Producer(settings(cluster, max_block_ms=300)) as producer:
            with pytest.raises(KafkaTimeoutError, match="Topic nope not present in metadata"):
                await producer.send("nope", b"v")


async def test_flush_sends_lingering_records_at_once(nursery: trio.Nursery) -> None:
    cluster = await started(nursery, {"t": 2})
    with trio.fail_after(DEADLINE_S):
        async with Producer(settings(cluster, linger_ms=60_000)) as producer:
            futures = [await producer.send("t", b"v", partition=i % 2) for i in range(6)]
            await producer.flush()
            assert all(f.done() for f in futures)
    results: list[RecordMetadata] = [f.result() for f in futures]
    assert sorted((r.partition, r.offset) for r in results) == [
        (0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)
    ]


async def test_closing_without_waiting_fails_what_was_not_delivered(
    nursery: trio.Nursery,
) -> None:
    cluster = await started(nursery, {"t": 1})
    cluster.inject(PRODUCE, *[Errors.NOT_ENOUGH_REPLICAS] * 1000)
    with trio.fail_after(DEADLINE_S):
        async with Producer(settings(cluster)) as producer:
            future = await producer.send("t", b"v")
            await producer.aclose(timeout_ms=50)
            with pytest.raises(ClientClosedError, match="closed forcefully"):
                await future
            with pytest.raises(ClientClosedError, match="after producer has been closed"):
                await producer.send("t", b"w")
