"""The simulated ``__cluster_metadata`` log and the reference images folded from it.

``SimLog`` is a list of batches with a commit point: batches after it are the
uncommitted tail, which a failover either keeps (the new leader had it) or
truncates (it did not), as both happen in Raft. A batch holds encoded
metadata records; a control batch (the new leader's LeaderChange) holds none
and takes one offset. Commit moves only at batch boundaries.

``CommittedImages`` is the reference: the image after every committed batch,
folded from the decoded bytes in log order. Every replica, broker view and
answer is compared against it.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

import attrs

from quorum.controller.delta import fold_records
from quorum.controller.image import EMPTY_IMAGE, MetadataImage, Provenance
from quorum.wire.metadata_serde import (
    MetadataRecord,
    decode_metadata_record,
    encode_metadata_record,
)

__all__ = ["CommittedImages", "LogBatch", "SimLog", "fresh_fold"]


@attrs.frozen
class LogBatch:
    base_offset: int
    epoch: int
    values: tuple[bytes, ...]  # encoded records; () is a control batch of one offset

    @property
    def end_offset(self) -> int:
        return self.base_offset + max(1, len(self.values))

    def records(self) -> list[MetadataRecord]:
        """Decoded afresh on every read, as a replica reading the log does."""
        return [decode_metadata_record(value) for value in self.values]


class SimLog:
    def __init__(self) -> None:
        self.batches: list[LogBatch] = []
        self.committed_count = 0

    @property
    def end_offset(self) -> int:
        return self.batches[-1].end_offset if self.batches else 0

    @property
    def committed_end(self) -> int:
        return self.batches[self.committed_count - 1].end_offset if self.committed_count else 0

    @property
    def tail(self) -> list[LogBatch]:
        return self.batches[self.committed_count:]

    def append(self, epoch: int, records: Sequence[MetadataRecord]) -> LogBatch | None:
        """One proposal, one batch (None: nothing to write)."""
        if not records:
            return None
        values = tuple(encode_metadata_record(r) for r in records)
        return self._add(LogBatch(self.end_offset, epoch, values))

    def append_control(self, epoch: int) -> LogBatch:
        return self._add(LogBatch(self.end_offset, epoch, ()))

    def _add(self, batch: LogBatch) -> LogBatch:
        if self.batches:
            assert batch.epoch >= self.batches[-1].epoch, "a batch of an older epoch"
        self.batches.append(batch)
        return batch

    def commit(self, count: int) -> list[LogBatch]:
        """Commit the next ``count`` tail batches; returns them."""
        assert 0 <= count <= len(self.tail)
        done = self.batches[self.committed_count:self.committed_count + count]
        self.committed_count += count
        return done

    def truncate_tail(self) -> list[LogBatch]:
        cut = self.tail
        del self.batches[self.committed_count:]
        return cut

    def committed_between(self, start: int, end: int) -> list[LogBatch]:
        """The committed batches covering ``[start, end)``; both ends are batch boundaries."""
        committed = self.batches[:self.committed_count]
        first = bisect.bisect_left([b.base_offset for b in committed], start)
        chosen = [b for b in committed[first:] if b.end_offset <= end]
        assert not chosen or (chosen[0].base_offset == start and chosen[-1].end_offset == end), (
            f"[{start}, {end}) does not start and end at batch boundaries"
        )
        return chosen

    def committed_boundaries(self) -> list[int]:
        return [0, *(b.end_offset for b in self.batches[:self.committed_count])]


class CommittedImages:
    """The image after each committed batch (offset 0: the empty image)."""

    def __init__(self) -> None:
        self.offsets: list[int] = [0]
        self.images: list[MetadataImage] = [EMPTY_IMAGE]

    @property
    def latest(self) -> MetadataImage:
        return self.images[-1]

    def extend(self, batch: LogBatch, records: list[MetadataRecord]) -> MetadataImage:
        """The image after ``batch``, whose decoded ``records`` the caller passes."""
        assert batch.base_offset == self.offsets[-1], "committed batches out of order"
        image = fold_records(self.latest, records, Provenance(batch.end_offset, batch.epoch))
        self.offsets.append(batch.end_offset)
        self.images.append(image)
        return image

    def at(self, offset: int) -> MetadataImage:
        index = bisect.bisect_left(self.offsets, offset)
        assert index < len(self.offsets) and self.offsets[index] == offset, (
            f"offset {offset} is not a committed batch boundary"
        )
        return self.images[index]

    def is_boundary(self, offset: int) -> bool:
        index = bisect.bisect_left(self.offsets, offset)
        return index < len(self.offsets) and self.offsets[index] == offset

    def index_of(self, offset: int) -> int:
        index = bisect.bisect_left(self.offsets, offset)
        assert self.offsets[index] == offset
        return index


def fresh_fold(batches: Sequence[LogBatch]) -> MetadataImage:
    """Every committed batch decoded and folded from the empty image in one delta."""
    records = [record for batch in batches for record in batch.records()]
    end = batches[-1].end_offset if batches else 0
    epoch = batches[-1].epoch if batches else 0
    return fold_records(EMPTY_IMAGE, records, Provenance(end, epoch))
