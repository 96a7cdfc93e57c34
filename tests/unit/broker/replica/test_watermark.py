"""The high-watermark and caught-up arithmetic, against a deliberately simple oracle."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from broker.replica.watermark import (
    FollowerProgress,
    high_watermark_bound,
    is_caught_up,
    is_isr_candidate,
    next_high_watermark,
)

followers = st.lists(
    st.builds(
        FollowerProgress,
        replica_id=st.integers(2, 6),
        log_end_offset=st.integers(-1, 100),
        caught_up=st.booleans(),
        eligible=st.booleans(),
    ),
    max_size=5,
    unique_by=lambda f: f.replica_id,
)


@given(leader_end=st.integers(0, 100), followers=followers,
       maximal=st.frozensets(st.integers(1, 6)))
def test_the_bound_is_the_smallest_end_among_the_leader_and_the_replicas_that_count(
    leader_end: int, followers: list[FollowerProgress], maximal: frozenset[int]
) -> None:
    counted = [leader_end] + [
        f.log_end_offset for f in followers
        if f.replica_id in maximal or (f.caught_up and f.eligible)
    ]
    assert high_watermark_bound(leader_end, followers, maximal) == min(counted)


@given(leader_end=st.integers(0, 100), followers=followers)
def test_a_replica_outside_the_maximal_isr_that_is_not_caught_up_never_holds_it_back(
    leader_end: int, followers: list[FollowerProgress]
) -> None:
    lagging = [f for f in followers if not (f.caught_up and f.eligible)]
    assert high_watermark_bound(leader_end, lagging, frozenset()) == leader_end


@given(current=st.integers(0, 100), bound=st.integers(-1, 100),
       isr_size=st.integers(0, 4), min_isr=st.integers(1, 3))
def test_the_high_watermark_never_moves_back_nor_under_min_isr(
    current: int, bound: int, isr_size: int, min_isr: int
) -> None:
    new = next_high_watermark(current, bound, isr_size=isr_size, effective_min_isr=min_isr)
    if isr_size < min_isr or bound <= current:
        assert new is None
    else:
        assert new == bound > current


def test_a_follower_is_caught_up_at_the_leaders_end_or_within_the_lag_time() -> None:
    kwargs = {"leader_end_offset": 10, "max_lag_ms": 100, "now_ms": 1_000}
    assert is_caught_up(replica_end_offset=10, last_caught_up_ms=0, **kwargs)
    assert is_caught_up(replica_end_offset=5, last_caught_up_ms=900, **kwargs)
    assert not is_caught_up(replica_end_offset=5, last_caught_up_ms=899, **kwargs)


def test_a_follower_joins_the_isr_only_at_the_hw_and_inside_the_leaders_epoch() -> None:
    assert is_isr_candidate(replica_end_offset=10, high_watermark=10, epoch_start_offset=10)
    assert not is_isr_candidate(replica_end_offset=9, high_watermark=9, epoch_start_offset=10)
    assert not is_isr_candidate(replica_end_offset=9, high_watermark=10, epoch_start_offset=5)
