"""The trio admin client against a real controller and broker (in-process, loopback)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import pytest
import trio

from broker import BrokerNode
from broker.client import (
    Admin,
    AlterConfigOp,
    ConfigResource,
    ConfigSource,
    KafkaError,
    NewPartitions,
    NewTopic,
    ResourceType,
)

from ...node.nodes import free_ports
from ..test_broker_node import BROKER_ID, running_controller_and_broker

DEADLINE_S = 30
T = TypeVar("T")


def listener_port(broker: BrokerNode) -> int:
    assert broker.address is not None, "the broker is started"
    return broker.address.port


def listener(broker: BrokerNode) -> str:
    return f"127.0.0.1:{listener_port(broker)}"


async def eventually(ask: Callable[[], Awaitable[T]], holds: Callable[[T], bool]) -> T:
    """Ask until the answer holds (the broker learns metadata from the log a moment later)."""
    while True:
        answer = await ask()
        if holds(answer):
            return answer
        await trio.sleep(0.05)


async def test_topics_are_created_listed_described_grown_and_deleted(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running_controller_and_broker(tmp_path) as (_controller, broker):
            bootstrap = listener(broker)
            async with Admin({"bootstrap.servers": bootstrap, "retry.backoff.ms": "20"}) as admin:
                assert await admin.create_topics([
                    NewTopic(name="orders", num_partitions=3, replication_factor=1,
                             configs={"retention.ms": "60000"}),
                    NewTopic(name="placed", replica_assignments={0: (BROKER_ID,)}),
                ]) == {"orders": None, "placed": None}
                with pytest.raises(KafkaError) as raised:
                    await admin.create_topics([NewTopic(name="orders", num_partitions=1,
                                                        replication_factor=1)])
                assert raised.value.name == "TOPIC_ALREADY_EXISTS"
                assert "orders" in str(raised.value)

                assert await eventually(admin.list_topics,
                                        lambda names: {"orders", "placed"} <= set(names))
                described = (await admin.describe_topics(["orders"]))["orders"]
                assert [p.partition for p in described.partitions] == [0, 1, 2]
                first = described.partitions[0]
                assert first.replicas == first.isr == (BROKER_ID,)
                assert first.leader is not None and first.leader.node_id == BROKER_ID
                with pytest.raises(KafkaError, match="UNKNOWN_TOPIC_OR_PARTITION"):
                    await admin.describe_topics(["nope"])

                await admin.create_partitions({"orders": NewPartitions(total_count=5)})
                grown = await eventually(
                    lambda: admin.describe_topics(["orders"]),
                    lambda found: len(found["orders"].partitions) == 5,
                )
                assert grown["orders"].partitions[4].replicas == (BROKER_ID,)

                assert await admin.delete_topics(["placed"]) == {"placed": None}
                await eventually(admin.list_topics, lambda names: "placed" not in names)
                outcome = await admin.delete_topics(["placed"], raise_on_error=False)
                error = outcome["placed"]
                assert error is not None and error.name == "UNKNOWN_TOPIC_OR_PARTITION"


async def test_the_cluster_and_its_metadata_quorum_are_described(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running_controller_and_broker(tmp_path) as (_controller, broker):
            bootstrap = listener(broker)
            async with Admin({"bootstrap.servers": bootstrap}) as admin:
                cluster = await admin.describe_cluster()
                assert [b.node_id for b in cluster.brokers] == [BROKER_ID]
                assert cluster.brokers[0].port == listener_port(broker)
                assert cluster.cluster_id
                quorum = await admin.describe_metadata_quorum()
                assert [v.replica_id for v in quorum.voters] == [1]
                assert quorum.leader_id == 1
                assert BROKER_ID in [o.replica_id for o in quorum.observers]


async def test_an_unreachable_cluster_times_out_with_kafkas_name(tmp_path: Path) -> None:
    [port] = free_ports(1)
    async with Admin({"bootstrap.servers": f"127.0.0.1:{port}",
                      "retry.backoff.ms": "20"}) as admin:
        with trio.fail_after(DEADLINE_S), pytest.raises(KafkaError) as raised:
            await admin.list_topics(timeout_ms=300)
    assert raised.value.name == "TimeoutException"


async def test_a_topics_configs_are_altered_and_described_and_a_brokers_asked_of_it(
    tmp_path: Path,
) -> None:
    with trio.fail_after(DEADLINE_S):
        async with (
            running_controller_and_broker(tmp_path) as (_controller, broker),
            Admin({"bootstrap.servers": listener(broker)}) as admin,
        ):
            await admin.create_topics([NewTopic(name="c", num_partitions=1,
                                                replication_factor=1)])
            topic = ConfigResource(ResourceType.TOPIC, "c")
            assert await admin.incremental_alter_configs(
                {topic: [AlterConfigOp("retention.ms", "12345")]}
            ) == {topic: None}
            described = await eventually(
                lambda: admin.describe_configs([topic]),
                lambda found: found[topic].get("retention.ms") is not None
                and found[topic]["retention.ms"].value == "12345",
            )
            assert described[topic]["retention.ms"].source is ConfigSource.DYNAMIC_TOPIC_CONFIG
            itself = ConfigResource(ResourceType.BROKER, str(BROKER_ID))
            configs = (await admin.describe_configs([itself]))[itself]
            assert "compression.type" in configs  # answered by the broker itself
