"""``kraft console-producer`` / ``console-consumer``: options into plans, and refusals."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.console_consumer import ConsumerOptions, console_consumer, consumer_plan
from cli.console_producer import ProducerOptions, console_producer, producer_plan
from cli.console_properties import ConsoleOptionError, parse_key_value_args
from cli.line_reader import LineReaderConfig
from cli.message_formatter import FormatterConfig

SERVER = "localhost:9092"


def test_key_value_args_keep_equals_in_values_and_accept_a_missing_value() -> None:
    assert parse_key_value_args(["a=1", "b=x=y", "c", "a=2"]) == {"a": "2", "b": "x=y", "c": ""}


# -- producer --------------------------------------------------------------------------------


def test_the_producer_gets_kafkas_console_defaults() -> None:
    plan = producer_plan(ProducerOptions(bootstrap_server=SERVER, topic="t"))
    assert plan.properties == {
        "bootstrap.servers": SERVER, "client.id": "console-producer", "linger.ms": "1000",
        "acks": "-1", "request.timeout.ms": "1500", "retries": "3", "retry.backoff.ms": "100",
        "buffer.memory": str(32 * 1024 * 1024), "batch.size": "16384",
        "metadata.max.age.ms": "300000", "max.block.ms": "60000",
    }
    assert plan.reader == LineReaderConfig()
    assert not plan.sync


def test_producer_settings_file_then_properties_then_options(tmp_path: Path) -> None:
    config = tmp_path / "producer.properties"
    config.write_text("acks=0\nlinger.ms=7\nclient.id=mine\ncompression.type=gzip\n")
    plan = producer_plan(ProducerOptions(
        bootstrap_server=SERVER, topic="t", producer_config=str(config),
        producer_properties=("linger.ms=9", "batch.size=100"), request_required_acks="1",
        max_partition_memory_bytes=200,
    ))
    props = plan.properties
    # an option given wins; an option left out does not override a property
    assert props["acks"] == "1"
    assert props["linger.ms"] == "9"
    assert props["client.id"] == "mine"
    assert props["compression.type"] == "gzip"
    # --max-partition-memory-bytes sets batch.size too, and wins (as in Kafka)
    assert props["batch.size"] == "200"


def test_reader_properties_come_from_property_and_reader_config(tmp_path: Path) -> None:
    config = tmp_path / "reader.properties"
    config.write_text("parse.key=true\nkey.separator=;\n")
    plan = producer_plan(ProducerOptions(
        bootstrap_server=SERVER, topic="t", reader_config=str(config),
        properties=("key.separator=|", "null.marker=NULL"),
    ))
    assert plan.reader == LineReaderConfig(parse_key=True, key_separator="|", null_marker="NULL")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (ProducerOptions(bootstrap_server=SERVER, topic=None), 'Missing required argument "\\[topic\\]"'),
        (ProducerOptions(bootstrap_server=" ", topic="t"), "bootstrap-server"),
        (ProducerOptions(bootstrap_server=SERVER, topic="t", producer_config="/no/such/file"),
         "Properties file /no/such/file does not exist"),
        (ProducerOptions(bootstrap_server=SERVER, topic="t", properties=("parse.kye=true",)),
         "Unknown --property parse.kye"),
    ],
)
def test_producer_option_errors(options: ProducerOptions, message: str) -> None:
    with pytest.raises(ConsoleOptionError, match=message):
        producer_plan(options)


def run_producer(*args: str, stdin: str = "") -> tuple[int, str]:
    result = CliRunner().invoke(console_producer, list(args), input=stdin)
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--line-reader", "my.Reader"], "--line-reader is not supported: only the built-in"),
        (["--socket-buffer-size", "1024"], "--socket-buffer-size is not supported"),
        (["--input-file", "lines.txt"], "redirect the file (< FILE)"),
        (["--request-required-acks", "2"], "Invalid value 2 for configuration acks"),
        (["--compression-codec", "brotli"], "Invalid value brotli for configuration compression.type"),
        (["--producer-property", "enable.idempotence=true", "--request-required-acks", "1"],
         "Must set acks to all in order to use the idempotent producer"),
        (["--producer-property", "transactional.id=x"], "transactions are not supported yet"),
    ],
)
def test_the_producer_command_refuses_with_a_reason_before_connecting(
    args: list[str], message: str
) -> None:
    code, output = run_producer("--bootstrap-server", SERVER, "--topic", "t", *args)
    assert code == 1
    assert message in output


def test_compression_codec_without_a_value_means_gzip() -> None:
    plan = producer_plan(ProducerOptions(bootstrap_server=SERVER, topic="t",
                                         compression_codec="gzip"))
    assert plan.properties["compression.type"] == "gzip"
    # a bare --compression-codec does not swallow the next option as its value
    code, output = run_producer("--bootstrap-server", SERVER, "--topic", "t",
                                "--compression-codec", "--producer-property", "acks=7")
    assert code == 1 and "Invalid value 7 for configuration acks" in output


# -- consumer --------------------------------------------------------------------------------


def test_the_consumer_reads_every_partition_from_the_end_by_default() -> None:
    plan = consumer_plan(ConsumerOptions(bootstrap_server=SERVER, topic="t"))
    assert (plan.partition, plan.start, plan.max_messages, plan.timeout_ms) == (None, None, None, None)
    assert plan.properties == {
        "bootstrap.servers": SERVER, "client.id": "console-consumer",
        "auto.offset.reset": "latest", "isolation.level": "read_uncommitted",
    }
    assert plan.formatter == FormatterConfig()


def test_from_beginning_sets_earliest_and_a_partition_starts_where_offset_says() -> None:
    plan = consumer_plan(ConsumerOptions(bootstrap_server=SERVER, topic="t", from_beginning=True))
    assert plan.properties["auto.offset.reset"] == "earliest"
    assert consumer_plan(ConsumerOptions(
        bootstrap_server=SERVER, topic="t", partition=1, from_beginning=True)).start == "earliest"
    assert consumer_plan(ConsumerOptions(
        bootstrap_server=SERVER, topic="t", partition=1)).start == "latest"
    assert consumer_plan(ConsumerOptions(
        bootstrap_server=SERVER, topic="t", partition=1, offset="EARLIEST")).start == "earliest"
    assert consumer_plan(ConsumerOptions(
        bootstrap_server=SERVER, topic="t", partition=1, offset="42")).start == 42


def test_a_group_from_the_option_or_a_property_makes_the_consumer_a_member() -> None:
    plan = consumer_plan(ConsumerOptions(bootstrap_server=SERVER, topic="t", group="g"))
    assert plan.properties["group.id"] == "g"
    same = consumer_plan(ConsumerOptions(bootstrap_server=SERVER, topic="t", group="g",
                                         consumer_properties=("group.id=g",)))
    assert same.properties["group.id"] == "g"
    assert "group.id" not in consumer_plan(ConsumerOptions(bootstrap_server=SERVER,
                                                           topic="t")).properties


def test_negative_limits_mean_none_and_properties_reach_the_formatter() -> None:
    plan = consumer_plan(ConsumerOptions(
        bootstrap_server=SERVER, topic="t", max_messages=-1, timeout_ms=-1,
        properties=("print.key=true", "key.separator=,"),
    ))
    assert (plan.max_messages, plan.timeout_ms) == (None, None)
    assert plan.formatter == FormatterConfig(print_key=True, key_separator=b",")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (ConsumerOptions(bootstrap_server=SERVER, topic=None),
         "Exactly one of --include/--topic is required."),
        (ConsumerOptions(bootstrap_server=SERVER, topic="t", offset="5"),
         "The partition is required when offset is specified."),
        (ConsumerOptions(bootstrap_server=SERVER, topic="t", partition=0, offset="5",
                         from_beginning=True),
         "Options from-beginning and offset cannot be specified together."),
        (ConsumerOptions(bootstrap_server=SERVER, topic="t", partition=0, offset="-3"),
         "The provided offset value '-3' is incorrect"),
        (ConsumerOptions(bootstrap_server=SERVER, topic="t", partition=0, offset="soon"),
         "The provided offset value 'soon' is incorrect"),
        (ConsumerOptions(bootstrap_server=None, topic="t"), "bootstrap-server"),
        (ConsumerOptions(bootstrap_server=SERVER, topic="t", group="g", partition=0),
         "Options group and partition cannot be specified together."),
        (ConsumerOptions(bootstrap_server=SERVER, topic="t", group="g",
                         consumer_properties=("group.id=h",)),
         "do not match. Detected group ids: 'g', 'h'"),
        (ConsumerOptions(bootstrap_server=SERVER, topic="t", from_beginning=True,
                         consumer_properties=("auto.offset.reset=latest",)),
         "Can't simultaneously specify --from-beginning and 'auto.offset.reset=latest'"),
    ],
)
def test_consumer_option_errors(options: ConsumerOptions, message: str) -> None:
    with pytest.raises(ConsoleOptionError, match=message.replace("[", r"\[")):
        consumer_plan(options)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--include", "t.*"], "--include is not supported: topic patterns are not offered"),
        (["--formatter", "my.Formatter"], "only the default formatter"),
        (["--key-deserializer", "x"], "keys are printed as their bytes"),
        (["--enable-systest-events"], "--enable-systest-events is not supported"),
        (["--isolation-level", "read_committed"], "read_committed needs transactions"),
        (["--consumer-property", "fetch.min.bytes=lots"], "fetch.min.bytes"),
        (["--property", "print.keys=true"], "Unknown --property print.keys"),
        (["--group", "g", "--partition", "0"], "Options group and partition cannot be"),
    ],
)
def test_the_consumer_command_refuses_with_a_reason_before_connecting(
    args: list[str], message: str
) -> None:
    result = CliRunner().invoke(
        console_consumer, ["--bootstrap-server", SERVER, "--topic", "t", *args]
    )
    assert result.exit_code == 1
    assert message in result.output
