"""The records every client's produce/consume tests send, and the checks of what came back."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

__all__ = ["COUNT", "PARTITIONS", "check_read_back", "records"]

COUNT = 10_000
PARTITIONS = 3


def records(tag: str, count: int = COUNT) -> list[tuple[bytes, bytes]]:
    """(key, value) pairs; values are unique, so a duplicate or a loss shows."""
    return [(b"%s-k%d" % (tag.encode(), i % 97), b"%s-v%06d" % (tag.encode(), i)) for i in range(count)]


def check_read_back(
    sent: Iterable[tuple[bytes, bytes]],
    read: Iterable[tuple[int, int, bytes | None, bytes | None]],
    acknowledged: Mapping[bytes, tuple[int, int]] | None = None,
) -> None:
    """Every record sent was read exactly once, each partition in offset order with no gap
    and in the order it was sent; where the producer learnt an offset, it is the record's."""
    sent = list(sent)
    read = list(read)
    by_partition: dict[int, list[tuple[int, bytes | None, bytes | None]]] = {}
    for partition, offset, key, value in read:
        by_partition.setdefault(partition, []).append((offset, key, value))
    values = [value for _, _, _, value in read]
    assert len(values) == len(set(values)), "a record was read twice"
    assert sorted(v for v in values if v is not None) == sorted(v for _, v in sent), (
        f"{len(read)} records read back, {len(sent)} sent"
    )
    order = {value: i for i, (_, value) in enumerate(sent)}
    keys = dict((v, k) for k, v in sent)
    for partition, found in by_partition.items():
        offsets = [offset for offset, _, _ in found]
        assert offsets == list(range(offsets[0], offsets[0] + len(offsets))), partition
        positions = [order[value] for _, _, value in found if value is not None]
        assert positions == sorted(positions), f"partition {partition} out of send order"
        for offset, key, value in found:
            assert value is not None and keys[value] == key, (partition, offset)
            if acknowledged is not None and value in acknowledged:
                assert acknowledged[value] == (partition, offset), (value, partition, offset)
    # the default partitioner sends each key to one partition
    partitions_of_key: dict[bytes | None, set[int]] = {}
    for partition, _, key, _ in read:
        partitions_of_key.setdefault(key, set()).add(partition)
    assert all(len(p) == 1 for p in partitions_of_key.values())
