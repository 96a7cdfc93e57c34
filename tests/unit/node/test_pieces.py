"""Node pieces without sockets: response order, pending appends, request routing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from quorum.controller.results import ControllerConfig
from quorum.log import LogConfig
from quorum.node.appends import PendingAppends
from quorum.node.connection import ServerConnection
from quorum.node.inputs import Append, AppendOutcome, Input
from quorum.node.router import RequestRejected, RequestRouter
from quorum.node.settings import NodeSettings
from quorum.raft import InboundRequest, LeaderAndEpoch, OffsetRange, RaftConfig
from quorum.wire.codec import encode
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    ApiVersionsRequest,
    DescribeClusterRequest,
    DescribeClusterResponse,
    MetadataRequest,
    VoteRequest,
)
from quorum.wire.messages.pykraft_append import PykraftAppendRequest
from quorum.wire.protocol import RequestHeader, decode_response, encode_request


def header(correlation_id: int, api_key: int = 60, version: int = 1) -> RequestHeader:
    return RequestHeader(api_key=api_key, api_version=version, correlation_id=correlation_id)


def released(conn: ServerConnection) -> list[int]:
    """Correlation ids of the frames the writer would send now."""
    ids = []
    while True:
        try:
            frames = b"".join(conn._out_receive.receive_nowait())
        except trio.WouldBlock:
            return ids
        while frames:  # the frames released together, one after the other
            ids.append(int.from_bytes(frames[4:8], "big"))
            frames = frames[4 + int.from_bytes(frames[:4], "big"):]


# -- response order ------------------------------------------------------------------------


async def test_a_later_answer_waits_until_every_earlier_request_is_answered() -> None:
    conn = ServerConnection("test")
    first, second, third = (conn.new_slot(header(i)) for i in (10, 11, 12))
    third.complete(DescribeClusterResponse())
    second.complete(DescribeClusterResponse())
    assert released(conn) == []
    first.complete(DescribeClusterResponse())
    assert released(conn) == [10, 11, 12]
    assert conn.unanswered == 0


async def test_a_slot_is_answered_once_and_not_after_the_connection_closed() -> None:
    conn = ServerConnection("test")
    slot = conn.new_slot(header(1))
    slot.complete(DescribeClusterResponse(cluster_id="first"))
    slot.complete(DescribeClusterResponse(cluster_id="second"))
    assert released(conn) == [1]
    late = conn.new_slot(header(2))
    conn.close()
    late.complete(DescribeClusterResponse())  # the client left: nothing to send, no error


# -- pending appends -----------------------------------------------------------------------


class Reply:
    def __init__(self) -> None:
        self.outcome: AppendOutcome | None = None

    def finish(self, outcome: AppendOutcome) -> None:
        assert self.outcome is None, "an append is answered once"
        self.outcome = outcome


def test_appends_complete_in_order_as_the_high_watermark_passes_them() -> None:
    pending = PendingAppends(local_id=1)
    a, b = Reply(), Reply()
    pending.add(3, OffsetRange(5, 7), a)
    pending.add(3, OffsetRange(7, 8), b)
    leader = LeaderAndEpoch(1, 3)
    pending.settle(leader, leads=True, high_watermark=6)
    assert (a.outcome, b.outcome) == (None, None)
    pending.settle(leader, leads=True, high_watermark=7)
    assert a.outcome == AppendOutcome(base_offset=5, last_offset=6, leader_id=1, leader_epoch=3)
    assert b.outcome is None and len(pending) == 1


def test_appends_fail_as_not_leader_when_leadership_moves_before_commit() -> None:
    pending = PendingAppends(local_id=1)
    reply = Reply()
    pending.add(3, OffsetRange(5, 6), reply)
    # a high watermark reported in the next epoch says nothing about these records
    pending.settle(LeaderAndEpoch(2, 4), leads=False, high_watermark=9)
    assert reply.outcome is not None
    assert reply.outcome.error == Errors.NOT_LEADER_OR_FOLLOWER
    assert (reply.outcome.leader_id, reply.outcome.leader_epoch) == (2, 4)
    assert len(pending) == 0


# -- routing -------------------------------------------------------------------------------


def settings(tmp_path: Path) -> NodeSettings:
    return NodeSettings(
        node_id=1, cluster_id="C", voters={1: ("h1", 1), 2: ("h2", 2)}, listener_name="CONTROLLER",
        bind_host="127.0.0.1", bind_port=0, advertised_host="h1", advertised_port=1,
        metadata_partition_dir=tmp_path, raft=RaftConfig(), log=LogConfig(),
        max_request_bytes=1 << 20, controller=ControllerConfig(node_id=1, cluster_id="C"),
    )


class Router:
    def __init__(self, tmp_path: Path, leader: int | None = 2) -> None:
        self.submitted: list[Input] = []
        self.conn = ServerConnection("test")
        self.router = RequestRouter(
            settings=settings(tmp_path), leader_id=lambda: leader, submit=self._submit
        )

    async def _submit(self, item: Input) -> None:
        self.submitted.append(item)

    async def send(self, message: Any, version: int, correlation_id: int = 1) -> None:
        api_key = type(message).__kafka_message__.api_key
        frame = encode_request(header(correlation_id, api_key, version), message)
        await self.router.dispatch(self.conn, frame[4:])

    def answer(self, api_key: int, version: int) -> Any:
        frame = b"".join(self.conn._out_receive.receive_nowait())
        return decode_response(frame[4:], api_key, version)[1]


async def test_api_versions_lists_only_the_apis_this_listener_serves(tmp_path: Path) -> None:
    r = Router(tmp_path)
    await r.send(
        ApiVersionsRequest(client_software_name="pykraft", client_software_version="0.1.0"), 3
    )
    keys = {k.api_key: (k.min_version, k.max_version) for k in r.answer(18, 3).api_keys}
    assert keys == {1: (4, 17), 18: (0, 4), 52: (0, 2), 53: (0, 1), 54: (0, 1), 55: (0, 2),
                    59: (0, 1), 60: (0, 1), 10000: (0, 0), 10001: (0, 0),
                    # the controller's metadata requests
                    19: (2, 5), 20: (1, 4), 32: (1, 4), 37: (0, 3), 43: (0, 2), 44: (0, 1),
                    45: (0, 0), 46: (0, 0), 56: (2, 3), 62: (0, 4), 63: (0, 1), 64: (0, 0),
                    67: (0, 0)}


async def test_describe_cluster_names_the_cluster_the_leader_and_the_controllers(
    tmp_path: Path,
) -> None:
    r = Router(tmp_path, leader=2)
    await r.send(DescribeClusterRequest(endpoint_type=2), 1)
    answer = r.answer(60, 1)
    assert (answer.error_code, answer.cluster_id, answer.controller_id) == (0, "C", 2)
    assert [(b.broker_id, b.host, b.port) for b in answer.brokers] == [(1, "h1", 1), (2, "h2", 2)]


async def test_describe_cluster_for_brokers_is_refused_as_kafkas_controller_does(
    tmp_path: Path,
) -> None:
    r = Router(tmp_path)
    await r.send(DescribeClusterRequest(endpoint_type=1), 1)
    assert r.answer(60, 1).error_code == Errors.MISMATCHED_ENDPOINT_TYPE
    await r.send(DescribeClusterRequest(), 0, correlation_id=2)
    assert r.answer(60, 0).error_code == Errors.INVALID_REQUEST


async def test_raft_requests_and_appends_go_to_the_core(tmp_path: Path) -> None:
    r = Router(tmp_path)
    await r.send(VoteRequest(), 2)
    await r.send(PykraftAppendRequest(records=(b"a", b"b")), 0, correlation_id=2)
    vote, append = r.submitted
    assert isinstance(vote, InboundRequest) and isinstance(vote.message, VoteRequest)
    assert isinstance(append, Append) and list(append.payloads) == [b"a", b"b"]


async def test_an_empty_append_is_refused_without_reaching_the_core(tmp_path: Path) -> None:
    r = Router(tmp_path)
    await r.send(PykraftAppendRequest(records=()), 0)
    assert r.answer(10000, 0).error_code == Errors.INVALID_REQUEST
    assert r.submitted == []


async def test_an_api_this_listener_does_not_serve_is_rejected(tmp_path: Path) -> None:
    r = Router(tmp_path)
    with pytest.raises(RequestRejected, match="api key 3 v1 is not served"):
        await r.send(MetadataRequest(), 1)


def test_the_codec_round_trips_pykraft_append() -> None:
    assert encode(PykraftAppendRequest(records=(b"x",)), 0) == b"\x02\x02x\x00"
