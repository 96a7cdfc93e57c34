"""The file log and the memory log give the same observable results.

A Hypothesis state machine runs one random sequence of operations against
both (tiny segments so rolls happen constantly, reopen and crash included) and
compares, after every step, what a caller can see: offsets, epochs, the epoch
lookup, snapshots and the bytes a full read returns.
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
)
from quorum.log.protocol import ReadResult, ReplicatedLog

from .batches import make_batch, run_of_batches

CONFIG = LogConfig(segment_bytes=400, index_interval_bytes=90)
counts = st.lists(st.integers(min_value=1, max_value=4), min_size=1, max_size=3)


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


def cut_unflushed_tail(log: FileLog) -> None:
    """What the disk holds after a kill: the active segment up to the flushed offset."""
    tail = log.segments[-1]
    keep = next(
        (pos for pos, base, _, _ in tail.iter_headers() if base >= log.flushed_offset), tail.size
    )
    log.abandon()
    with open(tail.log_path, "r+b") as file:
        file.truncate(keep)


class SameObservableLog(RuleBasedStateMachine):
    config = CONFIG

    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="log-equivalence-"))
        self.directory = self.root / "t-0"
        self.file = FileLog(self.directory, self.config)
        self.memory = MemoryLog(self.config)
        self.epoch = 1
        self.tag = 0

    def teardown(self) -> None:
        self.file.close()
        shutil.rmtree(self.root, ignore_errors=True)

    def both(self, name: str, *args: object, **kwargs: object) -> object:
        got_file = outcome(lambda: getattr(self.file, name)(*args, **kwargs))
        got_memory = outcome(lambda: getattr(self.memory, name)(*args, **kwargs))
        assert got_file == got_memory, (name, args, got_file, got_memory)
        return got_file

    @rule(sizes=counts, bump=st.integers(min_value=-1, max_value=2))
    def append_as_leader(self, sizes: list[int], bump: int) -> None:
        epoch = max(self.epoch + bump, 0)
        self.tag += 1
        data = b"".join(make_batch(n, tag=self.tag * 10 + i) for i, n in enumerate(sizes))
        got = self.both("append", data, epoch=epoch)
        if got is not InvalidAppendError:
            self.epoch = max(self.epoch, epoch)

    @rule(sizes=counts, shift=st.sampled_from([0, 0, 0, -1, 1]), bump=st.integers(-1, 1))
    def append_as_follower(self, sizes: list[int], shift: int, bump: int) -> None:
        epoch = max(self.epoch + bump, 0)
        self.tag += 1
        start = max(self.memory.log_end_offset + shift, 0)
        data = run_of_batches(sizes, start_offset=start, epochs=[epoch] * len(sizes), tag=self.tag)
        if self.both("append_as_follower", data) is not InvalidAppendError:
            self.epoch = max(self.epoch, epoch)

    @rule(data=st.data(), max_bytes=st.integers(min_value=0, max_value=600))
    def read(self, data: st.DataObject, max_bytes: int) -> None:
        low, high = self.memory.log_start_offset, self.memory.log_end_offset
        offset = data.draw(st.integers(min_value=max(low - 1, 0), max_value=high + 1))
        limit = data.draw(st.none() | st.integers(min_value=low, max_value=high + 1))
        got_file = outcome(lambda: self.file.read(offset, max_bytes, max_offset=limit))
        got_memory = outcome(lambda: self.memory.read(offset, max_bytes, max_offset=limit))
        if got_memory is OffsetOutOfRangeError:
            assert got_file is OffsetOutOfRangeError
            return
        assert isinstance(got_file, ReadResult) and isinstance(got_memory, ReadResult)
        file_bytes, memory_bytes = bytes(got_file.records), bytes(got_memory.records)
        # a file read stops at a segment's end; otherwise the two are the same
        assert memory_bytes.startswith(file_bytes)
        assert bool(file_bytes) == bool(memory_bytes)
        assert got_file.base_offset == got_memory.base_offset

    @rule(data=st.data())
    def truncate(self, data: st.DataObject) -> None:
        low, high = self.memory.log_start_offset, self.memory.log_end_offset
        self.both(
            "truncate_to", data.draw(st.integers(min_value=max(low - 1, 0), max_value=high + 2))
        )

    @rule()
    def flush(self) -> None:
        self.both("flush")

    @rule()
    def roll(self) -> None:
        self.file.roll()

    @rule()
    def reopen(self) -> None:
        self.file.close()
        self.memory.flush()
        self.file = FileLog(self.directory, self.config)

    @precondition(lambda self: self.file.flushed_offset == self.memory.flushed_offset)
    @rule()
    def crash(self) -> None:
        cut_unflushed_tail(self.file)
        self.memory.crash()
        self.file = FileLog(self.directory, self.config)

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


SameObservableLog.TestCase.settings = settings(
    max_examples=int(os.environ.get("LOG_EQUIVALENCE_EXAMPLES", "60")),
    stateful_step_count=30,
    deadline=None,
)
test_file_and_memory_logs_are_observably_the_same = SameObservableLog.TestCase


class SameObservableTrustingLog(SameObservableLog):
    """The same, opening without verifying closed segments (their index files are used)."""

    config = attrs.evolve(CONFIG, verify_closed_segments_on_open=False)


SameObservableTrustingLog.TestCase.settings = settings(
    max_examples=int(os.environ.get("LOG_EQUIVALENCE_EXAMPLES", "30")),
    stateful_step_count=30,
    deadline=None,
)
test_a_trusting_file_log_is_observably_the_same = SameObservableTrustingLog.TestCase
