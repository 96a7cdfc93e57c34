"""Image digests: one hash that two nodes compare to know they hold the same metadata.

``image_digest`` is the hex SHA-256 of the canonical records of the image
(``image_records``), each encoded as it would be written to the log and
prefixed by its length, so no two record lists share an encoding. The
provenance is left out: a controller that replayed the log and a broker that
loaded a snapshot at the same offset compare equal, and so do two images
that reach the same state by different records.

Hashing a 100,000-partition image takes a third of a second, and tools and
tests ask a node about the same image many times between commits, so a
listener keeps the summary of the last image it was asked about
(``LatestImageSummary``, an ``ImageCache``): images are immutable, so
identity is enough. A node computes it in slices (``ImageSummaryBuilder``)
between which its event loop serves everything else.
"""

from __future__ import annotations

import hashlib
import struct
from typing import Final

import attrs

from quorum.controller.image import NO_LEADER, MetadataImage
from quorum.controller.image_cache import ImageCache
from quorum.controller.image_json import image_json_text
from quorum.controller.slicing import build_at_once
from quorum.controller.snapshot import iter_image_records
from quorum.wire.messages.metadata_records import PartitionRecord
from quorum.wire.messages.pykraft_describe_image import PykraftDescribeImageResponse
from quorum.wire.metadata_serde import encode_metadata_record

__all__ = [
    "SHORT_DIGEST_CHARS",
    "ImageSummary",
    "ImageSummaryBuilder",
    "LatestImageSummary",
    "build_describe_image_response",
    "image_digest",
    "short_digest",
]

SHORT_DIGEST_CHARS: Final = 12
_LENGTH: Final = struct.Struct(">I")


def image_digest(image: MetadataImage) -> str:
    """Hex SHA-256 over the image's canonical records (provenance excluded)."""
    return build_at_once(ImageSummaryBuilder(image)).digest


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
        return build_at_once(ImageSummaryBuilder(image))


class ImageSummaryBuilder:
    """An image's summary computed a slice at a time (the image is immutable).

    One pass over the canonical records (``iter_image_records``): every
    record is hashed, and every PartitionRecord is counted as a partition, as
    offline (no leader) or as led by other than its preferred replica.
    """

    def __init__(self, image: MetadataImage) -> None:
        self.image = image
        self._records = iter_image_records(image)
        self._hasher = hashlib.sha256()
        self._partitions = self._offline = self._imbalanced = 0
        self._done = False

    def step(self, max_units: int) -> bool:
        """Hash up to ``max_units`` records; True once the whole image is done."""
        hasher, units = self._hasher, 0
        while not self._done and units < max_units:
            record = next(self._records, None)
            if record is None:
                self._done = True
                break
            value = encode_metadata_record(record)
            hasher.update(_LENGTH.pack(len(value)))
            hasher.update(value)
            if isinstance(record, PartitionRecord):
                self._partitions += 1
                self._offline += record.leader == NO_LEADER
                preferred = record.replicas[0] if record.replicas else NO_LEADER
                self._imbalanced += record.leader != preferred
            units += 1
        return self._done

    def result(self) -> ImageSummary:
        assert self._done, "the summary is not complete yet"
        return ImageSummary(
            self._hasher.hexdigest(), self._offline, self._partitions, self._imbalanced
        )


class LatestImageSummary:
    """The summary of the last image asked about, computed once per image, in slices.

    ``of`` computes in one go (tools); ``of_async`` yields to the event loop
    every ``MAX_UNITS_PER_SLICE`` records, so a node asked for the digest of a
    100,000-partition image keeps serving meanwhile. Tasks asking about the
    image being computed wait for that one computation.
    """

    def __init__(self) -> None:
        self._cache = ImageCache[None, ImageSummary]()

    @classmethod
    def shared(cls) -> LatestImageSummary:
        """The process's one cache: its listeners and its /metrics ask about the same
        images, and hashing a 1,000,000-partition image takes seconds."""
        return _SHARED

    def of(self, image: MetadataImage) -> ImageSummary:
        return self._cache.get(image, None, lambda: ImageSummaryBuilder(image))

    async def of_async(self, image: MetadataImage) -> ImageSummary:
        return await self._cache.get_in_slices(image, None, lambda: ImageSummaryBuilder(image))


_SHARED: Final = LatestImageSummary()


def build_describe_image_response(
    image: MetadataImage,
    *,
    node_id: int,
    include_image: bool,
    summary: ImageSummary | None = None,
    image_json: str | None = None,
) -> PykraftDescribeImageResponse:
    """A node's PykraftDescribeImage answer for its committed ``image``.

    ``summary`` and ``image_json`` (``image_json_text``) are the image's, when
    the caller has them already (computed in slices).
    """
    if summary is None:
        summary = ImageSummary.of(image)
    if include_image and image_json is None:
        image_json = image_json_text(image)
    return PykraftDescribeImageResponse(
        node_id=node_id,
        offset=image.provenance.offset,
        epoch=image.provenance.epoch,
        digest=summary.digest,
        image_json=image_json if include_image else None,
        offline_partition_count=summary.offline_partition_count,
    )
