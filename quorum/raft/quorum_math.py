"""Majority arithmetic of the Raft quorum: pure functions, no state.

invariant: a high watermark is only ever an offset that a majority of voters
has in its log; observers never count.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

__all__ = ["has_majority", "majority_end_offset", "majority_size"]


def majority_size(voter_count: int) -> int:
    """The fewest voters that form a majority of ``voter_count``."""
    assert voter_count > 0, "a quorum needs at least one voter"
    return voter_count // 2 + 1


def has_majority(granted: Iterable[int], voters: Iterable[int]) -> bool:
    """True iff the granting ids include a majority of ``voters``."""
    voter_set = set(voters)
    return len(voter_set.intersection(granted)) >= majority_size(len(voter_set))


def majority_end_offset(end_offsets: Mapping[int, int | None], voters: Iterable[int]) -> int | None:
    """The largest offset that a majority of voters has reached.

    ``end_offsets`` maps a replica id to its known log end offset (None when
    unknown); ids that are not voters are ignored. Sorted descending, the
    answer is the entry at index ``n // 2``: every voter at or before that
    index (a majority) has at least that offset. Returns None when fewer than
    a majority of voters have a known offset.
    """
    voter_ids = list(dict.fromkeys(voters))
    known = sorted(
        (offset for vid in voter_ids if (offset := end_offsets.get(vid)) is not None),
        reverse=True,
    )
    index = len(voter_ids) // 2
    if len(known) <= index:
        return None
    return known[index]
