"""Replica placement for new topics and partitions: pure functions of the broker list.

The scheme is the 0.8 replication design's table in its collision-free form
(the one Kafka's AdminUtils uses). Order the usable brokers (by id, or
rack-alternated, below), n of them. Partition ``p`` gets its first (preferred
leader) replica at position ``f = (start_index + p) mod n``, and replica ``j``
(j >= 1) at position::

    (f + 1 + (s + j - 1) mod (n - 1)) mod n,    s = start_shift + p // n

The shift ``s`` grows by one each time the partition number wraps around the
broker list, so the partitions that share a first broker put their followers
further and further along: when that broker dies, the leadership and load of
its partitions spread over every survivor instead of landing on one. The
offsets ``1 + (s + j - 1) mod (n - 1)`` for j = 1..RF-1 are distinct and lie in
1..n-1 (RF <= n), so no two replicas of a partition share a broker and none
lands on the first. With n = 5, RF 3 and zero starts this reproduces the
design's table: p0 on brokers 0,1,2 and p5 on 0,2,3.

Kafka's placer draws ``start_index`` and ``start_shift`` at random per topic so
that all topics do not lead on the same broker; the caller passes them (from an
injected ``random.Random``), so this module stays deterministic.

Racks. When the brokers have racks they are ordered rack-alternated (first
broker of rack A, of rack B, of rack C, second of rack A, ...), the shift is
multiplied by the number of racks (Kafka's choice: it keeps the stride aligned
with the rack pattern), and followers are taken along the same walk of
positions, skipping a broker whose rack already holds more replicas of the
partition than some other rack that still has a free broker. With at least RF
racks every replica lands in its own rack; with fewer, the replicas are spread
over the racks as evenly as the rack sizes allow (Kafka only guarantees the
first round). Without racks every broker is in the one rack ``None`` and the
walk never skips, which is exactly the formula above. Brokers with and brokers
without a rack together are refused, as Kafka's rack-aware placer does.

Fenced brokers are used only when the unfenced ones are not enough: fewer than
RF of them, or spanning fewer racks than the cluster offers up to RF (rack
spread ranks before avoiding fenced brokers, as in Kafka's StripedReplicaPlacer).
A first replica is always unfenced: leaders cycle over the unfenced positions.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable, Iterable, Sequence

import attrs

from quorum.wire.error_codes import Errors

__all__ = [
    "PlacementError",
    "UsableBroker",
    "check_racks",
    "new_partitions_placement",
    "place_partitions",
    "placement_for_new_partitions",
    "placement_of",
    "rack_alternated",
]


@attrs.frozen
class UsableBroker:
    """A registered broker as placement sees it."""

    id: int
    rack: str | None = None
    fenced: bool = False


class PlacementError(Exception):
    """No placement satisfies the request; ``error`` is the Kafka error to answer with."""

    def __init__(self, message: str, error: Errors = Errors.INVALID_REPLICATION_FACTOR) -> None:
        super().__init__(message)
        self.error = error


def place_partitions(
    brokers: Iterable[UsableBroker],
    *,
    partition_count: int,
    replication_factor: int,
    start_index: int = 0,
    start_shift: int = 0,
) -> list[tuple[int, ...]]:
    """Replica lists (broker ids, first = preferred leader) for partitions 0..count-1."""
    place = placement_of(
        brokers, partition_count=partition_count, replication_factor=replication_factor,
        start_index=start_index, start_shift=start_shift,
    )
    return [place(p) for p in range(partition_count)]


def placement_of(
    brokers: Iterable[UsableBroker],
    *,
    partition_count: int,
    replication_factor: int,
    start_index: int = 0,
    start_shift: int = 0,
) -> Callable[[int], tuple[int, ...]]:
    """``place_partitions`` one partition at a time: every check up front, then
    partition -> replica list on demand (a 100,000-partition topic in slices)."""
    _check_counts(partition_count, replication_factor)
    ring = _Ring.build(list(brokers), replication_factor)
    return functools.partial(ring.replicas, start_index=start_index, start_shift=start_shift)


def placement_for_new_partitions(
    brokers: Iterable[UsableBroker],
    existing: Sequence[tuple[int, ...]],
    *,
    count: int,
    replication_factor: int,
    start_shift: int = 0,
) -> list[tuple[int, ...]]:
    """Replica lists for partitions len(existing)..len(existing)+count-1 (CreatePartitions).

    The pattern continues from the existing partitions, as Kafka's ZooKeeper-era
    CreatePartitions did: the start index is the position of partition 0's
    preferred leader among the possible leaders (or of the next broker by id
    when that one is gone), and new partition ``p`` is placed as partition ``p``
    of a topic created with that start. With an unchanged broker list the new
    leaders therefore continue the round-robin of the old ones. The shift used
    at creation is not recorded, so ``start_shift`` is the caller's (random) pick.
    """
    place = new_partitions_placement(
        brokers, existing[0] if existing else (), count=count,
        replication_factor=replication_factor, start_shift=start_shift,
    )
    first = len(existing)
    return [place(p) for p in range(first, first + count)]


def new_partitions_placement(
    brokers: Iterable[UsableBroker],
    first_replicas: Sequence[int],
    *,
    count: int,
    replication_factor: int,
    start_shift: int = 0,
) -> Callable[[int], tuple[int, ...]]:
    """``placement_for_new_partitions`` one partition at a time: partition index ->
    replicas, from partition 0's replica list (every check up front)."""
    if count < 1:
        raise PlacementError(
            f"the number of new partitions must be at least 1, not {count}",
            Errors.INVALID_PARTITIONS,
        )
    _check_counts(count, replication_factor)
    ring = _Ring.build(list(brokers), replication_factor)
    start_index = ring.leader_index_of(first_replicas[0]) if first_replicas else 0
    return functools.partial(ring.replicas, start_index=start_index, start_shift=start_shift)


