"""Gauges rendered in Prometheus' text format, escaping included."""

from __future__ import annotations

import pytest

from quorum.metrics import Family, Sample, gauge, render


def test_families_render_with_help_type_and_samples() -> None:
    text = render([
        gauge("kafka_raft_current_epoch", "The epoch.", 7),
        Family("kafka_raft_current_state", "The state.", (
            Sample({"state": "leader"}, 1), Sample({"state": "follower"}, 0),
        )),
        gauge("ratio", "A fraction.", 0.25),
    ])
    assert text == (
        "# HELP kafka_raft_current_epoch The epoch.\n"
        "# TYPE kafka_raft_current_epoch gauge\n"
        "kafka_raft_current_epoch 7\n"
        "# HELP kafka_raft_current_state The state.\n"
        "# TYPE kafka_raft_current_state gauge\n"
        'kafka_raft_current_state{state="leader"} 1\n'
        'kafka_raft_current_state{state="follower"} 0\n'
        "# HELP ratio A fraction.\n"
        "# TYPE ratio gauge\n"
        "ratio 0.25\n"
    )


def test_label_values_and_help_texts_are_escaped() -> None:
    text = render([gauge("m", "two\nlines \\ here", 1, path='a"b\\c\nd')])
    assert "# HELP m two\\nlines \\\\ here\n" in text
    assert 'm{path="a\\"b\\\\c\\nd"} 1\n' in text


def test_special_values_use_the_formats_spelling() -> None:
    text = render([gauge("nan", "x", float("nan")), gauge("inf", "x", float("-inf"))])
    assert "nan NaN\n" in text and "inf -Inf\n" in text


def test_nothing_renders_as_nothing() -> None:
    assert render([]) == ""


@pytest.mark.parametrize("name", ["", "9lives", "has space", "dash-ed"])
def test_a_bad_metric_name_is_a_broken_invariant(name: str) -> None:
    with pytest.raises(AssertionError):
        gauge(name, "x", 1)


def test_a_bad_label_name_is_a_broken_invariant() -> None:
    with pytest.raises(AssertionError):
        render([gauge("m", "x", 1, **{"bad-label": "v"})])


def test_a_summary_renders_its_quantiles_sum_and_count_under_one_type_line() -> None:
    text = render([Family("t_ms", "Times.", (
        Sample({"quantile": "0.5"}, 3), Sample({}, 10, "_sum"), Sample({}, 4, "_count"),
    ), type="summary")])
    assert text == (
        "# HELP t_ms Times.\n"
        "# TYPE t_ms summary\n"
        't_ms{quantile="0.5"} 3\n'
        "t_ms_sum 10\n"
        "t_ms_count 4\n"
    )


def test_an_unknown_type_is_a_broken_invariant() -> None:
    with pytest.raises(AssertionError):
        Family("m", "x", (), type="histogramm")
