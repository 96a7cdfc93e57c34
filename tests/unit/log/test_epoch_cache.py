"""The leader-epoch cache against Kafka's rules, and its checkpoint text format."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from quorum.log import EpochCache, EpochEntry, OffsetAndEpoch
from quorum.log.fileio import format_checkpoint, parse_checkpoint, read_checkpoint, write_checkpoint


def cache_of(*pairs: tuple[int, int]) -> EpochCache:
    return EpochCache([EpochEntry(epoch, offset) for epoch, offset in pairs])


def test_assigning_the_same_epoch_at_a_later_offset_changes_nothing() -> None:
    cache = cache_of((1, 0))
    assert not cache.assign(1, 5)
    assert cache.entries == (EpochEntry(1, 0),)


def test_assigning_a_new_epoch_appends_it() -> None:
    cache = cache_of((1, 0))
    assert cache.assign(3, 10)
    assert cache.entries == (EpochEntry(1, 0), EpochEntry(3, 10))
    assert cache.latest_epoch == 3


def test_assigning_a_lower_epoch_removes_entries_that_are_not_below_it() -> None:
    cache = cache_of((1, 0), (3, 10), (5, 20))
    assert cache.assign(4, 15)
    assert cache.entries == (EpochEntry(1, 0), EpochEntry(3, 10), EpochEntry(4, 15))


def test_truncating_from_the_end_drops_epochs_starting_at_or_after_the_cut() -> None:
    cache = cache_of((1, 0), (3, 10), (5, 20))
    assert cache.truncate_from_end(20)
    assert cache.entries == (EpochEntry(1, 0), EpochEntry(3, 10))
    assert not cache.truncate_from_end(15)


def test_truncating_from_the_start_moves_the_covering_epoch_to_the_new_start() -> None:
    cache = cache_of((1, 0), (3, 10), (5, 20))
    assert cache.truncate_from_start(12)
    assert cache.entries == (EpochEntry(3, 12), EpochEntry(5, 20))
    assert not cache.truncate_from_start(12)
    assert not cache.truncate_from_start(5)


def test_end_offset_for_epoch_cases() -> None:
    cache = cache_of((2, 5), (4, 10), (7, 30))
    assert cache.end_offset_for(-1, 40) == OffsetAndEpoch(-1, -1)
    assert cache.end_offset_for(1, 40) == OffsetAndEpoch(5, 1)
    assert cache.end_offset_for(2, 40) == OffsetAndEpoch(10, 2)
    assert cache.end_offset_for(6, 40) == OffsetAndEpoch(30, 4)
    assert cache.end_offset_for(7, 40) == OffsetAndEpoch(40, 7)
    assert cache.end_offset_for(8, 40) == OffsetAndEpoch(-1, -1)
    assert EpochCache().end_offset_for(0, 40) == OffsetAndEpoch(-1, -1)


def test_epoch_at_finds_the_range_an_offset_falls_in() -> None:
    cache = cache_of((2, 5), (4, 10))
    assert [cache.epoch_at(o) for o in (4, 5, 9, 10, 99)] == [None, 2, 2, 4, 4]


def oracle_end_offset(entries: list[tuple[int, int]], epoch: int, log_end: int) -> tuple[int, int]:
    """A direct reading of Kafka's rule over a plain list."""
    if epoch < 0 or not entries:
        return (-1, -1)
    if entries[-1][0] == epoch:
        return (log_end, epoch)
    higher = [e for e in entries if e[0] > epoch]
    lower = [e for e in entries if e[0] <= epoch]
    if not higher:
        return (-1, -1)
    if not lower:
        return (higher[0][1], epoch)
    return (higher[0][1], lower[-1][0])


@given(
    steps=st.lists(st.tuples(st.integers(0, 8), st.integers(0, 50)), max_size=12),
    query=st.integers(-1, 10),
)
def test_end_offset_for_epoch_matches_a_simple_oracle(
    steps: list[tuple[int, int]], query: int
) -> None:
    cache = EpochCache()
    for epoch, offset in steps:
        cache.assign(epoch, offset)
    entries = [(e.epoch, e.start_offset) for e in cache.entries]
    assert all(a[0] < b[0] and a[1] < b[1] for a, b in itertools.pairwise(entries))
    got = cache.end_offset_for(query, 60)
    assert (got.offset, got.epoch) == oracle_end_offset(entries, query, 60)


def test_the_checkpoint_format_is_kafkas_text() -> None:
    text = format_checkpoint([(1, 0), (4, 120)])
    assert text == "0\n2\n1 0\n4 120\n"
    assert parse_checkpoint(text, width=2) == [(1, 0), (4, 120)]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "version line and a count line"),
        ("1\n0\n", "unsupported version '1'"),
        ("0\nx\n", "line 2: count 'x'"),
        ("0\n2\n1 0\n", "says 2 entries but 1 follow"),
        ("0\n1\n1 0 3\n", "line 3: '1 0 3' is not 2 integers"),
    ],
)
def test_a_malformed_checkpoint_names_the_bad_line(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_checkpoint(text, width=2)


def test_a_checkpoint_with_decreasing_entries_is_refused() -> None:
    with pytest.raises(ValueError, match="not increasing"):
        EpochCache.from_rows([(3, 10), (2, 20)])


def test_checkpoints_are_written_atomically_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "leader-epoch-checkpoint"
    assert read_checkpoint(path, width=2) is None
    write_checkpoint(path, [(1, 0)])
    write_checkpoint(path, [(1, 0), (2, 9)])
    assert read_checkpoint(path, width=2) == [(1, 0), (2, 9)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["leader-epoch-checkpoint"]
