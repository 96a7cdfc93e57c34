"""Decoded requests of the controller listener: answered here or sent to the core.

ApiVersions, PykraftDescribeImage (``quorum.node.local_answers``, shared with
the broker listener) and DescribeCluster are answered at once from what the
node knows; the Raft RPCs (Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch,
DescribeQuorum) go to the task that owns the Raft core, PykraftAppend as an
``Append``, the metadata requests (CreateTopics, BrokerRegistration, ...) as
a ``ControllerCall`` for the controller state machine in that task. The
listener advertises only what it serves: the intersection of
``CONTROLLER_LISTENER_VERSIONS`` with this table. A request for anything
else closes the connection, as Kafka does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final

from quorum.controller.image import EMPTY_IMAGE, MetadataImage
from quorum.node.connection import ResponseSlot, ServerConnection
from quorum.node.inputs import (
    Append,
    AppendOutcome,
    BrokerConnectionLost,
    ControllerCall,
    Input,
    append_problem,
)
from quorum.node.local_answers import ListenerApis, ListenerRouter
from quorum.node.settings import NodeSettings
from quorum.raft import InboundRequest
from quorum.wire.apis import CONTROLLER_LISTENER_VERSIONS
from quorum.wire.error_codes import Errors
from quorum.wire.errors import WireDecodeError
from quorum.wire.messages import (
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeClusterResponseBroker,
    PykraftAppendRequest,
    PykraftAppendResponse,
)
from quorum.wire.messages.pykraft_append import PYKRAFT_APPEND_KEY
from quorum.wire.messages.pykraft_describe_image import PYKRAFT_DESCRIBE_IMAGE_KEY
from quorum.wire.protocol import API_VERSIONS_KEY, RequestHeader

__all__ = [
    "CONTROLLER_APIS",
    "RequestRejected",
    "RequestRouter",
    "controller_listener_table",
]

_CORE_APIS: Final = frozenset({1, 52, 53, 54, 55, 59})  # Fetch, Vote, BQE, EQE, DQ, FetchSnapshot
# ApiVersions, DescribeCluster, PykraftDescribeImage
_LOCAL_APIS: Final = frozenset({API_VERSIONS_KEY, 60, PYKRAFT_DESCRIBE_IMAGE_KEY})
# the requests the active controller turns into metadata records (or reads)
CONTROLLER_APIS: Final = frozenset({19, 20, 32, 37, 43, 44, 45, 46, 56, 62, 63, 64, 67})
_SERVED: Final = _CORE_APIS | _LOCAL_APIS | {PYKRAFT_APPEND_KEY}
_BROKER_HEARTBEAT: Final = 63
_BROKER_ENDPOINT_TYPE: Final = 1
_CONTROLLER_ENDPOINT_TYPE: Final = 2


class RequestRejected(WireDecodeError):
    """A request this listener does not serve: the connection is closed."""


def controller_listener_table(*, with_controller: bool = True) -> dict[int, tuple[int, int]]:
    """What the controller listener advertises: the versions it decodes and serves."""
    served = _SERVED | CONTROLLER_APIS if with_controller else _SERVED
    return {k: v for k, v in CONTROLLER_LISTENER_VERSIONS.items() if k in served}


class SlotAppendReply:
    """Completes a PykraftAppend request's slot with the outcome."""

    __slots__ = ("slot",)

    def __init__(self, slot: ResponseSlot) -> None:
        self.slot = slot

    def finish(self, outcome: AppendOutcome) -> None:
        self.slot.complete(
            PykraftAppendResponse(
                error_code=outcome.error,
                error_message=outcome.message,
                base_offset=outcome.base_offset,
                last_offset=outcome.last_offset,
                leader_id=outcome.leader_id,
                leader_epoch=outcome.leader_epoch,
            )
        )


