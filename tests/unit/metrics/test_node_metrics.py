"""A node's gauges from a real Raft core and real metadata images."""

from __future__ import annotations

import random

from quorum.controller.digest import image_digest
from quorum.controller.image import MetadataImage
from quorum.log import MemoryLog, OffsetAndEpoch
from quorum.metrics import BrokerView, NodeMetrics
from quorum.metrics import parse_samples as parse
from quorum.raft import RaftCore
from tests.unit.broker.records import (
    append_records,
    change,
    fold,
    metadata_version,
    partition,
    register,
    topic,
)


def core_of(node_id: int, log: MemoryLog) -> RaftCore:
    return RaftCore(node_id=node_id, voters=[1, 2, 3], log=log, cluster_id="c",
                    rng=random.Random(0), now_ms=0)


IMAGE = fold([
    metadata_version(), register(4, 1), register(5, 2, fenced=True), register(6, 3),
    topic("a"), partition("a", 0, [4, 6]), partition("a", 1, [6, 4]),
    topic("b"), partition("b", 0, [5]),
    # a.1 led by its second replica; b.0 offline (its only replica is fenced)
    change("a", 1, leader=4), change("b", 0, leader=-1),
])


async def test_image_gauges_count_topics_partitions_brokers_offline_and_imbalance() -> None:
    metrics = NodeMetrics(core=lambda: core_of(1, MemoryLog()), image=lambda: IMAGE)
    samples = parse(await metrics.text())
    assert samples["pykraft_metadata_image_offset"] == IMAGE.provenance.offset
    assert samples[f'pykraft_metadata_image_info{{digest="{image_digest(IMAGE)}"}}'] == 1
    assert samples["kafka_controller_global_topic_count"] == 2
    assert samples["kafka_controller_global_partition_count"] == 3
    assert samples["kafka_controller_offline_partitions_count"] == 1
    # a.1 (leader 4, preferred 6) and b.0 (no leader, preferred 5)
    assert samples["kafka_controller_preferred_replica_imbalance_count"] == 2
    assert samples["kafka_controller_active_broker_count"] == 2
    assert samples["kafka_controller_fenced_broker_count"] == 1
    # neither role part: no controller or broker gauges
    assert not any(k.startswith(("kafka_server_", "kafka_controller_active_controller"))
                   for k in samples)


async def test_raft_gauges_follow_the_core_and_its_log() -> None:
    log = MemoryLog()
    append_records(log, [metadata_version(), register(4, 1)], epoch=1)
    append_records(log, [topic("a")], epoch=1)
    log.create_snapshot(OffsetAndEpoch(2, 1), b"")
    metrics = NodeMetrics(core=lambda: core_of(2, log), image=lambda: IMAGE)
    samples = parse(await metrics.text())
    assert samples["kafka_raft_log_end_offset"] == 3
    assert samples["kafka_raft_log_start_offset"] == 0
    assert samples["kafka_raft_latest_snapshot_offset"] == 2
    assert samples["kafka_raft_current_leader"] == -1
    assert samples["kafka_raft_high_watermark"] == -1
    states = {k: v for k, v in samples.items() if k.startswith("kafka_raft_current_state")}
    assert sum(states.values()) == 1
    assert states['kafka_raft_current_state{state="unattached"}'] == 1


async def test_an_observer_core_reports_the_observer_state_and_a_broker_its_own_state() -> None:
    metrics = NodeMetrics(
        core=lambda: core_of(4, MemoryLog()), image=lambda: IMAGE,
        broker=lambda: BrokerView(state=3, epoch=17),
    )
    samples = parse(await metrics.text())
    assert samples['kafka_raft_current_state{state="observer"}'] == 1
    assert (samples["kafka_server_broker_state"], samples["kafka_server_broker_epoch"]) == (3, 17)


async def test_the_controller_gauge_and_the_image_are_read_at_each_scrape() -> None:
    active = [False]
    images: list[MetadataImage] = [fold([metadata_version()])]
    metrics = NodeMetrics(core=lambda: core_of(1, MemoryLog()), image=lambda: images[-1],
                          controller_active=lambda: active[0])
    assert parse(await metrics.text())["kafka_controller_active_controller_count"] == 0
    active[0] = True
    images.append(IMAGE)
    samples = parse(await metrics.text())
    assert samples["kafka_controller_active_controller_count"] == 1
    assert samples["kafka_controller_global_topic_count"] == 2
