"""``STEP_WORK``: what a long step of a trio task was doing, for the loop monitor's warning.

A stall warning that names only the task (``CoreDriver.run``) leaves the
next defect to a profiler: that task handles every input and every slice of
every kind of work. So the code that does work of some kind on the trio
thread notes it here (``note``, or ``labelled`` around a block): a kind
("controller-op", "input", "replica timer") and a detail (the operation's
name, the input's message), with its duration. The monitor clears the note
before each task step and reads the longest of the step after it, so its
line says "the longest step was 320 ms in task X, 300 ms of it controller-op
CreateTopics".

The detail is formatted only when a warning is written: the hot path stores
two references and a float. One trio thread per process, so one module-level
slot (a thread that runs no trio loop never reads it).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

__all__ = ["STEP_WORK", "StepWork", "labelled"]


class StepWork:
    def __init__(self) -> None:
        self.kind: str | None = None
        self.detail: object = None
        self.seconds = 0.0
        # garbage collection in the step, wherever it struck (often inside the noted work)
        self.collecting = 0.0

    def note(self, kind: str, detail: object, seconds: float) -> None:
        """Work of ``kind`` (``detail``: what exactly) took ``seconds`` in this step."""
        if seconds > self.seconds:
            self.kind, self.detail, self.seconds = kind, detail, seconds

    def clear(self) -> None:
        self.kind, self.detail, self.seconds, self.collecting = None, None, 0.0, 0.0

    def describe(self) -> str | None:
        """The longest noted work, as text (None: nothing was noted)."""
        if self.kind is None:
            return None
        detail = describe_detail(self.detail)
        what = self.kind if not detail else f"{self.kind} {detail}"
        text = f"{self.seconds * 1000:.0f} ms of it {what}"
        if self.kind != "garbage collection" and self.collecting >= self.seconds / 10:
            text += f", {self.collecting * 1000:.0f} ms in garbage collection"
        return text


def describe_detail(detail: object) -> str:
    """A short name for what was worked on: a string as it is, else its class name and,
    for an envelope holding a message or a request, that one's class name."""
    if detail is None:
        return ""
    if isinstance(detail, str):
        return detail
    name = type(detail).__name__
    inner = getattr(detail, "message", None) or getattr(detail, "request", None)
    return name if inner is None else f"{name} {type(inner).__name__}"


STEP_WORK = StepWork()


@contextlib.contextmanager
def labelled(kind: str, detail: object = None) -> Iterator[None]:
    """Note the block's duration as work of ``kind`` on ``detail``."""
    started = time.perf_counter()
    try:
        yield
    finally:
        STEP_WORK.note(kind, detail, time.perf_counter() - started)
