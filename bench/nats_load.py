"""One load process of the NATS peer: ``python -m bench.nats_load KIND --server URL ...``.

KIND is ``publish`` (1 KB messages with ``--window`` JetStream publish acks
outstanding, ``js.publish_async``), ``latency`` (one publish at a time: the
time to its ack, and to its delivery to an ordered push consumer in this
process, i.e. Kafka's end-to-end latency) or ``consume`` (stream sequences
``--first-seq`` to ``--last-seq`` through a push consumer with flow control,
counted in a plain subscription's callback).

The bench (``bench.nats_phases``) starts several of these and lines them up:
each connects and warms up, prints ``READY``, waits for ``GO`` on stdin,
runs its phase within ``--messages`` and ``--seconds``, and prints
``RESULT {json}``: its counts, its start and end on the system-wide
monotonic clock (so that the bench can span all processes), and the CPU
seconds it used. asyncio, because nats-py is an asyncio client; this process
runs nothing of pykraft's.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Final

import nats
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, Header

from bench.nats_lineup import LoadReport
from bench.nats_stream import STREAM, SUBJECT

__all__ = ["LoadReport", "main"]

# time allowed for the acks of what was sent before a deadline, and for a delivery
_DRAIN_S: Final = 30.0
_DELIVERY_TIMEOUT_S: Final = 10.0
# how often the publish loop looks at the clock (every message would cost ~5% of it)
_CLOCK_EVERY: Final = 64
_CONNECT_TIMEOUT_S: Final = 10
# JetStream's control messages on a push consumer's subject: status 100, no payload
_STATUS: Final = Header.STATUS.value
_CONTROL: Final = "100"
_STALLED: Final = Header.CONSUMER_STALLED.value
_HEARTBEAT_S: Final = 5.0


class Tally:
    """Acks counted as their futures complete: no list of every future is kept."""

    def __init__(self) -> None:
        self.acked = 0
        self.errors = 0
        self.first_error = ""

    def done(self, future: asyncio.Future[Any]) -> None:
        if future.cancelled() or future.exception() is not None:
            self.errors += 1
            self.first_error = self.first_error or repr(future.exception())
        else:
            self.acked += 1


async def connect(url: str) -> Client:
    # one server, no reconnects: a server that goes away fails the run, not slows it;
    # the one subject is a constant, so the client need not check it on every publish
    return await nats.connect(servers=[url], allow_reconnect=False, dont_randomize=True,
                              connect_timeout=_CONNECT_TIMEOUT_S, name="pykraft-bench",
                              skip_subject_validation=True)


async def ready_then_go() -> None:
    print("READY", flush=True)
    line = await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    if line.strip() != "GO":
        raise SystemExit(f"expected GO from the bench, got {line!r}")


async def publish_window(js: JetStreamContext, payload: bytes, count: int, deadline: float,
                         tally: Tally) -> int:
    """Up to ``count`` publishes (fewer if ``deadline`` passes), the client's semaphore
    holding the window; returns once every ack is in."""
    sent = 0
    while sent < count and (sent % _CLOCK_EVERY or time.monotonic() < deadline):
        future = await js.publish_async(SUBJECT, payload)
        future.add_done_callback(tally.done)
        sent += 1
    async with asyncio.timeout(_DRAIN_S):
        await js.publish_async_completed()
    return sent


async def publish(args: argparse.Namespace) -> LoadReport:
    nc = await connect(args.server)
    js = nc.jetstream(publish_async_max_pending=args.window)
    payload = os.urandom(args.size)
    try:
        await publish_window(js, payload, args.warmup, time.monotonic() + args.seconds, Tally())
        await ready_then_go()
        tally = Tally()
        cpu, start = time.process_time(), time.monotonic()
        await publish_window(js, payload, args.messages, start + args.seconds, tally)
        return LoadReport(messages=tally.acked, bytes=tally.acked * args.size,
                          start=start, end=time.monotonic(), cpu_s=time.process_time() - cpu,
                          errors=tally.errors, first_error=tally.first_error)
    finally:
        await nc.close()


class Arrivals:
    """The push consumer's callback: when the latest message arrived, and its sequence."""

    def __init__(self) -> None:
        self.event = asyncio.Event()
        self.at = 0.0
        self.seq = 0

    async def on_message(self, msg: Msg) -> None:
        self.at = time.perf_counter()
        self.seq = msg.metadata.sequence.stream
        self.event.set()


async def one_round(js: JetStreamContext, arrivals: Arrivals, payload: bytes
                    ) -> tuple[float, float]:
    """Seconds from one publish to its ack, and to its delivery to the consumer."""
    arrivals.event.clear()
    start = time.perf_counter()
    ack = await js.publish(SUBJECT, payload, timeout=_DELIVERY_TIMEOUT_S)
    acked = time.perf_counter()
    async with asyncio.timeout(_DELIVERY_TIMEOUT_S):
        while arrivals.seq < ack.seq:  # delivery may come before or after the ack
            await arrivals.event.wait()
            arrivals.event.clear()
    if arrivals.seq != ack.seq:
        raise RuntimeError(f"delivered sequence {arrivals.seq}, published {ack.seq}")
    return acked - start, arrivals.at - start


