"""The data-plane bench's pieces that need no cluster: phase plans, the figure arithmetic
(medians, ratios to the NATS peer, goals), the report and the profile summary."""

from __future__ import annotations

import json

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.dataplane_figures import (
    IDEMPOTENCE_CPU_RATIO,
    IDEMPOTENCE_RATIO,
    JAVA_IDEMPOTENCE_CPU_RATIO,
    JAVA_IDEMPOTENCE_RATIO,
    DataPlaneRun,
    RssFigures,
    broker_cpu_ms_per_mb,
    goal_gaps,
    goal_met,
    idempotence_key,
    median_figures,
    nats_counterpart,
    ratios,
)
from bench.dataplane_lineup import (
    IDEMPOTENCE_PAIR,
    DataPlaneWorkload,
    consume_phase,
    java_producer_props,
    java_records,
    latency_phase,
    partition_shares,
    produce_phase,
)
from bench.dataplane_report import cell, report, rss_report
from bench.java_producer_load import parse_summary
from bench.nats_figures import LatencyFigures, ThroughputFigures
from bench.profile_summary import summarize
from tests.unit.bench_support.test_nats_support import figures as nats_figures

CPU = {"load-1": 20.0, "broker-4": 50.0, "controller-1": 1.0}


def throughput(mb_per_s: float, cpu: dict[str, float] | None = None) -> ThroughputFigures:
    return ThroughputFigures(processes=2, window=0, messages=1000, seconds=1.0,
                             mb_per_s=mb_per_s, cpu_percent=CPU if cpu is None else cpu,
                             machine_busy_percent=80.0)


def latency(p50: float) -> LatencyFigures:
    return LatencyFigures(messages=100, ack_p50_ms=p50 / 2, ack_p99_ms=p50, delivery_p50_ms=p50,
                          delivery_p99_ms=2 * p50, cpu_percent=CPU, machine_busy_percent=50.0)


def run(scale: float, nats_scale: float | None = 1.0) -> DataPlaneRun:
    return DataPlaneRun(
        produce={"all": throughput(40.0 * scale), "1": throughput(50.0 * scale),
                 "0": throughput(60.0 * scale)},
        latency={"all": latency(1.0 * scale), "1": latency(0.8), "0": latency(0.5)},
        consume=throughput(300.0 * scale),
        nats=nats_figures(nats_scale) if nats_scale is not None else None)


# -- phase plans ----------------------------------------------------------------------------


def test_each_producer_process_gets_the_acks_and_the_batching_of_the_workload() -> None:
    workload = DataPlaneWorkload(produce_processes=3, linger_ms=7, batch_bytes=500_000)

    plan = produce_phase(workload, "1", "h:1", "t")

    assert plan.kind == "produce"
    assert len(plan.process_args) == 3
    args = plan.process_args[0]
    assert args[args.index("--acks") + 1] == "1"
    assert args[args.index("--linger-ms") + 1] == "7"
    assert args[args.index("--batch-bytes") + 1] == "500000"


def test_an_acks_value_librdkafka_would_not_take_is_refused_before_any_process_starts() -> None:
    with pytest.raises(ValueError, match="acks"):
        produce_phase(DataPlaneWorkload(), "-1", "h:1", "t")


def test_the_idempotence_pair_tells_each_producer_process_its_idempotence_and_in_flight(
) -> None:
    plain = produce_phase(DataPlaneWorkload(), "all", "h:1", "t")
    on = produce_phase(DataPlaneWorkload(), "all", "h:1", "t", idempotence=True)
    capped = produce_phase(DataPlaneWorkload(), "all", "h:1", "t", max_in_flight=5)

    assert "--idempotence" not in plain.process_args[0]
    assert "--max-in-flight" not in plain.process_args[0]
    assert all("--idempotence" in args for args in on.process_args)
    args = capped.process_args[0]
    assert args[args.index("--max-in-flight") + 1] == "5"
    assert "--idempotence" not in args
    assert IDEMPOTENCE_PAIR["on"] == (True, None)


def test_an_idempotent_producer_below_acks_all_is_refused_as_librdkafka_refuses_it() -> None:
    with pytest.raises(ValueError, match="acks=all"):
        produce_phase(DataPlaneWorkload(), "1", "h:1", "t", idempotence=True)


def test_the_latency_phase_is_one_process_on_one_partition() -> None:
    plan = latency_phase(DataPlaneWorkload(latency_messages=500), "all", "h:1", "t", partition=2)

    (args,) = plan.process_args
    assert args[args.index("--partition") + 1] == "2"
    assert args[args.index("--messages") + 1] == "500"


