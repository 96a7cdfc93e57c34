"""The production group coordinator in a seeded world of consumers, delays and failovers.

Each seed picks 2-4 dynamic consumers, 0-2 static ones and a simple
committer, the initial rebalance delay, and a schedule of consumer crashes
and restarts and coordinator failovers (a new coordinator instance loading
the same ``__consumer_offsets`` log, its uncommitted tail kept or cut),
with appends that commit late or fail.  ``checks.py`` lists the invariants
checked after every event; a liveness phase without faults must end with
every live consumer in one Stable generation.

``pytest tests/sim/group --seed N`` replays one seed; ``--sim-seeds 500`` runs more.
"""

from __future__ import annotations

from unittest import mock

import pytest

from broker.group import OffsetsRecord, context

from .checks import SimFailure
from .scenario import run_seed


@pytest.mark.sim_seeds(12)
def test_groups_keep_their_invariants_through_crashes_and_failovers(seed: int) -> None:
    world = run_seed(seed)
    checks = world.checks
    assert checks.checked > 500
    assert checks.commits_answered > 0 and checks.syncs_answered > 0
    assert world.incarnation >= 2  # at least one failover happened


def _first_failure(seeds: range) -> str | None:
    for seed in seeds:
        try:
            run_seed(seed)
        except (SimFailure, AssertionError) as failure:
            return str(failure)
    return None


def test_the_checks_catch_offsets_applied_before_their_commit() -> None:
    original = context.Context.append

    def apply_at_once(
        self: context.Context, partition: int, records: list[OffsetsRecord], write: object
    ) -> int:
        append_id = original(self, partition, records, write)
        for key, committed in getattr(write, "offsets", ()):
            self.apply_offset(key, committed)
        return append_id

    with mock.patch.object(context.Context, "append", apply_at_once):
        failure = _first_failure(range(5))
    assert failure is not None and "the committed log says" in failure


def test_the_checks_catch_commits_that_are_never_applied() -> None:
    with mock.patch.object(context.Context, "apply_offset", lambda self, key, committed: None):
        failure = _first_failure(range(5))
    assert failure is not None and "offsets of" in failure
