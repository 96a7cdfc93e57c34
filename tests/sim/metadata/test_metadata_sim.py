"""The metadata quorum on the production state machines, seed by seed.

``pytest tests/sim/metadata --seed N`` replays one seed; ``--sim-seeds 200`` runs more.
"""

from __future__ import annotations

import collections
import functools
import uuid
from typing import Any
from unittest import mock

import attrs
import pytest

from quorum.controller import controller as controller_module
from quorum.controller import partition_jobs, replication_control
from quorum.controller.controller import QuorumController
from quorum.controller.delta import fold_records
from quorum.controller.image import EMPTY_IMAGE, MetadataImage, Provenance
from quorum.controller.log_records import LogBatch, MetadataLogError
from quorum.controller.operations import Operation, Slice
from quorum.controller.slicing import MAX_UNITS_PER_SLICE
from quorum.node.controller_machine import ControllerMachine
from quorum.node.metadata_follower import MetadataLogFollower
from quorum.wire.error_codes import Errors
from quorum.wire.messages.broker_lifecycle import BrokerRegistrationRequest
from quorum.wire.messages.metadata_records import (
    FeatureLevelRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
)
from quorum.wire.metadata_serde import MetadataRecord

from ..committed import InvariantViolation
from .image_checks import (
    ProducerBlocks,
    TopicWatches,
    check_epochs_never_decrease,
    check_image,
)
from .scenarios import LIFECYCLE_BOUND_SLICES, bulk_100k, lifecycle_100k, random_metadata
from .world import MetadataSimulation

TOPIC_ID = uuid.UUID(int=7)


@functools.cache
def _run(seed: int) -> MetadataSimulation:
    """``random_metadata(seed)``, run once for the tests that only read its outcome (the
    broken-rule tests run their own, under their patches)."""
    return random_metadata(seed)


@pytest.mark.sim_seeds(8)
def test_controllers_and_brokers_publish_whole_transactions_through_faults(seed: int) -> None:
    sim = _run(seed)
    # the checks ran on every publication of every node and on every answer
    assert sim.checks.publications > 50
    assert sim.checks.answers.checked > 50
    assert all(n.max_slice_units <= MAX_UNITS_PER_SLICE for n in sim.nodes.values())


@pytest.mark.sim_seeds(2)
def test_the_same_seed_replays_the_same_run(seed: int) -> None:
    first, second = _run(seed), random_metadata(seed)
    assert first.trace.digest == second.trace.digest
    assert first.stats == second.stats


def test_the_runs_reach_failovers_fencing_snapshots_and_rejections() -> None:
    """The scenarios the checks are meant for do happen (over a few seeds)."""
    total: collections.Counter[str] = collections.Counter()
    for seed in range(6):
        sim = _run(seed)
        total.update(sim.stats)
        seen = sim.checks.seen
        total.update({"failover": seen["leader change"] - 1, "fenced": seen["fenced"],
                      "aborted": seen["aborted"]})
    for outcome in (
        "failover", "fenced", "aborted", "snapshot written", "snapshot loaded",
        "controlled shutdown", "CreateTopics NONE", "CreateTopics TOPIC_ALREADY_EXISTS",
        "CreateTopics INVALID_REPLICATION_FACTOR", "DeleteTopics NONE", "AlterPartition NONE",
        "AlterPartition FENCED_LEADER_EPOCH", "AlterPartition INVALID_UPDATE_VERSION",
        "ElectLeaders NONE", "CreatePartitions NONE", "AllocateProducerIds NONE",
        "BrokerRegistration DUPLICATE_BROKER_REGISTRATION", "BrokerHeartbeat unanswered",
        "AlterPartitionReassignments NONE", "ListPartitionReassignments NONE",
        "IncrementalAlterConfigs NONE", "UnregisterBroker NONE",
    ):
        assert total[outcome] > 0, f"no {outcome} in six seeds: {sorted(total.items())}"