@given(st.dictionaries(st.integers(0, 50), st.integers(0, 10_000), max_size=20),
       st.integers(1, 6))
def test_partition_shares_deal_every_filled_partition_once_to_at_most_n_consumers(
    ends: dict[int, int], processes: int
) -> None:
    shares = partition_shares(ends, processes)

    assert len(shares) <= processes
    dealt = [p for share in shares for p in share]
    assert sorted(dealt) == sorted(p for p, end in ends.items() if end > 0)
    assert all(share for share in shares)
    assert all(share[p] == ends[p] for share in shares for p in share)


def test_partition_shares_balance_equal_partitions_evenly() -> None:
    shares = partition_shares({p: 100 for p in range(6)}, 2)

    assert [sum(s.values()) for s in shares] == [300, 300]


def test_a_consume_phase_of_an_empty_topic_is_refused() -> None:
    with pytest.raises(ValueError, match="no records"):
        consume_phase(DataPlaneWorkload(), {0: 0, 1: 0}, "h:1", "t")


def test_each_consumer_is_told_its_partitions_and_their_end_offsets_in_the_same_order() -> None:
    plan = consume_phase(DataPlaneWorkload(consume_processes=1), {2: 30, 0: 10}, "h:1", "t")

    (args,) = plan.process_args
    assert args[args.index("--partitions") + 1] == "0,2"
    assert args[args.index("--end-offsets") + 1] == "10,30"


# -- figures --------------------------------------------------------------------------------


def test_medians_are_taken_figure_by_figure() -> None:
    medians = median_figures([run(1.0), run(3.0), run(2.0)])

    assert medians["produce_mb_per_s_acks_all"] == 80.0
    assert medians["consume_mb_per_s"] == 600.0
    assert medians["e2e_p50_ms_acks_all"] == 2.0
    assert medians["ack_p50_ms_acks_all"] == 1.0


def paired(scale: float, on: float, off: float) -> DataPlaneRun:
    return attrs.evolve(run(scale), idempotence={
        "on": throughput(on), "off": throughput(off), "off, max.in.flight=5": throughput(on)})


def test_the_idempotence_pair_is_a_ratio_within_each_run_and_its_median_over_runs() -> None:
    runs = [paired(1.0, 45.0, 50.0), paired(1.0, 30.0, 60.0), paired(1.0, 50.0, 50.0)]

    assert runs[0].headline()[IDEMPOTENCE_RATIO] == pytest.approx(0.9)
    assert runs[0].headline()[idempotence_key("off, max.in.flight=5")] == 45.0
    medians = median_figures(runs)
    # the median of the ratios (0.9, 0.5, 1.0), not the ratio of the medians (45 / 50)
    assert medians[IDEMPOTENCE_RATIO] == pytest.approx(0.9)
    assert medians[idempotence_key("on")] == 45.0
    assert IDEMPOTENCE_RATIO not in run(1.0).headline()


def test_the_idempotence_pairs_are_not_compared_with_nats_and_have_the_issue_19_goals() -> None:
    runs = [attrs.evolve(paired(1.0, 40.0, 50.0), java_idempotence={
        "on": throughput(44.0), "off": throughput(50.0)})]

    assert idempotence_key("on") not in ratios(runs)
    assert idempotence_key("on", java=True) not in ratios(runs)
    assert "produce_mb_per_s_acks_all" in ratios(runs)
    by_label = {goal.label: (value, factor) for goal, value, factor in
                goal_gaps(median_figures(runs), ratios(runs))}
    assert by_label["Java client: idempotence on >= 0.9x off (issue 19)"] == pytest.approx(
        (0.88, 0.88 / 0.9))
    # the same broker CPU share for fewer MB: 50/40 times the CPU per MB
    cpu = by_label["brokers' CPU per MB, idempotence on <= 1.1x off, librdkafka (issue 19)"]
    assert cpu == pytest.approx((1.25, 1.25 / 1.1))
    # librdkafka's MB/s ratio is a figure, not a goal (its client rule, not the brokers')
    assert not any("idempotence on >= 0.9x off" in label and "Java" not in label
                   for label in by_label)


