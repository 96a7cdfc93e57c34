"""A seed fixes the whole run: the same seed gives the same event trace."""

from __future__ import annotations

import pytest

from .runner import run_scenario


@pytest.mark.sim_seeds(3)
def test_the_same_seed_replays_the_same_trace(seed: int) -> None:
    first = run_scenario("random_mix", seed)
    second = run_scenario("random_mix", seed)
    assert first.trace.events == second.trace.events > 100
    assert first.trace.digest == second.trace.digest


@pytest.mark.sim_seeds(1)
def test_different_seeds_give_different_traces(seed: int) -> None:
    digests = {run_scenario("random_mix", seed + k).trace.digest for k in range(3)}
    assert len(digests) == 3
