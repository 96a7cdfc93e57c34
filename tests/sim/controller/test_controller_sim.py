"""The controller state machine keeps its invariants through failovers, seed by seed.

``pytest tests/sim --seed N`` replays one seed; ``--sim-seeds 1000`` runs more.
"""

from __future__ import annotations

import collections
import uuid

import attrs
import pytest

from quorum.controller.delta import fold_records
from quorum.controller.image import EMPTY_IMAGE, MetadataImage, Provenance
from quorum.wire.messages.metadata_records import (
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
)
from quorum.wire.metadata_serde import MetadataRecord

from .checks import (
    InvariantViolation,
    ProducerBlocks,
    TopicWatches,
    check_epochs_never_decrease,
    check_image,
)
from .driver import run_controller_sim

TOPIC_ID = uuid.UUID(int=7)


def test_controllers_agree_with_the_committed_log_through_failovers(seed: int) -> None:
    result = run_controller_sim(seed)
    # every invariant was checked after every event; the run must have done something
    assert result.committed_offset > 20
    assert result.stats["CreateTopics NONE"] + result.stats["BrokerHeartbeat NONE"] > 0


@pytest.mark.sim_seeds(2)
def test_the_same_seed_replays_the_same_run(seed: int) -> None:
    first, second = run_controller_sim(seed, events=150), run_controller_sim(seed, events=150)
    assert first.trace_digest == second.trace_digest
    assert first.stats == second.stats


def test_the_runs_reach_failovers_fencing_snapshots_and_rejections() -> None:
    """The scenarios the checks are meant for do happen (over a few seeds)."""
    total: collections.Counter[str] = collections.Counter()
    for seed in range(6):
        total.update(run_controller_sim(seed).stats)
    for outcome in (
        "failover keeping the tail", "failover cutting the tail", "snapshot loaded",
        "CreateTopics NONE", "CreateTopics TOPIC_ALREADY_EXISTS",
        "CreateTopics INVALID_REPLICATION_FACTOR", "DeleteTopics NONE", "AlterPartition NONE",
        "AlterPartition FENCED_LEADER_EPOCH", "AlterPartition INVALID_UPDATE_VERSION",
        "ElectLeaders NONE", "CreatePartitions NONE", "AllocateProducerIds NONE",
        "BrokerRegistration DUPLICATE_BROKER_REGISTRATION", "BrokerHeartbeat unanswered",
        "AlterPartitionReassignments NONE",
    ):
        assert total[outcome] > 0, f"no {outcome} in six seeds: {sorted(total.items())}"


# -- the checks can fail ----------------------------------------------------------------------


def _moved_rack(node: int, records: list[MetadataRecord]) -> list[MetadataRecord]:
    """Node 2 replays every broker registration with a different rack."""
    if node != 2:
        return records
    return [
        attrs.evolve(r, rack="elsewhere") if isinstance(r, RegisterBrokerRecord) else r
        for r in records
    ]


@pytest.mark.parametrize("run_seed", [0, 1, 2])
def test_a_replica_that_replays_corrupted_records_is_caught(run_seed: int) -> None:
    """Fixed seeds (not --seed): the same run passes untouched and fails corrupted."""
    run_controller_sim(run_seed, events=150)
    with pytest.raises(InvariantViolation) as caught:
        run_controller_sim(run_seed, events=150, replay_filter=_moved_rack)
    text = str(caught.value)
    # caught as node 2's committed image, or, if node 2 was active, as its working image
    assert "differs from the" in text
    assert f"pytest tests/sim --seed {run_seed}" in text


def _image(*records: MetadataRecord) -> MetadataImage:
    return fold_records(EMPTY_IMAGE, list(records), Provenance(len(records), 1))


def _broker(broker_id: int, *, fenced: bool = False) -> RegisterBrokerRecord:
    return RegisterBrokerRecord(
        broker_id=broker_id, incarnation_id=uuid.UUID(int=broker_id + 1), broker_epoch=broker_id,
        fenced=fenced,
    )


def _partition(index: int, **fields: object) -> PartitionRecord:
    values: dict[str, object] = {"replicas": (0, 1), "isr": (0, 1), "leader": 0, **fields}
    return PartitionRecord(partition_id=index, topic_id=TOPIC_ID, **values)  # type: ignore[arg-type]


def test_a_sound_image_passes_the_checks() -> None:
    check_image(_image(_broker(0), _broker(1), TopicRecord(name="t", topic_id=TOPIC_ID),
                       _partition(0), _partition(1, leader=1)), "sound")


@pytest.mark.parametrize(
    ("records", "complaint"),
    [
        ((_broker(0), _broker(1), TopicRecord(name="t", topic_id=TOPIC_ID), _partition(1)),
         "half-created"),
        ((_broker(0), _broker(1), TopicRecord(name="t", topic_id=TOPIC_ID),
          _partition(0, isr=(1,))), "not in the ISR"),
        ((_broker(0), _broker(1), TopicRecord(name="t", topic_id=TOPIC_ID),
          _partition(0, replicas=(0,))), "not a subset"),
        ((_broker(0, fenced=True), _broker(1), TopicRecord(name="t", topic_id=TOPIC_ID),
          _partition(0)), "fenced"),
        ((_broker(1), TopicRecord(name="t", topic_id=TOPIC_ID), _partition(0)), "unregistered"),
    ],
    ids=["half-created", "leader-outside-isr", "isr-outside-replicas", "fenced-leader",
         "unregistered-leader"],
)
def test_the_image_checks_catch_broken_partitions(
    records: tuple[MetadataRecord, ...], complaint: str
) -> None:
    with pytest.raises(InvariantViolation, match=complaint):
        check_image(_image(*records), "broken")


def test_an_epoch_that_goes_back_is_caught() -> None:
    base = (_broker(0), _broker(1), TopicRecord(name="t", topic_id=TOPIC_ID))
    later = _image(*base, _partition(0, leader_epoch=3, partition_epoch=5))
    earlier = _image(*base, _partition(0, leader_epoch=2, partition_epoch=5))
    check_epochs_never_decrease(earlier, later, "forwards")
    with pytest.raises(InvariantViolation, match="leader epoch went from 3 to 2"):
        check_epochs_never_decrease(later, earlier, "backwards")


def test_overlapping_producer_id_blocks_are_caught() -> None:
    blocks = ProducerBlocks()
    blocks.add(0, 1000, broker_id=1)
    blocks.add(1000, 1000, broker_id=2)
    with pytest.raises(InvariantViolation, match="overlap"):
        blocks.add(1500, 1000, broker_id=3)


def test_an_acknowledged_topic_that_vanishes_without_a_delete_is_caught() -> None:
    created = _image(_broker(0), _broker(1), TopicRecord(name="t", topic_id=TOPIC_ID),
                     _partition(0))
    watches = TopicWatches()
    watches.add("t", TOPIC_ID, created_end=4, image_index=0)
    with pytest.raises(InvariantViolation, match="no one asked to delete it"):
        watches.check([created, EMPTY_IMAGE])
    deleted = TopicWatches()
    deleted.add("t", TOPIC_ID, created_end=4, image_index=0)
    deleted.delete_requested({"t"}, at_offset=4)
    deleted.check([created, EMPTY_IMAGE])
