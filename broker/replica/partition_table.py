"""The partitions one broker hosts, by key and by (topic name, index)."""

from __future__ import annotations

from collections.abc import Iterator

from broker.replica.manager import PartitionKey
from broker.replica.partition import Partition

__all__ = ["PartitionTable"]


class PartitionTable:
    def __init__(self) -> None:
        self._by_key: dict[PartitionKey, Partition] = {}
        self._by_name: dict[tuple[str, int], Partition] = {}

    def __len__(self) -> int:
        return len(self._by_key)

    def __iter__(self) -> Iterator[Partition]:
        return iter(list(self._by_key.values()))

    def __contains__(self, key: object) -> bool:
        return key in self._by_key

    def get(self, key: PartitionKey) -> Partition | None:
        return self._by_key.get(key)

    def by_name(self, topic: str, index: int) -> Partition | None:
        return self._by_name.get((topic, index))

    def add(self, partition: Partition) -> None:
        assert partition.key not in self._by_key, f"{partition} is hosted already"
        old = self._by_name.get(partition.name)
        if old is not None:
            # a topic deleted and created again under its name: the new one answers to it
            del self._by_key[old.key]
        self._by_key[partition.key] = partition
        self._by_name[partition.name] = partition

    def remove(self, key: PartitionKey) -> Partition | None:
        partition = self._by_key.pop(key, None)
        if partition is not None:
            name = partition.name
            if self._by_name.get(name) is partition:
                del self._by_name[name]
        return partition
