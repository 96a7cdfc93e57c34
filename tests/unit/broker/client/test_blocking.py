"""The blocking front-ends from plain threads, against the fake data plane (real time).

The fake brokers run in the test's trio loop; each blocking client runs its
own loop in a thread of its own, and the test's client code runs in a
worker thread (``trio.to_thread``), as a script or a Spark executor would.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
import trio

from broker.client import (
    BlockingAdmin,
    BlockingConsumer,
    BlockingProducer,
    ClientClosedError,
    KafkaError,
    TopicPartition,
)
from quorum.config import ConfigError
from quorum.wire.error_codes import Errors

from .fake_broker import PRODUCE, FakeCluster

DEADLINE_S = 20
T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)


def client_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith("pykraft-")}


def common(cluster: FakeCluster) -> dict[str, str]:
    return {"bootstrap.servers": cluster.bootstrap, "retry.backoff.ms": "10",
            "request.timeout.ms": "2000"}


async def started(nursery: trio.Nursery, topics: dict[str, int]) -> FakeCluster:
    cluster = FakeCluster(topics)
    await cluster.start(nursery)
    return cluster


async def in_a_thread(fn: Any) -> Any:
    with trio.fail_after(DEADLINE_S):
        return await trio.to_thread.run_sync(fn)


async def test_records_produced_from_a_thread_are_consumed_from_another_in_order(
    nursery: trio.Nursery,
) -> None:
    cluster = await started(nursery, {"t": 2})
    before = client_threads()

    def produce() -> list[Any]:
        with BlockingProducer(common(cluster) | {"linger.ms": "5"}) as producer:
            futures = [producer.send("t", b"%04d" % i, partition=i % 2) for i in range(2_000)]
            producer.flush()
            assert all(f.done() for f in futures)
            return [f.result() for f in futures]

    results = await in_a_thread(produce)
    assert [r.offset for r in results if r.partition == 0] == list(range(1_000))

    def consume() -> tuple[list[bytes | None], dict[TopicPartition, int]]:
        with BlockingConsumer(common(cluster) | {"auto.offset.reset": "earliest",
                                                 "fetch.max.wait.ms": "20"}) as consumer:
            consumer.assign([T0, T1])
            values: list[bytes | None] = []
            while consumer.position(T0) < 1_000 or consumer.position(T1) < 1_000:
                values += [r.value for r in consumer.poll(timeout_ms=200) if r.partition == 1]
            return values, consumer.end_offsets([T0, T1])

    values, ends = await in_a_thread(consume)
    assert values == [b"%04d" % i for i in range(1, 2_000, 2)]
    assert ends == {T0: 1_000, T1: 1_000}
    assert client_threads() == before


async def test_a_failed_record_raises_its_kafka_error_from_the_future(
    nursery: trio.Nursery,
) -> None:
    cluster = await started(nursery, {"t": 1})
    cluster.inject(PRODUCE, Errors.INVALID_RECORD)

    def produce() -> None:
        with BlockingProducer(common(cluster)) as producer:
            future = producer.send("t", b"bad")
            with pytest.raises(KafkaError) as raised:
                future.result(timeout=DEADLINE_S)
            assert raised.value.name == "INVALID_RECORD"
            assert producer.send("t", b"good").result(timeout=DEADLINE_S).offset == 0

    await in_a_thread(produce)


async def test_closed_clients_leave_no_thread_behind_and_refuse_calls(
    nursery: trio.Nursery,
) -> None:
    cluster = await started(nursery, {"t": 1})
    before = client_threads()

    def use_and_close() -> None:
        producer = BlockingProducer(common(cluster))
        consumer = BlockingConsumer(common(cluster))
        admin = BlockingAdmin(common(cluster))
        assert len(client_threads() - before) == 3
        assert admin.list_topics() == ["t"]
        assert producer.partitions_for("t") == [0]
        for client in (producer, consumer, admin):
            client.close()
            client.close()  # a second close does nothing
        with pytest.raises(ClientClosedError):
            producer.partitions_for("t")
        with pytest.raises(ClientClosedError):
            consumer.poll()
        with pytest.raises(ClientClosedError):
            admin.list_topics()

    await in_a_thread(use_and_close)
    assert client_threads() == before


async def test_a_client_that_cannot_start_raises_at_once_and_leaves_no_thread() -> None:
    before = client_threads()
    with pytest.raises(ConfigError, match="acks"):
        BlockingProducer({"bootstrap.servers": "127.0.0.1:1", "acks": "2"})
    assert client_threads() == before


def test_group_calls_without_a_group_id_are_refused_with_kafkas_text() -> None:
    with BlockingConsumer({"bootstrap.servers": "127.0.0.1:1"}) as consumer:
        with pytest.raises(KafkaError, match=r"must provide a valid group\.id"):
            consumer.subscribe(["t"])
        with pytest.raises(KafkaError, match="INVALID_GROUP_ID"):
            consumer.commit_async()
