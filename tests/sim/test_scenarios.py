"""Each scenario: a safety phase with faults, then heal and require convergence.

The invariants (``tests.sim.invariants``) are checked after every event of
both phases. Default: 40 seeds per scenario (480 runs). Longer runs on demand:

    pytest tests/sim/test_scenarios.py --sim-seeds 1000
    pytest tests/sim/test_scenarios.py --sim-seeds 500 --sim-first-seed 100000

A failure prints its seed and the command that replays it, e.g.
``pytest 'tests/sim/test_scenarios.py::test_a_crashed_leader_is_replaced' --seed 7``.
"""

from __future__ import annotations

from .runner import run_scenario


def test_a_first_leader_is_elected_despite_scattered_starts(seed: int) -> None:
    run_scenario("initial_election", seed)


def test_a_steady_stream_of_appends_is_replicated(seed: int) -> None:
    run_scenario("steady_appends", seed)


def test_a_crashed_leader_is_replaced_and_catches_up(seed: int) -> None:
    run_scenario("leader_crash", seed)


def test_a_wiped_node_loses_no_committed_data_once_another_leader_is_elected(seed: int) -> None:
    run_scenario("leader_wipe", seed)


def test_a_leader_in_a_minority_is_replaced_and_one_in_a_majority_keeps_leading(
    seed: int,
) -> None:
    run_scenario("leader_partitioned", seed)


def test_the_majority_side_of_a_split_makes_progress(seed: int) -> None:
    run_scenario("majority_progress", seed)


def test_asymmetric_partitions_around_the_leader_are_safe(seed: int) -> None:
    run_scenario("asymmetric_partition", seed)


def test_heavy_loss_duplication_and_reordering_are_safe(seed: int) -> None:
    run_scenario("message_chaos", seed)


def test_observers_catch_up_after_starting_late_or_being_cut_off(seed: int) -> None:
    run_scenario("observers_catch_up", seed)


def test_rolling_restarts_of_every_voter_are_safe(seed: int) -> None:
    run_scenario("rolling_restarts", seed)


def test_a_restarted_majority_recovers_after_every_node_was_killed(seed: int) -> None:
    run_scenario("all_killed", seed)


def test_a_random_mix_of_faults_is_safe(seed: int) -> None:
    run_scenario("random_mix", seed)


def test_a_paused_leader_steps_down_and_follows_when_it_resumes(seed: int) -> None:
    run_scenario("leader_paused", seed)


def test_a_node_left_behind_the_log_start_catches_up_through_a_snapshot(seed: int) -> None:
    run_scenario("snapshot_catch_up", seed)
