"""A data partition's follower copies its cleaned leader's batches, offset gaps and all.

The leader's log cleaner removes superseded records but keeps offsets, so the
batches a follower fetches may skip offsets (Kafka's ``appendAsFollower``
checks that offsets increase, not that they are contiguous). The follower's
reads, offset index, truncation, retention, epochs and recovery must work
across those gaps; the metadata log still refuses any gap.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs
import pytest

from quorum.log import (
    FileLog,
    InvalidAppendError,
    LogCleaner,
    LogConfig,
    MemoryLog,
    OffsetAndEpoch,
    OpenMode,
)
from quorum.log.protocol import ReplicatedLog
from quorum.wire.batch import BatchHeader, iter_batch_headers

from .batches import make_batch
from .compaction import T0, clean, keyed_batch, open_log, read_batches

KEYS = [f"k{i}".encode() for i in range(4)]
# the follower rolls often and indexes every other batch or so
SMALL = LogConfig(segment_bytes=700, index_interval_bytes=100, compact=True, delete=False)
# everything in one segment: the gaps are in the last one, which recovery scans
ONE_SEGMENT = attrs.evolve(SMALL, segment_bytes=1 << 20)

Follower = Callable[[LogConfig], FileLog | MemoryLog]


@pytest.fixture
def leader(tmp_path: Path) -> Iterator[FileLog]:
    """A compacted partition's leader after one cleaning: its batches skip offsets."""
    log = open_log(tmp_path / "leader-0")
    # a batch of keys written once (kept) then rounds that rewrite the same four keys
    log.append(keyed_batch([(b"once-a", b"x"), (b"once-b", b"y")], timestamp=T0), epoch=1)
    for r in range(12):
        pairs = [(key, f"v{r}".encode()) for key in KEYS]
        log.append(keyed_batch(pairs, timestamp=T0 + r), epoch=1)
    clean(LogCleaner(), log, now_ms=T0 + 100)
    assert _gaps(log), "the cleaning left no gap to copy"
    yield log
    log.close()


@pytest.fixture(params=["file", "memory"])
def follower(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Follower]:
    opened: list[FileLog | MemoryLog] = []

    def make(config: LogConfig = SMALL) -> FileLog | MemoryLog:
        log: FileLog | MemoryLog
        if request.param == "file":
            log = open_log(tmp_path / f"follower-{len(opened)}", config)
        else:
            log = MemoryLog(config, data_partition=True)
        opened.append(log)
        return log

    yield make
    for log in opened:
        log.close()


def _headers(log: ReplicatedLog) -> list[BatchHeader]:
    return [header for header, _ in read_batches(log)]  # type: ignore[arg-type]


def _gaps(log: ReplicatedLog) -> list[tuple[BatchHeader, BatchHeader]]:
    """(batch before, batch after) of every gap between two batches."""
    return [(a, b) for a, b in itertools.pairwise(_headers(log)) if a.next_offset < b.base_offset]


def _replicate(leader: ReplicatedLog, follower: ReplicatedLog, *, max_bytes: int = 300) -> None:
    """Fetch from the follower's log end until it has all of the leader's log."""
    for _ in range(10_000):
        if follower.log_end_offset >= leader.log_end_offset:
            return
        fetched = leader.read(follower.log_end_offset, max_bytes)
        assert fetched.records, f"the leader returned nothing at {follower.log_end_offset}"
        follower.append_as_follower(fetched.records)
    raise AssertionError("the follower did not catch up within 10,000 fetches")


def _first_batch(records: bytes | memoryview) -> BatchHeader:
    return next(header for _, header in iter_batch_headers(records))


def test_a_follower_copies_a_cleaned_leaders_batches_with_their_gaps(
    leader: FileLog, follower: Follower
) -> None:
    replica = follower(SMALL)
    _replicate(leader, replica)
    assert read_batches(replica) == read_batches(leader)  # type: ignore[arg-type]
    assert replica.log_end_offset == leader.log_end_offset
    assert _gaps(replica) == _gaps(leader)
    assert replica.end_offset_for_epoch(1) == leader.end_offset_for_epoch(1)


