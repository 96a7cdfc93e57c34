"""The reference images: the committed log folded with nothing but the codec and the delta.

After every committed batch that ends outside a metadata transaction (a
stable boundary), the image of everything committed before it: records
outside transactions in log order, a transaction's records once its
EndTransactionRecord is read, an aborted transaction's never (KIP-868). A
node that publishes an image at a stable boundary must publish this one;
an answer must be true of one of these images (``answers``), or of one
inside a batch (``inside``): Raft may put two operations' records in one
batch, so an operation's records can end in the middle of one.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator

from quorum.controller.delta import fold_records
from quorum.controller.image import EMPTY_IMAGE, MetadataImage, Provenance
from quorum.wire.messages.metadata_records import (
    AbortTransactionRecord,
    BeginTransactionRecord,
    EndTransactionRecord,
)
from quorum.wire.metadata_serde import MetadataRecord

from .image_checks import DigestCache

__all__ = ["ReferenceImages"]


class ReferenceImages:
    def __init__(self) -> None:
        self.offsets: list[int] = [0]
        self.images: list[MetadataImage] = [EMPTY_IMAGE]
        self.folded: list[tuple[MetadataRecord, ...]] = [()]  # what made each image
        self._ready: list[MetadataRecord] = []  # to fold at the next stable boundary
        self._transaction: list[MetadataRecord] | None = None  # an open transaction's
        self.digests = DigestCache()

    @property
    def latest(self) -> MetadataImage:
        return self.images[-1]

    def note(self, record: MetadataRecord) -> None:
        if isinstance(record, BeginTransactionRecord):
            self._transaction = []
        elif isinstance(record, EndTransactionRecord):
            assert self._transaction is not None
            self._ready.extend(self._transaction)
            self._transaction = None
        elif isinstance(record, AbortTransactionRecord):
            self._transaction = None
        elif self._transaction is not None:
            self._transaction.append(record)
        else:
            self._ready.append(record)

    def batch_end(self, end_offset: int, epoch: int) -> MetadataImage | None:
        """The image at ``end_offset`` if it is a stable boundary, else None."""
        if self._transaction is not None:
            return None
        image = self.latest
        if self._ready:
            image = fold_records(image, self._ready, Provenance(end_offset, epoch))
        self.offsets.append(end_offset)
        self.images.append(image)
        self.folded.append(tuple(self._ready))
        self._ready = []
        return image

    def at(self, offset: int) -> MetadataImage | None:
        """The image at ``offset`` (None: not a stable boundary, or not committed yet)."""
        index = bisect.bisect_left(self.offsets, offset)
        if index < len(self.offsets) and self.offsets[index] == offset:
            return self.images[index]
        return None

    def at_or_before(self, offset: int) -> MetadataImage:
        return self.images[bisect.bisect_right(self.offsets, offset) - 1]

    def inside(
        self, start: int, end: int, *, most_records: int = 5_000
    ) -> Iterator[tuple[int, MetadataImage]]:
        """(index, image) after each record short of the last of the batches that end in
        ``(start, end]`` (up to ``most_records`` records a batch), newest batch first."""
        low = bisect.bisect_right(self.offsets, start)
        high = bisect.bisect_right(self.offsets, end)
        for index in range(high - 1, max(low, 1) - 1, -1):
            records = self.folded[index]
            if len(records) > most_records:
                continue
            image, provenance = self.images[index - 1], self.images[index].provenance
            for record in records[:-1]:
                image = fold_records(image, [record], provenance)
                yield index, image

    def between(self, start: int, end: int) -> Iterator[tuple[int, MetadataImage]]:
        """(index, image) at the stable boundaries in ``[start, end]``, newest first."""
        low = bisect.bisect_left(self.offsets, start)
        high = bisect.bisect_right(self.offsets, end)
        for index in range(high - 1, low - 1, -1):
            yield index, self.images[index]
