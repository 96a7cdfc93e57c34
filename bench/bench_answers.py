"""Answers that grow with the metadata, in one go and in slices, on a large image.

Run ``python -m bench.bench_answers [--partitions 100000] [--topics 1] [--runs 3]``.

The image: ``--topics`` topics sharing ``--partitions`` partitions at
replication factor 3 over 3 unfenced brokers (the scale test's layout),
built in this process and then frozen out of the collector's generations as
a node does after a replay (``gc.freeze``); the collector runs during every
measurement, as in a node. For each answer:

* in one go: the answer as one call (``metadata_response`` and ``encode`` of
  its result; ``json.dumps(image_to_json(image))``;
  ``list_partition_reassignments`` with a null topic list);
* in slices: the builder a node runs, ``MAX_UNITS_PER_SLICE`` units per step,
  timed step by step; the last step includes ``result()``, which the node
  runs in the same step (``quorum.controller.image_cache.build_in_slices``);
* for Metadata, what a repeated ask about the same image costs: a cache hit
  (``MetadataAnswerCache``) plus framing the kept bytes (``encode_response``);
  for PykraftDescribeImage, framing the answer that carries the JSON text.

Rows are medians over ``--runs`` runs (max slice: the median of each run's
largest slice).
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import statistics
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import trio

from broker.api.metadata import (
    ListenerView,
    MetadataAnswerBuilder,
    ResponseSink,
    metadata_response,
)
from broker.api.metadata_cache import EncodingSink, MetadataAnswerCache
from quorum.controller.delta import fold_records
from quorum.controller.digest import build_describe_image_response
from quorum.controller.image import EMPTY_IMAGE, MetadataImage, Provenance
from quorum.controller.image_json import ImageJsonBuilder, image_to_json
from quorum.controller.operations import Operation
from quorum.controller.reassignments import (
    list_partition_reassignments,
    list_partition_reassignments_steps,
)
from quorum.controller.results import ControllerConfig, ControllerContext
from quorum.controller.slicing import MAX_UNITS_PER_SLICE, SlicedBuilder
from quorum.wire.codec import encode
from quorum.wire.messages import MetadataRequest
from quorum.wire.messages.metadata_records import (
    PartitionRecord,
    RegisterBrokerRecord,
    RegisterBrokerRecordBrokerEndpoint,
    TopicRecord,
)
from quorum.wire.messages.partition_reassignments import ListPartitionReassignmentsRequest
from quorum.wire.metadata_serde import MetadataRecord
from quorum.wire.protocol import ResponseHeader, encode_response

__all__ = ["main"]

BROKERS = 3
VERSION = 12
VIEW = ListenerView(
    node_id=1, cluster_id="bench", listener_name="PLAINTEXT", host="localhost", port=9092,
    rack=None,
)
EVERY_TOPIC = MetadataRequest(topics=None)
EVERY_REASSIGNMENT = ListPartitionReassignmentsRequest(topics=None)


def make_image(partitions: int, topics: int) -> MetadataImage:
    records: list[MetadataRecord] = [
        RegisterBrokerRecord(
            broker_id=b, incarnation_id=uuid.UUID(int=b), broker_epoch=b, fenced=False,
            end_points=(RegisterBrokerRecordBrokerEndpoint(
                name="PLAINTEXT", host="localhost", port=9092 + b, security_protocol=0
            ),),
        )
        for b in range(1, BROKERS + 1)
    ]
    for t in range(topics):
        topic_id = uuid.UUID(int=t + 1)
        records.append(TopicRecord(name=f"topic-{t:06d}", topic_id=topic_id))
        first, end = partitions * t // topics, partitions * (t + 1) // topics
        for index in range(end - first):
            replicas = tuple((index + i) % BROKERS + 1 for i in range(3))
            records.append(PartitionRecord(
                partition_id=index, topic_id=topic_id, replicas=replicas, isr=replicas,
                leader=replicas[0], leader_epoch=0, partition_epoch=0,
            ))
    return fold_records(EMPTY_IMAGE, records, Provenance(len(records), 1))


def _seconds(action: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    value = action()
    return time.perf_counter() - started, value


def in_slices(builder: SlicedBuilder[Any]) -> tuple[float, list[float], Any]:
    """(total seconds, seconds per slice, result): the loop ``build_in_slices`` runs."""
    slices: list[float] = []
    while True:
        started = time.perf_counter()
        done = builder.step(MAX_UNITS_PER_SLICE)
        value = builder.result() if done else None
        slices.append(time.perf_counter() - started)
        if done:
            return sum(slices), slices, value


def operation_in_slices(operation: Operation[Any]) -> tuple[float, list[float]]:
    slices: list[float] = []
    while not operation.done:
        started = time.perf_counter()
        operation.step()
        slices.append(time.perf_counter() - started)
    return sum(slices), slices


def _cached_ask_seconds(image: MetadataImage) -> float:
    """A Metadata ask about an image whose answer is kept: the cache hit and the framing."""

    async def asks() -> float:
        cache = MetadataAnswerCache()
        await cache.encoded_response(image, EVERY_TOPIC, VERSION, VIEW)  # computes and keeps
        started = time.perf_counter()
        body = await cache.encoded_response(image, EVERY_TOPIC, VERSION, VIEW)
        encode_response(ResponseHeader(7), 3, VERSION, body)
        return time.perf_counter() - started

    return trio.run(asks)


def _slice_rows(ms: dict[str, float], name: str, total: float, per_slice: list[float]) -> None:
    ms[f"{name} total"] = total * 1000
    ms[f"{name} max slice"] = max(per_slice) * 1000
    ms[f"{name} slices"] = len(per_slice)


def _metadata_one_go(image: MetadataImage, ms: dict[str, float]) -> bytes:
    """The answer built and encoded as before slicing; its objects go when this returns."""
    seconds, response = _seconds(lambda: metadata_response(image, EVERY_TOPIC, VERSION, VIEW))
    ms["metadata build, one go"] = seconds * 1000
    seconds, body = _seconds(lambda: encode(response, VERSION))
    ms["metadata encode, one go"] = seconds * 1000
    ms["metadata bytes"] = len(body)
    return body  # type: ignore[no-any-return]


def _metadata_rows(image: MetadataImage, ms: dict[str, float]) -> None:
    body = _metadata_one_go(image, ms)
    # the answer's objects go before the next row: the collector would walk them
    total, per_slice, _ = in_slices(
        MetadataAnswerBuilder(image, EVERY_TOPIC, VERSION, VIEW, ResponseSink())
    )
    del _
    _slice_rows(ms, "metadata build in slices", total, per_slice)
    total, per_slice, encoded = in_slices(
        MetadataAnswerBuilder(image, EVERY_TOPIC, VERSION, VIEW, EncodingSink(VERSION))
    )
    assert encoded.body == body, "the sliced encoding must give the bytes of the one-go encoding"
    _slice_rows(ms, "metadata build + encode in slices", total, per_slice)
    ms["metadata cached ask + framing"] = _cached_ask_seconds(image) * 1000


def _image_json_rows(image: MetadataImage, ms: dict[str, float]) -> None:
    seconds, text = _seconds(lambda: json.dumps(image_to_json(image)))
    ms["image json, one go"] = seconds * 1000
    ms["image json bytes"] = len(text)
    total, per_slice, sliced_text = in_slices(ImageJsonBuilder(image))
    assert sliced_text == text, "the sliced JSON must be the text of json.dumps"
    _slice_rows(ms, "image json in slices", total, per_slice)
    answer = build_describe_image_response(image, node_id=1, include_image=True, image_json=text)
    seconds, _ = _seconds(lambda: encode_response(ResponseHeader(7), 10001, 0, answer))
    ms["describe image framing"] = seconds * 1000


def _reassignment_rows(image: MetadataImage, ms: dict[str, float]) -> None:
    ctx = ControllerContext(
        config=ControllerConfig(node_id=1, cluster_id="bench"), now_ms=0, next_offset=0,
        rng=random.Random(0),
    )
    seconds, _ = _seconds(lambda: list_partition_reassignments(image, EVERY_REASSIGNMENT, 0, ctx))
    ms["list reassignments, one go"] = seconds * 1000
    steps = list_partition_reassignments_steps(image, EVERY_REASSIGNMENT, 0, ctx)
    total, per_slice = operation_in_slices(Operation("ListPartitionReassignments", steps))
    _slice_rows(ms, "list reassignments in slices", total, per_slice)


def one_run(image: MetadataImage) -> dict[str, float]:
    """Milliseconds of every row (and a few sizes and counts), for one run."""
    ms: dict[str, float] = {}
    _metadata_rows(image, ms)
    _image_json_rows(image, ms)
    _reassignment_rows(image, ms)
    return ms


ROWS: Sequence[tuple[str, str]] = (
    ("Metadata, every topic (v12): build, one go", "metadata build, one go"),
    ("  encode that answer, one go", "metadata encode, one go"),
    ("  build in slices: total", "metadata build in slices total"),
    ("  build in slices: largest slice", "metadata build in slices max slice"),
    ("  build + encode in slices (what a broker runs): total", "metadata build + encode in slices total"),
    ("  build + encode in slices: largest slice", "metadata build + encode in slices max slice"),
    ("  ask again about the same image: cache hit + framing", "metadata cached ask + framing"),
    ("PykraftDescribeImage JSON: json.dumps(image_to_json), one go", "image json, one go"),
    ("  in slices: total", "image json in slices total"),
    ("  in slices: largest slice (the last: joining the text)", "image json in slices max slice"),
    ("  framing the answer that carries it", "describe image framing"),
    ("ListPartitionReassignments, null topics: one go", "list reassignments, one go"),
    ("  in slices: total", "list reassignments in slices total"),
    ("  in slices: largest slice", "list reassignments in slices max slice"),
)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--partitions", type=int, default=100_000)
    parser.add_argument("--topics", type=int, default=1)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    image = make_image(args.partitions, args.topics)
    gc.collect()
    gc.freeze()  # as a node does once a replay has built the image
    runs = [one_run(image) for _ in range(args.runs)]

    def median(key: str) -> float:
        return statistics.median(run[key] for run in runs)

    print(f"{args.partitions:,} partitions in {args.topics:,} topics, RF 3 over {BROKERS} "
          f"brokers; Metadata answer {median('metadata bytes'):,.0f} B, image JSON "
          f"{median('image json bytes'):,.0f} chars; median of {args.runs} runs; "
          f"{MAX_UNITS_PER_SLICE:,} units per slice")
    for label, key in ROWS:
        print(f"{label:<66}{median(key):>10.1f} ms")
    print(f"slices: Metadata {median('metadata build + encode in slices slices'):.0f}, "
          f"JSON {median('image json in slices slices'):.0f}, "
          f"ListPartitionReassignments {median('list reassignments in slices slices'):.0f}")


if __name__ == "__main__":
    main()
