"""A client's background tasks in a nursery of their own.

A client entered with ``async with`` runs the caller's code inside the
nursery it opened. Closing the client cancels its background tasks; if they
lived in that nursery, the cancellation would reach the caller's code too
(and escape as an exception group when the caller runs a nursery of its own,
as the blocking front-ends do). So the background nursery lives in a host
task started in the entered nursery: cancelling it stops only the client's
tasks, and the host returns.
"""

from __future__ import annotations

import contextlib

import trio

__all__ = ["open_background"]


async def open_background(stack: contextlib.AsyncExitStack) -> trio.Nursery:
    """A nursery for background tasks, alive until its cancel scope is cancelled."""
    outer = await stack.enter_async_context(trio.open_nursery())
    nursery: trio.Nursery = await outer.start(_host)
    return nursery


async def _host(*, task_status: trio.TaskStatus[trio.Nursery] = trio.TASK_STATUS_IGNORED) -> None:
    async with trio.open_nursery() as nursery:
        task_status.started(nursery)
        await trio.sleep_forever()
