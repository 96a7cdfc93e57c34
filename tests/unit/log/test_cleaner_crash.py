"""A crash at any step of a clean loses nothing; the job yields in bounded slices and
stops cleanly when the log changes under it."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from quorum.log import FileLog, LogCleaner, Pause, SyncFile, cleaner_batches
from quorum.log.cleaner_job import CleaningJob
from quorum.log.cleaner_swap import SwapHook
from quorum.wire.batch import BatchHeader
from quorum.wire.batch_checks import validate_batch
from quorum.wire.compression import Compression

from .compaction import (
    CLEANER,
    T0,
    Entry,
    keyed_batch,
    latest_by_key,
    open_log,
    read_entries,
    reopen_after_crash,
)

KEYS = [f"k{i}".encode() for i in range(4)]


class Crash(Exception):
    """A kill -9 at a chosen step."""


def _filled(directory: Path) -> FileLog:
    log = open_log(directory)
    for r in range(12):
        log.append(keyed_batch([(k, f"v{r}".encode()) for k in KEYS], timestamp=T0 + r), epoch=1)
    return log


def _job(
    log: FileLog,
    *,
    slice_batches: int = 200,
    slice_bytes: int = 1 << 20,
    swap_hook: SwapHook | None = None,
) -> CleaningJob:
    cleaner = LogCleaner()
    candidate = cleaner.judge(log, high_watermark=log.log_end_offset, now_ms=T0, config=CLEANER)
    return CleaningJob(
        log,
        first_dirty_offset=candidate.first_dirty_offset,
        first_uncleanable_offset=candidate.first_uncleanable_offset,
        config=CLEANER,
        now_ms=T0,
        slice_batches=slice_batches,
        slice_bytes=slice_bytes,
        swap_hook=swap_hook,
    )


def _swap_steps(tmp_path: Path) -> list[str]:
    """The swap steps a clean of ``_filled`` takes, in order."""
    steps: list[str] = []
    log = _filled(tmp_path / "probe-0")
    _job(log, swap_hook=steps.append).run_to_end()
    log.close()
    return steps


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.suffix in (".cleaned", ".swap"))


def _check_nothing_lost(reopened: FileLog, original: Sequence[Entry], end: int) -> None:
    entries = read_entries(reopened)
    assert latest_by_key(entries) == latest_by_key(original)
    assert reopened.log_end_offset == end
    # every record read is one that was written, at its offset
    written = {e.offset: e for e in original}
    assert all(written[e.offset] == e for e in entries)
    offsets = [e.offset for e in entries]
    assert offsets == sorted(set(offsets))
    assert _leftovers(reopened.directory) == []


def test_the_swap_takes_several_steps(tmp_path: Path) -> None:
    steps = _swap_steps(tmp_path)
    assert steps[0] == "rename cleaned to swap"
    assert "rename swap to log" in steps
    assert sum(step.startswith("delete segment") for step in steps) >= 2


def test_a_crash_at_each_swap_step_loses_nothing(tmp_path: Path) -> None:
    steps = _swap_steps(tmp_path)
    for index in range(len(steps)):
        log = _filled(tmp_path / f"topic-{index}")
        original, end = read_entries(log), log.log_end_offset
        taken: list[str] = []

        def crash_at(name: str, *, at: int = index, taken: list[str] = taken) -> None:
            if len(taken) == at:
                raise Crash(name)
            taken.append(name)

        with pytest.raises(Crash):
            _job(log, swap_hook=crash_at).run_to_end()
        reopened = reopen_after_crash(log)
        try:
            _check_nothing_lost(reopened, original, end)
            # and the next clean works on what recovery left
            result = _job(reopened).run_to_end()
            assert result.aborted is None
            _check_nothing_lost(reopened, original, end)
        finally:
            reopened.close()


def test_a_crash_while_the_cleaned_segment_is_written_loses_nothing(tmp_path: Path) -> None:
    log = _filled(tmp_path / "topic-0")
    original, end = read_entries(log), log.log_end_offset
    steps = _job(log, slice_batches=2).steps()
    # run until the cleaned file exists, then die without any cleanup
    for _ in range(1_000):
        next(steps)
        if _leftovers(log.directory):
            break
    assert _leftovers(log.directory) == ["00000000000000000000.log.cleaned"]
    reopened = reopen_after_crash(log)
    try:
        _check_nothing_lost(reopened, original, end)
        assert read_entries(reopened) == original  # nothing was swapped in
    finally:
        reopened.close()


def test_a_crash_after_the_fsync_before_the_swap_loses_nothing(tmp_path: Path) -> None:
    log = _filled(tmp_path / "topic-0")
    original, end = read_entries(log), log.log_end_offset
    steps = _job(log).steps()
    for _ in range(1_000):
        effect = next(steps)
        if isinstance(effect, SyncFile):
            effect.perform()
            break
    reopened = reopen_after_crash(log)
    try:
        _check_nothing_lost(reopened, original, end)
    finally:
        reopened.close()


def _counting_decodes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every batch the cleaner reads goes through ``validate_batch`` once per pass."""
    calls: list[int] = []

    def counted(buf: bytes | memoryview, pos: int = 0, **kwargs: bool) -> BatchHeader:
        calls.append(pos)
        return validate_batch(buf, pos, **kwargs)

    monkeypatch.setattr(cleaner_batches, "validate_batch", counted)
    return calls


