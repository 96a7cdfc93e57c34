"""PykraftDescribeImage on any listener: the image's JSON, written in slices, once per image."""

from __future__ import annotations

import json

import trio

from quorum.controller.image import MetadataImage
from quorum.controller.image_json import image_to_json
from quorum.node.local_answers import ListenerApis
from quorum.wire.errors import WireDecodeError
from quorum.wire.messages import PykraftDescribeImageRequest, PykraftDescribeImageResponse
from tests.unit.controller.large_images import large_image

BIG = large_image({"big": 5_000, "small": 2}, reassigning_every=11)


def apis() -> ListenerApis:
    return ListenerApis({10001: (0, 0)}, where="a test listener", rejected=WireDecodeError)


async def describe(
    listener: ListenerApis, image: MetadataImage, include_image: bool = True
) -> PykraftDescribeImageResponse:
    answer = await listener.answer_common(
        PykraftDescribeImageRequest(include_image=include_image), node_id=4, image=lambda: image
    )
    assert isinstance(answer, PykraftDescribeImageResponse)
    return answer


async def test_the_image_json_is_json_dumps_of_image_to_json_and_kept_for_the_image() -> None:
    listener = apis()
    first = await describe(listener, BIG)
    assert first.image_json == json.dumps(image_to_json(BIG))
    again = await describe(listener, BIG)
    assert again.image_json is first.image_json
    assert (await describe(listener, BIG, include_image=False)).image_json is None
    newer = large_image({"small": 2})
    assert (await describe(listener, newer)).image_json == json.dumps(image_to_json(newer))


async def test_the_listener_serves_other_tasks_while_it_writes_the_json() -> None:
    listener = apis()
    turns: list[str] = []

    async def other_task() -> None:
        while True:
            turns.append("other")
            await trio.lowlevel.checkpoint()

    await describe(listener, BIG, include_image=False)  # the digest, kept for the image
    async with trio.open_nursery() as nursery:
        nursery.start_soon(other_task)
        await trio.lowlevel.checkpoint()
        before = len(turns)
        await describe(listener, BIG)
        # 5,000 partitions and then some: the JSON alone takes six slices, with the other
        # task's turn between two of them (in one go it would get one turn at most)
        assert len(turns) - before >= 3
        nursery.cancel_scope.cancel()
