"""The benchmark's JetStream stream: created R3 on file storage, and what the bench asks of it.

One stream, ``BENCH`` on the one subject ``bench``: one Raft group with one
leader, the counterpart of one Kafka partition with RF 3. Retention limits
are nats-server's defaults (nothing is dropped during a run), and no
``Nats-Msg-Id`` is ever sent, so de-duplication costs nothing.

These calls run in the bench process, each in its own ``asyncio.run``: they
are a handful of requests between phases, not load.
"""

from __future__ import annotations

import asyncio
from typing import Final

import attrs
import nats
import nats.errors
import nats.js.errors
from nats.js.api import StorageType, StreamConfig

__all__ = ["STREAM", "SUBJECT", "StreamState", "create_stream", "stream_state"]

STREAM: Final = "BENCH"
SUBJECT: Final = "bench"
REPLICAS: Final = 3
_REQUEST_TIMEOUT_S: Final = 10.0
_LEADER_TIMEOUT_S: Final = 30.0
_POLL_S: Final = 0.05


@attrs.frozen(kw_only=True)
class StreamState:
    # server_name of the stream's Raft leader
    leader: str
    first_seq: int
    last_seq: int
    messages: int
    bytes: int


def create_stream(url: str) -> StreamState:
    return asyncio.run(_create_stream(url))


def stream_state(url: str) -> StreamState:
    return asyncio.run(_stream_state(url))


async def _create_stream(url: str) -> StreamState:
    nc = await nats.connect(servers=[url], allow_reconnect=False)
    try:
        js = nc.jetstream(timeout=_REQUEST_TIMEOUT_S)
        await js.add_stream(StreamConfig(name=STREAM, subjects=[SUBJECT],
                                         storage=StorageType.FILE, num_replicas=REPLICAS))
        # the stream answers publishes once its own Raft group has a leader; until then
        # stream info may report none, or time out, or answer 503 (no responders)
        async with asyncio.timeout(_LEADER_TIMEOUT_S):
            while True:
                try:
                    state = await _state(js)
                except (nats.errors.TimeoutError, nats.js.errors.ServiceUnavailableError,
                        nats.errors.NoRespondersError):
                    state = None
                if state is not None:
                    return state
                await asyncio.sleep(_POLL_S)
    finally:
        await nc.close()


async def _stream_state(url: str) -> StreamState:
    nc = await nats.connect(servers=[url], allow_reconnect=False)
    try:
        state = await _state(nc.jetstream(timeout=_REQUEST_TIMEOUT_S))
        if state is None:
            raise RuntimeError(f"stream {STREAM} has no leader")
        return state
    finally:
        await nc.close()


async def _state(js: nats.js.JetStreamContext) -> StreamState | None:
    info = await js.stream_info(STREAM)
    leader = info.cluster.leader if info.cluster is not None else None
    if leader is None:
        return None
    return StreamState(leader=leader, first_seq=info.state.first_seq,
                       last_seq=info.state.last_seq, messages=info.state.messages,
                       bytes=info.state.bytes)
