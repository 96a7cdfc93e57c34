"""Encode and decode declared Kafka messages (``quorum.wire.schema``) at a version.

The first use of a (class, version) generates and compiles an encoder and a
decoder (``quorum.wire.codegen``) and caches them; later calls only run the
compiled field code.  Flexibility (compact strings/arrays/bytes and a tag
block at the end of every struct) comes from the top-level message's
``flexible`` range and applies to every nested struct.  Data schemas
(``api_key=None``, e.g. LeaderChangeMessage) use the same functions.

Zero copy.  ``BYTES`` and ``RECORDS`` fields decode to read-only ``memoryview``
slices of the input buffer: the decoded message keeps the whole input alive,
and decoding a ``bytearray`` pins it (it cannot be resized while such a view
exists).  ``memoryview`` compares equal to ``bytes`` with the same content, so
a decoded message == the message it was encoded from.  Hashing a message
hashes its memoryviews, which works for views of immutable ``bytes`` (what
``FrameDecoder`` returns) and raises for views of a ``bytearray``; messages
are values to compare, rarely keys, so the classes keep attrs' value hash.
On encode the values of those fields are not copied until the final join:
``encode`` copies them once, into the returned ``bytes``.

In slices.  A message too large to encode in one step of a node's thread (a
Metadata answer for 100,000 partitions) is encoded a few elements at a time:
``ArrayEncoder`` encodes the elements of one array of structs, slice by slice,
into an ``EncodedArray``, which ``with_encoded`` puts in place of the field;
the generated encoder writes such a value as it is. It nests: a topic's
partitions encoded in slices, then the topic with them.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterable
from typing import Any, Final, TypeVar

import attrs

from quorum.wire.codegen import FIXED_CODES, Compiled, generate, plan_struct
from quorum.wire.codegen_plan import EncodedArray
from quorum.wire.errors import WireDecodeError, WireEncodeError
from quorum.wire.file_region import FileRegion, joined
from quorum.wire.primitives import Buffer
from quorum.wire.schema import ArrayType, FieldSpec, MessageInfo, StructType, message_info

__all__ = [
    "ArrayEncoder",
    "EncodedArray",
    "codec_source",
    "compiled_pair",
    "decode",
    "decode_from",
    "encode",
    "encode_into",
    "encode_parts",
    "is_flexible",
    "with_encoded",
]

T = TypeVar("T")

# (class, version, flexible) -> compiled pair; nested structs share the key space.
_COMPILED: Final[dict[tuple[type, int, bool], Compiled]] = {}
# (message class, version) -> compiled pair of the top-level message.
_TOP: Final[dict[tuple[type, int], Compiled]] = {}

_ENCODE_FAILURES: Final = (struct.error, TypeError, ValueError, AttributeError, OverflowError)
# IndexError: the one-byte fast paths index the buffer without a bounds check.
_DECODE_FAILURES: Final = (struct.error, IndexError, ValueError, OverflowError)


def _compiled(cls: type, version: int, flexible: bool) -> Compiled:
    key = (cls, version, flexible)
    found = _COMPILED.get(key)
    if found is None:
        found = generate(cls, version, flexible, lambda sub: _compiled(sub, version, flexible))
        _COMPILED[key] = found
    return found


def is_flexible(cls: type, version: int) -> bool:
    return version in message_info(cls).flexible


def _top(cls: type, version: int, error: type[Exception]) -> Compiled:
    found = _TOP.get((cls, version))
    if found is not None:
        return found
    info: MessageInfo = message_info(cls)
    if not info.low <= version <= info.high:
        raise error(f"{cls.__name__} has versions {info.low}..{info.high}, not {version}")
    found = _compiled(cls, version, version in info.flexible)
    _TOP[(cls, version)] = found
    return found


def compiled_pair(cls: type, version: int) -> Compiled:
    """The compiled encoder and decoder of message ``cls`` at ``version``, for hot loops.

    They skip what ``encode_parts``/``decode_from`` add: the version lookup, the
    input view and the translation of failures. Callers that take them run the
    checked functions to report a failure (``quorum.wire.metadata_serde``).
    """
    return _top(cls, version, WireEncodeError)


def codec_source(cls: type, version: int) -> str:
    """The generated source for ``cls`` at ``version`` (for debugging and tests)."""
    return _top(cls, version, WireEncodeError).source


# -- encode ------------------------------------------------------------------


def encode_parts(msg: Any, version: int) -> list[Buffer]:
    """The encoded message as a list of chunks (BYTES/RECORDS values uncopied)."""
    cls = type(msg)
    compiled = _top(cls, version, WireEncodeError)
    parts: list[Buffer] = []
    try:
        compiled.encode(msg, parts)
    except _ENCODE_FAILURES as e:
        raise WireEncodeError(_explain_encode_failure(msg, version, e)) from e
    return parts


def encode(msg: Any, version: int) -> bytes:
    """Encode ``msg`` at ``version``: its body only, no header or frame."""
    return joined(encode_parts(msg, version))


def encode_into(msg: Any, version: int, out: bytearray) -> None:
    """Append the encoding of ``msg`` to ``out`` (copies each chunk once)."""
    for part in encode_parts(msg, version):
        out += part.read() if isinstance(part, FileRegion) else part


class ArrayEncoder:
    """Elements of one array of structs in a ``message_cls`` at ``version``, a slice at a time.

    Each ``add`` encodes its elements and joins their bytes into one chunk, so
    the finished ``EncodedArray`` holds a chunk per slice rather than a few
    small pieces per field of every element.
    """

    def __init__(self, message_cls: type, version: int, element_cls: type) -> None:
        _top(message_cls, version, WireEncodeError)  # refuses a version the message lacks
        flexible = is_flexible(message_cls, version)
        self._encode = _compiled(element_cls, version, flexible).encode
        self._version = version
        self._chunks: list[bytes] = []
        self.count = 0

    def add(self, elements: Iterable[Any]) -> None:
        parts: list[Buffer] = []
        encode, count = self._encode, 0
        for element in elements:
            try:
                encode(element, parts)
            except _ENCODE_FAILURES as e:
                raise WireEncodeError(_explain_encode_failure(element, self._version, e)) from e
            count += 1
        if count:
            self._chunks.append(b"".join(parts))
            self.count += count

    def finish(self) -> EncodedArray:
        return EncodedArray(self.count, tuple(self._chunks))


def with_encoded(msg: T, **arrays: EncodedArray) -> T:
    """``msg`` with these array fields' elements encoded beforehand: a value to encode only."""
    return attrs.evolve(msg, **arrays)  # type: ignore[misc]  # T: any declared message


