"""The trio consumer against the fake data plane on loopback sockets (real time)."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from broker.client import (
    ClientClosedError,
    Consumer,
    OffsetOutOfRangeError,
    TimestampType,
    TopicPartition,
)
from quorum.wire.error_codes import Errors
from quorum.wire.records import Header, Record, build_batch

from .fake_broker import FETCH, METADATA, FakeCluster

DEADLINE_S = 10
T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)


def settings(cluster: FakeCluster, **overrides: Any) -> dict[str, str]:
    base = {
        "bootstrap.servers": cluster.bootstrap,
        "retry.backoff.ms": "10",
        "retry.backoff.max.ms": "20",
        "request.timeout.ms": "2000",
        "fetch.max.wait.ms": "20",
        "auto.offset.reset": "earliest",
    }
    return base | {k.replace("_", "."): str(v) for k, v in overrides.items()}


def append(cluster: FakeCluster, tp: TopicPartition, *values: bytes, key: bytes | None = None
           ) -> None:
    records = [
        Record(offset_delta=i, timestamp_delta=i, key=key, value=v,
               headers=(Header("h", b"%d" % i),))
        for i, v in enumerate(values)
    ]
    cluster.logs[(tp.topic, tp.partition)].append(
        build_batch(records, base_timestamp=1_000), cluster.leader_epoch
    )


async def started(nursery: trio.Nursery, topics: dict[str, int], brokers: int = 1) -> FakeCluster:
    cluster = FakeCluster(topics, brokers=brokers)
    await cluster.start(nursery)
    return cluster


async def poll_until(consumer: Consumer, count: int) -> list[Any]:
    records: list[Any] = []
    while len(records) < count:
        records += await consumer.poll(timeout_ms=200)
    return records


async def test_assigned_partitions_are_read_from_the_seeked_offset_with_every_field(
    nursery: trio.Nursery,
) -> None:
    cluster = await started(nursery, {"t": 2})
    append(cluster, T0, b"a", b"b", b"c", key=b"k")
    append(cluster, T1, b"x")
    with trio.fail_after(DEADLINE_S):
        async with Consumer(settings(cluster)) as consumer:
            consumer.assign([T0, T1])
            consumer.seek(T0, 1)
            consumer.seek(T1, 0)
            records = await poll_until(consumer, 3)
            assert await consumer.position(T0) == 3
            assert consumer.highwater(T0) == 3
    by_tp = {(r.partition, r.offset): r for r in records}
    assert sorted(by_tp) == [(0, 1), (0, 2), (1, 0)]
    second = by_tp[(0, 2)]
    assert (second.topic, second.key, second.value) == ("t", b"k", b"c")
    assert second.timestamp == 1_002 and second.timestamp_type is TimestampType.CREATE_TIME
    assert second.headers == (("h", b"2"),) and second.leader_epoch == cluster.leader_epoch
    # one request covers both partitions (later ones leave out a partition with unread data)
    first = cluster.seen(FETCH)[0]
    assert {(p.partition, p.fetch_offset, p.current_leader_epoch)
            for t in first.topics for p in t.partitions} == {(0, 1, 5), (1, 0, 5)}


async def test_seek_to_beginning_and_end_and_the_offset_lookups(nursery: trio.Nursery) -> None:
    cluster = await started(nursery, {"t": 1})
    append(cluster, T0, b"0", b"1", b"2", b"3")
    with trio.fail_after(DEADLINE_S):
        async with Consumer(settings(cluster)) as consumer:
            assert await consumer.end_offsets([T0]) == {T0: 4}
            assert await consumer.beginning_offsets([T0]) == {T0: 0}
            consumer.assign([T0])
            consumer.seek_to_end()
            assert await consumer.position(T0) == 4
            assert await consumer.poll(timeout_ms=50) == []
            append(cluster, T0, b"4")
            assert [r.value for r in await poll_until(consumer, 1)] == [b"4"]
            consumer.seek_to_beginning(T0)
            assert [r.offset for r in await poll_until(consumer, 5)] == [0, 1, 2, 3, 4]


async def test_an_out_of_range_position_is_reset_by_auto_offset_reset(
    nursery: trio.Nursery,
) -> None:
    cluster = await started(nursery, {"t": 1})
    append(cluster, T0, b"0", b"1")
    with trio.fail_after(DEADLINE_S):
        async with Consumer(settings(cluster, auto_offset_reset="latest")) as consumer:
            consumer.assign([T0])
            consumer.seek(T0, 50)
            assert await consumer.poll(timeout_ms=100) == []
            assert await consumer.position(T0) == 2
        async with Consumer(settings(cluster, auto_offset_reset="none")) as consumer:
            consumer.assign([T0])
            consumer.seek(T0, 50)
            with pytest.raises(OffsetOutOfRangeError, match="t-0=50"):
                while True:
                    await consumer.poll(timeout_ms=100)


async def test_the_consumer_follows_the_leader_to_another_broker(nursery: trio.Nursery) -> None:
    cluster = await started(nursery, {"t": 1}, brokers=2)
    append(cluster, T0, b"0")
    with trio.fail_after(DEADLINE_S):
        async with Consumer(settings(cluster)) as consumer:
            consumer.assign([T0])
            assert len(await poll_until(consumer, 1)) == 1
            metadata_before = len(cluster.seen(METADATA))
            cluster.leader_id, cluster.leader_epoch = 2, cluster.leader_epoch + 1
            append(cluster, T0, b"1")
            assert [r.value for r in await poll_until(consumer, 1)] == [b"1"]
    assert len(cluster.seen(METADATA)) > metadata_before
    assert [broker for broker, key, _, _ in cluster.requests if key == FETCH][-1] == 2


async def test_a_transient_fetch_error_is_retried(nursery: trio.Nursery) -> None:
    cluster = await started(nursery, {"t": 1})
    append(cluster, T0, b"0")
    cluster.inject(FETCH, Errors.NOT_LEADER_OR_FOLLOWER, Errors.UNKNOWN_LEADER_EPOCH)
    with trio.fail_after(DEADLINE_S):
        async with Consumer(settings(cluster)) as consumer:
            consumer.assign([T0])
            assert [r.value for r in await poll_until(consumer, 1)] == [b"0"]


async def test_batches_are_handed_out_whole_as_columns(nursery: trio.Nursery) -> None:
    cluster = await started(nursery, {"t": 1})
    append(cluster, T0, b"0", b"1", b"2")
    append(cluster, T0, b"3")
    with trio.fail_after(DEADLINE_S):
        async with Consumer(settings(cluster)) as consumer:
            consumer.assign([T0])
            consumer.seek(T0, 1)
            batches: list[Any] = []
            while sum(len(b.columns()) for b in batches) < 3:
                batches += await consumer.poll_batches(timeout_ms=200)
    values = [v for b in batches for v in b.columns().values]
    assert values == [b"1", b"2", b"3"]
    assert batches[0].offsets(batches[0].columns()) == [1, 2]


async def test_a_closed_consumer_refuses_to_poll(nursery: trio.Nursery) -> None:
    cluster = await started(nursery, {"t": 1})
    async with Consumer(settings(cluster)) as consumer:
        consumer.assign([T0])
    with pytest.raises(ClientClosedError):
        await consumer.poll()
