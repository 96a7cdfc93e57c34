"""Reassignment plans: balance with the fewest moves, leaders by reordering, racks kept."""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Mapping, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quorum.controller.placement import PlacementError, UsableBroker, place_partitions
from quorum.controller.reassignment_plan import (
    ReassignmentPlan,
    TopicPartition,
    plan_reassignment,
)
from quorum.wire.error_codes import Errors

Layout = Mapping[TopicPartition, Sequence[int]]


def brokers(*ids: int, racks: Mapping[int, str] | None = None) -> list[UsableBroker]:
    return [UsableBroker(id=i, rack=(racks or {}).get(i), fenced=False) for i in ids]


def topic(
    name: str, replica_lists: Sequence[tuple[int, ...]]
) -> dict[TopicPartition, tuple[int, ...]]:
    return {TopicPartition(name, p): replicas for p, replicas in enumerate(replica_lists)}


def replica_counts(layout: Layout, ids: Sequence[int]) -> list[int]:
    held = Counter(b for replicas in layout.values() for b in replicas)
    return [held[b] for b in ids]


def leader_counts(layout: Layout, ids: Sequence[int]) -> list[int]:
    led = Counter(replicas[0] for replicas in layout.values())
    return [led[b] for b in ids]


def is_balanced(counts: list[int]) -> bool:
    return max(counts) - min(counts) <= 1


def assert_valid(plan: ReassignmentPlan, current: Layout, fleet: list[UsableBroker]) -> None:
    ids = {b.id for b in fleet}
    assert plan.target.keys() == current.keys()
    for tp, replicas in plan.target.items():
        assert len(replicas) == len(current[tp]), f"{tp} changed its replication factor"
        assert len(set(replicas)) == len(replicas), f"{tp} has a broker twice: {replicas}"
        assert set(replicas) <= ids, f"{tp} kept a replica on an unlisted broker"
    moved = sum(len(set(plan.target[tp]) - set(current[tp])) for tp in current)
    assert plan.replicas_moved == moved
    assert set(plan.moves) == {tp for tp in current if set(plan.target[tp]) != set(current[tp])}


def simple_bounds(current: Layout, ids: Sequence[int]) -> tuple[int, int]:
    """Replicas above ceil(T/n) (unlisted brokers count in full), and deficits below floor."""
    total = sum(len(r) for r in current.values())
    floor, ceil = total // len(ids), -(-total // len(ids))
    held = Counter(b for replicas in current.values() for b in replicas)
    above = sum(max(0, c - (ceil if b in ids else 0)) for b, c in held.items())
    below = sum(max(0, floor - held[b]) for b in ids)
    return above, below


def test_adding_a_fourth_broker_moves_exactly_the_minimum_and_balances() -> None:
    placed = place_partitions(brokers(0, 1, 2), partition_count=30, replication_factor=3)
    current = topic("t", placed)
    fleet = brokers(0, 1, 2, 3)

    plan = plan_reassignment(current, fleet)

    assert_valid(plan, current, fleet)
    counts = replica_counts(plan.target, [0, 1, 2, 3])
    assert sorted(counts) == [22, 22, 23, 23]  # 90 replicas over 4 brokers
    assert plan.replicas_moved == plan.minimum_moves == counts[3]
    assert sorted(leader_counts(plan.target, [0, 1, 2, 3])) == [7, 7, 8, 8]
    # the new broker's leaderships come from reordering its new partitions,
    # one hand-over each from the brokers that lead too many
    assert len(plan.leader_changes) == 7


def test_an_already_balanced_layout_needs_no_change() -> None:
    fleet = brokers(0, 1, 2, 3, 4)
    current = topic("t", place_partitions(fleet, partition_count=25, replication_factor=3))

    plan = plan_reassignment(current, fleet)

    assert dict(plan.target) == current
    assert plan.moves == () and plan.leader_changes == ()
    assert plan.replicas_moved == plan.minimum_moves == 0


def test_leaders_are_balanced_by_reordering_without_moving_data() -> None:
    fleet = brokers(0, 1, 2)
    current = topic("t", [(0, 1, 2)] * 6)

    plan = plan_reassignment(current, fleet)

    assert plan.replicas_moved == 0
    assert leader_counts(plan.target, [0, 1, 2]) == [2, 2, 2]
    assert len(plan.leader_changes) == 4


