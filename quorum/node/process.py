"""Running a node as an OS process: stderr logging, signals, one ``trio.run``.

For every kind of node (a controller, a broker, a combined node): SIGTERM or
SIGINT asks the node to stop in order (a leader hands over with
EndQuorumEpoch first, a broker asks for a controlled shutdown; ``stop_text``
says which in the log); a second signal stops it at once. A node that a
launcher started (``quorum.node.lifeline``) stops in order as well when the
launcher dies, and at once if that takes longer than ``LIFELINE_GRACE_S``.
``on_ready`` is called with the address ``run`` reports once the node
serves requests, unless a stop was asked meanwhile; launchers wait for the
ready line on stdout. Every node process passes through
``serve_until_signalled``, which runs a ``LoopMonitor`` on the trio thread
for the node's ``activity``: how long the thread goes without serving I/O,
and which task held it.
"""

from __future__ import annotations

import logging
import signal
import sys
from collections.abc import Callable
from functools import partial
from typing import Protocol

import trio

from quorum.metrics import NodeActivity, monitor_loop
from quorum.node.lifeline import LIFELINE_GRACE_S, Lifeline, take_lifeline, wait_until_launcher_gone
from quorum.node.node import NodeAddress

__all__ = [
    "RunnableNode",
    "configure_logging",
    "ready_line",
    "run_node_process",
    "serve_until_signalled",
]

logger = logging.getLogger(__name__)


def configure_logging(node_id: int, level: str = "INFO") -> None:
    """Log lines on stderr, each naming the node (unless the host program,
    e.g. a test runner, configured logging already)."""
    logging.basicConfig(
        stream=sys.stderr,
        level=level.upper(),
        format=f"%(asctime)s [node {node_id}] %(levelname)s %(name)s: %(message)s",
    )


class RunnableNode(Protocol):
    @property
    def stopping(self) -> bool: ...

    @property
    def activity(self) -> NodeActivity:
        """What the process's trio thread spends its time on (its loop monitor feeds it)."""
        ...

    def stop(self) -> None:
        """Ask for an orderly stop (safe from any task, more than once)."""
        ...

    async def run(self, *, task_status: trio.TaskStatus[NodeAddress] = ...) -> None: ...


def ready_line(node_id: int, address: NodeAddress, *, kind: str = "node") -> str:
    """What a launcher waits for on stdout (``kind``: node for a controller, or broker)."""
    return f"pykraft {kind} {node_id} ready: {address}"


async def serve_until_signalled(
    node: RunnableNode,
    on_ready: Callable[[NodeAddress], None],
    *,
    stop_text: str = "shutting down",
    lifeline: Lifeline | None,
) -> None:
    """Run ``node`` until it stops; ``lifeline`` (``take_lifeline()``, None when no
    launcher started this process) is watched for the launcher's end."""
    with (
        monitor_loop(node.activity),
        trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals,
    ):
        async with trio.open_nursery() as nursery:

            async def run_then_stop_watching(
                task_status: trio.TaskStatus[NodeAddress] = trio.TASK_STATUS_IGNORED,
            ) -> None:
                await node.run(task_status=task_status)
                nursery.cancel_scope.cancel()

            async def watch() -> None:
                # a second *signal*, not a signal while stopping: the parent-death
                # signal follows a lifeline stop and must not cut it short
                signalled = False
                async for signum in signals:
                    if signalled:
                        logger.warning("second signal: stopping at once")
                        nursery.cancel_scope.cancel()
                        return
                    signalled = True
                    logger.info("%s: %s", signal.Signals(signum).name, stop_text)
                    node.stop()

            nursery.start_soon(watch)
            if lifeline is not None:
                nursery.start_soon(_stop_when_launcher_gone, node, lifeline, stop_text,
                                   nursery.cancel_scope)
            address = await nursery.start(run_then_stop_watching)
            if not node.stopping:
                on_ready(address)


async def _stop_when_launcher_gone(node: RunnableNode, lifeline: Lifeline, stop_text: str,
                                   serving: trio.CancelScope) -> None:
    await wait_until_launcher_gone(lifeline.fd)
    logger.warning("launcher gone (lifeline pipe closed): %s, at most %.0f s",
                   stop_text, LIFELINE_GRACE_S)
    node.stop()
    await trio.sleep(LIFELINE_GRACE_S)
    logger.warning("still running %.0f s after the launcher went: stopping at once",
                   LIFELINE_GRACE_S)
    serving.cancel()


def run_node_process(
    node: RunnableNode,
    on_ready: Callable[[NodeAddress], None],
    *,
    stop_text: str = "shutting down",
) -> None:
    """``trio.run`` the node until a signal (or its launcher's end); a start-up failure
    raises as itself."""
    lifeline = take_lifeline()
    try:
        trio.run(partial(serve_until_signalled, node, on_ready, stop_text=stop_text,
                         lifeline=lifeline))
    except BaseExceptionGroup as group:
        raise _single(group) from None


def _single(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one exception inside nested groups (trio wraps errors of nursery tasks)."""
    inner: BaseException = group
    while isinstance(inner, BaseExceptionGroup) and len(inner.exceptions) == 1:
        inner = inner.exceptions[0]
    return inner
