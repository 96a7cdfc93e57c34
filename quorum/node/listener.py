"""The controller listener: one task pair (reader, writer) per accepted connection.

The reader splits the byte stream into frames (``socket.request.max.bytes``
bounds a frame) and routes each request; the writer sends answers in
request order (``quorum.node.connection``). A frame that is oversized or
does not decode, or a request this listener does not serve, closes that
connection with a log line; the node keeps serving everyone else.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Final

import trio

from quorum.node.connection import ServerConnection
from quorum.node.router import RequestRouter
from quorum.wire.errors import WireError
from quorum.wire.framing import FrameDecoder

__all__ = ["serve_connection"]

logger = logging.getLogger(__name__)

_RECEIVE_BYTES: Final = 256 * 1024
_STREAM_ERRORS: Final = (trio.BrokenResourceError, trio.ClosedResourceError, OSError)


def _peer_name(stream: trio.abc.Stream) -> str:
    if isinstance(stream, trio.SocketStream):
        try:
            host, port = stream.socket.getpeername()[:2]
        except OSError:
            return "unknown peer"
        return f"{host}:{port}"
    return repr(stream)


async def serve_connection(
    stream: trio.abc.Stream, router: RequestRouter, *, max_frame_bytes: int
) -> None:
    """Serve one client until it leaves or breaks the protocol; never raises for either."""
    conn = ServerConnection(_peer_name(stream))
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_write, conn, stream, nursery.cancel_scope)
            await _read(conn, stream, router, max_frame_bytes)
            nursery.cancel_scope.cancel()
    finally:
        conn.close()
        await trio.aclose_forcefully(stream)


async def _read(
    conn: ServerConnection,
    stream: trio.abc.ReceiveStream,
    router: RequestRouter,
    max_frame_bytes: int,
) -> None:
    decoder = FrameDecoder(max_frame_bytes)
    while True:
        try:
            data = await stream.receive_some(_RECEIVE_BYTES)
        except _STREAM_ERRORS:
            return
        if not data:
            return
        decoder.feed(data)
        try:
            while (frame := decoder.next_frame()) is not None:
                await router.dispatch(conn, frame)
                await conn.wait_for_room()
        except WireError as exc:
            logger.warning("closing the connection from %s: %s", conn.peer, exc)
            return


async def _write(
    conn: ServerConnection, stream: trio.abc.SendStream, scope: trio.CancelScope
) -> None:
    with contextlib.suppress(*_STREAM_ERRORS):
        await conn.write_loop(stream)
    scope.cancel()  # a dead writer ends the reader too
