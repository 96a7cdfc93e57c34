"""A reassignment plan: balance replicas and preferred leaders over brokers, moving little.

``plan_reassignment(current, brokers)`` proposes a target replica list for every
partition, for example after brokers were added or before some are removed
(their replicas move to the listed ones). Pure and deterministic: equal inputs
give equal plans, whatever the order of the inputs. Partitions are named by
``TopicPartition`` (ordered, so plans iterate partitions in one order). The
``fenced`` flag of a broker is not used: a plan is a lasting layout, fencing a
passing state, and elections pick live leaders from the ISR anyway.

Goals, in order:

1. Valid: no broker twice in a list, replication factors unchanged, every
   replica on a listed broker, and per partition no rack holding more replicas
   than its share (with at least RF racks: one replica per rack; with fewer,
   the lowest per-rack maximum the rack sizes allow). A layout that breaks the
   rack rule is repaired.
2. Replica counts balanced: with T replicas over n brokers every broker ends
   with floor(T/n) or ceil(T/n). First nobody keeps more than ceil (each
   replica goes to the emptiest broker that may take it), then nobody keeps
   fewer than floor. A moved replica takes the old broker's place in the list.
3. Few replicas moved. ``minimum_moves`` is what goal 2 alone costs at least:
   the replicas on unlisted brokers, plus what each listed broker holds above
   its share when the ceil(T/n) shares go to the fullest brokers (any other
   choice of shares leaves more above them). It is at least the sum of excesses
   above ceil(T/n) and at least the sum of deficits below floor(T/n), the two
   simpler bounds, and no balanced plan moves fewer replicas.
   Guarantee without racks: a broker above ceil holds more partitions than one
   below ceil (resp. floor), so it holds one the other lacks, every move is
   direct, and ``replicas_moved == minimum_moves`` when every replica is on a
   listed broker. A replica on an unlisted broker may need one extra hop (its
   emptiest candidates may already hold that partition), so in general
   ``minimum_moves <= replicas_moved <= minimum_moves + unlisted replicas``.
   With racks a direct move may be forbidden; then the plan shifts replicas
   along the shortest chain of allowed moves (over -> ... -> under), and stops
   when there is none. No factor is proven there: the tests check against an
   oracle that the result is balanced exactly when the racks allow a balanced
   layout (one replication factor, at least RF racks), and random rack-valid
   layouts have needed at most twice ``minimum_moves`` (which ignores racks).
4. Preferred leaders balanced: each broker first in floor(P/n) or ceil(P/n)
   of the P lists, by reordering lists only (no data moves). Leadership is
   handed along alternating paths (A leads p, B holds p: B leads p), first
   until nobody leads more than ceil, then until nobody leads fewer than floor;
   such a path exists whenever a balanced choice among the current replicas
   does. When every partition has the same replication factor and the replicas
   are balanced, one always does (Hall's condition: a set S of brokers holds at
   most |S|*ceil(T/n) replicas, so at most |S|*ceil(P/n) partitions lie wholly
   inside it; symmetrically for floor); with mixed factors it is best effort.
"""

from __future__ import annotations

import types
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping, Sequence

import attrs

from quorum.controller.image import TopicPartition
from quorum.controller.placement import PlacementError, UsableBroker, check_racks
from quorum.wire.error_codes import Errors

__all__ = ["ReassignmentPlan", "TopicPartition", "plan_reassignment"]


def _frozen_mapping(
    value: Mapping[TopicPartition, tuple[int, ...]],
) -> Mapping[TopicPartition, tuple[int, ...]]:
    return types.MappingProxyType(dict(sorted(value.items())))


@attrs.frozen(kw_only=True)
class ReassignmentPlan:
    """A target layout and what reaching it costs."""

    # every partition's target replica list (first = preferred leader), in partition order
    target: Mapping[TopicPartition, tuple[int, ...]] = attrs.field(converter=_frozen_mapping)
    # partitions whose replica set changes (data moves)
    moves: tuple[TopicPartition, ...]
    # replica placements that change: sum over partitions of |target set - current set|
    replicas_moved: int
    # no plan that balances replica counts moves fewer (module docstring, goal 3)
    minimum_moves: int
    # partitions whose preferred leader changes while the old one keeps its replica:
    # leadership moved by reordering, not because the leader's replica moved away
    leader_changes: tuple[TopicPartition, ...]


