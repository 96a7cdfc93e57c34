"""ImageCache: one computation per (image, key), in slices, shared by concurrent askers."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from quorum.controller.image import EMPTY_IMAGE, MetadataImage, Provenance
from quorum.controller.image_cache import ImageCache, build_in_slices
from quorum.controller.slicing import MAX_UNITS_PER_SLICE

FIRST = MetadataImage(provenance=Provenance(10, 1))
SECOND = MetadataImage(provenance=Provenance(20, 1))


class Counting:
    """A builder of ``units`` units whose value names its image and key; logs its steps."""

    def __init__(self, log: list[str], image: MetadataImage, key: str, units: int) -> None:
        self.log, self.image, self.key = log, image, key
        self.left = units
        log.append(f"start {key}@{image.provenance.offset}")

    def step(self, max_units: int) -> bool:
        done = min(max_units, self.left)
        self.left -= done
        self.log.append(f"step {done}")
        return self.left == 0

    def result(self) -> list[str]:
        return [self.key, str(self.image.provenance.offset)]


def builder_of(log: list[str], image: MetadataImage, key: str, units: int = 10) -> Counting:
    return Counting(log, image, key, units)


def test_the_same_image_and_key_give_the_same_object_and_a_new_image_a_new_one() -> None:
    log: list[str] = []
    cache = ImageCache[str, list[str]](max_entries=4)
    first = cache.get(FIRST, "a", lambda: builder_of(log, FIRST, "a"))
    assert cache.get(FIRST, "a", lambda: builder_of(log, FIRST, "a")) is first
    other_key = cache.get(FIRST, "b", lambda: builder_of(log, FIRST, "b"))
    assert other_key == ["b", "10"]
    assert cache.get(SECOND, "a", lambda: builder_of(log, SECOND, "a")) == ["a", "20"]
    # the first image's values went with the question about another image
    again = cache.get(FIRST, "a", lambda: builder_of(log, FIRST, "a"))
    assert again == first and again is not first
    assert [line for line in log if line.startswith("start")] == [
        "start a@10", "start b@10", "start a@20", "start a@10"
    ]
    assert cache.computed == 4


def test_the_least_recently_used_key_goes_first() -> None:
    log: list[str] = []
    cache = ImageCache[str, list[str]](max_entries=2)
    a = cache.get(FIRST, "a", lambda: builder_of(log, FIRST, "a"))
    cache.get(FIRST, "b", lambda: builder_of(log, FIRST, "b"))
    assert cache.get(FIRST, "a", lambda: builder_of(log, FIRST, "a")) is a  # a is now recent
    cache.get(FIRST, "c", lambda: builder_of(log, FIRST, "c"))  # b goes
    assert cache.get(FIRST, "a", lambda: builder_of(log, FIRST, "a")) is a
    cache.get(FIRST, "b", lambda: builder_of(log, FIRST, "b"))
    assert cache.computed == 4


async def test_a_value_is_computed_in_slices_with_a_checkpoint_between_them() -> None:
    log: list[str] = []
    units = 2 * MAX_UNITS_PER_SLICE + 1

    async def other_task() -> None:
        for _ in range(3):
            log.append("other")
            await trio.lowlevel.checkpoint()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(other_task)
        value = await build_in_slices(builder_of(log, FIRST, "a", units))
    assert value == ["a", "10"]
    steps = [line for line in log if line.startswith("step")]
    assert steps == [f"step {MAX_UNITS_PER_SLICE}", f"step {MAX_UNITS_PER_SLICE}", "step 1"]
    # the other task ran between the slices, not only before or after them all
    first, last = log.index(steps[0]), len(log) - 1 - log[::-1].index("step 1")
    assert "other" in log[first:last]


async def test_concurrent_askers_of_one_image_and_key_share_one_computation() -> None:
    log: list[str] = []
    cache = ImageCache[str, list[str]](max_entries=4)
    found: list[list[str]] = []

    async def ask(key: str) -> None:
        found.append(await cache.get_in_slices(
            FIRST, key, lambda: builder_of(log, FIRST, key, 5 * MAX_UNITS_PER_SLICE)
        ))

    async with trio.open_nursery() as nursery:
        for key in ("a", "a", "b", "a"):
            nursery.start_soon(ask, key)
    assert sorted(line for line in log if line.startswith("start")) == ["start a@10", "start b@10"]
    a_values = [value for value in found if value[0] == "a"]
    assert len(a_values) == 3 and all(value is a_values[0] for value in a_values)
    assert cache.computed == 2
    assert await cache.get_in_slices(FIRST, "a", lambda: builder_of(log, FIRST, "a")) is a_values[0]


async def test_a_waiter_goes_on_with_the_computation_when_its_task_is_cancelled() -> None:
    log: list[str] = []
    cache = ImageCache[str, list[str]]()
    found: list[list[str]] = []

    async def ask() -> None:
        found.append(await cache.get_in_slices(
            FIRST, "a", lambda: builder_of(log, FIRST, "a", 100 * MAX_UNITS_PER_SLICE)
        ))

    async with trio.open_nursery() as nursery:
        first_asker = trio.CancelScope()

        async def ask_then_be_cancelled() -> None:
            with first_asker:
                await ask()

        nursery.start_soon(ask_then_be_cancelled)
        while "start a@10" not in log:
            await trio.lowlevel.checkpoint()
        nursery.start_soon(ask)
        for _ in range(2):  # the second asker runs until it waits for the first one's value
            await trio.lowlevel.checkpoint()
        first_asker.cancel()
    assert found == [["a", "10"]]  # the second asker's
    # one builder: the second asker stepped on from where the cancelled one stopped
    assert [line for line in log if line.startswith("start")] == ["start a@10"]


@pytest.mark.parametrize("max_entries", [0, -1])
def test_a_cache_keeps_at_least_one_value(max_entries: int) -> None:
    with pytest.raises(AssertionError):
        ImageCache[str, str](max_entries=max_entries)


def test_an_image_is_named_by_identity_not_equality() -> None:
    log: list[str] = []
    cache = ImageCache[str, list[str]]()
    equal_copy = MetadataImage(provenance=EMPTY_IMAGE.provenance)
    assert equal_copy == EMPTY_IMAGE and equal_copy is not EMPTY_IMAGE
    cache.get(EMPTY_IMAGE, "a", lambda: builder_of(log, EMPTY_IMAGE, "a"))
    cache.get(equal_copy, "a", lambda: builder_of(log, equal_copy, "a"))
    assert cache.computed == 2
