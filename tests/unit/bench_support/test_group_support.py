"""The consumer-group bench's pieces that need no cluster: when a group's assignment is
settled, the percentiles, the medians and the report table."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.group_figures import GroupRun, figure_rows, median_figures, percentile, settled_at

P = frozenset


def test_the_group_settles_when_the_last_member_receives_its_part() -> None:
    histories = {"a": [(1.0, P({0, 1, 2})), (5.0, P({0, 1}))],
                 "b": [(6.0, P({2, 3}))]}

    assert settled_at(histories, since=4.0, partitions=4) == 6.0


def test_a_member_that_has_not_seen_the_rebalance_keeps_the_group_unsettled() -> None:
    # b's assignment is from before the event, even though the parts would fit together
    histories = {"a": [(5.0, P({0, 1}))], "b": [(3.0, P({2, 3}))]}

    assert settled_at(histories, since=4.0, partitions=4) is None
    assert settled_at({"a": [], "b": [(5.0, P({0, 1, 2, 3}))]}, 4.0, 4) is None


def test_a_revoked_member_or_overlapping_or_missing_partitions_are_not_settled() -> None:
    assert settled_at({"a": [(5.0, P({0, 1, 2, 3}))], "b": [(5.5, P())]}, 4.0, 4) is None
    assert settled_at({"a": [(5.0, P({0, 1, 2}))], "b": [(5.5, P({2, 3}))]}, 4.0, 4) is None
    assert settled_at({"a": [(5.0, P({0}))], "b": [(5.5, P({2, 3}))]}, 4.0, 4) is None
    assert settled_at({}, 4.0, 4) is None


@given(st.lists(st.integers(0, 7), min_size=1, max_size=30), st.integers(1, 4))
def test_any_disjoint_covering_split_received_after_the_event_is_settled(
    owners: list[int], members: int
) -> None:
    partitions = len(owners)
    parts = {m: P(p for p, owner in enumerate(owners) if owner % members == m)
             for m in range(members)}
    histories = {str(m): [(10.0 + m, held)] for m, held in parts.items()}

    found = settled_at(histories, since=10.0, partitions=partitions)

    if all(parts.values()):
        assert found == 10.0 + max(parts)
    else:
        assert found is None


def test_percentile_is_the_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]

    assert percentile(values, 0.5) == 51.0
    assert percentile(values, 0.99) == 100.0
    assert percentile([3.0], 0.99) == 3.0
    with pytest.raises(ValueError):
        percentile([], 0.5)


def group_run(profile: str, scale: float) -> GroupRun:
    return GroupRun(profile=profile, form_s=1.0 * scale, leave_s=2.0 * scale, join_s=3.0 * scale,
                    sync_commits_per_s=100.0 * scale, sync_commit_p50_ms=5.0,
                    sync_commit_p99_ms=20.0, async_commits_per_s=500.0, in_flight=16,
                    failover_commit_s=10.0 * scale, fenced_s=9.0 * scale,
                    offsets_leader_s=9.1, coordinator_loaded_s=9.2)


def test_the_time_from_the_fence_to_the_first_commit_is_a_figure_of_its_own() -> None:
    assert group_run("kafka", 1.0).headline()["failover_after_fence_s"] == pytest.approx(1.0)


def test_medians_are_taken_figure_by_figure() -> None:
    medians = median_figures([group_run("kafka", 1.0), group_run("kafka", 3.0),
                              group_run("kafka", 2.0)])

    assert medians["form_s"] == 2.0
    assert medians["sync_commits_per_s"] == 200.0
    assert medians["failover_after_fence_s"] == pytest.approx(2.0)
    with pytest.raises(ValueError):
        median_figures([])


def test_the_table_has_a_column_per_profile_with_that_profiles_runs_only() -> None:
    runs = [group_run("kafka", 1.0), group_run("test", 0.1), group_run("kafka", 3.0),
            group_run("kafka", 2.0)]

    lines = figure_rows(runs, {"kafka": "Kafka's defaults", "test": "test profile"})

    assert lines[0] == "| measure | Kafka's defaults | test profile |"
    assert "| rebalance: 4 consumers join an empty group -> all 4 assigned (s) | " \
           "2.00 [1.00-3.00] | 0.10 |" in lines
    assert "| OffsetCommit, async, 16 in flight (commits/s) | 500 [500-500] | 500 |" in lines


def test_a_profile_without_runs_gets_no_column_and_none_at_all_is_refused() -> None:
    lines = figure_rows([group_run("test", 1.0)], {"kafka": "Kafka's defaults",
                                                   "test": "test profile"})

    assert lines[0] == "| measure | test profile |"
    with pytest.raises(ValueError):
        figure_rows([group_run("test", 1.0)], {"kafka": "Kafka's defaults"})
