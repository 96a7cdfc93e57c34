"""Decoded requests of the broker listener, answered from the metadata image.

For now (the data plane comes with its own issue) the listener serves
ApiVersions, Metadata, DescribeCluster and pykraft's PykraftDescribeImage
(the image's offset and digest, so tests and tools can compare nodes), and
advertises only those: the client listener's versions
(``CLIENT_LISTENER_VERSIONS``) for the Kafka APIs. Anything else closes the
connection, as Kafka does for a request it does not serve. An ApiVersions
request at a version we do not know is answered in v0 with our table
(KIP-511).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from broker.metadata_answers import ListenerView, describe_cluster_response, metadata_response
from quorum.controller.digest import build_describe_image_response
from quorum.controller.image import MetadataImage
from quorum.node.connection import ServerConnection
from quorum.wire.apis import CLIENT_LISTENER_VERSIONS
from quorum.wire.error_codes import Errors
from quorum.wire.errors import WireDecodeError
from quorum.wire.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    ApiVersionsResponseApiVersion,
    DescribeClusterRequest,
    MetadataRequest,
    PykraftDescribeImageRequest,
)
from quorum.wire.messages.pykraft_describe_image import PYKRAFT_DESCRIBE_IMAGE_KEY
from quorum.wire.protocol import API_VERSIONS_KEY, UnsupportedRequestError, decode_request

__all__ = ["BROKER_LISTENER_APIS", "BrokerRequestRejected", "BrokerRouter", "broker_listener_table"]

_METADATA_KEY: Final = 3
_DESCRIBE_CLUSTER_KEY: Final = 60
BROKER_LISTENER_APIS: Final = frozenset({API_VERSIONS_KEY, _METADATA_KEY, _DESCRIBE_CLUSTER_KEY})


class BrokerRequestRejected(WireDecodeError):
    """A request this listener does not serve: the connection is closed."""


def broker_listener_table() -> dict[int, tuple[int, int]]:
    """What the broker listener advertises: the versions it decodes and serves."""
    table = {k: v for k, v in CLIENT_LISTENER_VERSIONS.items() if k in BROKER_LISTENER_APIS}
    table[PYKRAFT_DESCRIBE_IMAGE_KEY] = (0, 0)
    return table


class BrokerRouter:
    def __init__(self, *, view: ListenerView, image: Callable[[], MetadataImage]) -> None:
        self._view = view
        self._image = image
        self.table = broker_listener_table()
        self._api_versions = tuple(
            ApiVersionsResponseApiVersion(api_key=k, min_version=lo, max_version=hi)
            for k, (lo, hi) in sorted(self.table.items())
        )

    async def dispatch(self, conn: ServerConnection, frame: bytes | memoryview) -> None:
        """Answer one request frame; raises WireDecodeError to close the connection."""
        try:
            header, message = decode_request(frame)
        except UnsupportedRequestError as exc:
            if exc.header.api_key != API_VERSIONS_KEY:
                raise
            slot = conn.new_slot(exc.header)
            slot.version = 0
            slot.complete(
                ApiVersionsResponse(
                    error_code=Errors.UNSUPPORTED_VERSION, api_keys=self._api_versions
                )
            )
            return
        low_high = self.table.get(header.api_key)
        if low_high is None or not low_high[0] <= header.api_version <= low_high[1]:
            raise BrokerRequestRejected(
                f"api key {header.api_key} v{header.api_version} is not served on the "
                f"broker listener {self._view.listener_name}"
            )
        conn.new_slot(header).complete(self.answer(header.api_version, message))

    def answer(self, version: int, message: Any) -> Any:
        """The response to one decoded request this listener serves."""
        image = self._image()
        if isinstance(message, ApiVersionsRequest):
            return ApiVersionsResponse(api_keys=self._api_versions)
        if isinstance(message, MetadataRequest):
            return metadata_response(image, message, version, self._view)
        if isinstance(message, DescribeClusterRequest):
            return describe_cluster_response(image, message, version, self._view)
        assert isinstance(message, PykraftDescribeImageRequest), message
        return build_describe_image_response(
            image, node_id=self._view.node_id, include_image=message.include_image
        )
