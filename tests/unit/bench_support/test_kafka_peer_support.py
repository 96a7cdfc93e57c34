"""The Kafka peer of the data-plane bench without a cluster: pykraft / Kafka ratios, CPU
seconds per MB, memory, the readers of jcmd's and the consumer perf test's output, the
failover probe's gap, and the report's Kafka sections."""

from __future__ import annotations

import json

import attrs
import cattrs
import pytest

from bench.dataplane_figures import PERF_TOOLS, DataPlaneRun, NodeMemory, median_figures, ratios
from bench.dataplane_report import report
from bench.peer_figures import (
    consumer_perf_summary,
    cpu_per_mb,
    cpu_s_per_mb,
    first_ack_after,
    heap_used_bytes,
    kafka_goal_gaps,
    kafka_ratios,
    median_cpu_per_mb,
    memory_medians,
    role_totals,
)
from bench.peer_report import cpu_per_mb_rows, kafka_figure_rows, kafka_report, memory_rows
from tests.unit.bench_support.test_data_plane_support import run, throughput

SERVERS = {"broker-4": 40.0, "broker-5": 20.0, "controller-1": 2.0, "load-1": 90.0}
MIB = 1024 * 1024


def side(scale: float, *, failover: tuple[float, ...] = (900.0, 1100.0, 1000.0),
         start: float | None = 4000.0, heap: int | None = None) -> DataPlaneRun:
    """A run of either side: throughput scaled by ``scale``, times as given."""
    memory = {"broker-4": NodeMemory(rss_bytes=100 * MIB, heap_used_bytes=heap),
              "controller-1": NodeMemory(rss_bytes=50 * MIB, heap_used_bytes=heap)}
    return attrs.evolve(
        run(scale, None),
        perf_tools={"producer perf test": throughput(30.0 * scale, SERVERS),
                    "consumer perf test": throughput(200.0 * scale, SERVERS)},
        memory=memory, failover_ms=failover, start_to_produce_ms=start)


def pair(scale: float, kafka_scale: float, **kafka: object) -> DataPlaneRun:
    return attrs.evolve(side(scale), kafka=side(kafka_scale, heap=30 * MIB, **kafka))  # type: ignore[arg-type]


# -- the figures ----------------------------------------------------------------------------


def test_the_headline_carries_the_perf_tools_the_start_and_the_median_of_the_kills() -> None:
    figures = side(1.0, failover=(900.0, 3000.0, 1000.0)).headline()

    assert figures[PERF_TOOLS["producer perf test"]] == 30.0
    assert figures[PERF_TOOLS["consumer perf test"]] == 200.0
    assert figures["start_to_produce_ms"] == 4000.0
    assert figures["leader_failover_ms"] == 1000.0


def test_a_run_without_probes_or_perf_tools_has_none_of_their_figures() -> None:
    figures = run(1.0, None).headline()

    assert not any(k.startswith("perf_") for k in figures)
    assert "start_to_produce_ms" not in figures and "leader_failover_ms" not in figures


def test_a_figure_one_run_missed_is_the_median_of_the_runs_that_have_it() -> None:
    medians = median_figures([side(1.0, start=None), side(1.0, start=3000.0),
                              side(1.0, start=5000.0)])

    assert medians["start_to_produce_ms"] == 4000.0


def test_ratios_to_kafka_divide_pykrafts_medians_by_kafkas_over_the_paired_runs() -> None:
    runs = [pair(1.0, 2.0, failover=(9000.0,), start=20000.0),
            pair(3.0, 2.0, failover=(9000.0,), start=20000.0),
            side(100.0)]  # no peer: left out of the ratios

    found = kafka_ratios(runs)

    assert found["produce_mb_per_s_acks_all"] == pytest.approx(80.0 / 80.0)
    assert found["consume_mb_per_s"] == pytest.approx(600.0 / 600.0)
    assert found["leader_failover_ms"] == pytest.approx(1000.0 / 9000.0)
    assert found["start_to_produce_ms"] == pytest.approx(4000.0 / 20000.0)
    assert found[PERF_TOOLS["producer perf test"]] == pytest.approx(60.0 / 60.0)


