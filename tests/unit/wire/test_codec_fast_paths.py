"""The codec's fast paths agree with the plain code they replace: same bytes, same objects.

``generate(..., plain=True)`` is the reference: every struct through its
``__init__``, every UUID through ``uuid.UUID(bytes=...)``, every array through a
format string, every varint through ``primitives``. The codec's own pairs take
the fast paths (slot stores, the UUID cache, struct tables, inline varints), and
``metadata_serde`` adds a dispatch on the frame bytes. For random messages of
every declared class and version, both must write the same bytes and read them
back as the same objects, field types included; for mutated metadata record
values both must fail (with a WireDecodeError) or both read the same record.
"""

from __future__ import annotations

import functools
import random
import struct
import uuid
import zlib
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from quorum.wire import codec, metadata_serde, uuids
from quorum.wire.codegen import Compiled, generate
from quorum.wire.errors import WireDecodeError, WireEncodeError
from quorum.wire.fast_build import slot_setters
from quorum.wire.messages.metadata_records import PartitionRecord
from quorum.wire.metadata_serde import (
    RECORD_CLASSES,
    WRITE_VERSIONS,
    decode_metadata_record,
    encode_metadata_record,
)
from quorum.wire.primitives import decode_unsigned_varint, unsigned_varint_bytes
from quorum.wire.records import Record, build_batch, decode_batch
from quorum.wire.schema import INT32, message_info
from quorum.wire.schema import field as wire_field
from quorum.wire.uuids import uuid_from_bytes
from tests.unit.wire.strategies import message_strategy, random_message
from tests.unit.wire.test_codec_engine import ALL_MESSAGES
from tests.unit.wire.test_fuzz import CASES, mutate
from tests.unit.wire.test_roundtrip_messages import PAIRS

# -- the plain reference ----------------------------------------------------------------------

_PLAIN: dict[tuple[type, int, bool], Compiled] = {}


def _plain(cls: type, version: int, flexible: bool) -> Compiled:
    key = (cls, version, flexible)
    if key not in _PLAIN:
        _PLAIN[key] = generate(
            cls, version, flexible, lambda sub: _plain(sub, version, flexible), plain=True
        )
    return _PLAIN[key]


def plain_encode(msg: Any, version: int) -> bytes:
    parts: list[Any] = []
    _plain(type(msg), version, version in message_info(type(msg)).flexible).encode(msg, parts)
    return b"".join(parts)


def plain_decode(cls: type, version: int, data: bytes, pos: int = 0) -> tuple[Any, int]:
    """The plain decoder over a memoryview of ``data``, failures as codec reports them."""
    compiled = _plain(cls, version, version in message_info(cls).flexible)
    try:
        return compiled.decode(memoryview(data), pos)
    except WireDecodeError:
        raise
    except (struct.error, IndexError, ValueError, OverflowError) as exc:
        raise WireDecodeError(f"{cls.__name__} v{version}: {exc}") from None


def plain_decode_value(value: bytes) -> Any:
    """A metadata record value read as the serde's checked path reads it, with plain code."""
    frame, pos = decode_unsigned_varint(value, 0)
    api_key, pos = decode_unsigned_varint(value, pos)
    version, pos = decode_unsigned_varint(value, pos)
    cls = RECORD_CLASSES.get(api_key)
    info = None if cls is None else message_info(cls)
    if frame != 1 or cls is None or info is None or not info.low <= version <= info.high:
        raise WireDecodeError("bad frame")
    record, end = plain_decode(cls, version, value, pos)
    if end != len(value):
        raise WireDecodeError("garbage")
    return record


def frame(cls: type, version: int) -> bytes:
    key = message_info(cls).api_key
    assert key is not None
    return unsigned_varint_bytes(1) + unsigned_varint_bytes(key) + unsigned_varint_bytes(version)


def shape(value: Any) -> Any:
    """A comparable form that keeps types: a bool is not an int, a memoryview not bytes."""
    if attrs.has(type(value)):
        return (type(value), tuple((f.name, shape(getattr(value, f.name))) for f in attrs.fields(type(value))))
    if isinstance(value, tuple):
        return (tuple, tuple(shape(v) for v in value))
    if isinstance(value, memoryview):
        return (memoryview, value.tobytes())
    if isinstance(value, float):
        return (float, struct.pack(">d", value))  # NaN equal to itself
    return (type(value), value)


