"""What every client's tests check, in one place."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

__all__ = ["check_partitions"]


def check_partitions(
    leaders: Mapping[int, int],
    replicas: Mapping[int, Sequence[int]],
    *,
    partitions: int,
    brokers: Collection[int],
) -> None:
    """A new topic on every broker as a client described it: each partition led by a replica."""
    assert sorted(leaders) == list(range(partitions)), leaders
    for index, leader in leaders.items():
        assert sorted(replicas[index]) == sorted(brokers), (index, replicas[index])
        assert leader in replicas[index], (index, leader)
    # the controller spreads leadership over the brokers
    assert len(set(leaders.values())) == min(partitions, len(brokers)), leaders
