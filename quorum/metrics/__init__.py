"""Metrics of a node: gauges, their text format, and the HTTP endpoint that serves them."""

from quorum.metrics.exposition import CONTENT_TYPE, Family, Sample, gauge, parse_samples, render
from quorum.metrics.http_server import serve_metrics
from quorum.metrics.node_metrics import BrokerView, NodeMetrics, raft_families

__all__ = [
    "CONTENT_TYPE",
    "BrokerView",
    "Family",
    "NodeMetrics",
    "Sample",
    "gauge",
    "parse_samples",
    "raft_families",
    "render",
    "serve_metrics",
]
