"""One accepted connection: frames in, responses out in request order.

A Kafka client matches responses to requests first in, first out, so a
connection answers in request order even when a later request (ApiVersions)
is answered before an earlier one (a parked Fetch). Each decoded request gets
a ``ResponseSlot``; whoever answers it (the listener for local requests, the
task that owns the Raft core for the rest) calls ``complete``, which encodes
the response and releases every finished slot at the head of the queue to
the writer task. A slot is also the opaque ``handle`` the Raft core echoes.

Reading stops while too many requests are unanswered (backpressure); a
frame that is oversized or does not decode closes the connection, with a
log line, and nothing else.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from collections.abc import Callable
from typing import Any, Final

import trio

from quorum.node.gather_send import send_buffers, write_now
from quorum.wire.file_region import Part
from quorum.wire.protocol import RequestHeader, ResponseHeader, encode_response_parts

__all__ = ["MAX_UNANSWERED", "ResponseSlot", "ServerConnection"]

logger = logging.getLogger(__name__)

# requests read but not yet answered, per connection, before reading pauses
MAX_UNANSWERED: Final = 4096
_WRITE_COALESCE_BYTES: Final = 1 << 20


class ResponseSlot:
    """The place of one request in its connection's response order (hashable by identity)."""

    __slots__ = ("api_key", "connection", "correlation_id", "frame", "version")

    def __init__(self, connection: ServerConnection, header: RequestHeader) -> None:
        self.connection = connection
        self.api_key = header.api_key
        self.version = header.api_version
        self.correlation_id = header.correlation_id
        # the encoded response, as buffers to send in order (``encode_response_parts``)
        self.frame: list[Part] | None = None

    def complete(self, message: Any) -> None:
        self.connection.complete(self, message)

    def __repr__(self) -> str:
        return f"<slot {self.connection.peer} #{self.correlation_id} api {self.api_key}>"


class ServerConnection:
    def __init__(self, peer: str) -> None:
        self.peer = peer
        self.closed = False
        self._slots: deque[ResponseSlot] = deque()
        self._out_send, self._out_receive = trio.open_memory_channel[list[Part]](math.inf)
        self._room = trio.Event()
        self._on_close: list[Callable[[], None]] = []
        # requests still unanswered when the connection closed (for the close callbacks)
        self.unanswered_at_close = 0
        # the socket while the writer task serves it (-1: none, or not a socket), whether
        # the writer is sending, and the frames it has not taken yet: a response released
        # while the writer is idle is written at once by the task that answered (no task
        # switch on the way to the client; what the socket does not take goes to the writer)
        self._fd = -1
        self._writing = False
        self._queued = 0

    @property
    def unanswered(self) -> int:
        return len(self._slots)

    def new_slot(self, header: RequestHeader) -> ResponseSlot:
        slot = ResponseSlot(self, header)
        self._slots.append(slot)
        return slot

    def complete(self, slot: ResponseSlot, message: Any) -> None:
        """Answer ``slot``; the frame goes out once every earlier slot is answered."""
        if self.closed or slot.frame is not None:
            return  # the client left, or a duplicate answer (never sent twice)
        slot.frame = encode_response_parts(
            ResponseHeader(slot.correlation_id), slot.api_key, slot.version, message
        )
        slots = self._slots
        released: list[Part] = []
        while slots and slots[0].frame is not None:
            frame = slots.popleft().frame
            assert frame is not None
            released += frame
        if released:
            self._release(released)
        if len(slots) < MAX_UNANSWERED:
            self._room.set()

    def _release(self, buffers: list[Part]) -> None:
        if self._fd >= 0 and not self._writing and not self._queued:
            buffers = write_now(self._fd, buffers)
            if not buffers:
                return
        self._queued += 1
        self._out_send.send_nowait(buffers)

    async def wait_for_room(self) -> None:
        while len(self._slots) >= MAX_UNANSWERED and not self.closed:
            self._room = trio.Event()
            await self._room.wait()

    def on_close(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (no waiting in it) once, when the connection closes."""
        if self.closed:
            callback()
        else:
            self._on_close.append(callback)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.unanswered_at_close = len(self._slots)
            self._slots.clear()
            self._out_send.close()
            self._room.set()
            callbacks, self._on_close = self._on_close, []
            for callback in callbacks:
                callback()

    async def write_loop(self, stream: trio.abc.SendStream) -> None:
        """Send released frames, several per write when they are waiting together."""
        if isinstance(stream, trio.SocketStream):
            self._fd = stream.socket.fileno()
        try:
            async for frame in self._out_receive:
                self._queued -= 1
                self._writing = True
                buffers = list(frame)
                size = sum(map(len, frame))
                while size < _WRITE_COALESCE_BYTES:
                    try:
                        more = self._out_receive.receive_nowait()
                    except (trio.WouldBlock, trio.EndOfChannel):
                        break
                    self._queued -= 1
                    buffers += more
                    size += sum(map(len, more))
                await send_buffers(stream, buffers)
                self._writing = False
        finally:
            self._fd = -1
