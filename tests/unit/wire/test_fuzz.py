"""Malformed input never escapes the wire layer as anything but a ``WireError``.

A seeded mutation loop (bit flips, truncations, insertions, deletions, splices,
garbage, and tampering with length-like fields) runs over valid encodings of
the test messages and of every API registered in ``API_BY_KEY`` at every
version, through ``decode``, ``decode_request``, ``decode_response`` and
``FrameDecoder``.  Input that still decodes must re-encode, and re-encoding is
stable.  ``WIRE_FUZZ_CASES`` and ``WIRE_FUZZ_SEED`` change the size and the
seed; a failure prints the seed, the case number and the input.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import random
from collections.abc import Callable
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quorum.wire import codec
from quorum.wire.apis import API_BY_KEY
from quorum.wire.errors import WireError
from quorum.wire.framing import FrameDecoder
from quorum.wire.protocol import (
    RequestHeader,
    ResponseHeader,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from quorum.wire.schema import message_info
from tests.unit.wire.strategies import random_message
from tests.unit.wire.test_codec_engine import Sample, TagOrder, Tiny

SEED = int(os.environ.get("WIRE_FUZZ_SEED", "1729"))
CASES = int(os.environ.get("WIRE_FUZZ_CASES", "100000"))
SAMPLES_PER_VERSION = 2

# Register every API declared so far; the loop covers whatever exists.
with contextlib.suppress(ImportError):
    importlib.import_module("quorum.wire.messages")


@attrs.frozen
class Target:
    """One valid input and the decoder it belongs to."""

    name: str
    data: bytes
    run: Callable[[bytes], None]


def _check_body(cls: type, version: int) -> Callable[[bytes], None]:
    def run(data: bytes) -> None:
        msg: Any = codec.decode(cls, version, data)
        again = codec.encode(msg, version)
        assert codec.encode(codec.decode(cls, version, again), version) == again

    return run


def _check_request(data: bytes) -> None:
    header, msg = decode_request(data)
    framed = encode_request(header, msg)
    assert decode_request(framed[4:])[0] == header


def _check_response(key: int, version: int) -> Callable[[bytes], None]:
    def run(data: bytes) -> None:
        header, msg = decode_response(data, key, version)
        framed = encode_response(header, key, version, msg)
        assert decode_response(framed[4:], key, version)[0] == header

    return run


def _check_stream(data: bytes) -> None:
    decoder = FrameDecoder(max_frame_bytes=1 << 16)
    rng = random.Random(len(data))
    pos = 0
    while pos < len(data):
        step = rng.randint(1, 64)
        decoder.feed(data[pos : pos + step])
        pos += step
        while (frame := decoder.next_frame()) is not None:
            with contextlib.suppress(WireError):
                decode_request(frame)


def _versions(cls: type, low: int, high: int) -> range:
    info = message_info(cls)
    return range(max(low, info.low), min(high, info.high) + 1)


def build_corpus(rng: random.Random) -> list[Target]:
    targets = []
    for cls in (Tiny, TagOrder, Sample):
        for v in _versions(cls, 0, 99):
            for _ in range(SAMPLES_PER_VERSION):
                body = codec.encode(random_message(cls, v, rng), v)
                targets.append(Target(f"{cls.__name__} v{v}", body, _check_body(cls, v)))
    for key, spec in sorted(API_BY_KEY.items()):
        for v in _versions(spec.request, spec.low, spec.high):
            for _ in range(SAMPLES_PER_VERSION):
                header = RequestHeader(api_key=key, api_version=v,
                                       correlation_id=rng.randint(0, 1000), client_id="fuzz")
                framed = encode_request(header, random_message(spec.request, v, rng))
                targets.append(Target(f"{spec.name} request v{v}", framed[4:], _check_request))
                targets.append(Target(f"{spec.name} stream v{v}", framed * 2, _check_stream))
        for v in _versions(spec.response, spec.low, spec.high):
            for _ in range(SAMPLES_PER_VERSION):
                resp = random_message(spec.response, v, rng)
                framed = encode_response(ResponseHeader(7), key, v, resp)
                targets.append(Target(f"{spec.name} response v{v}", framed[4:],
                                      _check_response(key, v)))
    return targets


# -- mutations ------------------------------------------------------------------

INTERESTING = [
    b"\x00", b"\x01", b"\x7f", b"\x80", b"\xff", b"\x00\x00", b"\x7f\xff", b"\x80\x00",
    b"\xff\xff", b"\xff\xfe", b"\x00\x00\x00\x00", b"\x7f\xff\xff\xff", b"\x80\x00\x00\x00",
    b"\xff\xff\xff\xff", b"\xff\xff\xff\xfe", b"\x00\x00\x10\x00", b"\xff\xff\xff\xff\x0f",
    b"\x80\x80\x80\x80\x80\x01", b"\xc3\x28",
]


def _flip(data: bytearray, rng: random.Random) -> None:
    for _ in range(rng.randint(1, 4)):
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)


def _truncate(data: bytearray, rng: random.Random) -> None:
    del data[rng.randrange(len(data)) :]


def _insert(data: bytearray, rng: random.Random) -> None:
    at = rng.randint(0, len(data))
    data[at:at] = rng.randbytes(rng.randint(1, 8))


def _delete(data: bytearray, rng: random.Random) -> None:
    at = rng.randrange(len(data))
    del data[at : at + rng.randint(1, 8)]


def _tamper(data: bytearray, rng: random.Random) -> None:
    # Overwrite what may be a length, count, tag or varint with an edge value.
    value = rng.choice(INTERESTING)
    at = rng.randrange(len(data))
    data[at : at + len(value)] = value


def _splice(data: bytearray, rng: random.Random) -> None:
    start = rng.randrange(len(data))
    piece = data[start : start + rng.randint(1, 16)]
    at = rng.randint(0, len(data))
    data[at:at] = piece


def _garbage(data: bytearray, rng: random.Random) -> None:
    data[:] = rng.randbytes(rng.randint(0, 64))


MUTATORS = [_flip, _truncate, _insert, _delete, _tamper, _tamper, _splice, _garbage]


def mutate(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        if not out:
            out += rng.randbytes(rng.randint(1, 8))
        rng.choice(MUTATORS)(out, rng)
    return bytes(out)


def run_cases(targets: list[Target], seed: int, cases: int) -> list[str]:
    rng = random.Random(seed)
    failures: list[str] = []
    for case in range(cases):
        target = rng.choice(targets)
        data = mutate(target.data, rng)
        try:
            target.run(data)
        except WireError:
            pass
        except Exception as e:
            failures.append(
                f"seed {seed} case {case} {target.name}: {type(e).__name__}: {e}\n"
                f"  input {data.hex()}"
            )
            if len(failures) >= 5:
                break
    return failures


def test_the_corpus_covers_the_registered_apis() -> None:
    targets = build_corpus(random.Random(SEED))
    names = {t.name.split(" ")[0] for t in targets}
    assert {spec.name for spec in API_BY_KEY.values()} <= names
    assert {"Tiny", "TagOrder", "Sample"} <= names


def test_valid_corpus_entries_decode_cleanly() -> None:
    for target in build_corpus(random.Random(SEED)):
        target.run(target.data)


def test_mutated_input_raises_only_wire_errors() -> None:
    failures = run_cases(build_corpus(random.Random(SEED)), SEED, CASES)
    assert failures == []


def test_the_fuzz_loop_reports_an_escaping_exception() -> None:
    def broken(data: bytes) -> None:
        raise IndexError("escaped")

    failures = run_cases([Target("broken", b"abc", broken)], SEED, 3)
    assert len(failures) == 3
    assert failures[0].startswith(f"seed {SEED} case 0 broken: IndexError: escaped")


# -- Hypothesis: shrinkable cases ------------------------------------------------

BODY_TARGETS: list[tuple[type, int]] = [(Tiny, 0), (Tiny, 1), (TagOrder, 0)] + [
    (Sample, v) for v in range(4)
]


@settings(max_examples=200)
@given(st.binary(max_size=300))
def test_arbitrary_request_bytes_raise_only_wire_errors(data: bytes) -> None:
    with contextlib.suppress(WireError):
        _check_request(data)


@settings(max_examples=200)
@given(st.sampled_from(BODY_TARGETS), st.binary(max_size=200))
def test_arbitrary_message_bytes_raise_only_wire_errors(target: Any, data: bytes) -> None:
    cls, version = target
    with contextlib.suppress(WireError):
        _check_body(cls, version)(data)


@settings(max_examples=100)
@given(st.lists(st.binary(max_size=40), max_size=8))
def test_arbitrary_streams_raise_only_wire_errors(chunks: list[bytes]) -> None:
    with contextlib.suppress(WireError):
        _check_stream(b"".join(chunks))


@pytest.mark.parametrize("prefix", [b"\x7f\xff\xff\xff", b"\x80\x00\x00\x00"])
def test_streams_with_impossible_sizes_raise_frame_errors(prefix: bytes) -> None:
    with pytest.raises(WireError, match=r"socket.request.max.bytes"):
        _check_stream(prefix + b"\x00" * 10)
