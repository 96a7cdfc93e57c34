"""Image digests: one hash that two nodes compare to know they hold the same metadata.

``image_digest`` is a SHA-256 over the image's state in one canonical
order, as ``image_records`` lists it (``quorum.controller.snapshot``):
features, brokers and the next producer id, then topics by name, then
configs. Those records are hashed as they would be written to the log,
each tagged and prefixed by its length. A topic's partitions are hashed a
chunk at a time instead (the ``CHUNK_SIZE`` consecutive indexes of a
``PartitionMap`` chunk): every field of every registration in the chunk as
64-bit integers, lengths first, and the chunk's own SHA-256 goes into the
image's hash after its key. The provenance is left out: a controller that
replayed the log and a broker that loaded a snapshot at the same offset
compare equal, and so do two images that reach the same state by different
records.

Why chunks: the registrations are most of an image (a million at 1,000,000
partitions), and encoding each as a PartitionRecord cost 3 s at that size,
the longest part of a new broker's catch-up; packing their integers costs a
fifth of that. And chunks are shared between the images that did not change
them, so a node that summarized one image keeps its chunks' summaries
(``ChunkSummaries``) and summarizes the next one in what changed.

Tools and tests ask a node about the same image many times between
commits, so a listener keeps the summary of the last image it was asked
about (``LatestImageSummary``, an ``ImageCache``): images are immutable, so
identity is enough. A node computes it in slices (``ImageSummaryBuilder``)
between which its event loop serves everything else.
"""

from __future__ import annotations

import hashlib
import struct
import sys
from array import array
from collections.abc import Generator, Sequence
from typing import Final

import attrs

from quorum.controller.image import NO_LEADER, MetadataImage, PartitionRegistration
from quorum.controller.image_cache import ImageCache
from quorum.controller.image_json import image_json_text
from quorum.controller.partition_map import CHUNK_SIZE, keyed_chunks
from quorum.controller.slicing import build_at_once
from quorum.controller.snapshot import iter_cluster_records, iter_config_records
from quorum.wire.messages.metadata_records import TopicRecord
from quorum.wire.messages.pykraft_describe_image import PykraftDescribeImageResponse
from quorum.wire.metadata_serde import MetadataRecord, encode_metadata_record

__all__ = [
    "SHORT_DIGEST_CHARS",
    "ChunkSummaries",
    "ImageSummary",
    "ImageSummaryBuilder",
    "LatestImageSummary",
    "build_describe_image_response",
    "image_digest",
    "short_digest",
]

SHORT_DIGEST_CHARS: Final = 12
_RECORD: Final = struct.Struct(">cI")  # tag b"R", length; the encoded record follows
_CHUNK: Final = struct.Struct(">cq")  # tag b"C", chunk key; the chunk's SHA-256 follows
_SWAP: Final = sys.byteorder != "little"  # the integers are hashed little-endian everywhere


def image_digest(image: MetadataImage) -> str:
    """Hex SHA-256 over the image's canonical state (provenance excluded)."""
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


@attrs.frozen
class ChunkSummary:
    """One chunk's part of an image summary."""

    digest: bytes
    partitions: int
    offline: int
    imbalanced: int


_Chunk = Sequence[PartitionRegistration | None]


class ChunkSummaries:
    """The summaries of the chunks of the last image summarized, by chunk identity.

    Each entry keeps its chunk alive, so its ``id`` names no other object
    while the entry is here; ``replace`` keeps only the chunks of the newest
    summarized image, so the table stays one image's worth (about a
    thousand entries at 1,000,000 partitions).
    """

    def __init__(self) -> None:
        self._known: dict[int, tuple[_Chunk, ChunkSummary]] = {}

    def get(self, chunk: _Chunk) -> ChunkSummary | None:
        entry = self._known.get(id(chunk))
        return entry[1] if entry is not None and entry[0] is chunk else None

    def replace(self, known: dict[int, tuple[_Chunk, ChunkSummary]]) -> None:
        self._known = known

    def __len__(self) -> int:
        return len(self._known)


