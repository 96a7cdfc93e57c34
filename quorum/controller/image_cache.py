"""Values computed from the latest image asked about: once per key, in slices, shared.

Some questions a node answers cost work that grows with the metadata: the
image digest, a broker's Metadata answer for every topic, the image as
JSON. Images are immutable, so (image identity, key) names one value for
good, and clients ask the same question about one image again and again
(they poll metadata) and at the same time. ``ImageCache`` keeps the values
of the latest image asked about (the ``max_entries`` most recently used
keys; a question about another image drops them all, so an old image is
not kept alive), computes a missing value with a ``SlicedBuilder``
(``quorum.controller.slicing``), with a checkpoint between slices so the
node keeps serving fetches and heartbeats meanwhile, and has every task
that asks for a value being computed wait for that one computation.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

import trio

from quorum.controller.image import MetadataImage
from quorum.controller.slicing import MAX_UNITS_PER_SLICE, SlicedBuilder, build_at_once

__all__ = ["ImageCache", "build_in_slices"]

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")


async def build_in_slices(builder: SlicedBuilder[T]) -> T:
    """Run ``builder`` ``MAX_UNITS_PER_SLICE`` units at a time, a checkpoint between slices."""
    while not builder.step(MAX_UNITS_PER_SLICE):
        await trio.lowlevel.checkpoint()
    return builder.result()


class _Computation(Generic[T]):
    """One value being computed. A task steps ``builder``; others wait on ``done``. If the
    stepping task is cancelled (a client that gave up), the builder keeps its progress and
    the next asker goes on from there."""

    __slots__ = ("builder", "done", "image", "result", "stepping")

    def __init__(self, image: MetadataImage, builder: SlicedBuilder[T]) -> None:
        self.image = image
        self.builder = builder
        self.done = trio.Event()
        self.stepping = False
        self.result: tuple[T] | None = None  # (value,) once computed


class ImageCache(Generic[K, T]):
    """Values of the latest image asked about, by key; see the module docstring."""

    def __init__(self, *, max_entries: int = 1) -> None:
        assert max_entries >= 1, max_entries
        self._max_entries = max_entries
        self._image: MetadataImage | None = None
        self._values: dict[K, T] = {}  # least recently used first
        self._running: dict[K, _Computation[T]] = {}
        self.computed = 0  # values computed since the start (tests, metrics)

    def get(self, image: MetadataImage, key: K, builder: Callable[[], SlicedBuilder[T]]) -> T:
        """The value, computed in one go if missing (tools, tests)."""
        if self._lookup(image, key):
            return self._values[key]
        value = build_at_once(builder())
        self._keep(image, key, value)
        return value

    async def get_in_slices(
        self, image: MetadataImage, key: K, builder: Callable[[], SlicedBuilder[T]]
    ) -> T:
        """The value; computed in slices if missing, or awaited if another task computes it."""
        if self._lookup(image, key):
            return self._values[key]
        while True:
            running = self._running.get(key)
            if running is None or running.image is not image:
                running = self._running[key] = _Computation(image, builder())
            if not running.stepping:
                break
            await running.done.wait()
            if running.result is not None:
                return running.result[0]
            # its task was cancelled: go on where it stopped, unless another asker does
        running.stepping = True
        running.done = trio.Event()
        try:
            value = await build_in_slices(running.builder)
            running.result = (value,)
            if self._running.get(key) is running:
                del self._running[key]
            self._keep(image, key, value)
            return value
        finally:
            running.stepping = False
            running.done.set()

    def _lookup(self, image: MetadataImage, key: K) -> bool:
        """Whether ``key``'s value of ``image`` is kept (it becomes the most recent)."""
        if image is not self._image:
            # a question about another image: the values of the last one go
            self._image, self._values = image, {}
            return False
        if key not in self._values:
            return False
        self._values[key] = self._values.pop(key)
        return True

    def _keep(self, image: MetadataImage, key: K, value: T) -> None:
        self.computed += 1
        if image is not self._image:
            return  # another image was asked about meanwhile: this one is not the latest
        self._values[key] = value
        while len(self._values) > self._max_entries:
            del self._values[next(iter(self._values))]