def test_a_departing_brokers_replicas_all_move_to_the_listed_brokers() -> None:
    placed = place_partitions(brokers(0, 1, 2, 3), partition_count=12, replication_factor=2)
    current = topic("t", placed)
    fleet = brokers(0, 1, 2)

    plan = plan_reassignment(current, fleet)

    assert_valid(plan, current, fleet)
    assert replica_counts(plan.target, [0, 1, 2]) == [8, 8, 8]
    assert leader_counts(plan.target, [0, 1, 2]) == [4, 4, 4]
    assert plan.minimum_moves == 6  # the departing broker's six replicas
    assert plan.minimum_moves <= plan.replicas_moved <= 2 * plan.minimum_moves


def test_a_rack_shared_by_two_replicas_is_repaired() -> None:
    racks = {0: "a", 1: "a", 2: "b", 3: "c"}
    fleet = brokers(0, 1, 2, 3, racks=racks)
    current = topic("t", [(0, 1, 2), (2, 3, 0), (3, 0, 2), (1, 2, 3)])

    plan = plan_reassignment(current, fleet)

    assert_valid(plan, current, fleet)
    for replicas in plan.target.values():
        assert len({racks[b] for b in replicas}) == 3
    assert TopicPartition("t", 0) in plan.moves


def test_adding_a_rack_keeps_every_replica_in_its_own_rack_and_balances() -> None:
    racks = {b: f"r{b % 3}" for b in range(6)}
    old = brokers(0, 1, 2, racks=racks)
    current = topic("t", place_partitions(old, partition_count=12, replication_factor=3))
    fleet = brokers(0, 1, 2, 3, 4, 5, racks=racks)

    plan = plan_reassignment(current, fleet)

    assert_valid(plan, current, fleet)
    assert all(len({racks[b] for b in r}) == 3 for r in plan.target.values())
    assert replica_counts(plan.target, range(6)) == [6] * 6
    assert leader_counts(plan.target, range(6)) == [2] * 6
    assert plan.replicas_moved == plan.minimum_moves == 18


def test_the_plan_does_not_depend_on_the_order_of_the_inputs() -> None:
    current = {
        **topic("b", place_partitions(brokers(0, 1, 2), partition_count=7, replication_factor=2)),
        **topic("a", place_partitions(brokers(0, 1, 2), partition_count=5, replication_factor=3)),
    }
    shuffled = dict(reversed(list(current.items())))

    first = plan_reassignment(current, brokers(0, 1, 2, 3, 4))
    second = plan_reassignment(shuffled, brokers(4, 3, 2, 1, 0))

    assert first == second
    assert list(first.target) == sorted(current)


def test_a_partition_wider_than_the_broker_list_is_refused() -> None:
    with pytest.raises(PlacementError, match="3 replicas but only 2") as caught:
        plan_reassignment(topic("t", [(0, 1, 2)]), brokers(0, 1))

    assert caught.value.error == Errors.INVALID_REPLICATION_FACTOR


def test_a_replica_list_naming_a_broker_twice_is_refused() -> None:
    with pytest.raises(PlacementError, match="each broker once") as caught:
        plan_reassignment(topic("t", [(0, 0)]), brokers(0, 1))

    assert caught.value.error == Errors.INVALID_REPLICA_ASSIGNMENT


def test_an_empty_broker_list_is_refused() -> None:
    with pytest.raises(PlacementError, match="no brokers"):
        plan_reassignment(topic("t", [(0,)]), [])


@st.composite
def layouts(draw: st.DrawFn, *, uniform_rf: bool = False) -> tuple[Layout, list[int], list[int]]:
    """A random layout over some old brokers, and a new broker list (some kept, some added)."""
    old = draw(st.integers(1, 6))
    rf_choices = st.integers(1, old)
    fixed_rf = draw(rf_choices)
    layout: dict[TopicPartition, tuple[int, ...]] = {}
    for t in range(draw(st.integers(1, 3))):
        for p in range(draw(st.integers(1, 12))):
            rf = fixed_rf if uniform_rf else draw(rf_choices)
            replicas = draw(st.permutations(range(old)))[:rf]
            layout[TopicPartition(f"t{t}", p)] = tuple(replicas)
    widest = max(len(r) for r in layout.values())
    kept = draw(st.lists(st.sampled_from(range(old)), unique=True))
    added = list(range(old, old + draw(st.integers(0, 4))))
    while len(kept) + len(added) < widest:
        added.append(old + len(added))
    return layout, sorted(kept), added


