"""``LifecycleLoop``: the trio task that carries ``BrokerLifecycle``'s requests.

One task, one request in flight, sent through the lifecycle lane of the
broker's controller channel to the controller the lifecycle picked (a
different pick reconnects). Each request is bounded by the lifecycle's
timeout for its kind (a heartbeat at most half the session timeout, a
registration ``controller.socket.timeout.ms``), and a wait ends early when
the quorum's leader, as the broker's observer core knows it, moves to
another node (the request goes to the new leader at once); a timeout or a
broken connection is reported as a failure and the connection is dropped. Between requests the task sleeps until the lifecycle's next
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
from broker.lifecycle import BrokerLifecycle, BrokerState, LifecycleResponse, Outgoing
from broker.lifecycle_times import LifecycleTimes
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
        self.times = LifecycleTimes()  # how long its requests waited for their answers
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
        timeout_ms = self.lifecycle.config.timeout_ms_for(out.request)
        kind = type(out.request).__name__.removesuffix("Request")
        sent_s = trio.current_time()
        outcome: list[LifecycleResponse | ClientError] = []
        with trio.move_on_after(timeout_ms / 1000) as waited:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._send, out, outcome, nursery.cancel_scope)
                await self._until_leader_moves(out.destination)
                nursery.cancel_scope.cancel()
        now_s = trio.current_time()
        if waited.cancelled_caught:
            self.times.unanswered(kind, "timeout")
            self._failed(f"no answer within {timeout_ms} ms", timed_out=True)
        elif not outcome:
            self.times.unanswered(kind, "leader_moved")
            self._failed(f"the quorum's leader moved to {self._leader_id()}", timed_out=True)
        elif isinstance(outcome[0], ClientError):
            self.times.unanswered(kind, "connection")
            self._failed(str(outcome[0]))
        else:
            self.times.answered(kind, (now_s - sent_s) * 1000, now_s)
            self.lifecycle.on_response(outcome[0], self._clock.now_ms(), self._leader_id())

    async def _send(
        self,
        out: Outgoing,
        outcome: list[LifecycleResponse | ClientError],
        done: trio.CancelScope,
    ) -> None:
        try:
            outcome.append(await self._channel.send_once(
                ControllerLane.LIFECYCLE, out.destination, out.request
            ))
        except ClientError as exc:
            outcome.append(exc)
        done.cancel()

    async def _until_leader_moves(self, destination: int) -> None:
        """Returns once the known leader is another node than ``destination``, if it was
        the leader when asked (checked every tenth of a heartbeat interval; the answer's
        arrival cancels this wait)."""
        interval_s = max(0.01, self.lifecycle.config.heartbeat_interval_ms / 10_000)
        if self._leader_id() != destination:
            await trio.sleep_forever()
        while True:
            await trio.sleep(interval_s)
            leader = self._leader_id()
            if leader is not None and leader != destination:
                return

    def _failed(self, reason: str, *, timed_out: bool = False) -> None:
        self.lifecycle.on_failure(
            self._clock.now_ms(), reason, self._leader_id(), timed_out=timed_out
        )

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
