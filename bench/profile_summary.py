"""Where a sampled process spent its time: py-spy's collapsed stacks summed per function.

py-spy (``record --format raw``) writes one line per distinct stack:
``outer (file.py:12);inner (other.py:40) 17`` (frames outermost first, then the
sample count). ``summarize`` adds up, per function (name and file, lines
dropped), the samples where it was on top of the stack (self) and those where it
was anywhere in it (inclusive, counted once per stack however often it recurs).
"""

from __future__ import annotations

import collections
from collections.abc import Iterable

import attrs

__all__ = ["FunctionTime", "Profile", "summarize"]


@attrs.frozen
class FunctionTime:
    function: str
    self_samples: int
    inclusive_samples: int


@attrs.frozen
class Profile:
    samples: int
    functions: tuple[FunctionTime, ...]

    def top(self, count: int, *, by_self: bool = True) -> list[FunctionTime]:
        def key(f: FunctionTime) -> int:
            return f.self_samples if by_self else f.inclusive_samples

        return sorted(self.functions, key=lambda f: (-key(f), f.function))[:count]

    def lines(self, count: int = 25) -> list[str]:
        """A markdown table of the top functions by self time."""
        total = max(self.samples, 1)
        out = ["| function | self % | inclusive % |", "| --- | ---: | ---: |"]
        for f in self.top(count):
            out.append(f"| `{f.function}` | {100 * f.self_samples / total:.1f} | "
                       f"{100 * f.inclusive_samples / total:.1f} |")
        return out


def _function(frame: str) -> str:
    """``name (path/file.py:12)`` -> ``name (file.py)``: one entry per function."""
    name, _, where = frame.partition(" (")
    path = where.rstrip(")").rsplit(":", 1)[0]
    short = "/".join(path.split("/")[-2:]) if path else ""
    return f"{name} ({short})" if short else name


def summarize(lines: Iterable[str]) -> Profile:
    self_counts: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    total = 0
    for line in lines:
        stack, _, count_text = line.rstrip("\n").rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [_function(f) for f in stack.split(";") if f]
        if not frames:
            continue
        total += count
        self_counts[frames[-1]] += count
        for function in set(frames):
            inclusive[function] += count
    functions = tuple(FunctionTime(name, self_counts[name], inclusive[name]) for name in inclusive)
    return Profile(samples=total, functions=functions)
