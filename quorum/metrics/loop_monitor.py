"""``LoopMonitor``: how long a node's trio thread goes without serving I/O.

Trio runs in turns: wait for I/O (or a timer), then run every task that is
ready, one step each, then wait again. While a turn runs, no socket is read
and no timer fires, so the time from the end of one I/O wait to the start of
the next is the stall every other task sees. The monitor feeds each turn's
length to ``NodeActivity.record_stall`` and, for a turn over
``stall_warn_ms``, writes a warning (at most one per ``warn_interval_s``)
naming the task whose single step was the longest in that turn, and what
that step was doing (``step_work.STEP_WORK``: the longest piece of work the
code noted in it, such as one controller operation's slice or one input): a
stall is usually one step that did too much, and its line names the work.

The step hooks run on every task step, so they only read ``perf_counter`` and
store two fields; the clock for windows (``trio.current_time``) is read once
per turn.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import time
from collections.abc import Iterator

import trio

from quorum.metrics.activity import NodeActivity
from quorum.metrics.step_work import STEP_WORK
from quorum.metrics.windows import WarningGate

__all__ = ["STALL_WARN_MS", "LoopMonitor", "monitor_loop"]

logger = logging.getLogger(__name__)

STALL_WARN_MS = 200.0
_WARNING_KEY = "stall"


class LoopMonitor(trio.abc.Instrument):
    def __init__(
        self,
        activity: NodeActivity,
        *,
        stall_warn_ms: float = STALL_WARN_MS,
        warn_interval_s: float = 5.0,
    ) -> None:
        self._activity = activity
        self._stall_warn_s = stall_warn_ms / 1000
        self._warnings = WarningGate(warn_interval_s)
        self._turn_start: float | None = None  # None until the first I/O wait ends
        self._step_start = 0.0
        self._longest_step = 0.0
        self._longest_task: trio.lowlevel.Task | None = None
        self._longest_work: str | None = None

    def after_io_wait(self, timeout: float) -> None:
        self._turn_start = time.perf_counter()
        self._longest_step = 0.0
        self._longest_task = None
        self._longest_work = None

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        STEP_WORK.clear()
        self._step_start = time.perf_counter()

    def after_task_step(self, task: trio.lowlevel.Task) -> None:
        step = time.perf_counter() - self._step_start
        if step > self._longest_step:
            self._longest_step = step
            self._longest_task = task
            # formatted now: the noted work's details do not outlive the step
            self._longest_work = STEP_WORK.describe() if step > self._stall_warn_s / 8 else None

    def before_io_wait(self, timeout: float) -> None:
        start = self._turn_start
        if start is None:
            return
        stall = time.perf_counter() - start
        now_s = trio.current_time()
        self._activity.record_stall(stall, now_s)
        self._activity.record_step(self._longest_step, now_s, self._longest_work)
        if stall > self._stall_warn_s:
            self._warn(stall, now_s)
        self._longest_task = None  # a finished task is not kept alive until the next turn

    def _warn(self, stall: float, now_s: float) -> None:
        dropped = self._warnings.admit(_WARNING_KEY, now_s)
        if dropped is None:
            return
        task = self._longest_task
        work = self._longest_work
        logger.warning(
            "the event loop served no I/O for %.0f ms; the longest step was %.0f ms in task "
            "%s%s%s",
            stall * 1000, self._longest_step * 1000, "?" if task is None else repr(task.name),
            "" if work is None else f" ({work})",
            f"; {dropped} more stalls over {self._stall_warn_s * 1000:.0f} ms "
            "since the last such line" if dropped else "",
        )


@contextlib.contextmanager
def monitor_loop(
    activity: NodeActivity, *, stall_warn_ms: float = STALL_WARN_MS
) -> Iterator[LoopMonitor]:
    """Run a ``LoopMonitor`` feeding ``activity`` on the current trio thread, for the block."""
    monitor = LoopMonitor(activity, stall_warn_ms=stall_warn_ms)
    trio.lowlevel.add_instrument(monitor)
    gc.callbacks.append(_note_collection)
    try:
        yield monitor
    finally:
        gc.callbacks.remove(_note_collection)
        trio.lowlevel.remove_instrument(monitor)


_collection_started = 0.0


def _note_collection(phase: str, info: dict[str, int]) -> None:
    """A garbage collection is work of its own: a full one walks every tracked object."""
    global _collection_started
    if phase == "start":
        _collection_started = time.perf_counter()
    else:
        seconds = time.perf_counter() - _collection_started
        STEP_WORK.collecting += seconds
        STEP_WORK.note("garbage collection", f"of generation {info['generation']}", seconds)
