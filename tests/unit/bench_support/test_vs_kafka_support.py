"""The arithmetic and the report of ``bench.bench_vs_kafka``: no cluster."""

from __future__ import annotations

import json
import resource
from pathlib import Path

import pytest

from bench import vs_kafka_sides
from bench.vs_kafka_figures import (
    DEFAULT_MAP_COUNT,
    MAX_PARTITIONS_PER_REQUEST,
    Figures,
    Limits,
    failure_cause,
    limits_for,
    parse_heap_info,
    per_replica_bytes,
    percentile,
    plan_topics,
)
from bench.vs_kafka_report import KAFKA, PYKRAFT, Row, cell, ratio, report, rows

# jcmd PID GC.heap_info of a JDK 17 G1 JVM
HEAP_INFO = """\
12345:
 garbage-first heap   total 1048576K, used 61440K [0x00000000c0000000, 0x0000000100000000)
  region size 1024K, 3 young (3072K), 1 survivors (1024K)
 Metaspace       used 45123K, committed 45568K, reserved 1114112K
  class space    used 5432K, committed 5632K, reserved 1048576K
"""


# -- plan_topics -------------------------------------------------------------------------------


@pytest.mark.parametrize("partitions", [1, 9_999, 10_000, 30_000, 100_000, 123_457])
def test_topics_cover_the_partitions_within_the_request_limit(partitions: int) -> None:
    topics = plan_topics(partitions)

    assert sum(topics) == partitions
    assert max(topics) <= MAX_PARTITIONS_PER_REQUEST
    assert max(topics) - min(topics) <= 1
    assert len(topics) == -(-partitions // MAX_PARTITIONS_PER_REQUEST)


def test_ten_thousand_partitions_take_two_requests_since_one_would_write_10001_records() -> None:
    assert plan_topics(10_000) == [5_000, 5_000]
    assert plan_topics(9_999) == [9_999]
    assert plan_topics(30_000) == [7_500] * 4


def test_no_partitions_is_refused() -> None:
    with pytest.raises(ValueError):
        plan_topics(0)


# -- percentile, slope --------------------------------------------------------------------------


def test_percentiles_are_nearest_rank() -> None:
    values = [float(v) for v in range(100, 0, -1)]  # 100 .. 1, unordered on purpose

    assert percentile(values, 50) == 50.0
    assert percentile(values, 99) == 99.0
    assert percentile(values, 100) == 100.0
    assert percentile([3.0], 99) == 3.0
    assert percentile([1.0, 2.0, 3.0], 50) == 2.0


def test_a_percentile_of_nothing_is_refused() -> None:
    with pytest.raises(ValueError):
        percentile([], 50)
    with pytest.raises(ValueError):
        percentile([1.0], 0)


def test_the_rss_slope_is_the_growth_over_the_replicas_added() -> None:
    assert per_replica_bytes(50_000_000, 80_000_000, 10_000) == 3_000.0
    assert per_replica_bytes(50_000_000, 49_000_000, 1_000) == -1_000.0
    with pytest.raises(ValueError):
        per_replica_bytes(1, 2, 0)


# -- the JVM and the limits ---------------------------------------------------------------------


def test_heap_info_gives_committed_used_and_metaspace_in_bytes() -> None:
    info = parse_heap_info(HEAP_INFO)

    assert info.committed_bytes == 1_048_576 * 1024
    assert info.used_bytes == 61_440 * 1024
    assert info.metaspace_used_bytes == 45_123 * 1024


def test_heap_info_without_a_heap_line_is_an_error() -> None:
    with pytest.raises(ValueError, match="no heap line"):
        parse_heap_info("12345:\nCommand executed successfully\n")


def test_limits_grow_with_the_replicas_a_broker_hosts() -> None:
    small, large = limits_for(10_000), limits_for(100_000)

    assert small.map_count == 2 * 10_000 + DEFAULT_MAP_COUNT
    assert large.map_count - small.map_count == 2 * 90_000
    assert large.open_files - small.open_files == 90_000
    assert large.open_files > 100_000


@pytest.mark.parametrize(("log", "cause"), [
    ("java.lang.OutOfMemoryError: Java heap space\n\tat ...", "out of heap"),
    ("java.io.IOException: Map failed\n", "vm.max_map_count"),
    ("java.nio.file.FileSystemException: x.log: Too many open files", "open-files limit"),
])
def test_a_jvms_death_is_explained_from_its_log(log: str, cause: str) -> None:
    found = failure_cause("[2026-11-29] INFO started\n" + log)

    assert found is not None and cause in found


def test_out_of_heap_wins_over_what_follows_from_it() -> None:
    found = failure_cause("Too many open files\njava.lang.OutOfMemoryError: Java heap space")

    assert found is not None and "out of heap" in found


def test_a_log_without_a_known_cause_gives_none() -> None:
    assert failure_cause("[2026-11-29] INFO Kafka Server started\n") is None


# -- the report ---------------------------------------------------------------------------------


def figures_with(values: dict[str, list[float]], failures: dict[str, list[str]] | None = None
                 ) -> Figures:
    found = Figures()
    for key, seen in values.items():
        for value in seen:
            found.add(key, value)
    for key, reasons in (failures or {}).items():
        for reason in reasons:
            found.fail(key, reason)
    return found


def test_a_cell_is_the_median_with_the_range_and_pooled_rounds_give_n_and_max() -> None:
    figures = figures_with({"start_s": [3.0, 1.0, 2.0], "failover_ms": [40.0, 2500.0, 60.0]})

    assert cell(figures, Row("x", "start_s", 1)) == "2.0 [1.0-3.0]"
    assert cell(figures, Row("x", "failover_ms", 0, pooled=True)) == \
        "median 60, max 2,500 (n=3)"
    assert cell(figures, Row("x", "missing", 0)) == "-"


def test_a_failure_of_a_size_fills_every_row_of_that_size() -> None:
    figures = figures_with({}, {"size.100000": ["node(s) [5] exited; node 5: out of heap"]})

    text = cell(figures, Row("x", "create.100000.answer_s", 2, scope="size.100000"))

    assert text == "failed: node(s) [5] exited; node 5: out of heap"
    assert cell(figures, Row("x", "create.10000.answer_s", 2, scope="size.10000")) == "-"


def test_a_failure_in_some_runs_shows_beside_the_figures_of_the_others() -> None:
    figures = figures_with({"create.30000.answer_s": [4.0]},
                           {"size.30000": ["timed out", "timed out"]})

    assert cell(figures, Row("x", "create.30000.answer_s", 1, scope="size.30000")) == \
        "4.0; failed (2 runs): timed out"


def test_the_ratio_is_pykraft_over_kafka_medians() -> None:
    ours = figures_with({"failover_ms": [50.0, 40.0, 60.0]})
    theirs = figures_with({"failover_ms": [2000.0, 2500.0, 3000.0]})

    assert ratio(ours, theirs, "failover_ms") == "0.02"
    assert ratio(ours, figures_with({}), "failover_ms") == "-"


def test_every_size_gets_its_rows() -> None:
    keys = {row.key for row in rows([10_000, 30_000], 100)}

    for size in (10_000, 30_000):
        for name in ("answer_s", "caught_up_s", "hosted_s", "rate", "cpu_s"):
            assert f"create.{size}.{name}" in keys
        assert f"rss.{size}.per_replica_b" in keys
        assert f"heap.{size}.broker_mib" in keys
        assert f"heap_full.{size}.broker_mib" in keys


def test_the_report_is_a_markdown_table_with_the_command_and_a_json_line() -> None:
    ours = figures_with({"create1.p50_ms": [2.0], "rss.10000.per_replica_b": [1500.0]})
    theirs = figures_with({"create1.p50_ms": [8.0]},
                          {"size.10000": ["node 4: out of heap"]})

    text = report({PYKRAFT: ours, KAFKA: theirs}, [10_000], 100,
                  "python -m bench.bench_vs_kafka --runs 1", ["set vm.max_map_count"])
    lines = text.splitlines()

    assert lines[0] == "$ python -m bench.bench_vs_kafka --runs 1"
    assert "| measure | pykraft | Kafka | pykraft / Kafka |" in lines
    p50 = next(line for line in lines if "p50" in line)
    assert p50.endswith("| 2.0 | 8.0 | 0.25 |")
    slope = next(line for line in lines if "per idle replica" in line)
    answer = next(line for line in lines if "last answer" in line)
    assert "failed: node 4: out of heap" in answer
    assert "| 1,500 | failed (above) | - |" in slope
    assert "- set vm.max_map_count" in lines
    data = json.loads(lines[-1])
    assert data[KAFKA]["failures"] == {"size.10000": ["node 4: out of heap"]}
    assert data[PYKRAFT]["values"]["create1.p50_ms"] == [2.0]


# -- the limits around a Kafka cluster ---------------------------------------------------------


def test_the_map_count_is_raised_inside_and_restored_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    setting = tmp_path / "max_map_count"
    setting.write_text("1000\n")
    monkeypatch.setattr(vs_kafka_sides, "_MAP_COUNT", setting)
    said: list[str] = []
    files = resource.getrlimit(resource.RLIMIT_NOFILE)

    with vs_kafka_sides.kafka_limits(Limits(map_count=5000, open_files=1), said.append) as held:
        assert setting.read_text().strip() == "5000"
        assert held.map_count == 5000

    assert setting.read_text().strip() == "1000"
    assert resource.getrlimit(resource.RLIMIT_NOFILE) == files
    assert said == ["set vm.max_map_count 1000 -> 5000", "restored vm.max_map_count 1000"]


def test_a_map_count_already_high_enough_is_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    setting = tmp_path / "max_map_count"
    setting.write_text("262144\n")
    monkeypatch.setattr(vs_kafka_sides, "_MAP_COUNT", setting)
    said: list[str] = []

    with vs_kafka_sides.kafka_limits(Limits(map_count=5000, open_files=1), said.append) as held:
        assert held.map_count == 262144

    assert setting.read_text().strip() == "262144"
    assert said == []


def test_the_limits_are_restored_when_the_cluster_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    setting = tmp_path / "max_map_count"
    setting.write_text("1000\n")
    monkeypatch.setattr(vs_kafka_sides, "_MAP_COUNT", setting)

    limits = vs_kafka_sides.kafka_limits(Limits(map_count=5000, open_files=1), lambda _: None)
    with pytest.raises(RuntimeError, match="broker died"), limits:
        raise RuntimeError("broker died")

    assert setting.read_text().strip() == "1000"
