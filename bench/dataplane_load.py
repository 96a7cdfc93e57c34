"""One load process of the data-plane bench: ``python -m bench.dataplane_load KIND ...``.

KIND is ``produce`` (1 KB records as fast as librdkafka takes them, at
``--acks``, with the batching a throughput user sets: ``--linger-ms``,
``--batch-bytes``; idempotent with ``--idempotence``), ``latency`` (one record
at a time with linger.ms=0 to ``--partition``: the time to its delivery report
and to its arrival at a consumer polling in this process, Kafka's end-to-end
latency) or ``consume`` (``--partitions`` read from offset 0 up to the end
offsets given, by one consumer with large fetches and batch ``consume()`` calls).

The same protocol as the NATS peer's load processes (``bench.nats_load``),
so that ``bench.nats_phases.run_phase`` lines both up: connect and warm up,
print ``READY``, wait for ``GO`` on stdin, run within ``--messages`` and
``--seconds``, print ``RESULT {json}`` (a ``bench.nats_lineup.LoadReport``).
confluent-kafka (librdkafka) is the client: a C client, so that the load side
is not the bottleneck a Python client would be; this process runs nothing of
pykraft's.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Final

from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition

from bench.dataplane_lineup import CONSUMER_QUEUE_BACKOFF_MS
from bench.nats_lineup import LoadReport

__all__ = ["main"]

# time allowed for the delivery reports of what was produced before the deadline
_DRAIN_S: Final = 60.0
_ARRIVAL_TIMEOUT_S: Final = 10.0
_CLOCK_EVERY: Final = 256
_CONSUME_BATCH: Final = 10_000


def _cpu_s() -> float:
    times = os.times()
    return times.user + times.system


def _ready_then_go() -> None:
    print("READY", flush=True)
    if sys.stdin.readline().strip() != "GO":
        raise SystemExit("expected GO on stdin")


class _Tally:
    """Delivery reports counted as they come; the first error kept."""

    def __init__(self) -> None:
        self.delivered = 0
        self.errors = 0
        self.first_error = ""
        self.last_at = 0.0

    def report(self, error: KafkaError | None, _message: Message) -> None:
        if error is not None:
            self.errors += 1
            self.first_error = self.first_error or str(error)
        else:
            self.delivered += 1
        self.last_at = time.monotonic()


def _producer(args: argparse.Namespace, **extra: object) -> Producer:
    if args.max_in_flight is not None:
        extra = {"max.in.flight.requests.per.connection": args.max_in_flight, **extra}
    return Producer({
        "bootstrap.servers": args.bootstrap, "acks": args.acks,
        "enable.idempotence": args.idempotence, "compression.type": "none",
        "linger.ms": args.linger_ms, "batch.size": args.batch_bytes,
        "batch.num.messages": 1_000_000, "queue.buffering.max.kbytes": 1_048_576,
        "queue.buffering.max.messages": 1_000_000, "message.timeout.ms": 120_000,
        **extra,
    })


def _warm_up(producer: Producer, topic: str, value: bytes, count: int) -> None:
    """Metadata fetched, connections to every leader open, before GO."""
    for i in range(count):
        producer.produce(topic, value, partition=i % _partition_count(producer, topic))
    if producer.flush(_DRAIN_S) != 0:
        raise SystemExit("the warm-up records were not delivered in time")


def _partition_count(producer: Producer, topic: str) -> int:
    return len(producer.list_topics(topic, timeout=10).topics[topic].partitions)


def run_produce(args: argparse.Namespace) -> LoadReport:
    producer = _producer(args)
    value = os.urandom(args.size)
    _warm_up(producer, args.topic, value, args.warmup)
    tally = _Tally()
    _ready_then_go()
    cpu0, start = _cpu_s(), time.monotonic()
    deadline = start + args.seconds
    produce: Callable[..., None] = producer.produce
    sent = 0
    while sent < args.messages:
        try:
            produce(args.topic, value, on_delivery=tally.report)
        except BufferError:  # the local queue is full: serve delivery reports
            producer.poll(0.005)
            continue
        sent += 1
        if sent % _CLOCK_EVERY == 0:
            producer.poll(0)
            if time.monotonic() >= deadline:
                break
    left = producer.flush(_DRAIN_S)
    end = tally.last_at or time.monotonic()
    return LoadReport(messages=tally.delivered, bytes=tally.delivered * args.size, start=start,
                      end=end, cpu_s=_cpu_s() - cpu0, errors=tally.errors + left,
                      first_error=tally.first_error or (f"{left} undelivered" if left else ""))


class _Acks:
    """Delivery reports of the latency phase, served by a thread of their own, so that
    neither the producer's nor the consumer's wait is a busy poll."""

    def __init__(self, producer: Producer) -> None:
        self.producer = producer
        self.acked = threading.Event()
        self.at = 0.0
        self.error = ""
        self.stopping = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def report(self, error: KafkaError | None, _message: Message) -> None:
        self.at = time.monotonic()
        self.error = str(error) if error is not None else ""
        self.acked.set()

    def _serve(self) -> None:
        while not self.stopping:
            self.producer.poll(0.05)

    def stop(self) -> None:
        self.stopping = True
        self.thread.join()


def _arrive(consumer: Consumer, value: bytes, deadline: float) -> float | None:
    """When ``value`` reached the consumer, or None after ``deadline``."""
    while time.monotonic() < deadline:
        message = consumer.poll(max(0.0, deadline - time.monotonic()))
        if message is None:
            continue
        now = time.monotonic()
        if message.error() is None and message.value() == value:
            return now
    return None


def run_latency(args: argparse.Namespace) -> LoadReport:
    producer = _producer(args, **{"linger.ms": 0})
    consumer = Consumer({
        "bootstrap.servers": args.bootstrap, "group.id": f"bench-latency-{os.getpid()}",
        "enable.auto.commit": False, "fetch.wait.max.ms": 500, "fetch.min.bytes": 1,
        "enable.partition.eof": False,
    })
    acks = _Acks(producer)
    tp = TopicPartition(args.topic, args.partition)
    _, high = consumer.get_watermark_offsets(tp, timeout=10)
    consumer.assign([TopicPartition(args.topic, args.partition, high)])
    ack_s: list[float] = []
    arrival_s: list[float] = []
    errors, first_error = 0, ""
    started = False
    cpu0 = start = 0.0
    deadline = float("inf")
    total = args.warmup + args.messages
    for i in range(total):
        if i == args.warmup:
            _ready_then_go()
            started = True
            cpu0, start = _cpu_s(), time.monotonic()
            deadline = start + args.seconds
        elif started and time.monotonic() >= deadline:
            break
        value = i.to_bytes(8, "big") + os.urandom(args.size - 8)
        acks.acked.clear()
        sent = time.monotonic()
        producer.produce(args.topic, value, partition=args.partition, on_delivery=acks.report)
        arrived = _arrive(consumer, value, sent + _ARRIVAL_TIMEOUT_S)
        acks.acked.wait(_ARRIVAL_TIMEOUT_S)
        if arrived is None or not acks.acked.is_set() or acks.error:
            if not started:
                continue  # a warm-up record: start-up (metadata, connections) is not measured
            errors += 1
            first_error = first_error or acks.error or f"record {i} did not arrive in time"
            continue
        if started:
            ack_s.append(acks.at - sent)
            arrival_s.append(arrived - sent)
    end = time.monotonic()
    acks.stop()
    consumer.close()
    return LoadReport(messages=len(ack_s), bytes=len(ack_s) * args.size, start=start, end=end,
                      cpu_s=_cpu_s() - cpu0, errors=errors, first_error=first_error,
                      ack_s=tuple(ack_s), delivery_s=tuple(arrival_s))


def _consumer(args: argparse.Namespace) -> Consumer:
    # a throughput user's fetch sizes: large per-partition and per-request limits, a
    # minimum that lets the broker fill a response, a deep local queue
    return Consumer({
        "bootstrap.servers": args.bootstrap, "group.id": f"bench-consume-{os.getpid()}",
        "enable.auto.commit": False, "enable.partition.eof": False,
        "fetch.max.bytes": args.fetch_max_bytes,
        "max.partition.fetch.bytes": args.partition_fetch_bytes,
        "fetch.min.bytes": args.fetch_min_bytes, "fetch.wait.max.ms": 100,
        "queued.max.messages.kbytes": 262_144, "queued.min.messages": 200_000,
        "fetch.queue.backoff.ms": CONSUMER_QUEUE_BACKOFF_MS,
        "check.crcs": False,
    })


def run_consume(args: argparse.Namespace) -> LoadReport:
    consumer = _consumer(args)
    ends = [int(e) for e in args.end_offsets.split(",")]
    partitions = [int(p) for p in args.partitions.split(",")]
    expected = sum(ends)
    consumer.list_topics(args.topic, timeout=10)
    _ready_then_go()
    cpu0, start = _cpu_s(), time.monotonic()
    deadline = start + args.seconds
    consumer.assign([TopicPartition(args.topic, p, 0) for p in partitions])
    count = size = errors = 0
    first_error = ""
    consume: Callable[..., list[Any]] = consumer.consume
    while count < expected and time.monotonic() < deadline:
        for message in consume(_CONSUME_BATCH, 0.5):
            if message.error() is not None:
                errors += 1
                first_error = first_error or str(message.error())
                continue
            count += 1
            size += len(message)
    end = time.monotonic()
    consumer.close()
    if count < expected:
        errors += 1
        first_error = first_error or f"read {count} of {expected} records in time"
    return LoadReport(messages=count, bytes=size, start=start, end=end, cpu_s=_cpu_s() - cpu0,
                      errors=errors, first_error=first_error)


_KINDS: Final = {"produce": run_produce, "latency": run_latency, "consume": run_consume}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=sorted(_KINDS))
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--acks", default="all")
    parser.add_argument("--linger-ms", type=int, default=10)
    parser.add_argument("--batch-bytes", type=int, default=1_000_000)
    parser.add_argument("--idempotence", action="store_true",
                        help="enable.idempotence=true (librdkafka caps max.in.flight at 5)")
    parser.add_argument("--max-in-flight", type=int, default=None,
                        help="max.in.flight.requests.per.connection (librdkafka's default: unset)")
    parser.add_argument("--messages", type=int, default=10_000_000)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--warmup", type=int, default=1_000)
    parser.add_argument("--partition", type=int, default=0)
    parser.add_argument("--partitions", default="")
    parser.add_argument("--end-offsets", default="")
    parser.add_argument("--fetch-max-bytes", type=int, default=52_428_800)
    parser.add_argument("--partition-fetch-bytes", type=int, default=8_388_608)
    parser.add_argument("--fetch-min-bytes", type=int, default=1_048_576)
    args = parser.parse_args(argv)
    print("RESULT " + _KINDS[args.kind](args).to_json(), flush=True)


if __name__ == "__main__":
    main()
