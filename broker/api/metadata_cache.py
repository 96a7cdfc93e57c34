"""A broker's Metadata answers, encoded in slices and kept per image.

Clients poll metadata, several at once, and at 100,000 partitions the answer
for every topic is 4 MB, built and encoded in about a fifth of a second. The
broker listener (``broker.router``) asks a ``MetadataAnswerCache``: the
answer for one (image, listener, request version, topics asked) is built
by ``MetadataAnswerBuilder`` into an ``EncodingSink`` a slice at a time,
with a checkpoint between slices, once; tasks asking meanwhile share that
computation; later asks about the same image get the bytes it kept
(``quorum.controller.image_cache``). Nothing else in a request changes the
answer: topics are never created on Metadata and authorized operations are
not reported.

The sink encodes as it goes (``quorum.wire.codec.ArrayEncoder``): a topic
built within one slice is encoded at once, a large one a chunk of
partitions per slice, so no response object outlives its slice and the
kept answer is bytes, which the garbage collector does not walk.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Final

from broker.api.metadata import ListenerView, MetadataAnswerBuilder, all_topics_asked
from quorum.controller.image import MetadataImage
from quorum.controller.image_cache import ImageCache
from quorum.wire.codec import ArrayEncoder, encode, with_encoded
from quorum.wire.messages import (
    MetadataRequest,
    MetadataResponse,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from quorum.wire.protocol import EncodedBody

__all__ = ["KEPT_ANSWERS", "EncodingSink", "MetadataAnswerCache", "metadata_answer_key"]

# answers kept for the latest image: every topic at a few versions, and lists of topics
KEPT_ANSWERS: Final = 32


def metadata_answer_key(request: MetadataRequest, version: int, view: ListenerView) -> Hashable:
    """What, besides the image, decides the answer's bytes."""
    asked = None
    if not all_topics_asked(request, version):
        asked = tuple((t.name, t.topic_id) for t in request.topics or ())
    return (view, version, asked)


class EncodingSink:
    """Encodes a Metadata answer at ``version`` as the builder gives it (a ``MetadataAnswerSink``)."""

    def __init__(self, version: int) -> None:
        self._version = version
        self._topics = ArrayEncoder(MetadataResponse, version, MetadataResponseTopic)
        self._partitions = self._new_partitions()

    def _new_partitions(self) -> ArrayEncoder:
        return ArrayEncoder(MetadataResponse, self._version, MetadataResponsePartition)

    def topic(self, topic: MetadataResponseTopic) -> None:
        self._topics.add((topic,))

    def partitions(self, built: list[MetadataResponsePartition]) -> None:
        self._partitions.add(built)

    def large_topic(self, topic: MetadataResponseTopic) -> None:
        self._topics.add((with_encoded(topic, partitions=self._partitions.finish()),))
        self._partitions = self._new_partitions()

    def finish(self, head: MetadataResponse) -> EncodedBody:
        body = encode(with_encoded(head, topics=self._topics.finish()), self._version)
        return EncodedBody(MetadataResponse, self._version, body)


class MetadataAnswerCache:
    """Encoded Metadata answers of the latest image asked about (see the module docstring)."""

    def __init__(self, *, max_entries: int = KEPT_ANSWERS) -> None:
        self._cache = ImageCache[Hashable, EncodedBody](max_entries=max_entries)

    @property
    def computed(self) -> int:
        """Answers built since the start (tests)."""
        return self._cache.computed

    async def encoded_response(
        self, image: MetadataImage, request: MetadataRequest, version: int, view: ListenerView
    ) -> EncodedBody:
        def builder() -> MetadataAnswerBuilder[EncodedBody]:
            return MetadataAnswerBuilder(image, request, version, view, EncodingSink(version))

        key = metadata_answer_key(request, version, view)
        return await self._cache.get_in_slices(image, key, builder)
