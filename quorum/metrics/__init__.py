"""Metrics of a node: what its trio thread does, gauges, their text format, and the
HTTP endpoint that serves them."""

from quorum.metrics.activity import (
    QUANTILES,
    ActivitySnapshot,
    EventTimes,
    EventTimesSummary,
    ImageSize,
    NodeActivity,
    SliceSummary,
)
from quorum.metrics.activity_families import (
    activity_families,
    controller_event_families,
    event_times_families,
)
from quorum.metrics.exposition import CONTENT_TYPE, Family, Sample, gauge, parse_samples, render
from quorum.metrics.http_server import serve_metrics
from quorum.metrics.loop_monitor import STALL_WARN_MS, LoopMonitor, monitor_loop
from quorum.metrics.node_metrics import BrokerView, NodeMetrics, raft_families
from quorum.metrics.step_work import STEP_WORK, StepWork, labelled
from quorum.metrics.windows import RecentSamples, WarningGate, WindowMax, WindowSum

__all__ = [
    "CONTENT_TYPE",
    "QUANTILES",
    "STALL_WARN_MS",
    "STEP_WORK",
    "ActivitySnapshot",
    "BrokerView",
    "EventTimes",
    "EventTimesSummary",
    "Family",
    "ImageSize",
    "LoopMonitor",
    "NodeActivity",
    "NodeMetrics",
    "RecentSamples",
    "Sample",
    "SliceSummary",
    "StepWork",
    "WarningGate",
    "WindowMax",
    "WindowSum",
    "activity_families",
    "controller_event_families",
    "event_times_families",
    "gauge",
    "labelled",
    "monitor_loop",
    "parse_samples",
    "raft_families",
    "render",
    "serve_metrics",
]
