"""A tiny in-test Kafka server on 127.0.0.1 for the client front-ends.

It serves ApiVersions and DescribeCluster, answering DescribeCluster with
``cluster_id = "type-<endpoint_type>"`` so a caller can tell its answer from
others (prefixed with the server's ``label``, and carrying its
``error_code``). A request with ``include_cluster_authorized_operations`` is held
until ``release`` is set; ``endpoint_type == 99`` makes it close the
connection instead of answering, ``endpoint_type == 98`` makes it send
nothing back and read on (as a broker does for Produce with acks=0).
"""

from __future__ import annotations

import contextlib
import socket
from functools import partial
from typing import Any

import trio

from quorum.wire.framing import FrameDecoder
from quorum.wire.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    ApiVersionsResponseApiVersion,
    DescribeClusterRequest,
    DescribeClusterResponse,
)
from quorum.wire.protocol import ResponseHeader, decode_request, encode_response

__all__ = ["CLOSE", "SILENT", "TABLE", "TinyServer", "closed_port"]

CLOSE = 99
SILENT = 98
_NO_ANSWER = object()
TABLE = {18: (0, 4), 60: (0, 1)}


class TinyServer:
    def __init__(self, label: str = "") -> None:
        self.label = label
        self.error_code = 0
        self.release = trio.Event()
        self.port = 0
        self.requests_seen = 0
        self._arrived = trio.Event()

    async def start(self, nursery: trio.Nursery) -> int:
        listeners = await nursery.start(partial(trio.serve_tcp, self._handle, 0, host="127.0.0.1"))
        self.port = listeners[0].socket.getsockname()[1]
        return self.port

    async def until_seen(self, count: int) -> None:
        """Until ``count`` requests (of any connection) have arrived."""
        while self.requests_seen < count:
            await self._arrived.wait()

    async def _handle(self, stream: trio.SocketStream) -> None:
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            await self._serve(stream)  # a client may leave before its answer

    async def _serve(self, stream: trio.SocketStream) -> None:
        decoder = FrameDecoder()
        async with stream:
            while data := await stream.receive_some(65536):
                decoder.feed(data)
                while (frame := decoder.next_frame()) is not None:
                    header, message = decode_request(frame)
                    self.requests_seen += 1
                    self._arrived.set()
                    self._arrived = trio.Event()
                    answer = await self._answer(message)
                    if answer is None:
                        return
                    if answer is _NO_ANSWER:
                        continue
                    await stream.send_all(
                        encode_response(
                            ResponseHeader(header.correlation_id), header.api_key,
                            header.api_version, answer,
                        )
                    )

    async def _answer(self, message: Any) -> Any:
        if isinstance(message, ApiVersionsRequest):
            rows = tuple(
                ApiVersionsResponseApiVersion(api_key=k, min_version=lo, max_version=hi)
                for k, (lo, hi) in TABLE.items()
            )
            return ApiVersionsResponse(api_keys=rows)
        assert isinstance(message, DescribeClusterRequest)
        if message.endpoint_type == CLOSE:
            return None
        if message.endpoint_type == SILENT:
            return _NO_ANSWER
        if message.include_cluster_authorized_operations:
            await self.release.wait()
        return DescribeClusterResponse(
            error_code=self.error_code, cluster_id=f"{self.label}type-{message.endpoint_type}"
        )


def closed_port() -> int:
    """A loopback port with nobody listening (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
