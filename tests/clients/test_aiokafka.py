"""aiokafka (unmodified) against a real cluster, each test one ``asyncio.run``."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Iterator, Sequence
from typing import Any, TypeVar

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import IllegalStateError

from deploy import LocalCluster

from . import group_scenarios as scenarios
from .admin_checks import check_partitions, eventually_async
from .records import PARTITIONS, check_read_back, records

TIMEOUT_MS = 20_000
T = TypeVar("T")


def test_topics_created_described_and_deleted(bootstrap: str, cluster: LocalCluster) -> None:
    async def scenario() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=TIMEOUT_MS)
        await admin.start()
        try:
            created = await admin.create_topics([NewTopic("ak-admin", 3, 3)])
            assert [error for _, error, *_ in created.topic_errors] == [0]

            async def listed() -> bool:
                return "ak-admin" in await admin.list_topics()

            async def described_ok() -> bool:
                return (await admin.describe_topics(["ak-admin"]))[0]["error_code"] == 0

            async def gone() -> bool:
                return "ak-admin" not in await admin.list_topics()

            await eventually_async(listed, "ak-admin listed")
            await eventually_async(described_ok, "ak-admin described")
            (described,) = await admin.describe_topics(["ak-admin"])
            parts = described["partitions"]
            check_partitions(
                {p["partition"]: p["leader"] for p in parts},
                {p["partition"]: p["replicas"] for p in parts},
                partitions=3,
                brokers=cluster.broker_ids,
            )
            deleted = await admin.delete_topics(["ak-admin"])
            assert [error for _, error in deleted.topic_error_codes] == [0]
            await eventually_async(gone, "ak-admin gone")
        finally:
            await admin.close()

    asyncio.run(scenario())


@pytest.mark.parametrize("acks", ["all", 1, 0])
def test_records_produced_are_consumed(bootstrap: str, acks: str | int) -> None:
    topic = f"ak-data-{acks}"
    sent = records(topic)

    async def scenario() -> tuple[dict[bytes, tuple[int, int]], list[Any]]:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=TIMEOUT_MS)
        await admin.start()
        try:
            await admin.create_topics([NewTopic(topic, PARTITIONS, 3)])
        finally:
            await admin.close()
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks=acks, linger_ms=5)
        await producer.start()
        try:
            futures = [await producer.send(topic, key=key, value=value) for key, value in sent]
            answers = await asyncio.gather(*futures)
        finally:
            await producer.stop()
        acknowledged = {}
        if acks != 0:
            for (_, value), answer in zip(sent, answers, strict=True):
                acknowledged[value] = (answer.partition, answer.offset)
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
        await consumer.start()
        read: list[Any] = []
        try:
            consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
            await consumer.seek_to_beginning()

            async def read_all() -> bool:
                for batch in (await consumer.getmany(timeout_ms=500)).values():
                    read.extend((r.partition, r.offset, r.key, r.value) for r in batch)
                return len(read) >= len(sent)

            await eventually_async(read_all, f"{len(sent)} records of {topic} read back", 60)
        finally:
            await consumer.stop()
        return acknowledged, read

    acknowledged, read = asyncio.run(scenario())
    check_read_back(sent, read, acknowledged if acks != 0 else None)


class _Loop:
    """An asyncio loop on a thread of its own: the clients' heartbeats and fetches go on
    between the scenario's (blocking) calls."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout_s: float = TIMEOUT_MS / 1000 + 5) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout_s)

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()


class _Producer:
    """aiokafka's producer, idempotent (its default is off) at acks=all."""

    def __init__(self, loop: _Loop, bootstrap: str) -> None:
        self._loop = loop
        self._producer = loop.run(self._started(bootstrap))
        self._sent: list[tuple[bytes, asyncio.Future[Any]]] = []

    @staticmethod
    async def _started(bootstrap: str) -> AIOKafkaProducer:
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap, enable_idempotence=True, acks="all", linger_ms=5,
            request_timeout_ms=TIMEOUT_MS,
        )
        await producer.start()
        return producer

    def send(self, topic: str, pairs: Sequence[tuple[bytes, bytes]]) -> None:
        async def send() -> None:
            for key, value in pairs:
                self._sent.append((value, await self._producer.send(topic, key=key, value=value)))

        self._loop.run(send(), 60)

    def flush(self, timeout_s: float) -> None:
        self._loop.run(asyncio.wait_for(self._producer.flush(), timeout_s), timeout_s + 5)

    def acknowledged(self) -> dict[bytes, tuple[int, int]]:
        async def acknowledged() -> dict[bytes, tuple[int, int]]:
            return {
                value: (future.result().partition, future.result().offset)
                for value, future in self._sent
                if future.done() and not future.cancelled() and future.exception() is None
            }

        return self._loop.run(acknowledged())

    def failures(self) -> list[str]:
        async def failures() -> list[str]:
            return [
                repr(future.exception()) for _, future in self._sent
                if future.done() and (future.cancelled() or future.exception() is not None)
            ]

        return self._loop.run(failures())

    def close(self) -> None:
        self._loop.run(self._producer.stop())