def test_no_kafka_peer_means_no_kafka_ratios_and_the_nats_ratios_ignore_kafka_only_figures(
) -> None:
    assert kafka_ratios([side(1.0)]) == {}
    with_nats = attrs.evolve(side(1.0), nats=run(1.0).nats)

    nats = ratios([with_nats])

    assert "produce_mb_per_s_acks_all" in nats
    assert not any(k.startswith("perf_") or k in ("start_to_produce_ms", "leader_failover_ms")
                   for k in nats)


def test_kafka_goals_are_met_by_throughput_ahead_and_times_below() -> None:
    gaps = {goal.key: (goal, factor)
            for goal, factor in kafka_goal_gaps([pair(1.0, 2.0, failover=(500.0,),
                                                      start=2000.0)])}

    goal, factor = gaps["produce_mb_per_s_acks_all"]
    assert factor == pytest.approx(0.5) and goal.at_least
    goal, factor = gaps["leader_failover_ms"]
    assert factor == pytest.approx(2.0) and not goal.at_least


def test_cpu_per_mb_sums_the_brokers_and_keeps_the_controllers_apart() -> None:
    figures = throughput(30.0, SERVERS)

    assert cpu_s_per_mb(figures, "broker-") == pytest.approx(0.60 / 30.0)
    assert cpu_s_per_mb(figures, "controller-") == pytest.approx(0.02 / 30.0)
    assert cpu_s_per_mb(throughput(0.0, SERVERS), "broker-") is None


def test_cpu_per_mb_covers_every_throughput_phase_and_takes_medians() -> None:
    found = cpu_per_mb(side(1.0))

    assert set(found) >= {"produce acks=all, brokers", "produce acks=0, controllers",
                          "consume, brokers", "producer perf test, brokers",
                          "consumer perf test, controllers"}
    assert not any(k.startswith("latency") for k in found)
    medians = median_cpu_per_mb([side(1.0), side(2.0), side(4.0)])
    assert medians["producer perf test, brokers"] == pytest.approx(0.60 / 60.0)


def test_memory_medians_and_role_totals() -> None:
    runs = [side(1.0, heap=10 * MIB), side(1.0, heap=30 * MIB), side(1.0, heap=20 * MIB)]

    medians = memory_medians(runs)
    totals = role_totals(medians)

    assert medians["broker-4"] == NodeMemory(rss_bytes=100 * MIB, heap_used_bytes=20 * MIB)
    assert totals["brokers"].rss_bytes == 100 * MIB
    assert memory_medians([side(1.0)])["broker-4"].heap_used_bytes is None


# -- readers --------------------------------------------------------------------------------


def test_the_heap_in_use_is_read_from_g1s_heap_info_and_metaspace_is_not_heap() -> None:
    g1 = (" garbage-first heap   total 1048576K, used 123456K [0x00000000c0000000, "
          "0x0000000100000000)\n  region size 1024K, 5 young (5120K), 0 survivors (0K)\n"
          " Metaspace       used 51234K, committed 52000K, reserved 1114112K\n"
          "  class space    used 6000K, committed 6400K, reserved 1048576K\n")
    assert heap_used_bytes(g1) == 123456 * 1024
    serial = (" def new generation   total 9216K, used 1000K [0x1, 0x2, 0x3)\n"
              " tenured generation   total 20480K, used 3000K [0x3, 0x4, 0x4)\n")
    assert heap_used_bytes(serial) == 4000 * 1024
    with pytest.raises(ValueError, match="no heap line"):
        heap_used_bytes("1234:\ncom.sun.tools.attach.AttachNotSupportedException")


def test_the_consumer_perf_tests_result_line_gives_records_and_fetch_time() -> None:
    stdout = (
        "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
        "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec\n"
        "2026-11-29 02:01:02:345, 2026-11-29 02:01:09:345, 292.9688, 41.8527, 300000, "
        "42857.1429, 3012, 3988, 73.4626, 75225.6770\n")

    assert consumer_perf_summary(stdout) == (300000, 3.988)
    with pytest.raises(RuntimeError, match="no result line"):
        consumer_perf_summary(stdout.splitlines()[0])


