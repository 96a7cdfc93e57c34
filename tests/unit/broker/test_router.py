"""The broker listener's router: what it advertises, what it refuses, and KIP-511."""

from __future__ import annotations

import struct
import uuid

import pytest
import trio
import trio.testing

from broker.api.metadata import ListenerView
from broker.router import BrokerRequestRejected, BrokerRouter, broker_listener_table
from quorum.controller.image import EMPTY_IMAGE
from quorum.node.connection import ServerConnection
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    CreateTopicsRequest,
    CreateTopicsRequestTopic,
    CreateTopicsResponse,
    CreateTopicsResponseTopic,
    FetchRequest,
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
)
from quorum.wire.protocol import RequestHeader, decode_response, encode_request
from quorum.wire.uuids import ZERO_UUID

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


SERVED = {3: (0, 12), 18: (0, 4), 60: (0, 1), 10001: (0, 0)}
FORWARDED = {19: (2, 5), 20: (1, 4), 32: (1, 4), 37: (0, 3), 43: (0, 2), 44: (0, 1),
             45: (0, 0), 46: (0, 0), 55: (0, 2)}


def test_the_listener_advertises_only_what_it_serves_or_forwards() -> None:
    assert broker_listener_table() == SERVED | FORWARDED


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
    assert {k.api_key for k in answer.api_keys} == set(SERVED) | set(FORWARDED)


class SlowForwarder:
    """Stands in for ControllerForwarder: answers once released, in the order asked."""

    def __init__(self) -> None:
        self.release = trio.Event()
        self.asked: list[tuple[object, int]] = []

    async def forward(self, request: object, version: int) -> object:
        self.asked.append((request, version))
        await self.release.wait()
        return CreateTopicsResponse(topics=(CreateTopicsResponseTopic(name="t"),))


async def test_a_forwarded_request_is_answered_in_order_without_blocking_the_next() -> None:
    forwarder = SlowForwarder()
    conn = ServerConnection("test")
    create = encode_request(RequestHeader(api_key=19, api_version=5, correlation_id=1),
                            CreateTopicsRequest(topics=(CreateTopicsRequestTopic(name="t"),)))
    metadata = encode_request(RequestHeader(api_key=3, api_version=12, correlation_id=2),
                              MetadataRequest(topics=()))
    stream = trio.testing.MemorySendStream()
    async with trio.open_nursery() as nursery:
        router = BrokerRouter(view=VIEW, image=lambda: EMPTY_IMAGE,
                              forwarder=forwarder, nursery=nursery)  # type: ignore[arg-type]
        await router.dispatch(conn, create[4:])
        # the metadata request is handled while the forward waits
        await router.dispatch(conn, metadata[4:])
        await trio.testing.wait_all_tasks_blocked()
        assert [v for _, v in forwarder.asked] == [5]
        forwarder.release.set()
        await trio.testing.wait_all_tasks_blocked()
        conn.close()
        await conn.write_loop(stream)
    data = bytes(stream.get_data_nowait())
    first_size = struct.unpack(">i", data[:4])[0]
    header, answer = decode_response(data[4:4 + first_size], 19, 5)
    assert header.correlation_id == 1 and answer.topics[0].name == "t"
    second, _ = decode_response(data[8 + first_size:], 3, 12)
    assert second.correlation_id == 2


async def test_without_a_forwarder_an_admin_request_closes_the_connection() -> None:
    router = BrokerRouter(view=VIEW, image=lambda: EMPTY_IMAGE)
    frame = encode_request(RequestHeader(api_key=19, api_version=5, correlation_id=1),
                           CreateTopicsRequest())
    with pytest.raises(BrokerRequestRejected, match="forwards no admin requests"):
        await router.dispatch(ServerConnection("test"), frame[4:])


@pytest.mark.parametrize("version", [10, 11])
async def test_metadata_before_v12_naming_a_topic_by_id_or_by_no_name_gets_invalid_request(
    version: int,
) -> None:
    router = BrokerRouter(view=VIEW, image=lambda: EMPTY_IMAGE)
    topic_id = uuid.UUID(int=7)
    request = MetadataRequest(topics=(
        MetadataRequestTopic(name=None), MetadataRequestTopic(name="t", topic_id=topic_id),
    ))
    frame = encode_request(RequestHeader(api_key=3, api_version=version, correlation_id=5),
                           request)
    data = await answers(router, [frame[4:]])
    header, answer = decode_response(data[4:], 3, version)
    assert header.correlation_id == 5 and isinstance(answer, MetadataResponse)
    assert [(t.error_code, t.name, t.topic_id) for t in answer.topics] == [
        (Errors.INVALID_REQUEST, "", ZERO_UUID), (Errors.INVALID_REQUEST, "t", topic_id),
    ]
    assert answer.brokers == ()
