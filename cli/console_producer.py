"""``kraft console-producer``: Kafka's ``kafka-console-producer.sh`` on the pykraft client.

Reads lines from stdin (``< FILE`` for a file: Kafka's tool has no file
option) and sends each as a record to ``--topic``; ``--property`` sets how a
line splits into headers, key and value (``cli.line_reader``). Producer
settings come, lowest first, from ``--producer.config FILE``,
``--producer-property k=v`` and the tool's own options
(``--request-required-acks``, ``--timeout`` for ``linger.ms``...), with
Kafka's console defaults where nothing says otherwise (acks -1, linger 1000
ms, request timeout 1500 ms, 3 retries).

Records are sent as they are read and all delivered (flushed) at end of
input; with ``--sync`` each waits for its answer before the next line. A
record that fails prints Kafka's "Error when sending message" line; the
command then exits with status 1 naming the Kafka error. A line that does
not parse, or a send refused before it is queued (metadata not found within
``max.block.ms``, a record too large) stops the command at once. Ctrl-C
stops reading, delivers what was read, and exits with status 130.
"""

from __future__ import annotations

import functools
import io
import os
import sys
from collections.abc import Callable
from typing import Any, Final, TextIO, cast

import attrs
import click
import trio

from broker.client import KafkaError, Producer, RecordFuture, producer_settings
from cli.console import fail, interrupt_on_sigint
from cli.console_properties import (
    ConsoleOptionError,
    load_properties,
    merge_option,
    parse_key_value_args,
)
from cli.line_reader import LineFormatError, LineReaderConfig, LineSplitter, parse_line
from cli.refused_options import refused_option
from quorum.config import ConfigError

__all__ = ["ProducerOptions", "ProducerPlan", "console_producer", "producer_plan"]

_READ_BYTES: Final = 64 * 1024
_INTERRUPTED: Final = 130
# the console producer's own defaults (ConsoleProducerOptions), where they differ from
# or repeat the producer's: (option field, producer setting, default)
_MERGED: Final = (
    ("timeout", "linger.ms", 1000),
    ("request_required_acks", "acks", "-1"),
    ("request_timeout_ms", "request.timeout.ms", 1500),
    ("message_send_max_retries", "retries", 3),
    ("retry_backoff_ms", "retry.backoff.ms", 100),
    ("max_memory_bytes", "buffer.memory", 32 * 1024 * 1024),
    ("batch_size", "batch.size", 16 * 1024),
    ("max_partition_memory_bytes", "batch.size", None),
    ("metadata_expiry_ms", "metadata.max.age.ms", 5 * 60 * 1000),
    ("max_block_ms", "max.block.ms", 60 * 1000),
    ("compression_codec", "compression.type", None),
)


@attrs.frozen(kw_only=True)
class ProducerOptions:
    """The command line as given (None: the option was left out)."""

    bootstrap_server: str | None
    topic: str | None
    sync: bool = False
    compression_codec: str | None = None
    batch_size: int | None = None
    message_send_max_retries: int | None = None
    retry_backoff_ms: int | None = None
    timeout: int | None = None
    request_required_acks: str | None = None
    request_timeout_ms: int | None = None
    metadata_expiry_ms: int | None = None
    max_block_ms: int | None = None
    max_memory_bytes: int | None = None
    max_partition_memory_bytes: int | None = None
    properties: tuple[str, ...] = ()
    reader_config: str | None = None
    producer_properties: tuple[str, ...] = ()
    producer_config: str | None = None


@attrs.frozen(kw_only=True)
class ProducerPlan:
    topic: str
    # Kafka-style producer properties, for producer_settings
    properties: dict[str, str]
    reader: LineReaderConfig
    sync: bool


