"""Two decoded responses walked field by field: the paths where they differ.

Values are what pykraft's codec decodes (attrs message classes, tuples for arrays,
scalars, ``memoryview`` for bytes) or the outcomes of ``wire`` (an answer, a closed
connection). Both sides are normalised first (``tests.kafka.normalise_fields``); this
module only compares. A path reads like ``topics[0].partitions[2].error_code``; an array
of another length is one difference at the array (``len 3 != 2``) plus the elements both
have, so a missing element is never hidden behind a shifted comparison of the others.
"""

from __future__ import annotations

from typing import Any

import attrs

__all__ = ["Difference", "differences"]


@attrs.frozen
class Difference:
    path: str
    kafka: str
    pykraft: str

    def __str__(self) -> str:
        return f"{self.path}: kafka {self.kafka} != pykraft {self.pykraft}"


def _show(value: Any) -> str:
    if isinstance(value, memoryview | bytearray):
        value = bytes(value)
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def differences(kafka: Any, pykraft: Any, path: str = "") -> list[Difference]:
    """Every path where ``kafka`` and ``pykraft`` differ (empty when they are equal)."""
    out: list[Difference] = []
    _walk(kafka, pykraft, path, out)
    return out


def _walk(a: Any, b: Any, path: str, out: list[Difference]) -> None:
    if attrs.has(type(a)) and attrs.has(type(b)):
        if type(a) is not type(b):
            out.append(Difference(path or "<outcome>", type(a).__name__, type(b).__name__))
            return
        for f in attrs.fields(type(a)):
            _walk(getattr(a, f.name), getattr(b, f.name), f"{path}.{f.name}" if path else f.name,
                  out)
        return
    if isinstance(a, tuple | list) and isinstance(b, tuple | list):
        if len(a) != len(b):
            out.append(Difference(f"{path}.len", str(len(a)), str(len(b))))
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            _walk(x, y, f"{path}[{i}]", out)
        return
    if isinstance(a, memoryview | bytearray):
        a = bytes(a)
    if isinstance(b, memoryview | bytearray):
        b = bytes(b)
    if type(a) is not type(b) or a != b:
        out.append(Difference(path or "<value>", _show(a), _show(b)))