def test_broker_cpu_per_mb_adds_every_broker_and_only_brokers() -> None:
    figures = throughput(100.0, {"load-1": 90.0, "broker-4": 30.0, "broker-5": 20.0,
                                 "controller-1": 5.0})

    # half a core of brokers for 100 MB/s: 5 ms of CPU per MB
    assert broker_cpu_ms_per_mb(figures) == pytest.approx(5.0)


def test_the_cpu_ratio_compares_cpu_per_mb_not_cpu_shares() -> None:
    on = throughput(50.0, {"broker-4": 40.0})
    off = throughput(100.0, {"broker-4": 40.0})
    headline = attrs.evolve(run(1.0), java_idempotence={"on": on, "off": off}).headline()

    assert headline[JAVA_IDEMPOTENCE_RATIO] == pytest.approx(0.5)
    assert headline[JAVA_IDEMPOTENCE_CPU_RATIO] == pytest.approx(2.0)
    assert IDEMPOTENCE_CPU_RATIO not in headline


def test_java_phases_last_about_a_phase_and_carry_the_librdkafka_batching() -> None:
    workload = DataPlaneWorkload(linger_ms=7, batch_bytes=500_000, produce_seconds=8.0)

    # 100 MB/s of 1,024-byte records for 8 s
    assert java_records(throughput(100.0), workload) == int(100e6 / 1024 * 8)
    assert java_records(throughput(0.1), workload) == 50_000
    props = java_producer_props(workload, idempotence=False)
    assert props["enable.idempotence"] == "false"
    assert (props["acks"], props["linger.ms"], props["batch.size"]) == ("all", "7", "500000")
    assert java_producer_props(workload, idempotence=True)["enable.idempotence"] == "true"


def test_the_perf_tests_summary_line_is_read_for_records_and_rate() -> None:
    out = ("12 records sent, 3.0 records/sec (0.00 MB/sec), 1.0 ms avg latency\n"
           "300000 records sent, 53985.963649 records/sec (52.72 MB/sec), 204.62 ms avg "
           "latency, 651.00 ms max latency, 164 ms 50th, 457 ms 95th.\n")

    assert parse_summary(out) == (300000, pytest.approx(53985.963649))
    with pytest.raises(RuntimeError, match="no summary line"):
        parse_summary("Exception in thread main")


def test_the_report_shows_the_idempotence_pair_only_when_it_ran() -> None:
    with_pair: list[str] = []
    without: list[str] = []

    report([paired(1.0, 45.0, 50.0)], "header", {}, with_pair.append)
    report([run(1.0)], "header", {}, without.append)

    text = "\n".join(with_pair)
    assert "| produce MB/s, acks=all, idempotence on | 45.0 |  |  |" in text
    assert "| produce MB/s, acks=all, idempotence off, max.in.flight=5 | 45.0 |  |  |" in text
    assert "| idempotence on / off, acks=all, MB/s within each run | 0.900 |  |  |" in text
    assert "| idempotence on / off, brokers' CPU per MB | 1.111 |  |  |" in text
    assert "| produce acks=all idempotence on | 20 | 50 | 1 | 71 |" in text
    assert "idempotence" not in "\n".join(without[:-1])


def test_produce_is_compared_with_the_peers_best_publish_window() -> None:
    peer = {"publish_mb_per_s_w64": 18.0, "publish_mb_per_s_w512": 20.0, "delivery_p50_ms": 0.4}

    assert nats_counterpart("produce_mb_per_s_acks_1", peer) == 20.0
    assert nats_counterpart("e2e_p50_ms_acks_0", peer) == 0.4
    assert nats_counterpart("consume_mb_per_s", peer) is None


def test_ratios_divide_our_median_by_the_peers_median_over_the_runs_that_ran_it() -> None:
    # the peer: publish w512 = 20 * scale, consume 100 * scale, delivery p50 0.4
    found = ratios([run(1.0, 1.0), run(2.0, 2.0), run(3.0, 3.0)])

    assert found["produce_mb_per_s_acks_all"] == pytest.approx(80.0 / 40.0)
    assert found["consume_mb_per_s"] == pytest.approx(600.0 / 200.0)
    assert found["e2e_p50_ms_acks_all"] == pytest.approx(2.0 / 0.4)


def test_no_peer_run_means_no_ratios() -> None:
    assert ratios([run(1.0, None)]) == {}


