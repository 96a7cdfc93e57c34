"""Partition replication on the production replica core, seed by seed.

Each seed picks a world (3 or 4 brokers, 1 or 2 partitions of RF 3 with min
ISR 2, timings, link delays and loss, one slower broker) and a fault schedule
(process kills, machine crashes that lose unflushed tails, pauses, cut links
between brokers, brokers cut from the controller), runs producers (acks=all
and acks=1, and idempotent ones that retry each batch until it is
acknowledged) and a consumer for a safety phase, then heals everything for a
liveness phase. ``checks.py`` lists the invariants checked after every event.

``pytest tests/sim/replication --seed N`` replays one seed; ``--sim-seeds 1000``
runs more.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from unittest import mock

import attrs
import pytest

from broker.replica import follower, partition, producer_state, serving, watermark
from broker.replica.isr import PendingShrinkIsr
from broker.replica.leader_fetch import PartitionRead

from .cluster import SimFailure
from .scenario import run_seed


@pytest.fixture(autouse=True)
def _quiet_controller() -> Iterator[None]:
    # refused registrations of a restarted broker are expected here, thousands of them
    logger = logging.getLogger("quorum.controller.cluster_control")
    level = logger.level
    logger.setLevel(logging.ERROR)
    yield
    logger.setLevel(level)


# 55 in CI (the sim layer's three minutes: 180 s with 70 on 2026-11-29); --sim-seeds for more
@pytest.mark.sim_seeds(55)
def test_acknowledged_records_survive_random_faults(seed: int) -> None:
    sim = run_seed(seed, mix="random")
    assert sim.checks.checked > 1_000
    assert sim.checks.acked_count > 0
    assert sim.checks.idempotent_batches > 0


@pytest.mark.sim_seeds(30)
def test_acknowledged_records_survive_leader_failovers_with_followers_apart(seed: int) -> None:
    sim = run_seed(seed, mix="failovers")
    assert sim.checks.acked_count > 0


# -- the checks can fail: production rules broken on purpose ---------------------------------


def _first_failure(seeds: range, mix: str) -> str | None:
    for seed in seeds:
        try:
            run_seed(seed, mix=mix)
        except SimFailure as failure:
            return str(failure)
    return None


def _broken(
    patch: Callable[[], AbstractContextManager[object]], mix: str, seeds: range
) -> str:
    with patch():
        found = _first_failure(seeds, mix)
    assert found is not None, "no seed caught the broken rule"
    return found


def test_a_follower_that_keeps_its_divergent_tail_is_caught() -> None:
    def keep_everything(p: partition.Partition, diverging: object) -> int:
        return p.log_end_offset

    found = _broken(lambda: mock.patch.object(follower, "truncation_offset", keep_everything),
                    "failovers", range(12))
    # either replicas disagree below a high watermark, or the follower fetches its
    # divergence again forever and the partition never converges
    assert any(sign in found for sign in (
        "differs", "other than the committed one", "acknowledged", "no convergence"
    )), found


def test_a_high_watermark_over_the_proposed_isr_instead_of_the_maximal_one_is_caught() -> None:
    def over_proposed_isr(self: partition.Partition, now_ms: int) -> bool:
        # the replicas being removed no longer count, nor caught-up replicas outside the ISR
        state = self.isr_state
        members = (frozenset(state.sent.isr) if isinstance(state, PendingShrinkIsr)
                   else state.maximal_isr)
        progress = [attrs.evolve(p, caught_up=False) for p in self._progress(now_ms)]
        bound = watermark.high_watermark_bound(self.log_end_offset, progress, members)
        new = watermark.next_high_watermark(self.high_watermark, bound,
                                            isr_size=len(state.isr),
                                            effective_min_isr=self.effective_min_isr)
        if not self.is_leader or new is None:
            return False
        self.high_watermark = new
        return True

    found = _broken(
        lambda: mock.patch.object(partition.Partition, "maybe_increment_high_watermark",
                                  over_proposed_isr),
        "random", range(40),
    )
    assert "acknowledged" in found or "differs" in found, found


def test_acks_all_answered_before_the_high_watermark_passes_the_batch_is_caught() -> None:
    real = partition.Partition.check_enough_replicas_reach_offset

    def at_append(self: partition.Partition, required_offset: int) -> tuple[bool, object]:
        done, error = real(self, required_offset)
        return (True, error) if self.is_leader else (done, error)

    found = _broken(
        lambda: mock.patch.object(partition.Partition, "check_enough_replicas_reach_offset",
                                  at_append),
        "random", range(6),
    )
    assert "not below any high watermark" in found, found


def test_a_leader_that_appends_idempotent_retries_again_is_caught() -> None:
    with mock.patch.object(producer_state.ProducerStateManager, "check_leader_append",
                           lambda self, header: None):
        found = _first_failure(range(12), "failovers")
    assert found is not None, "no seed caught the broken rule"
    assert "a duplicate" in found, found


def test_a_consumer_read_past_the_high_watermark_is_caught() -> None:
    real = serving.read_for_consumer

    def past_hw(p: partition.Partition, **kwargs: object) -> PartitionRead:
        read = real(p, **kwargs)  # type: ignore[arg-type]
        offset = kwargs["fetch_offset"]
        assert isinstance(offset, int)
        if read.error or not p.high_watermark <= offset < p.log_end_offset:
            return read
        records = p.log.read(offset, 1 << 20).records
        return attrs.evolve(read, records=records)

    found = _broken(lambda: mock.patch.object(serving, "read_for_consumer", past_hw),
                    "random", range(6))
    assert "at or above the high watermark" in found, found