class _Consumer:
    def __init__(self, loop: _Loop, bootstrap: str, group: str, topic: str) -> None:
        self._loop = loop
        self._topic = topic
        self._consumer = loop.run(self._started(bootstrap, group, topic))

    @staticmethod
    async def _started(bootstrap: str, group: str, topic: str) -> AIOKafkaConsumer:
        consumer = AIOKafkaConsumer(
            topic, bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
            auto_offset_reset="earliest", request_timeout_ms=TIMEOUT_MS,
            session_timeout_ms=scenarios.SESSION_TIMEOUT_MS,
            heartbeat_interval_ms=scenarios.HEARTBEAT_INTERVAL_MS,
            # aiokafka retries a ListOffsets answered NOT_LEADER_OR_FOLLOWER without asking for
            # metadata, so after a leader moves it waits for its next periodic refresh (5 min)
            metadata_max_age_ms=2_000,
        )
        await consumer.start()
        return consumer

    def poll(self, timeout_s: float) -> list[scenarios.Read]:
        batches = self._loop.run(self._consumer.getmany(timeout_ms=int(timeout_s * 1000)))
        return [(r.partition, r.offset, r.key, r.value) for batch in batches.values() for r in batch]

    def assignment(self) -> frozenset[int]:
        async def assignment() -> frozenset[int]:
            return frozenset(tp.partition for tp in self._consumer.assignment())

        return self._loop.run(assignment())

    def positions(self) -> dict[int, int]:
        async def positions() -> dict[int, int]:
            found = {}
            for tp in self._consumer.assignment():
                try:
                    found[tp.partition] = await asyncio.wait_for(self._consumer.position(tp), 1)
                except (TimeoutError, IllegalStateError):  # revoked, or not yet known
                    continue
            return found

        return self._loop.run(positions())

    def commit(self) -> None:
        self._loop.run(self._consumer.commit())

    def committed(self) -> dict[int, int]:
        async def committed() -> dict[int, int]:
            found = {}
            for partition in range(PARTITIONS):
                offset = await self._consumer.committed(TopicPartition(self._topic, partition))
                if offset is not None:
                    found[partition] = offset
            return found

        return self._loop.run(committed())

    def close(self) -> None:
        self._loop.run(self._consumer.stop())


class _AioKafka:
    name = "ak"

    def __init__(self, loop: _Loop, bootstrap: str) -> None:
        self._loop = loop
        self._bootstrap = bootstrap

    def producer(self) -> scenarios.Producer:
        return _Producer(self._loop, self._bootstrap)

    def consumer(self, group: str, topic: str) -> scenarios.Consumer:
        return _Consumer(self._loop, self._bootstrap, group, topic)


@pytest.fixture
def aiokafka_client(bootstrap: str) -> Iterator[_AioKafka]:
    loop = _Loop()
    yield _AioKafka(loop, bootstrap)
    loop.close()


@pytest.mark.all_clients
def test_a_group_shares_commits_resumes_and_rebalances(
    cluster: LocalCluster, bootstrap: str, aiokafka_client: _AioKafka
) -> None:
    scenarios.group_shares_commits_resumes_and_rebalances(aiokafka_client, cluster, bootstrap)


@pytest.mark.all_clients
def test_a_group_carries_on_after_its_coordinators_kill(
    cluster: LocalCluster, bootstrap: str, aiokafka_client: _AioKafka
) -> None:
    scenarios.group_carries_on_after_coordinator_kill(aiokafka_client, cluster, bootstrap)


def test_an_idempotent_producer_writes_once_across_a_leader_kill(
    cluster: LocalCluster, bootstrap: str, aiokafka_client: _AioKafka
) -> None:
    scenarios.idempotent_producer_survives_leader_kill(aiokafka_client, cluster, bootstrap)
