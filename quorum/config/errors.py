"""The config layer's one exception: bad input in a ``.properties`` file.

A ``ConfigError`` carries every problem found in one source (unknown keys,
bad values, missing required keys, cross-field conflicts); each problem names
its key and, when the key came from a file, the line it was on.
"""

from __future__ import annotations

from collections.abc import Iterable

from attrs import frozen

__all__ = ["ConfigError", "ConfigProblem"]


@frozen
class ConfigProblem:
    """One thing wrong with a configuration, in words a user can act on."""

    message: str
    key: str | None = None
    line: int | None = None


class ConfigError(Exception):
    """A configuration that cannot be used, with every problem found in it."""

    source: str | None
    problems: tuple[ConfigProblem, ...]

    def __init__(self, problems: Iterable[ConfigProblem], *, source: str | None = None) -> None:
        ordered = tuple(problems)
        assert ordered, "a ConfigError needs at least one problem"
        self.source = source
        self.problems = ordered
        super().__init__(self._render())

    @classmethod
    def single(
        cls,
        message: str,
        *,
        key: str | None = None,
        source: str | None = None,
        line: int | None = None,
    ) -> ConfigError:
        return cls([ConfigProblem(message, key=key, line=line)], source=source)

    @property
    def keys(self) -> tuple[str, ...]:
        """The keys the problems are about, in report order."""
        return tuple(p.key for p in self.problems if p.key is not None)

    def _where(self, problem: ConfigProblem) -> str:
        if self.source is None:
            return "" if problem.line is None else f"line {problem.line}: "
        if problem.line is None:
            return f"{self.source}: "
        return f"{self.source}:{problem.line}: "

    def _render(self) -> str:
        if len(self.problems) == 1:
            return self._where(self.problems[0]) + self.problems[0].message
        header = f"{len(self.problems)} configuration problems"
        if self.source is not None:
            header += f" in {self.source}"
        lines = [header + ":"]
        for problem in self.problems:
            where = "" if problem.line is None else f"line {problem.line}: "
            lines.append(f"  {where}{problem.message}")
        return "\n".join(lines)
