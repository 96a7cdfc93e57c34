"""A broker whose process ends (its sockets closed, as a kill -9's kernel closes them) is
fenced by the active controller two heartbeat intervals later, not after its whole session:
the session here is 60 s and the test's deadline 15 s, so only the closed connections can
explain the fence. A broker that stays connected but silent is left to its session
(tests/unit/controller/test_cluster_control.py)."""

from __future__ import annotations

from pathlib import Path

import trio

from broker import BrokerNode
from quorum.controller.image import MetadataImage

from ..node.nodes import controller_image_until, wait_for_leader
from .test_broker_node import BROKER_ID, DEADLINE_S, controller_and_broker_config, unfenced

LONG_SESSION = {"broker.heartbeat.interval.ms": "200", "broker.session.timeout.ms": "60000"}


def fenced(image: MetadataImage) -> bool:
    broker = image.broker(BROKER_ID)
    return broker is not None and broker.fenced


async def test_a_broker_whose_connections_close_is_fenced_before_its_session_ends(
    tmp_path: Path,
) -> None:
    controller, config = controller_and_broker_config(tmp_path, liveness=LONG_SESSION)
    with trio.fail_after(DEADLINE_S):
        async with trio.open_nursery() as nursery:
            await nursery.start(controller.run)
            await wait_for_leader([controller])
            async with trio.open_nursery() as brokers:
                broker = BrokerNode.from_config(config, seed=2)
                await brokers.start(broker.run)
                await controller_image_until(controller, unfenced(BROKER_ID))
                # gone without a controlled shutdown: its tasks end, its sockets close
                brokers.cancel_scope.cancel()
            image = await controller_image_until(controller, fenced)
            assert image.broker(BROKER_ID) is not None
            controller.stop()