async def latency(args: argparse.Namespace) -> LoadReport:
    nc = await connect(args.server)
    js = nc.jetstream()
    payload = os.urandom(args.size)
    arrivals = Arrivals()
    try:
        await js.subscribe(SUBJECT, stream=STREAM, cb=arrivals.on_message, ordered_consumer=True,
                           deliver_policy=DeliverPolicy.NEW)
        for _ in range(args.warmup):
            await one_round(js, arrivals, payload)
        await ready_then_go()
        cpu, start = time.process_time(), time.monotonic()
        acks: list[float] = []
        deliveries: list[float] = []
        while len(acks) < args.messages and time.monotonic() < start + args.seconds:
            ack_s, delivery_s = await one_round(js, arrivals, payload)
            acks.append(ack_s)
            deliveries.append(delivery_s)
        return LoadReport(messages=len(acks), bytes=len(acks) * args.size, start=start,
                          end=time.monotonic(), cpu_s=time.process_time() - cpu,
                          ack_s=tuple(acks), delivery_s=tuple(deliveries))
    finally:
        await nc.close()


class Reader:
    """Counts the data messages a push consumer delivers of ``first_seq..last_seq``, answers
    its flow control, and signals when the range is read.

    A plain subscription on the consumer's deliver subject rather than nats-py's ordered
    consumer: that one parses every message's reply subject to track sequences, which cost
    about a quarter of the consume rate in this one-core-per-process client. With no acks
    nothing is redelivered, and the stream has no gaps (nothing is deleted), so the count
    says when the range is read; a message the client dropped shows as a wrong sequence
    for the last one counted (only its reply subject is parsed) or as a time-out."""

    def __init__(self, nc: Client, first_seq: int, last_seq: int) -> None:
        self.nc = nc
        self.wanted = last_seq - first_seq + 1
        self.last_seq = last_seq
        self.messages = 0
        self.bytes = 0
        self.done = asyncio.Event()
        # set instead of raised: an exception in a callback would only reach nats-py's log
        self.error = ""

    async def on_message(self, msg: Msg) -> None:
        if not msg.data and msg.headers and msg.headers.get(_STATUS) == _CONTROL:
            await self.on_control(msg)
            return
        # the consumer runs on past last_seq until it is stopped: those are not counted
        if self.messages >= self.wanted:
            return
        self.messages += 1
        self.bytes += len(msg.data)
        if self.messages == self.wanted:
            seq = msg.metadata.sequence.stream
            if seq != self.last_seq:
                self.error = f"message {self.wanted} of the range is {seq}, not {self.last_seq}"
            self.done.set()

    async def on_control(self, msg: Msg) -> None:
        """A flow-control request is answered on its reply subject; a heartbeat that says
        the consumer stalled names the subject to answer instead. Without the answer the
        server stops delivering once its window is out."""
        assert msg.headers is not None
        reply = msg.reply or msg.headers.get(_STALLED, "")
        if reply:
            await self.nc.publish(reply, b"")


async def consume(args: argparse.Namespace) -> LoadReport:
    nc = await connect(args.server)
    js = nc.jetstream()
    reader = Reader(nc, args.first_seq, args.last_seq)
    try:
        await ready_then_go()
        cpu, start = time.process_time(), time.monotonic()
        # the consumer is created after GO: its creation is part of reading, as a Kafka
        # consumer's first fetch is; flow control bounds what the server sends ahead, so
        # nothing is dropped as a slow consumer's (0: no client-side limit)
        inbox = nc.new_inbox()
        sub = await nc.subscribe(inbox, cb=reader.on_message, pending_msgs_limit=0,
                                 pending_bytes_limit=0)
        await js.add_consumer(STREAM, ConsumerConfig(
            deliver_subject=inbox, ack_policy=AckPolicy.NONE, flow_control=True,
            idle_heartbeat=_HEARTBEAT_S, deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
            opt_start_seq=args.first_seq))
        async with asyncio.timeout(args.seconds):
            await reader.done.wait()
        end = time.monotonic()
        # an ephemeral consumer: the server removes it once nothing listens on its subject
        await sub.unsubscribe()
        return LoadReport(messages=reader.messages, bytes=reader.bytes, start=start, end=end,
                          cpu_s=time.process_time() - cpu, errors=int(bool(reader.error)),
                          first_error=reader.error)
    finally:
        await nc.close()


KINDS: Final[dict[str, Callable[[argparse.Namespace], Coroutine[Any, Any, LoadReport]]]] = {
    "publish": publish, "latency": latency, "consume": consume,
}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=sorted(KINDS))
    parser.add_argument("--server", required=True, help="nats://host:port")
    parser.add_argument("--size", type=int, default=1024, help="payload bytes")
    parser.add_argument("--messages", type=int, required=True, help="at most this many")
    parser.add_argument("--seconds", type=float, required=True, help="at most this long")
    parser.add_argument("--warmup", type=int, default=0)
    parser.add_argument("--window", type=int, default=64, help="publish acks outstanding")
    parser.add_argument("--first-seq", type=int, default=1)
    parser.add_argument("--last-seq", type=int, default=0)
    args = parser.parse_args(argv)
    result = asyncio.run(KINDS[args.kind](args))
    print("RESULT " + result.to_json(), flush=True)


if __name__ == "__main__":
    main()