@pytest.mark.sim_seeds(1)
def test_100k_partitions_survive_an_aborted_creation_a_fencing_and_a_takeover(
    seed: int,
) -> None:
    sim = bulk_100k(seed)
    assert sim.checks.aborted and "big" in sim.checks.created
    slices = sum(n.slices for n in sim.nodes.values())
    assert slices > 500  # the work was sliced
    assert max(n.max_slice_units for n in sim.nodes.values()) <= MAX_UNITS_PER_SLICE


# -- the checks can fail: production rules broken on purpose ---------------------------------


def _failures(seeds: range, *, first_only: bool = False) -> list[str]:
    found = []
    for seed in seeds:
        try:
            random_metadata(seed)
        except (InvariantViolation, MetadataLogError) as error:
            found.append(str(error))
            if first_only:
                break
    return found


def test_a_follower_that_publishes_inside_a_transaction_is_caught() -> None:
    def begin_nothing(self: MetadataLogFollower, offset: int, batch: object) -> None:
        pass  # the transaction's records are published as they come

    with mock.patch.object(MetadataLogFollower, "_begin", begin_nothing):
        found = _failures(range(4))
    assert found and all("part of the transaction" in f or "ends no transaction" in f
                         for f in found), found


def test_a_new_active_controller_that_does_not_abort_is_caught() -> None:
    real = QuorumController.activate

    def activate(self: QuorumController, now_ms: int, **kwargs: object) -> object:
        return real(self, now_ms, **{**kwargs, "open_transaction": None})  # type: ignore[arg-type]

    with mock.patch.object(QuorumController, "activate", activate):
        found = _failures(range(30), first_only=True)
    assert found, "no seed left a transaction open across a failover"


def test_slices_over_the_bound_are_caught() -> None:
    with mock.patch.object(replication_control, "RECORDS_PER_SLICE", 5_000):
        found = _failures(range(6))
    assert found and all("units (bound" in f for f in found), found


def _rack_moved(batch: LogBatch) -> LogBatch:
    records = tuple(
        (offset, attrs.evolve(r, rack="elsewhere") if isinstance(r, RegisterBrokerRecord) else r)
        for offset, r in batch.records
    )
    return attrs.evolve(batch, records=records)


@pytest.mark.parametrize("run_seed", [0, 1, 2])
def test_a_controller_that_replays_corrupted_records_is_caught(run_seed: int) -> None:
    """Fixed seeds (not --seed): node 2 replays every broker registration with another rack."""
    real = MetadataLogFollower._replay_batch

    def replay(self: MetadataLogFollower, batch: LogBatch) -> None:
        owner = getattr(self._on_publish, "__self__", None)
        if isinstance(owner, ControllerMachine) and owner.controller.config.node_id == 2:
            batch = _rack_moved(batch)
        real(self, batch)

    with mock.patch.object(MetadataLogFollower, "_replay_batch", replay), \
            pytest.raises(InvariantViolation) as caught:
        random_metadata(run_seed)
    assert "node 2's image" in str(caught.value) and "differs from" in str(caught.value)


def test_answers_sent_before_their_records_commit_are_caught() -> None:
    def answer_at_once(self: ControllerMachine) -> None:
        while self._answers:
            done = self._answers.popleft()
            done.reply(done.response)

    with mock.patch.object(ControllerMachine, "_answer", answer_at_once):
        found = _failures(range(3), first_only=True)
    assert found and ("to back it" in found[0] or "no committed record" in found[0]), found


# -- the image and answer checks on hand-made images -----------------------------------------


def _image(*records: MetadataRecord) -> MetadataImage:
    return fold_records(EMPTY_IMAGE, list(records), Provenance(len(records), 1))


def _broker(broker_id: int, *, fenced: bool = False) -> RegisterBrokerRecord:
    return RegisterBrokerRecord(
        broker_id=broker_id, incarnation_id=uuid.UUID(int=broker_id + 1), broker_epoch=broker_id,
        fenced=fenced,
    )


