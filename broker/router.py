"""Decoded requests of the broker listener: answered from the metadata image or forwarded.

The listener serves ApiVersions, Metadata, DescribeCluster, DescribeConfigs
(``broker.api.configs``) and pykraft's PykraftDescribeImage (the image's
offset and digest, so tests and tools can compare nodes) from this broker's
image, and forwards the admin requests in
``FORWARDED_APIS`` (CreateTopics, DeleteTopics, CreatePartitions, configs,
elections, reassignments, DescribeQuorum) to the active controller (``ControllerForwarder``),
each in its own task so a slow forward holds up nothing else; the answer
takes its place in the connection's response order. It advertises only
these, at the client listener's versions (``CLIENT_LISTENER_VERSIONS``);
anything else closes the connection, as Kafka does for a request it does
not serve (the data plane comes with its own issue). The table, KIP-511
(an ApiVersions request at a version we do not know is answered in v0 with
our table) and the ApiVersions and PykraftDescribeImage answers are the
controller listener's (``quorum.node.local_answers``). Metadata answers are
built and encoded in slices and kept per image (``broker.metadata_cache``),
so a poll about an image already answered costs a copy of its bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import trio

from broker.api.configs import describe_configs_here
from broker.forwarding import FORWARDED_APIS, ControllerForwarder
from broker.metadata_answers import ListenerView, describe_cluster_response
from broker.metadata_cache import MetadataAnswerCache
from quorum.controller.image import MetadataImage
from quorum.controller.results import ControllerConfig
from quorum.node.connection import ResponseSlot, ServerConnection
from quorum.node.local_answers import ListenerApis, ListenerRouter
from quorum.node.router import RequestRejected
from quorum.wire.apis import CLIENT_LISTENER_VERSIONS, CONTROLLER_LISTENER_VERSIONS
from quorum.wire.messages import DescribeClusterRequest, DescribeConfigsRequest, MetadataRequest
from quorum.wire.messages.pykraft_describe_image import PYKRAFT_DESCRIBE_IMAGE_KEY
from quorum.wire.protocol import API_VERSIONS_KEY, RequestHeader

__all__ = ["BROKER_LISTENER_APIS", "BrokerRequestRejected", "BrokerRouter", "broker_listener_table"]

_METADATA_KEY: Final = 3
_DESCRIBE_CLUSTER_KEY: Final = 60
_DESCRIBE_CONFIGS_KEY: Final = 32
BROKER_LISTENER_APIS: Final = frozenset(
    {API_VERSIONS_KEY, _METADATA_KEY, _DESCRIBE_CLUSTER_KEY, _DESCRIBE_CONFIGS_KEY}
    | FORWARDED_APIS
)


class BrokerRequestRejected(RequestRejected):
    """A request this listener does not serve: the connection is closed."""


def broker_listener_table() -> dict[int, tuple[int, int]]:
    """What the broker listener advertises: the versions it decodes and serves."""
    table = {k: v for k, v in CLIENT_LISTENER_VERSIONS.items() if k in BROKER_LISTENER_APIS}
    for key in FORWARDED_APIS:
        # forwarded at the client's version: the controller must serve it too
        low, high = CONTROLLER_LISTENER_VERSIONS[key]
        assert low <= table[key][0] and table[key][1] <= high, (key, table[key], (low, high))
    table[PYKRAFT_DESCRIBE_IMAGE_KEY] = (0, 0)
    return table


class BrokerRouter(ListenerRouter):
    def __init__(
        self,
        *,
        view: ListenerView,
        image: Callable[[], MetadataImage],
        forwarder: ControllerForwarder | None = None,
        nursery: trio.Nursery | None = None,
        static_configs: ControllerConfig | None = None,
    ) -> None:
        super().__init__(
            ListenerApis(
                broker_listener_table(),
                where=f"the broker listener {view.listener_name}",
                rejected=BrokerRequestRejected,
            )
        )
        assert (forwarder is None) == (nursery is None), "a forwarder needs a nursery"
        self._view = view
        self._image = image
        self._forwarder = forwarder
        self._nursery = nursery
        self._static_configs = static_configs or ControllerConfig(
            node_id=view.node_id, cluster_id=view.cluster_id
        )
        self.metadata_answers = MetadataAnswerCache()

    async def route(self, conn: ServerConnection, header: RequestHeader, message: Any) -> None:
        slot = conn.new_slot(header)
        if header.api_key in FORWARDED_APIS:
            if self._forwarder is None or self._nursery is None:
                raise BrokerRequestRejected(
                    f"api key {header.api_key}: this broker forwards no admin requests"
                )
            self._nursery.start_soon(self._forward, slot, header.api_version, message)
            return
        slot.complete(await self.answer(header.api_version, message))

    async def _forward(self, slot: ResponseSlot, version: int, message: Any) -> None:
        assert self._forwarder is not None
        slot.complete(await self._forwarder.forward(message, version))

    async def answer(self, version: int, message: Any) -> Any:
        """The response (or its ``EncodedBody``) to one decoded request answered from the image."""
        common = await self.apis.answer_common(message, node_id=self._view.node_id, image=self._image)
        if common is not None:
            return common
        image = self._image()
        if isinstance(message, MetadataRequest):
            return await self.metadata_answers.encoded_response(
                image, message, version, self._view
            )
        if isinstance(message, DescribeConfigsRequest):
            return describe_configs_here(image, message, version, self._static_configs)
        assert isinstance(message, DescribeClusterRequest), message
        return describe_cluster_response(image, message, version, self._view)
