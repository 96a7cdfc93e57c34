"""``kraft console-consumer``: Kafka's ``kafka-console-consumer.sh`` on the pykraft client.

Prints the records of ``--topic`` on stdout, formatted as Kafka's
``DefaultMessageFormatter`` does (``cli.message_formatter``; ``--property
print.key=true`` and friends). With ``--group`` (or a ``group.id``
consumer property) the consumer subscribes to the topic as a member of
that group: it reads the partitions the group gives it, from the group's
committed offsets, and commits as it goes (``enable.auto.commit``, unless a
property turns it off). Without a group (where Kafka makes up a throwaway
``console-consumer-N`` group) it is assigned partitions instead:
``--partition N`` alone, or every partition the topic has when it starts
(partitions added later are not followed). Where each starts: ``--offset
earliest|latest|N`` with ``--partition``; else ``--from-beginning``
(``auto.offset.reset=earliest``) or the end of the log (``latest``, or the
``auto.offset.reset`` of ``--consumer-property``), for a group only where
it has no committed offset.

It ends after ``--max-messages`` records, after ``--timeout-ms`` without a
record (exit status 0, as Kafka's), on Ctrl-C (status 130, as the JVM
exits on SIGINT) or on an error (status 1, where Kafka logs it and exits
with 0); then it prints "Processed a total of N messages" on stderr. A
topic that does not exist yet is waited for (up to ``--timeout-ms``).
"""

from __future__ import annotations

import io
import os
import sys
import time
from typing import Any, Final, Literal, cast

import attrs
import click
import trio

from broker.client import (
    Admin,
    Consumer,
    KafkaError,
    TopicPartition,
    admin_settings,
    consumer_settings,
)
from cli.console import fail, interrupt_on_sigint
from cli.console_properties import (
    ConsoleOptionError,
    load_properties,
    merge_option,
    parse_key_value_args,
)
from cli.message_formatter import FormatterConfig, format_record
from cli.refused_options import refused_option
from quorum.config import ConfigError
from quorum.wire.error_codes import Errors

__all__ = ["ConsumerOptions", "ConsumerPlan", "console_consumer", "consumer_plan"]

_INTERRUPTED: Final = 130
# how long one poll waits when no --timeout-ms bounds the run
_IDLE_POLL_MS: Final = 1000
_TOPIC_RETRY_S: Final = 0.5

StartOffset = Literal["earliest", "latest"] | int


@attrs.frozen(kw_only=True)
class ConsumerOptions:
    """The command line as given (None: the option was left out)."""

    bootstrap_server: str | None
    topic: str | None
    partition: int | None = None
    offset: str | None = None
    from_beginning: bool = False
    max_messages: int | None = None
    timeout_ms: int | None = None
    properties: tuple[str, ...] = ()
    formatter_config: str | None = None
    consumer_properties: tuple[str, ...] = ()
    consumer_config: str | None = None
    isolation_level: str | None = None
    group: str | None = None


@attrs.frozen(kw_only=True)
class ConsumerPlan:
    topic: str
    # one partition, or None: every partition of the topic
    partition: int | None
    # where --partition starts; None: auto.offset.reset decides
    start: StartOffset | None
    # Kafka-style consumer properties, for consumer_settings
    properties: dict[str, str]
    formatter: FormatterConfig
    # None: no limit
    max_messages: int | None
    timeout_ms: int | None


def _start(options: ConsumerOptions) -> StartOffset | None:
    if options.partition is None:
        return None
    if options.offset is None:
        return "earliest" if options.from_beginning else "latest"
    text = options.offset.lower()
    if text in ("earliest", "latest"):
        return cast(StartOffset, text)
    try:
        offset = int(options.offset)
    except ValueError:
        offset = -1
    if offset < 0:
        raise ConsoleOptionError(
            f"The provided offset value '{options.offset}' is incorrect. Valid values are "
            "'earliest', 'latest', or a non-negative long."
        )
    return offset


def _check(options: ConsumerOptions) -> str:
    if not options.topic:
        raise ConsoleOptionError("Exactly one of --include/--topic is required.")
    if options.partition is not None:
        if options.from_beginning and options.offset is not None:
            raise ConsoleOptionError(
                "Options from-beginning and offset cannot be specified together."
            )
    elif options.offset is not None:
        raise ConsoleOptionError("The partition is required when offset is specified.")
    if not options.bootstrap_server or not options.bootstrap_server.strip():
        raise ConsoleOptionError('Missing required argument "[bootstrap-server]"')
    return options.topic


