"""Swap a cleaned segment in for the segments it replaces, so that a crash loses nothing.

The cleaner writes ``<base>.log.cleaned`` (``base``: the first replaced
segment's base offset) and fsyncs it; then (Kafka's ``replaceSegments``):

1. ``<base>.log.cleaned`` is renamed ``<base>.log.swap`` (directory fsynced):
   from here on the new segment is complete and durable, and wins;
2. the replaced segments (their ``.log``, ``.index`` and ``.timeindex``) are
   deleted, one after the other (directory fsynced);
3. ``<base>.log.swap`` is renamed ``<base>.log`` (directory fsynced).

The cleaned segment ends with the last batch of the last segment it replaces
(``quorum.log.cleaner_batches`` keeps that batch, empty if need be), so its
offsets ``[base, end)`` name exactly the segments it replaces: those whose
base offset lies in that range.  Opening the partition directory
(``complete_interrupted_swaps``, run by recovery before the segments are
listed) finishes what a crash interrupted: a ``.cleaned`` file is deleted
(the old segments are whole: crash before step 1); a ``.swap`` file deletes
every segment in its range still there and becomes ``<base>.log`` (crash
during steps 1 to 3).  The new segment's index files are rebuilt from its
batches on first use, as for any segment whose indexes are missing.
"""

from __future__ import annotations

import logging
import os
import struct
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Final

from quorum.log.fileio import fsync_dir
from quorum.log.segment import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, Segment, segment_name
from quorum.wire.batch import LOG_OVERHEAD

__all__ = [
    "CLEANED_SUFFIX",
    "SWAP_SUFFIX",
    "SwapHook",
    "cleaned_path",
    "complete_interrupted_swaps",
    "swap_in",
]

CLEANED_SUFFIX: Final = ".cleaned"
SWAP_SUFFIX: Final = ".swap"
# baseOffset int64, batchLength int32, partitionLeaderEpoch int32, magic int8, crc uint32,
# attributes int16, lastOffsetDelta int32
_PREFIX: Final = struct.Struct(">qiibIhi")

logger = logging.getLogger("quorum.log")

# called with the name of each step before it is taken (tests simulate a crash there)
SwapHook = Callable[[str], None]


def no_hook(_: str) -> None:
    """A swap hook that does nothing (tests pass one that crashes at a named step)."""


def cleaned_path(directory: Path, base_offset: int) -> Path:
    return directory / (segment_name(base_offset) + LOG_SUFFIX + CLEANED_SUFFIX)


def swap_in(cleaned: Path, replaced: Sequence[Segment], *, hook: SwapHook = no_hook) -> Path:
    """Steps 1 to 3 of the module docstring; returns the new segment's ``.log`` path.
    ``cleaned`` must already be durable (fsynced)."""
    directory = cleaned.parent
    swap = cleaned.with_name(cleaned.name.removesuffix(CLEANED_SUFFIX) + SWAP_SUFFIX)
    hook("rename cleaned to swap")
    os.replace(cleaned, swap)
    fsync_dir(directory)
    for segment in replaced:
        hook(f"delete segment {segment.base_offset}")
        segment.delete()
    fsync_dir(directory)
    hook("rename swap to log")
    final = directory / cleaned.name.removesuffix(CLEANED_SUFFIX)
    os.replace(swap, final)
    fsync_dir(directory)
    return final


def _next_offset(path: Path) -> int | None:
    """The offset after the last whole batch of the file (None: no batch)."""
    next_offset = None
    with path.open("rb") as file:
        size = os.fstat(file.fileno()).st_size
        position = 0
        while position + _PREFIX.size <= size:
            raw = os.pread(file.fileno(), _PREFIX.size, position)
            if len(raw) < _PREFIX.size:
                break
            base, length, _, _, _, _, delta = _PREFIX.unpack(raw)
            if position + LOG_OVERHEAD + length > size:
                break
            next_offset = base + delta + 1
            position += LOG_OVERHEAD + length
    return next_offset


def _delete_segment_files(directory: Path, base_offset: int) -> None:
    stem = segment_name(base_offset)
    for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX):
        (directory / (stem + suffix)).unlink(missing_ok=True)


def complete_interrupted_swaps(directory: Path) -> None:
    """Finish or discard what a crash left of a swap (module docstring)."""
    changed = False
    for leftover in directory.glob("*" + CLEANED_SUFFIX):
        logger.info("removing the unfinished cleaned segment %s", leftover)
        leftover.unlink()
        changed = True
    for swap in sorted(directory.glob("*" + LOG_SUFFIX + SWAP_SUFFIX)):
        base = int(swap.name[:20])
        end = _next_offset(swap)
        end = base + 1 if end is None else max(end, base + 1)
        replaced = sorted(
            int(entry.name[:20])
            for entry in os.scandir(directory)
            if entry.name.endswith(LOG_SUFFIX)
            and entry.name[:20].isdigit()
            and base <= int(entry.name[:20]) < end
        )
        logger.warning(
            "%s: completing an interrupted swap of a cleaned segment (replacing the "
            "segments at %s)",
            swap,
            replaced,
        )
        for old in replaced:
            _delete_segment_files(directory, old)
        _delete_segment_files(directory, base)
        os.replace(swap, directory / swap.name.removesuffix(SWAP_SUFFIX))
        changed = True
    if changed:
        fsync_dir(directory)