def rack_alternated(brokers: Iterable[UsableBroker]) -> list[UsableBroker]:
    """Brokers by id within each rack, racks interleaved in rack-name order.

    Racks A={1,4}, B={2}, C={3,5} give 1, 2, 3, 4, 5. Without racks: by id.
    """
    by_rack: dict[str | None, list[UsableBroker]] = {}
    for broker in sorted(brokers, key=lambda b: b.id):
        by_rack.setdefault(broker.rack, []).append(broker)
    columns = [by_rack[rack] for rack in sorted(by_rack, key=lambda r: r or "")]
    depth = max((len(c) for c in columns), default=0)
    return [c[row] for row in range(depth) for c in columns if row < len(c)]


def _check_counts(partition_count: int, replication_factor: int) -> None:
    if partition_count < 1:
        raise PlacementError(
            f"the number of partitions must be at least 1, not {partition_count}",
            Errors.INVALID_PARTITIONS,
        )
    if replication_factor < 1:
        raise PlacementError(
            f"the replication factor must be at least 1, not {replication_factor}"
        )


def check_racks(brokers: Sequence[UsableBroker]) -> None:
    """Refuse a broker list where only some brokers have a rack (Kafka does too)."""
    without = sorted(b.id for b in brokers if b.rack is None)
    if without and len(without) < len(brokers):
        shown = ", ".join(map(str, without[:10]))
        raise PlacementError(
            f"not all brokers have rack information (no broker.rack on broker(s) {shown}); "
            f"set broker.rack on every broker or on none"
        )


@attrs.frozen
class _Ring:
    """The ordered brokers one placement walks, and where its leaders may sit."""

    order: tuple[UsableBroker, ...]
    leader_positions: tuple[int, ...]  # positions of unfenced brokers in ``order``
    rack_count: int
    replication_factor: int

    @classmethod
    def build(cls, brokers: list[UsableBroker], replication_factor: int) -> _Ring:
        ids = [b.id for b in brokers]
        assert len(set(ids)) == len(ids), f"broker ids listed twice: {sorted(ids)}"
        if not brokers:
            raise PlacementError("no brokers are registered")
        if replication_factor > len(brokers):
            raise PlacementError(
                f"replication factor {replication_factor} is larger than the "
                f"{len(brokers)} registered broker(s)"
            )
        check_racks(brokers)
        unfenced = [b for b in brokers if not b.fenced]
        if not unfenced:
            raise PlacementError(f"all {len(brokers)} registered broker(s) are fenced")
        wanted_racks = min(replication_factor, len({b.rack for b in brokers}))
        if len(unfenced) >= replication_factor and len({b.rack for b in unfenced}) >= wanted_racks:
            brokers = unfenced
        order = tuple(rack_alternated(brokers))
        return cls(
            order=order,
            leader_positions=tuple(i for i, b in enumerate(order) if not b.fenced),
            rack_count=len({b.rack for b in order}),
            replication_factor=replication_factor,
        )

    def leader_index_of(self, broker_id: int) -> int:
        """Index in the leader sequence of ``broker_id``, else of the next larger id."""
        leaders = [self.order[i].id for i in self.leader_positions]
        if broker_id in leaders:
            return leaders.index(broker_id)
        larger = [b for b in leaders if b > broker_id]
        return leaders.index(min(larger)) if larger else 0

    def replicas(self, partition: int, *, start_index: int, start_shift: int) -> tuple[int, ...]:
        n = len(self.order)
        wraps = len(self.leader_positions)
        first = self.leader_positions[(start_index + partition) % wraps]
        shift = (start_shift + partition // wraps) * self.rack_count
        chosen = [first]
        k = 0
        while len(chosen) < self.replication_factor:
            # invariant: any n - 1 consecutive k visit every other position once,
            # and some free broker sits in a least-used rack, so this ends
            assert k < self.replication_factor * n, "placement walk found no broker"
            position = (first + 1 + (shift + k) % (n - 1)) % n
            k += 1
            if self._fits(position, chosen):
                chosen.append(position)
        return tuple(self.order[i].id for i in chosen)

    def _fits(self, position: int, chosen: list[int]) -> bool:
        if position in chosen:
            return False
        if self.rack_count == 1:
            return True  # one rack (or none): every free broker is in a least-used rack
        used = Counter(self.order[i].rack for i in chosen)
        open_racks = {b.rack for i, b in enumerate(self.order) if i not in chosen}
        least = min(used[rack] for rack in open_racks)
        return used[self.order[position].rack] == least
