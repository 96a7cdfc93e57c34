"""The image as JSON written in slices: the very text of ``json.dumps(image_to_json(image))``."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from quorum.controller.image import EMPTY_IMAGE, MetadataImage
from quorum.controller.image_json import ImageJsonBuilder, image_json_text, image_to_json
from quorum.controller.slicing import MAX_UNITS_PER_SLICE
from tests.unit.controller.image_strategies import images
from tests.unit.controller.large_images import large_image


def written_in_slices(image: MetadataImage, max_units: int) -> tuple[str, list[int], list[str]]:
    """(the text, units done per slice, the text each slice added)."""
    builder = ImageJsonBuilder(image)
    units: list[int] = []
    added: list[str] = []
    done = False
    while not done:
        before_units, before_text = builder.units, len(builder.written())
        done = builder.step(max_units)
        units.append(builder.units - before_units)
        added.append(builder.written()[before_text:])
    return builder.result(), units, added


@settings(max_examples=60, deadline=None)
@given(images(), st.integers(1, 5))
def test_the_text_written_in_slices_is_json_dumps_of_image_to_json(
    image: MetadataImage, max_units: int
) -> None:
    text, units, _ = written_in_slices(image, max_units)
    assert text == json.dumps(image_to_json(image))
    assert all(done <= max_units for done in units)
    assert image_json_text(image) == text


@given(images())
@settings(max_examples=30, deadline=None)
def test_config_resources_keep_their_own_order(image: MetadataImage) -> None:
    listed = [(c["resourceType"], c["resourceName"]) for c in image_to_json(image)["configs"]]
    assert listed == [(r.type.name, r.name) for r in sorted(image.configs)]


def test_the_empty_image() -> None:
    assert image_json_text(EMPTY_IMAGE) == json.dumps(image_to_json(EMPTY_IMAGE))


def test_a_large_topic_is_written_a_chunk_of_partitions_per_slice() -> None:
    image = large_image({"big": 2500, "small": 3, "zero": 0}, brokers=4, reassigning_every=7)
    text, units, added = written_in_slices(image, MAX_UNITS_PER_SLICE)
    assert text == json.dumps(image_to_json(image))
    assert len(units) >= 3 and max(units) <= MAX_UNITS_PER_SLICE
    # counted from the text itself: no slice wrote more partitions than a slice's units
    written = [piece.count('"partition": ') for piece in added]
    assert sum(written) == 2503 and max(written) <= MAX_UNITS_PER_SLICE
    assert sum(units) == 2503 + 4 + 3 + 3 + 1  # partitions, brokers, topics, configs, head
