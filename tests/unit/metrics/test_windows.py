"""Rolling max, rolling rate, recent quantiles and the warning gate, each against a
deliberately simple oracle that keeps every sample."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from quorum.metrics import RecentSamples, WarningGate, WindowMax, WindowSum

# (seconds since the previous sample, value): times never decrease
steps = st.lists(
    st.tuples(st.floats(0, 30, allow_nan=False), st.floats(0, 1e6, allow_nan=False)),
    max_size=200,
)


def timeline(start: float, pairs: list[tuple[float, float]]) -> list[tuple[float, float]]:
    t, samples = start, []
    for gap, value in pairs:
        t += gap
        samples.append((t, value))
    return samples


def oracle_window(samples: list[tuple[float, float]], now: float, window_s: float,
                  slots: int) -> list[float]:
    """The values whose slot is the current one or one of the ``slots - 1`` before it."""
    slot_s = window_s / slots
    newest = math.floor(now / slot_s)
    return [v for t, v in samples if newest - slots < math.floor(t / slot_s) <= newest]


@given(start=st.floats(0, 1e6), pairs=steps, later=st.floats(0, 120))
def test_window_max_is_the_max_of_the_samples_of_the_last_slots(
    start: float, pairs: list[tuple[float, float]], later: float
) -> None:
    window = WindowMax(window_s=60.0, slots=6)
    samples = timeline(start, pairs)
    for i, (t, value) in enumerate(samples):
        window.record(value, t)
        assert window.current(t) == max(oracle_window(samples[: i + 1], t, 60.0, 6), default=0.0)
    now = (samples[-1][0] if samples else start) + later
    assert window.current(now) == max(oracle_window(samples, now, 60.0, 6), default=0.0)
    assert window.all_time == max((v for _, v in samples), default=0.0)


def test_a_peak_leaves_the_window_after_a_minute_but_stays_the_all_time_max() -> None:
    window = WindowMax()  # 60 s in 1 s slots
    window.record(250.0, 100.2)
    window.record(3.0, 130.0)
    assert window.current(159.9) == 250.0
    assert window.current(160.0) == 3.0  # slot 100 is now 60 slots back
    assert window.current(190.0) == 0.0
    assert window.all_time == 250.0


def test_a_sample_older_than_its_slots_span_counts_only_all_time() -> None:
    window = WindowMax(window_s=10.0, slots=10)
    window.record(1.0, 25.0)
    window.record(99.0, 15.0)  # slot 15 shares its place with slot 25
    assert window.current(25.0) == 1.0
    assert window.all_time == 99.0


@given(start=st.floats(0, 1e6), pairs=steps, later=st.floats(0, 30))
def test_window_sum_rate_is_the_window_sum_over_the_span_its_slots_cover(
    start: float, pairs: list[tuple[float, float]], later: float
) -> None:
    window = WindowSum(window_s=10.0, slots=10)
    samples = timeline(start, pairs)
    for t, value in samples:
        window.record(value, t)
    now = (samples[-1][0] if samples else start) + later
    span = 9.0 + (now - math.floor(now))
    expected = math.fsum(oracle_window(samples, now, 10.0, 10)) / span
    assert window.per_second(now) == pytest.approx(expected, rel=1e-9, abs=1e-9)
    assert window.total == pytest.approx(math.fsum(v for _, v in samples))


def test_a_steady_rate_reads_as_itself_and_falls_to_zero_once_it_stops() -> None:
    window = WindowSum()
    t = 1000.0
    for _ in range(3000):  # 100 per second for 30 s, in steps of 10 ms
        t += 0.01
        window.record(1, t)
    assert window.per_second(t) == pytest.approx(100, rel=0.01)
    assert window.per_second(t + 5) == pytest.approx(50, rel=0.05)
    assert window.per_second(t + 11) == 0.0
    assert window.total == 3000


def nearest_rank(values: list[float], q: float) -> float:
    """The smallest value with at least a fraction q of the values at or below it."""
    ordered = sorted(values)
    return next(v for v in ordered if sum(1 for w in ordered if w <= v) >= q * len(ordered))


@given(values=st.lists(st.floats(0, 1e6, allow_nan=False), max_size=300),
       size=st.integers(1, 64))
def test_quantiles_are_nearest_rank_over_the_last_samples(values: list[float], size: int) -> None:
    recent = RecentSamples(size)
    for value in values:
        recent.record(value)
    held = values[-size:]
    assert recent.samples() == held
    assert recent.count == len(values)
    qs = (0.5, 0.95, 0.99, 1.0)
    if held:
        assert recent.quantiles(qs) == tuple(nearest_rank(held, q) for q in qs)
    else:
        assert all(math.isnan(q) for q in recent.quantiles(qs))


def test_quantiles_of_one_to_a_hundred() -> None:
    recent = RecentSamples(100)
    for value in range(1, 101):
        recent.record(value)
    assert recent.quantiles((0.5, 0.99, 0.01)) == (50, 99, 1)


def test_the_gate_admits_one_warning_per_interval_and_counts_the_dropped_ones() -> None:
    gate = WarningGate(interval_s=5.0)
    assert gate.admit("replay", 100.0) == 0
    assert [gate.admit("replay", t) for t in (101.0, 102.0, 104.9)] == [None, None, None]
    assert gate.admit("digest", 101.0) == 0  # keys are independent
    assert gate.admit("replay", 105.0) == 3
    assert gate.admit("replay", 111.0) == 0
