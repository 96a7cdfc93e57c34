"""Bounded steps: how much work a node's thread does between two checkpoints.

Every task of a node shares one trio thread, so a second task or a second
thread (under the GIL) adds no concurrency: work whose size grows with the
metadata (replaying records, a controller command over 100,000 partitions,
writing or loading a snapshot, an image digest, the broker's image diff)
proceeds in slices of at most ``MAX_UNITS_PER_SLICE`` units, and the thread
serves timers, fetches and heartbeats between two slices. A unit is one
record decoded, generated or encoded, or one partition examined: each costs
a few microseconds in Python, so a slice stays within a few milliseconds.

Kafka bounds its controller the same way (QuorumController's
MAX_RECORDS_PER_BATCH, 10,000) but runs it on a thread apart from Raft's
I/O; here the bound has to be cooperative, and smaller.
"""

from __future__ import annotations

from typing import Final

import attrs

__all__ = ["MAX_UNITS_PER_SLICE", "SliceReport"]

MAX_UNITS_PER_SLICE: Final = 1000


@attrs.frozen
class SliceReport:
    """What one slice did: its kind ("replay", "controller-op", ...) and its units."""

    kind: str
    units: int
