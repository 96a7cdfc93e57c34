"""The broker listener's router: what it advertises, what it refuses, and KIP-511."""

from __future__ import annotations

import struct

import pytest
import trio
import trio.testing

from broker.metadata_answers import ListenerView
from broker.router import BrokerRequestRejected, BrokerRouter, broker_listener_table
from quorum.controller.image import EMPTY_IMAGE
from quorum.node.connection import ServerConnection
from quorum.wire.error_codes import Errors
from quorum.wire.messages import ApiVersionsRequest, ApiVersionsResponse, FetchRequest
from quorum.wire.protocol import RequestHeader, decode_response, encode_request

VIEW = ListenerView(
    node_id=7, cluster_id="cluster", listener_name="PLAINTEXT", host="b7", port=9092, rack=None
)


async def answers(router: BrokerRouter, frames: list[bytes]) -> bytes:
    """What the connection writes for ``frames`` (each without its size prefix)."""
    conn = ServerConnection("test")
    stream = trio.testing.MemorySendStream()
    for frame in frames:
        await router.dispatch(conn, frame)
    conn.close()
    await conn.write_loop(stream)
    return bytes(stream.get_data_nowait())


def test_the_listener_advertises_only_what_it_serves() -> None:
    assert broker_listener_table() == {3: (0, 12), 18: (0, 4), 60: (0, 1), 10001: (0, 0)}


async def test_an_unserved_request_closes_the_connection() -> None:
    router = BrokerRouter(view=VIEW, image=lambda: EMPTY_IMAGE)
    header = RequestHeader(api_key=1, api_version=12, correlation_id=3)
    frame = encode_request(header, FetchRequest())
    with pytest.raises(BrokerRequestRejected, match="api key 1 v12 is not served"):
        await router.dispatch(ServerConnection("test"), frame[4:])


async def test_an_unknown_api_versions_version_gets_a_v0_answer_with_error_35() -> None:
    router = BrokerRouter(view=VIEW, image=lambda: EMPTY_IMAGE)
    request = encode_request(
        RequestHeader(api_key=18, api_version=3, correlation_id=42), ApiVersionsRequest()
    )
    request = request[:6] + struct.pack(">h", 9) + request[8:]
    data = await answers(router, [request[4:]])
    header, answer = decode_response(data[4:], 18, 0)
    assert header.correlation_id == 42 and isinstance(answer, ApiVersionsResponse)
    assert answer.error_code == Errors.UNSUPPORTED_VERSION
    assert {k.api_key for k in answer.api_keys} == {3, 18, 60, 10001}
