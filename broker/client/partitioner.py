"""Kafka's default partitioner: murmur2 of the key, sticky for records without one.

A record with a key goes to ``to_positive(murmur2(key)) % partitions``
(Kafka's ``BuiltInPartitioner.partitionForKey``), so pykraft's producer puts a
key where the Java, librdkafka (``murmur2_random``) and kafka-python clients
put it. A record without a key sticks to one partition until the batch for
it is sent (KIP-480): batches fill up instead of one record going to every
partition; then another partition is picked at random among those with a
leader, not the same one again when there is a choice. Sans-I/O: the random
source is given.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Final

__all__ = ["StickyPartitioner", "murmur2", "partition_for_key", "to_positive"]

_M: Final = 0x5BD1E995
_SEED: Final = 0x9747B28C
_MASK: Final = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2``: a signed 32-bit hash of ``data``."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    whole = length & ~3
    for i in range(0, whole, 4):
        k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24)
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    rest = length & 3
    if rest == 3:
        h ^= data[whole + 2] << 16
    if rest >= 2:
        h ^= data[whole + 1] << 8
    if rest >= 1:
        h ^= data[whole]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def to_positive(number: int) -> int:
    """Kafka's ``Utils.toPositive``: the low 31 bits (not the absolute value)."""
    return number & 0x7FFFFFFF


def partition_for_key(key: bytes, partitions: int) -> int:
    if partitions <= 0:
        raise ValueError(f"a topic has at least one partition, not {partitions}")
    return to_positive(murmur2(key)) % partitions


class StickyPartitioner:
    """Where records without a key go, per topic (KIP-480)."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self._sticky: dict[str, int] = {}

    def partition(self, topic: str, available: Sequence[int], partitions: int) -> int:
        """The topic's sticky partition; ``available``: partitions with a leader (all if
        none has one, as Kafka's client does)."""
        current = self._sticky.get(topic)
        if current is not None and current < partitions:
            return current
        return self._pick(topic, available, partitions, previous=None)

    def batch_sent(self, topic: str, partition: int, available: Sequence[int],
                   partitions: int) -> None:
        """The sticky partition's batch left: the next keyless record goes elsewhere."""
        if self._sticky.get(topic) == partition:
            self._pick(topic, available, partitions, previous=partition)

    def _pick(self, topic: str, available: Sequence[int], partitions: int,
              previous: int | None) -> int:
        choices = [p for p in available if p != previous] or list(available)
        if not choices:
            choices = [p for p in range(partitions) if p != previous] or [0]
        chosen = self._rng.choice(choices)
        self._sticky[topic] = chosen
        return chosen