def test_the_failover_gap_counts_only_records_sent_after_the_kill() -> None:
    deliveries = [(0.0, 0.1), (9.9, 10.05),  # acked after the kill, but sent before it
                  (10.1, None),  # failed
                  (10.2, 19.5), (10.3, 19.4), (10.4, None)]

    assert first_ack_after(10.0, deliveries) == pytest.approx(9.4)
    assert first_ack_after(10.0, deliveries[:3]) is None


# -- report ---------------------------------------------------------------------------------


def test_the_kafka_table_shows_both_sides_and_the_ratio() -> None:
    lines = kafka_figure_rows([pair(1.0, 2.0), pair(3.0, 2.0), pair(2.0, 2.0)])

    assert lines[0] == "| measure | pykraft | Apache Kafka (same runs) | pykraft / Kafka |"
    assert "| produce MB/s, acks=all | 80.0 [40.0-120.0] | 80.0 [80.0-80.0] | 1.00 |" in lines
    assert any(line.startswith("| kafka-producer-perf-test MB/s") for line in lines)
    assert any(line.startswith("| kill -9 of a partition leader") and line.endswith("| 1.00 |")
               for line in lines)


def test_the_cpu_per_mb_table_has_both_roles_for_both_sides() -> None:
    lines = cpu_per_mb_rows([pair(1.0, 2.0)])

    assert lines[0].startswith("| phase | pykraft brokers | Kafka brokers | brokers pykraft / "
                               "Kafka | pykraft controllers")
    # brokers half a core, controllers 1 %: pykraft at 40 MB/s, Kafka at 80 MB/s
    assert "| produce acks=all | 0.0125 | 0.00625 | 2.00 | 0.00025 | 0.000125 | 2.00 |" in lines


def test_the_memory_table_shows_pykrafts_rss_beside_kafkas_rss_and_heap() -> None:
    lines = memory_rows([pair(1.0, 1.0)])

    assert "| broker-4 | 100 | 100 | 30 | 1.00 |" in lines
    assert "| all controllers | 50 | 50 | 30 | 1.00 |" in lines
    alone = memory_rows([side(1.0)])
    assert "| broker-4 | 100 |  |  |  |" in alone


def test_the_report_carries_the_kafka_sections_and_ratios_in_its_json() -> None:
    lines: list[str] = []
    runs = [pair(1.0, 2.0)]

    report(runs, "header", {}, lines.append, more=lambda out: kafka_report(runs, out))

    text = "\n".join(lines)
    assert "Beside Apache Kafka" in text and "Against Kafka (issue 20)" in text
    assert "| produce acks=all at least equal to Kafka | 0.50 | no |" in text
    # Kafka's own CPU table: its servers' shares in each phase, the perf tools' phases too
    kafka_cpu = text.split("Kafka's CPU during each phase")[1]
    assert "| produce acks=all | 20 | 50 |  | 1 | 71 |" in kafka_cpu  # no broker-5 there
    assert "| consumer perf test | " in kafka_cpu
    data = json.loads(lines[-1])
    assert data["kafka_ratios"]["produce_mb_per_s_acks_all"] == pytest.approx(0.5)
    assert data["runs"][0]["kafka"]["failover_ms"] == [900.0, 1100.0, 1000.0]
    # the runs unstructured and back: the JSON holds the peer's whole run
    assert cattrs.structure(data["runs"][0]["kafka"]["memory"]["broker-4"], NodeMemory) \
        == NodeMemory(rss_bytes=100 * MIB, heap_used_bytes=30 * MIB)


def test_without_a_kafka_peer_the_report_has_no_kafka_section() -> None:
    lines: list[str] = []

    kafka_report([side(1.0)], lines.append)

    assert not any("Apache Kafka" in line for line in lines)
    assert any(line.startswith("| broker-4 | 100 |") for line in lines)