def plan_reassignment(
    current: Mapping[TopicPartition, Sequence[int]], brokers: Iterable[UsableBroker]
) -> ReassignmentPlan:
    """Propose balanced replica lists for ``current`` over ``brokers``."""
    layout = _Layout.build(current, list(brokers))
    minimum = layout.minimum_moves()
    layout.repair()
    layout.balance_replicas()
    layout.balance_leaders()
    target = {layout.names[i]: tuple(replicas) for i, replicas in layout.replicas.items()}
    before = {tp: tuple(replicas) for tp, replicas in current.items()}
    return ReassignmentPlan(
        target=target,
        moves=tuple(tp for tp in layout.names if set(target[tp]) != set(before[tp])),
        replicas_moved=sum(len(set(target[tp]) - set(before[tp])) for tp in target),
        minimum_moves=minimum,
        leader_changes=tuple(
            tp for tp in layout.names
            if target[tp][0] != before[tp][0] and before[tp][0] in target[tp]
        ),
    )


def _rack_share(rack_sizes: Iterable[int], replication_factor: int) -> int:
    """Most replicas of one partition a rack may hold: the lowest level L with
    sum(min(size, L)) >= RF (1 when there are at least RF racks)."""
    sizes = list(rack_sizes)
    level = 1
    while sum(min(size, level) for size in sizes) < replication_factor:
        level += 1
    return level


