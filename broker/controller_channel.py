"""``BrokerControllerChannel``: the one way a broker reaches the active controller.

In KRaft the active controller is the metadata quorum's leader, and a broker
already knows who that is: its observer core follows the leader's log. So
the channel sends to ``leader_id()`` at the voter's address, and a change of
leader is just a different destination on the next attempt; there is no
discovery round (DescribeCluster) as an outside admin client needs.

Every request a broker sends to the controller goes through it, in one of
four lanes, each with its own connections:

* ``LIFECYCLE``: registration, heartbeats, controlled shutdown. One
  connection; the lifecycle picks the destination and retries by itself.
* ``FORWARDING``: clients' admin requests (CreateTopics and the like).
  Up to ``forwarding_connections`` at once, one request each.
* ``ALTER_PARTITION``: ISR changes from the replica manager. One connection.
* ``PRODUCER_IDS``: AllocateProducerIds, a block of ids for InitProducerId.
  One connection.

Lanes are separate connections because the controller answers a
connection's requests in order: a CreateTopics of a million partitions
takes the controller seconds, and a heartbeat queued behind it on the same
connection would miss the session timeout and fence the broker. Kafka's
broker has a channel manager per purpose for the same reason
(``NodeToControllerChannelManager`` with one request in flight each).
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable, Mapping
from typing import Any, Final

import attrs
import trio

from quorum.client import ClientError, TrioKafkaConnection
from quorum.controller_client import ControllerUnavailableError, error_codes_in
from quorum.wire.error_codes import Errors

__all__ = ["BrokerControllerChannel", "ControllerLane", "ControllerUnavailableError"]

logger = logging.getLogger(__name__)

NOT_CONTROLLER: Final = frozenset({Errors.NOT_CONTROLLER})


class ControllerLane(enum.Enum):
    LIFECYCLE = "lifecycle"
    FORWARDING = "forwarding"
    ALTER_PARTITION = "alter-partition"
    PRODUCER_IDS = "producer-ids"


@attrs.define
class _Lane:
    slots: trio.Semaphore
    # open connections no request is using, with the voter each one reaches
    idle: list[tuple[int, TrioKafkaConnection]] = attrs.field(factory=list)


class BrokerControllerChannel:
    def __init__(
        self,
        voters: Mapping[int, tuple[str, int]],
        *,
        leader_id: Callable[[], int | None],
        client_id: str,
        retry_backoff_ms: int = 20,
        forwarding_connections: int = 16,
    ) -> None:
        self._voters = dict(voters)
        self._leader_id = leader_id
        self._client_id = client_id
        self._retry_backoff_ms = retry_backoff_ms
        self._lanes = {
            ControllerLane.LIFECYCLE: _Lane(trio.Semaphore(1)),
            ControllerLane.FORWARDING: _Lane(trio.Semaphore(forwarding_connections)),
            ControllerLane.ALTER_PARTITION: _Lane(trio.Semaphore(1)),
            ControllerLane.PRODUCER_IDS: _Lane(trio.Semaphore(1)),
        }
        self._closed = False

    @property
    def active_controller(self) -> int | None:
        """The voter requests go to now (None while the quorum has no known leader)."""
        leader = self._leader_id()
        return leader if leader in self._voters else None

    async def send_once(self, lane: ControllerLane, destination: int, request: Any) -> Any:
        """One attempt at ``destination``; raises ClientError (the connection is dropped).

        For a caller that chooses where to send and how to retry (the
        lifecycle). Bound it with a cancel scope; a cancelled attempt drops
        its connection too, since a late answer could still arrive on it.
        """
        state = self._lanes[lane]
        async with state.slots:
            conn = await self._take(state, destination)
            response = await self._attempt(state, destination, conn, request, None)
        return response

    async def call(
        self,
        request: Any,
        *,
        lane: ControllerLane,
        timeout_ms: int,
        version: int | None = None,
        moved: frozenset[int] = NOT_CONTROLLER,
    ) -> Any:
        """The active controller's answer within ``timeout_ms``; raises ControllerUnavailableError.

        An answer carrying an error code in ``moved`` means the leadership
        moved on: it is sent again, to whoever leads by then, after a backoff.
        One attempt may use the whole budget: cutting it short and resending
        a change the controller is still committing would report, say,
        TOPIC_ALREADY_EXISTS for a creation that worked.
        """
        state = self._lanes[lane]
        problem = "no attempt finished"
        with trio.move_on_after(timeout_ms / 1000):
            async with state.slots:
                while True:
                    destination = self.active_controller
                    if destination is None:
                        problem = "the metadata quorum has no known leader"
                    else:
                        try:
                            conn = await self._take(state, destination)
                            response = await self._attempt(
                                state, destination, conn, request, version
                            )
                        except ClientError as exc:
                            problem = f"node {destination}: {exc}"
                        else:
                            if moved.isdisjoint(error_codes_in(response)):
                                return response
                            problem = f"node {destination} is no longer the active controller"
                    await trio.sleep(self._retry_backoff_ms / 1000)
        raise ControllerUnavailableError(
            f"no active controller answered {type(request).__name__} within "
            f"{timeout_ms} ms (last problem: {problem})"
        )

    async def aclose(self) -> None:
        self._closed = True
        for state in self._lanes.values():
            idle, state.idle = state.idle, []
            for _, conn in idle:
                await conn.aclose()

    # -- internals -----------------------------------------------------------------------

    async def _take(self, state: _Lane, destination: int) -> TrioKafkaConnection:
        """An idle connection to ``destination``, or a new one (others are closed)."""
        for i, (to, conn) in enumerate(state.idle):
            if to == destination and not conn.is_closed:
                del state.idle[i]
                return conn
        stale = [conn for to, conn in state.idle if to != destination or conn.is_closed]
        state.idle = [(to, c) for to, c in state.idle if to == destination and not c.is_closed]
        for conn in stale:
            await conn.aclose()
        host, port = self._voters[destination]
        return await TrioKafkaConnection.connect(host, port, client_id=self._client_id)

    async def _attempt(
        self,
        state: _Lane,
        destination: int,
        conn: TrioKafkaConnection,
        request: Any,
        version: int | None,
    ) -> Any:
        try:
            response = await conn.request(request, version=version)
        except BaseException:
            # broken, or cancelled while its answer may still come: not reusable
            with trio.CancelScope(shield=True):
                await conn.aclose()
            raise
        if self._closed:
            await conn.aclose()
        else:
            state.idle.append((destination, conn))
        return response
