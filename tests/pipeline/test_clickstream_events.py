"""The clickstream generator's plan, the chart and the command line's times: plain Python, no Spark."""

from __future__ import annotations

import datetime
import json

import pytest

from pipeline.__main__ import parse_time_ms
from pipeline.clickstream_events import EVENT_FIELDS, Flaw, plan_events
from pipeline.clickstream_report import BARS, MinuteCount, chart

START_MS = 1_764_000_000_000


def is_valid_event(value: bytes) -> bool:
    try:
        fields = json.loads(value)
    except ValueError:
        return False
    return (isinstance(fields, dict) and set(EVENT_FIELDS) <= set(fields)
            and isinstance(fields["ts"], int)
            and all(isinstance(fields[f], str) for f in EVENT_FIELDS if f != "ts"))


def test_a_plan_is_seeded_time_ordered_and_breaks_exactly_the_records_asked_for() -> None:
    plan = plan_events(200, seed=4, start_ms=START_MS, span_ms=300_000, malformed=9)
    assert plan == plan_events(200, seed=4, start_ms=START_MS, span_ms=300_000, malformed=9)
    assert plan != plan_events(200, seed=5, start_ms=START_MS, span_ms=300_000, malformed=9)
    times = [r.timestamp_ms for r in plan]
    assert times == sorted(times) and times[0] >= START_MS and times[-1] < START_MS + 300_000
    broken = [r for r in plan if r.event is None]
    assert len(broken) == 9
    # every flaw in turn, in time order
    assert [r.flaw for r in broken] == [list(Flaw)[i % len(Flaw)] for i in range(9)]
    assert not any(is_valid_event(r.value) for r in broken)
    for record in plan:
        if record.event is not None:
            assert is_valid_event(record.value)
            assert json.loads(record.value)["ts"] == record.timestamp_ms == record.event.ts_ms
            assert record.key == record.event.user.encode()
    assert len({r.event.event_id for r in plan if r.event}) == 191


def test_a_plan_refuses_more_malformed_records_than_records() -> None:
    with pytest.raises(ValueError, match="malformed"):
        plan_events(3, seed=1, start_ms=START_MS, span_ms=1000, malformed=4)


def test_the_chart_scales_every_page_to_the_busiest_minute_and_leaves_gaps_blank() -> None:
    t0 = datetime.datetime(2026, 11, 29, 5, 0)
    minute = datetime.timedelta(minutes=1)
    rows = [MinuteCount("/cart", t0, 16), MinuteCount("/cart", t0 + 2 * minute, 2),
            MinuteCount("/", t0 + minute, 8)]
    lines = chart(rows).splitlines()
    assert lines[0] == f"events per minute, 05:00 to 05:02 (one column a minute, {BARS[-1]} = 16)"
    # page names padded to the longest, then one cell a minute (blank: no events), then the total
    assert lines[1:] == ["/    " + "  " + f" {BARS[3]} " + "  8",
                         "/cart" + "  " + f"{BARS[7]} {BARS[0]}" + "  18"]
    assert chart([]) == "(no closed minutes yet)"


@pytest.mark.parametrize(("text", "want"), [
    ("1764000000000", 1764000000000),
    ("2025-11-24T16:00:00", 1764000000000),
    ("2025-11-24T17:00:00+01:00", 1764000000000),
    ("2025-11-24T16:00:00Z", 1764000000000),
])
def test_times_are_epoch_milliseconds_or_iso_8601_in_utc(text: str, want: int) -> None:
    assert parse_time_ms(text) == want
