"""Idempotent producers through replica cores: a retry after a leader change and after a
restart is deduplicated; the snapshot at shutdown; producers expire."""

from __future__ import annotations

import random

from broker.replica import ReplicaConfig, ReplicaCore, ReplicaOutput
from broker.replica.manager import assignment_changes
from quorum.controller.image import EMPTY_IMAGE, MetadataImage
from quorum.wire.error_codes import Errors
from quorum.wire.messages import (
    ProduceRequest,
    ProduceRequestPartition,
    ProduceRequestTopic,
)
from quorum.wire.records import Record, build_batch
from tests.sim.replication.disk import BrokerDisk

from ..records import change, fold, partition, register, topic

PID = 77


def _request(seq: int, *values: bytes, acks: int = 1, ts: int = 5) -> ProduceRequest:
    records = [Record(offset_delta=i, value=v) for i, v in enumerate(values)]
    data = build_batch(records, producer_id=PID, producer_epoch=0, base_sequence=seq,
                       base_timestamp=ts)
    return ProduceRequest(acks=acks, timeout_ms=1_000, topic_data=(ProduceRequestTopic(
        name="events", partition_data=(ProduceRequestPartition(index=0, records=data),)
    ),))


def _answer(output: ReplicaOutput) -> tuple[int, int]:
    (answer,) = output.produce_answers
    result = answer.response.responses[0].partition_responses[0]
    return result.error_code, result.base_offset


def _image() -> MetadataImage:
    return fold([register(1, 10), register(2, 11), topic("events"),
                 partition("events", 0, [1, 2], isr=[1, 2], leader=1)])


def _core(broker: int, disk: BrokerDisk, image: MetadataImage, now_ms: int = 0,
          expiration_ms: int = 86_400_000) -> tuple[ReplicaCore, ReplicaOutput]:
    config = ReplicaConfig(broker_id=broker, replica_fetch_wait_max_ms=50,
                           producer_id_expiration_ms=expiration_ms,
                           producer_id_expiration_check_interval_ms=1_000)
    core = ReplicaCore(config, disk, random.Random(broker))
    changes = assignment_changes(EMPTY_IMAGE, image, broker)
    return core, core.apply_changes(changes.changed, changes.removed, image, now_ms)


def _move(core: ReplicaCore, before: MetadataImage, after: MetadataImage) -> None:
    changes = assignment_changes(before, after, core.broker_id)
    core.apply_changes(changes.changed, changes.removed, after, 10)


def test_a_retry_sent_to_the_new_leader_after_a_failover_is_deduplicated() -> None:
    image = _image()
    leader, _ = _core(1, BrokerDisk(), image)
    follower, out = _core(2, BrokerDisk(), image)
    assert _answer(leader.produce("a", _request(0, b"a", b"b"), 1)) == (Errors.NONE, 0)
    # the follower fetches the batch (its first fetch came out of the assignment)
    (fetch,) = out.fetches
    served = leader.fetch("f", fetch.request, 12, 2)
    (answer,) = served.fetch_answers
    follower.handle_fetch_response(1, fetch.request_id, answer.response, 3)
    assert follower.partitions.by_name("events", 0).log_end_offset == 2  # type: ignore[union-attr]
    # broker 1 goes; broker 2 leads: the producer never heard its answer and retries there
    failed_over = fold([change("events", 0, leader=2, isr=[2])], image)
    _move(follower, image, failed_over)
    assert _answer(follower.produce("retry", _request(0, b"a", b"b"), 20)) == (Errors.NONE, 0)
    assert _answer(follower.produce("next", _request(2, b"c"), 21)) == (Errors.NONE, 2)
    assert _answer(follower.produce("gap", _request(4, b"e"), 22))[0] == (
        Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    )
    assert follower.partitions.by_name("events", 0).log_end_offset == 3  # type: ignore[union-attr]


def test_a_retry_after_a_restart_is_deduplicated_from_the_snapshot_at_shutdown() -> None:
    image = fold([register(1, 10), topic("events"),
                  partition("events", 0, [1], isr=[1], leader=1)])
    disk = BrokerDisk()
    core, _ = _core(1, disk, image)
    for seq in range(3):
        assert _answer(core.produce(seq, _request(seq, b"x"), 1)) == (Errors.NONE, seq)
    assert core.snapshot_producer_states() == 1
    assert core.snapshot_producer_states() == 0  # already written at that log end
    (log,) = disk.logs.values()
    assert log.producer_snapshot_offsets() == [3]
    restarted, _ = _core(1, disk, image, now_ms=100)
    assert _answer(restarted.produce("retry", _request(2, b"x"), 101)) == (Errors.NONE, 2)
    assert _answer(restarted.produce("old", _request(1, b"x"), 102)) == (Errors.NONE, 1)
    assert log.log_end_offset == 3


def test_idle_producers_expire_at_the_check_interval() -> None:
    image = fold([register(1, 10), topic("events"),
                  partition("events", 0, [1], isr=[1], leader=1)])
    core, _ = _core(1, BrokerDisk(), image, expiration_ms=500)
    assert _answer(core.produce("a", _request(0, b"x", ts=100), 100)) == (Errors.NONE, 0)
    hosted = core.partitions.by_name("events", 0)
    assert hosted is not None and hosted.producers is not None and PID in hosted.producers
    out = core.poll(999)
    assert out.next_deadline_ms is not None and out.next_deadline_ms <= 1_000
    core.poll(1_000)
    assert PID not in hosted.producers
    # forgotten: a new sequence is admitted as from an unknown producer (KIP-360)
    assert _answer(core.produce("b", _request(9, b"y", ts=1_000), 1_001)) == (Errors.NONE, 1)
