"""A node's activity (``ActivitySnapshot``) as metric families.

Kafka's names where Kafka has the figure: the controller event manager's
queue and processing times are Kafka's histograms
``kafka.controller:type=ControllerEventManager,name=EventQueueTimeMs`` and
``...,name=EventQueueProcessingTimeMs``, here Prometheus summaries (count and
sum of every event, quantiles of the recent ones) with their max beside them.
The rest is pykraft's own (``pykraft_``). A ``window`` label tells the
largest of the last minute (``1m``) from the largest since the start (``all``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from quorum.metrics.activity import ActivitySnapshot, EventTimesSummary, SliceSummary
from quorum.metrics.exposition import Family, Sample, gauge

__all__ = ["activity_families", "controller_event_families", "event_times_families"]

_EVENT_MANAGER = "kafka_controller_controllereventmanager_"


def _windowed(last_minute: float, ever: float, **labels: str) -> tuple[Sample, Sample]:
    return Sample({**labels, "window": "1m"}, last_minute), Sample({**labels, "window": "all"}, ever)


def activity_families(activity: ActivitySnapshot) -> list[Family]:
    """Every node's: loop stalls, work slices, records applied."""
    return [
        Family("pykraft_event_loop_max_stall_ms",
               "Longest time the node's trio thread went without serving I/O.",
               _windowed(activity.max_stall_ms_1m, activity.max_stall_ms)),
        Family("pykraft_event_loop_max_step_ms",
               "Longest single step of one task on the node's trio thread (a turn of the "
               "loop may run several); the all-time one says what it was doing.",
               (Sample({"window": "1m"}, activity.max_step_ms_1m),
                Sample({"window": "all", "work": activity.max_step_work},
                       activity.max_step_ms))),
        *_slice_families(activity.slices),
        Family("pykraft_metadata_records_applied_total",
               "Records applied to this node's metadata image.",
               (Sample({}, activity.records_applied_total),), type="counter"),
        gauge("pykraft_metadata_records_applied_per_second",
              "Records applied to the metadata image per second, over the last 10 s.",
              activity.records_applied_per_second),
    ]


def _slice_families(slices: Mapping[str, SliceSummary]) -> list[Family]:
    def per_kind(name: str, help_text: str, value: Callable[[SliceSummary], float]) -> Family:
        samples = tuple(Sample({"kind": kind}, value(summary)) for kind, summary in slices.items())
        return Family(name, help_text, samples, type="counter")

    def windowed(name: str, help_text: str,
                 values: Callable[[SliceSummary], tuple[float, float]]) -> Family:
        samples = tuple(
            sample for kind, summary in slices.items()
            for sample in _windowed(*values(summary), kind=kind)
        )
        return Family(name, help_text, samples)

    return [
        per_kind("pykraft_work_slices_total", "Bounded steps of work done, by kind.",
                 lambda s: s.count),
        per_kind("pykraft_work_slice_units_total",
                 "Records or partitions handled in steps of work, by kind.",
                 lambda s: s.units_total),
        per_kind("pykraft_work_slices_over_bound_total",
                 "Steps of work over the unit bound or the slow-step threshold, by kind.",
                 lambda s: s.over_bound),
        windowed("pykraft_work_slice_max_units",
                 "Most records or partitions handled in one step of work, by kind.",
                 lambda s: (s.max_units_1m, s.max_units)),
        windowed("pykraft_work_slice_max_ms", "Longest step of work in ms, by kind.",
                 lambda s: (s.max_ms_1m, s.max_ms)),
    ]


def controller_event_families(activity: ActivitySnapshot) -> list[Family]:
    """A controller's: how long its events waited in the queue and took to process."""
    return [
        *_event_times("eventqueuetimems",
                      "Time a controller event waited in the queue, in ms.",
                      activity.event_queue_time),
        *_event_times("eventqueueprocessingtimems",
                      "Time the controller took to process an event, in ms.",
                      activity.event_processing_time),
    ]


def _event_times(name: str, help_text: str, times: EventTimesSummary) -> list[Family]:
    return event_times_families(_EVENT_MANAGER + name, help_text, {(): times})


def event_times_families(
    name: str, help_text: str, by_labels: Mapping[tuple[tuple[str, str], ...], EventTimesSummary]
) -> list[Family]:
    """A summary (quantiles of the recent events, sum, count) and its max beside it, one
    series per label set (``((label, value), ...)``; ``()``: none)."""
    summary: list[Sample] = []
    longest: list[Sample] = []
    for labels, times in by_labels.items():
        base = dict(labels)
        summary += [Sample({**base, "quantile": str(q)}, ms) for q, ms in times.quantiles]
        summary += [Sample(base, times.sum_ms, "_sum"), Sample(base, times.count, "_count")]
        longest += _windowed(times.max_ms_1m, times.max_ms, **base)
    return [
        Family(name, f"{help_text} Quantiles of the recent events.", tuple(summary),
               type="summary"),
        Family(name + "_max", f"{help_text} The longest.", tuple(longest)),
    ]
