"""Decoded requests of the broker listener, answered from the metadata image.

For now (the data plane comes with its own issue) the listener serves
ApiVersions, Metadata, DescribeCluster and pykraft's PykraftDescribeImage
(the image's offset and digest, so tests and tools can compare nodes), and
advertises only those: the client listener's versions
(``CLIENT_LISTENER_VERSIONS``) for the Kafka APIs. Anything else closes the
connection, as Kafka does for a request it does not serve. The table,
KIP-511 (an ApiVersions request at a version we do not know is answered in
v0 with our table) and the ApiVersions and PykraftDescribeImage answers are
the controller listener's (``quorum.node.local_answers``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from broker.metadata_answers import ListenerView, describe_cluster_response, metadata_response
from quorum.controller.image import MetadataImage
from quorum.node.connection import ServerConnection
from quorum.node.local_answers import ListenerApis, ListenerRouter
from quorum.node.router import RequestRejected
from quorum.wire.apis import CLIENT_LISTENER_VERSIONS
from quorum.wire.messages import DescribeClusterRequest, MetadataRequest
from quorum.wire.messages.pykraft_describe_image import PYKRAFT_DESCRIBE_IMAGE_KEY
from quorum.wire.protocol import API_VERSIONS_KEY, RequestHeader

__all__ = ["BROKER_LISTENER_APIS", "BrokerRequestRejected", "BrokerRouter", "broker_listener_table"]

_METADATA_KEY: Final = 3
_DESCRIBE_CLUSTER_KEY: Final = 60
BROKER_LISTENER_APIS: Final = frozenset({API_VERSIONS_KEY, _METADATA_KEY, _DESCRIBE_CLUSTER_KEY})


class BrokerRequestRejected(RequestRejected):
    """A request this listener does not serve: the connection is closed."""


def broker_listener_table() -> dict[int, tuple[int, int]]:
    """What the broker listener advertises: the versions it decodes and serves."""
    table = {k: v for k, v in CLIENT_LISTENER_VERSIONS.items() if k in BROKER_LISTENER_APIS}
    table[PYKRAFT_DESCRIBE_IMAGE_KEY] = (0, 0)
    return table


class BrokerRouter(ListenerRouter):
    def __init__(self, *, view: ListenerView, image: Callable[[], MetadataImage]) -> None:
        super().__init__(
            ListenerApis(
                broker_listener_table(),
                where=f"the broker listener {view.listener_name}",
                rejected=BrokerRequestRejected,
            )
        )
        self._view = view
        self._image = image

    async def route(self, conn: ServerConnection, header: RequestHeader, message: Any) -> None:
        conn.new_slot(header).complete(self.answer(header.api_version, message))

    def answer(self, version: int, message: Any) -> Any:
        """The response to one decoded request this listener serves."""
        common = self.apis.answer_common(message, node_id=self._view.node_id, image=self._image)
        if common is not None:
            return common
        image = self._image()
        if isinstance(message, MetadataRequest):
            return metadata_response(image, message, version, self._view)
        assert isinstance(message, DescribeClusterRequest), message
        return describe_cluster_response(image, message, version, self._view)
