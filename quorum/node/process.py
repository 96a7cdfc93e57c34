"""Running a node as an OS process: stderr logging, signals, one ``trio.run``.

SIGTERM or SIGINT asks the node to stop in order (a leader hands over with
EndQuorumEpoch first); a second signal stops it at once. ``on_ready`` is
called with the listener's address once the node serves requests.
"""

from __future__ import annotations

import logging
import signal
import sys
from collections.abc import Callable

import trio

from quorum.node.node import ControllerNode, NodeAddress

__all__ = ["configure_logging", "ready_line", "run_node_process", "serve_until_signalled"]

logger = logging.getLogger(__name__)


def configure_logging(node_id: int, level: str = "INFO") -> None:
    """Log lines on stderr, each naming the node (unless the host program,
    e.g. a test runner, configured logging already)."""
    logging.basicConfig(
        stream=sys.stderr,
        level=level.upper(),
        format=f"%(asctime)s [node {node_id}] %(levelname)s %(name)s: %(message)s",
    )


def ready_line(node_id: int, address: NodeAddress) -> str:
    """What a launcher waits for on stdout."""
    return f"pykraft node {node_id} ready: {address}"


async def serve_until_signalled(
    node: ControllerNode, on_ready: Callable[[NodeAddress], None]
) -> None:
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async with trio.open_nursery() as nursery:

            async def run_then_stop_watching(
                task_status: trio.TaskStatus[NodeAddress] = trio.TASK_STATUS_IGNORED,
            ) -> None:
                await node.run(task_status=task_status)
                nursery.cancel_scope.cancel()

            async def watch() -> None:
                async for signum in signals:
                    if node.stopping:
                        logger.warning("second signal: stopping at once")
                        nursery.cancel_scope.cancel()
                        return
                    logger.info("%s: shutting down", signal.Signals(signum).name)
                    node.stop()

            nursery.start_soon(watch)
            address = await nursery.start(run_then_stop_watching)
            on_ready(address)


def run_node_process(node: ControllerNode, on_ready: Callable[[NodeAddress], None]) -> None:
    """``trio.run`` the node until a signal; a start-up failure raises as itself."""
    try:
        trio.run(serve_until_signalled, node, on_ready)
    except BaseExceptionGroup as group:
        raise _single(group) from None


def _single(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one exception inside nested groups (trio wraps errors of nursery tasks)."""
    inner: BaseException = group
    while isinstance(inner, BaseExceptionGroup) and len(inner.exceptions) == 1:
        inner = inner.exceptions[0]
    return inner
