"""A node's listeners: one task pair (reader, writer) per accepted connection.

The reader splits the byte stream into frames (``socket.request.max.bytes``
bounds a frame) and hands each to the listener's ``Router`` (the controller's
or the broker's); the writer sends answers in request order
(``quorum.node.connection``). A frame that is oversized or does not decode,
or a request this listener does not serve, closes that connection with a log
line; the node keeps serving everyone else. ``bind_listener`` binds first
(a broker serves only once unfenced) and names the listener in its error;
``serve_listener`` starts accepting.
"""

from __future__ import annotations

import contextlib
import logging
from functools import partial
from typing import Final, Protocol

import attrs
import trio

from quorum.node.connection import ServerConnection
from quorum.node.errors import NodeStartupError
from quorum.wire.errors import WireError
from quorum.wire.framing import FrameDecoder

__all__ = [
    "NodeAddress",
    "Router",
    "bind_listener",
    "bound_port",
    "serve_connection",
    "serve_listener",
]

logger = logging.getLogger(__name__)

_RECEIVE_BYTES: Final = 256 * 1024
_STREAM_ERRORS: Final = (trio.BrokenResourceError, trio.ClosedResourceError, OSError)


@attrs.frozen
class NodeAddress:
    """Where a listener is reachable (the bound port if 0 was asked)."""

    listener_name: str
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.listener_name}://{self.host}:{self.port}"


class Router(Protocol):
    async def dispatch(self, conn: ServerConnection, frame: bytes | memoryview) -> None:
        """Answer or route one request frame; raises WireDecodeError to close the connection."""
        ...


async def bind_listener(
    listener_name: str, host: str | None, port: int
) -> list[trio.SocketListener]:
    """Bind (not serve yet); raises NodeStartupError naming the address and the listener."""
    try:
        return await trio.open_tcp_listeners(port, host=host)
    except OSError as exc:
        raise NodeStartupError(
            f"cannot listen on {host or '*'}:{port} ({listener_name}): {exc}"
        ) from exc


def bound_port(listeners: list[trio.SocketListener]) -> int:
    """The port the listeners were bound to (the one the OS picked if 0 was asked)."""
    return int(listeners[0].socket.getsockname()[1])


async def serve_listener(
    nursery: trio.Nursery,
    listeners: list[trio.SocketListener],
    router: Router,
    *,
    max_frame_bytes: int,
) -> None:
    """Accept connections on ``listeners`` in ``nursery`` until it is cancelled."""
    handler = partial(serve_connection, router=router, max_frame_bytes=max_frame_bytes)
    await nursery.start(trio.serve_listeners, handler, listeners)


def _peer_name(stream: trio.abc.Stream) -> str:
    if isinstance(stream, trio.SocketStream):
        try:
            host, port = stream.socket.getpeername()[:2]
        except OSError:
            return "unknown peer"
        return f"{host}:{port}"
    return repr(stream)


async def serve_connection(
    stream: trio.abc.Stream, router: Router, *, max_frame_bytes: int
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
    router: Router,
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
