"""Send a list of buffers on a stream without joining them first.

A response leaves ``quorum.wire.protocol.encode_response_parts`` as a list of
buffers: a Fetch response's records are a ``FileRegion`` of a segment file (or,
from a log in memory, the very buffer they were read into). On a socket the
buffers go out by scatter-gather (``sendmsg``) and the file regions by
``sendfile``, so the only copy is the kernel's; any other stream (tests' memory
streams) gets them joined. Every file region handed over is closed once sent or
once the send failed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Final

import trio

from quorum.wire.file_region import FileRegion, Part, joined

__all__ = ["send_buffers", "write_now"]

# Linux's IOV_MAX: sendmsg refuses more buffers than this in one call
_IOV_MAX: Final = 1024


def write_now(fd: int, buffers: Sequence[Part]) -> list[Part]:
    """Write what the socket ``fd`` takes at once (it is non-blocking); the rest, unsent.

    Only buffers: a ``FileRegion`` is left for ``send_buffers`` (nothing is written then).
    An error writes nothing more and leaves the buffers to the writer task, whose send
    fails the same way and closes the connection."""
    views: list[memoryview] = []
    for buffer in buffers:
        if isinstance(buffer, FileRegion):
            return list(buffers)
        if len(buffer):
            views.append(memoryview(buffer).cast("B"))
    try:
        sent = os.writev(fd, views[:_IOV_MAX])
    except OSError:
        return list(views)
    return list(views[_skip_sent(views, 0, sent):])


def _skip_sent(views: list[memoryview], first: int, sent: int) -> int:
    """The index of the first view not sent whole once ``sent`` more bytes went out from
    ``views[first]`` on; a view sent in part is cut to its unsent rest."""
    while sent and first < len(views):
        size = len(views[first])
        if sent < size:
            views[first] = views[first][sent:]
            break
        sent -= size
        first += 1
    return first


async def send_buffers(stream: trio.abc.SendStream, buffers: Sequence[Part]) -> None:
    """Send ``buffers`` in order, all of them, like ``send_all`` of their join."""
    try:
        if isinstance(stream, trio.SocketStream):
            await _send_on_socket(stream.socket, buffers)
        else:
            await stream.send_all(joined(buffers))
    finally:
        for buffer in buffers:
            if isinstance(buffer, FileRegion):
                buffer.close()


async def _send_on_socket(sock: trio.socket.SocketType, buffers: Sequence[Part]) -> None:
    run: list[memoryview] = []
    for buffer in buffers:
        if isinstance(buffer, FileRegion):
            if run:
                await _send_views(sock, run)
                run = []
            await _send_file(sock, buffer)
        elif len(buffer):
            run.append(memoryview(buffer).cast("B"))
    if run:
        await _send_views(sock, run)


async def _send_views(sock: trio.socket.SocketType, views: list[memoryview]) -> None:
    first = 0
    while first < len(views):
        try:
            sent = await sock.sendmsg(views[first:first + _IOV_MAX])
        except OSError as exc:
            # what SocketStream.send_all raises for a peer that went away
            raise trio.BrokenResourceError(exc) from exc
        first = _skip_sent(views, first, sent)


async def _send_file(sock: trio.socket.SocketType, region: FileRegion) -> None:
    offset, left = region.position, region.length
    await trio.lowlevel.checkpoint_if_cancelled()
    while left:
        try:
            sent = os.sendfile(sock.fileno(), region.fileno(), offset, left)
        except BlockingIOError:
            await trio.lowlevel.wait_writable(sock)
            continue
        except OSError as exc:
            raise trio.BrokenResourceError(exc) from exc
        if sent == 0:
            # the file was cut under the region: the frame's size is out already, so the
            # connection cannot carry on (the client reconnects and fetches again)
            raise trio.BrokenResourceError(
                f"the log file ends before the {region} being sent")
        offset += sent
        left -= sent
    await trio.lowlevel.cancel_shielded_checkpoint()
