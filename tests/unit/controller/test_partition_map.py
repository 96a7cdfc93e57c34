"""PartitionMap against a plain dict: the same mapping, and the same changes between versions."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from quorum.controller.image import PartitionRegistration
from quorum.controller.partition_map import (
    CHUNK_SIZE,
    EMPTY_PARTITIONS,
    PartitionMap,
    items_in_order,
    keyed_chunks,
)

REGISTRATIONS = [
    PartitionRegistration(replicas=(r,), isr=(r,), leader=r, leader_epoch=e)
    for r in range(3) for e in range(3)
]

changes = st.dictionaries(
    st.integers(0, 3 * CHUNK_SIZE), st.sampled_from(REGISTRATIONS), max_size=40
)


@given(st.lists(changes, max_size=6))
def test_a_partition_map_is_the_dict_it_was_built_as(steps: list[dict[int, PartitionRegistration]]) -> None:
    oracle: dict[int, PartitionRegistration] = {}
    current = EMPTY_PARTITIONS
    for step in steps:
        before, before_oracle = current, dict(oracle)
        current = current.with_changes(step)
        oracle.update(step)
        assert dict(current.items()) == oracle and len(current) == len(oracle)
        assert set(current) == set(oracle) and list(current.values()) == [current[i] for i in current]
        assert all(i in current and current.get(i) is oracle[i] for i in oracle)
        assert current.get(-5) is None and -5 not in current and "x" not in current
        # the changes against the earlier version are exactly those the dicts differ by
        naive = {
            i: (before_oracle.get(i), oracle.get(i))
            for i in set(before_oracle) | set(oracle)
            if before_oracle.get(i) is not oracle.get(i)
        }
        assert {i: (o, n) for i, o, n in current.changed_against(before)} == naive
        assert {i: (o, n) for i, o, n in current.changed_against(before_oracle)} == naive
        assert before == PartitionMap.of(before_oracle)  # an earlier version is untouched
        # index order whatever order the chunks were made in, for maps and dicts alike
        assert list(items_in_order(current)) == sorted(oracle.items())
        assert list(items_in_order(oracle)) == sorted(oracle.items())
        assert [(k, [p for p in c if p is not None]) for k, c in keyed_chunks(current)] == [
            (k, [p for _, p in group]) for k, group in itertools.groupby(
                sorted(oracle.items()), key=lambda item: item[0] // CHUNK_SIZE)
        ]


def test_partitions_added_in_order_iterate_in_order_and_share_untouched_chunks() -> None:
    grown = EMPTY_PARTITIONS.with_changes(dict.fromkeys(range(5 * CHUNK_SIZE), REGISTRATIONS[0]))
    assert list(grown) == list(range(5 * CHUNK_SIZE))
    changed = grown.with_changes({CHUNK_SIZE + 3: REGISTRATIONS[1]})
    assert [(i, o, n) for i, o, n in changed.changed_against(grown)] == [
        (CHUNK_SIZE + 3, REGISTRATIONS[0], REGISTRATIONS[1])
    ]
    shared = [a is b for a, b in zip(grown.chunks(), changed.chunks(), strict=True)]
    assert shared == [True, False, True, True, True]