@pytest.mark.parametrize("config", [SMALL, ONE_SEGMENT], ids=["small-segments", "one-segment"])
@pytest.mark.parametrize("crash", [False, True], ids=["clean-close", "crash"])
def test_a_followers_gaps_survive_a_restart(
    leader: FileLog, tmp_path: Path, config: LogConfig, crash: bool
) -> None:
    replica = open_log(tmp_path / "follower-0", config)
    _replicate(leader, replica)
    last = replica.segments[-1]
    ends = [last_offset + 1 for _, _, _, last_offset in last.iter_headers()]
    bases = [base for _, base, _, _ in last.iter_headers()]
    assert any(end < base for end, base in zip(ends, bases[1:], strict=False)), (
        "the last segment holds no gap: recovery's scan of it would prove nothing"
    )
    expected = read_batches(leader)
    if crash:
        replica.abandon()  # recovery from offset 0 scans every segment, the last one too
    else:
        replica.close()
    reopened = open_log(replica.directory, config)
    try:
        assert read_batches(reopened) == expected
        assert reopened.log_end_offset == leader.log_end_offset
        # and it goes on following
        leader.append(keyed_batch([(b"k0", b"after")], timestamp=T0 + 50), epoch=1)
        _replicate(leader, reopened)
        assert read_batches(reopened) == read_batches(leader)
    finally:
        reopened.close()