@attrs.define
class _Layout:
    """The working layout the plan edits in place (private, mutable)."""

    names: list[TopicPartition]  # a PartIndex is a position here (ints sort fast)
    replicas: dict[PartIndex, list[int]]
    holdings: dict[int, set[PartIndex]]  # listed broker -> partitions it holds
    rack_of: dict[int, str | None]
    share: dict[int, int]  # replication factor -> rack share

    @classmethod
    def build(
        cls, current: Mapping[TopicPartition, Sequence[int]], brokers: list[UsableBroker]
    ) -> _Layout:
        if not brokers:
            raise PlacementError("no brokers are listed to hold the replicas")
        check_racks(brokers)
        rack_of = {b.id: b.rack for b in sorted(brokers, key=lambda b: b.id)}
        assert len(rack_of) == len(brokers), "broker ids listed twice"
        names = sorted(current)
        replicas = {i: list(current[tp]) for i, tp in enumerate(names)}
        for i, lst in replicas.items():
            _check_replicas(names[i], lst, len(rack_of))
        holdings: dict[int, set[PartIndex]] = {b: set() for b in rack_of}
        for tp, lst in replicas.items():
            for b in lst:
                if b in holdings:
                    holdings[b].add(tp)
        sizes = Counter(rack_of.values()).values()
        factors = {len(lst) for lst in replicas.values()}
        shares = {rf: _rack_share(sizes, rf) for rf in factors}
        return cls(names, replicas, holdings, rack_of, shares)

    def load(self, broker: int) -> int:
        return len(self.holdings[broker])

    def minimum_moves(self) -> int:
        """Unlisted replicas plus the excess over the cheapest balanced targets: the
        ceil(T/n) slots go to the fullest brokers (any other choice costs more)."""
        total = sum(len(lst) for lst in self.replicas.values())
        floor, extra = divmod(total, len(self.holdings))
        fullest = sorted(self.holdings, key=lambda b: (-self.load(b), b))[:extra]
        unlisted = sum(b not in self.holdings for lst in self.replicas.values() for b in lst)
        return unlisted + sum(max(0, self.load(b) - floor - (b in fullest)) for b in self.holdings)

    # -- moves ---------------------------------------------------------------------------

    def can_take(self, tp: PartIndex, source: int, dest: int) -> bool:
        """Whether ``dest`` may replace ``source`` in ``tp``'s list under the rules."""
        lst = self.replicas[tp]
        if dest in lst:
            return False
        rack = self.rack_of[dest]
        same = sum(1 for b in lst if b != source and b in self.rack_of and self.rack_of[b] == rack)
        return same < self.share[len(lst)]

    def move(self, tp: PartIndex, source: int, dest: int) -> None:
        assert self.can_take(tp, source, dest), f"illegal: {self.names[tp]} {source} -> {dest}"
        lst = self.replicas[tp]
        lst[lst.index(source)] = dest  # the new broker takes the old one's place
        if source in self.holdings:
            self.holdings[source].discard(tp)
        self.holdings[dest].add(tp)

    def emptiest_first(self, brokers: Iterable[int]) -> list[int]:
        return sorted(brokers, key=lambda b: (self.load(b), b))

    def fullest_first(self, brokers: Iterable[int]) -> list[int]:
        return sorted(brokers, key=lambda b: (-self.load(b), b))

    def repair(self) -> None:
        """Move replicas off unlisted brokers and out of racks above their share,
        each to the emptiest broker that may take it."""
        for tp, lst in self.replicas.items():
            for gone in [b for b in lst if b not in self.holdings]:
                self.move(tp, gone, self._emptiest_taker(tp, gone))
            while (crowded := self._rack_surplus(tp)) is not None:
                self.move(tp, crowded, self._emptiest_taker(tp, crowded))

    def _emptiest_taker(self, tp: PartIndex, source: int) -> int:
        taker = next(
            (b for b in self.emptiest_first(self.holdings) if self.can_take(tp, source, b)), None
        )
        # invariant: racks offer sum(min(size, share)) >= RF places and the others fill RF - 1
        assert taker is not None, f"no broker may take {self.names[tp]}'s replica from {source}"
        return taker

    def _rack_surplus(self, tp: PartIndex) -> int | None:
        """A replica in a rack above the share: the fullest such broker's, a follower first."""
        lst = self.replicas[tp]
        counts = Counter(self.rack_of[b] for b in lst)
        crowded = [b for b in lst if counts[self.rack_of[b]] > self.share[len(lst)]]
        return min(crowded, key=lambda b: (-self.load(b), b == lst[0], b), default=None)

    def balance_replicas(self) -> None:
        """First nobody above ceil(T/n), each replica to the emptiest broker that fits;
        then nobody below floor(T/n). Without racks every move is direct and counted
        by ``minimum_moves``; with racks, chains of moves, and stop when none is left."""
        floor, extra = divmod(sum(map(len, self.replicas.values())), len(self.holdings))
        ceil = floor + (extra > 0)
        while over := [b for b in self.holdings if self.load(b) > ceil]:
            under = [b for b in self.holdings if self.load(b) < ceil]
            if not self._direct_move(over, under):
                path = _shortest_path(over, self._give_edges, lambda b: self.load(b) < ceil)
                if not path:
                    return
                for source, tp, dest in path:
                    self.move(tp, source, dest)
        while short := [b for b in self.holdings if self.load(b) < floor]:
            rich = [b for b in self.holdings if self.load(b) > floor]
            if not self._direct_move(rich, short):
                path = _shortest_path(short, self._take_edges, lambda b: self.load(b) > floor)
                if not path:
                    return
                for dest, tp, source in path:
                    self.move(tp, source, dest)

    def _movable(self, broker: int) -> list[PartIndex]:
        """Partitions on ``broker``, those it does not lead first (leaders stay put)."""
        return sorted(self.holdings[broker], key=lambda tp: (self.replicas[tp][0] == broker, tp))

    def _direct_move(self, sources: list[int], dests: list[int]) -> bool:
        for source in self.fullest_first(sources):
            for dest in self.emptiest_first(dests):
                for tp in self._movable(source):
                    if self.can_take(tp, source, dest):
                        self.move(tp, source, dest)
                        return True
        return False

    def _give_edges(self, broker: int, used: frozenset[PartIndex]) -> Iterable[Hop]:
        """Replicas ``broker`` may hand to another broker: (partition, receiver)."""
        for tp in self._movable(broker):
            if tp not in used:
                for dest in self.emptiest_first(self.holdings):
                    if self.can_take(tp, broker, dest):
                        yield tp, dest

    def _take_edges(self, broker: int, used: frozenset[PartIndex]) -> Iterable[Hop]:
        """Replicas ``broker`` may take from another broker: (partition, giver)."""
        for source in self.fullest_first(self.holdings):
            for tp in self._movable(source):
                if tp not in used and self.can_take(tp, source, broker):
                    yield tp, source

    # -- preferred leaders ---------------------------------------------------------------

    def balance_leaders(self) -> None:
        """Alternating paths of leader hand-overs: first nobody leads more than
        ceil(P/n), then nobody fewer than floor(P/n). A path exists whenever a
        balanced choice of leaders among the current replicas does."""
        floor, extra = divmod(len(self.replicas), len(self.holdings))
        ceil = floor + (extra > 0)
        led = Counter(lst[0] for lst in self.replicas.values())

        def hand_edges(broker: int, used: frozenset[PartIndex]) -> Iterable[Hop]:
            for tp in sorted(self.holdings[broker]):
                lst = self.replicas[tp]
                if lst[0] == broker:
                    yield from ((tp, b) for b in sorted(lst[1:]))

        def receive_edges(broker: int, used: frozenset[PartIndex]) -> Iterable[Hop]:
            for tp in sorted(self.holdings[broker]):
                if self.replicas[tp][0] != broker:
                    yield tp, self.replicas[tp][0]

        while over := [b for b in self.holdings if led[b] > ceil]:
            path = _shortest_path(over, hand_edges, lambda b: led[b] < ceil)
            if not path:
                break
            self._hand_over(path, led)
        while under := [b for b in self.holdings if led[b] < floor]:
            path = _shortest_path(under, receive_edges, lambda b: led[b] > floor)
            if not path:
                break
            self._hand_over([(leader, tp, taker) for taker, tp, leader in path], led)

    def _hand_over(self, path: list[tuple[int, PartIndex, int]], led: Counter[int]) -> None:
        for old, tp, new in path:
            lst = self.replicas[tp]
            assert lst[0] == old and new in lst, f"{new} cannot lead {self.names[tp]} for {old}"
            i = lst.index(new)
            lst[0], lst[i] = new, old  # a swap: no replica moves
            led[old] -= 1
            led[new] += 1


