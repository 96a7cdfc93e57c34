"""aiokafka (unmodified) against a real cluster, each test one ``asyncio.run``."""

from __future__ import annotations

import asyncio

from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from deploy import LocalCluster

from .admin_checks import check_partitions, eventually_async

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
