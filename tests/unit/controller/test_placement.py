"""Replica placement: the design's table, balance, failure spread, racks, fencing, errors."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quorum.controller.placement import (
    PlacementError,
    UsableBroker,
    place_partitions,
    placement_for_new_partitions,
    rack_alternated,
)
from quorum.wire.error_codes import Errors

# The 0.8 design's table for brokers 0..4 and partitions p0..p9 (RF 3):
# for each replica row, the partition each broker column holds.
DESIGN_TABLE = {
    1: [(0, 1, 2, 3, 4), (5, 6, 7, 8, 9)],
    2: [(4, 0, 1, 2, 3), (8, 9, 5, 6, 7)],
    3: [(3, 4, 0, 1, 2), (7, 8, 9, 5, 6)],
}


def brokers(n: int) -> list[UsableBroker]:
    return [UsableBroker(id=i, rack=None, fenced=False) for i in range(n)]


def test_placement_reproduces_the_design_table() -> None:
    expected: dict[int, list[int]] = {p: [-1, -1, -1] for p in range(10)}
    for replica, rows in DESIGN_TABLE.items():
        for row in rows:
            for broker, partition in enumerate(row):
                expected[partition][replica - 1] = broker

    placed = place_partitions(brokers(5), partition_count=10, replication_factor=3)

    assert placed == [tuple(expected[p]) for p in range(10)]
    assert placed[0] == (0, 1, 2) and placed[5] == (0, 2, 3)


def test_each_of_three_brokers_leads_ten_and_holds_thirty_replicas() -> None:
    placed = place_partitions(brokers(3), partition_count=30, replication_factor=3)

    assert Counter(replicas[0] for replicas in placed) == {0: 10, 1: 10, 2: 10}
    assert Counter(b for replicas in placed for b in replicas) == {0: 30, 1: 30, 2: 30}


def test_a_failed_brokers_partitions_spread_over_every_survivor() -> None:
    placed = place_partitions(brokers(5), partition_count=20, replication_factor=3)
    led_by_0 = [replicas for replicas in placed if replicas[0] == 0]

    next_leaders = Counter(replicas[1] for replicas in led_by_0)
    follower_load = Counter(b for replicas in led_by_0 for b in replicas[1:])

    # all four survivors take one partition's leadership each, and the same
    # share of its followers: without the shift brokers 1 and 2 would take all
    assert next_leaders == {1: 1, 2: 1, 3: 1, 4: 1}
    assert follower_load == {1: 2, 2: 2, 3: 2, 4: 2}


def test_every_replica_of_a_partition_is_on_its_own_broker_even_with_many_wraps() -> None:
    for n in range(1, 8):
        for rf in range(1, n + 1):
            placed = place_partitions(brokers(n), partition_count=5 * n, replication_factor=rf)
            assert all(len(set(replicas)) == rf for replicas in placed)


@st.composite
def fleets(draw: st.DrawFn) -> tuple[list[UsableBroker], int]:
    count = draw(st.integers(1, 9))
    ids = draw(st.lists(st.integers(0, 50), min_size=count, max_size=count, unique=True))
    fenced = draw(st.lists(st.booleans(), min_size=count, max_size=count))
    if all(fenced):
        fenced[0] = False
    fleet = [UsableBroker(id=i, rack=None, fenced=f) for i, f in zip(ids, fenced, strict=True)]
    return fleet, draw(st.integers(1, count))


@settings(max_examples=150)
@given(
    fleet_rf=fleets(),
    partitions=st.integers(1, 40),
    start_index=st.integers(0, 100),
    start_shift=st.integers(0, 100),
)
def test_placement_is_valid_and_balances_leaders_over_unfenced_brokers(
    fleet_rf: tuple[list[UsableBroker], int], partitions: int, start_index: int, start_shift: int
) -> None:
    fleet, rf = fleet_rf
    placed = place_partitions(
        fleet, partition_count=partitions, replication_factor=rf,
        start_index=start_index, start_shift=start_shift,
    )

    unfenced = {b.id for b in fleet if not b.fenced}
    assert len(placed) == partitions
    for replicas in placed:
        assert len(replicas) == rf and len(set(replicas)) == rf
        assert set(replicas) <= {b.id for b in fleet}
        assert replicas[0] in unfenced
        if len(unfenced) >= rf:
            assert set(replicas) <= unfenced, "a fenced broker was used although not needed"
    leaders = Counter(replicas[0] for replicas in placed)
    counts = [leaders[b] for b in unfenced]
    assert max(counts) - min(counts) <= 1


def even_rack_share(rack_sizes: list[int], rf: int) -> int:
    """Oracle: the smallest per-rack maximum with which RF replicas fit at all."""
    return min(level for level in range(1, rf + 1) if sum(min(s, level) for s in rack_sizes) >= rf)


@settings(max_examples=150)
@given(
    racks=st.lists(st.integers(1, 3), min_size=1, max_size=5),
    data=st.data(),
)
def test_racked_placement_spreads_replicas_over_racks(
    racks: list[int], data: st.DataObject
) -> None:
    fleet = [
        UsableBroker(id=10 * r + i, rack=f"rack-{r}", fenced=False)
        for r, size in enumerate(racks)
        for i in range(size)
    ]
    rf = data.draw(st.integers(1, len(fleet)), label="rf")
    start_index = data.draw(st.integers(0, 30), label="start_index")
    start_shift = data.draw(st.integers(0, 30), label="start_shift")

    placed = place_partitions(
        fleet, partition_count=3 * len(fleet), replication_factor=rf,
        start_index=start_index, start_shift=start_shift,
    )

    rack_of = {b.id: b.rack for b in fleet}
    share = even_rack_share(racks, rf)
    for replicas in placed:
        assert len(set(replicas)) == rf
        per_rack = Counter(rack_of[b] for b in replicas)
        if len(racks) >= rf:
            assert len(per_rack) == rf, f"{replicas} shares a rack though {len(racks)} racks exist"
        assert max(per_rack.values()) <= share
    leaders = Counter(replicas[0] for replicas in placed)
    assert max(leaders[b.id] for b in fleet) - min(leaders[b.id] for b in fleet) <= 1


def test_rack_alternated_order_takes_one_broker_per_rack_in_turn() -> None:
    fleet = [
        UsableBroker(1, "a", False), UsableBroker(4, "a", False), UsableBroker(2, "b", False),
        UsableBroker(3, "c", False), UsableBroker(5, "c", False), UsableBroker(6, "c", False),
    ]

    assert [b.id for b in rack_alternated(fleet)] == [1, 2, 3, 4, 5, 6]


def test_three_racks_put_each_replica_of_rf3_in_its_own_rack() -> None:
    fleet = [UsableBroker(i, f"r{i % 3}", False) for i in range(6)]

    placed = place_partitions(fleet, partition_count=12, replication_factor=3)

    assert all(len({f"r{b % 3}" for b in replicas}) == 3 for replicas in placed)


def test_fenced_brokers_fill_in_only_when_unfenced_ones_are_too_few() -> None:
    fleet = [UsableBroker(0, None, False), UsableBroker(1, None, True), UsableBroker(2, None, True)]

    placed = place_partitions(fleet, partition_count=4, replication_factor=3)

    assert all(replicas[0] == 0 and sorted(replicas) == [0, 1, 2] for replicas in placed)


@settings(max_examples=100)
@given(
    n=st.integers(1, 7),
    data=st.data(),
)
def test_new_partitions_continue_the_pattern_of_the_existing_ones(
    n: int, data: st.DataObject
) -> None:
    rf = data.draw(st.integers(1, n), label="rf")
    existing_count = data.draw(st.integers(1, 12), label="existing")
    added = data.draw(st.integers(1, 12), label="added")
    start_index = data.draw(st.integers(0, n - 1), label="start_index")
    start_shift = data.draw(st.integers(0, n - 1), label="start_shift")
    whole = place_partitions(
        brokers(n), partition_count=existing_count + added, replication_factor=rf,
        start_index=start_index, start_shift=start_shift,
    )

    more = placement_for_new_partitions(
        brokers(n), whole[:existing_count], count=added, replication_factor=rf,
        start_shift=start_shift,
    )

    assert more == whole[existing_count:]


def test_new_partitions_start_after_a_departed_first_leader() -> None:
    existing = [(2, 0, 1)]
    remaining = [UsableBroker(i, None, False) for i in (0, 1, 3)]

    more = placement_for_new_partitions(remaining, existing, count=3, replication_factor=2)

    # broker 3 stands in for the departed broker 2 as partition 0's leader,
    # so the new partitions 1, 2, 3 lead on the brokers after it: 0, 1, 3
    assert [replicas[0] for replicas in more] == [0, 1, 3]


@pytest.mark.parametrize(
    ("fleet", "count", "rf", "error", "words"),
    [
        (
            brokers(3), 1, 4,
            Errors.INVALID_REPLICATION_FACTOR, "replication factor 4 is larger than the 3",
        ),
        (brokers(3), 1, 0, Errors.INVALID_REPLICATION_FACTOR, "at least 1, not 0"),
        (brokers(3), 0, 1, Errors.INVALID_PARTITIONS, "number of partitions"),
        ([], 1, 1, Errors.INVALID_REPLICATION_FACTOR, "no brokers"),
        ([UsableBroker(0, None, True)], 1, 1, Errors.INVALID_REPLICATION_FACTOR, "fenced"),
        (
            [UsableBroker(0, "a", False), UsableBroker(1, None, False)],
            1, 1, Errors.INVALID_REPLICATION_FACTOR, "not all brokers have rack information",
        ),
    ],
)
def test_impossible_placements_raise_an_actionable_error(
    fleet: list[UsableBroker], count: int, rf: int, error: Errors, words: str
) -> None:
    with pytest.raises(PlacementError, match=words) as caught:
        place_partitions(fleet, partition_count=count, replication_factor=rf)

    assert caught.value.error == error


def test_adding_no_partitions_is_refused() -> None:
    with pytest.raises(PlacementError, match="at least 1") as caught:
        placement_for_new_partitions(brokers(3), [(0, 1)], count=0, replication_factor=2)

    assert caught.value.error == Errors.INVALID_PARTITIONS
