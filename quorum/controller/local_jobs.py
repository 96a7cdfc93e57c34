"""``LocalJobs``: a command and the jobs it hands to the background, run to the end at once.

The active controller runs a command's follow-up jobs (``partition_jobs``)
later, between other operations. Tests and tools that call a command
function directly want its whole effect at once: ``LocalJobs`` gives the
command a context whose working image, partition index and background are
its own, runs the command, then every job it spawned (and any they spawn),
each to the end, folding each step's records into its working image as the
controller would, and returns all their records and the command's response.
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Callable, Generator, Hashable
from typing import Any, TypeVar

import attrs

from quorum.controller.delta import fold_records
from quorum.controller.image import EMPTY_IMAGE, MetadataImage, Provenance
from quorum.controller.operations import Operation, Steps
from quorum.controller.partition_index import PartitionIndex, note_every_change
from quorum.controller.results import ControllerContext, ControllerResult
from quorum.wire.metadata_serde import MetadataRecord

__all__ = ["LocalJobs", "at_once_with_jobs"]

R = TypeVar("R")


class LocalJobs:
    def __init__(self, image: MetadataImage, ctx: ControllerContext) -> None:
        self.working = image
        self.index = PartitionIndex()
        note_every_change(self.index, EMPTY_IMAGE, image)
        self._base_offset = ctx.next_offset
        self._written = 0
        self._keys: set[Hashable] = set()
        self._spawned: deque[tuple[Hashable, Operation[Any]]] = deque()
        self.context = attrs.evolve(
            ctx, next_append_offset=self._append_offset, working_image=lambda: self.working,
            partitions=self.index, background=self, may_hold=self.index.holds_partitions,
        )

    # -- Background --------------------------------------------------------------------------

    def spawn(self, key: Hashable, name: str, steps: Generator[Any, None, None]) -> None:
        if key in self._keys:
            steps.close()
            return
        self._keys.add(key)
        self._spawned.append((key, Operation(name, steps)))

    def running(self, key: Hashable) -> bool:
        return key in self._keys

    # -- running -----------------------------------------------------------------------------

    def run(self, operation: Operation[Any]) -> ControllerResult[Any]:
        """``operation`` to the end, then every job spawned meanwhile, in order."""
        records = self._run_one(operation)
        while self._spawned:
            key, job = self._spawned.popleft()
            records += self._run_one(job)
            self._keys.discard(key)
        return ControllerResult(tuple(records), operation.response)

    def _run_one(self, operation: Operation[Any]) -> list[MetadataRecord]:
        records: list[MetadataRecord] = []
        while not operation.done:
            written = operation.step()
            if written:
                self._written += len(written)
                before = self.working
                self.working = fold_records(
                    before, list(written), Provenance(self._append_offset(), 1)
                )
                # as committed at once: the index follows the working image
                note_every_change(self.index, before, self.working)
                records += written
        return records

    def _append_offset(self) -> int:
        return self._base_offset + self._written


def at_once_with_jobs(
    name: str, steps: Callable[..., Steps[R]]
) -> Callable[..., ControllerResult[R]]:
    """A command ``steps(image, request, version, ctx, *more)`` and the jobs it spawns,
    run to the end at once in a ``LocalJobs`` (tests, tools)."""

    @functools.wraps(steps)
    def run(
        image: MetadataImage, request: Any, version: int, ctx: ControllerContext, *more: Any
    ) -> ControllerResult[R]:
        local = LocalJobs(image, ctx)
        return local.run(Operation(name, steps(image, request, version, local.context, *more)))

    return run