# -- decode ------------------------------------------------------------------


def _view(buf: Buffer) -> memoryview:
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    if mv.format != "B" or mv.ndim != 1:
        mv = memoryview(mv.tobytes()) if not mv.c_contiguous else mv.cast("B")
    return mv if mv.readonly else mv.toreadonly()


def decode_from(cls: type[T], version: int, buf: Buffer, pos: int = 0) -> tuple[T, int]:
    """Decode one ``cls`` at ``version`` starting at ``pos``; returns (message, end position)."""
    compiled = _top(cls, version, WireDecodeError)
    # bytes are read as they are unless decoded values would be views of them
    mv = buf if type(buf) is bytes and not compiled.views else _view(buf)
    if not 0 <= pos <= len(mv):
        raise WireDecodeError(f"start position {pos} is outside a buffer of {len(mv)} bytes")
    try:
        msg, end = compiled.decode(mv, pos)
    except WireDecodeError as e:
        raise WireDecodeError(f"{cls.__name__} v{version}: {e}") from None
    except _DECODE_FAILURES as e:
        raise WireDecodeError(f"{cls.__name__} v{version}: {_decode_reason(e)}") from None
    return msg, end


def _decode_reason(error: Exception) -> str:
    if isinstance(error, IndexError):
        return "the input ends inside a length, count or tag block"
    if isinstance(error, struct.error):
        return f"the input ends early ({error})"
    return f"malformed input ({error})"


def decode(cls: type[T], version: int, buf: Buffer) -> T:
    """Decode a whole buffer as one ``cls``; leftover bytes are an error."""
    msg, end = decode_from(cls, version, buf, 0)
    size = buf.nbytes if isinstance(buf, memoryview) else len(buf)
    if end != size:
        raise WireDecodeError(
            f"{cls.__name__} v{version}: {size - end} unexpected bytes after the message "
            f"(it ends at offset {end} of {size})"
        )
    return msg


# -- error reporting -----------------------------------------------------------

_INT_RANGES: Final = {
    "int8": (-(2**7), 2**7 - 1), "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1), "uint32": (0, 2**32 - 1),
}


def _bad_scalar(type_name: str, value: Any) -> str | None:
    if type_name in _INT_RANGES:
        low, high = _INT_RANGES[type_name]
        if not isinstance(value, int) or not low <= value <= high:
            return f"{type_name} needs an int in {low}..{high}, got {value!r}"
    elif type_name == "float64" and not isinstance(value, float | int):
        return f"float64 needs a float, got {type(value).__name__}"
    elif type_name == "uuid" and not isinstance(value, uuid.UUID):
        return f"uuid needs a uuid.UUID, got {type(value).__name__}"
    elif type_name == "string" and value is not None and not isinstance(value, str):
        return f"string needs a str, got {type(value).__name__}"
    elif type_name in ("bytes", "records") and value is not None and not isinstance(
        value, bytes | bytearray | memoryview | FileRegion
    ):
        return f"{type_name} needs bytes, bytearray or memoryview, got {type(value).__name__}"
    return None


def _bad_value(spec_type: Any, value: Any, version: int, path: str) -> str | None:
    if value is None:
        return None
    if isinstance(spec_type, StructType):
        return _bad_struct(spec_type.cls, value, version, path)
    if isinstance(spec_type, ArrayType):
        if not isinstance(value, tuple | list):
            return f"{path}: an array needs a tuple, got {type(value).__name__}"
        for i, item in enumerate(value):
            problem = _bad_value(spec_type.element, item, version, f"{path}[{i}]")
            if problem:
                return problem
        return None
    problem = _bad_scalar(spec_type.name, value)
    return f"{path}: {problem}" if problem else None


def _bad_struct(cls: type, value: Any, version: int, path: str) -> str | None:
    if not isinstance(value, cls):
        return f"{path}: expected {cls.__name__}, got {type(value).__name__}"
    _absent, regular, tagged = plan_struct(cls, version, True)
    for f in (*regular, *tagged):
        spec: FieldSpec = f.spec
        problem = _bad_value(spec.type, getattr(value, f.name), version, f"{path}.{f.name}")
        if problem:
            return problem
    return None


def _explain_encode_failure(msg: Any, version: int, error: Exception) -> str:
    cls = type(msg)
    where = _bad_struct(cls, msg, version, cls.__name__)
    if where is None:
        where = f"{cls.__name__}: {error}"
    return f"cannot encode {cls.__name__} v{version}: {where}"


assert set(_INT_RANGES) <= set(FIXED_CODES)