def producer_plan(options: ProducerOptions) -> ProducerPlan:
    """What to run, or a ConsoleOptionError that says what is wrong with the options."""
    if not options.topic:
        raise ConsoleOptionError('Missing required argument "[topic]"')
    if not options.bootstrap_server or not options.bootstrap_server.strip():
        raise ConsoleOptionError(
            "Missing required argument \"[bootstrap-server]\": the broker list HOST1:PORT1,HOST2:PORT2"
        )
    properties = load_properties(options.producer_config)
    properties.update(parse_key_value_args(options.producer_properties))
    properties["bootstrap.servers"] = options.bootstrap_server
    properties.setdefault("client.id", "console-producer")
    for field, key, default in _MERGED:
        merge_option(properties, key, getattr(options, field), default)
    reader_properties = load_properties(options.reader_config)
    reader_properties.update(parse_key_value_args(options.properties))
    return ProducerPlan(
        topic=options.topic,
        properties=properties,
        reader=LineReaderConfig.from_properties(reader_properties),
        sync=options.sync,
    )


def _size(data: bytes | None) -> str:
    return "null" if data is None else f"{len(data)} bytes"


@attrs.define
class _Deliveries:
    """What came back: failures are printed as they arrive (Kafka's ErrorLoggingCallback)."""

    topic: str
    sent: int = 0
    failed: int = 0
    last_error: KafkaError | None = None

    def watch(self, future: RecordFuture, key: bytes | None, value: bytes | None) -> None:
        self.sent += 1

        def done(outcome: RecordFuture) -> None:
            error = outcome.exception()
            if error is not None:
                self.report(error, key, value)

        future.add_done_callback(done)

    def report(self, error: KafkaError, key: bytes | None, value: bytes | None) -> None:
        self.failed += 1
        self.last_error = error
        click.echo(
            f"Error when sending message to topic {self.topic} with key: {_size(key)}, "
            f"value: {_size(value)} with error: {error}",
            err=True,
        )


class _Stop(Exception):
    """Ends the run early with a message (a bad line, a send refused, a --sync failure)."""


async def _send_lines(
    producer: Producer, plan: ProducerPlan, lines: list[str], first_number: int,
    deliveries: _Deliveries,
) -> None:
    for number, line in enumerate(lines, start=first_number):
        try:
            record = parse_line(plan.reader, line, number)
        except LineFormatError as exc:
            raise _Stop(str(exc)) from None
        try:
            future = await producer.send(plan.topic, record.value, record.key, record.headers)
        except KafkaError as exc:
            deliveries.report(exc, record.key, record.value)
            raise _Stop(f"Stopped at line {number}: {exc.name}") from None
        deliveries.watch(future, record.key, record.value)
        if plan.sync:
            try:
                await future
            except KafkaError as exc:
                raise _Stop(f"Stopped at line {number}: {exc.name}") from None


@attrs.define
class _Outcome:
    interrupted: bool = False
    stopped: str | None = None


def _chunk_reader(stdin: TextIO) -> Callable[[], bytes]:
    """Reads what stdin has (up to a limit), blocking until it has something.

    From the file descriptor where there is one: Ctrl-C leaves this read
    behind in its thread, and a read of the buffered stream would hold the
    stream's lock into interpreter shutdown, which then aborts."""
    try:
        fd = stdin.fileno()
    except (OSError, ValueError, io.UnsupportedOperation):
        buffered = cast(io.BufferedIOBase, stdin.buffer)
        return functools.partial(buffered.read1, _READ_BYTES)
    return functools.partial(os.read, fd, _READ_BYTES)


async def _produce(plan: ProducerPlan, read: Callable[[], bytes], deliveries: _Deliveries
                   ) -> _Outcome:
    """Send every line of stdin, then deliver them all (also after a stop or Ctrl-C)."""
    prompt = sys.stdin.isatty() and sys.stdout.isatty()
    splitter, line_number, outcome = LineSplitter(), 1, _Outcome()
    # nothing raised crosses the producer's `async with`: its nursery would wrap it in a group
    async with Producer(producer_settings(plan.properties)) as producer:
        try:
            while True:
                if prompt:
                    click.echo(">", nl=False)
                chunk = await trio.to_thread.run_sync(read, abandon_on_cancel=True)
                lines = splitter.feed(chunk) if chunk else splitter.finish()
                await _send_lines(producer, plan, lines, line_number, deliveries)
                line_number += len(lines)
                if not chunk:
                    break
        except KeyboardInterrupt:
            # as Kafka's shutdown hook: what was read is still delivered
            outcome.interrupted = True
        except _Stop as stop:
            outcome.stopped = str(stop)
        await producer.flush()
    return outcome