def _consumer_properties(options: ConsumerOptions) -> dict[str, str]:
    from_file = load_properties(options.consumer_config)
    extra = parse_key_value_args(options.consumer_properties)
    properties = from_file | extra
    _check_group(options, from_file, extra)
    if options.group is not None:
        properties["group.id"] = options.group
    reset = properties.get("auto.offset.reset")
    if reset is None:
        properties["auto.offset.reset"] = "earliest" if options.from_beginning else "latest"
    elif options.from_beginning and reset != "earliest":
        raise ConsoleOptionError(
            f"Can't simultaneously specify --from-beginning and 'auto.offset.reset={reset}', "
            "please remove one option"
        )
    assert options.bootstrap_server is not None
    properties["bootstrap.servers"] = options.bootstrap_server
    properties.setdefault("client.id", "console-consumer")
    merge_option(properties, "isolation.level", options.isolation_level, "read_uncommitted")
    return properties


def _check_group(options: ConsumerOptions, from_file: dict[str, str],
                 extra: dict[str, str]) -> None:
    """Kafka's ConsoleConsumerOptions.checkConsumerGroup."""
    given = [options.group, from_file.get("group.id"), extra.get("group.id")]
    groups = list(dict.fromkeys(g for g in given if g is not None))
    if len(groups) > 1:
        raise ConsoleOptionError(
            "The group ids provided in different places (directly using '--group', via "
            "'--consumer-property', or via '--consumer.config') do not match. Detected group "
            "ids: " + ", ".join(f"'{g}'" for g in groups)
        )
    if groups and options.partition is not None:
        raise ConsoleOptionError("Options group and partition cannot be specified together.")


def consumer_plan(options: ConsumerOptions) -> ConsumerPlan:
    """What to run, or a ConsoleOptionError that says what is wrong with the options."""
    topic = _check(options)
    start = _start(options)
    formatter_properties = load_properties(options.formatter_config)
    formatter_properties.update(parse_key_value_args(options.properties))
    max_messages, timeout_ms = options.max_messages, options.timeout_ms
    return ConsumerPlan(
        topic=topic,
        partition=options.partition,
        start=start,
        properties=_consumer_properties(options),
        formatter=FormatterConfig.from_properties(formatter_properties),
        # Kafka: -1 is "no limit"; a timeout below zero is none
        max_messages=None if max_messages is None or max_messages < 0 else max_messages,
        timeout_ms=None if timeout_ms is None or timeout_ms < 0 else timeout_ms,
    )


@attrs.define
class _Progress:
    """What the run did, readable after trio.run however it ended."""

    count: int = 0
    timed_out: bool = False
    error: str | None = None
    interrupted: bool = False
    broken_pipe: bool = False


class _TimedOut(Exception):
    """No record (or no topic) within --timeout-ms: Kafka's TimeoutException."""


async def _wait_for_topic(admin: Admin, topic: str, deadline: float | None
                          ) -> list[TopicPartition]:
    warned = False
    while True:
        try:
            described = await admin.describe_topics([topic])
        except KafkaError as exc:
            if exc.error is not Errors.UNKNOWN_TOPIC_OR_PARTITION:
                raise
            if not warned:
                click.echo(f"Waiting for topic {topic} to exist ({exc.name})", err=True)
                warned = True
            if deadline is not None and time.monotonic() >= deadline:
                raise _TimedOut() from None
            await trio.sleep(_TOPIC_RETRY_S)
            continue
        return [TopicPartition(topic, p.partition) for p in described[topic].partitions]


async def _partitions(plan: ConsumerPlan, deadline: float | None) -> list[TopicPartition]:
    """The partitions to read: --partition, or every one the topic has (waiting for it)."""
    if plan.partition is not None:
        return [TopicPartition(plan.topic, plan.partition)]
    settings = admin_settings({"bootstrap.servers": plan.properties["bootstrap.servers"],
                               "client.id": plan.properties["client.id"]})
    failure: KafkaError | _TimedOut
    # raised outside the admin's `async with`: its nursery would wrap it in a group
    async with Admin(settings) as admin:
        try:
            return await _wait_for_topic(admin, plan.topic, deadline)
        except (KafkaError, _TimedOut) as exc:
            failure = exc
    raise failure


def _seek(consumer: Consumer, plan: ConsumerPlan, partitions: list[TopicPartition]) -> None:
    consumer.assign(partitions)
    if plan.start == "earliest":
        consumer.seek_to_beginning(*partitions)
    elif plan.start == "latest":
        consumer.seek_to_end(*partitions)
    elif isinstance(plan.start, int):
        [tp] = partitions
        consumer.seek(tp, plan.start)


async def _read(consumer: Consumer, plan: ConsumerPlan, out: io.BufferedIOBase,
                progress: _Progress) -> None:
    poll_ms = plan.timeout_ms if plan.timeout_ms is not None else _IDLE_POLL_MS
    last_record = time.monotonic()
    while plan.max_messages is None or progress.count < plan.max_messages:
        left = None if plan.max_messages is None else plan.max_messages - progress.count
        records = await consumer.poll(timeout_ms=poll_ms, max_records=left)
        if not records:
            idle_ms = (time.monotonic() - last_record) * 1000
            if plan.timeout_ms is not None and idle_ms >= plan.timeout_ms:
                raise _TimedOut()
            continue
        last_record = time.monotonic()
        data = b"".join(format_record(plan.formatter, record) for record in records)
        # counted before written, as Kafka counts: Ctrl-C can land between any two lines
        progress.count += len(records)
        out.write(data)
        out.flush()


