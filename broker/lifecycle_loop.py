"""``LifecycleLoop``: the trio task that carries ``BrokerLifecycle``'s requests.

One task, one request in flight, sent through the lifecycle lane of the
broker's controller channel to the controller the lifecycle picked (a
different pick reconnects). Each request is bounded
by the lifecycle's request timeout (at most half the session timeout); a
timeout or a broken connection is reported as a failure and the connection
is dropped. Between requests the task sleeps until the lifecycle's next
deadline, or until ``notify`` (a new metadata image) or ``begin_shutdown``
wakes it. ``run`` returns once the broker may stop (controlled shutdown
done or timed out) and raises ``BrokerStartupError`` when the broker must
exit (no registration in time, or refused by the cluster).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import trio

from broker.controller_channel import BrokerControllerChannel, ControllerLane
from broker.errors import BrokerStartupError
from broker.lifecycle import BrokerLifecycle, BrokerState, Outgoing
from quorum.client import ClientError
from quorum.node.driver import NodeClock

__all__ = ["LifecycleLoop"]

logger = logging.getLogger(__name__)


class LifecycleLoop:
    def __init__(
        self,
        lifecycle: BrokerLifecycle,
        *,
        channel: BrokerControllerChannel,
        leader_id: Callable[[], int | None],
        image_offset: Callable[[], int],
        clock: NodeClock,
    ) -> None:
        self.lifecycle = lifecycle
        self._channel = channel
        self._leader_id = leader_id
        self._image_offset = image_offset
        self._clock = clock
        self._wake = trio.Event()
        self._shutdown_asked = False
        self._reported: tuple[BrokerState, int, str | None] | None = None
        self.running = trio.Event()  # set once the broker was first unfenced
        self.state_changed = trio.Event()  # set (and replaced) when the state moves

    @property
    def state(self) -> BrokerState:
        return self.lifecycle.state

    def notify(self) -> None:
        """Something the lifecycle reads changed (the image): look again."""
        self._wake.set()

    def begin_shutdown(self) -> None:
        self._shutdown_asked = True
        self._wake.set()

    async def run(self) -> None:
        while await self._step():
            pass

    async def _step(self) -> bool:
        """One turn: timers, then a request or a sleep. False once the broker may stop."""
        lifecycle = self.lifecycle
        # a fresh event before anything is read: a notification from here on is kept
        self._wake = trio.Event()
        now = self._clock.now_ms()
        if self._shutdown_asked and lifecycle.state in (
            BrokerState.STARTING, BrokerState.RECOVERY, BrokerState.RUNNING
        ):
            lifecycle.begin_shutdown(now)
        lifecycle.poll(now)
        lifecycle.metadata_advanced(self._image_offset(), now)
        self._report()
        if lifecycle.failure is not None:
            raise BrokerStartupError(lifecycle.failure)
        if lifecycle.done:
            return False
        out = lifecycle.next_request(now, self._image_offset(), self._leader_id())
        if out is not None:
            await self._exchange(out)
            return True
        with trio.move_on_at(self._clock.trio_time(lifecycle.next_deadline_ms())):
            await self._wake.wait()
        return True

    async def _exchange(self, out: Outgoing) -> None:
        timeout_ms = self.lifecycle.config.effective_request_timeout_ms
        try:
            with trio.fail_after(timeout_ms / 1000):
                response = await self._channel.send_once(
                    ControllerLane.LIFECYCLE, out.destination, out.request
                )
        except trio.TooSlowError:
            self._failed(f"no answer within {timeout_ms} ms")
        except ClientError as exc:
            self._failed(str(exc))
        else:
            self.lifecycle.on_response(response, self._clock.now_ms(), self._leader_id())

    def _failed(self, reason: str) -> None:
        self.lifecycle.on_failure(self._clock.now_ms(), reason, self._leader_id())

    def _report(self) -> None:
        """Log what changed since the last turn, and wake whoever waits on the state."""
        lifecycle = self.lifecycle
        now = (lifecycle.state, lifecycle.broker_epoch, lifecycle.last_error)
        if now == self._reported:
            return
        before, self._reported = self._reported, now
        broker_id = lifecycle.config.broker_id
        if before is None or before[:2] != now[:2]:
            logger.info(
                "broker %d %s (broker epoch %d)", broker_id, lifecycle.state.name,
                lifecycle.broker_epoch,
            )
            self.state_changed.set()
            self.state_changed = trio.Event()
        if lifecycle.last_error is not None and (before is None or before[2] != now[2]):
            logger.info("broker %d: %s; retrying", broker_id, lifecycle.last_error)
        if lifecycle.state is BrokerState.RUNNING:
            self.running.set()
        if lifecycle.shutdown_timed_out:
            logger.warning("broker %d: controlled shutdown timed out; stopping", broker_id)