PartIndex = int
Hop = tuple[PartIndex, int]
Edges = Callable[[int, frozenset[PartIndex]], Iterable[Hop]]


def _shortest_path(
    sources: Sequence[int], edges: Edges, is_goal: Callable[[int], bool]
) -> list[tuple[int, PartIndex, int]]:
    """Breadth-first search over brokers; hops (from, partition, to), no partition twice."""
    parent: dict[int, tuple[int, PartIndex] | None] = {b: None for b in sorted(sources)}
    used: dict[int, frozenset[PartIndex]] = {b: frozenset() for b in parent}
    queue = deque(sorted(sources))
    while queue:
        broker = queue.popleft()
        for tp, nxt in edges(broker, used[broker]):
            if nxt in parent:
                continue
            parent[nxt] = (broker, tp)
            used[nxt] = used[broker] | {tp}
            if is_goal(nxt):
                return _unwind(parent, nxt)
            queue.append(nxt)
    return []


def _unwind(
    parent: dict[int, tuple[int, PartIndex] | None], end: int
) -> list[tuple[int, PartIndex, int]]:
    hops = []
    while (step := parent[end]) is not None:
        hops.append((step[0], step[1], end))
        end = step[0]
    return hops[::-1]


def _check_replicas(tp: TopicPartition, replicas: list[int], broker_count: int) -> None:
    if not replicas or len(set(replicas)) != len(replicas):
        raise PlacementError(
            f"{tp.topic}-{tp.partition} has the replica list {replicas}: it must be "
            f"non-empty and name each broker once",
            Errors.INVALID_REPLICA_ASSIGNMENT,
        )
    if len(replicas) > broker_count:
        raise PlacementError(
            f"{tp.topic}-{tp.partition} has {len(replicas)} replicas but only "
            f"{broker_count} broker(s) are listed to hold them"
        )
