"""aiokafka (unmodified) against a real cluster, each test one ``asyncio.run``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from deploy import LocalCluster

from .admin_checks import check_partitions, eventually_async
from .records import PARTITIONS, check_read_back, records

TIMEOUT_MS = 20_000


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