@pytest.mark.parametrize("bound", [1, 3, 7])
def test_no_slice_decodes_more_batches_than_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bound: int
) -> None:
    log = _filled(tmp_path / "topic-0")
    decodes = _counting_decodes(monkeypatch)
    per_slice: list[int] = []
    seen = 0
    job = _job(log, slice_batches=bound)
    effects: Iterator[object] = job.steps()
    for effect in effects:
        if isinstance(effect, Pause):
            per_slice.append(len(decodes) - seen)
            seen = len(decodes)
    per_slice.append(len(decodes) - seen)
    assert job.result is not None and job.result.end_offset is not None
    assert len(decodes) > 2 * bound  # the work did span several slices
    assert max(per_slice) <= bound
    assert job.stats.max_slice_batches <= bound
    log.close()


def test_a_slice_is_also_bounded_by_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = _filled(tmp_path / "topic-0")
    decodes = _counting_decodes(monkeypatch)
    per_slice: list[int] = []
    seen = 0
    for effect in _job(log, slice_batches=1_000, slice_bytes=1).steps():
        if isinstance(effect, Pause):
            per_slice.append(len(decodes) - seen)
            seen = len(decodes)
    assert max(per_slice) == 1
    log.close()


def test_segments_deleted_mid_clean_stop_the_round_and_leave_no_file(tmp_path: Path) -> None:
    log = _filled(tmp_path / "topic-0")
    steps = _job(log, slice_batches=1).steps()
    next(steps)  # the first slice
    log.advance_log_start_offset(log.segments[2].base_offset)  # DeleteRecords meanwhile
    remaining = list(log.segments)
    contents = [s.log_path.read_bytes() for s in remaining]
    effects = list(steps)
    assert all(isinstance(e, Pause) for e in effects)
    assert _leftovers(log.directory) == []
    assert log.segments == remaining
    assert [s.log_path.read_bytes() for s in remaining] == contents
    log.close()


def test_an_abort_reports_why(tmp_path: Path) -> None:
    log = _filled(tmp_path / "topic-0")
    job = _job(log, slice_batches=1)
    steps = job.steps()
    next(steps)
    log.truncate_to(log.segments[1].base_offset + 1)
    list(steps)  # the round runs to its end on the truncated log
    assert job.result is not None
    assert job.result.end_offset is None
    assert job.result.aborted is not None and "changed" in job.result.aborted
    log.close()


def test_a_compressed_batch_costs_a_slice_its_decompressed_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = open_log(tmp_path / "topic-0")
    for r in range(12):
        pairs = [(k, f"v{r}".encode() * 1_000) for k in KEYS]  # ~12 KB, gzip to ~100 B
        log.append(keyed_batch(pairs, timestamp=T0 + r, compression=Compression.GZIP), epoch=1)
    assert max(s.size for s in log.segments) < 4_000
    decodes = _counting_decodes(monkeypatch)
    per_slice: list[int] = []
    seen = 0
    for effect in _job(log, slice_batches=1_000, slice_bytes=4_000).steps():
        if isinstance(effect, Pause):
            per_slice.append(len(decodes) - seen)
            seen = len(decodes)
    assert per_slice and max(per_slice) == 1
    log.close()
