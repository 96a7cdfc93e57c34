"""PykraftDescribeImage (10001): a private API that describes a node's metadata image.

Not a Kafka API: the key lies outside Kafka's range. A node answers with the
provenance of its committed image (the end offset and epoch of the records
folded in), the image's digest, and when asked a JSON dump of the image, so
tests and operators can check that every node that replayed the same records
holds the same state without reading its files.
"""

from __future__ import annotations

from typing import Final

import attrs

from quorum.wire.api_keys import ApiKey
from quorum.wire.apis import ApiSpec, register_api
from quorum.wire.schema import BOOL, INT16, INT32, INT64, STRING, field, message

__all__ = [
    "PYKRAFT_DESCRIBE_IMAGE_KEY",
    "PykraftDescribeImageRequest",
    "PykraftDescribeImageResponse",
]

PYKRAFT_DESCRIBE_IMAGE_KEY: Final = ApiKey.PYKRAFT_DESCRIBE_IMAGE


@message(api_key=PYKRAFT_DESCRIBE_IMAGE_KEY, versions=(0, 0), flexible="0+")
@attrs.frozen(kw_only=True)
class PykraftDescribeImageRequest:
    # the JSON dump can be large: only sent when asked for
    include_image: bool = field(BOOL, default=False)


@message(api_key=PYKRAFT_DESCRIBE_IMAGE_KEY, versions=(0, 0), flexible="0+")
@attrs.frozen(kw_only=True)
class PykraftDescribeImageResponse:
    error_code: int = field(INT16, default=0)
    node_id: int = field(INT32, default=-1)
    # the committed image's provenance: end offset (exclusive) and epoch of its last record
    offset: int = field(INT64, default=-1)
    epoch: int = field(INT32, default=-1)
    # hex sha256 of the image's canonical records (quorum.controller.digest)
    digest: str = field(STRING, default="")
    image_json: str | None = field(STRING, nullable="0+", default=None)
    # partitions without a leader (no eligible replica; Kafka's OfflinePartitionsCount)
    offline_partition_count: int = field(INT32, default=0)


register_api(
    ApiSpec(
        key=PYKRAFT_DESCRIBE_IMAGE_KEY,
        name="PykraftDescribeImage",
        request=PykraftDescribeImageRequest,
        response=PykraftDescribeImageResponse,
        low=0,
        high=0,
    )
)
