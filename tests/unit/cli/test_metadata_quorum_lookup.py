"""Finding the leader through bootstrap controllers, against fake controllers on loopback.

Each fake answers ApiVersions, DescribeCluster and DescribeQuorum the way a
pykraft controller does: only the leader describes the quorum; the others
answer NOT_LEADER_OR_FOLLOWER, naming the leader and every voter's address.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from functools import partial
from typing import Any

import pytest
import trio

from quorum.config.values import HostPort
from quorum.quorum_admin import (
    AdminSettings,
    EndpointType,
    QuorumAdminError,
    describe_metadata_quorum,
)
from quorum.wire.error_codes import Errors
from quorum.wire.framing import FrameDecoder
from quorum.wire.messages import (
    ApiVersionsResponse,
    ApiVersionsResponseApiVersion,
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeQuorumRequest,
    DescribeQuorumResponse,
    DescribeQuorumResponseListener,
    DescribeQuorumResponseNode,
    DescribeQuorumResponsePartition,
    DescribeQuorumResponseReplicaState,
    DescribeQuorumResponseTopic,
)
from quorum.wire.protocol import ResponseHeader, decode_request, encode_response

SETTINGS = AdminSettings(api_timeout_ms=2000, request_timeout_ms=1000, retry_backoff_ms=10)
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
            return DescribeClusterResponse(cluster_id="fake-cluster", controller_id=self.leader())
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


def address(fakes: dict[int, FakeController], node_id: int) -> HostPort:
    return HostPort("127.0.0.1", fakes[node_id].cluster[node_id])


async def test_a_non_leader_bootstrap_controller_leads_the_caller_to_the_leader() -> None:
    async with trio.open_nursery() as nursery:
        fakes = await start_fakes(nursery, 3, leader=lambda: 3)
        description = await describe_metadata_quorum(
            [address(fakes, 1)], with_cluster_id=True, settings=SETTINGS
        )
        nursery.cancel_scope.cancel()
    assert description.cluster_id == "fake-cluster"
    assert description.info.leader_id == 3
    assert [v.replica_id for v in description.info.voters] == [1, 2, 3]
    assert fakes[1].asked == ["DescribeCluster", "DescribeQuorum"]
    assert fakes[3].asked == ["DescribeCluster", "DescribeQuorum"]
    assert fakes[2].asked == []


async def test_replication_does_not_ask_for_the_cluster_id() -> None:
    async with trio.open_nursery() as nursery:
        fakes = await start_fakes(nursery, 1, leader=lambda: 1)
        description = await describe_metadata_quorum([address(fakes, 1)], settings=SETTINGS)
        nursery.cancel_scope.cancel()
    assert description.cluster_id is None
    assert fakes[1].asked == ["DescribeQuorum"]


async def test_without_a_leader_the_call_retries_until_one_is_elected() -> None:
    answers = itertools.count()
    # the first six answers know no leader (three rounds over both nodes)
    async with trio.open_nursery() as nursery:
        fakes = await start_fakes(nursery, 2, leader=lambda: 2 if next(answers) >= 6 else -1)
        description = await describe_metadata_quorum(
            [address(fakes, 1), address(fakes, 2)], settings=SETTINGS
        )
        nursery.cancel_scope.cancel()
    assert description.info.leader_id == 2
    # the seventh answer (node 1) names node 2, which describes the quorum next
    assert (len(fakes[1].asked), len(fakes[2].asked)) == (4, 4)


async def test_a_broker_bootstrap_at_a_controller_listener_fails_with_the_endpoint_error() -> None:
    async with trio.open_nursery() as nursery:
        fakes = await start_fakes(nursery, 1, leader=lambda: 1)
        with pytest.raises(QuorumAdminError, match="MISMATCHED_ENDPOINT_TYPE: wrong endpoint"):
            await describe_metadata_quorum([address(fakes, 1)], endpoint_type=EndpointType.BROKER,
                                           settings=SETTINGS)
        nursery.cancel_scope.cancel()
