"""A controller and a broker in one trio nursery on 127.0.0.1 (real sockets, real clock):
the broker observes the metadata log, registers, is unfenced, serves Metadata from its
image, hosts the partitions of a new topic and shuts down in a controlled way."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from broker import (
    BrokerNode,
    BrokerStartupError,
    BrokerState,
    PartitionRole,
)
from broker.process import ready_line
from quorum.client import TrioKafkaConnection
from quorum.config import ServerConfig
from quorum.config.values import HostPort
from quorum.controller.digest import image_digest
from quorum.controller.image import MetadataImage
from quorum.controller_client import ControllerChannel
from quorum.node import ControllerNode, NodeAddress
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    CreateTopicsRequest,
    CreateTopicsRequestTopic,
    DescribeClusterRequest,
    MetadataRequest,
    MetadataRequestTopic,
    PykraftDescribeImageRequest,
)

from ..node.nodes import (
    CLUSTER_ID,
    FAST,
    controller_config,
    controller_image_until,
    free_ports,
    wait_for_leader,
    write_server_config,
)

BROKER_ID = 100
# brokers heartbeat often and are fenced soon, so the test is quick
LIVENESS = {"broker.heartbeat.interval.ms": "200", "broker.session.timeout.ms": "2000"}
DEADLINE_S = 15


def broker_config(
    root: Path, controller_ports: list[int], broker_port: int, *, cluster_id: str = CLUSTER_ID,
    extra: dict[str, str] | None = None,
) -> ServerConfig:
    return write_server_config(
        root / f"broker-{BROKER_ID}", roles="broker", node_id=BROKER_ID,
        voters=",".join(f"{i + 1}@127.0.0.1:{port}" for i, port in enumerate(controller_ports)),
        listeners=f"PLAINTEXT://127.0.0.1:{broker_port}",
        overrides={**FAST, **LIVENESS, **(extra or {})}, format_as=cluster_id,
    )


def controller_and_broker_config(
    root: Path, *, liveness: dict[str, str] = LIVENESS, **broker: Any
) -> tuple[ControllerNode, ServerConfig]:
    """A one-voter controller node (not started) and the config of a broker of its quorum;
    ``liveness`` (heartbeat interval, session timeout) for both."""
    controller_port, broker_port = free_ports(2)
    controller = ControllerNode.from_config(
        controller_config(root, 1, [controller_port], extra=liveness), seed=1
    )
    extra = {**liveness, **broker.pop("extra", {})}
    return controller, broker_config(root, [controller_port], broker_port, extra=extra, **broker)


@contextlib.asynccontextmanager
async def running_controller_and_broker(
    root: Path,
) -> AsyncIterator[tuple[ControllerNode, BrokerNode]]:
    """A one-voter controller and a broker of its quorum, both started; stopped at the end."""
    controller, config = controller_and_broker_config(root)
    broker = BrokerNode.from_config(config, seed=2)
    async with trio.open_nursery() as nursery:
        await nursery.start(controller.run)
        await wait_for_leader([controller])
        await nursery.start(broker.run)
        yield controller, broker
        broker.stop()
        controller.stop()


def unfenced(broker_id: int) -> Callable[[MetadataImage], bool]:
    def check(image: MetadataImage) -> bool:
        broker = image.broker(broker_id)
        return broker is not None and not broker.fenced

    return check


async def test_a_broker_registers_is_unfenced_and_serves_the_metadata_it_observes(
    tmp_path: Path,
) -> None:
    controller_port, broker_port = free_ports(2)
    controller = ControllerNode.from_config(
        controller_config(tmp_path, 1, [controller_port], extra=LIVENESS), seed=1
    )
    found = BrokerNode.from_config(broker_config(tmp_path, [controller_port], broker_port), seed=2)
    # a snapshot after every committed range, so the broker's own snapshot goes through its core
    broker = BrokerNode(attrs.evolve(found.settings, snapshot_max_bytes=1), seed=2)
    with trio.fail_after(DEADLINE_S):
        async with trio.open_nursery() as nursery:
            await nursery.start(controller.run)
            await wait_for_leader([controller])
            async with trio.open_nursery() as brokers:
                address = await brokers.start(broker.run)
                assert str(address) == f"PLAINTEXT://127.0.0.1:{broker_port}"
                assert broker.state is BrokerState.RUNNING and broker.broker_epoch >= 0
                registered = await controller_image_until(controller, unfenced(BROKER_ID))
                assert registered.brokers[BROKER_ID].epoch == broker.broker_epoch
                await broker.machine.wait_for(unfenced(BROKER_ID))
                await _create_topic_and_follow_it(controller, broker)
                await _ask_the_broker_listener(broker)
                snapshots = broker.driver.core.log.snapshot_ids()
                assert snapshots and snapshots[-1].offset <= broker.machine.image_offset
                broker.stop()
            # the broker's run returned: the controller let it go and fenced it
            assert broker.state is BrokerState.SHUTTING_DOWN
            fenced = await controller_image_until(
                controller, lambda image: image.brokers[BROKER_ID].fenced
            )
            assert fenced.brokers[BROKER_ID].epoch == broker.broker_epoch
            controller.stop()


async def _create_topic_and_follow_it(controller: ControllerNode, broker: BrokerNode) -> None:
    assert controller.address is not None
    async with await TrioKafkaConnection.connect(
        controller.address.host, controller.address.port
    ) as conn:
        answer = await conn.request(
            CreateTopicsRequest(
                topics=(CreateTopicsRequestTopic(name="orders", num_partitions=3,
                                                 replication_factor=1),)
            )
        )
    assert [t.error_code for t in answer.topics] == [Errors.NONE]
    image = await broker.machine.wait_for(lambda image: image.topic("orders") is not None)
    roles = sorted((a.topic, a.partition, a.role) for a in broker.machine.assignments.values())
    assert roles == [("orders", i, PartitionRole.LEADER) for i in range(3)]
    assert await hosted_leaders(broker, 3) == [("orders", i) for i in range(3)]
    # nothing else is written now: the broker catches up with the controller's image
    committed = await same_offset(controller, broker)
    assert image_digest(committed) == image_digest(broker.machine.image)
    assert image.provenance.offset <= committed.provenance.offset


async def hosted_leaders(broker: BrokerNode, count: int) -> list[tuple[str, int]]:
    """The partitions the broker's replica core leads, once it leads ``count`` of them (the
    driver applies the image's changes in its own task, a moment after the image)."""
    assert broker.replicas is not None
    core = broker.replicas.core
    with trio.fail_after(10):
        while len(led := sorted((p.topic, p.index) for p in core.partitions if p.is_leader)) < count:
            await broker.replicas.applied.wait()
    return led


