"""What every listener does the same way: its version table, KIP-511, and the local answers.

A listener advertises exactly the versions it decodes and serves (its
table). ``ListenerApis.decode`` turns a frame into a request this listener
serves, answers an ApiVersions request at a version we do not know in v0
with the table (KIP-511: the client then retries at a version we do know),
answers an ApiVersions v3+ whose client software name or version is empty
or ill-formed with INVALID_REQUEST and no table (Kafka's
``ApiVersionsRequest.isValid``), and raises the listener's ``rejected`` error (the connection is closed, as
Kafka does) for anything the table does not hold. ApiVersions and
PykraftDescribeImage (the image's offset and digest, so tests and tools can
compare nodes, and the image as JSON when asked) are answered the same way
on every listener; the digest and the JSON are computed in slices, once per
image.
``ListenerRouter`` is the ``Router`` both listeners build on: it decodes
with its ``ListenerApis`` and hands each served request to ``route``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from quorum.controller.digest import LatestImageSummary, build_describe_image_response
from quorum.controller.image import MetadataImage
from quorum.controller.image_cache import ImageCache
from quorum.controller.image_json import ImageJsonBuilder
from quorum.node.connection import ServerConnection
from quorum.wire.error_codes import Errors
from quorum.wire.errors import WireDecodeError
from quorum.wire.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    ApiVersionsResponseApiVersion,
    PykraftDescribeImageRequest,
)
from quorum.wire.protocol import (
    API_VERSIONS_KEY,
    RequestHeader,
    UnsupportedRequestError,
    decode_request,
)

__all__ = ["ListenerApis", "ListenerRouter", "valid_client_software"]

# Kafka's ApiVersionsRequest.SOFTWARE_NAME_VERSION_PATTERN (KIP-511)
_SOFTWARE_NAME_VERSION: Final = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")
# the first ApiVersions version that carries the client's software name and version
_CLIENT_SOFTWARE_SINCE: Final = 3


def valid_client_software(version: int, request: ApiVersionsRequest) -> bool:
    """Kafka's ``ApiVersionsRequest.isValid``: v3+ name both, each matching the pattern."""
    if version < _CLIENT_SOFTWARE_SINCE:
        return True
    return all(
        _SOFTWARE_NAME_VERSION.fullmatch(text) is not None
        for text in (request.client_software_name, request.client_software_version)
    )


class ListenerApis:
    """One listener's table of (api key -> lowest, highest version) and the answers it implies."""

    def __init__(
        self,
        table: Mapping[int, tuple[int, int]],
        *,
        where: str,
        rejected: type[WireDecodeError],
    ) -> None:
        self.table = dict(table)
        self._where = where  # "the controller listener": named when a request is refused
        self._rejected = rejected
        self._entries = tuple(
            ApiVersionsResponseApiVersion(api_key=k, min_version=lo, max_version=hi)
            for k, (lo, hi) in sorted(self.table.items())
        )
        self._summaries = LatestImageSummary.shared()
        self._image_json = ImageCache[None, str]()

    def decode(
        self, conn: ServerConnection, frame: bytes | memoryview
    ) -> tuple[RequestHeader, Any] | None:
        """The served request in ``frame``, or None once it was answered here (KIP-511).

        Raises ``rejected`` (a WireDecodeError) for a request the table does not hold.
        """
        try:
            header, message = decode_request(frame)
        except UnsupportedRequestError as exc:
            if exc.header.api_key != API_VERSIONS_KEY:
                raise
            # a version we do not know: answer in v0 with our table (KIP-511)
            slot = conn.new_slot(exc.header)
            slot.version = 0
            slot.complete(
                ApiVersionsResponse(error_code=Errors.UNSUPPORTED_VERSION, api_keys=self._entries)
            )
            return None
        low_high = self.table.get(header.api_key)
        if low_high is None or not low_high[0] <= header.api_version <= low_high[1]:
            raise self._rejected(
                f"api key {header.api_key} v{header.api_version} is not served on {self._where}"
            )
        if isinstance(message, ApiVersionsRequest) and not valid_client_software(
            header.api_version, message
        ):
            # Kafka's getErrorResponse: the table is sent only with UNSUPPORTED_VERSION
            conn.new_slot(header).complete(ApiVersionsResponse(error_code=Errors.INVALID_REQUEST))
            return None
        return header, message

    async def answer_common(
        self, message: Any, *, node_id: int, image: Callable[[], MetadataImage]
    ) -> Any | None:
        """The answer to ApiVersions or PykraftDescribeImage; None for any other request.

        The image's digest and JSON are computed in slices (the node serves meanwhile).
        """
        if isinstance(message, ApiVersionsRequest):
            return ApiVersionsResponse(api_keys=self._entries)
        if isinstance(message, PykraftDescribeImageRequest):
            current = image()
            summary = await self._summaries.of_async(current)
            text = None
            if message.include_image:
                text = await self._image_json.get_in_slices(
                    current, None, lambda: ImageJsonBuilder(current)
                )
            return build_describe_image_response(
                current, node_id=node_id, include_image=message.include_image,
                summary=summary, image_json=text,
            )
        return None


class ListenerRouter:
    """Decodes frames with ``apis``; a subclass answers or forwards what it serves in ``route``."""

    def __init__(self, apis: ListenerApis) -> None:
        self.apis = apis
        self.table = apis.table

    async def dispatch(self, conn: ServerConnection, frame: bytes | memoryview) -> None:
        """Route one request frame; raises WireDecodeError to close the connection."""
        decoded = self.apis.decode(conn, frame)
        if decoded is not None:
            header, message = decoded
            await self.route(conn, header, message)

    async def route(self, conn: ServerConnection, header: RequestHeader, message: Any) -> None:
        raise NotImplementedError
