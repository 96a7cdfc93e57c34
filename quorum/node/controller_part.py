"""The controller's part of a node: its state machine, its listener, its hand-over on stop.

``ControllerNode`` runs only this part on its Raft core; a combined node
(``process.roles=broker,controller``) runs it beside a broker on the same
core. ``controller_machine`` builds the state machine hook, ``voter_nodes``
what DescribeQuorum names, ``serve_controller_listener`` binds and serves
the controller listener and returns the address it advertises, and
``hand_over_leadership`` makes a leader resign (EndQuorumEpoch to every
voter) and waits up to ``shutdown_grace_ms`` until another voter leads.
"""

from __future__ import annotations

import logging
import random

import trio

from quorum.controller.controller import QuorumController
from quorum.node.controller_machine import ControllerMachine
from quorum.node.driver import CoreDriver
from quorum.node.inputs import Resign
from quorum.node.listener import NodeAddress, bind_listener, bound_port, serve_listener
from quorum.node.router import RequestRouter
from quorum.node.settings import NodeSettings
from quorum.wire.messages import DescribeQuorumResponseListener, DescribeQuorumResponseNode

__all__ = [
    "controller_machine",
    "hand_over_leadership",
    "serve_controller_listener",
    "voter_nodes",
]

logger = logging.getLogger(__name__)


def controller_machine(settings: NodeSettings, rng: random.Random) -> ControllerMachine:
    return ControllerMachine(
        QuorumController(settings.controller, rng=rng),
        snapshot_max_bytes=settings.snapshot_max_bytes,
        snapshot_max_interval_ms=settings.snapshot_max_interval_ms,
    )


def voter_nodes(settings: NodeSettings) -> tuple[DescribeQuorumResponseNode, ...]:
    """Every voter's controller listener, as DescribeQuorum v2 names them."""
    name = settings.listener_name
    return tuple(
        DescribeQuorumResponseNode(
            node_id=node_id,
            listeners=(DescribeQuorumResponseListener(name=name, host=host, port=port),),
        )
        for node_id, (host, port) in sorted(settings.voters.items())
    )


async def serve_controller_listener(
    nursery: trio.Nursery,
    settings: NodeSettings,
    driver: CoreDriver,
    machine: ControllerMachine,
) -> NodeAddress:
    """Bind and serve the controller listener in ``nursery``; raises NodeStartupError."""
    router = RequestRouter(
        settings=settings,
        leader_id=lambda: driver.leader.leader_id,
        submit=driver.submit,
        image=lambda: machine.controller.committed,
        notify=driver.submit_nowait,
    )
    listeners = await bind_listener(settings.listener_name, settings.bind_host, settings.bind_port)
    await serve_listener(nursery, listeners, router, max_frame_bytes=settings.max_request_bytes)
    advertised_port = settings.advertised_port or bound_port(listeners)
    return NodeAddress(settings.listener_name, settings.advertised_host, advertised_port)


async def hand_over_leadership(driver: CoreDriver, shutdown_grace_ms: int) -> None:
    """A leader resigns and waits (bounded) until another voter leads; others return.

    As Kafka's graceful shutdown does: staying up until the new leader announces
    itself lets this node answer its successor's pre-vote and vote, which the
    other voters may refuse while their EndQuorumEpoch is still on its way.
    """
    if driver.role != "Leader":
        return
    await driver.submit(Resign())
    with trio.move_on_after(shutdown_grace_ms / 1000):
        while not driver.handed_over:
            await driver.changed.wait()
    logger.info("handed over leadership: %s", "done" if driver.handed_over else "timed out")
