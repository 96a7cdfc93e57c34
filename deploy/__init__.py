"""The local-cluster launcher (``LocalCluster``), link proxies for partition
tests, probes and checkers of a running quorum, and sample configs."""

from deploy.launcher import LocalCluster
from deploy.layout import ClusterSpec, LaunchError, NodeLayout
from deploy.metadata_log import LogEntry, read_metadata_log
from deploy.proxy import CutMode, LinkProxy
from deploy.quorum_view import AppendFailed, QuorumView

__all__ = [
    "AppendFailed",
    "ClusterSpec",
    "CutMode",
    "LaunchError",
    "LinkProxy",
    "LocalCluster",
    "LogEntry",
    "NodeLayout",
    "QuorumView",
    "read_metadata_log",
]
