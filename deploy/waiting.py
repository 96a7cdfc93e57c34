"""``wait_until``: poll a condition of a running system until it holds or a deadline passes.

Tests and tools never sleep for a fixed time in place of a condition; they
poll with a deadline, and on timeout say what they waited for and show
whatever helps to see why (the nodes' log tails, say).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final, TypeVar

from deploy.layout import LaunchError

__all__ = ["POLL_INTERVAL_S", "wait_until"]

T = TypeVar("T")

POLL_INTERVAL_S: Final = 0.05


def wait_until(
    condition: Callable[[], T | None],
    what: str,
    timeout: float,
    *,
    details: Callable[[], str] = lambda: "",
    poll_s: float = POLL_INTERVAL_S,
) -> T:
    """Poll ``condition`` every ``poll_s`` until it returns something truthy and return
    that; LaunchError naming ``what`` (and ``details()``) after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() >= deadline:
            extra = details()
            raise LaunchError(f"timed out after {timeout}s waiting for {what}"
                              + (f"\n{extra}" if extra else ""))
        time.sleep(poll_s)
