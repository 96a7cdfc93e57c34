"""A high watermark held by a follower outside the ISR lets go without a fetch or an append.

The controller takes a dead broker out of the ISR before it writes its fence (partitions
first, in parts). While the dead follower is still registered, unfenced and caught up
within replica.lag.time.max.ms, it counts toward the leader's high watermark (Kafka's
maybeIncrementLeaderHW waits for a caught-up, ISR-eligible replica); once its caught-up
time runs out or its fence arrives, nothing fetches or appends to recompute it: the ISR
check must, or every acks=all produce waits for its timeout.
"""

from __future__ import annotations

import random

from broker.replica import ReplicaConfig, ReplicaCore, ReplicaOutput
from broker.replica.manager import assignment_changes
from quorum.controller.image import EMPTY_IMAGE, MetadataImage
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    FetchRequest,
    FetchRequestPartition,
    FetchRequestTopic,
    ProduceRequest,
    ProduceRequestPartition,
    ProduceRequestTopic,
)
from quorum.wire.messages.metadata_records import ConfigRecord, FenceBrokerRecord

from ..records import change, fold, partition, register, topic
from .helpers import batch
from .test_core import Logs

LAG_MS = 2_000
PRODUCE_TIMEOUT_MS = 20_000


def _image() -> MetadataImage:
    return fold([
        register(1, 10), register(2, 11), register(3, 12), topic("events"),
        ConfigRecord(resource_type=2, resource_name="events", name="min.insync.replicas",
                     value="2"),
        partition("events", 0, [1, 2, 3], leader=1),
    ])


def _leader(image: MetadataImage) -> ReplicaCore:
    core = ReplicaCore(ReplicaConfig(broker_id=1, replica_lag_time_max_ms=LAG_MS), Logs(),
                       random.Random(1))
    changes = assignment_changes(EMPTY_IMAGE, image, 1)
    core.apply_changes(changes.changed, changes.removed, image, 0)
    return core


def _fetch(core: ReplicaCore, replica: int, offset: int, now_ms: int) -> ReplicaOutput:
    """A sessionless follower fetch at ``offset`` that does not wait."""
    request = FetchRequest(
        replica_id=replica, max_wait_ms=0, min_bytes=1, session_epoch=-1,
        topics=(FetchRequestTopic(topic="events", partitions=(FetchRequestPartition(
            partition=0, current_leader_epoch=0, fetch_offset=offset, last_fetched_epoch=-1,
            log_start_offset=0, partition_max_bytes=1 << 20,
        ),)),),
    )
    out = core.fetch(("fetch", replica, now_ms), request, 12, now_ms)
    (answer,) = out.fetch_answers
    (part,) = answer.response.responses[0].partitions
    assert part.error_code == Errors.NONE
    return out


def _produce(core: ReplicaCore, now_ms: int) -> ReplicaOutput:
    request = ProduceRequest(acks=-1, timeout_ms=PRODUCE_TIMEOUT_MS, topic_data=(
        ProduceRequestTopic(name="events", partition_data=(
            ProduceRequestPartition(index=0, records=batch(b"a")),
        )),
    ))
    return core.produce("produce", request, now_ms)


def _held(fence: bool) -> tuple[ReplicaCore, MetadataImage, int]:
    """Leader 1 with an acks=all produce at offset 0 that follower 2 has, and follower 3
    (which had everything before it) taken out of the ISR while still registered and caught
    up: the high watermark stays at 0. ``fence``: the fence of 3 follows at once."""
    image = _image()
    core = _leader(image)
    _fetch(core, 2, 0, 10)
    _fetch(core, 3, 0, 10)
    assert _produce(core, 20).produce_answers == ()
    _fetch(core, 2, 1, 30)  # follower 2 has the record; 3 (dead from now on) does not
    shrunk = fold([change("events", 0, isr=[1, 2])], image)
    changes = assignment_changes(image, shrunk, 1)
    out = core.apply_changes(changes.changed, changes.removed, shrunk, 40)
    assert out.produce_answers == ()
    led = core.partitions.by_name("events", 0)
    assert led is not None and led.isr_state.isr == frozenset({1, 2})
    assert led.high_watermark == 0  # 3 is caught up (within the lag time) and eligible
    if fence:
        shrunk = fold([FenceBrokerRecord(id=3, epoch=12)], shrunk)
        out = core.apply_changes((), (), shrunk, 50)
        assert out.produce_answers == ()
    return core, shrunk, 50


def _answered_by(core: ReplicaCore, now_ms: int, until_ms: int) -> tuple[int, int]:
    """Poll at each deadline the core asks for until the produce is answered: (its error
    code, when). Bounded in count and time."""
    for _ in range(1_000):
        out = core.poll(now_ms)
        if out.produce_answers:
            (answer,) = out.produce_answers
            code = answer.response.responses[0].partition_responses[0].error_code
            return code, now_ms
        assert out.next_deadline_ms is not None
        now_ms = max(now_ms + 1, out.next_deadline_ms)
        assert now_ms <= until_ms, "no answer"
    raise AssertionError("no answer in 1,000 polls")


def test_the_high_watermark_moves_once_the_removed_followers_lag_time_runs_out() -> None:
    core, _, now = _held(fence=False)
    code, when = _answered_by(core, now, PRODUCE_TIMEOUT_MS + 20)
    assert code == Errors.NONE
    # 3 was last caught up at 10: it stops counting at 10 + LAG_MS, and the ISR check
    # (every LAG_MS / 2) finds that by the next check after
    assert 10 + LAG_MS < when <= 10 + LAG_MS + LAG_MS // 2 + 50
    led = core.partitions.by_name("events", 0)
    assert led is not None and led.high_watermark == 1


def test_the_high_watermark_moves_at_the_next_isr_check_after_the_fence() -> None:
    core, _, now = _held(fence=True)
    code, when = _answered_by(core, now, PRODUCE_TIMEOUT_MS + 20)
    assert code == Errors.NONE
    # fenced, 3 no longer counts even within its lag time: the first ISR check moves it
    assert when <= LAG_MS // 2 + 50 < 10 + LAG_MS
