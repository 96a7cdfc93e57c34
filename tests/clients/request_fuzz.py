"""Well-formed requests with unusual content, built from the message schemas.

``RequestMaker`` walks a request class's declared fields (``quorum.wire.schema``)
for one version and fills each from a seeded generator: integers at and near
their type's bounds, small ones and the cluster's node ids; strings empty, long,
non-ASCII, names of real topics and configs; nulls where the version allows them;
empty, duplicated and long arrays; record batches whole, doubled, cut short or
with odd producer fields; topic ids real, zero and unknown. Every request it
makes encodes (a value the codec refuses is drawn again by the caller). What a
node must do with them is Kafka's: answer, or close the connection where Kafka
does, and never fail as a process.
"""

from __future__ import annotations

import random
import uuid
from typing import Any, Final

import attrs

from quorum.wire.errors import WireEncodeError
from quorum.wire.records import Record, build_batch, build_batch_from_values
from quorum.wire.schema import ArrayType, Primitive, StructType, WireType, field_specs

__all__ = ["RequestMaker"]

_INT_BOUNDS: Final = {
    "int8": (-(2**7), 2**7 - 1), "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1), "uint32": (0, 2**32 - 1),
}
# fields that make a request wait: short most of the time, so a run stays bounded
_WAITS: Final = ("max_wait_ms", "timeout_ms", "session_timeout_ms", "rebalance_timeout_ms")


class RequestMaker:
    def __init__(self, rng: random.Random, *, topics: dict[str, uuid.UUID],
                 node_ids: list[int]) -> None:
        self._rng = rng
        self._topic_ids = list(topics.values())
        self._names = [*topics, "__consumer_offsets", "__cluster_metadata", "g1", "consumer",
                       "range", "cleanup.policy", "retention.ms", "min.insync.replicas",
                       "", "x" * 300, ".", "..", "é€😀", "a b", "\x00", "-1", "unknown-topic"]
        self._small = [0, 0, 1, 2, 3, -1, -2, 1000, *node_ids]

    def request(self, cls: type, version: int) -> Any:
        return self._struct(cls, version, depth=0)

    def _struct(self, cls: type, version: int, depth: int) -> Any:
        aliases = {a.name: a.alias for a in attrs.fields(cls)}
        values: dict[str, Any] = {}
        rng = self._rng
        for name, spec, default in field_specs(cls):
            if version not in spec.versions:
                continue
            if version in spec.nullable and rng.random() < 0.2:
                value = None
            elif rng.random() < 0.1:
                value = default
            else:
                value = self._value(spec.type, version, depth)
            if name in _WAITS and isinstance(value, int) and rng.random() < 0.9:
                value = rng.choice([0, 1, 100, -1])
            values[aliases[name]] = value
        return cls(**values)

    def _value(self, wire: WireType, version: int, depth: int) -> Any:
        if isinstance(wire, Primitive):
            return self._primitive(wire.name)
        if isinstance(wire, StructType):
            return self._struct(wire.cls, version, depth + 1)
        return self._array(wire, version, depth)

    def _array(self, wire: ArrayType, version: int, depth: int) -> tuple[Any, ...]:
        rng = self._rng
        draw = rng.random()
        count = (0 if draw < 0.15 else rng.randrange(1, 4) if draw < 0.8
                 else rng.randrange(20, 120) if draw < 0.92 and depth < 2 else 2)
        if count >= 2 and rng.random() < 0.4:  # the same element again and again
            one = self._value(wire.element, version, depth)
            return (one,) * count
        return tuple(self._value(wire.element, version, depth) for _ in range(count))

    def _primitive(self, name: str) -> Any:
        rng = self._rng
        if name in _INT_BOUNDS:
            low, high = _INT_BOUNDS[name]
            draw = rng.random()
            value = (rng.choice(self._small) if draw < 0.6
                     else rng.choice([low, high, low + 1, high - 1]) if draw < 0.88
                     else rng.randint(low, high))
            return max(low, min(high, value))
        if name == "float64":
            return rng.choice((0.0, -1.5, 1e300, float("inf")))
        if name == "bool":
            return rng.random() < 0.5
        if name == "uuid":
            return rng.choice([uuid.UUID(int=0), uuid.UUID(int=rng.getrandbits(128)),
                               *self._topic_ids, *self._topic_ids])
        if name == "string":
            if rng.random() < 0.1:
                return "".join(rng.choice("abc-_.09 é€") for _ in range(rng.randrange(20)))
            return rng.choice(self._names)
        if name == "records":
            return self._records()
        return rng.randbytes(rng.choice([0, 0, 4, 30]))

    def _records(self) -> bytes | None:
        rng = self._rng
        shape = rng.randrange(9)
        if shape == 0:
            return None
        if shape == 1:
            return b""
        if shape == 2:
            return rng.randbytes(rng.randrange(80))
        count = rng.choice([0, 1, 3])
        base = rng.choice([0, 0, 5, -1, 2**62, 2**63 - 1])
        try:
            batch = build_batch(
                [Record(offset_delta=i, key=None, value=b"v%d" % i, headers=())
                 for i in range(count)],
                base_offset=base,
                producer_id=rng.choice([-1, -1, 0, 1000, 2**63 - 1]),
                producer_epoch=rng.choice([-1, -1, 0, 32767]),
                base_sequence=rng.choice([-1, -1, 0, 2**31 - 1]),
                is_transactional=rng.random() < 0.15,
                is_control=rng.random() < 0.1,
                partition_leader_epoch=rng.choice([-1, 0, 99]),
                base_timestamp=rng.choice([None, 0, -1, 2**62]),
            )
        except WireEncodeError:  # a field the batch header cannot hold: a plain batch
            batch = build_batch_from_values([b"x"], base_offset=max(base, 0))
        if shape == 3:
            return batch + batch
        if shape == 4:
            return batch[: rng.randrange(len(batch))]
        if shape == 5:
            return batch + rng.randbytes(rng.randrange(1, 12))
        return batch
