"""The data plane's metrics: batch header counts, and the families read from the replica core."""

from __future__ import annotations

import random
import uuid

from broker.data_metrics import (
    DataPlaneCounters,
    PartitionCensus,
    batch_counts,
    data_plane_families,
)
from broker.replica import ReplicaConfig, ReplicaCore
from broker.replica.manager import PartitionAssignment, PartitionRole
from quorum.controller.image import EMPTY_IMAGE
from quorum.metrics.exposition import parse_samples, render
from quorum.wire.messages import ProduceRequest, ProduceRequestPartition, ProduceRequestTopic
from quorum.wire.records import build_batch_from_values
from tests.sim.replication.disk import BrokerDisk


def test_batch_counts_read_record_counts_from_the_headers_only() -> None:
    one = build_batch_from_values([b"a", b"bb", b"ccc"])
    two = build_batch_from_values([b"d"] * 7)
    assert batch_counts(one + two) == (len(one) + len(two), 10)
    assert batch_counts(b"") == (0, 0)
    assert batch_counts(None) == (0, 0)
    # a torn tail counts its bytes but no records
    assert batch_counts(one + two[:30]) == (len(one) + 30, 3)


def test_produced_requests_count_bytes_and_messages() -> None:
    counters = DataPlaneCounters()
    records = build_batch_from_values([b"x"] * 5)
    counters.produced(ProduceRequest(acks=-1, topic_data=(ProduceRequestTopic(
        name="t", partition_data=(ProduceRequestPartition(index=0, records=records),),
    ),)))
    assert (counters.produce_requests, counters.bytes_in, counters.messages_in) == (
        1, len(records), 5
    )


def test_the_families_count_led_and_under_replicated_partitions() -> None:
    core = ReplicaCore(ReplicaConfig(broker_id=1), BrokerDisk(), random.Random(1))
    topic_id = uuid.UUID(int=3)
    assignments = [
        PartitionAssignment(
            topic="t", topic_id=topic_id, partition=i, leader=1 if i < 2 else 2,
            leader_epoch=0, partition_epoch=0, isr=(1, 2) if i == 0 else (1,),
            replicas=(1, 2), role=PartitionRole.LEADER if i < 2 else PartitionRole.FOLLOWER,
        )
        for i in range(3)
    ]
    core.apply_changes(assignments, (), EMPTY_IMAGE, 0)
    counters = DataPlaneCounters()
    counters.produce_time.record(0, 4.0)
    census = PartitionCensus()
    census.add(core.partitions)
    samples = parse_samples(render(data_plane_families(census, counters, 10)))
    assert samples["kafka_server_replicamanager_partitioncount"] == 3
    assert samples["kafka_server_replicamanager_leadercount"] == 2
    assert samples["kafka_server_replicamanager_underreplicatedpartitions"] == 1
    assert samples['kafka_network_requestmetrics_totaltimems_count{request="Produce"}'] == 1
