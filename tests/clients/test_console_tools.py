"""``kraft console-producer`` and ``kraft console-consumer`` as processes against a real cluster."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from typing import Final

import attrs
import pytest
from click.testing import CliRunner

from broker.client import BlockingAdmin, NewTopic
from cli.console_consumer import console_consumer

from .records import COUNT, PARTITIONS, check_read_back, records

_ACKS: Final = {"all": "-1", "1": "1", "0": "0"}
_RUN_S: Final = 90


def kraft(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "cli", *args], input=stdin, capture_output=True, timeout=_RUN_S,
        check=False,
    )


def create_topic(bootstrap: str, topic: str, partitions: int = PARTITIONS, **configs: str) -> None:
    with BlockingAdmin({"bootstrap.servers": bootstrap}) as admin:
        assert admin.create_topics([NewTopic(
            name=topic, num_partitions=partitions, replication_factor=3,
            configs={k.replace("_", "."): v for k, v in configs.items()},
        )]) == {topic: None}


def produce(bootstrap: str, topic: str, lines: list[bytes], *options: str
            ) -> subprocess.CompletedProcess[bytes]:
    return kraft("console-producer", "--bootstrap-server", bootstrap, "--topic", topic,
                 *options, stdin=b"".join(line + b"\n" for line in lines))


@attrs.frozen
class Consumed:
    returncode: int
    stdout: bytes
    stderr: bytes


def consume(bootstrap: str, topic: str, *options: str) -> Consumed:
    """The consumer in this process (click's runner): a process start is seconds here."""
    result = CliRunner().invoke(
        console_consumer,
        ["--bootstrap-server", bootstrap, "--topic", topic, "--timeout-ms", "20000", *options],
    )
    return Consumed(result.exit_code, result.stdout_bytes, result.stderr_bytes or b"")


@pytest.mark.parametrize("acks", ["all", "1", "0"])
def test_lines_with_headers_and_keys_are_read_back_as_kafkas_tools_print_them(
    bootstrap: str, acks: str
) -> None:
    topic = f"console-{acks}"
    create_topic(bootstrap, topic)
    sent = records(topic)
    lines = [b"n:%d,src:console\t%s\t%s" % (i, key, value) for i, (key, value) in enumerate(sent)]
    produced = produce(
        bootstrap, topic, lines, "--request-required-acks", _ACKS[acks], "--timeout", "5",
        "--property", "parse.key=true", "--property", "parse.headers=true",
        # the console default (1.5 s) is short for a loaded 2-core machine; a retry could
        # reorder or duplicate (no idempotence), which the read-back check would flag
        "--producer-property", "request.timeout.ms=30000",
    )
    assert produced.returncode == 0, produced.stderr.decode()
    assert produced.stderr == b""

    consumed = consume(
        bootstrap, topic, "--from-beginning", "--max-messages", str(COUNT),
        *[arg for name in ("key", "partition", "offset", "headers")
          for arg in ("--property", f"print.{name}=true")],
    )
    assert consumed.returncode == 0, consumed.stderr.decode()
    assert consumed.stderr.decode().splitlines() == [f"Processed a total of {COUNT} messages"]
    read: list[tuple[int, int, bytes | None, bytes | None]] = []
    index = {value: i for i, (_, value) in enumerate(sent)}
    for line in consumed.stdout.splitlines():
        partition, offset, headers, key, value = line.split(b"\t")
        assert partition.startswith(b"Partition:") and offset.startswith(b"Offset:"), line
        assert headers == b"n:%d,src:console" % index[value], line
        read.append((int(partition[10:]), int(offset[7:]), key, value))
    check_read_back(sent, read)
    assert {partition for partition, _, _, _ in read} == set(range(PARTITIONS))


def test_partition_and_offset_pick_where_reading_starts(bootstrap: str) -> None:
    topic = "console-offsets"
    create_topic(bootstrap, topic, partitions=1)
    produced = produce(bootstrap, topic, [b"v%d" % i for i in range(20)], "--timeout", "0")
    assert produced.returncode == 0, produced.stderr.decode()

    middle = consume(bootstrap, topic, "--partition", "0", "--offset", "15", "--max-messages",
                     "3", "--property", "print.offset=true", "--property", "print.timestamp=true")
    assert middle.returncode == 0, middle.stderr.decode()
    fields = [line.split(b"\t") for line in middle.stdout.splitlines()]
    assert [(offset, value) for _, offset, value in fields] == [
        (b"Offset:15", b"v15"), (b"Offset:16", b"v16"), (b"Offset:17", b"v17"),
    ]
    assert all(stamp.startswith(b"CreateTime:") and int(stamp[11:]) > 0 for stamp, _, _ in fields)

    earliest = consume(bootstrap, topic, "--partition", "0", "--offset", "earliest",
                       "--max-messages", "2")
    assert earliest.stdout == b"v0\nv1\n"

    # from the end nothing is there: --timeout-ms ends the run, as Kafka's does, with status 0
    latest = consume(bootstrap, topic, "--partition", "0", "--offset", "latest",
                     "--timeout-ms", "1500")
    assert latest.returncode == 0, latest.stderr.decode()
    assert latest.stdout == b""
    assert latest.stderr.decode().splitlines()[-2:] == [
        "Error processing message, terminating consumer process: TimeoutException",
        "Processed a total of 0 messages",
    ]


def test_a_record_the_broker_refuses_fails_the_producer_with_kafkas_error_name(
    bootstrap: str,
) -> None:
    topic = "console-too-large"
    create_topic(bootstrap, topic, partitions=1, max_message_bytes="300")
    lines = [b"small", b"x" * 1000, b"after"]
    asynchronous = produce(bootstrap, topic, lines, "--timeout", "0")
    assert asynchronous.returncode == 1
    errors = asynchronous.stderr.decode().splitlines()
    assert errors[0].startswith(
        f"Error when sending message to topic {topic} with key: null, value: 1000 bytes "
        "with error: MESSAGE_TOO_LARGE"
    ), errors
    assert errors[-1] == "1 of 3 records failed; the last error: MESSAGE_TOO_LARGE"

    # --sync stops at the failing line; what came before it is delivered
    synchronous = produce(bootstrap, topic, lines, "--sync")
    assert synchronous.returncode == 1
    assert synchronous.stderr.decode().splitlines()[-1] == "Stopped at line 2: MESSAGE_TOO_LARGE"
    read = consume(bootstrap, topic, "--from-beginning", "--max-messages", "3")
    assert read.stdout == b"small\nafter\nsmall\n"


def test_ctrl_c_ends_the_consumer_with_its_count(bootstrap: str) -> None:
    topic = "console-interrupt"
    create_topic(bootstrap, topic, partitions=2)
    assert produce(bootstrap, topic, [b"a", b"b", b"c"], "--timeout", "0").returncode == 0
    with subprocess.Popen(
        [sys.executable, "-m", "cli", "console-consumer", "--bootstrap-server", bootstrap,
         "--topic", topic, "--from-beginning"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    ) as consumer:
        # readline has no timeout: a consumer that prints nothing is killed, failing the test
        watchdog = threading.Timer(_RUN_S, consumer.kill)
        watchdog.start()
        try:
            assert consumer.stdout is not None and consumer.stderr is not None
            got = [consumer.stdout.readline() for _ in range(3)]
            assert sorted(got) == [b"a\n", b"b\n", b"c\n"]
            consumer.send_signal(signal.SIGINT)
            try:
                consumer.wait(timeout=30)
            except subprocess.TimeoutExpired:
                raise AssertionError("the consumer did not stop on SIGINT") from None
            errors = consumer.stderr.read().decode()
        finally:
            watchdog.cancel()
            if consumer.poll() is None:
                consumer.kill()
    assert consumer.returncode == 130
    assert errors.splitlines()[-1] == "Processed a total of 3 messages"


def test_the_consumer_waits_for_a_missing_topic_until_its_timeout(bootstrap: str) -> None:
    missing = consume(bootstrap, "console-never-created", "--timeout-ms", "1000")
    assert missing.returncode == 0
    assert missing.stderr.decode().splitlines() == [
        "Waiting for topic console-never-created to exist (UNKNOWN_TOPIC_OR_PARTITION)",
        "Error processing message, terminating consumer process: TimeoutException",
        "Processed a total of 0 messages",
    ]
