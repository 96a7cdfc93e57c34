"""Admin requests sent to a broker reach the active controller (real sockets, one nursery):
topics created and deleted through the broker, many forwards at once, DescribeQuorum
answered by the quorum leader, and a timely REQUEST_TIMED_OUT when no controller answers."""

from __future__ import annotations

from pathlib import Path

import trio

from broker import BrokerNode
from broker.api.forwarding import ControllerForwarder
from broker.controller_channel import BrokerControllerChannel
from quorum.client import TrioKafkaConnection
from quorum.describe import describe_quorum_request, quorum_info_from_response
from quorum.wire.codec import encode
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    CreateTopicsRequest,
    CreateTopicsRequestTopic,
    DeleteTopicsRequest,
    ElectLeadersRequest,
    ElectLeadersRequestTopicPartitions,
    MetadataRequest,
    MetadataRequestTopic,
)

from ..node.nodes import controller_image_until, free_ports, wait_for_leader
from .test_broker_node import (
    BROKER_ID,
    controller_and_broker_config,
    running_controller_and_broker,
)

DEADLINE_S = 20


def create(name: str, *, timeout_ms: int = 10_000) -> CreateTopicsRequest:
    return CreateTopicsRequest(
        topics=(CreateTopicsRequestTopic(name=name, num_partitions=2, replication_factor=1),),
        timeout_ms=timeout_ms,
    )


async def connect(broker: BrokerNode) -> TrioKafkaConnection:
    assert broker.address is not None
    return await TrioKafkaConnection.connect(broker.address.host, broker.address.port)


async def test_topics_created_and_deleted_through_a_broker_and_many_at_once(
    tmp_path: Path,
) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running_controller_and_broker(tmp_path) as (controller, broker):
            async with await connect(broker) as conn:
                # the broker names itself as the controller: admin clients send here
                metadata = await conn.request(MetadataRequest(topics=()), version=12)
                assert metadata.controller_id == BROKER_ID
                answer = await conn.request(create("orders"))
                assert [t.error_code for t in answer.topics] == [Errors.NONE]
                assert answer.topics[0].num_partitions == 2
                # answered once the broker's own image has it: read back at once
                found = await conn.request(
                    MetadataRequest(topics=(MetadataRequestTopic(name="orders"),)), version=12
                )
                assert [(t.error_code, len(t.partitions)) for t in found.topics] == [(0, 2)]
                again = await conn.request(create("orders"))
                assert [t.error_code for t in again.topics] == [Errors.TOPIC_ALREADY_EXISTS]
                # a timeout the client left at zero or below: the broker waits its default
                for timeout_ms in (0, -1):
                    late = await conn.request(create(f"timeout{timeout_ms}", timeout_ms=timeout_ms))
                    assert [t.error_code for t in late.topics] == [Errors.NONE]
            image = await controller_image_until(controller, lambda i: i.topic("orders") is not None)
            assert len(image.topic("orders").partitions) == 2  # type: ignore[union-attr]

            codes: dict[str, int] = {}

            async def create_one(name: str) -> None:
                async with await connect(broker) as own:
                    response = await own.request(create(name))
                    codes[name] = response.topics[0].error_code

            async with trio.open_nursery() as clients:
                for i in range(24):
                    clients.start_soon(create_one, f"t{i}")
            assert codes == {f"t{i}": Errors.NONE for i in range(24)}

            async with await connect(broker) as conn:
                gone = await conn.request(DeleteTopicsRequest(topic_names=("orders",),
                                                              timeout_ms=10_000), version=4)
                assert [r.error_code for r in gone.responses] == [Errors.NONE]
                found = await conn.request(
                    MetadataRequest(topics=(MetadataRequestTopic(name="orders"),)), version=12
                )
                assert [t.error_code for t in found.topics] == [Errors.UNKNOWN_TOPIC_OR_PARTITION]
            await controller_image_until(controller, lambda i: i.topic("orders") is None)


async def test_a_forward_no_controller_answers_times_out_and_the_broker_keeps_serving(
    tmp_path: Path,
) -> None:
    controller, config = controller_and_broker_config(tmp_path)
    broker = BrokerNode.from_config(config, seed=2)
    with trio.fail_after(DEADLINE_S):
        async with trio.open_nursery() as nursery:
            async with trio.open_nursery() as quorum:
                await quorum.start(controller.run)
                await wait_for_leader([controller])
                await nursery.start(broker.run)
                controller.stop()
            # the only controller is gone: the forward gives up after the request's timeout
            async with await connect(broker) as conn:
                start = trio.current_time()
                answer = await conn.request(create("late", timeout_ms=800))
                waited = trio.current_time() - start
                assert [t.error_code for t in answer.topics] == [Errors.REQUEST_TIMED_OUT]
                assert answer.topics[0].error_message
                assert 0.8 <= waited < 5
                metadata = await conn.request(MetadataRequest(topics=()), version=12)
                assert metadata.brokers  # still answered from the image
            broker.stop()


async def test_describe_quorum_through_a_broker_is_the_quorum_leaders_answer(
    tmp_path: Path,
) -> None:
    with trio.fail_after(DEADLINE_S):
        async with (
            running_controller_and_broker(tmp_path) as (controller, broker),
            await connect(broker) as conn,
        ):
            for version in (0, 1, 2):
                answer = await conn.request(describe_quorum_request(), version=version)
                info = quorum_info_from_response(answer)
                assert info.leader_id == controller.node_id
                assert [v.replica_id for v in info.voters] == [controller.node_id]
                # the broker asking is one of the leader's observers
                assert BROKER_ID in [o.replica_id for o in info.observers]


async def test_a_describe_quorum_no_controller_answers_gets_request_timed_out() -> None:
    (unused_port,) = free_ports(1)
    channel = BrokerControllerChannel(
        {1: ("127.0.0.1", unused_port)}, leader_id=lambda: 1, client_id="test"
    )
    forwarder = ControllerForwarder(channel, default_timeout_ms=300)
    with trio.fail_after(DEADLINE_S):
        start = trio.current_time()
        answer = await forwarder.forward(describe_quorum_request(), 2)
        waited = trio.current_time() - start
        await channel.aclose()
    # DescribeQuorum carries no timeout: the forwarder's own default bounds it
    assert answer.error_code == Errors.REQUEST_TIMED_OUT
    assert answer.error_message
    assert 0.3 <= waited < 5


async def test_an_elect_leaders_v0_no_controller_answers_times_out_on_each_partition() -> None:
    (unused_port,) = free_ports(1)
    channel = BrokerControllerChannel(
        {1: ("127.0.0.1", unused_port)}, leader_id=lambda: 1, client_id="test"
    )
    forwarder = ControllerForwarder(channel)
    request = ElectLeadersRequest(
        topic_partitions=(ElectLeadersRequestTopicPartitions(topic="t", partitions=(0, 1)),),
        timeout_ms=300,
    )
    with trio.fail_after(DEADLINE_S):
        answer = await forwarder.forward(request, 0)
        await channel.aclose()
    # v0 has no top-level error code (Kafka's ElectLeadersRequest.getErrorResponse): the
    # answer must encode at v0, with the error on every partition asked about
    encode(answer, 0)
    assert [(r.topic, [(p.partition_id, p.error_code) for p in r.partition_result])
            for r in answer.replica_election_results] == [
        ("t", [(0, Errors.REQUEST_TIMED_OUT), (1, Errors.REQUEST_TIMED_OUT)])
    ]
