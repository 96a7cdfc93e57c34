"""Running a broker as an OS process: stderr logging, signals, one ``trio.run``.

The same shape as ``quorum.node.process`` for controllers. SIGTERM or SIGINT
asks the broker for a controlled shutdown (the controller moves its
leaderships away first); a second signal stops it at once. ``on_ready`` is
called with the broker listener's address once the broker is unfenced and
serves clients; launchers wait for ``ready_line`` on stdout.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable

import trio

from broker.node import BrokerNode
from quorum.node import NodeAddress
from quorum.node.process import configure_logging

__all__ = ["configure_logging", "ready_line", "run_broker_process", "serve_until_signalled"]

logger = logging.getLogger(__name__)


def ready_line(node_id: int, address: NodeAddress) -> str:
    """What a launcher waits for on stdout."""
    return f"pykraft broker {node_id} ready: {address}"


async def serve_until_signalled(
    node: BrokerNode, on_ready: Callable[[NodeAddress], None]
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
                    logger.info("%s: controlled shutdown", signal.Signals(signum).name)
                    node.stop()

            nursery.start_soon(watch)
            address = await nursery.start(run_then_stop_watching)
            if not node.stopping:
                on_ready(address)


def run_broker_process(node: BrokerNode, on_ready: Callable[[NodeAddress], None]) -> None:
    """``trio.run`` the broker until a signal; a start-up failure raises as itself."""
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
