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

Answers computed from an image (a digest, a broker's Metadata answer, the
image as JSON) take the shape of a ``SlicedBuilder``: a sans-I/O object that
does at most ``max_units`` units per ``step`` and has its ``result`` once a
step returned True; ``quorum.controller.image_cache`` runs one in slices on a
node's thread, ``build_at_once`` in one go (tools, tests).
"""

from __future__ import annotations

from typing import Final, Protocol, TypeVar

import attrs

__all__ = ["MAX_UNITS_PER_SLICE", "SliceReport", "SlicedBuilder", "build_at_once"]

MAX_UNITS_PER_SLICE: Final = 1000

T_co = TypeVar("T_co", covariant=True)


class SlicedBuilder(Protocol[T_co]):
    """A computation done a bounded slice at a time."""

    def step(self, max_units: int) -> bool:
        """Do at most ``max_units`` units of work; True once the result is complete."""
        ...

    def result(self) -> T_co:
        """The result, once a step returned True."""
        ...


def build_at_once(builder: SlicedBuilder[T_co]) -> T_co:
    """Every slice in one go (tools, tests, and answers small by nature)."""
    while not builder.step(1 << 62):
        pass
    return builder.result()


@attrs.frozen
class SliceReport:
    """What one slice did: its kind ("replay", "controller-op", ...) and its units; for
    a controller operation, its name (what a stall warning names)."""

    kind: str
    units: int
    detail: str | None = None
