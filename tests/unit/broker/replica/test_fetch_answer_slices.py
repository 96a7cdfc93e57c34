"""A follower applies a large fetch answer a slice at a time: no step applies more than
``FETCH_APPLY_SLICE`` partitions, no next request leaves before the last slice, and a
partition that the image moved between two slices is not applied from the stale answer."""

from __future__ import annotations

import random

from broker.replica import ReplicaConfig, ReplicaCore
from broker.replica import core as core_module
from broker.replica.manager import assignment_changes
from quorum.controller.image import EMPTY_IMAGE, MetadataImage
from quorum.wire.messages.metadata_records import PartitionChangeRecord

from ..records import fold, partition, register, topic, topic_id
from .test_core import Logs

PARTITIONS = 600


def _pair() -> tuple[ReplicaCore, ReplicaCore, list[tuple[int, object]], MetadataImage]:
    image = fold([
        register(1, 10), register(2, 11), topic("events"),
        *(partition("events", i, [1, 2], isr=(1, 2), leader=1) for i in range(PARTITIONS)),
    ])
    cores: list[ReplicaCore] = []
    sent: list[tuple[int, object]] = []
    for broker in (1, 2):
        # every partition joins the session in the first request: one answer of 600
        config = ReplicaConfig(broker_id=broker, max_partitions_joining_per_fetch=PARTITIONS)
        core = ReplicaCore(config, Logs(), random.Random(broker))
        changes = assignment_changes(EMPTY_IMAGE, image, broker)
        output = core.apply_changes(changes.changed, changes.removed, image, 0)
        if broker == 2:
            sent += [(f.request_id, f.request) for f in output.fetches]
        cores.append(core)
    return cores[0], cores[1], sent, image


def test_a_large_answer_is_applied_in_slices_before_the_next_request() -> None:
    leader, follower, sent, _ = _pair()
    [(request_id, request)] = sent
    answer = leader.fetch(request_id, request, 12, 0)
    [reply] = answer.fetch_answers
    assert sum(len(t.partitions) for t in reply.response.responses) == PARTITIONS
    applied: list[int] = []
    real = follower._apply_fetched

    def counted(*args: object) -> None:
        applied.append(1)
        real(*args)  # type: ignore[arg-type]

    follower._apply_fetched = counted  # type: ignore[method-assign]
    output = follower.handle_fetch_response(1, request_id, reply.response, 1)
    slices = [len(applied)]
    while output.fetch_answers_left:
        assert output.fetch_answers_left == (1,)
        assert not output.fetches  # nothing asked with positions not yet moved
        output = follower.continue_fetch_response(1, 2)
        slices.append(len(applied) - sum(slices))
    assert slices == [250, 250, 100] and core_module.FETCH_APPLY_SLICE == 250
    assert [f.destination for f in output.fetches] == [1]  # then the next request


def test_a_partition_the_image_moved_between_slices_is_not_applied_from_the_answer() -> None:
    leader, follower, sent, before = _pair()
    [(request_id, request)] = sent
    [reply] = leader.fetch(request_id, request, 12, 0).fetch_answers
    applied: list[int] = []
    real = follower._apply_fetched

    def counted(fetcher: object, fetched: object, *args: object) -> None:
        applied.append(fetched.key.partition)  # type: ignore[attr-defined]
        real(fetcher, fetched, *args)  # type: ignore[arg-type]

    follower._apply_fetched = counted  # type: ignore[method-assign]
    output = follower.handle_fetch_response(1, request_id, reply.response, 1)
    assert output.fetch_answers_left == (1,)
    # a new leader epoch for partition 400 (same leader) before its slice comes
    moved = fold([PartitionChangeRecord(
        partition_id=400, topic_id=topic_id("events"), leader=1,
    )], before)
    changes = assignment_changes(before, moved, 2)
    follower.apply_changes(changes.changed, changes.removed, moved, 2)
    while output.fetch_answers_left:
        output = follower.continue_fetch_response(1, 3)
    assert 400 not in applied and len(applied) == PARTITIONS - 1
