"""A response's frame as buffers: encoded without joining, sent by scatter-gather."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import cast

import pytest
import trio
import trio.testing

from quorum.node.connection import ServerConnection
from quorum.node.gather_send import send_buffers
from quorum.wire.api_keys import ApiKey
from quorum.wire.file_region import FileRegion, Part
from quorum.wire.messages.fetch import FetchResponse, FetchResponsePartition, FetchResponseTopic
from quorum.wire.protocol import (
    RequestHeader,
    ResponseHeader,
    decode_response,
    encode_response,
    encode_response_parts,
)


def _region(path: Path, position: int, length: int) -> FileRegion:
    with open(path, "rb") as file:
        return FileRegion(file.fileno(), position, length)  # its own descriptor


def _fetch_response(records: list[bytes]) -> FetchResponse:
    partitions = tuple(
        FetchResponsePartition(partition_index=i, high_watermark=10, records=cast(bytes, memoryview(r)))
        for i, r in enumerate(records)
    )
    return FetchResponse(responses=(FetchResponseTopic(topic="t", partitions=partitions),))


def test_the_parts_join_into_the_frame_and_keep_large_record_slices_unjoined() -> None:
    big = [bytes([i]) * 100_000 for i in range(3)]
    message = _fetch_response([*big, b"x" * 10])
    for version in (4, 12, 16):
        parts = encode_response_parts(ResponseHeader(7), ApiKey.FETCH, version, message)
        joined = b"".join(cast(list[bytes], parts))
        assert joined == encode_response(ResponseHeader(7), ApiKey.FETCH, version, message)
        assert int.from_bytes(joined[:4], "big") == len(joined) - 4
        header, decoded = decode_response(joined[4:], ApiKey.FETCH, version)
        assert header.correlation_id == 7
        assert [bytes(p.records) for p in decoded.responses[0].partitions] == [*big, b"x" * 10]
        # each large slice is one of the parts as it was read, not a copy inside a join
        large = [part for part in parts if len(part) >= 100_000]
        assert [bytes(cast(bytes, part)) for part in large] == big
        # the short fields between them are joined: one buffer between two slices
        assert len(parts) <= 2 * len(big) + 1
        assert all(len(part) for part in parts)


async def _send_and_read(buffers: list[Part]) -> bytes:
    left, right = socket.socketpair()
    # a small send buffer forces sendmsg to write part of a buffer at a time
    left.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    sender = trio.SocketStream(trio.socket.from_stdlib_socket(left))
    receiver = trio.SocketStream(trio.socket.from_stdlib_socket(right))
    expected = sum(len(b) for b in buffers)
    received = bytearray()

    async def read() -> None:
        while len(received) < expected:
            chunk = await receiver.receive_some(65_536)
            assert chunk, "the sender closed early"
            received.extend(chunk)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(read)
        await send_buffers(sender, buffers)
    await sender.aclose()
    await receiver.aclose()
    return bytes(received)


async def test_scatter_gather_sends_every_byte_in_order_across_partial_writes() -> None:
    buffers: list[Part] = [
        bytes([i % 251]) * (i * 37 % 5000) for i in range(1500)  # more than IOV_MAX, empty ones
    ]
    buffers.append(memoryview(b"tail" * 300_000)[5:])
    received = await _send_and_read(buffers)
    assert received == b"".join(cast(list[bytes], buffers))


async def test_a_stream_that_is_not_a_socket_gets_the_join() -> None:
    send, receive = trio.testing.memory_stream_pair()
    await send_buffers(send, [b"ab", memoryview(b"cde"), b""])
    assert await receive.receive_some(100) == b"abcde"


async def test_a_closed_peer_raises_broken_resource_like_send_all() -> None:
    left, right = socket.socketpair()
    right.close()
    sender = trio.SocketStream(trio.socket.from_stdlib_socket(left))
    with pytest.raises(trio.BrokenResourceError):
        await send_buffers(sender, [b"x" * 1000])
    await sender.aclose()


async def test_file_regions_go_out_between_the_buffers_and_are_closed_once_sent(
    tmp_path: Path,
) -> None:
    path = tmp_path / "segment"
    content = bytes(range(256)) * 8_000  # 2 MB: many partial sendfile calls on a 4 KiB buffer
    path.write_bytes(content)
    regions = [_region(path, 1_000, 1_500_000), _region(path, 7, 9)]
    buffers: list[Part] = [b"head", regions[0], b"middle" * 10, regions[1], memoryview(b"end")]
    received = await _send_and_read(buffers)
    assert received == b"head" + content[1_000:1_501_000] + b"middle" * 10 + content[7:16] + b"end"
    for region in regions:
        with pytest.raises(ValueError, match="closed"):
            region.fileno()


async def test_a_file_cut_under_its_region_breaks_the_connection_instead_of_a_short_frame(
    tmp_path: Path,
) -> None:
    path = tmp_path / "segment"
    path.write_bytes(b"r" * 10_000)
    region = _region(path, 0, 10_000)
    os.truncate(path, 4_000)
    left, right = socket.socketpair()
    sender = trio.SocketStream(trio.socket.from_stdlib_socket(left))
    with pytest.raises(trio.BrokenResourceError, match="ends before"):
        await send_buffers(sender, [b"size", region])
    with pytest.raises(ValueError, match="closed"):
        region.fileno()
    await sender.aclose()
    right.close()


async def test_a_stream_that_is_not_a_socket_reads_the_regions_into_the_join(
    tmp_path: Path,
) -> None:
    path = tmp_path / "segment"
    path.write_bytes(b"0123456789")
    region = _region(path, 2, 5)
    send, receive = trio.testing.memory_stream_pair()
    await send_buffers(send, [b"<", region, b">"])
    assert await receive.receive_some(100) == b"<23456>"
    with pytest.raises(ValueError, match="closed"):
        region.fileno()


def _slot_header(correlation_id: int) -> RequestHeader:
    return RequestHeader(api_key=ApiKey.FETCH, api_version=12, correlation_id=correlation_id)


async def test_an_idle_writer_lets_the_answering_task_write_the_response_itself() -> None:
    left, right = socket.socketpair()
    right.setblocking(False)
    conn = ServerConnection("client")
    sender = trio.SocketStream(trio.socket.from_stdlib_socket(left))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(conn.write_loop, sender)
        with trio.fail_after(5):
            while conn._fd < 0:  # the writer task has started on the socket
                await trio.lowlevel.checkpoint()
        conn.new_slot(_slot_header(41)).complete(_fetch_response([b"r" * 100]))
        # written by complete() itself: readable before any other task ran
        frame = right.recv(1 << 16)
        assert int.from_bytes(frame[:4], "big") == len(frame) - 4
        assert int.from_bytes(frame[4:8], "big") == 41
        assert conn._queued == 0
        conn.close()
    await sender.aclose()
    right.close()


async def test_what_the_socket_does_not_take_at_once_follows_in_order_through_the_writer() -> None:
    left, right = socket.socketpair()
    left.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    conn = ServerConnection("client")
    receiver = trio.SocketStream(trio.socket.from_stdlib_socket(right))
    records = [bytes([i]) * (30_000 + i * 7_000) for i in range(6)]
    expected = b"".join(
        encode_response(ResponseHeader(i), ApiKey.FETCH, 12, _fetch_response([r]))
        for i, r in enumerate(records))
    received = bytearray()
    sender = trio.SocketStream(trio.socket.from_stdlib_socket(left))

    async def read() -> None:
        while len(received) < len(expected):
            received.extend(await receiver.receive_some(65_536))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(conn.write_loop, sender)
        with trio.fail_after(5):
            while conn._fd < 0:
                await trio.lowlevel.checkpoint()
        slots = [conn.new_slot(_slot_header(i)) for i in range(len(records))]
        for slot, record in zip(slots, records, strict=True):
            slot.complete(_fetch_response([record]))  # the first fills the socket at once
        with trio.fail_after(10):
            await read()
        conn.close()
    assert bytes(received) == expected
    await sender.aclose()
    await receiver.aclose()
