"""Quorum arithmetic against a deliberately simple oracle."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from quorum.raft.quorum_math import has_majority, majority_end_offset, majority_size


def oracle_majority_end_offset(offsets: dict[int, int | None], voters: list[int]) -> int | None:
    # The largest x such that more than half of the voters have offset >= x.
    candidates = [o for v in voters if (o := offsets.get(v)) is not None]
    best = None
    for x in candidates:
        holders = sum(1 for v in voters if (o := offsets.get(v)) is not None and o >= x)
        if holders * 2 > len(voters) and (best is None or x > best):
            best = x
    return best


voters_st = st.lists(st.integers(0, 9), min_size=1, max_size=7, unique=True)


@given(voters=voters_st, data=st.data())
def test_majority_end_offset_matches_the_oracle(voters: list[int], data: st.DataObject) -> None:
    ids = data.draw(st.lists(st.integers(0, 12), unique=True, max_size=10)) + voters
    offsets = {i: data.draw(st.none() | st.integers(0, 50)) for i in ids}
    assert majority_end_offset(offsets, voters) == oracle_majority_end_offset(offsets, voters)


def test_observers_never_move_the_high_watermark() -> None:
    offsets = {1: 10, 2: 0, 3: 0, 100: 10, 101: 10}
    assert majority_end_offset(offsets, [1, 2, 3]) == 0


def test_a_single_voter_is_its_own_majority() -> None:
    assert majority_end_offset({7: 42}, [7]) == 42
    assert majority_size(1) == 1


@given(n=st.integers(1, 9), data=st.data())
def test_has_majority_means_more_than_half(n: int, data: st.DataObject) -> None:
    voters = list(range(n))
    granted = data.draw(st.sets(st.integers(-2, n + 2)))
    expected = len(granted & set(voters)) * 2 > n
    assert has_majority(granted, voters) == expected
