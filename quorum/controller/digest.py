"""Image digests: one hash that two nodes compare to know they hold the same metadata.

``image_digest`` is the hex SHA-256 of the canonical records of the image
(``image_records``), each encoded as it would be written to the log and
prefixed by its length, so no two record lists share an encoding. The
provenance is left out: a controller that replayed the log and a broker that
loaded a snapshot at the same offset compare equal, and so do two images
that reach the same state by different records.

Hashing a 10,000-partition image takes tens of milliseconds, and tools and
tests ask a node about the same image many times between commits, so a
listener keeps the summary of the last image it was asked about
(``LatestImageSummary``): images are immutable, so identity is enough.
"""

from __future__ import annotations

import hashlib
import json
import struct
from typing import Final

import attrs

from quorum.controller.elections import offline_partitions
from quorum.controller.image import MetadataImage
from quorum.controller.image_json import image_to_json
from quorum.controller.snapshot import image_records
from quorum.wire.messages.pykraft_describe_image import PykraftDescribeImageResponse
from quorum.wire.metadata_serde import encode_metadata_record

__all__ = [
    "SHORT_DIGEST_CHARS",
    "ImageSummary",
    "LatestImageSummary",
    "build_describe_image_response",
    "image_digest",
    "short_digest",
]

SHORT_DIGEST_CHARS: Final = 12
_LENGTH: Final = struct.Struct(">I")


def image_digest(image: MetadataImage) -> str:
    """Hex SHA-256 over the image's canonical records (provenance excluded)."""
    hasher = hashlib.sha256()
    for record in image_records(image):
        value = encode_metadata_record(record)
        hasher.update(_LENGTH.pack(len(value)))
        hasher.update(value)
    return hasher.hexdigest()


def short_digest(digest: str) -> str:
    """The first characters of a digest, for log lines (like a short git hash)."""
    return digest[:SHORT_DIGEST_CHARS]


@attrs.frozen
class ImageSummary:
    """What a node reports of its image besides the provenance (tools, metrics)."""

    digest: str
    offline_partition_count: int
    partition_count: int = 0
    # partitions led by a replica other than the first (Kafka's preferred replica)
    preferred_imbalance_count: int = 0

    @classmethod
    def of(cls, image: MetadataImage) -> ImageSummary:
        partitions = imbalanced = 0
        for _topic, _index, partition in image.iter_partitions():
            partitions += 1
            imbalanced += partition.leader != partition.preferred_leader
        return cls(
            image_digest(image), len(offline_partitions(image)), partitions, imbalanced
        )


class LatestImageSummary:
    """The summary of the last image asked about, computed once per image."""

    def __init__(self) -> None:
        self._image: MetadataImage | None = None
        self._summary: ImageSummary | None = None

    def of(self, image: MetadataImage) -> ImageSummary:
        if self._summary is None or image is not self._image:
            self._image, self._summary = image, ImageSummary.of(image)
        return self._summary


def build_describe_image_response(
    image: MetadataImage,
    *,
    node_id: int,
    include_image: bool,
    summary: ImageSummary | None = None,
) -> PykraftDescribeImageResponse:
    """A node's PykraftDescribeImage answer for its committed ``image``.

    ``summary`` is the image's, when the caller has it already.
    """
    if summary is None:
        summary = ImageSummary.of(image)
    return PykraftDescribeImageResponse(
        node_id=node_id,
        offset=image.provenance.offset,
        epoch=image.provenance.epoch,
        digest=summary.digest,
        image_json=json.dumps(image_to_json(image)) if include_image else None,
        offline_partition_count=summary.offline_partition_count,
    )