@settings(max_examples=150)
@given(case=layouts())
def test_plans_are_valid_balanced_and_move_the_minimum_without_racks(
    case: tuple[Layout, list[int], list[int]],
) -> None:
    current, kept, added = case
    ids = kept + added
    fleet = brokers(*ids)

    plan = plan_reassignment(current, fleet)

    assert_valid(plan, current, fleet)
    assert is_balanced(replica_counts(plan.target, ids))
    assert plan.minimum_moves >= max(simple_bounds(current, ids))
    unlisted = sum(b not in ids for replicas in current.values() for b in replicas)
    assert plan.minimum_moves <= plan.replicas_moved <= plan.minimum_moves + unlisted
    if not unlisted:
        assert plan.replicas_moved == plan.minimum_moves


@settings(max_examples=150)
@given(case=layouts(uniform_rf=True))
def test_leaders_end_balanced_when_every_partition_has_the_same_factor(
    case: tuple[Layout, list[int], list[int]],
) -> None:
    current, kept, added = case
    ids = kept + added

    plan = plan_reassignment(current, brokers(*ids))

    assert is_balanced(leader_counts(plan.target, ids))
    again = plan_reassignment(plan.target, brokers(*ids))
    assert again.replicas_moved == 0 and again.leader_changes == ()


def fewest_moves_by_search(current: Layout, ids: list[int]) -> int:
    """Oracle: try every layout with balanced replica counts and keep the cheapest."""
    parts = sorted(current)
    options = [list(itertools.combinations(ids, len(current[tp]))) for tp in parts]
    best = None
    for choice in itertools.product(*options):
        held = Counter(b for replicas in choice for b in replicas)
        if not is_balanced([held[b] for b in ids]):
            continue
        cost = sum(len(set(c) - set(current[tp])) for c, tp in zip(choice, parts, strict=True))
        best = cost if best is None else min(best, cost)
    assert best is not None
    return best


@settings(max_examples=40)
@given(
    lists=st.lists(st.permutations(range(4)).map(lambda p: p[:2]), min_size=1, max_size=4),
    fleet_size=st.integers(2, 5),
)
def test_minimum_moves_is_what_the_cheapest_balanced_layout_costs_when_no_broker_leaves(
    lists: list[Sequence[int]], fleet_size: int
) -> None:
    current = topic("t", [tuple(r) for r in lists])
    ids = list(range(fleet_size))

    plan = plan_reassignment(current, brokers(*ids))

    fewest = fewest_moves_by_search(current, ids)
    assert plan.minimum_moves <= fewest <= plan.replicas_moved
    if all(b in ids for replicas in current.values() for b in replicas):
        # exact, and met, when no replica sits on a broker that leaves
        assert plan.minimum_moves == fewest == plan.replicas_moved


def racks_allow_balance(rack_sizes: list[int], partitions: int, rf: int) -> bool:
    """Oracle for RF <= racks: a balanced layout with one replica per rack exists iff
    rack totals x_r can meet size*floor <= x_r <= min(P, size*ceil) and sum to P*RF
    (any such totals are realized by some 0/1 partition-by-rack matrix with rows of
    RF ones, and a rack's distinct partitions split evenly over its brokers)."""
    total, n = partitions * rf, sum(rack_sizes)
    floor, ceil = total // n, -(-total // n)
    return (
        all(size * floor <= partitions for size in rack_sizes)
        and sum(min(partitions, size * ceil) for size in rack_sizes) >= total
    )


@settings(max_examples=150)
@given(
    rack_sizes=st.lists(st.integers(1, 3), min_size=2, max_size=4),
    data=st.data(),
)
def test_racked_plans_keep_one_replica_per_rack_and_balance_whenever_racks_allow(
    rack_sizes: list[int], data: st.DataObject
) -> None:
    racks = {10 * r + i: f"r{r}" for r, size in enumerate(rack_sizes) for i in range(size)}
    ids = sorted(racks)
    rf = data.draw(st.integers(1, len(rack_sizes)), label="rf")
    layout: dict[TopicPartition, tuple[int, ...]] = {}
    for p in range(data.draw(st.integers(1, 20), label="partitions")):
        chosen = data.draw(st.permutations(ids), label="replicas")[:rf]
        layout[TopicPartition("t", p)] = tuple(chosen)
    fleet = brokers(*ids, racks=racks)

    plan = plan_reassignment(layout, fleet)

    assert_valid(plan, layout, fleet)
    for replicas in plan.target.values():
        assert len({racks[b] for b in replicas}) == rf, f"{replicas} shares a rack"
    balanced = is_balanced(replica_counts(plan.target, ids))
    assert balanced == racks_allow_balance(rack_sizes, len(layout), rf)
    if balanced:
        assert plan.replicas_moved >= plan.minimum_moves
        assert is_balanced(leader_counts(plan.target, ids))
