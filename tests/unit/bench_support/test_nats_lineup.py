"""The NATS peer's line-up and arithmetic, with no server and no nats-py: which load
processes get which arguments, how their results add up, and the percentiles."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.nats_figures import percentile
from bench.nats_lineup import (
    ConnectTo,
    LoadReport,
    NatsWorkload,
    PhaseResult,
    consume_phase,
    consume_ranges,
    latency_phase,
    publish_phase,
    stream_roles,
)

URLS = ["nats://127.0.0.1:4001", "nats://127.0.0.1:4002", "nats://127.0.0.1:4003"]
LEADER = URLS[1]


def option(args: tuple[str, ...], name: str) -> str:
    return args[args.index(name) + 1]


@given(first=st.integers(1, 10**9), count=st.integers(1, 10_000), processes=st.integers(1, 16))
def test_consume_ranges_cover_the_stream_once_in_order_and_nearly_evenly(
    first: int, count: int, processes: int,
) -> None:
    last = first + count - 1

    ranges = consume_ranges(first, last, processes)

    assert len(ranges) == min(processes, count)
    # the oracle: every sequence exactly once, in order
    covered = [seq for low, high in ranges for seq in range(low, high + 1)]
    assert covered == list(range(first, last + 1))
    sizes = [high - low + 1 for low, high in ranges]
    assert min(sizes) >= 1
    assert max(sizes) - min(sizes) <= 1


def test_an_empty_stream_has_nothing_to_consume() -> None:
    with pytest.raises(ValueError, match="no messages"):
        consume_ranges(1, 0, 2)


@given(values=st.lists(st.floats(0, 1e3, allow_nan=False), min_size=1, max_size=300),
       fraction=st.sampled_from([0.01, 0.5, 0.9, 0.99, 0.999, 1.0]))
def test_a_percentile_is_the_nearest_rank_of_the_measured_values(
    values: list[float], fraction: float,
) -> None:
    result = percentile(values, fraction)

    # the oracle: the definition of the nearest rank, counted by hand
    assert result in values
    at_or_below = sum(1 for v in values if v <= result)
    below = sum(1 for v in values if v < result)
    assert at_or_below >= fraction * len(values) - 1e-9
    assert below < fraction * len(values) - 1e-9 or below == 0


def test_p99_of_two_thousand_latencies_is_the_1980th() -> None:
    assert percentile([float(i) for i in range(2000, 0, -1)], 0.99) == 1980.0
    assert percentile([3.0, 1.0, 2.0], 0.5) == 2.0


def test_each_publish_process_goes_to_the_leader_with_the_window_and_both_bounds() -> None:
    workload = NatsWorkload(publish_processes=3, publish_messages=500, publish_seconds=7.5,
                            publish_warmup=20, message_bytes=100)

    plan = publish_phase(workload, 512, LEADER, URLS)

    assert plan.kind == "publish"
    assert plan.bound_s == 7.5
    assert len(plan.process_args) == 3
    for args in plan.process_args:
        assert option(args, "--server") == LEADER
        assert (option(args, "--window"), option(args, "--messages"),
                option(args, "--seconds"), option(args, "--warmup"),
                option(args, "--size")) == ("512", "500", "7.5", "20", "100")


def test_spread_load_processes_take_the_servers_in_turn() -> None:
    workload = NatsWorkload(publish_processes=4, connect_to=ConnectTo.SPREAD)

    plan = publish_phase(workload, 64, LEADER, URLS)

    assert [option(a, "--server") for a in plan.process_args] == [*URLS, URLS[0]]


def test_latency_is_one_process_publishing_one_at_a_time() -> None:
    workload = NatsWorkload(latency_messages=2000, latency_warmup=200, latency_seconds=60)

    plan = latency_phase(workload, LEADER, URLS)

    (args,) = plan.process_args
    assert (option(args, "--messages"), option(args, "--warmup")) == ("2000", "200")
    assert "--window" not in args
    assert plan.bound_s == 60


def test_consumers_read_contiguous_ranges_of_the_whole_stream() -> None:
    workload = NatsWorkload(consume_processes=2, consume_seconds=30)

    plan = consume_phase(workload, 1, 1001, LEADER, URLS)

    ranges = [(option(a, "--first-seq"), option(a, "--last-seq")) for a in plan.process_args]
    assert ranges == [("1", "500"), ("501", "1001")]
    assert plan.kind == "consume" and plan.bound_s == 30


def test_the_stream_leader_and_its_followers_are_named_by_role() -> None:
    assert stream_roles(["n1", "n2", "n3"], "n2") == {
        "n2": "leader", "n1": "follower-1", "n3": "follower-2"}


def load(start: float, end: float, messages: int, cpu_s: float = 0.5) -> LoadReport:
    return LoadReport(messages=messages, bytes=messages * 1000, start=start, end=end,
                      cpu_s=cpu_s)


def test_phase_throughput_spans_the_first_start_to_the_last_end() -> None:
    # one process that finished early must not make the phase look faster
    phase = PhaseResult(loads=(load(10.0, 12.0, 2000), load(10.5, 14.0, 2000)), wall_s=4.0,
                        server_cpu_s={"leader": 2.0, "follower-1": 1.0},
                        machine_busy_percent=90.0)

    assert phase.messages == 4000
    assert phase.seconds == pytest.approx(4.0)
    assert phase.mb_per_s == pytest.approx(4_000_000 / 4.0 / 1e6)
    assert phase.cpu_percent() == pytest.approx({
        "load-1": 25.0, "load-2": 100 * 0.5 / 3.5, "leader": 50.0, "follower-1": 25.0})


def test_a_phase_without_load_processes_is_refused() -> None:
    with pytest.raises(ValueError):
        PhaseResult(loads=(), wall_s=1.0, server_cpu_s={}, machine_busy_percent=0.0)


def test_a_load_process_result_survives_its_json_line() -> None:
    sent = LoadReport(messages=3, bytes=3072, start=1.0, end=2.0, cpu_s=0.5,
                      ack_s=(0.001, 0.002, 0.003))

    assert LoadReport.from_json(sent.to_json()) == sent
    assert sent.cpu_percent == pytest.approx(50.0)
