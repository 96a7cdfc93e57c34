"""``NodeActivity``: what a node's one trio thread spends its time on.

Every task of a node shares one thread, so work that grows with the metadata
(replay, snapshots, digests, a controller command over many partitions) runs
in bounded slices. This records whether that holds:

* stalls: how long the thread went without serving I/O (fed by
  ``LoopMonitor`` on every turn of the loop), the longest of the last minute
  and of all time;
* slices: each bounded step of work of a kind ("replay", "controller-op",
  "snapshot-write", ... any string), with its size in units (records,
  partitions) and its duration; one rate-limited warning line per kind when
  a slice exceeds ``unit_bound`` units or ``slice_warn_ms``;
* controller events: Kafka's ControllerEventManager queue and processing
  times (count, sum, max, quantiles of the recent ones);
* records applied to the metadata image (total and per second) and the
  image's size.

Pure bookkeeping, read by ``/metrics`` through ``snapshot(now_s)``: no trio,
no clock. Every ``now_s`` given to one ``NodeActivity`` comes from one
monotonic clock; nodes use their trio clock (``trio.current_time()``).
Durations are whatever the caller measured (``time.perf_counter`` spans).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Final

import attrs

from quorum.metrics.windows import RecentSamples, WarningGate, WindowMax, WindowSum

__all__ = [
    "QUANTILES",
    "ActivitySnapshot",
    "EventTimes",
    "EventTimesSummary",
    "ImageSize",
    "NodeActivity",
    "SliceSummary",
]

logger = logging.getLogger(__name__)

QUANTILES: Final = (0.5, 0.95, 0.99)
_WINDOW_S: Final = 60.0  # "per minute", as Kafka's one-minute rates
_RATE_WINDOW_S: Final = 10.0


@attrs.frozen(kw_only=True)
class ImageSize:
    topics: int
    partitions: int
    brokers: int


@attrs.frozen(kw_only=True)
class SliceSummary:
    """One kind of work: its slices so far and the largest of the last minute and ever."""

    count: int
    units_total: int
    over_bound: int  # slices over ``unit_bound`` units or ``slice_warn_ms``
    max_units_1m: int
    max_units: int
    max_ms_1m: float
    max_ms: float


@attrs.frozen(kw_only=True)
class EventTimesSummary:
    """Milliseconds per event: count and sum of all, max of the last minute and ever,
    ``quantiles`` (``(q, ms)`` for each of ``QUANTILES``, NaN before any event) of the
    most recent events."""

    count: int
    sum_ms: float
    max_ms_1m: float
    max_ms: float
    quantiles: tuple[tuple[float, float], ...]


@attrs.frozen(kw_only=True)
class ActivitySnapshot:
    max_stall_ms_1m: float
    max_stall_ms: float
    # the longest single step of one task (a turn may run several), and what it was doing
    max_step_ms_1m: float = 0.0
    max_step_ms: float = 0.0
    max_step_work: str = ""
    slices: Mapping[str, SliceSummary]  # by kind, in name order
    event_queue_time: EventTimesSummary
    event_processing_time: EventTimesSummary
    records_applied_total: int
    records_applied_per_second: float
    image_size: ImageSize | None  # None until the node reports one


class _SliceStats:
    def __init__(self) -> None:
        self.count = 0
        self.units_total = 0
        self.over_bound = 0
        self.max_units = WindowMax(_WINDOW_S)
        self.max_seconds = WindowMax(_WINDOW_S)

    def summary(self, now_s: float) -> SliceSummary:
        return SliceSummary(
            count=self.count,
            units_total=self.units_total,
            over_bound=self.over_bound,
            max_units_1m=int(self.max_units.current(now_s)),
            max_units=int(self.max_units.all_time),
            max_ms_1m=self.max_seconds.current(now_s) * 1000,
            max_ms=self.max_seconds.all_time * 1000,
        )


class EventTimes:
    """Milliseconds per event: count, sum, max (last minute and ever), recent quantiles."""

    def __init__(self, reservoir_size: int) -> None:
        self.sum_ms = 0.0
        self.max_ms = WindowMax(_WINDOW_S)
        self.recent = RecentSamples(reservoir_size)

    def record(self, ms: float, now_s: float) -> None:
        self.sum_ms += ms
        self.max_ms.record(ms, now_s)
        self.recent.record(ms)

    def summary(self, now_s: float) -> EventTimesSummary:
        return EventTimesSummary(
            count=self.recent.count,
            sum_ms=self.sum_ms,
            max_ms_1m=self.max_ms.current(now_s),
            max_ms=self.max_ms.all_time,
            quantiles=tuple(zip(QUANTILES, self.recent.quantiles(QUANTILES), strict=True)),
        )


class NodeActivity:
    """One per node process; fed by the loop monitor and the task that owns the Raft core."""

    def __init__(
        self,
        *,
        unit_bound: int = 1000,
        slice_warn_ms: float = 50.0,
        warn_interval_s: float = 5.0,
        reservoir_size: int = 1024,
    ) -> None:
        self.unit_bound = unit_bound
        self.slice_warn_ms = slice_warn_ms
        self._stalls = WindowMax(_WINDOW_S)
        self._steps = WindowMax(_WINDOW_S)
        self._longest_step_work = ""
        self._slices: dict[str, _SliceStats] = {}
        self._slice_warnings = WarningGate(warn_interval_s)
        self._queue_times = EventTimes(reservoir_size)
        self._processing_times = EventTimes(reservoir_size)
        self._applied = WindowSum(_RATE_WINDOW_S)
        self.image_size: ImageSize | None = None

    def record_step(self, seconds: float, now_s: float, work: str | None = None) -> None:
        """The longest step of one task in a turn of the loop took ``seconds`` (``work``:
        what the loop monitor knows it was doing)."""
        if seconds > self._steps.all_time:
            self._longest_step_work = work or ""
        self._steps.record(seconds, now_s)

    def record_stall(self, seconds: float, now_s: float) -> None:
        """The thread went ``seconds`` without serving I/O (one turn of the loop)."""
        self._stalls.record(seconds, now_s)

    def record_slice(self, kind: str, units: int, seconds: float, now_s: float) -> None:
        """One bounded step of ``kind`` of work: ``units`` records or partitions in ``seconds``."""
        assert units >= 0 and seconds >= 0, f"a {kind} slice of {units} units in {seconds} s"
        stats = self._slices.get(kind)
        if stats is None:
            stats = self._slices[kind] = _SliceStats()
        stats.count += 1
        stats.units_total += units
        stats.max_units.record(units, now_s)
        stats.max_seconds.record(seconds, now_s)
        if units > self.unit_bound or seconds * 1000 > self.slice_warn_ms:
            stats.over_bound += 1
            self._maybe_warn_slice(kind, units, seconds, now_s)

    def record_controller_event(self, queue_ms: float, processing_ms: float, now_s: float) -> None:
        """A controller event waited ``queue_ms`` in the queue, then took ``processing_ms``."""
        self._queue_times.record(queue_ms, now_s)
        self._processing_times.record(processing_ms, now_s)

    def record_applied(self, records: int, now_s: float) -> None:
        """``records`` more records were applied to the metadata image."""
        self._applied.record(records, now_s)

    def set_image_size(self, *, topics: int, partitions: int, brokers: int) -> None:
        self.image_size = ImageSize(topics=topics, partitions=partitions, brokers=brokers)

    def snapshot(self, now_s: float) -> ActivitySnapshot:
        return ActivitySnapshot(
            max_stall_ms_1m=self._stalls.current(now_s) * 1000,
            max_stall_ms=self._stalls.all_time * 1000,
            max_step_ms_1m=self._steps.current(now_s) * 1000,
            max_step_ms=self._steps.all_time * 1000,
            max_step_work=self._longest_step_work,
            slices={kind: self._slices[kind].summary(now_s) for kind in sorted(self._slices)},
            event_queue_time=self._queue_times.summary(now_s),
            event_processing_time=self._processing_times.summary(now_s),
            records_applied_total=int(self._applied.total),
            records_applied_per_second=self._applied.per_second(now_s),
            image_size=self.image_size,
        )

    def _maybe_warn_slice(self, kind: str, units: int, seconds: float, now_s: float) -> None:
        dropped = self._slice_warnings.admit(kind, now_s)
        if dropped is None:
            return
        size = self.image_size
        logger.warning(
            "%s slice of %d units took %.1f ms (bounds: %d units, %.0f ms)%s%s",
            kind, units, seconds * 1000, self.unit_bound, self.slice_warn_ms,
            "" if size is None else (
                f"; image of {size.topics} topics, {size.partitions} partitions, "
                f"{size.brokers} brokers"
            ),
            f"; {dropped} more {kind} slices over the bounds since the last such line"
            if dropped else "",
        )
