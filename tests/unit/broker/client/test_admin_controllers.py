"""The admin client with ``bootstrap.controllers`` (KIP-919), and describing the quorum.

Against fake controllers on loopback that answer ApiVersions, DescribeCluster and
DescribeQuorum the way a pykraft controller does: DescribeCluster names the active
controller and lists every controller's address; only the leader describes the quorum,
the others answer NOT_LEADER_OR_FOLLOWER. Then against a real in-process controller and
broker: every admin call a controller answers, and the ones it cannot refused clearly.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio

from broker.client import Admin, KafkaError, NewTopic, TopicPartition
from quorum.config import ConfigError
from quorum.controller_client import EndpointType
from quorum.wire.error_codes import Errors
from quorum.wire.framing import FrameDecoder
from quorum.wire.messages import (
    ApiVersionsResponse,
    ApiVersionsResponseApiVersion,
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeClusterResponseBroker,
    DescribeQuorumRequest,
    DescribeQuorumResponse,
    DescribeQuorumResponseListener,
    DescribeQuorumResponseNode,
    DescribeQuorumResponsePartition,
    DescribeQuorumResponseReplicaState,
    DescribeQuorumResponseTopic,
)
from quorum.wire.protocol import ResponseHeader, decode_request, encode_response

from ..test_broker_node import running_controller_and_broker

DEADLINE_S = 30
SETTINGS = {"default.api.timeout.ms": "2000", "request.timeout.ms": "1000",
            "retry.backoff.ms": "10", "reconnect.backoff.ms": "10"}
TABLE = (
    ApiVersionsResponseApiVersion(api_key=18, min_version=0, max_version=4),
    ApiVersionsResponseApiVersion(api_key=55, min_version=0, max_version=2),
    ApiVersionsResponseApiVersion(api_key=60, min_version=0, max_version=1),
)


class FakeController:
    def __init__(self, node_id: int, cluster: dict[int, int], leader: Callable[[], int]) -> None:
        self.node_id = node_id
        self.cluster = cluster  # node id -> port
        self.leader = leader
        self.asked: list[str] = []

    def answer(self, message: Any) -> Any:
        if isinstance(message, DescribeClusterRequest):
            self.asked.append("DescribeCluster")
            if message.endpoint_type != EndpointType.CONTROLLER:
                return DescribeClusterResponse(error_code=Errors.MISMATCHED_ENDPOINT_TYPE,
                                               error_message="wrong endpoint type")
            return DescribeClusterResponse(
                cluster_id="fake-cluster", controller_id=self.leader(), endpoint_type=2,
                brokers=tuple(
                    DescribeClusterResponseBroker(broker_id=n, host="127.0.0.1", port=port)
                    for n, port in sorted(self.cluster.items())
                ),
            )
        if isinstance(message, DescribeQuorumRequest):
            self.asked.append("DescribeQuorum")
            return self.describe_quorum()
        return ApiVersionsResponse(api_keys=TABLE)

    def describe_quorum(self) -> DescribeQuorumResponse:
        leader = self.leader()
        if leader == self.node_id:
            voters = tuple(DescribeQuorumResponseReplicaState(replica_id=n, log_end_offset=7)
                           for n in sorted(self.cluster))
            partition = DescribeQuorumResponsePartition(
                leader_id=leader, leader_epoch=3, high_watermark=7, current_voters=voters)
        else:
            partition = DescribeQuorumResponsePartition(
                error_code=Errors.NOT_LEADER_OR_FOLLOWER, leader_id=leader, leader_epoch=3,
                high_watermark=-1)
        nodes = tuple(
            DescribeQuorumResponseNode(node_id=n, listeners=(DescribeQuorumResponseListener(
                name="CONTROLLER", host="127.0.0.1", port=port),))
            for n, port in sorted(self.cluster.items())
        )
        topic = DescribeQuorumResponseTopic(topic_name="__cluster_metadata",
                                            partitions=(partition,))
        return DescribeQuorumResponse(topics=(topic,), nodes=nodes)

    async def serve(self, stream: trio.SocketStream) -> None:
        decoder = FrameDecoder()
        async with stream:
            while data := await stream.receive_some(65536):
                decoder.feed(data)
                while (frame := decoder.next_frame()) is not None:
                    header, message = decode_request(frame)
                    reply = encode_response(ResponseHeader(header.correlation_id),
                                            header.api_key, header.api_version,
                                            self.answer(message))
                    await stream.send_all(reply)


async def start_fakes(nursery: trio.Nursery, count: int,
                      leader: Callable[[], int]) -> dict[int, FakeController]:
    cluster: dict[int, int] = {}
    fakes: dict[int, FakeController] = {}
    for node_id in range(1, count + 1):
        fake = FakeController(node_id, cluster, leader)
        listeners = await nursery.start(partial(trio.serve_tcp, fake.serve, 0, host="127.0.0.1"))
        cluster[node_id] = listeners[0].socket.getsockname()[1]
        fakes[node_id] = fake
    return fakes


def admin_at(fakes: dict[int, FakeController], *node_ids: int,
             key: str = "bootstrap.controllers") -> Admin:
    bootstrap = ",".join(f"127.0.0.1:{fakes[n].cluster[n]}" for n in node_ids)
    return Admin({key: bootstrap, **SETTINGS})


async def test_a_non_leader_bootstrap_controller_leads_the_caller_to_the_leader() -> None:
    async with trio.open_nursery() as nursery:
        fakes = await start_fakes(nursery, 3, leader=lambda: 3)
        async with admin_at(fakes, 1) as admin:
            info = await admin.describe_metadata_quorum()
            cluster = await admin.describe_cluster()
        nursery.cancel_scope.cancel()
    assert cluster.cluster_id == "fake-cluster"
    assert cluster.controller is not None and cluster.controller.node_id == 3
    assert [b.node_id for b in cluster.brokers] == [1, 2, 3]  # through controllers: controllers
    assert info.leader_id == 3
    assert [v.replica_id for v in info.voters] == [1, 2, 3]
    # node 1 named the active controller; every later call went straight there
    assert fakes[1].asked == ["DescribeCluster"]
    assert fakes[3].asked == ["DescribeQuorum", "DescribeCluster"]
    assert fakes[2].asked == []


async def test_without_a_leader_the_call_retries_until_one_is_elected() -> None:
    answers = itertools.count()
    # the first four DescribeCluster answers know no active controller
    async with trio.open_nursery() as nursery:
        fakes = await start_fakes(nursery, 2, leader=lambda: 2 if next(answers) >= 4 else -1)
        async with admin_at(fakes, 1, 2) as admin:
            info = await admin.describe_metadata_quorum()
        nursery.cancel_scope.cancel()
    assert info.leader_id == 2
    assert fakes[2].asked[-1] == "DescribeQuorum"
    assert fakes[1].asked.count("DescribeCluster") + fakes[2].asked.count("DescribeCluster") == 5


async def test_when_the_leader_moves_the_next_call_finds_the_new_one() -> None:
    leader = [3]
    async with trio.open_nursery() as nursery:
        fakes = await start_fakes(nursery, 3, leader=lambda: leader[0])
        async with admin_at(fakes, 1) as admin:
            assert (await admin.describe_metadata_quorum()).leader_id == 3
            leader[0] = 2
            assert (await admin.describe_metadata_quorum()).leader_id == 2
        nursery.cancel_scope.cancel()
    # node 3 refused the second call (NOT_LEADER_OR_FOLLOWER), node 1 named node 2
    assert fakes[3].asked == ["DescribeQuorum", "DescribeQuorum"]
    assert fakes[1].asked == ["DescribeCluster", "DescribeCluster"]
    assert fakes[2].asked == ["DescribeQuorum"]


async def test_a_broker_bootstrap_at_a_controller_listener_fails_with_the_endpoint_error() -> None:
    async with trio.open_nursery() as nursery:
        fakes = await start_fakes(nursery, 1, leader=lambda: 1)
        async with admin_at(fakes, 1, key="bootstrap.servers") as admin:
            with pytest.raises(KafkaError, match="MISMATCHED_ENDPOINT_TYPE: wrong endpoint"):
                await admin.describe_metadata_quorum()
        nursery.cancel_scope.cancel()


async def test_no_reachable_controller_is_a_timeout_naming_the_call_and_the_address() -> None:
    async with trio.open_nursery() as nursery:
        fakes = await start_fakes(nursery, 1, leader=lambda: 1)
        port = fakes[1].cluster[1]
        nursery.cancel_scope.cancel()
    async with Admin({"bootstrap.controllers": f"127.0.0.1:{port}", **SETTINGS,
                      "default.api.timeout.ms": "300"}) as admin:
        with pytest.raises(KafkaError) as raised:
            await admin.describe_metadata_quorum()
    text = str(raised.value)
    assert text.startswith("TimeoutException: Timed out waiting for a node assignment. "
                           "Call: describeMetadataQuorum")
    assert f"127.0.0.1:{port}: cannot connect" in text


def test_exactly_one_bootstrap_setting_is_required() -> None:
    with pytest.raises(ConfigError, match=r"You must set either bootstrap\.servers or "
                                          r"bootstrap\.controllers"):
        Admin({})
    with pytest.raises(ConfigError, match="You cannot set both"):
        Admin({"bootstrap.servers": "a:1", "bootstrap.controllers": "b:2"})


# -- a real controller ---------------------------------------------------------------------


async def test_a_real_controller_answers_the_admin_calls_it_can(tmp_path: Path) -> None:
    with trio.fail_after(DEADLINE_S):
        async with running_controller_and_broker(tmp_path) as (controller, _broker):
            assert controller.address is not None
            bootstrap = f"{controller.address.host}:{controller.address.port}"
            async with Admin({"bootstrap.controllers": bootstrap, "retry.backoff.ms": "20"}) as admin:
                assert await admin.create_topics(
                    [NewTopic(name="orders", num_partitions=2, replication_factor=1)]
                ) == {"orders": None}
                assert await admin.list_topics() == ["orders"]
                orders = (await admin.describe_topics(["orders"]))["orders"]
                assert [p.partition for p in orders.partitions] == [0, 1]
                assert all(p.leader is not None and p.isr == p.replicas for p in orders.partitions)
                with pytest.raises(KafkaError, match="UNKNOWN_TOPIC_OR_PARTITION"):
                    await admin.describe_topics(["nope"])
                cluster = await admin.describe_cluster()
                assert cluster.controller is not None
                assert (cluster.controller.host, cluster.controller.port) == (
                    controller.address.host, controller.address.port)
                info = await admin.describe_metadata_quorum()
                assert info.leader_id == cluster.controller.node_id
                image = await admin.describe_image()
                assert [t["name"] for t in image["topics"]] == ["orders"]
                for call in (admin.list_offsets({TopicPartition("orders", 0): -1}),
                             admin.describe_log_dirs()):
                    with pytest.raises(KafkaError, match=r"needs bootstrap\.servers"):
                        await call
                assert await admin.delete_topics(["orders"]) == {"orders": None}
