"""The sparse offset index: lookups, truncation and the file form."""

from __future__ import annotations

from pathlib import Path

from quorum.log.offset_index import OffsetIndex


def test_lookup_returns_the_last_entry_at_or_before_the_offset(tmp_path: Path) -> None:
    index = OffsetIndex(tmp_path / "x.index", 100)
    index.append(110, 400)
    index.append(125, 900)
    assert [index.lookup(o) for o in (100, 109, 110, 124, 125, 999)] == [0, 0, 400, 400, 900, 900]


def test_entries_are_stored_as_relative_offset_and_position(tmp_path: Path) -> None:
    index = OffsetIndex(tmp_path / "x.index", 100)
    index.append(110, 400)
    index.persist()
    assert (tmp_path / "x.index").read_bytes() == (10).to_bytes(4, "big") + (400).to_bytes(4, "big")
    loaded = OffsetIndex.load(tmp_path / "x.index", 100, segment_size=1000)
    assert loaded is not None and loaded.entries() == [(110, 400)]


def test_truncation_drops_entries_at_or_after_a_position(tmp_path: Path) -> None:
    index = OffsetIndex(tmp_path / "x.index", 0)
    for i in range(1, 5):
        index.append(i * 10, i * 100)
    index.persist()
    index.truncate_at_position(300)
    assert index.entries() == [(10, 100), (20, 200)]
    assert (tmp_path / "x.index").stat().st_size == 16


def test_an_implausible_index_file_is_not_loaded(tmp_path: Path) -> None:
    path = tmp_path / "x.index"
    path.write_bytes(b"\x00" * 12)
    assert OffsetIndex.load(path, 0, segment_size=100) is None
    path.write_bytes((5).to_bytes(4, "big") + (500).to_bytes(4, "big"))
    assert OffsetIndex.load(path, 0, segment_size=100) is None
    assert OffsetIndex.load(tmp_path / "missing.index", 0, segment_size=100) is None
