"""Records into output bytes, as Kafka's ``DefaultMessageFormatter`` writes them (sans-I/O).

``FormatterConfig.from_properties`` takes the console consumer's
``--property`` values; ``format_record`` gives one record's bytes. The
fields come in Kafka's order, each followed by ``key.separator`` (default
tab) when a later field is printed::

    CreateTime:1700000000000  Partition:0  Offset:5  Delivery:NOT_PRESENT  Epoch:3
    h1:v1,h2:v2 (or NO_HEADERS)  key  value<line.separator>

``print.value`` defaults to true, every other ``print.*`` to false; a null
key, value or header value prints as ``null.literal`` (default ``null``).
Header values and keys and values are written as their raw bytes (no
deserializers). ``print.epoch`` shows the batch's partition leader epoch
(Kafka's console consumer drops it and always prints NOT_PRESENT);
``print.delivery`` is for share groups, so it is always NOT_PRESENT.
"""

from __future__ import annotations

from typing import Final

import attrs

from broker.client import ConsumerRecord, TimestampType
from cli.console_properties import ConsoleOptionError

__all__ = ["FormatterConfig", "format_record"]

_FLAGS: Final = {
    "print.timestamp": "print_timestamp",
    "print.key": "print_key",
    "print.offset": "print_offset",
    "print.delivery": "print_delivery",
    "print.epoch": "print_epoch",
    "print.partition": "print_partition",
    "print.headers": "print_headers",
    "print.value": "print_value",
}
_TEXTS: Final = {
    "key.separator": "key_separator",
    "line.separator": "line_separator",
    "headers.separator": "headers_separator",
    "null.literal": "null_literal",
}
_DESERIALIZERS: Final = ("key.deserializer", "value.deserializer", "headers.deserializer")
_TIMESTAMP_NAMES: Final = {
    TimestampType.CREATE_TIME: b"CreateTime",
    TimestampType.LOG_APPEND_TIME: b"LogAppendTime",
}


@attrs.frozen(kw_only=True)
class FormatterConfig:
    print_timestamp: bool = False
    print_key: bool = False
    print_offset: bool = False
    print_delivery: bool = False
    print_epoch: bool = False
    print_partition: bool = False
    print_headers: bool = False
    print_value: bool = True
    key_separator: bytes = b"\t"
    line_separator: bytes = b"\n"
    headers_separator: bytes = b","
    null_literal: bytes = b"null"

    @classmethod
    def from_properties(cls, properties: dict[str, str]) -> FormatterConfig:
        refused = [key for key in properties if key.startswith(_DESERIALIZERS)]
        if refused:
            raise ConsoleOptionError(
                f"--property {refused[0]}: deserializers are not supported; keys, values and "
                "headers are printed as their bytes"
            )
        unknown = sorted(set(properties) - set(_FLAGS) - set(_TEXTS))
        if unknown:
            raise ConsoleOptionError(
                f"Unknown --property {', '.join(unknown)} for the message formatter; it knows "
                f"{', '.join([*_FLAGS, *_TEXTS])}"
            )
        values: dict[str, object] = {}
        for key, field in _FLAGS.items():
            if key in properties:
                # Kafka: anything but "true" (any case, trimmed) is false
                values[field] = properties[key].strip().lower() == "true"
        for key, field in _TEXTS.items():
            if key in properties:
                values[field] = properties[key].encode()
        return cls(**values)  # type: ignore[arg-type]


def _header_bytes(record: ConsumerRecord, config: FormatterConfig) -> bytes:
    if not record.headers:
        return b"NO_HEADERS"
    return config.headers_separator.join(
        key.encode() + b":" + (config.null_literal if value is None else value)
        for key, value in record.headers
    )


def format_record(config: FormatterConfig, record: ConsumerRecord) -> bytes:
    """One record as the console consumer prints it, line separator included."""
    fields: list[bytes] = []
    if config.print_timestamp:
        name = _TIMESTAMP_NAMES.get(record.timestamp_type)
        fields.append(b"NO_TIMESTAMP" if name is None else b"%s:%d" % (name, record.timestamp))
    if config.print_partition:
        fields.append(b"Partition:%d" % record.partition)
    if config.print_offset:
        fields.append(b"Offset:%d" % record.offset)
    if config.print_delivery:
        fields.append(b"Delivery:NOT_PRESENT")
    if config.print_epoch:
        fields.append(b"Epoch:NOT_PRESENT" if record.leader_epoch < 0
                      else b"Epoch:%d" % record.leader_epoch)
    if config.print_headers:
        fields.append(_header_bytes(record, config))
    if config.print_key:
        fields.append(config.null_literal if record.key is None else record.key)
    if config.print_value:
        fields.append(config.null_literal if record.value is None else record.value)
    # Kafka writes key.separator after a field when a later one follows, else
    # line.separator: one line separator per record, none when nothing is printed
    return config.key_separator.join(fields) + config.line_separator if fields else b""
