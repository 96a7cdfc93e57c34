"""Operations parked until a condition holds or a deadline passes (Kafka's purgatory).

Sans-I/O and never polled: an operation is watched under the keys it waits
on (partitions); the owner asks for the watchers of a key after something
changed there (``watchers``) and completes those whose condition holds
(``complete``); ``expire`` hands back every operation whose deadline has
passed, and ``next_deadline_ms`` tells the owner when to call it. Completion
and expiry each happen at most once per operation.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Hashable, Iterable
from typing import Generic, TypeVar

__all__ = ["Purgatory"]

Op = TypeVar("Op")


class Purgatory(Generic[Op]):
    def __init__(self) -> None:
        self._ops: dict[int, tuple[Op, tuple[Hashable, ...], int]] = {}
        self._by_key: dict[Hashable, dict[int, None]] = {}
        self._deadlines: list[tuple[int, int]] = []
        self._ids = itertools.count(1)

    def __len__(self) -> int:
        return len(self._ops)

    def watch(self, op: Op, keys: Iterable[Hashable], deadline_ms: int) -> int:
        """Park ``op`` under ``keys`` until ``deadline_ms``; its id."""
        op_id = next(self._ids)
        watched = tuple(dict.fromkeys(keys))
        self._ops[op_id] = (op, watched, deadline_ms)
        for key in watched:
            self._by_key.setdefault(key, {})[op_id] = None
        heapq.heappush(self._deadlines, (deadline_ms, op_id))
        return op_id

    def watchers(self, key: Hashable) -> list[tuple[int, Op]]:
        """The operations waiting on ``key``, oldest first."""
        return [(op_id, self._ops[op_id][0]) for op_id in self._by_key.get(key, ())]

    def all_watchers(self) -> list[tuple[int, Op]]:
        return [(op_id, entry[0]) for op_id, entry in self._ops.items()]

    def complete(self, op_id: int) -> Op:
        """Take the operation out (its condition held)."""
        op, keys, _ = self._ops.pop(op_id)
        for key in keys:
            waiting = self._by_key[key]
            del waiting[op_id]
            if not waiting:
                del self._by_key[key]
        return op

    def expire(self, now_ms: int) -> list[Op]:
        """Take out every operation whose deadline is at or before ``now_ms``."""
        expired = []
        while self._deadlines and self._deadlines[0][0] <= now_ms:
            _, op_id = heapq.heappop(self._deadlines)
            if op_id in self._ops:  # completed ones leave their heap entry behind
                expired.append(self.complete(op_id))
        return expired

    def next_deadline_ms(self) -> int | None:
        while self._deadlines and self._deadlines[0][1] not in self._ops:
            heapq.heappop(self._deadlines)
        return self._deadlines[0][0] if self._deadlines else None