async def same_offset(controller: ControllerNode, broker: BrokerNode) -> MetadataImage:
    """The controller's committed image once the broker's image has the same offset."""
    while True:
        assert controller.machine is not None
        committed = controller.machine.controller.committed
        if committed.provenance.offset == broker.machine.image_offset:
            return committed
        async with trio.open_nursery() as waiters:
            for wait in (controller.wait_changed, broker.wait_changed):
                waiters.start_soon(_then_cancel, wait, waiters.cancel_scope)


async def _then_cancel(wait: Callable[[], Awaitable[None]], scope: trio.CancelScope) -> None:
    await wait()
    scope.cancel()


async def _ask_the_broker_listener(broker: BrokerNode) -> None:
    assert broker.address is not None
    async with await TrioKafkaConnection.connect(
        broker.address.host, broker.address.port
    ) as conn:
        assert conn.server_versions is not None
        assert set(conn.server_versions) == {
        0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 16, 18, 19, 20, 21, 22, 23, 32, 35, 37, 42, 43,
        44, 45, 46, 47, 55, 60, 10001
    }
        metadata = await conn.request(MetadataRequest(topics=None), version=12)
        described = await conn.request(DescribeClusterRequest(endpoint_type=1))
        unknown = await conn.request(
            MetadataRequest(topics=(MetadataRequestTopic(name="nope"),)), version=1
        )
        image = await conn.request(PykraftDescribeImageRequest())
    assert [(b.node_id, b.host, b.port) for b in metadata.brokers] == [
        (BROKER_ID, broker.address.host, broker.address.port)
    ]
    assert (metadata.cluster_id, metadata.controller_id) == (CLUSTER_ID, BROKER_ID)
    [orders] = metadata.topics
    assert orders.name == "orders" and orders.topic_id == broker.image.topic("orders").topic_id  # type: ignore[union-attr]
    assert [(p.partition_index, p.error_code, p.leader_id) for p in orders.partitions] == [
        (i, Errors.NONE, BROKER_ID) for i in range(3)
    ]
    assert [b.broker_id for b in described.brokers] == [BROKER_ID]
    assert [t.error_code for t in unknown.topics] == [Errors.UNKNOWN_TOPIC_OR_PARTITION]
    assert image.node_id == BROKER_ID and image.offset <= broker.machine.image_offset


async def test_a_broker_of_another_cluster_is_refused_and_exits_with_the_reason(
    tmp_path: Path,
) -> None:
    controller, config = controller_and_broker_config(
        tmp_path, cluster_id="AAAAAAAAAAAAAAAAAAAAAA"
    )
    with trio.fail_after(DEADLINE_S):
        async with trio.open_nursery() as nursery:
            await nursery.start(controller.run)
            await wait_for_leader([controller])
            broker = BrokerNode.from_config(config, seed=2)
            with pytest.RaisesGroup(
                pytest.RaisesExc(BrokerStartupError, match="INCONSISTENT_CLUSTER_ID"),
                flatten_subgroups=True,
            ):
                async with trio.open_nursery() as brokers:
                    await brokers.start(broker.run)
            controller.stop()