async def _consume(plan: ConsumerPlan, out: io.BufferedIOBase, progress: _Progress) -> None:
    deadline = None if plan.timeout_ms is None else time.monotonic() + plan.timeout_ms / 1000
    # nothing raised crosses the consumer's `async with`: its nursery would wrap it in a group
    async with Consumer(consumer_settings(plan.properties)) as consumer:
        try:
            if "group.id" in plan.properties:
                consumer.subscribe([plan.topic])
            else:
                _seek(consumer, plan, await _partitions(plan, deadline))
            await _read(consumer, plan, out, progress)
        except _TimedOut:
            progress.timed_out = True
        except KafkaError as exc:
            progress.error = f"Error processing message, terminating consumer process: {exc}"
        except BrokenPipeError:
            progress.broken_pipe = True
        except KeyboardInterrupt:
            progress.interrupted = True


def _options(**kwargs: Any) -> ConsumerOptions:
    kwargs["properties"] = kwargs.pop("property")
    kwargs["consumer_properties"] = kwargs.pop("consumer_property")
    return ConsumerOptions(**kwargs)


def _silence_stdout() -> None:
    # nobody reads stdout any more: point it at /dev/null so the interpreter's last
    # flush does not fail too
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, io.UnsupportedOperation):
        pass


def _run(plan: ConsumerPlan) -> _Progress:
    progress = _Progress()
    out = cast(io.BufferedIOBase, sys.stdout.buffer)
    try:
        trio.run(_consume, plan, out, progress)
    except KeyboardInterrupt:
        progress.interrupted = True
    except BaseExceptionGroup as group:
        # Ctrl-C seen through the consumer's nursery
        if group.split(KeyboardInterrupt)[1] is not None:
            raise
        progress.interrupted = True
    return progress


@click.command(name="console-consumer", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--bootstrap-server", help="REQUIRED: the broker list HOST1:PORT1,HOST2:PORT2.")
@click.option("--topic", help="The topic to consume.")
@click.option("--partition", type=click.IntRange(min=0), help="Only this partition (from its "
              "end unless --offset or --from-beginning says otherwise).")
@click.option("--offset", help="With --partition: earliest, latest, or an offset.")
@click.option("--from-beginning", is_flag=True, help="Start at the earliest record, not the "
              "latest.")
@click.option("--max-messages", type=int, help="Exit after this many records.")
@click.option("--timeout-ms", type=int, help="Exit when no record arrives for this long.")
@click.option("--property", multiple=True, help="A formatter property key=value: print.key, "
              "print.value, print.timestamp, print.partition, print.offset, print.headers, "
              "print.epoch, print.delivery, key.separator, line.separator, headers.separator, "
              "null.literal.")
@click.option("--formatter-config", help="A properties file of formatter properties.")
@click.option("--consumer-property", multiple=True, help="A consumer setting key=value.")
@click.option("--consumer.config", "consumer_config", help="A consumer properties file.")
@click.option("--isolation-level", help="read_uncommitted (read_committed needs transactions, "
              "not supported yet).")
@click.option("--group", help="The consumer group to read as a member of.")
@click.option("--skip-message-on-error", is_flag=True, expose_value=False,
              help="Accepted; printing a record cannot fail here.")
@refused_option("--include", "topic patterns are not offered by this tool yet: name one "
                "--topic")
@refused_option("--formatter", "only the default formatter (DefaultMessageFormatter) is "
                "offered: choose what it prints with --property")
@refused_option("--key-deserializer", "keys are printed as their bytes")
@refused_option("--value-deserializer", "values are printed as their bytes")
@refused_option("--enable-systest-events", "it is for Kafka's system tests", is_flag=True)
def console_consumer(**kwargs: Any) -> None:
    """Print the records of a topic on stdout (kafka-console-consumer.sh)."""
    try:
        plan = consumer_plan(_options(**kwargs))
        consumer_settings(plan.properties)
    except (ConsoleOptionError, ConfigError) as exc:
        fail(str(exc))
    interrupt_on_sigint()
    progress = _run(plan)
    if progress.broken_pipe:
        _silence_stdout()
        click.echo("Unable to write to standard out, closing consumer.", err=True)
    if progress.timed_out:
        # Kafka logs this and exits with status 0: --timeout-ms is a normal end
        click.echo("Error processing message, terminating consumer process: TimeoutException",
                   err=True)
    if progress.error is not None:
        click.echo(progress.error, err=True)
    click.echo(f"Processed a total of {progress.count} messages", err=True)
    if progress.interrupted:
        raise click.exceptions.Exit(_INTERRUPTED)
    if progress.error is not None:
        raise click.exceptions.Exit(1)
