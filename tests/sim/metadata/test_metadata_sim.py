"""The metadata quorum on the production state machines, seed by seed.

``pytest tests/sim/metadata --seed N`` replays one seed; ``--sim-seeds 200`` runs more.
"""

from __future__ import annotations

from unittest import mock

import pytest

from quorum.controller import replication_control
from quorum.controller.controller import QuorumController
from quorum.controller.log_records import MetadataLogError
from quorum.controller.slicing import MAX_UNITS_PER_SLICE
from quorum.node.metadata_follower import MetadataLogFollower

from ..committed import InvariantViolation
from .scenarios import bulk_100k, random_metadata


@pytest.mark.sim_seeds(12)
def test_controllers_and_brokers_publish_whole_transactions_through_faults(seed: int) -> None:
    sim = random_metadata(seed)
    # the checks ran on every publication of every node, and the run did work
    assert sim.checks.publications > 50
    assert all(n.max_slice_units <= MAX_UNITS_PER_SLICE for n in sim.nodes.values())


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
