"""Which ``__consumer_offsets`` partition holds a group: Kafka's mapping.

Every broker must compute the same partition for a group id, and it must be
the one Kafka computes, so that tools and clients that reason about it (and
a cluster's existing ``__consumer_offsets`` layout) agree.  Kafka:
``Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions``, where
``String.hashCode`` is ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code units
in wrapping 32-bit arithmetic, and ``Utils.abs(n)`` is ``Math.abs(n)`` except
that ``Integer.MIN_VALUE`` gives 0 (clients/.../common/utils/Utils.java; not
``n & 0x7fffffff``, which differs for every negative hash).
"""

from __future__ import annotations

__all__ = ["java_string_hash", "offsets_partition_for"]

_MASK_32 = 0xFFFFFFFF


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode()``: a signed 32-bit int over UTF-16 code units."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & _MASK_32
    return h - (1 << 32) if h & 0x80000000 else h


def offsets_partition_for(group_id: str, num_partitions: int) -> int:
    """The ``__consumer_offsets`` partition of ``group_id`` (Kafka's ``partitionFor``)."""
    if num_partitions < 1:
        raise ValueError(f"offsets.topic.num.partitions must be at least 1, got {num_partitions}")
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % num_partitions