async def test_a_broker_with_no_controller_to_register_with_gives_up_after_the_timeout(
    tmp_path: Path,
) -> None:
    controller_port, broker_port = free_ports(2)  # nobody listens on the controller port
    config = broker_config(
        tmp_path, [controller_port], broker_port,
        extra={"initial.broker.registration.timeout.ms": "300"},
    )
    broker = BrokerNode.from_config(config, seed=2)
    refusal = r"initial\.broker\.registration\.timeout\.ms=300"
    with trio.fail_after(DEADLINE_S), pytest.RaisesGroup(
        pytest.RaisesExc(BrokerStartupError, match=refusal), flatten_subgroups=True
    ):
        async with trio.open_nursery() as nursery:
            await nursery.start(broker.run)


async def test_a_restarted_broker_is_a_new_incarnation_and_starts_from_its_snapshot(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="quorum.node.metadata_follower")
    controller, config = controller_and_broker_config(tmp_path)
    settings = attrs.evolve(BrokerNode.from_config(config).settings, snapshot_max_bytes=1)
    with trio.fail_after(DEADLINE_S):
        async with trio.open_nursery() as nursery:
            await nursery.start(controller.run)
            await wait_for_leader([controller])
            first = BrokerNode(settings, seed=2)
            async with trio.open_nursery() as brokers:
                await brokers.start(first.run)
                await _create_topic_and_follow_it(controller, first)
                first.stop()
            again = BrokerNode(settings, seed=3)
            async with trio.open_nursery() as brokers:
                await brokers.start(again.run)
                assert again.incarnation_id != first.incarnation_id
                assert again.broker_epoch > first.broker_epoch
                assert again.image.topic("orders") is not None
                again.stop()
            controller.stop()
    assert "loaded metadata snapshot" in caplog.text
    assert again.machine.image_offset >= first.machine.image_offset


def combined_config(root: Path, controller_port: int, broker_port: int) -> ServerConfig:
    """A formatted single-node cluster: node 1 is the only voter and a broker."""
    return write_server_config(
        root / "combined-1", roles="broker,controller", node_id=1,
        voters=f"1@127.0.0.1:{controller_port}",
        listeners=f"PLAINTEXT://127.0.0.1:{broker_port},CONTROLLER://127.0.0.1:{controller_port}",
        overrides={**FAST, **LIVENESS},
    )


async def test_a_combined_node_registers_its_own_broker_and_leads_a_topic_it_creates(
    tmp_path: Path,
) -> None:
    controller_port, broker_port = free_ports(2)
    node = BrokerNode.from_config(combined_config(tmp_path, controller_port, broker_port), seed=1)
    assert node.is_combined
    with trio.fail_after(DEADLINE_S):
        async with trio.open_nursery() as nursery:
            address = await nursery.start(node.run)
            assert str(address) == f"PLAINTEXT://127.0.0.1:{broker_port}"
            assert str(node.controller_address) == f"CONTROLLER://127.0.0.1:{controller_port}"
            assert node.state is BrokerState.RUNNING and node.leader_id == 1
            assert node.driver.core.is_voter
            machine = node.controller_machine
            assert machine is not None
            registered = await _until(node, lambda: machine.controller.committed, unfenced(1))
            assert registered.brokers[1].epoch == node.broker_epoch
            bootstrap = [HostPort("127.0.0.1", controller_port)]
            async with ControllerChannel(bootstrap) as channel:
                answer = await channel.call(
                    CreateTopicsRequest(
                        topics=(CreateTopicsRequestTopic(name="solo", num_partitions=2,
                                                         replication_factor=1),)
                    )
                )
            assert [t.error_code for t in answer.topics] == [Errors.NONE]
            image = await _until(node, lambda: node.image, lambda i: len(i.partitions_led_by(1)) == 2)
            assert [(t.name, i) for t, i in image.partitions_led_by(1)] == [("solo", 0), ("solo", 1)]
            assignments = node.machine.assignments.values()
            roles = sorted((a.topic, a.partition, a.role) for a in assignments)
            assert roles == [("solo", i, PartitionRole.LEADER) for i in range(2)]
            assert await hosted_leaders(node, 2) == [("solo", 0), ("solo", 1)]
            # one log, two machines fed by the same Ready: the same image at the same offset
            committed = machine.controller.committed
            assert committed.provenance.offset == node.machine.image_offset
            assert image_digest(committed) == image_digest(node.image)
            node.stop()
    assert node.state is BrokerState.SHUTTING_DOWN


async def _until(
    node: BrokerNode,
    current: Callable[[], MetadataImage],
    predicate: Callable[[MetadataImage], bool],
) -> MetadataImage:
    """``current()`` once ``predicate`` holds, looking again after each Ready of the node's
    core (both machines move only then; bounded by the caller's deadline)."""
    while not predicate(image := current()):
        await node.driver.changed.wait()
    return image


def test_the_ready_line_names_the_broker_and_its_listener() -> None:
    address = NodeAddress("PLAINTEXT", "127.0.0.1", 9092)
    assert ready_line(4, address) == "pykraft broker 4 ready: PLAINTEXT://127.0.0.1:9092"