def test_goals_say_how_far_each_figure_is_and_which_way_is_better() -> None:
    gaps = {goal.key + str(goal.at_least) + goal.label: (value, factor)
            for goal, value, factor in goal_gaps(
                {"produce_mb_per_s_acks_all": 90.0, "e2e_p50_ms_acks_all": 3.0,
                 "consume_mb_per_s": 125.0}, {"produce_mb_per_s_acks_all": 2.0})}
    by_label = {key.split("True")[-1].split("False")[-1]: v for key, v in gaps.items()}

    assert by_label["acks=all >= 45 MB/s"] == (90.0, 2.0)
    assert by_label["acks=all p50 <= 2 ms"] == (3.0, 1.5)
    assert by_label["consume >= 250 MB/s"] == (125.0, 0.5)
    assert by_label["acks=all >= 2.5x NATS"] == (2.0, 0.8)
    met = {goal.label: goal_met(goal, factor) for goal, _, factor in goal_gaps(
        {"produce_mb_per_s_acks_all": 90.0, "e2e_p50_ms_acks_all": 3.0}, {})}
    assert met == {"acks=all >= 45 MB/s": True, "acks=all p50 <= 2 ms": False}


def test_rss_per_replica_is_the_growth_over_the_replicas_hosted() -> None:
    figures = RssFigures(partitions=10, replication_factor=3, before={4: 1000, 5: 2000},
                         after={4: 11_000, 5: 2000}, hosted={4: 10, 5: 10},
                         seconds_to_create=1.0, seconds_until_hosted=2.0,
                         idle_cpu={4: 0.0125}, settled={4: 9000})

    assert figures.per_replica_bytes() == {4: 1000.0, 5: 0.0}
    assert figures.settled_per_replica_bytes() == {4: 800.0}
    lines: list[str] = []
    rss_report(figures, lines.append)
    # idle CPU as a percentage of one core; a broker not measured shows a dash
    assert "| 4 | 10 | 0.0 | 0.0 | 1,000 | 1.2 | 0.0 | 800 |" in lines
    assert "| 5 | 10 | 0.0 | 0.0 | 0 | - | - | - |" in lines


# -- report ---------------------------------------------------------------------------------


def test_a_cell_is_the_median_and_range_or_the_one_value() -> None:
    assert cell([3.0, 1.0, 2.0], 1) == "2.0 [1.0-3.0]"
    assert cell([1234.5], 0) == "1,234"
    assert cell([], 2) == ""


def test_the_report_shows_ours_the_peers_the_ratio_the_goals_the_cpu_and_one_json_line() -> None:
    lines: list[str] = []

    report([run(1.0, 1.0), run(3.0, 3.0), run(2.0, 2.0)], "header", {"producer": "linger.ms=10"}, lines.append)

    text = "\n".join(lines)
    assert "- producer: linger.ms=10" in text
    assert "| produce MB/s, acks=all | 80.0 [40.0-120.0] | 40.0 [20.0-60.0] | 2.00 |" in text
    assert "| consume MB/s, the whole topic | 600.0 [300.0-900.0] | 200.0 [100.0-300.0] | 3.00 |" \
        in text
    assert "| acks=all >= 45 MB/s | 80.00 | 1.78 | yes |" in text
    assert "| consume ahead of NATS | 3.00 | 3.00 | yes |" in text
    assert "| phase | load-1 | broker-4 | controller-1 | all of these |" in text
    assert "| produce acks=all | 20 | 50 | 1 | 71 |" in text
    data = json.loads(lines[-1])
    assert data["median"]["produce_mb_per_s_acks_all"] == 80.0
    assert len(data["runs"]) == 3


# -- profile summary ------------------------------------------------------------------------


def test_the_profile_counts_self_time_on_top_and_inclusive_time_once_per_stack() -> None:
    profile = summarize([
        "main (/a/b/run.py:1);loop (/a/b/run.py:9);crc (/x/wire/batch.py:40) 6\n",
        "main (/a/b/run.py:1);loop (/a/b/run.py:9);loop (/a/b/run.py:12) 3\n",
        "main (/a/b/run.py:1) 1\n",
        "not a stack line\n",
    ])

    assert profile.samples == 10
    by_name = {f.function: f for f in profile.functions}
    assert by_name["crc (wire/batch.py)"].self_samples == 6
    assert by_name["loop (b/run.py)"].self_samples == 3
    assert by_name["loop (b/run.py)"].inclusive_samples == 9
    assert by_name["main (b/run.py)"].inclusive_samples == 10
    assert profile.top(1)[0].function == "crc (wire/batch.py)"
    assert "| `crc (wire/batch.py)` | 60.0 | 60.0 |" in profile.lines()