class _ChunkHasher:
    """A chunk's summary, computed a range of positions at a time (any split gives the
    same bytes: each registration's integers are self-delimiting)."""

    __slots__ = ("_base", "_chunk", "_hasher", "imbalanced", "offline", "partitions", "position")

    def __init__(self, key: int, chunk: _Chunk) -> None:
        self._base = key * CHUNK_SIZE
        self._chunk = chunk
        self._hasher = hashlib.sha256()
        self.position = self.partitions = self.offline = self.imbalanced = 0

    @property
    def done(self) -> bool:
        return self.position >= len(self._chunk)

    def hash_some(self, count: int) -> int:
        """Hash up to ``count`` more positions; returns how many were examined."""
        chunk, start = self._chunk, self.position
        stop = min(len(chunk), start + max(1, count))
        words: list[int] = []
        put = words.extend
        offline = imbalanced = partitions = 0
        for position in range(start, stop):
            p = chunk[position]
            if p is None:
                continue
            replicas, isr, leader = p.replicas, p.isr, p.leader
            removing, adding = p.removing_replicas, p.adding_replicas
            put((self._base + position, leader, p.leader_recovery_state, p.leader_epoch,
                 p.partition_epoch, len(replicas), len(isr), len(removing), len(adding)))
            put(replicas)
            put(isr)
            put(removing)
            put(adding)
            partitions += 1
            offline += leader == NO_LEADER
            imbalanced += leader != (replicas[0] if replicas else NO_LEADER)
        packed = array("q", words)
        if _SWAP:
            packed.byteswap()
        self._hasher.update(packed.tobytes())
        self.partitions += partitions
        self.offline += offline
        self.imbalanced += imbalanced
        self.position = stop
        return stop - start

    def summary(self) -> ChunkSummary:
        return ChunkSummary(self._hasher.digest(), self.partitions, self.offline, self.imbalanced)


class ImageSummaryBuilder:
    """An image's summary computed a slice at a time (the image is immutable).

    A unit is a record hashed, a partition position examined, or a chunk
    found in ``known`` (the summaries of an image summarized before, which
    the builder replaces with this image's chunks once it is done).
    """

    def __init__(self, image: MetadataImage, known: ChunkSummaries | None = None) -> None:
        self.image = image
        self._known = known
        self._hasher = hashlib.sha256()
        self._partitions = self._offline = self._imbalanced = 0
        self._left = 0
        self._work = self._summarize()
        self._done = False
        self.chunks_hashed = 0  # chunks not found in ``known`` (tests, benches)

    def step(self, max_units: int) -> bool:
        """Do up to ``max_units`` units; True once the whole image is done."""
        if not self._done:
            self._left = max_units
            try:
                next(self._work)
            except StopIteration:
                self._done = True
        return self._done

    def result(self) -> ImageSummary:
        assert self._done, "the summary is not complete yet"
        return ImageSummary(
            self._hasher.hexdigest(), self._offline, self._partitions, self._imbalanced
        )

    def _summarize(self) -> Generator[None, None, None]:
        image = self.image
        for record in iter_cluster_records(image):
            yield from self._hash_record(record)
        seen: dict[int, tuple[_Chunk, ChunkSummary]] = {}
        for name in sorted(image.topic_ids_by_name):
            topic = image.topics_by_id[image.topic_ids_by_name[name]]
            yield from self._hash_record(TopicRecord(name=topic.name, topic_id=topic.topic_id))
            for key, chunk in keyed_chunks(topic.partitions):
                known = self._known.get(chunk) if self._known is not None else None
                if known is None:
                    hasher = _ChunkHasher(key, chunk)
                    while not hasher.done:
                        self._left -= hasher.hash_some(self._left)
                        if self._left <= 0:
                            yield
                    known = hasher.summary()
                    self.chunks_hashed += 1
                else:
                    self._left -= 1
                seen[id(chunk)] = (chunk, known)
                if known.partitions:
                    self._hasher.update(_CHUNK.pack(b"C", key))
                    self._hasher.update(known.digest)
                    self._partitions += known.partitions
                    self._offline += known.offline
                    self._imbalanced += known.imbalanced
                if self._left <= 0:
                    yield
        for record in iter_config_records(image):
            yield from self._hash_record(record)
        if self._known is not None:
            self._known.replace(seen)

    def _hash_record(self, record: MetadataRecord) -> Generator[None, None, None]:
        value = encode_metadata_record(record)
        self._hasher.update(_RECORD.pack(b"R", len(value)))
        self._hasher.update(value)
        self._left -= 1
        if self._left <= 0:
            yield


class LatestImageSummary:
    """The summary of the last image asked about, computed once per image, in slices.

    ``of`` computes in one go (tools); ``of_async`` yields to the event loop
    every ``MAX_UNITS_PER_SLICE`` records, so a node asked for the digest of a
    100,000-partition image keeps serving meanwhile. Tasks asking about the
    image being computed wait for that one computation.
    """

    def __init__(self) -> None:
        self._cache = ImageCache[None, ImageSummary]()
        self._chunks = ChunkSummaries()

    @classmethod
    def shared(cls) -> LatestImageSummary:
        """The process's one cache: its listeners and its /metrics ask about the same
        images, and hashing a 1,000,000-partition image takes seconds."""
        return _SHARED

    def of(self, image: MetadataImage) -> ImageSummary:
        return self._cache.get(image, None, lambda: ImageSummaryBuilder(image, self._chunks))

    async def of_async(self, image: MetadataImage) -> ImageSummary:
        return await self._cache.get_in_slices(
            image, None, lambda: ImageSummaryBuilder(image, self._chunks)
        )


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