def _options(**kwargs: Any) -> ProducerOptions:
    kwargs["properties"] = kwargs.pop("property")
    kwargs["producer_properties"] = kwargs.pop("producer_property")
    return ProducerOptions(**kwargs)


@click.command(name="console-producer", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--bootstrap-server", help="REQUIRED: the broker list HOST1:PORT1,HOST2:PORT2.")
@click.option("--topic", help="REQUIRED: the topic to produce messages to.")
@click.option("--sync", is_flag=True, help="Send each message and wait for its answer before "
              "the next.")
@click.option("--compression-codec", is_flag=False, flag_value="gzip", default=None,
              help="none, gzip, snappy, lz4 or zstd (gzip when given without a value).")
@click.option("--batch-size", type=int, help="batch.size in bytes [default: 16384].")
@click.option("--message-send-max-retries", type=int, help="retries [default: 3].")
@click.option("--retry-backoff-ms", type=int, help="retry.backoff.ms [default: 100].")
@click.option("--timeout", type=int, help="linger.ms: how long a batch waits to fill "
              "[default: 1000].")
@click.option("--request-required-acks", help="acks: -1 (all), 1 or 0 [default: -1].")
@click.option("--request-timeout-ms", type=int, help="request.timeout.ms [default: 1500].")
@click.option("--metadata-expiry-ms", type=int, help="metadata.max.age.ms [default: 300000].")
@click.option("--max-block-ms", type=int, help="max.block.ms [default: 60000].")
@click.option("--max-memory-bytes", type=int, help="buffer.memory [default: 33554432].")
@click.option("--max-partition-memory-bytes", type=int, help="batch.size (wins over "
              "--batch-size).")
@click.option("--property", multiple=True, help="A line reader property key=value: parse.key, "
              "key.separator, parse.headers, headers.delimiter, headers.separator, "
              "headers.key.separator, null.marker, ignore.error.")
@click.option("--reader-config", help="A properties file of line reader properties.")
@click.option("--producer-property", multiple=True, help="A producer setting key=value.")
@click.option("--producer.config", "producer_config", help="A producer properties file.")
@refused_option("--line-reader", "only the built-in line reader (LineMessageReader) is offered")
@refused_option("--socket-buffer-size", "pykraft's client leaves socket buffers to the system")
@refused_option("--input-file", "kafka-console-producer reads stdin: redirect the file "
                "(< FILE)")
def console_producer(**kwargs: Any) -> None:
    """Read lines from stdin and send each as a record (kafka-console-producer.sh)."""
    try:
        plan = producer_plan(_options(**kwargs))
        producer_settings(plan.properties)
    except (ConsoleOptionError, ConfigError) as exc:
        fail(str(exc))
    interrupt_on_sigint()
    deliveries = _Deliveries(plan.topic)
    try:
        outcome = trio.run(_produce, plan, _chunk_reader(sys.stdin), deliveries)
    except KeyboardInterrupt:
        # a second Ctrl-C, while the records read were being delivered
        raise click.exceptions.Exit(_INTERRUPTED) from None
    except BaseExceptionGroup as group:
        # the same, seen through the producer's nursery
        if group.split(KeyboardInterrupt)[1] is not None:
            raise
        raise click.exceptions.Exit(_INTERRUPTED) from None
    if outcome.stopped is not None:
        fail(outcome.stopped)
    if deliveries.failed:
        assert deliveries.last_error is not None
        fail(f"{deliveries.failed} of {deliveries.sent} records failed; the last error: "
             f"{deliveries.last_error.name}")
    if outcome.interrupted:
        raise click.exceptions.Exit(_INTERRUPTED)
