"""A text picture of the per-minute aggregates: one line per page, one column per minute.

Pure: it takes plain rows (collected from the table), so the chart and its scale are tested
without Spark.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence

import attrs

__all__ = ["BARS", "MinuteCount", "chart"]

# eight heights, then a blank for a minute without events
BARS = "▁▂▃▄▅▆▇█"


@attrs.frozen
class MinuteCount:
    page: str
    window_start: datetime.datetime
    events: int


def _height(events: int, peak: int) -> str:
    if events == 0:
        return " "
    # 1..peak onto the eight bars; any event shows at least the lowest bar
    return BARS[max(0, -(-events * len(BARS) // peak) - 1)]


def chart(rows: Sequence[MinuteCount]) -> str:
    """Events per minute per page, each line scaled to the busiest (minute, page) of all."""
    if not rows:
        return "(no closed minutes yet)"
    minutes = sorted({row.window_start for row in rows})
    first, last = minutes[0], minutes[-1]
    span = int((last - first).total_seconds() // 60) + 1
    pages = sorted({row.page for row in rows})
    counts = {(row.page, row.window_start): row.events for row in rows}
    peak = max(counts.values())
    width = max(len(page) for page in pages)
    lines = [f"events per minute, {first:%H:%M} to {last:%H:%M} (one column a minute, "
             f"{BARS[-1]} = {peak})"]
    for page in pages:
        cells = "".join(
            _height(counts.get((page, first + datetime.timedelta(minutes=m)), 0), peak)
            for m in range(span))
        total = sum(events for (p, _), events in counts.items() if p == page)
        lines.append(f"{page:<{width}}  {cells}  {total}")
    return "\n".join(lines)