# -- metadata records: every class, every version ----------------------------------------------

METADATA_PAIRS = [
    pytest.param(cls, version, id=f"{cls.__name__}-v{version}")
    for cls in RECORD_CLASSES.values()
    for version in range(message_info(cls).low, message_info(cls).high + 1)
]
_strategy = functools.cache(message_strategy)
# the wire fuzz budget (WIRE_FUZZ_CASES, 100,000 by default), shared among the pairs
CASES_PER_PAIR = max(1, CASES // len(METADATA_PAIRS))


@pytest.mark.parametrize(("cls", "version"), METADATA_PAIRS)
@settings(max_examples=25, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fast_and_plain_code_write_and_read_metadata_records_alike(
    cls: type, version: int, data: st.DataObject
) -> None:
    record = data.draw(_strategy(cls, version), label="record")
    body = plain_encode(record, version)
    assert codec.encode(record, version) == body
    reference, _ = plain_decode(cls, version, body)
    value = frame(cls, version) + body
    for _ in range(2):  # the first read fills the serde's table, the second takes it
        assert shape(decode_metadata_record(value)) == shape(reference)
    assert shape(codec.decode(cls, version, body)) == shape(reference)
    if WRITE_VERSIONS[cls] == version:  # type: ignore[index]
        for _ in range(2):  # likewise: the checked path, then the table
            assert encode_metadata_record(record) == value


@pytest.mark.parametrize(("cls", "version"), METADATA_PAIRS)
def test_mutated_metadata_record_values_fail_or_decode_as_the_plain_code_does(
    cls: type, version: int
) -> None:
    rng = random.Random(zlib.crc32(f"fast-{cls.__name__}-{version}".encode()))
    valid = [frame(cls, version) + plain_encode(random_message(cls, version, rng), version)
             for _ in range(8)]
    for value in valid:
        decode_metadata_record(value)  # the table holds this frame from here on
    for case in range(CASES_PER_PAIR):
        value = mutate(rng.choice(valid), rng)
        try:
            expected = shape(plain_decode_value(value))
        except WireDecodeError:
            expected = None
        try:
            got = shape(decode_metadata_record(value))
        except WireDecodeError as exc:
            if value.startswith(frame(cls, version)):
                assert f"{cls.__name__} v{version}" in str(exc), f"case {case}: {value.hex()}"
            got = None
        assert got == expected, f"case {case}: {value.hex()}"


def test_the_fast_path_never_reports_an_error_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    record = PartitionRecord(partition_id=3, replicas=(1, 2), isr=(1,), leader=1)
    value = encode_metadata_record(record)
    assert decode_metadata_record(value) == record  # fills the table for this frame
    checked: list[bytes | memoryview] = []

    def checked_path(found: bytes | memoryview) -> Any:
        checked.append(found)
        raise WireDecodeError("from the checked path")

    monkeypatch.setattr(metadata_serde, "_decode_checked", checked_path)
    assert decode_metadata_record(value) == record
    assert checked == []
    for broken in (value[:-1], value + b"\x00", value[:5]):
        with pytest.raises(WireDecodeError, match="from the checked path"):
            decode_metadata_record(broken)
    assert checked == [value[:-1], value + b"\x00", value[:5]]


def test_a_record_that_cannot_be_encoded_is_explained_by_the_checked_path() -> None:
    record = PartitionRecord(partition_id=2**31, replicas=(1,), isr=(1,))
    encode_metadata_record(PartitionRecord())  # fills the encoder table
    with pytest.raises(WireEncodeError, match=r"PartitionRecord\.partition_id: int32 needs an int"):
        encode_metadata_record(record)


# -- every other declared message: the codec's fast paths alone -------------------------------


@pytest.mark.parametrize(("cls", "version"), [*PAIRS, *(pytest.param(c, v) for c, v in ALL_MESSAGES)])
def test_fast_and_plain_code_agree_on_every_declared_message(cls: type, version: int) -> None:
    rng = random.Random(zlib.crc32(f"fast-{cls.__name__}-{version}".encode()))
    for _ in range(10):
        msg = random_message(cls, version, rng)
        body = codec.encode(msg, version)
        assert body == plain_encode(msg, version)
        reference, _ = plain_decode(cls, version, body)
        assert shape(codec.decode(cls, version, body)) == shape(reference)
        assert shape(codec.decode(cls, version, memoryview(body))) == shape(reference)


# -- which classes are built by slot stores ---------------------------------------------------


@attrs.frozen
class Checked:
    id: int = wire_field(INT32, default=0)
    positive: int = attrs.field(default=1, validator=attrs.validators.gt(0))


@attrs.frozen
class Converted:
    id: int = attrs.field(default=0, converter=int, metadata=attrs.fields(Checked).id.metadata)


@attrs.frozen
class Hooked:
    id: int = wire_field(INT32, default=0)

    def __attrs_post_init__(self) -> None:
        pass


@attrs.define(frozen=True, slots=False)
class Unslotted:
    id: int = wire_field(INT32, default=0)


@attrs.define
class OwnSetattr:
    id: int = wire_field(INT32, default=0)

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)


@attrs.define
class Mutable:
    id: int = wire_field(INT32, default=0)


@attrs.frozen
class NotInit:
    id: int = wire_field(INT32, default=0)
    derived: int = attrs.field(init=False, default=0)


@attrs.frozen
class SelfFactory:
    id: int = wire_field(INT32, default=0)
    twice: int = attrs.field(default=attrs.Factory(lambda self: self.id * 2, takes_self=True))


@pytest.mark.parametrize(
    "cls", [Checked, Converted, Hooked, Unslotted, OwnSetattr, NotInit, SelfFactory]
)
def test_classes_whose_init_does_more_than_store_slots_keep_their_init(cls: type) -> None:
    assert slot_setters(cls) is None


@pytest.mark.parametrize(
    "cls", [*RECORD_CLASSES.values(), *(c for c, _ in ALL_MESSAGES), Mutable]
)
def test_declared_messages_are_built_by_slot_stores(cls: type) -> None:
    setters = slot_setters(cls)
    assert setters is not None
    assert list(setters) == [f.name for f in attrs.fields(cls)]


def test_a_decoder_uses_init_for_a_class_that_needs_it() -> None:
    info = message_info(PartitionRecord)
    assert "o = _new(CLS)" in codec.codec_source(PartitionRecord, info.low)
    hooked = generate(Hooked, 0, True, lambda sub: _plain(sub, 0, True))
    assert "return CLS(" in hooked.source
    assert hooked.decode(b"\x00\x00\x00\x07\x00", 0) == (Hooked(id=7), 5)


# -- UUIDs ------------------------------------------------------------------------------------


@given(st.binary(min_size=16, max_size=16))
def test_uuid_from_bytes_is_the_uuid_constructor(raw: bytes) -> None:
    made = uuid_from_bytes(raw)
    reference = uuid.UUID(bytes=raw)
    assert type(made) is uuid.UUID
    assert (made, made.int, made.is_safe, hash(made)) == (
        reference, reference.int, reference.is_safe, hash(reference)
    )
    assert uuid_from_bytes(bytes(raw)) is made  # one object per id while cached


def test_the_uuid_cache_stays_bounded_and_refuses_wrong_lengths() -> None:
    for i in range(10_000):
        uuid_from_bytes(i.to_bytes(16, "big"))
    assert 0 < len(uuids._CACHE) <= 4096
    with pytest.raises(ValueError, match="16"):
        uuid_from_bytes(b"\x00" * 15)


# -- record framing: the inline varints at their boundaries ----------------------------------


@pytest.mark.parametrize("size", [0, 63, 64, 65, 8184, 8191, 8192, 70_000])
def test_records_round_trip_across_the_varint_widths(size: int) -> None:
    deltas = [0, 1, 63, 64, 8191, 8192, 2**20]
    records = [
        Record(offset_delta=d, timestamp_delta=d - 64, value=bytes([d % 251]) * size,
               key=None if d % 2 else b"k" * (d % 130))
        for d in deltas
    ]
    decoded = decode_batch(build_batch(records)).records
    assert decoded == tuple(records)
