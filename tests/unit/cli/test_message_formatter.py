"""``cli.message_formatter``: records printed as Kafka's DefaultMessageFormatter prints them."""

from __future__ import annotations

import pytest

from broker.client import ConsumerRecord, TimestampType
from cli.console_properties import ConsoleOptionError
from cli.message_formatter import FormatterConfig, format_record


def record(**changes: object) -> ConsumerRecord:
    fields: dict[str, object] = {
        "topic": "t", "partition": 2, "offset": 5, "timestamp": 1234,
        "timestamp_type": TimestampType.CREATE_TIME, "key": b"k", "value": b"v",
        "headers": (("h1", b"a"), ("h2", b"b")), "leader_epoch": 3,
    }
    fields.update(changes)
    return ConsumerRecord(**fields)  # type: ignore[arg-type]


def formatted(rec: ConsumerRecord, **properties: str) -> bytes:
    config = FormatterConfig.from_properties({k.replace("_", "."): v for k, v in properties.items()})
    return format_record(config, rec)


def test_by_default_only_the_value_and_a_newline_are_printed() -> None:
    assert formatted(record()) == b"v\n"


def test_every_field_in_kafkas_order_separated_by_tabs() -> None:
    everything = {f"print_{name}": "true" for name in
                  ("timestamp", "partition", "offset", "delivery", "epoch", "headers", "key")}
    assert formatted(record(), **everything) == (
        b"CreateTime:1234\tPartition:2\tOffset:5\tDelivery:NOT_PRESENT\tEpoch:3\th1:a,h2:b\tk\tv\n"
    )


def test_log_append_time_and_a_missing_epoch() -> None:
    rec = record(timestamp_type=TimestampType.LOG_APPEND_TIME, leader_epoch=-1)
    assert formatted(rec, print_timestamp="true", print_epoch="true") == (
        b"LogAppendTime:1234\tEpoch:NOT_PRESENT\tv\n"
    )


def test_nulls_print_as_the_null_literal_and_no_headers_as_NO_HEADERS() -> None:
    rec = record(key=None, value=None, headers=())
    assert formatted(rec, print_key="true", print_headers="true") == b"NO_HEADERS\tnull\tnull\n"
    rec = record(key=None, headers=(("h", None),))
    assert formatted(rec, print_key="true", print_headers="true", null_literal="-") == (
        b"h:-\t-\tv\n"
    )


def test_separators_are_configurable() -> None:
    assert formatted(record(), print_key="true", print_headers="true", key_separator=" | ",
                     line_separator="\r\n", headers_separator=";") == b"h1:a;h2:b | k | v\r\n"


def test_without_the_value_the_last_field_ends_the_line() -> None:
    assert formatted(record(), print_key="true", print_value="false") == b"k\n"
    assert formatted(record(), print_value="false") == b""


def test_bytes_are_printed_as_they_are() -> None:
    assert formatted(record(value=b"\xff\x00")) == b"\xff\x00\n"


def test_flags_are_true_only_for_true_in_any_case() -> None:
    assert formatted(record(), print_key=" True ") == b"k\tv\n"
    assert formatted(record(), print_key="yes") == b"v\n"


@pytest.mark.parametrize(
    ("properties", "message"),
    [
        ({"print.keys": "true"}, "Unknown --property print.keys"),
        ({"key.deserializer": "org.apache.kafka.common.serialization.StringDeserializer"},
         "deserializers are not supported"),
        ({"value.deserializer.encoding": "UTF8"}, "deserializers are not supported"),
    ],
)
def test_unknown_properties_and_deserializers_are_refused(
    properties: dict[str, str], message: str
) -> None:
    with pytest.raises(ConsoleOptionError, match=message):
        FormatterConfig.from_properties(properties)