def test_a_fetch_inside_a_gap_returns_the_batch_after_it(
    leader: FileLog, follower: Follower
) -> None:
    replica = follower(SMALL)
    _replicate(leader, replica)
    for before, after in _gaps(replica):
        for offset in (before.next_offset, (before.next_offset + after.base_offset) // 2):
            fetched = replica.read(offset, 1)
            assert fetched.base_offset == after.base_offset
            assert _first_batch(fetched.records) == after


def test_every_offset_reads_the_first_batch_reaching_it_after_a_reopen(
    leader: FileLog, tmp_path: Path
) -> None:
    """The offset index of a closed segment, loaded from its file, across gaps."""
    replica = open_log(tmp_path / "follower-0", SMALL)
    _replicate(leader, replica)
    headers = _headers(replica)
    replica.close()
    reopened = FileLog(
        replica.directory,
        SMALL,
        mode=OpenMode.for_data_partition(
            log_start_offset=None, recovery_point=replica.log_end_offset, clean_shutdown=True
        ),
    )
    try:
        assert any(len(segment.index) for segment in reopened.segments)
        for segment in reopened.segments:
            for offset, position in segment.index.entries():
                assert segment.iter_headers()[0][0] <= position
                assert any(p == position and b == offset for p, b, _, _ in segment.iter_headers())
        for offset in range(reopened.log_start_offset, reopened.log_end_offset):
            wanted = next(h for h in headers if h.last_offset >= offset)
            assert _first_batch(reopened.read(offset, 1).records) == wanted, offset
    finally:
        reopened.close()


def test_truncation_into_a_gap_ends_the_log_after_the_batch_before_it(
    leader: FileLog, follower: Follower
) -> None:
    replica = follower(SMALL)
    _replicate(leader, replica)
    before, after = _gaps(replica)[-1]
    kept = [h for h in _headers(replica) if h.last_offset < after.base_offset]
    replica.truncate_to(after.base_offset - 1)
    assert replica.log_end_offset == before.next_offset
    assert _headers(replica) == kept
    # fetching again from the new log end brings the same batches back
    _replicate(leader, replica)
    assert read_batches(replica) == read_batches(leader)  # type: ignore[arg-type]


def test_truncation_to_a_batch_after_a_gap_ends_the_log_before_the_gap(
    leader: FileLog, follower: Follower
) -> None:
    """The batch holding the offset goes whole: the log ends where the one before it does,
    not at the removed batch's base offset (which would leave the log ending in a gap)."""
    replica = follower(SMALL)
    _replicate(leader, replica)
    before, after = _gaps(replica)[0]
    replica.truncate_to(after.base_offset)
    assert replica.log_end_offset == before.next_offset
    assert _headers(replica)[-1] == before


def test_the_log_start_may_move_into_a_gap(leader: FileLog, follower: Follower) -> None:
    replica = follower(SMALL)
    _replicate(leader, replica)
    before, after = _gaps(replica)[-1]
    replica.advance_log_start_offset(before.next_offset)
    assert replica.log_start_offset == before.next_offset
    assert _first_batch(replica.read(replica.log_start_offset, 1).records) == after
    assert replica.delete_old_segments(T0 + 1_000, high_watermark=replica.log_end_offset) >= 0
    assert _headers(replica)[0] == after


def _gapped_batches(epochs: list[int], *, start: int = 0, skip: int = 5) -> bytes:
    """Batches of two records, each ``skip`` offsets after the end of the one before."""
    parts = []
    offset = start
    for i, epoch in enumerate(epochs):
        parts.append(make_batch(2, base_offset=offset, epoch=epoch, tag=i))
        offset += 2 + skip
    return b"".join(parts)


def test_an_epoch_starting_after_a_gap_ends_the_one_before_at_its_first_offset(
    follower: Follower,
) -> None:
    replica = follower(SMALL)
    replica.append_as_follower(_gapped_batches([1, 1, 3, 3]))
    # batches at 0, 7, 14, 21: epoch 3 starts at 14, after the gap 9..13
    assert replica.end_offset_for_epoch(1) == OffsetAndEpoch(14, 1)
    assert replica.end_offset_for_epoch(2) == OffsetAndEpoch(14, 1)
    assert replica.end_offset_for_epoch(3) == OffsetAndEpoch(23, 3)
    assert replica.last_fetched_epoch == 3
    replica.truncate_to(12)
    assert replica.log_end_offset == 9
    # epoch 1 is the latest again: it ends at the log end, before the gap
    assert replica.last_fetched_epoch == 1
    assert replica.end_offset_for_epoch(1) == OffsetAndEpoch(9, 1)


@pytest.mark.parametrize("kind", ["file", "memory"])
def test_the_metadata_log_refuses_a_gap(tmp_path: Path, kind: str) -> None:
    log: ReplicatedLog = (
        FileLog(tmp_path / "__cluster_metadata-0", SMALL) if kind == "file" else MemoryLog(SMALL)
    )
    try:
        log.append_as_follower(make_batch(2, base_offset=0, epoch=1))
        with pytest.raises(InvalidAppendError, match="where offset 2 was expected"):
            log.append_as_follower(make_batch(2, base_offset=3, epoch=1))
        with pytest.raises(InvalidAppendError, match="where offset 4 was expected"):
            log.append_as_follower(_gapped_batches([1, 1], start=2, skip=1))
        assert log.log_end_offset == 2
    finally:
        log.close()


def test_a_batch_below_the_log_end_or_overlapping_it_is_refused(follower: Follower) -> None:
    replica = follower(SMALL)
    replica.append_as_follower(_gapped_batches([1, 1]))  # offsets 0-1 and 7-8
    assert replica.log_end_offset == 9
    below = make_batch(1, base_offset=8, epoch=1)
    overlapping = make_batch(3, base_offset=12, epoch=1) + make_batch(1, base_offset=13, epoch=1)
    for refused in (below, make_batch(1, base_offset=0, epoch=1), overlapping):
        with pytest.raises(InvalidAppendError):
            replica.append_as_follower(refused)
    assert replica.log_end_offset == 9
    replica.append_as_follower(make_batch(1, base_offset=9, epoch=1))
    assert replica.log_end_offset == 10


FAR = 2**31 + 5  # too far past offset 3 to index from a segment starting there


def _far_batches() -> bytes:
    """As one leader segment's fetch answer: ``FAR`` and, after a small gap, ``FAR + 2``."""
    return make_batch(1, base_offset=FAR, epoch=1) + make_batch(1, base_offset=FAR + 2, epoch=1)


def _near_batches() -> bytes:
    """Offsets 0, then 1-2."""
    return make_batch(1, base_offset=0, epoch=1) + make_batch(2, base_offset=1, epoch=1)


def test_a_gap_too_wide_to_index_starts_a_segment_at_the_batch_after_it(
    tmp_path: Path,
) -> None:
    replica = open_log(tmp_path / "follower-0", ONE_SEGMENT)
    replica.append_as_follower(_near_batches())
    replica.append_as_follower(_far_batches())
    # the segment before claims the gap; the new one starts at the far batch
    assert [(s.base_offset, s.next_offset) for s in replica.segments] == [(0, FAR), (FAR, FAR + 3)]
    assert replica.log_end_offset == FAR + 3
    assert _first_batch(replica.read(3, 1).records).base_offset == FAR
    assert _first_batch(replica.read(FAR - 1, 1).records).base_offset == FAR
    expected = [h.base_offset for h in _headers(replica)]
    assert expected == [0, 1, FAR, FAR + 2]
    for crash in (True, False):
        if crash:
            replica.abandon()
        else:
            replica.close()
        reopened = open_log(replica.directory, ONE_SEGMENT)
        assert [h.base_offset for h in _headers(reopened)] == expected
        assert [(s.base_offset, s.next_offset) for s in reopened.segments] == [
            (0, FAR),
            (FAR, FAR + 3),
        ]
        replica = reopened
    replica.close()


@pytest.mark.parametrize("kind", ["file", "memory"])
def test_truncation_into_the_batch_after_a_wide_gap_ends_the_log_before_the_gap(
    tmp_path: Path, kind: str
) -> None:
    replica: ReplicatedLog = (
        open_log(tmp_path / "follower-0", ONE_SEGMENT)
        if kind == "file"
        else MemoryLog(ONE_SEGMENT, data_partition=True)
    )
    replica.append_as_follower(_near_batches())
    replica.append_as_follower(_far_batches())
    replica.truncate_to(FAR)
    # not an empty segment at FAR: the gap before it would look torn to recovery
    assert replica.log_end_offset == 3
    replica.append_as_follower(make_batch(1, base_offset=3, epoch=1))
    assert [h.base_offset for h in _headers(replica)] == [0, 1, 3]
    if isinstance(replica, FileLog):
        assert [(s.base_offset, s.next_offset) for s in replica.segments] == [(0, 4)]
    replica.close()


def test_a_trusted_segment_claiming_a_wide_gap_rebuilds_its_lost_index(tmp_path: Path) -> None:
    replica = open_log(tmp_path / "follower-0", ONE_SEGMENT)
    replica.append_as_follower(_near_batches())
    replica.append_as_follower(_far_batches())
    first = replica.segments[0]
    replica.close()
    first.index_path.unlink()
    reopened = FileLog(
        replica.directory,
        ONE_SEGMENT,
        mode=OpenMode.for_data_partition(
            log_start_offset=None, recovery_point=FAR + 1, clean_shutdown=True
        ),
    )
    try:
        # the index is rebuilt from the batches, which end before the segment does
        assert _first_batch(reopened.read(3, 1).records).base_offset == FAR
        assert _first_batch(reopened.read(1, 1).records).base_offset == 1
        assert [(s.base_offset, s.next_offset) for s in reopened.segments] == [
            (0, FAR),
            (FAR, FAR + 3),
        ]
    finally:
        reopened.close()


@pytest.mark.parametrize("kind", ["file", "memory"])
def test_batches_too_far_apart_for_one_segment_are_refused_in_one_append(
    tmp_path: Path, kind: str
) -> None:
    replica: ReplicatedLog = (
        open_log(tmp_path / "follower-0", ONE_SEGMENT)
        if kind == "file"
        else MemoryLog(ONE_SEGMENT, data_partition=True)
    )
    with pytest.raises(InvalidAppendError, match="append them separately"):
        replica.append_as_follower(_near_batches() + _far_batches())
    assert replica.log_end_offset == 0
    replica.close()