class RequestRouter(ListenerRouter):
    def __init__(
        self,
        *,
        settings: NodeSettings,
        leader_id: Callable[[], int | None],
        submit: Callable[[Input], Awaitable[None]],
        with_controller: bool = True,
        image: Callable[[], MetadataImage] = lambda: EMPTY_IMAGE,
        notify: Callable[[Input], None] | None = None,
    ) -> None:
        super().__init__(
            ListenerApis(
                controller_listener_table(with_controller=with_controller),
                where="the controller listener",
                rejected=RequestRejected,
            )
        )
        self._settings = settings
        self._image = image
        self._leader_id = leader_id
        self._submit = submit
        # told (without waiting) when a broker's last heartbeat connection closes
        self._notify = notify
        # broker id -> its open connections that carried its heartbeats
        self._heartbeat_connections: dict[int, set[ServerConnection]] = {}

    async def route(self, conn: ServerConnection, header: RequestHeader, message: Any) -> None:
        slot = conn.new_slot(header)
        if header.api_key in _CORE_APIS:
            await self._submit(InboundRequest(slot, message))
        elif header.api_key in CONTROLLER_APIS:
            if header.api_key == _BROKER_HEARTBEAT:
                self._track_heartbeats(conn, message.broker_id)
            await self._submit(ControllerCall(message, header.api_version, slot.complete))
        elif header.api_key == PYKRAFT_APPEND_KEY:
            await self._append(slot, message)
        else:
            slot.complete(await self._answer_locally(header.api_version, message))

    def _track_heartbeats(self, conn: ServerConnection, broker_id: int) -> None:
        """Remember that ``broker_id`` heartbeats on ``conn``; when its last such connection
        closes with nothing unanswered (a killed broker's kernel closes them), tell the
        controller. A connection closed while a request waits is most likely the broker
        giving up on a slow answer (it reconnects and asks again): not told, so a loaded
        controller never fences a live broker by it."""
        if self._notify is None:
            return
        open_ones = self._heartbeat_connections.setdefault(broker_id, set())
        if conn in open_ones:
            return
        open_ones.add(conn)

        def closed() -> None:
            open_ones.discard(conn)
            if not open_ones and self._heartbeat_connections.get(broker_id) is open_ones:
                del self._heartbeat_connections[broker_id]
                if conn.unanswered_at_close == 0:
                    assert self._notify is not None
                    self._notify(BrokerConnectionLost(broker_id))

        conn.on_close(closed)

    async def _append(self, slot: ResponseSlot, message: PykraftAppendRequest) -> None:
        reply = SlotAppendReply(slot)
        problem = append_problem(message.records)
        if problem is not None:
            reply.finish(AppendOutcome(error=problem[0], message=problem[1]))
            return
        await self._submit(Append(message.records, reply))

    async def _answer_locally(self, version: int, message: Any) -> Any:
        common = await self.apis.answer_common(
            message, node_id=self._settings.node_id, image=self._image
        )
        if common is not None:
            return common
        assert isinstance(message, DescribeClusterRequest)
        return self._describe_cluster(version, message)

    def _describe_cluster(self, version: int, request: DescribeClusterRequest) -> DescribeClusterResponse:
        # As Kafka's controller: only the controller endpoint type is served here.
        kind = request.endpoint_type
        if kind != _CONTROLLER_ENDPOINT_TYPE:
            if kind == _BROKER_ENDPOINT_TYPE:
                error = Errors.MISMATCHED_ENDPOINT_TYPE
                text = (
                    "The request was sent to an endpoint of type CONTROLLER, but we wanted "
                    "an endpoint of type BROKER"
                )
            else:
                error = Errors.UNSUPPORTED_ENDPOINT_TYPE
                text = f"Unsupported endpoint type {kind}"
            return DescribeClusterResponse(
                error_code=Errors.INVALID_REQUEST if version == 0 else error,
                error_message=text,
            )
        leader = self._leader_id()
        controllers = tuple(
            DescribeClusterResponseBroker(broker_id=node_id, host=host, port=port)
            for node_id, (host, port) in sorted(self._settings.voters.items())
        )
        return DescribeClusterResponse(
            endpoint_type=_CONTROLLER_ENDPOINT_TYPE,
            cluster_id=self._settings.cluster_id,
            controller_id=-1 if leader is None else leader,
            brokers=controllers,
        )