def _partition(index: int, **fields: Any) -> PartitionRecord:
    values: dict[str, Any] = {"replicas": (0, 1), "isr": (0, 1), "leader": 0, **fields}
    return PartitionRecord(partition_id=index, topic_id=TOPIC_ID, **values)


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
          _partition(0)), "which is fenced"),
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
    watches.add("t", TOPIC_ID, asked_ms=100, image_index=0)
    watches.delete_requested({"t"}, at_ms=50)  # before the creation: it ran first
    with pytest.raises(InvariantViolation, match="no one asked to delete it"):
        watches.check([created, EMPTY_IMAGE])
    deleted = TopicWatches()
    deleted.add("t", TOPIC_ID, asked_ms=100, image_index=0)
    deleted.delete_requested({"t"}, at_ms=100)
    deleted.check([created, EMPTY_IMAGE])


def test_an_operation_that_writes_inside_another_transaction_is_caught() -> None:
    """A step that leaves a transaction open counts as a boundary: the machine lets the
    next operation run then, and its records land inside the transaction."""
    real = Operation.step

    def step(self: Operation[Any]) -> list[MetadataRecord]:
        records = real(self)
        self.at_boundary = self.at_boundary or self.in_transaction
        return records

    with mock.patch.object(Operation, "step", step):
        found = _failures(range(6), first_only=True)
    assert found and "inside the transaction that" in found[0], found


def test_a_refusal_that_writes_records_is_caught() -> None:
    original = controller_module.delete_topics_steps

    def writes_anyway(image: MetadataImage, request: Any, version: int, ctx: Any) -> Any:
        response = yield from original(image, request, version, ctx)
        if all(t.error_code != Errors.NONE for t in response.responses):
            yield Slice((FeatureLevelRecord(name="refused.but.written", feature_level=1),))
        return response

    with mock.patch.object(controller_module, "delete_topics_steps", writes_anyway):
        found = _failures(range(4), first_only=True)
    assert found and "refused DeleteTopics" in found[0] and "yet wrote 1 record" in found[0], found


@pytest.mark.sim_seeds(1)
def test_registrations_and_heartbeats_are_answered_within_bounded_slices_of_long_operations(
    seed: int,
) -> None:
    run = lifecycle_100k(seed)
    sim = run.sim
    waits = sim.lifecycle_waits
    during_fencing = [w for w in waits if w.running == "FenceBroker"]
    during_creation = [w for w in waits if w.running == "CreateTopics"]
    kinds = {type(w.request).__name__ for w in during_fencing}
    assert {"BrokerRegistrationRequest", "BrokerHeartbeatRequest"} <= kinds, waits
    assert any(isinstance(w.request, BrokerRegistrationRequest) for w in during_creation), waits
    # every answer was checked against the reference images, as every answer is
    assert sim.checks.answers.checked > 20
    longest = max(w.slices for w in during_fencing)
    assert longest <= LIFECYCLE_BOUND_SLICES, (longest, during_fencing)
    # an atomic creation holds them up for at most the rest of it, then the same bound
    worst = max(w.slices for w in during_creation)
    assert worst <= run.creation_slices + LIFECYCLE_BOUND_SLICES, (worst, run.creation_slices)
    # the active controller died inside a part of the fencing: its successor aborted it
    assert sim.checks.aborted
    # the retried registration of one incarnation got that incarnation's one epoch twice
    assert len(run.retried_epochs) == 2 and len(set(run.retried_epochs)) == 2
    print(f"lifecycle waits in slices: fencing max {longest} (bound "
          f"{LIFECYCLE_BOUND_SLICES}), creation max {worst} of {run.creation_slices}")


def test_a_fencing_without_boundaries_between_its_parts_is_caught() -> None:
    """The parts of a fencing run back to back (no BOUNDARY): a registration waits for the
    whole fencing, and the bound catches it (40,000 partitions: ten parts' worth)."""
    with mock.patch.object(partition_jobs, "BOUNDARY", Slice()):
        run = lifecycle_100k(0, partitions=40_000)
    during_fencing = [w for w in run.sim.lifecycle_waits if w.running == "FenceBroker"]
    assert max(w.slices for w in during_fencing) > LIFECYCLE_BOUND_SLICES
