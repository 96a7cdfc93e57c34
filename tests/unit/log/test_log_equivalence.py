"""The file log and the memory log give the same observable results.

A Hypothesis state machine runs one random sequence of operations against
both (tiny segments so rolls happen constantly, reopen and crash included) and
compares, after every step, what a caller can see: offsets, epochs, the epoch
lookup, snapshots, the bytes a full read returns, ListOffsets by timestamp,
and where segments begin and end (the memory log models them).  A controlled
clock drives rolls by time (``segment.ms``), retention by time and the flush
policy; records carry timestamps that go back and forth.

Two keepers: the metadata log (rolls sync, the tail is recovered, a follower
append must continue the log exactly) and a data partition (rolls do not
sync, the flush policy decides, the log directory checkpoints the log start
and recovery point, the log opens lazily and a clean shutdown skips recovery;
a follower append may skip offsets, as a cleaned leader's batches do, so
reads, truncations and recovery meet gaps).  A small bound on open files makes segments close
and reopen all the time.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import attrs
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from quorum.log import (
    FileLog,
    InvalidAppendError,
    LogConfig,
    LogError,
    MemoryLog,
    OffsetAndEpoch,
    OffsetOutOfRangeError,
    OpenFiles,
    OpenMode,
)
from quorum.log.protocol import ReadResult, ReplicatedLog
from quorum.wire.batch import iter_batch_headers
from quorum.wire.file_region import FileRegion

from .batches import make_timed_batch

CONFIG = LogConfig(
    segment_bytes=300,
    index_interval_bytes=90,
    segment_ms=3_000,
    retention_ms=20_000,
    retention_bytes=500,
)
DATA_CONFIG = attrs.evolve(
    CONFIG, flush_messages=9, flush_ms=2_000, verify_closed_segments_on_open=False
)
counts = st.lists(st.integers(min_value=1, max_value=4), min_size=1, max_size=3)
# record timestamps around the clock: back, forth and ahead
skews = st.integers(min_value=-25_000, max_value=4_000)
# how far a follower's batch starts past the end of the one before it (or the log end):
# a cleaned leader's batches skip the offsets it removed; -1 overlaps
skips = st.sampled_from([0, 0, 0, 0, 1, 3, 17, -1])
# around the reach of a segment's 32-bit relative offsets: a batch too far to index from
# the log end starts a segment of its own
wide_skips = st.sampled_from([0, 2**31 - 2, 2**31, 2**31 + 3])


def outcome(call: object) -> object:
    """The result of a call, or the class of the log error it raised."""
    assert callable(call)
    try:
        return call()
    except LogError as exc:
        return type(exc)


def read_everything(log: ReplicatedLog) -> bytes:
    chunks = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        result = log.read(offset, 1 << 20)
        assert not result.is_empty
        chunks.append(bytes(result.records))
        offset = result.next_offset
    return b"".join(chunks)


def file_segments(log: FileLog) -> list[tuple[int, int, int, int]]:
    return [
        (s.base_offset, s.next_offset, s.size, s.max_timestamp_so_far.timestamp)
        for s in log.segments
    ]


def cut_unflushed_tail(log: FileLog) -> None:
    """What the disk holds after a kill: the active segment up to the flushed offset."""
    tail = log.segments[-1]
    keep = next(
        (pos for pos, base, _, _ in tail.iter_headers() if base >= log.flushed_offset), tail.size
    )
    log.abandon()
    with open(tail.log_path, "r+b") as file:
        file.truncate(keep)


def cut_unflushed_data(log: FileLog) -> None:
    """A data partition after a kill: nothing at or above the flushed offset survives
    (segments created after it vanish, the one holding it is cut there)."""
    flushed = log.flushed_offset
    cuts = []
    for segment in log.segments:
        if segment.base_offset > flushed:
            cuts.append((segment.log_path, None))
        elif segment.next_offset > flushed:
            # (none at or above it: the segment only claims a follower's gap past it)
            keep = next(
                (pos for pos, base, _, _ in segment.iter_headers() if base >= flushed),
                segment.size,
            )
            cuts.append((segment.log_path, keep))
    log.abandon()
    for path, keep in cuts:
        if keep is None:
            for suffix in (".log", ".index", ".timeindex"):
                path.with_suffix(suffix).unlink(missing_ok=True)
        else:
            with open(path, "r+b") as file:
                file.truncate(keep)


class SameObservableLog(RuleBasedStateMachine):
    config = CONFIG
    data_partition = False

    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="log-equivalence-"))
        self.directory = self.root / "t-0"
        self.now = 1_000_000
        self.files = OpenFiles(max_open=3)
        self.file = self.open_file()
        self.memory = MemoryLog(
            self.config, clock_ms=self.clock, data_partition=self.data_partition
        )
        self.epoch = 1
        self.tag = 0
        self.seen_timestamps = [self.now]
        # offsets a follower append skipped (and the first after each gap): reads and
        # truncations aim there too
        self.skipped: list[int] = []

    def clock(self) -> int:
        return self.now

    def open_file(self) -> FileLog:
        return FileLog(self.directory, self.config, files=self.files, clock_ms=self.clock)

    def teardown(self) -> None:
        self.file.close()
        shutil.rmtree(self.root, ignore_errors=True)

    def both(self, name: str, *args: object, **kwargs: object) -> object:
        got_file = outcome(lambda: getattr(self.file, name)(*args, **kwargs))
        got_memory = outcome(lambda: getattr(self.memory, name)(*args, **kwargs))
        assert got_file == got_memory, (name, args, got_file, got_memory)
        return got_file

    def offset_between(self, data: st.DataObject, low: int, high: int) -> int:
        """An offset in [low, high], often one a follower append skipped."""
        inside = [offset for offset in self.skipped[-20:] if low <= offset <= high]
        if inside and data.draw(st.booleans()):
            return data.draw(st.sampled_from(inside))
        return data.draw(st.integers(min_value=low, max_value=high))

    def timestamps(self, data: st.DataObject, count: int) -> list[int]:
        drawn = [self.now + data.draw(skews) for _ in range(count)]
        self.seen_timestamps.extend(drawn)
        return drawn

    @rule(data=st.data(), sizes=counts, bump=st.integers(min_value=-1, max_value=2))
    def append_as_leader(self, data: st.DataObject, sizes: list[int], bump: int) -> None:
        epoch = max(self.epoch + bump, 0)
        self.tag += 1
        batches = b"".join(
            make_timed_batch(self.timestamps(data, n), tag=self.tag * 10 + i)
            for i, n in enumerate(sizes)
        )
        got = self.both("append", batches, epoch=epoch)
        if got is not InvalidAppendError:
            self.epoch = max(self.epoch, epoch)

    @rule(data=st.data(), appends=st.lists(counts, min_size=2, max_size=5))
    def fill(self, data: st.DataObject, appends: list[list[int]]) -> None:
        """Several leader appends in the current epoch, the clock moving between them."""
        for sizes in appends:
            self.tag += 1
            batches = b"".join(
                make_timed_batch(self.timestamps(data, n), tag=self.tag * 10 + i)
                for i, n in enumerate(sizes)
            )
            self.both("append", batches, epoch=self.epoch)
            self.now += data.draw(st.integers(min_value=0, max_value=3_000))

    @rule(data=st.data(), sizes=counts, bump=st.integers(-1, 1))
    def append_as_follower(self, data: st.DataObject, sizes: list[int], bump: int) -> None:
        self.follower_append(data, sizes, bump, skips)

    # an empty active segment would be closed empty, and the memory log does not model
    # the file time that retention reads of a segment without timestamps
    @precondition(lambda self: self.memory.segment_summary()[-1][2] > 0)
    @rule(data=st.data(), sizes=counts)
    def append_past_wide_gaps_as_follower(self, data: st.DataObject, sizes: list[int]) -> None:
        """A gap around the reach of a segment's 32-bit relative offsets before the first
        batch (the later ones lie within reach of it, as in one leader segment)."""
        self.follower_append(data, sizes, 0, wide_skips)

    def follower_append(
        self, data: st.DataObject, sizes: list[int], bump: int, gaps: st.SearchStrategy[int]
    ) -> None:
        epoch = max(self.epoch + bump, 0)
        self.tag += 1
        offset = self.memory.log_end_offset
        latest_epoch = self.memory.last_fetched_epoch
        parts = []
        gapped = overlapping = False
        skipped: set[int] = set()
        for i, n in enumerate(sizes):
            start = max(offset + data.draw(gaps if i == 0 else skips), 0)
            if start > offset:
                skipped |= {offset, (offset + start) // 2, start - 1, start}
            gapped |= start > offset
            overlapping |= start < offset
            offset = start
            parts.append(
                make_timed_batch(
                    self.timestamps(data, n), base_offset=offset, epoch=epoch, tag=self.tag * 10 + i
                )
            )
            offset += n
        got = self.both("append_as_follower", b"".join(parts))
        first = next(iter_batch_headers(parts[0]))[1].base_offset
        too_wide = offset - 1 - first > 2**31 - 1  # no segment could index them together
        if overlapping or too_wide or (gapped and not self.data_partition):
            # below the log end or overlapping: never; a gap: only in a data partition
            assert got is InvalidAppendError
        elif epoch >= latest_epoch:
            assert got is not InvalidAppendError
        if got is not InvalidAppendError:
            self.epoch = max(self.epoch, epoch)
            self.skipped.extend(sorted(skipped))
            for offset in sorted(skipped):
                # a fetch from inside the gap answers with the batch after it
                self.check_read(offset, data.draw(st.integers(0, 600)), None)

    @rule(ms=st.integers(min_value=0, max_value=8_000))
    def advance_clock(self, ms: int) -> None:
        self.now += ms

    @rule(data=st.data(), max_bytes=st.integers(min_value=0, max_value=600))
    def read(self, data: st.DataObject, max_bytes: int) -> None:
        low, high = self.memory.log_start_offset, self.memory.log_end_offset
        offset = self.offset_between(data, max(low - 1, 0), high + 1)
        limit = data.draw(st.none() | st.integers(min_value=low, max_value=high + 1))
        self.check_read(offset, max_bytes, limit)

    def check_read(self, offset: int, max_bytes: int, limit: int | None) -> None:
        got_file = outcome(lambda: self.file.read(offset, max_bytes, max_offset=limit))
        got_memory = outcome(lambda: self.memory.read(offset, max_bytes, max_offset=limit))
        got_region = outcome(lambda: self.file.read_records(offset, max_bytes, max_offset=limit))
        if got_memory is OffsetOutOfRangeError:
            assert got_file is OffsetOutOfRangeError
            assert got_region is OffsetOutOfRangeError
            return
        assert isinstance(got_file, ReadResult) and isinstance(got_memory, ReadResult)
        file_bytes, memory_bytes = bytes(got_file.records), bytes(got_memory.records)
        # the records a response sends from the file (found without reading the batches)
        # are the very bytes the read returns
        if isinstance(got_region, FileRegion):
            region_bytes = got_region.read()
            got_region.close()
        else:
            assert isinstance(got_region, bytes)
            region_bytes = got_region
        assert region_bytes == file_bytes
        assert bytes(self.memory.read_records(offset, max_bytes, max_offset=limit)) == memory_bytes
        # a file read stops at a segment's end; otherwise the two are the same
        assert memory_bytes.startswith(file_bytes)
        assert bool(file_bytes) == bool(memory_bytes)
        assert got_file.base_offset == got_memory.base_offset
        if file_bytes:
            # the first batch holds ``offset`` or, in a gap, is the first after it
            first = next(header for _, header in iter_batch_headers(file_bytes))
            assert first.last_offset >= offset

    @rule(data=st.data(), delta=st.integers(min_value=-2, max_value=2))
    def offset_for_timestamp(self, data: st.DataObject, delta: int) -> None:
        near = data.draw(st.sampled_from(self.seen_timestamps[-40:]))
        self.both("offset_for_timestamp", near + delta)

    @rule()
    def max_timestamp(self) -> None:
        self.both("max_timestamp")

    @rule(data=st.data())
    def truncate(self, data: st.DataObject) -> None:
        low, high = self.memory.log_start_offset, self.memory.log_end_offset
        self.both("truncate_to", self.offset_between(data, max(low - 1, 0), high + 2))

    @rule()
    def flush(self) -> None:
        self.both("flush")

    @rule()
    def roll(self) -> None:
        self.both("roll")

    @rule(data=st.data())
    def delete_old_segments(self, data: st.DataObject) -> None:
        low, high = self.memory.log_start_offset, self.memory.log_end_offset
        high_watermark = data.draw(st.integers(min_value=low, max_value=high))
        self.both("delete_old_segments", self.now, high_watermark=high_watermark)

    @rule(data=st.data())
    def metadata_retention(self, data: st.DataObject) -> None:
        low, high = self.memory.log_start_offset, self.memory.log_end_offset
        limit = data.draw(st.integers(min_value=low, max_value=high))
        self.both("maybe_apply_retention", self.now, max_deletable_offset=limit)

    @rule(data=st.data())
    def delete_records(self, data: st.DataObject) -> None:
        low, high = self.memory.log_start_offset, self.memory.log_end_offset
        high_watermark = data.draw(st.integers(min_value=low, max_value=high))
        offset = data.draw(st.integers(min_value=max(low - 1, 0), max_value=high_watermark + 1))
        self.both("maybe_increment_log_start_offset", offset, high_watermark=high_watermark)

    @rule()
    def reopen(self) -> None:
        self.file.close()
        self.memory.flush()
        self.memory.restart()
        self.file = self.open_file()

    @precondition(lambda self: self.file.flushed_offset == self.memory.flushed_offset)
    @rule()
    def crash(self) -> None:
        cut_unflushed_tail(self.file)
        self.memory.crash()
        self.file = self.open_file()

    @rule(data=st.data())
    def advance_log_start(self, data: st.DataObject) -> None:
        low, high = self.memory.log_start_offset, self.memory.log_end_offset
        self.both("advance_log_start_offset", data.draw(st.integers(low, high + 1)))

    @rule(data=st.data(), epoch_bump=st.integers(-1, 1))
    def create_snapshot(self, data: st.DataObject, epoch_bump: int) -> None:
        offset = data.draw(st.integers(0, self.memory.log_end_offset + 3))
        snapshot_id = OffsetAndEpoch(offset, max(self.epoch + epoch_bump, 0))
        self.both("create_snapshot", snapshot_id, b"state-%d" % offset)

    @rule(data=st.data())
    def delete_before(self, data: st.DataObject) -> None:
        ids = self.memory.snapshot_ids()
        if ids:
            self.both("delete_before", data.draw(st.sampled_from(ids)))

    @rule()
    def truncate_to_latest_snapshot(self) -> None:
        self.both("truncate_to_latest_snapshot")
        self.epoch = max(self.epoch, self.memory.last_fetched_epoch)

    @rule(offset=st.integers(0, 60))
    def truncate_fully(self, offset: int) -> None:
        self.both("truncate_fully_and_start_at", offset)

    @invariant()
    def the_same_state_is_visible(self) -> None:
        file, memory = self.file, self.memory
        assert file.log_start_offset == memory.log_start_offset
        assert file.log_end_offset == memory.log_end_offset
        assert file.last_fetched_epoch == memory.last_fetched_epoch
        assert memory.flushed_offset <= file.flushed_offset <= file.log_end_offset
        for epoch in range(-1, self.epoch + 2):
            assert file.end_offset_for_epoch(epoch) == memory.end_offset_for_epoch(epoch), epoch
        assert file.snapshot_ids() == memory.snapshot_ids()
        assert read_everything(file) == read_everything(memory)

    @invariant()
    def segments_begin_and_end_at_the_same_offsets(self) -> None:
        assert file_segments(self.file) == self.memory.segment_summary()

    @invariant()
    def the_open_files_stay_within_their_bound(self) -> None:
        assert self.files.open_count <= self.files.max_open


SameObservableLog.TestCase.settings = settings(
    max_examples=int(os.environ.get("LOG_EQUIVALENCE_EXAMPLES", "60")),
    stateful_step_count=40,
    deadline=None,
)
test_file_and_memory_logs_are_observably_the_same = SameObservableLog.TestCase


class SameObservableTrustingLog(SameObservableLog):
    """The same, opening without verifying closed segments (their index files are used)."""

    config = attrs.evolve(CONFIG, verify_closed_segments_on_open=False)


SameObservableTrustingLog.TestCase.settings = settings(
    max_examples=int(os.environ.get("LOG_EQUIVALENCE_EXAMPLES", "30")),
    stateful_step_count=40,
    deadline=None,
)
test_a_trusting_file_log_is_observably_the_same = SameObservableTrustingLog.TestCase


class SameObservableDataPartition(SameObservableLog):
    """A data partition's file log against the memory log: the flush policy agrees too."""

    config = DATA_CONFIG
    data_partition = True
    clean_shutdown = False
    log_start_checkpoint: int | None = None
    recovery_point_checkpoint = 0

    def open_file(self) -> FileLog:
        mode = OpenMode.for_data_partition(
            log_start_offset=self.log_start_checkpoint,
            recovery_point=self.recovery_point_checkpoint,
            clean_shutdown=self.clean_shutdown,
        )
        return FileLog(
            self.directory,
            self.config,
            mode=mode,
            files=self.files,
            clock_ms=self.clock,
            lazy=True,
        )

    def remember_checkpoints(self) -> None:
        """What the log directory writes at a clean close (or last checkpointed)."""
        checkpointed = self.file.offsets_to_checkpoint()
        self.log_start_checkpoint = checkpointed.log_start_offset
        self.recovery_point_checkpoint = checkpointed.recovery_point

    @rule()
    def reopen(self) -> None:
        self.file.close()
        self.remember_checkpoints()
        self.clean_shutdown = True
        self.memory.flush()
        self.memory.restart()
        self.file = self.open_file()
        assert not self.file.is_loaded and not self.file.needs_recovery

    @rule()
    def crash(self) -> None:
        self.remember_checkpoints()
        cut_unflushed_data(self.file)
        self.clean_shutdown = False
        self.memory.crash()
        self.file = self.open_file()
        assert not self.file.is_loaded and self.file.needs_recovery

    @invariant()
    def the_flush_policy_agrees(self) -> None:
        assert self.file.flush_due(self.now) == self.memory.flush_due(self.now)
        assert self.file.next_flush_deadline_ms() == self.memory.next_flush_deadline_ms()

    @invariant()
    def the_recovery_point_is_the_flushed_offset(self) -> None:
        assert self.file.recovery_point == self.memory.recovery_point


SameObservableDataPartition.TestCase.settings = settings(
    max_examples=int(os.environ.get("LOG_EQUIVALENCE_EXAMPLES", "60")),
    stateful_step_count=40,
    deadline=None,
)
test_a_data_partition_file_log_is_observably_the_same = SameObservableDataPartition.TestCase
